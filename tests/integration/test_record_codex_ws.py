"""Recording a WebSocket is exact: every message's payload bytes, in order, each with its time, and the
handshake (headers both ways, status, the agreed extensions) in the `open` record, with permessage-deflate
negotiated and without.

The real Codex (lab) over its Responses WebSocket through `wirecap record --reverse`, checked against
fake_openai_ws.py's `--frames` log of what it received and sent (tests/codexws_record.py does the run
inside `unshare -n` and the comparison); skipped without the lab or root. The first test needs neither:
a websockets server and client through the recorder, compressed and not.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
import websockets
from record_util import channel, read_capture, record_home, recorder  # noqa: F401

from wirecap.capture.payload import payload_bytes

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
from conftest import lab_dir  # noqa: E402
from labclients import can_unshare  # noqa: E402

RUNNER = TESTS / "codexws_record.py"
RUN_TIMEOUT = 240  # one recorded Codex run, bounded (the runner bounds the client to 90 s)


def run_codex(how: str, mode: str, out: Path, *, deflate: bool = True) -> dict:
    """tests/codexws_record.py: record Codex through wirecap (`how`: reverse or proxy), compare with the fake."""
    argv = [sys.executable, str(RUNNER), how, mode, str(out), *([] if deflate else ["--no-deflate"])]
    r = subprocess.run(argv, capture_output=True, timeout=RUN_TIMEOUT, env={**_env(), "WIRECAP_LAB": str(lab_dir("codex"))})
    result = out / "result.json"
    assert result.exists(), (r.stdout + r.stderr).decode(errors="replace")[-3000:]
    return json.loads(result.read_text())


def _env() -> dict[str, str]:
    """Ours, without a WIRECAP_HOME (the run makes its CA in its own folder) or a namespace marker."""
    import os

    return {k: v for k, v in os.environ.items() if k not in ("WIRECAP_IN_NETNS", "WIRECAP_HOME")}


_WHY_SKIP = ("lab not installed (set WIRECAP_LAB or run `make lab`)" if lab_dir("codex") is None
             else "needs root and `unshare -n`" if not can_unshare() else None)
needs_lab = pytest.mark.skipif(_WHY_SKIP is not None, reason=_WHY_SKIP or "")


@pytest.mark.usefixtures("record_home")
@pytest.mark.parametrize("compression", ["deflate", None])
def test_ws_messages_and_handshake_recorded_exactly_compressed_or_not(tmp_path, compression):
    """websockets both ends: permessage-deflate agreed (or not) through the proxy; the open record says
    which; payloads are the application's bytes either way (compressible and incompressible ones)."""
    import os

    sent = [json.dumps({"type": "response.create", "n": i, "pad": "ab" * (i * 97)}) for i in range(40)]
    blobs = [os.urandom(3000), b"\x00" * 5000]

    async def echo(ws):
        async for m in ws:
            await ws.send(m)

    async def main():
        server = await websockets.serve(echo, "127.0.0.1", 0, compression=compression)
        port = server.sockets[0].getsockname()[1]
        with recorder(tmp_path, "--reverse", f"http://127.0.0.1:{port}") as rec:
            async with websockets.connect(f"ws://127.0.0.1:{rec.port}/v1/responses", compression="deflate") as c:
                ext = c.response.headers.get("Sec-WebSocket-Extensions")
                back = []
                for m in [*sent, *blobs]:
                    await c.send(m)
                    back.append(await asyncio.wait_for(c.recv(), 10))
            await asyncio.sleep(0.2)
            assert rec.stop() == 0
        server.close()
        return rec, ext, back

    rec, ext, back = asyncio.run(main())
    assert back == [*sent, *blobs]
    assert (ext is not None) == (compression == "deflate")
    _, records, reader = read_capture(rec.cap)
    assert reader.end is not None and reader.end["errors"] == 0
    ws = channel(records, "ws-1")
    op = ws[0]
    assert op["type"] == "open" and op["status"] == 101
    assert op.get("extensions") == ext  # absent when nothing was agreed
    assert op["response_headers"].get("sec-websocket-extensions") == ext
    assert op["headers"]["sec-websocket-extensions"].startswith("permessage-deflate")  # the client's offer
    assert "subprotocol" not in op
    msgs = [r for r in ws if r["type"] == "msg"]
    want = [(d, m.encode() if isinstance(m, str) else m) for m in [*sent, *blobs] for d in ("c2s", "s2c")]
    assert [(m["dir"], payload_bytes(m)) for m in msgs] == want
    assert [bool(m.get("binary")) for m in msgs] == [False] * 80 + [True] * 4
    ts = [m["t"] for m in msgs]
    assert ts == sorted(ts) and op["t"] <= ts[0]


@pytest.mark.realclient
@needs_lab
@pytest.mark.parametrize(("mode", "deflate"), [("text", True), ("text", False), ("tool", True), ("tool", False)])
def test_codex_ws_recorded_exactly_through_reverse_proxy(tmp_path, mode, deflate):
    res = run_codex("reverse", mode, tmp_path / "run", deflate=deflate)
    assert res["ok"], res["why"]
    assert res["record_rc"] == 0 and not res["fallback_message"] and res["http_responses_calls"] == 0
    assert res["connections"] == 1 and res["errors"] == 0
    # prewarm (answered created + completed) + request (+ the tool's output): each a stream of events
    assert res["c2s"] == (3 if mode == "tool" else 2) and res["s2c"] >= 2 + 10 * (res["c2s"] - 1)
    assert res["messages_recorded"] == res["messages_sent"] and res["bytes_recorded"] == res["bytes_sent"]
    if deflate:  # the wire carried less than the messages: permessage-deflate was in use end to end
        assert res["wire_bytes"] < res["bytes_sent"]
    else:
        assert res["wire_bytes"] > res["bytes_sent"]


@pytest.mark.realclient
@needs_lab
@pytest.mark.parametrize("mode", ["close", "failed"])
def test_codex_ws_error_modes_recorded_exactly_before_the_fallback(tmp_path, mode):
    """The socket closed mid-response (1011 from the server) or a response.failed: the frames up to there
    are exact, the close is the server's, and Codex's fallback to HTTP + SSE is in the same capture."""
    res = run_codex("reverse", mode, tmp_path / "run")
    assert res["ok"], res["why"]
    assert res["fallback_message"] and res["http_responses_calls"] >= 1
    if mode == "close":
        assert {"code": 1011, "by": "server", "reason": "fake server: closed mid-response"} in res["closes"]


@pytest.mark.usefixtures("record_home")
def test_the_agreed_subprotocol_is_in_the_open_record(tmp_path):
    async def echo(ws):
        async for m in ws:
            await ws.send(m)

    async def main():
        server = await websockets.serve(echo, "127.0.0.1", 0, subprotocols=["wirecap.v2", "wirecap.v1"])
        port = server.sockets[0].getsockname()[1]
        with recorder(tmp_path, "--reverse", f"http://127.0.0.1:{port}") as rec:
            async with websockets.connect(f"ws://127.0.0.1:{rec.port}/", subprotocols=["wirecap.v1", "other"]) as c:
                agreed = c.subprotocol
                await c.send("x")
                await asyncio.wait_for(c.recv(), 10)
            await asyncio.sleep(0.2)
            assert rec.stop() == 0
        server.close()
        return rec, agreed

    rec, agreed = asyncio.run(main())
    assert agreed == "wirecap.v1"
    _, records, _ = read_capture(rec.cap)
    op = channel(records, "ws-1")[0]
    assert op["subprotocol"] == "wirecap.v1" and op["headers"]["sec-websocket-protocol"] == "wirecap.v1, other"
    assert op["extensions"].startswith("permessage-deflate")  # websockets agrees it by default
