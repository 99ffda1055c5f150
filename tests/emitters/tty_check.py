"""Report whether our standard streams are terminals, and the window size, as one JSON line."""

import json
import os
import sys

try:
    size = os.get_terminal_size(1)
    cols, rows = size.columns, size.lines
except OSError:
    cols = rows = None
info = {"stdin": os.isatty(0), "stdout": os.isatty(1), "stderr": os.isatty(2), "cols": cols, "rows": rows}
if "--require" in sys.argv and not (info["stdin"] and info["stdout"]):
    sys.stderr.write("this program needs a terminal\n")
    sys.exit(3)
sys.stdout.write(json.dumps(info) + "\n")
sys.stdout.flush()
