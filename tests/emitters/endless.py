"""Write numbered lines forever (bounded to 60 s), for `| head -1` tests."""

import os
import time

deadline = time.monotonic() + 60
i = 0
while time.monotonic() < deadline:
    os.write(1, b"line %d\n" % i)
    i += 1
