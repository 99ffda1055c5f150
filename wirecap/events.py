"""The universal event model: what every dialect decoder produces and every analysis consumes.

Follows sandbox-agent's universal schema and ACP: a session holds turns, a turn holds items
(message, reasoning, tool_call, tool_result, status) that start, stream deltas and complete.
Every event keeps the `seq` of the record(s) it came from so a report or a diff can point at the wire.
Anything a decoder does not understand becomes `unparsed`, never silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Event kinds (the `kind` field).
SESSION_STARTED = "session.started"
TURN_STARTED = "turn.started"
ITEM_STARTED = "item.started"
ITEM_DELTA = "item.delta"
ITEM_COMPLETED = "item.completed"
USAGE = "usage"
ERROR = "error"
TURN_ENDED = "turn.ended"
SESSION_ENDED = "session.ended"
UNPARSED = "unparsed"

EVENT_KINDS = (
    SESSION_STARTED,
    TURN_STARTED,
    ITEM_STARTED,
    ITEM_DELTA,
    ITEM_COMPLETED,
    USAGE,
    ERROR,
    TURN_ENDED,
    SESSION_ENDED,
    UNPARSED,
)

# Item kinds (the `item` field of item.* events).
MESSAGE = "message"
REASONING = "reasoning"
TOOL_CALL = "tool_call"
TOOL_RESULT = "tool_result"
STATUS = "status"

ITEM_KINDS = (MESSAGE, REASONING, TOOL_CALL, TOOL_RESULT, STATUS)


@dataclass(slots=True)
class Event:
    """One universal event.

    `data` holds the kind-specific fields; the conventions (documented in docs/events.md) are:
    - session.started: session_id, model, cwd, tools, version
    - turn.started: prompt (text, when known)
    - item.*: message/reasoning -> text (delta: text piece); tool_call -> name, input (parsed JSON),
      call_id (delta: arguments piece); tool_result -> call_id, output, is_error; status -> text
    - usage: model, message_id, input_tokens, output_tokens, cache_read_tokens,
      cache_creation_tokens, cost_usd, scope ("message" or "session")
    - error: message, code, fatal
    - turn.ended: stop_reason, is_error, result
    - session.ended: is_error, exit_code, duration_ms, cost_usd
    - unparsed: reason, raw (the record's payload)
    """

    kind: str
    ch: str
    seq: tuple[int, ...]
    t: float
    dialect: str
    item: str | None = None
    id: str | None = None
    role: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "ch": self.ch, "seq": list(self.seq), "t": self.t}
        if self.item is not None:
            out["item"] = self.item
        if self.id is not None:
            out["id"] = self.id
        if self.role is not None:
            out["role"] = self.role
        out["dialect"] = self.dialect
        if self.data:
            out["data"] = self.data
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Event:
        """The event of a `to_json` object (a line of `wirecap convert`); ValueError naming the field when
        one has the wrong JSON type (an edited or damaged file), so no consumer meets it."""
        for name, classes in _FIELD_CLASSES.items():
            value = obj.get(name)
            if value is not None and value.__class__ not in classes:
                raise ValueError(f"field {name!r} is {type(value).__name__}, expected {classes[0].__name__}")
        if not all(s.__class__ is int for s in obj.get("seq") or ()):
            raise ValueError("field 'seq' must be a list of integers")
        if obj.get("kind").__class__ is not str:
            raise ValueError("field 'kind' is missing")
        return cls(
            kind=obj["kind"],
            ch=obj.get("ch") or "",
            seq=tuple(obj.get("seq") or ()),
            t=float(obj.get("t") or 0.0),
            dialect=obj.get("dialect") or "",
            item=obj.get("item"),
            id=obj.get("id"),
            role=obj.get("role"),
            data=obj.get("data") or {},
        )


_FIELD_CLASSES: dict[str, tuple[type, ...]] = {
    "kind": (str,), "ch": (str,), "seq": (list,), "t": (float, int), "dialect": (str,), "item": (str,),
    "id": (str, int), "role": (str,), "data": (dict,),
}
