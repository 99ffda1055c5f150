"""Property tests: arbitrary JSON and arbitrary bytes into every decoder never raise; they come out
as events (`unparsed` where not understood) and findings."""

from __future__ import annotations

import base64

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wirecap.analysis.stats import stats_from_events, stats_records
from wirecap.analysis.validate import validate_records
from wirecap.capture.payload import encode_payload
from wirecap.dialects import DIALECTS, decode_records

OPEN = {
    "pipe": [{"seq": 1, "t": 0.0, "type": "open", "ch": "proc", "kind": "process", "argv": ["x"]},
             {"seq": 2, "t": 0.0, "type": "open", "ch": "stdout", "kind": "pipe", "proc": "proc", "stream": "stdout"}],
    "ws": [{"seq": 1, "t": 0.0, "type": "open", "ch": "ws-1", "kind": "ws", "url": "ws://h/ws"}],
    "http": [{"seq": 1, "t": 0.0, "type": "open", "ch": "http-1", "kind": "http", "url": "http://h/v1/x",
              "method": "POST"},
             {"seq": 2, "t": 0.0, "type": "response", "ch": "http-1", "status": 200, "headers": {}, "sse": True}],
}
CH = {"pipe": "stdout", "ws": "ws-1", "http": "http-1"}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=20,
)
# objects that look like each dialect's messages, with arbitrary values in their fields
type_names = st.sampled_from(["system", "assistant", "user", "result", "stream_event", "control_request",
                              "control_response", "action", "ack", "ping", "start", "text", "tool_call", "finish",
                              "thread.started", "item.completed", "turn.completed", "step_finish", "tool_use",
                              "message_start", "content_block_delta", "response.completed", "error", "x",
                              # claude-session and codex-rollout lines
                              "queue-operation", "attachment", "last-prompt", "session_meta", "response_item",
                              "event_msg", "turn_context", "token_usage_record"])
shaped = st.builds(lambda t, extra, data: {"type": t, **extra, "data": data, "message": data, "event": data,
                                           "item": data, "part": data, "chunk": data, "kind": "event",
                                           "payload": data, "sessionId": "s", "timestamp": "2026-01-01T00:00:00Z"},
                   type_names, st.dictionaries(st.sampled_from(["subtype", "txid", "id", "usage", "content", "delta",
                                                               "index", "choices", "response"]), json_values, max_size=4),
                   json_values)


def _records(transport: str, payloads: list, sse: bool) -> list[dict]:
    recs = [dict(r) for r in OPEN[transport]]
    for i, p in enumerate(payloads):
        fields = encode_payload(p) if isinstance(p, bytes) else {"json": p}
        rec = {"seq": len(recs) + 1, "t": 0.1 * i, "type": "msg", "ch": CH[transport], "dir": "c2s" if i == 0 else "s2c",
               **fields}
        if sse and transport == "http" and i:
            rec["sse"] = {"event": "message_start"} if i % 2 else {}
        recs.append(rec)
    recs.append({"seq": len(recs) + 1, "t": 99.0, "type": "close", "ch": "proc" if transport == "pipe" else CH[transport],
                 "exit_code": 0, "status": 200})
    return recs


def _check(payloads: list, sse: bool) -> None:
    for name, d in DIALECTS.items():
        recs = _records(d.transport, payloads, sse)
        events = list(decode_records(recs, dialect=name))
        assert all(e.seq and e.dialect == name for e in events)
        seqs_with_msgs = {r["seq"] for r in recs if r["type"] == "msg"}
        covered = {s for e in events for s in e.seq}
        # every message is either decoded into something, or understood as quiet (ping, ack, stop)
        assert covered <= {r["seq"] for r in recs}
        assert seqs_with_msgs  # sanity
        found = validate_records(recs, dialect=name)
        assert not [f for f in found if f.rule == "decoder-error"], found  # no decoder bug behind an unparsed
        stats_from_events(events)
        stats_records(recs, dialect=name)


settings_ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings_
@given(st.lists(json_values | shaped, min_size=1, max_size=6), st.booleans())
def test_arbitrary_json_never_raises(payloads: list, sse: bool) -> None:
    _check(payloads, sse)


@settings_
@given(st.lists(st.binary(max_size=60), min_size=1, max_size=5), st.booleans())
def test_arbitrary_bytes_never_raise_and_are_unparsed(payloads: list, sse: bool) -> None:
    _check(payloads, sse)
    # bytes that are not JSON at all always come out as unparsed events, never dropped
    for name, d in DIALECTS.items():
        recs = _records(d.transport, [b"\xff\xfe" + p for p in payloads], sse)
        events = list(decode_records(recs, dialect=name))
        unparsed = {e.seq[0] for e in events if e.kind == "unparsed"}
        msgs = {r["seq"] for r in recs if r["type"] == "msg" and "b64" in r}
        assert msgs <= unparsed, name
        assert all(base64.b64decode(e.data["raw"]["b64"]) for e in events if e.kind == "unparsed" and
                   isinstance(e.data.get("raw"), dict) and "b64" in e.data["raw"])


@settings_
@given(st.lists(json_values | shaped, min_size=1, max_size=6))
def test_detection_never_raises(payloads: list) -> None:
    recs = _records("pipe", payloads, False)
    recs[0]["argv"] = ["node", "script.js"]
    events = list(decode_records(recs))
    assert all(e.seq for e in events)
