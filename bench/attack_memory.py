"""Attack (issue 14): peak RSS of every reading command on generated 256 MB and 1 GB captures.

The promise under attack: "a 1 GB capture goes through every command under 1 GB RSS, `report` included".
Each command runs as a child under `prlimit --as=LIMIT` (default 5 GB, so a runaway command fails
instead of eating the machine) and GNU time (`%M`, the kernel's high-water mark, no sampling); the
table has one row per command x size: peak RSS, wall time, exit code, output size.

Inputs (generated once into --work DIR, reused when they exist, so BEFORE and AFTER runs read the
same bytes):
- `stdout-N.jsonl`: a Claude Code stream-json session on a process's stdout, as `wirecap tee` writes
  it (`bench.bench_report.write_capture`): info, cat, convert, validate, stats, report, annotate,
  replay exec, diff (against a byte copy of itself: what diff holds, not how much it prints).
- `http-N.jsonl`: the shipped Claude Code HTTP exchange (an ~80 KB request, an SSE answer) repeated
  on new channels, as `wirecap record` writes it: export (HAR), replay serve (load, one request, stop).
- `json-N.jsonl`: the same exchanges answered with one JSON body each (no SSE): many short units,
  which validation held until the end: validate, report.
- `session-N.jsonl`: a Claude session file (the shipped tool-heavy sample repeated with new uuids):
  import --kind claude-session.

Run: `.venv/bin/python -m bench.attack_memory [--wirecap PATH] [--sizes 256,1024] [--only report-html,...]
[--work DIR] [--json OUT]`. Without --work the inputs go to a temp dir removed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson

from bench.bench_report import write_capture
from bench.common import ROOT

MB = 1_000_000
GNU_TIME = "/usr/bin/time"
HTTP_TEMPLATE = ROOT / "captures" / "claude-code-2.1.197-hello.jsonl"
SESSION_TEMPLATE = ROOT / "tests" / "fixtures" / "samples" / "public" / "claude_session_spotter_tool_heavy_v2.1.38.jsonl"
LIMIT_RSS = 1_000 * MB  # the promise: under 1 GB


def write_http_capture(path: Path, target_bytes: int, streamed: bool = True) -> int:
    """The template's POST exchange repeated on channels http-1..N (request text varied), ~target_bytes.
    `streamed=False`: each answer one JSON body instead of an SSE stream (2 messages an exchange)."""
    lines = HTTP_TEMPLATE.read_bytes().splitlines()
    header = lines[0]
    recs = [orjson.loads(x) for x in lines[1:]]
    tmpl = [r for r in recs if r.get("ch") == "http-2"]
    if not streamed:
        answer = {"type": "msg", "ch": "http-2", "dir": "s2c", "json": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-4-8",
            "content": [{"type": "text", "text": "Hello! This is a reply from the fake Anthropic server."}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 19683, "output_tokens": 10}}}
        out = []
        for r in tmpl:
            if r["type"] == "msg" and r["dir"] == "s2c":
                continue
            if r["type"] == "response":
                r = {k: v for k, v in r.items() if k != "sse"}
                r["headers"] = {**r["headers"], "content-type": "application/json"}
                out += [r, {**answer, "t": r["t"]}]
                continue
            out.append(r)
        tmpl = out
    t0 = tmpl[0]["t"]
    seq = 0
    size = 0
    k = 0
    t = 0.0
    with open(path, "wb") as f:
        f.write(header + b"\n")
        while size < target_bytes:
            k += 1
            t += 0.3
            for r in tmpl:
                r = dict(r)
                seq += 1
                r["seq"] = seq
                r["t"] = round(t + r["t"] - t0, 6)
                r["ch"] = f"http-{k}"
                if r["type"] == "msg" and r["dir"] == "c2s":
                    body = dict(r["json"])
                    body["metadata"] = {"user_id": f"attack-{k}"}
                    r["json"] = body
                    r.pop("raw", None)
                line = orjson.dumps(r) + b"\n"
                size += len(line)
                f.write(line)
        seq += 1
        f.write(orjson.dumps({"seq": seq, "t": round(t + 1, 6), "type": "end", "records": seq, "bytes": size,
                              "errors": 0, "duration": t + 1}) + b"\n")
    return seq


def write_session(path: Path, target_bytes: int) -> int:
    """The tool-heavy Claude session sample repeated (fresh uuids, same session), ~target_bytes."""
    objs = [orjson.loads(x) for x in SESSION_TEMPLATE.read_bytes().splitlines() if x.strip()]
    size = 0
    n = 0
    k = 0
    with open(path, "wb") as f:
        while size < target_bytes:
            k += 1
            for o in objs:
                o = dict(o)
                for key in ("uuid", "parentUuid"):
                    if isinstance(o.get(key), str):
                        o[key] = f"{o[key][:24]}{k:012d}"
                line = orjson.dumps(o) + b"\n"
                size += len(line)
                n += 1
                f.write(line)
    return n


def inputs(work: Path, size_mb: int) -> dict[str, Path]:
    """Generate (or reuse) the inputs of one size."""
    out = {"stdout": work / f"stdout-{size_mb}.jsonl", "stdout2": work / f"stdout-{size_mb}-copy.jsonl",
           "http": work / f"http-{size_mb}.jsonl", "session": work / f"session-{size_mb}.jsonl",
           "json": work / f"json-{size_mb}.jsonl"}
    target = size_mb * MB
    if not out["stdout"].exists():
        write_capture(out["stdout"].with_suffix(".tmp"), target)
        out["stdout"].with_suffix(".tmp").rename(out["stdout"])
    if not out["stdout2"].exists():
        shutil.copyfile(out["stdout"], out["stdout2"])
    if not out["http"].exists():
        write_http_capture(out["http"].with_suffix(".tmp"), target)
        out["http"].with_suffix(".tmp").rename(out["http"])
    if not out["json"].exists():
        write_http_capture(out["json"].with_suffix(".tmp"), target, streamed=False)
        out["json"].with_suffix(".tmp").rename(out["json"])
    if not out["session"].exists():
        write_session(out["session"].with_suffix(".tmp"), target)
        out["session"].with_suffix(".tmp").rename(out["session"])
    return out


def commands(inp: dict[str, Path], out: Path) -> dict[str, tuple[list[str], str | None]]:
    """name -> (arguments after `wirecap`, file the command writes itself or None for stdout)."""
    s, h = str(inp["stdout"]), str(inp["http"])
    return {
        "info": (["info", s], None),
        "info-http": (["info", h], None),
        "cat": (["cat", s, "--width", "200"], None),
        "convert": (["convert", s, "-o", str(out)], str(out)),
        "validate": (["validate", s], None),
        "stats": (["stats", s], None),
        "stats-http": (["stats", h], None),
        "validate-http": (["validate", h], None),
        "validate-json": (["validate", str(inp["json"])], None),
        "report-md-json": (["report", str(inp["json"]), "-f", "md"], None),
        "report-term": (["report", s, "-f", "term"], None),
        "report-md": (["report", s, "-f", "md"], None),
        "report-html": (["report", s, "-f", "html", "-o", str(out)], str(out)),
        "report-html-http": (["report", h, "-f", "html", "-o", str(out)], str(out)),
        "export-har": (["export", h, "-o", str(out), "--force"], str(out)),
        "annotate": (["annotate", s, "--list"], None),
        "replay-exec": (["replay", "exec", s, "--speed", "0"], None),
        "replay-serve": (["replay", "serve", h, "--speed", "0", "-q"], None),
        "import": (["import", str(inp["session"]), "--kind", "claude-session", "-o", str(out), "--force", "-q"],
                   str(out)),
        "diff": (["diff", s, str(inp["stdout2"]), "--no-color"], None),
    }


def _first_request(capture: Path) -> tuple[str, str, bytes, dict]:
    """Method, path, body and headers of the capture's first HTTP request."""
    with open(capture, "rb") as f:
        f.readline()
        opened = orjson.loads(f.readline())
        body = orjson.loads(f.readline())
    from urllib.parse import urlsplit

    u = urlsplit(opened["url"])
    return opened["method"], u.path + ("?" + u.query if u.query else ""), orjson.dumps(body["json"]), \
        {"content-type": "application/json"}


def measure(wirecap: list[str], args: list[str], *, limit_as: int, timeout: float, stdout: Path,
            serve: Path | None = None) -> dict:
    """Run one command under prlimit + GNU time; peak RSS (bytes), seconds, exit code, stderr tail."""
    rss_file = stdout.with_suffix(".maxrss")
    rss_file.unlink(missing_ok=True)
    argv = [GNU_TIME, "-f", "%M", "-o", str(rss_file), "prlimit", f"--as={limit_as}", "--", *wirecap, *args]
    port_file = stdout.with_suffix(".port")
    port_file.unlink(missing_ok=True)
    if serve is not None:
        argv += ["--port-file", str(port_file)]
    note = ""
    with open(stdout, "wb") as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
        try:
            if serve is not None:
                note = _serve_once(proc, port_file, serve, t0 + timeout)
            proc.wait(timeout=max(1.0, t0 + timeout - time.perf_counter()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            note = f"timeout {timeout:.0f} s " + note
        seconds = time.perf_counter() - t0
        err.seek(0)
        tail = err.read().decode("utf-8", "replace").strip().splitlines()
    peak = 0
    if rss_file.exists():
        lines = rss_file.read_text().strip().splitlines()
        if lines and lines[-1].isdigit():
            peak = int(lines[-1]) * 1024
    if serve is not None and tail:
        tail = [x for x in tail if "serving" not in x]
    if proc.returncode not in (0, 1) and tail:
        real = [x for x in tail if not x.startswith("Command exited") and not x.startswith("Command terminated")]
        note = (note + " " + (real[-1] if real else tail[-1]))[:160]
    return {"rss": peak, "seconds": seconds, "exit": proc.returncode, "note": note.strip()}


def _serve_once(proc: subprocess.Popen, port_file: Path, capture: Path, deadline: float) -> str:
    """Wait until `replay serve` listens, send the first recorded request, then SIGTERM it."""
    start = time.perf_counter()
    while not port_file.exists():
        if proc.poll() is not None:
            return "exited before listening"
        if time.perf_counter() > deadline:
            raise subprocess.TimeoutExpired("serve", 0)
        time.sleep(0.05)
    loaded = time.perf_counter()
    port = int(port_file.read_text())
    method, path, body, headers = _first_request(capture)
    note = ""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        data = r.read()
        note = f"request: HTTP {r.status}, {len(data)} bytes"
        c.close()
    except OSError as e:
        note = f"request failed: {e}"
    note += f"; listening after {loaded - start:.1f} s"
    # SIGTERM to wirecap itself (GNU time's child), so GNU time lives to report its peak RSS
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    os.kill(int(children[0]) if children else proc.pid, signal.SIGTERM)
    return note


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--wirecap", default=str(ROOT / ".venv" / "bin" / "wirecap"), help="the wirecap executable")
    p.add_argument("--sizes", default="256,1024", help="capture sizes in MB (comma-separated)")
    p.add_argument("--only", default="", help="comma-separated command names (default: all)")
    p.add_argument("--work", default=None, help="keep generated inputs here (reused by the next run)")
    p.add_argument("--limit-as", type=int, default=5_000_000_000, help="address-space cap of each command")
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--json", default=None, help="also write the rows as JSON here")
    p.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), default=None,
                   help="print one table from two --json files (no run)")
    a = p.parse_args(argv)
    if a.compare:
        print(compare(*(json.loads(Path(x).read_text()) for x in a.compare)))
        return 0
    wirecap = [a.wirecap]
    only = [x for x in a.only.split(",") if x]
    rows: list[dict] = []
    with contextlib.ExitStack() as stack:
        if a.work:
            work = Path(a.work)
            work.mkdir(parents=True, exist_ok=True)
        else:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wirecap-attack-memory-")))
        out_dir = work / f"out-{uuid.uuid4().hex[:8]}"
        out_dir.mkdir()
        try:
            for size in (int(x) for x in a.sizes.split(",")):
                inp = inputs(work, size)
                out = out_dir / "out.file"
                for name, (args, writes) in commands(inp, out).items():
                    if only and name not in only:
                        continue
                    stdout = out_dir / "stdout"
                    r = measure(wirecap, args, limit_as=a.limit_as, timeout=a.timeout, stdout=stdout,
                                serve=inp["http"] if name == "replay-serve" else None)
                    produced = Path(writes) if writes else stdout
                    r["out"] = produced.stat().st_size if produced.exists() else 0
                    r.update(command=name, size_mb=size,
                             input=(inp["session"] if name == "import" else inp["json"] if name.endswith("-json") else
                                    inp["http"] if name.endswith("-http") or name in ("export-har", "replay-serve")
                                    else inp["stdout"]).stat().st_size)
                    rows.append(r)
                    print(_row(r), flush=True)
                    for f in out_dir.iterdir():
                        f.unlink()
        finally:
            shutil.rmtree(out_dir, ignore_errors=True)
    print()
    print(table(rows))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


def _row(r: dict) -> str:
    return (f"{r['command']:<17} {r['size_mb']:>5} MB  rss {r['rss'] / MB:>7.0f} MB  {r['seconds']:>7.1f} s  "
            f"exit {r['exit']:>3}  out {r['out'] / MB:>8.1f} MB  {r['note']}")


def table(rows: list[dict]) -> str:
    """The GitHub-markdown table of the rows (peak RSS over 1 GB marked)."""
    from tabulate import tabulate

    body = [[r["command"], f"{r['input'] / MB:.0f} MB", f"{r['rss'] / MB:.0f} MB" + (" **>1GB**" if r["rss"] > LIMIT_RSS else ""),
             f"{r['seconds']:.1f} s", r["exit"], f"{r['out'] / MB:.1f} MB", r["note"]] for r in rows]
    return tabulate(body, headers=["command", "input", "peak RSS", "wall", "exit", "output", "note"],
                    tablefmt="github", disable_numparse=True)


def compare(before: list[dict], after: list[dict]) -> str:
    """Before/after side by side: peak RSS, wall time and exit code of each command x size."""
    from tabulate import tabulate

    old = {(r["command"], r["size_mb"]): r for r in before}
    new = {(r["command"], r["size_mb"]): r for r in after}
    body = []
    for key in list(old) + [k for k in new if k not in old]:
        b, a = old.get(key), new.get(key)
        size = (a or b)["input"] / MB  # type: ignore[index]

        def cell(r: dict | None) -> str:
            if r is None:
                return "-"
            return f"{r['rss'] / MB:.0f} MB, {r['seconds']:.1f} s, exit {r['exit']}"

        body.append([key[0], f"{size:.0f} MB", cell(b), cell(a),
                     "yes" if a is not None and a["rss"] <= LIMIT_RSS else ("NO" if a is not None else "-")])
    return tabulate(body, headers=["command", "input", "before: peak RSS, wall, exit", "after", "after < 1 GB"],
                    tablefmt="github", disable_numparse=True)


if __name__ == "__main__":
    sys.exit(main())
