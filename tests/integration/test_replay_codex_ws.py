"""Replay of Codex's Responses API over WebSocket, without the real Codex (the real-client suite runs the
real one): a Codex-shaped session (a prewarm `response.create` with `generate: false`, the request
continuing its response by `previous_response_id`, a function-call output continuing the request's)
recorded live against the lab's fake_openai_ws.py, then

- `replay client` drives a fresh fake with the recorded client side: the ids the live server makes up
  anew (its response id, the call id) go back to it in the replayed messages;
- `replay serve` plays the recorded server side to the same client run again (new timestamps), and
  answers a mismatch with the protocol's non-retryable form: a wrapped `error` message with status
  400, then a close 1008;
- a refused upgrade (426) recorded as an HTTP exchange is answered with the recorded refusal, and the
  client's HTTP fallback with the recorded SSE stream.

And `replay client` plays each real Codex capture of tests/fixtures/codex_ws to a fresh fake.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, run_wirecap
from replay_support import channel_messages, fake_server, record_http
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from wirecap.capture.writer import CaptureWriter, default_origin
from wirecap.replay.http_server import ReplayServer, ThreadedReplayServer

pytestmark = pytest.mark.timeout(90)

TOOLS = [{"type": "function", "name": "exec_command", "description": "Run a command.", "strict": False,
          "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}]
HEADERS = {"openai-beta": "responses_websockets=2026-02-06", "originator": "codex_exec",
           "authorization": "Bearer sk-fake-openai-0123456789abcdef"}


def create(prompt: str, **extra: Any) -> dict[str, Any]:
    """A `response.create` as Codex 0.169.0 sends it (trimmed): its epoch-ms start time differs every run."""
    now_ms = str(int(time.time() * 1000))
    return {"type": "response.create", "model": "gpt-5.5", "stream": True, "store": False,
            "instructions": "You are a coding agent.", "tools": TOOLS, "tool_choice": "auto",
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}],
            "client_metadata": {"x-codex-ws-stream-request-start-ms": now_ms}, **extra}


class Session:
    """One Codex-shaped WebSocket session, written to `writer` when given (as a live capture would be)."""

    def __init__(self, url: str, writer: CaptureWriter | None = None) -> None:
        self.url, self.w = url, writer
        self.received: list[dict[str, Any]] = []
        self.ch = writer.new_channel("ws") if writer else ""

    async def run(self, prompt: str) -> list[dict[str, Any]]:
        async with connect(self.url, additional_headers=HEADERS, max_size=None, ping_interval=None,
                           open_timeout=10) as ws:
            if self.w:
                self.w.open(self.ch, "ws", url=self.url, headers={k.lower(): v for k, v in ws.request.headers.raw_items()},
                            status=101, response_headers={k.lower(): v for k, v in ws.response.headers.raw_items()})
            try:
                await self.turns(ws, prompt)
            except ConnectionClosed:
                pass
        if self.w:
            self.w.close_channel(self.ch, code=1000, reason="", by="client")
        return self.received

    async def turns(self, ws: Any, prompt: str) -> None:
        warm = await self.call(ws, create(prompt, generate=False))  # the prewarm
        # as Codex 0.169.0 does: the request continues the prewarm's (empty) response when it completed
        done = await self.call(ws, create(prompt, **({"previous_response_id": warm["response"]["id"]} if warm else {})))
        if done is None:
            return
        calls = [o for o in done["response"]["output"] if o.get("type") == "function_call"]
        if calls:
            out = {"type": "function_call_output", "call_id": calls[0]["call_id"], "output": "hi\n"}
            await self.call(ws, create(prompt, previous_response_id=done["response"]["id"], input=[out]))

    async def call(self, ws: Any, body: dict[str, Any]) -> dict[str, Any] | None:
        """Send one request; the server's messages up to its terminal one (None: an error message)."""
        data = json.dumps(body)
        await ws.send(data)
        if self.w:
            self.w.msg(self.ch, "c2s", data)
        while True:
            raw = await ws.recv()
            if self.w:
                self.w.msg(self.ch, "s2c", raw)
            m = json.loads(raw)
            self.received.append(m)
            if m.get("type") == "error":
                return None
            if m.get("type") in ("response.completed", "response.failed", "response.incomplete"):
                return m


@pytest.fixture(scope="module")
def codex_cap(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("codexws")
    out = d / "codex_ws_tool.jsonl"
    w = CaptureWriter(out, origin=default_origin("test"))
    with fake_server("fake_openai_ws.py", "--mode", "tool", "--delay", "0.002", tmp=d) as port:
        asyncio.run(Session(f"ws://127.0.0.1:{port}/v1/responses", w).run("run echo hi"))
    w.close()
    return out


@pytest.mark.parametrize("deflate", [True, False])
def test_replay_serve_agrees_permessage_deflate_as_the_recorded_server_did(deflate, tmp_path):
    cap = tmp_path / "cap.jsonl"
    w = CaptureWriter(cap, origin=default_origin("test"))
    with fake_server("fake_openai_ws.py", "--mode", "text", "--delay", "0", *(() if deflate else ("--no-deflate",)),
                     tmp=tmp_path) as port:
        asyncio.run(Session(f"ws://127.0.0.1:{port}/v1/responses", w).run("say hello"))
    w.close()
    threaded, server = serve(cap)

    async def agreed(url: str) -> str | None:
        async with connect(url, additional_headers=HEADERS) as ws:  # (it offers permessage-deflate)
            return ws.response.headers.get("Sec-WebSocket-Extensions")

    with threaded:
        ext = asyncio.run(agreed(f"ws://127.0.0.1:{server.port}/v1/responses"))
    assert (ext is not None and ext.startswith("permessage-deflate")) is deflate


def created_ids(msgs: list[dict[str, Any]]) -> list[str]:
    return [m["json"]["response"]["id"] for m in msgs if m["dir"] == "s2c" and m["json"].get("type") == "response.created"]


def call_ids(msgs: list[dict[str, Any]]) -> list[str]:
    return [m["json"]["item"]["call_id"] for m in msgs if m["dir"] == "s2c"
            and m["json"].get("type") == "response.output_item.done" and m["json"]["item"].get("type") == "function_call"]


def test_the_recorded_session_is_the_codex_shape(codex_cap):
    msgs = channel_messages(codex_cap)
    sent = [m["json"] for m in msgs if m["dir"] == "c2s"]
    assert [s.get("generate") for s in sent] == [False, None, None]
    assert [s.get("previous_response_id") for s in sent] == [None, *created_ids(msgs)[:2]]
    assert sent[2]["input"][0]["call_id"] == call_ids(msgs)[0]
    assert msgs[-1]["json"]["type"] == "response.completed"
    assert "The tool returned: hi" in json.dumps(msgs[-1]["json"])


def test_replay_client_drives_the_fake_with_the_recorded_client_side(codex_cap, tmp_path):
    new, log = tmp_path / "client.jsonl", tmp_path / "fake.log"
    with fake_server("fake_openai_ws.py", "--mode", "tool", "--delay", "0", tmp=tmp_path, log=log) as port:
        r = run_wirecap("replay", "client", str(codex_cap), "--url", f"http://127.0.0.1:{port}", "-o", str(new),
                        "--speed", "0", "--timeout", "10")
    assert r.returncode == 0, r.stderr.decode()
    assert b"1/1 channel(s) completed, 0 divergence(s)" in r.stderr
    live = channel_messages(new)
    sent = [m["json"] for m in live if m["dir"] == "c2s"]
    # the fake made up a new response id and call id; the replayed client answered with the live ones
    assert created_ids(live)[:2] != created_ids(channel_messages(codex_cap))[:2]
    assert [s.get("previous_response_id") for s in sent] == [None, *created_ids(live)[:2]]
    assert sent[2]["input"][0]["call_id"] == call_ids(live)[0] != call_ids(channel_messages(codex_cap))[0]
    # ... and the fake got the three messages, then answered the tool output
    frames = [json.loads(x) for x in log.read_text().splitlines()]
    assert [f["method"] for f in frames] == ["GET", "WS", "WS", "WS"]
    assert "The tool returned: hi" in json.dumps(live[-1]["json"])


def serve(cap: Path) -> tuple[ThreadedReplayServer, ReplayServer]:
    server = ReplayServer.from_capture(str(cap), speed=0)
    return ThreadedReplayServer(server), server


def test_replay_serve_plays_the_recorded_server_side(codex_cap):
    threaded, server = serve(codex_cap)
    with threaded:
        got = asyncio.run(Session(f"ws://127.0.0.1:{server.port}/v1/responses").run("run echo hi"))
    assert server.mismatches == []
    recorded = [m["json"] for m in channel_messages(codex_cap) if m["dir"] == "s2c"]
    assert got == recorded  # every recorded message, as recorded (the live ids were the recorded ones)


def test_replay_serve_answers_a_mismatch_with_a_wrapped_400_error(codex_cap):
    threaded, server = serve(codex_cap)

    async def run() -> tuple[list[dict[str, Any]], int | None]:
        async with connect(f"ws://127.0.0.1:{server.port}/v1/responses", additional_headers=HEADERS) as ws:
            await ws.send(json.dumps(create("run echo bye", generate=False)))
            told = [json.loads(await ws.recv())]
            with pytest.raises(ConnectionClosed):
                told.append(json.loads(await ws.recv()))
            return told, ws.close_code

    with threaded:
        told, code = asyncio.run(run())
    assert len(server.mismatches) == 1
    mm = server.mismatches[0]
    assert told == [{"type": "error", "status": 400, "error": {
        "type": "invalid_request_error", "code": "wirecap_replay_mismatch", "message": mm.message(), "param": None}}]
    assert mm.message().startswith("wirecap replay mismatch: message #1 (response.create)")
    assert code == 1008


def test_a_refused_upgrade_and_the_http_fallback_are_served_as_recorded(tmp_path):
    cap = tmp_path / "refused.jsonl"
    w = CaptureWriter(cap, origin=default_origin("test"))
    upgrade = {**HEADERS, "connection": "Upgrade", "upgrade": "websocket", "sec-websocket-version": "13",
               "sec-websocket-key": "x8Om6aSwaPBZVYDxylXtgw=="}
    body = json.dumps({k: v for k, v in create("say hello").items() if k != "type"}).encode()
    with fake_server("fake_openai_ws.py", "--mode", "refuse", "--delay", "0", tmp=tmp_path) as port:
        record_http(cap, port, "GET", "/v1/responses", upgrade, b"", writer=w)
        record_http(cap, port, "POST", "/v1/responses", {**HEADERS, "content-type": "application/json"}, body, writer=w)
    w.close()
    threaded, server = serve(cap)

    async def upgrade_refused() -> tuple[int, bytes]:
        with pytest.raises(InvalidStatus) as e:
            async with connect(f"ws://127.0.0.1:{server.port}/v1/responses", additional_headers=HEADERS):
                pass
        return e.value.response.status_code, e.value.response.body

    with threaded:
        status, said = asyncio.run(upgrade_refused())
        fallback = tmp_path / "fallback.jsonl"
        record_http(fallback, server.port, "POST", "/v1/responses", {**HEADERS, "content-type": "application/json"},
                    json.dumps({k: v for k, v in create("say hello").items() if k != "type"}).encode())
    assert server.mismatches == []
    assert status == 426 and json.loads(said) == channel_messages(cap, "http-1")[0]["json"]
    served = [m.get("json") for m in channel_messages(fallback) if m["dir"] == "s2c"]
    assert served == [m.get("json") for m in channel_messages(cap, "http-2") if m["dir"] == "s2c"]
    assert served[-1]["type"] == "response.completed"
    # replay client asks a fake that refuses for the upgrade again (its upgrade headers kept), then falls back
    new, log = tmp_path / "client.jsonl", tmp_path / "fake.log"
    with fake_server("fake_openai_ws.py", "--mode", "refuse", "--delay", "0", tmp=tmp_path, log=log) as port:
        r = run_wirecap("replay", "client", str(cap), "--url", f"http://127.0.0.1:{port}", "-o", str(new),
                        "--speed", "0", "--timeout", "10")
    assert r.returncode == 0, r.stderr.decode()
    frames = [json.loads(x) for x in log.read_text().splitlines()]
    assert [(f["method"], f["status"]) for f in frames] == [("GET", 426), ("POST", 200)]


def test_a_connection_with_no_recording_left_gets_the_error_message_too(codex_cap):
    """Codex reconnects on a bare close (5 times, then falls back to HTTP): a connection past the recorded
    ones is answered like a mismatch, the wrapped 400 error to its first message, then close 1008."""
    threaded, server = serve(codex_cap)

    async def again(url: str) -> tuple[dict[str, Any], int | None]:
        async with connect(url, additional_headers=HEADERS) as ws:
            await ws.send(json.dumps(create("run echo hi", generate=False)))
            told = json.loads(await ws.recv())
            with pytest.raises(ConnectionClosed):
                await ws.recv()
            return told, ws.close_code

    with threaded:
        url = f"ws://127.0.0.1:{server.port}/v1/responses"
        asyncio.run(Session(url).run("run echo hi"))  # uses up the one recorded channel
        told, code = asyncio.run(again(url))
    assert told["type"] == "error" and told["status"] == 400
    assert told["error"]["message"] == "wirecap replay mismatch: no recorded WebSocket channel left at /v1/responses"
    assert code == 1008 and len(server.mismatches) == 1


# The real Codex 0.169.0 over WebSocket (tests/fixtures/codex_ws, recorded by the real-client suite) and the
# fake's mode each was recorded against: those recorded against today's fake (which answers a prewarm with an
# empty completed response; the others were recorded before it did: the real-client suite's `drive` check
# plays fresh recordings of every mode).
REAL = FIXTURES / "codex_ws"
REAL_MODES = {"tool_empty_prewarm": ("--mode", "tool"), "refuse": ("--mode", "refuse")}


@pytest.mark.parametrize("case", sorted(REAL_MODES))
def test_replay_client_drives_the_fake_with_real_codex_traffic(case, tmp_path):
    """Every channel of a real Codex run (WebSocket, refused upgrade, HTTP fallback) played to a fresh fake:
    no divergence (the fake's new response and call ids answered, prewarm included)."""
    cap = REAL / f"codex_ws_{case}.jsonl.zst"
    new, log = tmp_path / "client.jsonl", tmp_path / "fake.log"
    with fake_server("fake_openai_ws.py", *REAL_MODES[case], "--delay", "0", tmp=tmp_path, log=log) as port:
        r = run_wirecap("replay", "client", str(cap), "--url", f"http://127.0.0.1:{port}", "-o", str(new),
                        "--speed", "0", "--timeout", "10")
    assert r.returncode == 0, r.stderr.decode()
    assert b" 0 divergence(s), 0 timeout(s)" in r.stderr
    recorded = [m for m in channel_messages(cap) if m["ch"].startswith(("ws-", "http-"))]
    live = channel_messages(new)
    assert [(m["ch"], m["dir"]) for m in live] == [(m["ch"], m["dir"]) for m in recorded]
    if case.startswith("tool"):  # the request and the tool output went back with the live response and call ids
        sent = [m["json"] for m in live if m["dir"] == "c2s"]
        assert [s.get("previous_response_id") for s in sent] == [None, *created_ids(live)[:2]]
        assert sent[2]["input"][0]["call_id"] == call_ids(live)[0]
