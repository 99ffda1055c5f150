"""Write COUNT lines of SIZE bytes at RATE lines/s; each starts with its send time in ns."""

import os
import sys
import time

rate, count, size = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
pad = b"x" * size
start = time.perf_counter()
for i in range(count):
    target = start + i / rate
    while True:
        now = time.perf_counter()
        if now >= target:
            break
        time.sleep(min(target - now, 0.0005))
    stamp = b"%d " % time.perf_counter_ns()
    os.write(1, stamp + pad[: max(0, size - len(stamp) - 1)] + b"\n")
