"""What replay asks of a channel's dialect, sans-I/O: the mismatch answer (`Dialect.mismatch_messages`)
and where a live WebSocket upgrade goes when the recording refused one (`ScriptPool.upgrade_refused`)."""

from __future__ import annotations

import json

from wirecap.dialects import get_dialect
from wirecap.replay.pool import ScriptPool
from wirecap.replay.script import build_scripts
from wirecap.replay.ws_server import mismatch_messages

TEXT = "wirecap replay mismatch: message #2 (response.create) on ws-1 does not match recorded seq 27"


def test_responses_ws_answers_a_mismatch_with_a_wrapped_400_error():
    out = [json.loads(m) for m in mismatch_messages("openai-responses-ws", {"type": "response.create"}, TEXT)]
    assert out == [{"type": "error", "status": 400, "error": {
        "message": TEXT, "type": "invalid_request_error", "param": None, "code": "wirecap_replay_mismatch"}}]


def test_codebuff_ws_answers_a_prompt_with_prompt_error_and_anything_else_with_action_error():
    prompt = {"type": "action", "txid": 1, "data": {"type": "prompt", "promptId": "p-9"}}
    assert [json.loads(m) for m in mismatch_messages("codebuff-ws", prompt, TEXT)] == [
        {"type": "action", "data": {"type": "prompt-error", "userInputId": "p-9", "message": TEXT}}]
    for live in ({"type": "action", "data": {"type": "user-input"}}, None, "text"):
        assert [json.loads(m) for m in mismatch_messages("codebuff-ws", live, TEXT)] == [
            {"type": "action", "data": {"type": "action-error", "message": TEXT}}]


def test_other_dialects_and_unknown_names_answer_nothing():
    assert get_dialect("openai-responses-sse").mismatch_messages({}, TEXT) == []  # (the base default)
    assert mismatch_messages(None, {}, TEXT) == []
    assert mismatch_messages("no-such-dialect", {}, TEXT) == []


def _refused_then_ws() -> list[dict]:
    up = {"connection": "Upgrade", "upgrade": "websocket", "sec-websocket-version": "13"}
    return [
        {"seq": 1, "t": 0.1, "type": "open", "ch": "http-1", "kind": "http", "method": "GET",
         "url": "http://127.0.0.1:1/v1/responses", "headers": up},
        {"seq": 2, "t": 0.2, "type": "response", "ch": "http-1", "status": 426, "headers": {}},
        {"seq": 3, "t": 0.2, "type": "close", "ch": "http-1", "status": 426},
        {"seq": 4, "t": 0.3, "type": "open", "ch": "ws-1", "kind": "ws", "url": "ws://127.0.0.1:1/v1/responses"},
    ]


def test_a_live_upgrade_gets_the_recorded_refusal_while_it_is_the_next_recording_at_the_path():
    pool = ScriptPool(build_scripts(_refused_then_ws()))
    assert pool.upgrade_refused("/v1/responses")
    script, mm = pool.take_http("GET", "/v1/responses", b"")
    assert mm is None and script is not None and script.ch == "http-1"
    assert not pool.upgrade_refused("/v1/responses")  # the refusal is used: the next upgrade is the ws channel
    assert pool.take_ws("/v1/responses") is not None
    assert not pool.upgrade_refused("/elsewhere")


def test_a_plain_get_is_not_a_refused_upgrade():
    recs = _refused_then_ws()
    recs[0] = {**recs[0], "headers": {}}
    assert not ScriptPool(build_scripts(recs)).upgrade_refused("/v1/responses")


def _ws_open(ch: str, seq: int, **fields) -> dict:
    return {"seq": seq, "t": 0.1 * seq, "type": "open", "ch": ch, "kind": "ws", "url": "ws://127.0.0.1:1/v1/responses",
            **fields}


def test_permessage_deflate_is_agreed_as_the_recorded_server_did():
    deflate = {"sec-websocket-extensions": "permessage-deflate"}
    pool = ScriptPool(build_scripts([
        _ws_open("ws-1", 1, response_headers={"upgrade": "websocket"}),  # the recorded server declined it
        _ws_open("ws-2", 2, response_headers=deflate),
        _ws_open("ws-3", 3, extensions="permessage-deflate", response_headers={}),  # (the open record says so)
        _ws_open("ws-4", 4),  # an import: no handshake recorded
    ]))
    said = []
    for _ in range(4):
        said.append(pool.ws_deflate("/v1/responses"))
        pool.take_ws("/v1/responses")
    assert said == [False, True, True, True]
    assert pool.ws_deflate("/v1/responses") and pool.ws_deflate("/ws")  # none left, none recorded: the default
