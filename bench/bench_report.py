"""Benchmark `wirecap report --format html` on 50 MB captures (`--mb 200` for 200 MB), and the page's first render.

- Generate: a Claude Code stream-json session on a process's stdout (text, tool calls, 2-8 KB tool
  results, usage) written straight in capture format v1, about 50 MB (5 MB with quick=True); and the
  same size of HTTP exchanges (Claude Code's request and SSE answer repeated on channels http-1..N:
  `bench/attack_memory.py`'s generator).
- `wirecap report CAP -f html -o OUT` in a subprocess, per capture: under 10 s, a page of at most 10 MB,
  at most 300 MB peak RSS (the bounds a report keeps at any size). Baseline in the same run: a bare
  orjson loop that reads and re-serializes every line (the least any report must do).
- First render: the report opened from a file:// URL in headless Chromium (DevTools protocol); the
  figure is `performance.now()` when the page's script has rendered the first page of messages
  (navigation start = 0). Target under 2 s. Baseline: the same browser loading an empty page.
  Without Chromium the row is reported as not measured, with the reason.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

import orjson

from bench.common import ROOT, WIRECAP, figure, mb, run_measured, tempdir
from wirecap.capture.redact import Redactor

TARGET_GEN_S = 10.0
TARGET_PAGE_MB = 10.0  # the page stays this small whatever the capture's size (report/embed.py)
TARGET_RSS_MB = 300.0
TARGET_RENDER_S = 2.0


def write_capture(path: Path, target_bytes: int, seed: int = 7) -> int:
    """A long agent session on stdout, about `target_bytes`; returns the number of records."""
    rng = random.Random(seed)
    words = ("the", "agent", "reads", "file", "config", "patch", "test", "passes", "error", "retry", "build", "ok")
    header = {"wirecap": 1, "type": "header", "id": "bench-report", "created": "2026-01-01T00:00:00.000000Z",
              "origin": {"tool": "wirecap", "version": "bench", "source": "bench"}, "redaction": Redactor().policy()}
    seq = 0
    t = 0.0
    size = 0
    with open(path, "wb") as f:
        def rec(obj: dict) -> None:
            nonlocal seq, size
            seq += 1
            obj = {"seq": seq, "t": round(t, 6), **obj}
            line = orjson.dumps(obj) + b"\n"
            size += len(line)
            f.write(line)

        f.write(orjson.dumps(header) + b"\n")
        rec({"type": "open", "ch": "proc", "kind": "process", "argv": ["claude", "-p", "fix it"], "cwd": "/w", "pid": 1})
        rec({"type": "open", "ch": "stdout", "kind": "pipe", "proc": "proc", "stream": "stdout"})
        rec({"type": "msg", "ch": "stdout", "dir": "s2c", "json": {
            "type": "system", "subtype": "init", "session_id": "s-1", "model": "claude-x", "cwd": "/w", "tools": ["Bash"]}})
        k = 0
        while size < target_bytes:
            k += 1
            t += rng.uniform(0.001, 0.05)
            mid = f"msg_{k:020d}"
            text = " ".join(rng.choice(words) for _ in range(rng.randint(20, 80)))
            usage = {"input_tokens": 1000 + k, "output_tokens": 1}
            rec({"type": "msg", "ch": "stdout", "dir": "s2c", "json": {"type": "assistant", "message": {
                "id": mid, "role": "assistant", "model": "claude-x", "content": [{"type": "text", "text": text}],
                "usage": usage}, "session_id": "s-1"}})
            tid = f"toolu_{k:020d}"
            rec({"type": "msg", "ch": "stdout", "dir": "s2c", "json": {"type": "assistant", "message": {
                "id": mid, "role": "assistant", "model": "claude-x", "content": [
                    {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": f"make test-{k}"}}],
                "usage": usage}, "session_id": "s-1"}})
            out = "\n".join(" ".join(rng.choice(words) for _ in range(12)) for _ in range(rng.randint(30, 120)))
            t += rng.uniform(0.01, 0.2)
            rec({"type": "msg", "ch": "stdout", "dir": "s2c", "json": {"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tid, "content": out}]}, "session_id": "s-1"}})
        rec({"type": "msg", "ch": "stdout", "dir": "s2c", "json": {
            "type": "result", "subtype": "success", "is_error": False, "duration_ms": int(t * 1000), "session_id": "s-1",
            "total_cost_usd": 1.0, "usage": {"input_tokens": 1, "output_tokens": 1}}})
        rec({"type": "close", "ch": "stdout", "bytes": size, "lines": k * 3})
        rec({"type": "close", "ch": "proc", "exit_code": 0, "duration": t})
        rec({"type": "end", "records": seq + 1, "bytes": size, "errors": 0, "duration": t})
    return seq


def orjson_loop(path: Path) -> float:
    t0 = time.perf_counter()
    with open(path, "rb") as f, open("/dev/null", "wb") as out:
        for line in f:
            out.write(orjson.dumps(orjson.loads(line)))
    return time.perf_counter() - t0


def first_render(html: Path, empty: Path) -> tuple[float | None, float | None, str]:
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from cdp import Browser, find_chromium
    finally:
        sys.path.pop(0)
    binary = find_chromium()
    if binary is None:
        return None, None, "not measured: chromium is not installed (apt-get install chromium)"
    try:
        with Browser(binary, timeout=60) as b:
            b.navigate(empty.as_uri(), timeout=60)
            base = b.evaluate("performance.now()")
            b.navigate(html.as_uri(), timeout=120)
            ready = b.evaluate("window.wirecapReport ? window.wirecapReport.ready : null")
            fcp = b.evaluate("(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || null")
            errors = b.js_errors()
    except Exception as e:  # noqa: BLE001 - a benchmark reports, it does not crash
        return None, None, f"not measured: chromium failed: {e}"
    note = f"first contentful paint {fcp / 1000:.2f} s" if fcp else ""
    if errors:
        note += f"; JS errors: {errors[:2]}"
    return (ready / 1000 if ready is not None else None), base / 1000, note


def _report_rows(cap: Path, label: str, out: Path) -> list[dict]:
    """`wirecap report CAP -f html` on one capture: its time, the page's size and the peak RSS, each
    against the bound a report keeps at any size."""
    size = cap.stat().st_size
    name = f"report html of a {mb(size):.0f} MB capture ({label})"
    try:
        m = run_measured([*WIRECAP, "report", str(cap), "-f", "html", "-o", str(out)], timeout=300)
    except (RuntimeError, TimeoutError) as e:
        return [figure(name, float("nan"), "s", target=f"< {TARGET_GEN_S:.0f} s", ok=False, note=f"failed: {e}")]
    page = out.stat().st_size
    return [
        figure(name, m.seconds, "s", baseline="orjson read+dump loop", baseline_value=orjson_loop(cap),
               target=f"< {TARGET_GEN_S:.0f} s", ok=m.seconds < TARGET_GEN_S),
        figure(f"{name}: page size", mb(page), "MB", target=f"<= {TARGET_PAGE_MB:.0f} MB",
               ok=mb(page) <= TARGET_PAGE_MB, note=f"the capture: {mb(size):.0f} MB"),
        figure(f"{name}: peak RSS", mb(m.peak_rss), "MB", target=f"<= {TARGET_RSS_MB:.0f} MB",
               ok=mb(m.peak_rss) <= TARGET_RSS_MB),
    ]


def run(quick: bool = False, size: int | None = None) -> list[dict]:
    """Both shapes of big capture (a client's stdout; many HTTP exchanges, bench/attack_memory.py) at
    `size` bytes (50 MB; 5 MB quick; `--mb N` on the command line), then the first render of the first."""
    from bench.attack_memory import write_http_capture

    target = size or (5_000_000 if quick else 50_000_000)
    rows: list[dict] = []
    with tempdir("wirecap-bench-report-") as d:
        cap = d / "big.jsonl"
        write_capture(cap, target)
        out = d / "big.report.html"
        rows += _report_rows(cap, "stdout session", out)
        http = d / "http.jsonl"
        write_http_capture(http, target)
        rows += _report_rows(http, "HTTP exchanges", d / "http.report.html")
        http.unlink()
        if not out.exists():
            return rows
        empty = d / "empty.html"
        empty.write_text("<!doctype html><title>empty</title><p>empty</p>")
        ready, base_render, note = first_render(out, empty)
        if ready is None:
            rows.append(figure("report html first render (headless Chromium)", float("nan"), "s",
                               target=f"< {TARGET_RENDER_S:.0f} s", ok=None, note=note))
        else:
            rows.append(figure("report html first render (headless Chromium)", ready, "s",
                               baseline="empty page", baseline_value=base_render, target=f"< {TARGET_RENDER_S:.0f} s",
                               ok=ready < TARGET_RENDER_S, note=note))
    return rows


if __name__ == "__main__":
    from bench.common import print_table

    size_mb = int(sys.argv[sys.argv.index("--mb") + 1]) if "--mb" in sys.argv else None
    print_table(run(quick="--quick" in sys.argv, size=size_mb * 1_000_000 if size_mb else None))
