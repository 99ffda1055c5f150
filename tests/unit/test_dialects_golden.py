"""Golden tests: every real sample decodes with zero `unparsed` events, and its stats match numbers
read by hand from the sample (see the comments next to each expectation)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wirecap.analysis.stats import stats_capture, stats_from_events
from wirecap.capture.reader import CaptureReader
from wirecap.dialects import decode_capture

CAPS = Path(__file__).resolve().parents[1] / "fixtures" / "captures"

# capture -> (dialect, expected stats of its one session). Token numbers are from the sample lines.
GOLDEN = {
    # result line: usage.input_tokens 19449, output_tokens 10, total_cost_usd 0.097495 (the assistant
    # line's usage says output_tokens 1: the message_start snapshot, not the total)
    "claude_code_hello": ("claude-code", {"model": "claude-opus-4-8[1m]", "prompt": 19449, "completion": 10,
                                          "cost": 0.097495, "llm_calls": 1, "tools": {}}),
    "claude_code_partial_text": ("claude-code", {"model": "claude-opus-4-8[1m]", "prompt": 19449, "completion": 10,
                                                 "cost": 0.097495, "llm_calls": 1, "tools": {}}),
    # two assistant lines share msg_8959...: one LLM call, not two; result: 38996 in, 14 out, $0.19533
    "claude_code_tool_bash": ("claude-code", {"model": "claude-opus-4-8[1m]", "prompt": 38996, "completion": 14,
                                              "cost": 0.19533, "llm_calls": 2, "tools": {"Bash": 1}}),
    # CodeBuddy: no modelUsage; result usage 25073 / 12, total_cost_usd 0
    "codebuddy_hello": ("codebuddy", {"model": "default-model", "prompt": 25073, "completion": 12, "cost": 0,
                                      "llm_calls": 1, "tools": {}}),
    "codebuddy_tool_bash": ("codebuddy", {"model": "default-model", "prompt": 50344, "completion": 24, "cost": 0,
                                          "llm_calls": 2, "tools": {"Bash": 1}}),
    # turn.completed usage: input 9630 (includes cached 0), output 12; no price in the stream
    "codex_hello": ("codex-exec", {"model": "unknown", "prompt": 9630, "completion": 12, "cost": None,
                                   "llm_calls": 1, "tools": {}}),
    # step_finish tokens input 7768, output 12, cache read/write 0, cost 0
    "opencode_hello": ("opencode", {"model": "unknown", "prompt": 7768, "completion": 12, "cost": 0,
                                    "llm_calls": 1, "tools": {}}),
    "codebuff_sdk0313_hello": ("codebuff-events", {"usage": None, "tools": {}}),
    "codebuff_sdk0107_hello": ("codebuff-events", {"usage": None, "tools": {}}),
    "codebuff115_hello_ws": ("codebuff-ws", {"usage": None, "tools": {}}),
    "codebuff_sdk0313_hello_ws": ("codebuff-ws", {"usage": None, "tools": {}}),
    # public 2.1.7: input 10 + cache creation 21570 + cache read 0; output 25; total_cost_usd 0.1354875
    "public_claude-agent-sdk-gleam_claude_basic_query_v2.1.7": (
        "claude-code", {"model": "claude-opus-4-5-20251101", "prompt": 21580, "completion": 25, "cost": 0.1354875,
                        "llm_calls": 1, "tools": {}}),
    # public 2.1.3: modelUsage 38 + 28775 + 31159 = 59972 in, 765 out; total_cost_usd 0.24722425
    # (modelUsage's costUSD 0.22844625 leaves out another model: the session total wins)
    "public_claude-agent-sdk-gleam_claude_tool_session_v2.1.3": (
        "claude-code", {"model": "claude-opus-4-5-20251101", "prompt": 59972, "completion": 765, "cost": 0.24722425,
                        "llm_calls": 1, "tools": {"Bash": 1}}),
    # fake_anthropic: 10 words of text -> output_tokens 10; input = len(json body) // 4 = 75
    "http_anthropic_text": ("anthropic-sse", {"model": "claude-fake-1", "prompt": 75, "completion": 10, "cost": None,
                                              "llm_calls": 1, "tools": {}}),
    "http_anthropic_tool": ("anthropic-sse", {"model": "claude-fake-1", "prompt": 75, "completion": 10, "cost": None,
                                              "llm_calls": 1, "tools": {"Bash": 1}}),
    # fake_openai: usage chunk prompt_tokens = len(body) // 4, completion 12
    "http_openai_chat_text": ("openai-chat-sse", {"model": "fake-model", "prompt": 71, "completion": 12, "cost": None,
                                                  "llm_calls": 1, "tools": {}}),
    "http_openai_chat_tool": ("openai-chat-sse", {"model": "fake-model", "prompt": 71, "completion": 12, "cost": None,
                                                  "llm_calls": 1, "tools": {"Bash": 1}}),
    "http_openai_responses_text": ("openai-responses-sse", {"model": "fake-model", "prompt": 66, "completion": 12,
                                                            "cost": None, "llm_calls": 1, "tools": {}}),
    "http_openai_responses_tool": ("openai-responses-sse", {"model": "fake-model", "prompt": 66, "completion": 12,
                                                            "cost": None, "llm_calls": 1, "tools": {"shell": 1}}),
    # the error event cut the message: a failed call, not an answered one; its message_start usage
    # (75 in, 1 out) is reported as failed_usage (tests/integration/test_stats_per_call.py), not as models_usage
    "http_anthropic_sse_error": ("anthropic-sse", {"usage": None, "tools": {}, "errors": 1}),
    "http_anthropic_http_error": ("anthropic-sse", {"usage": None, "tools": {}, "errors": 1}),
    # variants (tests/unit/test_dialects_detect.py). --input-format stream-json via fake/sdk_driver.py:
    # result usage 25050 / 12, total_cost_usd 0 (CodeBuddy); modelUsage 19440 / 10, costUSD 0.09745 (Claude)
    "codebuddy_sdkin": ("codebuddy", {"model": "default-model", "prompt": 25050, "completion": 12, "cost": 0,
                                      "llm_calls": 1, "tools": {}}),
    "tee_codebuddy_sdkin": ("codebuddy", {"model": "default-model", "prompt": 25050, "completion": 12, "cost": 0,
                                          "llm_calls": 1, "tools": {}}),
    "claude_code_sdkin": ("claude-code", {"model": "claude-opus-4-8[1m]", "prompt": 19440, "completion": 10,
                                          "cost": 0.09745, "llm_calls": 1, "tools": {}}),
    # --output-format json: one result line (modelUsage 19440 / 10, $0.09745), no per-call usage: calls unknown
    "claude_code_json": ("claude-code", {"model": "claude-opus-4-8[1m]", "prompt": 19440, "completion": 10,
                                         "cost": 0.09745, "llm_calls": None, "tools": {}}),
    # --output-format json --verbose: the same run as one JSON array (init, assistant, result)
    "claude_code_jsonv": ("claude-code", {"model": "claude-opus-4-8[1m]", "prompt": 19440, "completion": 10,
                                          "cost": 0.09745, "llm_calls": 1, "tools": {}}),
    # fake --mode sse_drop: the first stream cut after 5 events (msg_255a...), the retry answered (msg_23de...):
    # one answered call and one failed (the cut stream: an error event, so errors 1); the result's usage is
    # all 0, its modelUsage 19436 / 10, costUSD 0.09742999999999999
    "claude_code_drop": ("claude-code", {"model": "claude-opus-4-8[1m]", "prompt": 19436, "completion": 10,
                                         "cost": 0.09742999999999999, "llm_calls": 1, "tools": {}, "errors": 1}),
    "tee_claude_code_drop": ("claude-code", {"model": "claude-opus-4-8[1m]", "prompt": 19436, "completion": 10,
                                             "cost": 0.09742999999999999, "llm_calls": 1, "tools": {}, "errors": 1}),
    # opencode under `env -i …` against fake http_error: stdout is only its APIError event (a failed call)
    "tee_opencode_http_error": ("opencode", {"usage": None, "tools": {}, "errors": 1}),
}


def _cap(name: str) -> str:
    return str(CAPS / f"{name}.jsonl")


def test_every_committed_capture_has_a_golden_entry() -> None:
    names = {p.stem for p in CAPS.glob("*.jsonl")} - {"public_claude-code-protocol_control_permission_scenarios",
                                                        "claude_code_text"}  # text output: no dialect
    assert names == set(GOLDEN)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_zero_unparsed_and_dialect(name: str) -> None:
    dialect, _ = GOLDEN[name]
    events = list(decode_capture(_cap(name)))
    assert events
    assert [e for e in events if e.kind == "unparsed"] == []
    assert {e.dialect for e in events} == {dialect}
    for e in events:
        assert e.seq and all(isinstance(s, int) and s > 0 for s in e.seq)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_stats_by_hand(name: str) -> None:
    dialect, want = GOLDEN[name]
    sessions = [s for s in stats_capture(_cap(name)) if s["dialect"]]
    assert len(sessions) == 1
    s = sessions[0]
    assert s["dialect"] == dialect
    assert s["tool_calls"] == want["tools"]
    assert s["errors"] == want.get("errors", 0)
    if want.get("usage", True) is None:
        assert s["models_usage"] == {}
        return
    assert list(s["models_usage"]) == [want["model"]]
    m = s["models_usage"][want["model"]]
    assert m["prompt_tokens"] == want["prompt"]
    assert m["completion_tokens"] == want["completion"]
    assert m["total_tokens"] == want["prompt"] + want["completion"]
    assert s["total_cost"] == want["cost"]
    assert s["llm_calls"] == want["llm_calls"]
    assert s["bytes"] > 0
    # duration only where the capture has timing (imports of untimed stdout have t == 0 throughout)
    with CaptureReader(_cap(name)) as r:
        timed = any(rec.get("t") for rec in r if rec["type"] == "msg")
    assert (s["duration"] is not None) == timed


def _text(events, kind="item.delta") -> str:
    return "".join(e.data.get("text") or "" for e in events if e.kind == kind and e.item == "message"
                   and e.role == "assistant")


def test_claude_partial_deltas_rebuild_the_text() -> None:
    events = list(decode_capture(_cap("claude_code_partial_text")))
    assert _text(events) == "Hello! This is a reply from the fake Anthropic server."
    # the snapshot usage is emitted once per message id, whatever the number of lines
    msg_usage = [e for e in events if e.kind == "usage" and e.data.get("snapshot")]
    assert len(msg_usage) == 1 and msg_usage[0].data["output_tokens"] == 1


def test_claude_tool_bash_call_and_result_pair_up() -> None:
    events = list(decode_capture(_cap("claude_code_tool_bash")))
    calls = [e for e in events if e.kind == "item.completed" and e.item == "tool_call"]
    results = [e for e in events if e.kind == "item.completed" and e.item == "tool_result"]
    assert [c.data["input"]["command"] for c in calls] == ["echo hi"]
    assert results[0].data == {"call_id": calls[0].id, "output": "hi", "is_error": False}
    usage = [e for e in events if e.kind == "usage" and e.data["scope"] == "message"]
    assert len(usage) == 2  # three assistant lines, two message ids


def test_codebuff_ws_1_0_x_user_input_and_chunks() -> None:
    events = list(decode_capture(_cap("codebuff115_hello_ws")))
    turns = [e for e in events if e.kind == "turn.started"]
    assert [t.data["prompt"] for t in turns] == ["say hello"]
    assert _text(events) == "Hello from the fake Codebuff backend!"
    assert [e.data["stop_reason"] for e in events if e.kind == "turn.ended"] == ["response-complete"]


def test_codebuff_ws_sdk03_prompt_structured_chunks_and_redacted_token() -> None:
    raw = (CAPS / "codebuff_sdk0313_hello_ws.jsonl").read_text()
    assert "cb-fake-key-000" not in raw  # authToken redacted at import
    events = list(decode_capture(_cap("codebuff_sdk0313_hello_ws")))
    start = [e for e in events if e.kind == "turn.started"][0]
    assert start.data["prompt"] == "say hello" and start.data["session_state"] is True
    assert _text(events) == "Hello from the fake Codebuff backend (sdk protocol)!"
    statuses = [e.data["subtype"] for e in events if e.item == "status"]
    assert "start" in statuses and "finish" in statuses  # chunk objects, not text


def test_codebuff_events_string_and_object_chunks() -> None:
    events = list(decode_capture(_cap("codebuff_sdk0107_hello")))
    assert _text(events) == "Hello! This is a reply from the fake OpenAI-compatible server."
    assert _text(events, "item.completed") == "Hello! This is a reply from the fake OpenAI-compatible server."
    ended = [e for e in events if e.kind == "session.ended"]
    assert ended[0].data["result"] == "Hello! This is a reply from the fake OpenAI-compatible server."


def test_sse_tool_arguments_are_parsed() -> None:
    for name, args in (("http_anthropic_tool", {"command": "echo hi", "description": "Run the requested command"}),
                       ("http_openai_chat_tool", None), ("http_openai_responses_tool", None)):
        events = list(decode_capture(_cap(name)))
        calls = [e for e in events if e.kind == "item.completed" and e.item == "tool_call"]
        assert len(calls) == 1
        assert isinstance(calls[0].data["input"], dict)
        if args is not None:
            assert calls[0].data["input"] == args
        deltas = "".join(e.data["arguments"] for e in events if e.kind == "item.delta" and e.item == "tool_call")
        assert deltas  # the arguments arrived in pieces


def test_control_scenarios_decode_fully() -> None:
    cap = _cap("public_claude-code-protocol_control_permission_scenarios")
    events = list(decode_capture(cap))
    assert [e for e in events if e.kind == "unparsed"] == []
    prompts = [e.data["prompt"] for e in events if e.kind == "turn.started" and "prompt" in e.data]
    assert prompts[:2] == ["remove the test file", "run rm -rf /"]
    controls = [e.data.get("control") for e in events if e.item == "status" and "control" in e.data]
    assert "can_use_tool" in controls and "set_permission_mode" in controls and "set_model" in controls
    assert len(stats_capture(cap)) == 4  # four processes


def test_stats_from_events_matches_capture_usage() -> None:
    events = list(decode_capture(_cap("claude_code_tool_bash")))
    (s,) = stats_from_events(events)
    assert s["models_usage"]["claude-opus-4-8[1m]"]["prompt_tokens"] == 38996
    assert s["tool_calls"] == {"Bash": 1}
    assert s["bytes"] is None
