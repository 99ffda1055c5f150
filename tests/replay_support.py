"""Helpers for the replay tests: captures from the real samples and from live fake servers.

No tests here. Captures of the Codebuff WebSocket sessions come from `wirecap import` of the lab
logs; SSE exchanges are recorded from the lab's fake servers over a real HTTP connection (the
sample request logs only summarise the streams they sent).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
from conftest import LAB, SAMPLES, run_wirecap

from wirecap.capture.reader import read_records
from wirecap.capture.sse import SSEParser, sse_record_fields
from wirecap.capture.writer import CaptureWriter, default_origin

FAKE = LAB / "fake"


def import_sample(name: str, out: Path) -> Path:
    """`wirecap import` of a lab log in tests/fixtures/samples (e.g. codebuff115_hello_ws_frames.jsonl)."""
    r = run_wirecap("import", "-o", str(out), str(SAMPLES / name), timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return out


@contextlib.contextmanager
def fake_server(script: str, *args: str, tmp: Path, timeout: float = 15.0, log: Path | None = None):
    """Run a lab fake server on 127.0.0.1; yields its port (its request log goes to `log`)."""
    portfile = tmp / f"{script}.{time.monotonic_ns()}.port"
    log = log or tmp / f"{script}.{time.monotonic_ns()}.log"
    proc = subprocess.Popen([sys.executable, str(FAKE / script), "--log", str(log), "--portfile", str(portfile),
                             *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + timeout
        while not (portfile.exists() and portfile.read_text().strip()):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{script} did not start")
            time.sleep(0.05)
        yield int(portfile.read_text())
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def record_http(out: Path, port: int, method: str, path: str, headers: dict[str, str], body: bytes,
                writer: CaptureWriter | None = None) -> Path:
    """One real HTTP exchange with a server on 127.0.0.1, written as a live capture would be."""
    own = writer is None
    w = writer or CaptureWriter(out, origin=default_origin("test"))
    ch = w.new_channel("http")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    t0 = time.monotonic()
    w.open(ch, "http", method=method, url=f"http://127.0.0.1:{port}{path}",
           headers={**{k.lower(): v for k, v in headers.items()}, "content-length": str(len(body))})
    conn.request(method, path, body=body, headers=headers)
    if body:
        w.msg(ch, "c2s", body)
    resp = conn.getresponse()
    ttfb = time.monotonic() - t0
    rh = {k.lower(): v for k, v in resp.getheaders()}
    sse = rh.get("content-type", "").startswith("text/event-stream")
    w.response(ch, resp.status, rh, reason=resp.reason, **({"sse": True} if sse else {}))
    nbytes = 0
    if sse:
        parser = SSEParser()
        while True:
            chunk = resp.read1(65536)
            if not chunk:
                break
            nbytes += len(chunk)
            for ev in parser.feed(chunk):
                w.write("msg", None, len(ev.raw), ch=ch, dir="s2c", **sse_record_fields(ev))
        for ev in parser.close():
            w.write("msg", None, len(ev.raw), ch=ch, dir="s2c", **sse_record_fields(ev))
    else:
        data = resp.read()
        nbytes = len(data)
        if data:
            w.msg(ch, "s2c", data)
    w.close_channel(ch, status=resp.status, ttfb=round(ttfb, 6), duration=round(time.monotonic() - t0, 6),
                    bytes=nbytes)
    conn.close()
    if own:
        w.close()
    return out


def claude_request() -> tuple[dict[str, str], bytes]:
    """The real Claude Code 2.1.197 Messages API request (headers from the log, full body)."""
    log = [json.loads(x) for x in (SAMPLES / "claude_code_hello_requests.jsonl").read_text().splitlines()]
    post = next(r for r in log if r["method"] == "POST")
    body = (SAMPLES / "claude_code_hello_requests_full" / "req_002.json").read_bytes()
    keep = ("content-type", "anthropic-version", "anthropic-beta", "user-agent", "x-app", "accept")
    headers = {k: v for k, v in post["headers"].items() if k in keep}
    headers["x-api-key"] = "sk-ant-fake-key-0123456789abcdef"
    return headers, body


def openai_request() -> tuple[dict[str, str], bytes]:
    """An OpenAI chat/completions streaming request (CodeBuddy's shape, trimmed log rebuilt minimal)."""
    body = {"model": "fake-model", "stream": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "system", "content": "You are a coding agent."},
                         {"role": "user", "content": "say hello"}]}
    return ({"content-type": "application/json", "authorization": "Bearer sk-fake-openai-0123456789abcdef"},
            orjson.dumps(body))


def claude_capture(tmp: Path) -> Path:
    out = tmp / "claude_sse.jsonl"
    if out.exists():
        return out
    headers, body = claude_request()
    with fake_server("fake_anthropic.py", "--mode", "text", "--delay", "0.002", tmp=tmp) as port:
        record_http(out, port, "POST", "/v1/messages?beta=true", headers, body)
    return out


def openai_capture(tmp: Path) -> Path:
    out = tmp / "openai_sse.jsonl"
    if out.exists():
        return out
    headers, body = openai_request()
    with fake_server("fake_openai.py", "--mode", "text", "--always-usage", tmp=tmp) as port:
        record_http(out, port, "POST", "/v1/chat/completions", headers, body)
    return out


def sdk_prompt() -> dict[str, Any]:
    """The real SDK 0.3.13 `prompt` frame (untrimmed)."""
    return json.loads((SAMPLES / "codebuff_sdk0313_hello_ws_frames_full" / "c2s_002.json").read_text())


async def record_sdk_tool_session(out: Path, port: int) -> Path:
    """A Codebuff SDK 0.3 tool-call round trip against fake_codebuff_ws.py --proto sdk --mode tool,
    recorded as a live capture: prompt -> tool-call-request -> tool-call-response -> prompt-response."""
    from websockets.asyncio.client import connect

    w = CaptureWriter(out, origin=default_origin("test"))
    ch = w.new_channel("ws")
    url = f"ws://127.0.0.1:{port}/ws"
    async with connect(url, max_size=None, ping_interval=None, open_timeout=10) as ws:
        w.open(ch, "ws", url=url, headers={k.lower(): v for k, v in ws.request.headers.raw_items()}, status=101,
               response_headers={k.lower(): v for k, v in ws.response.headers.raw_items()})

        async def send(obj: dict[str, Any]) -> None:
            data = json.dumps(obj)
            await ws.send(data)
            w.msg(ch, "c2s", data)

        async def recv_until(kind: str) -> dict[str, Any]:
            while True:
                raw = await ws.recv()
                w.msg(ch, "s2c", raw)
                m = json.loads(raw)
                if (m.get("data") or {}).get("type") == kind:
                    return m

        await send(sdk_prompt())
        req = await recv_until("tool-call-request")
        await send({"type": "action", "txid": 1, "data": {
            "type": "tool-call-response", "requestId": req["data"]["requestId"], "success": True,
            "output": [{"type": "json", "value": {"command": "echo hi", "stdout": "hi\n", "exitCode": 0}}]}})
        await recv_until("prompt-response")
        # the ack of txid 1 came before the tool result chunks; nothing else is pending
        await ws.close()
    w.close_channel(ch, code=1000, reason="", by="client")
    w.close()
    return out


def same_except_volatile(a: Path, b: Path) -> list[str]:
    """Compare two captures message by message per channel (in order) with the replay matcher:
    the problems found, empty when they are equal except volatile fields."""
    from wirecap.replay.match import Matcher, channel_dialect, comparable
    from wirecap.replay.script import build_scripts

    sa, sb = build_scripts(read_records(a)), build_scripts(read_records(b))
    problems: list[str] = []
    if [s.kind for s in sa] != [s.kind for s in sb]:
        return [f"channels differ: {[s.kind for s in sa]} vs {[s.kind for s in sb]}"]
    for x, y in zip(sa, sb, strict=True):
        m = Matcher((), channel_dialect(x))
        mx = [r for s in x.steps for r in ([s.client] if s.client else []) + [q.record for q in s.replies]]
        my = [r for s in y.steps for r in ([s.client] if s.client else []) + [q.record for q in s.replies]]
        if [r["dir"] for r in mx] != [r["dir"] for r in my]:
            problems.append(f"{x.ch}: message directions differ ({len(mx)} vs {len(my)} messages)")
            continue
        for r1, r2 in zip(mx, my, strict=True):
            if not m.same(comparable(r2), comparable(r1)):
                problems.append(f"{x.ch} seq {r1['seq']} vs {r2['seq']}: {m.diffs(comparable(r2), comparable(r1))[:3]}")
    return problems


def channel_messages(path: Path, ch: str | None = None) -> list[dict[str, Any]]:
    return [r for r in read_records(path) if r.get("type") == "msg" and (ch is None or r.get("ch") == ch)]


def env_with_path() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "")}


def encode_as(body: bytes, encoding: str) -> bytes:
    """`body` with a `content-encoding` applied (`gzip, br`: gzip first, then br), as a client sends it."""
    import gzip
    import zlib

    for enc in [e.strip() for e in encoding.split(",")]:
        if enc == "gzip":
            body = gzip.compress(body)
        elif enc == "deflate":
            body = zlib.compress(body)
        elif enc == "br":
            import brotli

            body = brotli.compress(body)
        elif enc == "zstd":
            import zstandard

            body = zstandard.ZstdCompressor().compress(body)
        else:
            raise ValueError(enc)
    return body
