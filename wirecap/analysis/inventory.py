"""What a capture holds: its header and one summary row per channel (sans-I/O, for `wirecap info`).

Works on records as they stream by (one pass, memory per channel, not per message), so it can
describe a capture of any size.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from wirecap.capture.payload import payload_size
from wirecap.dialects import Detection


@dataclass
class ChannelSummary:
    ch: str
    kind: str | None = None
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
            "kind": self.kind,
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
        }


def endpoint_of(open_rec: dict[str, Any]) -> str:
    """The one string that says where a channel went: URL, command line, or `proc/stream`."""
    kind = open_rec.get("kind")
    if kind in ("ws", "http"):
        url = str(open_rec.get("url") or "")
        return f"{open_rec['method']} {url}" if kind == "http" and open_rec.get("method") else url
    if kind == "process":
        argv = open_rec.get("argv")
        return shlex.join(str(a) for a in argv) if isinstance(argv, list) else ""
    if kind == "pipe":
        return f"{open_rec.get('proc', '?')}/{open_rec.get('stream', '?')}"
    return str(open_rec.get("url") or "")


def close_status(kind: str | None, rec: dict[str, Any]) -> str:
    if kind == "ws" or "code" in rec:
        code = rec.get("code")
        by = rec.get("by")
        return " ".join(str(x) for x in (code if code is not None else "closed", by) if x is not None)
    if kind == "http" or "status" in rec:
        return str(rec.get("status")) if rec.get("status") is not None else "closed"
    if rec.get("signal"):
        return str(rec["signal"])
    if "exit_code" in rec:
        return f"exit {rec['exit_code']}"
    return "closed"


def build_inventory(header: dict[str, Any], records: Iterable[dict[str, Any]]) -> Inventory:
    inv = Inventory(header=header)
    chans = inv.channels
    detection = Detection()  # the decoders' own detection, so `info` says what `decode` will do
    for rec in records:
        detection.feed(rec)
        inv.records += 1
        rtype = rec.get("type")
        t = rec.get("t")
        if isinstance(t, (int, float)):
            inv.last_t = max(inv.last_t, float(t))
        if rtype == "end":
            inv.end = rec
            continue
        ch = rec.get("ch")
        if rtype == "error":
            inv.errors.append(f"seq {rec.get('seq')}: {rec.get('where') or 'recorder'}: {rec.get('message')}")
        if not isinstance(ch, str):
            continue
        c = chans.get(ch)
        if c is None:
            c = chans[ch] = ChannelSummary(ch=ch)
        if isinstance(t, (int, float)):
            if c.first_t is None:
                c.first_t = float(t)
            c.last_t = float(t)
        if rtype == "open":
            c.kind = rec.get("kind")
            c.endpoint = endpoint_of(rec)
        elif rtype == "msg":
            inv.messages += 1
            size = payload_size(rec)
            inv.bytes += size
            c.bytes += size
            if rec.get("dir") == "c2s":
                c.c2s += 1
            else:
                c.s2c += 1
        elif rtype == "response":
            if c.status == "open":
                c.status = f"{rec.get('status')} (response)"
        elif rtype == "close":
            c.status = close_status(c.kind, rec)
            if isinstance(rec.get("duration"), (int, float)):
                c.duration = float(rec["duration"])
        elif rtype == "error":
            c.errors += 1
    for c in chans.values():
        c.dialect = detection.verdict(c.ch)[0]  # a process and its pipes are one unit: one verdict
        if c.duration is None and c.first_t is not None and c.last_t is not None:
            c.duration = round(c.last_t - c.first_t, 6)
    return inv
