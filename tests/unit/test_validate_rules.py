"""Validation rules on hand-made broken captures, and the validate / convert / stats commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_wirecap

from wirecap.analysis.validate import validate_capture
from wirecap.capture.writer import CaptureWriter

CAPS = Path(__file__).resolve().parents[1] / "fixtures" / "captures"
CLAUDE_ARGV = ["claude", "-p", "hi", "--output-format", "stream-json", "--verbose"]
INIT = {"type": "system", "subtype": "init", "session_id": "s1", "model": "m", "claude_code_version": "2.1.0"}


def _assistant(mid: str, block: dict) -> dict:
    return {"type": "assistant", "message": {"id": mid, "model": "m", "role": "assistant", "content": [block],
                                             "usage": {"input_tokens": 5, "output_tokens": 1}}}


def _result(**kw) -> dict:
    return {"type": "result", "subtype": "success", "is_error": False, "result": "ok", "total_cost_usd": 0.1,
            "usage": {"input_tokens": 5, "output_tokens": 2}, **kw}


def write_proc(path: Path, lines: list, exit_code: int | None = 0) -> str:
    with CaptureWriter(path) as w:
        w.open("proc", "process", argv=CLAUDE_ARGV, t=0.0)
        w.open("stdout", "pipe", proc="proc", stream="stdout", t=0.0)
        for i, line in enumerate(lines):
            w.msg("stdout", "s2c", line if isinstance(line, str) else json.dumps(line), t=0.1 * (i + 1))
        if exit_code is not None:
            w.close_channel("proc", exit_code=exit_code, duration=1.0, t=0.1 * (len(lines) + 1))
    return str(path)


def write_ws(path: Path, frames: list[tuple[float, str, dict]], close_t: float) -> str:
    with CaptureWriter(path) as w:
        w.open("ws-1", "ws", url="ws://127.0.0.1:1/ws", headers={}, t=0.0)
        for t, d, obj in frames:
            w.msg("ws-1", d, json.dumps(obj), t=t)
        w.close_channel("ws-1", code=1000, reason="", by="client", t=close_t)
    return str(path)


def rules(path: str, **options) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in validate_capture(path, options=options or None):
        out.setdefault(f.rule, []).append(f)
    return out


def test_claude_clean_run_has_no_findings(tmp_path: Path) -> None:
    cap = write_proc(tmp_path / "ok.jsonl", [INIT, _assistant("m1", {"type": "text", "text": "hi"}), _result()])
    assert rules(cap) == {}


def test_claude_is_error_with_exit_0(tmp_path: Path) -> None:
    lines = [INIT, _assistant("m1", {"type": "text", "text": "x"}),
             _result(is_error=True, result="API Error: 529 overloaded", api_error_status=529)]
    found = rules(write_proc(tmp_path / "e.jsonl", lines, exit_code=0))
    assert found["cc-result-error"][0].seq == 5  # subtype success, is_error true: still an error
    assert found["cc-error-exit-0"][0].severity == "error"
    found = rules(write_proc(tmp_path / "e1.jsonl", lines, exit_code=1))
    assert "cc-error-exit-0" not in found and "cc-result-error" in found


def test_claude_missing_init_result_and_tool_result(tmp_path: Path) -> None:
    lines = [_assistant("m1", {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}})]
    found = rules(write_proc(tmp_path / "m.jsonl", lines))
    assert set(found) >= {"cc-missing-init", "cc-missing-result", "cc-tool-use-without-result"}
    assert found["cc-tool-use-without-result"][0].seq == 3


def test_claude_empty_result_permission_denials_invalid_json(tmp_path: Path) -> None:
    lines = [INIT, "not json {", _assistant("m1", {"type": "text", "text": ""}),
             _result(result="", permission_denials=[{"tool_name": "Bash", "tool_use_id": "t"}])]
    found = rules(write_proc(tmp_path / "p.jsonl", lines))
    assert found["invalid-json"][0].seq == 4
    assert found["cc-empty-result"][0].severity == "warning"
    assert "Bash" in found["cc-permission-denied"][0].message
    assert found["unparsed"][0].seq == 4


def test_codebuff_missing_ack_prompt_without_response_and_tool_call(tmp_path: Path) -> None:
    frames = [
        (0.1, "c2s", {"type": "action", "txid": 0, "data": {"type": "prompt", "promptId": "p1", "prompt": "hi"}}),
        (0.2, "s2c", {"type": "ack", "txid": 0, "success": True}),
        (0.3, "s2c", {"type": "action", "data": {"type": "response-chunk", "userInputId": "p1", "chunk": "he"}}),
        (0.4, "s2c", {"type": "action", "data": {"type": "response-chunk", "userInputId": "zz", "chunk": "x"}}),
        (0.5, "s2c", {"type": "action", "data": {"type": "tool-call-request", "requestId": "r1", "toolName": "run",
                                                 "input": {}, "timeout": 1000}}),
        (0.6, "c2s", {"type": "action", "txid": 1, "data": {"type": "init", "fingerprintId": "f"}}),
        (7.0, "s2c", {"type": "ack", "txid": 0, "success": True}),
    ]
    found = rules(write_ws(tmp_path / "w.jsonl", frames, 8.0))
    assert found["cb-ack-missing"][0].seq == 7  # txid 1 never acked
    assert found["cb-ack-duplicate"][0].seq == 8
    assert found["cb-prompt-unanswered"][0].seq == 2
    assert found["cb-chunk-unknown-prompt"][0].seq == 5
    assert "timed out" in found["cb-tool-call-unanswered"][0].message


def test_codebuff_ack_latency_and_heartbeat_gap(tmp_path: Path) -> None:
    frames = [
        (0.1, "c2s", {"type": "ping", "txid": 0}),
        (9.0, "s2c", {"type": "ack", "txid": 0, "success": True}),
        (100.0, "c2s", {"type": "ping", "txid": 1}),
        (100.1, "s2c", {"type": "ack", "txid": 1, "success": True}),
    ]
    cap = write_ws(tmp_path / "h.jsonl", frames, 110.0)
    found = rules(cap)
    assert found["cb-ack-latency"][0].seq == 3
    assert len(found["cb-heartbeat-gap"]) == 1
    relaxed = rules(cap, heartbeat_timeout=200.0, ack_latency=10.0)
    assert "cb-heartbeat-gap" not in relaxed and "cb-ack-latency" not in relaxed


def _sse_capture(path: Path, events: list[tuple[float, str, dict | str]], status: int = 200) -> str:
    with CaptureWriter(path) as w:
        w.open("http-1", "http", url="http://127.0.0.1:1/v1/messages", method="POST", headers={}, t=0.0)
        w.msg("http-1", "c2s", json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}), t=0.0)
        w.response("http-1", status, {"content-type": "text/event-stream"}, sse=True, t=0.05)
        for t, name, data in events:
            w.write("msg", t=t, ch="http-1", dir="s2c", sse={"event": name},
                    **({"json": data} if isinstance(data, dict) else {"text": data}))
        w.close_channel("http-1", status=status, t=events[-1][0] + 0.01 if events else 0.1)
    return str(path)


def test_sse_without_terminal_event_and_gap(tmp_path: Path) -> None:
    evs = [(0.1, "message_start", {"type": "message_start", "message": {"id": "m", "model": "m", "usage": {}}}),
           (0.2, "content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}),
           (45.0, "content_block_delta", {"type": "content_block_delta", "index": 0,
                                          "delta": {"type": "text_delta", "text": "hi"}})]
    found = rules(_sse_capture(tmp_path / "s.jsonl", evs))
    assert found["sse-no-terminal"][0].severity == "error"
    assert found["sse-gap"][0].seq == 6
    assert "sse-gap" not in rules(_sse_capture(tmp_path / "s2.jsonl", evs), gap=60.0)


def test_sse_error_event_and_http_status(tmp_path: Path) -> None:
    assert "sse-error-event" in rules(str(CAPS / "http_anthropic_sse_error.jsonl"))
    assert rules(str(CAPS / "http_anthropic_http_error.jsonl"))["http-status"][0].seq == 3


# --- the commands ------------------------------------------------------------------------------------
def test_validate_cli_exit_codes_and_json(tmp_path: Path) -> None:
    ok = run_wirecap("validate", str(CAPS / "claude_code_hello.jsonl"))
    assert ok.returncode == 0 and b"no findings" in ok.stdout
    bad = run_wirecap("validate", str(CAPS / "http_anthropic_sse_error.jsonl"))
    assert bad.returncode == 1
    assert b"sse-error-event" in bad.stdout and b"severity" in bad.stdout
    js = run_wirecap("validate", "--json", str(CAPS / "http_anthropic_sse_error.jsonl"))
    assert js.returncode == 1
    assert json.loads(js.stdout)[0]["rule"] == "sse-error-event"
    missing = run_wirecap("validate", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and b"no such file" in missing.stderr and b"Traceback" not in missing.stderr


def test_convert_cli_jsonl_with_seqs(tmp_path: Path) -> None:
    out = tmp_path / "ev.jsonl"
    r = run_wirecap("convert", str(CAPS / "claude_code_tool_bash.jsonl"), "-o", str(out))
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in out.read_text().splitlines()]
    assert events[0]["kind"] == "session.started" and events[0]["seq"] == [3]
    assert all(e["seq"] for e in events)
    assert any(e["kind"] == "item.completed" and e.get("item") == "tool_call" for e in events)
    r = run_wirecap("convert", "--dialect", "codex-exec", str(CAPS / "claude_code_hello.jsonl"))
    forced = [json.loads(line) for line in r.stdout.splitlines()]
    assert {e["dialect"] for e in forced} == {"codex-exec"} and any(e["kind"] == "unparsed" for e in forced)
    bad = run_wirecap("convert", "--dialect", "nope", str(CAPS / "claude_code_hello.jsonl"))
    assert bad.returncode == 2 and b"unknown dialect" in bad.stderr


def test_stats_cli_table_and_json() -> None:
    r = run_wirecap("stats", "--json", str(CAPS / "claude_code_hello.jsonl"), str(CAPS / "codex_hello.jsonl"))
    assert r.returncode == 0, r.stderr
    sessions = json.loads(r.stdout)
    assert [s["dialect"] for s in sessions] == ["claude-code", "codex-exec"]
    assert sessions[0]["total_cost"] == 0.097495
    table = run_wirecap("stats", str(CAPS / "claude_code_hello.jsonl"))
    assert b"19449" in table.stdout and b"claude-code" in table.stdout


@pytest.mark.parametrize("argv0", ["claude", "/usr/bin/codex", "node"])
def test_detection_says_why(argv0: str) -> None:
    from wirecap.dialects import detect_channel

    name, reason = detect_channel({"kind": "process", "argv": [argv0, "x.cjs"]}, [])
    if argv0 == "node":
        assert name is None and "no dialect recognizes argv 'node x.cjs'" in reason
    else:
        assert name in ("claude-code", "codex-exec") and reason


def test_codebuff_tool_call_response_after_its_timeout(tmp_path: Path) -> None:
    frames = [
        (0.1, "s2c", {"type": "action", "data": {"type": "tool-call-request", "requestId": "r1", "toolName": "run",
                                                 "input": {}, "timeout": 2000}}),
        (5.0, "c2s", {"type": "action", "txid": 0, "data": {"type": "tool-call-response", "requestId": "r1",
                                                            "success": True, "output": "ok"}}),
        (5.1, "s2c", {"type": "ack", "txid": 0, "success": True}),
    ]
    found = rules(write_ws(tmp_path / "late.jsonl", frames, 6.0))
    assert found["cb-tool-call-late"][0].seq == 3
    assert "cb-tool-call-unanswered" not in found


def test_validate_ch_keeps_one_session_and_its_exit_status():
    cap = str(CAPS / "public_claude-code-protocol_control_permission_scenarios.jsonl")
    every = validate_capture(cap)
    assert {f.ch for f in every} >= {"stdout", "stdin-2", "stdout-2"}
    second = validate_capture(cap, channels=["stdout-2"])  # the pipe selects proc-2 with its stdin
    assert second and {f.ch for f in second} == {"stdin-2", "stdout-2"}
    assert validate_capture(cap, channels=["proc-2"]) == second
    r = run_wirecap("validate", cap, "--ch", "stdout-2", "--json")
    assert r.returncode == 0 and {f["ch"] for f in json.loads(r.stdout)} == {"stdin-2", "stdout-2"}
    r = run_wirecap("validate", cap, "--ch", "proc")  # the error finding is on stdout
    assert r.returncode == 1 and b"cc-tool-use-without-result" in r.stdout and b"permission" not in r.stdout
    r = run_wirecap("validate", cap, "--ch", "nope")
    err = r.stderr.decode().strip()
    assert r.returncode == 2 and "no channel 'nope'" in err and "stdout-2" in err and len(err.splitlines()) == 1
