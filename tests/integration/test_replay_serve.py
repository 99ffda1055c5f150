"""`replay serve` with real clients on 127.0.0.1: WebSocket sessions (legacy Codebuff CLI, SDK 0.3),
Anthropic and OpenAI SSE exchanges, strict and lenient mismatches, use-once and --loop."""

from __future__ import annotations

import asyncio
import http.client
import json
from pathlib import Path

import orjson
import pytest
from replay_support import (
    channel_messages,
    claude_capture,
    claude_request,
    import_sample,
    openai_capture,
    openai_request,
)
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, ConnectionClosedError

from wirecap.capture.payload import payload_bytes
from wirecap.capture.sse import sse_event_bytes
from wirecap.replay.http_server import ReplayServer, ThreadedReplayServer

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def caps(tmp_path_factory):
    d = tmp_path_factory.mktemp("serve")
    return {
        "cb115": import_sample("codebuff115_hello_ws_frames.jsonl", d / "cb115.jsonl"),
        "sdk": import_sample("codebuff_sdk0313_hello_ws_frames.jsonl", d / "sdk.jsonl"),
        "claude": claude_capture(d),
        "openai": openai_capture(d),
    }


def serving(path, **kw) -> ThreadedReplayServer:
    kw.setdefault("speed", 0)
    return ThreadedReplayServer(ReplayServer.from_capture(str(path), **kw))


async def ws_exchange(url: str, sends: list[bytes], expect: list[int], timeout: float = 10) -> list[bytes]:
    """Send each message, then read `expect[i]` messages; returns everything received."""
    got: list[bytes] = []
    async with connect(url, max_size=None, open_timeout=timeout) as ws:
        for data, n in zip(sends, expect, strict=True):
            await ws.send(data, text=True)
            for _ in range(n):
                got.append(await asyncio.wait_for(ws.recv(decode=False), timeout))
    return got


def test_legacy_codebuff_session_is_served_byte_exact_with_live_ids(caps):
    msgs = channel_messages(caps["cb115"])
    c2s = [m for m in msgs if m["dir"] == "c2s"]
    s2c = [m for m in msgs if m["dir"] == "s2c"]
    init = dict(c2s[0]["json"])
    user = json.loads(json.dumps(c2s[1]["json"]))
    user["data"]["userInputId"] = "mc-input-live42"  # a new run makes up a new id
    user["txid"] = 1
    with serving(caps["cb115"]) as srv:
        got = asyncio.run(ws_exchange(f"ws://127.0.0.1:{srv.server.port}/ws",
                                      [orjson.dumps(init), orjson.dumps(user)], [2, 8]))
        assert srv.server.mismatches == []
    # the answers to init are the recorded bytes
    assert got[:2] == [payload_bytes(m) for m in s2c[:2]]
    later = [orjson.loads(g) for g in got[2:]]
    assert later[0] == {"type": "ack", "txid": 1, "success": True}
    assert all(m["data"]["userInputId"] == "mc-input-live42" for m in later[1:])
    assert "".join(m["data"]["chunk"] for m in later[1:-1]) == "Hello from the fake Codebuff backend!"
    assert later[-1]["data"]["type"] == "response-complete"


def test_sdk03_session_echoes_the_live_prompt_id(caps):
    msgs = channel_messages(caps["sdk"])
    prompt = json.loads(json.dumps(msgs[0]["json"]))
    assert prompt["data"]["authToken"].startswith("«redacted:")  # the capture never held the key
    prompt["data"]["authToken"] = "cb-live-secret-123"
    prompt["data"]["promptId"] = "live-prompt-1"
    prompt["data"]["fingerprintId"] = "codebuff-sdk-live"
    n = sum(1 for m in msgs if m["dir"] == "s2c")
    with serving(caps["sdk"]) as srv:
        got = asyncio.run(ws_exchange(f"ws://127.0.0.1:{srv.server.port}/ws", [orjson.dumps(prompt)], [n]))
        assert srv.server.mismatches == []
    values = [orjson.loads(g) for g in got]
    final = values[-1]["data"]
    assert final["type"] == "prompt-response" and final["promptId"] == "live-prompt-1"
    assert {v["data"]["userInputId"] for v in values if v.get("data", {}).get("type") == "response-chunk"} == \
        {"live-prompt-1"}


def test_strict_mismatch_closes_1008_naming_message_candidate_and_field(caps):
    msgs = channel_messages(caps["cb115"])
    c2s = [m for m in msgs if m["dir"] == "c2s"]
    user = json.loads(json.dumps(c2s[1]["json"]))
    user["data"]["messages"][0]["content"] = "say goodbye"

    async def go(port: int) -> tuple[str, ConnectionClosedError]:
        async with connect(f"ws://127.0.0.1:{port}/ws") as ws:
            await ws.send(orjson.dumps(c2s[0]["json"]), text=True)
            for _ in range(2):
                await asyncio.wait_for(ws.recv(), 10)
            await ws.send(orjson.dumps(user), text=True)
            told = await asyncio.wait_for(ws.recv(), 10)
            with pytest.raises(ConnectionClosedError) as ei:
                await asyncio.wait_for(ws.recv(), 10)
            return told, ei.value

    with serving(caps["cb115"]) as srv:
        told, err = asyncio.run(go(srv.server.port))
        [mm] = srv.server.mismatches
    # the protocol's own error first: codebuff 1.0.x prints an `action-error` as `Error: MESSAGE`
    assert json.loads(told) == {"type": "action", "data": {"type": "action-error", "message": mm.message()}}
    assert err.rcvd.code == 1008  # policy violation: not a close a client reconnects for (1011 is)
    reason = err.rcvd.reason
    assert reason.startswith("wirecap replay mismatch: ") and len(reason.encode()) <= 123
    assert "data.messages[0].content" in reason and '"say goodbye"' in reason
    report = mm.report()
    assert f"seq {c2s[1]['seq']}" in report
    assert '"say hello"' in report and '"say goodbye"' in report


def test_lenient_mode_answers_anyway_and_logs(caps):
    msgs = channel_messages(caps["cb115"])
    c2s = [m for m in msgs if m["dir"] == "c2s"]
    user = json.loads(json.dumps(c2s[1]["json"]))
    user["data"]["messages"][0]["content"] = "say goodbye"
    with serving(caps["cb115"], strict=False) as srv:
        got = asyncio.run(ws_exchange(f"ws://127.0.0.1:{srv.server.port}/ws",
                                      [orjson.dumps(c2s[0]["json"]), orjson.dumps(user)], [2, 8]))
        assert len(srv.server.mismatches) == 1
    assert orjson.loads(got[-1])["data"]["type"] == "response-complete"


def post(port: int, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    conn.request("POST", path, body=body, headers=headers)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, data


def test_claude_anthropic_sse_stream_is_replayed_byte_exact(caps):
    headers, body = claude_request()
    events = [m for m in channel_messages(caps["claude"]) if m["dir"] == "s2c"]
    assert len(events) >= 10 and events[0]["sse"]["event"] == "message_start"
    with serving(caps["claude"]) as srv:
        status, rh, data = post(srv.server.port, "/v1/messages?beta=true", headers, body)
        assert srv.server.mismatches == []
    assert status == 200 and rh["content-type"].startswith("text/event-stream")
    assert "content-encoding" not in rh and rh.get("transfer-encoding") == "chunked"
    assert data == b"".join(sse_event_bytes(e) for e in events)
    assert b"Hello! This is a reply from the fake Anthropic server." not in data  # it came in word pieces
    assert b'"text":" fake"' in data.replace(b": ", b":")


def test_openai_chat_sse_stream_and_use_once(caps):
    headers, body = openai_request()
    events = [m for m in channel_messages(caps["openai"]) if m["dir"] == "s2c"]
    with serving(caps["openai"]) as srv:
        status, _rh, data = post(srv.server.port, "/v1/chat/completions", headers, body)
        assert status == 200 and data == b"".join(sse_event_bytes(e) for e in events)
        assert data.rstrip().endswith(b"data: [DONE]")
        # each recording is used once: the same request again finds nothing left
        status2, rh2, data2 = post(srv.server.port, "/v1/chat/completions", headers, body)
        assert status2 == 400 and rh2["content-type"] == "application/json"
        assert rh2["x-should-retry"] == "false"
        err2 = json.loads(data2)["error"]  # OpenAI's error shape
        assert err2["type"] == "invalid_request_error" and err2["code"] == "wirecap_replay_mismatch"
        assert err2["message"].startswith("wirecap replay mismatch: request POST /v1/chat/completions")
        assert "no recorded" in err2["message"]
    with serving(caps["openai"], loop=True) as srv:
        for _ in range(2):
            assert post(srv.server.port, "/v1/chat/completions", headers, body)[0] == 200
        assert srv.server.mismatches == []


def test_http_mismatch_is_an_openai_shaped_400_with_the_differing_field(caps):
    headers, body = openai_request()
    changed = orjson.loads(body)
    changed["messages"][1]["content"] = "say something else"
    with serving(caps["openai"]) as srv:
        status, rh, data = post(srv.server.port, "/v1/chat/completions", headers, orjson.dumps(changed))
        [mm] = srv.server.mismatches
    assert status == 400 and rh["x-wirecap-replay"] == "mismatch"
    doc = json.loads(data)
    assert set(doc["error"]) == {"message", "type", "param", "code"}
    assert doc["error"]["message"] == mm.message()
    assert 'messages[1].content: recorded "say hello", live "say something else"' in doc["error"]["message"]
    detail = doc["wirecap"]
    assert mm.diffs[0] == ("messages[1].content", "say hello", "say something else")
    assert detail["diff"] == ['~ messages[1].content: recorded "say hello", live "say something else"']
    assert "request POST /v1/chat/completions" in detail["reason"] and mm.candidate_seq is not None


def test_anthropic_mismatch_is_an_anthropic_shaped_400(caps):
    headers, body = claude_request()
    changed = orjson.loads(body)
    changed["messages"][-1]["content"] = "say something else"
    with serving(caps["claude"]) as srv:
        status, _rh, data = post(srv.server.port, "/v1/messages?beta=true", headers, orjson.dumps(changed))
        [mm] = srv.server.mismatches
    assert status == 400
    doc = json.loads(data)
    assert doc["type"] == "error" and doc["error"]["type"] == "invalid_request_error"
    assert doc["error"]["message"].startswith("wirecap replay mismatch: request POST /v1/messages")
    assert "say something else" in doc["error"]["message"] and mm.diffs


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "zstd", "gzip, br"])
def test_compressed_request_body_is_decoded_before_matching(caps, encoding):
    """A request body with a content-encoding (Codebuff SDK 0.10 gzips its requests) matches the
    recording of the same JSON, and a changed one gets a readable mismatch (not a dropped connection)."""
    from replay_support import encode_as

    headers, body = openai_request()
    headers = {**headers, "content-encoding": encoding}
    with serving(caps["openai"]) as srv:
        status, _rh, data = post(srv.server.port, "/v1/chat/completions", headers, encode_as(body, encoding))
        assert status == 200 and data.rstrip().endswith(b"data: [DONE]")
        assert srv.server.mismatches == []
    changed = orjson.loads(body)
    changed["messages"][1]["content"] = "say something else"
    with serving(caps["openai"]) as srv:
        status, _rh, data = post(srv.server.port, "/v1/chat/completions", headers,
                                 encode_as(orjson.dumps(changed), encoding))
        [mm] = srv.server.mismatches
    assert status == 400
    assert json.loads(data)["wirecap"]["diff"] == [
        '~ messages[1].content: recorded "say hello", live "say something else"']


def test_undecodable_binary_body_still_gets_a_json_mismatch(caps):
    """Bytes that are not what their content-encoding claims are compared as sent; the answer is
    still a JSON 400 (building it used to raise `TypeError: bytes` and drop the connection)."""
    headers, _body = openai_request()
    headers = {**headers, "content-encoding": "gzip"}
    with serving(caps["openai"]) as srv:
        status, _rh, data = post(srv.server.port, "/v1/chat/completions", headers, b"\x1f\x8b\xff\xfe not gzip")
        [mm] = srv.server.mismatches
    assert status == 400
    doc = json.loads(data)
    assert doc["error"]["message"].startswith("wirecap replay mismatch:")
    assert "replay mismatch" in mm.report()


def test_serve_cli_with_port_file_and_ignore(caps, tmp_path):
    """The command itself: --port-file, --ignore, a mismatch printed to stderr, exit 1 after SIGTERM."""
    import signal
    import subprocess
    import sys
    import time

    portfile = tmp_path / "port"
    proc = subprocess.Popen([sys.executable, "-m", "wirecap", "replay", "serve", str(caps["openai"]),
                             "--port-file", str(portfile), "--speed", "0", "--ignore", "stream_options"],
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while not portfile.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        port = int(portfile.read_text())
        headers, body = openai_request()
        ignored = orjson.loads(body)
        ignored["stream_options"] = {"include_usage": False}  # ignored by --ignore
        assert post(port, "/v1/models", headers, b"")[0] == 400
        assert post(port, "/v1/chat/completions", headers, orjson.dumps(ignored))[0] == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=15)
    assert proc.returncode == 1
    text = err.decode()
    assert "replay mismatch: request POST /v1/models" in text
    assert "(request line)" in text


def test_sdk_prompt_mismatch_gets_a_prompt_error_for_its_prompt_id(caps):
    """Codebuff SDK 0.3.x ends `run()` on a `prompt-error` for its promptId (an `action-error` only
    emits an event and the run would wait forever); then the close 1008."""
    msgs = channel_messages(caps["sdk"])
    c2s = [m for m in msgs if m["dir"] == "c2s"]
    prompt = json.loads(json.dumps(c2s[0]["json"]))
    assert prompt["data"]["type"] == "prompt"
    prompt["data"]["prompt"] = "something else entirely"
    prompt["data"]["promptId"] = "live-prompt-9"

    async def go(port: int) -> tuple[str, ConnectionClosedError]:
        async with connect(f"ws://127.0.0.1:{port}/ws") as ws:
            await ws.send(orjson.dumps(prompt), text=True)
            told = await asyncio.wait_for(ws.recv(), 10)
            with pytest.raises(ConnectionClosedError) as ei:
                await asyncio.wait_for(ws.recv(), 10)
            return told, ei.value

    with serving(caps["sdk"]) as srv:
        told, err = asyncio.run(go(srv.server.port))
        [mm] = srv.server.mismatches
    data = json.loads(told)["data"]
    assert data == {"type": "prompt-error", "userInputId": "live-prompt-9", "message": mm.message()}
    assert "something else entirely" in data["message"]
    assert err.rcvd.code == 1008 and err.rcvd.reason.startswith("wirecap replay mismatch:")


def test_websocket_with_no_recording_left_is_closed_1008(caps):
    async def go(port: int) -> ConnectionClosedError:
        async with connect(f"ws://127.0.0.1:{port}/ws") as ws:
            with pytest.raises(ConnectionClosedError) as ei:
                await asyncio.wait_for(ws.recv(), 10)
            return ei.value

    msgs = channel_messages(caps["sdk"])
    with serving(caps["sdk"]) as srv:
        # use up the one recorded channel, then connect again
        asyncio.run(ws_exchange(f"ws://127.0.0.1:{srv.server.port}/ws", [orjson.dumps(msgs[0]["json"])], [1]))
        err = asyncio.run(go(srv.server.port))
        assert any(mm.candidate_seq is None for mm in srv.server.mismatches)
    assert err.rcvd.code == 1008
    assert err.rcvd.reason == "wirecap replay mismatch: no recorded WebSocket channel left at /ws"


def test_websocket_message_past_the_end_of_the_recording_fails_the_same_way(caps):
    """The client asks for more than was recorded (ran out of script): the protocol's error, then 1008."""
    msgs = channel_messages(caps["cb115"])
    c2s = [m for m in msgs if m["dir"] == "c2s"]
    s2c = [m for m in msgs if m["dir"] == "s2c"]

    async def go(port: int) -> tuple[str, ConnectionClosedError]:
        async with connect(f"ws://127.0.0.1:{port}/ws") as ws:
            await ws.send(orjson.dumps(c2s[0]["json"]), text=True)
            await ws.send(orjson.dumps(c2s[1]["json"]), text=True)
            for _ in range(len(s2c)):
                await asyncio.wait_for(ws.recv(), 10)
            await ws.send(orjson.dumps(c2s[1]["json"]), text=True)  # once more: nothing recorded for it
            told = await asyncio.wait_for(ws.recv(), 10)
            with pytest.raises(ConnectionClosedError) as ei:
                await asyncio.wait_for(ws.recv(), 10)
            return told, ei.value

    with serving(caps["cb115"]) as srv:
        told, err = asyncio.run(go(srv.server.port))
        [mm] = srv.server.mismatches
    assert mm.candidate_seq is None
    assert json.loads(told)["data"] == {"type": "action-error", "message": mm.message()}
    assert "no recorded message left" in mm.message()
    assert err.rcvd.code == 1008 and err.rcvd.reason == "wirecap replay mismatch: message #3 on ws-1: no recorded message left"


def test_unmatched_head_gets_a_400_without_a_body_and_the_connection_stays_usable(caps):
    """Claude Code probes with `HEAD /`: a mismatch answer to a HEAD carries no body, so the bytes
    that follow its head on the keep-alive connection are the next response's."""
    import socket

    headers, body = openai_request()
    post_req = (b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n" % len(body)
                + b"".join(f"{k}: {v}\r\n".encode() for k, v in headers.items()) + b"\r\n" + body)
    with serving(caps["openai"]) as srv, socket.create_connection(("127.0.0.1", srv.server.port), 15) as sock:
        sock.sendall(b"HEAD / HTTP/1.1\r\nhost: x\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400 ")
        sock.sendall(post_req)
        while len(rest) < 12:
            rest += sock.recv(65536)
    assert rest.startswith(b"HTTP/1.1 200 ")


def test_a_recorded_body_kept_encoded_is_decoded_too(tmp_path):
    """A capture whose request body was kept as sent (gzip bytes, b64; e.g. an import) and whose open
    headers say so matches the live request by its JSON, whether the live one is gzipped or not."""
    import gzip

    from replay_support import fake_server, record_http

    headers, body = openai_request()
    gz = {**headers, "content-encoding": "gzip"}
    cap = tmp_path / "gz.jsonl"
    with fake_server("fake_openai.py", "--mode", "text", tmp=tmp_path) as port:
        record_http(cap, port, "POST", "/v1/chat/completions", gz, gzip.compress(body))
    [rec] = [m for m in channel_messages(cap) if m["dir"] == "c2s"]
    assert "b64" in rec  # kept encoded
    with serving(cap, loop=True) as srv:
        assert post(srv.server.port, "/v1/chat/completions", gz, gzip.compress(body))[0] == 200
        assert post(srv.server.port, "/v1/chat/completions", headers, body)[0] == 200
        assert srv.server.mismatches == []


def test_a_matching_bug_is_told_like_a_mismatch_not_a_dropped_connection(caps, monkeypatch):
    """If matching itself raises (a bug), the HTTP client still gets a 400 naming it and a WebSocket
    client a close 1008: a dropped connection would be retried."""
    from wirecap.replay.match import Matcher

    def broken(self, live, recorded):
        raise ValueError("boom")

    monkeypatch.setattr(Matcher, "same", broken)
    headers, body = openai_request()
    msgs = channel_messages(caps["cb115"])
    c2s = [m for m in msgs if m["dir"] == "c2s"]

    async def ws(port: int) -> ConnectionClosedError:
        async with connect(f"ws://127.0.0.1:{port}/ws") as conn:
            await conn.send(orjson.dumps(c2s[0]["json"]), text=True)
            with pytest.raises(ConnectionClosedError) as ei:
                while True:
                    await asyncio.wait_for(conn.recv(), 10)
            return ei.value

    with serving(caps["openai"]) as srv:
        status, _rh, data = post(srv.server.port, "/v1/chat/completions", headers, body)
        [mm] = srv.server.mismatches
    assert status == 400
    assert json.loads(data)["error"]["message"] == (
        "wirecap replay mismatch: request POST /v1/chat/completions #0 on http: "
        "wirecap could not match it: ValueError: boom")
    with serving(caps["cb115"]) as srv:
        err = asyncio.run(ws(srv.server.port))
    assert err.rcvd.code == 1008 and "could not match it: ValueError: boom" in err.rcvd.reason


@pytest.mark.parametrize("name", ["claude", "openai"])
def test_the_connection_header_is_sent_only_when_it_was_recorded(caps, tmp_path, name):
    """HTTP/1.1 keeps a connection by default: a replayed response whose recording had no `connection`
    header gets none (the Codebuff SDK 0.10 prints the headers of an error response, so an added
    `connection: keep-alive` showed up as a difference between the recorded and the replayed run)."""
    recs = [orjson.loads(line) for line in Path(caps[name]).read_bytes().splitlines()]
    for without in (False, True):
        out = tmp_path / f"{name}-{without}.jsonl"
        with out.open("wb") as f:
            for r in recs:
                if r.get("type") == "response":
                    r = {**r, "headers": {k: v for k, v in r["headers"].items() if k.lower() != "connection"}}
                    if not without:
                        r["headers"]["Connection"] = "keep-alive"
                f.write(orjson.dumps(r) + b"\n")
        headers, body = claude_request() if name == "claude" else openai_request()
        path = "/v1/messages?beta=true" if name == "claude" else "/v1/chat/completions"
        with serving(out) as srv:
            status, rh, _data = post(srv.server.port, path, headers, body)
            assert srv.server.mismatches == []
        assert status == 200
        assert ("connection" in rh) is (not without)


# --- HTTP/1.1 as h11 reads and writes it ----------------------------------------------------------

def _raw(port: int, data: bytes, *, then: bytes = b"", until: bytes = b"data: [DONE]") -> tuple[bytes, bytes]:
    """Send `data`, read what comes before `then` is sent (the early answer), send `then`, read until
    `until` appears or the server closes; returns (early, rest)."""
    import socket

    with socket.create_connection(("127.0.0.1", port), 15) as sock:
        sock.sendall(data)
        early = b""
        if then:
            while b"\r\n\r\n" not in early:
                early += sock.recv(65536)
            sock.sendall(then)
        rest = b""
        while until not in rest:
            got = sock.recv(65536)
            if not got:
                break
            rest += got
    return early, rest


def _openai_post(body: bytes, extra: bytes = b"", version: bytes = b"1.1", framing: bytes | None = None) -> bytes:
    headers, _ = openai_request()
    framing = b"content-length: %d\r\n" % len(body) if framing is None else framing
    return (b"POST /v1/chat/completions HTTP/" + version + b"\r\nhost: x\r\n" + framing
            + b"".join(f"{k}: {v}\r\n".encode() for k, v in headers.items()) + extra + b"\r\n")


def test_expect_100_continue_is_answered_before_the_body_is_sent(caps):
    _, body = openai_request()
    with serving(caps["openai"]) as srv:
        early, rest = _raw(srv.server.port, _openai_post(body, b"expect: 100-continue\r\n"), then=body)
        assert srv.server.mismatches == []
    assert early == b"HTTP/1.1 100 Continue\r\n\r\n"
    assert rest.startswith(b"HTTP/1.1 200 OK\r\n")


def test_a_chunked_request_body_and_pipelined_requests_are_read(caps):
    _, body = openai_request()
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 40]), body[i:i + 40]) for i in range(0, len(body), 40))
    first = _openai_post(body, framing=b"transfer-encoding: chunked\r\n") + chunked + b"0\r\n\r\n"
    second = _openai_post(body, b"connection: close\r\n") + body  # (the server closes after it)
    with serving(caps["openai"], loop=True) as srv:
        _, rest = _raw(srv.server.port, first + second, until=b"__never__")
        assert srv.server.mismatches == []
    assert rest.startswith(b"HTTP/1.1 200 OK\r\n")
    assert rest.count(b"HTTP/1.1 200 OK\r\n") == 2 and rest.count(b"data: [DONE]") == 2


def test_an_http_1_0_client_gets_the_stream_delimited_by_the_close(caps):
    _, body = openai_request()
    events = [m for m in channel_messages(caps["openai"]) if m["dir"] == "s2c"]
    with serving(caps["openai"]) as srv:
        _, rest = _raw(srv.server.port, _openai_post(body, version=b"1.0") + body, until=b"__never__")
    head, _, data = rest.partition(b"\r\n\r\n")
    assert b"chunked" not in head.lower() and b"connection: close" in head.lower()
    assert data == b"".join(sse_event_bytes(e) for e in events)


def test_a_request_head_over_256_kib_gets_431_and_a_bad_request_400(caps):
    with serving(caps["openai"]) as srv:
        _, big = _raw(srv.server.port, b"GET / HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * 300_000 + b"\r\n\r\n",
                      until=b"__never__")
        _, bad = _raw(srv.server.port, b"HELLO\r\n\r\n", until=b"__never__")
    assert big.startswith(b"HTTP/1.1 431 ") and big.endswith(b"request head larger than 256 KiB\n")
    assert bad.startswith(b"HTTP/1.1 400 ") and b"connection: close" in bad


def test_websocket_bytes_sent_with_the_upgrade_request_reach_the_session(caps):
    """A client that sends its first (fragmented) message and a ping right behind the upgrade request:
    the 101 goes out first, then the pong and the recorded answers."""
    import socket

    from websockets.client import ClientProtocol
    from websockets.frames import Frame, Opcode
    from websockets.protocol import State
    from websockets.uri import parse_uri

    first = orjson.dumps([m for m in channel_messages(caps["cb115"]) if m["dir"] == "c2s"][0]["json"])
    with serving(caps["cb115"]) as srv:
        client = ClientProtocol(parse_uri(f"ws://127.0.0.1:{srv.server.port}/ws"))
        client.send_request(client.connect())
        head = b"".join(client.data_to_send())
        client.state = State.OPEN  # (to frame what follows; set back before the 101 is read)
        client.send_ping(b"hi")
        client.send_text(first[:10], fin=False)
        client.send_continuation(first[10:], fin=True)
        frames = b"".join(client.data_to_send())
        client.state = State.CONNECTING
        events: list = []
        with socket.create_connection(("127.0.0.1", srv.server.port), 15) as sock:
            sock.sendall(head + frames)
            while sum(isinstance(e, Frame) and e.opcode is Opcode.TEXT for e in events) < 2:
                client.receive_data(sock.recv(65536))
                events += client.events_received()
        assert srv.server.mismatches == []
    assert events[0].status_code == 101 and events[0].headers["Server"] == "wirecap-replay"
    assert (events[1].opcode, events[1].data) == (Opcode.PONG, b"hi")
    assert orjson.loads(events[2].data) == {"type": "ack", "txid": 0, "success": True}


@pytest.mark.parametrize(("code", "seen"), [(4000, 4000), (1006, 1006), (1005, 1005)])
def test_a_recorded_server_close_is_replayed_as_recorded(caps, tmp_path, code, seen):
    """A close code is sent as recorded; a recorded 1006 (the connection dropped without a close
    frame) drops it; a 1005 is a close frame without a code."""
    recs = [orjson.loads(line) for line in Path(caps["cb115"]).read_bytes().splitlines()]
    out = tmp_path / "closed.jsonl"
    out.write_bytes(b"".join(orjson.dumps({**r, "code": code, "reason": "", "by": "server"} if r.get("type") == "close"
                                          else r) + b"\n" for r in recs))
    sends = [orjson.dumps(m["json"]) for m in channel_messages(out) if m["dir"] == "c2s"]

    async def run(port: int) -> int | None:
        async with connect(f"ws://127.0.0.1:{port}/ws") as conn:
            for data in sends:
                await conn.send(data, text=True)
            with pytest.raises(ConnectionClosed):
                while True:
                    await asyncio.wait_for(conn.recv(), 10)
            return conn.close_code

    with serving(out) as srv:
        assert asyncio.run(run(srv.server.port)) == seen
        assert srv.server.mismatches == []
