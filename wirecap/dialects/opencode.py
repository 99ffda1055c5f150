"""opencode `run --format json` events: step_start, text, reasoning, tool_use, step_finish, error.

Each event has `sessionID` and a `part`. One step is one LLM call: `step_finish.part` carries its
`tokens` (`input` excludes the cache, which is `cache.read` / `cache.write`) and `cost` in USD.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wirecap.dialects.base import ERROR_SEV, Dialect, by_argv, json_objects, num, str_or_none
from wirecap.dialects.stream import StreamDecoder
from wirecap.events import (
    ERROR,
    ITEM_COMPLETED,
    ITEM_STARTED,
    MESSAGE,
    REASONING,
    SESSION_STARTED,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_ENDED,
    TURN_STARTED,
    USAGE,
    Event,
)


class OpencodeDecoder(StreamDecoder):
    """One handler per event type (`_parts`), each given the event's `part` object."""

    dialect = "opencode"

    def __init__(self, unit: str, options: dict[str, Any] | None = None) -> None:
        super().__init__(unit, options)
        self.session_id: str | None = None
        self.in_step = False
        self.in_turn = False
        self._parts: dict[str, Callable[[dict[str, Any], dict[str, Any]], list[Event]]] = {
            "step_start": self._step_start,
            "text": self._text,
            "reasoning": self._reasoning,
            "tool_use": self._tool_use,
            "step_finish": self._step_finish,
        }

    def on_object(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        out: list[Event] = []
        sid = str_or_none(obj.get("sessionID"))
        if sid and sid != self.session_id:
            self.session_id = sid
            out.append(self.ev(SESSION_STARTED, rec, data={"session_id": sid, "model": None}))
        t = obj.get("type")
        if t == "error":
            out.append(self._error(rec, obj))
            return out
        part = obj.get("part")
        if not isinstance(part, dict):
            out.append(self.unparsed(rec, f"event {t!r} without a part object"))
            return out
        handler = self._parts.get(t) if isinstance(t, str) else None
        if handler is None:
            out.append(self.unparsed(rec, f"unknown event type {t!r}"))
            return out
        out.extend(handler(rec, part))
        return out

    def _error(self, rec: dict[str, Any], obj: dict[str, Any]) -> Event:
        err = obj.get("error")
        if not isinstance(err, dict):
            err = {}
        data = err.get("data")
        if not isinstance(data, dict):
            data = {}
        message = data.get("message") or err.get("message") or err.get("name") or str(obj.get("error"))
        self.find(ERROR_SEV, "opencode-error", f"error event: {message}"[:160], rec)
        ev = {"message": message, "code": err.get("name"), "fatal": True}
        if err.get("name") == "APIError" or "statusCode" in data:
            ev["failed_call"] = True  # the LLM API answered an error (stats: a failed call, not an answer)
        return self.ev(ERROR, rec, data=ev)

    def _step_start(self, rec: dict[str, Any], part: dict[str, Any]) -> list[Event]:
        out: list[Event] = []
        if not self.in_turn:
            self.in_turn = True
            out.append(self.ev(TURN_STARTED, rec, data={"prompt": None}))
        self.in_step = True
        out.append(self.status(rec, "step start", subtype="step_start", message_id=part.get("messageID")))
        return out

    def _text(self, rec: dict[str, Any], part: dict[str, Any]) -> list[Event]:
        return [self.ev(ITEM_COMPLETED, rec, MESSAGE, str_or_none(part.get("id")), "assistant",
                        {"text": part.get("text")})]

    def _reasoning(self, rec: dict[str, Any], part: dict[str, Any]) -> list[Event]:
        return [self.ev(ITEM_COMPLETED, rec, REASONING, str_or_none(part.get("id")), "assistant",
                        {"text": part.get("text")})]

    def _tool_use(self, rec: dict[str, Any], part: dict[str, Any]) -> list[Event]:
        state = part.get("state")
        if not isinstance(state, dict):
            state = {}
        cid = str_or_none(part.get("callID")) or str_or_none(part.get("id"))
        status = state.get("status")
        call = {"name": part.get("tool"), "input": state.get("input"), "call_id": cid}
        if status not in ("completed", "error"):
            return [self.ev(ITEM_STARTED, rec, TOOL_CALL, cid, "assistant", call)]
        output = state.get("output") if status == "completed" else state.get("error")
        return [self.ev(ITEM_COMPLETED, rec, TOOL_CALL, cid, "assistant", call),
                self.ev(ITEM_COMPLETED, rec, TOOL_RESULT, cid, "tool",
                        {"call_id": cid, "output": output, "is_error": status == "error"})]

    def _step_finish(self, rec: dict[str, Any], part: dict[str, Any]) -> list[Event]:
        self.in_step = False
        tokens = part.get("tokens")
        if not isinstance(tokens, dict):
            tokens = {}
        cache = tokens.get("cache")
        if not isinstance(cache, dict):
            cache = {}
        cost = part.get("cost")
        out = [self.ev(USAGE, rec, data={
            "model": None, "message_id": str_or_none(part.get("id")) or part.get("messageID"),
            "input_tokens": num(tokens.get("input")), "output_tokens": num(tokens.get("output")),
            "cache_read_tokens": num(cache.get("read")), "cache_creation_tokens": num(cache.get("write")),
            "reasoning_tokens": num(tokens.get("reasoning")),
            "cost_usd": cost if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
            "scope": "message"})]
        reason = part.get("reason")
        if reason not in ("tool-calls", "tool_calls"):
            self.in_turn = False
            out.append(self.ev(TURN_ENDED, rec, data={"stop_reason": reason, "is_error": False}))
        return out

    def on_finish(self) -> list[Event]:
        if self.in_step:
            self.find(ERROR_SEV, "opencode-missing-step-finish", "step_start without step_finish", seq=self.last_seq)
        return super().on_finish()


_OPENCODE_TYPES = frozenset(("step_start", "step_finish", "text", "tool_use", "reasoning", "error"))


def _envelope(obj: dict[str, Any]) -> bool:
    """opencode's event envelope: every event carries its `sessionID` and a `timestamp` in ms."""
    ts = obj.get("timestamp")
    return isinstance(obj.get("sessionID"), str) and isinstance(ts, (int, float)) and not isinstance(ts, bool)


def sniff(open_record: dict[str, Any] | None, msgs: list[dict[str, Any]]) -> str | None:
    """opencode: an event of its types that carries a `part` object (Codebuff's print-mode events
    share type names such as `text` and `error` but have no part), or its `error` event: no part but
    an `error` object in opencode's envelope (`sessionID`, `timestamp`) — what a run whose LLM call
    failed prints as its only line; else argv running opencode."""
    for obj in json_objects(msgs):
        t = obj.get("type")
        if isinstance(t, str) and t in _OPENCODE_TYPES and isinstance(obj.get("part"), dict):
            return f"opencode event {t!r} with a part"
        if t == "error" and isinstance(obj.get("error"), dict) and _envelope(obj):
            return "opencode error event (an error object with sessionID and timestamp)"
    return by_argv(open_record, msgs, ("opencode", "opencode-ai"), "opencode")
# --- drift (rule `drift`): the events and parts this dialect knows (opencode 1.18.33 text and tool runs).
def _known() -> Any:
    from wirecap.dialects.drift import OPEN, Known, Union

    ids = {"id": None, "type": None, "messageID": None, "sessionID": None}
    text = {**ids, "text": None, "time": None, "synthetic": None, "metadata": OPEN}
    part = Union("type", {
        "step-start": {**ids, "snapshot": None},
        "text": text,
        "reasoning": text,
        "tool": {**ids, "callID": None, "tool": None, "metadata": OPEN,
                 "state": {"status": None, "input": OPEN, "output": OPEN, "metadata": OPEN, "time": None, "title": None,
                           "error": OPEN, "raw": OPEN, "attachments": OPEN}},
        "step-finish": {**ids, "snapshot": None, "reason": None, "cost": None,
                        "tokens": {"input": None, "output": None, "reasoning": None, "total": None,
                                   "cache": {"read": None, "write": None}}},
    }, label=False)
    event = {"type": None, "timestamp": None, "sessionID": None, "part": part}
    events = Union("type", {
        **dict.fromkeys(("step_start", "text", "reasoning", "tool_use", "step_finish"), event),
        "error": {"type": None, "timestamp": None, "sessionID": None, "error": {"name": None, "data": OPEN, "message": None}},
    })
    return Known(s2c=events)


DIALECT = Dialect(
    name="opencode",
    transport="pipe",
    decoder=OpencodeDecoder,
    known=_known(),
    summary="opencode run --format json events (JSONL on stdout)",
    volatile=("timestamp", "sessionID", "part.id", "part.messageID", "part.sessionID", "part.time", "part.callID",
              "part.state.time"),
    rules=(
        ("opencode-missing-step-finish", ERROR_SEV, "a step_start without its step_finish"),
        ("opencode-error", ERROR_SEV, "an error event"),
        ("invalid-json", ERROR_SEV, "a line that is not JSON"),
    ),
    sniff=sniff,
    priority=60,
)
