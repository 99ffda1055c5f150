"""Bad input, whatever it is, never gives a traceback or a wrong exit status (issue 14).

Every reading command runs IN-PROCESS (`wirecap.cli.main([...])`, SystemExit caught, stdout/stderr
captured) on fuzzed inputs: wrong-typed and missing fields in every record type (header, open, msg,
response, close, error, end, and the notes sidecar), wrong-typed values deep inside message payloads,
deep nesting, huge numbers, NaN-like tokens, a huge line, NUL bytes, invalid UTF-8, duplicate seq,
gzip / zstd (whole and torn), and files that are no capture at all. Each run must:

- raise nothing (WIRECAP_DEBUG=1 makes main's last-resort handler re-raise, so a bug fails here
  with its traceback instead of hiding behind exit status 3) and print no "Traceback";
- exit 0, or 1 only where 1 has a meaning (validate: an error finding; diff: a difference;
  replay exec: the recorded process's status), or 2 with one `wirecap: ...` line naming the file;
- exit 2, never 1, when the input is no capture at all.

`replay serve` runs until interrupted, so it is run as a subprocess, started and stopped with SIGTERM.
bench/attack_fuzz.py runs the same kind of inputs as subprocesses, many more of them.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import gzip
import io
import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wirecap.cli import INTERNAL_ERROR, main

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "captures"
# Small real captures of every transport: WebSocket, HTTP+SSE, process pipes.
BASES = ["codebuff-sdk-0.3.13-ws-tool.jsonl", "codebuff-sdk-0.10.7-http.jsonl", "codex-0.169.0-hello.jsonl",
         "claude-code-2.1.197-hello.jsonl", "opencode-1.18.33-hello.jsonl", "codebuff-cli-1.0.115-ws.jsonl"]

# (name, argv template, exit statuses allowed on a readable capture). {cap} the input, {orig} the capture it
# was made from, {out} an output path of the run's own.
COMMANDS: list[tuple[str, list[str], frozenset[int]]] = [
    ("info", ["info", "{cap}"], frozenset({0})),
    ("info --json", ["info", "--json", "{cap}"], frozenset({0})),
    ("cat", ["cat", "--width", "0", "{cap}"], frozenset({0})),
    ("cat --json", ["cat", "--json", "{cap}"], frozenset({0})),
    ("cat filtered", ["cat", "--type", "msg", "--dir", "s2c", "--grep", "e", "--width", "80", "{cap}"], frozenset({0})),
    ("convert", ["convert", "{cap}"], frozenset({0})),
    ("validate", ["validate", "{cap}"], frozenset({0, 1})),
    ("validate --json", ["validate", "--json", "--strict-schema", "{cap}"], frozenset({0, 1})),
    ("stats", ["stats", "--all", "{cap}"], frozenset({0})),
    ("stats --json", ["stats", "--json", "{cap}"], frozenset({0})),
    ("stats two", ["stats", "{cap}", "{orig}"], frozenset({0})),
    ("diff", ["diff", "{orig}", "{cap}"], frozenset({0, 1})),
    ("diff --level wire", ["diff", "--level", "wire", "--chunks", "{cap}", "{orig}"], frozenset({0, 1})),
    ("diff --level stats", ["diff", "--level", "stats", "--json", "--timing", "{orig}", "{cap}"], frozenset({0, 1})),
    ("diff --summary", ["diff", "--summary", "{cap}", "{cap}"], frozenset({0})),
    ("report -f md", ["report", "-f", "md", "{cap}"], frozenset({0})),
    ("report -f html", ["report", "-f", "html", "-o", "{out}.html", "{cap}"], frozenset({0})),
    ("report -f term", ["report", "-f", "term", "--width", "100", "{cap}"], frozenset({0})),
    ("report --json", ["report", "--json", "{cap}", "{orig}"], frozenset({0})),
    ("export", ["export", "-q", "-o", "{out}.har", "{cap}"], frozenset({0})),
    ("annotate --list", ["annotate", "{cap}", "--list"], frozenset({0})),
    ("annotate --list --json", ["annotate", "{cap}", "--list", "--json"], frozenset({0})),
    ("import", ["import", "-q", "-o", "{out}.jsonl", "{cap}"], frozenset({0})),
    ("replay exec", ["replay", "exec", "--speed", "0", "{cap}"], frozenset(range(256)) - {INTERNAL_ERROR}),
]
COMMAND_NAMES = [c[0] for c in COMMANDS]
_RUNS = itertools.count()

WRONG: list[Any] = [5, None, "x", [], {}, True, 1.5, -1, 2**63, [1, "a"], {"type": 5}, "", "\x00", 1e308]


@pytest.fixture(autouse=True)
def _debug(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIRECAP_DEBUG", "1")
    monkeypatch.setenv("COLUMNS", "100")


class _Std(io.TextIOWrapper):
    """A text stream over bytes, like sys.stdout (commands write both str and .buffer bytes)."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", errors="surrogateescape", write_through=True)

    def text(self) -> str:
        self.flush()
        return self.buffer.getvalue().decode("utf-8", "replace")  # type: ignore[attr-defined]


def run_cli(args: list[str]) -> tuple[int, str, str]:
    """`wirecap ARGS` in this process: (exit status, stdout, stderr). An exception escaping main fails."""
    out, err = _Std(), _Std()
    stdin = io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8")
    saved = sys.stdout, sys.stderr, sys.stdin
    sys.stdout, sys.stderr, sys.stdin = out, err, stdin
    try:
        try:
            main(args)
            code: Any = 0
        except SystemExit as e:
            code = e.code
    finally:
        sys.stdout, sys.stderr, sys.stdin = saved
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message")
        err.write(f"{code}\n")
        code = 1
    return code, out.text(), err.text()


def check_run(name: str, args: list[str], allowed: frozenset[int], cap: Path, *, unreadable: bool = False) -> int:
    rc, out, err = run_cli(args)
    where = f"wirecap {' '.join(args)} -> {rc}\nstderr: {err[-2000:]}"
    assert "Traceback" not in err, where
    assert "internal error" not in err, where
    assert rc != INTERNAL_ERROR or name == "replay exec", where
    if unreadable:
        assert rc == 2, where
    else:
        assert rc in allowed | {2}, where
    if rc == 2:
        lines = [line for line in err.splitlines() if line.startswith("wirecap: ") and "warning:" not in line]
        assert lines, f"exit 2 without a 'wirecap: ...' line: {where}"
        assert any(cap.name in line for line in lines), f"the error line does not name the file: {where}"
    return rc


def run_all(cap: Path, orig: Path, tmp: Path, *, unreadable: bool = False, names: list[str] | None = None) -> dict[str, int]:
    """Every command on `cap`; returns their exit statuses by name."""
    out = {}
    run = tmp / f"run{next(_RUNS)}"
    run.mkdir()
    for i, (name, template, allowed) in enumerate(COMMANDS):
        if names is not None and name not in names:
            continue
        args = [a.format(cap=cap, orig=orig, out=run / f"out{i}") for a in template]
        out[name] = check_run(name, args, allowed, cap, unreadable=unreadable)
    return out


# --- building inputs ----------------------------------------------------------------------------------

def load(name: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (CAPTURES / name).read_bytes().splitlines()]


def dump(records: list[Any]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


FIELDS: dict[str, list[str]] = {
    "header": ["wirecap", "type", "id", "created", "origin", "redaction"],
    "open": ["ch", "kind", "url", "method", "headers", "argv", "cwd", "env", "pid", "dialect", "proc", "stream",
             "status", "subprotocol", "extensions", "response_headers", "client", "server", "started", "pty", "upstream",
             "http_version", "seq", "t", "type"],
    "msg": ["ch", "dir", "json", "text", "b64", "raw", "raw_b64", "headers", "binary", "sse", "truncated", "eol", "flags", "note",
            "encoding", "seq", "t", "type"],
    "response": ["ch", "status", "reason", "headers", "sse", "encoding", "lines", "http_version", "note", "text"],
    "close": ["ch", "code", "reason", "by", "status", "ttfb", "duration", "bytes", "exit_code", "signal", "lines",
              "error", "incomplete", "downstream_closed", "b64"],
    "error": ["ch", "where", "message", "raw"],
    "end": ["records", "bytes", "errors", "duration", "b64", "text"],
}


def with_wrong_fields(records: list[dict[str, Any]], kind: str, *, missing: bool = False, shift: int = 0) -> list[Any]:
    """Every record of type `kind` gets one field wrong (or removed): the fields and the wrong values are
    taken in turn, so one capture holds many different cases."""
    out = copy.deepcopy(records)
    if kind == "error":  # the shipped captures hold none: every third message becomes one
        for i, r in enumerate(out):
            if r.get("type") == "msg" and i % 3 == 0:
                out[i] = {"seq": r["seq"], "t": r["t"], "type": "error", "ch": r["ch"], "where": "test",
                          "message": "made up"}
    targets = [0] if kind == "header" else [i for i, r in enumerate(out) if r.get("type") == kind]
    assert targets, f"no {kind} record to damage"
    for n, i in enumerate(targets):
        field = FIELDS[kind][(n + shift) % len(FIELDS[kind])]
        if missing:
            out[i].pop(field, None)
        else:
            out[i][field] = WRONG[(n + shift) % len(WRONG)]
    return out


def notes_sidecar(cap: Path, lines: list[Any]) -> None:
    Path(str(cap).removesuffix(".jsonl") + ".notes.jsonl").write_bytes(
        b"".join(x if isinstance(x, bytes) else orjson.dumps(x) + b"\n" for x in lines))


# --- wrong-typed and missing fields in every record type ----------------------------------------------

@pytest.mark.parametrize("kind", list(FIELDS))
def test_wrong_typed_fields_every_record_type(kind: str, tmp_path: Path) -> None:
    bases = [b for b in BASES[:3] if kind in ("header", "error") or any(r.get("type") == kind for r in load(b))]
    for base in bases if kind != "header" else (BASES[1],):
        records = load(base)
        for shift in (0, 7) if kind in ("msg", "open") else (0,):
            cap = tmp_path / f"wrong-{kind}-{shift}-{base}"
            cap.write_bytes(dump(with_wrong_fields(records, kind, shift=shift)))
            rcs = run_all(cap, CAPTURES / base, tmp_path)
            if kind not in ("header",):  # the wrong-typed records are format errors: validate says so
                assert rcs["validate"] == 1, f"validate exit {rcs['validate']} on {cap.name}"


def test_wrong_typed_field_is_a_problem_naming_file_and_line(tmp_path: Path) -> None:
    records = load(BASES[2])
    i = next(i for i, r in enumerate(records) if r.get("type") == "msg")
    records[i] = {k: v for k, v in records[i].items() if k not in ("json", "raw")} | {"text": 5}
    cap = tmp_path / "text5.jsonl"
    cap.write_bytes(dump(records))
    for args in (["info", str(cap)], ["stats", str(cap)], ["report", "-f", "md", str(cap)], ["cat", str(cap)],
                 ["convert", str(cap)], ["validate", str(cap)]):
        rc, out, err = run_cli(args)
        assert rc == (1 if args[0] == "validate" else 0), (args, err)
        assert f"{cap}:{i + 1}:" in out + err, (args, out[-1500:], err)
        assert f"seq {records[i]['seq']}" in out + err


@pytest.mark.parametrize("kind", [k for k in FIELDS if k != "header"])
def test_missing_fields_every_record_type(kind: str, tmp_path: Path) -> None:
    base = BASES[1] if kind in ("response",) else BASES[0]
    cap = tmp_path / f"missing-{kind}.jsonl"
    cap.write_bytes(dump(with_wrong_fields(load(base), kind, missing=True)))
    run_all(cap, CAPTURES / base, tmp_path)


def test_wrong_typed_notes_sidecar(tmp_path: Path) -> None:
    cap = tmp_path / "noted.jsonl"
    cap.write_bytes((CAPTURES / BASES[0]).read_bytes())
    good = {"op": "add", "id": "3f2a9c1b00000000", "tag": "bug", "text": "x", "author": "a",
            "time": "2026-11-22T06:00:00Z", "seq": 2}
    lines: list[Any] = [good]
    for n, field in enumerate(["op", "id", "tag", "text", "author", "time", "seq", "seq_end", "ch", "source"]):
        for value in WRONG[n % 3::3]:
            lines.append(good | {field: value, "id": f"{n:08x}{len(lines):08x}"} if field != "id" else good | {"id": value})
        lines.append({k: v for k, v in good.items() if k != field} | {"id": f"ff{n:06x}00000000"})
    lines += [b"not json\n", b"[1]\n", b"\xff\xfe\n", {"op": "rm", "id": 5}, {"op": "rm"}, {"op": 7}]
    notes_sidecar(cap, lines)
    run_all(cap, cap, tmp_path, names=["cat", "convert", "report -f md", "report -f html", "report --json",
                                        "annotate --list", "annotate --list --json", "diff", "export"])


# --- payloads: wrong-typed values anywhere inside message JSON (hypothesis) --------------------------

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**64 - 1),
                      st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20),
                      st.sampled_from(["", "\x00", "\u2028", "«redacted:bearer:1a2b3c4d»", "tool_use", "text",
                                       "assistant", "result", "message_start", "content_block_delta"]))
json_value = st.recursive(json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                             st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                          max_leaves=8)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:5]):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def payload_mutations(draw: st.DrawFn) -> tuple[str, list[Any]]:
    base = draw(st.sampled_from(BASES))
    records = load(base)
    msgs = [i for i, r in enumerate(records) if r.get("type") == "msg" and "json" in r]
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.sampled_from(msgs))
        rec = records[i] = dict(records[i])
        rec.pop("raw", None)
        payload = rec["json"] = copy.deepcopy(rec["json"])
        path = draw(st.sampled_from(_paths(payload)))
        value = draw(json_value)
        if not path:
            rec["json"] = value
            continue
        target = payload
        for p in path[:-1]:
            target = target[p]
        target[path[-1]] = value
    return base, records


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                  HealthCheck.function_scoped_fixture])
@given(case=payload_mutations(), names=st.lists(st.sampled_from(COMMAND_NAMES), min_size=3, max_size=6, unique=True))
def test_payload_values_of_any_type(case: tuple[str, list[Any]], names: list[str], tmp_path: Path) -> None:
    base, records = case
    cap = tmp_path / "payload.jsonl"
    cap.write_bytes(dump(records))
    run_all(cap, CAPTURES / base, tmp_path, names=[*names, "convert", "stats --json"])


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                  HealthCheck.function_scoped_fixture])
@given(base=st.sampled_from(BASES), data=st.data(),
       names=st.lists(st.sampled_from(COMMAND_NAMES), min_size=3, max_size=6, unique=True))
def test_record_fields_of_any_value(base: str, data: st.DataObject, names: list[str], tmp_path: Path) -> None:
    """Any record's field (known or not) set to any JSON value, or removed."""
    records = load(base)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(records) - 1))
        rec = records[i] = dict(records[i])
        kind = rec.get("type")
        known = FIELDS.get(kind, []) if isinstance(kind, str) else []
        field = data.draw(st.sampled_from([*known, *rec]))
        if data.draw(st.booleans()) and field in rec:
            del rec[field]
        else:
            rec[field] = data.draw(json_value)
    cap = tmp_path / "fields.jsonl"
    cap.write_bytes(dump(records))
    run_all(cap, CAPTURES / base, tmp_path, names=names)


# --- bytes: nesting, numbers, long lines, NUL, invalid UTF-8, order, compression ---------------------

def _splice(base: str, i: int, line: bytes) -> bytes:
    lines = (CAPTURES / base).read_bytes().splitlines()
    lines[i] = line
    return b"\n".join(lines) + b"\n"


def _msg_index(base: str) -> int:
    return next(i for i, r in enumerate(load(base)) if r.get("type") == "msg")


def _msg_line(base: str, payload: bytes) -> bytes:
    i = _msg_index(base)
    rec = load(base)[i]
    return (b'{"seq":%d,"t":%s,"type":"msg","ch":"%s","dir":"%s","json":' % (
        rec["seq"], str(rec["t"]).encode(), rec["ch"].encode(), rec["dir"].encode()) + payload + b"}")


BYTE_CASES: dict[str, Any] = {
    "deep-arrays-100k": lambda b: _splice(b, _msg_index(b), _msg_line(b, b"[" * 100_000 + b"]" * 100_000)),
    "deep-objects-2000": lambda b: _splice(b, _msg_index(b), _msg_line(b, b'{"a":' * 2000 + b"1" + b"}" * 2000)),
    "deep-arrays-500": lambda b: _splice(b, _msg_index(b), _msg_line(b, b"[" * 500 + b"]" * 500)),
    # just under the deepest JSON a writer keeps as `json` (254): every consumer walks it
    "deep-arrays-254": lambda b: _splice(b, _msg_index(b), _msg_line(b, b"[" * 253 + b"]" * 253)),
    "deep-objects-254": lambda b: _splice(b, _msg_index(b), _msg_line(
        b, b'{"type":"x","content":' * 253 + b"1" + b"}" * 253)),
    "huge-int": lambda b: _splice(b, _msg_index(b), _msg_line(b, b"1" + b"0" * 400)),
    "huge-float": lambda b: _splice(b, _msg_index(b), _msg_line(b, b"1e400")),
    "u64-seq": lambda b: _splice(b, 1, b'{"seq":18446744073709551615,"t":0,"type":"error","message":"x"}'),
    "neg-seq": lambda b: _splice(b, 1, b'{"seq":-5,"t":-1e308,"type":"error","message":"x"}'),
    "nan": lambda b: _splice(b, _msg_index(b), _msg_line(b, b"NaN")),
    "infinity-t": lambda b: _splice(b, 2, b'{"seq":2,"t":Infinity,"type":"error","message":"x"}'),
    "huge-t": lambda b: _splice(b, 2, b'{"seq":2,"t":1e308,"type":"error","message":"x"}'),
    "extreme-t": lambda b: dump([r | {"t": (1e308, -1e308, 0.0)[i % 3]} if i in (3, 5, 6, 8) else r
                                 for i, r in enumerate(load(b))]),
    "nan-string": lambda b: _splice(b, _msg_index(b), _msg_line(b, b'"NaN"')),
    "huge-line": lambda b: _splice(b, _msg_index(b), _msg_line(b, b'"' + b"A" * (3 << 20) + b'"')),
    "huge-junk-line": lambda b: _splice(b, 2, b"x" * (2 << 20)),
    "nul-bytes": lambda b: (CAPTURES / b).read_bytes().replace(b'"type":"msg"', b'"type":"m\x00sg"', 3)
                           .replace(b"\n", b"\n\x00", 2),
    "nul-in-strings": lambda b: (CAPTURES / b).read_bytes().replace(b'"json":{', b'"text":"\\u0000","x":{', 5),
    "invalid-utf8": lambda b: (CAPTURES / b).read_bytes().replace(b'"ch":"', b'"ch":"\xff\xc0', 3),
    "lone-surrogates": lambda b: (CAPTURES / b).read_bytes().replace(b'"ch":"', b'"ch":"\\udc80', 3),
    "duplicate-seq": lambda b: b"".join(line + b"\n" + (line + b"\n" if i % 3 == 1 else b"")
                                        for i, line in enumerate((CAPTURES / b).read_bytes().splitlines())),
    "reversed": lambda b: b"\n".join([(ls := (CAPTURES / b).read_bytes().splitlines())[0], *ls[:0:-1]]) + b"\n",
    "header-twice": lambda b: (ls := (CAPTURES / b).read_bytes().splitlines(True))[0] * 2 + b"".join(ls[1:]),
    "crlf": lambda b: (CAPTURES / b).read_bytes().replace(b"\n", b"\r\n"),
    "empty-lines": lambda b: (CAPTURES / b).read_bytes().replace(b"\n", b"\n\n   \n", 4),
    "torn": lambda b: (CAPTURES / b).read_bytes()[: len((CAPTURES / b).read_bytes()) * 2 // 3],
    "unknown-types": lambda b: (CAPTURES / b).read_bytes().replace(b'"type":"close"', b'"type":"closed"')
                               .replace(b'"type":"response"', b'"type":5'),
    "b64-junk": lambda b: _splice(b, _msg_index(b), _msg_line(b, b"1").replace(b'"json":1', b'"b64":"!!!not base64"')),
    "b64-binary": lambda b: _splice(b, _msg_index(b), _msg_line(b, b"1").replace(
        b'"json":1', b'"b64":"' + base64.b64encode(bytes(range(256))) + b'","binary":true')),
    "gz": lambda b: gzip.compress((CAPTURES / b).read_bytes()),
    "gz-torn": lambda b: gzip.compress((CAPTURES / b).read_bytes())[:3000],
    "gz-header-torn": lambda b: gzip.compress((CAPTURES / b).read_bytes())[:6],
    "gz-garbled": lambda b: (g := gzip.compress((CAPTURES / b).read_bytes()))[:40] + bytes(200) + g[240:],
    "zst": lambda b: _zstd((CAPTURES / b).read_bytes()),
    "zst-torn": lambda b: _zstd((CAPTURES / b).read_bytes())[:3000],
    "zst-header-torn": lambda b: _zstd((CAPTURES / b).read_bytes())[:5],
}
# No capture at all: every command must exit 2 (never 1) with one line naming the file.
UNREADABLE: dict[str, bytes] = {
    "empty": b"",
    "blank": b"\n\n",
    "nul": b"\x00" * 4096,
    "binary": bytes(range(256)) * 8,
    "text": b"hello\nworld\n",
    "json-array": b"[1,2,3]\n",
    "deep-first-line": b"[" * 100_000 + b"]" * 100_000 + b"\n",
    "header-wrong-version": b'{"wirecap":"1","type":"header"}\n',
    "header-bool-version": b'{"wirecap":true,"type":"header"}\n',
    "header-future": b'{"wirecap":99,"type":"header"}\n',
    "header-huge-version": b'{"wirecap":1' + b"0" * 400 + b',"type":"header"}\n',
    "header-nan": b'{"wirecap":NaN,"type":"header"}\n',
    "invalid-utf8-header": b'{"wirecap":1,"type":"header","id":"\xff"}\n',
    "gz-of-junk": gzip.compress(b"not a capture\n"),
    "gz-empty": gzip.compress(b""),
}


def _zstd(data: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor().compress(data)


@pytest.mark.parametrize("case", list(BYTE_CASES))
def test_byte_level_damage(case: str, tmp_path: Path) -> None:
    base = BASES[2] if case not in ("b64-binary", "gz", "zst") else BASES[0]
    suffix = ".jsonl.gz" if case.startswith("gz") else ".jsonl.zst" if case.startswith("zst") else ".jsonl"
    cap = tmp_path / f"{case}{suffix}"
    cap.write_bytes(BYTE_CASES[case](base))
    names = None
    if case.startswith("huge"):  # a few MB: the commands that read every byte their own way
        names = ["info", "cat --json", "convert", "validate", "stats", "diff", "report -f md", "export", "replay exec"]
    run_all(cap, CAPTURES / base, tmp_path, names=names)


@pytest.mark.parametrize("base", BASES)
def test_deepest_json_payload_every_dialect(base: str, tmp_path: Path) -> None:
    """A payload as deep as a writer keeps as `json` (254 levels) goes through every command, whose
    events and reports nest it deeper still."""
    for case in ("deep-arrays-254", "deep-objects-254"):
        cap = tmp_path / f"{case}.jsonl"
        cap.write_bytes(BYTE_CASES[case](base))
        run_all(cap, CAPTURES / base, tmp_path, names=["info --json", "cat", "convert", "validate --json", "stats --json",
                                                        "diff", "report --json", "report -f html", "export"])


def test_schema_damage_makes_validate_exit_1(tmp_path: Path) -> None:
    """The format's own rules (docs/capture-format.schema.json, seq, t, end) are findings of validate."""
    for case in ("duplicate-seq", "reversed", "header-twice", "unknown-types", "b64-junk", "nul-bytes",
                 "invalid-utf8", "huge-float", "empty-lines"):
        cap = tmp_path / f"{case}.jsonl"
        cap.write_bytes(BYTE_CASES[case](BASES[2]))
        rc, out, err = run_cli(["validate", str(cap)])
        assert rc == 1, (case, out[-2000:], err)
        assert "capture-format" in out, (case, out[-2000:])


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_unreadable_input_exits_2(case: str, tmp_path: Path) -> None:
    cap = tmp_path / f"{case}.jsonl"
    cap.write_bytes(UNREADABLE[case])
    run_all(cap, CAPTURES / BASES[0], tmp_path, unreadable=True,
            names=[n for n in COMMAND_NAMES if n not in ("import", "diff --summary")])


def test_missing_file_and_directory_exit_2(tmp_path: Path) -> None:
    for cap in (tmp_path / "nothing.jsonl", tmp_path):
        run_all(cap, CAPTURES / BASES[0], tmp_path, unreadable=True)


# --- diff of universal-event files (`wirecap convert` output), damaged -------------------------------

_EVENT_FIELDS = ["kind", "ch", "seq", "t", "dialect", "item", "id", "role", "data"]


@pytest.fixture(scope="module")
def event_lines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[bytes]]:
    out = {}
    for base in (BASES[0], BASES[2]):
        path = tmp_path_factory.mktemp("events") / "events.jsonl"
        rc, _, err = run_cli(["convert", "-o", str(path), str(CAPTURES / base)])
        assert rc == 0, err
        out[base] = path.read_bytes().splitlines()
    return out


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                  HealthCheck.function_scoped_fixture])
@given(base=st.sampled_from([BASES[0], BASES[2]]), data=st.data())
def test_diff_event_files_with_any_values(base: str, data: st.DataObject, event_lines: dict[str, list[bytes]],
                                          tmp_path: Path) -> None:
    lines = list(event_lines[base])
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(lines) - 1))
        obj = orjson.loads(lines[i])
        where = data.draw(st.sampled_from([*_EVENT_FIELDS, "data.*"]))
        if where == "data.*" and isinstance(obj.get("data"), dict) and obj["data"]:
            obj["data"][data.draw(st.sampled_from(sorted(obj["data"])))] = data.draw(json_value)
        else:
            obj[where] = data.draw(json_value)
        lines[i] = orjson.dumps(obj)
    a, b = tmp_path / "a.events.jsonl", tmp_path / "b.events.jsonl"
    a.write_bytes(b"\n".join(event_lines[base]) + b"\n")
    b.write_bytes(b"\n".join(lines) + b"\n")
    for args in (["diff", str(a), str(b)], ["diff", "--json", str(b), str(a)], ["diff", "--summary", str(b), str(b)]):
        rc, _, err = run_cli(args)
        assert "Traceback" not in err and rc in (0, 1, 2), (args, rc, err)
        if rc == 2:
            assert err.startswith("wirecap: ") and "b.events.jsonl:" in err, err


# --- import: fuzzed sources of every kind -------------------------------------------------------------

IMPORT_KINDS = ["stdout", "claude-session", "codex-rollout", "ws-frames", "requests"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                  HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(IMPORT_KINDS),
       lines=st.lists(st.one_of(json_value, st.fixed_dictionaries(
           {}, optional={"type": json_value, "timestamp": json_value, "ts": json_value, "direction": json_value,
                         "frame": json_value, "data": json_value, "message": json_value, "payload": json_value,
                         "request": json_value, "response": json_value, "url": json_value, "body": json_value,
                         "status": json_value, "headers": json_value, "sessionId": json_value, "uuid": json_value,
                         "record_type": json_value, "role": json_value, "content": json_value})),
           min_size=1, max_size=8))
def test_import_fuzzed_sources(kind: str, lines: list[Any], tmp_path: Path) -> None:
    src = tmp_path / f"source_{kind}.jsonl"
    src.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    out = tmp_path / "imported.jsonl"
    rc, _, err = run_cli(["import", "-q", "--force", "--kind", kind, "-o", str(out), str(src)])
    assert "Traceback" not in err and rc in (0, 2), err
    if rc == 2:
        assert err.startswith("wirecap: ") and src.name in err, err
    else:
        run_all(out, out, tmp_path, names=["info", "convert", "validate", "stats", "report -f md"])


# --- replay serve: a subprocess, started and stopped -------------------------------------------------

@pytest.mark.parametrize("kind", ["msg", "open", "response", "close"])
def test_replay_serve_wrong_typed_fields(kind: str, tmp_path: Path) -> None:
    base = BASES[0] if kind != "response" else BASES[1]
    cap = tmp_path / f"serve-{kind}.jsonl"
    cap.write_bytes(dump(with_wrong_fields(load(base), kind)))
    port = tmp_path / "port"
    p = subprocess.Popen([sys.executable, "-m", "wirecap", "replay", "serve", "-q", "--speed", "0",
                          "--port-file", str(port), str(cap)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env={k: v for k, v in os.environ.items() if k != "WIRECAP_DEBUG"})
    try:
        deadline = time.monotonic() + 30
        while p.poll() is None and not port.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert p.poll() is None or p.returncode == 2, p.communicate()
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert b"Traceback" not in err and b"internal error" not in err, err.decode()
    assert p.returncode in (0, 1, 2, 130, -signal.SIGTERM), (p.returncode, err.decode())


# --- the last resort: a bug is one line and exit 3 (no input above may reach it) -------------------------

def test_internal_error_is_one_line_and_exit_3(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import wirecap.cli.info_cmd as info_cmd

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("simulated bug\nsecond line")

    monkeypatch.setattr(info_cmd, "build_inventory", broken)
    monkeypatch.delenv("WIRECAP_DEBUG")
    rc, out, err = run_cli(["info", str(CAPTURES / BASES[0])])
    assert rc == INTERNAL_ERROR == 3
    assert err.count("\n") == 1 and err.startswith("wirecap: internal error: RuntimeError: simulated bug second line")
    assert "WIRECAP_DEBUG=1" in err and "Traceback" not in err
    monkeypatch.setenv("WIRECAP_DEBUG", "1")
    with pytest.raises(RuntimeError, match="simulated bug"):
        main(["info", str(CAPTURES / BASES[0])])
    rc, out, err = run_cli(["--help"])
    assert "3 an internal" in " ".join(out.split())


def test_reader_lists_1000_problems_and_counts_the_rest(tmp_path: Path) -> None:
    from wirecap.capture.reader import MAX_PROBLEMS, CaptureReader

    lines = (CAPTURES / BASES[0]).read_bytes().splitlines(True)
    cap = tmp_path / "junk-lines.jsonl"
    cap.write_bytes(lines[0] + b"junk\n" * (MAX_PROBLEMS + 500) + b"".join(lines[1:]))
    with CaptureReader(cap) as reader:
        n = sum(1 for _ in reader)
    assert n == len(lines) - 1
    assert len(reader.problems) == MAX_PROBLEMS + 1
    assert reader.problems[-1] == f"{cap}: 500 more problems like these (not listed)"
    rc, out, err = run_cli(["validate", "--json", str(cap)])
    assert rc == 1 and f"{cap}: {MAX_PROBLEMS + 500 - 50} more format violations" in out
