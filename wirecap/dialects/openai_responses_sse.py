"""OpenAI Responses API over HTTP + SSE (`POST .../responses`): what Codex sends.

Events: response.created / in_progress, output_item.added / done (message, function_call,
reasoning, custom_tool_call, ...), content_part.*, output_text.delta / done,
function_call_arguments.delta / done, reasoning_summary_text.delta, and the terminal
response.completed / response.failed / response.incomplete, or error. Usage is in the final
response: `input_tokens` includes `input_tokens_details.cached_tokens`.

The stream's state machine (`OpenAIResponsesDecoder.on_event` and its handlers) is the one both
transports use: `openai_responses_ws` subclasses this decoder and feeds it WebSocket messages. Also
here: the rule `responses-orphan-output` (a function-call output no call issued), and a refused
WebSocket upgrade of the endpoint (`GET .../responses` answered with another status than 101: an
error event with `transport: "ws"`, rule `ws-upgrade-refused`), after which a client falls back here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wirecap.dialects import request_view as rv
from wirecap.dialects.anthropic_sse import RULES
from wirecap.dialects.base import ERROR_SEV, WARNING, Dialect, as_dict, num, str_or_none, text_of
from wirecap.dialects.http_base import (
    HttpDecoder,
    http_path,
    last_user_text,
    parse_args,
    response_bodies,
    sse_names,
)
from wirecap.dialects.openai_chat_sse import chat_tool
from wirecap.events import (
    ERROR,
    ITEM_COMPLETED,
    ITEM_DELTA,
    ITEM_STARTED,
    MESSAGE,
    REASONING,
    TOOL_CALL,
    USAGE,
    Event,
)

_ITEM = {"message": MESSAGE, "reasoning": REASONING, "function_call": TOOL_CALL, "custom_tool_call": TOOL_CALL,
         "local_shell_call": TOOL_CALL, "web_search_call": TOOL_CALL, "file_search_call": TOOL_CALL,
         "mcp_call": TOOL_CALL, "code_interpreter_call": TOOL_CALL, "image_generation_call": TOOL_CALL}
_CALL_ITEMS = frozenset(("function_call", "custom_tool_call", "local_shell_call"))
_OUTPUT_ITEMS = frozenset(("function_call_output", "custom_tool_call_output", "local_shell_call_output"))
_QUIET = frozenset(("response.in_progress", "response.content_part.added", "response.content_part.done",
                    "response.output_text.done", "response.function_call_arguments.done",
                    "response.reasoning_summary_part.added", "response.reasoning_summary_part.done",
                    "response.reasoning_summary_text.done", "response.reasoning_text.done",
                    "response.custom_tool_call_input.done", "response.output_text.annotation.added", "keepalive"))
_DELTAS = {"response.output_text.delta": (MESSAGE, "text"), "response.function_call_arguments.delta": (TOOL_CALL, "arguments"),
           "response.custom_tool_call_input.delta": (TOOL_CALL, "arguments"),
           "response.reasoning_summary_text.delta": (REASONING, "text"), "response.reasoning_text.delta": (REASONING, "text"),
           "response.refusal.delta": (MESSAGE, "text")}


def _kind(item: dict[str, Any]) -> str | None:
    """An input item's `type` when it is a string (JSON from the wire may hold anything there)."""
    t = item.get("type")
    return t if isinstance(t, str) else None


def responses_usage(u: dict[str, Any]) -> dict[str, Any]:
    d = as_dict(u.get("input_tokens_details"))
    od = as_dict(u.get("output_tokens_details"))
    cached = num(d.get("cached_tokens"))
    return {"input_tokens": max(num(u.get("input_tokens")) - cached, 0), "output_tokens": num(u.get("output_tokens")),
            "cache_read_tokens": cached, "cache_creation_tokens": 0, "reasoning_tokens": num(od.get("reasoning_tokens"))}


def _item_text(kind: str, item: dict[str, Any]) -> str | None:
    """The text of a done message (its content parts) or reasoning item (its summary parts)."""
    parts = item.get("content" if kind == MESSAGE else "summary")
    if not isinstance(parts, list):
        return "" if kind == MESSAGE else None
    return "".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))


class OpenAIResponsesDecoder(HttpDecoder):
    dialect = "openai-responses-sse"
    terminal_name = "response.completed / failed / incomplete event"

    def __init__(self, unit: str, options: dict[str, Any] | None = None) -> None:
        super().__init__(unit, options)
        self.rid: str | None = None
        self.issued: set[str] = set()  # the call ids of the function calls the responses of this unit gave
        self.responses: set[str] = set()  # the ids of the responses this unit saw
        self.refusal = ""  # the status a refused upgrade was answered
        self.upgrade = False  # a WebSocket upgrade of the endpoint (GET with `Upgrade: websocket`), not a call
        self._events: dict[str, Callable[[dict[str, Any], str, dict[str, Any]], list[Event]]] = {
            "response.output_item.added": self._item_added,
            "response.output_item.done": self._item_done,
            "response.created": self._created,
            "response.completed": self._finished,
            "response.failed": self._finished,
            "response.incomplete": self._finished,
            "error": self._error,
            "codex.rate_limits": self._rate_limits,
        }

    def prompt_of(self, obj: dict[str, Any]) -> str | None:
        inp = obj.get("input")
        return last_user_text(inp) if not isinstance(inp, str) else inp

    def _request(self, rec: dict[str, Any]) -> list[Event]:
        out = super()._request(rec)
        obj = rec.get("json")
        if isinstance(obj, dict):
            self.check_call_outputs(rec, obj)
        return out

    def check_call_outputs(self, rec: dict[str, Any], obj: dict[str, Any]) -> None:
        """Rule `responses-orphan-output`: a function-call output in the request's input whose call id
        no call issued (one of the input's own call items, or a call an earlier response of this unit
        gave). Not judged for a request that continues a response this unit did not see
        (`previous_response_id` of another connection)."""
        inp = obj.get("input")
        if not isinstance(inp, list):
            return
        prev = obj.get("previous_response_id")
        if isinstance(prev, str) and prev and prev not in self.responses:
            return
        items = [(i, _kind(i)) for i in inp if isinstance(i, dict)]
        issued = self.issued | {i["call_id"] for i, k in items if k in _CALL_ITEMS and isinstance(i.get("call_id"), str)}
        for i, k in items:
            if k in _OUTPUT_ITEMS and not (isinstance(i.get("call_id"), str) and i["call_id"] in issued):
                self.find(ERROR_SEV, "responses-orphan-output", f"{i.get('type')} for call id {i.get('call_id')!r}, "
                          "which no call issued"[:160], rec)

    def _item_events(self, rec: dict[str, Any], item: Any, done: bool) -> list[Event]:
        """An output item added (started) or done (completed, with its text or its call's input)."""
        t = item.get("type") if isinstance(item, dict) else None
        kind = _ITEM.get(t) if isinstance(t, str) else None
        if kind is None:
            return [self.unparsed(rec, f"unknown output item {item!r:.60}")]
        iid = item.get("id") if isinstance(item.get("id"), str) else None
        phase = ITEM_COMPLETED if done else ITEM_STARTED
        if kind == TOOL_CALL:
            data = {"name": item.get("name") or t, "call_id": item.get("call_id") or iid}
            if isinstance(data["call_id"], str):
                self.issued.add(data["call_id"])
            if done:
                raw = item.get("arguments", item.get("input", item.get("action")))
                data["input"] = parse_args(raw) if isinstance(raw, str) else raw
            return [self.ev(phase, rec, kind, iid, "assistant", data)]
        if not done:
            return [self.ev(phase, rec, kind, iid, "assistant", {})]
        return [self.ev(phase, rec, kind, iid, "assistant", {"text": _item_text(kind, item)})]

    def message_id(self) -> str | None:
        return self.rid

    # --- a WebSocket upgrade refused (the client then falls back to HTTP + SSE) ------------------------
    def on_open(self, rec: dict[str, Any]) -> list[Event]:
        headers = rec.get("headers")
        self.upgrade = (rec.get("method") == "GET" and isinstance(headers, dict)
                        and str(headers.get("upgrade", "")).lower() == "websocket")
        return []

    def on_response(self, rec: dict[str, Any]) -> list[Event]:
        if not self.upgrade:
            return super().on_response(rec)
        status = rec.get("status")
        self.status_code = status if isinstance(status, int) else None
        what = self.refusal = f"{status} {rec.get('reason') or ''}".rstrip()
        self.find(WARNING, "ws-upgrade-refused", f"the WebSocket upgrade was answered {what}, not 101", rec)
        return [self.ev(ERROR, rec, data={"message": f"WebSocket upgrade refused: {what}", "code": status,
                                          "status": status, "fatal": False, "transport": "ws"})]

    def on_msg(self, rec: dict[str, Any]) -> list[Event]:
        if self.upgrade:  # the body of the refusal: what the server said, as a status item
            err = as_dict(as_dict(rec.get("json")).get("error"))
            text = err.get("message") if isinstance(err.get("message"), str) else text_of(rec)
            return [self.status(rec, f"WebSocket upgrade refused ({self.refusal}): {text}", subtype="ws-upgrade-refused")]
        return super().on_msg(rec)

    def on_event(self, rec: dict[str, Any], name: str | None, obj: dict[str, Any]) -> list[Event]:
        et = obj.get("type") or name
        if not isinstance(et, str):
            return [self.unparsed(rec, f"unknown event type {et!r}")]
        spec = _DELTAS.get(et)
        if spec is not None:
            return [self.ev(ITEM_DELTA, rec, spec[0], obj.get("item_id"), "assistant", {spec[1]: obj.get("delta")})]
        if et in _QUIET:
            return []
        handler = self._events.get(et)
        if handler is None:
            return [self.unparsed(rec, f"unknown event type {et!r}")]
        return handler(rec, et, obj)

    def _item_added(self, rec: dict[str, Any], et: str, obj: dict[str, Any]) -> list[Event]:
        return self._item_events(rec, obj.get("item"), False)

    def _item_done(self, rec: dict[str, Any], et: str, obj: dict[str, Any]) -> list[Event]:
        return self._item_events(rec, obj.get("item"), True)

    def _created(self, rec: dict[str, Any], et: str, obj: dict[str, Any]) -> list[Event]:
        resp = obj.get("response")
        if not isinstance(resp, dict):
            resp = {}
        self.rid = resp.get("id") if isinstance(resp.get("id"), str) else None
        if self.rid is not None:
            self.responses.add(self.rid)
        self.model = resp.get("model") or self.model
        return []

    def _finished(self, rec: dict[str, Any], et: str, obj: dict[str, Any]) -> list[Event]:
        """response.completed / failed / incomplete: the terminal event, with the usage."""
        self.terminal = True
        resp = obj.get("response")
        if not isinstance(resp, dict):
            resp = {}
        out: list[Event] = []
        u = resp.get("usage")
        if isinstance(u, dict):
            out.append(self.ev(USAGE, rec, data={"model": resp.get("model") or self.model,
                                                 "message_id": resp.get("id") or self.rid,
                                                 **responses_usage(u), "scope": "message"}))
        if et == "response.failed":
            out.extend(self.error_event(rec, resp.get("error") or {"message": "response.failed"}))
        elif et == "response.incomplete":
            details = resp.get("incomplete_details")
            self.find(ERROR_SEV, "responses-incomplete", f"response incomplete: {details}"[:160], rec)
        return self.end_turn(rec, out, stop_reason=resp.get("status") or et.split(".")[1],
                             is_error=et != "response.completed")

    def _rate_limits(self, rec: dict[str, Any], et: str, obj: dict[str, Any]) -> list[Event]:
        """`codex.rate_limits` (OpenAI's Codex backend, before a response's content): the plan's
        usage windows, a status item."""
        return [self.status(rec, "rate limits", subtype=et, rate_limits=obj.get("rate_limits"),
                            plan_type=obj.get("plan_type"))]

    def _error(self, rec: dict[str, Any], et: str, obj: dict[str, Any]) -> list[Event]:
        self.terminal = True
        err = obj.get("error")
        return self.end_turn(rec, self.error_event(rec, err if isinstance(err, dict) else obj),
                             stop_reason="error", is_error=True)

    def on_body(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        if obj.get("object") != "response":
            return [self.unparsed(rec, "response body is not a Responses API response")]
        out: list[Event] = []
        output = obj.get("output")
        for item in output if isinstance(output, list) else []:
            out.extend(self._item_events(rec, item, True))
        if isinstance(obj.get("usage"), dict):
            out.append(self.ev(USAGE, rec, data={"model": obj.get("model") or self.model, "message_id": obj.get("id"),
                                                 **responses_usage(obj["usage"]), "scope": "message"}))
        return self.end_turn(rec, out, stop_reason=obj.get("status"), is_error=obj.get("status") == "failed")


RESPONSES_RULES = (
    ("responses-incomplete", ERROR_SEV, "a response.incomplete terminal event"),
    ("responses-orphan-output", ERROR_SEV, "a request's function-call output whose call id was never issued "
     "(no call of that id in the request's input nor in an earlier response of the channel)"),
)


def sniff(open_record: dict[str, Any] | None, msgs: list[dict[str, Any]]) -> str | None:
    """OpenAI Responses: a path ending in `/responses`, or `response.*` SSE events, or a JSON body
    with object `response`."""
    path = http_path(open_record)
    if path and path.endswith("/responses"):
        return f"HTTP {path} (OpenAI Responses)"
    for name, _rec in sse_names(msgs):
        if name and name.startswith("response."):
            return f"SSE event {name!r}"
    for obj in response_bodies(msgs):
        if obj.get("object") == "response":
            return "JSON Responses API body"
    return None
# --- drift (rule `drift`): the events this dialect knows are exactly the ones the decoder names above
# (_DELTAS, _QUIET, the output-item, lifecycle and error events); fields from Codex 0.169.0 runs against
# the fake and the Responses API. Of a request only the top-level fields are checked.
def responses_known(ws: bool = False) -> Any:
    """What the Responses dialects know (rule `drift`); `ws`: the WebSocket's messages (`response.create`
    requests with `type` and `generate`, the wrapped `error` message with its `status`)."""
    from wirecap.dialects.drift import OPEN, Known, Union

    request = dict.fromkeys((
        "model", "instructions", "parallel_tool_calls", "store", "stream", "prompt_cache_key", "max_output_tokens",
        "temperature", "top_p", "previous_response_id", "truncation", "service_tier", "user", "background",
        "safety_identifier", "prompt_cache_retention"))
    request.update(dict.fromkeys(("input", "tools", "tool_choice", "reasoning", "include", "text", "client_metadata",
                                  "metadata", "conversation", "prompt"), OPEN))
    if ws:
        request.update(dict.fromkeys(("type", "generate", "response_id")))
    part = Union("type", {"output_text": {"type": None, "text": None, "annotations": OPEN, "logprobs": OPEN},
                          "refusal": {"type": None, "refusal": None},
                          "reasoning_text": {"type": None, "text": None}}, label=False)
    call = {"id": None, "type": None, "status": None, "call_id": None, "name": None}
    item = Union("type", {
        "message": {"id": None, "type": None, "status": None, "role": None, "content": [part]},
        "reasoning": {"id": None, "type": None, "status": None, "summary": OPEN, "content": OPEN,
                      "encrypted_content": None},
        "function_call": {**call, "arguments": None},
        "custom_tool_call": {**call, "input": None},
        **dict.fromkeys(("local_shell_call", "web_search_call", "file_search_call", "mcp_call",
                         "code_interpreter_call", "image_generation_call"), OPEN),
    }, label=False)
    usage = {"input_tokens": None, "input_tokens_details": None, "output_tokens": None, "output_tokens_details": None,
             "total_tokens": None}
    response = {"id": None, "object": None, "created_at": None, "model": None, "status": None, "output": [item],
                "usage": usage, "error": OPEN, "incomplete_details": OPEN, **dict.fromkeys((
                    "instructions", "max_output_tokens", "parallel_tool_calls", "previous_response_id", "reasoning",
                    "store", "temperature", "text", "tool_choice", "tools", "top_p", "truncation", "user", "metadata",
                    "background", "service_tier", "prompt_cache_key", "safety_identifier", "max_tool_calls",
                    "top_logprobs", "conversation", "prompt", "prompt_cache_retention"), OPEN)}
    ev = {"type": None, "sequence_number": None, "item_id": None, "output_index": None, "content_index": None,
          "summary_index": None, "obfuscation": None, "logprobs": OPEN}
    events = {
        **dict.fromkeys(_QUIET, {**ev, "text": None, "arguments": None, "name": None, "input": None, "part": part,
                                 "annotation_index": None, "annotation": OPEN, "response": response}),
        **dict.fromkeys(_DELTAS, {**ev, "delta": None}),
        "response.output_item.added": {**ev, "item": item},
        "response.output_item.done": {**ev, "item": item},
        **dict.fromkeys(("response.created", "response.completed", "response.failed", "response.incomplete"),
                        {**ev, "response": response}),
        "error": {**ev, "code": None, "message": None, "param": None, "error": OPEN, **({"status": None} if ws else {})},
        "codex.rate_limits": OPEN,
    }
    if ws:
        return Known(c2s=request, c2s_name="request", s2c=Union("type", events))
    return Known(c2s=request, c2s_name="request", s2c=Union("type", events, missing=Union("object", {"response": response},
                                                                      missing={"error": OPEN})))

# --- what a request told the model (the report's thread; the WebSocket's response.create too) ------------

_CALL_ITEMS = frozenset(("function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call",
                         "computer_call", "mcp_call"))


def _responses_item(it: Any) -> rv.ViewMessage:
    """One input item: a message (role, content parts), a tool call, a tool call's output, reasoning."""
    if not isinstance(it, dict):
        return rv.ViewMessage("user", [rv.ViewPart(rv.TEXT, rv.as_json_text(it))])
    kind = it.get("type", "message")
    kind = kind if isinstance(kind, str) else "?"
    if kind == "message":
        return rv.ViewMessage(str(it.get("role")), [rv.ViewPart(rv.TEXT, rv.text_of_content([b]))
                                                    for b in as_list(it.get("content"))])
    call_id = str_or_none(it.get("call_id"))
    if kind in _CALL_ITEMS:
        args = it.get("arguments", it.get("input", it.get("action")))
        return rv.ViewMessage("assistant", [rv.ViewPart(rv.TOOL_CALL, rv.as_json_text(args),
                                                        name=str_or_none(it.get("name")) or str(kind), call_id=call_id)])
    if isinstance(kind, str) and kind.endswith("_output"):
        return rv.ViewMessage("tool", [rv.ViewPart(rv.TOOL_RESULT, rv.text_of_content(it.get("output")), call_id=call_id)])
    if kind == "reasoning":
        summary = rv.text_of_content(it.get("summary")) if it.get("summary") else "[encrypted reasoning]"
        return rv.ViewMessage("assistant", [rv.ViewPart(rv.THINKING, summary)])
    return rv.ViewMessage(str(it.get("role", "user")), [rv.ViewPart(rv.OTHER, rv.as_json_text(it))])


def as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else ([] if v is None else [v])


def request_view(body: Any) -> rv.RequestView | None:
    """A Responses request (HTTP body, or a WebSocket `response.create`): `instructions` and the leading
    developer / system messages are the system prompt; with `previous_response_id` the input holds only
    what is new since that response."""
    if not isinstance(body, dict) or body.get("type", "response.create") != "response.create" or "input" not in body:
        return None
    previous = str_or_none(body.get("previous_response_id"))
    system = [body["instructions"]] if isinstance(body.get("instructions"), str) and body["instructions"] else []
    inp = body.get("input")
    raw = inp if isinstance(inp, list) else [{"role": "user", "content": inp}]
    lead = 0
    while previous is None and lead < len(raw) and isinstance(raw[lead], dict) and \
            raw[lead].get("type", "message") == "message" and raw[lead].get("role") in ("developer", "system"):
        system.append("\n".join(p.text for p in _responses_item(raw[lead]).parts))
        lead += 1
    return rv.RequestView(str_or_none(body.get("model")), system, rv.tool_defs(body.get("tools"), chat_tool),
                          rv.LazyMessages(raw[lead:], _responses_item), continues=previous)


DIALECT = Dialect(
    name="openai-responses-sse",
    llm_calls=True,
    transport="http",
    decoder=OpenAIResponsesDecoder,
    known=responses_known(),
    summary="OpenAI Responses API (POST .../responses), request + SSE events",
    volatile=("response.id", "response.created_at", "item_id", "item.id", "item.call_id", "sequence_number",
              "prompt_cache_key", "**.call_id", "client_metadata", "user", "metadata.user_id"),
    rules=(*RULES, *RESPONSES_RULES,
           ("ws-upgrade-refused", WARNING, "a WebSocket upgrade of the Responses endpoint answered with another status "
            "than 101 (the client then falls back to HTTP + SSE)")),
    sniff=sniff,
    priority=90,
    request_view=request_view,
)
