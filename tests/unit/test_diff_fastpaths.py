"""The diff's fast paths give the same answers as the plain ones.

- the normalizer equals a naive reference (every concrete path checked against every rule), with and
  without redaction-placeholder rewriting, and so does one fixed at a path;
- usage items go first in each run of items from one record, as a plain stable sort puts them;
- redaction placeholders that differ only in their fingerprint compare equal at both diff levels,
  and a different placeholder kind is still a difference.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from test_diff import capture_of

from wirecap.analysis.diff import Item, diff_captures
from wirecap.analysis.fold import usage_first as _usage_first
from wirecap.analysis.normalize import VOLATILE, Normalizer, parse_path

_FP = re.compile(r"«redacted:([a-z0-9\-]+):[0-9a-f]{8}»")


def reference(value: Any, ignore: list[str], keep: list[str], fps: bool, path: tuple[Any, ...] = ()) -> Any:
    """Normalization spelled out: a field is volatile when an ignore rule matches its path and no keep rule does."""
    ig = [parse_path(p) for p in ignore]
    kp = [parse_path(p) for p in keep]

    def walk(v: Any, p: tuple[Any, ...]) -> Any:
        if p and any(r.matches(p) for r in ig) and not any(r.matches(p) for r in kp):
            return VOLATILE
        if isinstance(v, dict):
            return {k: walk(x, (*p, k)) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x, (*p, i)) for i, x in enumerate(v)]
        if fps and isinstance(v, str):
            return _FP.sub(r"«redacted:\1»", v)
        return v

    return walk(value, path)


_keys = st.sampled_from(["a", "b", "id", "x.y", "«redacted:k:0123abcd»"])
_scalars = st.one_of(st.none(), st.integers(-2, 2), st.booleans(),
                     st.sampled_from(["s", "«redacted:secret:deadbeef» tail", "id"]))
_values = st.recursive(_scalars, lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(_keys, c, max_size=3)),
                       max_leaves=20)
_steps = st.lists(st.sampled_from(["a", "b", "id", "*", "**", "[*]", "[0]", '"x.y"']), min_size=1, max_size=4)


def _spec(steps: list[str]) -> str:
    out = ""
    for s in steps:
        out += s if s.startswith("[") or not out else "." + s
    return out


_paths = _steps.map(_spec).filter(lambda p: not p.startswith("["))


@settings(max_examples=300, deadline=None)
@given(_values, st.lists(_paths, max_size=3), st.lists(_paths, max_size=2),
       st.lists(st.one_of(st.sampled_from(["a", "id"]), st.integers(0, 1)), max_size=2), st.booleans())
def test_normalizer_matches_the_reference(value, ignore, keep, at, fps) -> None:
    n = Normalizer(ignore, keep, redaction_fingerprints=fps)
    got = n(value, tuple(at))
    want = reference(value, ignore, keep, fps, tuple(at)) if at else reference(value, ignore, keep, fps)
    if at and any(r.matches(tuple(at)) for r in n.ignore) and not any(r.matches(tuple(at)) for r in n.keep):
        want = VOLATILE
    assert got == want
    # without placeholder rewriting: as if fingerprints were off
    assert n(value, tuple(at), fingerprints=False) == Normalizer(ignore, keep, redaction_fingerprints=False)(
        value, tuple(at))
    # a normalizer fixed at one place (the diff's per-kind fast path) answers the same
    assert n.fixed(tuple(at))(value) == n(value, tuple(at), fingerprints=False)


@settings(max_examples=300, deadline=None)
@given(_values, st.lists(st.sampled_from(["**.a", "**.id", '**."x.y"', "a.**.b", "b", "**"]), min_size=1, max_size=3),
       st.lists(_paths, max_size=1))
def test_deep_rules_match_the_reference(value, ignore, keep) -> None:
    # `**.NAME` rules alone below some level take a walk of their own (one set lookup per key)
    got = Normalizer(ignore, keep)(value, fingerprints=False)
    assert got == reference(value, ignore, keep, False)


def _usage_first_reference(items: list[Item]) -> list[Item]:
    """Runs of items sharing a first seq (items without one are runs of their own), usage first in each."""
    runs: list[list[Item]] = []
    for it in items:
        if runs and it.seq and runs[-1][-1].seq and runs[-1][-1].seq[0] == it.seq[0]:
            runs[-1].append(it)
        else:
            runs.append([it])
    return [x for run in runs for x in sorted(run, key=lambda x: x.kind != "usage")]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["usage", "message", "tool_call"]),
                          st.lists(st.integers(1, 3), max_size=2)), max_size=14))
def test_usage_first_matches_the_reference(specs) -> None:
    items = [Item(kind, i, (), b"", tuple(seq), "c", 0.0) for i, (kind, seq) in enumerate(specs)]
    assert [x.index for x in _usage_first(list(items))] == [x.index for x in _usage_first_reference(items)]


def _claude(tool_output: str, command: str) -> list[bytes]:
    sid = "0f877829-6e39-4852-aa4f-04aa8390dac5"
    lines = [
        {"type": "system", "subtype": "init", "session_id": sid, "model": "m", "cwd": "/w", "tools": ["Bash"]},
        {"type": "assistant", "message": {"id": "msg_1", "role": "assistant", "model": "m", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": command}}]},
         "session_id": sid},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": tool_output, "is_error": False}]},
         "session_id": sid},
        {"type": "result", "subtype": "success", "is_error": False, "result": "ok", "session_id": sid},
    ]
    return [orjson.dumps(x) for x in lines]


def test_redaction_fingerprints_are_ignored_at_both_levels(tmp_path: Path) -> None:
    a = capture_of(tmp_path, "a.jsonl", _claude("key «redacted:api-key:0123abcd» set", "echo «redacted:token:aaaa0000»"))
    b = capture_of(tmp_path, "b.jsonl", _claude("key «redacted:api-key:fedc9876» set", "echo «redacted:token:bbbb1111»"))
    c = capture_of(tmp_path, "c.jsonl", _claude("key «redacted:password:fedc9876» set", "echo «redacted:token:bbbb1111»"))
    for level in ("events", "wire"):
        assert diff_captures(a, b, level=level).equal, level
        other = diff_captures(a, c, level=level)
        assert not other.equal, level
        fields = [f for p in other.pairs for ch in p.changes for f in ch.fields]
        assert any("«redacted:password»" in str(new) for _path, _old, new in fields), (level, fields)
