"""A small asyncio HTTP/1.1 client that records one exchange in the shapes a live capture has.

open (method, url, headers) -> msg c2s (the body) -> response (status, headers, sse) -> msg s2c (the
decoded body, or one msg per SSE event with its exact block) -> close (status, ttfb, duration, bytes).
Used by `replay client`; it reads the body as it streams so SSE events are timed as they arrive.

HTTP/1.1 framing is h11's (`h11.Connection(our_role=CLIENT)`): the request is sent with
`connection: close`; the response may be content-length, chunked or delimited by the close, and a
`100 Continue` (or any 1xx) before it is skipped. The body is decoded with the recorder's codecs
(`capture.bodies`: gzip, deflate, br, zstd, stacked), so a replayed exchange is recorded as
`wirecap record` records it. A response h11 cannot read, or a body that does not decode as its
`content-encoding` says, is a `ConnectionError`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import h11

from wirecap.capture.bodies import ContentDecoder, content_encodings
from wirecap.capture.payload import encode_payload
from wirecap.capture.sse import SSEParser, sse_record_fields
from wirecap.capture.writer import CaptureWriter
from wirecap.replay.wire import encode, join_headers, received, sendable

SKIP_REQUEST_HEADERS = frozenset({
    "host", "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection",
    "te", "trailer", "upgrade",
})
MAX_HEAD = 256 * 1024  # a response head longer than this is refused
READ_SIZE = 65536


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
    environment's proxy variables are never read), and follows no redirect (a 3xx is the result).
    Every wait (connect, each read) is bounded by `timeout` (TimeoutError)."""
    return await _Exchange(writer, ch, method, url, headers, body, timeout, on_message, proxy).run()


class _Exchange:
    """One request and its response, recorded as they go (see `http_exchange`)."""

    def __init__(self, writer: CaptureWriter | None, ch: str, method: str, url: str,
                 headers: list[tuple[str, str]], body: bytes, timeout: float,
                 on_message: Callable[[dict[str, Any]], None] | None, proxy: str | None) -> None:
        self.writer, self.ch, self.method, self.url, self.body = writer, ch, method, url, body
        self.timeout, self.on_message = timeout, on_message
        u = urlsplit(url)
        self.host = u.hostname or "127.0.0.1"
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.target = (u.path or "/") + (f"?{u.query}" if u.query else "")
        self.connect_to = (self.host, self.port)
        if proxy:
            pu = urlsplit(proxy)
            self.connect_to = (pu.hostname or "127.0.0.1", pu.port or 8080)
            self.target = url  # absolute form, as a proxy is asked
        # a recorded upgrade request (the server refused it: that answer is what is replayed) asks again
        self.upgrade = method == "GET" and any(k.lower() == "upgrade" and v.lower() == "websocket" for k, v in headers)
        skip = SKIP_REQUEST_HEADERS - {"upgrade"} if self.upgrade else SKIP_REQUEST_HEADERS
        self.send_headers = [(k, v) for k, v in headers if k.lower() not in skip]
        self.host_value = u.netloc
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
        self.res = HttpResult()
        self.t0 = 0.0

    def _request(self) -> h11.Request:
        wire = [("host", self.host_value), *self.send_headers]
        if self.body or self.method in ("POST", "PUT", "PATCH"):
            wire.append(("content-length", str(len(self.body))))
        wire.append(("connection", "Upgrade, close" if self.upgrade else "close"))
        return h11.Request(method=self.method, target=self.target.encode("latin-1", "replace"),
                           headers=sendable(encode(wire)))

    def _recorded_headers(self) -> dict[str, str]:
        out = {"host": self.host_value, **({"connection": "Upgrade"} if self.upgrade else {}),
               **join_headers(self.send_headers)}
        if self.body:
            out["content-length"] = str(len(self.body))
        return out

    async def run(self) -> HttpResult:
        request = self._request()  # (a header h11 refuses fails here, before anything is recorded)
        self.t0 = time.monotonic()
        if self.writer is not None:
            self.writer.open(self.ch, "http", method=self.method, url=self.url, headers=self._recorded_headers(),
                             server=f"{self.host}:{self.port}")
        async with asyncio.timeout(self.timeout):
            reader, w = await asyncio.open_connection(*self.connect_to)
        try:
            w.write(self._send(request, h11.Data(data=self.body), h11.EndOfMessage()))
            await w.drain()
            if self.writer is not None and self.body:
                self.writer.msg(self.ch, "c2s", self.body)
            sink = await self._response(reader)
            await self._body(reader, sink)
            self._close()
            return self.res
        finally:
            w.close()

    def _send(self, *events: Any) -> bytes:
        try:
            return b"".join(self.h11.send(e) or b"" for e in events)
        except h11.LocalProtocolError as e:
            raise ConnectionError(f"cannot send this request: {e}") from None

    async def _event(self, reader: asyncio.StreamReader) -> Any:
        """h11's next event, reading as much as it needs (each read within the timeout)."""
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as e:
                raise ConnectionError(f"bad HTTP response: {e}") from None
            if event is not h11.NEED_DATA:
                return event
            async with asyncio.timeout(self.timeout):
                data = await reader.read(READ_SIZE)
            self.h11.receive_data(data)  # b"": the server closed

    async def _response(self, reader: asyncio.StreamReader) -> _BodySink:
        """The response head (a 1xx before it skipped), recorded; returns where its body goes."""
        event = await self._event(reader)
        while type(event) is h11.InformationalResponse:
            event = await self._event(reader)
        if type(event) is not h11.Response:
            raise ConnectionError("the server closed the connection before its response")
        res = self.res
        res.ttfb = time.monotonic() - self.t0
        res.status = event.status_code
        res.reason = event.reason.decode("latin-1")
        res.headers = received(event.headers)
        res.sse = res.headers.get("content-type", "").lower().startswith("text/event-stream")
        sink = _BodySink(self, _decoder(res.headers.get("content-encoding")))
        fields: dict[str, Any] = {"reason": res.reason}
        if res.sse:
            fields["sse"] = True
        if sink.encoding:
            fields["encoding"] = sink.encoding
        if self.writer is not None:
            self.writer.response(self.ch, res.status, res.headers, **fields)
        return sink

    async def _body(self, reader: asyncio.StreamReader, sink: _BodySink) -> None:
        """The body as it streams (h11 knows when it has none: HEAD, 204, 304)."""
        while True:
            event = await self._event(reader)
            if type(event) is h11.Data:
                self.res.bytes += len(event.data)
                sink.feed(bytes(event.data))
            elif type(event) is h11.EndOfMessage:
                break
            else:
                raise ConnectionError("the server closed the connection inside its response")
        sink.finish()

    def _close(self) -> None:
        res = self.res
        res.duration = time.monotonic() - self.t0
        if self.writer is not None:
            self.writer.close_channel(self.ch, status=res.status, ttfb=round(res.ttfb, 6),
                                      duration=round(res.duration, 6), bytes=res.bytes)

    def emit(self, fields: dict[str, Any], data: bytes | None = None, nbytes: int = 0) -> None:
        """One s2c message: into the result, the capture (`data`: a whole body; else SSE fields) and
        `on_message`."""
        self.res.messages.append(fields)
        if self.writer is not None:
            if data is not None:
                self.writer.msg(self.ch, "s2c", data)
            else:
                self.writer.write("msg", None, nbytes, ch=self.ch, dir="s2c", **fields)
        if self.on_message is not None:
            self.on_message(fields)


def _decoder(header: str | None) -> ContentDecoder | None:
    """The recorder's decoder for a `content-encoding` (None when there is none, or none it knows:
    the body is then recorded as it came)."""
    encs = content_encodings(header)
    if not encs:
        return None
    try:
        return ContentDecoder(encs)
    except ValueError:
        return None


class _BodySink:
    """A response body, decoded, made into messages: one per SSE event as it completes, else one
    for the whole body at the end."""

    def __init__(self, ex: _Exchange, decoder: ContentDecoder | None) -> None:
        self.ex = ex
        self.decoder = decoder
        self.encoding = ", ".join(content_encodings(ex.res.headers.get("content-encoding"))) if decoder else ""
        self.parser = SSEParser() if ex.res.sse else None
        self.parts: list[bytes] = []

    def _decode(self, data: bytes, final: bool = False) -> bytes:
        if self.decoder is None:
            return data
        try:
            return self.decoder.feed(data) + (self.decoder.flush() if final else b"")
        except Exception as e:  # noqa: BLE001 - zlib.error, brotli.error...: the body is not what it says
            raise ConnectionError(f"the response body does not decode as {self.encoding}: {e}") from None

    def feed(self, data: bytes) -> None:
        self._pieces(self._decode(data))

    def finish(self) -> None:
        self._pieces(self._decode(b"", final=True), final=True)
        if self.parser is None:
            data = b"".join(self.parts)
            if data:
                self.ex.emit(encode_payload(data), data)

    def _pieces(self, data: bytes, final: bool = False) -> None:
        if self.parser is None:
            if data:
                self.parts.append(data)
            return
        events = self.parser.feed(data) if data else []
        if final:
            events += self.parser.close()
        for ev in events:
            self.ex.emit(sse_record_fields(ev), nbytes=len(ev.raw))

