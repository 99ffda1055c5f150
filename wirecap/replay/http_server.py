"""`replay serve`: one asyncio HTTP/1.1 front on one port for every recorded channel.

HTTP/1.1 framing is h11's (`h11.Connection(our_role=SERVER)`): request heads (at most 256 KiB),
content-length and chunked bodies, keep-alive and pipelining, `Expect: 100-continue` (answered
`100 Continue` before the body is read), HTTP/1.0 clients, and the response's framing.
Plain requests are matched (method, path, normalized body) against the recorded HTTP exchanges and
get the recorded status, headers and body; SSE bodies are streamed event by event, each one's exact
bytes at its recorded time. A WebSocket upgrade is handed to `ws_conn` / `ws_server` with a
`WsContext` (this module imports them, never the other way round), unless the recording refused it
there (an HTTP exchange such as a 426 where the next recorded use of the path is): it is then served
as that exchange. Unmatched traffic fails
fast, in a form no client retries: HTTP 400 with an error body shaped like the provider's (Anthropic,
OpenAI, else generic JSON) whose message starts `wirecap replay mismatch:` (WebSocket: close 1008),
and the mismatch goes to `on_mismatch`. A request body sent with a content-encoding (gzip, deflate,
br, zstd) is decoded before it is matched.
"""

from __future__ import annotations

import asyncio
import http
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import h11
import orjson

from wirecap.capture.payload import encode_payload
from wirecap.capture.redact import Redactor
from wirecap.capture.sse import body_piece_bytes
from wirecap.errors import WirecapError
from wirecap.replay.match import MESSAGE_PREFIX, Mismatch, comparable
from wirecap.replay.pool import ScriptPool
from wirecap.replay.rewrite import Correlator, rewrite_record
from wirecap.replay.script import ChannelScript, decode_request_body, load_scripts, request_payload
from wirecap.replay.secrets import StandIns
from wirecap.replay.timing import Pacer
from wirecap.replay.wire import encode, received, sendable
from wirecap.replay.ws_conn import WsConnection
from wirecap.replay.ws_server import WsContext, run_session

# Headers that describe one hop or the recorded encoding, never the replayed body.
DROP_HEADERS = frozenset({
    "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
    "content-length", "content-encoding", "proxy-authenticate",
})
MAX_HEAD = 256 * 1024  # a request head longer than this is answered 431
LINGER = 2.0  # seconds an error answer waits for the client to stop sending before the close (_Conn.linger)
READ_AHEAD = 256 * 1024  # bytes read from a client before it is held back (pause_reading)
MISMATCH_STATUS = 400  # non-retryable for every client (5xx, 408, 409, 429 are retried)
EARLY = 0.0005
SESSION_CLOSE_TIMEOUT = 5.0

class _Closed(Exception):
    pass


class _Conn(asyncio.Protocol):
    """One TCP connection of the front: bytes in, h11 events out, h11's bytes back out.

    Bytes are handed to h11 only when it needs them (`next_event`), so what has not been parsed yet can
    still go to websockets on an upgrade (`detach`). Reading pauses while READ_AHEAD bytes wait."""

    def __init__(self, server: ReplayServer) -> None:
        self.server = server
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        self.transport: asyncio.Transport | None = None
        self._buf = bytearray()
        self._eof = False
        self._paused = False
        self._wake = asyncio.Event()
        self._can_write = asyncio.Event()
        self._can_write.set()
        self.task: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server._conns.add(self)
        self.task = asyncio.get_running_loop().create_task(self.server._serve_conn(self))

    def data_received(self, data: bytes) -> None:
        self._buf += data
        if len(self._buf) > READ_AHEAD and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake.set()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake.set()
        return True  # keep the transport: a response may still be on its way

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof = True
        self._wake.set()
        self._can_write.set()
        self.server._conns.discard(self)

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    def _take(self) -> bytes:
        data = bytes(self._buf)
        self._buf.clear()
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return data

    async def linger(self, seconds: float = LINGER) -> None:
        """After an error answer sent before the request was read whole: stop writing (FIN) and throw
        away what the client still sends, until it closes or `seconds` pass. Closing with unread bytes
        makes the kernel reset the connection, and a client still sending loses the answer under the
        reset (HTTP servers' "lingering close")."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if transport.can_write_eof():
            transport.write_eof()
        loop = asyncio.get_running_loop()
        end = loop.time() + seconds
        while not self._eof and (left := end - loop.time()) > 0:
            self._take()
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), left)
            except TimeoutError:
                break
        self._take()

    async def next_event(self) -> Any:
        """h11's next event, reading as much as it needs (b"" to h11 at EOF: it then says
        ConnectionClosed, or raises RemoteProtocolError inside a request)."""
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            while not self._buf and not self._eof:
                self._wake.clear()
                await self._wake.wait()
            self.h11.receive_data(self._take())

    def detach(self) -> bytes:
        """The bytes that came after the last event h11 parsed (for the next owner of the connection)."""
        return self.h11.trailing_data[0] + self._take()

    async def send(self, *events: Any) -> None:
        """h11's bytes for `events`, written at once, with flow control."""
        await self.write(b"".join(self.h11.send(e) or b"" for e in events))

    async def write(self, data: bytes) -> None:
        if self.transport is None or self.transport.is_closing():
            raise _Closed
        self.transport.write(data)
        if not self._can_write.is_set():
            await self._can_write.wait()


async def read_body(c: _Conn) -> bytes:
    """The request body h11 delimits (content-length or chunked; trailers dropped)."""
    parts: list[bytes] = []
    while True:
        event = await c.next_event()
        if type(event) is h11.Data:
            parts.append(event.data)
        elif type(event) is h11.EndOfMessage:
            return b"".join(parts)
        else:  # the client went away inside its request
            raise _Closed


@dataclass(slots=True)
class LiveRequest:
    """A request as h11 parsed it, in the forms the server matches and logs it in."""

    method: str
    target: str
    path: str
    headers: dict[str, str]  # lower-case names, repeats joined with ", "
    keep: bool  # the client lets the connection live on after the response

    @classmethod
    def of(cls, req: h11.Request) -> LiveRequest:
        headers = received(req.headers)
        target = req.target.decode("latin-1")
        keep = req.http_version == b"1.1" and "close" not in headers.get("connection", "").lower()
        return cls(req.method.decode("latin-1").upper(), target, urlsplit(target).path or "/", headers, keep)

    @property
    def websocket(self) -> bool:
        return (self.headers.get("upgrade", "").lower() == "websocket"
                and "upgrade" in self.headers.get("connection", "").lower())


def _head_size(req: h11.Request) -> int:
    """About the size of a request's head on the wire."""
    return len(req.target) + sum(len(k) + len(v) + 4 for k, v in req.headers.raw_items()) + 16


def _request_head(req: h11.Request) -> bytes:
    """An upgrade request's head again, for websockets (which parses it itself)."""
    lines = [b"%s %s HTTP/%s" % (req.method, req.target, req.http_version)]
    lines += [k + b": " + v for k, v in req.headers.raw_items()]
    return b"\r\n".join(lines) + b"\r\n\r\n"


class ReplayServer:
    """Plays the server side of a capture's network channels. Start it inside a running loop."""

    def __init__(self, scripts: list[ChannelScript], *, speed: float = 1.0, max_wait: float | None = None,
                 strict: bool = True, loop: bool = False, ignore: list[str] | tuple[str, ...] = (),
                 on_mismatch: Callable[[Mismatch], None] | None = None,
                 log: Callable[[str], None] | None = None, redactor: Redactor | None = None,
                 warn: Callable[[str], None] | None = None) -> None:
        self.pool = ScriptPool(scripts, ignore=ignore, loop=loop)
        # Live clients' secrets never reach a log line, a mismatch report, a 400 body or close reason,
        # or pytest's output: learnt from each request's secret headers, found in bodies by shape.
        self.redactor = redactor or Redactor()
        self._warn = warn
        self.stand_ins = StandIns(self.warn)
        self.pacer = Pacer(speed, max_wait)
        self.strict = strict
        self.on_mismatch = on_mismatch
        self._log = log
        self.mismatches: list[Mismatch] = []
        self._conns: set[_Conn] = set()
        self._sessions: dict[WsConnection, asyncio.Task[None]] = {}
        self.ws_context = WsContext(pool=self.pool, pacer=self.pacer, strict=strict, stand_ins=self.stand_ins,
                                    report=self.mismatch, log=self.log, learn_secrets=self.learn_secrets)
        self._server: asyncio.Server | None = None
        self.port = 0
        self.host = "127.0.0.1"

    @classmethod
    def from_capture(cls, path: str, **kwargs: Any) -> ReplayServer:
        header, scripts = load_scripts(path)
        if not scripts:
            raise WirecapError(f"{path}: no WebSocket or HTTP channel to replay")
        kwargs.setdefault("redactor", live_redactor(header))
        return cls(scripts, **kwargs)

    # --- reporting ------------------------------------------------------------------------------
    def log(self, text: str) -> None:
        if self._log is not None:
            self._log(self.redactor.text(text))

    def warn(self, text: str) -> None:
        """Something the user should know even with the per-connection log off (`warn`, else the log)."""
        if self._warn is not None:
            self._warn(self.redactor.text(text))
        else:
            self.log(text)

    def learn_secrets(self, headers: dict[str, str]) -> None:
        """A live request's secret headers (authorization, x-api-key, cookie, ...): their values are
        then redacted wherever they appear."""
        try:
            self.redactor.headers_dict(headers)
            # a cookie header is redacted whole but not learnt (it holds several values): learn each
            # value, so a session cookie the client also puts in a body is hidden there too
            for part in headers.get("cookie", "").split(";"):
                value = part.partition("=")[2].strip()
                if value:
                    self.redactor.learn(value, "cookie")
        except Exception:  # noqa: BLE001 - redaction must not stop serving
            pass

    def mismatch(self, mm: Mismatch) -> Mismatch:
        """Record and report a mismatch, its secrets redacted; returns the redacted one (what the
        client is told is built from it)."""
        mm = mm.redacted(self.redactor)
        self.mismatches.append(mm)
        if self.on_mismatch is not None:
            self.on_mismatch(mm)
        return mm

    # --- life cycle -----------------------------------------------------------------------------
    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        loop = asyncio.get_running_loop()
        try:
            self._server = await loop.create_server(lambda: _Conn(self), host, port, reuse_address=True)
        except (OSError, OverflowError) as e:  # OverflowError: a port beyond 65535
            raise WirecapError(f"cannot listen on {host}:{port}: {getattr(e, 'strerror', None) or e}") from None
        self.host = host
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def stop(self) -> None:
        """Stop listening, drop the HTTP connections, close the WebSocket ones (1001, going away) and
        wait for their sessions (at most SESSION_CLOSE_TIMEOUT)."""
        if self._server is None:
            return
        self._server.close()
        tasks = [c.task for c in self._conns if c.task is not None] + list(self._sessions.values())
        for c in list(self._conns):
            if c.transport is not None:
                c.transport.abort()
        closing = [asyncio.get_running_loop().create_task(conn.close(1001)) for conn in list(self._sessions)]
        if tasks or closing:
            _done, pending = await asyncio.wait(tasks + closing, timeout=SESSION_CLOSE_TIMEOUT)
            for task in pending:
                task.cancel()

    # --- connections ----------------------------------------------------------------------------
    async def _serve_conn(self, c: _Conn) -> None:
        handed_off = False
        try:
            while True:
                event = await c.next_event()
                if type(event) is not h11.Request:
                    return  # ConnectionClosed
                if _head_size(event) > MAX_HEAD:  # (h11 bounds only a head that came in pieces)
                    raise h11.RemoteProtocolError("request head too large", error_status_hint=431)
                req = LiveRequest.of(event)
                self.learn_secrets(req.headers)
                if req.websocket and not self.pool.upgrade_refused(req.path):
                    handed_off = await self._hand_off(c, event)
                    return
                if c.h11.they_are_waiting_for_100_continue:
                    await c.send(h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue"))
                await self._http(c, req, await read_body(c))
                if not (c.h11.our_state is h11.DONE and c.h11.their_state is h11.DONE):
                    return
                c.h11.start_next_cycle()
        except (_Closed, ConnectionError):
            return
        except h11.RemoteProtocolError as e:
            await self._refuse(c, e)
        except Exception as e:  # noqa: BLE001 - keep serving other connections
            self.log(f"http connection failed: {e!r}")
        finally:
            if not handed_off and c.transport is not None:
                c.transport.close()

    async def _refuse(self, c: _Conn, e: h11.RemoteProtocolError) -> None:
        """A request h11 could not read: its status (400, 431 for a head over MAX_HEAD) and why."""
        status = e.error_status_hint
        text = f"request head larger than {MAX_HEAD // 1024} KiB" if status == 431 else str(e)
        try:
            await c.send(*_plain(status, self.redactor.text(text)))
            await c.linger()
        except (_Closed, ConnectionError, h11.LocalProtocolError):
            pass

    async def _hand_off(self, c: _Conn, req: h11.Request) -> bool:
        """Give the connection to websockets: the upgrade request and what followed it. False when the
        client left before the request was complete."""
        while (event := await c.next_event()) is not h11.PAUSED:
            if type(event) is h11.ConnectionClosed:
                return False
        assert c.transport is not None
        self._conns.discard(c)
        path = urlsplit(req.target.decode("latin-1")).path or "/"
        conn = WsConnection(c.transport, self.pool.subprotocols(), deflate=self.pool.ws_deflate(path))
        if conn.open(_request_head(req), c.detach()):
            task = asyncio.get_running_loop().create_task(run_session(self.ws_context, conn))
            self._sessions[conn] = task
            task.add_done_callback(lambda _t: self._sessions.pop(conn, None))
        return True

    async def _http(self, c: _Conn, req: LiveRequest, body: bytes) -> None:
        method, path = req.method, req.path
        body = self.stand_ins.restore(decode_request_body(body, req.headers.get("content-encoding")))
        live = None
        try:
            live = comparable(encode_payload(body)) if body else None  # (decoded once: matched, then correlated)
            script, mm = self.pool.take_http(method, path, body, strict=self.strict, live=live)
        except Exception as e:  # noqa: BLE001 - a matching bug is told to the client, not a dropped connection
            script, mm = None, Mismatch.failed("http", 0, live, e, what=f"request {method} {path}")
        if mm is not None:
            mm = self.mismatch(mm)
        if script is None:
            assert mm is not None
            await self._refuse_mismatch(c, req, mm)
            return
        self.log(f"{script.ch}: {method} {self.redactor.url('http://h' + req.target)[len('http://h'):]}")
        corr = Correlator()
        if script.request_body and body:
            corr.learn(comparable(request_payload(script)[0]), live)
        await self._respond(c, script, method, req.keep, corr)

    async def _refuse_mismatch(self, c: _Conn, req: LiveRequest, mm: Mismatch) -> None:
        """The 400 of a mismatch, its body shaped like the provider's error (none for a HEAD)."""
        try:
            data = mismatch_body(mm, self.pool.dialect_of(mm.ch), req.path)
        except Exception as e:  # noqa: BLE001 - a bug here must not drop the connection (the client would retry)
            self.log(f"cannot build the mismatch answer: {e!r}")
            data = orjson.dumps({"error": {"message": MESSAGE_PREFIX + f"request {req.method} {req.path} unmatched",
                                           "type": "invalid_request_error", "code": "wirecap_replay_mismatch"}})
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(data)),
                   (b"x-should-retry", b"false"), (b"x-wirecap-replay", b"mismatch"), _connection(req.keep)]
        body = [] if req.method == "HEAD" else [h11.Data(data=data)]  # a HEAD answer has no body
        await c.send(h11.Response(status_code=MISMATCH_STATUS, headers=headers, reason=_reason(MISMATCH_STATUS)),
                     *body, h11.EndOfMessage())

    async def _respond(self, c: _Conn, script: ChannelScript, method: str, keep: bool, corr: Correlator) -> None:
        """The recorded response: its head at its recorded time, then its body (whole, or each piece of
        a stream at its own time, chunked; to an HTTP/1.0 client delimited by the close)."""
        loop = asyncio.get_running_loop()
        anchor = loop.time()
        plan = self.plan(script, method, keep, corr)
        await _sleep_until(loop, anchor + plan.due[0])
        if not plan.has_body:
            await c.send(plan.head, h11.EndOfMessage())
        elif not plan.streamed:
            await _sleep_until(loop, anchor + plan.due[-1])
            await c.send(plan.head, h11.Data(data=b"".join(plan.chunks)), h11.EndOfMessage())
        else:
            await c.send(plan.head)
            for data, d in zip(plan.chunks, plan.due[1:], strict=True):
                await _sleep_until(loop, anchor + d)
                await c.send(h11.Data(data=data))
            await c.send(h11.EndOfMessage())

    def plan(self, script: ChannelScript, method: str, keep: bool, corr: Correlator) -> ResponsePlan:
        """What `_respond` sends for `script`: head, body pieces (ids rewritten, stand-ins filled) and
        when each goes (seconds after the request's end, paced)."""
        status = _status(script)
        replies = [r for s in script.steps for r in s.replies]
        fill = self.stand_ins.fill
        chunks = [fill(body_piece_bytes(rewrite_record(corr, r.record), lines=script.lines), r.record.get("seq"),
                       script.ch) for r in replies]
        due = self.pacer.schedule([script.response_offset] + [r.offset for r in replies])
        has_body = not (method == "HEAD" or status in (204, 304) or 100 <= status < 200)
        streamed = has_body and bool(script.sse or script.lines or len(chunks) > 1)
        # a stream's framing is h11's (chunked, or the close for an HTTP/1.0 client); else content-length
        head = self._head(script, status, None if streamed else sum(map(len, chunks)), keep)
        return ResponsePlan(head, chunks, due, has_body, streamed)

    def _head(self, script: ChannelScript, status: int, length: int | None, keep: bool) -> h11.Response:
        """The recorded response head: its headers as recorded (less the hop-by-hop and framing ones),
        stand-ins filled, `content-length` when given, `connection` as `_connection` says."""
        resp = script.response or {}
        recorded = resp.get("headers") or {}
        headers = [(k, self.stand_ins.fill_text(v, resp.get("seq"), script.ch)) for k, v in _response_headers(recorded)]
        if length is not None:
            headers.append(("content-length", str(length)))
        said = any(k.lower() == "connection" for k in recorded)
        wire = sendable(encode(headers)) + ([_connection(keep)] if said or not keep else [])
        reason = str(resp.get("reason") or _reason(status)).encode("latin-1", "replace")
        return h11.Response(status_code=status, headers=wire, reason=reason)


def _status(script: ChannelScript) -> int:
    """The recorded status (the response's, else the close's), 200 when none was recorded."""
    return int((script.response or {}).get("status") or (script.close or {}).get("status") or 200)


@dataclass(slots=True)
class ResponsePlan:
    """A recorded response ready to go: h11's head event, the body pieces and when each goes."""

    head: h11.Response
    chunks: list[bytes]
    due: list[float]  # the head's, then each chunk's
    has_body: bool
    streamed: bool


async def _sleep_until(loop: asyncio.AbstractEventLoop, when: float) -> None:
    wait = when - loop.time()
    if wait > EARLY:
        await asyncio.sleep(wait - EARLY)  # the loop wakes up to ~1 ms late (ms timeouts)


def _response_headers(recorded: dict[str, str]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for k, v in recorded.items():
        if k.lower() in DROP_HEADERS:
            continue
        for part in (str(v).split("\n") if k.lower() == "set-cookie" else [str(v)]):
            out.append((k, part))
    return out


def _connection(keep: bool) -> tuple[bytes, bytes]:
    """`connection: close` when the connection ends after the response, else `connection: keep-alive`
    (sent only when the recording carried a `connection` header: HTTP/1.1 keeps a connection by
    default, and a client that prints the headers it got prints what it printed when recorded)."""
    return (b"connection", b"keep-alive" if keep else b"close")


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def live_redactor(header: dict[str, Any] | None) -> Redactor:
    """The redactor for what a live client sends: the default policy plus the keys and patterns the
    capture was recorded with (its header's `redaction`), so replay hides what the recording hid."""
    red = (header or {}).get("redaction") if isinstance(header, dict) else None
    keys = red.get("extra_keys") if isinstance(red, dict) else None
    patterns = red.get("extra_patterns") if isinstance(red, dict) else None
    keys = tuple(k for k in keys if isinstance(k, str)) if isinstance(keys, list) else ()
    patterns = tuple(p for p in patterns if isinstance(p, str)) if isinstance(patterns, list) else ()
    try:
        return Redactor(extra_keys=keys, extra_patterns=patterns)
    except Exception:  # noqa: BLE001 - a pattern this Python cannot compile: the default policy still holds
        return Redactor(extra_keys=keys)


def mismatch_body(mm: Mismatch, dialect: str | None, path: str) -> bytes:
    """The error document of a mismatch, shaped like the provider's so its client shows the message
    and gives up: Anthropic `{"type": "error", "error": {"type", "message"}}`, OpenAI `{"error":
    {"message", "type", "param", "code"}}`, else a generic `{"error": {"message", "type", "code"}}`.
    Every shape also carries `wirecap`: reason, channel, index, candidate_seq and `diff`, the aligned
    differences one short line each (never the whole values: some clients print the body)."""
    msg = mm.message()
    # the client gets the aligned lines, not every value (wirecap prints those): `mm.to_json()`'s
    # short keys, built here without copying the differing values its `diffs` would hold
    detail = {"reason": mm.reason(), "channel": mm.ch, "index": mm.index,
              "candidate_seq": mm.candidate_seq, "diff": mm.diff_lines()}
    shape = error_shape(dialect, path)
    doc: dict[str, Any]
    if shape == "anthropic":
        doc = {"type": "error", "error": {"type": "invalid_request_error", "message": msg}}
    elif shape == "openai":
        doc = {"error": {"message": msg, "type": "invalid_request_error", "param": None,
                         "code": "wirecap_replay_mismatch"}}
    else:
        doc = {"error": {"message": msg, "type": "wirecap_replay_mismatch", "code": "wirecap_replay_mismatch"},
               "message": msg}
    doc["wirecap"] = detail
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


def error_shape(dialect: str | None, path: str) -> str:
    """`anthropic`, `openai` or `generic`: from the channel's dialect, else from the URL path."""
    d = dialect or ""
    if d.startswith("anthropic"):
        return "anthropic"
    if d.startswith("openai"):
        return "openai"
    p = path.rstrip("/")
    if p.endswith(("/messages", "/messages/count_tokens", "/complete")):
        return "anthropic"
    if p.endswith(("/chat/completions", "/responses", "/completions", "/embeddings", "/models")):
        return "openai"
    return "generic"


def _plain(status: int, text: str) -> tuple[Any, ...]:
    """A short text/plain answer that ends the connection, as h11 events."""
    data = (text + "\n").encode("utf-8")
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"%d" % len(data)),
               _connection(False)]
    return (h11.Response(status_code=status, headers=headers, reason=_reason(status)), h11.Data(data=data),
            h11.EndOfMessage())


class ThreadedReplayServer:
    """A ReplayServer on its own event loop in a daemon thread (for tests and the pytest fixture)."""

    def __init__(self, server: ReplayServer, host: str = "127.0.0.1", port: int = 0) -> None:
        self.server = server
        self._host, self._port = host, port
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="wirecap-replay", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self.server.start(self._host, self._port))
        except BaseException as e:  # noqa: BLE001 - handed to the starting thread
            self._error = e
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self.server.stop())
        self._loop.close()

    def start(self, timeout: float = 10) -> int:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise WirecapError("replay server did not start in time")
        if self._error is not None:
            raise self._error
        return self.server.port

    def stop(self, timeout: float = 10) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)

    def __enter__(self) -> ThreadedReplayServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class MismatchPrinter:
    """`on_mismatch` for the command line: the full report the first time, one line for a repeat
    (a client retrying the same request, an SDK reconnecting) that differs the same way."""

    def __init__(self, out: Callable[[str], None] | None = None) -> None:
        self._out = out or (lambda s: print(s, file=sys.stderr, flush=True))
        self._seen: set[tuple[Any, ...]] = set()

    def __call__(self, mm: Mismatch) -> None:
        key = (mm.what, mm.ch, mm.candidate_seq, tuple(mm.diff_lines()))
        if key in self._seen:
            self._out(f"replay mismatch: {mm.what} #{mm.index}: the same as before (seq {mm.candidate_seq})"
                      if mm.candidate_seq is not None else "replay mismatch: " + mm.reason())
            return
        self._seen.add(key)
        self._out(mm.report())
