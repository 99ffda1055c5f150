"""Codex CLI `codex exec --json` events: thread.started, turn.*, item.{started,updated,completed}, error.

Items carry a `type`: agent_message, reasoning, command_execution, file_change, mcp_tool_call,
web_search, todo_list, error. Tool-like items become a tool_call (and, when completed, a
tool_result with the output). `turn.completed.usage` is in OpenAI terms (`input_tokens` includes
`cached_input_tokens`, so the universal input is the difference) and it is the thread's running
total, not the turn's: Codex prints its last `ThreadTokenUsage.total` (codex-rs/exec,
event_processor_with_jsonl_output.rs: `usage_from_last_total`), which sums every LLM call of the
thread, including the calls of earlier runs when `codex exec resume` continues a thread. Usage is
therefore emitted with scope "thread" (stats turns successive totals into per-turn figures) and
`resumed` (from argv: `exec ... resume`), because the first total of a resumed run holds the
earlier runs' calls too and no per-call figure can be read from stdout; the HTTP channel
(`response.completed.usage`, one per call) has them.
"""

from __future__ import annotations

from typing import Any

from wirecap.dialects.base import ERROR_SEV, Dialect, as_dict, by_argv, json_objects, num, str_or_none
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

_TOOL_ITEMS = {
    "command_execution": lambda it: ("shell", {"command": it.get("command")}),
    "file_change": lambda it: ("apply_patch", {"changes": it.get("changes")}),
    "mcp_tool_call": lambda it: (f"{it.get('server')}/{it.get('tool')}", it.get("arguments")),
    "web_search": lambda it: ("web_search", {"query": it.get("query")}),
}


def codex_usage(u: dict[str, Any]) -> dict[str, Any]:
    """A Codex token usage object (`turn.completed.usage`, a rollout's token usage) as the USAGE event's
    counts: `input_tokens` includes the cached ones, which are counted as cache reads instead."""
    cached = num(u.get("cached_input_tokens"))
    return {"input_tokens": max(num(u.get("input_tokens")) - cached, 0), "output_tokens": num(u.get("output_tokens")),
            "cache_read_tokens": cached, "cache_creation_tokens": num(u.get("cache_write_input_tokens")),
            "reasoning_tokens": num(u.get("reasoning_output_tokens"))}


class CodexExecDecoder(StreamDecoder):
    dialect = "codex-exec"

    def __init__(self, unit: str, options: dict[str, Any] | None = None) -> None:
        super().__init__(unit, options)
        self.in_turn = False
        self.turns = 0
        self.open_items: dict[str, dict[str, Any]] = {}
        self.resumed: bool | None = None  # None: no argv (an imported stdout)

    def on_open(self, rec: dict[str, Any]) -> list[Event]:
        argv = rec.get("argv")
        if rec.get("kind") == "process" and isinstance(argv, list):
            words = [a for a in argv if isinstance(a, str)]
            # `codex exec [opts] resume [--last | ID] PROMPT` (`e` is exec's alias): "resume" after it
            sub = next((i for i, w in enumerate(words) if w in ("exec", "e")), None)
            self.resumed = sub is not None and "resume" in words[sub + 1:]
        return []

    def on_object(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        t = obj.get("type")
        if t == "thread.started":
            return [self.ev(SESSION_STARTED, rec, data={"session_id": str_or_none(obj.get("thread_id")), "model": None})]
        if t == "turn.started":
            self.in_turn = True
            return [self.ev(TURN_STARTED, rec, data={"prompt": None})]
        if t == "turn.completed":
            self.in_turn = False
            self.turns += 1
            out: list[Event] = []
            u = obj.get("usage")
            if isinstance(u, dict):
                out.append(self.ev(USAGE, rec, data={
                    "model": None, "message_id": f"turn-{self.turns}", **codex_usage(u), "scope": "thread",
                    "resumed": self.resumed}))
            out.append(self.ev(TURN_ENDED, rec, data={"stop_reason": "completed", "is_error": False}))
            return out
        if t == "turn.failed":
            self.in_turn = False
            err = as_dict(obj.get("error"))
            self.find(ERROR_SEV, "codex-turn-failed", f"turn failed: {err.get('message')}"[:160], rec)
            # the turn's last LLM call failed (an error answer, a stream that broke after the retries)
            return [self.ev(ERROR, rec, data={"message": err.get("message"), "code": None, "fatal": True,
                                              "failed_call": True}),
                    self.ev(TURN_ENDED, rec, data={"stop_reason": "failed", "is_error": True})]
        if t == "error":
            self.find(ERROR_SEV, "codex-error", f"error event: {obj.get('message')}"[:160], rec)
            data = {"message": obj.get("message"), "code": None, "fatal": False}
            if str(obj.get("message")).startswith("Reconnecting..."):  # "Reconnecting... 1/5 (why)": retried
                data["retry"] = True
            return [self.ev(ERROR, rec, data=data)]
        if t in ("item.started", "item.updated", "item.completed"):
            item = obj.get("item")
            if not isinstance(item, dict):
                return [self.unparsed(rec, f"{t} without an item object")]
            return self._item(rec, t, item)
        return [self.unparsed(rec, f"unknown event type {t!r}")]

    def _item(self, rec: dict[str, Any], t: str, item: dict[str, Any]) -> list[Event]:
        it = item.get("type")
        iid = str_or_none(item.get("id"))
        done = t == "item.completed"
        phase = ITEM_COMPLETED if done else (ITEM_STARTED if t == "item.started" else ITEM_DELTA)
        if it == "agent_message":
            return [self.ev(phase, rec, MESSAGE, iid, "assistant", {"text": item.get("text")})]
        if it == "reasoning":
            return [self.ev(phase, rec, REASONING, iid, "assistant", {"text": item.get("text")})]
        if isinstance(it, str) and it in _TOOL_ITEMS:  # (a type from untrusted JSON may be unhashable)
            name, inp = _TOOL_ITEMS[it](item)
            out = []
            if t == "item.started":
                self.open_items[iid or ""] = rec
                return [self.ev(ITEM_STARTED, rec, TOOL_CALL, iid, "assistant", {"name": name, "input": inp, "call_id": iid})]
            if not done:
                return [self.ev(ITEM_DELTA, rec, TOOL_CALL, iid, "assistant", {"status": item.get("status")})]
            self.open_items.pop(iid or "", None)
            out.append(self.ev(ITEM_COMPLETED, rec, TOOL_CALL, iid, "assistant", {"name": name, "input": inp, "call_id": iid}))
            output = item.get("aggregated_output", item.get("result", item.get("error")))
            exit_code = item.get("exit_code")
            failed = item.get("status") == "failed" or (isinstance(exit_code, int) and exit_code != 0) or bool(item.get("error"))
            out.append(self.ev(ITEM_COMPLETED, rec, TOOL_RESULT, iid, "tool",
                               {"call_id": iid, "output": output, "is_error": failed, "exit_code": exit_code}))
            return out
        if it == "todo_list":
            return [self.status(rec, "todo list", subtype="todo_list", items=item.get("items"))]
        if it == "error":
            return [self.ev(ERROR, rec, data={"message": item.get("message"), "code": None, "fatal": False})]
        return [self.unparsed(rec, f"unknown item type {it!r}")]

    def on_finish(self) -> list[Event]:
        if self.in_turn:
            self.find(ERROR_SEV, "codex-missing-turn-end", "turn.started without turn.completed or turn.failed",
                      seq=self.last_seq)
        for iid, rec in self.open_items.items():
            self.find(ERROR_SEV, "codex-item-unfinished", f"item {iid} started but never completed", rec)
        return super().on_finish()


_CODEX_TYPES = frozenset(("thread.started", "turn.started", "turn.completed", "turn.failed", "item.started",
                          "item.updated", "item.completed"))


def sniff(open_record: dict[str, Any] | None, msgs: list[dict[str, Any]]) -> str | None:
    """Codex exec: a `thread.*` / `turn.*` / `item.*` event among the first lines, else argv running
    `codex` with output that is not text."""
    for obj in json_objects(msgs):
        if isinstance(obj.get("type"), str) and obj["type"] in _CODEX_TYPES:
            return f"Codex exec event {obj['type']!r}"
    return by_argv(open_record, msgs, ("codex",), "Codex CLI")
# --- drift (rule `drift`): the events and items this dialect knows (Codex CLI 0.169.0 text and tool runs,
# plus the item types the decoder handles by name).
def _known() -> Any:
    from wirecap.dialects.drift import OPEN, Known, Union

    base = {"id": None, "type": None, "status": None}
    item = Union("type", {
        "agent_message": {**base, "text": None},
        "reasoning": {**base, "text": None},
        "command_execution": {**base, "command": None, "aggregated_output": None, "exit_code": None},
        "file_change": {**base, "changes": OPEN},
        "mcp_tool_call": {**base, "server": None, "tool": None, "arguments": OPEN, "result": OPEN, "error": OPEN},
        "web_search": {**base, "query": None, "action": OPEN},
        "todo_list": {**base, "items": OPEN},
        "error": {**base, "message": None},
    }, label=False)
    events = Union("type", {
        "thread.started": {"type": None, "thread_id": None},
        "turn.started": {"type": None},
        "turn.completed": {"type": None, "usage": {"input_tokens": None, "cached_input_tokens": None,
                                                   "output_tokens": None, "reasoning_output_tokens": None,
                                                   "cache_write_input_tokens": None}},
        "turn.failed": {"type": None, "error": {"message": None}},
        "error": {"type": None, "message": None},
        **dict.fromkeys(("item.started", "item.updated", "item.completed"), {"type": None, "item": item}),
    })
    return Known(s2c=events)


DIALECT = Dialect(
    name="codex-exec",
    transport="pipe",
    decoder=CodexExecDecoder,
    known=_known(),
    summary="Codex CLI exec --json events (JSONL on stdout)",
    volatile=("thread_id", "item.id"),
    rules=(
        ("codex-missing-turn-end", ERROR_SEV, "turn.started without turn.completed / turn.failed"),
        ("codex-item-unfinished", ERROR_SEV, "an item.started tool item never completed"),
        ("codex-turn-failed", ERROR_SEV, "a turn.failed event"),
        ("codex-error", ERROR_SEV, "an error event"),
        ("invalid-json", ERROR_SEV, "a line that is not JSON"),
    ),
    sniff=sniff,
    priority=60,
)

__all__ = ["CodexExecDecoder", "DIALECT", "STATUS"]
