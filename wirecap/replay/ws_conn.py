"""One WebSocket connection of `replay serve`: websockets' sans-I/O `ServerProtocol` on an asyncio transport.

The HTTP front (`http_server`) reads the upgrade request with h11 and hands the TCP connection over
(`WsConnection.open`). From then on websockets' sans-I/O protocol does the handshake, the framing,
permessage-deflate, pings and the closing handshake; this class only moves bytes between it and the
transport, with the documented sans-I/O calls (`receive_data`, `events_received`, `data_to_send`,
`close_expected`, `accept`, `send_response`, `send_text`, `send_binary`, `send_close`): no private
part of websockets is touched.

What a session may rely on: `recv()` returns each client message whole (text frames as their UTF-8
bytes), `send` / `send_many` write with flow control, `close` runs the closing handshake and never
waits more than `close_timeout`; once the connection is closed `recv` and `send` raise websockets'
`ConnectionClosed`. Incoming messages are queued without a bound (the session reads them one by one).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Sequence
from typing import Any

from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory
from websockets.frames import Frame, Opcode
from websockets.http11 import Request
from websockets.protocol import State
from websockets.server import ServerProtocol

_LOG = logging.getLogger("wirecap.replay.ws")
_LOG.addHandler(logging.NullHandler())
_LOG.propagate = False

SERVER_HEADER = "wirecap-replay"
CLOSE_TIMEOUT = 5.0
_DATA = (Opcode.TEXT, Opcode.BINARY)


def _picker(subprotocols: Sequence[str]) -> Any:
    """websockets' `select_subprotocol` hook: the first offered one that was recorded, else none (the
    connection is accepted either way, as the recorded server did)."""
    if not subprotocols:
        return None
    wanted = set(subprotocols)

    def select(protocol: ServerProtocol, offered: Sequence[str]) -> Any:
        return next((p for p in offered if p in wanted), None)

    return select


class WsConnection(asyncio.Protocol):
    """The asyncio side of one server WebSocket connection (see the module docstring)."""

    def __init__(self, transport: asyncio.Transport, subprotocols: Sequence[str] = (),
                 close_timeout: float = CLOSE_TIMEOUT, deflate: bool = True) -> None:
        # `deflate`: accept permessage-deflate when the client offers it (as the recorded server did, or not)
        self.protocol = ServerProtocol(extensions=[ServerPerMessageDeflateFactory()] if deflate else [],
                                       select_subprotocol=_picker(subprotocols), max_size=None, logger=_LOG)
        self.transport = transport
        self.close_timeout = close_timeout
        self.request: Request | None = None
        self._loop = asyncio.get_running_loop()
        self._messages: deque[bytes] = deque()
        self._parts: list[bytes] = []  # the fragments of a message not complete yet
        self._arrived = asyncio.Event()
        self._lost: asyncio.Future[None] = self._loop.create_future()
        self._writable = asyncio.Event()
        self._writable.set()
        self._deadline: asyncio.TimerHandle | None = None

    # --- hand-over and handshake ----------------------------------------------------------------
    def open(self, head: bytes, rest: bytes = b"") -> bool:
        """Take over the transport: `head` is the upgrade request's, `rest` what came after it (fed
        once the handshake is answered, so nothing, not even a pong, goes out before the 101).
        True when the handshake succeeded; else websockets' error answer was sent and the
        connection is closing."""
        self.transport.set_protocol(self)
        self.data_received(head)
        if rest and self.protocol.state is State.OPEN:
            self.data_received(rest)
        return self.protocol.state is State.OPEN

    def _handshake(self, request: Request) -> None:
        self.request = request
        response = self.protocol.accept(request)
        response.headers["Server"] = SERVER_HEADER
        self.protocol.send_response(response)

    # --- asyncio.Protocol -----------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        self.protocol.receive_data(data)
        for event in self.protocol.events_received():
            if isinstance(event, Frame):
                self._frame(event)
            elif isinstance(event, Request):
                self._handshake(event)
        self._send_data()

    def eof_received(self) -> bool:
        self.protocol.receive_eof()
        self._send_data()
        return False  # the transport closes itself: a WebSocket never writes after the peer's EOF

    def connection_lost(self, exc: Exception | None) -> None:
        self.protocol.receive_eof()  # idempotent: the protocol's state is CLOSED from here on
        if self._deadline is not None:
            self._deadline.cancel()
        if not self._lost.done():
            self._lost.set_result(None)
        self._arrived.set()
        self._writable.set()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def _frame(self, frame: Frame) -> None:
        """Data frames make messages; control frames were answered by the protocol itself."""
        if frame.opcode in _DATA:
            self._parts = [bytes(frame.data)]
        elif frame.opcode is Opcode.CONT:
            self._parts.append(bytes(frame.data))
        else:
            if frame.opcode is Opcode.CLOSE:
                self._arrived.set()
            return
        if frame.fin:
            self._messages.append(self._parts[0] if len(self._parts) == 1 else b"".join(self._parts))
            self._parts = []
            self._arrived.set()

    def _send_data(self) -> None:
        writes = self.protocol.data_to_send()
        eof = b"" in writes  # (websockets' SEND_EOF: half-close once the rest is out)
        if eof:
            writes = [w for w in writes if w]
        if writes:
            self.transport.writelines(writes)  # a batch of frames in one system call
        if eof:
            if self.transport.can_write_eof():
                self.transport.write_eof()
            else:
                self.transport.close()
        if self._deadline is None and self.protocol.close_expected():
            # the peer should close the TCP connection now: give it `close_timeout`, then abort
            self._deadline = self._loop.call_later(self.close_timeout, self.transport.abort)

    # --- what a session calls -------------------------------------------------------------------
    async def recv(self) -> bytes:
        """The next client message (raises `ConnectionClosed` once none is left and it closed)."""
        while not self._messages:
            if self.protocol.state is not State.OPEN:
                await self.wait_closed()
                raise self.protocol.close_exc
            self._arrived.clear()
            await self._arrived.wait()
        return self._messages.popleft()

    async def send(self, data: bytes, text: bool) -> None:
        await self.send_many([(data, text)])

    async def send_many(self, messages: list[tuple[bytes, bool]]) -> None:
        """Several messages framed in one go and written with one flow-controlled drain."""
        if self.protocol.state is not State.OPEN:
            await self.wait_closed()
            raise self.protocol.close_exc
        for data, text in messages:
            if text:
                self.protocol.send_text(data)
            else:
                self.protocol.send_binary(data)
        self._send_data()
        if not self._writable.is_set():
            await self._writable.wait()

    async def close(self, code: int | None = 1000, reason: str = "") -> None:
        """The closing handshake with `code` (None: a close frame without a code), then wait for
        the TCP connection to end (at most `close_timeout`). Idempotent."""
        if self.protocol.state is State.OPEN:
            self.protocol.send_close(code, reason)
            self._send_data()
        await self.wait_closed()

    def abort(self) -> None:
        """Drop the TCP connection without a closing handshake (what a recorded 1006 was)."""
        self.transport.abort()

    async def wait_closed(self) -> None:
        """Until the TCP connection is gone (aborted `close_timeout` after it should have been)."""
        if self._deadline is None and not self._lost.done():
            self._deadline = self._loop.call_later(self.close_timeout, self.transport.abort)
        await asyncio.shield(self._lost)

