"""How a replay mismatch is diffed and told: aligned (an inserted list element is one line), short,
never raising on odd values; the pytest plugin and `replay serve` print the same rendering."""

from __future__ import annotations

import copy
import math

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from replay_support import claude_request

from wirecap.analysis.normalize import MISSING
from wirecap.analysis.valuediff import aligned_diffs, jsonable, render, render_line, short, short_pair
from wirecap.replay.match import Matcher, Mismatch

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=6))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=4), inner, max_size=4)), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(v=values)
def test_equal_values_give_no_difference(v):
    assert aligned_diffs(v, v) == []
    assert aligned_diffs(v, copy.deepcopy(v)) == []


@settings(max_examples=300, deadline=None)
@given(items=st.lists(values, max_size=30), new=values, data=st.data())
def test_one_inserted_element_is_exactly_one_added_line(items, new, data):
    pos = data.draw(st.integers(0, len(items)))
    live = [*items[:pos], new, *items[pos:]]
    diffs = aligned_diffs({"tools": items}, {"tools": live})
    assert len(diffs) == 1
    [(path, old, got)] = diffs
    assert old is MISSING and got == new
    assert path.startswith("tools[")
    assert live[int(path[len("tools["):-1])] == new
    assert render_line(diffs[0]).startswith("+ tools[")
    # and the other way round: one removed element is one removed line
    back = aligned_diffs({"tools": live}, {"tools": items})
    assert len(back) == 1 and back[0][2] is MISSING


@settings(max_examples=200, deadline=None)
@given(a=values, b=values)
def test_differences_render_without_raising_and_stay_short(a, b):
    lines = render(aligned_diffs(a, b), limit=5, width=40)
    assert len(lines) <= 6
    assert all(len(line) < 400 for line in lines)


def test_one_extra_tool_in_a_real_claude_request_is_one_line():
    """The issue's case: one more tool in Claude Code's 24-tool request flooded ~50 lines plus
    "... 162 more differing fields"; aligned it is one line naming the tool."""
    _headers, body = claude_request()
    rec = orjson.loads(body)
    live = orjson.loads(body)
    tool = {"name": "NewTool", "description": "A tool the recording did not have. " * 20,
            "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}}}
    live["tools"].insert(17, tool)
    m = Matcher((), "anthropic-sse")
    diffs = m.diffs(live, rec)
    assert [d[0] for d in diffs] == ["tools[17]"]
    line = render_line(diffs[0])
    assert line.startswith('+ tools[17] {"name": "NewTool"') and len(line) < 100
    mm = Mismatch("http-1", 1, live, 3, rec, diffs, what="request POST /v1/messages")
    report = mm.report().splitlines()
    assert len(report) == 3 and report[-1].strip() == line
    assert "tools[17]" in mm.message() and "NewTool" in mm.message()


def test_a_changed_element_pairs_with_its_namesake_not_its_neighbour():
    rec = [{"name": "a", "v": 1}, {"name": "b", "v": 1}]
    live = [{"name": "a", "v": 2}, {"name": "x", "v": 0}, {"name": "b", "v": 3}]
    assert aligned_diffs(rec, live) == [("[0].v", 1, 2), ("[1]", MISSING, {"name": "x", "v": 0}),
                                        ("[2].v", 1, 3)]


def test_types_matter_and_nan_equals_nan():
    assert aligned_diffs({"a": 1}, {"a": 1.0}) == [("a", 1, 1.0)]
    assert aligned_diffs([True], [1]) != []
    assert aligned_diffs({"a": math.nan}, {"a": math.nan}) == []


def test_a_long_string_is_shown_where_it_starts_to_differ():
    base = "You are Claude Code. " * 40
    a, b = short_pair(base + "Today's date is 2026-11-24." + base, base + "Today's date is 2026-11-25." + base)
    assert "2026-11-24" in a and "2026-11-25" in b and len(a) < 90 and a.startswith('"...')
    assert short("x" * 500).endswith('..."') and len(short("x" * 500)) <= 72
    assert short('\\n' * 100).endswith('\\n..."')  # never cut inside an escape


def test_bytes_and_odd_values_never_break_the_report_or_the_json():
    mm = Mismatch("http-1", 1, b"\x1f\x8b\xff", 4, b"\x1f\x8b\x00",
                  aligned_diffs(b"\x1f\x8b\x00", b"\x1f\x8b\xff"), what="request POST /x")
    assert "replay mismatch" in mm.report()
    doc = orjson.loads(orjson.dumps(mm.to_json()))
    assert doc["diffs"][0]["recorded"] == {"b64": "H4sA"}
    assert jsonable({1: float("inf"), "s": MISSING, "t": (1, 2)}) == {"1": "inf", "s": None, "t": [1, 2]}


def test_close_reason_fits_a_close_frame():
    from wirecap.replay.ws_server import mismatch_reason

    mm = Mismatch("ws-1", 2, {"type": "action"}, 5, {"type": "action"},
                  [("data.prompt", "é" * 300, "ü" * 300)], what="message")
    r = mismatch_reason(mm)
    assert r.startswith("wirecap replay mismatch: message #2 vs seq 5") and len(r.encode()) <= 123
    nothing = Mismatch("ws-1", 3, {"type": "action"}, None, None)
    assert mismatch_reason(nothing) == "wirecap replay mismatch: message #3 on ws-1: no recorded message left"


@pytest.mark.parametrize("dialect,path,shape", [
    ("anthropic-sse", "/v1/messages", "anthropic"),
    (None, "/v1/messages/count_tokens", "anthropic"),
    ("openai-chat-sse", "/chat/completions", "openai"),
    (None, "/v1/responses", "openai"),
    (None, "/api/v1/agent-runs", "generic"),
])
def test_error_shape_follows_the_dialect_then_the_path(dialect, path, shape):
    from wirecap.replay.http_server import error_shape, mismatch_body

    assert error_shape(dialect, path) == shape
    mm = Mismatch("http", 1, {"x": 1}, None, None, what=f"request POST {path}")
    doc = orjson.loads(mismatch_body(mm, dialect, path))
    msg = doc["error"]["message"]
    assert msg == f"wirecap replay mismatch: request POST {path} #1 on http: no recorded request POST {path} left to match"
    if shape == "anthropic":
        assert doc["type"] == "error" and doc["error"]["type"] == "invalid_request_error"
    elif shape == "openai":
        assert doc["error"]["code"] == "wirecap_replay_mismatch" and doc["error"]["param"] is None
    assert doc["wirecap"]["reason"] in msg


odd = st.recursive(
    st.one_of(scalars, st.binary(max_size=8), st.floats(allow_nan=True, allow_infinity=True)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.one_of(st.text(max_size=3), st.integers(0, 3)), inner, max_size=3)),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(live=odd, recorded=odd, path=st.sampled_from(["/v1/messages", "/v1/chat/completions", "/x"]))
def test_building_any_mismatch_answer_never_raises(live, recorded, path):
    """Whatever the two bodies hold (bytes, NaN, int keys), the report, the close reason and the
    HTTP body are built, and the body is JSON."""
    from wirecap.replay.http_server import mismatch_body
    from wirecap.replay.ws_server import mismatch_reason

    mm = Mismatch("http-1", 1, live, 2, recorded, Matcher(()).diffs(live, recorded), what=f"request POST {path}")
    assert mm.report().startswith("replay mismatch: ")
    assert len(mismatch_reason(mm).encode()) <= 123
    doc = orjson.loads(mismatch_body(mm, None, path))
    assert doc["wirecap"]["reason"] == mm.reason()


def test_a_repeated_mismatch_is_printed_once_in_full():
    from wirecap.replay.http_server import MismatchPrinter

    out: list[str] = []
    p = MismatchPrinter(out.append)
    diffs = [("batch[0].n", 9, 27)]
    p(Mismatch("http-3", 3, {}, 11, {}, diffs, what="request POST /batch/"))
    p(Mismatch("http-3", 6, {}, 11, {}, diffs, what="request POST /batch/"))
    p(Mismatch("http-3", 7, {}, 11, {}, [("batch[0].n", 9, 28)], what="request POST /batch/"))
    assert out[0].startswith("replay mismatch: request POST /batch/ #3") and "\n" in out[0]
    assert out[1] == "replay mismatch: request POST /batch/ #6: the same as before (seq 11)"
    assert "live 28" in out[2] and "\n" in out[2]
