"""Decompress gzip and zstd captures, torn or not: every byte that can be decoded comes out first.

A capture killed while being written ends anywhere: inside a gzip member or a zstd frame, inside a
compressed block, even inside the gzip header. Python's `gzip` module and zstandard's `stream_reader`
either raise before handing out what they already decoded or stop silently; this reader does neither.
It feeds the file to an incremental decompressor piece by piece and hands out whatever the
decompressor produces (a writer that flushes each batch, as `CaptureWriter` does, makes that
everything up to the last batch written), across any number of gzip members or zstd frames (and
NUL padding between gzip members). Then, if the stream was cut or damaged, the next read raises
`TornStream` (an `OSError`, so the capture reader reports the capture as interrupted and every
command says so in one line); a stream that ends cleanly just ends.

What callers may rely on: the bytes returned are exactly a prefix of the decompressed stream; one
call of the decompressor gets at most 2 KiB of zstd input or returns at most 1 MiB of gzip output, so
no single read blows up; with `max_ratio`, a stream that grows past that many times the compressed bytes
it was decoded from (once `RATIO_FLOOR` bytes came out) stops with a one-line WirecapError (a bomb).
"""

from __future__ import annotations

import io
import zlib
from typing import IO, Any

from wirecap.capture.inputs import RATIO_FLOOR, human
from wirecap.errors import WirecapError

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_READ = 64 * 1024  # compressed bytes read from the file at a time
_ZSTD_PIECE = 2048  # zstd input per decompressor call (an RLE block turns 4 bytes into 128 KiB)
_GZIP_OUT = 1 << 20  # gzip output per decompressor call


class TornStream(OSError):
    """The compressed stream ends early or is damaged; every byte decodable before that was returned."""


def compression_of(magic: bytes) -> str | None:
    """"gzip", "zstd" or None, from the first four bytes of a file."""
    if magic.startswith(GZIP_MAGIC):
        return "gzip"
    if magic.startswith(ZSTD_MAGIC):
        return "zstd"
    return None


class DecompressingReader(io.RawIOBase):
    """A raw, read-only stream of the decompressed bytes of `src` (a gzip or zstd file object)."""

    def __init__(self, src: IO[bytes], compression: str, *, max_ratio: float = 0, name: str = "") -> None:
        super().__init__()
        if compression not in ("gzip", "zstd"):
            raise ValueError(f"unknown compression {compression!r}")
        self._src = src
        self.compression = compression
        self._in = b""  # compressed bytes read but not yet given to a decompressor
        self._off = 0  # how much of `_in` the current zstd decompressor has had
        self._dec: Any = None  # the decompressor of the current member / frame, None between them
        self._started = False  # the current member has been fed at least one byte
        self._out = b""
        self._pos = 0
        self._consumed = 0  # compressed bytes fully handed to decompressors (for messages)
        self._members = 0
        self._error: str | None = None
        self._eof = False
        self._max_ratio = max_ratio  # 0: no limit
        self._name = name  # for messages
        self._produced = 0  # decompressed bytes so far

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while self._pos >= len(self._out):
            if self._eof:
                if self._error is not None:
                    raise TornStream(self._error)
                return 0
            self._out, self._pos = self._step(), 0
            self._produced += len(self._out)
            if self._max_ratio and self._produced > RATIO_FLOOR:
                self._check_ratio()
        n = min(len(b), len(self._out) - self._pos)
        b[:n] = self._out[self._pos:self._pos + n]
        self._pos += n
        return n

    def _check_ratio(self) -> None:
        packed = max(self._consumed, 1)
        if self._produced > self._max_ratio * packed:
            raise WirecapError(
                f"{self._name}: decompresses to over {self._max_ratio:g} times its compressed size "
                f"({human(self._produced)} from {human(packed)}): a compression bomb? "
                "(set WIRECAP_MAX_RATIO=0 to read it anyway)")

    def close(self) -> None:
        if not self.closed:
            try:
                self._src.close()
            finally:
                super().close()

    # --- decoding ----------------------------------------------------------------------------------
    def _end(self, error: str | None) -> bytes:
        self._eof = True
        self._error = error
        self._dec = None
        return b""

    def _step(self) -> bytes:
        """Decode some more; b"" with `_eof` set at the end (clean or not)."""
        if self._off >= len(self._in):
            data = self._src.read(_READ)
            if not data:
                if self._dec is not None and self._started:
                    unit = "member" if self.compression == "gzip" else "frame"
                    return self._end(f"{self.compression} stream cut short: the file ends inside {unit} "
                                     f"{self._members + 1}, after {self._consumed} compressed bytes")
                return self._end(None)
            self._in, self._off = data, 0
        if self._dec is None:
            if self.compression == "gzip":  # NUL padding between or after gzip members is allowed
                rest = self._in[self._off:].lstrip(b"\0")
                self._consumed += len(self._in) - self._off - len(rest)
                self._in, self._off = rest, 0
                if not rest:
                    return b""
            self._dec = self._new()
            self._started = False
        try:
            return self._gzip() if self.compression == "gzip" else self._zstd()
        except Exception as e:  # noqa: BLE001 - zlib.error, zstandard.ZstdError: the stream is damaged here
            if not isinstance(e, _errors()):
                raise
            return self._end(f"damaged {self.compression} data after {self._consumed} compressed bytes ({e})")

    def _new(self) -> Any:
        if self.compression == "gzip":
            return zlib.decompressobj(31)
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj()

    def _gzip(self) -> bytes:
        d = self._dec
        data = self._in[self._off:] if self._off else self._in
        self._started = True
        out = d.decompress(data, _GZIP_OUT)
        tail = d.unconsumed_tail
        self._consumed += len(data) - len(tail)
        self._in, self._off = tail, 0
        if d.eof:
            self._members += 1
            unused = d.unused_data
            self._consumed -= len(unused)
            self._in = unused + tail
            self._dec = None
        return out

    def _zstd(self) -> bytes:
        d = self._dec
        piece = self._in[self._off:self._off + _ZSTD_PIECE]
        self._off += len(piece)
        self._started = True
        out = d.decompress(piece)
        self._consumed += len(piece)
        if d.eof:
            self._members += 1
            unused = d.unused_data
            self._consumed -= len(unused)
            self._in, self._off = unused + self._in[self._off:], 0
            self._dec = None
        return out


def _errors() -> tuple[type[BaseException], ...]:
    errors: tuple[type[BaseException], ...] = (zlib.error,)
    try:
        import zstandard

        errors += (zstandard.ZstdError,)
    except ImportError:  # pragma: no cover - zstandard is a dependency
        pass
    return errors


def open_decompressed(src: IO[bytes], compression: str, *, max_ratio: float = 0, name: str = "") -> IO[bytes]:
    """A buffered reader of the decompressed bytes of `src` (closing it closes `src`), bounded by
    `max_ratio` (0: no limit; see `DecompressingReader`)."""
    return io.BufferedReader(DecompressingReader(src, compression, max_ratio=max_ratio, name=name), 1 << 20)
