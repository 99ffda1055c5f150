"""The wirecap mitmproxy addon: writes WebSocket and HTTP/SSE traffic to a capture as it passes.

It observes and never interferes: every hook is guarded (an exception becomes an `error` record
and a count, the flow goes on untouched), SSE responses are streamed so the client gets each event
when the server sends it, and WebSocket messages are dropped from mitmproxy's memory once written.

Usable two ways: `start_proxy()` passes a `CaptureWriter` in; `mitmdump -s $(wirecap addon-path)
--set wirecap_out=cap.jsonl` lets the addon open its own writer from options.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from wirecap.capture.bodies import ContentDecoder, cap_body, content_encodings, decode_body, headers_dict
from wirecap.capture.records import Direction
from wirecap.capture.redact import Redactor
from wirecap.capture.sse import SSEParser, sse_record_fields
from wirecap.capture.writer import CaptureWriter, default_origin
from wirecap.record.lines import LineSplitter

log = logging.getLogger("wirecap.record")
# The addon's own writer (mitmdump -s) writes WebSocket messages in batches at most this late (seconds):
# one write(2) and one secret screen per batch instead of per message (see CaptureWriter).
BATCH_DELAY = 0.05


@dataclass
class _Chan:
    """What the addon remembers about one live flow."""

    ch: str
    kind: str  # "http", "ws", or "pending-ws" (an upgrade request not answered yet)
    live: _LiveObserver | None = None  # a body recorded piece by piece as it passes
    stream: _StreamWrap | None = None
    collector: _BodyCollector | None = None


def _guarded(where: str) -> Callable[..., Any]:
    """Wrap a hook: any exception is counted, written as an `error` record, and swallowed."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def hook(self: WirecapAddon, flow: Any) -> None:
            if self.writer is None:
                return
            try:
                fn(self, flow)
            except Exception as e:  # noqa: BLE001 - the traffic must go on whatever happens
                self._fail(where, e, flow)

        return hook

    return deco


def is_sse(response: Any) -> bool:
    ctype = response.headers.get("content-type", "")
    return ctype.split(";", 1)[0].strip().lower() == "text/event-stream"


# Streamed line-delimited JSON (Ollama, some gateways): passed through as it comes, like SSE, so the
# client sees each line when it is sent (mitmproxy alone would hold the body until its end), and
# recorded one `msg` per line, each at its own time.
_JSON_LINES_TYPES = frozenset({"application/x-ndjson", "application/ndjson", "application/jsonl",
                               "application/x-jsonlines", "application/json-seq", "application/stream+json"})


def is_json_lines(response: Any) -> bool:
    ctype = response.headers.get("content-type", "")
    return ctype.split(";", 1)[0].strip().lower() in _JSON_LINES_TYPES


LOOPBACK = "127.0.0.1"


def _default_to_loopback(opts: Any) -> bool:
    """mitmproxy listens on every interface by default (`listen_host` ""): an open recording proxy on
    the network. Unless the user chose a host (`--listen-host`, `--set listen_host=`, even "", or a
    host in a mode spec `--mode regular@HOST:PORT`), make it 127.0.0.1. True when we did."""
    from mitmproxy import optmanager
    from mitmproxy.proxy import mode_specs

    try:
        if opts._options["listen_host"].value is not optmanager.unset:
            return False
        if any(mode_specs.ProxyMode.parse(m).custom_listen_host is not None for m in opts.mode):
            return False
    except (AttributeError, KeyError):  # another mitmproxy's internals: say so rather than stay silent
        log.warning("wirecap: cannot tell whether a listen host was given; pass --listen-host 127.0.0.1 "
                    "to keep the proxy off the network")
        return False
    except ValueError:  # a bad mode spec: mitmproxy says so itself
        return False
    opts.update(listen_host=LOOPBACK)
    log.info("wirecap: the proxy listens on %s only (give --listen-host to choose another address)", LOOPBACK)
    return True


async def _rebind_loopback() -> None:
    from mitmproxy import ctx
    from mitmproxy.proxy import mode_specs

    ps = ctx.master.addons.get("proxyserver")
    if ps is None:
        return
    if all(str(a[0]) in (LOOPBACK, "localhost") for a in ps.listen_addrs()):
        return
    modes = [mode_specs.ProxyMode.parse(m) for m in ctx.options.mode]
    await ps.servers.update([])
    await ps.servers.update(modes)


def _is_ws_upgrade(request: Any) -> bool:
    return "websocket" in request.headers.get("upgrade", "").lower()


def _peers(flow: Any) -> dict[str, str]:
    out = {}
    try:
        host, port = flow.client_conn.peername[:2]
        out["client"] = f"{host}:{port}"
    except Exception:  # noqa: BLE001 - peers are optional
        pass
    try:
        host, port = flow.server_conn.address[:2]
        out["server"] = f"{host}:{port}"
    except Exception:  # noqa: BLE001
        pass
    return out


class WirecapAddon:
    """mitmproxy addon writing one capture. See the module docstring."""

    def __init__(self, writer: CaptureWriter | None = None, *, body_cap: int = 0) -> None:
        self.writer = writer
        self._own_writer = writer is None
        self.body_cap = body_cap
        self.errors = 0  # exceptions caught in hooks
        self._chans: dict[str, _Chan] = {}
        self._host_checked = False
        self._loopback_default = False  # mitmdump -s: we set listen_host (the user gave none)

    # --- options (mitmdump -s) -----------------------------------------------------------------------
    def load(self, loader: Any) -> None:
        loader.add_option("wirecap_out", str, "", "wirecap: write the capture to this file (.jsonl, .jsonl.gz, .jsonl.zst).")
        loader.add_option("wirecap_redact", bool, True, "wirecap: redact secrets before writing (default on).")
        loader.add_option("wirecap_redact_key", Sequence[str], [], "wirecap: also redact JSON values under these keys.")
        loader.add_option("wirecap_redact_pattern", Sequence[str], [], "wirecap: also redact substrings matching these regexes.")
        loader.add_option("wirecap_body_cap", int, 0, "wirecap: cut recorded bodies and messages at this many bytes (0: keep all).")
        loader.add_option("wirecap_force", bool, False, "wirecap: replace an existing capture file.")

    def configure(self, updated: set[str]) -> None:
        if not self._own_writer:
            return
        from mitmproxy import ctx, exceptions

        from wirecap.errors import WirecapError

        opts = ctx.options
        if not self._host_checked:
            self._host_checked = True
            self._loopback_default = _default_to_loopback(opts)
        if "wirecap_body_cap" in updated:
            self.body_cap = max(0, int(opts.wirecap_body_cap))
        if "wirecap_out" in updated and opts.wirecap_out:
            if self.writer is not None:
                self._close_all()
                self.writer.close(addon_errors=self.errors)
            redactor = Redactor(
                enabled=opts.wirecap_redact,
                extra_keys=tuple(opts.wirecap_redact_key),
                extra_patterns=tuple(opts.wirecap_redact_pattern),
            )
            try:
                self.writer = CaptureWriter(
                    opts.wirecap_out,
                    origin=default_origin("mitmproxy-addon"),
                    redactor=redactor,
                    force=opts.wirecap_force,
                    on_error=lambda m: log.error("wirecap: %s", m),
                    batch_delay=BATCH_DELAY,
                )
            except WirecapError as e:
                raise exceptions.OptionsError(str(e)) from None
            log.info("wirecap: recording to %s", opts.wirecap_out)

    async def running(self) -> None:
        """mitmdump binds before it loads a script: when we moved the default listen host to loopback,
        restart any listener that came up on another address (it has served nobody yet)."""
        if self._loopback_default:
            await _rebind_loopback()

    def done(self) -> None:
        if self.writer is None:
            return
        try:
            self._close_all()
        except Exception as e:  # noqa: BLE001
            self._fail("done", e, None)
        if self._own_writer:
            self.writer.close(addon_errors=self.errors)

    def _close_all(self) -> None:
        """Channels still open when the proxy stops: close them, saying they were cut short."""
        assert self.writer is not None
        for st in list(self._chans.values()):
            if st.live is not None:
                st.live.finish()
            if st.kind == "ws":
                self.writer.close_channel(st.ch, code=None, reason="", by=None, incomplete=True)
            elif st.kind == "http":
                self.writer.close_channel(st.ch, status=None, incomplete=True)
        self._chans.clear()

    # --- failure path ----------------------------------------------------------------------------------
    def _fail(self, where: str, exc: BaseException, flow: Any) -> None:
        self.errors += 1
        st = self._chans.get(flow.id) if flow is not None else None
        try:
            assert self.writer is not None
            self.writer.error(f"{type(exc).__name__}: {exc}", where=f"addon.{where}", ch=st.ch if st and st.ch else None)
        except Exception:  # noqa: BLE001 - even reporting must not break traffic
            pass
        if self.errors <= 10:
            log.warning("wirecap: error in %s: %s: %s", where, type(exc).__name__, exc)

    def _t(self, wall: float | None) -> float | None:
        """A wall-clock timestamp from mitmproxy on the capture's clock (None: now)."""
        if not wall:
            return None
        assert self.writer is not None
        return max(0.0, self.writer.now() - max(0.0, time.time() - wall))

    # --- HTTP ------------------------------------------------------------------------------------------
    def _open_http(self, flow: Any) -> _Chan:
        assert self.writer is not None
        ch = self.writer.new_channel("http")
        req = flow.request
        self.writer.open(
            ch, "http", t=self._t(req.timestamp_start), method=req.method, url=req.url,
            http_version=req.http_version, headers=headers_dict(req.headers), **_peers(flow),
        )
        st = _Chan(ch, "http")
        self._chans[flow.id] = st
        return st

    @_guarded("requestheaders")
    def requestheaders(self, flow: Any) -> None:
        if _is_ws_upgrade(flow.request):
            self._chans[flow.id] = _Chan("", "pending-ws")
        else:
            self._open_http(flow)

    @_guarded("request")
    def request(self, flow: Any) -> None:
        st = self._chans.get(flow.id)
        if st is None and not _is_ws_upgrade(flow.request):
            st = self._open_http(flow)  # loaded mid-flow, or requestheaders failed
        if st is not None and st.kind == "http":
            self._write_body(st, "c2s", flow.request.raw_content, flow.request.headers, encoding_field=True)

    def _write_body(self, st: _Chan, dir: Direction, raw: bytes | None, headers: Any, *, encoding_field: bool) -> None:
        if not raw:
            return
        assert self.writer is not None
        fields: dict[str, Any] = {}
        body = raw
        encs = content_encodings(headers.get("content-encoding"))
        if encs:
            try:
                body = decode_body(raw, encs)
                if encoding_field:
                    fields["encoding"] = ", ".join(encs)
            except Exception as e:  # noqa: BLE001 - keep the bytes as sent and say so
                body = raw
                fields["flags"] = ["undecoded"]
                self.writer.error(f"cannot decode {', '.join(encs)} body: {type(e).__name__}: {e}",
                                  where="addon.decode", ch=st.ch)
        kept, original = cap_body(body, self.body_cap)
        if original is not None:
            fields["truncated"] = original
        self.writer.msg(st.ch, dir, kept, **fields)

    @_guarded("responseheaders")
    def responseheaders(self, flow: Any) -> None:
        st = self._chans.get(flow.id)
        resp = flow.response
        if st is None or st.kind == "pending-ws":
            if resp.status_code == 101 and _is_ws_upgrade(flow.request):
                return  # websocket_start opens the channel
            st = self._open_http(flow)
        if st.kind != "http":
            return
        assert self.writer is not None
        sse = is_sse(resp)
        lines = not sse and is_json_lines(resp)
        encs = content_encodings(resp.headers.get("content-encoding"))
        fields: dict[str, Any] = {"reason": resp.reason, "http_version": resp.http_version}
        if sse:
            fields["sse"] = True
        elif lines:
            fields["lines"] = True
        if encs:
            fields["encoding"] = ", ".join(encs)
        self.writer.response(st.ch, resp.status_code, headers_dict(resp.headers), t=self._t(resp.timestamp_start), **fields)
        if sse or lines:
            try:
                st.live = _SSEObserver(self, st.ch, encs) if sse else _LinesObserver(self, st.ch, encs)
            except ValueError as e:  # an encoding we cannot decode: stream it through, say so
                self.writer.error(str(e), where="addon.sse" if sse else "addon.lines", ch=st.ch)
                st.stream = _StreamWrap(self, st.ch)
            else:
                st.stream = st.live
            resp.stream = st.stream.wrap(resp.stream)
        elif resp.stream:  # streamed by mitmproxy's stream_large_bodies or another addon
            st.stream = st.collector = _BodyCollector(self, st.ch, self.body_cap)
            resp.stream = st.collector.wrap(resp.stream)

    @_guarded("response")
    def response(self, flow: Any) -> None:
        st = self._chans.get(flow.id)
        if st is None or st.kind != "http":
            return
        resp = flow.response
        assert self.writer is not None
        if st.live is not None:
            st.live.finish()
            nbytes = st.live.wire_bytes
        elif st.stream is not None and st.collector is None:
            nbytes = st.stream.wire_bytes
        elif st.collector is not None:
            col = st.collector
            if col.cut:  # a prefix of the wire bytes (still encoded, if it was)
                extra: dict[str, Any] = {"flags": ["undecoded"]} if resp.headers.get("content-encoding") else {}
                self.writer.msg(st.ch, "s2c", bytes(col.buf), truncated=col.wire_bytes, **extra)
            else:
                self._write_body(st, "s2c", bytes(col.buf), resp.headers, encoding_field=False)
            nbytes = col.wire_bytes
        else:
            raw = resp.raw_content or b""
            self._write_body(st, "s2c", raw, resp.headers, encoding_field=False)
            nbytes = len(raw)
        req = flow.request
        start = req.timestamp_start
        fields: dict[str, Any] = {"status": resp.status_code, "bytes": nbytes}
        if start and resp.timestamp_start:
            fields["ttfb"] = round(max(0.0, resp.timestamp_start - start), 6)
        if start:
            fields["duration"] = round(max(0.0, (resp.timestamp_end or time.time()) - start), 6)
        self._chans.pop(flow.id, None)
        self.writer.close_channel(st.ch, **fields)

    @_guarded("error")
    def error(self, flow: Any) -> None:
        st = self._chans.pop(flow.id, None)
        if st is None:
            return
        assert self.writer is not None
        message = flow.error.msg if flow.error else "unknown error"
        if st.kind == "pending-ws":
            self._chans[flow.id] = st = self._open_http(flow)
            self._chans.pop(flow.id, None)
        if st.live is not None:
            st.live.finish()
        if st.kind == "ws":
            self.writer.close_channel(st.ch, code=None, reason="", by=None, error=message)
            return
        fields: dict[str, Any] = {"status": flow.response.status_code if flow.response else None, "error": message}
        if flow.request.timestamp_start:
            fields["duration"] = round(max(0.0, time.time() - flow.request.timestamp_start), 6)
        self.writer.close_channel(st.ch, **fields)

    # --- TLS ----------------------------------------------------------------------------------------------
    def tls_failed_client(self, data: Any) -> None:
        """The client's TLS handshake with the proxy failed (most often: it does not trust wirecap's CA).
        Nothing of that connection reaches a flow hook, so the capture says it here, as an `error`
        (counted: traffic the client meant to send is missing)."""
        if self.writer is None:
            return
        try:
            conn = data.conn
            server = data.context.server
            host = conn.sni or (f"{server.address[0]}:{server.address[1]}" if server.address else "?")
            hint = "; to be recorded, the client must trust wirecap's CA (`wirecap ca`)" if "trust" in str(conn.error) else ""
            self.writer.error(f"TLS handshake with the client failed for {host}: {conn.error}{hint}",
                              where="addon.tls_failed_client")
        except Exception as e:  # noqa: BLE001 - the traffic must go on whatever happens
            self._fail("tls_failed_client", e, None)

    # --- WebSocket -------------------------------------------------------------------------------------
    def _open_ws(self, flow: Any) -> _Chan:
        assert self.writer is not None
        ch = self.writer.new_channel("ws")
        req, resp = flow.request, flow.response
        url = req.url
        if url.startswith("http"):
            url = "ws" + url[4:]
        fields: dict[str, Any] = {"url": url, "headers": headers_dict(req.headers)}
        if resp is not None:
            fields["status"] = resp.status_code
            fields["response_headers"] = headers_dict(resp.headers)
            sub = resp.headers.get("sec-websocket-protocol")
            if sub:
                fields["subprotocol"] = sub
            ext = resp.headers.get("sec-websocket-extensions")
            if ext:  # negotiated (permessage-deflate): messages are recorded decompressed, as the peers see them
                fields["extensions"] = ext
        self.writer.open(ch, "ws", t=self._t(resp.timestamp_end if resp is not None else None), **fields, **_peers(flow))
        st = _Chan(ch, "ws")
        self._chans[flow.id] = st
        return st

    @_guarded("websocket_start")
    def websocket_start(self, flow: Any) -> None:
        self._open_ws(flow)

    @_guarded("websocket_message")
    def websocket_message(self, flow: Any) -> None:
        st = self._chans.get(flow.id)
        if st is None or st.kind != "ws":
            st = self._open_ws(flow)
        messages = flow.websocket.messages
        m = messages[-1]
        content = m.content
        writer = self.writer
        assert writer is not None
        dir: Direction = "c2s" if m.from_client else "s2c"
        if m.is_text and not (m.injected or m.dropped) and (self.body_cap <= 0 or len(content) <= self.body_cap):
            # The common case (a whole text frame, no extra fields): the writer's byte-built path.
            writer.msg(st.ch, dir, content)
        else:
            fields: dict[str, Any] = {}
            if not m.is_text:
                fields["binary"] = True
            if m.injected or m.dropped:
                fields["flags"] = [f for f in ("injected", "dropped") if getattr(m, f)]
            kept, original = cap_body(content, self.body_cap)
            if original is not None:
                fields["truncated"] = original
            writer.msg(st.ch, dir, kept, **fields)
        # Written: let mitmproxy forget it (keep the newest for addons after us in this hook).
        del messages[:-1]

    @_guarded("websocket_end")
    def websocket_end(self, flow: Any) -> None:
        st = self._chans.pop(flow.id, None)
        if st is None or st.kind != "ws":
            return
        ws = flow.websocket
        by = {True: "client", False: "server"}.get(ws.closed_by_client)
        assert self.writer is not None
        self.writer.close_channel(st.ch, code=ws.close_code, reason=ws.close_reason or "", by=by)


class _StreamWrap:
    """Base for observers installed as `flow.response.stream`: bytes pass through unchanged.

    A callable some other addon installed first keeps working: we observe what it returns.
    """

    def __init__(self, addon: WirecapAddon, ch: str) -> None:
        self.addon = addon
        self.ch = ch
        self.wire_bytes = 0
        self.broken = False
        self._inner: Callable[[bytes], Any] | None = None

    def wrap(self, previous: Any) -> _StreamWrap:
        self._inner = previous if callable(previous) else None
        return self

    def __call__(self, data: bytes) -> Any:
        out: Any = self._inner(data) if self._inner is not None else data
        if isinstance(out, bytes):
            chunks: Iterable[bytes] = (out,)
        else:
            out = chunks = list(out)
        if not self.broken:
            try:
                for chunk in chunks:
                    self.wire_bytes += len(chunk)
                    if chunk:
                        self.observe(chunk)
                if not data:
                    self.finish()
            except Exception as e:  # noqa: BLE001 - never let the recorder reach the flow
                self.broken = True
                self.report(e)
        return out

    def observe(self, data: bytes) -> None:
        pass  # plain pass-through: only counts bytes

    def finish(self) -> None:
        pass

    def report(self, e: BaseException) -> None:
        self.addon.errors += 1
        try:
            assert self.addon.writer is not None
            self.addon.writer.error(f"{type(e).__name__}: {e}", where="addon.stream", ch=self.ch)
        except Exception:  # noqa: BLE001
            pass


class _BodyCollector(_StreamWrap):
    """Keeps a streamed non-SSE body for the record, up to the cap."""

    def __init__(self, addon: WirecapAddon, ch: str, cap: int) -> None:
        super().__init__(addon, ch)
        self.cap = cap
        self.buf = bytearray()
        self.cut = False

    def observe(self, data: bytes) -> None:
        if self.cap and len(self.buf) + len(data) > self.cap:
            self.buf += data[: max(0, self.cap - len(self.buf))]
            self.cut = True
        else:
            self.buf += data


class _LiveObserver(_StreamWrap):
    """A streamed body cut into pieces as it passes (after content decoding), one `msg` each, live.

    `parser` is sans-I/O: `feed(bytes)` and `close()` return the pieces completed so far.
    """

    def __init__(self, addon: WirecapAddon, ch: str, encodings: list[str], parser: Any) -> None:
        super().__init__(addon, ch)
        self.parser = parser
        self.decoder: ContentDecoder | None = ContentDecoder(encodings) if encodings else None
        self.finished = False

    def observe(self, data: bytes) -> None:
        if self.decoder is not None:
            data = self.decoder.feed(data)
        self._write(self.parser.feed(data))

    def finish(self) -> None:
        """End of body (or of the flow): flush the decoder and the parser. Idempotent."""
        if self.finished:
            return
        self.finished = True
        if self.broken:
            return
        try:
            tail = self.decoder.flush() if self.decoder is not None else b""
            pieces = self.parser.feed(tail) if tail else []
            pieces += self.parser.close()
            self._write(pieces)
        except Exception as e:  # noqa: BLE001
            self.broken = True
            self.report(e)

    def _write(self, pieces: list[Any]) -> None:
        raise NotImplementedError


class _SSEObserver(_LiveObserver):
    """An event-stream body: one `msg` per event (SSEParser: whatever the TCP reads)."""

    def __init__(self, addon: WirecapAddon, ch: str, encodings: list[str]) -> None:
        super().__init__(addon, ch, encodings, SSEParser())

    def _write(self, pieces: list[Any]) -> None:
        writer = self.addon.writer
        assert writer is not None
        for ev in pieces:
            writer.write("msg", None, len(ev.raw), ch=self.ch, dir="s2c", **sse_record_fields(ev))


class _LinesObserver(_LiveObserver):
    """A JSON-lines body: one `msg` per line (payload without its terminator, `eol` as for pipes);
    the lines' bytes plus their eols are the decoded body exactly."""

    def __init__(self, addon: WirecapAddon, ch: str, encodings: list[str]) -> None:
        super().__init__(addon, ch, encodings, LineSplitter())

    def _write(self, pieces: list[Any]) -> None:
        if pieces:
            writer = self.addon.writer
            assert writer is not None
            writer.msg_lines(self.ch, "s2c", pieces)
