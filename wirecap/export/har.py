"""HAR 1.2 from capture records (sans-I/O), for browser devtools and other HTTP tools.

One entry per `http` channel (request, response, body: SSE events concatenated back into the
stream's bytes) and per `ws` channel (the 101 handshake with Chrome's `_webSocketMessages`).
Process and pipe channels have no HAR form and are counted in `skipped`.
"""

from __future__ import annotations

import base64
import datetime as _dt
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO
from urllib.parse import parse_qsl, urlsplit

import orjson

from wirecap import __version__
from wirecap.capture.sse import body_piece_bytes


@dataclass
class _Chan:
    """An open http or ws channel: its records so far."""

    open: dict[str, Any]
    t0: float
    req_body: bytearray = field(default_factory=bytearray)
    req_mime: str | None = None
    response: dict[str, Any] | None = None
    resp_t: float | None = None
    resp_body: bytearray = field(default_factory=bytearray)
    ws_messages: list[dict[str, Any]] = field(default_factory=list)
    close: dict[str, Any] | None = None
    last_t: float = 0.0


def _transport(open_rec: dict[str, Any]) -> str:
    """The channel's transport (the open record's `kind`): "http" or "ws" here."""
    return str(open_rec.get("kind", "http"))


def _headers(h: dict[str, Any] | None) -> list[dict[str, str]]:
    out = []
    for name, value in (h or {}).items():
        for v in str(value).split("\n") if name == "set-cookie" else [str(value)]:
            out.append({"name": name, "value": v})
    return out


def _iso(created: float, t: float) -> str:
    return _dt.datetime.fromtimestamp(created + t, _dt.UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def _content(data: bytes, mime: str) -> dict[str, Any]:
    try:
        return {"size": len(data), "mimeType": mime, "text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"size": len(data), "mimeType": mime, "text": base64.b64encode(data).decode("ascii"),
                "encoding": "base64"}


def _created(header: dict[str, Any]) -> float:
    try:
        return _dt.datetime.fromisoformat(str(header.get("created", "")).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def har_entries(header: dict[str, Any], records: Iterable[dict[str, Any]],
                counts: dict[str, int] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(open order, HAR entry) of each http/ws channel, as soon as it closes (the channels still open
    at the end come last, in open order). Memory: the channels open at the same time, not the capture.
    `counts` (if given) is filled with {"http", "ws", "skipped"} as entries go out."""
    created = _created(header)
    chans: dict[str, tuple[int, _Chan]] = {}
    skipped: set[str] = set()
    n = 0
    counts = counts if counts is not None else {}
    counts.update({"http": 0, "ws": 0, "skipped": 0})

    def done(i: int, c: _Chan) -> tuple[int, dict[str, Any]]:
        counts[_transport(c.open)] += 1
        return i, _entry(c, created)

    for rec in records:
        ch = rec.get("ch")
        if not isinstance(ch, str):
            continue
        t = float(rec.get("t") or 0.0)
        if rec.get("type") == "open":
            if rec.get("kind") in ("http", "ws"):  # (the transport)
                if ch in chans:  # the name again: the earlier channel ends here
                    yield done(*chans.pop(ch))
                chans[ch] = (n, _Chan(open=rec, t0=t, last_t=t))
                n += 1
            else:
                skipped.add(ch)
                counts["skipped"] = len(skipped)
            continue
        got = chans.get(ch)
        if got is not None and _feed(got[1], rec, t, created):  # closed
            yield done(*chans.pop(ch))
    for i, c in sorted(chans.values(), key=lambda ic: ic[0]):
        yield done(i, c)


def _feed(c: _Chan, rec: dict[str, Any], t: float, created: float) -> bool:
    """Add a record of an open http/ws channel to it; True when it closed the channel."""
    c.last_t = t
    rtype = rec.get("type")
    if rtype == "msg" and "summary" not in (rec.get("flags") or ()):
        _message(c, rec, t, created)
    elif rtype == "response":
        c.response = rec
        c.resp_t = t
    elif rtype == "close":
        c.close = rec
        return True
    return False


def _message(c: _Chan, rec: dict[str, Any], t: float, created: float) -> None:
    """A message: a WebSocket message, or a piece of the request or response body."""
    lines = c.response is not None and bool(c.response.get("lines")) and rec.get("dir") == "s2c"
    data = body_piece_bytes(rec, lines=lines)
    if _transport(c.open) == "ws":
        binary = bool(rec.get("binary"))
        c.ws_messages.append({
            "type": "send" if rec.get("dir") == "c2s" else "receive",
            "time": round(created + t, 6),
            "opcode": 2 if binary else 1,
            "data": base64.b64encode(data).decode("ascii") if binary else data.decode("utf-8", "replace"),
        })
    elif rec.get("dir") == "c2s":
        c.req_body += data
    else:
        c.resp_body += data


def _document(header: dict[str, Any], entries: list[Any]) -> dict[str, Any]:
    return {"log": {"version": "1.2", "creator": {"name": "wirecap", "version": __version__},
                    "pages": [], "entries": entries,
                    "comment": f"exported from wirecap capture {header.get('id', '')}"}}


def capture_to_har(header: dict[str, Any], records: Iterable[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, int]]:
    """(HAR document, counts {"http", "ws", "skipped"}) for one capture, in memory (small captures;
    `write_har` streams)."""
    counts: dict[str, int] = {}
    entries = [e for _i, e in sorted(har_entries(header, records, counts), key=lambda ie: ie[0])]
    return _document(header, entries), counts


_MARK = "\x01wirecap-entries\x01"
_INDENT = b"\n      "  # an entry's lines inside log.entries, as orjson's OPT_INDENT_2 lays them out


def write_har(header: dict[str, Any], records: Iterable[dict[str, Any]], out: BinaryIO) -> dict[str, int]:
    """Write the HAR document to `out` as the channels close (the same bytes as
    `orjson.dumps(capture_to_har(...)[0], option=OPT_INDENT_2) + b"\n"`), holding only the channels
    open at the same time; an entry that closes before one opened earlier waits in a temp file, so
    entries stay in open order. Returns the counts."""
    head, tail = orjson.dumps(_document(header, [_MARK]), option=orjson.OPT_INDENT_2).split(
        orjson.dumps(_MARK), 1)
    head = head.rstrip(b" \n")  # ends with `"entries": [`
    tail = tail.lstrip(b" \n")  # starts with `],`
    counts: dict[str, int] = {}
    out.write(head)
    wrote = 0
    with tempfile.TemporaryFile() as spool:
        waiting: dict[int, tuple[int, int]] = {}  # open order -> (offset, length) in the spool

        def emit(data: bytes) -> None:
            nonlocal wrote
            out.write((b"," if wrote else b"") + _INDENT + data)
            wrote += 1

        for i, entry in har_entries(header, records, counts):
            data = orjson.dumps(entry, option=orjson.OPT_INDENT_2).replace(b"\n", _INDENT)
            if i != wrote:
                spool.seek(0, os.SEEK_END)
                waiting[i] = (spool.tell(), len(data))
                spool.write(data)
                continue
            emit(data)
            while wrote in waiting:
                off, size = waiting.pop(wrote)
                spool.seek(off)
                emit(spool.read(size))
    out.write((b"\n    " if wrote else b"") + tail + b"\n")
    return counts


def _entry(c: _Chan, created: float) -> dict[str, Any]:
    o = c.open
    total_ms, wait_ms = _times(c)
    entry: dict[str, Any] = {
        "startedDateTime": _iso(created, c.t0),
        "time": round(total_ms, 3),
        "request": _request(c),
        "response": _response(c),
        "cache": {},
        "timings": {"send": 0, "wait": round(wait_ms, 3), "receive": round(total_ms - wait_ms, 3)},
        "_wirecap_ch": o.get("ch"),
    }
    if o.get("server"):
        entry["serverIPAddress"] = str(o["server"]).rsplit(":", 1)[0]
    if _transport(o) == "ws":
        entry["_resourceType"] = "websocket"
        entry["_webSocketMessages"] = c.ws_messages
    return entry


def _request(c: _Chan) -> dict[str, Any]:
    o = c.open
    url = str(o.get("url") or "")
    req_headers = o.get("headers") or {}
    request: dict[str, Any] = {
        "method": "GET" if _transport(o) == "ws" else str(o.get("method") or "GET"),
        "url": url,
        "httpVersion": "HTTP/1.1",
        "cookies": [],
        "headers": _headers(req_headers),
        "queryString": [{"name": k, "value": v} for k, v in parse_qsl(urlsplit(url).query, keep_blank_values=True)],
        "headersSize": -1,
        "bodySize": len(c.req_body),
    }
    if c.req_body:
        mime = str(req_headers.get("content-type") or "application/octet-stream")
        request["postData"] = {"mimeType": mime, "text": bytes(c.req_body).decode("utf-8", "replace")}
    return request


def _response(c: _Chan) -> dict[str, Any]:
    """The response: a WebSocket's 101 from its open record, an HTTP response from its response record
    (or, without one, the status its close record gives)."""
    o = c.open
    resp = c.response or {}
    ws = _transport(o) == "ws"
    if ws:
        status = o.get("status") or 101
        resp_headers = o.get("response_headers") or {}
    else:
        status = resp.get("status")
        if status is None and c.close is not None:
            status = c.close.get("status")
        resp_headers = resp.get("headers") or {}
    mime = str(resp_headers.get("content-type") or ("" if ws else "application/octet-stream"))
    return {
        "status": int(status) if isinstance(status, int) else 0,
        "statusText": str(resp.get("reason") or ("Switching Protocols" if ws else "")),
        "httpVersion": "HTTP/1.1",
        "cookies": [],
        "headers": _headers(resp_headers),
        "content": _content(bytes(c.resp_body), mime),
        "redirectURL": "",
        "headersSize": -1,
        "bodySize": len(c.resp_body),
    }


def _times(c: _Chan) -> tuple[float, float]:
    """(total, wait) in milliseconds: the close record's `duration` and `ttfb` when it has them, else
    what the records' times say; wait never exceeds total."""
    close = c.close or {}
    duration = close.get("duration")
    total = float(duration) if isinstance(duration, (int, float)) else c.last_t - c.t0
    wait = (c.resp_t - c.t0) if c.resp_t is not None else 0.0
    if isinstance(close.get("ttfb"), (int, float)):
        wait = float(close["ttfb"])
    total_ms = max(total * 1000.0, 0.0)
    return total_ms, min(max(wait * 1000.0, 0.0), total_ms)
