"""Replay a file's lines on stdout one at a time, like an agent CLI streaming JSONL."""

import argparse
import os
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("file")
p.add_argument("--delay", type=float, default=0.0)
p.add_argument("--stderr", default=None, help="also write this text to stderr before the first line")
a = p.parse_args()
if a.stderr:
    os.write(2, a.stderr.encode())
with open(a.file, "rb") as f:
    for line in f:
        os.write(1, line)
        if a.delay:
            time.sleep(a.delay)
sys.exit(0)
