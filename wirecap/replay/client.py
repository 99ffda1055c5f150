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
        closed_at = {s.ch: float(s.close.get("t")) for s in self.scripts if s.close and "t" in s.close}

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
        url = target_url(self.base, script)
        rec_headers = script.open.get("headers") or {}
        headers = [(k, self.secrets.text(str(v))) for k, v in rec_headers.items() if k.lower() not in WS_SKIP_HEADERS]
        sub = script.open.get("subprotocol")
        compression = "deflate" if "permessage-deflate" in str(rec_headers.get("sec-websocket-extensions", "")) \
            or not rec_headers else None
        writer = self.writer
        ch = writer.new_channel("ws") if writer is not None else script.ch
        matcher = self._matcher(script)
        corr = Correlator()
        recorded_s2c = script.server_messages
        live_count = 0
        arrived = asyncio.Condition()
        loop = asyncio.get_running_loop()
        ws = await _Connect(url, additional_headers=headers, subprotocols=[sub] if sub else None,
                            compression=compression, max_size=None, ping_interval=None, proxy=self.proxy,
                            open_timeout=self.timeout, close_timeout=5, user_agent_header=None)
        self.log(f"{ch}: connected to {url} (replaying {script.ch})")
        if writer is not None:
            fields: dict[str, Any] = {"url": url, "headers": {k.lower(): v for k, v in ws.request.headers.raw_items()},
                                      "status": ws.response.status_code,
                                      "response_headers": {k.lower(): v for k, v in ws.response.headers.raw_items()}}
            if ws.subprotocol:
                fields["subprotocol"] = ws.subprotocol
            writer.open(ch, "ws", **fields, **_peers(ws))
        close_info: dict[str, Any] = {}

        async def receive() -> None:
            nonlocal live_count
            try:
                async for msg in ws:
                    data = msg.encode("utf-8", "surrogatepass") if isinstance(msg, str) else msg
                    extra = {"binary": True} if isinstance(msg, bytes) else {}
                    if writer is not None:
                        writer.msg(ch, "s2c", data, **extra)
                    live = encode_payload(data)
                    rec = recorded_s2c[live_count] if live_count < len(recorded_s2c) else None
                    live_count += 1
                    if rec is not None:
                        corr.learn(comparable(rec), comparable(live))
                    self._compare(script, matcher, live_count, rec, live)
                    async with arrived:
                        arrived.notify_all()
            except ConnectionClosed:
                pass
            close_info["by"] = "server" if not closing else "client"
            async with arrived:
                arrived.notify_all()

        closing = False
        receiver = asyncio.create_task(receive())
        seen = 0  # recorded server messages before the current client message
        last_t = float(script.open.get("t") or 0.0)
        last_live = loop.time()
        try:
            for step in script.steps:
                if step.client is not None:
                    need = seen
                    await self._wait_for(arrived, lambda n=need: live_count >= n or receiver.done(),
                                         script.ch, f"server message {need}")
                    t = float(step.client.get("t") or 0.0)
                    wait = last_live + self.pacer.pause(t - last_t) - loop.time()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    if receiver.done():
                        self.result.timeouts.append(f"{script.ch}: the server closed before client message "
                                                    f"seq {step.client.get('seq')}")
                        break
                    data = self._outgoing(step.client, corr)
                    binary = bool(step.client.get("binary"))
                    await ws.send(data, text=not binary)
                    if writer is not None:
                        writer.msg(ch, "c2s", data, **({"binary": True} if binary else {}))
                    last_t, last_live = t, loop.time()
                seen += len(step.replies)
                if step.replies:
                    last_t = max(last_t, float(step.replies[-1].record.get("t") or last_t))
            total = len(recorded_s2c)
            await self._wait_for(arrived, lambda: live_count >= total or receiver.done(), script.ch,
                                 f"server message {total}")
            close = script.close or {}
            if close.get("by") == "server" and not receiver.done():
                async with asyncio.timeout(self.timeout):
                    await asyncio.shield(receiver)
            else:
                closing = True
                await asyncio.sleep(self.pacer.pause(script.close_offset))
                code = close.get("code") or 1000
                await ws.close(code if code in (1000, 1001) or 3000 <= code < 5000 else 1000, close.get("reason") or "")
            await asyncio.wait_for(receiver, self.timeout)
            if live_count < total:
                self.result.timeouts.append(f"{script.ch}: {live_count} of {total} recorded server messages arrived")
            else:
                self.result.completed += 1
        finally:
            if not receiver.done():
                receiver.cancel()
            await ws.close()
            if writer is not None:
                by = close_info.get("by") or ("client" if closing else None)
                writer.close_channel(ch, code=ws.close_code, reason=ws.close_reason or "", by=by)

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


def _peers(ws: Any) -> dict[str, str]:
    out: dict[str, str] = {}
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
