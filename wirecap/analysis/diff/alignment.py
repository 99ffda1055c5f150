"""Alignment: the edit script between the items of two paired streams, changed items field by field.

Bodies are aligned first (`wirecap.analysis.align`: equal items); what is left is aligned again on
signatures, so an item whose content changed is reported as *changed* with its field differences
(`wirecap.analysis.valuediff.aligned_diffs`), not as one removed and one added. Pure.
"""

from __future__ import annotations

from typing import Any

from wirecap.analysis.align import align
from wirecap.analysis.diff.items import Item
from wirecap.analysis.diff.result import Change, Script
from wirecap.analysis.valuediff import aligned_diffs


class _Scripter:
    """One pair's script under way; `left` (shared by the pairs of a diff) counts the changes that
    may still be detailed."""

    __slots__ = ("script", "left", "wire")

    def __init__(self, left: list[int], wire: bool) -> None:
        self.script: Script = []
        self.left = left
        self.wire = wire

    def changed(self, x: Item, y: Item) -> None:
        self.left[0] -= 1
        if self.left[0] < 0:
            self.script.append(Change("changed", x.kind, x, y, [], False))
        else:
            self.script.append(Change("changed", x.kind, x, y, item_field_diffs(x, y, wire=self.wire)))

    def removed(self, x: Item) -> None:
        self.left[0] -= 1
        self.script.append(Change("removed", x.kind, x, None, [], self.left[0] >= 0))

    def added(self, y: Item) -> None:
        self.left[0] -= 1
        self.script.append(Change("added", y.kind, None, y, [], self.left[0] >= 0))

    def unmatched(self, sub_a: list[Item], sub_b: list[Item]) -> None:
        """Items whose bodies found no equal: paired again by signature."""
        for tag, k1, k2, l1, l2 in align([x.sig for x in sub_a], [x.sig for x in sub_b]):
            if tag == "equal":
                for ia, ib in zip(range(k1, k2), range(l1, l2), strict=True):
                    self.changed(sub_a[ia], sub_b[ib])
            elif tag == "replace":
                self.replaced(sub_a[k1:k2], sub_b[l1:l2])
            else:
                for x in sub_a[k1:k2]:
                    self.removed(x)
                for y in sub_b[l1:l2]:
                    self.added(y)

    def replaced(self, xs: list[Item], ys: list[Item]) -> None:
        """Same-kind pairs in a replaced run are still "changed", in order; the rest removed / added."""
        rest_b = list(ys)
        for x in xs:
            y = next((c for c in rest_b if c.kind == x.kind), None)
            if y is not None:
                rest_b.remove(y)
                self.changed(x, y)
            else:
                self.removed(x)
        for y in rest_b:
            self.added(y)


def diff_items(a: list[Item], b: list[Item], *, wire: bool = False, budget: list[int] | None = None) -> Script:
    """Align two item lists: equal spans and Changes (changed pairs carry field-level differences).
    `budget` (one int, shared by the pairs of a diff): how many more changes are detailed; the rest
    have `shown` False and no fields (`result.SHOWN_MAX`)."""
    s = _Scripter(budget if budget is not None else [len(a) + len(b) + 1], wire)
    for tag, i1, i2, j1, j2 in align([(x.kind, x.body) for x in a], [(x.kind, x.body) for x in b]):
        if tag == "equal":
            s.script.append(("equal", i1, i2, j1, j2))
        else:
            s.unmatched(a[i1:i2], b[j1:j2])
    return s.script


def item_field_diffs(x: Item, y: Item, *, wire: bool = False) -> list[tuple[str, Any, Any]]:
    """Field differences of two changed items, paths from `x`'s name (`tool_call[2].input.command`)."""
    if wire and x.kind == "msg":
        va, vb = x.content(), y.content()
        out: list[tuple[str, Any, Any]] = []
        if va[0] != vb[0]:
            out.append((x.name + " dir", va[0], vb[0]))
        if va[1] != vb[1]:
            out.append((x.name + " sse.event", va[1], vb[1]))
        out.extend(aligned_diffs(va[2], vb[2], (x.kind, x.index), at="recorded", scalar_lists=True))
        return out
    return aligned_diffs(x.content(), y.content(), (x.kind, x.index), at="recorded", scalar_lists=True)
