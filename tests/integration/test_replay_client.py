"""`replay client` against live servers on 127.0.0.1: the lab's fake Codebuff WS backend (a tool-call
round trip whose requestId the live server makes up anew), the fake Anthropic server (SSE), divergence,
secrets from the environment, and a client/serve round trip."""

from __future__ import annotations

import asyncio
import json

import pytest
from conftest import run_wirecap
from replay_support import (
    channel_messages,
    claude_capture,
    fake_server,
    record_sdk_tool_session,
    same_except_volatile,
)

from wirecap.capture.reader import CaptureReader
from wirecap.replay.http_server import ReplayServer, ThreadedReplayServer

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def tool_cap(tmp_path_factory):
    d = tmp_path_factory.mktemp("client")
    with fake_server("fake_codebuff_ws.py", "--proto", "sdk", "--mode", "tool", tmp=d) as port:
        return asyncio.run(record_sdk_tool_session(d / "sdk_tool.jsonl", port))


def data_types(path):
    return [(m["dir"], (m.get("json") or {}).get("type"), ((m.get("json") or {}).get("data") or {}).get("type"))
            for m in channel_messages(path)]


def test_tool_call_round_trip_against_the_live_fake(tool_cap, tmp_path):
    recorded = channel_messages(tool_cap)
    req_rec = next(m for m in recorded if (m["json"].get("data") or {}).get("type") == "tool-call-request")
    new = tmp_path / "new.jsonl"
    log = tmp_path / "frames.jsonl"
    with fake_server("fake_codebuff_ws.py", "--proto", "sdk", "--mode", "tool", tmp=tmp_path, log=log) as port:
        r = run_wirecap("replay", "client", str(tool_cap), "--url", f"ws://127.0.0.1:{port}", "-o", str(new),
                        "--speed", "0", "--timeout", "10")
    assert r.returncode == 0, r.stderr.decode()
    live = channel_messages(new)
    req_live = next(m for m in live if (m["json"].get("data") or {}).get("type") == "tool-call-request")
    resp_live = next(m for m in live if (m["json"].get("data") or {}).get("type") == "tool-call-response")
    # the live server made up a new requestId; the replayed client answered with it, and the server went on
    assert req_live["json"]["data"]["requestId"] != req_rec["json"]["data"]["requestId"]
    assert resp_live["json"]["data"]["requestId"] == req_live["json"]["data"]["requestId"]
    assert data_types(new)[-1] == ("s2c", "action", "prompt-response")
    assert live[-1]["json"]["data"]["output"]["value"].startswith("The tool returned:")
    assert same_except_volatile(tool_cap, new) == []
    # same record shapes as a live recording: ws open with handshake, msgs, close, end
    with CaptureReader(new) as rd:
        recs = list(rd)
    assert rd.header["origin"]["source"] == "replay-client"
    assert recs[0]["type"] == "open" and recs[0]["kind"] == "ws" and recs[0]["status"] == 101
    assert "sec-websocket-key" in recs[0]["headers"] and "sec-websocket-accept" in recs[0]["response_headers"]
    assert recs[-2]["type"] == "close" and recs[-2]["by"] == "client" and recs[-1]["type"] == "end"


def test_secret_is_filled_from_the_environment(tool_cap, tmp_path):
    prompt = channel_messages(tool_cap)[0]
    assert prompt["json"]["data"]["authToken"].startswith("«redacted:authtoken:")
    log = tmp_path / "frames.jsonl"
    with fake_server("fake_codebuff_ws.py", "--proto", "sdk", "--mode", "tool", tmp=tmp_path, log=log) as port:
        r = run_wirecap("replay", "client", str(tool_cap), "--url", f"ws://127.0.0.1:{port}", "--speed", "0",
                        "--secret", "authtoken=CB_KEY_FOR_TEST", env={"CB_KEY_FOR_TEST": "cb-live-key-xyz"})
    assert r.returncode == 0, r.stderr.decode()
    frames = [json.loads(x) for x in log.read_text().splitlines()]
    first = next(f for f in frames if f["dir"] == "c2s")
    assert first["frame"]["data"]["authToken"] == "cb-live-key-xyz"
    assert b"another fingerprint" in r.stderr  # the recorded key was a different one, and it says so
    # a missing variable is an error, before anything is sent
    bad = run_wirecap("replay", "client", str(tool_cap), "--url", "ws://127.0.0.1:9", "--secret", "authtoken=NOPE_X")
    assert bad.returncode == 2 and b"NOPE_X is not set" in bad.stderr


def test_anthropic_sse_client_against_the_live_fake(tmp_path):
    cap = claude_capture(tmp_path)
    new = tmp_path / "claude_new.jsonl"
    with fake_server("fake_anthropic.py", "--mode", "text", "--delay", "0", tmp=tmp_path) as port:
        r = run_wirecap("replay", "client", str(cap), "--url", f"http://127.0.0.1:{port}", "-o", str(new),
                        "--speed", "0", "--secret", "x-api-key=ANTH_KEY", env={"ANTH_KEY": "sk-ant-live-0000000000"})
    assert r.returncode == 0, r.stderr.decode()
    recs = [x for x in CaptureReader(new)]
    kinds = [x["type"] for x in recs]
    assert kinds[:3] == ["open", "msg", "response"] and kinds[-2:] == ["close", "end"]
    resp = recs[2]
    assert resp["status"] == 200 and resp["sse"] is True
    events = [x for x in recs if x["type"] == "msg" and x["dir"] == "s2c"]
    assert events[0]["sse"]["event"] == "message_start" and events[-1]["sse"]["event"] == "message_stop"
    # message ids differ run to run (volatile); everything else is the same stream
    assert events[0]["json"]["message"]["id"] != channel_messages(cap)[1]["json"]["message"]["id"]
    assert same_except_volatile(cap, new) == []


def test_divergent_server_exits_1_with_the_field(tmp_path):
    cap = claude_capture(tmp_path)
    with fake_server("fake_anthropic.py", "--mode", "tool_bash", "--delay", "0", tmp=tmp_path) as port:
        r = run_wirecap("replay", "client", str(cap), "--url", f"http://127.0.0.1:{port}", "--speed", "0")
    assert r.returncode == 1
    err = r.stderr.decode()
    assert "divergence: server message" in err and "content_block" in err


def test_unreachable_server_exits_2(tool_cap):
    from conftest import free_port

    r = run_wirecap("replay", "client", str(tool_cap), "--url", f"ws://127.0.0.1:{free_port()}", "--timeout", "3")
    assert r.returncode == 2 and b"ws-1" in r.stderr


def test_client_drives_serve_of_the_same_capture(tool_cap, tmp_path):
    """replay client -> replay serve (in a thread) of the tool-call session: a faithful loop."""
    new = tmp_path / "loop.jsonl"
    with ThreadedReplayServer(ReplayServer.from_capture(str(tool_cap), speed=0)) as srv:
        r = run_wirecap("replay", "client", str(tool_cap), "--url", f"ws://127.0.0.1:{srv.server.port}",
                        "-o", str(new), "--speed", "0", "--timeout", "10")
        assert srv.server.mismatches == []
    assert r.returncode == 0, r.stderr.decode()
    assert same_except_volatile(tool_cap, new) == []


# --- the HTTP client on its own: h11 framing, the recorder's decoders ---------------------------------

def _exchange_with(answer: bytes, tmp_path, method: str = "POST"):
    """`http_exchange` against a one-shot server that reads the request head and sends `answer`;
    returns the result and the records written."""
    from wirecap.capture.writer import CaptureWriter, default_origin
    from wirecap.replay.http_client import http_exchange

    async def main():
        async def handle(reader, writer):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(answer)
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        w = CaptureWriter(tmp_path / "x.jsonl", origin=default_origin("test"), force=True)
        try:
            return await http_exchange(w, "http-1", method, f"http://127.0.0.1:{port}/v1/x", [], b"{}", timeout=10)
        finally:
            w.close()
            server.close()

    res = asyncio.run(main())
    with CaptureReader(tmp_path / "x.jsonl") as rd:
        return res, list(rd)


def test_http_client_skips_100_continue_and_decodes_a_gzipped_chunked_stream(tmp_path):
    import gzip

    sse = b"event: a\ndata: {\"n\": 1}\n\nevent: b\ndata: {\"n\": 2}\n\n"
    gz = gzip.compress(sse)
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(gz[i:i + 7]), gz[i:i + 7]) for i in range(0, len(gz), 7))
    res, recs = _exchange_with(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                               b"content-encoding: gzip\r\ntransfer-encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n",
                               tmp_path)
    assert res.status == 200 and res.sse and res.bytes == len(gz)
    [resp] = [r for r in recs if r["type"] == "response"]
    assert resp["status"] == 200 and resp["encoding"] == "gzip" and resp["sse"] is True
    assert [m["sse"]["event"] for m in res.messages] == ["a", "b"]
    assert [r["json"] for r in recs if r["type"] == "msg" and r["dir"] == "s2c"] == [{"n": 1}, {"n": 2}]


def test_http_client_decodes_br_and_reads_a_body_delimited_by_the_close(tmp_path):
    import brotli

    body = brotli.compress(b'{"ok": true}')
    res, recs = _exchange_with(b"HTTP/1.1 201 Created\r\ncontent-encoding: br\r\n\r\n" + body, tmp_path)
    assert (res.status, res.reason, res.bytes) == (201, "Created", len(body))
    assert [r["json"] for r in recs if r["type"] == "msg" and r["dir"] == "s2c"] == [{"ok": True}]
    assert recs[-2]["type"] == "close" and recs[-2]["status"] == 201


def test_http_client_reports_a_response_it_cannot_read_as_a_connection_error(tmp_path):
    with pytest.raises(ConnectionError, match="bad HTTP response"):
        _exchange_with(b"SPDY/9 200 what\r\n\r\n", tmp_path)
    with pytest.raises(ConnectionError, match="does not decode as gzip"):
        _exchange_with(b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: 5\r\n\r\nnot!z", tmp_path)
