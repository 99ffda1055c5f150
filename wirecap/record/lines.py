"""Sans-I/O line splitter for pipe channels: chunks in, (payload, eol) lines out.

A pipe carries bytes, not lines; records carry lines. The splitter cuts on `\\n` only, reports the
terminator as the capture format's `eol` (`"\\n"`, `"\\r\\n"`, or `""` for a line that ended without
one) and never includes it in the payload, so `b"".join(payload + eol)` over all lines gives back the
stream byte for byte. Lines inside one chunk are sliced straight out of it; only a line that spans
chunks is joined (once, when its end arrives), so a 20 MB line costs one copy, not one per chunk.
"""

from __future__ import annotations

LF = b"\n"
CR = 13  # ord("\r")

# A line longer than this is cut and recorded as pieces with eol "" (the bytes still add up exactly),
# so a stream without newlines cannot make the recorder hold unbounded memory.
MAX_LINE = 64 * 1024 * 1024

Line = tuple[bytes, str]


def _terminated(line: bytes) -> Line:
    """Payload and eol of a line whose `\\n` was just found (the `\\n` itself not included)."""
    if line and line[-1] == CR:
        return line[:-1], "\r\n"
    return line, "\n"


class LineSplitter:
    """Feed chunks, get complete lines; `close()` returns the unterminated rest, if any."""

    __slots__ = ("_parts", "_pending", "max_line")

    def __init__(self, max_line: int = MAX_LINE) -> None:
        self._parts: list[bytes] = []  # pieces of a line that has not ended yet
        self._pending = 0  # their total size
        self.max_line = max_line

    @property
    def pending(self) -> int:
        """Bytes held back waiting for the end of their line."""
        return self._pending

    def feed(self, chunk: bytes) -> list[Line]:
        out: list[Line] = []
        if not chunk:
            return out
        find = chunk.find
        start = 0
        end = find(LF)
        if self._parts:
            if end < 0:
                self._hold(chunk, out)
                return out
            self._parts.append(chunk[:end])
            out.append(_terminated(b"".join(self._parts)))
            self._parts.clear()
            self._pending = 0
            start = end + 1
            end = find(LF, start)
        append = out.append
        while end >= 0:
            line = chunk[start:end]
            if line and line[-1] == CR:
                append((line[:-1], "\r\n"))
            else:
                append((line, "\n"))
            start = end + 1
            end = find(LF, start)
        if start < len(chunk):
            self._hold(chunk[start:] if start else chunk, out)
        return out

    def feed_lf(self, chunk: bytes) -> list[bytes] | None:
        """`feed` for the common chunk, without a CR: every line ends in `\\n`, so only the payloads.

        One `bytes.split` instead of a search per line, and no tuple per line. None (and nothing
        consumed) when the chunk needs `feed`: it holds a CR, a CR held back may pair with its first
        `\\n`, it completes no line, or its rest would reach `max_line`.
        """
        if b"\r" in chunk or (self._parts and self._parts[-1].endswith(b"\r")):
            return None
        lines = chunk.split(LF)
        tail = lines.pop()
        if not lines or len(tail) >= self.max_line:
            return None
        if self._parts:
            self._parts.append(lines[0])
            lines[0] = b"".join(self._parts)
            self._parts.clear()
            self._pending = 0
        if tail:
            self._parts.append(tail)
            self._pending = len(tail)
        return lines

    def _hold(self, piece: bytes, out: list[Line]) -> None:
        self._parts.append(piece)
        self._pending += len(piece)
        if self._pending >= self.max_line:
            out.append((b"".join(self._parts), ""))
            self._parts.clear()
            self._pending = 0

    def close(self) -> list[Line]:
        """The partial last line (recorded with eol `""`), if the stream did not end with `\\n`."""
        if not self._parts:
            return []
        line = b"".join(self._parts)
        self._parts.clear()
        self._pending = 0
        return [(line, "")]
