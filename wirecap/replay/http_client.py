"""A small asyncio HTTP/1.1 client that records one exchange in the shapes a live capture has.

open (method, url, headers) -> msg c2s (the body) -> response (status, headers, sse) -> msg s2c (the
decoded body, or one msg per SSE event with its exact block) -> close (status, ttfb, duration, bytes).
Used by `replay client`; it reads the body as it streams so SSE events are timed as they arrive.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from wirecap.capture.sse import SSEParser, sse_record_fields
from wirecap.capture.writer import CaptureWriter

SKIP_REQUEST_HEADERS = frozenset({
    "host", "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection",
    "te", "trailer", "upgrade",
})


@dataclass
class HttpResult:
    status: int = 0
    reason: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)  # s2c msg fields, in order
    sse: bool = False
    ttfb: float = 0.0
    duration: float = 0.0
    bytes: int = 0


class _Decoder:
    def __init__(self, encoding: str) -> None:
        enc = encoding.lower().strip()
        if enc in ("gzip", "x-gzip"):
            self._d: Any = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif enc == "deflate":
            self._d = zlib.decompressobj()
        else:
            self._d = None
        self.active = self._d is not None

    def feed(self, data: bytes) -> bytes:
        return self._d.decompress(data) if self._d is not None else data

    def flush(self) -> bytes:
        return self._d.flush() if self._d is not None else b""


async def http_exchange(
    writer: CaptureWriter | None,
    ch: str,
    method: str,
    url: str,
    headers: list[tuple[str, str]],
    body: bytes,
    *,
    timeout: float = 30.0,
    on_message: Callable[[dict[str, Any]], None] | None = None,
    proxy: str | None = None,
) -> HttpResult:
    """Send one request and record it; `on_message` sees each s2c msg's fields as it arrives.

    It connects to `url`'s host, or to `proxy` (an `http://HOST:PORT` proxy, given explicitly: the
    environment's proxy variables are never read), and follows no redirect (a 3xx is the result)."""
    u = urlsplit(url)
    host = u.hostname or "127.0.0.1"
    port = u.port or (443 if u.scheme == "https" else 80)
    target = (u.path or "/") + (f"?{u.query}" if u.query else "")
    connect_host, connect_port = host, port
    if proxy:
        pu = urlsplit(proxy)
        connect_host, connect_port = pu.hostname or "127.0.0.1", pu.port or 8080
        target = url  # absolute form, as a proxy is asked
    send_headers = [(k, v) for k, v in headers if k.lower() not in SKIP_REQUEST_HEADERS]
    host_value = u.netloc
    lines = [f"{method} {target} HTTP/1.1", f"host: {host_value}"]
    lines += [f"{k}: {v}" for k, v in send_headers]
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"content-length: {len(body)}")
    lines.append("connection: close")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
    rec_headers = {"host": host_value, **_join(send_headers)}
    if body:
        rec_headers["content-length"] = str(len(body))
    res = HttpResult()
    t0 = time.monotonic()
    if writer is not None:
        writer.open(ch, "http", method=method, url=url, headers=rec_headers, server=f"{host}:{port}")
    async with asyncio.timeout(timeout):
        reader, w = await asyncio.open_connection(connect_host, connect_port)
    try:
        w.write(head + body)
        await w.drain()
        if writer is not None and body:
            writer.msg(ch, "c2s", body)
        async with asyncio.timeout(timeout):
            status_line = await reader.readline()
        res.ttfb = time.monotonic() - t0
        parts = status_line.decode("latin-1").rstrip("\r\n").split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise ConnectionError(f"bad HTTP status line {status_line[:80]!r}")
        res.status = int(parts[1])
        res.reason = parts[2] if len(parts) > 2 else ""
        hl: list[tuple[str, str]] = []
        while True:
            async with asyncio.timeout(timeout):
                line = await reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            hl.append((k.strip().lower(), v.strip()))
        res.headers = _join(hl)
        res.sse = res.headers.get("content-type", "").lower().startswith("text/event-stream")
        decoder = _Decoder(res.headers.get("content-encoding", ""))
        fields: dict[str, Any] = {"reason": res.reason}
        if res.sse:
            fields["sse"] = True
        if decoder.active:
            fields["encoding"] = res.headers["content-encoding"]
        if writer is not None:
            writer.response(ch, res.status, res.headers, **fields)
        parser = SSEParser() if res.sse else None
        body_parts: list[bytes] = []

        def emit(data: bytes, final: bool = False) -> None:
            if parser is not None:
                events = parser.feed(data) if not final else parser.feed(data) + parser.close()
                for ev in events:
                    f = sse_record_fields(ev)
                    res.messages.append(f)
                    if writer is not None:
                        writer.write("msg", None, len(ev.raw), ch=ch, dir="s2c", **f)
                    if on_message is not None:
                        on_message(f)
            else:
                body_parts.append(data)

        no_body = method == "HEAD" or res.status in (204, 304) or 100 <= res.status < 200
        if not no_body:
            async for raw in _body_chunks(reader, res.headers, timeout):
                res.bytes += len(raw)
                emit(decoder.feed(raw))
        emit(decoder.flush(), final=True)
        if parser is None:
            data = b"".join(body_parts)
            if data:
                from wirecap.capture.payload import encode_payload

                f = encode_payload(data)
                res.messages.append(f)
                if writer is not None:
                    writer.msg(ch, "s2c", data)
                if on_message is not None:
                    on_message(f)
        res.duration = time.monotonic() - t0
        if writer is not None:
            writer.close_channel(ch, status=res.status, ttfb=round(res.ttfb, 6),
                                 duration=round(res.duration, 6), bytes=res.bytes)
        return res
    finally:
        w.close()


async def _body_chunks(reader: asyncio.StreamReader, headers: dict[str, str], timeout: float):
    if "chunked" in headers.get("transfer-encoding", "").lower():
        while True:
            async with asyncio.timeout(timeout):
                line = await reader.readline()
            if not line:
                return
            size = int(line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                async with asyncio.timeout(timeout):
                    while await reader.readline() not in (b"\r\n", b"\n", b""):
                        pass
                return
            async with asyncio.timeout(timeout):
                data = await reader.readexactly(size)
                await reader.readexactly(2)
            yield data
    elif "content-length" in headers:
        left = int(headers["content-length"])
        while left > 0:
            async with asyncio.timeout(timeout):
                data = await reader.read(min(left, 65536))
            if not data:
                return
            left -= len(data)
            yield data
    else:
        while True:
            async with asyncio.timeout(timeout):
                data = await reader.read(65536)
            if not data:
                return
            yield data


def _join(hl: list[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in hl:
        k = k.lower()
        if k in out:
            out[k] = f"{out[k]}\n{v}" if k == "set-cookie" else f"{out[k]}, {v}"
        else:
            out[k] = v
    return out
