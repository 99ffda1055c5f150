"""Attack (issue 14): peak RSS and wall time of `wirecap diff` on big captures.

A is a long generated Claude Code session on stdout (`bench.bench_report.write_capture`); B is a copy
of A with a few changes (a changed tool command at 1/4, a changed reply text at 3/5, a deleted line at
1/2, an inserted line at 3/4; seq renumbered). `wirecap diff A B` runs at the events level (the default)
and at `--level wire`, under an address-space limit (`--as-limit`, default 5 GB) so an unbounded run
cannot take the machine: such a run is reported as "out of memory". Then the same for a `.zst` pair
(1 GB only, when zstandard is installed) and for A given as a pipe (`-` on standard input, 256 MB).

Peak RSS is the diff process's high-water mark plus that of its forked child (side B is built in a
child on machines with two CPUs): an upper bound of what both held at once. "largest" is the larger
of the two alone.

    .venv/bin/python -m bench.attack_diff_memory [--wirecap PATH] [--sizes 256,1024] [--keep DIR]

`--wirecap` is a `wirecap` entry point of some venv (its interpreter runs the diff); default: this
checkout's. The captures are generated once per `--keep DIR` (default: a temporary folder, removed).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_report import write_capture

MB = 1 << 20

# runs `wirecap.cli.main(argv)` as a library call, so it returns through sys.exit and the atexit hook
# can read both high-water marks (the process's and its forked child's)
_RUNNER = r"""
import atexit, resource, sys
limit = int(sys.argv[2])
if limit:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
def _report():
    # (this process's own high-water mark: ru_maxrss would carry the launching process's RSS over exec)
    me = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    open(sys.argv[1], "w").write(f"{me} {kids}")
atexit.register(_report)
from wirecap.cli import main
main(sys.argv[3:])
"""

_SEQ = re.compile(rb'^\{"seq":(\d+),')


def make_b(a: Path, b: Path) -> None:
    """B: A with a few changes, seq renumbered (byte-level edits, no full re-serialization)."""
    with open(a, "rb") as f:
        total = sum(1 for _ in f)
    change_cmd, drop, change_text, insert = total // 4, total // 2, 3 * total // 5, 3 * total // 4
    done = {"cmd": False, "text": False}
    seq = 0
    with open(a, "rb") as src, open(b, "wb") as dst:
        for n, line in enumerate(src):
            m = _SEQ.match(line)
            if m is None:  # header
                dst.write(line)
                continue
            if n >= change_cmd and not done["cmd"] and b'"name":"Bash"' in line:
                line = re.sub(rb'"command":"make test-(\d+)"', rb'"command":"make test-\1 -v"', line, count=1)
                done["cmd"] = True
            elif n >= change_text and not done["text"] and b'"type":"text"' in line:
                line = re.sub(rb'"text":"', b'"text":"On second thought: ', line, count=1)
                done["text"] = True
            elif n == drop:
                continue
            if n == insert:
                seq += 1
                t = re.search(rb'"t":([0-9.]+)', line).group(1)
                dst.write(b'{"seq":%d,"t":%s,"type":"msg","ch":"stdout","dir":"s2c","json":{"type":"assistant",'
                          b'"message":{"id":"msg_extra","role":"assistant","model":"claude-x","content":'
                          b'[{"type":"text","text":"Let me double-check."}]},"session_id":"s-1"}}\n' % (seq, t))
            seq += 1
            dst.write(b'{"seq":%d,' % seq + line[m.end():])


def write_small(path: Path, target_bytes: int) -> None:
    """A stream of small records (Claude Code partial-message text deltas, about 220 bytes a line):
    memory per item, not per byte, is what such a capture tests."""
    import random

    import orjson

    rng = random.Random(1)
    words = ("the", "agent", "reads", "file", "config", "patch", "test", "passes")
    argv = ["claude", "-p", "x", "--output-format", "stream-json", "--verbose", "--include-partial-messages"]
    with open(path, "wb") as f:
        f.write(orjson.dumps({"wirecap": 1, "type": "header", "id": "small", "created": "2026-01-01T00:00:00.000000Z",
                              "origin": {"tool": "wirecap", "version": "bench", "source": "tee", "argv": argv},
                              "redaction": {"enabled": False}}) + b"\n")
        f.write(orjson.dumps({"seq": 1, "t": 0.0, "type": "open", "ch": "proc", "kind": "process", "argv": argv,
                              "cwd": "/w", "pid": 1}) + b"\n")
        f.write(b'{"seq":2,"t":0.0,"type":"open","ch":"stdout","kind":"pipe","proc":"proc","stream":"stdout"}\n')
        seq, size = 2, 0
        while size < target_bytes:
            seq += 1
            text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 4)))
            line = orjson.dumps({"seq": seq, "t": seq / 1000, "type": "msg", "ch": "stdout", "dir": "s2c", "json": {
                "type": "stream_event", "event": {"type": "content_block_delta", "index": 0,
                                                  "delta": {"type": "text_delta", "text": text}},
                "session_id": "s-1"}}) + b"\n"
            size += len(line)
            f.write(line)
        f.write(b'{"seq":%d,"t":%f,"type":"close","ch":"stdout"}\n' % (seq + 1, seq / 1000))
        f.write(b'{"seq":%d,"t":%f,"type":"end","records":%d}\n' % (seq + 2, seq / 1000, seq + 2))


def zst(src: Path, dst: Path) -> None:
    import zstandard

    with open(src, "rb") as fi, open(dst, "wb") as fo:
        zstandard.ZstdCompressor(level=3, threads=-1).copy_stream(fi, fo)


def measure(python: str, argv: list[str], limit: int, work: Path, stdin: Path | None = None,
            env: dict[str, str] | None = None) -> dict:
    out = work / f"peaks-{os.getpid()}.txt"
    out.unlink(missing_ok=True)
    t0 = time.perf_counter()
    with open(stdin, "rb") if stdin else open(os.devnull, "rb") as inp:
        # (-P: the current folder is not put first on sys.path, so the interpreter's own wirecap runs)
        p = subprocess.run([python, "-P", "-c", _RUNNER, str(out), str(limit), *argv], stdin=inp,
                           capture_output=True, env={**os.environ, **(env or {})},
                           timeout=3600)
    secs = time.perf_counter() - t0
    err = p.stderr.decode("utf-8", "replace")
    row = {"rc": p.returncode, "seconds": secs, "me": None, "kids": None,
           "last": p.stdout.decode("utf-8", "replace").strip().splitlines()[-1:] or [""],
           "err": err.strip().splitlines()[-1:] or [""]}
    if out.exists():
        me, kids = (int(x) * 1024 for x in out.read_text().split())
        row["me"], row["kids"] = me, kids
        out.unlink()
    row["oom"] = p.returncode not in (0, 1) and ("MemoryError" in err or "memory" in err.lower()
                                                or p.returncode < 0)
    row["stdout_lines"] = len(p.stdout.splitlines())
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wirecap", default=str(Path(sys.executable).with_name("wirecap")))
    ap.add_argument("--sizes", default="256,1024", help="capture sizes in MB (comma-separated)")
    ap.add_argument("--as-limit", type=int, default=5_000_000_000, help="RLIMIT_AS of each run, bytes (0: none)")
    ap.add_argument("--keep", help="generate the captures here and keep them (reused when present)")
    ap.add_argument("--no-zst", action="store_true")
    ap.add_argument("--no-pipe", action="store_true")
    ap.add_argument("--small", type=int, default=128,
                    help="MB of a capture of small records (text deltas) diffed against a copy (0: skip)")
    args = ap.parse_args()
    python = str(Path(args.wirecap).with_name("python"))
    sizes = [int(s) for s in args.sizes.split(",") if s]
    work = Path(args.keep).resolve() if args.keep else Path(tempfile.mkdtemp(prefix="wirecap-attack-diff-"))
    work.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, dict]] = []
    try:
        for size in sizes:
            a, b = work / f"a{size}.jsonl", work / f"b{size}.jsonl"
            if not a.exists():
                write_capture(a, size * MB, seed=size)
                make_b(a, b)
            cases = [(f"{size} MB events", ["diff", str(a), str(b)], None),
                     (f"{size} MB wire", ["diff", "--level", "wire", str(a), str(b)], None)]
            if size == max(sizes) and not args.no_zst:
                try:
                    import zstandard  # noqa: F401
                except ImportError:
                    pass
                else:
                    za, zb = work / f"a{size}.jsonl.zst", work / f"b{size}.jsonl.zst"
                    if not za.exists():
                        zst(a, za)
                        zst(b, zb)
                    cases.append((f"{size} MB .zst events", ["diff", str(za), str(zb)], None))
                    cases.append((f"{size} MB .zst wire", ["diff", "--level", "wire", str(za), str(zb)], None))
            if size == min(sizes) and not args.no_pipe:
                cases.append((f"{size} MB events, A on stdin", ["diff", "-", str(b)], a))
            for name, argv, stdin in cases:
                r = measure(python, argv, args.as_limit, work, stdin)
                rows.append((name, r))
                print(_line(name, r), flush=True)
        if args.small:
            sa, sb = work / f"small{args.small}.jsonl", work / f"small{args.small}-copy.jsonl"
            if not sa.exists():
                write_small(sa, args.small * MB)
                shutil.copyfile(sa, sb)
            for level in ("events", "wire"):
                name = f"{args.small} MB small records {level}"
                r = measure(python, ["diff", "--level", level, str(sa), str(sb)], args.as_limit, work)
                rows.append((name, r))
                print(_line(name, r), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print(f"wirecap: {args.wirecap}; RLIMIT_AS {args.as_limit / 1e9:.1f} GB")
    print(f"{'case':28} {'exit':>4} {'wall s':>7} {'peak MB (both)':>15} {'largest MB':>10}  result")
    for name, r in rows:
        print(_line(name, r))


def _line(name: str, r: dict) -> str:
    both = (r["me"] + r["kids"]) / MB if r["me"] is not None else float("nan")
    big = max(r["me"], r["kids"]) / MB if r["me"] is not None else float("nan")
    what = f"out of memory ({r['err'][0][:60]})" if r["oom"] else (r["last"][0] if r["rc"] in (0, 1) else r["err"][0])
    return f"{name:28} {r['rc']:>4} {r['seconds']:7.1f} {both:15.0f} {big:10.0f}  {what[:110]}"


if __name__ == "__main__":
    main()
