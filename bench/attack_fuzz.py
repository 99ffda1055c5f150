"""Attack: fuzzed inputs to every reading command, as subprocesses of a given `wirecap` binary.

Reproduces the issue 14 audit ("310 of 4,360 fuzz runs printed a traceback, 118 distinct; `validate`
exits 0 on a schema-invalid capture"). A seeded generator makes N inputs: mutations of the shipped
captures in captures/ (wrong-typed fields in every record type, missing fields, deep nesting, huge
numbers, NaN-like values, NUL bytes, invalid UTF-8, duplicated / swapped / cut lines, flipped bytes,
gzip and zstd compression, torn compressed streams, junk that is no capture at all, a broken notes
sidecar) and runs each through one of ~20 commands. Counted per run:

- traceback: "Traceback" on stderr (distinct ones are told apart by their last frame and exception);
- exit violation: exit 1 on input that is no capture at all (1 means "finding/difference" for
  validate and diff, never "unreadable"), exit 1 from a command that has no finding status, exit 0 from
  `validate` on a capture the format's JSON Schema rejects, any other status than 0/1/2;
- no message: exit 2 with no one-line `wirecap: ...` message on stderr;
- timeout: the run took longer than --timeout seconds.

    .venv/bin/python -m bench.attack_fuzz --wirecap /work/wt/base/.venv/bin/wirecap -n 2000 --seed 14

The inputs are a function of --seed and -n only, so two binaries can be compared run for run.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import gzip
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = sorted(p for p in (ROOT / "captures").glob("*.jsonl"))

# Commands as argv templates: {cap} the fuzzed input, {orig} the capture it was made from, {out} a fresh
# output path in the run's own directory. `finding` says whether exit 1 has a documented meaning.
COMMANDS: list[tuple[str, list[str], bool]] = [
    ("info", ["info", "{cap}"], False),
    ("info --json", ["info", "--json", "{cap}"], False),
    ("cat", ["cat", "--width", "0", "{cap}"], False),
    ("cat --json", ["cat", "--json", "{cap}"], False),
    ("convert", ["convert", "{cap}"], False),
    ("validate", ["validate", "{cap}"], True),
    ("validate --json", ["validate", "--json", "{cap}"], True),
    ("stats", ["stats", "--all", "{cap}"], False),
    ("stats --json", ["stats", "--json", "{cap}"], False),
    ("diff", ["diff", "{orig}", "{cap}"], True),
    ("diff --level wire", ["diff", "--level", "wire", "{cap}", "{orig}"], True),
    ("diff --level stats", ["diff", "--level", "stats", "--json", "{orig}", "{cap}"], True),
    ("report -f md", ["report", "-f", "md", "{cap}"], False),
    ("report -f html", ["report", "-f", "html", "-o", "{out}.html", "{cap}"], False),
    ("report -f term", ["report", "-f", "term", "--width", "120", "{cap}"], False),
    ("report --json", ["report", "--json", "{cap}"], False),
    ("export", ["export", "-q", "-o", "{out}.har", "{cap}"], False),
    ("annotate --list", ["annotate", "{cap}", "--list"], False),
    ("import", ["import", "-q", "-o", "{out}.jsonl", "{cap}"], False),
    ("replay exec", ["replay", "exec", "--speed", "0", "{cap}"], True),  # exits as the recorded process did
    ("replay serve", ["replay", "serve", "--speed", "0", "--port-file", "{out}.port", "{cap}"], True),
]

# Values of every JSON type and some that stress a reader: huge numbers, deep nesting, NUL, odd strings.
WRONG: list[Any] = [
    None, True, False, 0, -1, 5, 2**63, -(2**63), 2**64 - 1, 1.5, -0.0, 1e308, -1e308, "", "x", "5", "NaN",
    "Infinity", "\x00", "\ud7ff\u2028\u2029", "é" * 3, [], [1, "a", None], {}, {"a": 1}, {"type": 5},
    [[[[[[[[[[]]]]]]]]]], {"json": {"json": {}}}, "«redacted:bearer:1a2b3c4d»",
]
# Raw JSON spellings orjson or Python's json may read differently (or refuse): spliced in as text.
RAW_VALUES = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1" + "0" * 400, "-" + "9" * 40, "1E-400",
              "[" * 2000 + "]" * 2000, "{\"a\":" * 600 + "1" + "}" * 600, "\"\\u0000\"", "\"\\ud800\"",
              "\"\\udfff\\ud800\"", "0.0000000000000000000000000000001", "123456789012345678901234567890.5"]
FIELDS: dict[str, list[str]] = {
    "header": ["wirecap", "type", "id", "created", "origin", "redaction"],
    "open": ["seq", "t", "type", "ch", "kind", "url", "method", "headers", "argv", "cwd", "env", "pid",
             "dialect", "proc", "stream", "status", "subprotocol", "response_headers", "client", "server",
             "started", "pty", "upstream", "http_version"],
    "msg": ["seq", "t", "type", "ch", "dir", "json", "text", "b64", "raw", "raw_b64", "binary", "sse",
            "truncated", "eol", "flags", "note", "encoding", "headers"],
    "response": ["seq", "t", "type", "ch", "status", "reason", "headers", "sse", "encoding", "lines",
                 "http_version", "note"],
    "close": ["seq", "t", "type", "ch", "code", "reason", "by", "status", "ttfb", "duration", "bytes",
              "exit_code", "signal", "lines", "error", "incomplete", "downstream_closed"],
    "error": ["seq", "t", "type", "ch", "where", "message"],
    "end": ["seq", "t", "type", "records", "bytes", "errors", "duration"],
}
NOTE_FIELDS = ["op", "id", "tag", "text", "author", "time", "seq", "seq_end", "ch", "source"]


# --- the generator ---------------------------------------------------------------------------------------

def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def _dump(rec: Any) -> bytes:
    return json.dumps(rec, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def _lines(recs: list[Any]) -> list[bytes]:
    return [_dump(r) for r in recs]


def _join(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def _pick(rng: random.Random, recs: list[dict[str, Any]], kind: str) -> int:
    idx = [i for i, r in enumerate(recs) if isinstance(r, dict) and r.get("type") == kind]
    return rng.choice(idx) if idx else rng.randrange(len(recs))


def mutate(rng: random.Random) -> tuple[str, bytes, str, bytes | None]:
    """One fuzzed input: (what was done, bytes, original capture path, notes sidecar or None)."""
    base = rng.choice(CAPTURES)
    recs = _records(base)
    notes: bytes | None = None
    op = rng.choice(["wrong", "wrong", "wrong", "wrong", "missing", "raw", "bytes", "lines", "compress",
                     "junk", "notes", "deep", "extra"])
    what = op
    if op in ("wrong", "missing", "raw", "extra"):
        kind = rng.choice([*FIELDS, "msg", "msg", "msg", "open"])
        i = 0 if kind == "header" else _pick(rng, recs, kind)
        rec = recs[i]
        fields = FIELDS["header" if i == 0 else kind]
        present = [f for f in fields if f in rec]
        field = rng.choice(present if present and rng.random() < 0.7 else fields)
        path = [field]
        # msg payloads and nested objects: reach inside one level sometimes
        if op == "wrong" and rng.random() < 0.3 and isinstance(rec.get(field), dict) and rec[field]:
            path.append(rng.choice(list(rec[field])))
        target = rec
        for p in path[:-1]:
            target = target[p]
        if op == "wrong":
            value = rng.choice(WRONG)
            target[path[-1]] = value
            what = f"wrong {kind}.{'.'.join(path)}={_dump(value)[:30].decode('utf-8', 'replace')}"
        elif op == "missing":
            target.pop(path[-1], None)
            what = f"missing {kind}.{field}"
        elif op == "extra":  # a second payload form, or a field of another record type
            other = rng.choice(["json", "text", "b64", "raw", "raw_b64", "code", "status", "records"])
            target[other] = rng.choice(WRONG)
            what = f"extra {kind}.{other}"
        lines = _lines(recs)
        if op == "raw":
            raw = rng.choice(RAW_VALUES)
            line = lines[i]
            key = f'"{field}":'.encode()
            if key in line:
                start = line.index(key) + len(key)
                # replace the value up to the next top-level comma is hard; prepend a raw value to a new key
                line = line[:1] + key + raw.encode() + b"," + line[1:] if rng.random() < 0.5 else \
                    line[:start] + raw.encode() + b"," + b'"_was":' + line[start:]
            else:
                line = line[:-1] + b"," + key + raw.encode() + b"}"
            lines[i] = line
            what = f"raw {kind}.{field}={raw[:20]}"
        return what, _join(lines), str(base), notes
    lines = _lines(recs)
    if op == "deep":
        i = _pick(rng, recs, "msg")
        depth = rng.choice([100, 1000, 100_000])
        rec = dict(recs[i])
        rec.pop("text", None)
        rec.pop("b64", None)
        rec["json"] = "__DEEP__"
        lines[i] = _dump(rec).replace(b'"__DEEP__"', b"[" * depth + b"]" * depth)
        return f"deep msg.json {depth}", _join(lines), str(base), notes
    if op == "bytes":
        data = bytearray(_join(lines))
        sub = rng.choice(["nul", "utf8", "flip", "cut", "crlf", "huge"])
        if sub == "nul":
            for _ in range(rng.randint(1, 5)):
                data[rng.randrange(len(data))] = 0
        elif sub == "utf8":
            for _ in range(rng.randint(1, 5)):
                data[rng.randrange(len(data))] = rng.choice([0x80, 0xC0, 0xFF, 0xED, 0xF5])
        elif sub == "flip":
            for _ in range(rng.randint(1, 20)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif sub == "cut":
            data = data[: rng.randrange(len(data))]
        elif sub == "crlf":
            data = bytearray(bytes(data).replace(b"\n", b"\r\n"))
        elif sub == "huge":  # a long line (a few MB) in place of a record
            i = rng.randrange(1, len(lines))
            size = rng.choice([1 << 20, 4 << 20])
            lines[i] = lines[i][:-1] + b',"pad":"' + b"A" * size + b'"}' if rng.random() < 0.5 else b"x" * size
            data = bytearray(_join(lines))
        return f"bytes {sub}", bytes(data), str(base), notes
    if op == "lines":
        sub = rng.choice(["dup", "swap", "drop", "header-again", "no-header", "empty-lines", "reverse"])
        i = rng.randrange(1, len(lines))
        if sub == "dup":
            lines.insert(i, lines[i])
        elif sub == "swap":
            j = rng.randrange(1, len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif sub == "drop":
            del lines[i]
        elif sub == "header-again":
            lines.insert(i, lines[0])
        elif sub == "no-header":
            del lines[0]
        elif sub == "empty-lines":
            lines.insert(i, b"")
            lines.insert(i, b"   ")
        elif sub == "reverse":
            lines = [lines[0]] + lines[:0:-1]
        return f"lines {sub}", _join(lines), str(base), notes
    if op == "compress":
        data = _join(lines)
        sub = rng.choice(["gz", "zst", "gz-torn", "zst-torn", "gz-bomb", "gz-junk"])
        if sub.startswith("gz"):
            comp = gzip.compress(data if sub != "gz-bomb" else data[: data.index(b"\n") + 1] + b"\n" * (1 << 20))
        else:
            import zstandard

            comp = zstandard.ZstdCompressor().compress(data)
        if sub.endswith("torn"):
            comp = comp[: rng.randrange(2, len(comp))]
        if sub == "gz-junk":
            comp = comp[:10] + bytes(rng.randrange(256) for _ in range(64)) + comp[74:]
        return f"compress {sub}", comp, str(base), notes
    if op == "junk":
        sub = rng.choice(["empty", "random", "json-array", "header-only-wrong", "text", "nul"])
        data = {
            "empty": b"",
            "random": bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4096))),
            "json-array": b"[1,2,3]\n",
            "header-only-wrong": _dump({"wirecap": rng.choice(WRONG), "type": "header"}) + b"\n",
            "text": b"hello world\nthis is not a capture\n",
            "nul": b"\x00" * 5000,
        }[sub]
        return f"junk {sub}", data, str(base), notes
    # op == "notes": a capture with a fuzzed sidecar
    note = {"op": "add", "id": "3f2a9c1b00000000", "tag": "bug", "text": "x", "author": "a",
            "time": "2026-11-22T06:00:00Z", "seq": 2}
    field = rng.choice(NOTE_FIELDS)
    if rng.random() < 0.8:
        note[field] = rng.choice(WRONG)
    else:
        note.pop(field, None)
    side = [_dump(note)]
    if rng.random() < 0.3:
        side.append(rng.choice([b"not json", b"[1]", b"\xff\xfe", _dump({"op": "rm", "id": rng.choice(WRONG)})]))
    return f"notes {field}", _join(lines), str(base), _join(side)


# --- running ---------------------------------------------------------------------------------------------

def schema_invalid(path: str) -> bool:
    """Whether the format's own checker (the JSON Schema plus the file rules) rejects the file."""
    try:
        from wirecap.capture.schema import validate_capture_file
    except ImportError:
        return False
    try:
        problems = validate_capture_file(path)
    except Exception:  # noqa: BLE001 - the checker itself failing means: do not judge
        return False
    # A missing end record and a damaged last line make an interrupted capture, which the format allows
    # (a recorder may be killed mid-write): validate says so with a warning, not an error.
    from wirecap.capture.reader import open_binary

    last = 0
    try:
        with open_binary(path) as f:
            for _ in f:
                last += 1
    except Exception:  # noqa: BLE001 - a damaged compressed stream: its lines so far
        pass
    interrupted = ("no end record", "torn line", "compressed stream ends early")
    return any(not any(w in p for w in interrupted) and not p.startswith(f"{path}:{last}:") for p in problems)


def not_a_capture(data: bytes) -> bool:
    """Input no command can read as a capture: empty, or a first line that is no wirecap header."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except Exception:  # noqa: BLE001
            return False  # torn: the header may or may not be there; do not judge
    elif data[:4] == b"\x28\xb5\x2f\xfd":
        return False
    first = data.split(b"\n", 1)[0]
    try:
        header = json.loads(first)
    except (ValueError, RecursionError):
        return True
    return not (isinstance(header, dict) and header.get("type") == "header"
                and type(header.get("wirecap")) is int and header["wirecap"] == 1)


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def traceback_key(stderr: str) -> str:
    frames = _FRAME.findall(stderr)
    last = frames[-1] if frames else ("?", "?", "?")
    exc = ""
    for line in reversed(stderr.strip().splitlines()):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b", line):
            exc = line.split(":")[0]
            break
    return f"{os.path.basename(last[0])}:{last[1]} {last[2]} {exc}"


def judge(name: str, finding: bool, data: bytes, cap: Path, rc: int | None, tb: bool, stderr: str) -> str:
    """What is wrong with the exit status of one run ("" when nothing). `cap` must hold `data`."""
    junk = not_a_capture(data)
    if rc is None:
        return ""  # (a timeout, counted apart)
    if "internal error" in stderr and rc == 3:
        return "internal error (exit 3)"
    if tb:
        return "exit 1 (traceback)" if rc == 1 and (junk or finding) else ""
    if rc == 1 and junk:
        return "exit 1 on unreadable input"
    if rc == 1 and not finding:
        return "exit 1 from a command without findings"
    if name == "replay exec":
        return ""  # it exits as the recorded process did
    if rc not in (0, 1, 2) and not (name == "replay serve" and rc in (-15, 143, 130)):
        return f"exit {rc}"
    if rc == 0 and name.startswith("validate") and not junk and schema_invalid(str(cap)):
        return "validate exit 0 on a schema-invalid capture"
    return ""


def case(i: int, seed: int) -> tuple[str, bytes, str, bytes | None, str, list[str], bool]:
    """Run i's input and command: (what, bytes, original, notes sidecar, command name, argv template, finding)."""
    rng = random.Random(f"{seed}:{i}")
    what, data, orig, notes = mutate(rng)
    name, template, finding = COMMANDS[rng.randrange(len(COMMANDS))]
    return what, data, orig, notes, name, template, finding


def input_path(d: Path, data: bytes) -> Path:
    suffix = ".jsonl.gz" if data[:2] == b"\x1f\x8b" else ".jsonl.zst" if data[:4] == b"\x28\xb5\x2f\xfd" else ".jsonl"
    return d / f"in{suffix}"


def rejudge(path: str, seed: int) -> list[dict[str, Any]]:
    """The results of an earlier --json run, their exit statuses judged again by this script's `judge`
    (the inputs are rebuilt from the seed; no command runs)."""
    out = []
    with tempfile.TemporaryDirectory(prefix="wirecap-rejudge-") as tmp:
        with open(path) as f:
            lines = f.readlines()
        for line in lines:
            r = json.loads(line)
            what, data, _orig, _notes, name, _template, finding = case(r["i"], seed)
            cap = input_path(Path(tmp), data)
            cap.write_bytes(data)
            stderr = r.get("stderr_tail", "")
            r["violation"] = judge(name, finding, data, cap, r["rc"], r["traceback"], stderr)
            out.append(r)
    return out


def run_one(wirecap: str, i: int, seed: int, workdir: str, timeout: float) -> dict[str, Any]:
    what, data, orig, notes, name, template, finding = case(i, seed)
    d = Path(workdir) / f"r{i}"
    d.mkdir()
    cap = input_path(d, data)
    cap.write_bytes(data)
    if notes is not None:
        (d / "in.notes.jsonl").write_bytes(notes)
    argv = [wirecap] + [a.format(cap=cap, orig=orig, out=d / "out") for a in template]
    env = dict(os.environ, COLUMNS="120", TMPDIR=str(d))
    env.pop("WIRECAP_DEBUG", None)
    t0 = time.monotonic()
    timed_out = False
    if name == "replay serve":
        # runs until interrupted: give it a moment to read the capture (or fail), then SIGTERM it
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                             start_new_session=True)
        deadline = time.monotonic() + min(timeout, 8)
        port = d / "out.port"
        while time.monotonic() < deadline and p.poll() is None and not port.exists():
            time.sleep(0.05)
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            timed_out = True
        rc = p.returncode
    else:
        try:
            cp = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=timeout)
            rc, err = cp.returncode, cp.stderr
        except subprocess.TimeoutExpired as e:
            rc, err, timed_out = None, e.stderr or b"", True
    seconds = time.monotonic() - t0
    stderr = err.decode("utf-8", "replace")
    tb = "Traceback (most recent call last)" in stderr
    violation = judge(name, finding, data, cap, rc, tb, stderr)
    no_message = rc == 2 and not tb and not re.search(r"^wirecap: .+", stderr, re.M)
    shutil.rmtree(d, ignore_errors=True)
    return {"i": i, "what": what, "cmd": name, "rc": rc, "traceback": tb, "key": traceback_key(stderr) if tb else "",
            "violation": violation, "timeout": timed_out, "no_message": no_message, "seconds": seconds,
            "stderr_tail": stderr.strip().splitlines()[-1][:200] if stderr.strip() else ""}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wirecap", default=str(Path(sys.executable).with_name("wirecap")),
                    help="the wirecap executable to attack (default: this venv's)")
    ap.add_argument("-n", type=int, default=2000, help="number of fuzzed runs (default 2000)")
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--jobs", type=int, default=2, help="runs at a time (default 2)")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds before a run counts as hung")
    ap.add_argument("--json", metavar="OUT", help="also write every run's result as JSON lines to OUT")
    ap.add_argument("--show", type=int, default=10, help="distinct tracebacks / violations to list")
    ap.add_argument("--rejudge", metavar="JSON", help="judge the results of an earlier --json run again (same --seed)")
    args = ap.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="wirecap-attack-fuzz-")
    t0 = time.monotonic()
    results: list[dict[str, Any]] = []
    if args.rejudge:
        results = rejudge(args.rejudge, args.seed)
        args.n = 0
        args.wirecap = f"(rejudged {args.rejudge})"
    try:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(run_one, args.wirecap, i, args.seed, workdir, args.timeout) for i in range(args.n)]
            for n, fut in enumerate(concurrent.futures.as_completed(futures), 1):
                try:
                    results.append(fut.result())
                except Exception as e:  # noqa: BLE001 - a bug of this script must not lose the other runs
                    print(f"  harness error: {type(e).__name__}: {e}", file=sys.stderr)
                if n % 200 == 0:
                    print(f"  {n}/{args.n} runs, {time.monotonic() - t0:.0f} s", file=sys.stderr)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results.sort(key=lambda r: r["i"])
    if args.json:
        with open(args.json, "w") as f:
            for r in results:
                f.write(json.dumps(r) + "\n")
    tbs = [r for r in results if r["traceback"]]
    keys = collections.Counter(r["key"] for r in tbs)
    viol = [r for r in results if r["violation"]]
    vkinds = collections.Counter(r["violation"] for r in viol)
    rows = [
        ("wirecap", args.wirecap),
        ("runs (seed)", f"{len(results)} ({args.seed})"),
        ("runs with a traceback", len(tbs)),
        ("distinct tracebacks (last frame)", len(keys)),
        ("exit-code violations", len(viol)),
        ("exit 2 without a 'wirecap:' line", sum(r["no_message"] for r in results)),
        ("timeouts", sum(r["timeout"] for r in results)),
        ("wall seconds", f"{time.monotonic() - t0:.0f}"),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    for kind, n in vkinds.most_common():
        print(f"  violation: {kind}: {n}")
    for key, n in keys.most_common(args.show):
        example = next(r for r in tbs if r["key"] == key)
        print(f"  {n:4d}x {key}  [{example['cmd']}; {example['what']}]")
    shown = 0
    for r in viol:
        if not r["traceback"] and shown < args.show:
            print(f"  violation #{r['i']} {r['cmd']} rc={r['rc']} ({r['what']}): {r['violation']}: {r['stderr_tail']}")
            shown += 1
    for r in results:
        if r["timeout"]:
            print(f"  timeout #{r['i']} {r['cmd']} ({r['what']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
