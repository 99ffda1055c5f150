"""`replay client`: drive a live server with the recorded client side, and record what it says now.

Causality is kept per channel: a client message goes once the server messages recorded before it
have arrived (or after `timeout`), after its recorded think time (scaled by the pacer). Correlation
ids the live server makes up (requestId of a tool call, tool_use ids, ...) are learnt by comparing
each live server message with the recorded one at the same position and rewritten into the client
messages that follow; redaction placeholders are filled from the environment. Channels start in
recorded order; a channel that opened after another closed waits for that one to finish.

It goes only where it was told (the filled-in secrets go with it): never through a proxy of the
environment (`http_proxy`, `https_proxy`, `all_proxy`; only an explicit `proxy=`), and a redirect
(3xx) is reported, never followed: an HTTP 3xx is the response (a divergence unless recorded), a
WebSocket handshake answered 3xx is an error.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from wirecap.capture.payload import encode_payload, payload_bytes
from wirecap.capture.redact import Redactor
from wirecap.capture.writer import CaptureWriter
from wirecap.replay.http_client import http_exchange
from wirecap.replay.match import Matcher, Mismatch, comparable, match_profile
from wirecap.replay.rewrite import Correlator
from wirecap.replay.script import ChannelScript
from wirecap.replay.secrets import SecretFiller
from wirecap.replay.timing import Pacer

WS_SKIP_HEADERS = frozenset({
    "host", "upgrade", "connection", "sec-websocket-key", "sec-websocket-version",
    "sec-websocket-extensions", "sec-websocket-protocol", "content-length", "transfer-encoding",
})


@dataclass
class ClientResult:
    channels: int = 0
    completed: int = 0
    divergences: list[Mismatch] = field(default_factory=list)
    timeouts: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if self.errors:
            return 2
        if self.divergences or self.timeouts or self.completed < self.channels:
            return 1
        return 0


def target_url(base: str, script: ChannelScript) -> str:
    """Where a recorded channel goes on the live server named by `--url`.

    Scheme and host come from `base`. A WebSocket channel keeps its recorded path and query unless
    `base` names a path of its own (`ws://host/ws`); an HTTP channel's recorded path is appended to
    `base`'s path (`http://host/api` + `/v1/messages`).
    """
    b = urlsplit(base)
    rec = urlsplit(script.open.get("url") or "/")
    scheme = b.scheme.lower()
    if script.kind == "ws":
        scheme = {"http": "ws", "https": "wss"}.get(scheme, scheme)
        if b.path not in ("", "/") and scheme in ("ws", "wss") and b.scheme.lower() in ("ws", "wss"):
            return urlunsplit((scheme, b.netloc, b.path, b.query, ""))
        return urlunsplit((scheme, b.netloc, rec.path or "/", rec.query, ""))
    scheme = {"ws": "http", "wss": "https"}.get(scheme, scheme)
    prefix = b.path.rstrip("/") if b.scheme.lower() in ("http", "https") else ""
    return urlunsplit((scheme, b.netloc, prefix + (rec.path or "/"), rec.query, ""))


class _Connect(connect):
    """websockets' `connect` that never follows a redirect: the 3xx is raised as `InvalidStatus`."""

    def process_redirect(self, exc: Exception) -> Exception | str:
        return exc


def redirect_note(status: int, location: str | None) -> str:
    return (f"the server answered {status} (redirect{' to ' + location if location else ''}); not followed: "
            "replay client goes only to --url")


class ReplayClient:
    def __init__(self, scripts: list[ChannelScript], base_url: str, *, writer: CaptureWriter | None = None,
                 speed: float = 1.0, max_wait: float | None = None, timeout: float = 30.0,
                 secrets: SecretFiller | None = None, ignore: list[str] | tuple[str, ...] = (),
                 log: Callable[[str], None] | None = None, proxy: str | None = None) -> None:
        self.scripts = scripts
        self.base = base_url
        self.proxy = proxy  # only this one: never one from the environment
        self.writer = writer
        self.pacer = Pacer(speed, max_wait)
        self.timeout = timeout
        self.secrets = secrets or SecretFiller({})
        # what it prints never shows the secrets it filled in (a server may echo them back)
        self.redactor = Redactor()
        for name, value in self.secrets.secrets.items():
            self.redactor.learn(value, name.partition(":")[0])
        self.ignore = list(ignore)
        self._log = log
        self.result = ClientResult(channels=len(scripts))

    def log(self, text: str) -> None:
        if self._log is not None:
            self._log(self.redactor.text(text))

    def _matcher(self, script: ChannelScript) -> Matcher:
        return Matcher(self.ignore, match_profile(script))

    async def run(self) -> ClientResult:
        if self.secrets.secrets:
            for s in self.scripts:
                self.secrets.prime(orjson.dumps(s.open.get("headers") or {}).decode())
                for rec in s.request_body:
                    self.secrets.prime(orjson.dumps(rec).decode())
        loop = asyncio.get_running_loop()
        start = loop.time()
        t0 = min((float(s.open.get("t") or 0.0) for s in self.scripts), default=0.0)
        done: dict[str, asyncio.Event] = {s.ch: asyncio.Event() for s in self.scripts}
        closed_at = {s.ch: float(s.close["t"]) for s in self.scripts if s.close and "t" in s.close}

        async def one(script: ChannelScript) -> None:
            opened = float(script.open.get("t") or 0.0)
            before = [ch for ch, t in closed_at.items() if t <= opened and ch != script.ch]
            try:
                for ch in before:
                    await done[ch].wait()
                wait = start + self.pacer.pause(opened - t0) - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if script.kind == "ws":
                    await self._ws(script)
                else:
                    await self._http(script)
            except TimeoutError:
                self.result.timeouts.append(f"{script.ch}: timed out after {self.timeout:g}s")
            except InvalidStatus as e:
                status = e.response.status_code
                why = (redirect_note(status, e.response.headers.get("Location")) if 300 <= status < 400
                       else f"the server refused the WebSocket handshake with HTTP {status}")
                self.result.errors.append(f"{script.ch}: {target_url(self.base, script)}: {why}")
            except (OSError, ConnectionClosed, InvalidHandshake, InvalidURI) as e:
                self.result.errors.append(f"{script.ch}: {target_url(self.base, script)}: {e}")
            finally:
                done[script.ch].set()

        await asyncio.gather(*(one(s) for s in self.scripts))
        for w in self.secrets.warnings():
            self.log("warning: " + w)
        res = self.result
        res.divergences = [mm.redacted(self.redactor) for mm in res.divergences]
        res.timeouts = [self.redactor.text(t) for t in res.timeouts]
        res.errors = [self.redactor.text(e) for e in res.errors]
        return res

    # --- shared -------------------------------------------------------------------------------
    def _outgoing(self, rec: dict[str, Any], corr: Correlator) -> bytes:
        """A recorded client message as it goes now: ids rewritten, secrets filled."""
        if "json" in rec:
            value, changed = corr.rewrite(rec["json"])
            data = orjson.dumps(value) if changed else payload_bytes(rec)
            return self.secrets.json_bytes(data)
        data = payload_bytes(rec)
        if "text" in rec and "«redacted:" in rec["text"]:
            return self.secrets.text(rec["text"]).encode("utf-8", "surrogatepass")
        return data

    def _compare(self, script: ChannelScript, matcher: Matcher, index: int, recorded: dict[str, Any] | None,
                 live_fields: dict[str, Any]) -> None:
        live = comparable(live_fields)
        if recorded is None:
            self.result.divergences.append(Mismatch(script.ch, index, live, None, None, what="server message"))
            return
        rv = comparable(recorded)
        if not matcher.same(live, rv):
            self.result.divergences.append(Mismatch(script.ch, index, live, recorded.get("seq"), rv,
                                                    matcher.diffs(live, rv), what="server message"))

    # --- WebSocket ----------------------------------------------------------------------------
    async def _ws(self, script: ChannelScript) -> None:
        await _WsChannel(self, script).run()

    async def _wait_for(self, cond: asyncio.Condition, pred: Callable[[], bool], ch: str, what: str) -> None:
        try:
            async with asyncio.timeout(self.timeout):
                async with cond:
                    await cond.wait_for(pred)
        except TimeoutError:
            self.result.timeouts.append(f"{ch}: waited {self.timeout:g}s for {what}; went on")

    # --- HTTP ---------------------------------------------------------------------------------
    async def _http(self, script: ChannelScript) -> None:
        url = target_url(self.base, script)
        corr = self._http_corr
        headers = [(k, self.secrets.text(str(v))) for k, v in (script.open.get("headers") or {}).items()]
        body_recs = script.request_body
        body = b"".join(self._outgoing(r, corr) for r in body_recs)
        ch = self.writer.new_channel("http") if self.writer is not None else script.ch
        matcher = self._matcher(script)
        recorded = script.server_messages
        live: list[dict[str, Any]] = []

        def on_message(f: dict[str, Any]) -> None:
            rec = recorded[len(live)] if len(live) < len(recorded) else None
            live.append(f)
            if rec is not None:
                corr.learn(comparable(rec), comparable(f))
            self._compare(script, matcher, len(live), rec, f)

        self.log(f"{ch}: {script.method} {url} (replaying {script.ch})")
        res = await http_exchange(self.writer, ch, script.method, url, headers, body,
                                  timeout=self.timeout, on_message=on_message, proxy=self.proxy)
        if 300 <= res.status < 400:
            self.log(f"{ch}: {redirect_note(res.status, res.headers.get('location'))}")
        want = int((script.response or {}).get("status") or (script.close or {}).get("status") or 0)
        if want and res.status != want:
            self.result.divergences.append(Mismatch(script.ch, 0, res.status, (script.response or {}).get("seq"),
                                                    want, [("status", want, res.status)], what="response"))
        if len(live) < len(recorded):
            self.result.divergences.append(Mismatch(script.ch, len(live) + 1, None, recorded[len(live)].get("seq"),
                                                    comparable(recorded[len(live)]), what="server message"))
        self.result.completed += 1

    @property
    def _http_corr(self) -> Correlator:
        # One id map for all HTTP exchanges: a tool_use id learnt from one response goes into the next request.
        if not hasattr(self, "_corr"):
            self._corr = Correlator()
        return self._corr


class _WsChannel:
    """One recorded WebSocket channel replayed against the live server: connect with the recorded
    handshake, a receiver that compares (and records) each live server message with the recorded
    one at its position, the client messages sent in causal order, then the close as recorded."""

    def __init__(self, client: ReplayClient, script: ChannelScript) -> None:
        self.client, self.script = client, script
        self.writer = client.writer
        self.ch = self.writer.new_channel("ws") if self.writer is not None else script.ch
        self.matcher = client._matcher(script)
        self.corr = Correlator()
        self.recorded = script.server_messages
        self.live_count = 0
        self.arrived = asyncio.Condition()
        self.closing = False  # the client started the close
        self.closed_by: str | None = None
        self.loop = asyncio.get_running_loop()

    async def run(self) -> None:
        url = target_url(self.client.base, self.script)
        ws = await self._connect(url)
        self.client.log(f"{self.ch}: connected to {url} (replaying {self.script.ch})")
        self._record_open(ws, url)
        receiver = asyncio.create_task(self._receive(ws))
        try:
            await self._play(ws, receiver)
            await self._finish(ws, receiver)
        finally:
            if not receiver.done():
                receiver.cancel()
            await ws.close()
            if self.writer is not None:
                by = self.closed_by or ("client" if self.closing else None)
                self.writer.close_channel(self.ch, code=ws.close_code, reason=ws.close_reason or "", by=by)

    async def _connect(self, url: str) -> Any:
        c = self.client
        rec_headers = self.script.open.get("headers") or {}
        headers = [(k, c.secrets.text(str(v))) for k, v in rec_headers.items() if k.lower() not in WS_SKIP_HEADERS]
        sub = self.script.open.get("subprotocol")
        deflate = "permessage-deflate" in str(rec_headers.get("sec-websocket-extensions", "")) or not rec_headers
        return await _Connect(url, additional_headers=headers, subprotocols=[sub] if sub else None,
                              compression="deflate" if deflate else None, max_size=None, ping_interval=None,
                              proxy=c.proxy, open_timeout=c.timeout, close_timeout=5, user_agent_header=None)

    def _record_open(self, ws: Any, url: str) -> None:
        if self.writer is None:
            return
        fields: dict[str, Any] = {"url": url, "headers": {k.lower(): v for k, v in ws.request.headers.raw_items()},
                                  "status": ws.response.status_code,
                                  "response_headers": {k.lower(): v for k, v in ws.response.headers.raw_items()}}
        if ws.subprotocol:
            fields["subprotocol"] = ws.subprotocol
        self.writer.open(self.ch, "ws", **fields, **_peers(ws))

    async def _receive(self, ws: Any) -> None:
        try:
            async for msg in ws:
                self._received(msg)
                async with self.arrived:
                    self.arrived.notify_all()
        except ConnectionClosed:
            pass
        self.closed_by = "server" if not self.closing else "client"
        async with self.arrived:
            self.arrived.notify_all()

    def _received(self, msg: str | bytes) -> None:
        data = msg.encode("utf-8", "surrogatepass") if isinstance(msg, str) else msg
        if self.writer is not None:
            self.writer.msg(self.ch, "s2c", data, **({"binary": True} if isinstance(msg, bytes) else {}))
        live = encode_payload(data)
        rec = self.recorded[self.live_count] if self.live_count < len(self.recorded) else None
        self.live_count += 1
        if rec is not None:
            self.corr.learn(comparable(rec), comparable(live))
        self.client._compare(self.script, self.matcher, self.live_count, rec, live)

    async def _wait_live(self, n: int, receiver: asyncio.Task[None]) -> None:
        """Until `n` live server messages arrived (or the server closed, or the timeout)."""
        await self.client._wait_for(self.arrived, lambda: self.live_count >= n or receiver.done(),
                                    self.script.ch, f"server message {n}")

    async def _play(self, ws: Any, receiver: asyncio.Task[None]) -> None:
        """Each client message once the server messages recorded before it arrived, after its think time."""
        seen = 0  # recorded server messages before the current client message
        last_t = float(self.script.open.get("t") or 0.0)
        last_live = self.loop.time()
        for step in self.script.steps:
            client_rec = step.client
            if client_rec is not None:
                await self._wait_live(seen, receiver)
                t = float(client_rec.get("t") or 0.0)
                wait = last_live + self.client.pacer.pause(t - last_t) - self.loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if receiver.done():
                    self.client.result.timeouts.append(f"{self.script.ch}: the server closed before client message "
                                                       f"seq {client_rec.get('seq')}")
                    return
                await self._send(ws, client_rec)
                last_t, last_live = t, self.loop.time()
            seen += len(step.replies)
            if step.replies:
                last_t = max(last_t, float(step.replies[-1].record.get("t") or last_t))

    async def _send(self, ws: Any, rec: dict[str, Any]) -> None:
        data = self.client._outgoing(rec, self.corr)
        binary = bool(rec.get("binary"))
        await ws.send(data, text=not binary)
        if self.writer is not None:
            self.writer.msg(self.ch, "c2s", data, **({"binary": True} if binary else {}))

    async def _finish(self, ws: Any, receiver: asyncio.Task[None]) -> None:
        """Every recorded server message waited for, the close as recorded, then the count."""
        total = len(self.recorded)
        await self._wait_live(total, receiver)
        close = self.script.close or {}
        if close.get("by") == "server" and not receiver.done():
            async with asyncio.timeout(self.client.timeout):
                await asyncio.shield(receiver)
        else:
            self.closing = True
            await asyncio.sleep(self.client.pacer.pause(self.script.close_offset))
            code = close.get("code") or 1000
            await ws.close(code if code in (1000, 1001) or 3000 <= code < 5000 else 1000, close.get("reason") or "")
        await asyncio.wait_for(receiver, self.client.timeout)
        if self.live_count < total:
            self.client.result.timeouts.append(f"{self.script.ch}: {self.live_count} of {total} recorded server "
                                               "messages arrived")
        else:
            self.client.result.completed += 1


def _peers(ws: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        h, p = ws.local_address[:2]
        out["client"] = f"{h}:{p}"
        h, p = ws.remote_address[:2]
        out["server"] = f"{h}:{p}"
    except Exception:  # noqa: BLE001 - peers are optional
        pass
    return out


async def run_client(scripts: list[ChannelScript], base_url: str, **kwargs: Any) -> ClientResult:
    t = time.monotonic()
    client = ReplayClient(scripts, base_url, **kwargs)
    res = await client.run()
    client.log(f"replay client finished in {time.monotonic() - t:.3f}s")
    return res
