"""The report's thread (`wirecap.analysis.report.thread`): one thread per session, as the model saw it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wirecap.analysis.report.build import build_capture_report
from wirecap.analysis.report.thread import MAX_NEW_MESSAGES, MAX_PART_TEXT, Thread, ThreadCall, all_calls
from wirecap.analysis.report.thread_view import steps, thread_html, thread_markdown, thread_term
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
    assert any(p.kind == "error" for p in failed[0].reply)


def test_a_stream_cut_mid_message_then_retried() -> None:
    one, two = _thread("claude-code-2.1.197-stream-error.jsonl").calls
    assert one.outcome == "failed" and one.error and "mid-stream" in one.error
    assert two.retry and two.retry_of == 1 and two.outcome == "completed" and two.earlier == 2 and not two.new


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


# --- synthetic sessions: a subagent, a retry ------------------------------------------------------------

HEADER = {"wirecap": 1, "type": "header", "id": "t", "created": "2026-11-25T00:00:00Z", "origin": {"tool": "test"},
          "redaction": {"enabled": True}}


class _Cap:
    def __init__(self) -> None:
        self.recs: list[dict[str, Any]] = []
        self.t = 1.0
        self.n = 0

    def add(self, **rec: Any) -> None:
        self.t += 0.01
        self.recs.append({"seq": len(self.recs) + 1, "t": round(self.t, 3), **rec})

    def call(self, body: dict[str, Any], reply: list[dict[str, Any]] | None, *, fail: bool = False) -> None:
        self.n += 1
        ch = f"http-{self.n}"
        self.add(type="open", ch=ch, kind="http", method="POST", url="http://127.0.0.1:9/v1/messages")
        self.add(type="msg", ch=ch, dir="c2s", json={"model": "m", "stream": True, **body})
        self.add(type="response", ch=ch, status=200, headers={"content-type": "text/event-stream"})
        events: list[dict[str, Any]] = [{"type": "message_start", "message": {
            "id": f"msg_{self.n}", "type": "message", "role": "assistant", "model": "m", "content": [],
            "usage": {"input_tokens": 100, "cache_read_input_tokens": 50, "cache_creation_input_tokens": 5,
                      "output_tokens": 1}}}]
        if fail:
            events.append({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
        for i, block in enumerate(reply or []):
            start = {**block, "input": {}} if block["type"] == "tool_use" else {**block, "text": ""}
            events.append({"type": "content_block_start", "index": i, "content_block": start})
            delta = ({"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                     if block["type"] == "tool_use" else {"type": "text_delta", "text": block["text"]})
            events += [{"type": "content_block_delta", "index": i, "delta": delta},
                       {"type": "content_block_stop", "index": i}]
        if not fail:
            stop = "tool_use" if any(b["type"] == "tool_use" for b in reply or []) else "end_turn"
            events += [{"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 7}},
                       {"type": "message_stop"}]
        for ev in events:
            self.add(type="msg", ch=ch, dir="s2c", sse={"event": ev["type"]}, json=ev)
        self.add(type="close", ch=ch, status=200)

    def write(self, path: Path) -> str:
        with path.open("wb") as f:
            for r in [HEADER, *self.recs]:
                f.write(orjson.dumps(r) + b"\n")
        return str(path)


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def test_a_subagent_nests_under_the_call_that_started_it(tmp_path: Path) -> None:
    cap = _Cap()
    task = {"type": "tool_use", "id": "toolu_task", "name": "Task",
            "input": {"description": "look", "prompt": "Find the config files."}}
    main = {"system": "You are the main agent.", "tools": [{"name": "Task", "input_schema": {}}]}
    cap.call({**main, "messages": [_user("tidy the repo")]}, [{"type": "text", "text": "Delegating."}, task])
    sub = {"system": "You are a subagent.", "tools": [{"name": "Read", "input_schema": {}}]}
    cap.call({**sub, "messages": [_user("Find the config files.")]}, [{"type": "text", "text": "Found 2."}])
    back = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_task", "content": "Found 2."}]}
    cap.call({**main, "messages": [_user("tidy the repo"), {"role": "assistant", "content": [
        {"type": "text", "text": "Delegating."}, {k: v for k, v in task.items()}]}, back]},
        [{"type": "text", "text": "Done."}])
    report = build_capture_report(cap.write(tmp_path / "sub.jsonl"), relevant=False)
    (th,) = report.threads
    one, two, three = th.calls
    assert two.parent == (1, "toolu_task") and two.lineage != one.lineage
    assert one.parent is None and three.parent is None and three.lineage == one.lineage
    assert two.system is not None and two.system[0].text == "You are a subagent."
    assert three.system_same_as == 1 and three.earlier == 1
    assert [p.kind for m in three.new if m.echo_of is None for p in m.parts] == ["tool_result"]
    # the subagent's call is laid out under the call that started it
    order = [(kind, item.n, depth) for kind, item, depth in steps(th) if kind == "call"]
    assert order == [("call", 1, 0), ("call", 2, 1), ("call", 3, 0)]
    assert one.input_tokens == 100 and one.cache_read_tokens == 50 and one.cache_write_tokens == 5
    assert one.output_tokens == 7
    md = "\n".join(thread_markdown(report))
    assert "#### call 2" in md and "<summary>Tools (1)</summary>" in md


def test_a_retry_of_a_failed_call(tmp_path: Path) -> None:
    cap = _Cap()
    body = {"system": "s", "messages": [_user("hello")]}
    cap.call(body, None, fail=True)
    cap.call(body, [{"type": "text", "text": "Hi."}])
    report = build_capture_report(cap.write(tmp_path / "retry.jsonl"), relevant=False)
    one, two = report.threads[0].calls
    assert one.outcome == "failed" and one.error and "Overloaded" in one.error
    assert two.retry and two.retry_of == 1 and two.outcome == "completed" and not two.new
    term = "\n".join(thread_term(report, 80))
    assert "FAILED: " in term and "retry of call 1" in term
    assert all(len(line) <= 80 for line in term.splitlines())
    html = thread_html(report, 0)
    assert 'class="tcall is-error"' in html and "retry of call 1" in html


def test_html_folds_system_prompt_and_tools_and_links_both_places() -> None:
    report = build_capture_report(str(CAPTURES / "claude-code-2.1.197-tool-bash.jsonl"), relevant=False)
    html = thread_html(report, 0)
    assert '<details class="system"><summary>System prompt' in html
    assert "<summary>Tools (24)</summary>" in html and "<code>Bash</code>" in html
    assert html.count("I&#x27;ll run that command.") == 1
    assert '<a href="#seq-13">#13</a> <a href="#seq-19">#19</a>' in html
    assert "Tools (24): as in" in html and "result sent back in call 2" in html


def test_a_cut_text_says_how_to_see_it_whole(tmp_path: Path) -> None:
    cap = _Cap()
    cap.call({"messages": [_user("x" * (MAX_PART_TEXT + 500))]}, [{"type": "text", "text": "ok"}])
    path = cap.write(tmp_path / "long.jsonl")
    report = build_capture_report(path, relevant=False)
    part = report.threads[0].calls[0].new[0].parts[0]
    assert part.cut == 500 and part.size == MAX_PART_TEXT + 500
    assert f"wirecap cat {path} --seq 2 --json" in "\n".join(thread_term(report, 200))


def test_stdout_joins_the_latest_call_with_the_same_words_and_side_calls_are_marked() -> None:
    th = _thread("opencode-1.18.33-hello.jsonl")
    title, main = th.calls
    assert title.side and not main.side  # (opencode asks for a title first: another conversation)
    hello = "Hello! This is a reply from the fake OpenAI-compatible server."
    assert [len(p.at) for p in title.reply if p.text == hello] == [1]
    assert [len(p.at) for p in main.reply if p.text == hello] == [2]  # the wire and the client's stdout


def test_a_call_with_many_new_messages_keeps_the_newest(tmp_path: Path) -> None:
    cap = _Cap()
    cap.call({"messages": [_user(f"message {i}") for i in range(MAX_NEW_MESSAGES + 10)]}, [{"type": "text", "text": "ok"}])
    path = cap.write(tmp_path / "many.jsonl")
    report = build_capture_report(path, relevant=False)
    call = report.threads[0].calls[0]
    assert call.new_omitted == 10 and len(call.new) == MAX_NEW_MESSAGES
    assert call.new[-1].parts[0].text == f"message {MAX_NEW_MESSAGES + 9}"
    term = "\n".join(thread_term(report, 200))
    assert f"… 10 earlier new message(s) not shown: `wirecap cat {path} --seq 2 --json`" in term


def test_no_secret_is_shown_from_a_request_of_a_no_redact_capture(tmp_path: Path) -> None:
    secret = "sk-ant-api03-SECRETSECRETSECRET123"
    cap = _Cap()
    cap.call({"system": f"key {secret}", "tools": [{"name": "T", "description": f"uses {secret}", "input_schema": {}}],
              "messages": [_user(f"my key is {secret}")]}, [{"type": "text", "text": "noted"}])
    path = tmp_path / "secret.jsonl"
    cap.write(path)
    lines = path.read_bytes().splitlines()
    header = orjson.loads(lines[0])
    header["redaction"] = {"enabled": False}
    path.write_bytes(b"\n".join([orjson.dumps(header), *lines[1:]]) + b"\n")
    report = build_capture_report(str(path), relevant=False)
    shown = orjson.dumps([t.to_json() for t in report.threads]).decode()
    assert "my key is" in shown and secret not in shown
    assert secret not in "\n".join(thread_term(report, 120)) + thread_html(report, 0)


def test_codebuff_and_responses_request_views() -> None:
    cb = DIALECTS["codebuff-ws"].request_view
    resp = DIALECTS["openai-responses-sse"].request_view
    assert cb is not None and resp is not None
    v = cb({"type": "action", "data": {"type": "prompt", "prompt": "go", "toolResults": [
        {"toolCallId": "c1", "output": "done"}], "sessionState": {"mainAgentState": {"messageHistory": [
            {"role": "user", "content": "earlier"},
            {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "ls", "input": {}}]}]}}}})
    assert [m.role for m in v.messages] == ["user", "assistant", "tool", "user"]
    assert v.messages[1].parts[0].name == "ls" and v.messages[2].parts[0].call_id == "c1"
    assert v.messages[3].parts[0].text == "go" and v.system == [] and v.tools is None
    v = cb({"type": "action", "data": {"type": "user-input", "messages": [
        {"role": "user", "content": "[TOOL_RESULT]\n<out>hi</out>"}]}})
    assert v.messages[0].parts[0].kind == "tool_result" and v.messages[0].parts[0].text == "<out>hi</out>"
    assert cb({"type": "action", "data": {"type": "init"}}) is None and cb({"type": "ack"}) is None
    v = resp({"instructions": "be terse", "input": [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]},
        {"type": "function_call", "name": "f", "call_id": "c", "arguments": "{}"},
        {"type": "reasoning", "summary": []}],
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}, {"type": "web_search"}]})
    assert v.system == ["be terse", "rules"] and v.continues is None
    assert [(m.role, m.parts[0].kind) for m in v.messages] == [("user", "text"), ("assistant", "tool_call"),
                                                               ("assistant", "thinking")]
    assert [t.name for t in v.tools] == ["f", "web_search"]


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                         st.sampled_from(["type", "role", "content", "messages", "input", "system", "tools", "text",
                                          "data", "name", "function", "tool_calls", "output", "call_id", "prompt",
                                          "sessionState", "mainAgentState", "messageHistory", "instructions",
                                          "previous_response_id", "arguments", "source", "toolResults"]),
                         inner, max_size=5), max_leaves=25)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_JSON)
def test_request_views_never_raise(body: Any) -> None:
    """A request view is given untrusted JSON: it answers a view (every message readable) or None."""
    for d in DIALECTS.values():
        if d.request_view is None:
            continue
        for b in (body, {"type": "action", "data": body}, {"messages": body}, {"input": body}):
            v = d.request_view(b)
            if v is not None:
                assert all(isinstance(p.text, str) for m in v.messages for p in m.parts)
                assert all(isinstance(s, str) for s in v.system)
