"""Diff two agent runs: what really changed, not which ids and timestamps did.

Sans-I/O core plus a thin loading shell. Both sides are turned into *items* per channel unit:
- `events` level: universal events folded into items (a message with its streamed deltas joined, a
  tool call with its arguments and its result, reasoning, errors, usage, session start/end);
- `wire` level: every message of a channel, normalized (per-dialect volatile fields hidden).
Each item has a coarse *signature* (kind, role, tool name, ...) and a *body* (its normalized content
as canonical JSON). Channels are paired by kind/dialect/order (identical channels first, so reordered
independent channels are not a difference); inside each pair the bodies are aligned (Myers/patience,
`wirecap.analysis.align`), and what is left unmatched is aligned again on signatures so that an item
whose content changed is reported as *changed*, with field-level differences by path.
The `stats` level puts the numbers of `wirecap stats` side by side.
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import orjson

from wirecap.analysis.align import align
from wirecap.analysis.fold import FoldedItem, Folder, channel_unit, usage_first
from wirecap.analysis.idshape import TELEMETRY_URL, EnvMask, is_telemetry, mask_json, mask_text
from wirecap.analysis.normalize import MISSING, Normalizer, format_path
from wirecap.analysis.sides import build_both, can_fork
from wirecap.analysis.spill import INLINE_MAX, BodyStore, body_key
from wirecap.dialects.base import DETECT_MSGS, hkey
from wirecap.errors import CaptureFormatError, WirecapError
from wirecap.events import (
    EVENT_KINDS,
    TOOL_CALL,
    Event,
)

LEVELS = ("events", "wire", "stats")

# Differences beyond this many (in the order of the view) are counted but not detailed: no field
# differences are computed for them and the view and --json stop before them, so two captures that
# have nothing in common cost neither memory for every changed value nor a view of a million lines.
SHOWN_MAX = 10_000

# Event-level fields that change from run to run whatever the dialect (paths over items, see docs/paths.md).
EVENT_VOLATILE = (
    "*[*].session_id",
    "*[*].message_id",
    "*[*].call_id",
    "*[*].result.call_id",
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

_dumps = orjson.dumps
_SORT = orjson.OPT_SORT_KEYS
_REDACTED = "«redacted:".encode()  # a redaction placeholder in canonical JSON (orjson writes UTF-8 as is)
# (looked for with bytes.find, which measured twice as fast as `in` on short bytes)


# --- data ----------------------------------------------------------------------------------------------
@dataclass(slots=True)
class Item:
    """One comparable thing on one side: an event item or a wire message."""

    kind: str
    index: int  # ordinal of this kind within its channel unit on its side
    sig: tuple[Any, ...]
    # what items are compared by: the canonical JSON of the normalized content, or for a long one (kept
    # in `store`) its key (`spill.body_key`); `json()` is the canonical JSON either way
    body: bytes
    seq: tuple[int, ...]
    ch: str
    t: float
    label: str = ""
    ref: int = -1  # where the canonical JSON is in `store` (when `store` is set)
    store: BodyStore | None = None

    @property
    def name(self) -> str:
        return f"{self.kind}[{self.index}]"

    def json(self) -> bytes:
        """The canonical JSON of the normalized content (read back from the store when kept there)."""
        return self.body if self.store is None else self.store.get(self.ref)

    def content(self) -> Any:
        return orjson.loads(self.json())

    def describe(self) -> str:
        """A short human description, computed only for the items a view shows."""
        if not self.label:
            self.label = describe_content(self.kind, self.content())
        return self.label


@dataclass(slots=True)
class Unit:
    """A channel unit on one side: a WebSocket/HTTP channel, or a process with its pipes."""

    key: str
    kind: str  # ws, http, process, pipe, events
    dialect: str | None
    group: tuple[Any, ...]  # channels pair only within the same group
    items: list[Item] = field(default_factory=list)
    t_first: float | None = None
    t_last: float | None = None

    def fingerprint(self) -> int:
        return hash(tuple((it.kind, it.body) for it in self.items))


def pack_units(units: list[Unit], *, consume: bool = False) -> list[tuple[Any, ...]]:
    """Units as plain tuples (for `marshal`, see `wirecap.analysis.sides`); the store of their long
    bodies is not in them (`unpack_units` is given it). `consume`: the units' item lists are turned
    into the tuples in place (the units are not usable after), so items and tuples are never all
    held at once."""
    out = []
    for u in units:
        items: list[Any] = u.items if consume else list(u.items)
        for i, it in enumerate(items):
            items[i] = (it.kind, it.index, it.sig, it.body, it.seq, it.ch, it.t, it.label, it.ref)
        out.append((u.key, u.kind, u.dialect, u.group, u.t_first, u.t_last, items))
    return out


def unpack_units(packed: list[tuple[Any, ...]], store: BodyStore | None = None) -> list[Unit]:
    """The units of `pack_units`; the packed item lists become the units' lists (changed in place)."""
    units = []
    for key, kind, dialect, group, t_first, t_last, items in packed:
        for i, it in enumerate(items):
            items[i] = Item(*it, store if it[8] >= 0 else None) if len(it) > 8 else Item(*it)
        units.append(Unit(key, kind, dialect, group, items, t_first, t_last))
    return units


def _interned(sigs: dict[tuple[Any, ...], tuple[Any, ...]], sig: tuple[Any, ...]) -> tuple[Any, ...]:
    """One shared tuple per distinct signature (a few dozen per capture, not one per item)."""
    try:
        return sigs.setdefault(sig, sig)
    except TypeError:  # (an unhashable part: kept as it is)
        return sig


def new_item(kind: str, index: int, sig: tuple[Any, ...], body: bytes, seq: tuple[int, ...], ch: str, t: float,
             store: BodyStore | None) -> Item:
    """An item whose canonical JSON `body`, when long, goes to `store` (memory stays bounded: see
    `wirecap.analysis.spill`). stderr lines stay whole: they are sorted and searched by content."""
    if store is None or len(body) <= INLINE_MAX or _is_stderr(ch):
        return Item(kind, index, sig, body, seq, ch, t)
    return Item(kind, index, sig, body_key(body), seq, ch, t, "", store.put(body), store)


@dataclass(slots=True)
class Change:
    op: str  # added | removed | changed
    kind: str
    a: Item | None
    b: Item | None
    fields: list[tuple[str, Any, Any]] = field(default_factory=list)
    shown: bool = True  # False past `SHOWN_MAX`: counted only (no fields, not in the view or --json)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op, "kind": self.kind}
        if self.a is not None:
            out["a"] = _item_json(self.a)
        if self.b is not None:
            out["b"] = _item_json(self.b)
        if self.op == "changed":
            out["fields"] = [_field_json(p, o, n) for p, o, n in self.fields]
        return out


@dataclass(slots=True)
class PairDiff:
    """The aligned sequence of one channel pair (either side may be absent: channel added/removed)."""

    a: Unit | None
    b: Unit | None
    # ("equal", i1, i2, j1, j2) spans and Change objects, in stream order
    script: list[tuple[str, int, int, int, int] | Change] = field(default_factory=list)

    @property
    def changes(self) -> list[Change]:
        return [s for s in self.script if isinstance(s, Change)]

    @property
    def title(self) -> str:
        a = self.a.key if self.a else "(none)"
        b = self.b.key if self.b else "(none)"
        d = (self.a or self.b).dialect if (self.a or self.b) else None  # type: ignore[union-attr]
        return f"A:{a} B:{b}" + (f" ({d})" if d else "")


@dataclass(slots=True)
class TimingFlag:
    metric: str
    where: str
    a: float
    b: float
    threshold: float

    @property
    def ratio(self) -> float:
        return self.b / self.a if self.a else float("inf")

    def describe(self) -> str:
        pct = (self.ratio - 1) * 100
        return (f"timing: {self.metric} {_secs(self.a)} -> {_secs(self.b)} ({pct:+.0f}%) on {self.where}, "
                f"over the +{self.threshold * 100:.0f}% threshold")

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "where": self.where, "a": self.a, "b": self.b,
                "ratio": round(self.ratio, 4) if self.a else None, "threshold": self.threshold}


@dataclass(slots=True)
class DiffResult:
    a: str
    b: str
    level: str
    pairs: list[PairDiff] = field(default_factory=list)
    stats: list[dict[str, Any]] = field(default_factory=list)  # stats level rows
    timing: list[TimingFlag] = field(default_factory=list)
    timing_checked: list[dict[str, Any]] = field(default_factory=list)
    notes_a: list[Any] = field(default_factory=list)
    notes_b: list[Any] = field(default_factory=list)
    items_a: int = 0
    items_b: int = 0
    not_shown: int = 0  # differences past `SHOWN_MAX`, counted but not detailed
    warnings: list[str] = field(default_factory=list)  # the readers' complaints: lines skipped, interrupted

    @property
    def stats_differ(self) -> bool:
        return any(r["differs"] for r in self.stats)

    @property
    def equal(self) -> bool:
        if self.timing:
            return False
        if self.level == "stats":
            return not self.stats_differ
        return all(p.a is not None and p.b is not None and not p.changes for p in self.pairs)

    def counts(self) -> dict[str, int]:
        c = {"added": 0, "removed": 0, "changed": 0}
        for p in self.pairs:
            if p.a is None or p.b is None:
                c["added" if p.a is None else "removed"] += 1
            for ch in p.changes:
                c[ch.op] += 1
        return c

    def summary_rows(self) -> list[dict[str, Any]]:
        """Added / removed / changed per kind (channels count as kind `channel`)."""
        rows: dict[str, dict[str, Any]] = {}

        def row(kind: str) -> dict[str, Any]:
            return rows.setdefault(kind, {"kind": kind, "added": 0, "removed": 0, "changed": 0})

        for p in self.pairs:
            if p.a is None:
                row("channel")["added"] += 1
            elif p.b is None:
                row("channel")["removed"] += 1
            for ch in p.changes:
                row(ch.kind)[ch.op] += 1
        if self.level == "stats":
            for r in self.stats:
                if r["differs"]:
                    row("stat:" + r["metric"])["changed"] += 1
        if self.timing:
            row("timing")["changed"] += len(self.timing)
        return sorted(rows.values(), key=lambda r: (r["kind"] == "channel", r["kind"]))

    def summary_line(self) -> str:
        if self.level == "stats":
            n = sum(1 for r in self.stats if r["differs"])
            what = "equal: no differences in the numbers" if not n else f"{n} number(s) differ"
        else:
            c = self.counts()
            total = sum(c.values())
            npairs = sum(1 for p in self.pairs if p.a is not None and p.b is not None)
            scope = (f"{self.items_a}/{self.items_b} items, {npairs} channel pair{'s' if npairs != 1 else ''}, "
                     f"{self.level} level")
            if total == 0:
                what = f"equal: no differences ({scope})"
            else:
                what = (f"{total} difference{'s' if total != 1 else ''}: {c['added']} added, {c['removed']} removed, "
                        f"{c['changed']} changed ({scope})")
        if self.timing:
            what += f"; {len(self.timing)} timing regression{'s' if len(self.timing) != 1 else ''}"
        return what

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "a": self.a, "b": self.b, "level": self.level, "equal": self.equal,
            "summary": self.summary_line(), "counts": self.counts(), "by_kind": self.summary_rows(),
        }
        if self.level == "stats":
            out["stats"] = self.stats
        else:
            out["channels"] = [
                {"a": p.a.key if p.a else None, "b": p.b.key if p.b else None,
                 "dialect": (p.a or p.b).dialect if (p.a or p.b) else None,  # type: ignore[union-attr]
                 "changes": [c.to_json() for c in p.changes if c.shown]}
                for p in self.pairs
            ]
            if self.not_shown:
                out["not_shown"] = self.not_shown
        if self.timing_checked:
            out["timing"] = {"checked": self.timing_checked, "regressions": [t.to_json() for t in self.timing]}
        if self.warnings:
            out["warnings"] = self.warnings
        return out


# --- input detection and loading ------------------------------------------------------------------------
def input_kind(path: str) -> str:
    """`capture` or `events` (universal-event JSONL), from the first line; WirecapError otherwise."""
    if not os.path.exists(path):
        raise WirecapError(f"{path}: no such file")
    if os.path.isdir(path):
        raise WirecapError(f"{path}: is a directory, not a capture")
    first = _first_line(path)
    if not first.strip():
        if os.path.getsize(path) > 0:
            raise WirecapError(f"{path}:1: no complete first line (a compressed file cut short?), not a wirecap capture")
        raise WirecapError(f"{path}: empty file, not a wirecap capture")
    try:
        obj = orjson.loads(first)
    except orjson.JSONDecodeError:
        raise WirecapError(f"{path}:1: not a wirecap capture or event file (first line is not JSON)") from None
    if isinstance(obj, dict):
        if obj.get("type") == "header" and "wirecap" in obj:
            return "capture"
        if obj.get("kind") in EVENT_KINDS or _is_events_header(obj):
            return "events"
    raise WirecapError(f"{path}:1: not a wirecap capture or universal-event file "
                       "(first line is neither a capture header nor an event)")


def _is_events_header(obj: dict[str, Any]) -> bool:
    return obj.get("type") in ("events", "events-header", "header") and "kind" not in obj and (
        "wirecap_events" in obj or "events" in str(obj.get("type")) or "format" in obj)


def _first_line(path: str) -> bytes:
    from wirecap.capture.reader import MAX_HEADER, open_binary

    try:
        with open_binary(path) as f:  # (gzip and zstd by their magic bytes, as the capture reader does)
            return f.readline(MAX_HEADER)
    except OSError as e:
        raise WirecapError(f"{path}: cannot read: {e.strerror or e}") from None
    except Exception as e:  # noqa: BLE001 - a damaged compressed frame (zstandard.ZstdError, EOFError)
        raise WirecapError(f"{path}: cannot read: {type(e).__name__}: {e}") from None


def read_event_file(path: str) -> Iterator[Event]:
    """Universal events from a JSONL file written by `wirecap convert` (header line tolerated)."""
    from wirecap.capture.inputs import OVERLONG, bounded_lines, overlong_message
    from wirecap.capture.reader import open_binary

    with open_binary(path) as f:
        for lineno, line in enumerate(bounded_lines(f), 1):
            if line is OVERLONG:
                raise WirecapError(f"{path}:{lineno}: {overlong_message().removesuffix('; skipped')}")
            if not line.strip():
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                raise WirecapError(f"{path}:{lineno}: not JSON") from None
            if not isinstance(obj, dict) or obj.get("kind") not in EVENT_KINDS:
                if isinstance(obj, dict) and (lineno == 1 or obj.get("kind") == "note"):
                    continue  # a header line; annotations (`wirecap convert` interleaves them)
                raise WirecapError(f"{path}:{lineno}: not a universal event (no known `kind`)")
            try:
                event = Event.from_json(obj)
            except ValueError as e:
                raise WirecapError(f"{path}:{lineno}: not a universal event ({e})") from None
            yield event


def _without_telemetry(records: Iterable[dict[str, Any]], skip: set[str],
                       env: EnvMask | None = None) -> Iterator[dict[str, Any]]:
    """The records, noting in `skip` the channels of analytics requests (`idshape.is_telemetry`); with
    `env`, a recorded process's cwd is learned (as at the wire level: `WireBuilder.feed`)."""
    for rec in records:
        if rec.get("type") == "open" and rec.get("kind") == "http" and _telemetry_url(rec.get("url")):
            skip.add(rec["ch"])
        if env is not None and rec.get("type") == "open" and isinstance(rec.get("cwd"), str):
            env.add("cwd", rec["cwd"])
        yield rec


def _telemetry_url(url: Any) -> bool:
    p = _url_path(url)
    return p is not None and is_telemetry(p)


def _decode(path: str, kind: str, ch: str | None, warnings: list[str], shapes: bool = False,
            env: EnvMask | None = None) -> Iterator[Event]:
    """Events of one side; the reader's complaints (skipped lines, an interrupted capture) go to `warnings`."""
    if kind == "events":
        for ev in read_event_file(path):
            if ch is None or ev.ch == ch or unit_key(ev.ch) == ch:
                yield ev
        return
    try:
        from wirecap.dialects import decode_records
    except ImportError:
        raise WirecapError("the events level needs the dialect decoders (wirecap.dialects), "
                           "which are not installed; use --level wire") from None
    from wirecap.capture.reader import CaptureReader

    with CaptureReader(path) as reader:
        if not shapes:
            yield from decode_records(reader, ch=ch)
        else:  # analytics batches follow the client's flush timer, not the run: left out
            skip: set[str] = set()
            for ev in decode_records(_without_telemetry(reader, skip, env), ch=ch):
                if ev.ch not in skip:
                    yield ev
        warnings.extend(reader.report())


unit_key = channel_unit  # (a process and its pipes form one unit: `stdout-2` -> `proc-2`)


# --- events level: events -> items ------------------------------------------------------------------------
class ItemBuilder:
    """Turns the items of the fold (`wirecap.analysis.fold`) into comparable items, per unit. Streaming:
    an item is turned into its compact form (canonical bytes) as soon as the fold hands it out, so
    memory holds only the items still open, not the decoded events."""

    def __init__(self, normalizer: Normalizer, *, chunks: bool = False, unit_of=unit_key, shapes: bool = True,
                 store: BodyStore | None = None) -> None:
        self.normalizer = normalizer
        self.store = store  # where long bodies go (None: kept in the items)
        self._sigs: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # one tuple per distinct signature
        self.env: EnvMask | None = EnvMask() if shapes else None  # this side's cwd/HOME/TMPDIR, learned
        self.chunks = chunks
        self._slots: dict[str, list[Item | None]] = {}
        self._last_unit: str | None = None  # (the unit of the last item, and its slots: usually the next's)
        self._last_slots: list[Item | None] = []
        self._index_free = normalizer.index_free
        self._norm_of: dict[str, Any] = {}  # item kind -> its normalizer (index-free rules only)
        self.folder = Folder(self._take, unit_of=unit_of)
        self.feed = self.folder.feed

    def _take(self, f: FoldedItem) -> None:
        """The fold's sink: the item made comparable, put where it started in its unit."""
        kind = f.kind
        content, sig = _CONTENT.get(kind, _other_content)(f, self.chunks)
        body = self._encode(kind, f.index, content)
        try:
            sig = self._sigs.setdefault(sig, sig)  # one shared tuple per distinct signature
        except TypeError:  # (an unhashable part: kept as it is)
            pass
        if self.store is None or len(body) <= INLINE_MAX or _is_stderr(f.ch):
            item = Item(kind, f.index, sig, body, f.seq, f.ch, f.t)
        else:  # a long body goes to the store (`wirecap.analysis.spill`)
            item = Item(kind, f.index, sig, body_key(body), f.seq, f.ch, f.t, "", self.store.put(body), self.store)
        if f.unit is self._last_unit:
            slots = self._last_slots
        else:
            slots = self._slots.setdefault(f.unit, [])
            self._last_unit, self._last_slots = f.unit, slots
        pos = f.pos
        if pos == len(slots):
            slots.append(item)
            return
        if pos > len(slots):
            slots.extend([None] * (pos - len(slots) + 1))
        slots[pos] = item

    def _encode(self, kind: str, index: int, content: dict[str, Any]) -> bytes:
        """The canonical JSON an item is compared by: normalized, redaction placeholders without their
        fingerprints, values volatile by shape masked."""
        if self._index_free:  # every item of a kind normalizes alike
            norm = self._norm_of.get(kind)
            if norm is None:
                norm = self._norm_of[kind] = self.normalizer.fixed((kind, 0))
            body = _canon(norm(content))
        else:
            body = _canon(self.normalizer(content, (kind, index), fingerprints=False))
        if body.find(_REDACTED) >= 0:  # placeholders: compared without their fingerprints
            body = _canon(self.normalizer(content, (kind, index)))
        if self.env is not None:
            body = mask_json(body, self.env)
        return body

    def finish(self) -> dict[str, Unit]:
        units: dict[str, Unit] = {}
        for key, fu in self.folder.finish().items():
            u = units[key] = Unit(key, "events", fu.dialect, ("events", fu.dialect), [], fu.t_first, fu.t_last)
            items = cast(list[Item], self._slots.pop(key, []))  # (every slot is filled once the fold finished)
            if "usage" in fu.kinds:
                items = usage_first(items)
            u.items = _stderr_last(items) if any(map(_is_stderr, fu.channels)) else items
        return units


def _text_content(f: FoldedItem, chunks: bool) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """A message, reasoning or status: its fields, role and text (and how it was streamed, with `chunks`)."""
    data = f.data
    content = {k: v for k, v in data.items() if k != "text"}
    if f.role is not None:
        content["role"] = f.role
    text = data.get("text")
    content["text"] = text if isinstance(text, str) else "".join(f.pieces)
    if chunks and f.pieces:
        content["chunks"] = list(f.pieces)
    return content, (f.kind, f.role)


def _call_content(f: FoldedItem, chunks: bool) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """A tool call: its fields, its input (streamed arguments parsed) and its result (compared as
    `tool_call[N].result`)."""
    content = dict(f.data)
    if "input" not in content and f.pieces:
        content["input"] = f.input
    if f.result is not None:
        content["result"] = {k: v for k, v in f.result.data.items() if k != "call_id"}
    elif "result" not in content:
        content["result"] = None
    return content, (f.kind, hkey(content.get("name")))


def _other_content(f: FoldedItem, chunks: bool) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """Any other item: its fields and role; signed by what tells such items apart (`_sig_hint`)."""
    kind, ch = f.kind, f.ch
    content = dict(f.data)
    if f.role is not None:
        content["role"] = f.role
    if kind == "unparsed" and isinstance(content.get("reason"), str) and ch in content["reason"]:
        # (a channel's name is its position in the capture, not what was said on it)
        content["reason"] = content["reason"].replace(f" {ch}:", " <ch>:").replace(f" {ch} ", " <ch> ")
    return content, (kind, hkey(_sig_hint(kind, content)))


_CONTENT = {"message": _text_content, "reasoning": _text_content, "status": _text_content,
            TOOL_CALL: _call_content}
_usage_first = usage_first  # (tests)


def _mask(body: bytes, env: EnvMask) -> bytes:
    """Values volatile by shape (ids, times, ports: `wirecap.analysis.idshape`) and this side's
    environment paths, masked in an item's canonical JSON."""
    return mask_json(body, env)


def _is_stderr(ch: str) -> bool:
    return ch == "stderr" or ch.startswith("stderr-")


def _stderr_last(items: list[Item]) -> list[Item]:
    """stderr is compared as a multiset of lines: a process's diagnostics come from concurrent parts of
    it (a background flush, a retry), so their order among themselves and against stdout is not
    behaviour. Items from a stderr channel go last, sorted by content, and every kind is renumbered.
    A line that logs an analytics request (names its URL) is left out with the request."""
    if not any(_is_stderr(it.ch) for it in items):
        return items
    rest = [it for it in items if not _is_stderr(it.ch)]
    err = sorted((it for it in items if _is_stderr(it.ch) and not TELEMETRY_URL.search(it.body)),
                 key=lambda it: (it.kind, it.body))
    out = rest + err
    counts: dict[str, int] = {}
    for it in out:
        n = counts.get(it.kind, 0)
        counts[it.kind] = n + 1
        it.index = n
    return out


def _sig_hint(kind: str, content: dict[str, Any]) -> Any:
    if kind == "usage":
        return content.get("scope")
    if kind == "unparsed":
        raw = content.get("raw")
        return raw.get("type") if isinstance(raw, dict) else type(raw).__name__
    if kind == "error":
        return content.get("code")
    return None


def describe_content(kind: str, content: Any) -> str:
    """One line about an item: message text, tool name and input, the wire payload..."""
    if kind == "msg" and isinstance(content, list) and len(content) == 3:
        d, ev, payload = content
        return f"{d or ''} " + (f"event:{ev} " if ev else "") + _clip(_compact(payload), 70)
    if kind in ("message", "reasoning", "status") and isinstance(content, dict):
        return _clip(str(content.get("text", "")), 70)
    if kind == TOOL_CALL and isinstance(content, dict):
        return f"{content.get('name')} {_clip(_compact(content.get('input')), 60)}"
    if kind in ("response", "close") and isinstance(content, dict):
        return " ".join(f"{k}={v}" for k, v in content.items())
    if not isinstance(content, dict):
        return _clip(_compact(content), 70)
    if kind == "session":
        parts = [str(content[k]) for k in ("model", "version") if content.get(k)]
        return " ".join(parts)
    if kind == "usage":
        return " ".join(f"{k}={content[k]}" for k in ("model", "input_tokens", "output_tokens") if k in content)
    if kind == "error":
        return _clip(str(content.get("message", "")), 70)
    if kind == "turn":
        return _clip(str(content.get("prompt") or ""), 70)
    if kind == "turn_end":
        return " ".join(f"{k}={content[k]}" for k in ("stop_reason", "is_error") if k in content)
    if kind == "unparsed":
        return _clip(str(content.get("reason", "")), 70)
    return _clip(_compact(content), 70)


# --- wire level: records -> items -------------------------------------------------------------------------
class WireBuilder:
    """Per channel: each message (and HTTP status / exit code), normalized with the dialect's volatile paths."""

    DETECT_AFTER = DETECT_MSGS  # as many first messages as the decoders' detection reads

    def __init__(self, ignore: tuple[str, ...], keep: tuple[str, ...], *, only: str | None = None,
                 shapes: bool = True, store: BodyStore | None = None) -> None:
        self.ignore = ignore
        self.store = store  # where long bodies go (None: kept in the items)
        self._sigs: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # one tuple per distinct signature
        self.env: EnvMask | None = EnvMask() if shapes else None  # this side's cwd/HOME/TMPDIR, learned
        self.keep = keep
        self.only = only
        self.units: dict[str, Unit] = {}
        self._opens: dict[str, dict[str, Any]] = {}
        self._pending: dict[str, list[dict[str, Any]]] = {}
        self._norm: dict[str, Normalizer] = {}
        self._counts: dict[tuple[str, str], int] = {}
        self._norm_cache: dict[str | None, Normalizer] = {}
        self._skip: set[str] = set()

    def _normalizer(self, dialect: str | None) -> Normalizer:
        n = self._norm_cache.get(dialect)
        if n is None:
            n = self._norm_cache[dialect] = Normalizer((*_volatile(dialect), *self.ignore), self.keep)
        return n

    def feed(self, rec: dict[str, Any]) -> None:
        ch = rec.get("ch")
        rtype = rec.get("type")
        if not isinstance(ch, str) or rtype not in ("open", "msg", "response", "close"):
            return
        if self.only is not None and ch != self.only and unit_key(ch) != self.only:
            return
        if rtype == "open":
            self._opens[ch] = rec
            if self.env is not None and isinstance(rec.get("cwd"), str):
                self.env.add("cwd", rec["cwd"])
            if self.env is not None and rec.get("kind") == "http" and _telemetry_url(rec.get("url")):
                self._skip.add(ch)  # (analytics batches follow the client's flush timer: left out)
        if ch in self._skip:
            return
        u = self.units.get(ch)
        if u is None:
            o = self._opens.get(ch, {})
            kind = o.get("kind") or ("pipe" if unit_key(ch) != ch else "?")
            group: tuple[Any, ...] = (kind,)
            if kind == "pipe":
                group = (kind, o.get("stream") or ch.split("-")[0])
            elif kind == "http":  # (an id in the path, `/agent-runs/run_<id>/steps`, is not the endpoint)
                upath = _url_path(o.get("url"))
                group = (kind, o.get("method"), mask_text(upath) if self.env is not None and upath else upath)
            elif kind == "ws":
                group = (kind, _url_path(o.get("url")))
            u = self.units[ch] = Unit(ch, kind, None, group)
            self._pending[ch] = []
        t = rec.get("t")
        if isinstance(t, (int, float)):
            if u.t_first is None:
                u.t_first = t
            u.t_last = t
        if rtype == "open":
            return
        pend = self._pending.get(ch)
        if pend is not None:
            pend.append(rec)
            nmsg = sum(1 for r in pend if r.get("type") == "msg")
            if nmsg >= self.DETECT_AFTER or rtype == "close":
                self._detect(u)
            return
        self._add(u, rec)

    def _detect(self, u: Unit) -> None:
        pend = self._pending.pop(u.key, [])
        o = self._opens.get(u.key)
        if o is not None and o.get("kind") == "pipe" and isinstance(o.get("proc"), str):
            proc_open = self._opens.get(o["proc"])
            o = {**(proc_open or {}), **{k: v for k, v in o.items() if k == "dialect"}} if proc_open else o
        u.dialect = _detect(o, [r for r in pend if r.get("type") == "msg"])
        u.group = (*u.group, u.dialect)
        self._norm[u.key] = self._normalizer(u.dialect)
        for r in pend:
            self._add(u, r)

    def _add(self, u: Unit, rec: dict[str, Any]) -> None:
        rtype = rec["type"]
        norm = self._norm[u.key]
        if rtype == "msg":
            kind = "msg"
            sse = rec.get("sse") or {}
            ev = sse.get("event") if isinstance(sse, dict) else None
            if "json" in rec:
                payload = norm(rec["json"], fingerprints=False)
                body = _canon([rec.get("dir"), ev, payload])
                if body.find(_REDACTED) >= 0:  # placeholders: compared without their fingerprints
                    payload = norm(rec["json"])
                    body = _canon([rec.get("dir"), ev, payload])
            else:
                payload = rec["text"] if "text" in rec else {"b64": rec.get("b64")}
                body = _canon([rec.get("dir"), ev, payload])
            typ = payload.get("type") if isinstance(payload, dict) else None
            sig: tuple[Any, ...] = (rec.get("dir"), ev, typ if isinstance(typ, str) else None, *_shape(payload))
        elif rtype == "response":
            kind = "response"
            payload = {"status": rec.get("status")}
            sig = (kind,)
            body = _canon(payload)
        else:
            kind = "close"
            payload = {k: rec[k] for k in ("code", "status", "exit_code", "signal") if k in rec}
            sig = (kind,)
            body = _canon(payload)
        if self.env is not None and kind == "msg":
            body = _mask(body, self.env)
        n = self._counts.get((u.key, kind), 0)
        self._counts[(u.key, kind)] = n + 1
        u.items.append(new_item(kind, n, _interned(self._sigs, sig), body, (rec.get("seq", 0),), u.key, float(rec.get("t") or 0.0),
                                self.store))

    def finish(self) -> dict[str, Unit]:
        for key in list(self._pending):
            self._detect(self.units[key])
        for u in self.units.values():
            if u.kind == "pipe" and _is_stderr(u.key):  # a multiset of lines (see `_stderr_last`)
                msgs = sorted((it for it in u.items if it.kind == "msg" and not TELEMETRY_URL.search(it.body)),
                              key=lambda it: it.body)
                for i, it in enumerate(msgs):
                    it.index = i
                u.items = msgs + [it for it in u.items if it.kind != "msg"]
        return self.units


def _shape(payload: Any) -> tuple[Any, ...]:
    """A little more signature for wire messages: subtype and content-block types (Anthropic/Claude shapes),
    so an assistant text line does not pair with an assistant tool_use line."""
    if not isinstance(payload, dict):
        return ()
    msg = payload.get("message")
    content = msg.get("content") if isinstance(msg, dict) else payload.get("content")
    blocks = tuple(b.get("type") for b in content if isinstance(b, dict)) if isinstance(content, list) else ()
    sub = payload.get("subtype")
    return (sub if isinstance(sub, str) else None, blocks)


def _url_path(url: Any) -> str | None:
    if not isinstance(url, str):
        return None
    from urllib.parse import urlsplit

    try:
        return urlsplit(url).path
    except ValueError:
        return None


def _detect(open_rec: dict[str, Any] | None, msgs: list[dict[str, Any]]) -> str | None:
    try:
        from wirecap.dialects import detect_channel
    except ImportError:
        hint = (open_rec or {}).get("dialect")
        return hint if isinstance(hint, str) else None
    try:
        return detect_channel(open_rec, msgs)[0]
    except Exception:  # noqa: BLE001 - detection is a hint; a failure only costs volatile-field defaults
        return None


def _volatile(dialect: str | None) -> list[str]:
    if not dialect:
        return []
    try:
        from wirecap.dialects import volatile_paths
    except ImportError:
        return []
    try:
        return list(volatile_paths(dialect))
    except WirecapError:
        return []


# --- pairing and alignment ------------------------------------------------------------------------------
def pair_units(a: list[Unit], b: list[Unit]) -> list[tuple[Unit | None, Unit | None]]:
    """Pair channel units of the same group: identical ones first (reordering is not a difference),
    then in order. Unpaired units are returned with None on the other side."""
    pairs: list[tuple[Unit | None, Unit | None]] = []
    used_b: set[int] = set()
    paired_a: dict[int, int] = {}
    by_group: dict[Any, list[int]] = {}
    for j, u in enumerate(b):
        by_group.setdefault(u.group, []).append(j)
    fp_b = {j: u.fingerprint() for j, u in enumerate(b)}
    for i, u in enumerate(a):
        fp = u.fingerprint()
        for j in by_group.get(u.group, []):
            if j not in used_b and fp_b[j] == fp:
                used_b.add(j)
                paired_a[i] = j
                break
    for i, u in enumerate(a):
        if i in paired_a:
            continue
        for j in by_group.get(u.group, []):
            if j not in used_b:
                used_b.add(j)
                paired_a[i] = j
                break
    for i, u in enumerate(a):
        pairs.append((u, b[paired_a[i]]) if i in paired_a else (u, None))
    for j, u in enumerate(b):
        if j not in used_b:
            pairs.append((None, u))
    return pairs


def diff_items(a: list[Item], b: list[Item], *, wire: bool = False,
               budget: list[int] | None = None) -> list[tuple[str, int, int, int, int] | Change]:
    """Align two item lists: equal spans and Changes (changed pairs carry field-level differences).
    `budget` (one int, shared by the pairs of a diff): how many more changes are detailed; the rest
    have `shown` False and no fields (`SHOWN_MAX`)."""
    script: list[tuple[str, int, int, int, int] | Change] = []
    left = budget if budget is not None else [len(a) + len(b) + 1]

    def changed(x: Item, y: Item) -> Change:
        left[0] -= 1
        if left[0] < 0:
            return Change("changed", x.kind, x, y, [], False)
        return Change("changed", x.kind, x, y, item_field_diffs(x, y, wire=wire))

    def one(op: str, x: Item | None, y: Item | None) -> Change:
        left[0] -= 1
        return Change(op, (x or y).kind, x, y, [], left[0] >= 0)  # type: ignore[union-attr]

    ops = align([(x.kind, x.body) for x in a], [(x.kind, x.body) for x in b])
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            script.append(("equal", i1, i2, j1, j2))
            continue
        sub_a, sub_b = a[i1:i2], b[j1:j2]
        for stag, k1, k2, l1, l2 in align([x.sig for x in sub_a], [x.sig for x in sub_b]):
            if stag == "equal":
                for ia, ib in zip(range(k1, k2), range(l1, l2), strict=True):
                    script.append(changed(sub_a[ia], sub_b[ib]))
                continue
            if stag == "replace":
                # same-kind pairs in a replaced run are still "changed", in order
                xs, ys = sub_a[k1:k2], sub_b[l1:l2]
                rest_b = list(ys)
                for x in xs:
                    y = next((c for c in rest_b if c.kind == x.kind), None)
                    if y is not None:
                        rest_b.remove(y)
                        script.append(changed(x, y))
                    else:
                        script.append(one("removed", x, None))
                for y in rest_b:
                    script.append(one("added", None, y))
                continue
            for x in sub_a[k1:k2]:
                script.append(one("removed", x, None))
            for y in sub_b[l1:l2]:
                script.append(one("added", None, y))
    return script


def item_field_diffs(x: Item, y: Item, *, wire: bool = False) -> list[tuple[str, Any, Any]]:
    if wire and x.kind == "msg":
        va, vb = x.content(), y.content()
        out: list[tuple[str, Any, Any]] = []
        if va[0] != vb[0]:
            out.append((x.name + " dir", va[0], vb[0]))
        if va[1] != vb[1]:
            out.append((x.name + " sse.event", va[1], vb[1]))
        structural_diffs(va[2], vb[2], (x.kind, x.index), out)
        return out
    out = []
    structural_diffs(x.content(), y.content(), (x.kind, x.index), out)
    return out


def structural_diffs(a: Any, b: Any, path: tuple[Any, ...], out: list[tuple[str, Any, Any]]) -> None:
    """Field differences like `normalize.field_diffs`, but lists are aligned (an inserted element is
    one difference, not a shift of every later index) and lists of scalars are reported in one line."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k in b:
                structural_diffs(a[k], b[k], (*path, k), out)
            else:
                out.append((format_path((*path, k)), a[k], MISSING))
        for k in b:
            if k not in a:
                out.append((format_path((*path, k)), MISSING, b[k]))
        return
    if isinstance(a, list) and isinstance(b, list):
        if a == b:
            return
        if all(_scalar(v) for v in a) and all(_scalar(v) for v in b) and (len(a) > 1 or len(b) > 1):
            out.append((format_path(path), a, b))
            return
        ka, kb = [_canon(v) for v in a], [_canon(v) for v in b]
        for tag, i1, i2, j1, j2 in align(ka, kb):
            if tag == "equal":
                continue
            n = min(i2 - i1, j2 - j1)
            for k in range(n):
                structural_diffs(a[i1 + k], b[j1 + k], (*path, i1 + k), out)
            for k in range(i1 + n, i2):
                out.append((format_path((*path, k)), a[k], MISSING))
            for k in range(j1 + n, j2):
                out.append((format_path((*path, k)), MISSING, b[k]))
        return
    if a != b or type(a) is not type(b):
        out.append((format_path(path) or ".", a, b))


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


# --- the entry point --------------------------------------------------------------------------------------
def parse_threshold(spec: str | float | None) -> float | None:
    """`50%`, `50` -> 0.5 (a relative increase)."""
    if spec is None:
        return None
    if isinstance(spec, (int, float)):
        return float(spec)
    s = str(spec).strip().rstrip("%").strip()
    try:
        v = float(s)
    except ValueError:
        raise WirecapError(f"bad timing threshold {spec!r} (write it like 50%)") from None
    if not math.isfinite(v):
        raise WirecapError(f"bad timing threshold {spec!r}: must be a finite number (write it like 50%)")
    if v < 0:
        raise WirecapError(f"bad timing threshold {spec!r}: must not be negative")
    return v / 100.0


_KIND_NAMES = {"capture": "a capture", "events": "a universal-event file"}


def _split_ch(ch: str | None) -> tuple[str | None, str | None]:
    if ch is None:
        return None, None
    a, sep, b = ch.partition(":")
    return (a or None), ((b or None) if sep else (a or None))


def diff_captures(a: str, b: str, *, level: str = "events", ch: str | None = None, ignore: Iterable[str] = (),
                  keep: Iterable[str] = (), chunks: bool = False, timing_threshold: float | str | None = None,
                  context_notes: bool = True, shapes: bool = True) -> DiffResult:
    """Compare two captures (or two universal-event JSONL files). Raises WirecapError on bad input.
    `shapes=False` compares ids, times, ports and paths that are volatile only by their shape
    (`wirecap.analysis.idshape`) as they are."""
    if level not in LEVELS:
        raise WirecapError(f"unknown level {level!r} (one of {', '.join(LEVELS)})")
    ignore, keep = tuple(ignore), tuple(keep)
    Normalizer(ignore, keep)  # a bad path fails here, before any reading
    kind_a, kind_b = input_kind(a), input_kind(b)
    if kind_a != kind_b:
        raise WirecapError(f"cannot compare {_KIND_NAMES[kind_a]} ({a}) with {_KIND_NAMES[kind_b]} ({b}): give two "
                           "captures or two universal-event files")
    if level == "wire" and kind_a == "events":
        raise WirecapError(f"{a}: the wire level needs captures, not universal-event files")
    ch_a, ch_b = _split_ch(ch)
    threshold = parse_threshold(timing_threshold)
    result = DiffResult(a, b, level)
    if level == "stats":
        sa, sb = _stats(a, kind_a), _stats(b, kind_b)
        _check_dialects(a, b, {s.get("dialect") for s in sa}, {s.get("dialect") for s in sb})
        result.stats = stats_rows(sa, sb)
    else:
        # long bodies are kept aside (`wirecap.analysis.spill`); B's store shares its file with a forked child
        store_a, store_b = BodyStore(), BodyStore()
        if can_fork():
            store_b.open_file()
        with paused_gc():
            def side(path: str, kind: str, c: str | None, store: BodyStore) -> tuple[list[Unit], list[str]]:
                warnings: list[str] = []
                if level == "events":
                    return _event_units(path, kind, c, ignore, keep, chunks, warnings, shapes, store), warnings
                return _wire_units(path, c, ignore, keep, warnings, shapes, store), warnings

            def pack_b(s: tuple[list[Unit], list[str]]) -> tuple[Any, ...]:  # (in the child)
                store_b.seal()
                return pack_units(s[0], consume=True), s[1], store_b.state()

            def unpack_b(p: tuple[Any, ...]) -> tuple[list[Unit], list[str]]:
                store_b.adopt(p[2])
                return unpack_units(p[0], store_b), list(p[1])

            (units_a, warn_a), (units_b, warn_b) = build_both(
                lambda: side(a, kind_a, ch_a, store_a), lambda: side(b, kind_b, ch_b, store_b), pack_b, unpack_b)
            result.warnings = warn_a + warn_b
            for path, units, c in ((a, units_a, ch_a), (b, units_b, ch_b)):
                if c is not None and not units:
                    raise WirecapError(f"{path}: no channel {c!r}")
            _check_dialects(a, b, {u.dialect for u in units_a}, {u.dialect for u in units_b})
            if ch_a is not None:  # one channel each: compare them whatever their groups
                for u in (*units_a, *units_b):
                    u.group = ("picked",)
            budget = [SHOWN_MAX]
            for ua, ub in pair_units(units_a, units_b):
                pd = PairDiff(ua, ub)
                if ua is not None and ub is not None:
                    pd.script = diff_items(ua.items, ub.items, wire=level == "wire", budget=budget)
                result.pairs.append(pd)
            result.not_shown = max(0, -budget[0])
        result.items_a = sum(len(u.items) for u in units_a)
        result.items_b = sum(len(u.items) for u in units_b)
        if threshold is not None:
            _unit_timing(result, threshold)
    if threshold is not None:
        _session_timing(result, a, b, kind_a, threshold)
    if context_notes:
        result.notes_a, result.notes_b = _notes(a), _notes(b)
    return result


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while the sides are built and aligned: the builders keep
    hundreds of thousands of small acyclic objects, and the collector's repeated passes over them
    cost about a second per 100k messages while finding nothing to free."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _check_dialects(a: str, b: str, da: set[Any], db: set[Any]) -> None:
    da = {d for d in da if d}
    db = {d for d in db if d}
    if da and db and not (da & db):
        raise WirecapError(f"different dialects: {a} is {', '.join(sorted(da))} but {b} is {', '.join(sorted(db))}; "
                           "nothing to compare (pick comparable channels with --ch A:B)")


def _event_units(path: str, kind: str, ch: str | None, ignore: tuple[str, ...], keep: tuple[str, ...],
                 chunks: bool, warnings: list[str] | None = None, shapes: bool = True,
                 store: BodyStore | None = None) -> list[Unit]:
    # (the side's cwd from its process record: CodeBuddy names its project folder, a slug of the cwd,
    # in a prompt long before any item states the cwd itself)
    env = EnvMask() if shapes else None
    events = _decode(path, kind, ch, warnings if warnings is not None else [], shapes, env)
    first = next(events, None)
    dialect = first.dialect if first is not None else None
    extra = [f"unparsed[*].raw.{p}" for p in _volatile(dialect)]
    builder = ItemBuilder(Normalizer((*EVENT_VOLATILE, *extra, *ignore), keep), chunks=chunks,
                          unit_of=(lambda c: "picked") if ch is not None else unit_key, shapes=shapes, store=store)
    builder.env = env
    try:
        if first is not None:
            builder.feed(first)
        for ev in events:
            builder.feed(ev)
    except CaptureFormatError:
        raise
    units = list(builder.finish().values())
    if ch is not None:
        for u in units:
            u.key = ch
    return units


def _wire_units(path: str, ch: str | None, ignore: tuple[str, ...], keep: tuple[str, ...],
                warnings: list[str] | None = None, shapes: bool = True,
                store: BodyStore | None = None) -> list[Unit]:
    from wirecap.capture.reader import CaptureReader

    builder = WireBuilder(ignore, keep, only=ch, shapes=shapes, store=store)
    with CaptureReader(path) as reader:
        for rec in reader:
            builder.feed(rec)
    if warnings is not None:
        warnings.extend(reader.report())
    return [u for u in builder.finish().values() if u.items or u.kind != "process"]


def _notes(path: str) -> list[Any]:
    try:
        from wirecap.analysis.notes import load_notes
    except ImportError:
        return []
    try:
        return list(load_notes(path))
    except Exception:  # noqa: BLE001 - notes are a side show; a broken sidecar must not stop a diff
        return []


# --- stats and timing ----------------------------------------------------------------------------------
STAT_METRICS = (
    # (metric, timing?)
    ("sessions", False),
    ("duration", True),
    ("ttft", True),
    ("llm_calls", False),
    ("failed_calls", False),
    ("retries", False),
    ("prompt_tokens", False),
    ("completion_tokens", False),
    ("cache_read_tokens", False),
    ("cache_creation_tokens", False),
    ("total_tokens", False),
    ("tool_calls", False),
    ("cost_usd", False),
    ("errors", False),
)


def _stats(path: str, kind: str) -> list[dict[str, Any]]:
    try:
        from wirecap.analysis import stats as stats_mod
    except ImportError:
        raise WirecapError("the stats level needs wirecap.analysis.stats, which is not installed") from None
    if kind == "events":
        return list(stats_mod.stats_from_events(read_event_file(path)))
    return list(stats_mod.stats_capture(path))


def _num(v: Any) -> float:
    if isinstance(v, bool) or v is None:
        return 0.0
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, (list, tuple, set)):
        return float(len(v))
    if isinstance(v, dict):
        return float(sum(_num(x) for x in v.values()))
    return 0.0


def stats_totals(sessions: list[dict[str, Any]]) -> dict[str, float | None]:
    """One number per metric over all sessions, each LLM call counted once (stats.capture_totals)."""
    from wirecap.analysis.stats import capture_totals

    return capture_totals(sessions)


def stats_rows(sa: list[dict[str, Any]], sb: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Metric, A, B, delta, ratio; `differs` for non-timing metrics that are not equal."""
    ta, tb = stats_totals(sa), stats_totals(sb)
    rows = []
    for metric, timing in STAT_METRICS:
        va, vb = ta[metric], tb[metric]
        delta = (vb - va) if va is not None and vb is not None else None
        ratio = (vb / va) if va and vb is not None else None
        differs = (not timing) and (abs(delta) > 1e-9 if delta is not None else va != vb)
        rows.append({"metric": metric, "a": _round(va), "b": _round(vb), "delta": _round(delta),
                     "ratio": round(ratio, 4) if ratio is not None else None, "timing": timing,
                     "differs": bool(differs)})
    tools_a: dict[str, float] = {}
    tools_b: dict[str, float] = {}
    from wirecap.analysis.stats import counted_sessions

    for sessions, acc in ((sa, tools_a), (sb, tools_b)):
        for s in counted_sessions(sessions)[0]:  # a call seen on stdout and on the wire counts once
            tc = s.get("tool_calls")
            if isinstance(tc, dict):
                for name, n in tc.items():
                    acc[name] = acc.get(name, 0.0) + _num(n)
    for name in sorted(set(tools_a) | set(tools_b)):
        va, vb = tools_a.get(name, 0.0), tools_b.get(name, 0.0)
        rows.append({"metric": f"tool_calls.{name}", "a": va, "b": vb, "delta": vb - va,
                     "ratio": round(vb / va, 4) if va else None, "timing": False, "differs": va != vb})
    return rows


def _round(v: float | None) -> float | int | None:
    if v is None:
        return None
    if float(v).is_integer() and abs(v) < 1e15:
        return int(v)
    return round(v, 6)


def _regression(metric: str, where: str, va: Any, vb: Any, threshold: float, result: DiffResult) -> None:
    if not isinstance(va, (int, float)) or not isinstance(vb, (int, float)):
        return
    result.timing_checked.append({"metric": metric, "where": where, "a": va, "b": vb})
    # a regression: slower by more than the threshold, and by more than a millisecond (clock noise)
    if vb > va * (1 + threshold) and vb - va > 0.001:
        result.timing.append(TimingFlag(metric, where, float(va), float(vb), threshold))


def _session_timing(result: DiffResult, a: str, b: str, kind: str, threshold: float) -> None:
    try:
        ta, tb = stats_totals(_stats(a, kind)), stats_totals(_stats(b, kind))
    except WirecapError:
        return
    for metric in ("ttft", "duration"):
        _regression(metric, "session", ta[metric], tb[metric], threshold, result)


def _unit_timing(result: DiffResult, threshold: float) -> None:
    """Per channel pair: time from the channel's first to its last record (an HTTP exchange, a process)."""
    for p in result.pairs:
        if p.a is None or p.b is None:
            continue
        if p.a.t_first is None or p.b.t_first is None or p.a.t_last is None or p.b.t_last is None:
            continue
        _regression("channel duration", p.title, p.a.t_last - p.a.t_first, p.b.t_last - p.b.t_first,
                    threshold, result)


# --- small helpers ----------------------------------------------------------------------------------------
def _canon(value: Any) -> bytes:
    # b"%b" % ...: orjson's result can keep a 4 KiB buffer behind a short value; a copy is exact-size
    # (100k items: 13 MB instead of 390 MB), and formatting copies it 3x as fast as bytes(memoryview())
    try:  # JSON-born values: string keys, JSON types (the same bytes, without the slower options)
        return b"%b" % _dumps(value, option=_SORT)
    except TypeError:
        return b"%b" % _dumps(value, option=_SORT | orjson.OPT_NON_STR_KEYS, default=str)


def _compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()
    except TypeError:
        return repr(value)


def _clip(s: str, n: int) -> str:
    s = s.replace("\n", "\\n")
    return s if len(s) <= n else s[: n - 1] + "…"


def _secs(v: float) -> str:
    return f"{v * 1000:.0f}ms" if v < 1 else f"{v:.2f}s"


def _field_json(path: str, old: Any, new: Any) -> dict[str, Any]:
    """A field difference for --json: a side that lacks the field has no `a` / `b` key."""
    out: dict[str, Any] = {"path": path}
    if old is not MISSING:
        out["a"] = old
    if new is not MISSING:
        out["b"] = new
    return out


def _item_json(it: Item) -> dict[str, Any]:
    return {"item": it.name, "ch": it.ch, "seq": list(it.seq), "label": it.describe()}
