"""Print `ready`; count SIGINT deliveries; 0.5 s after the first, print `sigint=N` and exit 0.

Deliveries are counted through the wakeup fd (one byte per delivery at C level), because two
deliveries that land before the Python handler runs would call it only once.
"""

import os
import signal
import time

r, w = os.pipe()
os.set_blocking(w, False)
os.set_blocking(r, False)
signal.set_wakeup_fd(w)
signal.signal(signal.SIGINT, lambda signum, frame: None)
os.write(1, b"ready\n")


def deliveries() -> int:
    try:
        return os.read(r, 1024).count(bytes([signal.SIGINT]))
    except BlockingIOError:
        return 0


count = 0
deadline = time.monotonic() + 30  # bounded: never outlive a broken test
while time.monotonic() < deadline and not count:
    time.sleep(0.01)
    count += deliveries()
time.sleep(0.5)
count += deliveries()
os.write(1, b"sigint=%d\n" % count)
