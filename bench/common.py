"""Helpers shared by the benchmark modules: temp dirs, timing, peak RSS, figures, the table.

A figure is a plain dict (the runner reads nothing else):
`{"name", "value", "unit", "baseline", "baseline_value", "ratio", "target", "ok", "note"}`.
Build it with `figure(...)` so the ratio is computed the same way everywhere.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).resolve().parent.parent
# The CLI as a subprocess argv prefix (same interpreter as the benchmark, so the same venv).
WIRECAP = [sys.executable, "-m", "wirecap"]
GNU_TIME = next((t for t in ("/usr/bin/time",) if os.access(t, os.X_OK)), None)
FIELDS = ("name", "value", "unit", "baseline", "baseline_value", "ratio", "target", "ok", "note")


@contextlib.contextmanager
def tempdir(prefix: str = "wirecap-bench-") -> Iterator[Path]:
    """A fresh directory removed afterwards (generated inputs never land in the repository)."""
    d = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def wirecap_home(prefix: str) -> Iterator[Path]:
    """A throwaway WIRECAP_HOME (set in this process's environment, restored after) holding wirecap's CA:
    what the recording benches need before they start a proxy."""
    saved = os.environ.get("WIRECAP_HOME")
    with tempdir(prefix) as home:
        os.environ["WIRECAP_HOME"] = str(home)
        try:
            from wirecap.record.ca import ensure_ca

            ensure_ca()
            yield home
        finally:
            if saved is None:
                os.environ.pop("WIRECAP_HOME", None)
            else:
                os.environ["WIRECAP_HOME"] = saved


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    """Best wall-clock seconds of `repeat` calls: the least disturbed by the other users of the cores."""
    best = float("inf")
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


@dataclass
class Measured:
    """One finished subprocess: wall seconds, peak resident set size, exit status and output."""

    seconds: float
    peak_rss: int  # bytes: the largest resident set of the command (or of a descendant it waited for)
    returncode: int
    stdout: bytes
    stderr: bytes
    cpu: float = 0.0  # user + system seconds of the command and the descendants it waited for


def run_measured(argv: Sequence[str], *, stdin: bytes | str | Path | None = None, cwd: str | Path | None = None,
                 env: dict[str, str] | None = None, timeout: float = 300, capture: bool = True,
                 check: bool = True) -> Measured:
    """Run `argv` to completion and report its time and peak RSS (kernel high-water marks, no sampling).

    `stdin` is bytes to feed, or a path opened as the child's stdin (no Python copy in between).
    Output goes to temp files (not pipes) so a chatty child never blocks; `capture=False` discards it.
    Peak RSS comes from GNU time when installed: Linux carries the forking parent's RSS over exec into
    the child's ru_maxrss, so wait4 alone would report at least this Python process's size.
    """
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(tempfile.TemporaryFile()) if capture else subprocess.DEVNULL
        err = stack.enter_context(tempfile.TemporaryFile())
        if isinstance(stdin, (str, Path)):
            inp = stack.enter_context(open(stdin, "rb"))
        elif isinstance(stdin, bytes):
            inp = stack.enter_context(tempfile.TemporaryFile())
            inp.write(stdin)
            inp.seek(0)
        else:
            inp = subprocess.DEVNULL
        rss_file = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "maxrss"
        prefix = [GNU_TIME, "-f", "%M", "-o", str(rss_file)] if GNU_TIME else []
        t0 = time.perf_counter()
        proc = subprocess.Popen([*prefix, *map(str, argv)], stdin=inp, stdout=out, stderr=err, cwd=cwd, env=full_env,
                                start_new_session=True)
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, 9)
                os.wait4(proc.pid, 0)
                raise TimeoutError(f"{argv[0]} did not finish within {timeout:.0f} s")
            time.sleep(0.002)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        stdout = b""
        if capture:
            out.seek(0)
            stdout = out.read()
        err.seek(0)
        stderr = err.read()
        peak_kb = usage.ru_maxrss
        if GNU_TIME and rss_file.exists():
            last = rss_file.read_text().strip().splitlines()[-1:]  # "Command exited with non-zero status" first
            if last and last[0].isdigit():
                peak_kb = int(last[0])
    m = Measured(seconds, peak_kb * 1024, proc.returncode, stdout, stderr, usage.ru_utime + usage.ru_stime)
    if check and m.returncode != 0:
        tail = stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise RuntimeError(f"{' '.join(map(str, argv[:4]))} exited {m.returncode}: {' | '.join(tail)}")
    return m


def best_run(argv: Sequence[str], repeat: int = 3, **kw) -> Measured:
    """The fastest of `repeat` runs of `run_measured` (its peak RSS is the largest seen)."""
    runs = [run_measured(argv, **kw) for _ in range(max(1, repeat))]
    best = min(runs, key=lambda r: r.seconds)
    best.peak_rss = max(r.peak_rss for r in runs)
    return best


def ratio(value: float | None, baseline_value: float | None) -> float | None:
    """value / baseline, or None when either is missing or the baseline is zero."""
    if value is None or baseline_value is None or baseline_value == 0:
        return None
    return value / baseline_value


def figure(name: str, value: float, unit: str, *, baseline: str = "", baseline_value: float | None = None,
           target: str = "", ok: bool | None = None, note: str = "") -> dict:
    """One row of the benchmark table, ratio computed as value / baseline_value."""
    return {"name": name, "value": float(value), "unit": unit, "baseline": baseline,
            "baseline_value": None if baseline_value is None else float(baseline_value),
            "ratio": ratio(value, baseline_value), "target": target, "ok": ok, "note": note}


def throughput(nbytes: int, seconds: float) -> float:
    """MB/s (10^6 bytes), the unit every throughput figure uses."""
    return nbytes / 1e6 / seconds if seconds > 0 else float("inf")


def mb(nbytes: int) -> float:
    return nbytes / 1e6


def _fmt(v: object) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        if v == 0 or 0.01 <= abs(v) < 1e6:
            return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"
        return f"{v:.3g}"
    return str(v)


def table_rows(rows: list[dict]) -> list[list[str]]:
    """The printed form of each figure: figure, value, baseline (same run), ratio, target, ok."""
    out = []
    for r in rows:
        value = f"{_fmt(r.get('value'))} {r.get('unit', '')}".strip()
        if r.get("error"):
            value = "ERROR"
        base = r.get("baseline") or ""
        if r.get("baseline_value") is not None:
            base = f"{base} = {_fmt(r['baseline_value'])}".strip(" =")
        rt = r.get("ratio")
        out.append([r.get("name", "?"), value, base or "-", "-" if rt is None else f"{rt:.2f}x",
                    r.get("target") or "-", _fmt(r.get("ok"))])
    return out


HEADERS = ["figure", "value", "baseline (same run)", "ratio", "target", "ok"]


def format_table(rows: list[dict]) -> str:
    return tabulate(table_rows(rows), headers=HEADERS, tablefmt="github", disable_numparse=True)


def print_table(rows: list[dict], file=None) -> None:
    print(format_table(rows), file=file or sys.stdout)
