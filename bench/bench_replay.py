"""Replay benchmarks: WebSocket messages/s at --speed 0 over loopback, timing fidelity at --speed 1.

The server under test is the real command, `wirecap replay serve CAP` (its own process), playing a
generated capture: one client message followed by many Codebuff response-chunk messages. The client
is a lean asyncio reader over websockets' sans-I/O protocol, so it measures the server, not itself.
Baseline (same run, same client): a bare `websockets` server process that just sends the same
pre-encoded messages in a loop. Fidelity: messages recorded 5 ms apart (with a 50 ms and a 200 ms
gap) replayed at --speed 1; each arrival is compared with its recorded offset after the client
message.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
from websockets.client import ClientProtocol
from websockets.frames import Opcode
from websockets.uri import parse_uri

from bench.common import figure, tempdir
from wirecap.capture.writer import CaptureWriter, default_origin

PROMPT = {"type": "action", "txid": 0, "data": {"type": "user-input", "userInputId": "u-1",
                                                 "messages": [{"role": "user", "content": "go"}]}}

BARE_SERVER = textwrap.dedent('''
    import asyncio, sys
    from websockets.asyncio.server import serve
    msgs = open(sys.argv[1], "rb").read().split(b"\\n")[:-1]
    async def handler(ws):
        await ws.recv()
        for m in msgs:
            await ws.send(m, text=True)
        await ws.wait_closed()
    async def main():
        async with serve(handler, "127.0.0.1", 0, compression=None, ping_interval=None, max_size=None) as s:
            open(sys.argv[2], "w").write(str(s.sockets[0].getsockname()[1]))
            await asyncio.get_running_loop().create_future()
    asyncio.run(main())
''')


def make_capture(path: Path, offsets: list[float]) -> list[bytes]:
    w = CaptureWriter(path, origin=default_origin("bench"))
    w.open("ws-1", "ws", t=0.0, url="ws://127.0.0.1:1/ws", headers={})
    w.msg("ws-1", "c2s", orjson.dumps(PROMPT), t=0.01)
    msgs = [orjson.dumps({"type": "action", "data": {"type": "response-chunk", "userInputId": "u-1",
                                                     "chunk": f" word{i}"}}) for i in range(len(offsets))]
    for data, off in zip(msgs, offsets, strict=True):
        w.msg("ws-1", "s2c", data, t=0.01 + off)
    w.close_channel("ws-1", t=0.02 + (offsets[-1] if offsets else 0), code=1000, reason="", by="client")
    w.close()
    return msgs


class Served:
    """A server process that writes its port to a file; stopped on exit."""

    def __init__(self, argv: list[str], portfile: Path) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not (portfile.exists() and portfile.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError(f"server did not start: {argv}")
            time.sleep(0.02)
        self.port = int(portfile.read_text())
        portfile.unlink()

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


def replay_server(cap: Path, d: Path, speed: float) -> Served:
    pf = d / "serve.port"
    return Served([sys.executable, "-m", "wirecap", "replay", "serve", str(cap), "--speed", str(speed),
                   "--port-file", str(pf), "-q"], pf)


def bare_server(msgs: list[bytes], d: Path) -> Served:
    data = d / "msgs.bin"
    data.write_bytes(b"\n".join(msgs) + b"\n")
    pf = d / "bare.port"
    return Served([sys.executable, "-c", BARE_SERVER, str(data), str(pf)], pf)


async def receive(port: int, n: int) -> tuple[float, list[float]]:
    """Handshake, send the prompt, read n text messages: (seconds, arrival offsets after the send)."""
    loop = asyncio.get_running_loop()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    proto = ClientProtocol(parse_uri(f"ws://127.0.0.1:{port}/ws"), max_size=None)
    req = proto.connect()
    proto.send_request(req)
    writer.write(b"".join(proto.data_to_send()))
    while proto.state.name == "CONNECTING":
        proto.receive_data(await asyncio.wait_for(reader.read(65536), 30))
        proto.events_received()
    t0 = loop.time()
    proto.send_text(orjson.dumps(PROMPT))
    writer.write(b"".join(proto.data_to_send()))
    arrivals: list[float] = []
    while len(arrivals) < n:
        data = await asyncio.wait_for(reader.read(1 << 20), 30)
        if not data:
            break
        now = loop.time() - t0
        proto.receive_data(data)
        arrivals.extend(now for ev in proto.events_received() if getattr(ev, "opcode", None) is Opcode.TEXT)
        out = proto.data_to_send()
        if out:
            writer.write(b"".join(out))
    secs = loop.time() - t0
    writer.close()
    return secs, arrivals


def rate(server: Served, n: int) -> float:
    with server:
        secs, got = asyncio.run(receive(server.port, n))
    if len(got) < n:
        raise RuntimeError(f"received {len(got)} of {n} messages")
    return n / secs


def run(quick: bool = False) -> list[dict]:
    n = 5000 if quick else 50000
    m = 60 if quick else 400
    rows: list[dict] = []
    with tempdir("wirecap-bench-replay-") as d:
        msgs = make_capture(d / "many.jsonl", [0.0] * n)
        reps = 1 if quick else 3
        best = max(rate(replay_server(d / "many.jsonl", d, 0), n) for _ in range(reps))
        base = max(rate(bare_server(msgs, d), n) for _ in range(reps))
        rows.append(figure("replay serve --speed 0, WS messages/s", best, "msg/s",
                           baseline="bare websockets server process, one send() per message", baseline_value=base,
                           target=">= 20000 msg/s", ok=best >= 20000,
                           note=f"{n} Codebuff response-chunk messages after one client message, loopback, "
                                f"best of {reps}; {os.cpu_count()} cores shared"))
        offsets: list[float] = []
        t = 0.0
        for i in range(m):
            t += 0.2 if i == m // 2 else 0.05 if i == m // 4 else 0.005
            offsets.append(round(t, 6))
        make_capture(d / "timed.jsonl", offsets)
        p99s, meds = [], []
        for _ in range(1 if quick else 2):
            with replay_server(d / "timed.jsonl", d, 1) as srv:
                _secs, arrivals = asyncio.run(receive(srv.port, m))
            errs = sorted(abs(a - o) * 1000 for a, o in zip(arrivals, offsets, strict=True))
            p99s.append(errs[min(len(errs) - 1, round(0.99 * (len(errs) - 1)))])
            meds.append(statistics.median(errs))
        p99 = min(p99s)
        rows.append(figure("replay serve --speed 1, timing error p99", p99, "ms",
                           target="< 5 ms", ok=p99 < 5,
                           note=f"{m} messages over {offsets[-1]:.2f}s, arrival vs recorded offset after the "
                                f"client message; median {min(meds):.2f} ms; runs: "
                                + ", ".join(f"{x:.2f}" for x in p99s)))
    return rows


if __name__ == "__main__":
    from bench.common import print_table

    print_table(run(quick="--quick" in sys.argv))
