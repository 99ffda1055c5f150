"""Recorder overhead: real `mitmdump -s <wirecap addon>` against plain `mitmdump`, same run.

- CPU per WebSocket message: proxy process CPU time (/proc/PID/stat) over N client messages, each
  echoed by the server (so 2N messages cross the proxy); best of interleaved rounds.
- Memory growth over many messages on one connection with the addon (mitmproxy alone keeps every
  message of a live connection; the addon drops them once written).
- SSE event delay: server send -> client parse, direct, through plain mitmdump (streaming enabled,
  else it buffers the whole response) and through the addon; the addon's added delay is the
  difference of medians against plain streaming mitmdump.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from bench.common import figure, wirecap_home

ROOT = Path(__file__).resolve().parent.parent
MITMDUMP = str(Path(sys.executable).parent / "mitmdump")
CLK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
MSG = ('{"type":"action","data":{"type":"response-chunk","userInputId":"mc-input-0123456789",'
       '"chunk":"Hello from the benchmark, a typical streamed chunk"}}')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK  # utime + stime


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE


@contextlib.contextmanager
def mitmdump(target_port: int, home: Path, *, addon: bool, cap: Path | None = None, extra: tuple[str, ...] = (),
             wrapper: tuple[str, ...] = (), start_timeout: float = 30, stop_timeout: float = 20,
             env: dict[str, str] | None = None) -> Iterator[tuple[int, int]]:
    """A real `mitmdump -q` reverse proxy to 127.0.0.1:target_port, with or without the addon, run
    under `wrapper` (e.g. valgrind) if given; yields (port, pid) and stops it with SIGINT."""
    port = _free_port()
    argv = [*wrapper, MITMDUMP, "-q", "--mode", f"reverse:http://127.0.0.1:{target_port}", "--listen-host",
            "127.0.0.1", "--listen-port", str(port), "--set", f"confdir={home / 'ca'}", *extra]
    if addon:
        argv += ["-s", str(ROOT / "wirecap" / "record" / "mitm_addon.py"), "--set", f"wirecap_out={cap}",
                 "--set", "wirecap_force=true"]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=str(home), env=env)
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mitmdump did not start: {argv}")
            time.sleep(0.05)
        yield port, proc.pid
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(stop_timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


# --- WebSocket servers/clients (websockets' threaded API: the bench process is not measured) -------
@contextlib.contextmanager
def ws_server(echo: bool) -> Iterator[int]:
    from websockets.sync.server import serve

    def handler(ws):
        count = 0
        for m in ws:
            if echo:
                ws.send(m)
            elif m == "count?":
                ws.send(str(count))
            else:
                count += 1

    server = serve(handler, "127.0.0.1", 0, max_size=None, compression=None, ping_interval=None)
    th = threading.Thread(target=server.serve_forever, daemon=True)
    th.start()
    try:
        yield server.socket.getsockname()[1]
    finally:
        server.shutdown()
        th.join(10)


def ws_echo_rounds(port: int, n: int, conns: int = 4, batch: int = 50) -> None:
    """`conns` connections in threads, each sends n/conns messages in batches and reads the echoes."""
    from websockets.sync.client import connect

    def one() -> None:
        with connect(f"ws://127.0.0.1:{port}/ws", max_size=None, compression=None, open_timeout=30,
                     ping_interval=None) as c:
            left = n // conns
            while left:
                k = min(batch, left)
                for _ in range(k):
                    c.send(MSG)
                for _ in range(k):
                    c.recv(timeout=30)
                left -= k

    threads = [threading.Thread(target=one) for _ in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)


def ws_one_way(port: int, n: int, on_progress=None) -> None:
    """n client messages on one connection; every 1000 a round trip bounds the backlog in the proxy."""
    from websockets.sync.client import connect

    with connect(f"ws://127.0.0.1:{port}/ws", max_size=None, compression=None, open_timeout=30,
                 ping_interval=None) as c:
        sent = 0
        while sent < n:
            k = min(1000, n - sent)
            for _ in range(k):
                c.send(MSG)
            sent += k
            c.send("count?")
            got = int(c.recv(timeout=120))
            if got != sent:
                raise RuntimeError(f"server got {got} of {sent} messages")
            if on_progress is not None:
                on_progress(sent)


def bench_ws_cpu(home: Path, n: int, rounds: int) -> list[dict]:
    per: dict[bool, list[float]] = {False: [], True: []}
    with ws_server(echo=True) as sport:
        for _ in range(rounds):
            for addon in (False, True):
                with mitmdump(sport, home, addon=addon, cap=home / "ws.jsonl") as (port, pid):
                    ws_echo_rounds(port, 200)  # warm up (imports, first connection)
                    c0 = _cpu_seconds(pid)
                    ws_echo_rounds(port, n)
                    per[addon].append((_cpu_seconds(pid) - c0) / (2 * n))
    plain, with_addon = min(per[False]), min(per[True])
    ratio = with_addon / plain if plain else None
    paired = sorted(a / p for p, a in zip(per[False], per[True], strict=True) if p)
    spread = (f"; per-round ratios {paired[0]:.2f}-{paired[-1]:.2f}, median {statistics.median(paired):.2f}"
              if paired else "")
    return [figure("record.ws_cpu_per_message", with_addon * 1e6, "us/msg", baseline="plain mitmdump",
                   baseline_value=plain * 1e6, target="<= 1.10x plain mitmdump",
                   ok=None if ratio is None else ratio <= 1.10,
                   note=f"{2 * n} messages (echoed), best of {rounds} interleaved rounds; proxy CPU from /proc"
                        + spread)]


def bench_ws_memory(home: Path, n: int) -> list[dict]:
    with ws_server(echo=False) as sport, mitmdump(sport, home, addon=True, cap=home / "mem.jsonl") as (port, pid):
        samples: dict[int, int] = {}
        warm = min(5000, n // 10)

        def progress(i: int) -> None:
            if i in (warm, n):
                samples[i] = _rss(pid)

        ws_one_way(port, n, progress)
        growth = samples[n] - samples[warm]
    return [figure("record.ws_memory_growth", growth / 2**20, "MB", target="< 10 MB",
                   ok=growth < 10 * 2**20,
                   note=f"RSS growth of mitmdump -s addon from message {warm} to {n} on one connection")]


# --- SSE ------------------------------------------------------------------------------------------
class SSEServer:
    """HTTP/1.1 server sending `n` events `gap` s apart, chunked; records each event's send time."""

    def __init__(self, n: int, gap: float) -> None:
        self.n, self.gap = n, gap
        self.sent: list[list[float]] = []
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            buf = b""
            while b"\r\n\r\n" not in buf:
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
            times: list[float] = []
            self.sent.append(times)
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
                         b"transfer-encoding: chunked\r\n\r\n")
            try:
                for i in range(self.n):
                    ev = f'event: delta\ndata: {{"i":{i},"text":"hello"}}\n\n'.encode()
                    times.append(time.perf_counter())
                    conn.sendall(b"%x\r\n%s\r\n" % (len(ev), ev))
                    time.sleep(self.gap)
                conn.sendall(b"0\r\n\r\n")
            except OSError:  # the client read what it wanted and left (warm-up rounds)
                pass

    def close(self) -> None:
        self.sock.close()


def sse_client(port: int, n: int) -> list[float]:
    """Arrival time of each event (parsed from the de-chunked stream)."""
    from wirecap.capture.sse import SSEParser

    arrivals: list[float] = []
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"GET /v1/stream HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\r\n")
        f = s.makefile("rb")
        while f.readline() not in (b"\r\n", b""):
            pass
        parser = SSEParser()
        while len(arrivals) < n:
            size = int(f.readline().strip() or b"0", 16)
            if size == 0:
                break
            chunk = f.read(size)
            f.read(2)
            for _ in parser.feed(chunk):
                arrivals.append(time.perf_counter())
    return arrivals


def _delays(server: SSEServer, port: int, n: int) -> list[float]:
    arrivals = sse_client(port, n)
    sent = server.sent[-1]
    return [a - s for a, s in zip(arrivals, sent, strict=False)]


def bench_sse(home: Path, n: int, gap: float, rounds: int) -> list[dict]:
    server = SSEServer(n, gap)
    try:
        direct, plain, addon = [], [], []
        for _ in range(rounds):
            direct += _delays(server, server.port, n)
            with mitmdump(server.port, home, addon=False, extra=("--set", "stream_large_bodies=1")) as (port, _):
                _delays(server, port, 3)  # warm up
                plain += _delays(server, port, n)
            with mitmdump(server.port, home, addon=True, cap=home / "sse.jsonl") as (port, _):
                _delays(server, port, 3)
                addon += _delays(server, port, n)
    finally:
        server.close()
    md, mp, ma = (statistics.median(x) * 1000 for x in (direct, plain, addon))
    added = ma - mp
    return [
        figure("record.sse_event_delay_added", added, "ms", baseline="plain mitmdump (streaming)",
               baseline_value=mp, target="< 1 ms median", ok=added < 1.0,
               note=f"median delay send->parse: addon {ma:.3f} ms, plain mitmdump {mp:.3f} ms, direct {md:.3f} ms; "
                    f"{len(addon)} events"),
        figure("record.sse_event_delay_vs_direct", ma - md, "ms", baseline="direct (no proxy)",
               baseline_value=md, target="info", ok=None,
               note="whole proxy path (mitmproxy + addon) minus direct, median"),
    ]


def run(quick: bool = False) -> list[dict]:
    if not os.path.exists(MITMDUMP) or not shutil.which(sys.executable):
        return [figure("record", 0, "", note="mitmdump not found", ok=None)]
    with wirecap_home("wirecap-bench-record-") as home:
        rows: list[dict] = []
        rows += bench_ws_cpu(home, 1000 if quick else 3000, 1 if quick else 5)  # best of 5: two processes, noisy
        rows += bench_ws_memory(home, 10_000 if quick else 100_000)
        rows += bench_sse(home, 10 if quick else 40, 0.02, 1)
        return rows

if __name__ == "__main__":
    from bench.common import print_table

    print_table(run(quick="--quick" in sys.argv))
