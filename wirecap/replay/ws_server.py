"""WebSocket side of `replay serve`: plays one recorded ws channel to one live client connection.

The HTTP front (`http_server`) owns the listening socket; a WebSocket upgrade is handed to a
`ws_conn.WsConnection` (websockets' sans-I/O protocol does the handshake and framing) and to
`run_session` here, with a `WsContext`: the few things of the server a session uses. The session
then waits for each client message, matches it against the recorded one in order, and sends the
recorded server messages that followed it with their timing, correlation ids rewritten.
A client message that matches nothing (or comes after the script's end) gets the dialect's own error
messages when it has them (`Dialect.mismatch_messages`: Codebuff's `prompt-error` / `action-error`,
the Responses API's wrapped `error` with status 400, which their clients show and end the turn on),
then the connection is closed with 1008 (policy violation: the server works, the client's message is
what is wrong; 1011 reads as a server failure) and a reason that starts `wirecap replay mismatch:`. A connection for which no recorded channel is left is told the same way
(the dialect's messages answer its first message, then the close).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from wirecap import dialects
from wirecap.capture.payload import encode_payload, payload_bytes
from wirecap.errors import WirecapError
from wirecap.replay.match import MESSAGE_PREFIX, ChannelMatcher, Mismatch, comparable
from wirecap.replay.pool import ScriptPool
from wirecap.replay.rewrite import Correlator, rewrite_record
from wirecap.replay.script import ChannelScript, Reply
from wirecap.replay.secrets import StandIns
from wirecap.replay.timing import Pacer
from wirecap.replay.ws_conn import WsConnection

MISMATCH_CLOSE = CloseCode.POLICY_VIOLATION  # 1008
BATCH = 256
EARLY = 0.0005
FIRST_MESSAGE_WAIT = 2.0  # seconds a connection no recording is left for waits for the message to answer


@dataclass(frozen=True, slots=True)
class WsContext:
    """What a WebSocket session needs from the server that accepted it, and nothing more: the scripts,
    how to pace and match, the stand-ins for redacted values, and where mismatches and log lines go.

    `report` records a mismatch and returns it redacted (what the client is then told is built from
    it); `learn_secrets` takes the handshake's headers so their secrets are redacted from then on."""

    pool: ScriptPool
    pacer: Pacer
    strict: bool
    stand_ins: StandIns
    report: Callable[[Mismatch], Mismatch]
    log: Callable[[str], None]
    learn_secrets: Callable[[dict[str, str]], None]


async def run_session(ctx: WsContext, conn: WsConnection) -> None:
    """A handed-over connection's whole life; it ends closed (1000, or 1011 when the session failed)."""
    try:
        await serve_ws(ctx, conn)
    except ConnectionClosed:
        pass
    except Exception as e:  # noqa: BLE001 - one broken session must not stop the server
        ctx.log(f"ws session failed: {e!r}")
        await conn.close(CloseCode.INTERNAL_ERROR)
        return
    await conn.close()


async def serve_ws(ctx: WsContext, conn: WsConnection) -> None:
    """The next recorded channel at the connection's path played to it, or a close 1008 if none is left."""
    assert conn.request is not None  # (set by the handshake, before any session starts)
    path = urlsplit(conn.request.path).path or "/"
    ctx.learn_secrets({k.lower(): v for k, v in conn.request.headers.raw_items()})
    script = ctx.pool.take_ws(path)
    if script is None:
        ctx.report(Mismatch("ws", 0, path, None, None, what=f"WebSocket connection to {path}"))
        await none_left(conn, path, ctx.pool.ws_dialect(path))
        return
    ctx.log(f"{script.ch}: live WebSocket connection at {path}")
    await play_ws(ctx, conn, script)


async def none_left(conn: WsConnection, path: str, dialect: str | None) -> None:
    """A connection no recorded channel is left for: when the path's dialect has error messages, they
    answer the client's first message (waited for at most FIRST_MESSAGE_WAIT: a client that sends
    nothing gets the close alone), then close 1008. A bare close is what a client reconnects on (Codex
    5 times, then its HTTP fallback; the Codebuff SDK 0.3 forever); its error message ends the turn."""
    text = f"{MESSAGE_PREFIX}no recorded WebSocket channel left at {path}"
    if mismatch_messages(dialect, None, text):
        try:
            live = _live_value(await asyncio.wait_for(conn.recv(), FIRST_MESSAGE_WAIT))
            for frame in mismatch_messages(dialect, live, text):
                await conn.send(frame.encode("utf-8"), text=True)
        except (TimeoutError, ConnectionClosed):
            pass
    await conn.close(MISMATCH_CLOSE, close_reason(text))


Fill = Callable[[bytes, Any, str], bytes]  # `StandIns.fill`: (data, seq, ch) -> data as served


def _served(rec: dict[str, Any], fill: Fill | None) -> tuple[bytes, bool]:
    """A recorded server message as it goes out: (bytes, sent as text)."""
    data = payload_bytes(rec)
    if rec.get("binary"):
        return data, False
    return (data if fill is None else fill(data, rec.get("seq"), rec.get("ch") or "")), True


async def play_replies(conn: WsConnection, replies: list[Reply], corr: Correlator, pacer: Pacer,
                       anchor: float, start: float = 0.0, fill: Fill | None = None) -> None:
    """Send recorded server messages at their (scaled) offsets after `anchor` (a loop time)."""
    loop = asyncio.get_running_loop()
    due = pacer.schedule([r.offset for r in replies], start)
    i, n = 0, len(replies)
    while i < n:
        wait = anchor + due[i] - loop.time()
        if wait > EARLY:
            await asyncio.sleep(wait - EARLY)  # the loop wakes up to ~1 ms late (ms timeouts)
        # Every message already due goes out in one write (what --speed 0 is made of).
        now = loop.time()
        j = i + 1
        while j < n and j - i < BATCH and anchor + due[j] <= now:
            j += 1
        await conn.send_many([_served(rewrite_record(corr, r.record), fill) for r in replies[i:j]])
        i = j


async def play_ws(ctx: WsContext, conn: WsConnection, script: ChannelScript) -> None:
    """The whole session: prologue, then client message -> matched step -> replies, then the close."""
    loop = asyncio.get_running_loop()
    cm = ChannelMatcher(script, ctx.pool.matcher(script), strict=ctx.strict)
    corr = Correlator()
    fill = ctx.stand_ins.fill
    pro = script.prologue
    if pro is not None:
        await play_replies(conn, pro.replies, corr, ctx.pacer, loop.time(), fill=fill)
    steps = cm.steps
    while not cm.done:
        try:
            msg = ctx.stand_ins.restore(await conn.recv())
        except ConnectionClosed:
            return
        anchor = loop.time()
        live = _live_value(msg)
        try:
            index, mm = cm.feed(live)
        except Exception as e:  # noqa: BLE001 - a matching bug ends the session the way a mismatch does
            index, mm = None, Mismatch.failed(script.ch, cm.live_count, live, e)
        if mm is not None:
            mm = ctx.report(mm)
            if index is None:
                await fail(conn, mm, ctx.pool.dialect_of(script.ch))
                return
        step = steps[index]  # type: ignore[index]
        corr.learn(comparable(step.client), live)
        await play_replies(conn, step.replies, corr, ctx.pacer, anchor, fill=fill)
    close = script.close or {}
    if close.get("by") == "server":
        await asyncio.sleep(ctx.pacer.pause(script.close_offset))
        await close_as_recorded(conn, close)
        return
    await _past_the_end(ctx, conn, cm, script.ch)


async def _past_the_end(ctx: WsContext, conn: WsConnection, cm: ChannelMatcher, ch: str) -> None:
    """The client closes (or it is unknown who did): wait for it; a message past the script is a mismatch."""
    try:
        while True:
            msg = ctx.stand_ins.restore(await conn.recv())
            _index, mm = cm.feed(_live_value(msg))
            if mm is not None:
                mm = ctx.report(mm)
                if ctx.strict:
                    await fail(conn, mm, ctx.pool.dialect_of(ch))
                    return
    except ConnectionClosed:
        return


async def close_as_recorded(conn: WsConnection, close: dict[str, Any]) -> None:
    """The recorded server close: its code and reason; a recorded 1006 (the connection dropped, no close
    frame) drops it, a 1005 sends a close frame without a code."""
    code = close.get("code") or 1000
    if code == CloseCode.ABNORMAL_CLOSURE:
        conn.abort()
    elif code == CloseCode.NO_STATUS_RCVD:
        await conn.close(None)
    else:
        await conn.close(code, close.get("reason") or "")


def _live_value(msg: bytes | str) -> Any:
    """The live message in the form recorded messages are compared in."""
    return comparable(encode_payload(msg))


async def fail(conn: WsConnection, mm: Mismatch, dialect: str | None) -> None:
    """End a session on a mismatch: the dialect's own error message first (so the client shows it
    and ends its turn), then close 1008 with the short reason."""
    try:
        for frame in mismatch_messages(dialect, mm.live, mm.message()):
            await conn.send(frame.encode("utf-8"), text=True)
    except ConnectionClosed:
        return
    await conn.close(MISMATCH_CLOSE, mismatch_reason(mm))


def mismatch_messages(dialect: str | None, live: Any, message: str) -> list[str]:
    """The dialect's own messages that tell its client `message` as an error it ends its turn on
    (`Dialect.mismatch_messages`: Codebuff's `action-error` / `prompt-error`, the Responses API's wrapped
    `error` with a 400); none for a channel of no known dialect (the close reason carries the message)."""
    if dialect is None:
        return []
    try:
        hook = dialects.get_dialect(dialect).mismatch_messages
    except WirecapError:  # (a hint naming a dialect this version does not know)
        return []
    try:
        return list(hook(live, message))
    except Exception:  # noqa: BLE001 - a hook's bug leaves the close reason to say it (never a dropped session)
        return []


def mismatch_reason(mm: Mismatch) -> str:
    """The close reason of a mismatch: `wirecap replay mismatch: message #2 vs seq 5: ~ data.prompt: ...`."""
    return close_reason(mm.brief())


def close_reason(text: str) -> str:
    """`text` cut to fit a close frame's reason (123 bytes of UTF-8), never inside a character."""
    b = text.encode("utf-8")
    if len(b) <= 123:
        return text
    return b[:120].decode("utf-8", "ignore") + "..."
