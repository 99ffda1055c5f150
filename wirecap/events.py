"""The universal event model: what every dialect decoder produces and every analysis consumes.

Follows sandbox-agent's universal schema and ACP: a session holds turns, a turn holds items
(message, reasoning, tool_call, tool_result, status) that start, stream deltas and complete.
Every event keeps the `seq` of the record(s) it came from so a report or a diff can point at the wire.
Anything a decoder does not understand becomes `unparsed`, never silently dropped.

This module is the one home of the model: the kinds (`EventKind`, `ItemKind`), the `data` each kind
carries (the `*Data` TypedDicts, `DATA_OF`), the one serializer (`to_json`, `dumps`) and the event fields
that change from run to run whatever the dialect (`VOLATILE_PATHS`). docs/events.md documents the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, TypedDict

import orjson

from wirecap.capture.payload import dumps_nested


class EventKind(StrEnum):
    """What an event says (its `kind` field). A `StrEnum`: each member is equal to, hashes like, formats
    as and serializes as its string, so `ev.kind == EventKind.USAGE`, `EventKind(ev.kind)` and
    `ev.kind in EventKind` all work on the plain strings events carry (see the constants below)."""

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


class ItemKind(StrEnum):
    """What an item is (the `item` field of `item.*` events); a `StrEnum` like `EventKind`."""

    MESSAGE = "message"
    REASONING = "reasoning"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    STATUS = "status"


# The values events carry: exact `str`s, each equal to its enum member (`EventKind.USAGE.value`), not the
# members themselves, on purpose. Events and the items folded from them cross `marshal` (the diff builds one
# side in a forked child: `wirecap.analysis.sides`), which refuses any str subclass, and dict and set
# lookups on exact strings are the fast path of every decoder and fold (a StrEnum key measured twice
# as slow). Comparisons with the members work either way.
SESSION_STARTED: Final = EventKind.SESSION_STARTED.value
TURN_STARTED: Final = EventKind.TURN_STARTED.value
ITEM_STARTED: Final = EventKind.ITEM_STARTED.value
ITEM_DELTA: Final = EventKind.ITEM_DELTA.value
ITEM_COMPLETED: Final = EventKind.ITEM_COMPLETED.value
USAGE: Final = EventKind.USAGE.value
ERROR: Final = EventKind.ERROR.value
TURN_ENDED: Final = EventKind.TURN_ENDED.value
SESSION_ENDED: Final = EventKind.SESSION_ENDED.value
UNPARSED: Final = EventKind.UNPARSED.value

# Every event kind, in the model's order (a tuple: `x in EVENT_KINDS` is safe for any JSON value, even an
# unhashable one read from a damaged file).
EVENT_KINDS: Final[tuple[str, ...]] = tuple(k.value for k in EventKind)
ITEM_EVENT_KINDS: Final = frozenset((ITEM_STARTED, ITEM_DELTA, ITEM_COMPLETED))

MESSAGE: Final = ItemKind.MESSAGE.value
REASONING: Final = ItemKind.REASONING.value
TOOL_CALL: Final = ItemKind.TOOL_CALL.value
TOOL_RESULT: Final = ItemKind.TOOL_RESULT.value
STATUS: Final = ItemKind.STATUS.value

ITEM_KINDS: Final[tuple[str, ...]] = tuple(k.value for k in ItemKind)


# --- the data of each kind ---------------------------------------------------------------------------
# TypedDicts document the keys `Event.data` holds per kind (docs/events.md has the prose). total=False:
# a decoder sets what its wire carries, and may add dialect-specific keys (a consumer must tolerate both).
# They cost nothing at run time: `data` stays a plain dict.


class SessionStartedData(TypedDict, total=False):
    """session.started: who is talking, where."""

    session_id: str
    model: str
    cwd: str
    tools: list[Any]
    version: str
    permission_mode: str
    fingerprint_id: str
    stream: bool
    agent_id: str


class TurnStartedData(TypedDict, total=False):
    """turn.started: `prompt` is None when the wire does not carry it (e.g. `claude -p PROMPT`)."""

    prompt: Any  # text, or content blocks
    prompt_id: str
    model: str
    tools: list[Any]
    agent_id: str
    prewarm: bool  # a Responses `generate: false` request (Codex's first on a WebSocket)


class ItemStartedData(TypedDict, total=False):
    """item.started: an item begins (streamed APIs); a tool call names its tool and call."""

    name: str
    call_id: str
    input: Any
    parent_tool_use_id: str


class ItemDeltaData(TypedDict, total=False):
    """item.delta: one piece of an item: message / reasoning `text`; tool call `arguments` (a piece of
    its JSON text); `delta` for a piece of another shape."""

    text: str
    arguments: str
    delta: Any


class ItemCompletedData(TypedDict, total=False):
    """item.completed: the whole item, by item kind. message, reasoning: `text`; status: `text`, `subtype`,
    `stream` ("stderr" for a stderr line) and details; tool_call: `name`, `call_id`, `input` (parsed JSON,
    the text when it does not parse); tool_result: `call_id`, `output`, `is_error`. `synthetic: true`
    marks an item the client made up rather than received. `parent_tool_use_id`: a subagent's item names
    the tool call (Claude Code's Agent / Task tool) that started the subagent."""

    text: str
    subtype: str
    stream: str
    name: str
    call_id: str
    input: Any
    output: Any
    is_error: bool
    synthetic: bool
    agent_id: str
    parent_tool_use_id: str


class UsageData(TypedDict, total=False):
    """usage: tokens of one scope (`message`, `turn`, `thread`, `session`, `prompt`); input excludes the cache."""

    model: str
    message_id: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int
    reasoning_tokens: int
    cost_usd: float
    credits: float
    scope: str
    snapshot: bool
    resumed: bool
    parent_tool_use_id: str  # a subagent's message (Claude Code)


class ErrorData(TypedDict, total=False):
    """error: `failed_call` marks a failed LLM call attempt, `retry` one the client retries."""

    message: str
    code: Any
    fatal: bool
    status: int
    failed_call: bool
    message_id: str
    retry: bool
    transport: str  # "ws": a refused WebSocket upgrade (no LLM call)


class TurnEndedData(TypedDict, total=False):
    """turn.ended: `truncated` when an event stream ended without its terminal event."""

    stop_reason: str
    is_error: bool
    result: Any
    subtype: str
    prompt_id: str
    num_turns: int
    duration_ms: float
    cost_usd: float
    credits: float
    truncated: bool
    message_id: str


class SessionEndedData(TypedDict, total=False):
    """session.ended: how the process, HTTP exchange or WebSocket ended."""

    exit_code: int
    signal: str
    status: int
    code: int
    reason: str
    by: str
    is_error: bool
    duration_ms: float
    cost_usd: float
    credits: float
    result: Any


class UnparsedData(TypedDict, total=False):
    """unparsed: `reason` (one line: why), `raw` (the record's payload, or `{"b64": ...}`)."""

    reason: str
    raw: Any


DATA_OF: Final[dict[EventKind, type]] = {
    EventKind.SESSION_STARTED: SessionStartedData,
    EventKind.TURN_STARTED: TurnStartedData,
    EventKind.ITEM_STARTED: ItemStartedData,
    EventKind.ITEM_DELTA: ItemDeltaData,
    EventKind.ITEM_COMPLETED: ItemCompletedData,
    EventKind.USAGE: UsageData,
    EventKind.ERROR: ErrorData,
    EventKind.TURN_ENDED: TurnEndedData,
    EventKind.SESSION_ENDED: SessionEndedData,
    EventKind.UNPARSED: UnparsedData,
}
"""The TypedDict that documents each kind's `data` (for readers and tools; nothing checks it at run time)."""

# Event-level fields that change from run to run whatever the dialect: ids, durations, clocks (paths over
# items, docs/paths.md). A dialect's own volatile paths add to these.
VOLATILE_PATHS: Final[tuple[str, ...]] = (
    "*[*].session_id",
    "*[*].message_id",
    "*[*].call_id",
    "*[*].result.call_id",
    "*[*].parent_tool_use_id",
    "*[*].task_id",
    "*[*].request_id",
    "*[*].prompt_id",
    "*[*].fingerprint_id",
    "*[*].thread_id",
    "*[*].uuid",
    "*[*].duration_ms",
    "*[*].duration_api_ms",
    "*[*].ttft_ms",
    "*[*].ttft_stream_ms",
    "*[*].time_to_request_ms",
    "*[*].timestamp",
)


@dataclass(slots=True)
class Event:
    """One universal event.

    `kind` is an `EventKind` value, `item` (item.* events) an `ItemKind` value, both as plain strings;
    `data` holds the kind-specific fields (`DATA_OF[kind]`, docs/events.md). `seq` is never empty for a
    decoded event: the records it came from.
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
        """The event as a JSON object (`to_json(self)`)."""
        return to_json(self)

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


# --- the one serializer ------------------------------------------------------------------------------


def to_json(ev: Event) -> dict[str, Any]:
    """The event as a JSON object, in the key order that is the output format (`wirecap convert`):
    kind, ch, seq, t, then item, id, role when set, dialect, and data when not empty."""
    out: dict[str, Any] = {"kind": ev.kind, "ch": ev.ch, "seq": list(ev.seq), "t": ev.t}
    if ev.item is not None:
        out["item"] = ev.item
    if ev.id is not None:
        out["id"] = ev.id
    if ev.role is not None:
        out["role"] = ev.role
    out["dialect"] = ev.dialect
    if ev.data:
        out["data"] = ev.data
    return out


def dumps(ev: Event, _dumps: Any = orjson.dumps) -> bytes:
    """The event as one line of JSON (UTF-8, no newline): `to_json(ev)` serialized, a value JSON cannot
    hold written as its `str`, a payload nested deeper than orjson writes still written whole.
    Runs once per event of a `convert`: the usual item event is built in one step."""
    try:
        if ev.item is not None and ev.id is not None and ev.role is not None and ev.data:
            return _dumps({"kind": ev.kind, "ch": ev.ch, "seq": ev.seq, "t": ev.t, "item": ev.item, "id": ev.id,
                           "role": ev.role, "dialect": ev.dialect, "data": ev.data}, default=str)
        return _dumps(to_json(ev), default=str)
    except TypeError:  # nested deeper than orjson's limit (costs nothing until then)
        return dumps_nested(to_json(ev), default=str)
