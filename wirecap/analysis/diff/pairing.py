"""Pairing: which stream of side A is compared with which of side B. Pure."""

from __future__ import annotations

from typing import Any

from wirecap.analysis.diff.items import ItemStream

Pair = tuple[ItemStream | None, ItemStream | None]


def pair_streams(a: list[ItemStream], b: list[ItemStream]) -> list[Pair]:
    """Pair streams of the same group: identical ones first (reordering is not a difference), then in
    order. Unpaired streams are returned with None on the other side (A's order, then B's leftovers)."""
    by_group: dict[Any, list[int]] = {}
    for j, u in enumerate(b):
        by_group.setdefault(u.group, []).append(j)
    used_b: set[int] = set()
    paired_a: dict[int, int] = {}
    fp_b = {j: u.fingerprint() for j, u in enumerate(b)}
    for i, u in enumerate(a):  # identical streams first
        fp = u.fingerprint()
        hit = next((j for j in by_group.get(u.group, []) if j not in used_b and fp_b[j] == fp), None)
        if hit is not None:
            used_b.add(hit)
            paired_a[i] = hit
    for i, u in enumerate(a):  # then the first free one of the group, in order
        if i in paired_a:
            continue
        free = next((j for j in by_group.get(u.group, []) if j not in used_b), None)
        if free is not None:
            used_b.add(free)
            paired_a[i] = free
    pairs: list[Pair] = [(u, b[paired_a[i]]) if i in paired_a else (u, None) for i, u in enumerate(a)]
    pairs.extend((None, u) for j, u in enumerate(b) if j not in used_b)
    return pairs
