"""One thread per session, as the model saw it: the report's conversation.

For each LLM call of a capture (`transport.Call`: one request on the wire and what answered it) the
thread says what was sent (the system prompt, the tool definitions and the messages, with what is new
since the previous call of the same conversation first: the new user turn, the tool results going
back), what came back (text, thinking, tool calls, usage, stop reason, error) and when (sent, first
token, last token); between calls, the tool executions (a tool call issued -> its result). A run's
stdout and its HTTP channels are one conversation: a message seen on both is shown once, with the seqs
of both places. A subagent's calls (Claude Code's Task / Agent tool) name the call and tool call that
started them (`parent`: found by the subagent's first prompt, which is the tool call's `prompt`), and so
do the client's lines a subagent printed (`Aside.parent`: Claude Code's `parent_tool_use_id`), so that a
subagent nests under the call that started it over HTTP and on stdout alone.

Built in two steps, both pure:
- `ThreadSink`, a sink of the report's decode pass (`wirecap.analysis.pipeline`): each request body is
  read through its dialect's `request_view` the moment it passes and reduced at once to what the thread
  shows (capped texts; per conversation only a hash per message is kept, to tell what is new), and the
  calls are tracked from the events (`transport.CallTracker`). No request body is kept.
- `build_threads(sink, conversation)`: the calls paired with their requests and with the replies the
  conversation fold already made (`model.ConversationBuilder`'s entries), stdout and wire merged,
  tool executions timed.

Memory stays bounded: texts are cut at `MAX_PART_TEXT` characters (saying how many there were and
which record holds them all: `wirecap cat --seq N`), and past `MAX_DETAILED_CALLS` calls only their
times and tokens are kept.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Literal

import orjson

from wirecap.analysis.transport import NETWORK, Call, CallTracker
from wirecap.dialects import DIALECTS, Decoding, Unit
from wirecap.dialects import request_view as rv
from wirecap.events import ITEM_DELTA, Event

MAX_PART_TEXT = 4000  # characters of one message part kept (past it: cut, with the full size)
MAX_SYSTEM_TEXT = 24_000  # characters of one system prompt block kept
MAX_TOOL_TEXT = 1500  # characters of a tool definition's description and of its schema kept
MAX_NEW_MESSAGES = 60  # new messages of one call kept (the last ones: the newest matter most)
MAX_DETAILED_CALLS = 400  # calls whose contents are kept; past them, times and tokens only
MAX_LINEAGES = 64  # conversations remembered to tell what is new in a call
MAX_OUTSIDE = 400  # stdout entries outside any call kept
MAX_ASIDE_TEXT = 1000  # characters of one of them kept
MAX_THREAD_TEXT = 2_000_000  # characters of request text kept over the whole session; past it parts keep less
SHORT_PART_TEXT = 200  # ... that much
SHORT_NEW_MESSAGES = 10  # ... and a call keeps its last this many new messages
MAX_TOOL_RUNS = 2000
PENDING_PER_CHANNEL = 8  # requests held while their channel's dialect is not decided yet
SUBAGENT_TOOLS = frozenset(("Task", "Agent"))


# --- the model -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class Part:
    """One piece of a message as the model saw it (kinds: text, thinking, tool_call, tool_result, image,
    other; in a reply also error). `size`: its full length in characters (> len(text) when cut);
    `seqs`: the records that carry it (the request, the response's events, the stdout line)."""

    kind: str
    text: str
    size: int = 0
    name: str | None = None
    call_id: str | None = None
    is_error: bool = False
    seqs: tuple[int, ...] = ()
    at: tuple[int, ...] = ()  # the first record of each place it was seen (the request or response, stdout)

    @property
    def cut(self) -> int:
        """Characters left out of `text`."""
        return max(0, self.size - len(self.text))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "text": self.text}
        if self.cut:
            out["size"] = self.size
        for k in ("name", "call_id"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        if self.is_error:
            out["is_error"] = True
        out["seqs"] = list(self.seqs)
        out["at"] = list(self.at)
        return out


@dataclass(slots=True)
class Message:
    role: str
    parts: list[Part] = field(default_factory=list)
    echo_of: int | None = None  # an assistant message that repeats that call's reply (sent back as history)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "parts": [p.to_json() for p in self.parts]}
        if self.echo_of is not None:
            out["echo_of"] = self.echo_of
        return out


@dataclass(slots=True)
class ToolDefShown:
    name: str
    description: str = ""
    schema: str = ""
    size: int = 0  # characters of description + schema in full

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "schema": self.schema, "size": self.size}


@dataclass(slots=True)
class ToolRun:
    """A tool execution between calls: issued by call `issued_by` (its reply's tool call), ended when
    its result was seen (the client's stdout line, the reply's own tool result, or at the latest the next
    request carrying it: `returned_in`)."""

    call_id: str | None
    name: str | None
    t_start: float
    t_end: float | None = None
    is_error: bool = False
    issued_by: int | None = None
    returned_in: int | None = None
    seqs: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"call_id": self.call_id, "name": self.name, "t_start": self.t_start, "t_end": self.t_end,
                "is_error": self.is_error, "issued_by": self.issued_by, "returned_in": self.returned_in,
                "seqs": list(self.seqs)}


@dataclass
class ThreadCall:
    """One LLM call: when, what it cost, what was sent, what came back."""

    n: int  # 1-based, over the session in the order the requests were sent
    ch: str
    transport: str  # http | ws
    dialect: str
    seq: int  # the request's record
    t_sent: float
    t_first_token: float | None = None
    t_last: float | None = None
    model: str | None = None
    input_tokens: int | float | None = None  # not read from a cache
    cache_read_tokens: int | float | None = None
    cache_write_tokens: int | float | None = None
    output_tokens: int | float | None = None
    cost_usd: int | float | None = None
    outcome: str = "open"  # completed | failed | cut | open
    error: str | None = None
    stop_reason: str | None = None
    prewarm: bool = False
    retry: bool = False  # the same request again after a call that failed
    retry_of: int | None = None
    lineage: int = 0  # which conversation of the session (the main one, a subagent's, a side call's)
    parent: tuple[int, str] | None = None  # (call n, tool call id) that started this subagent
    detailed: bool = True  # False past MAX_DETAILED_CALLS: no contents kept
    system: list[Part] | None = None  # None with system_same_as: as in that call
    system_same_as: int | None = None
    tools: list[ToolDefShown] | None = None
    tools_count: int | None = None  # None: the request carried no tool definitions
    tools_same_as: int | None = None
    messages_total: int = 0
    earlier: int = 0  # messages already sent by an earlier call of the same conversation
    new: list[Message] = field(default_factory=list)  # the messages new since that call
    new_omitted: int = 0  # new messages not kept (MAX_NEW_MESSAGES)
    reply: list[Part] = field(default_factory=list)
    response_id: str | None = None
    tracked: bool = False  # its times and usage come from the events of its own turn (else from its reply)
    side: bool = False  # outside the session's main conversation, and no subagent (a title, a summary...)

    @property
    def ttft(self) -> float | None:
        return None if self.t_first_token is None else max(0.0, self.t_first_token - self.t_sent)

    @property
    def duration(self) -> float | None:
        return None if self.t_last is None else max(0.0, self.t_last - self.t_sent)

    def to_json(self) -> dict[str, Any]:
        return {
            "call": self.n, "ch": self.ch, "transport": self.transport, "dialect": self.dialect, "seq": self.seq,
            "t_sent": self.t_sent, "t_first_token": self.t_first_token, "t_last": self.t_last, "model": self.model,
            "input_tokens": self.input_tokens, "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens, "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd, "outcome": self.outcome, "error": self.error, "stop_reason": self.stop_reason,
            "prewarm": self.prewarm, "retry": self.retry, "retry_of": self.retry_of, "lineage": self.lineage,
            "parent": None if self.parent is None else {"call": self.parent[0], "tool_call_id": self.parent[1]},
            "detailed": self.detailed, "response_id": self.response_id, "side": self.side,
            "system": None if self.system is None else [p.to_json() for p in self.system],
            "system_same_as": self.system_same_as,
            "tools": None if self.tools is None else [t.to_json() for t in self.tools],
            "tools_count": self.tools_count, "tools_same_as": self.tools_same_as,
            "messages_total": self.messages_total, "earlier": self.earlier,
            "new": [m.to_json() for m in self.new], "new_omitted": self.new_omitted,
            "reply": [p.to_json() for p in self.reply],
        }


@dataclass(slots=True)
class Aside:
    """A step of the session outside any call (what only the client's stdout says: the session's start,
    a tool's result when no call carried it, the final result), at its time."""

    kind: str
    t: float
    text: str
    seq: int | None
    is_error: bool = False
    size: int = 0  # characters in full
    name: str | None = None  # a tool call's or result's tool
    call_id: str | None = None  # a tool call's or result's call
    parent: str | None = None  # a subagent's line: the tool call that started the subagent

    def to_json(self) -> dict[str, Any]:
        out = {"kind": self.kind, "t": self.t, "text": self.text, "seq": self.seq, "is_error": self.is_error,
               "size": self.size, "name": self.name}
        if self.parent is not None:  # (the conversation's entries give every tool call's id)
            out["parent"] = self.parent
        return out

    def as_part(self) -> Part | None:
        """A message of the client's own output as a part (None for a status line, a session's start...)."""
        kind = _PART_OF_ENTRY.get(self.kind) if self.kind != "user" else rv.TEXT
        if kind is None:
            return None
        at = (self.seq,) if self.seq is not None else ()
        return Part(kind, self.text, self.size, self.name, self.call_id, self.is_error, at, at)


@dataclass
class Thread:
    """One session as the model saw it: its calls in the order sent, the tool executions between them,
    and what only the client said (`asides`)."""

    key: str
    calls: list[ThreadCall] = field(default_factory=list)
    tool_runs: list[ToolRun] = field(default_factory=list)
    asides: list[Aside] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def main_lineage(self) -> int | None:
        """The session's main conversation: the one with the most calls (the latest one of a tie); a
        call of another one that no subagent tool started is a side call (a title, a summary...)."""
        counts: dict[int, int] = {}
        for c in self.calls:
            if c.parent is None:  # (a subagent's conversation is never the main one)
                counts[c.lineage] = counts.get(c.lineage, 0) + 1
        return max(counts, key=lambda k: (counts[k], k)) if counts else None

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "main_lineage": self.main_lineage, "calls": [c.to_json() for c in self.calls],
                "tool_runs": [r.to_json() for r in self.tool_runs], "asides": [a.to_json() for a in self.asides],
                "notes": self.notes}


# --- the sink: requests as they pass, calls from the events ------------------------------------------


def clip(text: str, limit: int) -> tuple[str, int]:
    """(text cut at `limit` characters, its full length)."""
    return (text if len(text) <= limit else text[:limit]), len(text)


def _part(p: rv.ViewPart, seq: int, limit: int = MAX_PART_TEXT) -> Part:
    text, size = clip(p.text, limit)
    return Part(p.kind, text, size, p.name, p.call_id, p.is_error, (seq,), (seq,))


def _message_key(m: rv.ViewMessage) -> int:
    return hash((m.role, tuple((p.kind, p.text, p.name, p.call_id, p.is_error) for p in m.parts)))


TAIL = 3  # the newest messages of a call whose read form is kept (a client may re-mark them next call)


def _raw_key(m: Any) -> int:
    try:
        return hash(orjson.dumps(m))
    except TypeError:
        return hash(repr(m))


def _keys(view: rv.RequestView) -> list[int]:
    """A hash per message: of its raw JSON when the view reads messages on demand (then only the new ones
    are ever read), else of what the model reads of it."""
    msgs = view.messages
    if isinstance(msgs, rv.LazyMessages):
        return [_raw_key(m) for m in msgs.raw]
    return [_message_key(m) for m in msgs]


def _repeats(lin: _Lineage, keys: list[int], view: rv.RequestView) -> int:
    """How many of a request's first messages repeat the conversation's latest call. A message that
    differs in its raw form only (Anthropic's `cache_control` moves to the newest message each call) is
    compared by what the model reads of it."""
    n = _common_prefix(lin.keys, keys)
    end = min(len(lin.keys), len(keys))
    while n < end and n in lin.tail and lin.tail[n] == _message_key(view.messages[n]):
        n += 1 + _common_prefix(lin.keys[n + 1:], keys[n + 1:])
    return n


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass
class _Lineage:
    """A conversation of the session: the hashes of the messages its latest call sent."""

    id: int
    keys: list[int]
    system_key: int | None = None
    tools_key: int | None = None
    last_request: _Request | None = None
    root_prompt: int | None = None  # hash of its first call's last user text (a subagent's prompt)
    tail: dict[int, int] = field(default_factory=dict)  # position -> what the model read of its last messages


@dataclass
class _Request:
    """A request reduced to what the thread shows."""

    unit: str
    ch: str
    seq: int
    t: float
    dialect: str
    lineage: int
    model: str | None = None
    detailed: bool = True
    system: list[Part] | None = None
    system_same_as_seq: int | None = None
    tools: list[ToolDefShown] | None = None
    tools_count: int | None = None
    tools_same_as_seq: int | None = None
    messages_total: int = 0
    earlier: int = 0
    new: list[Message] = field(default_factory=list)
    new_omitted: int = 0


def _tool_shown(t: rv.ToolDef) -> ToolDefShown:
    desc, dsize = clip(t.description, MAX_TOOL_TEXT)
    schema, ssize = clip(t.schema, MAX_TOOL_TEXT)
    return ToolDefShown(t.name, desc, schema, dsize + ssize)


def _last_user_text(messages: Sequence[rv.ViewMessage]) -> int | None:
    for m in reversed(messages):
        if m.role == "user":
            texts = [p.text for p in m.parts if p.kind == rv.TEXT]
            return hash(texts[-1].strip()) if texts else None
    return None


class ThreadSink:
    """A sink of the report's decode pass: the requests of every network unit whose dialect has a
    `request_view`, reduced as they pass, and the calls of those units (`CallTracker`)."""

    def __init__(self, decoding: Decoding) -> None:
        self.decoding = decoding
        self.trackers: dict[str, CallTracker] = {}
        self.requests: dict[tuple[str, int], _Request] = {}
        self.lineages: list[_Lineage] = []
        self._of: dict[Any, tuple[Unit, Any] | None] = {}  # channel -> (its unit, request_view) once decided
        self._pending: dict[str, list[dict[str, Any]]] = {}  # channel -> requests before its unit was decided
        self._by_unit_last: dict[str, _Lineage] = {}  # unit -> the conversation of its latest request
        self.detailed = 0
        self.kept_text = 0  # characters of request text kept so far (MAX_THREAD_TEXT)
        self._next_lineage = 0

    # --- routing ---
    def _route(self, ch: Any) -> tuple[Unit, Any] | None | Literal[False]:
        """(unit, request_view) of a channel's network LLM unit, None when it is not one, False while its
        dialect is not decided."""
        try:
            known = self._of[ch]
        except KeyError:
            pass
        except TypeError:
            return None
        else:
            return known
        unit = self.decoding.chan_unit.get(ch) if isinstance(ch, str) else None
        if unit is None or unit.dialect is None:
            return False if unit is not None and unit.kind in NETWORK else None
        d = DIALECTS.get(unit.dialect)
        route = (unit, d.request_view) if (d is not None and unit.kind in NETWORK
                                           and (d.request_view is not None or d.llm_calls)) else None
        self._of[ch] = route
        return route

    def on_record(self, rec: dict[str, Any], events: list[Event]) -> None:
        ch = rec.get("ch")
        route = self._route(ch)
        if route is False:
            if rec.get("type") == "msg" and rec.get("dir") == "c2s":
                waiting = self._pending.setdefault(str(ch), [])
                if len(waiting) < PENDING_PER_CHANNEL:
                    waiting.append(rec)
            return
        if route is None:
            return
        unit, view_fn = route
        if self._pending and ch in self._pending:
            for held in self._pending.pop(str(ch)):
                self._request(unit, view_fn, held)
        if view_fn is not None and rec.get("type") == "msg" and rec.get("dir") == "c2s":
            self._request(unit, view_fn, rec)
        if events:
            self._events(unit, events)

    def on_unit_end(self, unit: Unit, events: list[Event]) -> None:
        for ch in unit.channels:
            route = self._route(ch)
            if isinstance(route, tuple) and ch in self._pending:
                for held in self._pending.pop(ch):
                    self._request(route[0], route[1], held)
        if events:
            route = self._route(events[0].ch)
            if isinstance(route, tuple):
                self._events(route[0], events)

    def _events(self, unit: Unit, events: list[Event]) -> None:
        tr = self.trackers.get(unit.key)
        if tr is None:
            tr = self.trackers[unit.key] = CallTracker(unit.key, str(unit.kind))
        for ev in events:
            if ev.kind == ITEM_DELTA and (tr.current is None or tr.current.first_output_t is not None):
                continue  # (the hot path: a delta only matters as a call's first output)
            tr.add(ev)

    # --- requests ---
    def _request(self, unit: Unit, view_fn: Any, rec: dict[str, Any]) -> None:
        try:
            view = view_fn(rec.get("json"))
        except Exception:  # noqa: BLE001 - an odd body is no request to show, never a failed report
            view = None
        if not isinstance(view, rv.RequestView):
            return
        seq_v, t_v = rec.get("seq"), rec.get("t")
        seq = seq_v if isinstance(seq_v, int) else 0
        t = t_v if isinstance(t_v, (int, float)) else 0.0
        keys = _keys(view)
        lin, earlier = self._lineage(unit.key, view, keys)
        req = _Request(unit.key, str(rec.get("ch")), seq, float(t), str(unit.dialect), lin.id, view.model,
                       messages_total=earlier + len(view.messages) if view.continues else len(view.messages),
                       earlier=earlier)
        self.detailed += 1
        req.detailed = self.detailed <= MAX_DETAILED_CALLS
        if req.detailed:
            self._keep(req, view, lin, keys, seq)
        else:
            lin.system_key, lin.tools_key = self._system_key(view), self._tools_key(view)
        base = len(lin.keys) if view.continues else 0
        lin.keys = lin.keys + keys if view.continues else keys
        n = len(view.messages)  # what the model reads of the newest messages (see _repeats)
        lin.tail = {base + i: _message_key(view.messages[i]) for i in range(max(0, n - TAIL), n)}
        lin.last_request = req
        self._by_unit_last[unit.key] = lin
        self.requests[(unit.key, seq)] = req

    @staticmethod
    def _system_key(view: rv.RequestView) -> int:
        return hash(tuple(view.system))

    @staticmethod
    def _tools_key(view: rv.RequestView) -> int | None:
        if view.tools is None:
            return None
        return hash(tuple((t.name, t.description, t.schema) for t in view.tools))

    def _keep(self, req: _Request, view: rv.RequestView, lin: _Lineage, keys: list[int], seq: int) -> None:
        """What the thread shows of a request: the system prompt and tools when they changed, the new messages."""
        self._keep_system_and_tools(req, view, lin, seq)
        start = 0 if view.continues else req.earlier
        short = self.kept_text >= MAX_THREAD_TEXT
        keep = SHORT_NEW_MESSAGES if short else MAX_NEW_MESSAGES
        total = len(view.messages) - start
        new = view.messages[max(start, len(view.messages) - keep):]
        req.new_omitted = total - len(new)
        limit = SHORT_PART_TEXT if short else MAX_PART_TEXT
        req.new = [Message(m.role, [_part(p, seq, limit) for p in m.parts if p.kind != rv.TEXT or p.text.strip()])
                   for m in new]  # (an empty text beside a tool call says nothing)
        self.kept_text += sum(len(p.text) for m in req.new for p in m.parts) + \
            sum(len(p.text) for p in req.system or ()) + sum(len(t.description) + len(t.schema) for t in req.tools or ())
        if req.earlier == 0 and not view.continues:
            lin.root_prompt = _last_user_text(view.messages)

    def _keep_system_and_tools(self, req: _Request, view: rv.RequestView, lin: _Lineage, seq: int) -> None:
        """The system prompt and the tool definitions, or which earlier call of the conversation had them."""
        prev = lin.last_request
        skey, tkey = self._system_key(view), self._tools_key(view)
        inherit = view.continues is not None and not view.system  # (the response it continues has them)
        if inherit:
            skey = lin.system_key if lin.system_key is not None else skey
        if prev is not None and skey == lin.system_key and (view.system or inherit):
            req.system_same_as_seq = prev.seq if prev.system is not None else prev.system_same_as_seq
        else:
            limit = MAX_SYSTEM_TEXT if self.kept_text < MAX_THREAD_TEXT else SHORT_PART_TEXT
            req.system = [_part(rv.ViewPart(rv.TEXT, s), seq, limit) for s in view.system]
        req.tools_count = None if view.tools is None else len(view.tools)
        if view.tools is not None:
            if prev is not None and tkey == lin.tools_key:
                req.tools_same_as_seq = prev.seq if prev.tools is not None else prev.tools_same_as_seq
            else:
                req.tools = [_tool_shown(t) for t in view.tools]
        lin.system_key, lin.tools_key = skey, tkey

    def _lineage(self, unit: str, view: rv.RequestView, keys: list[int]) -> tuple[_Lineage, int]:
        """The conversation a request continues (the one whose latest call's messages it repeats the
        longest), and how many messages it repeats; a new conversation when it repeats none."""
        if view.continues is not None and unit in self._by_unit_last:
            lin = self._by_unit_last[unit]
            return lin, len(lin.keys)
        best, common = None, 0
        for lin in self.lineages:
            n = _repeats(lin, keys, view)
            if n > common or (n == common and n and best is not None and lin.id > best.id):
                best, common = lin, n
        if best is not None and common:
            return best, common
        lin = _Lineage(self._next_lineage, [])
        self._next_lineage += 1
        self.lineages.append(lin)
        if len(self.lineages) > MAX_LINEAGES:  # forget the oldest conversation's messages (not its id)
            self.lineages.pop(0)
        return lin, 0

    # --- results ---
    def calls(self) -> list[tuple[Call | None, _Request | None]]:
        """Every call: (as tracked, its request), in the order sent. A request no call answered (a
        unit whose decoder saw no turn) still is one; a call without a request view has None."""
        out: list[tuple[Call | None, _Request | None]] = []
        seen: set[tuple[str, int]] = set()
        for key, tr in self.trackers.items():
            for c in tr.calls:
                req = self.requests.get((key, c.seq))
                if req is not None:
                    seen.add((key, c.seq))
                out.append((c, req))
        out += [(None, r) for k, r in self.requests.items() if k not in seen]
        out.sort(key=lambda cr: (cr[0].t if cr[0] is not None else cr[1].t if cr[1] is not None else 0.0))
        return out


# --- the thread, from the sink and the conversation's entries ------------------------------------------


def _call_of(n: int, call: Call | None, req: _Request | None, by_seq: dict[int, int]) -> ThreadCall:
    src_t = call.t if call is not None else (req.t if req is not None else 0.0)
    tc = ThreadCall(n, call.ch if call is not None else req.ch if req is not None else "?",
                    call.transport if call is not None else "?", req.dialect if req is not None else "",
                    req.seq if req is not None else (call.seq if call is not None else 0), src_t)
    if req is not None:
        tc.ch, tc.model, tc.lineage, tc.detailed = req.ch, req.model, req.lineage, req.detailed
        tc.system, tc.tools, tc.tools_count = req.system, req.tools, req.tools_count
        tc.system_same_as = by_seq.get(req.system_same_as_seq) if req.system_same_as_seq is not None else None
        tc.tools_same_as = by_seq.get(req.tools_same_as_seq) if req.tools_same_as_seq is not None else None
        tc.messages_total, tc.earlier, tc.new, tc.new_omitted = req.messages_total, req.earlier, req.new, req.new_omitted
    if call is not None:
        _times_and_usage(tc, call)
    return tc


def _times_and_usage(tc: ThreadCall, call: Call) -> None:
    tc.transport, tc.tracked = call.transport, True
    tc.t_first_token, tc.t_last, tc.model = call.first_output_t, call.end_t, call.model or tc.model
    tc.input_tokens = call.fresh_input_tokens if call.fresh_input_tokens is not None else call.input_tokens
    tc.cache_read_tokens, tc.cache_write_tokens = call.cache_read_tokens, call.cache_write_tokens
    tc.output_tokens, tc.cost_usd = call.output_tokens, call.cost_usd
    tc.outcome, tc.error, tc.stop_reason = call.outcome, call.reason if call.outcome != "completed" else None, \
        call.stop_reason
    tc.prewarm, tc.response_id = call.prewarm, call.response_id


def _mark_retries(calls: list[ThreadCall]) -> None:
    """A call that sends nothing new after a failed call of the same conversation is its retry."""
    last: dict[int, ThreadCall] = {}
    for c in calls:
        prev = last.get(c.lineage)
        if prev is not None and prev.outcome in ("failed", "cut") and c.detailed and not c.new and \
                c.messages_total == prev.messages_total:
            c.retry, c.retry_of = True, prev.n
        last[c.lineage] = c


# --- merging the conversation's entries in ---------------------------------------------------------------

_PART_OF_ENTRY = {"assistant": rv.TEXT, "reasoning": rv.THINKING, "tool_call": rv.TOOL_CALL,
                  "tool_result": rv.TOOL_RESULT, "error": "error"}


def _entry_part(e: Any) -> Part:
    text = e.arguments() if e.kind == "tool_call" else e.text
    seqs = e.records()
    return Part(_PART_OF_ENTRY[e.kind], text, len(text), e.name, e.call_id, e.is_error, seqs, seqs[:1])


def _add_seqs(p: Part, e: Any) -> None:
    _join_seqs(p, e.records())


def _join_seqs(p: Part, seqs: tuple[int, ...]) -> None:
    """`seqs` (another place the part was seen) added to the part's, their first to its places."""
    p.seqs = tuple(dict.fromkeys(p.seqs + seqs))
    if seqs and seqs[0] not in p.at:
        p.at = p.at + seqs[:1]


class _Merge:
    """The conversation's entries laid onto the calls: a call's channel gives its reply (entries from its
    request on), another channel (the client's stdout) adds its seqs to the same message of a call or,
    when no call has it, is an aside."""

    def __init__(self, thread: Thread) -> None:
        self.t = thread
        self.by_ch: dict[str, list[ThreadCall]] = {}
        for c in thread.calls:
            self.by_ch.setdefault(c.ch, []).append(c)
        # a channel's request seqs, when in order (they are, but for calls sent at the same instant)
        self.seqs_of: dict[str, list[int]] = {}
        for ch, cs in self.by_ch.items():
            seqs = [c.seq for c in cs]
            if all(a <= b for a, b in pairwise(seqs)):
                self.seqs_of[ch] = seqs
        # (kind, text) -> (sent at, reply part) of the replies not yet seen on stdout
        self.replies: dict[tuple[str, str], list[tuple[float, Part]]] = {}
        self.call_parts: dict[tuple[str, str], Part] = {}  # (kind, call id) -> a reply's tool call / tool result
        self.issuer: dict[str, ThreadCall] = {}  # tool call id -> the call whose reply issued it
        self.inputs: dict[str, Any] = {}  # tool call id -> its input (subagent prompts)
        self.results: dict[str, tuple[float, bool, tuple[int, ...]]] = {}  # call id -> (t, is_error, seqs) of its result
        self.issued_t: dict[str, float] = {}  # tool call id -> when its call streamed it
        self.reply_t: dict[int, tuple[float, float]] = {}  # call n -> (first, last) time of its reply's entries
        self.sent_ids = {p.call_id for c in thread.calls for m in c.new for p in m.parts
                         if p.kind == rv.TOOL_RESULT and p.call_id}  # tool results some request carried back

    def _call_at(self, ch: str, seq: int | None) -> ThreadCall | None:
        """The channel's call that holds record `seq`: the last one (as sent) whose request is at or before
        it (by bisection: this runs per entry, and a WebSocket carries thousands of calls)."""
        calls = self.by_ch.get(ch)
        if not calls or seq is None:
            return None
        seqs = self.seqs_of.get(ch)
        if seqs is None:
            return next((c for c in reversed(calls) if c.seq <= seq), None)
        i = bisect_right(seqs, seq)
        return calls[i - 1] if i else None

    def on_call_channel(self, e: Any) -> bool:
        """An entry of a call's channel: a reply part, or (at the request's own seq) the request's."""
        # (a message streamed across calls, e.g. Codebuff's one message item per prompt, belongs where
        # it completed: its completed text is the one the entry holds)
        at = max(e.seqs) if e.seqs and e.kind in ("assistant", "reasoning") else e.seq
        call = self._call_at(e.ch, at)
        if call is None or not call.detailed:
            return call is not None
        if e.seq == call.seq:  # decoded from the request itself: already in the call's messages
            if e.kind == "tool_result":
                self._result_sent(call, e)
            return True
        if e.kind not in _PART_OF_ENTRY:
            return True
        part = _entry_part(e)
        call.reply.append(part)
        if e.t >= call.t_sent:  # (an item that started before the request: no first token of this call)
            first, _ = self.reply_t.get(call.n, (e.t, e.t))
            self.reply_t[call.n] = (min(first, e.t), e.t)
        if e.kind in ("assistant", "reasoning"):
            self.replies.setdefault((part.kind, part.text.strip()), []).append((call.t_sent, part))
        elif e.kind == "tool_call" and e.call_id:
            self.call_parts[(rv.TOOL_CALL, e.call_id)] = part
            self.issuer[e.call_id] = call
            self.issued_t[e.call_id] = e.t
            self.inputs[e.call_id] = e.input
        elif e.kind == "tool_result" and e.call_id:
            self.results.setdefault(e.call_id, (e.t, e.is_error, e.records()))
            self.call_parts.setdefault((rv.TOOL_RESULT, e.call_id), part)
        return True

    def _result_sent(self, call: ThreadCall, e: Any) -> None:
        for m in call.new:
            for p in m.parts:
                if p.kind == rv.TOOL_RESULT and (p.call_id == e.call_id or p.call_id is None):
                    p.call_id = p.call_id or e.call_id
                    _add_seqs(p, e)
                    return

    def on_other_channel(self, e: Any) -> None:
        """An entry of the client's own output: the same message as a call's (its seqs join that one's),
        or an aside."""
        if e.kind in ("assistant", "reasoning"):
            waiting = self.replies.get((_PART_OF_ENTRY[e.kind], e.text.strip()))
            if waiting:  # the same words from the latest call sent before the client printed them
                before = [w for w in waiting if w[0] <= e.t]
                pick = max(before, key=lambda w: w[0]) if before else waiting[0]
                waiting.remove(pick)
                _add_seqs(pick[1], e)
                return
        elif e.kind == "tool_call" and (rv.TOOL_CALL, e.call_id) in self.call_parts:
            _add_seqs(self.call_parts[(rv.TOOL_CALL, e.call_id)], e)
            return
        elif e.kind == "user" and e.parent is not None:
            prompt = self._subagent_prompt(e.parent, e.text)
            if prompt is not None:  # the subagent's prompt as its first call sent it
                _add_seqs(prompt, e)
                return
        elif e.kind == "tool_result" and e.call_id:
            self.results.setdefault(e.call_id, (e.t, e.is_error, e.records()))
            within = self.call_parts.get((rv.TOOL_RESULT, e.call_id))
            if within is not None:  # the client's result within a call (Codebuff): one part, both places
                _add_seqs(within, e)
                return
            if e.call_id in self.sent_ids:  # shown where the model got it (with this line's seq)
                return
        if e.kind in ("user", "tool_call", "tool_result", "assistant", "reasoning", "session", "result", "error",
                      "status") and len(self.t.asides) < MAX_OUTSIDE:
            text = e.arguments() if e.kind == "tool_call" else e.text
            self.t.asides.append(Aside(e.kind, e.t, clip(text, MAX_ASIDE_TEXT)[0], e.seq, e.is_error,
                                       len(text), e.name, e.call_id, e.parent))

    def _subagent_prompt(self, parent: str, text: str) -> Part | None:
        """The user text part of the first call of the subagent `parent` started that says `text`."""
        said = text.strip()[:SHORT_PART_TEXT]
        for c in self.t.calls:
            if c.parent is None or c.parent[1] != parent:
                continue
            for m in c.new:
                for p in m.parts:
                    if m.role == "user" and p.kind == rv.TEXT and p.text.strip()[:SHORT_PART_TEXT] == said:
                        return p
            return None
        return None

    def _sent_back(self) -> dict[str, tuple[ThreadCall, list[Part]]]:
        """Tool call id -> the first call that sent its result back to the model, and those result parts."""
        out: dict[str, tuple[ThreadCall, list[Part]]] = {}
        for c in self.t.calls:
            for m in c.new:
                for p in m.parts:
                    if p.kind != rv.TOOL_RESULT or not p.call_id:
                        continue
                    got = out.setdefault(p.call_id, (c, []))
                    if got[0] is c:
                        got[1].append(p)
        return out

    def tool_runs(self) -> None:
        """Each tool call of a reply as an execution: from the end of its call to its result (the
        client's line, the reply's own result, else the request that carried it back)."""
        sent_back = self._sent_back()
        for cid, issuer in list(self.issuer.items())[:MAX_TOOL_RUNS]:
            back, parts = sent_back.get(cid, (None, []))
            got = self.results.get(cid)
            run = ToolRun(cid, self.call_parts[(rv.TOOL_CALL, cid)].name, self.issued_t.get(cid, issuer.t_sent),
                          issued_by=issuer.n, returned_in=back.n if back is not None else None)
            if got is not None:
                run.t_end, run.is_error, run.seqs = got
                for p in parts:  # the result the model got is also where the client printed it
                    _join_seqs(p, got[2])
            elif back is not None:
                run.t_end = back.t_sent
            if issuer.t_last is not None and (run.t_end is None or issuer.t_last <= run.t_end):
                run.t_start = max(run.t_start, issuer.t_last)  # (a client runs a tool once the reply is whole)
            run.is_error = run.is_error or any(p.is_error for p in parts)
            self.t.tool_runs.append(run)
        self.t.tool_runs.sort(key=lambda r: r.t_start)

    def parents(self, roots: dict[int, int | None]) -> None:
        """A conversation whose first prompt is a Task / Agent tool call's prompt is that call's subagent."""
        by_prompt: dict[int, list[tuple[int, str]]] = {}  # prompt -> the tool calls that gave it, in order
        for cid, value in self.inputs.items():
            part = self.call_parts[(rv.TOOL_CALL, cid)]
            if part.name in SUBAGENT_TOOLS and isinstance(value, dict) and isinstance(value.get("prompt"), str):
                by_prompt.setdefault(hash(value["prompt"].strip()), []).append((self.issuer[cid].n, cid))
        if not by_prompt:
            return
        of_lineage: dict[int, tuple[int, str] | None] = {}  # (the same prompt twice: the k-th subagent, the k-th call)
        for c in self.t.calls:
            if c.lineage not in of_lineage:
                root = roots.get(c.lineage)
                waiting = by_prompt.get(root, []) if root is not None else []
                pick = next((w for w in waiting if w[0] < c.n), None)
                if pick is not None:
                    waiting.remove(pick)
                of_lineage[c.lineage] = pick
            parent = of_lineage[c.lineage]
            if parent is not None and parent[0] < c.n:
                c.parent = parent


def _said(parts: Iterable[Part]) -> list[tuple[str, str]]:
    return [(p.kind, p.text.strip()) for p in parts if p.kind in (rv.TEXT, rv.THINKING) and p.text.strip()]


def _mark_echoes(calls: list[ThreadCall]) -> None:
    """An assistant message a call sends that says what the previous call of its conversation answered
    is that reply sent back as history (`echo_of`), not something new."""
    last: dict[int, ThreadCall] = {}
    for c in calls:
        prev = last.get(c.lineage)
        if prev is not None and prev.reply:
            said = _said(prev.reply)
            calls_made = {p.call_id for p in prev.reply if p.kind == rv.TOOL_CALL and p.call_id}
            for m in c.new:
                if m.role != "assistant":
                    continue
                ids = {p.call_id for p in m.parts if p.kind == rv.TOOL_CALL and p.call_id}
                if (said and _said(m.parts) == said) or (ids and ids <= calls_made):
                    m.echo_of = prev.n
        last[c.lineage] = c


def _untracked_times(calls: list[ThreadCall], reply_t: dict[int, tuple[float, float]]) -> None:
    """A request its decoder saw no turn of (Codebuff 1.0's `[TOOL_RESULT]` user-input goes on within the
    prompt's turn): its first and last token from its reply; when it falls inside the turn of an earlier
    call on its channel, it takes that turn's end, and the earlier call ends with its own reply."""
    last_tracked: dict[str, ThreadCall] = {}
    for c in calls:
        if c.tracked:
            last_tracked[c.ch] = c
            continue
        first_last = reply_t.get(c.n)
        if first_last is not None:
            c.t_first_token, c.t_last = first_last
        p = last_tracked.get(c.ch)
        if p is None or (p.t_last is not None and p.t_last < c.t_sent):
            continue
        c.transport, c.t_last, c.outcome, c.error, c.stop_reason = p.transport, p.t_last, p.outcome, p.error, \
            p.stop_reason
        p.t_last = reply_t[p.n][1] if p.n in reply_t else c.t_sent
        p.outcome, p.error, p.stop_reason = "completed", None, None
        last_tracked[c.ch] = c


def merge(thread: Thread, conversation: dict[str, list[Any]], roots: dict[int, int | None]) -> None:
    """Lay the conversation's entries onto the thread's calls (see `_Merge`), then time the tool runs and
    find the subagents."""
    m = _Merge(thread)
    others = []
    for ch, entries in conversation.items():
        if ch in m.by_ch:
            for e in entries:
                m.on_call_channel(e)
        else:
            others.extend(entries)
    m.parents(roots)  # (before stdout: a subagent's prompt printed there joins its first call's)
    others.sort(key=lambda e: (e.t, e.seq or 0))
    for e in others:
        if e.ch not in m.by_ch:
            m.on_other_channel(e)
    _untracked_times(thread.calls, m.reply_t)
    m.tool_runs()
    _mark_echoes(thread.calls)
    thread.asides.sort(key=lambda a: a.t)


def build_threads(sink: ThreadSink, conversation: dict[str, list[Any]], *, key: str = "session") -> list[Thread]:
    """The session's thread: the calls of `sink` with their replies from `conversation` (the report's
    entries by channel, `model.ConvEntry`), stdout merged in. [] when the capture has neither calls nor a
    client's conversation."""
    pairs = sink.calls()
    by_seq = {req.seq: i + 1 for i, (_, req) in enumerate(pairs) if req is not None}
    calls = [_call_of(i + 1, c, r, by_seq) for i, (c, r) in enumerate(pairs)]
    _mark_retries(calls)
    roots = {lin.id: lin.root_prompt for lin in sink.lineages}
    thread = Thread(key, calls)
    merge(thread, conversation, roots)
    main = thread.main_lineage
    for c in thread.calls:
        c.side = c.parent is None and c.lineage != main
    if not thread.calls and not thread.asides:
        return []
    return [thread]


def all_calls(threads: Iterable[Thread]) -> list[ThreadCall]:
    """Every call of every thread, in the order sent (what a waterfall draws)."""
    return sorted((c for t in threads for c in t.calls), key=lambda c: c.t_sent)
