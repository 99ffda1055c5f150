"""Alignment: the edit script turns A into B, Myers is minimal, big streams stay fast and exact."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from wirecap.analysis.align import align, edit_count, matching_blocks

small_seqs = st.lists(st.integers(min_value=0, max_value=4), max_size=14)


def lcs_len(a: list[int], b: list[int]) -> int:
    """Brute-force dynamic programming LCS (the reference for minimality)."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def apply(ops, a, b):
    """Rebuild B from A using only the opcodes (B is consulted only for inserted/replaced ranges)."""
    out = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
            out.extend(a[i1:i2])
        elif tag in ("insert", "replace"):
            out.extend(b[j1:j2])
    return out


def check_cover(ops, a, b):
    i = j = 0
    for tag, i1, i2, j1, j2 in ops:
        assert (i1, j1) == (i, j), ops
        assert tag in ("equal", "delete", "insert", "replace")
        if tag == "delete":
            assert j1 == j2 and i2 > i1
        if tag == "insert":
            assert i1 == i2 and j2 > j1
        i, j = i2, j2
    assert (i, j) == (len(a), len(b))


@settings(max_examples=300, deadline=None)
@given(small_seqs, small_seqs)
def test_myers_is_valid_and_minimal(a, b):
    ops = align(a, b)
    check_cover(ops, a, b)
    assert apply(ops, a, b) == b
    assert edit_count(ops) == len(a) + len(b) - 2 * lcs_len(a, b)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=30), max_size=40),
       st.lists(st.integers(min_value=0, max_value=30), max_size=40))
def test_patience_anchored_script_is_valid(a, b):
    ops = align(a, b, patience_min=2)
    check_cover(ops, a, b)
    assert apply(ops, a, b) == b
    # anchoring may cost a little optimality, never correctness; and never worse than replace-all
    assert edit_count(ops) <= len(a) + len(b)


@settings(max_examples=100, deadline=None)
@given(small_seqs, small_seqs)
def test_bounded_fallback_stays_valid(a, b):
    ops = align(a, b, max_d=1)
    check_cover(ops, a, b)
    assert apply(ops, a, b) == b


def test_strings_and_tuples_align():
    a = [("message", "assistant"), ("tool_call", "Bash"), ("message", "assistant")]
    b = [("message", "assistant"), ("tool_call", "Read"), ("tool_call", "Bash"), ("message", "assistant")]
    assert align(a, b) == [("equal", 0, 1, 0, 1), ("insert", 1, 1, 1, 2), ("equal", 1, 3, 2, 4)]


def test_100k_streams_with_a_few_edits():
    rng = random.Random(7)
    a = [rng.randrange(1 << 30) for _ in range(100_000)]
    b = list(a)
    del b[50_000:50_003]  # removed
    b[10_000] = -1  # changed
    b.insert(90_000, -2)  # added
    b[99_000:99_000] = [-3, -4]
    ops = align(a, b)
    check_cover(ops, a, b)
    assert apply(ops, a, b) == b
    assert edit_count(ops) == 3 + 2 + 1 + 2
    assert [op[0] for op in ops if op[0] != "equal"] == ["replace", "delete", "insert", "insert"]


def test_100k_repetitive_signatures_with_a_few_edits():
    """Signatures like (kind, role) repeat everywhere: no unique anchors, Myers must still be exact."""
    pattern = ["msg", "call", "result", "msg", "usage"]
    a = [pattern[i % 5] for i in range(100_000)]
    b = list(a)
    b.insert(30_000, "error")
    del b[70_000]
    ops = align(a, b)
    assert apply(ops, a, b) == b
    assert edit_count(ops) == 2


def test_100k_totally_different_streams_are_bounded():
    a = list(range(100_000))
    b = list(range(100_000, 200_000))
    assert matching_blocks(a, b) == []
    assert align(a, b) == [("replace", 0, 100_000, 0, 100_000)]
