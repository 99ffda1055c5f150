"""The report model: what a report says about a capture, built by pure functions over records,
events, findings and notes. Renderers (term, markdown, html, json) only lay it out.

Nothing here reads files; `build.py` is the thin shell that feeds it.
"""

from __future__ import annotations

import builtins
import heapq
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from wirecap.analysis.fold import EVENT_ITEM, FoldedItem, Folder
from wirecap.analysis.notes import Note
from wirecap.capture.payload import payload_size, payload_text
from wirecap.capture.redact import Redactor, redact_record
from wirecap.dialects import Detection
from wirecap.events import (
    ERROR,
    MESSAGE,
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

LONG_GAP = 2.0  # seconds of silence on a channel worth pointing out
MAX_GAPS_PER_CHANNEL = 10
MAX_CONVERSATION_ENTRIES = 2000
MAX_ENTRY_TEXT = 8000
MAX_RELEVANT = 30
# Bounds that keep a report of a huge capture in bounded memory (docs/commands/report.md says what
# they leave out); a normal capture never reaches them.
MAX_FINDINGS = 1000  # findings listed (the summary still counts them all)
MAX_RECORDER_ERRORS = 1000  # recorder error records listed (counted all)
MAX_SHOWN_RECORD = 64 * 1024  # bytes of one raw record shown (relevant messages); past it the payload is cut
MAX_ENTRY_INPUT = MAX_ENTRY_TEXT  # bytes of a tool call's input (JSON) kept as a value; past it, a cut text


@dataclass
class ChannelActivity:
    """One channel as seen from its records."""

    ch: str
    transport: str = "?"  # the open record's `kind`: ws, http or pipe
    label: str = ""
    dialect: str | None = None
    dialect_reason: str = ""
    opened: float | None = None
    closed: float | None = None
    first: float | None = None
    last: float | None = None
    msgs_c2s: int = 0
    msgs_s2c: int = 0
    bytes_c2s: int = 0
    bytes_s2c: int = 0
    end_state: str = ""
    first_reply: float | None = None  # seconds from the first c2s message (or process start) to the first reply
    first_reply_at: float | None = None
    gaps: list[tuple[float, float]] = field(default_factory=list)  # (start, end) of long silences
    times: array = field(default_factory=lambda: array("d"))  # t of every message (for the timeline)
    parent: str | None = None  # the process channel of a pipe

    @property
    def messages(self) -> int:
        return self.msgs_c2s + self.msgs_s2c

    @property
    def bytes(self) -> int:
        return self.bytes_c2s + self.bytes_s2c

    @property
    def duration(self) -> float | None:
        start = self.opened if self.opened is not None else self.first
        end = self.closed if self.closed is not None else self.last
        if start is None or end is None:
            return None
        return max(0.0, end - start)

    def to_json(self) -> dict[str, Any]:
        return {
            "ch": self.ch, "kind": self.transport, "label": self.label, "dialect": self.dialect,
            "dialect_reason": self.dialect_reason, "opened": self.opened, "closed": self.closed,
            "messages_c2s": self.msgs_c2s, "messages_s2c": self.msgs_s2c, "bytes_c2s": self.bytes_c2s,
            "bytes_s2c": self.bytes_s2c, "duration": self.duration, "end_state": self.end_state,
            "first_reply": self.first_reply, "first_reply_at": self.first_reply_at,
            "long_gaps": [{"start": a, "end": b, "seconds": round(b - a, 6)} for a, b in self.gaps],
        }


@dataclass
class ConvEntry:
    """One step of the conversation as people think of it."""

    kind: str  # user | assistant | reasoning | tool_call | tool_result | error | status | session | result
    ch: str
    seq: int | None
    t: float
    text: str = ""
    name: str | None = None
    input: Any = None
    is_error: bool = False
    call_id: str | None = None
    seqs: tuple[int, ...] = ()  # every record an item entry came from (notes attach by them); () for the others
    parent: str | None = None  # a subagent's entry: the tool call that started it (`parent_tool_use_id`)

    def records(self) -> tuple[int, ...]:
        """Every record the entry came from: its `seqs`, else its `seq` (() when it has neither)."""
        return tuple(self.seqs) if self.seqs else ((self.seq,) if self.seq is not None else ())

    def arguments(self, *, indent: bool = False) -> str:
        """What a tool call was given, as text: the streamed arguments, else its input as JSON
        (indented by 2 with `indent`), else ""."""
        if self.text or self.input is None:
            return self.text
        return orjson.dumps(self.input, option=orjson.OPT_INDENT_2 if indent else None).decode()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "ch": self.ch, "seq": self.seq, "t": self.t}
        if self.text:
            out["text"] = self.text
        if self.name is not None:
            out["name"] = self.name
        if self.input is not None:
            out["input"] = self.input
        if self.is_error:
            out["is_error"] = True
        if self.call_id is not None:
            out["call_id"] = self.call_id
        if self.parent is not None:
            out["parent_tool_use_id"] = self.parent
        return out


@dataclass
class CaptureReport:
    path: str
    header: dict[str, Any]
    records: int = 0
    messages: int = 0
    bytes: int = 0
    duration: float = 0.0
    interrupted: str | None = None
    ended_cleanly: bool = False
    recorder_errors: list[dict[str, Any]] = field(default_factory=list)
    recorder_errors_omitted: int = 0  # past MAX_RECORDER_ERRORS: counted, not listed
    reader_problems: list[str] = field(default_factory=list)
    record_types: Counter = field(default_factory=Counter)
    channels: list[ChannelActivity] = field(default_factory=list)
    sessions: list[dict[str, Any]] | None = None
    sessions_note: str = ""
    # which transport each LLM call used and whether the client fell back (`analysis.transport`):
    # {"llm_calls": {transport: n}, "fallback": {...} | None, "calls": [...]}, only when a client used or
    # tried a WebSocket for its LLM calls (elsewhere the channels' kinds say it all)
    transport: dict[str, Any] | None = None
    findings: list[dict[str, Any]] | None = None
    findings_note: str = ""
    findings_omitted: Counter = field(default_factory=Counter)  # severity -> findings past MAX_FINDINGS
    conversation: dict[str, list[ConvEntry]] = field(default_factory=dict)
    conversation_notes: dict[str, str] = field(default_factory=dict)  # ch -> why there is no conversation
    conversation_truncated: int = 0
    # one thread per session, as the model saw it (`report.thread`: calls, what each sent and got back, the
    # tool executions between them); [] when the capture has neither LLM calls nor a client's conversation
    threads: list[Any] = field(default_factory=list)
    threads_note: str = ""  # why there is no thread (its part failed)
    notes: list[Note] = field(default_factory=list)
    note_warnings: list[str] = field(default_factory=list)
    relevant: dict[int, dict[str, Any]] = field(default_factory=dict)  # seq -> redacted record
    warnings: list[str] = field(default_factory=list)
    pre_redacted: bool = False  # the capture was redacted at write time by (at least) the rules in force
    # Every LLM call on the wire (`analysis.transport.Call`, in start order), for the pictures (html).
    calls: list[Any] = field(default_factory=list, repr=False)
    # A way to stream the (redacted) records again, for renderers that show every message (html).
    iter_records: Callable[[], Iterator[dict[str, Any]]] | None = field(default=None, repr=False)
    # The records as written, each with its line, and what makes one fit to be shown (`shown(rec, line)`:
    # redacted, unless the capture already was by the rules in force or the line cannot hold a secret): a
    # renderer that keeps only some records (html, past its size budget) redacts those alone.
    iter_lines: Callable[[], Iterator[tuple[dict[str, Any], builtins.bytes]]] | None = field(default=None, repr=False)
    shown: Callable[[dict[str, Any], builtins.bytes], dict[str, Any]] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    def conversation_channels(self) -> list[str]:
        """The channels a conversation is laid out by: every channel in capture order, then those only
        the events know (a renderer shows each one's entries, or the note saying why there are none)."""
        known = [c.ch for c in self.channels]
        known_set = set(known)
        return known + [ch for ch in self.conversation if ch not in known_set]

    def summary_rows(self) -> list[tuple[str, Any]]:
        """The headline figures, as (label, value) pairs."""
        origin = self.header.get("origin") or {}
        red = self.header.get("redaction") or {}
        rows: list[tuple[str, Any]] = [
            ("capture", self.path),
            ("id", self.header.get("id", "")),
            ("created (UTC)", self.header.get("created", "")),
            ("recorded by", " ".join(str(x) for x in (origin.get("source"), origin.get("version")) if x)),
            ("records", self.records),
            ("messages", self.messages),
            ("payload bytes", self.bytes),
            ("duration (s)", round(self.duration, 3)),
            ("channels", len(self.channels)),
            ("state", "complete" if not self.interrupted else f"interrupted: {self.interrupted}"),
            ("recorder errors", len(self.recorder_errors) + self.recorder_errors_omitted),
            ("redaction at write time", "on" if red.get("enabled", True) else "OFF (--no-redact)"),
        ]
        if self.findings is not None:
            sev = Counter(f.get("severity") for f in self.findings) + self.findings_omitted
            rows.append(("findings", ", ".join(f"{n} {s}" for s, n in sev.most_common()) or "none"))
        rows.append(("notes", len(self.notes)))
        return rows

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "header": {k: self.header.get(k) for k in ("id", "created", "origin", "redaction", "wirecap")},
            "records": self.records,
            "messages": self.messages,
            "bytes": self.bytes,
            "duration": self.duration,
            "interrupted": self.interrupted,
            "recorder_errors": self.recorder_errors,
            "reader_problems": self.reader_problems,
            "record_types": dict(self.record_types),
            "channels": [c.to_json() for c in self.channels],
            "sessions": self.sessions,
            "sessions_note": self.sessions_note or None,
            "findings": self.findings,
            "findings_note": self.findings_note or None,
            "conversation": {ch: [e.to_json() for e in es] for ch, es in self.conversation.items()},
            "conversation_notes": self.conversation_notes,
            "conversation_truncated": self.conversation_truncated,
            "threads": [t.to_json() for t in self.threads],
            **({"threads_note": self.threads_note} if self.threads_note else {}),
            "notes": [n.to_json() for n in self.notes],
            "note_warnings": self.note_warnings,
            "relevant_messages": [self.relevant[s] for s in sorted(self.relevant)],
            "warnings": self.warnings,
            **({"transport": self.transport} if self.transport is not None else {}),
            **({"recorder_errors_omitted": self.recorder_errors_omitted} if self.recorder_errors_omitted else {}),
            **({"findings_omitted": dict(self.findings_omitted)} if self.findings_omitted else {}),
        }


@dataclass
class Report:
    captures: list[CaptureReport]
    diff: dict[str, Any] | None = None  # {"equal", "rows", "text", "json"}
    diff_note: str = ""
    compare: Any = None  # two captures: A and B side by side (`report.compare.Comparison`)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"wirecap_report": 1, "captures": [c.to_json() for c in self.captures]}
        if len(self.captures) > 1:
            out["diff"] = self.diff
            out["diff_note"] = self.diff_note or None
            out["compare"] = self.compare.to_json() if self.compare is not None else None
        return out


# --- building from records ------------------------------------------------------------------------


def _label(rec: dict[str, Any]) -> str:
    kind = rec.get("kind")
    if kind in ("ws", "http"):
        method = rec.get("method")
        return f"{method} {rec.get('url', '')}" if method else str(rec.get("url", ""))
    if kind == "process":
        argv = rec.get("argv") or []
        return " ".join(str(a) for a in argv)
    if kind == "pipe":
        return f"{rec.get('stream', '')} of {rec.get('proc', '')}"
    return ""


def _end_state(rec: dict[str, Any]) -> str:
    for key, fmt in (("exit_code", "exit {}"), ("signal", "killed by {}"), ("code", "ws close {}"),
                     ("status", "HTTP {}")):
        if rec.get(key) is not None:
            s = fmt.format(rec[key])
            if rec.get("reason"):
                s += f" {rec['reason']}"
            return s
    return "closed"


class RecordSummarizer:
    """Feeds on records one at a time (constant memory apart from one float per message)."""

    def __init__(self, report: CaptureReport, *, long_gap: float = LONG_GAP, dialect: str | None = None) -> None:
        self.r = report
        self.long_gap = long_gap
        self._ch: dict[str, ChannelActivity] = {}
        self._first_c2s: dict[str, float] = {}
        self._last_t: dict[str, float] = {}
        # the decoders' detection (with the same forced `--dialect`): the report names what decode does
        self._detection = Detection(dialect=dialect)

    def channel(self, ch: str) -> ChannelActivity:
        c = self._ch.get(ch)
        if c is None:
            c = self._ch[ch] = ChannelActivity(ch=ch)
        return c

    def feed(self, rec: dict[str, Any]) -> None:
        r = self.r
        r.records += 1
        rtype = rec.get("type", "?")
        r.record_types[rtype] += 1
        t = rec.get("t")
        t = float(t) if isinstance(t, (int, float)) else 0.0
        r.duration = max(r.duration, t)
        ch = rec.get("ch")
        self._detection.feed(rec)
        if rtype == "end":
            r.ended_cleanly = True
            return
        if rtype == "error":
            self._recorder_error(rec, ch)
        if not isinstance(ch, str):
            return
        c = self.channel(ch)
        prev = self._last_t.get(ch)
        if prev is not None and t - prev >= self.long_gap:  # a long silence on the channel ends here
            c.gaps.append((prev, t))
        self._last_t[ch] = t
        on = self._ON_RECORD.get(rtype)
        if on is not None:
            on(self, c, rec, t)

    def _recorder_error(self, rec: dict[str, Any], ch: Any) -> None:
        r = self.r
        if len(r.recorder_errors) >= MAX_RECORDER_ERRORS:
            r.recorder_errors_omitted += 1
            return
        m = rec.get("message")
        r.recorder_errors.append({"seq": rec.get("seq"), "ch": ch, "where": rec.get("where"),
                                  "message": _clip(m, 500) if isinstance(m, str) else m})

    def _on_open(self, c: ChannelActivity, rec: dict[str, Any], t: float) -> None:
        c.transport = str(rec.get("kind", "?"))
        c.label = _label(rec)
        c.opened = t
        if c.transport == "pipe" and isinstance(rec.get("proc"), str):
            c.parent = rec["proc"]

    def _on_close(self, c: ChannelActivity, rec: dict[str, Any], t: float) -> None:
        c.closed = t
        c.end_state = _end_state(rec)

    def _on_response(self, c: ChannelActivity, rec: dict[str, Any], t: float) -> None:
        c.end_state = c.end_state or f"HTTP {rec.get('status')}"

    def _on_msg(self, c: ChannelActivity, rec: dict[str, Any], t: float) -> None:
        size = payload_size(rec)
        self.r.messages += 1
        self.r.bytes += size
        c.times.append(t)
        if c.first is None:
            c.first = t
        c.last = t
        if rec.get("dir") == "c2s":
            c.msgs_c2s += 1
            c.bytes_c2s += size
            self._first_c2s.setdefault(c.ch, t)
            return
        c.msgs_s2c += 1
        c.bytes_s2c += size
        if c.first_reply is None:
            start = self._reply_start(c)
            if start is not None:
                c.first_reply = max(0.0, t - start)
                c.first_reply_at = t

    def _reply_start(self, c: ChannelActivity) -> float | None:
        """What a first reply on `c` answers: its first c2s message, else its process's start (a pipe),
        else its request (HTTP)."""
        start = self._first_c2s.get(c.ch)
        if start is None and c.transport == "pipe" and c.parent in self._ch:
            start = self._ch[c.parent].opened
        if start is None and c.transport == "http":
            start = c.opened
        return start

    _ON_RECORD: dict[str, Callable[[RecordSummarizer, ChannelActivity, dict[str, Any], float], None]] = {
        "open": _on_open, "close": _on_close, "response": _on_response, "msg": _on_msg,
    }

    def finish(self) -> None:
        if self.r.recorder_errors_omitted:
            self.r.warnings.append(f"only the first {MAX_RECORDER_ERRORS} recorder errors are listed; "
                                   f"{self.r.recorder_errors_omitted} more are counted in the summary")
        for c in self._ch.values():
            c.dialect, c.dialect_reason = self._detection.verdict(c.ch)
            c.gaps.sort(key=lambda g: g[0] - g[1])
            c.gaps = sorted(c.gaps[:MAX_GAPS_PER_CHANNEL])
        self.r.channels = list(self._ch.values())


def summarize_records(report: CaptureReport, records: Iterable[dict[str, Any]], **kw: Any) -> CaptureReport:
    s = RecordSummarizer(report, **kw)
    for rec in records:
        s.feed(rec)
    s.finish()
    return report


def timeline_bins(times: Iterable[float], duration: float, nbins: int) -> list[int]:
    """Message counts in `nbins` equal slices of [0, duration]."""
    bins = [0] * max(1, nbins)
    if duration <= 0:
        for _ in times:
            bins[0] += 1
        return bins
    scale = nbins / duration
    last = nbins - 1
    for t in times:
        x = t * scale  # (a damaged capture's t may be negative or huge: it lands in the first or last bin)
        bins[int(x) if 0 <= x < last else (0 if x < 0 else last)] += 1
    return bins


# --- conversation from universal events -----------------------------------------------------------


def _clip(text: str, limit: int = MAX_ENTRY_TEXT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"… ({len(text) - limit} more characters)"


def _as_text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, list):  # content blocks
        parts = []
        for b in v:
            if isinstance(b, dict) and isinstance(b.get("text"), str):
                parts.append(b["text"])
            else:
                parts.append(_as_text(b))
        return "\n".join(parts)
    try:
        return orjson.dumps(v).decode()
    except TypeError:
        return repr(v)


# An entry of these kinds stays even when empty: its title says what happened.
_KEPT_EMPTY = frozenset(("tool_call", "tool_result", "session", "result", "error"))
_UNPARSED = EVENT_ITEM[UNPARSED]
_NOT_SHOWN = frozenset((_UNPARSED, EVENT_ITEM[USAGE]))  # (unparsed events are counted per channel)
_NOT_FOLDED = frozenset((UNPARSED, USAGE))  # the events of those items
_MAYBE_NO_ENTRY = frozenset((EVENT_ITEM[TURN_STARTED],))  # a turn whose prompt the wire does not carry


def _first(seq: tuple[int, ...]) -> int | None:
    return seq[0] if seq else None


def _bits(label: str, bits: list[str]) -> str:
    return label + (" (" + ", ".join(bits) + ")" if bits else "")


def _session_started(it: FoldedItem) -> ConvEntry:
    data = it.data
    bits = [f"{k}: {data[k]}" for k in ("model", "session_id", "cwd", "version") if data.get(k)]
    return ConvEntry("session", it.ch, _first(it.seq), it.t, text=_bits("session started", bits))


def _turn_started(it: FoldedItem) -> ConvEntry | None:
    prompt = _as_text(it.data.get("prompt"))
    return ConvEntry("user", it.ch, _first(it.seq), it.t, text=_clip(prompt)) if prompt else None


def _error(it: FoldedItem) -> ConvEntry:
    msg = _as_text(it.data.get("message")) or "error"
    code = it.data.get("code")
    return ConvEntry("error", it.ch, _first(it.seq), it.t, text=_clip(f"{msg}" + (f" ({code})" if code else "")),
                     is_error=True)


def _turn_ended(it: FoldedItem) -> ConvEntry:
    data = it.data
    bits = []
    if data.get("stop_reason"):
        bits.append(f"stop: {data['stop_reason']}")
    if data.get("is_error"):
        bits.append("is_error")
    result = _as_text(data.get("result"))
    why = f": {_clip(result, 500)}" if result and data.get("is_error") else ""
    return ConvEntry("result", it.ch, _first(it.seq), it.t, text=_bits("turn ended", bits) + why,
                     is_error=bool(data.get("is_error")))


def _session_ended(it: FoldedItem) -> ConvEntry:
    data = it.data
    bits = [f"{k}: {data[k]}" for k in ("exit_code", "duration_ms", "cost_usd") if data.get(k) is not None]
    if data.get("is_error"):
        bits.insert(0, "is_error")
    return ConvEntry("result", it.ch, _first(it.seq), it.t, text=_bits("session ended", bits),
                     is_error=bool(data.get("is_error")))


def _unique(seqs: tuple[int, ...]) -> tuple[int, ...]:
    return seqs if len(seqs) < 2 else tuple(dict.fromkeys(seqs))


def _streamed_text(it: FoldedItem) -> str:
    """An item's text: the completed (or started) text when it has one, else its streamed pieces joined."""
    text = it.data.get("text")
    return _clip(_as_text(text) if text is not None else "".join(it.pieces))


def _said(it: FoldedItem) -> ConvEntry:
    """A message (by its role: user, status for system instructions, else assistant), reasoning, a status
    line, or an item of a kind this report does not know (shown by its kind)."""
    kind = it.kind
    if kind in (MESSAGE, "item"):
        kind = "user" if it.role == "user" else ("status" if it.role == "system" else "assistant")
    return ConvEntry(kind, it.ch, _first(it.seq), it.t, text=_streamed_text(it), seqs=_unique(it.seq),
                     parent=_parent(it))


def _parent(it: FoldedItem) -> str | None:
    """The tool call that started the subagent an item is from (None for the main agent's)."""
    parent = it.data.get("parent_tool_use_id")
    return parent if isinstance(parent, str) else None


def _tool_call(it: FoldedItem) -> ConvEntry:
    """A tool call: its streamed arguments as text, its input as a value (bounded), its own seqs (its
    joined result is an entry of its own)."""
    data = it.data
    own = it.seq
    if it.result is not None:  # the fold adds a joined result's seqs to its call's: take them out
        rest = list(own)
        for s in it.result.seq:
            if s in rest:
                rest.remove(s)
        own = tuple(rest)
    value = data.get("input")
    return ConvEntry(TOOL_CALL, it.ch, _first(it.seq), it.t, text=_clip("".join(it.pieces)), name=data.get("name"),
                     input=bounded_input(value, own[-1] if own else None) if value is not None else None,
                     call_id=data.get("call_id"), seqs=_unique(own), parent=_parent(it))


def _tool_result(it: FoldedItem) -> ConvEntry:
    data = it.data
    output = data.get("output")
    text = _clip(_as_text(output)) if output is not None else _clip("".join(it.pieces))
    return ConvEntry(TOOL_RESULT, it.ch, _first(it.seq), it.t, text=text, name=data.get("name"),
                     is_error=bool(data.get("is_error")), call_id=data.get("call_id"), seqs=_unique(it.seq),
                     parent=_parent(it))


# The entry of each kind of folded item (None: nothing worth showing); other kinds are `_said`.
_ENTRY_OF: dict[str, Callable[[FoldedItem], ConvEntry | None]] = {
    EVENT_ITEM[SESSION_STARTED]: _session_started,
    EVENT_ITEM[TURN_STARTED]: _turn_started,
    EVENT_ITEM[ERROR]: _error,
    EVENT_ITEM[TURN_ENDED]: _turn_ended,
    EVENT_ITEM[SESSION_ENDED]: _session_ended,
    TOOL_CALL: _tool_call,
    TOOL_RESULT: _tool_result,
}


class ConversationBuilder:
    """Universal events, fed one at a time, as conversation entries per channel: the shared fold
    (`wirecap.analysis.fold`: a streamed item and its completion are one entry, the completed text
    winning) laid out as people read it, a tool result as an entry of its own where it started.

    Memory stays bounded: the fold holds only open items, and only the first `limit` entries (in start
    order) are kept; the rest are counted (`dropped`). `add_item` is the fold's sink, for a caller that
    runs one fold for several consumers."""

    def __init__(self, *, limit: int = MAX_CONVERSATION_ENTRIES) -> None:
        self.limit = limit
        self.unparsed: Counter[str] = Counter()
        self.dropped = 0  # entries past `limit`
        self._kept: list[tuple[int, ConvEntry]] = []  # a heap of (-order, entry): the first `limit` entries
        self.folder = Folder(self.add_item, unit_of=_own_channel)

    def feed(self, ev: Event) -> None:
        kind = ev.kind
        if kind in _NOT_FOLDED:  # (nothing to fold: cheaper counted here)
            if kind == UNPARSED:
                self.unparsed[ev.ch] += 1
            return
        self.folder.feed(ev)

    def add_item(self, it: FoldedItem) -> None:
        """One folded item (and its joined tool result) as entries."""
        kind = it.kind
        if kind in _NOT_SHOWN:
            if kind == _UNPARSED:
                self.unparsed[it.ch] += 1
            return
        if it.result is not None:
            self._offer(it.result.order, _tool_result, it.result)
        self._offer(it.order, _ENTRY_OF.get(kind, _said), it)

    def _offer(self, order: int, make: Callable[[FoldedItem], ConvEntry | None], it: FoldedItem) -> None:
        """Keep the entry of `it` if it is among the first `limit` to start (an entry past them is
        counted, not made: most items come in start order, so a long capture costs little past the limit)."""
        kept = self._kept
        if len(kept) >= self.limit and order > -kept[0][0] and it.kind not in _MAYBE_NO_ENTRY:
            self.dropped += 1
            return
        entry = make(it)
        if entry is None:
            return
        heapq.heappush(kept, (-order, entry))
        if len(kept) > self.limit:
            heapq.heappop(kept)  # the latest-starting one
            self.dropped += 1

    def finish(self) -> tuple[dict[str, list[ConvEntry]], dict[str, int], int]:
        """(entries by channel, in start order; unparsed events by channel; entries left out). Entries that
        ended up saying nothing (a started item never filled) are left out."""
        self.folder.finish()
        out: dict[str, list[ConvEntry]] = {}
        for _, e in sorted(self._kept, key=_by_start, reverse=True):
            out.setdefault(e.ch, []).append(e)
        self._kept = []
        for ch, entries in out.items():
            out[ch] = [e for e in entries if e.text or e.input is not None or e.kind in _KEPT_EMPTY]
        return out, dict(self.unparsed), self.dropped


def _by_start(kept: tuple[int, ConvEntry]) -> int:
    return kept[0]


def _own_channel(ch: str) -> str:
    """The report folds per channel (an entry is listed under its channel; a process's pipes apart)."""
    return ch


def conversation_from_events(events: Iterable[Event], *, limit: int = MAX_CONVERSATION_ENTRIES
                             ) -> tuple[dict[str, list[ConvEntry]], dict[str, int], int]:
    """Group universal events into conversation entries per channel (`ConversationBuilder`).

    Returns (entries by channel, unparsed count by channel, entries left out).
    """
    b = ConversationBuilder(limit=limit)
    feed = b.feed
    for ev in events:
        feed(ev)
    return b.finish()


def bounded_input(value: Any, seq: int | None) -> Any:
    """A tool call's input as the report keeps it: the value itself, or past MAX_ENTRY_INPUT bytes of
    JSON its first part as text, saying how much more there is and which record holds it all."""
    if isinstance(value, str):
        size = len(value)
    else:
        try:
            size = len(orjson.dumps(value))
        except TypeError:
            return value
        if size > MAX_ENTRY_INPUT:
            value = orjson.dumps(value).decode()
    if size <= MAX_ENTRY_INPUT:
        return value
    where = f"; all of it in #seq-{seq}" if seq is not None else ""
    return value[:MAX_ENTRY_INPUT] + f"… ({size - MAX_ENTRY_INPUT} more bytes{where})"


def bounded_record(rec: dict[str, Any], limit: int = MAX_SHOWN_RECORD) -> dict[str, Any]:
    """A raw record as a report shows it: itself, or past `limit` bytes of JSON the same record with
    its payload cut to a text preview that says how many bytes were left out (`shown_truncated`: the
    record's full size, so a reader of the JSON model can tell)."""
    try:
        size = len(orjson.dumps(rec))
    except TypeError:
        return rec
    if size <= limit:
        return rec
    out = {k: v for k, v in rec.items() if k not in ("json", "text", "b64", "raw", "raw_b64")}
    text = payload_text(rec) if rec.get("type") == "msg" else orjson.dumps(rec).decode()
    keep = max(0, limit // 2)
    out["text"] = text[:keep] + f"… ({len(text) - keep} more characters; the whole record is #seq-{rec.get('seq')})"
    out["shown_truncated"] = size
    return out


# --- redaction of what is shown -------------------------------------------------------------------


def redact_shown(redactor: Redactor, rec: dict[str, Any]) -> dict[str, Any]:
    """A record as it may be shown: secrets replaced even if the capture was written with --no-redact."""
    if not redactor.enabled:
        return rec
    return redact_record(redactor, rec)


def preview(rec: dict[str, Any], limit: int = 160) -> str:
    """A one-line summary of a record for lists."""
    rtype = rec.get("type")
    if rtype == "msg":
        text = payload_text(rec)
    elif rtype == "open":
        text = _label(rec)
    elif rtype == "close":
        text = _end_state(rec)
    elif rtype == "response":
        text = f"HTTP {rec.get('status')} {rec.get('reason', '')}".strip()
    elif rtype == "error":
        text = f"{rec.get('where', '')}: {rec.get('message', '')}"
    elif rtype == "end":
        text = f"end: {rec.get('records')} records, {rec.get('errors', 0)} errors"
    else:
        text = ""
    text = text.replace("\n", "⏎").replace("\r", "")
    return text if len(text) <= limit else text[: limit - 1] + "…"
