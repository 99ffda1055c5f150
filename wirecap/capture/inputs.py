"""The input layer: opening what a user names as an input, and the limits every reader keeps.

Every command that reads a capture, an event file or an import source opens it here (through
`wirecap.capture.reader.open_binary` or `open_input`), so one place decides what wirecap agrees to read:

- a regular file, standard input (`-`), an anonymous pipe (`<(process substitution)`, `/dev/fd/N`) and
  `/dev/null` are read; a directory, a character or block device (`/dev/zero`, a disk) or a socket is
  refused with one line. A named FIFO is read once a writer has connected: with no writer after
  `WIRECAP_FIFO_TIMEOUT` seconds (default 10) it is refused instead of hanging forever; a connected writer
  may be as slow as it likes.
- no line is held whole beyond `WIRECAP_MAX_LINE` bytes (default 256 MiB, `max_line()`): readers read with
  a bounded `readline` and skip (or refuse) what is longer, so a file of zeros without a newline costs
  that much memory at most.
- a gzip or zstd input may not grow past `WIRECAP_MAX_RATIO` times the compressed bytes read so far
  (default 500), once past 64 MiB: a compression bomb stops with a one-line error instead of taking
  gigabytes of memory or minutes. Real captures compress 3 to 10 times; the most repetitive one we could
  make (a million records differing only in `seq` and `t`) 114 times with `zstd -19`; zeros compress
  1,030 times with gzip and tens of thousands of times with zstd.
- a stream copied to a temporary file (`diff`, `report` read their inputs twice) may not exceed
  `WIRECAP_MAX_SPOOL` bytes (default 4 GiB), kept in a 0700 folder, 0600 file.

Sizes accept a K, M or G suffix (powers of 1024); `0` lifts a limit. Callers may rely on every refusal
being a `WirecapError` (exit 2) whose message names the input.
"""

from __future__ import annotations

import io
import os
import stat
import sys
import time
from collections.abc import Iterator
from typing import IO, cast

from wirecap.errors import WirecapError

DEFAULT_MAX_LINE = 256 << 20
DEFAULT_MAX_RATIO = 500
RATIO_FLOOR = 64 << 20  # decompressed bytes read before the ratio is checked (small files never hit it)
DEFAULT_FIFO_TIMEOUT = 10.0
DEFAULT_MAX_SPOOL = 4 << 30
_BUFFER = 1 << 20
_SUFFIX = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}

# What a line longer than the limit is replaced with, after the rest of it was read and dropped. A unique
# object (compare with `is`); it is not JSON, so readers meet it in their slow branch only. Typed as the
# `bytes` of the lines it stands among: a bytearray at run time, so that no line read is ever it.
OVERLONG: bytes = cast(bytes, bytearray(b"\x00"))


def _env_number(name: str, default: float, *, sizes: bool = True) -> float:
    """An environment limit: a number, with an optional K/M/G suffix for sizes; a bad value is an error."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    unit = _SUFFIX.get(text[-1].lower(), 1) if sizes else 1
    number = text[:-1] if unit != 1 else text
    try:
        value = float(number) * unit
    except ValueError:
        raise WirecapError(f"{name}={text!r}: not a number{' (K, M or G may follow)' if sizes else ''}") from None
    if value < 0 or value != value:
        raise WirecapError(f"{name}={text!r}: must be 0 (no limit) or more")
    return value


def max_line() -> int:
    """The longest line (in bytes, newline excluded) a reader holds; 0 from the environment means no limit."""
    value = int(_env_number("WIRECAP_MAX_LINE", DEFAULT_MAX_LINE))
    return value if value > 0 else sys.maxsize - 1


def max_ratio() -> float:
    """How many times its compressed size a gzip/zstd input may grow to (0: no limit)."""
    return _env_number("WIRECAP_MAX_RATIO", DEFAULT_MAX_RATIO, sizes=False)


def fifo_timeout() -> float:
    """Seconds to wait for a writer on a named FIFO (0: wait forever)."""
    return _env_number("WIRECAP_FIFO_TIMEOUT", DEFAULT_FIFO_TIMEOUT, sizes=False)


def max_spool() -> int:
    """The most bytes of a stream kept in a temporary file (0: no limit)."""
    value = int(_env_number("WIRECAP_MAX_SPOOL", DEFAULT_MAX_SPOOL))
    return value if value > 0 else sys.maxsize


def human(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} bytes"


class InputFile(io.FileIO):
    """A file descriptor read as raw bytes, serving first the bytes read while checking a FIFO for a writer."""

    def __init__(self, fd: int, *, closefd: bool = True, prefix: bytes = b"") -> None:
        super().__init__(fd, "rb", closefd=closefd)
        self._prefix = prefix

    def readinto(self, b) -> int | None:
        if self._prefix:
            n = min(len(b), len(self._prefix))
            b[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        return super().readinto(b)

    def seekable(self) -> bool:
        return False if self._prefix else super().seekable()


def _describe(mode: int) -> str | None:
    """Why a file of this mode is not read (None: it is read)."""
    if stat.S_ISDIR(mode):
        return "is a directory, not a capture"
    if stat.S_ISCHR(mode):
        return "is a character device, not a file (refusing to read it)"
    if stat.S_ISBLK(mode):
        return "is a block device, not a file (refusing to read it)"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a file"
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        return "is not a regular file"
    return None


def _is_dev_null(st: os.stat_result) -> bool:
    try:
        null = os.stat(os.devnull)
    except OSError:
        return False
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == null.st_rdev


def _named_fifo(fd: int) -> bool:
    """A FIFO with a name in the file system (it can have no writer), not an anonymous pipe."""
    try:
        return not os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:")
    except OSError:
        return True


def _wait_for_writer(path: str, fd: int) -> bytes:
    """Wait until a writer has opened the FIFO (open with O_NONBLOCK did not); returns what was read.

    On Linux a non-blocking read of an empty FIFO fails with EAGAIN while a writer has it open and
    returns b"" while none has (or the writer left without writing): that tells a slow writer from none.
    """
    limit = fifo_timeout()
    deadline = time.monotonic() + limit if limit > 0 else None
    while True:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return b""  # a writer is there and has not written yet
        if data:
            return data
        if deadline is not None and time.monotonic() >= deadline:
            raise WirecapError(f"{path}: a FIFO with no writer after {limit:g} s (nothing to read; "
                               "set WIRECAP_FIFO_TIMEOUT to wait longer, 0: forever)")
        time.sleep(0.05)


def open_input(path: str) -> io.BufferedReader:
    """`path` ("-": standard input) opened for reading bytes, special files checked (see the module doc).

    Whatever is returned reads as a plain buffered binary file; its `.raw` is an `InputFile` unless standard input is not a real file descriptor (tests running the CLI in-process)."""
    if path == "-":
        return _open_stdin()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise WirecapError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise WirecapError(f"{path}: is a directory, not a capture") from None
    except OSError as e:
        raise WirecapError(f"{path}: cannot open: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        why = None if _is_dev_null(st) else _describe(st.st_mode)
        if why is not None:
            raise WirecapError(f"{path}: {why}")
        prefix = b""
        if stat.S_ISFIFO(st.st_mode) and _named_fifo(fd):
            prefix = _wait_for_writer(path, fd)
        os.set_blocking(fd, True)
        raw = InputFile(fd, prefix=prefix)
    except BaseException:
        os.close(fd)
        raise
    return io.BufferedReader(raw, _BUFFER)


def _open_stdin() -> io.BufferedReader:
    stdin = sys.stdin
    try:
        fd = stdin.fileno()
        st = os.fstat(fd)
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        buffer = getattr(stdin, "buffer", None)
        if buffer is None:
            raise WirecapError("-: standard input is closed") from None
        return buffer if isinstance(buffer, io.BufferedReader) else io.BufferedReader(buffer)
    if not (_is_dev_null(st) or (stat.S_ISCHR(st.st_mode) and os.isatty(fd))):
        why = _describe(st.st_mode)
        if why is not None:
            raise WirecapError(f"-: standard input {why}")
    return io.BufferedReader(InputFile(fd, closefd=False), _BUFFER)


def drain_line(f: IO[bytes]) -> int:
    """Read and drop the rest of a line (up to and including its newline); returns the bytes dropped."""
    dropped = 0
    while True:
        chunk = f.readline(_BUFFER)
        dropped += len(chunk)
        if not chunk or chunk.endswith(b"\n"):
            return dropped


def bounded_lines(f: IO[bytes], limit: int | None = None) -> Iterator[bytes]:
    """The lines of `f` like `for line in f`, but a line longer than `limit` (default `max_line()`)
    is read and dropped piecewise and comes out as `OVERLONG` (compare with `is`)."""
    limit = max_line() if limit is None else limit
    readline = f.readline
    while True:
        line = readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            drain_line(f)
            yield OVERLONG
            continue
        yield line


def overlong_message(limit: int | None = None) -> str:
    limit = max_line() if limit is None else limit
    return f"line longer than {human(limit)} (WIRECAP_MAX_LINE); skipped"


def is_stream(path: str) -> bool:
    """`-`, a pipe, a FIFO or a device: can be read only once (or not at all)."""
    if path == "-":
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def spool(path: str, dest: str) -> None:
    """Copy the stream `path` to the new file `dest` (0600), at most `max_spool()` bytes."""
    limit = max_spool()
    with open_input(path) as src:
        try:
            fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except OSError as e:
            raise WirecapError(f"{dest}: cannot write a temporary copy of {path}: {e.strerror}") from None
        with os.fdopen(fd, "wb") as dst:
            total = 0
            while True:
                try:
                    chunk = src.read1(_BUFFER)
                except OSError as e:
                    raise WirecapError(f"{path}: cannot read: {e.strerror}") from None
                if not chunk:
                    return
                total += len(chunk)
                if total > limit:
                    raise WirecapError(f"{path}: more than {human(limit)} on a stream that must be kept in a "
                                       "temporary file (save it to a file, or set WIRECAP_MAX_SPOOL)")
                try:
                    dst.write(chunk)
                except OSError as e:
                    raise WirecapError(f"{path}: cannot keep a temporary copy: {e.strerror}") from None
