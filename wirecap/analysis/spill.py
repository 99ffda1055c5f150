"""Where the diff keeps the canonical bodies of its items: compact keys in memory, the bytes aside.

A diff compares items by their canonical JSON (`wirecap.analysis.diff.Item.body`), but it needs the
bytes themselves only for the few items it shows or reports field by field. So a body longer than
`INLINE_MAX` is represented by a *key*, `b"\\0"` + the first 16 bytes of its SHA-256 digest
(canonical JSON never starts with a NUL, so a key never equals an inline body), and the bytes go to
a `BodyStore`: memory up to `MEMORY_BUDGET` bytes, then an unlinked temporary file (0600, gone when
the process ends, whatever way it ends). Memory for a side is then about 300 bytes per item plus the
budget, whatever the capture's size; the temporary file holds at most the side's normalized bodies
(no more than its input, usually less: ids and times are masked).

What callers may rely on: `body_key(b)` depends only on `b`, so equal bodies have equal keys on both
sides (a 128-bit digest: a collision is not a practical concern); `store.get(ref)` returns exactly the
bytes `store.put` was given.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from typing import IO

from wirecap.errors import WirecapError

INLINE_MAX = 64  # bodies up to this many bytes are their own key (no digest, no store)
MEMORY_BUDGET = 16 << 20  # bytes of bodies a store keeps in memory before it writes them to its file
_FLUSH = 1 << 20  # once on file, bodies are written in blocks of this size

_sha256 = hashlib.sha256  # (a cryptographic digest: a crafted collision cannot hide a difference; SHA-256
# measured faster than BLAKE2b here, where the CPU computes it in hardware)


def body_key(body: bytes) -> bytes:
    """The comparison key of a canonical body: itself when short, else NUL + its 128-bit digest."""
    if len(body) <= INLINE_MAX:
        return body
    return b"\0" + _sha256(body).digest()[:16]


class BodyStore:
    """Append-only bytes with int references (`offset << 32 | length`).

    Create it before forking (`wirecap.analysis.sides`): a child that builds side B fills a store
    whose file the parent shares, calls `seal()` (everything to the file) and sends `state()`; the
    parent's `adopt(state)` makes the same references readable there.
    """

    def __init__(self, budget: int | None = None) -> None:
        self.budget = MEMORY_BUDGET if budget is None else budget
        self._limit = self.budget  # bytes in memory that make `put` write them out (_FLUSH once on file)
        self._mem = bytearray()  # bodies from offset `self._on_file` on
        self._on_file = 0  # bytes written to the file (the first part of the store)
        self._file: IO[bytes] | None = None
        self._fd = -1

    def open_file(self) -> None:
        """Create the backing file now (before a fork, so that parent and child share it)."""
        if self._file is None:
            # (0600, unlinked at once; closed with the store, or when it is collected)
            f = self._file = tempfile.TemporaryFile(prefix="wirecap-diff-")  # noqa: SIM115
            self._fd = f.fileno()

    @property
    def size(self) -> int:
        return self._on_file + len(self._mem)

    def put(self, body: bytes) -> int:
        mem = self._mem
        at = self._on_file + len(mem)
        mem += body
        if len(mem) >= self._limit:
            self._flush()
        return (at << 32) | len(body)

    def get(self, ref: int) -> bytes:
        at, n = ref >> 32, ref & 0xFFFFFFFF
        if at >= self._on_file:
            start = at - self._on_file
            return bytes(self._mem[start:start + n])
        out = os.pread(self._fd, n, at)
        while len(out) < n:  # (a short read only on a huge body)
            more = os.pread(self._fd, n - len(out), at + len(out))
            if not more:
                raise OSError(f"diff body store: {n} bytes at {at} not readable")
            out += more
        return out

    def seal(self) -> None:
        """Everything to the file (the child's last step before it reports)."""
        if self._mem:
            self._flush()

    def state(self) -> int:
        return self._on_file

    def adopt(self, on_file: int) -> None:
        """The references of a sealed store filled in a forked child (same file) are now readable here."""
        self._mem = bytearray()
        self._on_file = on_file

    def _flush(self) -> None:
        try:
            self.open_file()
            view = memoryview(self._mem)
            done = 0
            try:
                while done < len(view):
                    done += os.pwrite(self._fd, view[done:], self._on_file + done)
            finally:
                view.release()
        except OSError as e:  # (disk full, no temporary folder): one line, not a traceback
            raise WirecapError(f"cannot keep the diff's item bodies in a temporary file in {tempfile.gettempdir()}: "
                               f"{e.strerror or e} (set TMPDIR to a folder with room)") from None
        self._on_file += len(self._mem)
        self._mem = bytearray()
        self._limit = _FLUSH

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
            self._fd = -1
        self._mem = bytearray()
