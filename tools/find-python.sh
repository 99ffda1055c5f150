#!/bin/sh
# Print the path of a Python 3.12+ interpreter, or fail with a clear message.
# Order: $PYTHON, python3.14..python3.12 and python3 on PATH, then pyenv's installed versions.
ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }
for p in ${PYTHON:-} python3.14 python3.13 python3.12 python3; do
  if command -v "$p" >/dev/null 2>&1 && ok "$p"; then command -v "$p"; exit 0; fi
done
for p in "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3 /usr/local/bin/python3.1[2-9] /opt/python*/bin/python3; do
  if [ -x "$p" ] && ok "$p"; then echo "$p"; exit 0; fi
done
echo "wirecap needs Python 3.12 or newer (mitmproxy 12 does); none found. Install one or set PYTHON=/path/to/python3.12" >&2
exit 1
