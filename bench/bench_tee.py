"""`wirecap tee`: recording throughput (vs GNU tee to a file) and added per-line latency (vs a pipe).

Throughput: N lines of 300-byte stream-json (`stream_event` text deltas, as Claude Code prints with
--include-partial-messages) go through `wirecap tee` into a capture, output to /dev/null; the
baseline is GNU `tee FILE` on the same input. Both in pipe mode (`< input`) and command mode
(`-- cat input`). The time wirecap takes on empty input (interpreter start, imports) is subtracted:
it is a fixed cost per run, not a rate; the note gives the rate with it too, and the rate per CPU second
(user+sys of all of wirecap's threads, from getrusage, start-up likewise excluded).

Latency: an emitter writes 300-byte lines at 1,000 lines/s, each starting with its send time
(CLOCK_MONOTONIC ns); a consumer takes the arrival time of each line. The same pair runs joined by
a plain pipe (baseline) and with `wirecap tee -o CAP --` in between, alternately, best of 3 each (the
machine is shared: the least disturbed run is the most telling); the figure is the p99 latency
through wirecap, ok when it exceeds the direct pipe's p99 by less than 1 ms.
"""

from __future__ import annotations

import json
import resource
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson

from bench.common import WIRECAP, figure, tempdir

ROOT = Path(__file__).resolve().parent.parent
EMITTERS = ROOT / "tests" / "emitters"
LINE_SIZE = 300

CONSUMER = r"""
import json, sys, time
lat = []
for line in sys.stdin.buffer:
    now = time.perf_counter_ns()
    lat.append((now - int(line.split(b" ", 1)[0])) / 1e6)
lat.sort()
pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
print(json.dumps({"n": len(lat), "p50": pick(0.5), "p99": pick(0.99), "max": lat[-1]}))
"""


def make_lines(path: Path, n: int) -> int:
    """n stream-json lines of exactly LINE_SIZE bytes (newline included); returns the byte count."""
    with open(path, "wb") as f:
        for i in range(n):
            head = {"type": "stream_event", "event": {"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": ""}}, "session_id": "5f1c0b7e-2d1a", "uuid": f"u{i:09d}"}
            base = len(orjson.dumps(head)) + 1
            head["event"]["delta"]["text"] = ("lorem ipsum dolor sit amet " * 20)[: LINE_SIZE - base]
            line = orjson.dumps(head) + b"\n"
            assert len(line) == LINE_SIZE, len(line)
            f.write(line)
    return n * LINE_SIZE


def _time(argv: list[str], stdin: Path | None, repeat: int) -> tuple[float, float]:
    """Best wall seconds of `repeat` runs, and the CPU seconds (user+sys, all threads) of that run."""
    best, cpu = float("inf"), float("inf")
    for _ in range(repeat):
        with open(stdin or "/dev/null", "rb") as inp:
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(argv, stdin=inp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                           timeout=600)
            wall = time.perf_counter() - t0
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            if wall < best:
                best, cpu = wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return best, cpu


def _count_msgs(cap: Path) -> int:
    with open(cap, "rb") as f:
        return sum(1 for line in f if b'"type":"msg"' in line)


def throughput(d: Path, n: int, repeat: int) -> list[dict]:
    src = d / "lines.jsonl"
    make_lines(src, n)
    cap = d / "cap.jsonl"
    tee_bin = shutil.which("tee")
    out: list[dict] = []
    base = _time([tee_bin, str(d / "gnu.out")], src, repeat)[0] if tee_bin else None
    base_rate = n / base if base else None
    # Interpreter start and imports are a fixed cost, not throughput: measured on empty input, subtracted.
    start, start_cpu = _time([*WIRECAP, "tee", "-o", str(cap), "--force"], None, repeat)
    for label, argv, note in [
        ("pipe mode", [*WIRECAP, "tee", "-o", str(cap), "--force"], "`wirecap tee -o CAP < input`"),
        ("command mode", [*WIRECAP, "tee", "-o", str(cap), "--force", "--", "cat", str(src)],
         "`wirecap tee -o CAP -- cat input`"),
    ]:
        secs, cpu = _time(argv, src, repeat)
        recorded = _count_msgs(cap)
        rate = n / max(secs - start, 1e-6)
        cpu_rate = n / max(cpu - start_cpu, 1e-6)
        out.append(figure(
            f"tee throughput, {label} ({LINE_SIZE}-byte lines)", rate, "lines/s",
            baseline="GNU tee to a file", baseline_value=base_rate, target=">= 200000 lines/s",
            ok=rate >= 200_000 and recorded == n,
            note=f"{note}; {n} lines, {recorded} recorded, best of {repeat}; {secs:.2f} s in all, of which "
                 f"{start:.2f} s process start (excluded; {n / secs:.0f} lines/s with it); "
                 f"per CPU second (all threads, start excluded): {cpu_rate:.0f} lines/CPU-s",
        ))
    return out


def _pipeline_latency(producer: list[str], rate: int, count: int) -> dict:
    consumer = [sys.executable, "-c", CONSUMER]
    cmd = f"{shlex.join(producer)} | {shlex.join(consumer)}"
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, timeout=120 + count / rate, check=True)
    return json.loads(p.stdout.decode().strip().splitlines()[-1])


def latency(d: Path, rate: int, count: int, repeat: int) -> list[dict]:
    """Direct and through-wirecap runs alternate; each keeps its least disturbed (lowest p99) run."""
    emit = [sys.executable, str(EMITTERS / "timed_lines.py"), str(rate), str(count), str(LINE_SIZE)]
    direct = through = None
    for _ in range(repeat):
        a = _pipeline_latency(emit, rate, count)
        b = _pipeline_latency([*WIRECAP, "tee", "-o", str(d / "lat.jsonl"), "--force", "--", *emit], rate, count)
        direct = a if direct is None or a["p99"] < direct["p99"] else direct
        through = b if through is None or b["p99"] < through["p99"] else through
    assert direct is not None and through is not None
    added = through["p99"] - direct["p99"]
    return [
        figure(f"tee latency p99 at {rate} lines/s", through["p99"], "ms",
               baseline="direct pipe p99", baseline_value=direct["p99"], target="added p99 < 1 ms",
               ok=added < 1.0 and through["n"] == count,
               note=f"added p99 {added:.3f} ms; p50 {through['p50']:.3f} vs {direct['p50']:.3f} ms; "
                    f"max {through['max']:.2f} ms; {count} lines, best of {repeat} alternating runs"),
    ]


def run(quick: bool = False) -> list[dict]:
    with tempdir("wirecap-bench-tee-") as d:
        rows = throughput(d, 20_000 if quick else 150_000, 1 if quick else 2)
        rows += latency(d, 1000, 300 if quick else 2000, 1 if quick else 3)
    return rows


if __name__ == "__main__":
    from bench.common import print_table

    print_table(run(quick="--quick" in sys.argv))
