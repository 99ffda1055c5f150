"""`wirecap stats --calls`: one row per LLM call on the wire, whatever its transport, on the shipped
captures made by the real clients (captures/README.md). The figures are read from the captures: the
WebSocket tool run carries three `response.create` (a prewarm, the request answered with a function
call, the request carrying its output); the fallback run has a failed WebSocket call, then the same
call over HTTP; Claude Code's usage is split across message_start (input) and message_delta (output)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_wirecap

CAPS = Path(__file__).resolve().parents[2] / "captures"
WS_TOOL = str(CAPS / "codex-0.169.0-ws-tool.jsonl")
WS_FALLBACK = str(CAPS / "codex-0.169.0-ws-fallback.jsonl")
CLAUDE_TOOL = str(CAPS / "claude-code-2.1.197-tool-bash.jsonl")


def _calls(*args: str) -> list[dict]:
    p = run_wirecap("stats", "--calls", "--json", *args)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_a_websocket_lists_each_of_its_calls_with_the_prewarm_marked():
    calls = _calls(WS_TOOL)
    assert [(c["ch"], c["call"], c["transport"], c["prewarm"], c["outcome"]) for c in calls] == [
        ("ws-1", 1, "ws", True, "completed"), ("ws-1", 2, "ws", False, "completed"),
        ("ws-1", 3, "ws", False, "completed")]
    assert [c["tool_calls"] for c in calls] == [{}, {"exec_command": 1}, {}]
    assert calls[0]["ttft"] is None and calls[1]["ttft"] > 0  # a prewarm generates nothing
    assert [c["input_tokens"] for c in calls] == [8066, 4288, 2823]  # incremental: previous_response_id


def test_a_fallback_shows_the_failed_websocket_call_then_the_http_one():
    calls = _calls(WS_FALLBACK)
    assert [(c["ch"], c["transport"], c["outcome"]) for c in calls] == [
        ("ws-1", "ws", "completed"), ("ws-1", "ws", "failed"), ("http-1", "http", "completed")]
    failed = calls[1]
    assert failed["reason"] == "fake server: simulated server_error"
    assert failed["input_tokens"] is None and failed["output_tokens"] is None  # no usage on the wire: not 0
    assert calls[2]["input_tokens"] == 9664 and calls[2]["output_tokens"] == 12


def test_a_split_usage_keeps_the_input_of_message_start():
    calls = _calls(CLAUDE_TOOL)
    assert [(c["ch"], c["input_tokens"], c["output_tokens"]) for c in calls] == [
        ("http-2", 19684, 10), ("http-3", 19780, 4)]


def test_the_table_names_the_capture_when_there_are_several_and_ch_filters():
    p = run_wirecap("stats", "--calls", WS_TOOL, WS_FALLBACK)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.decode().splitlines()
    assert lines[0].split()[:3] == ["capture", "ch", "call"]
    assert sum("prewarm (generate: false)" in ln for ln in lines) == 2
    assert len(lines) == 2 + 6
    only = _calls(WS_FALLBACK, "--ch", "http-1")
    assert [c["ch"] for c in only] == ["http-1"]


def test_stdout_alone_has_no_calls_on_the_wire():
    cli = str(Path(__file__).resolve().parents[1] / "fixtures" / "captures" / "claude_code_tool_bash.jsonl")
    p = run_wirecap("stats", "--calls", cli)
    assert p.returncode == 0, p.stderr
    assert p.stdout.decode().startswith("no LLM calls on the wire")
