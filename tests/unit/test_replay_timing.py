"""`replay serve --speed` keeps per-message timing: each recorded server message goes at its own
recorded offset (scaled by --speed, each gap capped by --max-wait), on a virtual clock (no wall-clock
time is measured: the schedule itself is checked).

The WebSocket side runs `ws_server.play_replies` with a fake connection that notes the virtual time of
each write; the HTTP side checks the response plan of an SSE exchange (Codex's fallback)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from wirecap.replay import ws_server
from wirecap.replay.http_server import ReplayServer
from wirecap.replay.rewrite import Correlator
from wirecap.replay.script import build_scripts
from wirecap.replay.timing import Pacer

# A Codex turn over the Responses WebSocket: one response.create, then the stream events at their times
# (seconds of the capture); two events went at the same instant.
SENT_AT = [1.010, 1.050, 1.050, 1.250, 1.300]
EVENTS = ["response.created", "response.in_progress", "response.output_item.added", "response.output_text.delta",
          "response.completed"]


def ws_records() -> list[dict[str, Any]]:
    recs: list[dict[str, Any]] = [
        {"seq": 1, "t": 0.5, "type": "open", "ch": "ws-1", "kind": "ws", "url": "ws://127.0.0.1:1/v1/responses"},
        {"seq": 2, "t": 1.0, "type": "msg", "ch": "ws-1", "dir": "c2s", "json": {"type": "response.create"}},
    ]
    for i, (t, kind) in enumerate(zip(SENT_AT, EVENTS, strict=True)):
        recs.append({"seq": 3 + i, "t": t, "type": "msg", "ch": "ws-1", "dir": "s2c",
                     "json": {"type": kind, "sequence_number": i}})
    return recs


class Clock:
    """A virtual event-loop clock: `sleep` advances it (waking exactly when asked, plus the early margin
    `play_replies` takes off), nothing waits for real."""

    def __init__(self) -> None:
        self.now = 1000.0

    def time(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        self.now += delay + ws_server.EARLY


class Conn:
    """What `play_replies` writes: (virtual time, the messages of one write)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.writes: list[tuple[float, list[int]]] = []

    async def send_many(self, messages: list[tuple[bytes, bool]]) -> None:
        self.writes.append((self.clock.now, [orjson.loads(data)["sequence_number"] for data, _text in messages]))


def played(monkeypatch: pytest.MonkeyPatch, pacer: Pacer) -> list[tuple[float, list[int]]]:
    """Each write of the turn's replies: (seconds after the client message, sequence numbers sent)."""
    clock = Clock()
    monkeypatch.setattr(ws_server.asyncio, "get_running_loop", lambda: clock)
    monkeypatch.setattr(ws_server.asyncio, "sleep", clock.sleep)
    step = build_scripts(ws_records())[0].client_steps[0]
    conn = Conn(clock)
    anchor = clock.now
    coro = ws_server.play_replies(conn, step.replies, Correlator(), pacer, anchor)  # type: ignore[arg-type]
    with pytest.raises(StopIteration):
        coro.send(None)  # (nothing really waits: it runs to its end at once)
    return [(round(t - anchor, 6), seqs) for t, seqs in conn.writes]


def test_the_script_keeps_each_message_offset():
    step = build_scripts(ws_records())[0].client_steps[0]
    assert [r.offset for r in step.replies] == pytest.approx([t - 1.0 for t in SENT_AT])


def test_real_time_sends_each_message_at_its_recorded_offset(monkeypatch):
    # one write per instant: the two events recorded together go together, the others alone, each on time
    assert played(monkeypatch, Pacer(1)) == [(0.01, [0]), (0.05, [1, 2]), (0.25, [3]), (0.3, [4])]


def test_speed_scales_every_gap(monkeypatch):
    assert played(monkeypatch, Pacer(2)) == [(0.005, [0]), (0.025, [1, 2]), (0.125, [3]), (0.15, [4])]
    assert played(monkeypatch, Pacer(0.5)) == [(0.02, [0]), (0.1, [1, 2]), (0.5, [3]), (0.6, [4])]


def test_speed_zero_sends_everything_in_one_write(monkeypatch):
    assert played(monkeypatch, Pacer(0)) == [(0.0, [0, 1, 2, 3, 4])]


def test_max_wait_caps_one_gap_and_shifts_the_rest_by_what_it_took_out(monkeypatch):
    # the 0.2 s gap before the delta is capped at 0.1 s; the 0.05 s after it is kept
    assert played(monkeypatch, Pacer(1, max_wait=0.1)) == [(0.01, [0]), (0.05, [1, 2]), (0.15, [3]), (0.2, [4])]


def test_an_sse_fallback_response_keeps_each_event_time():
    """Codex's HTTP fallback: the response head and every SSE event at its own (scaled) time."""
    recs = [
        {"seq": 1, "t": 2.0, "type": "open", "ch": "http-1", "kind": "http", "method": "POST",
         "url": "http://127.0.0.1:1/v1/responses", "headers": {"content-type": "application/json"}},
        {"seq": 2, "t": 2.1, "type": "msg", "ch": "http-1", "dir": "c2s", "json": {"model": "m"}},
        {"seq": 3, "t": 2.2, "type": "response", "ch": "http-1", "status": 200, "sse": True,
         "headers": {"content-type": "text/event-stream"}},
    ]
    for i, t in enumerate((2.3, 2.3, 2.7)):
        recs.append({"seq": 4 + i, "t": t, "type": "msg", "ch": "http-1", "dir": "s2c", "event": "e",
                     "json": {"type": "e", "sequence_number": i}})
    script = build_scripts(recs)[0]
    for speed, due in ((1, [0.1, 0.2, 0.2, 0.6]), (4, [0.025, 0.05, 0.05, 0.15]), (0, [0, 0, 0, 0])):
        plan = ReplayServer([script], speed=speed).plan(script, "POST", True, Correlator())
        assert plan.streamed and len(plan.chunks) == 3
        assert plan.due == pytest.approx(due)
