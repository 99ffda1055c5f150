"""Anthropic Messages API over HTTP + SSE (`POST /v1/messages`, what Claude Code sends).

Events: message_start (id, model, usage snapshot), content_block_start / _delta (text_delta,
input_json_delta, thinking_delta, signature_delta) / _stop, message_delta (stop_reason, final
output_tokens), message_stop (the terminal event), ping, error. A non-streamed JSON body is a whole
message. Usage is reported once at message_start and updated by message_delta (same message id).
"""

from __future__ import annotations

from typing import Any

from wirecap.dialects.base import ERROR_SEV, WARNING, Dialect, hkey
from wirecap.dialects.claude_code import usage_fields
from wirecap.dialects.http_base import HttpDecoder, http_path, parse_args, response_bodies, sse_names
from wirecap.events import (
    ITEM_COMPLETED,
    ITEM_DELTA,
    ITEM_STARTED,
    MESSAGE,
    REASONING,
    TOOL_CALL,
    USAGE,
    Event,
)

_BLOCK_ITEM = {"text": MESSAGE, "thinking": REASONING, "redacted_thinking": REASONING, "tool_use": TOOL_CALL,
               "server_tool_use": TOOL_CALL, "mcp_tool_use": TOOL_CALL}
_DELTA = {"text_delta": ("text", "text"), "input_json_delta": ("partial_json", "arguments"),
          "thinking_delta": ("thinking", "text")}


class AnthropicSseDecoder(HttpDecoder):
    dialect = "anthropic-sse"
    terminal_name = "message_stop event"

    def __init__(self, unit: str, options: dict[str, Any] | None = None) -> None:
        super().__init__(unit, options)
        self.mid: str | None = None
        self.stop_reason: str | None = None
        self.blocks: dict[Any, dict[str, Any]] = {}

    def message_id(self) -> str | None:
        return self.mid

    def on_event(self, rec: dict[str, Any], name: str | None, obj: dict[str, Any]) -> list[Event]:
        et = obj.get("type") or name
        if et == "content_block_delta":
            block = self.blocks.get(hkey(obj.get("index")))
            delta = obj.get("delta")
            if block is None or not isinstance(delta, dict):
                return [self.unparsed(rec, "delta for a content block that was not started")]
            spec = _DELTA.get(delta.get("type"))
            if spec is None:
                if delta.get("type") in ("signature_delta", "citations_delta"):
                    return []
                return [self.unparsed(rec, f"unknown delta type {delta.get('type')!r}")]
            piece = delta.get(spec[0])
            if isinstance(piece, str):
                block["acc"].append(piece)
            return [self.ev(ITEM_DELTA, rec, block["item"], block["id"], "assistant", {spec[1]: piece})]
        if et == "message_start":
            msg = obj.get("message") if isinstance(obj.get("message"), dict) else {}
            self.mid = msg.get("id") if isinstance(msg.get("id"), str) else None
            self.model = msg.get("model") or self.model
            u = msg.get("usage")
            if isinstance(u, dict):
                return [self.ev(USAGE, rec, data={"model": self.model, "message_id": self.mid, **usage_fields(u),
                                                  "scope": "message"})]
            return []
        if et == "content_block_start":
            cb = obj.get("content_block")
            if not isinstance(cb, dict) or cb.get("type") not in _BLOCK_ITEM:
                return [self.unparsed(rec, f"unknown content block {cb!r:.60}")]
            idx = hkey(obj.get("index"))
            item = _BLOCK_ITEM[cb["type"]]
            iid = cb.get("id") if item == TOOL_CALL and isinstance(cb.get("id"), str) else f"{self.mid}:{idx}"
            data = {"name": cb.get("name"), "call_id": cb.get("id")} if item == TOOL_CALL else {}
            self.blocks[idx] = {"id": iid, "item": item, "acc": [], "data": data, "type": cb["type"]}
            return [self.ev(ITEM_STARTED, rec, item, iid, "assistant", dict(data))]
        if et == "content_block_stop":
            block = self.blocks.pop(hkey(obj.get("index")), None)
            if block is None:
                return [self.unparsed(rec, "stop for a content block that was not started")]
            return [self._complete(rec, block)]
        if et == "message_delta":
            delta = obj.get("delta") if isinstance(obj.get("delta"), dict) else {}
            if delta.get("stop_reason"):
                self.stop_reason = delta["stop_reason"]
            u = obj.get("usage")
            if isinstance(u, dict):
                data = {"model": self.model, "message_id": self.mid, "scope": "message"}
                for k, v in usage_fields(u).items():
                    if v or k == "output_tokens":
                        data[k] = v
                return [self.ev(USAGE, rec, data=data)]
            return []
        if et == "message_stop":
            self.terminal = True
            out = self.complete_open_items(rec)
            return self.end_turn(rec, out, stop_reason=self.stop_reason, is_error=False)
        if et == "ping":
            return []
        if et == "error":
            self.terminal = True
            out = self.error_event(rec, obj.get("error"))
            return self.end_turn(rec, out, stop_reason="error", is_error=True)
        return [self.unparsed(rec, f"unknown event type {et!r}")]

    def _complete(self, rec: dict[str, Any], block: dict[str, Any]) -> Event:
        text = "".join(block["acc"])
        if block["item"] == TOOL_CALL:
            data = {**block["data"], "input": parse_args(text)}
        elif block["type"] == "redacted_thinking":
            data = {"text": None, "redacted": True}
        else:
            data = {"text": text}
        return self.ev(ITEM_COMPLETED, rec, block["item"], block["id"], "assistant", data)

    def complete_open_items(self, rec: dict[str, Any]) -> list[Event]:
        out = [self._complete(rec, b) for b in self.blocks.values()]
        self.blocks.clear()
        return out

    def on_body(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        if obj.get("type") == "error":
            return self.error_event(rec, obj.get("error"))
        if obj.get("type") != "message":
            return [self.unparsed(rec, f"unknown response body type {obj.get('type')!r}")]
        self.mid = obj.get("id") if isinstance(obj.get("id"), str) else None
        self.model = obj.get("model") or self.model
        out: list[Event] = []
        content = obj.get("content") if isinstance(obj.get("content"), list) else []
        for i, b in enumerate(content):
            if not isinstance(b, dict) or b.get("type") not in _BLOCK_ITEM:
                out.append(self.unparsed(rec, f"unknown content block {b!r:.60}"))
                continue
            item = _BLOCK_ITEM[b["type"]]
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


DIALECT = Dialect(
    name="anthropic-sse",
    transport="http",
    decoder=AnthropicSseDecoder,
    known=_known(),
    summary="Anthropic Messages API (POST /v1/messages), request + SSE events",
    volatile=("message.id", "id", "content_block.id", "metadata.user_id", "**.tool_use_id", "content[*].id",
              "messages[*].content[*].id", "system[*].cache_control"),
    rules=RULES,
    sniff=sniff,
    priority=90,
)
