"""Shared shell for the HTTP + SSE dialects: one unit is one exchange (request body, response head,
then one message per SSE event, or one JSON body).

Rules common to all three (docs/validation-rules.md): `http-status` (an error status), `sse-no-terminal`
(the stream ended without its terminal event), `sse-error-event`, `sse-gap` (a pause between events
longer than the `gap` option), `invalid-json`.
"""

from __future__ import annotations

from typing import Any

import orjson

from wirecap.dialects.base import ERROR_SEV, WARNING, Decoder, out_msgs, str_or_none, text_of, url_path
from wirecap.events import ERROR, SESSION_STARTED, TURN_ENDED, TURN_STARTED, Event


def parse_args(text: str) -> Any:
    """Tool-call arguments as JSON when they parse, else the text as it came."""
    if not text:
        return {}
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def last_user_text(messages: Any) -> str | None:
    """The prompt of a request: the last user message's text (Anthropic and OpenAI shapes)."""
    if not isinstance(messages, list):
        return messages if isinstance(messages, str) else None
    for m in reversed(messages):
        if not isinstance(m, dict) or m.get("role") != "user":
            continue
        c = m.get("content")
        if isinstance(c, str):
            return c
        if isinstance(c, list):
            parts = [b.get("text") for b in c if isinstance(b, dict) and b.get("type") in ("text", "input_text")]
            texts = [p for p in parts if isinstance(p, str)]
            if texts:
                return "\n".join(texts)
            return None
    return None


# --- what the HTTP dialects' sniffs share ------------------------------------------------------------------
def http_path(open_record: Any) -> str | None:
    """The URL path of an HTTP open record (None for any other open record)."""
    if isinstance(open_record, dict) and open_record.get("kind") == "http":
        return url_path(open_record)
    return None


def sse_names(msgs: list[dict[str, Any]]) -> list[tuple[str | None, dict[str, Any]]]:
    """(event name, record) of each SSE event among the first messages: the `event:` field, else the
    data's `type`; None when neither names it."""
    out: list[tuple[str | None, dict[str, Any]]] = []
    for rec in out_msgs(msgs):
        sse = rec.get("sse")
        if not isinstance(sse, dict) and not (rec.get("dir") == "s2c" and rec.get("text") == "[DONE]"):
            continue
        name = sse.get("event") if isinstance(sse, dict) else None
        obj = rec.get("json")
        if not isinstance(name, str) and isinstance(obj, dict) and isinstance(obj.get("type"), str):
            name = obj["type"]
        out.append((name if isinstance(name, str) else None, rec))
    return out


def _summary(rec: dict[str, Any]) -> bool:
    """Whether a record's flags say `summary`; False when its `flags` is nothing one can look in
    (a sniff never raises)."""
    try:
        return "summary" in (rec.get("flags") or ())
    except TypeError:
        return False


def response_bodies(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The JSON-object response bodies (not SSE events, not summaries) among the first messages."""
    return [r["json"] for r in out_msgs(msgs) if r.get("dir") == "s2c" and r.get("sse") is None
            and isinstance(r.get("json"), dict) and not _summary(r)]


class HttpDecoder(Decoder):
    terminal_name = "terminal event"
    error_rule = "sse-error-event"  # the rule an error event of the stream breaks (a WebSocket dialect names its own)
    error_label = "error event"  # how its finding names that event

    def __init__(self, unit: str, options: dict[str, Any] | None = None) -> None:
        super().__init__(unit, options)
        self.status_code: int | None = None
        self.sse = False
        self.terminal = False
        self.events = 0
        self.last_event_t: float | None = None
        self.model: str | None = None
        self.turn_open = False
        self.ended = False
        self.request_seen = False
        self.summarized = False  # the capture holds a summary of the response, not its events (imports)

    def msg_type(self, rec: dict[str, Any]) -> str:
        if rec.get("dir") == "c2s":
            return "request"
        sse = rec.get("sse")
        if sse is not None:
            name = sse.get("event")
            if isinstance(name, str):
                return name
            obj = rec.get("json")
            if isinstance(obj, dict) and isinstance(obj.get("type"), str):
                return obj["type"]
            if isinstance(obj, dict) and isinstance(obj.get("object"), str):
                return obj["object"]
            return "[DONE]" if rec.get("text") == "[DONE]" else "sse"
        return "response"

    # --- request ------------------------------------------------------------------------------------
    def on_msg(self, rec: dict[str, Any]) -> list[Event]:
        if rec.get("dir") == "c2s":
            return self._request(rec)
        t = rec.get("t", 0.0)
        sse = rec.get("sse")
        if sse is not None:
            if self.last_event_t is not None and t - self.last_event_t > self.options["gap"]:
                self.find(WARNING, "sse-gap", f"{t - self.last_event_t:.1f} s without an SSE event "
                          f"(threshold {self.options['gap']:g} s)", rec)
            self.last_event_t = t
            self.events += 1
            if sse.get("no_data"):
                return []
            obj = rec.get("json")
            if self.status_code is not None and self.status_code >= 400:
                return self._error_body(rec, obj)
            if obj is None and "json" not in rec:
                text = text_of(rec)
                if text == "[DONE]":
                    return self.on_done(rec)
                self.find(ERROR_SEV, "invalid-json", "an SSE event whose data is not JSON", rec)
                return [self.unparsed(rec, "SSE data is not JSON")]
            if not isinstance(obj, dict):
                return [self.unparsed(rec, f"SSE data is a JSON {type(obj).__name__}, not an object")]
            return self.on_event(rec, sse.get("event"), obj)
        obj = rec.get("json")
        if "summary" in (rec.get("flags") or ()):
            return self._summary(rec, obj)
        if self.status_code is not None and self.status_code >= 400:
            return self._error_body(rec, obj)
        if not isinstance(obj, dict):
            if "json" not in rec:
                self.find(ERROR_SEV, "invalid-json", "a response body that is not JSON", rec)
            return [self.unparsed(rec, "response body is not a JSON object")]
        return self.on_body(rec, obj)

    def _request(self, rec: dict[str, Any]) -> list[Event]:
        obj = rec.get("json")
        if not isinstance(obj, dict):
            if "json" not in rec and text_of(rec) not in (None, ""):
                self.find(ERROR_SEV, "invalid-json", "a request body that is not JSON", rec)
            return [self.unparsed(rec, "request body is not a JSON object")]
        self.request_seen = True
        self.model = str_or_none(obj.get("model"))
        self.turn_open = True
        tools = obj.get("tools")
        return [
            self.ev(SESSION_STARTED, rec, data={"session_id": None, "model": self.model, "stream": obj.get("stream") is True}),
            self.ev(TURN_STARTED, rec, data={"prompt": self.prompt_of(obj), "model": self.model,
                                             "tools": len(tools) if isinstance(tools, list) else 0}),
        ]

    def prompt_of(self, obj: dict[str, Any]) -> str | None:
        return last_user_text(obj.get("messages"))

    # --- response ---------------------------------------------------------------------------------------
    def on_response(self, rec: dict[str, Any]) -> list[Event]:
        status = rec.get("status")
        self.status_code = status if isinstance(status, int) else None
        self.sse = rec.get("sse") is True
        if self.status_code is not None and self.status_code >= 400:
            self.find(ERROR_SEV, "http-status", f"HTTP status {self.status_code} {rec.get('reason', '')}".rstrip(), rec)
        return []

    def _summary(self, rec: dict[str, Any], obj: Any) -> list[Event]:
        """A message flagged `summary` is what an imported log kept *about* the response (e.g. the lab
        fakes' `{"stream": true, "n_events": 9, ...}`), not its bytes: the events are not in the
        capture, so the stream rules (`sse-no-terminal`) have nothing to judge. Kept as a status item."""
        self.summarized = True
        data = {"summary": obj if "json" in rec else text_of(rec)}
        return [self.status(rec, "the source log kept only a summary of this response", **data)]

    def _error_body(self, rec: dict[str, Any], obj: Any) -> list[Event]:
        err = obj.get("error") if isinstance(obj, dict) else None
        if isinstance(err, dict):
            message, code = err.get("message"), err.get("type") or err.get("code")
        else:
            message, code = (str(err) if err else (text_of(rec) or str(obj))), None
        self.terminal = True
        return self.end_turn(rec, [self.ev(ERROR, rec, data={"message": message, "code": code or self.status_code,
                                                             "fatal": True, "status": self.status_code,
                                                             "failed_call": True})],
                             stop_reason="error", is_error=True)

    def end_turn(self, rec: dict[str, Any], out: list[Event], **data: Any) -> list[Event]:
        if self.turn_open:
            self.turn_open = False
            out.append(self.ev(TURN_ENDED, rec, data=data))
        return out

    def error_event(self, rec: dict[str, Any], err: Any, fatal: bool = True) -> list[Event]:
        """An error event of the stream (or body): this exchange's LLM call failed (`failed_call`, with
        the id of the message it cut, so stats does not count that message as an answered call)."""
        err = err if isinstance(err, dict) else {"message": err}
        self.find(ERROR_SEV, self.error_rule, f"{self.error_label}: {err.get('type') or err.get('code')}: {err.get('message')}"[:160], rec)
        return [self.ev(ERROR, rec, data={"message": err.get("message"), "code": err.get("type") or err.get("code"),
                                          "fatal": fatal, "failed_call": True, "message_id": self.message_id()})]

    def message_id(self) -> str | None:
        """The id of the response message being streamed, when the API gave one."""
        return None

    # --- hooks for subclasses ------------------------------------------------------------------------------
    def on_event(self, rec: dict[str, Any], name: str | None, obj: dict[str, Any]) -> list[Event]:
        return [self.unparsed(rec, "not decoded")]

    def on_done(self, rec: dict[str, Any]) -> list[Event]:
        return [self.unparsed(rec, "unexpected [DONE]")]

    def on_body(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        return [self.unparsed(rec, "not decoded")]

    def complete_open_items(self, rec: dict[str, Any]) -> list[Event]:
        return []

    # --- end ------------------------------------------------------------------------------------------------
    def _end(self, rec: dict[str, Any]) -> list[Event]:
        if self.ended:
            return []
        self.ended = True
        out: list[Event] = []
        if self.sse and not self.terminal and not self.summarized:
            self.find(ERROR_SEV, "sse-no-terminal", f"the event stream ended without its {self.terminal_name} "
                      f"({self.events} events)", rec if rec.get("seq") is not None else None, seq=self.last_seq)
            out.extend(self.complete_open_items(rec))
            self.end_turn(rec, out, stop_reason=None, is_error=True, truncated=True, message_id=self.message_id())
        else:
            self.end_turn(rec, out, stop_reason=None, is_error=False)
        out.extend(self.end_session(rec, status=self.status_code))
        return out

    def on_close(self, rec: dict[str, Any]) -> list[Event]:
        if isinstance(rec.get("status"), int) and self.status_code is None:
            self.status_code = rec["status"]
        return self._end(rec)

    def on_finish(self) -> list[Event]:
        if self.last_seq is None:
            return []
        return self._end({"seq": self.last_seq, "t": self.last_t, "ch": self.unit})
