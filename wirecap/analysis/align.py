"""Sequence alignment for diffs: Myers' O(ND) algorithm in linear space, anchored by patience.

Two streams of message or item signatures (any hashable values) are aligned into opcodes like
difflib's (`equal`, `delete`, `insert`, `replace` with half-open index ranges). Why not difflib:
its junk heuristics make results depend on frequency, and it is quadratic on long streams with
repeated signatures. Here:

- a common prefix and suffix are matched first (the usual case: two runs that mostly agree);
- large ranges are split at *patience anchors* (values unique on both sides, kept in order by a
  longest increasing subsequence), so 100k-element streams become many small problems;
- what is left is solved by Myers' middle-snake bisection (minimal edit script, O(N) memory);
- a range whose edit distance exceeds `max_d` is given up as one `replace` (bounded time on two
  streams that have nothing in common), which keeps the worst case O((N+M) * max_d).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Hashable, Sequence

Opcode = tuple[str, int, int, int, int]

PATIENCE_MIN = 512  # ranges with at least this many elements (both sides) try anchors first
MAX_D = 1000  # edit distance at which bisection of one range gives up


def _intern(a: Sequence[Hashable], b: Sequence[Hashable]) -> tuple[list[int], list[int]]:
    """Map values to small ints so the inner loops compare ints."""
    ids: dict[Hashable, int] = {}
    ia = [ids.setdefault(x, len(ids)) for x in a]
    ib = [ids.setdefault(x, len(ids)) for x in b]
    return ia, ib


def matching_blocks(a: Sequence[Hashable], b: Sequence[Hashable], *, patience_min: int = PATIENCE_MIN,
                    max_d: int = MAX_D) -> list[tuple[int, int, int]]:
    """Matched runs `(i, j, n)` (a[i:i+n] == b[j:j+n]) in increasing order, adjacent runs merged."""
    ia, ib = _intern(a, b)
    blocks: list[tuple[int, int, int]] = []
    stack = [(0, len(ia), 0, len(ib))]
    while stack:
        alo, ahi, blo, bhi = stack.pop()
        # common prefix / suffix
        n = 0
        while alo + n < ahi and blo + n < bhi and ia[alo + n] == ib[blo + n]:
            n += 1
        if n:
            blocks.append((alo, blo, n))
            alo += n
            blo += n
        n = 0
        while ahi - n > alo and bhi - n > blo and ia[ahi - n - 1] == ib[bhi - n - 1]:
            n += 1
        if n:
            blocks.append((ahi - n, bhi - n, n))
            ahi -= n
            bhi -= n
        if alo == ahi or blo == bhi:
            continue
        if (ahi - alo) + (bhi - blo) >= patience_min:
            anchors = _patience_anchors(ia, ib, alo, ahi, blo, bhi)
            if anchors:
                pi, pj = alo, blo
                for i, j in anchors:
                    blocks.append((i, j, 1))
                    stack.append((pi, i, pj, j))
                    pi, pj = i + 1, j + 1
                stack.append((pi, ahi, pj, bhi))
                continue
        split = _bisect(ia, ib, alo, ahi, blo, bhi, max_d)
        if split is None:
            continue  # nothing in common (or too far apart): the whole range is a replace
        x, y = split
        stack.append((alo, x, blo, y))
        stack.append((x, ahi, y, bhi))
    blocks.sort()
    merged: list[tuple[int, int, int]] = []
    for i, j, n in blocks:
        if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
            pi, pj, pn = merged[-1]
            merged[-1] = (pi, pj, pn + n)
        else:
            merged.append((i, j, n))
    return merged


def align(a: Sequence[Hashable], b: Sequence[Hashable], *, patience_min: int = PATIENCE_MIN,
          max_d: int = MAX_D) -> list[Opcode]:
    """Opcodes turning `a` into `b`: `(tag, i1, i2, j1, j2)`, tag in equal/delete/insert/replace."""
    ops: list[Opcode] = []
    i = j = 0
    for bi, bj, n in [*matching_blocks(a, b, patience_min=patience_min, max_d=max_d), (len(a), len(b), 0)]:
        if i < bi and j < bj:
            ops.append(("replace", i, bi, j, bj))
        elif i < bi:
            ops.append(("delete", i, bi, j, j))
        elif j < bj:
            ops.append(("insert", i, i, j, bj))
        if n:
            ops.append(("equal", bi, bi + n, bj, bj + n))
        i, j = bi + n, bj + n
    return ops


def edit_count(ops: list[Opcode]) -> int:
    """Insertions plus deletions of an edit script (a replace of n by m counts n + m)."""
    return sum((i2 - i1) + (j2 - j1) for tag, i1, i2, j1, j2 in ops if tag != "equal")


def _patience_anchors(a: list[int], b: list[int], alo: int, ahi: int, blo: int, bhi: int) -> list[tuple[int, int]]:
    """Pairs (i, j) of values occurring exactly once in each range, longest run in the same order."""
    count_a: dict[int, int] = {}
    for i in range(alo, ahi):
        v = a[i]
        count_a[v] = -1 if v in count_a else i
    pos_b: dict[int, int] = {}
    for j in range(blo, bhi):
        v = b[j]
        if count_a.get(v, -1) >= 0:
            pos_b[v] = -1 if v in pos_b else j
    pairs = [(count_a[v], j) for v, j in pos_b.items() if j >= 0]
    if not pairs:
        return []
    pairs.sort()
    # longest increasing subsequence on j (patience sorting with back pointers)
    tails: list[int] = []
    tail_idx: list[int] = []
    back: list[int] = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        p = bisect_left(tails, j)
        if p == len(tails):
            tails.append(j)
            tail_idx.append(k)
        else:
            tails[p] = j
            tail_idx[p] = k
        back[k] = tail_idx[p - 1] if p else -1
    out: list[tuple[int, int]] = []
    k = tail_idx[-1]
    while k >= 0:
        out.append(pairs[k])
        k = back[k]
    out.reverse()
    return out


def _bisect(a: list[int], b: list[int], alo: int, ahi: int, blo: int, bhi: int,
            max_d: int) -> tuple[int, int] | None:
    """Myers' middle snake: a point (x, y) on a minimal edit path, or None (no match / over budget)."""
    snake = _MiddleSnake(a, b, alo, ahi, blo, bhi)
    for d in range(min(snake.dmax, max_d) + 1):
        hit = snake.forward(d)
        if hit is None:
            hit = snake.backward(d)
        if hit is not None:
            return hit
    return None


class _MiddleSnake:
    """The state of one bisection: the furthest-reaching paths forward (`v1`) and backward (`v2`) per
    diagonal, and the diagonal ranges still inside the grid. Each step `d` extends both once."""

    __slots__ = ("a", "b", "alo", "ahi", "blo", "bhi", "n", "m", "dmax", "off", "size", "v1", "v2", "delta", "front",
                 "k1start", "k1end", "k2start", "k2end")

    def __init__(self, a: list[int], b: list[int], alo: int, ahi: int, blo: int, bhi: int) -> None:
        self.a, self.b, self.alo, self.ahi, self.blo, self.bhi = a, b, alo, ahi, blo, bhi
        self.n = n = ahi - alo
        self.m = m = bhi - blo
        self.dmax = dmax = (n + m + 1) // 2
        self.off = dmax
        self.size = size = 2 * dmax + 2
        self.v1 = [-1] * size
        self.v2 = [-1] * size
        self.v1[dmax + 1] = 0
        self.v2[dmax + 1] = 0
        self.delta = n - m
        self.front = self.delta % 2 != 0  # (odd delta: the paths meet while going forward)
        self.k1start = self.k1end = self.k2start = self.k2end = 0

    def forward(self, d: int) -> tuple[int, int] | None:
        """Extend the forward paths to edit distance `d`; the meeting point if one overlaps a backward path."""
        a, b, alo, blo, n, m, off, v1 = self.a, self.b, self.alo, self.blo, self.n, self.m, self.off, self.v1
        k1start, k1end = self.k1start, self.k1end
        hit = None
        for k1 in range(-d + k1start, d + 1 - k1end, 2):
            k1o = off + k1
            x1 = v1[k1o + 1] if k1 == -d or k1 != d and v1[k1o - 1] < v1[k1o + 1] else v1[k1o - 1] + 1
            y1 = x1 - k1
            while x1 < n and y1 < m and a[alo + x1] == b[blo + y1]:
                x1 += 1
                y1 += 1
            v1[k1o] = x1
            if x1 > n:
                k1end += 2
            elif y1 > m:
                k1start += 2
            elif self.front and self._meets_backward(off + self.delta - k1, x1):
                hit = (alo + x1, blo + y1)
                break
        self.k1start, self.k1end = k1start, k1end
        return hit

    def _meets_backward(self, k2o: int, x1: int) -> bool:
        v2 = self.v2
        return 0 <= k2o < self.size and v2[k2o] != -1 and x1 >= self.n - v2[k2o]

    def backward(self, d: int) -> tuple[int, int] | None:
        """Extend the backward paths to edit distance `d`; the meeting point if one overlaps a forward path."""
        a, b, ahi, bhi, n, m, off, v2 = self.a, self.b, self.ahi, self.bhi, self.n, self.m, self.off, self.v2
        k2start, k2end = self.k2start, self.k2end
        hit = None
        for k2 in range(-d + k2start, d + 1 - k2end, 2):
            k2o = off + k2
            x2 = v2[k2o + 1] if k2 == -d or k2 != d and v2[k2o - 1] < v2[k2o + 1] else v2[k2o - 1] + 1
            y2 = x2 - k2
            while x2 < n and y2 < m and a[ahi - x2 - 1] == b[bhi - y2 - 1]:
                x2 += 1
                y2 += 1
            v2[k2o] = x2
            if x2 > n:
                k2end += 2
            elif y2 > m:
                k2start += 2
            elif not self.front:
                hit = self._forward_meeting(off + self.delta - k2, x2)
                if hit is not None:
                    break
        self.k2start, self.k2end = k2start, k2end
        return hit

    def _forward_meeting(self, k1o: int, x2: int) -> tuple[int, int] | None:
        """Where a backward path that reached `x2` meets the forward path of diagonal `k1o`, if it does."""
        if not (0 <= k1o < self.size) or self.v1[k1o] == -1:
            return None
        x1 = self.v1[k1o]
        if x1 < self.n - x2:
            return None
        return self.alo + x1, self.blo + self.off + x1 - k1o
