"""Claude Code session files and Codex rollout files: real files written by the lab's CLIs (see
tests/fixtures/samples/README.md) go through the real `wirecap import` (redaction on) and decode as the
`claude-session` / `codex-rollout` dialects; stats are checked against numbers read by hand from the files."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from conftest import SAMPLES, run_wirecap
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wirecap.analysis.stats import stats_capture, stats_records
from wirecap.analysis.validate import validate_capture, validate_records
from wirecap.capture import CaptureReader, payload_bytes
from wirecap.capture.importers import parse_timestamp
from wirecap.dialects import DIALECTS, decode_capture, decode_records
from wirecap.dialects.claude_session import sniff as claude_sniff
from wirecap.dialects.codex_rollout import LINE_TYPES
from wirecap.dialects.codex_rollout import sniff as codex_sniff

# sample -> (dialect, stats read by hand from the sample's assistant / token_usage_record lines)
GOLDEN = {
    # one response msg_5e64...: input 19447, output 10 (the stream-json result of the same run says the same)
    "claude_session_hello": ("claude-session", {"model": "claude-opus-4-8", "prompt": 19447, "completion": 10,
                                                "llm_calls": 1, "tools": {}, "findings": []}),
    # thinking line + text line share msg_bdfd...: one call, 19447 / 10
    "claude_session_think": ("claude-session", {"model": "claude-opus-4-8", "prompt": 19447, "completion": 10,
                                                "llm_calls": 1, "tools": {}, "findings": []}),
    # run 1 (`-p "run echo hi"`): msg_705a... (text + tool_use lines, 19446 / 10) and msg_cfc5... (19542 / 4);
    # run 2 (`--continue "say hello again"`): msg_443f... 19575 / 10. Sum 58563 / 24; the runs' stream-json
    # result lines said 38988 / 14 and 19575 / 10.
    "claude_session_tool_bash_continued": ("claude-session", {
        "model": "claude-opus-4-8", "prompt": 58563, "completion": 24, "llm_calls": 3, "tools": {"Bash": 1},
        "findings": []}),
    # every call failed (fake http_error 529, CLAUDE_CODE_MAX_RETRIES=0): a synthetic answer, no usage, one error
    "claude_session_api_error": ("claude-session", {"usage": None, "tools": {}, "errors": 1,
                                                    "findings": ["cs-api-error"]}),
    # token_usage_record: input 9662 (cached 0), output 12
    "codex_rollout_hello": ("codex-rollout", {"model": "gpt-5.5", "prompt": 9662, "completion": 12,
                                              "llm_calls": 1, "tools": {}, "findings": []}),
    # tool run (9662 / 12 and 9773 / 12) then `exec resume --last` (9888 / 12): 29323 / 36. The resumed run's
    # own `exec --json` turn.completed said 29323 / 36 for its one call: the thread's running total.
    "codex_rollout_tool_resumed": ("codex-rollout", {"model": "gpt-5.5", "prompt": 29323, "completion": 36,
                                                     "llm_calls": 3, "tools": {"exec_command": 1}, "findings": []}),
    # third-party real session (Claude Code 2.1.38, interactive): 4 responses; prompt = input + cache read +
    # cache creation: (3+17915+7883) + (1+25798+208) + (3+18014+8490) + (47+26504+1115) = 105981; output
    # 27 + 1 + 11 + 173 = 212 (msg ...BN5jdsym's two lines say 25, then 173 after a progress and a tool_result line)
    "public/claude_session_spotter_tool_heavy_v2.1.38": ("claude-session", {
        "model": "claude-opus-4-6", "prompt": 105981, "completion": 212, "llm_calls": 4,
        "tools": {"Bash": 2, "Glob": 1, "Read": 1, "WebFetch": 1, "WebSearch": 1}, "findings": []}),
    # the provider unreachable: Codex kept "Reconnecting..." (those errors are not written to the rollout) and
    # was killed after 60 s; the file stops after the prompt: no call, a turn that never ended
    "codex_rollout_killed_offline": ("codex-rollout", {"usage": None, "tools": {},
                                                       "findings": ["cx-turn-unfinished"]}),
    # fake http_error (HTTP 400, retries 0): Codex 0.169 writes the failed turn as task_complete with an
    # `error` object (no `error` line, no usage): one failed call, none answered
    "codex_rollout_http_error": ("codex-rollout", {"usage": None, "tools": {}, "errors": 1, "llm_calls": 0,
                                                   "failed_calls": 1, "findings": ["cx-error"]}),
}


def _import(tmp_path: Path, src: Path, *extra: str) -> Path:
    out = tmp_path / (src.stem + ".cap.jsonl")
    res = run_wirecap("import", "-q", str(src), "-o", str(out), *extra)  # redaction on (the default)
    assert res.returncode == 0, res.stderr.decode()
    return out


@pytest.fixture(scope="module")
def caps(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("sessions")
    return {name: _import(tmp, SAMPLES / f"{name}.jsonl") for name in GOLDEN}  # (stems are distinct)


def _events(cap: Path) -> list:
    return list(decode_capture(str(cap)))


# Issue 13 point 1: the key shapes have no token boundary, so a UUID holding `cb-` loses its tail
# (`"uuid":"eb76f9«redacted:codebuff-key:…»"` in this real file). The fix is another part of the issue;
# when it is in, this XPASSes: remove the mark.
@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_import_keeps_every_line_and_names_the_dialect(caps, name) -> None:
    dialect, _ = GOLDEN[name]
    cap = caps[name]
    lines = (SAMPLES / f"{name}.jsonl").read_bytes().splitlines()
    with CaptureReader(cap) as r:
        header = r.header
        recs = list(r)
    assert header["origin"]["imported_from"]["sources"][0]["kind"] == dialect
    msgs = [m for m in recs if m["type"] == "msg"]
    assert [payload_bytes(m) for m in msgs] == lines  # 0 bytes altered (redaction found nothing secret)
    assert not any("redacted" in (m.get("flags") or ()) for m in msgs)
    # times are the lines' own timestamps (lines without one keep the previous time)
    stamps = [json.loads(x).get("timestamp") for x in lines]
    first = next(s for s in stamps if s)
    last = [s for s in stamps if s][-1]
    assert msgs[-1]["t"] == pytest.approx(parse_timestamp(last) - parse_timestamp(first), abs=1e-5)
    info = json.loads(run_wirecap("info", "--json", str(cap)).stdout)
    assert {c["dialect"] for c in info["channels"]} == {dialect}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_zero_unparsed_and_the_findings(caps, name) -> None:
    dialect, want = GOLDEN[name]
    events = _events(caps[name])
    assert [e for e in events if e.kind == "unparsed"] == []
    assert {e.dialect for e in events} == {dialect}
    assert [e.kind for e in events if e.kind.startswith("session.")] == ["session.started", "session.ended"]
    assert sorted(f.rule for f in validate_capture(str(caps[name]))) == want["findings"]


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_stats_by_hand(caps, name) -> None:
    dialect, want = GOLDEN[name]
    (s,) = [s for s in stats_capture(str(caps[name])) if s["dialect"]]
    assert s["dialect"] == dialect
    assert s["tool_calls"] == want["tools"]
    assert s["errors"] == want.get("errors", 0)
    assert s["failed_calls"] == want.get("failed_calls", 0)
    assert s["duration"] is not None and s["duration"] > 0  # timed by the lines' timestamps
    if want.get("usage", True) is None:
        assert s["models_usage"] == {} and s["llm_calls"] == want.get("llm_calls")
        return
    assert list(s["models_usage"]) == [want["model"]]
    m = s["models_usage"][want["model"]]
    assert (m["prompt_tokens"], m["completion_tokens"]) == (want["prompt"], want["completion"])
    assert m["total_tokens"] == want["prompt"] + want["completion"]
    assert s["llm_calls"] == want["llm_calls"]
    assert s["total_cost"] is None  # neither file carries a price


def test_claude_session_turns_tools_and_usage_once_per_response(caps) -> None:
    events = _events(caps["claude_session_tool_bash_continued"])
    assert [e.data["prompt"] for e in events if e.kind == "turn.started"] == ["run echo hi", "say hello again"]
    assert [e.data["stop_reason"] for e in events if e.kind == "turn.ended"] == ["end_turn", "end_turn"]
    calls = [e for e in events if e.kind == "item.completed" and e.item == "tool_call"]
    results = [e for e in events if e.kind == "item.completed" and e.item == "tool_result"]
    assert [c.data["input"]["command"] for c in calls] == ["echo hi"]
    assert results[0].data == {"call_id": calls[0].id, "output": "hi", "is_error": False}
    usage = [e for e in events if e.kind == "usage"]
    assert [(u.data["input_tokens"], u.data["output_tokens"]) for u in usage] == [(19446, 10), (19542, 4), (19575, 10)]
    assert len({u.data["message_id"] for u in usage}) == 3
    texts = [e.data["text"] for e in events if e.item == "message" and e.role == "assistant"]
    assert texts == ["I'll run that command.", "The tool returned: hi",
                     "Hello! This is a reply from the fake Anthropic server."]
    think = _events(caps["claude_session_think"])
    assert [e.item for e in think if e.kind == "item.completed" and e.role == "assistant"] == ["reasoning", "message"]
    assert len([e for e in think if e.kind == "usage"]) == 1  # two lines, one message id


def test_claude_session_api_error_is_an_error_not_an_answer(caps) -> None:
    events = _events(caps["claude_session_api_error"])
    errors = [e for e in events if e.kind == "error"]
    assert len(errors) == 1 and errors[0].data["code"] == 529 and "529" in errors[0].data["message"]
    assert not [e for e in events if e.kind == "usage" or (e.item == "message" and e.role == "assistant")]
    assert [e.data["is_error"] for e in events if e.kind == "turn.ended"] == [True]


def test_codex_rollout_items_and_per_call_usage_in_a_resumed_thread(caps) -> None:
    events = _events(caps["codex_rollout_tool_resumed"])
    assert [e.kind for e in events if e.kind.startswith("turn.")] == ["turn.started", "turn.ended"] * 2
    # the prompt, from the UserMessage mirror line (the turn's context messages come before it)
    assert [e.data["prompt"] for e in events if e.kind == "turn.started"] == ["say hello", "say hello again"]
    calls = [e for e in events if e.kind == "item.completed" and e.item == "tool_call"]
    results = [e for e in events if e.kind == "item.completed" and e.item == "tool_result"]
    assert [(c.data["name"], c.data["input"]) for c in calls] == [("exec_command", {"cmd": "echo hi"})]
    assert results[0].id == calls[0].id and results[0].data["exit_code"] == 0 and not results[0].data["is_error"]
    assert "Output:\nhi" in results[0].data["output"]
    users = [e.data["text"] for e in events if e.item == "message" and e.role == "user"]
    assert [u for u in users if not u.startswith("<")] == ["say hello", "say hello again"]  # (and the context)
    usage = [e for e in events if e.kind == "usage"]
    assert [(u.data["input_tokens"], u.data["output_tokens"]) for u in usage] == [(9662, 12), (9773, 12), (9888, 12)]
    assert all(u.data["message_id"].startswith("resp_") and u.data["model"] == "gpt-5.5" for u in usage)
    # the assistant text appears once (the event_msg mirror of the response item adds no second item)
    texts = [e.data["text"] for e in events if e.item == "message" and e.role == "assistant"]
    assert len(texts) == 2


def test_codex_rollout_failed_turn_is_a_failed_call(caps) -> None:
    # Codex 0.169 against fake http_error: the turn's end line is task_complete with an `error` object
    events = _events(caps["codex_rollout_http_error"])
    kinds = [e.kind for e in events if e.kind in ("turn.started", "error", "turn.ended")]
    assert kinds == ["turn.started", "error", "turn.ended"]
    (err,) = [e for e in events if e.kind == "error"]
    assert err.data["failed_call"] is True and err.data["fatal"] is True
    assert err.data["code"] == "other" and "simulated invalid_request_error" in err.data["message"]
    (end,) = [e for e in events if e.kind == "turn.ended"]
    assert end.data["stop_reason"] == "failed" and end.data["is_error"] is True
    (start,) = [e for e in events if e.kind == "turn.started"]
    assert start.data["prompt"] == "say hello"
    findings = validate_capture(str(caps["codex_rollout_http_error"]))
    assert [f.rule for f in findings] == ["cx-error"] and findings[0].severity == "error"


def test_codex_rollout_error_line_then_failed_turn_is_one_finding(tmp_path) -> None:
    # a rollout that has an `error` line before the failed task_complete (as `codex exec --json` prints
    # `error` then `turn.failed`): one cx-error finding for the turn, the failed call counted once
    lines = _lines("codex_rollout_http_error")
    end = json.loads(lines[-1])
    err_line = {"timestamp": end["timestamp"], "type": "event_msg",
                "payload": {"type": "error", "message": end["payload"]["error"]["message"]}}
    cap = _import_lines(tmp_path, [*lines[:-1], orjson.dumps(err_line), lines[-1]])
    assert [f.rule for f in validate_capture(str(cap))] == ["cx-error"]
    (s,) = [s for s in stats_capture(str(cap)) if s["dialect"]]
    assert (s["failed_calls"], s["llm_calls"], s["errors"]) == (1, 0, 2)


def _lines(name: str) -> list[bytes]:
    return (SAMPLES / f"{name}.jsonl").read_bytes().splitlines()


def _import_lines(tmp_path: Path, lines: list[bytes], fname: str = "derived.jsonl") -> Path:
    src = tmp_path / fname
    src.write_bytes(b"".join(x + b"\n" for x in lines))
    return _import(tmp_path, src)


def test_rollout_without_usage_records_counts_token_count_once_per_call(tmp_path) -> None:
    # an older rollout has no token_usage_record lines (nor item_completed mirrors); a token_count can be
    # written twice (0.104 writes each one twice: once after the call, again after its output)
    lines = [x for x in _lines("codex_rollout_tool_resumed")
             if json.loads(x)["type"] != "token_usage_record" and b'"item_completed"' not in x]
    dup = next(i for i, x in enumerate(lines) if b'"token_count"' in x)
    lines.insert(dup + 1, lines[dup])
    cap = _import_lines(tmp_path, lines)
    (s,) = stats_capture(str(cap))
    m = s["models_usage"]["gpt-5.5"]
    assert (m["prompt_tokens"], m["completion_tokens"], s["llm_calls"]) == (29323, 36, 3)
    # without the mirror line, the prompt is the last user message before the turn's first output
    events = _events(cap)
    assert [e.data["prompt"] for e in events if e.kind == "turn.started"] == ["say hello", "say hello again"]


def test_cut_files_are_findings(tmp_path) -> None:
    # a Claude session cut after the tool_use line: the call has no result
    cl = _lines("claude_session_tool_bash_continued")
    cut = next(i for i, x in enumerate(cl) if b'"tool_result"' in x)
    found = validate_capture(str(_import_lines(tmp_path, cl[:cut], "c.jsonl")))
    assert [f.rule for f in found] == ["cs-tool-use-without-result"]
    # a rollout cut after the function_call: no output, and the turn never completed
    cx = _lines("codex_rollout_tool_resumed")
    cut = next(i for i, x in enumerate(cx) if b'"function_call_output"' in x)
    found = validate_capture(str(_import_lines(tmp_path, cx[:cut], "x.jsonl")))
    assert sorted(f.rule for f in found) == ["cx-call-without-output", "cx-turn-unfinished"]


def test_unknown_line_types_are_unparsed_not_dropped(tmp_path) -> None:
    cl = _lines("claude_session_hello")
    extra = orjson.dumps({"type": "brand-new-line", "sessionId": "s", "timestamp": "2026-11-25T06:02:05.000Z"})
    events = _events(_import_lines(tmp_path, [*cl, extra], "c.jsonl"))
    assert [e.data["reason"] for e in events if e.kind == "unparsed"] == ["unknown session line type 'brand-new-line'"]
    cx = _lines("codex_rollout_hello")
    extra = orjson.dumps({"timestamp": "2026-11-25T06:02:24.000Z", "type": "event_msg",
                          "payload": {"type": "brand_new_event"}})
    events = _events(_import_lines(tmp_path, [*cx, extra], "x.jsonl"))
    assert [e.data["reason"] for e in events if e.kind == "unparsed"] == ["unknown event_msg type 'brand_new_event'"]


def test_detected_by_content_whatever_the_name(tmp_path) -> None:
    for name, dialect in (("claude_session_hello", "claude-session"), ("codex_rollout_hello", "codex-rollout")):
        src = tmp_path / f"{dialect}-renamed.txt"
        src.write_bytes((SAMPLES / f"{name}.jsonl").read_bytes())
        for extra in ((), ("--kind", "stdout")):
            cap = _import(tmp_path, src, "--force", *extra)
            events = _events(cap)
            assert {e.dialect for e in events} == {dialect}, extra
            # and also when the import wrote no hint at all: the sniff decides from the lines
            with CaptureReader(cap) as r:
                recs = [dict(x) for x in r]
            for rec in recs:
                rec.pop("dialect", None)
            assert {e.dialect for e in decode_records(recs)} == {dialect}


def _msgs(path: Path) -> list[dict]:
    out = []
    for x in path.read_bytes().splitlines()[:8]:
        try:
            out.append({"type": "msg", "ch": "stdout", "dir": "s2c", "json": orjson.loads(x)})
        except orjson.JSONDecodeError:
            out.append({"type": "msg", "ch": "stdout", "dir": "s2c", "text": x.decode("utf-8", "replace")})
    return out


@pytest.mark.parametrize("sample", sorted(p for p in [*SAMPLES.glob("*.jsonl"), *(SAMPLES / "public").glob("*.*json*")]
                                          if not p.name.endswith(("_requests.jsonl", "_ws_frames.jsonl"))),
                         ids=lambda p: p.name)
def test_sniffs_claim_only_their_own_files(sample: Path) -> None:
    msgs = _msgs(sample)
    own = ("claude-session" if sample.name.startswith("claude_session_") else
           "codex-rollout" if sample.name.startswith("codex_rollout_") else None)
    assert (claude_sniff(None, msgs) is not None) == (own == "claude-session")
    assert (codex_sniff(None, msgs) is not None) == (own == "codex-rollout")
    # and each of the first lines alone is enough for a session file
    if own is not None:
        sniff = DIALECTS[own].sniff
        assert sniff is not None and all(sniff(None, [m]) for m in msgs if "json" in m)


def test_sniffs_never_raise_on_odd_input() -> None:
    odd = [{"json": {"type": ["x"], "sessionId": 1, "payload": []}}, {"json": None}, {"text": "x"}, {},
           {"json": {"type": "event_msg", "payload": {}, "timestamp": 5}}, {"ch": ["x"], "json": {}}]
    for sniff in (claude_sniff, codex_sniff):
        assert sniff(None, odd) is None
        assert sniff({"kind": ["odd"]}, []) is None


def test_convert_and_report_name_the_dialect(caps, tmp_path) -> None:
    for name in ("claude_session_tool_bash_continued", "codex_rollout_tool_resumed"):
        dialect = GOLDEN[name][0]
        res = run_wirecap("convert", str(caps[name]))
        assert res.returncode == 0, res.stderr.decode()
        assert {json.loads(x)["dialect"] for x in res.stdout.splitlines()} == {dialect}
        res = run_wirecap("report", str(caps[name]), "-f", "md")
        assert res.returncode == 0, res.stderr.decode()
        assert dialect in res.stdout.decode()
        res = run_wirecap("stats", "--json", str(caps[name]))
        assert res.returncode == 0 and json.loads(res.stdout)[0]["dialect"] == dialect


# --- arbitrary input never raises (shaped like each file's lines, arbitrary values inside) -------------------
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=12),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=4), max_leaves=12)
_fields = st.sampled_from(["id", "call_id", "role", "content", "usage", "info", "item", "arguments", "output",
                           "model", "text", "summary", "message", "exit_code", "response_id", "last_token_usage",
                           "total_token_usage", "tool_use_id", "is_error", "input", "name", "stop_reason"])
_payload_types = st.sampled_from(["message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
                                  "custom_tool_call_output", "local_shell_call", "web_search_call", "task_started",
                                  "task_complete", "turn_aborted", "token_count", "error", "stream_error",
                                  "item_completed", "exec_command_end", "warning", "x"])
_rollout_line = st.builds(
    lambda t, pt, extra, inner: {"timestamp": "2026-01-01T00:00:00Z", "type": t,
                                 "payload": {"type": pt, **extra, "info": inner, "item": inner}},
    st.sampled_from(sorted(LINE_TYPES) + ["x"]), _payload_types, st.dictionaries(_fields, _json, max_size=5), _json)
_block = st.builds(lambda bt, extra: {"type": bt, **extra},
                   st.sampled_from(["text", "thinking", "redacted_thinking", "tool_use", "tool_result",
                                    "web_search_tool_result", "image", "x"]),
                   st.dictionaries(_fields, _json, max_size=4))
_session_line = st.builds(
    lambda t, extra, content, msg: {"type": t, "sessionId": "s", "timestamp": "2026-01-01T00:00:00Z", **extra,
                                    "message": {**msg, "content": content}},
    st.sampled_from(["user", "assistant", "system", "queue-operation", "attachment", "summary", "last-prompt",
                     "mode", "x"]),
    st.dictionaries(st.sampled_from(["isMeta", "isApiErrorMessage", "subtype", "error", "attachment", "uuid"]),
                    _json, max_size=3),
    st.lists(_block, max_size=3) | _json, st.dictionaries(_fields, _json, max_size=4))


def _recs(objs: list) -> list[dict]:
    recs: list[dict] = [{"seq": 1, "t": 0.0, "type": "open", "ch": "proc", "kind": "process", "argv": []},
                        {"seq": 2, "t": 0.0, "type": "open", "ch": "stdout", "kind": "pipe", "proc": "proc",
                         "stream": "stdout"}]
    for o in objs:
        recs.append({"seq": len(recs) + 1, "t": 0.0, "type": "msg", "ch": "stdout", "dir": "s2c", "json": o})
    recs.append({"seq": len(recs) + 1, "t": 1.0, "type": "close", "ch": "proc", "exit_code": 0})
    return recs


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_rollout_line | _session_line | _json, min_size=1, max_size=8))
def test_arbitrary_session_lines_never_raise(objs: list) -> None:
    recs = _recs(objs)
    for name in ("claude-session", "codex-rollout"):
        events = list(decode_records(recs, dialect=name))
        assert all(e.seq and e.dialect == name for e in events)
        assert not [f for f in validate_records(recs, dialect=name) if f.rule == "decoder-error"]
        stats_records(recs, dialect=name)
    list(decode_records(recs))  # detection (the sniffs) too


def test_sidechain_lines_are_the_subagents_not_new_turns(tmp_path) -> None:
    # a subagent's lines (isSidechain, as older Claude Code versions wrote them into the session file):
    # the real prompt and answer of the hello session, copied as a sidechain exchange
    lines = _lines("claude_session_hello")
    objs = [json.loads(x) for x in lines]
    user = next(o for o in objs if o["type"] == "user")
    answer = next(o for o in objs if o["type"] == "assistant")
    side_user = {**user, "isSidechain": True, "uuid": "side-1", "message": {"role": "user", "content": "subtask"}}
    side_answer = {**answer, "isSidechain": True, "uuid": "side-2",
                   "message": {**answer["message"], "id": "msg_side"}}
    at = lines.index(next(x for x in lines if b'"type":"assistant"' in x)) + 1
    derived = [*lines[:at], orjson.dumps(side_user), orjson.dumps(side_answer), *lines[at:]]
    events = _events(_import_lines(tmp_path, derived))
    assert [e.data["prompt"] for e in events if e.kind == "turn.started"] == ["say hello"]
    assert [e.role for e in events if e.item == "message" and e.kind == "item.completed"] == [
        "user", "assistant", "user", "subagent"]
    assert len([e for e in events if e.kind == "usage"]) == 2  # the subagent's call is a call too


def test_an_interruption_ends_the_turn_and_is_no_prompt(caps) -> None:
    # the public 2.1.38 session: "start phoenix in background", a tool call, "[Request interrupted by user]"
    events = _events(caps["public/claude_session_spotter_tool_heavy_v2.1.38"])
    prompts = [e.data["prompt"] for e in events if e.kind == "turn.started"]
    assert not [p for p in prompts if p and p.startswith("[Request interrupted")]
    assert prompts[0] == "start phoenix in background"
    ends = [e.data["stop_reason"] for e in events if e.kind == "turn.ended"]
    assert ends[0] == "interrupted" and ends.count("interrupted") == 2
    assert len([e for e in events if e.item == "status" and e.data.get("subtype") == "interrupted"]) == 2
