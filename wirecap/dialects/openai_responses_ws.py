"""OpenAI Responses API over WebSocket (`GET .../responses`, upgraded): Codex CLI's default transport.

One WebSocket carries several LLM calls, one after another. Per call the client sends one text
message, the Responses request body plus `"type": "response.create"` (Codex's first one of a
connection is a prewarm: `"generate": false`); the server answers with text messages, each the JSON of
one Responses stream event, exactly what SSE carries in `data:` (response.created ... output items ...
response.completed / failed / incomplete), or a wrapped error message `{"type": "error", "status": N,
"error": {...}}`. The socket stays open between calls; Codex drops it without a close frame at exit.

The stream events are decoded by the Responses state machine of `openai_responses_sse` (this decoder
is that decoder, fed by WebSocket messages instead of SSE events), so both transports give the same
universal events: per call a `turn.started` (with `prewarm: true` for `generate: false`), the items,
the `usage` of the response (message id = response id) and a `turn.ended`; one `session.started` /
`session.ended` per socket. What only the WebSocket has is checked here: a response cut by the next
`response.create` or by the socket's close, and the wrapped error message.
"""

from __future__ import annotations

from typing import Any

from wirecap.dialects.base import ERROR_SEV, WARNING, Dialect, json_objects, str_or_none, text_of, url_path
from wirecap.dialects.openai_responses_sse import (
    RESPONSES_RULES,
    OpenAIResponsesDecoder,
    request_view,
    responses_known,
)
from wirecap.events import ERROR, SESSION_STARTED, TURN_STARTED, Event

CREATE = "response.create"
APPEND = "response.append"  # (protocol v1: new input continuing the last response, a new call)
PROCESSED = "response.processed"  # (newer clients: `{"response_id"}`, the client's ack of a response)


class OpenAIResponsesWsDecoder(OpenAIResponsesDecoder):
    dialect = "openai-responses-ws"
    error_rule = "ws-error-event"
    error_label = "response.failed"  # (the wrapped `error` message has its own rule: `_error`)

    def __init__(self, unit: str, options: dict[str, Any] | None = None) -> None:
        super().__init__(unit, options)
        self.session_id: str | None = None
        self.started = False
        self.calls = 0

    def msg_type(self, rec: dict[str, Any]) -> str:
        obj = rec.get("json")
        if isinstance(obj, dict) and isinstance(obj.get("type"), str):
            return obj["type"]
        return "json" if "json" in rec else ("text" if "text" in rec else "binary")

    def on_open(self, rec: dict[str, Any]) -> list[Event]:
        headers = rec.get("headers")
        if isinstance(headers, dict):
            self.session_id = str_or_none(headers.get("session-id") or headers.get("session_id"))
        return []

    def on_response(self, rec: dict[str, Any]) -> list[Event]:
        return []

    def on_msg(self, rec: dict[str, Any]) -> list[Event]:
        obj = rec.get("json")
        if not isinstance(obj, dict):
            if "json" not in rec:
                self.find(ERROR_SEV, "invalid-json", "a WebSocket message that is not JSON", rec)
                return [self.unparsed(rec, "not JSON" if text_of(rec) is not None else "binary message")]
            return [self.unparsed(rec, f"a JSON {type(obj).__name__}, not an object")]
        if rec.get("dir") == "c2s":
            t = obj.get("type")
            if t == PROCESSED:
                return []
            if t != CREATE and t != APPEND:
                return [self.unparsed(rec, f"unknown client message type {t!r}")]
            return self._create(rec, obj)
        self.events += 1
        self._gap(rec)
        return self.on_event(rec, None, obj)

    def _gap(self, rec: dict[str, Any]) -> None:
        """Rule `ws-gap`: a pause between two messages of one streaming response longer than the `gap`
        option (between calls the client runs tools: no rule there)."""
        t = rec.get("t")
        if not isinstance(t, (int, float)):
            return
        last = self.last_event_t
        self.last_event_t = t
        if last is not None and self.turn_open and not self.terminal and t - last > self.options["gap"]:
            self.find(WARNING, "ws-gap", f"{t - last:.1f} s without a message of the response "
                      f"(threshold {self.options['gap']:g} s)", rec)

    def _create(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        """A `response.create`: the previous response (if still streaming) is cut, a new call starts."""
        out: list[Event] = []
        if self.turn_open and not self.terminal:
            self.find(ERROR_SEV, "ws-no-terminal", "response.create sent while the previous response had no "
                      f"terminal event ({self.events} events)", rec)
            out.extend(self._cut(rec))
        self.terminal, self.rid, self.events, self.last_event_t = False, None, 0, None
        self.calls += 1
        model = self.model
        events = self._request(rec)
        if self.model is None:  # (a response.append names no model: the last one's)
            self.model = model
        for ev in events:
            if ev.kind == SESSION_STARTED:
                ev.data["session_id"] = self.session_id
            elif ev.kind == TURN_STARTED:
                ev.data["model"] = self.model
                if obj.get("generate") is False:
                    ev.data["prewarm"] = True
        if self.started:
            events = [ev for ev in events if ev.kind != SESSION_STARTED]
        self.started = True
        out.extend(events)
        return out

    def _cut(self, rec: dict[str, Any]) -> list[Event]:
        out = self.complete_open_items(rec)
        return self.end_turn(rec, out, stop_reason=None, is_error=True, truncated=True, message_id=self.message_id())

    def _error(self, rec: dict[str, Any], et: str, obj: dict[str, Any]) -> list[Event]:
        """The wrapped error message (`{"type": "error", "status": N, "error": {...}}`): the call failed."""
        self.terminal = True
        err = obj.get("error")
        if isinstance(err, dict):  # wrapped: the API's error object inside
            code = err.get("type") or err.get("code")
        else:  # an SSE-style error event (`code`, `message` at the top)
            err, code = obj, obj.get("code")
        status = obj.get("status") if isinstance(obj.get("status"), int) else None
        self.find(ERROR_SEV, "ws-error-message", f"error message{f' (status {status})' if status else ''}: "
                  f"{code}: {err.get('message')}"[:160], rec)
        ev = self.ev(ERROR, rec, data={"message": err.get("message"), "code": code, "fatal": True, "status": status,
                                       "failed_call": True, "message_id": self.message_id()})
        return self.end_turn(rec, [ev], stop_reason="error", is_error=True)

    def on_close(self, rec: dict[str, Any]) -> list[Event]:
        out: list[Event] = []
        if self.turn_open and not self.terminal:
            code, by, reason = rec.get("code"), rec.get("by"), rec.get("reason")
            self.find(ERROR_SEV, "ws-closed-mid-response", f"the socket closed (code {code}"
                      f"{f', by the {by}' if by else ''}{f': {reason}' if reason else ''}) before the response's "
                      f"terminal event ({self.events} events)"[:200], rec)
            out.extend(self._cut(rec))
        data = {k: rec[k] for k in ("code", "reason", "by") if rec.get(k) is not None and rec.get(k) != ""}
        out.extend(self.end_session(rec, **data))
        return out

    def on_finish(self) -> list[Event]:
        if self.last_seq is None:
            return []
        rec = {"seq": self.last_seq, "t": self.last_t, "ch": self.unit}
        out: list[Event] = []
        if self.turn_open and not self.terminal:
            self.find(ERROR_SEV, "ws-no-terminal", f"the capture ended while a response was streaming "
                      f"({self.events} events)", seq=self.last_seq)
            out.extend(self._cut(rec))
        out.extend(self.end_session(rec))
        return out


def sniff(open_record: dict[str, Any] | None, msgs: list[dict[str, Any]]) -> str | None:
    """Responses over WebSocket: a WebSocket at a path ending in `/responses`, or a `response.create`
    client message, or `response.*` server messages."""
    if isinstance(open_record, dict) and open_record.get("kind") == "ws" and url_path(open_record).endswith("/responses"):
        return f"WebSocket {url_path(open_record)} (OpenAI Responses)"
    for obj in json_objects(msgs):
        t = obj.get("type")
        if t in (CREATE, APPEND):
            return f"client message {t!r}"
        if isinstance(t, str) and t.startswith("response.") and isinstance(obj.get("response", obj.get("item_id", obj.get("item"))), (dict, str)):
            return f"server message {t!r}"
    return None


DIALECT = Dialect(
    name="openai-responses-ws",
    llm_calls=True,
    transport="ws",
    decoder=OpenAIResponsesWsDecoder,
    known=responses_known(ws=True),
    summary="OpenAI Responses API over WebSocket (Codex): response.create messages + Responses stream events",
    volatile=("response.id", "response.created_at", "item_id", "item.id", "item.call_id", "sequence_number",
              "prompt_cache_key", "**.call_id", "user", "metadata.user_id", "previous_response_id"),
    rules=(
        *RESPONSES_RULES,
        ("ws-error-event", ERROR_SEV, "a response.failed terminal event"),
        ("ws-error-message", ERROR_SEV, "a wrapped error message (`{\"type\": \"error\", \"status\": N, ...}`): the call failed"),
        ("ws-no-terminal", ERROR_SEV, "a response without its terminal event before the next response.create (or the capture's end)"),
        ("ws-closed-mid-response", ERROR_SEV, "the socket closed while a response was streaming"),
        ("ws-gap", WARNING, "a pause between two messages of one response longer than the `gap` option"),
        ("invalid-json", ERROR_SEV, "a WebSocket message that is not JSON"),
    ),
    sniff=sniff,
    priority=85,
    per_call=True,
    request_view=request_view,
    mismatch_messages=lambda live, text: mismatch_messages(live, text),
)


def mismatch_messages(live: Any, text: str) -> list[str]:
    """Replay's answer to a live message that matched nothing (`Dialect.mismatch_messages`): the wrapped
    error message with a 4xx status, which Codex takes as the call's failure and neither retries nor
    falls back to HTTP on (it prints the message and the turn fails)."""
    import json  # (here: this hook is replay's one addition to the module)

    error = {"message": text, "type": "invalid_request_error", "param": None, "code": "wirecap_replay_mismatch"}
    return [json.dumps({"type": "error", "status": 400, "error": error}, ensure_ascii=False, separators=(",", ":"))]
