"""The one fold of universal events into items: what a run said and did, one item per thing.

A decoder emits events (`wirecap.events`); people and comparisons think in *items*: a message (its
streamed deltas joined), a piece of reasoning, a tool call with its input and its result, a status
line, a usage snapshot, an error, a session or turn boundary. Every consumer that needs items (diff,
report, stats) gets them from here, so they all agree on what one item is. Pure and incremental:
no I/O, memory holds only the items still open.

Contract (what a caller may rely on):

- **Items.** `item.*` events (started / delta / completed) of one `(unit, id, item kind)` fold into
  one item. Every other event is an item of its own, complete at once, of kind `session`, `turn`,
  `usage`, `error`, `turn_end`, `session_end` or `unparsed` (`EVENT_ITEM`); item events without an
  `item` field are of kind `item`.
- **Streamed = completed.** A completion whose id is spelled differently from the streamed part it
  finishes (`msg_1:0` streamed, `msg_1` completed), or that has no id, finishes the earliest
  unfinished item of that kind in its unit whose id is None or starts with `<id>:`; so a streamed
  run and a non-streamed run of the same conversation give the same items. A completion with no
  open item to finish is a whole item by itself (a tool call is kept open: its result may follow).
- **Data.** `data` is the item's fields merged: started and completed events update it (later wins),
  a delta adds only the keys it does not have yet. A delta's piece (its `text`, else `arguments`,
  else `delta`; a non-string piece as JSON) goes to `pieces`, in order. `text` is the completed
  text when there is one, else the pieces joined; a tool call's `input` is its `input` field, else
  the pieces joined and parsed as JSON (the joined string when it is not JSON).
- **Tool results.** A `tool_result` whose `call_id` names a tool call of the same unit that is still
  waiting for its result (seen, not yet handed out) is joined to it: `call.result` is the result
  (a `FoldedItem` of kind `tool_result`), and the result is not an item of its own. A result that
  names no waiting call (none, unknown, or already answered) is an item of its own.
  A call is keyed by `data.call_id`, else its event id.
- **When an item is handed out.** `Folder` calls its sink once per item, when nothing can change it
  any more: a whole item at once, a streamed item at its completion, a tool call when it and its
  result are both complete; at `finish()` whatever is still open, in start order. So the sink sees
  items in the order they *finish*, not the order they started: `order` (global) and `pos` (in the
  unit) restore the start order, which is the order a listing should show.
- **Where and when.** `seq` holds the seqs of every event folded in, in arrival order (a tool call's
  include its joined result's); `t` is the first event's time, `t_last` the last's; `ch` the
  first event's channel, `unit` the channel unit (`channel_unit`: a process and its pipes are one
  unit, `stdout-2` -> `proc-2`; a caller may pass its own `unit_of`). A joined result keeps its own
  `seq`, `t`, `t_last`, `ch` and `order` (pos and index -1), so a consumer that lists results apart
  from their calls can put each where it started.
- **Numbering.** `index` is the item's ordinal among its unit's items of the same kind, `pos` among
  all its unit's items, `order` among all items of the fold (joined results included), each in
  start order from 0.
- **Units.** `Folder.units` maps a unit key to its `FoldedUnit`, in the order units were first
  seen: the first non-empty dialect seen on it, the times of its first and last events (of any
  kind), its channels (first-seen order) and how many items (of each kind) started in it.
- An item is never changed after it reaches the sink; consumers must not change it either (nor its
  `data`, which may be the event's own dict). It is not a frozen dataclass only because that costs
  2 us an item (a slotted one 0.3 us): a few percent of a 100k-message diff.
- Usage and content decoded from one record have no order between them but their content order:
  `usage_first` puts usage first in each run of items that share their first seq, so streamed and
  non-streamed runs line up (diff applies it; a listing may).

Usage per message: a `usage` item's `data` has the `message_id` of the message it counts (when the
dialect knows it), `scope` "message" or "session", and the token counts (`wirecap.events.Event`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from wirecap.dialects.base import hkey
from wirecap.events import (
    ERROR,
    ITEM_COMPLETED,
    ITEM_DELTA,
    ITEM_STARTED,
    SESSION_ENDED,
    SESSION_STARTED,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_ENDED,
    TURN_STARTED,
    UNPARSED,
    USAGE,
    Event,
)

__all__ = ["EVENT_ITEM", "FoldedItem", "FoldedUnit", "Folder", "channel_unit", "fold", "usage_first"]

# Event kind -> item kind of the whole item it makes (item.* events use their own `item` field).
EVENT_ITEM = {
    SESSION_STARTED: "session",
    TURN_STARTED: "turn",
    USAGE: "usage",
    ERROR: "error",
    TURN_ENDED: "turn_end",
    SESSION_ENDED: "session_end",
    UNPARSED: "unparsed",
}
_ITEM_EVENTS = frozenset((ITEM_STARTED, ITEM_DELTA, ITEM_COMPLETED))
_PIECE_KEYS = ("text", "arguments", "delta")
_PIPES = ("proc", "stdout", "stderr", "stdin")


def channel_unit(ch: str) -> str:
    """The unit a channel belongs to: a process and its pipes form one (`stdout-2` -> `proc-2`)."""
    head, _, n = ch.partition("-")
    if head in _PIPES and (not n or n.isdigit()):
        return "proc" + (f"-{n}" if n else "")
    return ch


@dataclass(slots=True)
class FoldedItem:
    """One item (see the module doc for every field's rule). Read-only by contract."""

    kind: str  # message | reasoning | tool_call | tool_result | status | item, or an EVENT_ITEM kind
    unit: str
    ch: str
    dialect: str
    pos: int  # start ordinal in its unit (-1: a result joined to its call)
    index: int  # start ordinal among its unit's items of this kind (-1: a joined result)
    order: int  # start ordinal among all items of the fold
    role: str | None
    id: str | None
    data: dict[str, Any]
    pieces: tuple[str, ...]
    result: FoldedItem | None  # a tool call's joined result
    seq: tuple[int, ...]
    t: float
    t_last: float
    complete: bool  # a completion was seen (always True for a whole item)

    @property
    def text(self) -> str:
        """The completed text, else the streamed pieces joined."""
        text = self.data.get("text")
        return text if isinstance(text, str) else "".join(self.pieces)

    @property
    def name(self) -> Any:
        """A tool call's (or result's) tool name, as the dialect gave it."""
        return self.data.get("name")

    @property
    def call_id(self) -> Any:
        """The call a tool call or result belongs to."""
        cid = self.data.get("call_id")
        return cid if cid is not None or self.kind != TOOL_CALL else self.id

    @property
    def has_input(self) -> bool:
        return "input" in self.data or bool(self.pieces)

    @property
    def input(self) -> Any:
        """A tool call's input: its `input` field, else the streamed arguments parsed (as JSON, else the
        joined string); None when neither is there."""
        if "input" in self.data:
            return self.data["input"]
        if not self.pieces:
            return None
        joined = "".join(self.pieces)
        try:
            return orjson.loads(joined)
        except orjson.JSONDecodeError:
            return joined

    @property
    def output(self) -> Any:
        return self.data.get("output")

    @property
    def is_error(self) -> bool:
        return bool(self.data.get("is_error"))


@dataclass(slots=True)
class FoldedUnit:
    """A channel unit as the fold saw it (so far, while events are fed)."""

    key: str
    dialect: str | None  # the first non-empty dialect of its events
    t_first: float  # time of its first event (of any kind)
    t_last: float  # time of its last event
    started: int = 0  # items started in it (the next item's `pos`)
    kinds: dict[str, int] = field(default_factory=dict)  # item kind -> items of that kind started
    channels: list[str] = field(default_factory=list)  # the channels of its events, in first-seen order


class _Open:
    """An item still being folded (streamed pieces, or a tool call waiting for its result)."""

    __slots__ = ("kind", "unit", "first", "pos", "index", "order", "role", "data", "pieces", "result", "seq",
                 "t_last", "done", "call_key")

    def __init__(self, kind: str, unit: str, ev: Event, pos: int, index: int, order: int) -> None:
        self.kind = kind
        self.unit = unit
        self.first = ev  # (its channel, dialect, id and time are the item's)
        self.pos = pos
        self.index = index
        self.order = order
        self.role = ev.role
        self.data: dict[str, Any] = {}
        self.pieces: list[str] = []
        self.result: _Open | FoldedItem | None = None  # (a FoldedItem when it came whole)
        self.seq = ev.seq
        self.t_last = ev.t
        self.done = False
        self.call_key: tuple[str, Any] | None = None

    def apply(self, ev: Event) -> None:
        """Fold one more event of this item in (its seq and time are the caller's)."""
        if ev.role and not self.role:
            self.role = ev.role
        data = ev.data
        if ev.kind == ITEM_DELTA:
            piece = data.get("text")
            if piece is None:
                piece = data.get("arguments", data.get("delta", ""))
            self.pieces.append(piece if isinstance(piece, str) else orjson.dumps(piece).decode())
            for k, v in data.items():
                if k not in _PIECE_KEYS:
                    self.data.setdefault(k, v)
            return
        self.data.update(data)
        if ev.kind == ITEM_COMPLETED:
            self.done = True

    def freeze(self) -> FoldedItem:
        r = self.result
        result = r.freeze() if isinstance(r, _Open) else r
        first = self.first
        return FoldedItem(self.kind, self.unit, first.ch, first.dialect, self.pos, self.index, self.order, self.role,
                          first.id, self.data, tuple(self.pieces), result, self.seq, first.t, self.t_last, self.done)


def _final(r: _Open | FoldedItem) -> bool:
    """Whether a joined result is complete."""
    return r.done if isinstance(r, _Open) else r.complete


class Folder:
    """The incremental fold: `feed` events in stream order, then `finish`. Each item goes to `sink`
    once, when final (module doc). `unit_of` maps a channel to its unit (default `channel_unit`)."""

    def __init__(self, sink: Callable[[FoldedItem], None], *,
                 unit_of: Callable[[str], str] = channel_unit) -> None:
        self.sink = sink
        self.unit_of = unit_of
        self.units: dict[str, FoldedUnit] = {}
        self._by_ch: dict[str, FoldedUnit] = {}
        self._order = 0
        self._open: dict[tuple[Any, ...], _Open] = {}  # unfinished items by (unit, id, kind)
        self._calls: dict[tuple[str, Any], _Open] = {}  # tool calls waiting for their result
        self._pending: dict[int, _Open] = {}  # every item not handed out yet, by order

    # --- units and numbering ---
    def _unit(self, ev: Event) -> FoldedUnit:
        u = self._by_ch.get(ev.ch)
        if u is None:
            key = self.unit_of(ev.ch)
            u = self.units.get(key)
            if u is None:
                u = self.units[key] = FoldedUnit(key, ev.dialect or None, ev.t, ev.t)
            self._by_ch[ev.ch] = u
            u.channels.append(ev.ch)
        if u.dialect is None and ev.dialect:
            u.dialect = ev.dialect
        u.t_last = ev.t
        return u

    def _open_item(self, u: FoldedUnit, kind: str, ev: Event) -> _Open:
        """A new item that stays open (numbered now: its place is where it started)."""
        pos = u.started
        u.started = pos + 1
        index = u.kinds.get(kind, 0)
        u.kinds[kind] = index + 1
        order = self._order
        self._order = order + 1
        o = self._pending[order] = _Open(kind, u.key, ev, pos, index, order)
        return o

    # --- feeding ---
    def feed(self, ev: Event) -> None:
        u = self._by_ch.get(ev.ch)
        if u is not None and u.dialect is not None:
            u.t_last = ev.t  # (the rest of `_unit` has nothing to do for a known, settled unit)
        else:
            u = self._unit(ev)
        if ev.kind in _ITEM_EVENTS:
            whole = self._feed_item(u, ev)
            if whole is None:
                return
            kind = whole
        else:
            kind = EVENT_ITEM.get(ev.kind, ev.kind)
        # a whole item, complete in one event: numbered and handed out at once (the hot path, inlined)
        pos = u.started
        u.started = pos + 1
        kinds = u.kinds
        index = kinds.get(kind, 0)
        kinds[kind] = index + 1
        order = self._order
        self._order = order + 1
        self.sink(FoldedItem(kind, u.key, ev.ch, ev.dialect, pos, index, order, ev.role, ev.id, ev.data, (), None,
                             ev.seq, ev.t, ev.t, True))

    def _feed_item(self, u: FoldedUnit, ev: Event) -> str | None:
        """Fold an item event in; its item kind when it is a whole item for `feed` to hand out, else None."""
        kind = ev.item or "item"
        unit = u.key
        if kind == TOOL_RESULT and self._calls and self._join_result(unit, ev):
            return None
        okey = (unit, ev.id, kind)
        o = self._open.get(okey)
        if o is None and ev.kind == ITEM_COMPLETED:
            o = self._streamed_part(unit, ev.id, kind) if self._open else None
            if o is None:  # the usual case: an item complete in one event
                if kind != TOOL_CALL:
                    return kind
                self._whole_call(u, ev)
                return None
        if o is None:
            o = self._open[okey] = self._open_item(u, kind, ev)
        else:
            o.seq = o.seq + ev.seq
            o.t_last = ev.t
        o.apply(ev)
        if o.done:
            own = (unit, o.first.id, kind)
            if self._open.get(own) is o:
                del self._open[own]  # only unfinished items stay open (keeps lookups cheap)
        if kind == TOOL_CALL:
            self._call(unit, o, ev)
        elif o.done:
            self._send(o)
        return None

    def _whole_call(self, u: FoldedUnit, ev: Event) -> None:
        """A tool call complete in one event: kept (not open) until its result comes."""
        o = self._open_item(u, TOOL_CALL, ev)
        o.data.update(ev.data)
        o.done = True
        self._call(u.key, o, ev)

    def _call(self, unit: str, o: _Open, ev: Event) -> None:
        """A tool call's event: (re)register it as waiting for its result; hand it out when both are done."""
        call_id = hkey(o.data.get("call_id") or ev.id)
        if call_id is not None:
            o.call_key = (unit, call_id)
            self._calls[o.call_key] = o
        if o.done and o.result is not None and _final(o.result):
            self._send(o)

    def _join_result(self, unit: str, ev: Event) -> bool:
        """Fold a tool result into the call it answers, if one is waiting for it (module doc)."""
        call_id = hkey(ev.data.get("call_id"))
        call = self._calls.get((unit, call_id)) if call_id is not None else None
        if call is None:
            return False
        r = call.result
        order = self._order
        if r is None and ev.kind == ITEM_COMPLETED:  # (the usual case: a result in one event, final at once)
            self._order = order + 1
            r = call.result = FoldedItem(TOOL_RESULT, unit, ev.ch, ev.dialect, -1, -1, order, ev.role, ev.id, ev.data,
                                         (), None, ev.seq, ev.t, ev.t, True)
        elif r is None:
            self._order = order + 1
            r = call.result = _Open(TOOL_RESULT, unit, ev, -1, -1, order)
            r.apply(ev)
        elif isinstance(r, _Open) and not r.done:
            r.seq = r.seq + ev.seq
            r.t_last = ev.t
            r.apply(ev)
        else:
            return False  # (answered already: this result is an item of its own)
        call.seq = call.seq + ev.seq
        call.t_last = ev.t
        if call.done and _final(r):
            self._send(call)
        return True

    def _streamed_part(self, unit: str, item_id: str | None, kind: str) -> _Open | None:
        """The open streamed item a completion finishes although its id is spelled differently
        (`msg_1:0` streamed, `msg_1` completed): the earliest unfinished one of that kind and id prefix."""
        for (ukey, oid, okind), o in self._open.items():
            if ukey != unit or okind != kind or o.done:
                continue
            if item_id is None or oid is None or (isinstance(oid, str) and oid.startswith(f"{item_id}:")):
                return o
        return None

    def _send(self, o: _Open) -> None:
        """Hand a final item out (once)."""
        if self._pending.pop(o.order, None) is None:
            return  # (handed out already)
        if o.call_key is not None and self._calls.get(o.call_key) is o:
            del self._calls[o.call_key]  # a later result with this id is an item of its own either way
        self.sink(o.freeze())

    def finish(self) -> dict[str, FoldedUnit]:
        """Hand out every item still open (unfinished streams, calls without a complete result) in
        start order; returns the units. The folder is empty afterwards."""
        for o in list(self._pending.values()):
            self._send(o)
        self._open.clear()
        self._calls.clear()
        return self.units


def fold(events: Iterable[Event], *, unit_of: Callable[[str], str] = channel_unit) -> list[FoldedItem]:
    """All items of `events`, in start order (`order`), joined results inside their calls."""
    items: list[FoldedItem] = []
    folder = Folder(items.append, unit_of=unit_of)
    for ev in events:
        folder.feed(ev)
    folder.finish()
    items.sort(key=_by_order)
    return items


def _by_order(item: FoldedItem) -> int:
    return item.order


class _Sequenced(Protocol):
    @property
    def kind(self) -> str: ...

    @property
    def seq(self) -> tuple[int, ...]: ...


_NO_KEY = object()  # (joins no run: items without a seq are runs of their own)


def usage_first[S: _Sequenced](items: Sequence[S]) -> list[S]:
    """Items decoded from one record have no order among them except their content order; usage
    (a snapshot riding on the record) goes first, so streamed and non-streamed runs line up.
    (A stable partition of each run of items sharing their first seq, in one pass.)"""
    out: list[S] = []
    key: object = _NO_KEY
    at = 0  # where the run's next usage item goes
    for it in items:
        seq = it.seq
        if not seq or seq[0] != key:  # a new run
            key = seq[0] if seq else _NO_KEY
            at = len(out)
        if it.kind == "usage":
            out.insert(at, it)
            at += 1
        else:
            out.append(it)
    return out
