"""Build the two sides of a comparison at once: side B in a forked child, side A here.

Reading and folding a side is pure CPU work (about half a diff's time each), and the GIL keeps
threads from sharing it, so on a machine with a spare core a forked child builds B while this
process builds A; B comes back over a pipe as marshal data (plain tuples, a few MB per 100k
messages). Anything unusual falls back to building B here, with the same result and errors:
not Linux (macOS forbids much after a plain fork), other threads alive (forking them is unsafe), one
CPU to run on (affinity counts, not the machine's CPUs),
`WIRECAP_DIFF_FORK=0`, or a child that failed in a way other than a user-facing error (killed,
data marshal cannot carry).
"""

from __future__ import annotations

import contextlib
import marshal
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from wirecap.errors import CaptureFormatError, WirecapError

_ERRORS = {"WirecapError": WirecapError, "CaptureFormatError": CaptureFormatError}

def can_fork() -> bool:
    return (sys.platform == "linux" and os.environ.get("WIRECAP_DIFF_FORK", "1") != "0"
            and len(os.sched_getaffinity(0)) > 1 and threading.active_count() == 1)

def build_both[T](build_a: Callable[[], T], build_b: Callable[[], T],
               pack: Callable[[T], Any], unpack: Callable[[Any], T]) -> tuple[T, T]:
    """`(build_a(), build_b())`, the two built side by side when possible (see the module doc).

    `pack` turns a side into data `marshal` can carry and `unpack` undoes it. Errors are raised as
    they would be in order: A's first, then B's (a WirecapError from the child keeps its message).
    """
    if not can_fork():
        return build_a(), build_b()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: build B, send it, and never return into the caller's code
        code = 0
        try:
            os.close(r)
            try:
                reply: tuple[Any, ...] = ("ok", pack(build_b()))
            except WirecapError as e:
                reply = ("error", type(e).__name__, str(e))
            data = marshal.dumps(reply)
        except BaseException:  # noqa: BLE001 - anything else: the parent builds B itself
            data = b""
            code = 1
        try:
            with open(w, "wb") as out:
                out.write(data)
        except BaseException:  # noqa: BLE001 - the parent sees a short reply and builds B itself
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    with open(r, "rb") as inp:
        try:
            side_a = build_a()
            data = inp.read()
        except BaseException:  # A failed or was interrupted: B is not needed
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            raise
        finally:
            os.waitpid(pid, 0)
    try:
        reply = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return side_a, build_b()
    del data  # (B's bytes are tens of MB: not kept while B is unpacked)
    if reply[0] == "error":
        raise _ERRORS.get(reply[1], WirecapError)(reply[2])
    return side_a, unpack(reply[1])

