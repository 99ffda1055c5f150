"""Codebuff CLI / SDK event stream (PrintModeEvent): `codebuff --json`, SDK `handleEvent`.

Tolerant by design: the fields vary between versions (0.3.x `start` has `agentId`, 0.10.x may not;
`finish.totalCost` is in credits, not dollars). Also reads the `{"kind": "event"|"chunk"|"result"}`
wrapper our lab drivers print (`handleEvent` / `handleStreamChunk` / the run's result), where a
chunk is either a text piece (string) or a structured event object.
"""

from __future__ import annotations

from typing import Any

from wirecap.dialects.base import ERROR_SEV, Dialect, by_argv, json_objects, str_or_none
from wirecap.dialects.stream import StreamDecoder
from wirecap.events import (
    ERROR,
    ITEM_COMPLETED,
    ITEM_DELTA,
    MESSAGE,
    REASONING,
    SESSION_STARTED,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_ENDED,
    TURN_STARTED,
    Event,
)


def print_mode_event(dec: Any, rec: dict[str, Any], obj: dict[str, Any], *, in_chunk: bool = False) -> list[Event] | None:
    """Map one PrintModeEvent object; None when its type is unknown. Shared with codebuff-ws chunks.

    `dec` is the decoder (for `ev`/`status` and turn state: `dec.in_turn`).
    """
    t = obj.get("type")
    agent = str_or_none(obj.get("agentId"))
    if t == "start":
        if in_chunk or dec.in_turn:
            return [dec.status(rec, "start", subtype="start", agent_id=agent)]
        dec.in_turn = True
        return [dec.ev(TURN_STARTED, rec, data={"prompt": None, "agent_id": agent,
                                                "message_history_length": obj.get("messageHistoryLength")})]
    if t == "text":
        return [dec.ev(ITEM_COMPLETED, rec, MESSAGE, None, "assistant", {"text": obj.get("text"), "agent_id": agent})]
    if t == "reasoning_delta":
        return [dec.ev(ITEM_DELTA, rec, REASONING, None, "assistant", {"text": obj.get("text", obj.get("delta"))})]
    if t == "tool_call":
        cid = str_or_none(obj.get("toolCallId"))
        return [dec.ev(ITEM_COMPLETED, rec, TOOL_CALL, cid, "assistant",
                       {"name": obj.get("toolName"), "input": obj.get("input", obj.get("args")), "call_id": cid})]
    if t == "tool_result":
        cid = str_or_none(obj.get("toolCallId"))
        return [dec.ev(ITEM_COMPLETED, rec, TOOL_RESULT, cid, "tool",
                       {"call_id": cid, "output": obj.get("output", obj.get("result")), "is_error": bool(obj.get("error")),
                        "name": obj.get("toolName")})]
    if t in ("subagent_start", "subagent_finish"):
        return [dec.status(rec, f"{t} {obj.get('agentType') or obj.get('displayName') or agent or ''}".strip(),
                           subtype=t, agent_id=agent, agent_type=obj.get("agentType"))]
    if t == "error":
        return [dec.ev(ERROR, rec, data={"message": obj.get("message"), "code": obj.get("code"), "fatal": False})]
    if t == "finish":
        if in_chunk:
            return [dec.status(rec, "finish", subtype="finish", agent_id=agent, credits=obj.get("totalCost"))]
        dec.in_turn = False
        return [dec.ev(TURN_ENDED, rec, data={"stop_reason": "finish", "is_error": False, "agent_id": agent,
                                              "credits": obj.get("totalCost")})]
    if t == "download":
        return [dec.status(rec, f"download {obj.get('status', '')}".strip(), subtype="download",
                           version=obj.get("version"))]
    return None


class CodebuffEventsDecoder(StreamDecoder):
    dialect = "codebuff-events"

    def __init__(self, unit: str, options: dict[str, Any] | None = None) -> None:
        super().__init__(unit, options)
        self.in_turn = False
        self.started = False
        self.errors = 0

    def msg_type(self, rec: dict[str, Any]) -> str:
        obj = rec.get("json")
        if isinstance(obj, dict) and "kind" in obj and "type" not in obj:
            inner = obj.get("event")
            if obj.get("kind") == "event" and isinstance(inner, dict):
                return str(inner.get("type"))
            return str(obj.get("kind"))
        return super().msg_type(rec)

    def on_object(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        out: list[Event] = []
        if not self.started:
            self.started = True
            out.append(self.ev(SESSION_STARTED, rec, data={"session_id": None, "model": None}))
        kind = obj.get("kind") if "type" not in obj else None
        if kind is None:
            out.extend(self._event(rec, obj))
        elif kind == "event":  # the SDK's wrapper of a PrintModeEvent
            inner = obj.get("event")
            out.extend(self._event(rec, inner) if isinstance(inner, dict)
                       else [self.unparsed(rec, "event wrapper without an event object")])
        elif kind == "chunk":
            out.extend(self._chunk(rec, obj.get("chunk")))
        elif kind == "result":
            out.extend(self._result(rec, obj))
        else:
            out.append(self.unparsed(rec, f"unknown wrapper kind {kind!r}"))
        return out

    def _chunk(self, rec: dict[str, Any], chunk: Any) -> list[Event]:
        """A streamed piece: text, or a PrintModeEvent object."""
        if isinstance(chunk, str):
            return [self.ev(ITEM_DELTA, rec, MESSAGE, None, "assistant", {"text": chunk})]
        if not isinstance(chunk, dict):
            return [self.unparsed(rec, "chunk is neither text nor an object")]
        mapped = print_mode_event(self, rec, chunk, in_chunk=True)
        return mapped if mapped is not None else [self.unparsed(rec, f"unknown chunk type {chunk.get('type')!r}")]

    def _result(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        """The SDK's run result: the session ends (its last assistant text as the result)."""
        output = obj.get("output")
        value = output.get("value") if isinstance(output, dict) else None
        if isinstance(value, list):  # message list: keep the last assistant text
            texts = [b.get("text") for m in value if isinstance(m, dict) and isinstance(m.get("content"), list)
                     for b in m["content"] if isinstance(b, dict) and b.get("type") == "text"]
            value = texts[-1] if texts else value
        is_error = isinstance(output, dict) and output.get("type") == "error"
        if isinstance(output, dict) and is_error:
            self.find(ERROR_SEV, "cbe-run-error", f"the run ended with an error: {output.get('message')}", rec)
        return self.end_session(rec, is_error=is_error, result=value, duration_ms=obj.get("ms"))

    def _event(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        mapped = print_mode_event(self, rec, obj)
        if mapped is None:
            return [self.unparsed(rec, f"unknown event type {obj.get('type')!r}")]
        if obj.get("type") == "error":
            self.find(ERROR_SEV, "cbe-error-event", f"error event: {obj.get('message')}"[:160], rec)
        return mapped

    def on_finish(self) -> list[Event]:
        if self.in_turn:
            self.find(ERROR_SEV, "cbe-missing-finish", "a start event without its finish event", seq=self.last_seq)
        return super().on_finish()


_EVENT_TYPES = frozenset(("start", "text", "tool_call", "tool_result", "subagent_start", "subagent_finish",
                          "reasoning_delta", "error", "finish", "download"))


def sniff(open_record: dict[str, Any] | None, msgs: list[dict[str, Any]]) -> str | None:
    """Codebuff print-mode events: the SDK's `{kind: event|chunk|result}` wrapper or a PrintModeEvent
    type among the first lines (asked after opencode, whose events share some type names), else
    argv running `codebuff` with output that is not text (1.0.x's terminal UI is text).

    Not evidence: an object in opencode's envelope (`part`, `sessionID`), and an `error` event
    without Codebuff's `agentId` — PrintModeError is `{type: "error", message}`, the same shape as
    Codex exec's error line, and opencode's error line is `{type: "error", error: {...}}`: a stream
    that is only such a line is not told apart from its content (argv still decides it)."""
    for obj in json_objects(msgs):
        kind = obj.get("kind")
        if kind in ("event", "chunk", "result") and "type" not in obj:
            return f"Codebuff SDK event wrapper kind {kind!r}"
        t = obj.get("type")
        if isinstance(t, str) and t in _EVENT_TYPES and "part" not in obj and "sessionID" not in obj:
            if t == "error" and not isinstance(obj.get("agentId"), str):
                continue
            return f"Codebuff print-mode event {t!r}"
    return by_argv(open_record, msgs, ("codebuff",), "Codebuff CLI")
# --- drift (rule `drift`): the print-mode events this dialect knows (Codebuff SDK 0.3.13 and 0.10.7 text and
# tool runs, CLI 1.0.115 chunks; the fields vary between versions, see the docstring).
def known_events() -> Any:
    """PrintModeEvent objects (also the structured chunks of codebuff-ws `response-chunk`)."""
    from wirecap.dialects.drift import OPEN, Union

    agent = {"type": None, "agentId": None, "parentAgentId": None}
    return Union("type", {
        "start": {**agent, "messageHistoryLength": None},
        "text": {**agent, "text": None},
        "reasoning_delta": {**agent, "text": None, "delta": None, "runId": None},
        "tool_call": {**agent, "toolCallId": None, "toolName": None, "input": OPEN, "args": OPEN, "includeToolCall": None},
        "tool_result": {**agent, "toolCallId": None, "toolName": None, "output": OPEN, "result": OPEN, "error": OPEN},
        "subagent_start": {**agent, "agentType": None, "displayName": None, "onlyChild": None, "prompt": OPEN,
                           "params": OPEN},
        "subagent_finish": {**agent, "agentType": None, "displayName": None, "onlyChild": None, "prompt": OPEN,
                            "params": OPEN},
        "error": {**agent, "message": None, "code": None},
        "finish": {**agent, "totalCost": None},
        "download": {"type": None, "status": None, "version": None},
    })


def _known() -> Any:
    from wirecap.dialects.drift import OPEN, Known, Union

    pme = known_events()
    return Known(s2c=Union("kind", {
        "event": {"kind": None, "event": pme},
        "chunk": {"kind": None, "chunk": pme},
        "result": {"kind": None, "ms": None, "sessionStateKeys": OPEN,
                   "output": {"type": None, "value": OPEN, "message": None, "statusCode": None}},  # (an error's)
    }, missing=pme))


DIALECT = Dialect(
    name="codebuff-events",
    transport="pipe",
    decoder=CodebuffEventsDecoder,
    known=_known(),
    summary="Codebuff CLI/SDK print-mode events (JSONL on stdout)",
    volatile=("ms", "sessionStateKeys", "**.sentAt", "**.toolCallId", "event.toolCallId"),
    rules=(
        ("cbe-missing-finish", ERROR_SEV, "a start event whose finish never came"),
        ("cbe-error-event", ERROR_SEV, "an error event"),
        ("cbe-run-error", ERROR_SEV, "the run's result is an error output"),
        ("invalid-json", ERROR_SEV, "a line that is not JSON"),
    ),
    sniff=sniff,
    priority=70,
)
