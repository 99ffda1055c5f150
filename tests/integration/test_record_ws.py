"""`wirecap record --reverse` in front of a real websockets server, with real websockets clients."""

from __future__ import annotations

import asyncio
import json
import os
import signal

import pytest
import websockets
from conftest import SAMPLES
from record_util import channel, read_capture, record_home, recorder  # noqa: F401

from wirecap.capture.payload import payload_bytes

pytestmark = pytest.mark.usefixtures("record_home")
BIG = 16 * 1024 * 1024


def codebuff_script() -> list[tuple[str, bytes]]:
    """The Codebuff 1.0.15 hello session as (dir, exact frame bytes), in wire order."""
    out = []
    full = SAMPLES / "codebuff115_hello_ws_frames_full"
    for line in (SAMPLES / "codebuff115_hello_ws_frames.jsonl").read_text().splitlines():
        d = json.loads(line)
        if d["dir"] == "c2s":
            data = (full / f"c2s_{d['seq']:03d}.json").read_bytes()
        elif d["dir"] == "s2c":
            data = json.dumps(d["frame"]).encode()  # the Python fake server's spelling
        else:
            continue
        assert len(data) == d["len"]
        out.append((d["dir"], data))
    return out


async def _serve_script(script: list[tuple[str, bytes]]):
    """A server that answers each client frame with the server frames that follow it in the script."""
    replies: list[list[bytes]] = []
    for d, data in script:
        if d == "c2s":
            replies.append([])
        else:
            replies[-1].append(data)
    got: list[bytes] = []

    async def handler(ws):
        i = 0
        async for m in ws:
            got.append(m.encode() if isinstance(m, str) else m)
            for r in replies[i]:
                await ws.send(r.decode())
            i += 1

    server = await websockets.serve(handler, "127.0.0.1", 0, max_size=BIG)
    return server, got


def test_codebuff_session_recorded_in_order_with_exact_bytes(tmp_path):
    script = codebuff_script()

    async def run(proxy_port: int, server_port: int) -> list[bytes]:
        received = []
        async with websockets.connect(f"ws://127.0.0.1:{proxy_port}/ws", max_size=BIG) as c:
            for d, data in script:
                if d == "c2s":
                    await c.send(data.decode())
                else:
                    m = await asyncio.wait_for(c.recv(), 10)
                    received.append(m.encode())
        return received

    async def main():
        server, got = await _serve_script(script)
        port = server.sockets[0].getsockname()[1]
        with recorder(tmp_path, "--reverse", f"http://127.0.0.1:{port}") as rec:
            received = await run(rec.port, port)
            await asyncio.sleep(0.2)
            assert rec.stop() == 0
        server.close()
        return got, received, rec

    got, received, rec = asyncio.run(main())
    assert got == [d for k, d in script if k == "c2s"]
    assert received == [d for k, d in script if k == "s2c"]
    _, records, reader = read_capture(rec.cap)
    assert reader.end is not None and reader.end["errors"] == 0
    ws = channel(records, "ws-1")
    assert ws[0]["type"] == "open" and ws[0]["kind"] == "ws"
    assert ws[0]["url"].startswith("ws://127.0.0.1:") and ws[0]["url"].endswith("/ws")
    assert ws[0]["headers"]["upgrade"] == "websocket" and ws[0]["status"] == 101
    msgs = [r for r in ws if r["type"] == "msg"]
    assert [(m["dir"], payload_bytes(m)) for m in msgs] == script
    assert all("binary" not in m for m in msgs)
    assert msgs[0]["json"]["data"]["type"] == "init"
    assert ws[-1]["type"] == "close" and ws[-1]["code"] == 1000 and ws[-1]["by"] == "client"


def test_binary_frames_and_a_10mb_message_pass_and_are_recorded(tmp_path):
    blobs = [bytes(range(256)), b"", os.urandom(70_000)]
    big_text = ("0123456789abcdef\u2028" * (10 * 1024 * 1024 // 19)).encode()

    async def echo(ws):
        async for m in ws:
            await ws.send(m)

    async def main():
        server = await websockets.serve(echo, "127.0.0.1", 0, max_size=BIG)
        port = server.sockets[0].getsockname()[1]
        with recorder(tmp_path, "--reverse", f"http://127.0.0.1:{port}") as rec:
            async with websockets.connect(f"ws://127.0.0.1:{rec.port}/", max_size=BIG) as c:
                back = []
                for b in blobs:
                    await c.send(b)
                    back.append(await asyncio.wait_for(c.recv(), 20))
                await c.send(big_text.decode())
                back.append((await asyncio.wait_for(c.recv(), 30)).encode())
            await asyncio.sleep(0.2)
            rec.stop()
        server.close()
        return back, rec

    back, rec = asyncio.run(main())
    assert back == [*blobs, big_text]
    _, records, reader = read_capture(rec.cap)
    assert reader.end is not None
    msgs = [r for r in channel(records, "ws-1") if r["type"] == "msg"]
    assert [payload_bytes(m) for m in msgs] == [x for b in [*blobs, big_text] for x in (b, b)]
    assert [m.get("binary", False) for m in msgs] == [True] * 6 + [False, False]
    assert "b64" in msgs[0] and "text" in msgs[-1]


def test_invalid_utf8_text_frame_is_refused_by_mitmproxy_and_recorded_as_a_close(tmp_path):
    """websockets can send a text frame with invalid UTF-8; mitmproxy's wsproto refuses it (RFC 6455
    requires that: close code 1007), so it never reaches the server. The capture says what happened."""
    seen: list = []

    async def echo(ws):
        try:
            async for m in ws:
                seen.append(m)
                await ws.send(m)
        except websockets.ConnectionClosed:
            pass

    async def main():
        server = await websockets.serve(echo, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        with recorder(tmp_path, "--reverse", f"http://127.0.0.1:{port}") as rec:
            async with websockets.connect(f"ws://127.0.0.1:{rec.port}/") as c:
                await c.send("ok")
                assert await asyncio.wait_for(c.recv(), 10) == "ok"
                await c.send(b"\xff\xfe bad", text=True)
                with pytest.raises(websockets.ConnectionClosed) as info:
                    await asyncio.wait_for(c.recv(), 10)
            await asyncio.sleep(0.2)
            rec.stop()
        server.close()
        return info.value, rec

    closed, rec = asyncio.run(main())
    assert seen == ["ok"]
    assert closed.rcvd is not None and closed.rcvd.code == 1007
    _, records, _ = read_capture(rec.cap)
    ws = channel(records, "ws-1")
    assert [payload_bytes(r) for r in ws if r["type"] == "msg"] == [b"ok", b"ok"]
    assert ws[-1]["type"] == "close" and ws[-1]["code"] == 1007


@pytest.mark.slow
def test_200_connections_x_100_messages_all_delivered_and_recorded(tmp_path):
    n_conn, n_msg = 200, 100

    async def echo(ws):
        async for m in ws:
            await ws.send(m)

    async def client(port: int, i: int) -> list[str]:
        out = []
        async with websockets.connect(f"ws://127.0.0.1:{port}/c{i}", open_timeout=60, ping_interval=None) as c:
            for start in range(0, n_msg, 20):  # pipelined in batches of 20 (bounded backlog)
                for j in range(start, min(start + 20, n_msg)):
                    await c.send(f'{{"conn":{i},"n":{j}}}')
                for _ in range(start, min(start + 20, n_msg)):
                    out.append(await asyncio.wait_for(c.recv(), 60))
        return out

    async def main():
        server = await websockets.serve(echo, "127.0.0.1", 0, backlog=512, ping_interval=None)
        port = server.sockets[0].getsockname()[1]
        with recorder(tmp_path, "--reverse", f"http://127.0.0.1:{port}") as rec:
            results = await asyncio.wait_for(asyncio.gather(*(client(rec.port, i) for i in range(n_conn))), 120)
            await asyncio.sleep(0.5)
            rec.stop(timeout=60)
        server.close()
        return results, rec

    results, rec = asyncio.run(main())
    for i, out in enumerate(results):
        assert out == [f'{{"conn":{i},"n":{j}}}' for j in range(n_msg)]
    _, records, reader = read_capture(rec.cap)
    assert reader.end is not None and reader.end["errors"] == 0
    per_conn: dict[str, list[dict]] = {}
    for r in records:
        if r["type"] == "msg":
            per_conn.setdefault(r["ch"], []).append(r)
    assert len(per_conn) == n_conn
    for msgs in per_conn.values():
        assert len(msgs) == 2 * n_msg
        conn = msgs[0]["json"]["conn"]
        expected = [{"conn": conn, "n": j} for j in range(n_msg)]
        assert [m["json"] for m in msgs if m["dir"] == "c2s"] == expected
        assert [m["json"] for m in msgs if m["dir"] == "s2c"] == expected
    closes = [r for r in records if r["type"] == "close"]
    assert len(closes) == n_conn and all(c["code"] == 1000 for c in closes)


def test_mitmdump_addon_writes_ws_messages_in_batches_exactly_and_in_order(tmp_path):
    """`mitmdump -s` (the addon's own, batching writer): every frame lands in order with its exact
    bytes, a secret is redacted, records reach the file while the connection is still open, and
    the channel's close comes after its messages."""
    import socket
    import subprocess
    import sys
    import time
    from pathlib import Path

    from websockets.sync.client import connect
    from websockets.sync.server import serve

    from wirecap.capture.reader import CaptureReader
    from wirecap.record.ca import ensure_ca

    ensure_ca()
    frames = [b'{"a":1}', b'{ "b" : 2 }', b"plain text", "caf\u00e9 \u2028".encode(), b'{"apiKey":"hunter2-secret"}',
              b"Bearer abcdefgh12345678", bytes(range(256)), b"", *[b'{"i":%d}' % i for i in range(600)]]

    def echo(ws):
        for m in ws:
            ws.send(m)

    server = serve(echo, "127.0.0.1", 0, max_size=None, compression=None, ping_interval=None)
    import threading

    threading.Thread(target=server.serve_forever, daemon=True).start()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cap = tmp_path / "mitm-ws.jsonl"
    home_dir = Path(os.environ["WIRECAP_HOME"])
    addon = Path(__file__).resolve().parents[2] / "wirecap" / "record" / "mitm_addon.py"
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "mitmdump"), "-q", "-s", str(addon), "--set", f"wirecap_out={cap}",
         "--mode", f"reverse:http://127.0.0.1:{server.socket.getsockname()[1]}", "--listen-host", "127.0.0.1",
         "--listen-port", str(port), "--set", f"confdir={home_dir / 'ca'}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "mitmdump did not start"
                time.sleep(0.1)
        with connect(f"ws://127.0.0.1:{port}/ws", max_size=None, compression=None, ping_interval=None) as c:
            for f in frames:
                c.send(f if f == bytes(range(256)) else f.decode())
                assert c.recv(timeout=20) == (f if f == bytes(range(256)) else f.decode())
            # Still open: the batch reaches the file on the writer's timer (liveness bound only).
            deadline = time.monotonic() + 30
            while b'{"i":599}' not in cap.read_bytes():
                assert time.monotonic() < deadline, "batched records never reached the file"
                time.sleep(0.05)
            assert b'"type":"close"' not in cap.read_bytes()
    finally:
        proc.send_signal(signal.SIGINT)
        out = proc.communicate(timeout=30)[0]
        server.shutdown()
    with CaptureReader(cap) as reader:
        records = list(reader)
    assert reader.end is not None and reader.end["errors"] == 0, out
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    ws = [r for r in records if r.get("ch") == "ws-1"]
    assert [r["type"] for r in ws] == ["open", *["msg"] * (2 * len(frames)), "close"]
    msgs = ws[1:-1]
    want = []
    for f in frames:
        want += [("c2s", f), ("s2c", f)]
    got = [(m["dir"], payload_bytes(m)) for m in msgs]
    for (d, f), (gd, g), m in zip(want, got, msgs, strict=True):
        assert gd == d
        if b"hunter2" in f or b"Bearer" in f:
            assert g != f and b"hunter2" not in g and b"abcdefgh12345678" not in g and "redacted" in m["flags"]
        else:
            assert g == f
        assert m.get("binary") is (True if f == bytes(range(256)) else None)
    assert b"hunter2" not in cap.read_bytes() and b"abcdefgh12345678" not in cap.read_bytes()
