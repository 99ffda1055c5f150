"""Special and hostile inputs against every reading command (issue 14): exit code, traceback, memory, /tmp, time.

    .venv/bin/python -m bench.attack_inputs [--wirecap PATH] [--only CMD,...] [--inputs NAME,...] [--json OUT]

Each command runs once per input as a child process with its own TMPDIR (a fresh folder), an address-space
cap (--mem-cap, default 3 GiB: a run that needs more dies with MemoryError, shown as such), a wall-time cap
(--timeout, default 20 s) and a disk cap (--disk-cap, default 2 GiB: the run is killed as soon as its TMPDIR
holds more, so nothing fills the disk). Per run: exit status (or TIMEOUT / DISKCAP), whether a Python
traceback reached stderr, peak RSS of the child (getrusage through wait4), the most bytes its TMPDIR held,
the wall time, and the first line of stderr.

Inputs: /dev/zero; a FIFO nobody writes to; a FIFO whose writer sends a valid capture slowly (over ~2 s:
must work); a 1.1 MB gzip bomb (1.1 GB of zeros) and a zstd bomb (2 GB of zeros); the same bombs behind a valid
header line; a 200 MB line without a newline, and a 300 MB one behind a valid header; 10 MB of NUL
bytes; a directory. What "good" means: exit 2 with one line `wirecap: ...` on stderr and no traceback (the
slow FIFO: exit 0, or 1 for validate/diff findings; `import` may take any bytes as a transcript; a valid
header then a bad line may read as a damaged capture with a warning), in bounded time, memory and /tmp.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOOD = ROOT / "captures" / "codex-0.169.0-hello.jsonl"

COMMANDS: dict[str, list[str]] = {
    "info": ["info", "{X}"],
    "cat": ["cat", "{X}"],
    "convert": ["convert", "{X}"],
    "validate": ["validate", "{X}"],
    "stats": ["stats", "{X}"],
    "diff": ["diff", "{X}", "{G}"],
    "report": ["report", "{X}", "-f", "html", "-o", "{O}.html"],
    "export": ["export", "{X}", "-o", "{O}.har"],
    "annotate": ["annotate", "{X}", "--list"],
    "import": ["import", "{X}", "-o", "{O}.jsonl", "--force", "-q"],
    "replay-exec": ["replay", "exec", "{X}"],
    "replay-serve": ["replay", "serve", "{X}", "--port", "0"],
    "replay-client": ["replay", "client", "{X}", "--url", "ws://127.0.0.1:9/"],
}
MAX_RSS_MB = 1024  # the issue: every command under 1 GB RSS
INPUTS = ("devzero", "fifo", "fifo-slow", "gzbomb", "zstbomb", "hdr+gzbomb", "hdr+zstbomb", "longline", "hdr+longline",
          "nul", "dir")


def _header() -> bytes:
    with open(GOOD, "rb") as f:
        return f.readline()


def make_inputs(folder: Path) -> dict[str, Path]:
    """The attack files (built once per run; ~3 MB of disk plus 2 x 200 MB for the long lines)."""
    paths: dict[str, Path] = {"devzero": Path("/dev/zero"), "dir": folder / "dir"}
    paths["dir"].mkdir()
    zeros = bytes(1 << 20)
    with gzip.open(folder / "gzbomb.gz", "wb", compresslevel=9) as f:
        for _ in range(1050):  # 1.1 GB of zeros -> ~1.1 MB
            f.write(zeros)
    paths["gzbomb"] = folder / "gzbomb.gz"
    with gzip.open(folder / "hdrbomb.gz", "wb", compresslevel=9) as f:
        f.write(_header())
        for _ in range(1050):
            f.write(zeros)
    paths["hdr+gzbomb"] = folder / "hdrbomb.gz"
    import zstandard

    with open(folder / "zstbomb.zst", "wb") as raw, zstandard.ZstdCompressor(level=19).stream_writer(raw) as f:
        for _ in range(2048):  # 2 GiB of zeros
            f.write(zeros)
    paths["zstbomb"] = folder / "zstbomb.zst"
    with open(folder / "hdrbomb.zst", "wb") as raw, zstandard.ZstdCompressor(level=19).stream_writer(raw) as f:
        f.write(_header())
        for _ in range(2048):
            f.write(zeros)
    paths["hdr+zstbomb"] = folder / "hdrbomb.zst"
    chunk = b"a" * (1 << 20)
    for name, head, mib in (("longline", b"", 200), ("hdr+longline", _header(), 300)):
        p = folder / f"{name.replace('+', '_')}.txt"
        with open(p, "wb") as f:
            f.write(head)
            for _ in range(mib):
                f.write(chunk)
        paths[name] = p
    with open(folder / "nul.bin", "wb") as f:
        f.write(bytes(10 << 20))
    paths["nul"] = folder / "nul.bin"
    return paths


def _slow_writer(fifo: Path, data: bytes, stop: threading.Event) -> None:
    """Open the FIFO for writing (waits for the reader) and send `data` in pieces over ~2 s."""
    try:
        fd = os.open(fifo, os.O_WRONLY)
    except OSError:
        return
    try:
        lines = data.splitlines(keepends=True)
        step = max(1, len(lines) // 10)
        time.sleep(1.0)  # the reader is there, the writer has not written yet
        for i in range(0, len(lines), step):
            if stop.is_set():
                return
            os.write(fd, b"".join(lines[i:i + step]))
            time.sleep(0.1)
    except OSError:
        pass
    finally:
        os.close(fd)


def _dir_bytes(folder: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                pass
    return total


def run_one(wirecap: str, cmd: str, inp: str, paths: dict[str, Path], work: Path, *, timeout: float,
            disk_cap: int, mem_cap: int) -> dict[str, object]:
    tmp = work / f"tmp-{cmd}-{inp.replace('+', '_')}"
    tmp.mkdir()
    out = work / f"out-{cmd}-{inp.replace('+', '_')}"
    stop = threading.Event()
    writer = None
    if inp in ("fifo", "fifo-slow"):
        x = work / f"fifo-{cmd}-{inp}"
        os.mkfifo(x)
        if inp == "fifo-slow":
            data = GOOD.read_bytes()
            if cmd == "import":  # a transcript, not a capture (import refuses captures)
                data = b"".join(b'{"type":"text","n":%d}\n' % i for i in range(50))
            writer = threading.Thread(target=_slow_writer, args=(x, data, stop), daemon=True)
            writer.start()
    else:
        x = paths[inp]
    argv = [wirecap] + [a.format(X=x, G=GOOD, O=out) for a in COMMANDS[cmd]]
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONFAULTHANDLER="")
    env.pop("WIRECAP_FIFO_TIMEOUT", None)

    def limits() -> None:
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (mem_cap, mem_cap))

    err_path = work / f"err-{cmd}-{inp.replace('+', '_')}"
    with open(err_path, "wb") as err:
        start = time.monotonic()
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                             env=env, preexec_fn=limits)
        verdict = None
        tmp_max = 0
        rusage = None
        status = 0
        while True:
            pid, status, rusage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            tmp_max = max(tmp_max, _dir_bytes(tmp))
            if tmp_max > disk_cap:
                verdict = "DISKCAP"
            elif time.monotonic() - start > timeout:
                verdict = "TIMEOUT"
            if verdict:
                os.killpg(p.pid, signal.SIGKILL)
                pid, status, rusage = os.wait4(p.pid, 0)
                break
            time.sleep(0.05)
        wall = time.monotonic() - start
        p.returncode = os.waitstatus_to_exitcode(status)
    stop.set()
    if writer is not None:
        # a writer still blocked in open() (the reader never opened the FIFO): release it
        try:
            fd = os.open(x, os.O_RDONLY | os.O_NONBLOCK)
            writer.join(3)
            os.close(fd)
        except OSError:
            pass
    tmp_max = max(tmp_max, _dir_bytes(tmp))
    stderr = err_path.read_bytes().decode("utf-8", "replace")
    shutil.rmtree(tmp, ignore_errors=True)
    for suffix in (".html", ".har", ".jsonl"):
        Path(f"{out}{suffix}").unlink(missing_ok=True)
    first = next((ln for ln in stderr.splitlines() if ln.strip()), "")
    return {
        "cmd": cmd, "input": inp,
        "exit": verdict or p.returncode,
        "traceback": "Traceback (most recent call last)" in stderr or "MemoryError" in stderr,
        "stderr_lines": len([ln for ln in stderr.splitlines() if ln.strip()]),
        "rss_mb": round((rusage.ru_maxrss if rusage else 0) / 1024, 1),
        "tmp_mb": round(tmp_max / (1 << 20), 1),
        "wall_s": round(wall, 2),
        "message": ("MemoryError" if "MemoryError" in stderr else first)[:110],
    }


def ok(row: dict[str, object]) -> bool:
    if row["input"] == "fifo-slow":
        # read to the end: exit 0 (1: findings or differences); serve keeps serving until killed, the
        # client finds no server at its URL (exit 2 after reading the capture)
        expected = {"replay-serve": ("TIMEOUT",), "replay-client": (2,)}.get(str(row["cmd"]), (0, 1))
        return row["exit"] in expected and not row["traceback"]
    if row["traceback"] or row["exit"] in ("TIMEOUT", "DISKCAP") or float(row["rss_mb"]) > MAX_RSS_MB:  # type: ignore[arg-type]
        return False
    if row["exit"] == 2:
        return row["stderr_lines"] == 1
    # Readable after all: import takes any bytes as a transcript; a valid header followed by a bad line is
    # a damaged capture, read with a warning (validate/diff: 1, a finding)
    return row["cmd"] == "import" or str(row["input"]).startswith("hdr+")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wirecap", default=str(ROOT / ".venv" / "bin" / "wirecap"))
    ap.add_argument("--only", default="", help="commands, comma-separated (default: all)")
    ap.add_argument("--inputs", default="", help="inputs, comma-separated (default: all)")
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--disk-cap", type=int, default=2 << 30)
    ap.add_argument("--mem-cap", type=int, default=3 << 30)
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE.json", "AFTER.json"),
                    help="print the two runs side by side (no run)")
    args = ap.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    cmds = [c for c in args.only.split(",") if c] or list(COMMANDS)
    inputs = [i for i in args.inputs.split(",") if i] or list(INPUTS)
    work = Path(tempfile.mkdtemp(prefix="wirecap-attack-"))
    rows = []
    try:
        paths = make_inputs(work)
        print(f"{'command':14} {'input':13} {'exit':>7} {'tb':>3} {'rss MB':>8} {'tmp MB':>8} {'wall s':>7} ok  message")
        for cmd in cmds:
            for inp in inputs:
                row = run_one(args.wirecap, cmd, inp, paths, work, timeout=args.timeout,
                              disk_cap=args.disk_cap, mem_cap=args.mem_cap)
                row["ok"] = ok(row)
                rows.append(row)
                print(f"{cmd:14} {inp:13} {row['exit']!s:>7} {'yes' if row['traceback'] else 'no':>3} "
                      f"{row['rss_mb']:>8} {row['tmp_mb']:>8} {row['wall_s']:>7} {'ok' if row['ok'] else 'BAD'} "
                      f"{row['message']}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    bad = [r for r in rows if not r["ok"]]
    worst = max(rows, key=lambda r: r["rss_mb"]) if rows else None
    print(f"\n{len(rows) - len(bad)}/{len(rows)} ok; tracebacks {sum(1 for r in rows if r['traceback'])}; "
          f"timeouts {sum(1 for r in rows if r['exit'] == 'TIMEOUT')}; disk caps "
          f"{sum(1 for r in rows if r['exit'] == 'DISKCAP')}; max rss {worst['rss_mb'] if worst else 0} MB; "
          f"max tmp {max((r['tmp_mb'] for r in rows), default=0)} MB; max wall {max((r['wall_s'] for r in rows), default=0)} s")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if not bad else 1


def compare(before_path: str, after_path: str) -> int:
    """One row per command x input: exit / traceback / RSS / tmp / wall, before -> after (markdown)."""
    before = {(r["cmd"], r["input"]): r for r in json.loads(Path(before_path).read_text())}
    after = {(r["cmd"], r["input"]): r for r in json.loads(Path(after_path).read_text())}

    def cell(r: dict[str, object] | None) -> str:
        if r is None:
            return "-"
        tb = " TB" if r["traceback"] else ""
        tmp = f" {r['tmp_mb']}MB tmp" if float(r["tmp_mb"]) >= 1 else ""  # type: ignore[arg-type]
        return f"{r['exit']}{tb} {r['rss_mb']:.0f}MB {r['wall_s']:.1f}s{tmp}{'' if ok(r) else ' BAD'}"

    print("| command | input | before (exit rss wall) | after (exit rss wall) |")
    print("|---|---|---|---|")
    for key in sorted(set(before) | set(after), key=lambda k: (list(COMMANDS).index(k[0]) if k[0] in COMMANDS
                                                                else 99, INPUTS.index(k[1]) if k[1] in INPUTS else 99)):
        print(f"| {key[0]} | {key[1]} | {cell(before.get(key))} | {cell(after.get(key))} |")
    for name, rows in (("before", before), ("after", after)):
        vals = list(rows.values())
        print(f"{name}: {sum(1 for r in vals if ok(r))}/{len(vals)} ok, tracebacks "
              f"{sum(1 for r in vals if r['traceback'])}, timeouts {sum(1 for r in vals if r['exit'] == 'TIMEOUT')}, "
              f"disk caps {sum(1 for r in vals if r['exit'] == 'DISKCAP')}, max rss "
              f"{max((r['rss_mb'] for r in vals), default=0)} MB, max tmp {max((r['tmp_mb'] for r in vals), default=0)} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
