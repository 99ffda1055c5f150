"""Items: the comparable things of one side, and how the events level makes them from the fold.

An `Item` is one event-level item (`wirecap.analysis.fold` makes them from universal events; this
module adds normalization, a signature and a canonical body) or one wire message (`wire.py`). An
`ItemStream` is the items of one channel unit on one side: what pairing pairs and alignment aligns.
(Not `wirecap.dialects.Unit`, which is a unit's decoding state: a stream is what a side's unit
*says*, as items.) Pure: nothing here opens a file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import orjson

from wirecap.analysis.fold import FoldedItem, Folder, channel_unit, usage_first
from wirecap.analysis.idshape import TELEMETRY_URL, EnvMask, mask_json
from wirecap.analysis.normalize import Normalizer
from wirecap.analysis.spill import INLINE_MAX, BodyStore, body_key
from wirecap.dialects.base import hkey, is_stderr
from wirecap.events import TOOL_CALL

_dumps = orjson.dumps
_SORT = orjson.OPT_SORT_KEYS
REDACTED = "«redacted:".encode()  # a redaction placeholder in canonical JSON (orjson writes UTF-8 as is)
# (looked for with bytes.find, which measured twice as fast as `in` on short bytes)
unit_key = channel_unit  # (a process and its pipes form one unit: `stdout-2` -> `proc-2`)


@dataclass(slots=True)
class Item:
    """One comparable thing on one side: an event item or a wire message."""

    kind: str
    index: int  # ordinal of this kind within its stream on its side
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
class ItemStream:
    """The items of one channel unit on one side: a WebSocket/HTTP channel, or a process with its pipes."""

    key: str
    kind: str  # ws, http, process, pipe, events
    dialect: str | None
    group: tuple[Any, ...]  # streams pair only within the same group
    items: list[Item] = field(default_factory=list)
    t_first: float | None = None
    t_last: float | None = None

    def fingerprint(self) -> int:
        return hash(tuple((it.kind, it.body) for it in self.items))


def pack_streams(streams: list[ItemStream], *, consume: bool = False) -> list[tuple[Any, ...]]:
    """Streams as plain tuples (for `marshal`, see `wirecap.analysis.sides`); the store of their long
    bodies is not in them (`unpack_streams` is given it). `consume`: the streams' item lists are
    turned into the tuples in place (the streams are not usable after), so items and tuples are
    never all held at once."""
    out = []
    for u in streams:
        items: list[Any] = u.items if consume else list(u.items)
        for i, it in enumerate(items):
            items[i] = (it.kind, it.index, it.sig, it.body, it.seq, it.ch, it.t, it.label, it.ref)
        out.append((u.key, u.kind, u.dialect, u.group, u.t_first, u.t_last, items))
    return out


def unpack_streams(packed: list[tuple[Any, ...]], store: BodyStore | None = None) -> list[ItemStream]:
    """The streams of `pack_streams`; the packed item lists become the streams' lists (changed in place)."""
    streams = []
    for key, kind, dialect, group, t_first, t_last, items in packed:
        for i, (kind_, index, sig, body, seq, ch, t, label, ref) in enumerate(items):
            items[i] = Item(kind_, index, sig, body, seq, ch, t, label, ref, store if ref >= 0 else None)
        streams.append(ItemStream(key, kind, dialect, group, items, t_first, t_last))
    return streams


def canon(value: Any) -> bytes:
    """Canonical JSON (sorted keys) of a value: what items are compared by."""
    # b"%b" % ...: orjson's result can keep a 4 KiB buffer behind a short value; a copy is exact-size
    # (100k items: 13 MB instead of 390 MB), and formatting copies it 3x as fast as bytes(memoryview())
    try:  # JSON-born values: string keys, JSON types (the same bytes, without the slower options)
        return b"%b" % _dumps(value, option=_SORT)
    except TypeError:
        return b"%b" % _dumps(value, option=_SORT | orjson.OPT_NON_STR_KEYS, default=str)


def interned(sigs: dict[tuple[Any, ...], tuple[Any, ...]], sig: tuple[Any, ...]) -> tuple[Any, ...]:
    """One shared tuple per distinct signature (a few dozen per capture, not one per item)."""
    try:
        return sigs.setdefault(sig, sig)
    except TypeError:  # (an unhashable part: kept as it is)
        return sig


def new_item(kind: str, index: int, sig: tuple[Any, ...], body: bytes, seq: tuple[int, ...], ch: str, t: float,
             store: BodyStore | None) -> Item:
    """An item whose canonical JSON `body`, when long, goes to `store` (memory stays bounded: see
    `wirecap.analysis.spill`). stderr lines stay whole: they are sorted and searched by content."""
    if store is None or len(body) <= INLINE_MAX or is_stderr(ch):
        return Item(kind, index, sig, body, seq, ch, t)
    return Item(kind, index, sig, body_key(body), seq, ch, t, "", store.put(body), store)


def stderr_multiset(items: list[Item], is_line: Callable[[Item], bool], *, lines_first: bool = False) -> list[Item]:
    """stderr is compared as a multiset of lines: a process's diagnostics come from concurrent parts of
    it (a background flush, a retry), so their order among themselves and against stdout is not
    behaviour. The lines (`is_line`) are sorted by content and put after the other items (before them
    with `lines_first`), and every kind is renumbered. A line that logs an analytics request (names
    its URL) is left out with the request. The one rule of both levels."""
    rest = [it for it in items if not is_line(it)]
    lines = sorted((it for it in items if is_line(it) and not TELEMETRY_URL.search(it.body)),
                   key=lambda it: (it.kind, it.body))
    out = lines + rest if lines_first else rest + lines
    counts: dict[str, int] = {}
    for it in out:
        n = counts.get(it.kind, 0)
        counts[it.kind] = n + 1
        it.index = n
    return out


def _on_stderr(it: Item) -> bool:
    return is_stderr(it.ch)


# --- events level: folded items -> items --------------------------------------------------------------------
class ItemBuilder:
    """Turns the items of the fold (`wirecap.analysis.fold`) into comparable items, per unit. Streaming:
    an item is turned into its compact form (canonical bytes) as soon as the fold hands it out, so
    memory holds only the items still open, not the decoded events. `feed` events, then `finish`."""

    def __init__(self, normalizer: Normalizer, *, chunks: bool = False,
                 unit_of: Callable[[str], str] = channel_unit, shapes: bool = True,
                 store: BodyStore | None = None) -> None:
        self.normalizer = normalizer
        self.store = store  # where long bodies go (None: kept in the items)
        self._sigs: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # one tuple per distinct signature
        self.env: EnvMask | None = EnvMask() if shapes else None  # this side's cwd/HOME/TMPDIR, learned
        self.chunks = chunks
        self._slots: dict[str, list[Item | None]] = {}  # unit -> its items by `pos` (None: still open)
        self._last_unit: str | None = None  # (the unit of the last item, and its slots: usually the next's)
        self._last_slots: list[Item | None] = []
        self._index_free = normalizer.index_free
        self._norm_of: dict[str, Any] = {}  # item kind -> its normalizer (index-free rules only)
        self.folder = Folder(self._take, unit_of=unit_of)
        self.feed = self.folder.feed

    def _take(self, f: FoldedItem) -> None:
        """The fold's sink: the item made comparable, put where it started in its unit. (The hot path
        of the events level: `encode`'s common case is inlined.)"""
        kind, index, ch = f.kind, f.index, f.ch
        content, sig = _CONTENT.get(kind, _other_content)(f, self.chunks)
        norm = self._norm_of.get(kind)
        if norm is not None:  # (index-free rules: every item of a kind normalizes alike)
            try:  # (`canon`, inlined: JSON-born values)
                body = b"%b" % _dumps(norm(content), option=_SORT)
            except TypeError:
                body = canon(norm(content))
            if body.find(REDACTED) >= 0:
                body = canon(self.normalizer(content, (kind, index)))
            if self.env is not None:
                body = mask_json(body, self.env)
        else:
            body = self.encode(kind, index, content)
        try:
            sig = self._sigs.setdefault(sig, sig)  # one shared tuple per distinct signature
        except TypeError:  # (an unhashable part: kept as it is)
            pass
        store = self.store
        if store is None or len(body) <= INLINE_MAX or ch[:6] == "stderr":  # (`is_stderr`, inlined)
            item = Item(kind, index, sig, body, f.seq, ch, f.t)
        else:  # a long body goes to the store (`wirecap.analysis.spill`); stderr lines stay whole (`is_stderr`)
            item = Item(kind, index, sig, body_key(body), f.seq, ch, f.t, "", store.put(body), store)
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

    def encode(self, kind: str, index: int, content: dict[str, Any]) -> bytes:
        """The canonical JSON an item is compared by: normalized, redaction placeholders without their
        fingerprints, values volatile by shape (ids, times, ports: `wirecap.analysis.idshape`) and this
        side's environment paths masked."""
        if self._index_free:  # every item of a kind normalizes alike
            norm = self._norm_of[kind] = self.normalizer.fixed((kind, 0))
            body = canon(norm(content))
        else:
            body = canon(self.normalizer(content, (kind, index), fingerprints=False))
        if body.find(REDACTED) >= 0:  # placeholders: compared without their fingerprints
            body = canon(self.normalizer(content, (kind, index)))
        if self.env is not None:
            body = mask_json(body, self.env)
        return body

    def finish(self) -> dict[str, ItemStream]:
        """The streams, one per unit, in the order their units were first seen."""
        streams: dict[str, ItemStream] = {}
        units = self.folder.finish()
        # (the builder and its fold refer to each other, a cycle the paused collector does not free: it
        # must let go of every item list, or a forked child that packs the items would keep them all)
        self._last_unit, self._last_slots = None, []
        for key, fu in units.items():
            items = cast(list[Item], self._slots.pop(key, []))  # (every slot is filled once the fold finished)
            if "usage" in fu.kinds:
                items = usage_first(items)
            if any(map(is_stderr, fu.channels)):
                items = stderr_multiset(items, _on_stderr)
            streams[key] = ItemStream(key, "events", fu.dialect, ("events", fu.dialect), items, fu.t_first, fu.t_last)
        return streams


def _text_content(f: FoldedItem, chunks: bool) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """A message, reasoning or status: its fields, role and text (and how it was streamed, with `chunks`)."""
    content = dict(f.data)  # (a copy in C, then the text replaced: faster than a filtered comprehension)
    text = content.pop("text", None)
    if f.role is not None:
        content["role"] = f.role
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
        result = content["result"] = dict(f.result.data)
        result.pop("call_id", None)
    elif "result" not in content:
        content["result"] = None
    return content, (f.kind, hkey(content.get("name")))


def _other_content(f: FoldedItem, chunks: bool) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """Any other item: its fields and role; signed by what tells such items apart (`_SIG_HINT`)."""
    kind, ch = f.kind, f.ch
    content = dict(f.data)
    if f.role is not None:
        content["role"] = f.role
    if kind == "unparsed" and isinstance(content.get("reason"), str) and ch in content["reason"]:
        # (a channel's name is its position in the capture, not what was said on it)
        content["reason"] = content["reason"].replace(f" {ch}:", " <ch>:").replace(f" {ch} ", " <ch> ")
    hint = _SIG_HINT.get(kind)
    return content, (kind, hkey(hint(content) if hint is not None else None))


def _raw_type(content: dict[str, Any]) -> Any:
    raw = content.get("raw")
    return raw.get("type") if isinstance(raw, dict) else type(raw).__name__


_CONTENT = {"message": _text_content, "reasoning": _text_content, "status": _text_content,
            TOOL_CALL: _call_content}
# item kind -> what tells its items apart in their signature (beyond the kind)
_SIG_HINT: dict[str, Callable[[dict[str, Any]], Any]] = {
    "usage": lambda c: c.get("scope"),
    "unparsed": _raw_type,
    "error": lambda c: c.get("code"),
}


# --- one line about an item ----------------------------------------------------------------------------------
def describe_content(kind: str, content: Any) -> str:
    """One line about an item: message text, tool name and input, the wire payload..."""
    if kind == "msg" and isinstance(content, list) and len(content) == 3:
        d, ev, payload = content
        return f"{d or ''} " + (f"event:{ev} " if ev else "") + clip(compact(payload), 70)
    if not isinstance(content, dict):
        return clip(compact(content), 70)
    describe = _DESCRIBE.get(kind)
    return describe(content) if describe is not None else clip(compact(content), 70)


def _text_of(key: str) -> Callable[[dict[str, Any]], str]:
    return lambda c: clip(str(c.get(key, "")), 70)


def _fields(*keys: str) -> Callable[[dict[str, Any]], str]:
    return lambda c: " ".join(f"{k}={c[k]}" for k in keys if k in c)


_DESCRIBE: dict[str, Callable[[dict[str, Any]], str]] = {
    "message": _text_of("text"),
    "reasoning": _text_of("text"),
    "status": _text_of("text"),
    TOOL_CALL: lambda c: f"{c.get('name')} {clip(compact(c.get('input')), 60)}",
    "response": lambda c: " ".join(f"{k}={v}" for k, v in c.items()),
    "close": lambda c: " ".join(f"{k}={v}" for k, v in c.items()),
    "session": lambda c: " ".join(str(c[k]) for k in ("model", "version") if c.get(k)),
    "usage": _fields("model", "input_tokens", "output_tokens"),
    "error": _text_of("message"),
    "turn": lambda c: clip(str(c.get("prompt") or ""), 70),
    "turn_end": _fields("stop_reason", "is_error"),
    "unparsed": _text_of("reason"),
}


def compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()
    except TypeError:
        return repr(value)


def clip(s: str, n: int) -> str:
    s = s.replace("\n", "\\n")
    return s if len(s) <= n else s[: n - 1] + "…"
