"""Write a file's bytes verbatim to stdout (or stderr) in writes of --chunk bytes."""

import argparse
import os

p = argparse.ArgumentParser()
p.add_argument("file")
p.add_argument("--chunk", type=int, default=65536)
p.add_argument("--stderr", action="store_true")
a = p.parse_args()
fd = 2 if a.stderr else 1
with open(a.file, "rb") as f:
    data = f.read()
view = memoryview(data)
while view:
    n = os.write(fd, view[: a.chunk])
    view = view[n:]
