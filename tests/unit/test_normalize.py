"""Normalization: the compiled matcher agrees with the plain path matcher; path syntax; field diffs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wirecap.analysis.normalize import (
    MISSING,
    VOLATILE,
    Normalizer,
    field_diffs,
    format_path,
    normalize,
    parse_path,
)
from wirecap.errors import WirecapError

KEYS = ["id", "a", "b", "ts", "x.y"]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["s", "«redacted:bearer:1a2b3c4d» z"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=4),
    max_leaves=12,
)
steps = st.sampled_from(["id", "a", "b", "ts", '"x.y"', "*", "**", "[*]", "[0]", "[1]"])
paths = st.lists(steps, min_size=1, max_size=4).map(
    lambda parts: ".".join(parts).replace(".[", "[")).filter(lambda s: not s.startswith("["))


def reference(value, ignore, keep, path=()):
    """The obvious definition: a field is volatile when an ignore rule matches its path and no keep rule does."""
    ig = [parse_path(p) for p in ignore]
    kp = [parse_path(p) for p in keep]

    def walk(v, p):
        if p and any(r.matches(p) for r in ig) and not any(r.matches(p) for r in kp):
            return VOLATILE
        if isinstance(v, dict):
            return {k: walk(x, (*p, k)) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x, (*p, i)) for i, x in enumerate(v)]
        if isinstance(v, str):
            return v.replace("«redacted:bearer:1a2b3c4d»", "«redacted:bearer»")
        return v

    return walk(value, path)


@settings(max_examples=150, deadline=None)
@given(json_values, st.lists(paths, max_size=3), st.lists(paths, max_size=2))
def test_compiled_normalizer_matches_reference(value, ignore, keep):
    assert Normalizer(ignore, keep)(value) == reference(value, ignore, keep)


@settings(max_examples=50, deadline=None)
@given(json_values, st.lists(paths, max_size=3))
def test_prefix_path(value, ignore):
    prefix = ("tool_call", 2)
    assert Normalizer(ignore)(value, prefix) == reference(value, ignore, [], prefix)


def test_examples_from_docs():
    msg = {"type": "ack", "txid": 3, "data": {"id": "u1", "items": [{"id": 1, "v": 2}, {"id": 2, "v": 3}]},
           "headers": {"x-request-id": "r"}, "meta": {"timestamp": "t", "deep": {"timestamp": "t2"}}}
    out = normalize(msg, ignore=["txid", "data.items[*].id", "headers.\"x-request-id\"", "**.timestamp"])
    assert out == {"type": "ack", "txid": VOLATILE, "data": {"id": "u1", "items": [{"id": VOLATILE, "v": 2},
                                                                                   {"id": VOLATILE, "v": 3}]},
                   "headers": {"x-request-id": VOLATILE}, "meta": {"timestamp": VOLATILE,
                                                                    "deep": {"timestamp": VOLATILE}}}
    kept = normalize(msg, ignore=["**.timestamp"], keep=["meta.deep.timestamp"])
    assert kept["meta"] == {"timestamp": VOLATILE, "deep": {"timestamp": "t2"}}
    assert normalize(msg, ignore=["data.items[1]"])["data"]["items"] == [{"id": 1, "v": 2}, VOLATILE]


def test_bad_paths():
    for bad in ("", "a..b", "a.", ".a", "a[", "a]b", 'a"b'):
        with pytest.raises(WirecapError):
            parse_path(bad)


def test_format_path_round_trips():
    for concrete in [("tool_call", 2, "input", "command"), ("headers", "x-request-id"), ("a.b", 0)]:
        spec = format_path(concrete)
        assert parse_path(spec).matches(concrete)
    assert format_path(("tool_call", 2, "input", "command")) == "tool_call[2].input.command"
    assert format_path(("a.b",)) == '"a.b"'


def test_field_diffs():
    assert field_diffs({"a": 1, "b": [1, 2]}, {"a": 2, "b": [1], "c": 0}) == [
        ("a", 1, 2), ("b[1]", 2, MISSING), ("c", MISSING, 0)]
