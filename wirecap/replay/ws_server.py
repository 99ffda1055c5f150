"""WebSocket side of `replay serve`: plays one recorded ws channel to one live client connection.

The HTTP front (`http_server`) owns the listening socket; a WebSocket upgrade is handed to a
`websockets` connection here (its sans-I/O protocol does the handshake and framing), and the
session then waits for each client message, matches it against the recorded one in order, and
sends the recorded server messages that followed it with their timing, correlation ids rewritten.
A client message that matches nothing (or comes after the script's end) gets the dialect's own error
message when it has one (Codebuff: `prompt-error` / `action-error`, which its clients show and end
the turn on), then the connection is closed with 1008 (policy violation: the server works, the
client's message is what is wrong; 1011 reads as a server failure) and a reason that starts
`wirecap replay mismatch:`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson
from websockets.asyncio.server import Server, ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory
from websockets.frames import CloseCode
from websockets.protocol import State
from websockets.server import ServerProtocol

from wirecap.capture.payload import encode_payload, payload_bytes
from wirecap.replay.match import CODEBUFF_WS, ChannelMatcher, Mismatch, comparable
from wirecap.replay.rewrite import Correlator, rewrite_record
from wirecap.replay.script import ChannelScript, Reply

if TYPE_CHECKING:
    from wirecap.replay.http_server import ReplayServer

_LOG = logging.getLogger("wirecap.replay.ws")
_LOG.addHandler(logging.NullHandler())
_LOG.propagate = False

MISMATCH_CLOSE = CloseCode.POLICY_VIOLATION  # 1008


def make_ws_server(replay: ReplayServer) -> Server:
    """A websockets `Server` with no socket of its own: connections are handed to it by the front."""

    async def create_server() -> asyncio.Server:  # never called: the front owns the socket
        raise RuntimeError("not used")

    async def conn_handler(conn: ServerConnection) -> None:
        try:
            async with asyncio.timeout(10):
                await conn.handshake(None, None, "wirecap-replay")
            if conn.protocol.state is not State.OPEN:
                conn.transport.abort()
                return
            server.all_connections.add(conn)
            try:
                async with conn:
                    await replay.ws_session(conn)
            except Exception as e:  # noqa: BLE001 - one broken session must not stop the server
                replay.log(f"ws session failed: {e!r}")
            finally:
                server.all_connections.discard(conn)
        except Exception:  # noqa: BLE001
            conn.transport.abort()
        finally:
            server.handler_tasks.discard(asyncio.current_task())  # type: ignore[arg-type]

    server = Server(create_server, conn_handler, _LOG)
    return server


def hand_off(server: Server, transport: asyncio.Transport, data: bytes, subprotocols: list[str]) -> None:
    """Give a TCP connection whose first bytes (`data`, the upgrade request) were read to websockets."""
    select = None
    if subprotocols:
        def select(protocol: ServerProtocol, offered: Any) -> Any:
            for p in offered:
                if p in subprotocols:
                    return p
            return None
    protocol = ServerProtocol(
        extensions=[ServerPerMessageDeflateFactory()],
        select_subprotocol=select,
        max_size=None,
        logger=_LOG,
    )
    conn = ServerConnection(protocol, server, ping_interval=None, ping_timeout=None, close_timeout=5,
                            max_queue=None)
    transport.set_protocol(conn)
    conn.connection_made(transport)
    conn.data_received(data)


Fill = Callable[[bytes, Any, str], bytes]  # `StandIns.fill`: (data, seq, ch) -> data as served


def _served(rec: dict[str, Any], fill: Fill | None) -> bytes:
    data = payload_bytes(rec)
    return data if fill is None or rec.get("binary") else fill(data, rec.get("seq"), rec.get("ch") or "")


async def send_reply(conn: ServerConnection, rec: dict[str, Any], fill: Fill | None = None) -> None:
    await conn.send(_served(rec, fill), text=not rec.get("binary"))


async def play_replies(conn: ServerConnection, replies: list[Reply], corr: Correlator, pacer: Any,
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
        if j - i == 1:
            await send_reply(conn, rewrite_record(corr, replies[i].record), fill)
        else:
            await send_batch(conn, [rewrite_record(corr, r.record) for r in replies[i:j]], fill)
        i = j


BATCH = 256
EARLY = 0.0005


async def send_batch(conn: ServerConnection, recs: list[dict[str, Any]], fill: Fill | None = None) -> None:
    """Several messages framed in one go and written with one flow-controlled drain.

    `send_context` is the documented way to drive the sans-I/O protocol from a connection."""
    async with conn.send_context():
        for rec in recs:
            if rec.get("binary"):
                conn.protocol.send_binary(payload_bytes(rec))
            else:
                conn.protocol.send_text(_served(rec, fill))


async def play_ws(replay: ReplayServer, conn: ServerConnection, script: ChannelScript) -> None:
    """The whole session: prologue, then client message -> matched step -> replies, then the close."""
    loop = asyncio.get_running_loop()
    pool = replay.pool
    cm = ChannelMatcher(script, pool.matcher(script), strict=replay.strict)
    corr = Correlator()
    pro = script.prologue
    if pro is not None:
        await play_replies(conn, pro.replies, corr, replay.pacer, loop.time(), fill=replay.stand_ins.fill)
    steps = cm.steps
    while not cm.done:
        try:
            msg = replay.stand_ins.restore(await conn.recv(decode=False))
        except ConnectionClosed:
            return
        anchor = loop.time()
        live = _live_value(msg)
        try:
            index, mm = cm.feed(live)
        except Exception as e:  # noqa: BLE001 - a matching bug ends the session the way a mismatch does
            index, mm = None, Mismatch.failed(script.ch, cm.live_count, live, e)
        if mm is not None:
            mm = replay.mismatch(mm)
            if index is None:
                await fail(conn, mm, replay.pool.dialect_of(script.ch))
                return
        step = steps[index]  # type: ignore[index]
        recorded = comparable(step.client)
        corr.learn(recorded, live)
        await play_replies(conn, step.replies, corr, replay.pacer, anchor, fill=replay.stand_ins.fill)
    close = script.close or {}
    if close.get("by") == "server":
        await asyncio.sleep(replay.pacer.pause(script.close_offset))
        code = close.get("code") or 1000
        await conn.close(code, close.get("reason") or "")
        return
    # The client closed (or it is unknown): wait for it; a message past the script is a mismatch.
    try:
        while True:
            msg = replay.stand_ins.restore(await conn.recv(decode=False))
            index, mm = cm.feed(_live_value(msg))
            if mm is not None:
                mm = replay.mismatch(mm)
                if replay.strict:
                    await fail(conn, mm, replay.pool.dialect_of(script.ch))
                    return
    except ConnectionClosed:
        return


def _live_value(msg: bytes | str) -> Any:
    """The live message in the form recorded messages are compared in."""
    return comparable(encode_payload(msg))


async def fail(conn: ServerConnection, mm: Mismatch, dialect: str | None) -> None:
    """End a session on a mismatch: the dialect's own error message first (so the client shows it
    and ends its turn), then close 1008 with the short reason."""
    try:
        for frame in mismatch_frames(dialect, mm.live, mm.message()):
            await conn.send(frame, text=True)
    except ConnectionClosed:
        return
    await conn.close(MISMATCH_CLOSE, mismatch_reason(mm))


def mismatch_frames(dialect: str | None, live: Any, message: str) -> list[str]:
    """Messages of the dialect that tell its client `message` as an error it ends the turn on.

    Codebuff WS: a `prompt` (SDK 0.3.x) gets `prompt-error` for its promptId (the run resolves with
    that error); anything else (CLI 1.0.x `user-input`, `init`) gets `action-error`, which the CLI
    prints as `Error: MESSAGE`. Other dialects: none (the close reason carries the message)."""
    if dialect != CODEBUFF_WS:
        return []
    data = live.get("data") if isinstance(live, dict) else None
    if isinstance(data, dict) and data.get("type") == "prompt" and isinstance(data.get("promptId"), str):
        action = {"type": "prompt-error", "userInputId": data["promptId"], "message": message}
    else:
        action = {"type": "action-error", "message": message}
    return [orjson.dumps({"type": "action", "data": action}).decode("utf-8")]


def mismatch_reason(mm: Mismatch) -> str:
    """The close reason of a mismatch: `wirecap replay mismatch: message #2 vs seq 5: ~ data.prompt: ...`."""
    return close_reason(mm.brief())


def close_reason(text: str) -> str:
    """`text` cut to fit a close frame's reason (123 bytes of UTF-8), never inside a character."""
    b = text.encode("utf-8")
    if len(b) <= 123:
        return text
    return b[:120].decode("utf-8", "ignore") + "..."
