"""Print `ready`, then wait; on a signal print `got SIGNAME` and exit 40+N (N = signal number)."""

import os
import signal
import sys
import time


def on_signal(signum, frame):
    os.write(1, f"got {signal.Signals(signum).name}\n".encode())
    sys.exit(40 + signum)


for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
    signal.signal(s, on_signal)
os.write(1, b"ready\n")
deadline = time.monotonic() + 30  # bounded: never outlive a broken test
while time.monotonic() < deadline:
    time.sleep(0.05)
sys.exit(1)
