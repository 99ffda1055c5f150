"""Server-Sent Events: an incremental, byte-exact parser and the `msg` form of one event.

Streamed HTTP bodies arrive in TCP-sized pieces, not event-sized ones; the parser re-splits them
into events whatever the split and whatever the line ends (`\\r\\n`, `\\r`, `\\n`). Each event keeps
the exact bytes of its block so a capture can replay the stream byte for byte: the concatenation of
every event's `raw` is the stream.

Sans-I/O: no sockets, no clocks; the recorder feeds bytes and writes the records.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from typing import Any

from wirecap.capture.payload import encode_payload, line_bytes, payload_bytes

_LINE_END = re.compile(rb"\r\n?|\n")
_BOM = b"\xef\xbb\xbf"


@dataclass
class SSEEvent:
    """One event block. `data` is None when the block had no `data` line (e.g. a heartbeat comment)."""

    event: str | None = None
    id: str | None = None
    retry: int | None = None
    data: str | None = None
    comments: list[str] = field(default_factory=list)
    raw: bytes = b""


class SSEParser:
    """Feed body bytes as they come; get back the events they complete.

    A block ends at a blank line. Blank lines before a block belong to it (nothing is lost), and a
    lone `\\r` at the end of the bytes so far waits for the next byte (it may be half of `\\r\\n`).
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self._scan = 0  # bytes of _buf before this are parsed lines of the current block
        self._started = False  # BOM handled
        self._reset()

    def _reset(self) -> None:
        self._event: str | None = None
        self._id: str | None = None
        self._retry: int | None = None
        self._data: list[str] = []
        self._comments: list[str] = []
        self._content = False  # saw a non-blank line in this block

    def feed(self, data: bytes) -> list[SSEEvent]:
        if not data:
            return []
        self._buf += data
        return self._parse(final=False)

    def close(self) -> list[SSEEvent]:
        """End of stream: whatever is left (a last event without its blank line, stray bytes)."""
        out = self._parse(final=True)
        if self._scan < len(self._buf):
            self._line(bytes(self._buf[self._scan :]))
            self._scan = len(self._buf)
        if self._buf:
            out.append(self._dispatch())
        return out

    def _parse(self, final: bool) -> list[SSEEvent]:
        buf = self._buf
        if not self._started:
            if not final and len(buf) < 3 and _BOM.startswith(bytes(buf)):
                return []
            self._started = True
            if buf.startswith(_BOM):
                self._scan = 3
        out: list[SSEEvent] = []
        n = len(buf)
        while True:
            m = _LINE_END.search(buf, self._scan)
            if m is None:
                break
            start, end = m.span()
            if end == n and end - start == 1 and buf[start] == 0x0D and not final:
                break  # a lone \r at the end: it may be half of \r\n
            line = bytes(buf[self._scan : start])
            self._scan = end
            if line:
                self._line(line)
            elif self._content:
                out.append(self._dispatch())
                buf = self._buf
                n = len(buf)
        return out

    def _line(self, line: bytes) -> None:
        self._content = True
        text = line.decode("utf-8", "replace")
        name, sep, value = text.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if not name and sep:
            self._comments.append(value)
        elif name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        # other field names are ignored (the spec says so); `raw` keeps them

    def _dispatch(self) -> SSEEvent:
        raw = bytes(self._buf[: self._scan])
        del self._buf[: self._scan]
        self._scan = 0
        ev = SSEEvent(
            event=self._event,
            id=self._id,
            retry=self._retry,
            data="\n".join(self._data) if self._data else None,
            comments=self._comments,
            raw=raw,
        )
        self._reset()
        return ev


def serialize_event(sse: dict[str, Any], data: str | None) -> bytes:
    """The canonical bytes of an event: comments, id, event, data lines, retry, blank line; `\\n` ends."""
    lines: list[str] = []
    for c in sse.get("comment", ()):
        lines.append(f": {c}" if c else ":")
    if "id" in sse:
        lines.append(f"id: {sse['id']}")
    if "event" in sse:
        lines.append(f"event: {sse['event']}")
    if data is not None:
        lines.extend(f"data: {line}" for line in data.split("\n"))
    if "retry" in sse:
        lines.append(f"retry: {sse['retry']}")
    return ("\n".join(lines) + "\n\n").encode("utf-8")


def _sse_object(ev: SSEEvent) -> dict[str, Any]:
    sse: dict[str, Any] = {}
    if ev.event is not None:
        sse["event"] = ev.event
    if ev.id is not None:
        sse["id"] = ev.id
    if ev.retry is not None:
        sse["retry"] = ev.retry
    if ev.comments:
        sse["comment"] = list(ev.comments)
    if ev.data is None:
        sse["no_data"] = True
    return sse


def sse_record_fields(ev: SSEEvent) -> dict[str, Any]:
    """The `msg` fields for one event: payload of its data, the `sse` object, and `raw` (the whole
    block) only when the canonical serialization would not give the block's bytes back.

    `raw_b64` replaces `raw` in the rare case the block is not valid UTF-8.
    """
    fields = encode_payload(ev.data if ev.data is not None else "")
    fields.pop("raw", None)  # for SSE records `raw` means the whole block
    sse = _sse_object(ev)
    fields["sse"] = sse
    data = None if ev.data is None else payload_bytes(fields).decode("utf-8", "surrogatepass")
    if serialize_event(sse, data) != ev.raw:
        try:
            fields["raw"] = ev.raw.decode("utf-8")
        except UnicodeDecodeError:
            fields["raw_b64"] = base64.b64encode(ev.raw).decode("ascii")
    return fields


def sse_event_bytes(record: dict[str, Any]) -> bytes:
    """The exact bytes of a recorded SSE event (what replay sends)."""
    if "raw" in record:
        return record["raw"].encode("utf-8", "surrogatepass")
    if "raw_b64" in record:
        return base64.b64decode(record["raw_b64"])
    sse = record.get("sse") or {}
    data = None if sse.get("no_data") else payload_bytes(record).decode("utf-8", "replace")
    return serialize_event(sse, data)


def body_piece_bytes(record: dict[str, Any], *, lines: bool = False) -> bytes:
    """The wire bytes one `msg` of an HTTP body stands for: an SSE event's block, a line and its eol
    (`lines`: its response said `lines: true`), else the payload. Joined in order, a body's pieces
    are the (decoded) body."""
    if "sse" in record:
        return sse_event_bytes(record)
    if lines:
        return line_bytes(record)
    return payload_bytes(record)


def sse_data_bytes(record: dict[str, Any]) -> bytes:
    """The event's data (not the block), whatever `raw` holds: what a decoder wants."""
    if (record.get("sse") or {}).get("no_data"):
        return b""
    rec = {k: v for k, v in record.items() if k != "raw"}
    return payload_bytes(rec)
