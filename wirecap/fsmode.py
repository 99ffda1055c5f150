"""Owner-only files and folders: the one place wirecap creates what it writes.

Captures, reports, converted and exported files, port files, shims, notes and the CA can hold
secrets or be run (a shim goes first on PATH), so everything wirecap creates is owner-only
whatever the umask: files 0600, executables and folders 0700. The mode is set with `fchmod` on the
open descriptor (the umask can only take bits away from `open`'s mode, and a umask of 0277 would
even take the owner's write bit), so a file is never, even for a moment, readable by others under
its final name. Replacing a file (`--force`, atomic replacement) gives it these modes too.

What callers may rely on:

- `open_private(path, flags)` -> fd: `os.open` with mode 0600 (0700 with `executable=True`), then the
  mode is forced on a regular file. Devices, FIFOs and `/dev/stdout` are left as they are.
- `create_private(path, mode="wb")` -> file object, truncating (`exclusive=True`: refuse an
  existing file with FileExistsError).
- `write_private(path, data)`: replaces `path` atomically (temporary file in the same folder, renamed).
- `private_dir(path)`: makes a folder and its missing parents 0700 (folders that already exist are
  left alone: they are the user's).
- `private_tempdir(prefix)`: a fresh 0700 temporary folder.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from typing import IO, Any

FILE_MODE = 0o600
EXEC_MODE = 0o700
DIR_MODE = 0o700


def _force_mode(fd: int, mode: int) -> None:
    """Set `mode` on an open regular file; never on a device, FIFO or socket (`-o /dev/stdout`)."""
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) != mode:
        os.fchmod(fd, mode)


def open_private(path: str | os.PathLike[str], flags: int, *, executable: bool = False) -> int:
    """`os.open(path, flags | O_CREAT | O_CLOEXEC)`, the file owner-only (0600, or 0700 executable)
    whatever the umask and whatever mode an existing file had. Raises OSError like `os.open`."""
    mode = EXEC_MODE if executable else FILE_MODE
    fd = os.open(path, flags | os.O_CREAT | os.O_CLOEXEC, mode)
    try:
        _force_mode(fd, mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def create_private(path: str | os.PathLike[str], mode: str = "wb", *, exclusive: bool = False,
                   executable: bool = False) -> IO[Any]:
    """Open `path` for writing (truncated; `mode` "wb", "w", "ab" or "a"), owner-only.
    `exclusive`: an existing file raises FileExistsError. Text modes write UTF-8 with "\\n" newlines."""
    flags = os.O_WRONLY
    flags |= os.O_APPEND if "a" in mode else os.O_TRUNC
    if exclusive:
        flags |= os.O_EXCL
    fd = open_private(path, flags, executable=executable)
    if "b" in mode:
        return os.fdopen(fd, mode)
    return os.fdopen(fd, mode, encoding="utf-8", newline="\n")


def temp_name(path: str | os.PathLike[str]) -> str:
    """A name beside `path` for a file that will be renamed over it (unique per process)."""
    return f"{os.fspath(path)}.tmp{os.getpid()}"


def write_private(path: str | os.PathLike[str], data: bytes | str, *, executable: bool = False) -> None:
    """Replace `path` with `data` atomically (readers see the old or the new content), owner-only."""
    tmp = temp_name(path)
    try:
        with create_private(tmp, "wb", exclusive=False, executable=executable) as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def private_dir(path: str | os.PathLike[str]) -> None:
    """Create folder `path` and any missing parents, each 0700 whatever the umask (`os.makedirs` gives
    its parents the umask's mode). Existing folders are not changed. Raises OSError."""
    path = os.path.abspath(os.fspath(path))
    missing: list[str] = []
    p = path
    while not os.path.isdir(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    for d in reversed(missing):
        try:
            os.mkdir(d, DIR_MODE)
        except FileExistsError:
            if not os.path.isdir(d):
                raise
            continue  # made meanwhile by someone else: theirs
        os.chmod(d, DIR_MODE)


def private_tempdir(prefix: str = "wirecap-") -> str:
    """A new temporary folder, 0700 (`mkdtemp` asks for 0700; the chmod makes it so under any umask)."""
    d = tempfile.mkdtemp(prefix=prefix)
    os.chmod(d, DIR_MODE)
    return d
