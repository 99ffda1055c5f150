"""`replay serve`: one asyncio HTTP/1.1 front on one port for every recorded channel.

Plain requests are matched (method, path, normalized body) against the recorded HTTP exchanges and
get the recorded status, headers and body; SSE bodies are streamed event by event, each one's exact
bytes at its recorded time. A WebSocket upgrade is handed to `ws_server`. Unmatched traffic fails
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
from typing import Any
from urllib.parse import urlsplit

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
from wirecap.replay.ws_server import MISMATCH_CLOSE, close_reason, hand_off, make_ws_server, play_ws

# Headers that describe one hop or the recorded encoding, never the replayed body.
DROP_HEADERS = frozenset({
    "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
    "content-length", "content-encoding", "proxy-authenticate",
})
MAX_HEAD = 256 * 1024
MISMATCH_STATUS = 400  # non-retryable for every client (5xx, 408, 409, 429 are retried)
EARLY = 0.0005


class _Closed(Exception):
    pass


class _Conn(asyncio.Protocol):
    """A TCP connection read as a byte buffer, so its first bytes can still go to websockets."""

    def __init__(self, server: ReplayServer) -> None:
        self.server = server
        self.buf = bytearray()
        self.eof = False
        self.transport: asyncio.Transport | None = None
        self._wake: asyncio.Event = asyncio.Event()
        self._can_write = asyncio.Event()
        self._can_write.set()
        self.task: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server._conns.add(self)
        self.task = asyncio.get_running_loop().create_task(self.server._serve_conn(self))

    def data_received(self, data: bytes) -> None:
        self.buf += data
        self._wake.set()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake.set()
        return True  # keep the transport: a response may still be on its way

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self._wake.set()
        self._can_write.set()
        self.server._conns.discard(self)

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    async def _more(self) -> None:
        if self.eof:
            raise _Closed
        self._wake.clear()
        await self._wake.wait()

    async def read_until(self, sep: bytes, limit: int) -> bytes | None:
        """Bytes up to and including `sep`; None at a clean EOF before any byte."""
        while True:
            i = self.buf.find(sep)
            if i >= 0:
                out = bytes(self.buf[: i + len(sep)])
                del self.buf[: i + len(sep)]
                return out
            if len(self.buf) > limit:
                raise ValueError("request head too large")
            if self.eof and not self.buf:
                return None
            await self._more()

    async def read_exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            await self._more()
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def take_buffer(self) -> bytes:
        out = bytes(self.buf)
        self.buf.clear()
        return out

    async def write(self, data: bytes) -> None:
        if self.transport is None or self.transport.is_closing():
            raise _Closed
        self.transport.write(data)
        if not self._can_write.is_set():
            await self._can_write.wait()


def parse_head(head: bytes) -> tuple[str, str, str, list[tuple[str, str]]]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise ValueError(f"bad request line {lines[0][:80]!r}")
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise ValueError(f"bad header line {line[:80]!r}")
        headers.append((name.strip().lower(), value.strip()))
    return parts[0].upper(), parts[1], parts[2], headers


async def read_body(c: _Conn, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        out = bytearray()
        while True:
            line = await c.read_until(b"\r\n", 1024)
            if line is None:
                raise _Closed
            size = int(line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while True:  # trailers, up to the blank line
                    t = await c.read_until(b"\r\n", MAX_HEAD)
                    if t in (None, b"\r\n"):
                        break
                return bytes(out)
            out += await c.read_exact(size)
            await c.read_exact(2)
    n = int(headers.get("content-length", "0") or 0)
    return await c.read_exact(n) if n else b""


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
        self.ws = make_ws_server(self)
        try:
            self._server = await loop.create_server(lambda: _Conn(self), host, port, reuse_address=True)
        except (OSError, OverflowError) as e:  # OverflowError: a port beyond 65535
            raise WirecapError(f"cannot listen on {host}:{port}: {getattr(e, 'strerror', None) or e}") from None
        self.ws.server = self._server  # lets websockets' own close() and is_serving() work
        self.host = host
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for c in list(self._conns):
            if c.transport is not None:
                c.transport.abort()
        self.ws.close(close_connections=True)
        try:
            async with asyncio.timeout(5):
                await self.ws.wait_closed()
        except TimeoutError:
            pass

    # --- connections ----------------------------------------------------------------------------
    async def _serve_conn(self, c: _Conn) -> None:
        handed_off = False
        try:
            while True:
                head = await c.read_until(b"\r\n\r\n", MAX_HEAD)
                if head is None:
                    return
                try:
                    method, target, version, hlist = parse_head(head)
                except ValueError as e:
                    await c.write(_plain(400, self.redactor.text(str(e))))
                    return
                headers = _join(hlist)
                self.learn_secrets(headers)
                if (headers.get("upgrade", "").lower() == "websocket"
                        and "upgrade" in headers.get("connection", "").lower()):
                    assert c.transport is not None
                    handed_off = True
                    self._conns.discard(c)
                    hand_off(self.ws, c.transport, head + c.take_buffer(), self.pool.subprotocols())
                    return
                body = await read_body(c, headers)
                keep = await self._http(c, method, target, version, headers, body)
                if not keep:
                    return
        except (_Closed, ConnectionError):
            return
        except ValueError as e:
            try:
                await c.write(_plain(400, self.redactor.text(str(e))))
            except (_Closed, ConnectionError):
                pass
        except Exception as e:  # noqa: BLE001 - keep serving other connections
            self.log(f"http connection failed: {e!r}")
        finally:
            if not handed_off and c.transport is not None:
                c.transport.close()

    async def ws_session(self, conn: Any) -> None:
        path = urlsplit(conn.request.path).path or "/"
        self.learn_secrets({k.lower(): v for k, v in conn.request.headers.raw_items()})
        script = self.pool.take_ws(path)
        if script is None:
            mm = Mismatch("ws", 0, path, None, None, what=f"WebSocket connection to {path}")
            mm = self.mismatch(mm)
            await conn.close(MISMATCH_CLOSE, close_reason(f"{MESSAGE_PREFIX}no recorded WebSocket channel left at {path}"))
            return
        self.log(f"{script.ch}: live WebSocket connection at {path}")
        await play_ws(self, conn, script)

    async def _http(self, c: _Conn, method: str, target: str, version: str, headers: dict[str, str],
                    body: bytes) -> bool:
        path = urlsplit(target).path or "/"
        keep = version == "HTTP/1.1" and "close" not in headers.get("connection", "").lower()
        body = self.stand_ins.restore(decode_request_body(body, headers.get("content-encoding")))
        try:
            live = comparable(encode_payload(body)) if body else None  # (decoded once: matched, then correlated)
            script, mm = self.pool.take_http(method, path, body, strict=self.strict, live=live)
        except Exception as e:  # noqa: BLE001 - a matching bug is told to the client, not a dropped connection
            live = comparable(encode_payload(body)) if body else None
            script, mm = None, Mismatch.failed("http", 0, live, e, what=f"request {method} {path}")
        if mm is not None:
            mm = self.mismatch(mm)
        if script is None:
            assert mm is not None
            try:
                data = mismatch_body(mm, self.pool.dialect_of(mm.ch), path)
            except Exception as e:  # noqa: BLE001 - a bug here must not drop the connection (the client would retry)
                self.log(f"cannot build the mismatch answer: {e!r}")
                data = orjson.dumps({"error": {"message": MESSAGE_PREFIX + f"request {method} {path} unmatched",
                                               "type": "invalid_request_error", "code": "wirecap_replay_mismatch"}})
            await c.write(_head(MISMATCH_STATUS, _reason(MISMATCH_STATUS), [
                ("content-type", "application/json"), ("content-length", str(len(data))),
                ("x-should-retry", "false"), ("x-wirecap-replay", "mismatch")], keep)
                          + (b"" if method == "HEAD" else data))  # a HEAD answer has no body
            return keep
        self.log(f"{script.ch}: {method} {self.redactor.url('http://h' + target)[len('http://h'):]}")
        corr = Correlator()
        if script.request_body and body:
            corr.learn(comparable(request_payload(script)[0]), live)
        await self._respond(c, script, method, version, keep, corr)
        return keep

    async def _respond(self, c: _Conn, script: ChannelScript, method: str, version: str, keep: bool,
                       corr: Correlator) -> None:
        loop = asyncio.get_running_loop()
        anchor = loop.time()
        resp = script.response or {}
        status = int(resp.get("status") or (script.close or {}).get("status") or 200)
        replies = [r for s in script.steps for r in s.replies]
        fill = self.stand_ins.fill
        chunks = [fill(body_piece_bytes(rewrite_record(corr, r.record), lines=script.lines), r.record.get("seq"),
                       script.ch) for r in replies]
        due = self.pacer.schedule([script.response_offset] + [r.offset for r in replies])
        headers = [(k, self.stand_ins.fill_text(v, resp.get("seq"), script.ch))
                   for k, v in _response_headers(resp.get("headers") or {})]
        no_body = method == "HEAD" or status in (204, 304) or 100 <= status < 200
        streamed = script.sse or script.lines or len(chunks) > 1
        chunked = False
        if no_body:
            headers.append(("content-length", str(sum(map(len, chunks)))))
        elif streamed and version == "HTTP/1.1":
            headers.append(("transfer-encoding", "chunked"))
            chunked = True
        elif streamed:
            keep = False
        else:
            headers.append(("content-length", str(sum(map(len, chunks)))))
        await _sleep_until(loop, anchor + due[0])
        reason = resp.get("reason") or _reason(status)
        said = any(k.lower() == "connection" for k in (resp.get("headers") or {}))
        head = _head(status, reason, headers, keep, say_keep_alive=said)
        if no_body:
            await c.write(head)
            return
        if not streamed:
            await _sleep_until(loop, anchor + due[-1])
            await c.write(head + b"".join(chunks))
            return
        await c.write(head)
        for data, d in zip(chunks, due[1:], strict=True):
            await _sleep_until(loop, anchor + d)
            if chunked:
                if data:
                    await c.write(b"%x\r\n%s\r\n" % (len(data), data))
            else:
                await c.write(data)
        if chunked:
            await c.write(b"0\r\n\r\n")
        if not keep and c.transport is not None:
            c.transport.close()


async def _sleep_until(loop: asyncio.AbstractEventLoop, when: float) -> None:
    wait = when - loop.time()
    if wait > EARLY:
        await asyncio.sleep(wait - EARLY)  # the loop wakes up to ~1 ms late (ms timeouts)


def _join(hlist: list[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in hlist:
        out[k] = f"{out[k]}, {v}" if k in out else v
    return out


def _response_headers(recorded: dict[str, str]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for k, v in recorded.items():
        if k.lower() in DROP_HEADERS:
            continue
        for part in (str(v).split("\n") if k.lower() == "set-cookie" else [str(v)]):
            out.append((k, part))
    return out


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _head(status: int, reason: str, headers: list[tuple[str, str]], keep: bool, *,
          say_keep_alive: bool = True) -> bytes:
    """A response head. `connection: close` when the connection ends after it; `connection: keep-alive`
    otherwise, unless `say_keep_alive` is False: a replayed response whose recording carried no
    `connection` header gets none (HTTP/1.1 keeps the connection by default), so a client that prints
    the headers it got prints what it printed when recorded."""
    lines = [f"HTTP/1.1 {status} {reason}"]
    lines += [f"{k}: {v}" for k, v in headers]
    if not keep:
        lines.append("connection: close")
    elif say_keep_alive:
        lines.append("connection: keep-alive")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")


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


def _plain(status: int, text: str) -> bytes:
    data = (text + "\n").encode("utf-8")
    return _head(status, _reason(status), [("content-type", "text/plain; charset=utf-8"),
                                           ("content-length", str(len(data)))], False) + data


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
