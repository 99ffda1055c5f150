"""The report's thread (`wirecap.analysis.report.thread`): one thread per session, as the model saw it."""

from __future__ import annotations

from pathlib import Path

import pytest

from wirecap.analysis.report.build import build_capture_report
from wirecap.analysis.report.thread import Thread, ThreadCall, all_calls
from wirecap.dialects import DIALECTS

CAPTURES = Path(__file__).resolve().parents[2] / "captures"


def _thread(name: str) -> Thread:
    report = build_capture_report(str(CAPTURES / name), relevant=False)
    assert report.threads_note == ""
    assert len(report.threads) == 1
    return report.threads[0]


def _texts(call: ThreadCall) -> list[str]:
    return [p.text for p in call.reply]


def test_claude_tool_run_reads_as_one_thread() -> None:
    th = _thread("claude-code-2.1.197-tool-bash.jsonl")
    one, two = th.calls
    # call 1: the system prompt, the 24 tools, the new user turn
    assert one.system is not None and any("interactive agent" in p.text for p in one.system)
    assert one.tools_count == 24 and one.tools is not None and one.tools[1].name == "Bash"
    assert one.earlier == 0 and one.new[0].role == "user"
    assert one.new[0].parts[-1].text == "run echo hi"
    # what came back: the text once, linked to the SSE events and to the stdout line
    said = [p for p in one.reply if p.text == "I'll run that command."]
    assert len(said) == 1 and 13 in said[0].seqs and 19 in said[0].seqs
    assert one.stop_reason == "tool_use" and one.outcome == "completed"
    assert one.input_tokens == 19684 and one.output_tokens == 10
    assert one.t_sent < one.t_first_token < one.t_last  # type: ignore[operator]
    # call 2: same system and tools (said once), the reply sent back as history, the tool result new
    assert two.system_same_as == 1 and two.tools_same_as == 1 and two.earlier == 2
    fresh = [m for m in two.new if m.echo_of is None]
    assert [m.echo_of for m in two.new if m.echo_of is not None] == [1]
    result = fresh[0].parts[0]
    assert result.kind == "tool_result" and result.text == "hi" and set(result.seqs) == {35, 33}
    assert _texts(two) == ["The tool returned: hi"]
    # the tool execution between the calls
    (run,) = th.tool_runs
    assert run.name == "Bash" and run.issued_by == 1 and run.returned_in == 2 and not run.is_error
    assert one.t_last <= run.t_start < run.t_end <= two.t_sent  # type: ignore[operator]
    assert [c.n for c in all_calls([th])] == [1, 2]


@pytest.mark.parametrize("name", ["codebuff-cli-1.0.115-ws.jsonl", "codebuff-sdk-0.3.13-ws-tool.jsonl"])
def test_codebuff_ws_reads_the_same_way(name: str) -> None:
    th = _thread(name)
    first = th.calls[0]
    assert first.transport == "ws" and first.dialect == "codebuff-ws"
    assert first.new[-1].role == "user" and first.new[-1].parts[-1].text == "run echo hi"
    assert any(p.kind == "tool_call" for c in th.calls for p in c.reply)
    assert len(th.tool_runs) == 1 and th.tool_runs[0].t_end is not None


def test_codex_ws_one_call_per_response_create() -> None:
    th = _thread("codex-0.169.0-ws-tool.jsonl")
    prewarm, ask, answer = th.calls
    assert prewarm.prewarm and prewarm.system and "You are Codex" in prewarm.system[0].text
    assert ask.earlier == 0 or ask.lineage == prewarm.lineage
    assert ask.new[-1].parts[-1].text == "run echo hi"
    assert [p.kind for p in answer.new[0].parts] == ["tool_result"]
    assert answer.new[0].parts[0].call_id == th.tool_runs[0].call_id
    assert any("The tool returned" in t for t in _texts(answer))


def test_error_run_shows_the_failing_call() -> None:
    th = _thread("claude-code-2.1.197-overloaded-error.jsonl")
    failed = [c for c in th.calls if c.outcome == "failed"]
    assert failed and failed[0].error and "verloaded" in failed[0].error


def test_request_views_of_each_dialect() -> None:
    anth = DIALECTS["anthropic-sse"].request_view
    chat = DIALECTS["openai-chat-sse"].request_view
    resp = DIALECTS["openai-responses-sse"].request_view
    assert anth and chat and resp and DIALECTS["openai-responses-ws"].request_view is resp
    v = anth({"system": "be brief", "messages": [{"role": "user", "content": "hi"}],
              "tools": [{"name": "Bash", "input_schema": {"type": "object"}}]})
    assert v.system == ["be brief"] and v.tools[0].name == "Bash" and v.messages[0].parts[0].text == "hi"
    v = chat({"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "q"},
                           {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]},
                           {"role": "tool", "tool_call_id": "c1", "content": "out"}]})
    assert v.system == ["sys"] and [m.role for m in v.messages] == ["user", "assistant", "tool"]
    assert v.messages[2].parts[0].kind == "tool_result" and v.messages[2].parts[0].call_id == "c1"
    v = resp({"type": "response.create", "previous_response_id": "r1",
              "input": [{"type": "function_call_output", "call_id": "c1", "output": "ok"}]})
    assert v.continues == "r1" and v.messages[0].parts[0].kind == "tool_result"
    assert anth("not a body") is None and chat({}) is None and resp({"type": "response.cancel"}) is None
