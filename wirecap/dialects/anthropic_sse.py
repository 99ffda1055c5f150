"""Anthropic Messages API over HTTP + SSE (`POST /v1/messages`, what Claude Code sends).

Events: message_start (id, model, usage snapshot), content_block_start / _delta (text_delta,
input_json_delta, thinking_delta, signature_delta) / _stop, message_delta (stop_reason, final
output_tokens), message_stop (the terminal event), ping, error. A non-streamed JSON body is a whole
message. Usage is reported once at message_start and updated by message_delta (same message id).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wirecap.dialects import anthropic_stream as st
from wirecap.dialects import request_view as rv
from wirecap.dialects.anthropic_stream import BLOCK_ITEM, AnthropicStream, usage_fields
from wirecap.dialects.base import ERROR_SEV, WARNING, Dialect, str_or_none
from wirecap.dialects.http_base import HttpDecoder, http_path, parse_args, response_bodies, sse_names
from wirecap.events import (
    ITEM_COMPLETED,
    ITEM_DELTA,
    ITEM_STARTED,
    TOOL_CALL,
    USAGE,
    Event,
)


class AnthropicSseDecoder(HttpDecoder):
    """The stream's grammar is `anthropic_stream.AnthropicStream`'s (accumulating: a block's item is
    completed at its `content_block_stop`, or at `message_stop` / the end for a block never stopped);
    this decoder turns its outputs into events, one small handler per output class."""

    dialect = "anthropic-sse"
    terminal_name = "message_stop event"

    def __init__(self, unit: str, options: dict[str, Any] | None = None) -> None:
        super().__init__(unit, options)
        self.mid: str | None = None
        self.stream = AnthropicStream(accumulate=True)
        self._on: dict[type, Callable[[dict[str, Any], Any], list[Event]]] = {
            st.BlockDelta: self._delta,
            st.MessageStart: self._message_start,
            st.BlockStart: self._block_start,
            st.BlockStop: self._block_stop,
            st.MessageDelta: self._message_delta,
            st.MessageStop: self._message_stop,
            st.StreamError: self._error,
            st.Quiet: _nothing,
            st.Problem: self._problem,
        }

    def message_id(self) -> str | None:
        return self.mid

    def on_event(self, rec: dict[str, Any], name: str | None, obj: dict[str, Any]) -> list[Event]:
        out = self.stream.feed(obj, name)
        return self._on[out.__class__](rec, out)

    def _delta(self, rec: dict[str, Any], out: st.BlockDelta) -> list[Event]:
        block = out.block
        return [self.ev(ITEM_DELTA, rec, block.item, block.id, "assistant", {out.field: out.piece})]

    def _message_start(self, rec: dict[str, Any], out: st.MessageStart) -> list[Event]:
        self.mid = out.message_id
        self.model = out.model or self.model
        if out.usage is None:
            return []
        return [self.ev(USAGE, rec, data={"model": self.model, "message_id": self.mid, **usage_fields(out.usage),
                                          "scope": "message"})]

    def _block_start(self, rec: dict[str, Any], out: st.BlockStart) -> list[Event]:
        b = out.block
        data = {"name": b.name, "call_id": b.call_id} if b.item == TOOL_CALL else {}
        return [self.ev(ITEM_STARTED, rec, b.item, b.id, "assistant", data)]

    def _block_stop(self, rec: dict[str, Any], out: st.BlockStop) -> list[Event]:
        return [self._complete(rec, out.block)]

    def _message_delta(self, rec: dict[str, Any], out: st.MessageDelta) -> list[Event]:
        if out.counts is None:
            return []
        return [self.ev(USAGE, rec, data={"model": self.model, "message_id": self.mid, "scope": "message",
                                          **out.counts})]

    def _message_stop(self, rec: dict[str, Any], out: st.MessageStop) -> list[Event]:
        self.terminal = True
        events = [self._complete(rec, b) for b in out.unfinished]
        return self.end_turn(rec, events, stop_reason=self.stream.stop_reason, is_error=False)

    def _error(self, rec: dict[str, Any], out: st.StreamError) -> list[Event]:
        self.terminal = True
        return self.end_turn(rec, self.error_event(rec, out.error), stop_reason="error", is_error=True)

    def _problem(self, rec: dict[str, Any], out: st.Problem) -> list[Event]:
        return [self.unparsed(rec, out.reason)]

    def _complete(self, rec: dict[str, Any], block: st.Block) -> Event:
        if block.item == TOOL_CALL:
            data = {"name": block.name, "call_id": block.call_id, "input": parse_args(block.text())}
        elif block.type == "redacted_thinking":
            data = {"text": None, "redacted": True}
        else:
            data = {"text": block.text()}
        return self.ev(ITEM_COMPLETED, rec, block.item, block.id, "assistant", data)

    def complete_open_items(self, rec: dict[str, Any]) -> list[Event]:
        return [self._complete(rec, b) for b in self.stream.take_unfinished()]

    def on_body(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        if obj.get("type") == "error":
            return self.error_event(rec, obj.get("error"))
        if obj.get("type") != "message":
            return [self.unparsed(rec, f"unknown response body type {obj.get('type')!r}")]
        self.mid = obj.get("id") if isinstance(obj.get("id"), str) else None
        self.model = obj.get("model") or self.model
        out: list[Event] = []
        content = obj.get("content")
        if not isinstance(content, list):
            content = []
        for i, b in enumerate(content):
            if not isinstance(b, dict) or not isinstance(b.get("type"), str) or b["type"] not in BLOCK_ITEM:
                out.append(self.unparsed(rec, f"unknown content block {b!r:.60}"))
                continue
            item = BLOCK_ITEM[b["type"]]
            if item == TOOL_CALL:
                out.append(self.ev(ITEM_COMPLETED, rec, item, b.get("id"), "assistant",
                                   {"name": b.get("name"), "call_id": b.get("id"), "input": b.get("input")}))
            else:
                out.append(self.ev(ITEM_COMPLETED, rec, item, f"{self.mid}:{i}", "assistant",
                                   {"text": b.get("text", b.get("thinking"))}))
        if isinstance(obj.get("usage"), dict):
            out.append(self.ev(USAGE, rec, data={"model": self.model, "message_id": self.mid,
                                                 **usage_fields(obj["usage"]), "scope": "message"}))
        return self.end_turn(rec, out, stop_reason=obj.get("stop_reason"), is_error=False)


RULES = (
    ("http-status", ERROR_SEV, "the response status is 400 or more (its error body becomes an error event)"),
    ("sse-no-terminal", ERROR_SEV, "the event stream ended without its terminal event"),
    ("sse-error-event", ERROR_SEV, "an error event in the stream"),
    ("sse-gap", WARNING, "a pause between two events longer than the `gap` option"),
    ("invalid-json", ERROR_SEV, "a request body, response body or event data that is not JSON"),
)

def sniff(open_record: dict[str, Any] | None, msgs: list[dict[str, Any]]) -> str | None:
    """Anthropic Messages: POST to `/v1/messages` (or `.../v1/.../messages`), or `message_*` /
    `content_block_*` SSE events, or a JSON message body with role assistant."""
    path = http_path(open_record)
    if path and (path.endswith("/v1/messages") or (path.endswith("/messages") and "/v1/" in path)):
        method = open_record.get("method") if isinstance(open_record, dict) else None
        return f"HTTP {method or ''} {path} (Anthropic Messages)".replace("  ", " ")
    for name, _rec in sse_names(msgs):
        if name and name.startswith(("message_", "content_block_")):
            return f"SSE event {name!r}"
    for obj in response_bodies(msgs):
        if obj.get("type") == "message" and obj.get("role") == "assistant":
            return "JSON Anthropic message body"
    return None
# --- drift (rule `drift`): the stream events and bodies this dialect knows (shapes in anthropic_known.py);
# of a request only the top-level fields are checked (messages, system prompt and tools are open).
def _known() -> Any:
    from wirecap.dialects.anthropic_known import EVENTS, MESSAGE
    from wirecap.dialects.drift import OPEN, Known, Union

    request = {"model": None, "messages": OPEN, "system": OPEN, "tools": OPEN, "tool_choice": OPEN, "max_tokens": None,
               "stream": None, "metadata": OPEN, "thinking": OPEN, "temperature": None, "top_p": None, "top_k": None,
               "stop_sequences": None, "context_management": OPEN, "output_config": OPEN, "container": None,
               "mcp_servers": OPEN, "service_tier": None}
    return Known(c2s=request, c2s_name="request", s2c=Union("type", {**EVENTS, "message": MESSAGE}, missing=OPEN))

# --- what a request told the model (the report's thread) -----------------------------------------------


def _anthropic_block(b: Any) -> rv.ViewPart:
    if isinstance(b, str):
        return rv.ViewPart(rv.TEXT, b)
    if not isinstance(b, dict):
        return rv.ViewPart(rv.OTHER, rv.as_json_text(b))
    kind = b.get("type")
    if kind == "text":
        return rv.ViewPart(rv.TEXT, rv.as_json_text(b.get("text")))
    if kind in ("thinking", "redacted_thinking"):
        return rv.ViewPart(rv.THINKING, rv.as_json_text(b.get("thinking", "[redacted thinking]")))
    if kind in ("tool_use", "server_tool_use"):
        return rv.ViewPart(rv.TOOL_CALL, rv.as_json_text(b.get("input")), name=str_or_none(b.get("name")),
                           call_id=str_or_none(b.get("id")))
    if kind == "tool_result" or (isinstance(kind, str) and kind.endswith("_tool_result")):
        return rv.ViewPart(rv.TOOL_RESULT, rv.text_of_content(b.get("content")), call_id=str_or_none(
            b.get("tool_use_id")), is_error=b.get("is_error") is True)
    if kind in ("image", "document"):
        return rv.media_part(b)
    return rv.ViewPart(rv.OTHER, rv.as_json_text(b))


def _anthropic_tool(t: dict[str, Any]) -> rv.ToolDef | None:
    name = t.get("name")
    if not isinstance(name, str):
        return None
    schema = t.get("input_schema")
    return rv.ToolDef(name, rv.as_json_text(t.get("description")), rv.as_json_text(schema) if schema else "")


def request_view(body: Any) -> rv.RequestView | None:
    """A Messages request (`system`: a string or text blocks; `tools`; `messages`: role and content, a
    string or blocks) as the model sees it."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return None
    system = body.get("system")
    texts = [system] if isinstance(system, str) else [
        rv.as_json_text(b.get("text")) if isinstance(b, dict) else rv.as_json_text(b) for b in system or ()
    ] if isinstance(system, list) else []
    return rv.RequestView(str_or_none(body.get("model")), texts, rv.tool_defs(body.get("tools"), _anthropic_tool),
                          rv.LazyMessages(body["messages"], _anthropic_message))


def _anthropic_message(m: Any) -> rv.ViewMessage:
    if not isinstance(m, dict):
        return rv.ViewMessage("?", [rv.ViewPart(rv.OTHER, rv.as_json_text(m))])
    content = m.get("content")
    blocks = content if isinstance(content, list) else [content]
    return rv.ViewMessage(str(m.get("role")), [_anthropic_block(b) for b in blocks])


DIALECT = Dialect(
    name="anthropic-sse",
    llm_calls=True,
    transport="http",
    decoder=AnthropicSseDecoder,
    known=_known(),
    summary="Anthropic Messages API (POST /v1/messages), request + SSE events",
    volatile=("message.id", "id", "content_block.id", "metadata.user_id", "**.tool_use_id", "content[*].id",
              "messages[*].content[*].id", "system[*].cache_control"),
    rules=RULES,
    sniff=sniff,
    priority=90,
    request_view=request_view,
)


def _nothing(rec: dict[str, Any], out: Any) -> list[Event]:
    return []
