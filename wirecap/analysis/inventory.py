"""What a capture holds: its header and one summary row per channel (sans-I/O, for `wirecap info`).

Works on records as they stream by (one pass, memory per channel, not per message), so it can
describe a capture of any size.
"""

from __future__ import annotations

import shlex
import textwrap
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from wirecap.analysis.tables import Col, fit_table
from wirecap.capture.payload import payload_size
from wirecap.dialects import Detection


@dataclass
class ChannelSummary:
    """One channel of `wirecap info`: where it went, what it carried, how it ended. `transport` is the
    channel's `kind` in the capture (ws, http, process, pipe); `to_json` keeps the format's name."""

    ch: str
    transport: str | None = None
    endpoint: str = ""
    dialect: str | None = None
    c2s: int = 0
    s2c: int = 0
    bytes: int = 0
    first_t: float | None = None
    last_t: float | None = None
    duration: float | None = None
    status: str = "open"  # how it ended: "1000 client", "200", "exit 0", "SIGKILL", "closed"; "open" = no close
    errors: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "ch": self.ch,
            "kind": self.transport,
            "endpoint": self.endpoint,
            "dialect": self.dialect,
            "messages": {"c2s": self.c2s, "s2c": self.s2c},
            "bytes": self.bytes,
            "duration": self.duration,
            "close": self.status,
            "errors": self.errors,
        }


@dataclass
class Inventory:
    header: dict[str, Any]
    channels: dict[str, ChannelSummary] = field(default_factory=dict)
    records: int = 0
    messages: int = 0
    bytes: int = 0
    errors: list[str] = field(default_factory=list)  # recorder `error` records
    end: dict[str, Any] | None = None
    last_t: float = 0.0
    ws_tried: bool = False  # a WebSocket channel, or an HTTP request that asked for an upgrade
    transport: dict[str, Any] | None = None  # `analysis.transport` summary, when `info` asked for one

    def to_json(self) -> dict[str, Any]:
        h = self.header
        return {
            "format": h.get("wirecap"),
            "id": h.get("id"),
            "created": h.get("created"),
            "origin": h.get("origin"),
            "redaction": bool((h.get("redaction") or {}).get("enabled")),
            "records": self.records,
            "messages": self.messages,
            "bytes": self.bytes,
            "duration": self.end.get("duration", self.last_t) if self.end else self.last_t,
            "channels": [c.to_json() for c in self.channels.values()],
            "recorder_errors": self.errors,
            **({"transport": self.transport} if self.transport is not None else {}),
        }


def endpoint_of(open_rec: dict[str, Any]) -> str:
    """The one string that says where a channel went: URL, command line, or `proc/stream`."""
    transport = open_rec.get("kind")
    if transport in ("ws", "http"):
        url = str(open_rec.get("url") or "")
        return f"{open_rec['method']} {url}" if transport == "http" and open_rec.get("method") else url
    if transport == "process":
        argv = open_rec.get("argv")
        return shlex.join(str(a) for a in argv) if isinstance(argv, list) else ""
    if transport == "pipe":
        return f"{open_rec.get('proc', '?')}/{open_rec.get('stream', '?')}"
    return str(open_rec.get("url") or "")


def close_status(transport: str | None, rec: dict[str, Any]) -> str:
    """How a channel of `transport` ended, from its close record: `1000 client`, `200`, `exit 0`,
    a signal's name, or `closed`."""
    if transport == "ws" or "code" in rec:
        code = rec.get("code")
        by = rec.get("by")
        return " ".join(str(x) for x in (code if code is not None else "closed", by) if x is not None)
    if transport == "http" or "status" in rec:
        return str(rec.get("status")) if rec.get("status") is not None else "closed"
    if rec.get("signal"):
        return str(rec["signal"])
    if "exit_code" in rec:
        return f"exit {rec['exit_code']}"
    return "closed"


def _add_channel_record(c: ChannelSummary, rtype: Any, rec: dict[str, Any]) -> int:
    """One record of channel `c`; returns its payload bytes when it is a message (else -1)."""
    if rtype == "msg":
        size = payload_size(rec)
        c.bytes += size
        if rec.get("dir") == "c2s":
            c.c2s += 1
        else:
            c.s2c += 1
        return size
    if rtype == "open":
        c.transport = rec.get("kind")
        c.endpoint = endpoint_of(rec)
    elif rtype == "response":
        if c.status == "open":
            c.status = f"{rec.get('status')} (response)"
    elif rtype == "close":
        c.status = close_status(c.transport, rec)
        if isinstance(rec.get("duration"), (int, float)):
            c.duration = float(rec["duration"])
    elif rtype == "error":
        c.errors += 1
    return -1


def _ws_tried(open_rec: dict[str, Any]) -> bool:
    """Whether an open record is a WebSocket, or an HTTP request asking to become one (a refused upgrade)."""
    if open_rec.get("kind") == "ws":
        return True
    headers = open_rec.get("headers")
    return (open_rec.get("kind") == "http" and isinstance(headers, dict)
            and str(headers.get("upgrade", "")).lower() == "websocket")


class InventoryBuilder:
    """`build_inventory` one record at a time (`feed`, then `finish`)."""

    def __init__(self, header: dict[str, Any]) -> None:
        self.inv = Inventory(header=header)
        self.detection = Detection()  # the decoders' own detection, so `info` says what `decode` will do

    def feed(self, rec: dict[str, Any]) -> None:
        inv = self.inv
        self.detection.feed(rec)
        inv.records += 1
        rtype = rec.get("type")
        raw_t = rec.get("t")
        t = float(raw_t) if isinstance(raw_t, (int, float)) else None
        if t is not None:
            inv.last_t = max(inv.last_t, t)
        if rtype == "end":
            inv.end = rec
            return
        ch = rec.get("ch")
        if rtype == "error":
            inv.errors.append(f"seq {rec.get('seq')}: {rec.get('where') or 'recorder'}: {rec.get('message')}")
        if not isinstance(ch, str):
            return
        c = inv.channels.get(ch)
        if c is None:
            c = inv.channels[ch] = ChannelSummary(ch=ch)
        if rtype == "open" and not inv.ws_tried:
            inv.ws_tried = _ws_tried(rec)
        if t is not None:
            if c.first_t is None:
                c.first_t = t
            c.last_t = t
        size = _add_channel_record(c, rtype, rec)
        if size >= 0:
            inv.messages += 1
            inv.bytes += size

    def finish(self) -> Inventory:
        for c in self.inv.channels.values():
            c.dialect = self.detection.verdict(c.ch)[0]  # a process and its pipes are one unit: one verdict
            if c.duration is None and c.first_t is not None and c.last_t is not None:
                c.duration = round(c.last_t - c.first_t, 6)
        return self.inv


def build_inventory(header: dict[str, Any], records: Iterable[dict[str, Any]], *,
                    transport: bool = False) -> Inventory:
    """What the capture with `header` and `records` (header excluded) holds, in one pass. With
    `transport`, the same pass also decodes the records for the transport of each LLM call
    (`analysis.transport`: `inv.transport`, when a client used or tried a WebSocket)."""
    builder = InventoryBuilder(header)
    if not transport:
        for rec in records:
            builder.feed(rec)
        return builder.finish()
    from wirecap.analysis.transport import transport_records

    def fed() -> Iterator[dict[str, Any]]:
        for rec in records:
            builder.feed(rec)
            yield rec

    check = transport_records(fed())
    inv = builder.finish()
    inv.transport = check.shown()
    return inv


def _fmt_duration(d: float | None) -> str:
    return "" if d is None else f"{d:.3f}s"


def info_json(path: str, inv: Inventory, interrupted: str | None, problems: list[str]) -> dict[str, Any]:
    """What `wirecap info --json` prints: the inventory, whether the capture is clean, the reader's problems."""
    out = inv.to_json()
    out["capture"] = path
    out["clean"] = interrupted is None
    out["interrupted"] = interrupted
    out["problems"] = problems
    return out


def _header_lines(path: str, h: dict[str, Any]) -> list[str]:
    """The header as `info` shows it: id, creation, origin (and its command line), redaction."""
    origin = h.get("origin") or {}
    red = h.get("redaction") or {}
    argv = origin.get("argv")
    origin_text = " ".join(
        str(x) for x in (origin.get("tool"), origin.get("version"), origin.get("source")) if x
    )
    if origin.get("host"):
        origin_text += f" on {origin['host']}"
    lines = [
        f"capture    {path}",
        f"format     v{h.get('wirecap')}",
        f"id         {h.get('id')}",
        f"created    {h.get('created')}",
        f"origin     {origin_text}",
    ]
    if isinstance(argv, list) and argv:
        lines.append(f"argv       {' '.join(str(a) for a in argv)}")
    if origin.get("imported_from"):
        lines.append(f"imported   {orjson.dumps(origin['imported_from']).decode()}")
    if red.get("enabled"):
        lines.append(f"redaction  on ({red.get('policy', '?')})")
    else:
        lines.append("redaction  OFF (written with --no-redact)")
    return lines


CHANNEL_COLUMNS = [Col("ch"), Col("kind", 3), Col("endpoint", 2, "cut", floor=16), Col("dialect", 1, floor=8),
                   Col("c2s", 2), Col("s2c", 2), Col("bytes", 2), Col("duration", 2), Col("close", 1, floor=6)]


def _channel_table(inv: Inventory, width: int | None) -> str:
    rows = [
        [c.ch, c.transport or "?", _short(c.endpoint), c.dialect or "", c.c2s, c.s2c, c.bytes,
         _fmt_duration(c.duration), c.status]
        for c in inv.channels.values()
    ]
    return fit_table(CHANNEL_COLUMNS, rows, width)


def _wrapped(lines: list[str], width: int | None, indent: int) -> list[str]:
    """Lines wrapped to `width`, their next lines indented by `indent` (None: as they are)."""
    if width is None:
        return lines
    out = []
    for line in lines:
        # a path is broken only when it is longer than a whole line (never at its hyphens)
        out += textwrap.wrap(line, max(width, 30), subsequent_indent=" " * indent, break_on_hyphens=False) or [""]
    return out


def _listed(title: str, items: list[str], limit: int = 20) -> list[str]:
    """`title (N):` and the first `limit` items indented, after a blank line; nothing when empty."""
    if not items:
        return []
    lines = ["", f"{title} ({len(items)}):", *[f"  {x}" for x in items[:limit]]]
    return lines


def info_text(path: str, inv: Inventory, interrupted: str | None, problems: list[str],
              width: int | None = None) -> str:
    """What `wirecap info` prints: the header, the figures, one row per channel, errors and problems;
    fitted to `width` (None: lines as long as they are)."""
    status = "interrupted: " + interrupted if interrupted else "clean (end record present)"
    lines = _header_lines(path, inv.header)
    lines.append(
        f"records    {inv.records}   messages {inv.messages}   bytes {inv.bytes}   "
        f"duration {_fmt_duration(inv.to_json()['duration'])}"
    )
    lines.append(f"status     {status}")
    lines = _wrapped(lines, width, 11)  # (`name       value`: under the value)
    if inv.channels:
        lines += ["", _channel_table(inv, width)]
    tail: list[str] = []
    if inv.transport is not None:
        from wirecap.analysis.transport import describe_transport

        tail += ["", *describe_transport(inv.transport)]
    tail += _listed("recorder errors", inv.errors)
    tail += _listed("reader problems", problems)
    if len(problems) > 20:
        tail.append(f"  ... and {len(problems) - 20} more")
    return "\n".join(lines + _wrapped(tail, width, 4))


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
