"""Detection: each dialect's `sniff`, asked in priority order over the first messages, and the
variants the real CLIs print (recorded with the lab, see tests/fixtures/samples/README.md).

- every sniff answers None or a string for any input and never raises (property test);
- the variants decode with 0 `unparsed` events and no false finding;
- `info`, `validate`/decode, `report` and replay name the same dialect for every shipped capture and sample.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sample_captures import make_capture, sample_files

from wirecap.analysis.inventory import build_inventory
from wirecap.analysis.report.model import CaptureReport, summarize_records
from wirecap.analysis.stats import stats_capture
from wirecap.analysis.validate import validate_capture
from wirecap.capture.reader import CaptureReader
from wirecap.dialects import DIALECTS, SNIFF_ORDER, Decoding, decode_capture, detect_channel
from wirecap.dialects.base import ARGV_WORDS, program_names
from wirecap.replay.match import channel_dialect
from wirecap.replay.script import build_scripts

HERE = Path(__file__).resolve().parents[1]
CAPS = HERE / "fixtures" / "captures"
SAMPLES = HERE / "fixtures" / "samples"


def _cap(name: str) -> str:
    return str(CAPS / f"{name}.jsonl")


def _findings(path: str) -> list[tuple[str, str]]:
    return sorted((f.severity, f.rule) for f in validate_capture(path))


# --- the registry --------------------------------------------------------------------------------------
def test_every_dialect_has_a_sniff_and_the_order_is_by_priority() -> None:
    assert {d.name for d in SNIFF_ORDER} == set(DIALECTS)
    prios = [d.priority for d in SNIFF_ORDER]
    assert prios == sorted(prios)
    # the more specific first: CodeBuddy prints Claude Code's lines plus its own fields
    names = [d.name for d in SNIFF_ORDER]
    assert names.index("codebuddy") < names.index("claude-code")
    assert names.index("opencode") < names.index("codebuff-events")  # both have `text` / `error` events


def test_the_registry_is_every_module_that_declares_a_dialect() -> None:
    """No hand-kept list: each module of the package with a module-level DIALECT is registered, in
    (priority, name) order, and nothing else is."""
    import importlib
    import pkgutil

    import wirecap.dialects as pkg
    from wirecap.dialects.base import Dialect

    declared = {}
    for info in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + "."):
        d = getattr(importlib.import_module(info.name), "DIALECT", None)
        if isinstance(d, Dialect):
            declared[d.name] = d
    assert declared == DIALECTS
    assert list(DIALECTS) == [d.name for d in sorted(DIALECTS.values(), key=lambda d: (d.priority, d.name))]


# --- property: sniffs never raise ---------------------------------------------------------------------------
_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
_json = st.recursive(_scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                     max_leaves=12)
_typed = st.fixed_dictionaries({"type": st.sampled_from(
    ["system", "assistant", "result", "stream_event", "control_response", "file-history-snapshot", "thread.started",
     "text", "step_start", "action", "ack", "message_start", "response.created", "start", "finish", "error"])},
    optional={"subtype": _json, "message": _json, "event": _json, "part": _json, "kind": _json, "txid": _json,
              "data": _json, "__timestamp": _json, "apiKeySource": _json, "object": _json, "role": _json})
_msg = st.fixed_dictionaries({"type": st.just("msg")}, optional={
    "ch": st.sampled_from(["stdout", "stderr", "stdin", "ws-1", "http-1"]) | _json,
    "dir": st.sampled_from(["c2s", "s2c"]) | _json,
    "json": _typed | _json, "text": st.text(max_size=20) | _json, "b64": _json,
    "sse": st.fixed_dictionaries({}, optional={"event": _json, "no_data": _json}) | _json,
    "flags": st.lists(st.sampled_from(["summary", "redacted"])) | _json, "seq": _json})
_open = st.none() | st.fixed_dictionaries({}, optional={
    "kind": st.sampled_from(["process", "pipe", "ws", "http"]) | _json,
    "argv": st.lists(st.sampled_from(["node", "claude", "/x/codebuddy", "--output-format", "text", "json", "-p",
                                      "python3", "codex", "opencode", "codebuff"]) | _json, max_size=5) | _json,
    "url": st.sampled_from(["http://h/v1/messages", "ws://h/ws", "http://h/v1/responses", "::bad", "http://[x"]) | _json,
    "method": _json, "dialect": st.sampled_from(["claude-code", "nope"]) | _json})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_open, st.lists(_msg | _json, max_size=10))
def test_every_sniff_returns_none_or_a_reason_and_never_raises(open_record: Any, msgs: list[Any]) -> None:
    for d in SNIFF_ORDER:
        assert d.sniff is not None
        got = d.sniff(open_record, msgs)
        assert got is None or (isinstance(got, str) and got)
    name, reason = detect_channel(open_record, msgs)
    assert (name is None or name in DIALECTS) and isinstance(reason, str) and reason


# --- the variants (real CLIs, see the samples README) ------------------------------------------------------
VARIANTS = {
    # codebuddy --input-format stream-json under fake/sdk_driver.py: starts with control_response,
    # carries file-history-snapshot; stdout only (import), so only the messages can tell
    "codebuddy_sdkin": ("codebuddy", "CodeBuddy"),
    # the same run through `wirecap tee --record-stdin` (stdin lines c2s, argv runs codebuddy)
    "tee_codebuddy_sdkin": ("codebuddy", "CodeBuddy field"),
    "claude_code_sdkin": ("claude-code", "control_response"),
    # --output-format json: one result object; --output-format json --verbose: one JSON array
    "claude_code_json": ("claude-code", "type 'result'"),
    "claude_code_jsonv": ("claude-code", "JSON array"),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variant_detected_decoded_fully_without_false_findings(name: str) -> None:
    dialect, why = VARIANTS[name]
    d = Decoding()
    with CaptureReader(_cap(name)) as r:
        events = [e for rec in r for e in d.feed(rec)[1]]
    events += [e for _u, evs in d.finish() for e in evs]
    units = [u for u in d.units.values() if u.dialect]
    assert [u.dialect for u in units] == [dialect]
    assert why in units[0].reason
    assert [e for e in events if e.kind == "unparsed"] == []
    assert _findings(_cap(name)) == []
    text = [e.data.get("text") for e in events if e.kind == "item.completed" and e.item == "message"
            and e.role == "assistant"]
    assert text and text[0].startswith("Hello! This is a reply from the fake")
    assert [e.data["is_error"] for e in events if e.kind == "turn.ended"] == [False]


def test_sdk_stream_stdin_lines_are_decoded_as_the_prompt() -> None:
    events = list(decode_capture(_cap("tee_codebuddy_sdkin")))
    assert [e.data.get("prompt") for e in events if e.kind == "turn.started"] == ["say hello"]
    assert any(e.item == "status" and e.data.get("subtype") == "file-history-snapshot" for e in events)


def test_the_codebuddy_sdk_stream_without_its_markers_would_be_claude_code() -> None:
    """The CodeBuddy fields decide, wherever they are among the first messages (here the 2nd line)."""
    with CaptureReader(_cap("codebuddy_sdkin")) as r:
        msgs = [rec for rec in r if rec["type"] == "msg"]
    assert detect_channel(None, msgs)[0] == "codebuddy"
    assert detect_channel(None, msgs[:1])[0] == "claude-code"  # a control_response alone says only Claude-style


def test_text_output_is_not_taken_for_stream_json() -> None:
    """`claude -p --output-format text` prints prose: no dialect (argv alone does not decide), so no
    invalid-json error; a no-dialect info says why."""
    for name in ("claude_code_text",):
        d = Decoding()
        with CaptureReader(_cap(name)) as r:
            for rec in r:
                d.feed(rec)
        d.finish()
        assert [u.dialect for u in d.units.values()] == [None]
        assert _findings(_cap(name)) == [("info", "no-dialect")]
    argv = {"kind": "process", "argv": ["/lab/node_modules/.bin/claude", "-p", "hi", "--output-format", "text"]}
    assert detect_channel(argv, [])[0] is None
    assert detect_channel({**argv, "argv": argv["argv"][:3]}, [])[0] == "claude-code"  # nothing printed yet
    text = {"type": "msg", "ch": "stdout", "dir": "s2c", "text": "Hello!"}
    assert detect_channel({**argv, "argv": argv["argv"][:3]}, [text])[0] is None


@pytest.mark.parametrize("name", ["claude_code_drop", "tee_claude_code_drop"])
def test_a_stream_cut_mid_message_and_retried_is_a_finding_from_stdout_alone(name: str) -> None:
    """fake_anthropic.py --mode sse_drop cuts the first stream after 5 events; Claude Code printed the
    partial stream_event lines, then (retrying without streaming) the assistant line of another message."""
    found = [f for f in validate_capture(_cap(name))]
    assert [(f.severity, f.rule) for f in found] == [("warning", "cc-stream-abandoned")]
    assert "msg_" in found[0].message and "message_stop" in found[0].message
    events = list(decode_capture(_cap(name)))
    assert [e for e in events if e.kind == "unparsed"] == []


def test_a_normal_partial_stream_is_not_abandoned() -> None:
    assert "cc-stream-abandoned" not in {f.rule for f in validate_capture(_cap("claude_code_partial_text"))}


def _claude_partial(seq: int, event: dict[str, Any]) -> dict[str, Any]:
    return {"seq": seq, "t": 0.0, "type": "msg", "ch": "stdout", "dir": "s2c",
            "json": {"type": "stream_event", "event": event}}


def test_a_restarted_stream_is_abandoned_too() -> None:
    start = {"type": "message_start", "message": {"id": "msg_a", "usage": {"input_tokens": 1}}}
    recs = [
        {"seq": 1, "t": 0.0, "type": "open", "ch": "proc", "kind": "process", "argv": ["claude"]},
        {"seq": 2, "t": 0.0, "type": "open", "ch": "stdout", "kind": "pipe", "proc": "proc", "stream": "stdout"},
        {"seq": 3, "t": 0.0, "type": "msg", "ch": "stdout", "dir": "s2c",
         "json": {"type": "system", "subtype": "init", "session_id": "s"}},
        _claude_partial(4, start),
        _claude_partial(5, {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        _claude_partial(6, {**start, "message": {"id": "msg_b"}}),
        _claude_partial(7, {"type": "message_stop"}),
    ]
    from wirecap.analysis.validate import validate_records

    found = validate_records(recs)
    assert [(f.rule, f.seq) for f in found if f.rule == "cc-stream-abandoned"] == [("cc-stream-abandoned", 6)]


# --- imported HTTP logs: no false sse-no-terminal ---------------------------------------------------------------
@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*_requests.jsonl")))
def test_imported_wire_logs_have_no_false_stream_findings(sample: str, tmp_path: Path) -> None:
    """The fakes' logs keep a summary of each SSE stream, not its events: the stream rules have nothing
    to judge there, and the summary is a status item, not an unparsed event."""
    cap = make_capture(SAMPLES / sample, tmp_path / "cap.jsonl")
    rules = {f.rule for f in validate_capture(str(cap))}
    assert not rules & {"sse-no-terminal", "invalid-json", "unparsed"}
    events = list(decode_capture(str(cap)))
    assert [e for e in events if e.kind == "unparsed" and e.dialect] == []


# --- one verdict everywhere ------------------------------------------------------------------------------------
def _verdicts(path: str) -> dict[str, dict[str, str | None]]:
    """channel -> dialect per consumer: decode (validate/stats), info, report, replay (ws/http)."""
    with CaptureReader(path) as r:
        header, recs = r.header, list(r)
    d = Decoding()
    for rec in recs:
        d.feed(rec)
    d.finish()
    decode = {ch: u.dialect for ch, u in d.chan_unit.items()}
    info = {c.ch: c.dialect for c in build_inventory(header, recs).channels.values()}
    rep = summarize_records(CaptureReport(path=path, header=header), recs)
    report = {c.ch: c.dialect for c in rep.channels}
    replay = {s.ch: channel_dialect(s) for s in build_scripts(recs)}
    out: dict[str, dict[str, str | None]] = {}
    for ch, name in decode.items():
        stderr = any(o.get("stream") == "stderr" for o in recs if o.get("type") == "open" and o.get("ch") == ch)
        want = None if stderr else name
        out[ch] = {"decode": want, "info": info.get(ch), "report": report.get(ch)}
        if ch in replay:
            out[ch]["replay"] = replay[ch]
    return out


def _all_captures(tmp: Path) -> list[str]:
    paths = [str(p) for p in sorted(CAPS.glob("*.jsonl"))]
    for i, sample in enumerate(sample_files()):
        paths.append(str(make_capture(sample, tmp / f"s{i}_{sample.stem}.jsonl")))
    return paths


def test_info_decode_report_and_replay_agree_on_every_capture_and_sample(tmp_path: Path) -> None:
    checked = 0
    for path in _all_captures(tmp_path):
        for ch, got in _verdicts(path).items():
            assert len(set(got.values())) == 1, (path, ch, got)
            checked += 1
    assert checked > 60


# --- argv through wrappers; opencode's error line ---------------------------------------------------------
def _proc_and_msgs(path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with CaptureReader(path) as r:
        recs = list(r)
    proc = next(o for o in recs if o["type"] == "open" and o.get("kind") == "process")
    return proc, [m for m in recs if m["type"] == "msg"]


def test_opencode_run_under_env_i_and_its_error_line_are_opencode() -> None:
    """Real: run_opencode.sh against fake_openai http_error through `wirecap tee`: argv is
    `env -i HOME=… … OPENCODE_CONFIG_CONTENT={…} … /…/.bin/opencode run …`, stdout one `error` line
    (opencode's envelope, no `part`). Each alone says opencode; decoded, it is one failed call and the
    one true finding (no cbe-error-event, no drift)."""
    path = _cap("tee_opencode_http_error")
    proc, msgs = _proc_and_msgs(path)
    assert proc["argv"][:2] == ["env", "-i"]
    assert program_names(proc)[0] == "opencode"
    assert detect_channel(proc, [])[0] == "opencode"  # argv alone (nothing printed yet)
    name, why = detect_channel(None, msgs)  # stdout alone (an import)
    assert (name, "error" in why) == ("opencode", True)
    assert detect_channel(proc, msgs)[0] == "opencode"
    assert _findings(path) == [("error", "opencode-error")]
    events = list(decode_capture(path))
    assert [e for e in events if e.kind == "unparsed"] == []
    (s,) = [s for s in stats_capture(path) if s["dialect"]]
    assert (s["dialect"], s["llm_calls"], s["failed_calls"], s["errors"]) == ("opencode", 0, 1, 1)


def _line(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "msg", "ch": "stdout", "dir": "s2c", "json": obj}]


def test_codebuff_events_does_not_claim_an_error_line_it_cannot_tell_apart() -> None:
    # PrintModeError is {type, message}: Codex exec's error line has the same shape, opencode's has an
    # `error` object; alone, such a line is nobody's (argv still decides)
    for obj in ({"type": "error"}, {"type": "error", "message": "boom"}, {"type": "error", "error": {"name": "X"}},
                {"type": "error", "sessionID": "ses_1", "error": "x"}):
        assert detect_channel(None, _line(obj))[0] is None, obj
        assert detect_channel({"kind": "process", "argv": ["codebuff", "--json"]}, _line(obj))[0] == "codebuff-events"
        assert detect_channel({"kind": "process", "argv": ["timeout", "9", "codex", "exec"]}, _line(obj))[0] == "codex-exec"
    assert detect_channel(None, _line({"type": "error", "message": "boom", "agentId": "a"}))[0] == "codebuff-events"
    assert detect_channel(None, [*_line({"type": "error", "message": "boom"}),
                                 *_line({"type": "start", "agentId": "a"})])[0] == "codebuff-events"
    assert detect_channel(None, _line({"type": "error", "timestamp": 1, "sessionID": "s", "error": {}}))[0] == "opencode"


@pytest.mark.parametrize(("argv", "want"), [
    (["env", "-i", "HOME=/h", "TMPDIR=/t", "PATH=/usr/bin:/bin", "TERM=dumb", "A_B=1", "/lab/node_modules/.bin/opencode",
      "run"], "opencode"),
    (["env", "VAR=x", "claude", "-p", "hi"], "claude"),
    (["/usr/bin/env", "-u", "X", "--chdir=/w", "-C", "/w", "--", "codex", "exec"], "codex"),
    (["env", "-S", "codebuff --json"], "codebuff"),
    (["timeout", "60", "codex", "exec", "--json"], "codex"),
    (["timeout", "-s", "KILL", "-k", "5", "--preserve-status", "60s", "/x/bin/codex"], "codex"),
    (["timeout", "90", "env", "-i", "HOME=/h", "OPENAI_API_KEY=sk-x", "/lab/node_modules/.bin/codex", "exec"], "codex"),
    (["nice", "-n", "10", "codex"], "codex"),
    (["nice", "-5", "opencode"], "opencode"),
    (["stdbuf", "-oL", "-eL", "opencode", "run"], "opencode"),
    (["stdbuf", "-o", "L", "claude"], "claude"),
    (["npx", "-y", "opencode-ai@1.18.33", "run"], "opencode-ai"),
    (["npx", "@anthropic-ai/claude-code@2.1.197", "-p", "hi"], "claude-code"),
    (["npx", "--package", "@openai/codex@0.169.0", "codex", "exec"], "codex"),
    (["bunx", "--bun", "opencode-ai@latest", "run"], "opencode-ai"),
    (["pnpm", "dlx", "@openai/codex"], "codex"),
    (["npm", "exec", "--", "codebuff"], "codebuff"),
    (["node", "-r", "/lab/fake/cb115_env.cjs", "/lab/cb115/node_modules/codebuff/dist/index.js", "/w"], "codebuff"),
    (["script", "-qefc", "node -r '/l/cb115_env.cjs' '/l/node_modules/codebuff/dist/index.js' '/w' 'hi'", "/dev/null"],
     "codebuff"),
    (["bash", "-lc", "exec env A=1 timeout 5 claude -p hi"], "claude"),
    (["runuser", "-u", "dev", "--", "/lab/node_modules/.bin/claude", "-p"], "claude"),
    (["strace", "-f", "-o", "/tmp/trace", "codex", "exec"], "codex"),
    (["uv", "tool", "run", "--from", "x", "codex"], "codex"),
    (["nohup", "setsid", "time", "-o", "/t", "claude"], "claude"),
])
def test_program_names_through_wrappers(argv: list[str], want: str) -> None:
    assert want in program_names({"argv": argv})


@pytest.mark.parametrize("argv", [["env"], ["env", "-i", "A=1"], ["node", "-e", "require('x')"], ["timeout", "5"],
                                  ["bash", "-c", "'unterminated"], ["env", "-i", 3, "codex"], ["python3", "-c", "x"]])
def test_program_names_without_a_program(argv: list[Any]) -> None:
    assert program_names({"argv": argv}) == ()


def test_program_names_reads_a_bounded_part_of_argv() -> None:
    deep = ["env", *(f"V{i}=x" for i in range(ARGV_WORDS)), "claude"]
    assert program_names({"argv": deep}) == ()  # the program is past what is read: not looked for
    nested = ["sh", "-c", "sh -c 'sh -c \"sh -c claude\"'"]
    assert program_names({"argv": nested}) == ()  # command lines are followed two deep, no more
    assert "claude" in program_names({"argv": ["sh", "-c", "sh -c claude"]})


_words = st.sampled_from(["env", "-i", "-u", "-S", "--", "A=1", "timeout", "60", "-k", "nice", "-n", "stdbuf", "-oL",
                          "npx", "-y", "x@1", "@s/p@2", "bash", "-c", "-lc", "script", "node", "-r", "-e", "python3",
                          "-m", "a.b", "uv", "tool", "run", "pnpm", "dlx", "claude", "'", '"', "sh -c codex", ""])


@settings(max_examples=300, deadline=None)
@given(st.lists(_words | st.text(max_size=12) | _json, max_size=12) | _json)
def test_program_names_never_raises(argv: Any) -> None:
    got = program_names({"argv": argv})
    assert isinstance(got, tuple) and all(isinstance(n, str) and n for n in got)


# --- volatile paths and analytics requests: one home, in the dialects ----------------------------------------
def test_volatile_paths_come_from_the_descriptors_and_the_telemetry_rule() -> None:
    from wirecap.dialects import TELEMETRY, TELEMETRY_VOLATILE, is_telemetry_channel, volatile_paths
    from wirecap.replay.match import volatile_for

    for name, d in DIALECTS.items():
        assert volatile_paths(name) == list(d.volatile)
        assert set(d.volatile) <= set(volatile_for(name))
    assert volatile_paths(TELEMETRY) == list(TELEMETRY_VOLATILE) and volatile_paths(None) == []
    assert "data.clientSessionId" in volatile_paths("codebuff-ws")  # (once kept apart in replay)
    assert is_telemetry_channel({"kind": "http", "url": "https://h/batch/"})
    assert not is_telemetry_channel({"kind": "http", "url": "https://h/batch", "dialect": "openai-chat-sse"})
    assert not is_telemetry_channel({"kind": "ws", "url": "wss://h/batch"})
    assert not is_telemetry_channel({"kind": "http", "url": "http://[x"}) and not is_telemetry_channel(None)


def test_session_file_lines_are_told_by_the_dialects_own_sniffs() -> None:
    from wirecap.dialects import session_file_dialect

    assert session_file_dialect({"type": "user", "sessionId": "s", "timestamp": "2026-01-01T00:00:00Z"}) \
        == "claude-session"
    assert session_file_dialect({"type": "summary", "leafUuid": "u"}) == "claude-session"
    assert session_file_dialect({"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta",
                                 "payload": {}}) == "codex-rollout"
    assert session_file_dialect({"type": "system", "subtype": "init", "session_id": "s"}) is None
    assert session_file_dialect({"type": []}) is None and session_file_dialect([1]) is None
