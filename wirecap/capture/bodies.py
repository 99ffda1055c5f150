"""HTTP body codecs: content-encoding decoding (incremental and whole), size caps, header dicts.

Pure functions over bytes, shared by the recorder (which decodes only what it records: the client always
gets the bytes as they came) and replay (which decodes recorded and live request bodies before matching).
They live with the capture format so that neither I/O shell imports the other.
"""

from __future__ import annotations

import zlib
from typing import Any, Protocol

SUPPORTED_ENCODINGS = ("gzip", "x-gzip", "deflate", "br", "zstd", "identity")


class _Step(Protocol):
    def feed(self, data: bytes) -> bytes: ...
    def flush(self) -> bytes: ...


class _Zlib:
    def __init__(self) -> None:
        self._d = zlib.decompressobj(wbits=47)  # gzip or zlib, auto-detected

    def feed(self, data: bytes) -> bytes:
        out = self._d.decompress(data)
        # Concatenated gzip members (some servers flush that way): start a new member.
        while self._d.eof and self._d.unused_data:
            rest = self._d.unused_data
            self._d = zlib.decompressobj(wbits=47)
            out += self._d.decompress(rest)
        return out

    def flush(self) -> bytes:
        return self._d.flush()


class _Brotli:
    def __init__(self) -> None:
        import brotli

        self._d = brotli.Decompressor()

    def feed(self, data: bytes) -> bytes:
        return self._d.process(data)

    def flush(self) -> bytes:
        return b""


class _Zstd:
    def __init__(self) -> None:
        import zstandard

        self._z = zstandard.ZstdDecompressor()
        self._d = self._z.decompressobj()

    def feed(self, data: bytes) -> bytes:
        out = self._d.decompress(data)
        while self._d.eof and self._d.unused_data:  # several frames
            rest = self._d.unused_data
            self._d = self._z.decompressobj()
            out += self._d.decompress(rest)
        return out

    def flush(self) -> bytes:
        return b""


class _Identity:
    def feed(self, data: bytes) -> bytes:
        return data

    def flush(self) -> bytes:
        return b""


def content_encodings(header: str | None) -> list[str]:
    """`gzip, br` -> ["gzip", "br"] (applied in that order; decoded in reverse)."""
    if not header:
        return []
    return [e.strip().lower() for e in header.split(",") if e.strip() and e.strip().lower() != "identity"]


class ContentDecoder:
    """Decodes a content-encoded body piece by piece (gzip/deflate, br, zstd, stacked)."""

    def __init__(self, encodings: list[str]) -> None:
        steps: list[_Step] = []
        for enc in reversed(encodings):
            if enc in ("gzip", "x-gzip", "deflate"):
                steps.append(_Zlib())
            elif enc == "br":
                steps.append(_Brotli())
            elif enc == "zstd":
                steps.append(_Zstd())
            elif enc == "identity":
                steps.append(_Identity())
            else:
                raise ValueError(f"unsupported content-encoding {enc!r}")
        self._steps = steps

    def feed(self, data: bytes) -> bytes:
        for step in self._steps:
            data = step.feed(data)
        return data

    def flush(self) -> bytes:
        out = b""
        for step in self._steps:
            if out:
                out = step.feed(out)
            out += step.flush()
        return out


def decode_body(raw: bytes, encodings: list[str]) -> bytes:
    """A whole body decoded (raises ValueError or zlib.error etc. when it is not what it claims)."""
    if not encodings:
        return raw
    d = ContentDecoder(encodings)
    return d.feed(raw) + d.flush()


def cap_body(data: bytes, cap: int) -> tuple[bytes, int | None]:
    """Cut `data` at `cap` bytes (0 = no cap), backing up to a UTF-8 boundary so text stays text.

    Returns the kept bytes and the original size when it was cut (else None).
    """
    if cap <= 0 or len(data) <= cap:
        return data, None
    cut = cap
    # Back up over continuation bytes (at most 3) if that leaves valid UTF-8.
    for back in range(0, 4):
        if cut - back <= 0:
            break
        if data[cut - back] & 0xC0 != 0x80:  # a lead byte or ASCII at the cut point
            cut -= back
            break
    return data[:cut], len(data)


def headers_dict(headers: Any) -> dict[str, str]:
    """mitmproxy Headers -> {lower-case name: value}; repeats joined with ', ' (set-cookie: '\\n')."""
    out: dict[str, str] = {}
    for name, value in headers.items(multi=True):
        key = name.lower()
        if key in out:
            out[key] = out[key] + ("\n" if key == "set-cookie" else ", ") + value
        else:
            out[key] = value
    return out
