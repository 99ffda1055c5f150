"""Benchmark `wirecap diff`: speed and memory on two 100k-message captures, and noise.

- Speed/memory: two generated Claude Code stream-json captures of N messages (a long agent session:
  text, tool calls, tool results, usage) that differ in a few places (a changed tool argument, an
  extra message, a removed tool result). `wirecap diff` runs in a subprocess (events and wire level);
  targets: at most 3 s and under 500 MB peak RSS (the process's peak plus its forked child's: side B
  is built in a child). Baseline in the same run: `diff -u` on the raw files. The same diff in one
  process (WIRECAP_DIFF_FORK=0) is reported beside it.
- Noise: pairs that differ only in volatile fields (fresh uuids, session/message/tool ids, times): wirecap
  must print 0 difference lines; beside it, the lines `diff -u` prints after `jq -S -c .` (the baseline
  users would otherwise reach for; `python -m json.tool --sort-keys` per line when jq is absent).
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import orjson

from bench.common import WIRECAP, best_run, figure, mb, run_measured, tempdir

ARGV = ["claude", "-p", "fix the bug", "--output-format", "stream-json", "--verbose"]


def session_lines(n: int, seed: int = 1) -> list[dict]:
    """A plausible long Claude Code session of about n stdout lines (deterministic content)."""
    rng = random.Random(seed)
    sid = str(uuid.UUID(int=rng.getrandbits(128)))
    out: list[dict] = [{"type": "system", "subtype": "init", "session_id": sid, "cwd": "/work", "model": "claude-x",
                        "tools": ["Bash", "Read", "Edit"], "claude_code_version": "9.9.9", "uuid": str(uuid.uuid4())}]
    k = 0
    while len(out) < n - 1:
        mid = f"msg_{k:024x}"
        tid = f"toolu_{k:024x}"
        usage = {"input_tokens": 1000 + k, "output_tokens": 1, "cache_read_input_tokens": 0,
                 "cache_creation_input_tokens": 0}
        out.append({"type": "assistant", "message": {"id": mid, "type": "message", "role": "assistant",
                    "model": "claude-x", "content": [{"type": "text", "text": f"Step {k}: checking file_{k % 97}.py"}],
                    "usage": usage}, "session_id": sid, "uuid": str(uuid.uuid4())})
        out.append({"type": "assistant", "message": {"id": mid, "type": "message", "role": "assistant",
                    "model": "claude-x", "content": [{"type": "tool_use", "id": tid, "name": "Bash",
                                                      "input": {"command": f"grep -n foo file_{k % 97}.py"}}],
                    "usage": usage}, "session_id": sid, "uuid": str(uuid.uuid4())})
        out.append({"type": "user", "message": {"role": "user", "content": [
            {"tool_use_id": tid, "type": "tool_result", "content": f"{k}: foo = {rng.randrange(1000)}",
             "is_error": False}]}, "session_id": sid, "uuid": str(uuid.uuid4()),
            "timestamp": f"2026-11-22T06:{k % 60:02d}:00.000Z"})
        k += 1
    out.append({"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1234, "num_turns": k,
                "result": "done", "session_id": sid, "total_cost_usd": 1.5, "uuid": str(uuid.uuid4()),
                "usage": {"input_tokens": 10, "output_tokens": 20}})
    return out


def with_fresh_ids(lines: list[dict]) -> list[dict]:
    """The same session as captured again: every id and timestamp is new (JSON text rewritten)."""
    text = "\n".join(orjson.dumps(x).decode() for x in lines)
    sid = lines[0]["session_id"]
    text = text.replace(sid, str(uuid.uuid4())).replace("msg_0", "msg_f").replace("toolu_0", "toolu_f")
    text = text.replace("2026-11-22T06:", "2027-01-02T07:")
    out = [json.loads(x) for x in text.split("\n")]
    for x in out:
        if "uuid" in x:
            x["uuid"] = str(uuid.uuid4())
    return out


def write_capture(path: Path, lines: list[dict], step: float = 0.001) -> None:
    """Write a tee-style capture directly (format v1; faster than the writer for 100k records)."""
    recs = [{"wirecap": 1, "type": "header", "id": uuid.uuid4().hex, "created": "2026-11-22T06:00:00.000000Z",
             "origin": {"tool": "wirecap", "version": "bench", "source": "tee", "argv": ARGV},
             "redaction": {"enabled": False}},
            {"seq": 1, "t": 0.0, "type": "open", "ch": "proc", "kind": "process", "argv": ARGV, "cwd": "/work",
             "env": {}, "pid": 1},
            {"seq": 2, "t": 0.0, "type": "open", "ch": "stdout", "kind": "pipe", "proc": "proc", "stream": "stdout"}]
    seq, t = 2, 0.0
    for obj in lines:
        seq += 1
        t += step
        recs.append({"seq": seq, "t": round(t, 6), "type": "msg", "ch": "stdout", "dir": "s2c", "json": obj})
    recs.append({"seq": seq + 1, "t": round(t, 6), "type": "close", "ch": "stdout", "bytes": 0, "lines": len(lines)})
    recs.append({"seq": seq + 2, "t": round(t, 6), "type": "close", "ch": "proc", "exit_code": 0, "duration": t})
    recs.append({"seq": seq + 3, "t": round(t, 6), "type": "end", "records": seq + 3, "bytes": 0, "errors": 0,
                 "duration": t})
    with open(path, "wb") as f:
        for r in recs:
            f.write(orjson.dumps(r) + b"\n")


def few_changes(lines: list[dict]) -> list[dict]:
    """B: a changed tool argument, an extra message, a removed tool result (far apart)."""
    b = [dict(x) for x in lines]
    n = len(b)
    i = next(i for i in range(n // 4, n) if b[i]["type"] == "assistant" and
             b[i]["message"]["content"][0]["type"] == "tool_use")
    msg = json.loads(json.dumps(b[i]))
    msg["message"]["content"][0]["input"]["command"] += " -i"
    b[i] = msg
    j = next(j for j in range(n // 2, n) if b[j]["type"] == "user")
    del b[j]
    k = 3 * n // 4
    b.insert(k, {"type": "assistant", "message": {"id": "msg_extra", "type": "message", "role": "assistant",
                 "model": "claude-x", "content": [{"type": "text", "text": "Let me double-check."}]},
                 "session_id": lines[0]["session_id"], "uuid": str(uuid.uuid4())})
    return b


def diff_lines_count(out: bytes) -> int:
    """Lines of a `wirecap diff` output that describe a difference (all but the one-line summary)."""
    lines = out.decode().splitlines()
    return max(0, len(lines) - 1)


def jq_diff_lines(a: Path, b: Path, work: Path) -> tuple[int, str]:
    sa, sb = work / (a.name + ".sorted"), work / (b.name + ".sorted")
    if shutil.which("jq"):
        how = "jq -S -c ."
        for src, dst in ((a, sa), (b, sb)):
            with open(src, "rb") as fi, open(dst, "wb") as fo:
                subprocess.run(["jq", "-S", "-c", "."], stdin=fi, stdout=fo, check=True, timeout=300)
    else:
        how = "python -m json.tool --sort-keys per line (jq absent)"
        for src, dst in ((a, sa), (b, sb)):
            with open(src) as fi, open(dst, "w") as fo:
                for line in fi:
                    fo.write(json.dumps(json.loads(line), sort_keys=True, separators=(",", ":")) + "\n")
    p = subprocess.run(["diff", "-u", str(sa), str(sb)], capture_output=True, timeout=300)
    return len(p.stdout.splitlines()), how


_PEAKS = """
import atexit, resource, sys
def _report():
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    open(sys.argv[1], "w").write(str(kb))
atexit.register(_report)
from wirecap.cli import main
main(sys.argv[2:])
"""


def _both_peaks(work: Path, level: str, a: Path, b: Path) -> int:
    """Peak RSS of the diff's process plus that of its forked child, in bytes (GNU time reports only the
    larger of the two). The diff runs through `wirecap.cli.main` called with arguments, so it exits
    the ordinary way and the atexit hook reads both high-water marks."""
    out = work / "peaks.txt"
    run_measured([sys.executable, "-c", _PEAKS, str(out), "diff", "--level", level, str(a), str(b)], check=False)
    return int(out.read_text()) * 1024


def run(quick: bool = False) -> list[dict]:
    n = 10_000 if quick else 100_000
    rows: list[dict] = []
    with tempdir("wirecap-bench-diff-") as d:
        lines = session_lines(n)
        a, b = d / "a.jsonl", d / "b.jsonl"
        write_capture(a, lines)
        write_capture(b, few_changes(lines), step=0.0012)
        raw = run_measured(["diff", "-u", str(a), str(b)], check=False)
        for level in ("events", "wire"):
            m = best_run([*WIRECAP, "diff", "--level", level, str(a), str(b)], repeat=1 if quick else 2, check=False)
            ok_rc = m.returncode == 1
            found = m.stdout.decode()
            expect = ["-i", "Let me double-check."]
            exact = ok_rc and all(e in found for e in expect)
            one = run_measured([*WIRECAP, "diff", "--level", level, str(a), str(b)], check=False,
                               env={"WIRECAP_DIFF_FORK": "0"})  # what a machine with one CPU sees
            rows.append(figure(f"diff {n // 1000}k msgs ({level} level) time", m.seconds, "s",
                               baseline="diff -u (raw files)", baseline_value=raw.seconds, target="<= 3 s",
                               ok=(m.seconds <= 3.0 and exact) if not quick else exact,
                               note=f"exit {m.returncode}; {found.strip().splitlines()[-1] if found.strip() else ''}; "
                                    f"in one process (WIRECAP_DIFF_FORK=0): {one.seconds:.2f} s"))
            rows.append(figure(f"diff {n // 1000}k msgs ({level} level) CPU", m.cpu, "s",
                               baseline="diff -u (raw files)", baseline_value=raw.cpu,
                               note="user + system of both processes (side B is built in a forked child, so this "
                                    f"is more than the wall time); in one process: {one.cpu:.2f} s"))
            both = _both_peaks(d, level, a, b)
            rows.append(figure(f"diff {n // 1000}k msgs ({level} level) peak RSS", mb(both), "MB",
                               baseline="diff -u (raw files)", baseline_value=mb(raw.peak_rss), target="< 500 MB",
                               ok=mb(both) < 500,
                               note=f"this process's peak + the forked child's peak (an upper bound of what they "
                                    f"held at once); largest process {mb(m.peak_rss):.0f} MB; in one process: "
                                    f"{mb(one.peak_rss):.0f} MB"))
        # noise: same sessions, only volatile fields differ
        noise_n = 2_000 if quick else 10_000
        small = session_lines(noise_n, seed=2)
        na, nb = d / "noise_a.jsonl", d / "noise_b.jsonl"
        write_capture(na, small)
        write_capture(nb, with_fresh_ids(small), step=0.0017)
        total_w = 0
        for level in ("events", "wire"):
            m = run_measured([*WIRECAP, "diff", "--level", level, str(na), str(nb)], check=False)
            total_w += diff_lines_count(m.stdout) + (0 if m.returncode == 0 else 1)
        base_lines, how = jq_diff_lines(na, nb, d)
        rows.append(figure(f"noise: difference lines on a {noise_n // 1000}k-msg rerun (volatile only)", total_w,
                           "lines", baseline=f"diff -u after {how}", baseline_value=base_lines, target="0 lines",
                           ok=total_w == 0, note="events + wire level; exit 0 both"))
    return rows


if __name__ == "__main__":
    from bench.common import print_table

    print_table(run(quick="--quick" in sys.argv))
