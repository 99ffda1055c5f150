"""Render a DiffResult: a unified view with context, a summary table, or stats side by side.

Pure functions returning text; colors (ANSI) only when asked (the CLI asks when stdout is a TTY).
Line prefixes: `-` only in A, `+` only in B, `~` changed (followed by its field differences by path),
two spaces for context. Notes (annotations) of either side are shown under the item they point at.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from wirecap.analysis.diff import result as result_mod
from wirecap.analysis.diff.items import Item
from wirecap.analysis.diff.result import Change, DiffResult, PairDiff
from wirecap.analysis.normalize import MISSING

_COLORS = {"-": "\x1b[31m", "+": "\x1b[32m", "~": "\x1b[33m", "@": "\x1b[36m", "#": "\x1b[35m", "!": "\x1b[1;31m"}
_RESET = "\x1b[0m"
VALUE_WIDTH = 72
Emit = Callable[[str, str], None]  # (prefix, text): one line of the view


def render_unified(result: DiffResult, color: bool = False, context: int = 3, width: int | None = None) -> str:
    """The readable view: per channel pair, hunks of changes with `context` equal items around them (at the
    stats level, the table fitted to `width`)."""
    out: list[str] = []

    def emit(prefix: str, text: str) -> None:
        line = f"{prefix} {text}" if prefix not in ("@", "#") else text
        if color and prefix in _COLORS:
            line = _COLORS[prefix] + line + _RESET
        out.append(line)

    if result.level == "stats":
        out.append(render_stats(result, color, width))
    else:
        if not result.equal or result.timing:
            emit("@", f"--- A {result.a}")
            emit("@", f"+++ B {result.b}")
        for pair in result.pairs:
            _render_pair(pair, result, emit, context)
        if result.not_shown:
            emit("@", f"… {result.not_shown} more difference{'s' if result.not_shown != 1 else ''} not shown "
                      f"(the view details the first {result_mod.SHOWN_MAX}; the counts below include all)")
    for flag in result.timing:
        emit("!", flag.describe())
    out.append(result.summary_line())
    return "\n".join(out) + "\n"


def _render_pair(pair: PairDiff, result: DiffResult, emit: Emit, context: int) -> None:
    if pair.a is None or pair.b is None:
        u = pair.a or pair.b
        assert u is not None
        sign = "-" if pair.b is None else "+"
        side = "A" if pair.b is None else "B"
        emit(sign, f"channel {u.key} ({u.dialect or u.kind}, {len(u.items)} items) only in {side}")
        return
    if not pair.changes or not pair.changes[0].shown:
        return
    emit("@", f"@@ {pair.title} @@")
    a_items, b_items = pair.a.items, pair.b.items
    script = pair.script
    n = len(script)
    for k, entry in enumerate(script):
        if isinstance(entry, Change):
            if not entry.shown:  # past SHOWN_MAX: counted only (render_unified says so)
                return
            _change(emit, entry, result)
            continue
        _, i1, i2, j1, _j2 = entry
        for part in _context_parts(i1, i2, before=k > 0, after=k + 1 < n, context=context):
            if part is None:
                emit("@", "  …")
                continue
            for i in part:
                _context(emit, a_items[i], result, j1 + (i - i1), b_items)


def _context_parts(i1: int, i2: int, *, before: bool, after: bool, context: int) -> list[range | None]:
    """Which items of the equal span a[i1:i2] are shown: `context` of them next to a change that
    precedes (`before`) or follows (`after`) it, None where the rest is left out."""
    if before and after and i2 - i1 <= 2 * context:
        return [range(i1, i2)]
    head = range(i1, min(i2, i1 + context)) if before else range(i1, i1)
    tail = range(max(i1 + len(head), i2 - context), i2) if after else range(i2, i2)
    return [head, None, tail] if len(head) + len(tail) < i2 - i1 else [head, tail]


def _context(emit: Emit, item: Item, result: DiffResult, j: int, b_items: list[Item]) -> None:
    emit(" ", f"{item.name} {item.describe()}".rstrip())
    _notes(emit, item, result.notes_a, "A")
    if 0 <= j < len(b_items):
        _notes(emit, b_items[j], result.notes_b, "B")


def _change(emit: Emit, c: Change, result: DiffResult) -> None:
    if c.op == "removed":
        assert c.a is not None
        emit("-", f"{c.a.name} {c.a.describe()}".rstrip())
        _notes(emit, c.a, result.notes_a, "A")
        return
    if c.op == "added":
        assert c.b is not None
        emit("+", f"{c.b.name} {c.b.describe()}".rstrip())
        _notes(emit, c.b, result.notes_b, "B")
        return
    assert c.a is not None and c.b is not None
    other = f" (B: {c.b.name})" if c.b.name != c.a.name else ""
    emit("~", f"{c.a.name} {c.a.describe()}".rstrip() + other)
    for path, old, new in c.fields:
        emit("~", f"  {path}: {describe_change(old, new)}")
    _notes(emit, c.a, result.notes_a, "A")
    _notes(emit, c.b, result.notes_b, "B")


def _notes(emit: Emit, item: Item, notes: list[Any], side: str) -> None:
    if not notes:
        return
    for n in notes:
        try:
            hit = any(n.covers(s, item.ch) for s in item.seq)
        except Exception:  # noqa: BLE001 - a note of an unknown shape is skipped, not fatal
            hit = False
        if hit:
            emit("#", f"    # note {side} {getattr(n, 'id', '')} [{getattr(n, 'tag', '')}]: {getattr(n, 'text', '')}")


def describe_change(old: Any, new: Any) -> str:
    """`"ls" -> "ls -la"`; long texts shown around their first difference; scalar lists as -x +y."""
    if old is MISSING:
        return f"(missing) -> {value_repr(new)}"
    if new is MISSING:
        return f"{value_repr(old)} -> (missing)"
    if isinstance(old, list) and isinstance(new, list):
        return _list_change(old, new)
    if isinstance(old, str) and isinstance(new, str) and (len(old) > VALUE_WIDTH or len(new) > VALUE_WIDTH):
        p = 0
        while p < min(len(old), len(new)) and old[p] == new[p]:
            p += 1
        start = max(0, p - 20)
        lead = "…" if start else ""
        return (f"{lead}{value_repr(old[start:])} -> {lead}{value_repr(new[start:])} "
                f"(first difference at character {p})")
    return f"{value_repr(old)} -> {value_repr(new)}"


def _list_change(old: list[Any], new: list[Any]) -> str:
    """Two lists (of scalars: `valuediff.aligned_diffs(scalar_lists=True)`) as the elements that went and came."""
    removed = [v for v in old if v not in new]
    added = [v for v in new if v not in old]
    if not removed and not added:
        return f"same elements, new order: {value_repr(old)} -> {value_repr(new)}"
    parts = [f"-{value_repr(v, 40)}" for v in removed] + [f"+{value_repr(v, 40)}" for v in added]
    more = ""
    if len(parts) > 12:
        more = f" … ({len(parts) - 12} more)"
        parts = parts[:12]
    return f"{len(old)} -> {len(new)} elements: " + " ".join(parts) + more


def value_repr(v: Any, width: int = VALUE_WIDTH) -> str:
    try:
        s = orjson.dumps(v, option=orjson.OPT_NON_STR_KEYS, default=str).decode()
    except TypeError:
        s = repr(v)
    return s if len(s) <= width else s[: width - 2] + "…" + s[-1]


def render_summary(result: DiffResult) -> str:
    """The table of added / removed / changed by kind (tabulate), and the one-line summary."""
    from tabulate import tabulate  # (imported when a table is drawn: not on every diff's start)

    rows = result.summary_rows()
    lines = []
    if rows:
        lines.append(tabulate([[r["kind"], r["added"], r["removed"], r["changed"]] for r in rows],
                              headers=["kind", "added", "removed", "changed"], tablefmt="simple"))
    for flag in result.timing:
        lines.append(flag.describe())
    lines.append(result.summary_line())
    return "\n".join(lines) + "\n"


def render_stats(result: DiffResult, color: bool = False, width: int | None = None) -> str:
    """Numbers side by side: metric, A, B, delta, ratio (a `*` marks a difference, colored when asked),
    fitted to `width` (`analysis.tables.fit_table`: A and B wrap, numbers are never cut)."""
    from wirecap.analysis.tables import Col, fit_table

    table = []
    for r in result.stats:
        mark = "*" if r["differs"] else ""
        ratio = f"{r['ratio']:.2f}x" if r["ratio"] is not None else ""
        table.append([mark + r["metric"], fmt_stat(r["a"]), fmt_stat(r["b"]), fmt_delta(r["delta"]), ratio])
    cols = [Col("metric", floor=24), Col("A", floor=10), Col("B", floor=10), Col("delta", 1), Col("ratio", 2)]
    text = fit_table(cols, table, width)
    if color:
        text = "\n".join(_COLORS["~"] + line + _RESET if line.startswith("*") else line for line in text.split("\n"))
    return text


def fmt_delta(v: Any) -> str:
    """B - A as the stats tables print it: signed, empty for none."""
    if v is None:
        return ""
    return f"{v:+g}" if isinstance(v, (int, float)) else str(v)


def fmt_stat(v: Any) -> str:
    """A statistic as the stats tables print it: `-` for none, a float to 6 significant digits."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)
