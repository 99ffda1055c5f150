"""OpenAI Chat Completions over HTTP + SSE (`POST .../chat/completions`): Codebuff today, CodeBuddy, opencode.

Chunks carry `choices[].delta` (content, reasoning_content / reasoning, tool_calls by index with
the id and name first and argument pieces after) and `finish_reason`; `usage` may come in a last
chunk with empty `choices` (`stream_options.include_usage`). `data: [DONE]` is the terminal event.
Usage in OpenAI terms: `prompt_tokens` includes `prompt_tokens_details.cached_tokens`.
"""

from __future__ import annotations

from typing import Any

from wirecap.dialects import request_view as rv
from wirecap.dialects.anthropic_sse import RULES
from wirecap.dialects.base import Dialect, as_dict, num, str_or_none
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


def openai_usage(u: dict[str, Any]) -> dict[str, Any]:
    details = as_dict(u.get("prompt_tokens_details"))
    cached = num(details.get("cached_tokens"))
    out_details = as_dict(u.get("completion_tokens_details"))
    return {"input_tokens": max(num(u.get("prompt_tokens")) - cached, 0), "output_tokens": num(u.get("completion_tokens")),
            "cache_read_tokens": cached, "cache_creation_tokens": 0,
            "reasoning_tokens": num(out_details.get("reasoning_tokens"))}


# delta field -> item of its text pieces
_TEXT_KEYS = (("content", MESSAGE), ("reasoning_content", REASONING), ("reasoning", REASONING))


class OpenAIChatDecoder(HttpDecoder):
    dialect = "openai-chat-sse"
    terminal_name = "data: [DONE]"

    def __init__(self, unit: str, options: dict[str, Any] | None = None) -> None:
        super().__init__(unit, options)
        self.cid: str | None = None
        self.text: dict[tuple[int, str], list[str]] = {}
        self.tools: dict[tuple[int, int], dict[str, Any]] = {}
        self.stop_reason: str | None = None

    def message_id(self) -> str | None:
        return self.cid

    def on_event(self, rec: dict[str, Any], name: str | None, obj: dict[str, Any]) -> list[Event]:
        if "error" in obj and "choices" not in obj:
            self.terminal = True
            return self.end_turn(rec, self.error_event(rec, obj.get("error")), stop_reason="error", is_error=True)
        choices = obj.get("choices")
        if not isinstance(choices, list):
            return [self.unparsed(rec, "chunk without choices")]
        if isinstance(obj.get("id"), str):
            self.cid = obj["id"]
        if isinstance(obj.get("model"), str):
            self.model = obj["model"]
        out: list[Event] = []
        for ch in choices:
            if isinstance(ch, dict):
                self._choice(rec, ch, out)
            else:
                out.append(self.unparsed(rec, "choice is not an object"))
        u = obj.get("usage")
        if isinstance(u, dict):
            out.append(self.ev(USAGE, rec, data={"model": self.model, "message_id": self.cid, **openai_usage(u),
                                                 "scope": "message"}))
        return out

    def _choice(self, rec: dict[str, Any], ch: dict[str, Any], out: list[Event]) -> None:
        """One choice of a chunk: its text pieces, its tool-call pieces, its finish."""
        ci = ch.get("index", 0)
        if not isinstance(ci, int):
            ci = 0
        delta = ch.get("delta")
        if isinstance(delta, dict):
            for key, item in _TEXT_KEYS:
                piece = delta.get(key)
                if isinstance(piece, str) and piece:
                    self._text_piece(rec, ci, item, piece, out)
            tcs = delta.get("tool_calls")
            if isinstance(tcs, list):
                for tc in tcs:
                    if isinstance(tc, dict):
                        self._tool_piece(rec, ci, tc, out)
                    else:
                        out.append(self.unparsed(rec, "tool call delta is not an object"))
        if ch.get("finish_reason"):
            self.stop_reason = ch["finish_reason"]
            out.extend(self.complete_open_items(rec))

    def _text_piece(self, rec: dict[str, Any], ci: int, item: str, piece: str, out: list[Event]) -> None:
        acc = self.text.get((ci, item))
        iid = f"{self.cid}:{ci}:{item}"
        if acc is None:
            acc = self.text[(ci, item)] = []
            out.append(self.ev(ITEM_STARTED, rec, item, iid, "assistant", {}))
        acc.append(piece)
        out.append(self.ev(ITEM_DELTA, rec, item, iid, "assistant", {"text": piece}))

    def _tool_piece(self, rec: dict[str, Any], ci: int, tc: dict[str, Any], out: list[Event]) -> None:
        """A tool call's piece: the first names it (id, name), the others carry argument text."""
        ti = tc.get("index", 0)
        key = (ci, ti if isinstance(ti, int) else 0)
        fn = tc.get("function")
        if not isinstance(fn, dict):
            fn = {}
        state = self.tools.get(key)
        if state is None:
            call_id = tc.get("id") if isinstance(tc.get("id"), str) else f"{self.cid}:{key[0]}:{key[1]}"
            state = self.tools[key] = {"id": call_id, "name": fn.get("name"), "acc": []}
            out.append(self.ev(ITEM_STARTED, rec, TOOL_CALL, call_id, "assistant",
                               {"name": fn.get("name"), "call_id": call_id}))
        elif fn.get("name") and not state["name"]:
            state["name"] = fn.get("name")
        args = fn.get("arguments")
        if isinstance(args, str) and args:
            state["acc"].append(args)
            out.append(self.ev(ITEM_DELTA, rec, TOOL_CALL, state["id"], "assistant", {"arguments": args}))

    def complete_open_items(self, rec: dict[str, Any]) -> list[Event]:
        out: list[Event] = []
        for (ci, item), acc in self.text.items():
            out.append(self.ev(ITEM_COMPLETED, rec, item, f"{self.cid}:{ci}:{item}", "assistant", {"text": "".join(acc)}))
        for state in self.tools.values():
            out.append(self.ev(ITEM_COMPLETED, rec, TOOL_CALL, state["id"], "assistant",
                               {"name": state["name"], "call_id": state["id"], "input": parse_args("".join(state["acc"]))}))
        self.text.clear()
        self.tools.clear()
        return out

    def on_done(self, rec: dict[str, Any]) -> list[Event]:
        self.terminal = True
        out = self.complete_open_items(rec)
        return self.end_turn(rec, out, stop_reason=self.stop_reason, is_error=False)

    def on_body(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        choices = obj.get("choices")
        if not isinstance(choices, list):
            return [self.unparsed(rec, "chat completion body without choices")]
        self.cid = obj.get("id") if isinstance(obj.get("id"), str) else None
        self.model = obj.get("model") or self.model
        out: list[Event] = []
        stop = None
        for ch in choices:
            msg = ch.get("message") if isinstance(ch, dict) and isinstance(ch.get("message"), dict) else None
            if msg is None:
                out.append(self.unparsed(rec, "choice without a message"))
                continue
            stop = ch.get("finish_reason")
            if isinstance(msg.get("content"), str):
                out.append(self.ev(ITEM_COMPLETED, rec, MESSAGE, self.cid, "assistant", {"text": msg["content"]}))
            for tc in msg.get("tool_calls") or []:
                fn = as_dict(tc.get("function")) if isinstance(tc, dict) else {}
                cid = tc.get("id") if isinstance(tc, dict) else None
                out.append(self.ev(ITEM_COMPLETED, rec, TOOL_CALL, cid, "assistant",
                                   {"name": fn.get("name"), "call_id": cid, "input": parse_args(fn.get("arguments") or "")}))
        if isinstance(obj.get("usage"), dict):
            out.append(self.ev(USAGE, rec, data={"model": self.model, "message_id": self.cid,
                                                 **openai_usage(obj["usage"]), "scope": "message"}))
        return self.end_turn(rec, out, stop_reason=stop, is_error=False)


def sniff(open_record: dict[str, Any] | None, msgs: list[dict[str, Any]]) -> str | None:
    """OpenAI Chat Completions: a path ending in `/chat/completions`, or `chat.completion.chunk` SSE
    data or `[DONE]`, or a `chat.completion` JSON body."""
    path = http_path(open_record)
    if path and path.endswith("/chat/completions"):
        return f"HTTP {path} (OpenAI Chat Completions)"
    for _name, rec in sse_names(msgs):
        obj = rec.get("json")
        if isinstance(obj, dict) and obj.get("object") == "chat.completion.chunk":
            return "SSE data with object chat.completion.chunk"
        if rec.get("text") == "[DONE]":
            return "SSE data [DONE]"
    for obj in response_bodies(msgs):
        if obj.get("object") == "chat.completion":
            return "JSON chat.completion body"
    return None
# --- drift (rule `drift`): chunks and bodies this dialect knows (fake answers to CodeBuddy, opencode and
# the Codebuff SDK, plus the fields of OpenAI-compatible servers the decoder reads or ignores); of a
# request only the top-level fields are checked (messages and tools are open).
def _known() -> Any:
    from wirecap.dialects.drift import OPEN, Known, Union

    request = dict.fromkeys((
        "model", "stream", "temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "n",
        "presence_penalty", "frequency_penalty", "seed", "user", "reasoning_effort", "parallel_tool_calls",
        "logprobs", "top_logprobs", "store", "prompt_cache_key", "service_tier", "modalities", "verbosity"))
    request.update(dict.fromkeys(("messages", "tools", "tool_choice", "stream_options", "metadata", "reasoning",
                                  "response_format", "provider", "codebuff_metadata", "usage", "transforms"), OPEN))
    usage = {"prompt_tokens": None, "completion_tokens": None, "total_tokens": None, "prompt_tokens_details": None,
             "completion_tokens_details": None, "cost": None, "is_byok": None, "cost_details": None}
    head = {"id": None, "object": None, "created": None, "model": None, "system_fingerprint": None,
            "service_tier": None, "provider": None, "usage": usage}
    call = {"index": None, "id": None, "type": None, "function": {"name": None, "arguments": None}}
    delta = {"role": None, "content": None, "reasoning_content": None, "reasoning": None, "refusal": None,
             "tool_calls": [call], "reasoning_details": OPEN}
    chunk = {**head, "choices": [{"index": None, "delta": delta, "finish_reason": None, "native_finish_reason": None,
                                  "logprobs": OPEN}]}
    message = {**delta, "tool_calls": OPEN, "annotations": OPEN}
    body = {**head, "choices": [{"index": None, "message": message, "finish_reason": None,
                                 "native_finish_reason": None, "logprobs": OPEN}]}
    return Known(c2s=request, c2s_name="request", s2c=Union("object", {"chat.completion.chunk": chunk, "chat.completion": body},
                                         missing={"error": OPEN}))

# --- what a request told the model (the report's thread) -----------------------------------------------


def _chat_content(content: Any) -> list[rv.ViewPart]:
    if isinstance(content, list):
        out = []
        for b in content:
            if isinstance(b, dict) and b.get("type") in ("image_url", "input_image", "file"):
                out.append(rv.ViewPart(rv.IMAGE, f"[{b.get('type')}]"))
            else:
                out.append(rv.ViewPart(rv.TEXT, rv.text_of_content([b])))
        return out
    return [rv.ViewPart(rv.TEXT, rv.as_json_text(content))] if content is not None else []


def _chat_message(m: Any) -> rv.ViewMessage:
    if not isinstance(m, dict):
        return rv.ViewMessage("?", [rv.ViewPart(rv.OTHER, rv.as_json_text(m))])
    role = str(m.get("role"))
    if role == "tool":
        return rv.ViewMessage(role, [rv.ViewPart(rv.TOOL_RESULT, rv.text_of_content(m.get("content")),
                                                 call_id=str_or_none(m.get("tool_call_id")))])
    parts = []
    reasoning = m.get("reasoning_content") or m.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        parts.append(rv.ViewPart(rv.THINKING, reasoning))
    parts += _chat_content(m.get("content"))
    for c in rv.arr(m, "tool_calls"):
        fn = rv.obj(c, "function")
        parts.append(rv.ViewPart(rv.TOOL_CALL, rv.as_json_text(fn.get("arguments")), name=str_or_none(fn.get("name")),
                                 call_id=str_or_none(c.get("id")) if isinstance(c, dict) else None))
    return rv.ViewMessage(role, parts)


def chat_tool(t: dict[str, Any]) -> rv.ToolDef | None:
    """A tool definition: `{type: function, function: {name, description, parameters}}` (chat), or the
    flat form Responses uses (`{type: function, name, description, parameters}`)."""
    fn = rv.obj(t, "function") or t
    name = fn.get("name")
    if not isinstance(name, str):
        return None
    params = fn.get("parameters")
    return rv.ToolDef(name, rv.as_json_text(fn.get("description")), rv.as_json_text(params) if params else "")


def request_view(body: Any) -> rv.RequestView | None:
    """A chat/completions request: system and developer messages are the system prompt, the others
    the conversation (assistant tool calls, `tool` messages their results)."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return None
    raw = body["messages"]
    lead = 0
    while lead < len(raw) and isinstance(raw[lead], dict) and raw[lead].get("role") in ("system", "developer"):
        lead += 1
    system = [rv.text_of_content(m.get("content")) for m in raw[:lead]]
    return rv.RequestView(str_or_none(body.get("model")), system, rv.tool_defs(body.get("tools"), chat_tool),
                          rv.LazyMessages(raw[lead:], _chat_message))


DIALECT = Dialect(
    name="openai-chat-sse",
    llm_calls=True,
    transport="http",
    decoder=OpenAIChatDecoder,
    known=_known(),
    summary="OpenAI Chat Completions (POST .../chat/completions), request + SSE chunks",
    volatile=("id", "created", "system_fingerprint", "choices[*].delta.tool_calls[*].id", "**.tool_call_id",
              "messages[*].tool_calls[*].id", "user", "metadata",
              # CodeBuddy's per-run message ids; Codebuff SDK 0.10's per-run client and run ids
              "messages[*].messageId", "messages[*].conversationRequestId", "codebuff_metadata.client_id",
              "codebuff_metadata.run_id"),
    rules=RULES,
    sniff=sniff,
    priority=90,
    request_view=request_view,
)
