"""WebSocket message latency through `wirecap record`'s proxy, beside plain mitmdump and a direct connection.

A server process streams Codex-like messages (300-byte `response.output_text.delta` events, each carrying
its send time, CLOCK_MONOTONIC ns, taken just before the send) to a client in this process, which takes
each message's arrival time: latency = arrival - send, per message, on one machine clock. The same
server and client run over three paths, with permessage-deflate agreed end to end as Codex does:

- direct: client -> server;
- mitmdump: client -> plain `mitmdump --mode reverse:...` (the same mitmproxy wirecap runs, no addon) -> server;
- addon: the same mitmdump with wirecap's addon loaded (`mitmdump -s $(wirecap addon-path)`: mitmdump's
  default addons plus the recording one, which writes in 50 ms batches);
- wirecap: client -> `wirecap record --reverse ... -o CAP` (the CLI as a user runs it: mitmproxy with
  only the addons a recording proxy needs, plus the recording addon, one write per record) -> server.

Two loads, on one connection: light (100 msg/s, paced by the server) and heavy (as fast as the server
can send: the latency then includes the time a message waits behind the ones before it, so it grows
with the backlog; the achieved rate is in the note). Each round runs the three paths one after the
other (interleaved, so a disturbance of the shared machine hits all three alike); each figure is the
best of the rounds (p50 and p99 separately): the value is wirecap record's, the baseline plain
mitmdump's; the note has all four paths and the latency each proxy adds over direct. Every message
must arrive; the captures must hold each one (`record.ws_latency_recorded`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from bench.common import WIRECAP, figure, wirecap_home

ROOT = Path(__file__).resolve().parent.parent
MITMDUMP = str(Path(sys.executable).parent / "mitmdump")
PATHS = ("direct", "mitmdump", "addon", "wirecap")
RECORDING = ("addon", "wirecap")

# The server: on "go N RATE" it sends N messages (RATE per second, 0 = as fast as it can), then "done N".
SERVER = r"""
import json, socket, sys, time
from websockets.sync.server import serve
pad = "x" * 160

def handler(ws):
    ws.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for m in ws:
        _, n, rate = m.split()
        n, rate = int(n), float(rate)
        gap = 1.0 / rate if rate else 0.0
        t0 = time.monotonic()
        for i in range(n):
            if gap:
                wait = t0 + i * gap - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            ws.send('{"type":"response.output_text.delta","sequence_number":%d,"item_id":"msg_0123456789abcdef",'
                    '"output_index":0,"content_index":0,"delta":"%s","sent_ns":%d}' % (i, pad, time.monotonic_ns()))
        ws.send("done %d" % n)

with serve(handler, "127.0.0.1", 0, compression="deflate", max_size=None, ping_interval=None) as server:
    print(server.socket.getsockname()[1], flush=True)
    server.serve_forever()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"nothing listens on {port} ({proc.args[:3]})")
        time.sleep(0.05)


@contextlib.contextmanager
def _process(argv: list[str], *, cwd: Path, env: dict[str, str] | None = None, stdout=subprocess.DEVNULL,
             stop: int = signal.SIGINT) -> Iterator[subprocess.Popen]:
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=stdout,
                            stderr=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        proc.send_signal(stop)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@contextlib.contextmanager
def server(home: Path) -> Iterator[int]:
    with _process([sys.executable, "-c", SERVER], cwd=home, stdout=subprocess.PIPE, stop=signal.SIGTERM) as p:
        assert p.stdout is not None
        yield int(p.stdout.readline())


@contextlib.contextmanager
def path(kind: str, target: int, home: Path, cap: Path) -> Iterator[int]:
    """The port a client connects to for `kind` (direct: the server's own)."""
    if kind == "direct":
        yield target
        return
    port = _free_port()
    if kind in ("mitmdump", "addon"):
        argv = [MITMDUMP, "-q", "--mode", f"reverse:http://127.0.0.1:{target}", "--listen-host", "127.0.0.1",
                "--listen-port", str(port), "--set", f"confdir={home / 'ca'}"]
        if kind == "addon":
            argv += ["-s", str(ROOT / "wirecap" / "record" / "mitm_addon.py"), "--set", f"wirecap_out={cap}",
                     "--set", "wirecap_force=true"]
    else:
        argv = [*WIRECAP, "record", "-q", "--force", "-o", str(cap), "--reverse", f"http://127.0.0.1:{target}",
                "--listen", f"127.0.0.1:{port}"]
    with _process(argv, cwd=home, env={**os.environ, "WIRECAP_HOME": str(home)}) as p:
        _wait_port(port, p)
        yield port


def stream(port: int, n: int, rate: float) -> list[float]:
    """Ask for n messages at `rate`; the latency of each (seconds)."""
    from websockets.sync.client import connect

    lat: list[float] = []
    with connect(f"ws://127.0.0.1:{port}/v1/responses", compression="deflate", max_size=None,
                 open_timeout=30, ping_interval=None) as c:
        c.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if c.response.headers.get("Sec-WebSocket-Extensions", "").split(";")[0] != "permessage-deflate":
            raise RuntimeError("permessage-deflate was not agreed")
        c.send(f"go {n} {rate}")
        while True:
            m = c.recv(timeout=120)
            now = time.monotonic_ns()
            if m.startswith("done"):
                break
            lat.append((now - int(m.rsplit(":", 1)[1].rstrip("}"))) / 1e9)
    if len(lat) != n:
        raise RuntimeError(f"{len(lat)} of {n} messages arrived")
    return lat


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))]


def _recorded(cap: Path) -> int:
    from wirecap.capture.reader import CaptureReader

    with CaptureReader(cap) as r:
        return sum(1 for rec in r if rec["type"] == "msg" and rec.get("dir") == "s2c")


def measure(home: Path, loads: dict[str, tuple[int, float]], rounds: int) -> dict:
    """{load: {path: {"p50": [...per round], "p99": [...], "rate": [...]}}}, plus what the captures held."""
    out: dict = {load: {p: {"p50": [], "p99": [], "rate": []} for p in PATHS} for load in loads}
    recorded = expected = 0
    with server(home) as sport:
        for r in range(rounds):
            for kind in PATHS:
                cap = home / f"cap-{kind}-{r}.jsonl"
                with path(kind, sport, home, cap) as port:
                    stream(port, 20, 0)  # warm-up: first connection, imports, deflate contexts
                    for load, (n, rate) in loads.items():
                        t0 = time.monotonic()
                        lat = stream(port, n, rate)
                        took = time.monotonic() - t0
                        d = out[load][kind]
                        d["p50"].append(_pct(lat, 0.50))
                        d["p99"].append(_pct(lat, 0.99))
                        d["rate"].append(n / took)
                if kind in RECORDING:
                    recorded += _recorded(cap)
                    expected += 20 + 1 + sum(n + 1 for n, _ in loads.values())  # + the "done" lines
    out["_recorded"] = (recorded, expected)
    return out


def figures(res: dict, loads: dict[str, tuple[int, float]], rounds: int) -> list[dict]:
    """Per load and percentile: the latency per message through wirecap record beside plain mitmdump's; the
    other paths and what each adds over direct in the note. Heavy: the rates too."""
    rows: list[dict] = []
    recorded, expected = res["_recorded"]
    for load, (n, rate) in loads.items():
        best = {p: {q: min(res[load][p][q]) * 1000 for q in ("p50", "p99")} for p in PATHS}
        what = f"{n} messages at {rate:.0f}/s" if rate else f"{n} messages as fast as the server sends"
        for q in ("p50", "p99"):
            d, m, a, w = (best[p][q] for p in PATHS)
            note = (f"{q} latency server send -> client receive, {what}, one connection, permessage-deflate, best "
                    f"of {rounds} interleaved rounds: wirecap record {w:.3f} ms, mitmdump -s addon {a:.3f} ms, "
                    f"plain mitmdump {m:.3f} ms, direct {d:.3f} ms; added over direct: wirecap record "
                    f"{w - d:+.3f} ms, plain mitmdump {m - d:+.3f} ms")
            light = bool(rate)
            rows.append(figure(f"record.ws_latency_{load}_{q}", w, "ms", baseline="plain mitmdump", baseline_value=m,
                               target="<= plain mitmdump + 0.1 ms" if light and q == "p50" else "info",
                               ok=(w - m <= 0.1) if light and q == "p50" else None, note=note))
        if not rate:
            rates = {p: max(res[load][p]["rate"]) for p in PATHS}
            rows.append(figure(f"record.ws_rate_{load}", rates["wirecap"], "msg/s", baseline="plain mitmdump",
                               baseline_value=rates["mitmdump"], target="info", ok=None,
                               note=f"{what}: messages/s received through wirecap record (mitmdump -s addon "
                                    f"{rates['addon']:.0f}, direct {rates['direct']:.0f}); under this flood a "
                                    f"message's latency is mostly its wait behind the backlog"))
    rows.append(figure("record.ws_latency_recorded", recorded, "msgs", baseline="sent", baseline_value=expected,
                       target="all", ok=recorded == expected,
                       note="server messages in the captures of the recording paths (wirecap record, mitmdump -s "
                            "addon), all rounds, warm-ups included"))
    return rows


def run(quick: bool = False) -> list[dict]:
    if not os.path.exists(MITMDUMP) or not shutil.which(sys.executable):
        return [figure("record.ws_latency", 0, "", note="mitmdump not found", ok=None)]
    loads = {"light": (100 if quick else 300, 100.0), "heavy": (1000 if quick else 3000, 0.0)}
    rounds = 1 if quick else 3
    with wirecap_home("wirecap-bench-wslat-") as home:
        return figures(measure(home, loads, rounds), loads, rounds)

if __name__ == "__main__":
    from bench.common import print_table

    print_table(run(quick="--quick" in sys.argv))
