"""Rule `drift`: message types and fields a dialect does not know (wirecap/dialects/drift.py).

The shipped captures and fixtures are the known world: none of them has drift. A new field or a new
message type put into a real capture is reported once per shape, at the first seq, with a count;
info by default, an error (exit 1) with `--strict-schema`. An unknown message type is both
`unparsed` (the decoder) and `drift` (the declaration), at the same seq.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SAMPLES, run_wirecap
from conftest import lab_dir as _lab
from hypothesis import given, settings
from hypothesis import strategies as st

from wirecap.analysis.validate import validate_capture
from wirecap.dialects import DIALECTS
from wirecap.dialects.claude_code import ClaudeCodeDecoder
from wirecap.dialects.drift import OPEN, DriftCheck, Known, MapOf, Union, open_paths

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted([*REPO.glob("captures/*.jsonl"), *REPO.glob("captures/imported/*.jsonl"),
                  *REPO.glob("tests/fixtures/captures/*.jsonl")])


def _drift(path: str | Path, **kw) -> list:
    return [f for f in validate_capture(str(path), **kw) if f.rule == "drift"]


@pytest.mark.parametrize("cap", SHIPPED, ids=lambda p: p.name)
def test_no_drift_on_shipped_captures(cap: Path) -> None:
    assert _drift(cap) == []


def test_every_dialect_declares_what_it_knows() -> None:
    assert {name for name, d in DIALECTS.items() if d.known is None} == set()


def _edit(src: Path, dst: Path, edit) -> list[int]:
    """Copy a capture, letting `edit(rec)` change msg records in place; the seqs it changed."""
    out, changed = [], []
    for line in src.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "msg" and isinstance(rec.get("json"), dict) and edit(rec["json"]):
            rec.pop("raw", None)
            changed.append(rec["seq"])
        out.append(json.dumps(rec))
    dst.write_text("\n".join(out) + "\n")
    return changed


def test_new_field_on_real_partial_messages_is_info_then_error_with_strict_schema(tmp_path: Path) -> None:
    src = REPO / "captures" / "claude-code-2.1.197-partial-messages.jsonl"
    cap = tmp_path / "drifted.jsonl"

    def edit(obj: dict) -> bool:
        ev = obj.get("event")
        if obj.get("type") == "stream_event" and ev["type"] == "content_block_delta":
            ev["delta"]["confidence"] = 0.9
            return True
        return False

    seqs = _edit(src, cap, edit)
    assert len(seqs) > 1
    found = _drift(cap)
    assert len(found) == 1  # one finding per (dialect, message type, field path)
    f = found[0]
    assert (f.severity, f.seq, f.ch) == ("info", seqs[0], "stdout")
    assert "claude-code" in f.message and "event.delta<text_delta>.confidence" in f.message
    assert "stream_event/content_block_delta" in f.message and f"({len(seqs)} messages)" in f.message

    plain = run_wirecap("validate", str(cap), "--json")
    assert plain.returncode == 0, plain.stderr
    assert [x["severity"] for x in json.loads(plain.stdout) if x["rule"] == "drift"] == ["info"]
    strict = run_wirecap("validate", str(cap), "--json", "--strict-schema")
    assert strict.returncode == 1, strict.stderr
    got = [x for x in json.loads(strict.stdout) if x["rule"] == "drift"]
    assert [(x["severity"], x["seq"]) for x in got] == [("error", seqs[0])]
    # the clean capture passes --strict-schema
    assert run_wirecap("validate", str(src), "--strict-schema").returncode == 0


# (capture, how to turn one message into a type its dialect does not know)
def _retype(key: str, where=lambda o: o, match=lambda o: True):
    state = {"done": False}

    def edit(obj: dict) -> bool:
        target = where(obj)
        if state["done"] or not isinstance(target, dict) or key not in target or not match(obj):
            return False
        target[key] = "drift-test-type"
        state["done"] = True
        return True

    return edit


NEW_TYPES = [
    ("captures/claude-code-2.1.197-tool-bash.jsonl", "claude-code",
     _retype("type", match=lambda o: o.get("type") == "user")),
    ("captures/claude-code-2.1.197-partial-messages.jsonl", "claude-code",
     _retype("type", where=lambda o: o.get("event"), match=lambda o: o.get("type") == "stream_event")),
    ("captures/codebuddy-2.117.0-hello.jsonl", "codebuddy",
     _retype("type", match=lambda o: o.get("type") == "file-history-snapshot")),
    ("captures/codex-0.169.0-hello.jsonl", "codex-exec", _retype("type", match=lambda o: o.get("type") == "turn.started")),
    ("captures/codex-0.169.0-hello.jsonl", "openai-responses-sse",
     _retype("type", match=lambda o: o.get("type") == "response.in_progress")),
    ("captures/opencode-1.18.33-hello.jsonl", "opencode", _retype("type", match=lambda o: o.get("type") == "text")),
    ("captures/claude-code-2.1.197-hello.jsonl", "anthropic-sse", _retype("type", match=lambda o: o.get("type") == "ping")),
    ("captures/codebuff-sdk-0.3.13-ws-tool.jsonl", "codebuff-ws",
     _retype("type", where=lambda o: o.get("data"), match=lambda o: o.get("type") == "action"
             and o["data"].get("type") == "message-cost-response")),
    ("captures/codebuff-sdk-0.10.7-http.jsonl", "codebuff-events", _retype("kind", match=lambda o: o.get("kind") == "chunk")),
]


@pytest.mark.parametrize(("rel", "dialect", "edit"), NEW_TYPES, ids=[f"{d}-{i}" for i, (_, d, _) in enumerate(NEW_TYPES)])
def test_unknown_type_is_both_unparsed_and_drift(tmp_path: Path, rel: str, dialect: str, edit) -> None:
    cap = tmp_path / "drifted.jsonl"
    seqs = _edit(REPO / rel, cap, edit)
    assert len(seqs) == 1
    found = validate_capture(str(cap))
    drift = [f for f in found if f.rule == "drift"]
    unparsed = [f for f in found if f.rule == "unparsed"]
    assert [(f.seq, f.severity) for f in drift] == [(seqs[0], "info")], drift
    assert dialect in drift[0].message and "drift-test-type" in drift[0].message
    assert [f.seq for f in unparsed] == [seqs[0]], unparsed


def test_claude_types_are_the_decoders() -> None:
    """The declaration and the decoder name the same line types and stream events."""
    spec = DIALECTS["claude-code"].known.s2c
    dec = ClaudeCodeDecoder("u")
    assert set(spec.variants) == set(dec._dispatch)
    assert set(spec.variants["stream_event"]["event"].variants) == set(dec._stream_dispatch)


def test_session_types_are_the_decoders() -> None:
    """The session dialects' declarations name the line, item and event types their decoders handle."""
    from wirecap.dialects import claude_session as cs
    from wirecap.dialects import codex_rollout as cx

    assert set(DIALECTS["claude-session"].known.s2c.variants) == {*cs._NOTE_TYPES, "user", "assistant", "system"}
    lines = DIALECTS["codex-rollout"].known.s2c
    assert set(lines.variants) == cx.LINE_TYPES
    assert set(lines.variants["response_item"]["payload"].variants) == {
        *cx._CALLS, *cx._OUTPUTS, *cx._ITEM_NOTES, "message", "reasoning", "web_search_call"}
    assert set(lines.variants["event_msg"]["payload"].variants) == {
        *cx._MIRRORS, *cx._NOTES, "task_started", "turn_started", "task_complete", "turn_complete", "turn_aborted",
        "token_count", "error", "stream_error"}


def _check(spec, *objs, c2s=False) -> list:
    d = DriftCheck()
    known = Known(c2s=spec) if c2s else Known(s2c=spec)
    for i, obj in enumerate(objs, 1):
        d.check("x", known, {"seq": i, "ch": "c", "dir": "c2s" if c2s else "s2c", "json": obj})
    return d.findings()


def test_spec_language() -> None:
    spec = Union("type", {
        "a": {"type": None, "n": None, "free": OPEN, "items": [{"k": None}], "models": MapOf({"tokens": None}),
              "block": Union("type", {"text": {"type": None, "text": None}}, label=False)},
        "b": Union("subtype", {"x": {"type": None, "subtype": None}}),
    })
    ok = {"type": "a", "n": 1, "free": {"anything": {"deep": 1}}, "items": [{"k": 1}, "not an object"],
          "models": {"m1": {"tokens": 3}}, "block": {"type": "text", "text": "hi"}}
    assert _check(spec, ok, {"type": "b", "subtype": "x"}) == []
    found = _check(spec,
                   {**ok, "new": 1},  # 1: a new top-level field
                   {**ok, "new": 2, "items": [{"k": 1, "extra": 1}, {"extra": 2}]},  # 2: again; twice in a list
                   {**ok, "models": {"m2": {"tokens": 1, "cost": 2}}},  # 3: in a map value
                   {**ok, "block": {"type": "image"}},  # 4: a new nested type
                   {"type": "c"},  # 5: a new message type
                   {"type": "b", "subtype": "y"},  # 6: a new subtype (labelled)
                   {"no": "type"})  # 7: no type at all
    got = sorted((f.seq, f.message) for f in found)
    assert got == [
        (1, "x: unknown field new in a (2 messages)"),
        (2, "x: unknown field items[*].extra in a (1 message)"),
        (3, "x: unknown field models.*.cost in a (1 message)"),
        (4, "x: unknown block.type 'image' in a (1 message)"),
        (5, "x: unknown message type 'c' (1 message)"),
        (6, "x: unknown message type 'b/y' (1 message)"),
        (7, "x: unknown message type 'None' (1 message)"),
    ]
    assert all(f.severity == "info" for f in found)
    assert open_paths(spec) == ["<a>.free"]


def test_strict_findings_are_errors_and_stderr_and_text_are_not_checked() -> None:
    d = DriftCheck()
    known = Known(s2c={"a": None})
    d.check("x", known, {"seq": 1, "ch": "stderr", "dir": "s2c", "json": {"b": 1}})
    d.check("x", known, {"seq": 2, "ch": "stdout", "dir": "s2c", "text": "not json"})
    assert d.findings() == []
    d.check("x", known, {"seq": 3, "ch": "stdout", "dir": "s2c", "json": {"b": 1}})
    assert [(f.severity, f.rule, f.seq) for f in d.findings(strict=True)] == [("error", "drift", 3)]


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_dialect_page_lists_what_is_open(name: str) -> None:
    """Each dialect page has a drift section naming its open subtrees."""
    page = (REPO / "docs" / "dialects" / f"{name}.md").read_text()
    assert "## Drift" in page
    known = DIALECTS[name].known
    section = page.split("## Drift", 1)[1]
    for spec in (known.s2c, known.c2s):
        for path in open_paths(spec):
            leaf = path.replace("[*]", "").rsplit(".", 1)[-1].split(">")[-1]
            assert leaf in section, f"{name}: open path {path} not in its page's drift section"


def test_messages_before_detection_are_checked_once_the_dialect_is_known(tmp_path: Path) -> None:
    """A unit whose dialect is told from its second message: the first one is checked too."""
    from wirecap.capture.writer import CaptureWriter

    src = REPO / "captures" / "imported" / "claude-code-2.1.197-tool-bash-stdout.jsonl"
    lines = [json.loads(x)["json"] for x in src.read_text().splitlines()
             if '"type": "msg"' in x or '"type":"msg"' in x]
    assert lines and lines[0]["type"] == "system"
    cap = tmp_path / "late.jsonl"
    with CaptureWriter(cap) as w:
        w.open("proc", "process", argv=["mystery-agent"], t=0.0)
        w.open("stdout", "pipe", proc="proc", stream="stdout", t=0.0)
        w.msg("stdout", "s2c", json.dumps({"type": "hello_from_the_future", "v": 2}), t=0.05)
        for i, obj in enumerate(lines):
            w.msg("stdout", "s2c", json.dumps(obj), t=0.1 * (i + 1))
        w.close_channel("proc", exit_code=0, duration=1.0, t=0.1 * (len(lines) + 1))
    found = validate_capture(str(cap))
    drift = [(f.seq, f.message) for f in found if f.rule == "drift"]
    unparsed = [f.seq for f in found if f.rule == "unparsed"]
    assert drift == [(3, "claude-code: unknown message type 'hello_from_the_future' (1 message)")]
    assert unparsed == [3]


def _json_values():
    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8) | st.sampled_from(
        ["text", "assistant", "system", "init", "stream_event", "content_block_delta", "text_delta", "action",
         "response-chunk", "item.completed", "step_finish", "chat.completion.chunk", "response.completed", "event"])
    keys = st.text(max_size=6) | st.sampled_from(["type", "subtype", "event", "delta", "message", "content", "data",
                                                  "item", "part", "choices", "kind", "chunk", "response", "usage"])
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4),
                        max_leaves=20)


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_any_json_is_checked_without_raising(name: str) -> None:
    """Untrusted JSON of any shape: the check never raises, and each finding names this dialect."""
    known = DIALECTS[name].known

    @settings(max_examples=60, deadline=None)
    @given(objs=st.lists(_json_values(), max_size=5), c2s=st.booleans())
    def run(objs: list, c2s: bool) -> None:
        d = DriftCheck()
        for i, obj in enumerate(objs, 1):
            d.check(name, known, {"seq": i, "ch": "c", "dir": "c2s" if c2s else "s2c", "json": obj})
        found = d.findings()
        assert all(f.rule == "drift" and f.message.startswith(f"{name}: ") and 1 <= f.seq <= len(objs) for f in found)

    run()


LAB_FIXTURES = {
    "claude-code-think-partial": "claude-code", "claude-code-tool-read-partial": "claude-code",
    "claude-code-http-error": "claude-code", "claude-code-sse-error-partial": "claude-code",
    "claude-code-stdin-stream-json": "claude-code", "codebuddy-tool-partial": "codebuddy",
    "codebuddy-stdin-stream-json": "codebuddy", "codex-tool": "codex-exec", "opencode-tool": "opencode",
    "codebuff-sdk-0.10.7-tool": "codebuff-events",
}


@pytest.mark.parametrize("name", sorted(LAB_FIXTURES))
def test_no_drift_on_lab_variants(name: str) -> None:
    """Real stdout of each client in the variants the shipped captures lack (tests/fixtures/drift/README.md)."""
    found = validate_capture(str(REPO / "tests" / "fixtures" / "drift" / f"{name}.jsonl"), dialect=LAB_FIXTURES[name])
    assert [f for f in found if f.rule in ("drift", "unparsed")] == []


def test_lab_fixture_list_is_complete() -> None:
    assert {p.stem for p in (REPO / "tests" / "fixtures" / "drift").glob("*.jsonl")} == set(LAB_FIXTURES)


# Session files (claude-session, codex-rollout) are not captures: they reach validate through `wirecap import`
# (redaction on, the default), like a user's own file.
SESSION_FILES = sorted([*SAMPLES.glob("claude_session_*.jsonl"), *SAMPLES.glob("codex_rollout_*.jsonl"),
                        *(SAMPLES / "public").glob("claude_session_*.jsonl")])


def _import_session(tmp_path: Path, src: Path) -> Path:
    out = tmp_path / f"{src.stem}.cap.jsonl"
    res = run_wirecap("import", "-q", "--force", str(src), "-o", str(out))
    assert res.returncode == 0, res.stderr.decode()
    return out


def _unit_dialect(cap: Path) -> str:
    opens = [json.loads(x) for x in cap.read_text().splitlines() if '"type":"open"' in x.replace(" ", "")]
    return next(r["dialect"] for r in opens if r.get("dialect"))


@pytest.mark.parametrize("src", SESSION_FILES, ids=lambda p: p.name)
def test_no_drift_on_imported_session_files(tmp_path: Path, src: Path) -> None:
    cap = _import_session(tmp_path, src)
    assert _unit_dialect(cap) == ("codex-rollout" if src.name.startswith("codex_rollout") else "claude-session")
    found = validate_capture(str(cap))
    assert [f for f in found if f.rule in ("drift", "unparsed")] == []


def test_session_sample_list_covers_both_dialects() -> None:
    names = [p.name for p in SESSION_FILES]
    assert len(names) >= 8 and any("public" in str(p) for p in SESSION_FILES)
    assert {n.split("_")[0] + "_" + n.split("_")[1] for n in names} == {"claude_session", "codex_rollout"}


def _drifted_session(tmp_path: Path, src: Path, edit) -> tuple[Path, list[int]]:
    """Import `src` with `edit(obj)` applied to each line; the seqs of the lines it changed."""
    lines, marks = [], []
    for i, raw in enumerate(src.read_bytes().splitlines()):
        if raw.strip():
            obj = json.loads(raw)
            if edit(obj):
                marks.append(i)
                raw = json.dumps(obj, separators=(",", ":")).encode()
        lines.append(raw)
    drifted = tmp_path / src.name
    drifted.write_bytes(b"\n".join(lines) + b"\n")
    cap = _import_session(tmp_path, drifted)
    msgs = [json.loads(x) for x in cap.read_text().splitlines() if '"type":"msg"' in x.replace(" ", "")]
    assert len(msgs) == len([x for x in lines if x.strip()])  # one msg per line, in order
    return cap, [msgs[i]["seq"] for i in marks]


def _text_blocks(obj: dict) -> bool:
    if obj.get("type") != "assistant" or obj.get("isApiErrorMessage"):
        return False
    texts = [b for b in obj["message"]["content"] if b.get("type") == "text"]
    for block in texts:
        block["confidence"] = 0.5
    return bool(texts)


def _once(edit):
    state = {"done": False}

    def run(obj: dict) -> bool:
        if state["done"] or not edit(obj):
            return False
        state["done"] = True
        return True

    return run


def _retype_event(obj: dict) -> bool:
    if obj.get("type") == "event_msg" and obj["payload"].get("type") == "token_count":
        obj["payload"]["type"] = "drift_test_event"
        return True
    return False


def _token_usage_field(obj: dict) -> bool:
    if obj.get("type") == "token_usage_record":
        obj["payload"]["usage"]["audio_tokens"] = 3
        return True
    return False


def _retype_line(obj: dict) -> bool:
    if obj.get("type") == "last-prompt":
        obj["type"] = "drift-test-line"
        return True
    return False


# (sample, edit, the drift message, whether the decoder also finds it unparsed)
SESSION_DRIFT = [
    ("claude_session_tool_bash_continued.jsonl", _text_blocks,
     "claude-session: unknown field message.content[*]<text>.confidence in assistant", False),
    ("claude_session_hello.jsonl", _once(_retype_line), "claude-session: unknown message type 'drift-test-line'", True),
    ("codex_rollout_tool_resumed.jsonl", _token_usage_field,
     "codex-rollout: unknown field payload.usage.audio_tokens in token_usage_record", False),
    ("codex_rollout_hello.jsonl", _once(_retype_event),
     "codex-rollout: unknown message type 'event_msg/drift_test_event'", True),
]


@pytest.mark.parametrize(("name", "edit", "message", "unparsed"), SESSION_DRIFT,
                         ids=[f"{n.split('.')[0]}-{i}" for i, (n, *_) in enumerate(SESSION_DRIFT)])
def test_new_shapes_in_imported_session_files_are_drift(tmp_path: Path, name: str, edit, message: str,
                                                        unparsed: bool) -> None:
    cap, seqs = _drifted_session(tmp_path, SAMPLES / name, edit)
    assert seqs
    found = validate_capture(str(cap))
    drift = [f for f in found if f.rule == "drift"]
    n = f"{len(seqs)} message{'s' if len(seqs) != 1 else ''}"
    # one finding per shape even when several lines (or blocks of one line) carry it, at its first line
    assert [(f.severity, f.seq, f.message) for f in drift] == [("info", seqs[0], f"{message} ({n})")]
    assert [f.seq for f in found if f.rule == "unparsed"] == ([seqs[0]] if unparsed else [])
    strict = run_wirecap("validate", str(cap), "--strict-schema", "--json")
    assert strict.returncode == 1
    assert [x["severity"] for x in json.loads(strict.stdout) if x["rule"] == "drift"] == ["error"]




@pytest.mark.realclient
@pytest.mark.skipif(_lab() is None, reason="lab not installed (no node_modules/.bin/claude)")
@pytest.mark.parametrize(("mode", "prompt", "extra"), [
    ("think", "say hello", []),
    ("tool_bash", "run echo hi", ["--allowedTools", "Bash(echo:*)"]),
    # a subagent: its stream_event, user and assistant lines (parent_tool_use_id) and the system/task_* lines
    ("task", "use a subagent to run echo", ["--allowedTools", "Bash(echo:*)", "--tools", "Agent,Bash"]),
])
def test_fresh_claude_run_passes_strict_schema(tmp_path: Path, mode: str, prompt: str, extra: list[str]) -> None:
    """The CI guard: a fresh recording of the real CLI (stdout with partial messages, and its SSE
    exchange) has no drift, so `validate --strict-schema` passes until the stream changes."""
    import subprocess
    import sys
    import time

    lab = _lab()
    assert lab is not None
    fake = REPO / "tests" / "fixtures" / "lab" / "fake" / "fake_anthropic.py"
    pf = tmp_path / "fake.port"
    fake_proc = subprocess.Popen([sys.executable, str(fake), "--mode", mode, "--log", str(tmp_path / "fake.jsonl"),
                                  "--portfile", str(pf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not (pf.exists() and pf.read_text().strip()):
            assert time.monotonic() < deadline and fake_proc.poll() is None, "fake server did not start"
            time.sleep(0.1)
        port = int(pf.read_text())
        (tmp_path / "home").mkdir()
        (tmp_path / "work").mkdir()
        env = {"HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path), "ANTHROPIC_API_KEY": "sk-ant-fake-0000000000000000",
               "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "TERM": "dumb"}
        cap = tmp_path / "claude.jsonl"
        res = run_wirecap("record", "-o", str(cap), "--reverse", f"http://127.0.0.1:{port}",
                          "--base-url-env", "ANTHROPIC_BASE_URL", "--",
                          str(lab / "node_modules" / ".bin" / "claude"), "-p", prompt, "--output-format", "stream-json",
                          "--verbose", "--include-partial-messages", *extra, timeout=180, cwd=str(tmp_path / "work"), env=env)
    finally:
        fake_proc.terminate()
        fake_proc.wait(10)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    out = run_wirecap("validate", str(cap), "--strict-schema", "--json")
    found = json.loads(out.stdout)
    assert [f for f in found if f["rule"] in ("drift", "unparsed")] == []
    assert out.returncode == 0, found
    from wirecap.capture.reader import CaptureReader
    from wirecap.dialects import Decoding

    decoding = Decoding()  # both sides were checked: the stdout stream and the SSE exchange
    with CaptureReader(str(cap)) as reader:
        for rec in reader:
            decoding.feed(rec)
    decoding.finish()
    assert {"claude-code", "anthropic-sse"} <= {u.dialect for u in decoding.units.values()}
