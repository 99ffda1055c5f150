"""The `openai-responses-ws` dialect (Codex's Responses over WebSocket) and transport truth, on real
captures of the real Codex 0.169.0 (tests/fixtures/codex_ws/README.md says how each was made).

Numbers read by hand from the captures (`zstdcat FILE | jq`):
- hello: ws-1 carries two calls, the prewarm (`generate: false`, resp_1919..., usage 8066 in / 12 out)
  and the real one (resp_0bfc..., 9652 / 12); Codex's own turn.completed says 9652 / 12.
- tool: the prewarm (8066 / 12; the fake answers it with a call Codex never runs), the call that asks
  for `exec_command` (call_05f6..., 9652 / 12) and the answer to its output (2791 / 12), sent with
  `previous_response_id` resp_6677... and only the function_call_output as input.
- failed / close: ws-1 (prewarm) and ws-2 fail (response.failed server_error / close 1011 by the
  server), Codex prints its "Falling back from WebSockets to HTTPS transport" item (seq 21 / 19) and
  POSTs /v1/responses on http-1 (seq 22 / 20; its request at seq 23 / 21).
- error_event: the wrapped error message, status 400, on ws-1 and ws-2; no HTTP call.
- refuse: the GET upgrade on http-1 answered 426 (seq 7), the POST on http-2 (request seq 13).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_wirecap

from wirecap.analysis.stats import stats_capture
from wirecap.analysis.transport import transport_capture, transport_records
from wirecap.analysis.validate import validate_capture, validate_records
from wirecap.capture.reader import CaptureReader
from wirecap.dialects import decode_capture, decode_records, detect_channel

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "codex_ws"
MODES = ("hello", "tool", "failed", "close", "error_event", "refuse")


def cap(mode: str) -> str:
    return str(FIX / f"codex_ws_{mode}.jsonl.zst")


def records(mode: str) -> list[dict[str, Any]]:
    with CaptureReader(cap(mode)) as r:
        return list(r)


def rules(found: list[Any]) -> list[tuple[str, str | None]]:
    return [(f.rule, f.ch) for f in found]


def ws_session(mode: str, ch: str = "ws-1") -> dict[str, Any]:
    return next(s for s in stats_capture(cap(mode)) if s["ch"] == ch)


@pytest.mark.parametrize("mode", MODES)
def test_zero_unparsed_and_ws_channels_are_the_dialect(mode: str) -> None:
    events = list(decode_capture(cap(mode)))
    assert [e for e in events if e.kind == "unparsed"] == []
    ws = {e.dialect for e in events if e.ch.startswith("ws-")}
    assert ws == ({"openai-responses-ws"} if mode != "refuse" else set())


@pytest.mark.parametrize("mode", MODES)
def test_no_drift(mode: str) -> None:
    assert [f for f in validate_capture(cap(mode), strict_schema=True) if f.rule == "drift"] == []


def test_findings_per_mode() -> None:
    assert rules(validate_capture(cap("hello"))) == []
    assert rules(validate_capture(cap("tool"))) == []
    assert rules(validate_capture(cap("failed"))) == [("ws-error-event", "ws-1"), ("ws-error-event", "ws-2"),
                                                      ("ws-fallback", "http-1")]
    assert rules(validate_capture(cap("close"))) == [("ws-closed-mid-response", "ws-1"),
                                                     ("ws-closed-mid-response", "ws-2"), ("ws-fallback", "http-1")]
    assert rules(validate_capture(cap("error_event"))) == [
        ("ws-error-message", "ws-1"), ("ws-error-message", "ws-2"), ("codex-error", "stdout"), ("codex-turn-failed", "stdout")]
    assert rules(validate_capture(cap("refuse"))) == [("ws-upgrade-refused", "http-1"), ("ws-fallback", "http-2")]


def test_fallback_finding_carries_the_clients_reason_or_the_wires() -> None:
    failed = next(f for f in validate_capture(cap("failed")) if f.rule == "ws-fallback")
    assert failed.severity == "warning" and failed.seq == 23
    assert "after ws-2" in failed.message
    assert "Falling back from WebSockets to HTTPS transport. stream disconnected before completion: fake server: " \
           "simulated server_error" in failed.message
    close = transport_capture(cap("close"))
    assert close is not None and close["fallback"]["reason_from"] == "client"
    assert "websocket closed by server before response.completed" in close["fallback"]["reason"]
    assert close["fallback"]["wire"] == ("call 1 on ws-2 was cut: socket closed 1011 by the server: "
                                         "fake server: closed mid-response")
    refuse = transport_capture(cap("refuse"))  # no stdout notice: Codex's stderr log line, and the wire's
    assert refuse is not None
    assert refuse["fallback"] == {"ch": "http-2", "seq": 13, "after_ch": "http-1", "after_seq": 7,
                                  "reason": "ERROR codex_api::endpoint::responses_websocket: failed to connect to "
                                            "Responses WebSocket stage=Unknown",
                                  "reason_from": "client",
                                  "wire": "WebSocket upgrade refused (426 Upgrade Required): fake server: websocket refused"}
    assert refuse["llm_calls"] == {"http": 1}


def test_transport_per_call() -> None:
    hello = transport_capture(cap("hello"))
    assert hello is not None
    assert hello["llm_calls"] == {"ws": 2} and hello["fallback"] is None
    assert [(c["ch"], c["transport"], c["prewarm"], c["outcome"]) for c in hello["calls"]] == [
        ("ws-1", "ws", True, "completed"), ("ws-1", "ws", False, "completed")]
    failed = transport_capture(cap("failed"))
    assert failed is not None
    assert [(c["ch"], c["transport"], c["outcome"]) for c in failed["calls"]] == [
        ("ws-1", "ws", "failed"), ("ws-2", "ws", "failed"), ("http-1", "http", "completed")]
    assert failed["calls"][2]["input_tokens"] == 9633 and failed["calls"][2]["output_tokens"] == 12
    assert transport_capture(cap("error_event"))["fallback"] is None  # type: ignore[index]


def test_stats_per_call_hello() -> None:
    s = ws_session("hello")
    assert s["dialect"] == "openai-responses-ws"
    assert s["session"] == "01a212cd-2fdb-7030-ade2-bfc2ad403495"  # the session-id header
    assert s["llm_calls"] == 2
    assert s["models_usage"]["gpt-5.5"]["prompt_tokens"] == 8066 + 9652
    assert s["models_usage"]["gpt-5.5"]["completion_tokens"] == 24
    assert [(c["call"], c["prewarm"], c["response_id"], c["input_tokens"], c["output_tokens"]) for c in s["calls"]] == [
        (1, True, "resp_19196284e71a4eeeb806dbb5", 8066, 12), (2, False, "resp_0bfcba9d975d4472aabc55ea", 9652, 12)]
    for c in s["calls"]:
        assert 0 < c["ttft"] <= c["duration"]
    # ttft of the session: from the real request (seq 27), not the prewarm's
    assert s["ttft"] == pytest.approx(s["calls"][1]["ttft"])


def test_stats_per_call_tool() -> None:
    s = ws_session("tool")
    assert s["llm_calls"] == 3
    assert s["tool_calls"] == {"exec_command": 1}  # the prewarm's call is not counted: Codex never ran it
    calls = s["calls"]
    assert [c["tool_calls"] for c in calls] == [{"exec_command": 1}, {"exec_command": 1}, {}]
    assert [c["input_tokens"] for c in calls] == [8066, 9652, 2791]
    assert calls[2]["response_id"] == "resp_ef92c5a43495465abc7ff7a9"


def test_failed_calls_are_no_answers() -> None:
    for mode, ch in (("failed", "ws-1"), ("failed", "ws-2"), ("close", "ws-2"), ("error_event", "ws-2")):
        s = ws_session(mode, ch)
        assert (s["llm_calls"], s["failed_calls"]) == (0, 1), (mode, ch)
        assert s["models_usage"] == {}


def test_wrapped_error_event_keeps_its_status() -> None:
    errors = [e for e in decode_capture(cap("error_event")) if e.kind == "error" and e.ch == "ws-1"]
    assert len(errors) == 1
    assert errors[0].data["status"] == 400 and errors[0].data["code"] == "invalid_request_error"
    assert errors[0].data["failed_call"] is True


def _shape(events: list[Any]) -> list[tuple[str, str | None]]:
    return [(e.kind, e.item) for e in events if e.kind not in ("session.started", "session.ended")]


def test_same_events_as_the_sse_dialect() -> None:
    """The same answer over both transports gives the same universal events: the real call of `hello`
    over the WebSocket and the HTTP + SSE call of `failed` (the fallback) got the same canned reply."""
    ws = [e for e in decode_capture(cap("hello")) if e.ch == "ws-1" and e.seq[0] >= 27]
    sse = [e for e in decode_capture(cap("failed")) if e.ch == "http-1"]
    assert _shape(ws) == _shape(sse)
    assert {e.dialect for e in sse} == {"openai-responses-sse"}
    text = [e.data.get("text") for e in ws if e.kind == "item.completed" and e.item == "message"]
    assert text == [e.data.get("text") for e in sse if e.kind == "item.completed" and e.item == "message"]
    started = next(e for e in ws if e.kind == "turn.started")
    assert started.data["prompt"] == "say hello" and "prewarm" not in started.data
    prewarm = next(e for e in decode_capture(cap("hello")) if e.kind == "turn.started")
    assert prewarm.data["prewarm"] is True


def test_sniff() -> None:
    assert detect_channel({"kind": "ws", "url": "wss://api.openai.com/v1/responses"}, [])[0] == "openai-responses-ws"
    create = {"type": "msg", "ch": "ws-1", "dir": "c2s", "json": {"type": "response.create", "model": "m"}}
    assert detect_channel({"kind": "ws", "url": "ws://h/x"}, [create])[0] == "openai-responses-ws"
    assert detect_channel({"kind": "ws", "url": "ws://h/ws"}, [
        {"type": "msg", "ch": "ws-1", "dir": "c2s", "json": {"type": "identify", "txid": 1}}])[0] != "openai-responses-ws"


# --- rules on captures changed by hand (the real frames, one thing taken out or changed) -------------
def _ws1(mode: str) -> list[dict[str, Any]]:
    return [r for r in records(mode) if r.get("ch") == "ws-1"]


def test_no_terminal_before_the_next_create() -> None:
    recs = [r for r in _ws1("hello") if (r.get("json") or {}).get("type") != "response.completed" or r["seq"] > 30]
    found = validate_records(recs)
    assert rules(found) == [("ws-no-terminal", "ws-1")]
    assert found[0].seq == 27
    ended = [e for e in decode_records(recs) if e.kind == "turn.ended"]
    assert ended[0].data["truncated"] is True and ended[0].data["message_id"] == "resp_19196284e71a4eeeb806dbb5"


def test_capture_ended_mid_response() -> None:
    recs = [r for r in _ws1("hello") if r["seq"] < 40]
    assert rules(validate_records(recs)) == [("ws-no-terminal", "ws-1")]


def test_closed_mid_response_by_the_client() -> None:
    recs = [r for r in _ws1("hello") if not 40 <= r["seq"] < 48]  # close 1006 by the client at seq 48
    found = validate_records(recs)
    assert rules(found) == [("ws-closed-mid-response", "ws-1")]
    assert "code 1006, by the client" in found[0].message


def test_orphan_function_call_output() -> None:
    recs = []
    for r in _ws1("tool"):
        obj = r.get("json")
        if r["seq"] == 28:
            obj = json.loads(json.dumps(obj))
            obj["input"][0]["call_id"] = "call_never_issued"
            r = {**r, "json": obj}
            r.pop("raw", None)
        recs.append(r)
    found = validate_records(recs)
    assert rules(found) == [("responses-orphan-output", "ws-1")]
    assert "call_never_issued" in found[0].message
    # a request continuing a response this channel never saw is not judged
    recs[[r["seq"] for r in recs].index(28)]["json"]["previous_response_id"] = "resp_elsewhere"
    assert rules(validate_records(recs)) == []


def test_fallback_needs_a_failed_websocket_first() -> None:
    """An HTTP call alone, or after a WebSocket that worked, is no fallback."""
    recs = records("failed")
    http_only = [r for r in recs if not str(r.get("ch")).startswith("ws-")]
    check = transport_records(http_only)
    assert check.findings() == [] and not check.ws_used
    # an HTTP call to another endpoint is no fallback of this WebSocket
    elsewhere = [{**r, "url": "http://127.0.0.1:40001/v2/other/responses"} if r.get("type") == "open" and r["ch"] == "http-1"
                 else r for r in recs]
    assert transport_records(elsewhere).fallback() is None
    assert transport_records(recs).fallback() is not None
    # the refused upgrade alone says why, when the client said nothing
    quiet = [r for r in records("refuse") if r.get("ch") != "stderr"]
    fb = transport_records(quiet).fallback()
    assert fb is not None and fb["reason_from"] == "wire"
    assert fb["reason"] == "WebSocket upgrade refused (426 Upgrade Required): fake server: websocket refused"


# --- the commands ----------------------------------------------------------------------------------
def test_info_says_the_transport_of_each_call() -> None:
    out = run_wirecap("info", cap("failed"))
    assert out.returncode == 0
    text = out.stdout.decode()
    assert "LLM calls: 1 over http (http-1), 2 over ws (ws-1, ws-2)" in text
    assert "fell back from WebSocket to HTTP at http-1 (seq 23) after ws-2 (seq 15); the client said: Falling back" in text
    assert "(the wire: call 1 on ws-2 failed: fake server: simulated server_error)" in text
    js = json.loads(run_wirecap("info", "--json", cap("hello")).stdout)
    assert js["transport"]["llm_calls"] == {"ws": 2} and js["transport"]["fallback"] is None


def test_report_has_a_transport_part() -> None:
    out = run_wirecap("report", "-f", "term", "--width", "200", cap("close"))
    text = out.stdout.decode()
    assert "-- transport --" in text
    assert "LLM calls: 1 over http (http-1), 2 over ws (ws-1, ws-2)" in text
    assert "cut: socket closed 1011 by the server" in text
    js = json.loads(run_wirecap("report", "-f", "json", cap("refuse")).stdout)
    assert js["captures"][0]["transport"]["fallback"]["wire"].startswith("WebSocket upgrade refused (426")
    md = run_wirecap("report", "-f", "md", cap("tool")).stdout.decode()
    assert "# Transport" in md and "1 (prewarm)" in md


def test_other_client_messages_and_rate_limits() -> None:
    """What other Codex versions send (openai/codex's ResponsesWsRequest): `response.append` (new input
    continuing the last response: a new call) and `response.processed` (an ack: nothing); and the
    `codex.rate_limits` event OpenAI's backend sends before a response's content (a status item)."""
    recs = _ws1("tool")
    at = [r["seq"] for r in recs].index(28)
    third = recs[at]["json"]
    append = {"type": "response.append", "input": third["input"], "client_metadata": third["client_metadata"]}
    rate = {"type": "codex.rate_limits", "plan_type": "pro",
            "rate_limits": {"primary": {"used_percent": 40.0, "window_minutes": 300, "reset_at": 1700009000}}}
    processed = {"type": "response.processed", "response_id": "resp_ef92c5a43495465abc7ff7a9"}
    recs = [*recs[:at], {**recs[at], "json": append}, {**recs[at + 1], "json": rate}, *recs[at + 1:]]
    recs.insert(-1, {**recs[-2], "dir": "c2s", "json": processed})
    for i, r in enumerate(recs, 1):
        r.pop("raw", None)
        recs[i - 1] = {**r, "seq": i}
    events = list(decode_records(recs))
    assert [e for e in events if e.kind == "unparsed"] == []
    turns = [e for e in events if e.kind == "turn.started"]
    assert len(turns) == 3 and turns[2].data["model"] == "gpt-5.5"  # the append names none: the last one's
    status = [e for e in events if e.item == "status"]
    assert [s.data["subtype"] for s in status] == ["codex.rate_limits"]
    assert status[0].data["rate_limits"]["primary"]["used_percent"] == 40.0
    assert [f for f in validate_records(recs, strict_schema=True) if f.rule == "drift"] == []


def test_empty_prewarm_then_a_call_continuing_it() -> None:
    """The fake answering the prewarm as the API does (no output): the real call continues it by
    `previous_response_id` (resp_3ed4...), with the input since; by hand: usages 8066/12 (prewarm),
    4258/12 (the call asking for exec_command call_dfa2...), 2791/12 (the answer to its output)."""
    path = str(FIX / "codex_ws_tool_empty_prewarm.jsonl.zst")
    assert [e for e in decode_capture(path) if e.kind == "unparsed"] == []
    assert rules(validate_capture(path, strict_schema=True)) == []
    s = next(s for s in stats_capture(path) if s["ch"] == "ws-1")
    assert s["llm_calls"] == 3 and s["tool_calls"] == {"exec_command": 1}
    assert [(c["prewarm"], c["ttft"] is None, c["input_tokens"], c["tool_calls"]) for c in s["calls"]] == [
        (True, True, 8066, {}), (False, False, 4258, {"exec_command": 1}), (False, False, 2791, {})]
    assert s["ttft"] == pytest.approx(s["calls"][1]["ttft"])


def test_gap_within_a_response_not_between_calls() -> None:
    recs = _ws1("tool")  # the tool ran between seq 25 (completed) and seq 28 (the next create): no rule
    assert rules(validate_records(recs, options={"gap": 0.05})) == []
    late = [{**r, "t": r["t"] + 1.0} if r["seq"] >= 40 else r for r in recs]  # 1 s inside the third response
    found = validate_records(late, options={"gap": 0.5})
    assert rules(found) == [("ws-gap", "ws-1")] and found[0].seq == 40 and found[0].severity == "warning"


def test_an_unwrapped_error_event_keeps_its_code() -> None:
    recs = list(_ws1("error_event"))
    at = next(i for i, r in enumerate(recs) if (r.get("json") or {}).get("type") == "error")
    recs[at] = {**recs[at], "json": {"type": "error", "code": "rate_limit_exceeded", "message": "slow down"}}
    recs[at].pop("raw", None)
    errors = [e for e in decode_records(recs) if e.kind == "error"]
    assert [(e.data["code"], e.data["message"], e.data["status"]) for e in errors] == [
        ("rate_limit_exceeded", "slow down", None)]


def test_info_on_stdin_decodes_in_the_same_pass() -> None:
    import zstandard

    with open(cap("refuse"), "rb") as f:
        raw = zstandard.ZstdDecompressor().stream_reader(f).read()
    out = run_wirecap("info", "-", input=raw)
    assert out.returncode == 0
    assert "LLM calls: 1 over http (http-2)" in out.stdout.decode()
    plain = run_wirecap("info", "-", input=raw.replace(b"websocket", b"WebSocketNot").replace(b"/v1/responses", b"/v1/x"))
    assert b"LLM calls" not in plain.stdout  # no WebSocket tried: nothing said

