"""diff_captures on real samples and hand-built event streams: each difference reported exactly, by path."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import orjson
import pytest
from conftest import SAMPLES

from wirecap.analysis.diff import diff_captures, parse_threshold
from wirecap.analysis.diff.render import render_summary, render_unified
from wirecap.capture.writer import CaptureWriter, default_origin
from wirecap.errors import WirecapError
from wirecap.events import Event

CLAUDE_ARGV = ["claude", "-p", "say hello", "--output-format", "stream-json", "--verbose"]


# --- helpers (also used by test_diff_cli.py) ---------------------------------------------------------
def sample_lines(name: str) -> list[bytes]:
    return [line.rstrip(b"\n") for line in (SAMPLES / name).read_bytes().splitlines() if line.strip()]


def write_capture(path: Path, lines: list[bytes], *, argv: list[str] | None = None, t0: float = 0.0,
                  step: float = 0.01, cwd: str = "/work") -> Path:
    """A tee-like capture: a process with its stdout, one message per line (explicit times)."""
    w = CaptureWriter(str(path), origin=default_origin("test"), force=True)
    t = t0
    w.open("proc", "process", t=t, argv=argv or CLAUDE_ARGV, cwd=cwd, env={}, pid=4242)
    w.open("stdout", "pipe", t=t, proc="proc", stream="stdout")
    for line in lines:
        t += step
        w.msg("stdout", "s2c", line, t=t)
    t += step
    w.close_channel("stdout", t=t, bytes=sum(len(x) for x in lines), lines=len(lines))
    w.close_channel("proc", t=t, exit_code=0, duration=t)
    w.close()
    return path


def capture_of(tmp_path: Path, name: str, lines: list[bytes], **kw) -> str:
    return str(write_capture(tmp_path / name, lines, **kw))


def write_events(path: Path, events: list[Event]) -> str:
    path.write_bytes(b"".join(orjson.dumps(e.to_json()) + b"\n" for e in events))
    return str(path)


def rerun(lines: list[bytes], *, merge_deltas: bool = False) -> list[bytes]:
    """The same session as if captured again: fresh uuids, message/request ids, timestamps, and
    (optionally) the streamed text split into different chunks."""
    ids: dict[str, str] = {}

    def fresh(m: re.Match[str]) -> str:
        old = m.group(0)
        if old not in ids:
            if re.fullmatch(r"[0-9a-f-]{36}", old):
                ids[old] = str(uuid.uuid4())
            else:
                ids[old] = old.split("_")[0] + "_" + uuid.uuid4().hex[:24]
        return ids[old]

    out: list[bytes] = []
    for raw in lines:
        s = raw.decode()
        s = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|(?:msg|req|toolu)_[0-9a-f]{24}",
                   fresh, s)
        s = re.sub(r'"timestamp":"[^"]*"', '"timestamp":"2027-01-01T00:00:00.000Z"', s)
        out.append(s.encode())
    if merge_deltas:
        merged: list[bytes] = []
        pending: dict | None = None
        for raw in out:
            obj = orjson.loads(raw)
            ev = obj.get("event") if obj.get("type") == "stream_event" else None
            if ev and ev.get("type") == "content_block_delta":
                if pending is None:
                    pending = obj
                else:
                    pending["event"]["delta"]["text"] += ev["delta"]["text"]
                    merged.append(orjson.dumps(pending))
                    pending = None
                continue
            if pending is not None:
                merged.append(orjson.dumps(pending))
                pending = None
            merged.append(raw)
        out = merged
    return out


def changes(result):
    return [(c.op, c.a.name if c.a else None, c.b.name if c.b else None) for p in result.pairs for c in p.changes]


def fields(result):
    return [(path, old, new) for p in result.pairs for c in p.changes for path, old, new in c.fields]


# --- the same session twice ---------------------------------------------------------------------------
def test_same_session_twice_is_equal(tmp_path):
    lines = sample_lines("claude_code_partial_text.jsonl")
    a = capture_of(tmp_path, "a.jsonl", lines)
    b = capture_of(tmp_path, "b.jsonl", rerun(lines, merge_deltas=True), step=0.03)
    assert rerun(lines, merge_deltas=True) != lines  # ids and chunking really differ
    result = diff_captures(a, b)
    assert result.equal, render_unified(result)
    assert render_unified(result).count("\n") == 1
    assert result.summary_line().startswith("equal: no differences")
    # the wire level compares message by message: same chunks, other ids and times -> equal
    c = capture_of(tmp_path, "c.jsonl", rerun(lines), step=0.02)
    assert diff_captures(a, c, level="wire").equal
    rechunked = diff_captures(a, b, level="wire")
    assert {c.kind for p in rechunked.pairs for c in p.changes} == {"msg"}


def test_chunks_flag_compares_chunk_boundaries(tmp_path):
    lines = sample_lines("claude_code_partial_text.jsonl")
    a = capture_of(tmp_path, "a.jsonl", lines)
    b = capture_of(tmp_path, "b.jsonl", rerun(lines, merge_deltas=True))
    result = diff_captures(a, b, chunks=True)
    assert not result.equal
    assert changes(result) == [("changed", "message[0]", "message[0]")]
    [(path, old, new)] = fields(result)
    assert path == "message[0].chunks"
    assert "".join(old) == "".join(new) == "Hello! This is a reply from the fake Anthropic server."
    assert len(old) == 10 and len(new) == 5


def test_streamed_and_whole_message_compare_as_text(tmp_path):
    """--include-partial-messages vs not: the message text is the same; only real extras are reported."""
    a = capture_of(tmp_path, "a.jsonl", sample_lines("claude_code_hello.jsonl"))
    b = capture_of(tmp_path, "b.jsonl", sample_lines("claude_code_partial_text.jsonl"))
    result = diff_captures(a, b)
    kinds = {(c.op, c.kind) for p in result.pairs for c in p.changes}
    assert ("changed", "message") not in kinds and ("added", "message") not in kinds
    assert ("added", "status") in kinds  # the partial run really printed a system/status line


# --- hand-built event streams ----------------------------------------------------------------------------
def _ev(kind, seq, **kw):
    return Event(kind=kind, ch="stdout", seq=(seq,), t=seq / 10, dialect="claude-code", **kw)


def session(tools: list[tuple[str, dict, dict | None]], *, sid="s-1", error_for: int | None = None) -> list[Event]:
    """A session: a prompt, then per tool (name, input, result) a call and its result, then a reply."""
    evs = [_ev("session.started", 1, data={"session_id": sid, "model": "m1", "version": "1.0"}),
           _ev("turn.started", 2, data={"prompt": "do it"})]
    seq = 3
    for k, (name, inp, res) in enumerate(tools):
        cid = f"{sid}-call-{k}"
        evs.append(_ev("item.completed", seq, item="tool_call", id=cid, role="assistant",
                       data={"name": name, "input": inp, "call_id": cid}))
        seq += 1
        if error_for == k:
            evs.append(_ev("error", seq, data={"message": "tool crashed", "code": "tool", "fatal": False}))
        elif res is not None:
            evs.append(_ev("item.completed", seq, item="tool_result", id=cid + "r",
                           data={"call_id": cid, **res}))
        seq += 1
    evs.append(_ev("item.completed", seq, item="message", id=f"{sid}-m", role="assistant", data={"text": "done"}))
    evs.append(_ev("turn.ended", seq + 1, data={"stop_reason": "end_turn", "is_error": False, "duration_ms": seq}))
    return evs


TOOLS = [
    ("Bash", {"command": "ls", "description": "list"}, {"output": "a\nb", "is_error": False}),
    ("Read", {"file_path": "a"}, {"output": "text of a", "is_error": False}),
    ("Bash", {"command": "ls"}, {"output": "a\nb", "is_error": False}),
]


def _diff_sessions(tmp_path, a_events, b_events, **kw):
    return diff_captures(write_events(tmp_path / "a.events.jsonl", a_events),
                         write_events(tmp_path / "b.events.jsonl", b_events), **kw)


def test_event_files_differing_only_in_ids_are_equal(tmp_path):
    result = _diff_sessions(tmp_path, session(TOOLS), session(TOOLS, sid="other"))
    assert result.equal
    assert result.items_a == result.items_b == 7  # session, turn, 3 tool calls, message, turn end


def test_one_changed_tool_call_argument(tmp_path):
    b_tools = [*TOOLS[:2], ("Bash", {"command": "ls -la"}, TOOLS[2][2])]
    result = _diff_sessions(tmp_path, session(TOOLS), session(b_tools, sid="s-2"))
    assert changes(result) == [("changed", "tool_call[2]", "tool_call[2]")]
    assert fields(result) == [("tool_call[2].input.command", "ls", "ls -la")]
    assert 'tool_call[2].input.command: "ls" -> "ls -la"' in render_unified(result)


def test_an_extra_tool_call(tmp_path):
    extra = ("Grep", {"pattern": "x"}, {"output": "", "is_error": False})
    result = _diff_sessions(tmp_path, session(TOOLS), session([TOOLS[0], extra, *TOOLS[1:]]))
    assert changes(result) == [("added", None, "tool_call[1]")]
    text = render_unified(result)
    assert '+ tool_call[1] Grep {"pattern":"x"}' in text
    assert "1 difference: 1 added, 0 removed, 0 changed" in text


def test_a_missing_result(tmp_path):
    b_tools = [TOOLS[0], (TOOLS[1][0], TOOLS[1][1], None), TOOLS[2]]
    result = _diff_sessions(tmp_path, session(TOOLS), session(b_tools))
    assert changes(result) == [("changed", "tool_call[1]", "tool_call[1]")]
    from wirecap.analysis.normalize import MISSING

    assert [(p, o, n) for p, o, n in fields(result)] == [
        ("tool_call[1].result", {"output": "text of a", "is_error": False}, None)]
    assert MISSING is not None


def test_an_error_instead_of_a_result(tmp_path):
    result = _diff_sessions(tmp_path, session(TOOLS), session(TOOLS, error_for=0))
    assert changes(result) == [("changed", "tool_call[0]", "tool_call[0]"), ("added", None, "error[0]")]
    assert fields(result) == [("tool_call[0].result", {"output": "a\nb", "is_error": False}, None)]
    assert "+ error[0] tool crashed" in render_unified(result)


def test_tool_result_is_error_flag(tmp_path):
    b_tools = [(TOOLS[0][0], TOOLS[0][1], {"output": "permission denied", "is_error": True}), *TOOLS[1:]]
    result = _diff_sessions(tmp_path, session(TOOLS), session(b_tools))
    assert sorted(fields(result)) == [("tool_call[0].result.is_error", False, True),
                                      ("tool_call[0].result.output", "a\nb", "permission denied")]


def test_ignore_and_keep(tmp_path):
    b_tools = [("Bash", {"command": "ls", "description": "LIST"}, TOOLS[0][2]), *TOOLS[1:]]
    a, b = session(TOOLS), session(b_tools, sid="s-9")
    assert fields(_diff_sessions(tmp_path, a, b)) == [("tool_call[0].input.description", "list", "LIST")]
    assert _diff_sessions(tmp_path, a, b, ignore=["tool_call[*].input.description"]).equal
    # keep brings a volatile field back: the session ids now differ
    kept = _diff_sessions(tmp_path, a, b, ignore=["**.description"], keep=["session[0].session_id"])
    assert fields(kept) == [("session[0].session_id", "s-1", "s-9")]


def test_bad_path_is_a_clear_error(tmp_path):
    a = write_events(tmp_path / "a.events.jsonl", session(TOOLS))
    with pytest.raises(WirecapError, match="bad path"):
        diff_captures(a, a, ignore=["tool_call[*"])


# --- channels ------------------------------------------------------------------------------------------
def _anthropic_exchange(w: CaptureWriter, text: str, model: str, t: float) -> None:
    ch = w.new_channel("http")
    w.open(ch, "http", t=t, url="http://127.0.0.1:9/v1/messages", method="POST", headers={})
    w.msg(ch, "c2s", orjson.dumps({"model": model, "max_tokens": 10, "stream": True,
                                   "messages": [{"role": "user", "content": f"say {text}"}]}), t=t)
    w.response(ch, 200, {"content-type": "text/event-stream"}, t=t + 0.01, sse=True)
    mid = "msg_" + uuid.uuid4().hex[:24]
    events = [
        ("message_start", {"type": "message_start", "message": {
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": text}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": 3}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    for k, (name, obj) in enumerate(events):
        w.msg(ch, "s2c", orjson.dumps(obj), t=t + 0.02 + k / 1000, sse={"event": name})
    w.close_channel(ch, t=t + 0.1, status=200, ttfb=0.01, duration=0.1, bytes=100)


def _http_capture(path: Path, order: list[tuple[str, str]]) -> str:
    w = CaptureWriter(str(path), origin=default_origin("test"), force=True)
    for k, (text, model) in enumerate(order):
        _anthropic_exchange(w, text, model, t=k * 0.2)
    w.close()
    return str(path)


def test_reordered_independent_channels_are_not_a_difference(tmp_path):
    a = _http_capture(tmp_path / "a.jsonl", [("hello", "big-model"), ("title please", "small-model")])
    b = _http_capture(tmp_path / "b.jsonl", [("title please", "small-model"), ("hello", "big-model")])
    for level in ("events", "wire"):
        result = diff_captures(a, b, level=level)
        assert result.equal, render_unified(result)
        assert [(p.a.key, p.b.key) for p in result.pairs if p.a and p.b] == [("http-1", "http-2"), ("http-2", "http-1")]


def test_changed_channel_content_is_reported_on_the_paired_channel(tmp_path):
    a = _http_capture(tmp_path / "a.jsonl", [("hello", "big-model"), ("title please", "small-model")])
    b = _http_capture(tmp_path / "b.jsonl", [("title please", "small-model"), ("hi there", "big-model")])
    result = diff_captures(a, b)
    assert changes(result) == [("changed", "turn[0]", "turn[0]"), ("changed", "message[0]", "message[0]")]
    assert fields(result) == [("turn[0].prompt", "say hello", "say hi there"), ("message[0].text", "hello", "hi there")]
    assert [(p.a.key, p.b.key) for p in result.pairs if p.changes] == [("http-1", "http-2")]
    wire = diff_captures(a, b, level="wire")
    wf = fields(wire)
    assert ("msg[0].messages[0].content", "say hello", "say hi there") in wf
    assert ("msg[3].delta.text", "hello", "hi there") in wf
    assert len(wf) == 2


def test_ch_picks_one_channel_per_side(tmp_path):
    a = _http_capture(tmp_path / "a.jsonl", [("hello", "big-model"), ("title please", "small-model")])
    b = _http_capture(tmp_path / "b.jsonl", [("title please", "small-model"), ("hello", "big-model")])
    assert diff_captures(a, b, ch="http-1:http-2").equal
    crossed = diff_captures(a, b, ch="http-1")
    assert fields(crossed) == [("message[0].text", "hello", "title please")] or not crossed.equal
    with pytest.raises(WirecapError, match="no channel 'ws-7'"):
        diff_captures(a, b, ch="ws-7")


# --- Claude Code versions --------------------------------------------------------------------------------
def test_claude_code_217_vs_21197_hello(tmp_path):
    a = capture_of(tmp_path, "v217.jsonl", sample_lines("public/claude-agent-sdk-gleam_claude_basic_query_v2.1.7.ndjson"))
    b = capture_of(tmp_path, "v21197.jsonl", sample_lines("claude_code_hello.jsonl"))
    result = diff_captures(a, b)
    fs = {p: (o, n) for p, o, n in fields(result)}
    assert fs["session[0].version"] == ("2.1.7", "2.1.197")
    assert fs["session[0].model"] == ("claude-opus-4-5-20251101", "claude-opus-4-8[1m]")
    assert fs["message[0].text"] == ("4", "Hello! This is a reply from the fake Anthropic server.")
    assert fs["turn_end[0].result"] == ("4", "Hello! This is a reply from the fake Anthropic server.")
    # not noise: ids, uuids, durations are never reported
    assert not [p for p in fs if re.search(r"session_id|uuid|message_id|duration", p)]
    # the unified view is short and readable
    assert len(render_unified(result).splitlines()) < 40


def test_claude_code_213_vs_21197_tool_session(tmp_path):
    a = capture_of(tmp_path, "v213.jsonl", sample_lines("public/claude-agent-sdk-gleam_claude_tool_session_v2.1.3.jsonl"))
    b = capture_of(tmp_path, "v21197.jsonl", sample_lines("claude_code_tool_bash.jsonl"))
    result = diff_captures(a, b)
    fs = {p: (o, n) for p, o, n in fields(result)}
    assert fs["tool_call[0].input.command"] == ("ls -la", "echo hi")
    assert fs["tool_call[0].input.description"] == ("List files in current directory", "Run the requested command")
    assert fs["session[0].version"] == ("2.1.3", "2.1.197")
    assert fs["tool_call[0].result.output"][1] == "hi"
    added = [(c.kind, c.b.describe()) for p in result.pairs for c in p.changes if c.op == "added"]
    assert ("message", "I'll run that command.") in added
    assert ("message", "The tool returned: hi") in added
    assert not [p for p in fs if re.search(r"session_id|uuid|call_id|duration", p)]
    table = render_summary(result)
    assert re.search(r"tool_call\s+0\s+0\s+1", table)
    assert re.search(r"message\s+2\s+0\s+0", table)
    # wire level: the same story in the raw lines, ids hidden
    wire = diff_captures(a, b, level="wire")
    wfs = {p for p, _, _ in fields(wire)}
    assert "msg[1].message.content[0].input.command" in wfs
    assert not [p for p in wfs if re.search(r"session_id|uuid", p)]


# --- bad input ---------------------------------------------------------------------------------------------
def test_different_dialects_are_an_error(tmp_path):
    a = capture_of(tmp_path, "claude.jsonl", sample_lines("claude_code_hello.jsonl"))
    b = capture_of(tmp_path, "codex.jsonl", sample_lines("codex_hello.jsonl"),
                   argv=["codex", "exec", "--json", "say hello"])
    for level in ("events", "wire"):
        with pytest.raises(WirecapError, match="different dialects: .* is claude-code but .* is codex-exec"):
            diff_captures(a, b, level=level)


def test_missing_file_and_not_a_capture(tmp_path):
    a = capture_of(tmp_path, "a.jsonl", sample_lines("claude_code_hello.jsonl"))
    with pytest.raises(WirecapError, match="nope.jsonl: no such file"):
        diff_captures(a, str(tmp_path / "nope.jsonl"))
    with pytest.raises(WirecapError, match="not a wirecap capture"):
        diff_captures(str(SAMPLES / "claude_code_hello.jsonl"), a)
    with pytest.raises(WirecapError, match=r"cannot compare a capture \(.*\) with a universal-event file \("):
        diff_captures(a, write_events(tmp_path / "e.jsonl", session(TOOLS)))
    with pytest.raises(WirecapError, match=r"cannot compare a universal-event file \(.*\) with a capture \("):
        diff_captures(write_events(tmp_path / "e2.jsonl", session(TOOLS)), a)


@pytest.mark.parametrize("spec", ["nan", "inf", "-inf%", "NaN%"])
def test_timing_threshold_must_be_finite(spec):
    # float("nan") parsed, and every comparison with it is false: --timing nan silently flagged nothing.
    with pytest.raises(WirecapError, match="bad timing threshold .*finite"):
        parse_threshold(spec)


# --- stats, timing, notes, json -------------------------------------------------------------------------------
def test_stats_level_side_by_side(tmp_path):
    a = capture_of(tmp_path, "a.jsonl", sample_lines("claude_code_hello.jsonl"))
    b = capture_of(tmp_path, "b.jsonl", sample_lines("claude_code_tool_bash.jsonl"))
    result = diff_captures(a, b, level="stats")
    rows = {r["metric"]: r for r in result.stats}
    assert rows["tool_calls"]["a"] == 0 and rows["tool_calls"]["b"] == 1 and rows["tool_calls"]["differs"]
    assert rows["cost_usd"]["delta"] == pytest.approx(0.19533 - 0.097495)
    assert not rows["duration"]["differs"]  # timings are flagged only by --timing
    assert not result.equal
    same = diff_captures(a, a, level="stats")
    assert same.equal


def test_timing_flags_a_ttft_regression(tmp_path):
    lines = sample_lines("claude_code_hello.jsonl")
    a = capture_of(tmp_path, "fast.jsonl", lines, step=0.1)
    b = capture_of(tmp_path, "slow.jsonl", rerun(lines), step=0.3)
    assert diff_captures(a, b).equal  # content is the same
    result = diff_captures(a, b, timing_threshold="50%")
    assert not result.equal
    flagged = {f.metric for f in result.timing}
    assert "ttft" in flagged
    assert "timing: ttft" in render_unified(result)
    assert diff_captures(a, b, timing_threshold="500%").equal  # 3x slower is under a +500% threshold


def test_notes_are_shown_beside_the_items(tmp_path):
    notes = pytest.importorskip("wirecap.analysis.notes")
    a = capture_of(tmp_path, "a.jsonl", sample_lines("public/claude-agent-sdk-gleam_claude_tool_session_v2.1.3.jsonl"))
    b = capture_of(tmp_path, "b.jsonl", sample_lines("claude_code_tool_bash.jsonl"))
    notes.add_note(b, tag="bug", text="why echo?", author="t", seq=5, ch="stdout")  # the tool_use line
    text = render_unified(diff_captures(a, b))
    lines = text.splitlines()
    k = next(i for i, line in enumerate(lines) if "why echo?" in line)
    assert "note B" in lines[k] and "[bug]" in lines[k]
    assert any(line.startswith("~ tool_call[0]") for line in lines[max(0, k - 6):k])


def test_json_result(tmp_path):
    b_tools = [*TOOLS[:2], ("Bash", {"command": "ls -la"}, TOOLS[2][2])]
    result = _diff_sessions(tmp_path, session(TOOLS), session(b_tools))
    js = orjson.loads(orjson.dumps(result.to_json()))
    assert js["equal"] is False and js["counts"] == {"added": 0, "removed": 0, "changed": 1}
    [ch] = js["channels"]
    [c] = ch["changes"]
    assert c["fields"] == [{"path": "tool_call[2].input.command", "a": "ls", "b": "ls -la"}]
    assert result.summary_rows() == [{"kind": "tool_call", "added": 0, "removed": 0, "changed": 1}]


def test_the_recorded_cwd_is_masked_at_the_events_level_before_any_item_states_it(tmp_path):
    """Recorded in one folder, replayed in another: a text naming the cwd's project slug (as CodeBuddy's
    memory folder `~/.codebuddy/projects/<slug>/memory` in its first prompt) before anything in the
    stream states the cwd compares equal, because the process record's cwd is learned first."""
    def run(cwd: str) -> list[bytes]:
        slug = cwd.strip("/").replace("/", "-")
        text = f"Your memory is in /root/.claude/projects/{slug}/memory and the code in {cwd}/src."
        return [orjson.dumps(x) for x in (
            {"type": "system", "subtype": "init", "session_id": "s-1", "tools": [], "model": "m"},
            {"type": "assistant", "session_id": "s-1", "message": {
                "id": "msg_1", "role": "assistant", "content": [{"type": "text", "text": text}]}},
            {"type": "result", "subtype": "success", "is_error": False, "result": text, "session_id": "s-1"})]
    a = capture_of(tmp_path, "a.jsonl", run("/tmp/suite/rec/work"), cwd="/tmp/suite/rec/work")
    b = capture_of(tmp_path, "b.jsonl", run("/tmp/suite/replay-elsewhere/work"),
                   cwd="/tmp/suite/replay-elsewhere/work")
    assert diff_captures(a, b).equal, render_unified(diff_captures(a, b))
    c = capture_of(tmp_path, "c.jsonl", run("/tmp/suite/rec/work").copy(), cwd="/tmp/suite/replay-elsewhere/work")
    assert not diff_captures(a, c).equal  # the other side's own folder is masked, not any folder


def test_compressed_captures_are_read_by_their_magic_bytes_whatever_their_name(tmp_path: Path) -> None:
    """gzip and zstd are recognised as the capture reader recognises them (by content, not suffix): a zstd
    capture named `.capture` diffs equal to itself; a compressed file cut before its first line is a clear error."""
    import shutil

    from wirecap.analysis.diff import input_kind
    from wirecap.errors import WirecapError

    src = Path(__file__).parents[1] / "fixtures" / "stats" / "codex_resume.jsonl.zst"
    renamed = tmp_path / "run.capture"
    shutil.copy(src, renamed)
    assert input_kind(str(renamed)) == "capture"
    assert diff_captures(str(renamed), str(src)).equal
    torn = tmp_path / "torn.jsonl.zst"
    torn.write_bytes(src.read_bytes()[:40])
    with pytest.raises(WirecapError, match="torn.jsonl.zst: cannot read: zstd stream cut short"):
        input_kind(str(torn))
