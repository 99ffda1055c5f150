"""Two captures side by side: the model a two-capture report shows (pure; rendered by `compare_view`).

Built from what `wirecap diff` computes (`wirecap.analysis.diff`: the one fold of each side into
items, streams paired by kind and dialect, items aligned, changed items compared field by field) and
from the two captures' session statistics (`wirecap.analysis.stats`, as the report pass made them):

- `pairs`: each channel pair's conversation aligned, A beside B, one `Row` per item (equal runs
  longer than the context folded into one `gap` row), a changed row with its field differences by
  path (`message[0].text`, as `wirecap diff` names them);
- `first`: the FIRST divergence, the one a person would point at: the earliest difference in time
  (each side's time counted from its own first item), differences in what was said (a prompt, a
  message, a tool call, an error, a channel only one side has) before those that follow from them
  or only tell how the run went (usage, turn ends, status lines, stderr lines);
- `stats`: the numbers of `wirecap stats` side by side, with B - A and B/A;
- `unified`: the unified diff (`wirecap diff A B`), cut at MAX_UNIFIED characters.

Labels say A and B everywhere; the file names appear once (`a_path`, `b_path`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from wirecap.analysis.diff.alignment import item_field_diffs
from wirecap.analysis.diff.items import Item, ItemStream
from wirecap.analysis.diff.render import describe_change, render_unified
from wirecap.analysis.diff.result import Change, DiffResult, PairDiff
from wirecap.analysis.diff.stats_level import stats_rows
from wirecap.analysis.normalize import MISSING

CONTEXT = 3  # equal items shown next to a difference
MAX_ROWS = 600  # rows of the aligned conversations (all pairs); past it, counted
MAX_FIELDS = 40  # field differences listed per changed item
MAX_UNIFIED = 200_000  # characters of the unified diff kept
MAX_VALUE = 2000  # characters of one field value kept (as text)
MAX_WARNINGS = 20  # the readers' complaints listed (a damaged capture may have one per line)
# Items that follow from what was said (a changed prompt changes the token counts and the turn's end)
# or tell how the run went rather than what was said (an agent's status lines): a first divergence
# among them is only named when nothing that was said differs. (stderr lines count with them.)
CONSEQUENCES = frozenset(("usage", "turn_end", "session_end", "status", "unparsed"))


@dataclass(slots=True)
class Ref:
    """One item of one side, as the comparison shows it: `name` (`message[0]`), a one-line `label`,
    where it is on the wire (`seq`: its first record, `ch`) and when (`t`, seconds in its capture)."""

    side: str  # "A" or "B"
    name: str
    kind: str
    label: str
    seq: int | None
    ch: str
    t: float
    call: int | None = None  # the LLM call of its capture's thread it belongs to (a wire item)

    def anchor(self) -> str:
        """The id of its record's row in the HTML report (A is capture 0, B capture 1)."""
        return f"seq-{self.seq}" if self.side == "A" else f"c1-seq-{self.seq}"

    def call_anchor(self) -> str | None:
        """The id of its call in the HTML report's thread."""
        return None if self.call is None else f"c{0 if self.side == 'A' else 1}-call-{self.call}"

    def where(self) -> str:
        call = f"call {self.call}, " if self.call is not None else ""
        return f"{self.side} {call}seq {self.seq}" if self.seq is not None else f"{self.side} {self.ch}"

    def to_json(self) -> dict[str, Any]:
        out = {"name": self.name, "kind": self.kind, "label": self.label, "seq": self.seq, "ch": self.ch,
               "t": round(self.t, 6)}
        if self.call is not None:
            out["call"] = self.call
        return out


@dataclass(slots=True)
class FieldDiff:
    """One field-level difference: its path, each side's value (None with `in_a`/`in_b` False when a
    side lacks the field) and the one-line text `wirecap diff` prints for it."""

    path: str
    a: Any
    b: Any
    in_a: bool
    in_b: bool
    text: str

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path}
        if self.in_a:
            out["a"] = self.a
        if self.in_b:
            out["b"] = self.b
        return out


@dataclass(slots=True)
class Row:
    """One line of an aligned conversation: `equal` (A's item beside B's), `changed` (with its field
    differences), `removed` (only in A), `added` (only in B), `gap` (`skipped` equal items folded) or
    `more` (`skipped` more items of a channel only one side has)."""

    op: str
    a: Ref | None = None
    b: Ref | None = None
    fields: list[FieldDiff] = field(default_factory=list)
    fields_omitted: int = 0
    skipped: int = 0
    first: bool = False  # the first divergence
    moved: str | None = None  # an item only one side has here, said the same at another place: the other's name

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op}
        if self.op in ("gap", "more"):
            out["skipped"] = self.skipped
            return out
        if self.a is not None:
            out["a"] = self.a.to_json()
        if self.b is not None:
            out["b"] = self.b.to_json()
        if self.op == "changed":
            out["fields"] = [f.to_json() for f in self.fields]
            if self.fields_omitted:
                out["fields_omitted"] = self.fields_omitted
        if self.first:
            out["first_divergence"] = True
        if self.moved is not None:
            out["moved"] = self.moved
        return out


@dataclass(slots=True)
class PairView:
    """One channel pair: A's channel (unit) beside B's. `only` is the side that alone has it."""

    a_key: str | None
    b_key: str | None
    dialect: str | None
    items_a: int
    items_b: int
    rows: list[Row] = field(default_factory=list)
    differences: int = 0

    @property
    def only(self) -> str | None:
        return "A" if self.b_key is None else ("B" if self.a_key is None else None)

    @property
    def title(self) -> str:
        d = f" ({self.dialect})" if self.dialect else ""
        return f"A {self.a_key or '(none)'} · B {self.b_key or '(none)'}{d}"

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a_key, "b": self.b_key, "dialect": self.dialect, "items_a": self.items_a,
                "items_b": self.items_b, "differences": self.differences, "rows": [r.to_json() for r in self.rows]}


@dataclass(slots=True)
class Divergence:
    """The first divergence: which pair, which row (None when it is not among the rows kept), what
    happened (`op`: changed, added, removed, channel), in one sentence (`what`), and its field paths."""

    pair: int
    row: int | None
    op: str
    what: str
    where: str
    a: Ref | None
    b: Ref | None
    paths: list[str] = field(default_factory=list)
    fields: list[FieldDiff] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pair": self.pair, "op": self.op, "what": self.what, "where": self.where,
                               "paths": self.paths, "fields": [f.to_json() for f in self.fields]}
        if self.a is not None:
            out["a"] = self.a.to_json()
        if self.b is not None:
            out["b"] = self.b.to_json()
        return out


@dataclass(slots=True)
class StatRow:
    """One number of `wirecap stats` for A and B: B - A, B/A, and whether it differs (timings never
    count as a difference: they vary from run to run)."""

    metric: str
    a: Any
    b: Any
    delta: Any
    ratio: float | None
    differs: bool
    timing: bool

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "a": self.a, "b": self.b, "delta": self.delta, "ratio": self.ratio,
                "differs": self.differs, "timing": self.timing}


@dataclass
class Comparison:
    """What a two-capture report says about A and B together."""

    a_path: str
    b_path: str
    equal: bool
    summary: str  # the one line `wirecap diff` ends with
    counts: dict[str, int]
    by_kind: list[dict[str, Any]]
    pairs: list[PairView] = field(default_factory=list)
    first: Divergence | None = None
    stats: list[StatRow] = field(default_factory=list)
    stats_note: str = ""  # why there are no statistics side by side
    unified: str = ""
    unified_cut: int = 0  # characters of the unified diff left out
    rows_omitted: int = 0  # aligned rows past MAX_ROWS
    not_shown: int = 0  # differences the diff counted but did not detail (its SHOWN_MAX)
    timing: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    failed: str = ""  # why A and B could not be compared item by item (then only their numbers are)

    def rename(self, path: str, name: str) -> None:
        """Call the capture read from `path` by `name` (standard input is `-`, not its temporary copy)."""
        self.a_path = name if self.a_path == path else self.a_path
        self.b_path = name if self.b_path == path else self.b_path
        self.unified = self.unified.replace(path, name)

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a_path, "b": self.b_path, "equal": self.equal, "summary": self.summary,
            "counts": self.counts, "by_kind": self.by_kind,
            "first_divergence": self.first.to_json() if self.first is not None else None,
            "pairs": [p.to_json() for p in self.pairs], "rows_omitted": self.rows_omitted,
            "stats": [s.to_json() for s in self.stats], "stats_note": self.stats_note or None,
            "unified_cut": self.unified_cut, "not_shown": self.not_shown, "timing": self.timing,
            "warnings": self.warnings, **({"failed": self.failed} if self.failed else {}),
        }


# --- building (pure: a DiffResult and the sessions in, a Comparison out) ---------------------------------


Redact = Callable[[Any], Any]


def _same(v: Any) -> Any:
    return v


def _capped(lines: list[str], total: int) -> list[str]:
    if total <= MAX_WARNINGS:
        return lines
    return [*lines[:MAX_WARNINGS], f"… {total - MAX_WARNINGS} more (`wirecap diff A B` lists them all)"]


def _cut_values(old: Any, new: Any) -> tuple[Any, Any]:
    """Two values of a field as the model keeps them: themselves, or long strings cut to MAX_VALUE
    characters around their first difference (saying how much was left out before and after)."""
    if not (isinstance(old, str) and isinstance(new, str)) or max(len(old), len(new)) <= MAX_VALUE:
        return (_cut_one(old, 0), _cut_one(new, 0))
    p = 0
    limit = min(len(old), len(new))
    while p < limit and old[p] == new[p]:
        p += 1
    start = max(0, p - MAX_VALUE // 4)
    return _cut_one(old, start), _cut_one(new, start)


def _cut_one(v: Any, start: int) -> Any:
    if not isinstance(v, str) or (start == 0 and len(v) <= MAX_VALUE):
        return v
    end = start + MAX_VALUE
    head = f"({start} characters before) …" if start else ""
    tail = f"… ({len(v) - end} more characters)" if len(v) > end else ""
    return head + v[start:end] + tail


class _Builder:
    """One comparison under way: the rows it may still make, where each side's time starts, and which
    call of each side's thread an item belongs to."""

    def __init__(self, res: DiffResult, context: int, max_rows: int, text: Redact, value: Redact,
                 calls: tuple[CallIndex, CallIndex]) -> None:
        self.calls = {"A": calls[0], "B": calls[1]}
        self.context = context
        self.rows_left = max_rows
        self.rows_omitted = 0
        self.text = text
        self.value = value
        self.base = {side: _first_t(streams) for side, streams in
                     (("A", [p.a for p in res.pairs]), ("B", [p.b for p in res.pairs]))}

    def ref(self, side: str, it: Item) -> Ref:
        seq = it.seq[0] if it.seq else None
        return Ref(side, it.name, it.kind, self.text(it.describe()), seq, it.ch, it.t, self.calls[side].of(it.ch, seq))

    def fields(self, c: Change) -> tuple[list[FieldDiff], int]:
        out = []
        for path, old, new in c.fields[:MAX_FIELDS]:
            va, vb = _cut_values(old, new)
            a = None if old is MISSING else self.value(va)
            b = None if new is MISSING else self.value(vb)
            out.append(FieldDiff(path, a, b, old is not MISSING, new is not MISSING,
                                 self.text(describe_change(old, new))))
        return out, max(0, len(c.fields) - MAX_FIELDS)

    def change_row(self, c: Change, moved_to: str | None = None) -> Row:
        a = self.ref("A", c.a) if c.a is not None else None
        b = self.ref("B", c.b) if c.b is not None else None
        fields, omitted = self.fields(c) if c.op == "changed" else ([], 0)
        return Row(c.op, a, b, fields, omitted, moved=moved_to)

    def add(self, rows: list[Row], make: Callable[[], Row]) -> None:
        """The row `make` makes, while there is room (past MAX_ROWS it is counted, not made: describing
        an item and its field differences is what costs)."""
        if self.rows_left <= 0:
            self.rows_omitted += 1
            return
        self.rows_left -= 1
        rows.append(make())

    def pair(self, p: PairDiff) -> PairView:
        view = PairView(p.a.key if p.a else None, p.b.key if p.b else None, p.dialect,
                        len(p.a.items) if p.a else 0, len(p.b.items) if p.b else 0)
        if p.a is None or p.b is None:
            self._lone(view, p.a or p.b)
            view.differences = 1
            return view
        view.differences = len(p.changes)
        moves = moved(p)
        n = len(p.script)
        for k, entry in enumerate(p.script):
            if isinstance(entry, Change):
                self.add(view.rows, partial(self.change_row, entry, moves.get(id(entry))))
            else:
                self._equal(view.rows, p.a, p.b, entry, before=k > 0, after=k + 1 < n)
        return view

    def _lone(self, view: PairView, stream: ItemStream | None) -> None:
        """A channel only one side has: its first items, the rest folded."""
        assert stream is not None
        side, op = ("B", "added") if view.a_key is None else ("A", "removed")
        shown = stream.items[: 2 * self.context]
        for it in shown:
            self.add(view.rows, partial(self._lone_row, op, side, it))
        if len(stream.items) > len(shown):
            self.add(view.rows, lambda: Row("more", skipped=len(stream.items) - len(shown)))

    def _lone_row(self, op: str, side: str, it: Item) -> Row:
        r = self.ref(side, it)
        return Row(op, r if side == "A" else None, r if side == "B" else None)

    def _equal(self, rows: list[Row], a: ItemStream, b: ItemStream, span: tuple[Any, ...], *, before: bool,
               after: bool) -> None:
        """An equal span: `context` items next to the differences around it, the rest one gap row (a
        pair with no difference at all is one gap row)."""
        _, i1, i2, j1, _j2 = span
        ctx = self.context
        if before and after and i2 - i1 <= 2 * ctx + 1:
            head, tail = range(i1, i2), range(i2, i2)
        else:
            head = range(i1, min(i2, i1 + ctx)) if before else range(i1, i1)
            tail = range(max(i1 + len(head), i2 - ctx), i2) if after else range(i2, i2)
        for i in head:
            self.add(rows, partial(self._equal_row, a, b, i, j1 + i - i1))
        skipped = i2 - i1 - len(head) - len(tail)
        if skipped > 0:
            self.add(rows, lambda: Row("gap", skipped=skipped))
        for i in tail:
            self.add(rows, partial(self._equal_row, a, b, i, j1 + i - i1))

    def _equal_row(self, a: ItemStream, b: ItemStream, i: int, j: int) -> Row:
        return Row("equal", self.ref("A", a.items[i]), self.ref("B", b.items[j]))


def moved(p: PairDiff) -> dict[int, str]:
    """The items one side has here and the other elsewhere in the same pair, the same (an order
    difference, not a difference in what was said): id of the Change -> the other side's item name."""
    removed: dict[tuple[str, bytes], list[Change]] = {}
    for c in p.changes:
        if c.op == "removed" and c.a is not None:
            removed.setdefault((c.a.kind, c.a.body), []).append(c)
    out: dict[int, str] = {}
    if not removed:
        return out
    for c in p.changes:
        if c.op == "added" and c.b is not None:
            twins = removed.get((c.b.kind, c.b.body))
            if twins:
                twin = twins.pop(0)
                assert twin.a is not None
                out[id(c)], out[id(twin)] = twin.a.name, c.b.name
    return out


class CallIndex:
    """Which LLM call of a capture's thread an item belongs to: the last call sent on its channel at or
    before its first record (`report.thread`'s calls: anything with `ch`, `seq` and `n`)."""

    def __init__(self, threads: Iterable[Any] = ()) -> None:
        self._by_ch: dict[str, list[tuple[int, int]]] = {}
        for th in threads:
            for c in getattr(th, "calls", ()):
                self._by_ch.setdefault(c.ch, []).append((c.seq, c.n))
        for calls in self._by_ch.values():
            calls.sort()

    def of(self, ch: str, seq: int | None) -> int | None:
        calls = self._by_ch.get(ch)
        if not calls or seq is None:
            return None
        i = bisect_right(calls, (seq, 1 << 62)) - 1
        return calls[i][1] if i >= 0 else None


def _first_t(streams: Iterable[ItemStream | None]) -> float:
    """Where a side's time starts: its first item's (each side's times are compared from their start)."""
    ts = [s.t_first for s in streams if s is not None and s.t_first is not None]
    return min(ts) if ts else 0.0


def build_comparison(res: DiffResult, sessions_a: list[dict[str, Any]] | None,
                     sessions_b: list[dict[str, Any]] | None, *, text: Redact = _same, value: Redact = _same,
                     context: int = CONTEXT, max_rows: int = MAX_ROWS, threads: tuple[Any, Any] = ((), ())
                     ) -> Comparison:
    """The comparison of `res` (an events-level `diff_captures` result) with the two captures' sessions
    (None: their statistics failed). `text` and `value` redact what is shown (texts, values); `threads`
    (each capture's `report.thread` threads) name the LLM call each wire item belongs to."""
    b = _Builder(res, context, max_rows, text, value, (CallIndex(threads[0]), CallIndex(threads[1])))
    cmp = Comparison(res.a, res.b, res.equal, res.summary_line(), res.counts(), list(res.summary_rows()),
                     not_shown=res.not_shown, timing=[f.describe() for f in res.timing],
                     warnings=_capped([text(w) for w in res.warnings[:MAX_WARNINGS + 1]], len(res.warnings)))
    cmp.pairs = [b.pair(p) for p in res.pairs]
    cmp.rows_omitted = b.rows_omitted
    cmp.first = first_divergence(res, b, cmp.pairs)
    _add_stats(cmp, sessions_a, sessions_b)
    unified = text(render_unified(res, color=False))
    if len(unified) > MAX_UNIFIED:
        cmp.unified_cut = len(unified) - MAX_UNIFIED
        unified = unified[:MAX_UNIFIED]
    cmp.unified = unified
    return cmp


def stats_only(a: str, b: str, sessions: tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None],
               failed: str) -> Comparison:
    """A and B when their items cannot be compared (`failed` says why: two dialects with nothing in
    common, a decoder bug): their numbers side by side still can."""
    cmp = Comparison(a, b, False, failed, {}, [], failed=failed)
    _add_stats(cmp, *sessions)
    return cmp


def _add_stats(cmp: Comparison, sessions_a: list[dict[str, Any]] | None,
               sessions_b: list[dict[str, Any]] | None) -> None:
    if sessions_a is None or sessions_b is None:
        cmp.stats_note = "no statistics side by side: the statistics of " + (
            "A" if sessions_a is None else "B") + " failed"
        return
    cmp.stats = [StatRow(r["metric"], r["a"], r["b"], r["delta"], r["ratio"], r["differs"], r["timing"])
                 for r in stats_rows(sessions_a, sessions_b)]


# --- the first divergence --------------------------------------------------------------------------------


def _rank(b: _Builder, k: int, index: int, it: Item, side: str, is_moved: bool) -> tuple[Any, ...]:
    """Where a difference comes: what was said before its consequences and before what was only said
    at another place, then earlier first (in its side's time from its start), then in the order of
    the pairs and of the script."""
    later = is_moved or it.kind in CONSEQUENCES or it.ch[:6] == "stderr"
    return (later, round(it.t - b.base[side], 6), k, index)


def _candidates(res: DiffResult, b: _Builder) -> list[tuple[tuple[Any, ...], int, Any]]:
    """(rank, pair index, the Change or the lone stream) of every difference."""
    out: list[tuple[tuple[Any, ...], int, Any]] = []
    for k, p in enumerate(res.pairs):
        if p.a is None or p.b is None:
            u = p.a or p.b
            assert u is not None
            side = "A" if p.b is None else "B"
            t = (u.t_first if u.t_first is not None else b.base[side]) - b.base[side]
            out.append(((False, round(t, 6), k, -1), k, u))
            continue
        moves = moved(p)
        for index, c in enumerate(p.script):
            if isinstance(c, Change):
                it, side = (c.a, "A") if c.a is not None else (c.b, "B")
                assert it is not None
                out.append((_rank(b, k, index, it, side, id(c) in moves), k, c))
    return out


def first_divergence(res: DiffResult, b: _Builder, pairs: list[PairView]) -> Divergence | None:
    """The first divergence (None when the captures are equal), its row marked in `pairs`."""
    found = _candidates(res, b)
    if not found:
        return None
    _, k, what = min(found, key=lambda c: c[0])
    view = pairs[k]
    if isinstance(what, ItemStream):
        div = _lone_divergence(k, view, what, pairs, b)
        row_of: Callable[[Row], bool] = lambda r: r.op not in ("gap", "more")  # noqa: E731 - the lone channel's first row
    else:
        div = _change_divergence(k, view, what, b, res.pairs[k].script)
        row_of = lambda r: r.op == what.op and _same_item(r, what)  # noqa: E731
    for i, r in enumerate(view.rows):
        if row_of(r):
            r.first = True
            div.row = i
            break
    return div


def _same_item(r: Row, c: Change) -> bool:
    return ((r.a is None) == (c.a is None) and (r.b is None) == (c.b is None)
            and (c.a is None or (r.a is not None and r.a.name == c.a.name))
            and (c.b is None or (r.b is not None and r.b.name == c.b.name)))


def _lone_divergence(k: int, view: PairView, u: ItemStream, pairs: list[PairView], b: _Builder) -> Divergence:
    side = view.only or "?"
    other = "B" if side == "A" else "A"
    what = f"channel {u.key} ({u.dialect or u.kind}, {len(u.items)} items) only in {side}"
    instead = [f"{p.a_key if other == 'A' else p.b_key} ({p.dialect})" for p in pairs if p.only == other]
    if instead:
        what += f"; {other} has {', '.join(instead)} instead"
    first = u.items[0] if u.items else None
    ref = b.ref(side, first) if first is not None else None
    return Divergence(k, None, "channel", what, view.title, ref if side == "A" else None,
                      ref if side == "B" else None)


def _change_divergence(k: int, view: PairView, c: Change, b: _Builder, script: list[Any]) -> Divergence:
    a = b.ref("A", c.a) if c.a is not None else None
    bb = b.ref("B", c.b) if c.b is not None else None
    fields: list[FieldDiff] = []
    if c.op == "changed":
        fields = b.fields(c)[0]
        assert a is not None and bb is not None
        other = f" (B: {bb.name})" if bb.name != a.name else ""
        what = f"{a.name}{other} differs: " + _field_texts(fields)
    else:
        mine = bb if c.op == "added" else a
        assert mine is not None
        what = f"only in {mine.side}: {mine.name} {mine.label}".rstrip()
        twin = _instead(c, script)
        if twin is not None:
            other = "A" if mine.side == "B" else "B"
            it = twin.a if other == "A" else twin.b
            assert it is not None
            x, y = twin.a or c.a, twin.b or c.b
            if it.kind == mine.kind and x is not None and y is not None:  # the same kind, near it: compared
                fields = b.fields(Change("changed", it.kind, x, y, item_field_diffs(x, y)))[0]
                what += f"; {other}'s {it.name}, near it, differs: " + _field_texts(fields)
            else:
                what += f"; {other} has {it.name} there: {b.text(it.describe())}".rstrip(" :")
    return Divergence(k, None, c.op, what, view.title, a, bb, [f.path for f in fields], fields)


def _field_texts(fields: list[FieldDiff]) -> str:
    text = "; ".join(f"{f.path}: {f.text}" for f in fields[:3])
    return text + (f"; and {len(fields) - 3} more field(s)" if len(fields) > 3 else "")


def _instead(c: Change, script: list[Any]) -> Change | None:
    """What the other side says at the same place, when it says something else there: the nearest item
    only it has (not a consequence) in the same run of differences."""
    at = next(i for i, e in enumerate(script) if e is c)
    op = "removed" if c.op == "added" else "added"
    for dist in range(1, len(script)):
        near = [script[i] for i in (at - dist, at + dist) if 0 <= i < len(script)]
        for e in near:
            if isinstance(e, Change) and e.op == op and e.kind not in CONSEQUENCES:
                return e
        if not any(isinstance(e, Change) for e in near):
            return None  # (the run of differences ends on both sides)
    return None
