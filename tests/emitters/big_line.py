"""Write one line of N bytes and a newline."""

import os
import sys

n = int(sys.argv[1])
block = b"x" * 65536
left = n
while left:
    k = min(left, len(block))
    os.write(1, block[:k])
    left -= k
os.write(1, b"\n")
