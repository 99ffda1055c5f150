"""Write numbered lines until the reader goes away (SIGPIPE, as `yes` does), bounded to 60 s."""

import os
import signal
import sys
import time

signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # die of SIGPIPE like a C program, no traceback
delay = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
deadline = time.monotonic() + 60
i = 0
while time.monotonic() < deadline:
    os.write(1, b"line %d\n" % i)
    i += 1
    if delay:
        time.sleep(delay)
