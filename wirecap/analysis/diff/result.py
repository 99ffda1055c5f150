"""The result of a diff: per stream pair an edit script of equal spans and changes, the stats
level's rows, timing regressions; their JSON (`--json`) and summary line. Pure data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wirecap.analysis.diff.items import Item, ItemStream
from wirecap.analysis.normalize import MISSING

# Differences beyond this many (in the order of the view) are counted but not detailed: no field
# differences are computed for them and the view and --json stop before them, so two captures that
# have nothing in common cost neither memory for every changed value nor a view of a million lines.
SHOWN_MAX = 10_000


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


# An edit script: ("equal", i1, i2, j1, j2) spans (a[i1:i2] == b[j1:j2]) and Changes, in stream order.
Script = list[tuple[str, int, int, int, int] | Change]


@dataclass(slots=True)
class PairDiff:
    """The aligned sequence of one stream pair (either side may be absent: channel added/removed)."""

    a: ItemStream | None
    b: ItemStream | None
    # ("equal", i1, i2, j1, j2) spans and Change objects, in stream order
    script: Script = field(default_factory=list)

    @property
    def changes(self) -> list[Change]:
        return [s for s in self.script if isinstance(s, Change)]

    @property
    def dialect(self) -> str | None:
        s = self.a or self.b
        return s.dialect if s is not None else None

    @property
    def title(self) -> str:
        a = self.a.key if self.a else "(none)"
        b = self.b.key if self.b else "(none)"
        d = self.dialect
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
                 "dialect": p.dialect,
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
