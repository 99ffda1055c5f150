"""Claude Code stream-json (`claude -p --output-format stream-json --verbose`), stdout and stdin.

Traps handled here (all seen in real output, see docs/dialects/claude-code.md):
- each content block is its own `assistant` line with the same `message.id` and repeated `usage`;
  that usage is the `message_start` snapshot (output_tokens often 1). Usage is emitted once per
  message id, marked `snapshot`, and the `result` line's totals (`modelUsage` per model with
  `costUSD`, else `usage`) are emitted with scope "session" so stats prefers them.
- `result` may be `subtype: "success"` with `is_error: true`: success is never inferred from subtype.
- a failed API call is no LLM answer: Claude Code prints each retry as `system/api_retry` (an error
  event with `retry: true`) and, when it gives up, a made-up `assistant` message (`model:
  "<synthetic>"`, an `error` field, zero usage) whose text is the API error: its items are marked
  `synthetic` (no time to first token) and it has no usage (no LLM call); its error event says
  `failed_call: true`.
- a subagent (the Agent / Task tool) prints its own `user` and `assistant` lines on the same stdout, each
  with `parent_tool_use_id`: the id of the tool call that started it. Its items carry that id
  (`parent_tool_use_id` in their data) and so do the `system/task_*` lines about it (`task_updated` names
  only its `task_id`, remembered from `task_started`). CodeBuddy puts the answered call's own id there
  on a tool result line: a parent equal to a tool result's call id is no subagent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wirecap.dialects.anthropic_stream import (
    DELTA_FIELD,
    AnthropicStream,
    Block,
    BlockDelta,
    MessageStart,
    Output,
    Problem,
    usage_fields,
)
from wirecap.dialects.base import (
    ERROR_SEV,
    INFO,
    WARNING,
    Decoder,
    Dialect,
    by_argv,
    out_msgs,
    str_or_none,
)
from wirecap.dialects.stream import StreamDecoder
from wirecap.events import (
    ERROR,
    ITEM_COMPLETED,
    ITEM_DELTA,
    ITEM_STARTED,
    MESSAGE,
    REASONING,
    SESSION_STARTED,
    STATUS,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_ENDED,
    TURN_STARTED,
    USAGE,
    Event,
)

# stream events that say nothing and change no state: answered without asking the stream machine
_QUIET_STREAM = "ping"
_TOOL_BLOCKS = frozenset(("tool_use", "server_tool_use", "mcp_tool_use"))

def user_content(dec: Decoder, rec: dict[str, Any], content: Any,
                 tool_uses: dict[str, Any]) -> tuple[list[str], list[Event]] | None:
    """A user message's `content` in the Anthropic shape (a string, or a list of blocks), as Claude Code
    writes it on stdout and in its session files: the text pieces, and the events of the other blocks in
    order (a `tool_result` joined to its call by id and removed from `tool_uses`; an image or document
    attachment; an `unparsed` event for an unknown block). None when `content` is neither a string nor a
    list. One home for both decoders (`claude_code`, `claude_session`)."""
    if isinstance(content, str):
        return [content], []
    if not isinstance(content, list):
        return None
    texts: list[str] = []
    out: list[Event] = []
    for block in content:
        if block.__class__ is not dict:
            out.append(dec.unparsed(rec, "content block is not an object"))
            continue
        bt = block.get("type")
        if bt == "tool_result":
            cid = block.get("tool_use_id")
            if not isinstance(cid, str):
                cid = None
            else:
                tool_uses.pop(cid, None)
            out.append(dec.ev(ITEM_COMPLETED, rec, TOOL_RESULT, cid, "user",
                              {"call_id": cid, "output": result_text(block.get("content")),
                               "is_error": bool(block.get("is_error"))}))
        elif bt == "text":
            texts.append(str(block.get("text", "")))
        elif bt in ("image", "document"):
            out.append(dec.ev(ITEM_COMPLETED, rec, MESSAGE, None, "user", {"text": None, "attachment": bt}))
        else:
            out.append(dec.unparsed(rec, f"unknown user content block type {bt!r}"))
    return texts, out


def result_text(content: Any) -> Any:
    """A tool_result's content as text when it is text blocks; other shapes are kept as they are."""
    if isinstance(content, list):
        parts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        texts = [p for p in parts if isinstance(p, str)]
        if texts and len(texts) == len(content):
            return "\n".join(texts)
    return content


def assistant_block(dec: Decoder, rec: dict[str, Any], block: Any, mid: str | None, role: str,
                    tool_uses: dict[str, tuple[str, int | None, str | None]]) -> Event:
    """A completed content block of an assistant message (Anthropic shape) as its item.completed event,
    as Claude Code writes it on stdout and in its session files: text, thinking (redacted or not), a
    tool use (remembered in `tool_uses` by id until its result comes), a server tool's result (which
    answers its call); an `unparsed` event for anything else. Items without an id of their own take
    the message id `mid`. One home for both decoders (`claude_code`, `claude_session`)."""
    if block.__class__ is not dict:
        return dec.unparsed(rec, "content block is not an object")
    bt = block.get("type")
    if bt == "text":
        return dec.ev(ITEM_COMPLETED, rec, MESSAGE, mid, role, {"text": block.get("text")})
    if bt == "thinking":
        return dec.ev(ITEM_COMPLETED, rec, REASONING, mid, role, {"text": block.get("thinking")})
    if bt == "redacted_thinking":
        return dec.ev(ITEM_COMPLETED, rec, REASONING, mid, role, {"text": None, "redacted": True})
    if bt.__class__ is str and bt in _TOOL_BLOCKS:  # (JSON may put a list there)
        cid = block.get("id")
        if cid.__class__ is not str:
            cid = None
        if cid is not None:
            tool_uses[cid] = (str(block.get("name")), rec.get("seq"), rec.get("ch"))
        return dec.ev(ITEM_COMPLETED, rec, TOOL_CALL, mid if cid is None else cid, role,
                      {"name": block.get("name"), "input": block.get("input"), "call_id": cid})
    if isinstance(bt, str) and bt.endswith("_tool_result"):  # server tool results (web search, ...)
        cid = str_or_none(block.get("tool_use_id"))
        if cid is not None:
            tool_uses.pop(cid, None)
        return dec.ev(ITEM_COMPLETED, rec, TOOL_RESULT, cid, role,
                      {"call_id": cid, "output": block.get("content"), "is_error": False})
    return dec.unparsed(rec, f"unknown content block type {bt!r}")


def _price(v: Any) -> int | float | None:
    """A cost from untrusted JSON: a number, else None."""
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


class ClaudeCodeDecoder(StreamDecoder):
    """Claude Code stream-json. The partial messages (`stream_event` lines) go through the one
    Anthropic stream machine (`anthropic_stream.AnthropicStream`, not accumulating: the assistant lines
    that follow give each block whole); this decoder maps its outputs to events, one handler per
    output class, and adds what only stdout shows (an abandoned stream, `cc-stream-abandoned`)."""

    dialect = "claude-code"
    usage_is_snapshot = True  # per-message usage on `assistant` lines is the message_start snapshot

    def __init__(self, unit: str, options: dict[str, Any] | None = None) -> None:
        super().__init__(unit, options)
        self.session_id: str | None = None
        self.model: str | None = None
        self.saw_init = False
        self.saw_content = False
        self.in_turn = False
        self.results = 0
        self.error_result: dict[str, Any] | None = None
        self.usage_seen: set[str] = set()
        self.tool_uses: dict[str, tuple[str, int | None, str | None]] = {}
        self.control_pending: dict[str, dict[str, Any]] = {}
        self.task_parent: dict[str, str] = {}  # system/task_* task_id -> the tool call that started it
        self.stream = AnthropicStream()
        self.blocks = self.stream.blocks  # (the machine's own dict: read by the hot path of feed_msg)
        self.stream_mid: str | None = None  # the id of the streamed message, as this decoder last saw it
        self.first_content: dict[str, Any] | None = None
        self.out_lines = 0  # stdout objects seen (a `result` as the first is `--output-format json`)
        self.single_result = False  # the `--output-format json` form: one result object, no init by design
        self.stream_open: dict[str, Any] | None = None  # the message_start of a streamed message not stopped yet
        self._dispatch: dict[Any, Callable[[dict[str, Any], dict[str, Any]], list[Event]]] = {
            "system": self._system,
            "assistant": self._assistant,
            "user": self._user,
            "result": self._result,
            "stream_event": self._stream_event,
            "control_request": self._control_request,
            "control_response": self._control_response,
            "control_cancel_request": self._control_cancel,
            "keep_alive": self._quiet,
        }
        # stream event type -> handler: each asks the stream machine's step for that type (an unknown
        # type goes to the machine's `feed`, which says so)
        self._stream_dispatch: dict[str, Callable[[dict[str, Any], dict[str, Any]], list[Event]]] = {
            "content_block_delta": self._block_delta,
            "content_block_start": self._block_start,
            "content_block_stop": self._block_stop,
            "message_start": self._message_start,
            "message_delta": self._message_delta,
            "message_stop": self._message_stop,
            "error": self._stream_error,
            _QUIET_STREAM: self._quiet,
        }

    def msg_type(self, rec: dict[str, Any]) -> str:
        obj = rec.get("json")
        if obj.__class__ is dict:
            t = obj.get("type")
            if t in ("system", "result") and isinstance(obj.get("subtype"), str):
                return f"{t}/{obj['subtype']}"
            if isinstance(t, str):
                return t
        return super().msg_type(rec)

    def feed_msg(self, rec: dict[str, Any]) -> list[Event]:
        # Hot path: a text / tool-input / thinking delta of a started block, or a ping (most lines of a
        # --include-partial-messages run): the delta read straight from the stream machine's state, as
        # its contract allows (anthropic_stream); other lines of a stdout/stdin channel go straight to
        # their handler. Plain subscripts: anything unexpected (a missing key, a value of the wrong
        # type, a channel seen for the first time) takes the full path of on_object. Handlers run
        # outside the first try (an error in one must not run it twice) and inside the second (a
        # decoder bug becomes an `unparsed` event, as in `feed`).
        self._last = rec
        handler = None
        try:
            obj = rec["json"]
            t = obj["type"]
            ch = rec["ch"]
            if self.is_out[ch]:
                self.out_lines += 1
                if t == "stream_event":
                    ev = obj["event"]
                    et = ev["type"]
                    if et == "content_block_delta":
                        delta = ev["delta"]
                        spec = DELTA_FIELD[delta["type"]]
                        block = self.blocks[ev["index"]]
                        return [Event(ITEM_DELTA, ch, (rec["seq"],), rec["t"], self.dialect, block.item,
                                      block.id, "assistant", {spec[1]: delta[spec[0]]})]
                    if et == _QUIET_STREAM:
                        return []
                    if et == "content_block_stop" and self.blocks.pop(ev["index"], None) is not None:
                        return []  # (the machine's block_stop of a started block; see anthropic_stream)
                    handler = self._stream_dispatch[et]
                    obj = ev
                else:
                    handler = self._dispatch[t]
        except (KeyError, TypeError, IndexError):
            handler = None
        try:
            if handler is not None:
                return handler(rec, obj)  # (for a stream_event: the event object)
            return StreamDecoder.on_msg(self, rec)
        except Exception as e:  # noqa: BLE001 - as in Decoder.feed
            return self._failed(rec, e)

    on_msg = feed_msg  # (feed's own wrapper then never sees an exception)

    def on_object(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        self.out_lines += 1
        t = obj.get("type")
        handler = self._dispatch.get(t) if t.__class__ is str else None  # (JSON may put a list there)
        if handler is None:
            return self.other(rec, obj)
        return handler(rec, obj)

    def on_array(self, rec: dict[str, Any], items: list[Any]) -> list[Event]:
        """`--output-format json --verbose` prints the whole run as one JSON array of stream-json
        messages: each element is decoded as if it were its own line (all with the array's seq)."""
        out: list[Event] = []
        for item in items:
            if item.__class__ is dict:
                out.extend(self.on_object(rec, item))
            else:
                out.append(self.unparsed(rec, f"a JSON {type(item).__name__} inside the message array"))
        return out

    def other(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        return [self.unparsed(rec, f"unknown message type {obj.get('type')!r}")]

    def _quiet(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        return []

    # --- turns -------------------------------------------------------------------------------------
    def _content_started(self, rec: dict[str, Any], out: list[Event]) -> None:
        if not self.saw_content:
            self.saw_content = True
            if not self.saw_init:
                self.find(ERROR_SEV, "cc-missing-init", "assistant output before any system/init line", rec)
        if not self.in_turn:
            self.in_turn = True
            out.append(self.ev(TURN_STARTED, rec, data={}))

    # --- system ------------------------------------------------------------------------------------
    def _system(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        sub = obj.get("subtype")
        if sub == "init":
            return self._init(rec, obj)
        if not isinstance(sub, str):
            return [self.unparsed(rec, "system message without a subtype")]
        out: list[Event] = []
        if sub == "api_retry":  # an attempt failed and is retried: a failed call and a retry
            err = obj.get("error")
            out.append(self.ev(ERROR, rec, data={
                "message": f"API retry {obj.get('attempt')}/{obj.get('max_retries')}: {err}",
                "code": obj.get("error_status"), "fatal": False, "retry": True}))
        if sub.startswith("task_"):
            out.append(self._task(rec, obj, sub))
            return out
        status = obj.get("status")
        text = status if isinstance(status, str) else sub
        out.append(self.status(rec, text, subtype=sub))
        return out

    def _task(self, rec: dict[str, Any], obj: dict[str, Any], sub: str) -> Event:
        """A `system/task_*` line (a subagent started, progressing, updated, done): a status item about the
        tool call that started it (`parent_tool_use_id`)."""
        task_id = str_or_none(obj.get("task_id"))
        parent = str_or_none(obj.get("tool_use_id"))
        if task_id is not None:
            parent = self.task_parent.setdefault(task_id, parent) if parent is not None else self.task_parent.get(task_id)
        patch = obj.get("patch")
        what = next((v for v in (obj.get("description"), obj.get("summary"), obj.get("status"),
                                 patch.get("status") if isinstance(patch, dict) else None) if isinstance(v, str)), "")
        data: dict[str, Any] = {"subtype": sub, "task_id": task_id}
        if parent is not None:
            data["parent_tool_use_id"] = parent
        if isinstance(obj.get("subagent_type"), str):
            data["subagent_type"] = obj["subagent_type"]
        return self.status(rec, f"{sub.replace('_', ' ')}: {what}" if what else sub.replace("_", " "), **data)

    def _init(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        self.saw_init = True
        sid = str_or_none(obj.get("session_id"))
        model = str_or_none(obj.get("model"))
        if self.model is None or model:
            self.model = model or self.model
        if self.session_id is not None and sid == self.session_id:
            return [self.status(rec, "init", subtype="init", model=model,
                                permission_mode=obj.get("permissionMode"))]
        self.session_id = sid
        data = {"session_id": sid, "model": model, "cwd": obj.get("cwd"), "tools": obj.get("tools"),
                "version": obj.get("claude_code_version") or obj.get("version"),
                "permission_mode": obj.get("permissionMode")}
        return [self.ev(SESSION_STARTED, rec, data=data)]

    # --- assistant -----------------------------------------------------------------------------------
    def _assistant(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        msg = obj.get("message")
        if msg.__class__ is not dict:
            return [self.unparsed(rec, "assistant line without a message object")]
        out: list[Event] = []
        self._content_started(rec, out)
        mid = msg.get("id")
        if mid.__class__ is not str:
            mid = None
        if self.stream_open is not None and mid != self.stream_mid and obj.get("parent_tool_use_id") is None:
            out.extend(self._abandon(rec, f"the assistant line of {mid}"))
        synthetic = self.made_up(obj, msg)  # by the client (an API error after its retries), not the model
        content = msg.get("content")
        if content.__class__ is not list:
            content = self._content(rec, content, out)
        parent = obj.get("parent_tool_use_id")
        for block in content:
            ev = assistant_block(self, rec, block, mid, "assistant", self.tool_uses)
            if synthetic:
                ev.data["synthetic"] = True
            if parent.__class__ is str and ev.kind == ITEM_COMPLETED:
                ev.data["parent_tool_use_id"] = parent
            out.append(ev)
        usage = msg.get("usage")
        if usage.__class__ is dict and not synthetic and (mid is None or mid not in self.usage_seen):
            out.append(self._message_usage(rec, msg, mid, usage))
            if parent.__class__ is str:
                out[-1].data["parent_tool_use_id"] = parent
        if obj.get("error") or synthetic:
            out.extend(self._assistant_error(rec, obj, content, synthetic))
        return out

    def _content(self, rec: dict[str, Any], content: Any, out: list[Event]) -> list[Any]:
        """An assistant message's content as a list of blocks (a string is one text block; anything
        else is no block, and an `unparsed` event in `out`)."""
        if isinstance(content, str):
            return [{"type": "text", "text": content}]
        if isinstance(content, list):
            return content
        out.append(self.unparsed(rec, "assistant message content is not a list"))
        return []

    def _message_usage(self, rec: dict[str, Any], msg: dict[str, Any], mid: str | None,
                       usage: dict[str, Any]) -> Event:
        """The usage of an assistant line whose message id was not seen yet (every block line repeats
        it: the caller asks once per id)."""
        if mid is not None:
            self.usage_seen.add(mid)
        model = msg.get("model") if isinstance(msg.get("model"), str) else self.model
        data = {"model": model, "message_id": mid, **usage_fields(usage), "scope": "message"}
        if self.usage_is_snapshot:
            data["snapshot"] = True
        return self.ev(USAGE, rec, data=data)

    def _assistant_error(self, rec: dict[str, Any], obj: dict[str, Any], content: list[Any],
                         synthetic: bool) -> list[Event]:
        """The error event of an assistant line with an `error`, or of a made-up message reporting a
        failed API call (`failed_call`)."""
        text = next((b.get("text") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)), None)
        failed = synthetic and self.made_up_error(obj, text)
        if not (obj.get("error") or failed):
            return []
        data = {"message": str(obj.get("error") or text), "code": None, "fatal": False}
        if failed:
            data["failed_call"] = True
        return [self.ev(ERROR, rec, data=data)]

    def made_up(self, obj: dict[str, Any], msg: dict[str, Any]) -> bool:
        """An assistant message the client wrote itself (Claude Code: `model: "<synthetic>"`), not an LLM answer."""
        return msg.get("model") == "<synthetic>" or obj.get("isApiErrorMessage") is True

    def made_up_error(self, obj: dict[str, Any], text: str | None) -> bool:
        """Whether a made-up message reports a failed API call (Claude Code also makes up messages such as
        "No response requested." or "[Request interrupted by user]", which are no failure)."""
        return bool(obj.get("error")) or obj.get("isApiErrorMessage") is True or (text or "").startswith("API Error")

    # --- user ------------------------------------------------------------------------------------------
    def _user(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        msg = obj.get("message")
        if msg.__class__ is not dict:
            return [self.unparsed(rec, "user line without a message object")]
        got = user_content(self, rec, msg.get("content"), self.tool_uses)
        if got is None:
            return [self.unparsed(rec, "user message content is neither text nor a list")]
        texts, out = got
        from_stdin = rec.get("dir") == "c2s"
        if texts:
            text = "\n".join(texts)
            if from_stdin and not self.in_turn:
                self.in_turn = True
                out.insert(0, self.ev(TURN_STARTED, rec, data={"prompt": text}))
            out.insert(1 if from_stdin and out and out[0].kind == TURN_STARTED else 0,
                       self.ev(ITEM_COMPLETED, rec, MESSAGE, str_or_none(obj.get("uuid")), "user", {"text": text}))
        parent = obj.get("parent_tool_use_id")
        if parent.__class__ is str:
            self._parented(out, parent)
        return out

    @staticmethod
    def _parented(out: list[Event], parent: str) -> None:
        """A subagent's user line: its items name the tool call that started the subagent (not when that
        id is a tool result's own call: CodeBuddy's way of saying which call a result answers)."""
        if any(ev.item == TOOL_RESULT and ev.data.get("call_id") == parent for ev in out):
            return
        for ev in out:
            if ev.kind == ITEM_COMPLETED:
                ev.data["parent_tool_use_id"] = parent

    # --- result ----------------------------------------------------------------------------------------
    def _result(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        out: list[Event] = []
        if self.results == 0 and not self.saw_init and not self.saw_content and self.out_lines <= 1:
            out.extend(self._single_result(rec, obj))
        self.results += 1
        out.extend(self._abandon(rec, "the result"))
        sub = obj.get("subtype")
        failed = obj.get("is_error") is True or (isinstance(sub, str) and sub != "success")
        cost = _price(obj.get("total_cost_usd"))
        out.extend(self._session_usage(rec, obj, cost))
        result = obj.get("result")
        if failed:
            out.append(self._result_error(rec, obj, sub, result))
        elif result == "" or (result is None and sub == "success"):
            self.find(WARNING, "cc-empty-result", "successful result with empty result text", rec)
        self._denials(rec, obj.get("permission_denials"))
        out.append(self.ev(TURN_ENDED, rec, data={
            "stop_reason": obj.get("stop_reason"), "is_error": failed, "result": result, "subtype": sub,
            "num_turns": obj.get("num_turns"), "duration_ms": obj.get("duration_ms"), "cost_usd": cost}))
        self.in_turn = False
        return out

    def _single_result(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        """`--output-format json`: the run's only output is its result; its text is the reply."""
        self.single_result = True
        out = [self.ev(TURN_STARTED, rec, data={})]
        if isinstance(obj.get("result"), str) and obj.get("is_error") is not True:
            out.append(self.ev(ITEM_COMPLETED, rec, MESSAGE, None, "assistant", {"text": obj["result"]}))
        return out

    def _session_usage(self, rec: dict[str, Any], obj: dict[str, Any], cost: int | float | None) -> list[Event]:
        """The result's totals, scope "session": per model (`modelUsage`, each with its cost), else `usage`."""
        model_usage = obj.get("modelUsage")
        if isinstance(model_usage, dict) and model_usage:
            return [self.ev(USAGE, rec, data={
                "model": model, "message_id": None, **usage_fields(mu),
                "cost_usd": _price(mu.get("costUSD", mu.get("cost_usd"))), "scope": "session"})
                for model, mu in model_usage.items() if isinstance(mu, dict)]
        if isinstance(obj.get("usage"), dict):
            return [self.ev(USAGE, rec, data={
                "model": self.model, "message_id": None, **usage_fields(obj["usage"]), "cost_usd": cost,
                "scope": "session"})]
        return []

    def _result_error(self, rec: dict[str, Any], obj: dict[str, Any], sub: Any, result: Any) -> Event:
        """A failed result (is_error, or an error subtype): its error event and `cc-result-error`."""
        errs = obj.get("errors")
        message = result if isinstance(result, str) and result else (
            "; ".join(map(str, errs)) if isinstance(errs, list) and errs else f"result {sub}")
        self.error_result = rec
        self.find(ERROR_SEV, "cc-result-error",
                  f"result subtype {sub!r} with is_error {obj.get('is_error')!r}: {str(message)[:120]}", rec)
        return self.ev(ERROR, rec, data={"message": message, "code": obj.get("api_error_status") or sub, "fatal": True})

    def _denials(self, rec: dict[str, Any], denials: Any) -> None:
        if isinstance(denials, list) and denials:
            names = sorted({str(d.get("tool_name")) for d in denials if isinstance(d, dict)})
            self.find(WARNING, "cc-permission-denied", f"{len(denials)} permission denial(s): {', '.join(names)}", rec)

    # --- partial messages: the outputs of the Anthropic stream machine ------------------------------------
    def _stream_event(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        ev = obj.get("event")
        if ev.__class__ is not dict:
            return [self.unparsed(rec, "stream_event without an event object")]
        return self._stream_out(rec, ev)

    def _stream_out(self, rec: dict[str, Any], ev: dict[str, Any]) -> list[Event]:
        et = ev.get("type")
        handler = self._stream_dispatch.get(et) if isinstance(et, str) else None
        if handler is None:
            return self._problem(rec, self.stream.feed(ev))
        return handler(rec, ev)

    def _problem(self, rec: dict[str, Any], out: Output | Block) -> list[Event]:
        """An `unparsed` event for what the stream machine did not take (a `Problem`), else nothing."""
        return [self.unparsed(rec, out.reason)] if isinstance(out, Problem) else []

    def _block_delta(self, rec: dict[str, Any], ev: dict[str, Any]) -> list[Event]:
        out = self.stream.block_delta(ev)
        if not isinstance(out, BlockDelta):
            return self._problem(rec, out)
        block = out.block
        return [Event(ITEM_DELTA, rec.get("ch") or self.unit, (rec.get("seq", 0),), rec.get("t", 0.0),
                      self.dialect, block.item, block.id, "assistant", {out.field: out.piece})]

    def _message_start(self, rec: dict[str, Any], ev: dict[str, Any]) -> list[Event]:
        out = self.stream.message_start(ev)
        if not isinstance(out, MessageStart):
            return self._problem(rec, out)
        events: list[Event] = []
        if not (self.saw_content and self.in_turn):
            self._content_started(rec, events)
        mid = out.message_id
        events.extend(self._abandon(rec, "a new message_start"))
        self.stream_open = rec
        self.stream_mid = mid
        if out.usage is not None and (mid is None or mid not in self.usage_seen):
            if mid is not None:
                self.usage_seen.add(mid)
            events.append(self.ev(USAGE, rec, data={
                "model": out.model or self.model, "message_id": mid, **usage_fields(out.usage),
                "scope": "message", "snapshot": True}))
        return events

    def _message_stop(self, rec: dict[str, Any], ev: dict[str, Any]) -> list[Event]:
        self.stream.message_stop(ev)
        self.stream_open = None
        return []

    def _abandon(self, rec: dict[str, Any], what: str) -> list[Event]:
        """A streamed message (stream_event message_start) that never got its message_stop before
        `what` came: the stream died mid-message and the CLI moved on (a silent retry, or a fallback
        to a non-streaming request). Only stdout is needed to see it. The call failed: an error event
        with `failed_call` and the message id (stats does not count that message as an answer)."""
        started = self.stream_open
        if started is None:
            return []
        self.stream_open = None
        self.find(WARNING, "cc-stream-abandoned",
                  f"streamed message {self.stream_mid or '?'} (seq {started.get('seq')}) has no message_stop "
                  f"before {what}: cut mid-message and retried", rec)
        return [self.ev(ERROR, rec, data={"message": f"streamed message {self.stream_mid or '?'} cut mid-message",
                                          "code": "stream-abandoned", "fatal": False, "failed_call": True,
                                          "message_id": self.stream_mid})]

    def _block_start(self, rec: dict[str, Any], ev: dict[str, Any]) -> list[Event]:
        b = self.stream.block_start(ev)
        if type(b) is not Block:
            return self._problem(rec, b)
        item = b.item
        data: dict[str, Any] = {"name": b.name, "call_id": b.call_id} if item == TOOL_CALL else {}
        line = rec.get("json")  # (the stream_event line: a subagent's names its parent)
        parent = line.get("parent_tool_use_id") if line.__class__ is dict else None
        if parent.__class__ is str:
            data["parent_tool_use_id"] = parent
        # (self.ev without its checks: the machine's ids are strings)
        return [Event(ITEM_STARTED, rec.get("ch") or self.unit, (rec.get("seq", 0),), rec.get("t", 0.0), self.dialect,
                      item, b.id, "assistant", data)]

    def _block_stop(self, rec: dict[str, Any], ev: dict[str, Any]) -> list[Event]:
        b = self.stream.block_stop(ev)
        return [] if type(b) is Block else self._problem(rec, b)

    def _message_delta(self, rec: dict[str, Any], ev: dict[str, Any]) -> list[Event]:
        counts = self.stream.message_delta(ev)
        if counts is None:
            return []
        return [self.ev(USAGE, rec, data={"model": self.model, "message_id": self.stream_mid, "scope": "message",
                                          **counts})]

    def _stream_error(self, rec: dict[str, Any], ev: dict[str, Any]) -> list[Event]:
        err = self.stream.error(ev).error
        if not isinstance(err, dict):
            err = {}
        return [self.ev(ERROR, rec, data={"message": err.get("message"), "code": err.get("type"), "fatal": True,
                                          "failed_call": True, "message_id": self.stream_mid})]

    # --- control protocol -----------------------------------------------------------------------------
    def _control_request(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        req = obj.get("request")
        if req.__class__ is not dict:
            return [self.unparsed(rec, "control_request without a request object")]
        rid = obj.get("request_id")
        self.control_pending[str(rid)] = rec
        sub = req.get("subtype")
        data: dict[str, Any] = {"control": sub, "request_id": rid}
        if sub == "can_use_tool":
            data.update(tool_name=req.get("tool_name"), input=req.get("input"), call_id=req.get("tool_use_id"))
            text = f"permission request: {req.get('tool_name')}"
        else:
            data["request"] = req
            text = f"control request: {sub}"
        return [self.status(rec, text, **data)]

    def _answer(self, rid: Any) -> dict[str, Any] | None:
        if isinstance(rid, str) and rid in self.control_pending:
            return self.control_pending.pop(rid)
        if self.control_pending:  # ids normalized away (seen in public samples): answer the oldest
            return self.control_pending.pop(next(iter(self.control_pending)))
        return None

    def _control_response(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        resp = obj.get("response")
        if resp.__class__ is not dict:
            return [self.unparsed(rec, "control_response without a response object")]
        self._answer(resp.get("request_id"))
        inner = resp.get("response")
        if not isinstance(inner, dict):
            inner = {}
        behavior = inner.get("behavior")
        data = {"control": "response", "request_id": resp.get("request_id"), "subtype": resp.get("subtype"),
                "behavior": behavior}
        out = [self.status(rec, f"control response: {resp.get('subtype')}" + (f" ({behavior})" if behavior else ""),
                           **data)]
        if behavior == "deny":
            self.find(WARNING, "cc-permission-denied", f"permission denied: {inner.get('message', '')}"[:160], rec)
        if resp.get("subtype") == "error":
            out.append(self.ev(ERROR, rec, data={"message": resp.get("error"), "code": "control", "fatal": False}))
        return out

    def _control_cancel(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        self._answer(obj.get("request_id"))
        return [self.status(rec, "control request cancelled", control="cancel", request_id=obj.get("request_id"))]

    # --- end ----------------------------------------------------------------------------------------------
    def on_close(self, rec: dict[str, Any]) -> list[Event]:
        out = super().on_close(rec)
        if out:
            self._exit_rules(rec)
        return out

    def _exit_rules(self, rec: dict[str, Any]) -> None:
        if self.error_result is not None and self.exit_code == 0:
            self.find(ERROR_SEV, "cc-error-exit-0",
                      "the result says is_error but the process exited 0", self.error_result)
        elif self.exit_code not in (None, 0) and self.error_result is None:
            self.find(WARNING, "process-exit-nonzero", f"the process exited {self.exit_code} without an error result", rec)

    def on_finish(self) -> list[Event]:
        if self.saw_content and self.results == 0:
            self.find(ERROR_SEV, "cc-missing-result", "the stream ended without a result line", seq=self.last_seq)
        elif self.in_turn:
            self.find(ERROR_SEV, "cc-missing-result", "the last turn has no result line", seq=self.last_seq)
        if not self.saw_init and self.results and not self.saw_content and not self.single_result:
            self.find(ERROR_SEV, "cc-missing-init", "a result without any system/init line", seq=self.last_seq)
        for cid, (name, seq, ch) in self.tool_uses.items():
            self.find(ERROR_SEV, "cc-tool-use-without-result", f"tool_use {name} ({cid}) never got a tool_result",
                      seq=seq, ch=ch)
        for rid, req in self.control_pending.items():
            self.find(INFO, "cc-control-unanswered", f"control_request {rid} got no control_response", req)
        return super().on_finish()


_VOLATILE = (
    "session_id", "uuid", "message.id", "request_id", "**.tool_use_id", "message.content[*].id",
    "duration_ms", "duration_api_ms", "ttft_ms", "ttft_stream_ms", "time_to_request_ms", "event.message.id",
    "event.content_block.id", "timestamp", "request.tool_use_id", "response.request_id", "memory_paths",
    "cwd", "task_id", "patch.end_time",
)

RULES = (
    ("cc-missing-init", ERROR_SEV, "assistant output (or a result) without a system/init line before it"),
    ("cc-missing-result", ERROR_SEV, "the stream (or its last turn) ended without a result line"),
    ("cc-result-error", ERROR_SEV, "a result with is_error true or an error subtype (never inferred from subtype alone)"),
    ("cc-error-exit-0", ERROR_SEV, "the result says is_error while the process exited 0"),
    ("process-exit-nonzero", WARNING, "the process exited non-zero without an error result"),
    ("cc-empty-result", WARNING, "a successful result whose result text is empty"),
    ("cc-tool-use-without-result", ERROR_SEV, "a tool_use id that no tool_result answered"),
    ("cc-permission-denied", WARNING, "permission_denials in a result, or a control_response with behavior deny"),
    ("cc-control-unanswered", INFO, "a control_request without a control_response"),
    ("cc-stream-abandoned", WARNING, "a streamed message (stream_event message_start) without message_stop before "
                                     "the next message or the result: the stream was cut mid-message and retried"),
    ("invalid-json", ERROR_SEV, "a stdout/stdin line that is not JSON"),
)

# --- detection ----------------------------------------------------------------------------------------
_CLAUDE_TYPES = frozenset(("system", "assistant", "user", "result", "stream_event", "control_request",
                           "control_response", "control_cancel_request", "keep_alive"))


def claude_line(obj: Any) -> str | None:
    """What makes `obj` a Claude-Code-shaped stream-json line (a short description), else None.
    A known type alone is not enough: it must carry the field that type always has."""
    if not isinstance(obj, dict):
        return None
    t = obj.get("type")
    if not isinstance(t, str) or t not in _CLAUDE_TYPES:
        return None
    if t == "system":
        sub = obj.get("subtype")
        return f"type 'system' subtype {sub!r}" if isinstance(sub, str) else None
    if t in ("assistant", "user"):
        return f"type {t!r} with a message" if isinstance(obj.get("message"), dict) else None
    if t == "result":
        return "type 'result'" if isinstance(obj.get("subtype"), str) or "is_error" in obj else None
    if t == "stream_event":
        ev = obj.get("event")
        return f"stream_event {ev.get('type')!r}" if isinstance(ev, dict) and isinstance(ev.get("type"), str) else None
    if t == "control_request":
        return "type 'control_request'" if isinstance(obj.get("request"), dict) else None
    if t == "control_response":
        return "type 'control_response'" if isinstance(obj.get("response"), dict) else None
    return f"type {t!r}" if "request_id" in obj or t == "keep_alive" else None


def claude_lines(msgs: list[dict[str, Any]]) -> str | None:
    """The first Claude-shaped line of a sample (also inside the JSON array `--output-format json
    --verbose` prints), described; None when there is none."""
    for rec in out_msgs(msgs):
        value = rec.get("json")
        if isinstance(value, dict):
            why = claude_line(value)
            if why:
                return f"stream-json line {why}"
        elif isinstance(value, list) and value:
            whys = [claude_line(v) for v in value[:8]]
            if any(whys):
                return f"a JSON array of stream-json messages (--output-format json --verbose): {next(w for w in whys if w)}"
    return None


def sniff(open_record: dict[str, Any] | None, msgs: list[dict[str, Any]]) -> str | None:
    """Claude Code: a stream-json line (a known type with the field it always carries) among the first
    messages, else argv running `claude` with output that is not text. CodeBuddy prints the same
    lines: its own sniff comes first (lower priority number)."""
    return claude_lines(msgs) or by_argv(open_record, msgs, ("claude", "claude-code"), "Claude Code")

# --- drift (rule `drift`, wirecap/dialects/drift.py): the lines and fields this dialect knows -------------
# From the shipped captures, the public samples and lab runs of Claude Code 2.1.197 (text, tool_bash,
# tool_read, think, task, http_error, sse_error; with and without --include-partial-messages; stdin
# stream-json with the control protocol). A `system` or `result` subtype names the message type.
def known_lines(every: dict[str, Any] | None = None, tool_result_extra: dict[str, Any] | None = None,
                types: dict[str, Any] | None = None) -> Any:
    """The known shape of a stream-json line; CodeBuddy adds `every` field to each line, fields to
    its tool results and line `types` of its own."""
    from wirecap.dialects.anthropic_known import EVENTS, MESSAGE, MODEL_USAGE, USAGE, user_blocks
    from wirecap.dialects.drift import OPEN, Union, extend

    ids = {"type": None, "subtype": None, "session_id": None, "uuid": None}
    result = {**ids, "is_error": None, "duration_ms": None, "duration_api_ms": None, "num_turns": None,
              "result": None, "total_cost_usd": None, "usage": USAGE, "modelUsage": MODEL_USAGE,
              "permission_denials": OPEN, "errors": OPEN, "structured_output": OPEN, "api_error_status": None,
              "fast_mode_state": None, "stop_reason": None, "terminal_reason": None, "time_to_request_ms": None,
              "ttft_ms": None, "ttft_stream_ms": None}
    lines = Union("type", {
        "system": Union("subtype", {
            "init": {**ids, "cwd": None, "tools": OPEN, "mcp_servers": OPEN, "model": None, "permissionMode": None,
                     "slash_commands": OPEN, "apiKeySource": None, "claude_code_version": None, "output_style": None,
                     "agents": OPEN, "skills": OPEN, "plugins": OPEN, "analytics_disabled": None,
                     "product_feedback_disabled": None, "fast_mode_state": None, "memory_paths": OPEN},
            "status": {**ids, "status": None, "permissionMode": None},
            "api_retry": {**ids, "attempt": None, "max_retries": None, "retry_delay_ms": None, "error_status": None,
                          "error": OPEN},
            "thinking_tokens": {**ids, "estimated_tokens": None, "estimated_tokens_delta": None},
            **_task_lines(ids),
        }),
        "assistant": {"type": None, "message": MESSAGE, "parent_tool_use_id": None, "session_id": None, "uuid": None,
                      "error": None, "request_id": None, **_SUBAGENT_LINE},
        "user": {"type": None, "message": {"role": None, "content": [user_blocks(**(tool_result_extra or {}))]},
                 "parent_tool_use_id": None, "session_id": None, "uuid": None, "timestamp": None,
                 "tool_use_result": OPEN, "isSynthetic": None, "isReplay": None, **_SUBAGENT_LINE},
        "result": Union("subtype", dict.fromkeys(
            ("success", "error_max_turns", "error_during_execution", "error_max_budget_usd",
             "error_max_structured_output_retries"), result)),
        "stream_event": {"type": None, "event": Union("type", EVENTS), "parent_tool_use_id": None,
                         "session_id": None, "uuid": None, "ttft_ms": None},
        "control_request": {"type": None, "request_id": None, "request": Union("subtype", {
            "can_use_tool": {"subtype": None, "tool_name": None, "input": OPEN, "tool_use_id": None,
                             "permission_suggestions": OPEN, "blocked_path": None, "decision_reason": None},
            "set_permission_mode": {"subtype": None, "mode": None},
            "set_model": {"subtype": None, "model": None},
            "interrupt": {"subtype": None},
            "initialize": OPEN,
            "hook_callback": OPEN,
            "mcp_message": OPEN,
        }, label=False)},
        "control_response": {"type": None, "response": {"subtype": None, "request_id": None, "response": OPEN,
                                                        "error": None}},
        "control_cancel_request": {"type": None, "request_id": None},
        "keep_alive": {"type": None},
    })
    return extend(lines, every, types)


# a subagent's own lines (parent_tool_use_id set) also say which agent it is
_SUBAGENT_LINE = {"subagent_type": None, "task_description": None}


def _task_lines(ids: dict[str, Any]) -> dict[str, Any]:
    """The `system/task_*` lines of a subagent's life (Claude Code 2.1.197, the lab's `task` run)."""
    from wirecap.dialects.drift import OPEN

    task = {**ids, "task_id": None, "tool_use_id": None, "description": None, "subagent_type": None}
    return {
        "task_started": {**task, "task_type": None, "prompt": None},
        "task_progress": {**task, "usage": OPEN, "last_tool_name": None},
        "task_updated": {**ids, "task_id": None, "patch": OPEN},
        "task_notification": {**task, "status": None, "output_file": None, "summary": None, "usage": OPEN},
    }


def _known() -> Any:
    from wirecap.dialects.drift import Known

    lines = known_lines()
    return Known(s2c=lines, c2s=lines)


DIALECT = Dialect(
    name="claude-code",
    transport="pipe",
    decoder=ClaudeCodeDecoder,
    known=_known(),
    summary="Claude Code stream-json (stdout, and stdin with --input-format stream-json)",
    volatile=_VOLATILE,
    rules=RULES,
    sniff=sniff,
    priority=50,
)

__all__ = ["ClaudeCodeDecoder", "DIALECT", "STATUS", "result_text", "usage_fields"]

