"""Sans-I/O replay core: scripts from real captures, pacing, normalized matching, id rewriting."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from replay_support import import_sample

from wirecap.capture.reader import read_records
from wirecap.errors import WirecapError
from wirecap.replay.match import ChannelMatcher, Matcher, channel_dialect, comparable, match_profile
from wirecap.replay.rewrite import Correlator, rewrite_record
from wirecap.replay.script import build_process_script, build_scripts
from wirecap.replay.timing import Pacer


@pytest.fixture(scope="module")
def cb115(tmp_path_factory):
    return import_sample("codebuff115_hello_ws_frames.jsonl", tmp_path_factory.mktemp("core") / "cb115.jsonl")


def test_script_of_the_legacy_codebuff_session(cb115):
    [sc] = build_scripts(read_records(cb115))
    assert sc.kind == "ws" and sc.path == "/ws"
    steps = sc.client_steps
    assert [s.client["json"]["data"]["type"] for s in steps] == ["init", "user-input"]
    # init -> ack + init-response; user-input -> ack, 6 chunks, response-complete
    assert [len(s.replies) for s in steps] == [2, 8]
    assert steps[1].replies[-1].record["json"]["data"]["type"] == "response-complete"
    offsets = [r.offset for r in steps[1].replies]
    assert offsets == sorted(offsets) and offsets[0] >= 0
    assert offsets[-1] == pytest.approx(steps[1].replies[-1].record["t"] - steps[1].client["t"])
    assert channel_dialect(sc) is not None and "codebuff" in channel_dialect(sc)


def test_process_script_lines_and_exit():
    recs = [
        {"seq": 1, "t": 1.0, "type": "open", "ch": "proc", "kind": "process", "argv": ["x"]},
        {"seq": 2, "t": 1.0, "type": "open", "ch": "stdout", "kind": "pipe", "proc": "proc", "stream": "stdout"},
        {"seq": 3, "t": 1.0, "type": "open", "ch": "stderr", "kind": "pipe", "proc": "proc", "stream": "stderr"},
        {"seq": 4, "t": 1.5, "type": "msg", "ch": "stdout", "dir": "s2c", "text": "a"},
        {"seq": 5, "t": 1.7, "type": "msg", "ch": "stderr", "dir": "s2c", "text": "b", "eol": ""},
        {"seq": 6, "t": 2.0, "type": "close", "ch": "proc", "exit_code": 3},
    ]
    sc = build_process_script(recs)
    assert [(round(t, 3), s) for t, s, _ in sc.lines] == [(0.5, "stdout"), (0.7, "stderr")]
    assert sc.close["exit_code"] == 3
    only = build_process_script(recs, channels=["stderr"])
    assert [s for _, s, _ in only.lines] == ["stderr"]


def test_pacer_speed_and_cap():
    assert Pacer(1).schedule([0.1, 0.3, 2.3]) == pytest.approx([0.1, 0.3, 2.3])
    assert Pacer(2).schedule([0.1, 0.3]) == pytest.approx([0.05, 0.15])
    assert Pacer(0).schedule([5, 10]) == [0, 0]
    # a capped pause does not push the following gaps further than it took out
    assert Pacer(1, max_wait=0.5).schedule([0.1, 10.1, 10.2]) == pytest.approx([0.1, 0.6, 0.7])
    with pytest.raises(WirecapError):
        Pacer(-1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 100, allow_nan=False), max_size=20), st.floats(0.1, 10), st.none() | st.floats(0, 2))
def test_pacer_schedule_is_monotonic_and_bounded(offsets, speed, cap):
    offsets = sorted(offsets)
    due = Pacer(speed, cap).schedule(offsets)
    assert due == sorted(due)
    for d, o in zip(due, offsets, strict=True):
        assert d <= o / speed + 1e-9
    if cap is not None:
        gaps = [b - a for a, b in zip([0.0, *due], due, strict=False)]
        assert all(g <= cap + 1e-9 for g in gaps)


def test_match_ignores_volatile_fields_but_not_content(cb115):
    [sc] = build_scripts(read_records(cb115))
    m = Matcher((), channel_dialect(sc))
    rec = comparable(sc.client_steps[1].client)
    live = {**rec, "txid": 7, "data": {**rec["data"], "userInputId": "mc-input-other",
                                       "fingerprintId": "another-fp"}}
    assert m.same(live, rec)
    changed = {**live, "data": {**live["data"], "messages": [{"role": "user", "content": "say bye"}]}}
    assert not m.same(changed, rec)
    assert m.diffs(changed, rec) == [("data.messages[0].content", "say hello", "say bye")]
    assert Matcher(["data.messages"], channel_dialect(sc)).same(changed, rec)


def test_strict_mismatch_names_message_candidate_and_field(cb115):
    [sc] = build_scripts(read_records(cb115))
    cm = ChannelMatcher(sc, Matcher((), channel_dialect(sc)))
    first = comparable(sc.client_steps[0].client)
    assert cm.feed(first) == (0, None)
    rec = comparable(sc.client_steps[1].client)
    live = {**rec, "data": {**rec["data"], "messages": [{"role": "user", "content": "say bye"}]}}
    index, mm = cm.feed(live)
    assert index is None
    reason = mm.reason()
    assert "message #2 (action user-input) on ws-1" in reason
    assert f"recorded seq {sc.client_steps[1].client['seq']}" in reason
    assert 'data.messages[0].content: recorded "say hello", live "say bye"' in reason
    assert "closest recorded candidate" in mm.report()
    # lenient mode goes on with the next step and still reports
    cm2 = ChannelMatcher(sc, Matcher((), channel_dialect(sc)), strict=False)
    cm2.feed(first)
    index, mm = cm2.feed(live)
    assert index == 1 and mm is not None and cm2.done


def test_out_of_order_message_is_named(cb115):
    [sc] = build_scripts(read_records(cb115))
    cm = ChannelMatcher(sc, Matcher((), channel_dialect(sc)))
    index, mm = cm.feed(comparable(sc.client_steps[1].client))
    assert index is None and "out of order" in mm.reason()


def test_correlator_learns_and_rewrites():
    corr = Correlator()
    corr.learn({"type": "action", "txid": 1, "data": {"userInputId": "u-rec", "messages": []}},
               {"type": "action", "txid": 5, "data": {"userInputId": "u-live", "messages": []}})
    ack = {"seq": 9, "type": "msg", "json": {"type": "ack", "txid": 1, "success": True},
           "raw": '{"type": "ack", "txid": 1, "success": true}'}
    out = rewrite_record(corr, ack)
    assert out["json"] == {"type": "ack", "txid": 5, "success": True} and "raw" not in out
    chunk = {"json": {"type": "action", "data": {"type": "response-chunk", "userInputId": "u-rec", "chunk": "Hi"}}}
    assert rewrite_record(corr, chunk)["json"]["data"]["userInputId"] == "u-live"
    # a value that only looks the same under another key is left alone; untouched records stay identical
    other = {"json": {"data": {"text": "u-rec", "txid": "1"}}, "raw": "x"}
    assert rewrite_record(corr, other) is other


def test_correlator_maps_tool_call_request_id():
    corr = Correlator()  # client side: recorded server said req_A, the live server says req_B
    corr.learn({"data": {"type": "tool-call-request", "requestId": "req_A"}},
               {"data": {"type": "tool-call-request", "requestId": "req_B"}})
    value, changed = corr.rewrite({"type": "action", "txid": 1,
                                   "data": {"type": "tool-call-response", "requestId": "req_A"}})
    assert changed and value["data"]["requestId"] == "req_B" and value["txid"] == 1


def test_analytics_batches_match_whatever_they_hold_and_however_many():
    """PostHog batches follow the client's flush timer: two events in one request in the recording,
    one per request live (a real Codebuff SDK 0.10 run). Every live batch is answered, none is a mismatch;
    a chat request is still matched strictly."""
    from pathlib import Path

    from wirecap.replay.pool import ScriptPool

    cap = Path(__file__).parents[1] / "fixtures" / "captures" / "runs" / "sdk10-hello-a.jsonl"
    scripts = build_scripts(read_records(str(cap)))
    pool = ScriptPool(scripts)
    batches = [s for s in scripts if s.kind == "http" and s.path == "/batch/"]
    assert batches and all(match_profile(s) == "telemetry" and channel_dialect(s) is None for s in batches)
    event = {"event": "x", "properties": {"promptId": "abc"}, "type": "capture", "timestamp": "2026-11-25T06:00:00Z"}
    for n in (1, 2, 1, 1, 3, 1, 1, 1):  # more requests than were recorded, each holding other events
        body = json.dumps({"api_key": "k", "batch": [event] * n, "sent_at": "2026-11-25T06:00:01Z"}).encode()
        sc, mm = pool.take_http("POST", "/batch/", body)
        assert sc is not None and mm is None
    sc, mm = pool.take_http("POST", "/api/v1/chat/completions", b'{"model": "x", "messages": []}')
    assert sc is None and mm is not None


def test_replay_imports_go_one_way():
    """http_server -> ws_server -> ws_conn, never back (a WebSocket session gets a WsContext, not the
    server); the sans-I/O core imports none of the I/O shells."""
    import ast
    from pathlib import Path

    import wirecap.replay as pkg

    shells = {"http_server", "ws_server", "ws_conn", "client", "http_client", "process"}
    core = {"script", "match", "pool", "rewrite", "timing", "secrets", "wire"}
    allowed = {"http_server": {"ws_server", "ws_conn"}, "ws_server": {"ws_conn"}, "client": {"http_client"}}
    for path in Path(pkg.__file__).parent.glob("*.py"):
        name = path.stem
        imported = {node.module.rsplit(".", 1)[1] for node in ast.walk(ast.parse(path.read_text()))
                    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("wirecap.replay.")}
        if name in core:
            assert not imported & shells, (name, imported & shells)
        elif name in shells:
            assert imported & shells <= allowed.get(name, set()), (name, imported & shells)
