"""Attack `wirecap tee`: does what it passed on survive a SIGKILL, an overload, a clean exit, a compressed sink?

Rerunnable against any wirecap (`--wirecap PATH`, e.g. the base checkout's to get the BEFORE numbers):

    .venv/bin/python -m bench.attack_tee [--wirecap PATH] [--kills 50] [--slow-runs 20] [--lines 3000000]

(a) `wirecap tee -o CAP -- PRODUCER` with a producer writing numbered 300-byte JSON lines as fast as it
    can and this script as the consumer (counting the lines it received); SIGKILL of wirecap at a random
    moment; lost = lines the consumer received that are not in the capture. Median and worst, also in
    "reads": one read of the pump is 256 KiB, i.e. 873.8 of these lines.
(b) the same at about 20,000 lines/s: how many runs lost anything.
(c) a clean run of `--lines` lines (output to /dev/null): lines missing from the capture, and whether
    wirecap said anything on stderr.
(d) `.gz` and `.zst` captures SIGKILLed 0.5 s after the file appeared (producer at 1,000 lines/s): file
    size, lines decodable by an independent torn-tolerant decoder, and records `wirecap cat` reads.
(e) compressed size of a clean run (100,000 lines at full speed; 2,000 lines at 1,000 lines/s) vs plain.
(f) throughput of `wirecap tee -o CAP -- cat FILE` (300,000 lines, output to /dev/null) as a ratio to GNU
    `tee FILE2 < FILE` and `cat FILE` measured in the same run (best of 3 each).

Nothing here asserts: it prints a table (and `--json` for the numbers).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

LINE = 300
LINES_PER_READ = 256 * 1024 / LINE

PRODUCER = r"""
import os, sys, time
count, rate = int(sys.argv[1]), float(sys.argv[2])
pad = b"x" * 273
fmt = b'{"n":"%09d","pad":"' + pad + b'"}\n'
i = 0
w = lambda b: os.write(1, b)
def put(data):
    view = memoryview(data)
    while view:
        view = view[w(view):]
try:
    if rate <= 0:
        while count <= 0 or i < count:
            k = 2000 if count <= 0 else min(2000, count - i)
            put(b"".join([fmt % j for j in range(i, i + k)]))
            i += k
    else:
        per = max(1, int(rate / 200))  # a batch every 5 ms
        t0 = time.monotonic()
        while count <= 0 or i < count:
            k = per if count <= 0 else min(per, count - i)
            put(b"".join([fmt % j for j in range(i, i + k)]))
            i += k
            due = t0 + i / rate
            d = due - time.monotonic()
            if d > 0:
                time.sleep(d)
except (BrokenPipeError, OSError):
    pass
"""

_N = re.compile(rb'"n":"(\d+)"')


def producer(count: int, rate: float) -> list[str]:
    return [sys.executable, "-c", PRODUCER, str(count), str(rate)]


def captured_numbers(lines: list[bytes]) -> bytearray | None:
    """Bitmap of line numbers found in stdout msg records (None for no such record)."""
    ns = []
    for line in lines:
        if not line.endswith(b"\n") or b'"type":"msg"' not in line or b'"ch":"stdout"' not in line:
            continue
        m = _N.search(line)
        if m:
            ns.append(int(m.group(1)))
    if not ns:
        return bytearray()
    bits = bytearray(max(ns) + 1)
    for n in ns:
        bits[n] = 1
    return bits


def plain_lines(path: Path) -> list[bytes]:
    with open(path, "rb") as f:
        return f.readlines()


def decode_torn(path: Path) -> bytes:
    """Everything decodable from a gzip/zstd file cut anywhere (members / frames, stops at the damage)."""
    data = path.read_bytes()
    out = []
    if data[:2] == b"\x1f\x8b":
        while data:
            d = zlib.decompressobj(31)
            try:
                out.append(d.decompress(data))
            except zlib.error:
                break
            if not d.eof:
                break
            data = d.unused_data.lstrip(b"\0")
    elif data[:4] == b"\x28\xb5\x2f\xfd":
        import zstandard

        while data:
            d = zstandard.ZstdDecompressor().decompressobj()
            try:
                for i in range(0, len(data), 4096):  # piecewise: a cut frame still gives its whole blocks
                    out.append(d.decompress(data[i:i + 4096]))
                    if d.eof:
                        break
            except zstandard.ZstdError:
                break
            if not d.eof:
                break
            data = d.unused_data
    else:
        out.append(data)
    return b"".join(out)


class Consumer(threading.Thread):
    """Reads a pipe to its end, counting newlines (lines received)."""

    def __init__(self, fd: int) -> None:
        super().__init__(daemon=True)
        self.fd = fd
        self.lines = 0

    def run(self) -> None:
        while True:
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                break
            self.lines += chunk.count(b"\n")


def kill_run(wc: list[str], d: Path, i: int, rate: float, delay: tuple[float, float]) -> dict:
    cap = d / f"kill{i}.jsonl"
    cap.unlink(missing_ok=True)
    p = subprocess.Popen([*wc, "tee", "-o", str(cap), "--", *producer(0, rate)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert p.stdout is not None
    c = Consumer(p.stdout.fileno())
    c.start()
    while not cap.exists() and p.poll() is None:
        time.sleep(0.01)
    time.sleep(random.uniform(*delay))
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    c.join(30)
    p.stdout.close()
    bits = captured_numbers(plain_lines(cap))
    assert bits is not None
    received = c.lines
    have = sum(bits[:received]) if received else 0
    lost = received - have
    cap.unlink(missing_ok=True)
    return {"received": received, "lost": lost}


def attack_kills(wc: list[str], d: Path, kills: int) -> dict:
    runs = [kill_run(wc, d, i, 0, (0.3, 2.0)) for i in range(kills)]
    lost = [r["lost"] for r in runs]
    pct = [100.0 * r["lost"] / r["received"] for r in runs if r["received"]]
    return {"runs": kills, "median_lost": statistics.median(lost), "worst_lost": max(lost),
            "median_lost_pct": statistics.median(pct) if pct else 0.0,
            "worst_reads": max(lost) / LINES_PER_READ,
            "median_received": statistics.median(r["received"] for r in runs)}


def attack_slow(wc: list[str], d: Path, runs: int) -> dict:
    res = [kill_run(wc, d, 1000 + i, 20000, (0.5, 1.5)) for i in range(runs)]
    lossy = [r["lost"] for r in res if r["lost"]]
    return {"runs": runs, "runs_with_loss": len(lossy), "lost_range": [min(lossy), max(lossy)] if lossy else [0, 0],
            "median_received": statistics.median(r["received"] for r in res)}


def attack_clean(wc: list[str], d: Path, n: int) -> dict:
    cap = d / "clean.jsonl"
    cap.unlink(missing_ok=True)
    t0 = time.monotonic()
    p = subprocess.run([*wc, "tee", "-o", str(cap), "--", *producer(n, 0)], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=3600)
    secs = time.monotonic() - t0
    have = 0
    errors = 0
    with open(cap, "rb") as f:
        for line in f:
            if b'"type":"msg"' in line:
                have += 1
            elif b'"type":"error"' in line:
                errors += 1
    cap.unlink(missing_ok=True)
    return {"lines": n, "missing": n - have, "error_records": errors, "exit": p.returncode, "seconds": round(secs, 1),
            "stderr": p.stderr.decode(errors="replace").strip()[:300]}


def attack_compressed(wc: list[str], d: Path, runs: int = 5) -> dict:
    out = {}
    for suffix in (".gz", ".zst"):
        sizes, decodable, read = [], [], []
        for i in range(runs):
            cap = d / f"first{i}.jsonl{suffix}"
            cap.unlink(missing_ok=True)
            p = subprocess.Popen([*wc, "tee", "-o", str(cap), "--", *producer(0, 1000)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while not cap.exists() and p.poll() is None:
                time.sleep(0.005)
            time.sleep(0.5)
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
            sizes.append(cap.stat().st_size)
            text = decode_torn(cap)
            decodable.append(text.count(b"\n"))
            r = subprocess.run([*wc, "cat", str(cap)], capture_output=True, timeout=60)
            read.append(len(r.stdout.splitlines()))
            cap.unlink(missing_ok=True)
        out[suffix] = {"size_median": statistics.median(sizes), "sizes": sizes,
                       "decodable_lines_median": statistics.median(decodable),
                       "cat_lines_median": statistics.median(read), "zero_byte_files": sizes.count(0)}
    return out


def attack_size(wc: list[str], d: Path) -> dict:
    out = {}
    for label, n, rate in (("100k lines full speed", 100_000, 0), ("2k lines at 1k/s", 2_000, 1000)):
        row = {}
        for suffix in ("", ".gz", ".zst"):
            cap = d / f"size.jsonl{suffix}"
            cap.unlink(missing_ok=True)
            subprocess.run([*wc, "tee", "-o", str(cap), "--", *producer(n, rate)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=600, check=True)
            row[suffix or ".jsonl"] = cap.stat().st_size
            cap.unlink()
        out[label] = row
    return out


def attack_throughput(wc: list[str], d: Path, n: int = 300_000, repeat: int = 3) -> dict:
    src = d / "tp.jsonl"
    subprocess.run(producer(n, 0), stdout=open(src, "wb"), check=True)  # noqa: SIM115
    cap = d / "tp-cap.jsonl"

    def best(argv: list[str], stdin: Path | None = None) -> float:
        b = float("inf")
        for _ in range(repeat):
            with open(stdin or "/dev/null", "rb") as inp:
                t0 = time.perf_counter()
                subprocess.run(argv, stdin=inp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
                b = min(b, time.perf_counter() - t0)
        return b

    cat = best(["cat", str(src)])
    gnu = best(["tee", str(d / "gnu.out")], src)
    start = best([*wc, "tee", "-o", str(cap), "--force"])  # process start, on empty input
    cmd = best([*wc, "tee", "-o", str(cap), "--force", "--", "cat", str(src)])
    pipe = best([*wc, "tee", "-o", str(cap), "--force"], src)
    src.unlink()
    return {"lines": n, "cat_s": round(cat, 3), "gnu_tee_s": round(gnu, 3), "start_s": round(start, 3),
            "cmd_s": round(cmd, 3), "pipe_s": round(pipe, 3),
            "cmd_lines_per_s": round(n / max(cmd - start, 1e-6)), "pipe_lines_per_s": round(n / max(pipe - start, 1e-6)),
            "cmd_vs_gnu_tee": round(gnu / cmd, 3), "cmd_vs_cat": round(cat / cmd, 3),
            "pipe_vs_gnu_tee": round(gnu / pipe, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wirecap", default=None, help="wirecap executable (default: this interpreter's -m wirecap)")
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--slow-runs", type=int, default=20)
    ap.add_argument("--lines", type=int, default=3_000_000)
    ap.add_argument("--only", default="abcdef", help="which attacks to run (letters)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    wc = [args.wirecap] if args.wirecap else [sys.executable, "-m", "wirecap"]
    d = Path(tempfile.mkdtemp(prefix="wirecap-attack-tee-"))
    res: dict = {"wirecap": " ".join(wc)}
    try:
        if "a" in args.only:
            res["a_kill_full_speed"] = attack_kills(wc, d, args.kills)
        if "b" in args.only:
            res["b_kill_20k_lines_s"] = attack_slow(wc, d, args.slow_runs)
        if "c" in args.only:
            res["c_clean_exit"] = attack_clean(wc, d, args.lines)
        if "d" in args.only:
            res["d_compressed_first_second"] = attack_compressed(wc, d)
        if "e" in args.only:
            res["e_compressed_size"] = attack_size(wc, d)
        if "f" in args.only:
            res["f_throughput"] = attack_throughput(wc, d)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if args.json:
        print(json.dumps(res, indent=1))
        return
    print(f"wirecap: {res['wirecap']}")
    for key, val in res.items():
        if key == "wirecap":
            continue
        print(f"{key}:")
        for k, v in val.items():
            print(f"  {k:24} {v}")


if __name__ == "__main__":
    main()
