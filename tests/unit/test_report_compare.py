"""`report A B`: the two captures side by side (report/compare.py, report/compare_view.py)."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

import pytest

from wirecap.analysis.diff.items import Item, ItemStream
from wirecap.analysis.diff.result import Change, DiffResult, PairDiff
from wirecap.analysis.report import compare_view
from wirecap.analysis.report.build import build_report
from wirecap.analysis.report.compare import MAX_VALUE, CallIndex, _cut_values, build_comparison, moved
from wirecap.analysis.report.html import render_html_string
from wirecap.analysis.report.json import render_json
from wirecap.analysis.report.markdown import render_markdown
from wirecap.analysis.report.term import render_term

ROOT = Path(__file__).resolve().parents[2]
CAPS = ROOT / "captures"
HELLO = str(CAPS / "claude-code-2.1.197-hello.jsonl")
TOOL = str(CAPS / "claude-code-2.1.197-tool-bash.jsonl")
OVERLOADED = str(CAPS / "claude-code-2.1.197-overloaded-error.jsonl")
RUNS = ROOT / "tests" / "fixtures" / "captures" / "runs"


@pytest.fixture(scope="module")
def hello_vs_tool():
    return build_report([HELLO, TOOL])


def _firsts(cmp):
    return [(k, i) for k, p in enumerate(cmp.pairs) for i, r in enumerate(p.rows) if r.first]


def test_the_first_divergence_is_the_prompt(hello_vs_tool):
    """hello vs tool-bash: what a person points at is the prompt sent on http-2 ("say hello" -> "run echo
    hi"), not the token count stdout printed later, nor the reply that followed from it."""
    cmp = hello_vs_tool.compare
    assert cmp is not None and not cmp.equal
    d = cmp.first
    assert d is not None and d.op == "changed" and d.paths == ["turn[0].prompt"]
    assert d.a is not None and d.b is not None and d.a.ch == "http-2" and d.a.seq == 9 and d.b.seq == 9
    assert d.a.call == 1 and d.b.call == 1  # the first LLM call of each thread
    f = d.fields[0]
    assert f.a.endswith("say hello") and f.b.endswith("run echo hi")
    assert _firsts(cmp) == [(d.pair, d.row)]  # one row marked, the one the divergence names
    assert cmp.pairs[d.pair].rows[d.row].a.name == "turn[0]"


def test_aligned_rows_pair_the_conversations(hello_vs_tool):
    cmp = hello_vs_tool.compare
    titles = [p.title for p in cmp.pairs]
    assert titles == ["A proc · B proc (claude-code)", "A http-2 · B http-2 (anthropic-sse)",
                      "A (none) · B http-3 (anthropic-sse)"]
    http2 = cmp.pairs[1].rows
    ops = [(r.op, r.a.name if r.a else None, r.b.name if r.b else None) for r in http2]
    assert ("added", None, "tool_call[0]") in ops and ("equal", "session[0]", "session[0]") in ops
    changed = next(r for r in http2 if r.op == "changed" and r.a.name == "turn_end[0]")
    assert [(f.path, f.a, f.b) for f in changed.fields] == [("turn_end[0].stop_reason", "end_turn", "tool_use")]
    assert cmp.pairs[2].only == "B" and all(r.op in ("added", "more") for r in cmp.pairs[2].rows)


def test_stats_side_by_side_with_ratios(hello_vs_tool):
    stats = {r.metric: r for r in hello_vs_tool.compare.stats}
    assert stats["llm_calls"].a == 1 and stats["llm_calls"].b == 2 and stats["llm_calls"].ratio == 2.0
    assert stats["llm_calls"].differs and not stats["duration"].differs  # timings never count
    assert compare_view.fmt_ratio(stats["tool_calls"]) == "new in B"


def test_the_other_shipped_pairs_point_where_a_person_would():
    over = build_report([HELLO, OVERLOADED]).compare
    assert over.first.op == "added" and over.first.b.kind == "error" and "overloaded" in over.first.what
    assert "; A has message[0] there: Hello! This is a reply" in over.first.what  # what A said there instead
    cb = build_report([str(CAPS / "codebuff-cli-1.0.115-ws.jsonl"), str(CAPS / "codebuff-sdk-0.3.13-ws-tool.jsonl")])
    first = cb.compare.first  # B's turn comes first; A's, near it, is compared with it field by field
    assert first.op == "added" and first.b.name == "turn[0]" and "A's turn[0], near it, differs" in first.what
    assert "turn[0].agent_id" in first.paths and first.fields[0].in_b and not first.fields[0].in_a
    codex = build_report([str(CAPS / "codex-0.169.0-hello.jsonl"), str(CAPS / "codex-0.169.0-ws-tool.jsonl")]).compare
    assert codex.first.op == "channel" and "ws-1" in codex.first.what and "only in B" in codex.first.what
    assert "A has http-1 (openai-responses-sse) instead" in codex.first.what
    fallback = build_report([str(CAPS / "codex-0.169.0-ws-fallback.jsonl"),
                             str(CAPS / "codex-0.169.0-ws-tool.jsonl")]).compare
    assert fallback.first.paths == ["turn[1].prompt"] and fallback.first.fields[0].b == "run echo hi"


def test_two_runs_of_one_case_are_equal_and_folded():
    cmp = build_report([str(RUNS / "codex-hello-a.jsonl"), str(RUNS / "codex-hello-b.jsonl")]).compare
    assert cmp.equal and cmp.first is None and not _firsts(cmp)
    assert all([r.op for r in p.rows] == ["gap"] for p in cmp.pairs)  # every pair: one row of equal items
    assert "A and B are equal" in "\n".join(compare_view.term_lines(cmp, 100))


def test_every_format_says_a_and_b_and_marks_the_first_divergence(hello_vs_tool):
    rep = hello_vs_tool
    term = render_term(rep, width=100)
    assert f"A  {HELLO}" in term and f"B  {TOOL}" in term and "== A: claude-code-2.1.197-hello.jsonl ==" in term
    assert re.search(r"^▶ #9 turn\[0\]", term, re.M) and "B/A" in term and "2.00×" in term
    md = render_markdown(rep)
    assert md.index("## ▶ First divergence") < md.index("## A: `claude-code-2.1.197-hello.jsonl`")
    assert "| **A** |" in md and "`turn[0].prompt`" in md and "**▶** `~`" in md and "```diff" in md
    assert "&lt;system-reminder>" in md and "| `turn[0]` &lt;system-reminder>" in md  # shown, not taken for HTML
    assert "`session[0]` _(the same)_" in md  # an equal row says its content once
    html = render_html_string(rep)
    assert html.index('id="compare"') < html.index('id="c0"')  # the comparison comes first
    assert 'id="first-divergence"' in html and 'href="#c1-seq-9"' in html and 'href="#seq-9"' in html
    assert '<pre class="diff">' in html and 'id="diff"' in html
    for anchor in ("c0-call-1", "c1-call-1", "c1-call-2"):  # the thread's calls, linked from the rows
        assert f'href="#{anchor}"' in html and f'id="{anchor}"' in html
    doc = json.loads(render_json(rep))
    first = doc["compare"]["first_divergence"]
    assert first["paths"] == ["turn[0].prompt"] and first["a"]["seq"] == 9
    rows = [r for p in doc["compare"]["pairs"] for r in p["rows"] if r.get("first_divergence")]
    assert len(rows) == 1 and rows[0]["fields"][0]["path"] == "turn[0].prompt"
    assert doc["diff"]["text"].startswith(f"--- A {HELLO}")  # the unified diff, as before


def test_term_fits_80_columns(hello_vs_tool):
    head = compare_view.term_head(hello_vs_tool.compare, 80)
    lines = compare_view.term_body(hello_vs_tool.compare, 80)
    aligned = lines[lines.index("-- aligned conversations --"):lines.index("-- unified diff --")]
    assert not [ln for ln in head + aligned if len(ln) > 80]  # (the file names excepted: none is that long)
    assert "    B: … </system-reminder>   run echo hi" in head  # the first divergence's values, where they differ
    term = render_term(hello_vs_tool, width=80)
    assert term.index("-- first divergence (▶) --") < term.index("== A: ") < term.index("== A vs B, side by side ==")


def test_rows_are_bounded(hello_vs_tool):
    from wirecap.analysis.diff import diff_captures

    res = diff_captures(HELLO, TOOL)
    cmp = build_comparison(res, None, None, max_rows=5)
    assert sum(len(p.rows) for p in cmp.pairs) == 5 and cmp.rows_omitted > 0
    assert cmp.first is not None and cmp.first.row is None  # named, though its row is past the bound
    assert "failed" in cmp.stats_note and not cmp.stats
    assert f"… {cmp.rows_omitted} more rows" in "\n".join(compare_view.term_lines(cmp, 100))


def _item(kind: str, index: int, body: bytes, t: float, ch: str = "ws-1") -> Item:
    return Item(kind, index, (kind,), body, (int(t * 100),), ch, t)


def _result(a_items: list[Item], b_items: list[Item], script: list) -> DiffResult:
    sa = ItemStream("ws-1", "ws", "d", ("d",), a_items, 0.0, 1.0)
    sb = ItemStream("ws-1", "ws", "d", ("d",), b_items, 0.0, 1.0)
    res = DiffResult("a.jsonl", "b.jsonl", "events")
    res.pairs = [PairDiff(sa, sb, script)]
    return res


def test_consequences_and_moves_come_after_what_was_said():
    """A usage change at 0.1 s and a moved message at 0.2 s come after a changed message at 0.5 s."""
    u_a, u_b = _item("usage", 0, b'{"n":1}', 0.1), _item("usage", 0, b'{"n":2}', 0.1)
    moved_a, moved_b = _item("message", 0, b'{"text":"hi"}', 0.2), _item("message", 1, b'{"text":"hi"}', 0.6)
    m_a, m_b = _item("message", 1, b'{"text":"x"}', 0.5), _item("message", 0, b'{"text":"y"}', 0.5)
    script = [Change("changed", "usage", u_a, u_b, [("usage[0].n", 1, 2)]),
              Change("removed", "message", moved_a, None),
              Change("changed", "message", m_a, m_b, [("message[1].text", "x", "y")]),
              Change("added", "message", None, moved_b)]
    res = _result([u_a, moved_a, m_a], [u_b, m_b, moved_b], script)
    assert moved(res.pairs[0]) == {id(script[1]): "message[1]", id(script[3]): "message[0]"}
    cmp = build_comparison(res, [], [])
    assert cmp.first is not None and cmp.first.paths == ["message[1].text"]
    rows = cmp.pairs[0].rows
    assert rows[1].moved == "message[1]" and "at another place" in compare_view.row_more(rows[1])


def test_long_values_are_cut_around_their_first_difference():
    a = "x" * 5000 + "say hello" + "y" * 3000
    b = "x" * 5000 + "run echo hi" + "y" * 3000
    ca, cb = _cut_values(a, b)
    assert "say hello" in ca and "run echo hi" in cb and len(ca) < MAX_VALUE + 80
    assert ca.startswith("(") and "characters before" in ca and "more characters" in ca
    assert _cut_values(1, 2) == (1, 2) and _cut_values("a", "b") == ("a", "b")


def test_call_index_names_the_call_an_item_belongs_to():
    class C:
        def __init__(self, ch: str, seq: int, n: int) -> None:
            self.ch, self.seq, self.n = ch, seq, n

    class T:
        calls = [C("ws-1", 10, 1), C("ws-1", 30, 2), C("http-2", 5, 3)]

    idx = CallIndex([T()])
    assert [idx.of("ws-1", s) for s in (9, 10, 29, 30, 99)] == [None, 1, 1, 2, 2]
    assert idx.of("http-2", 7) == 3 and idx.of("stdout", 7) is None and idx.of("ws-1", None) is None


def test_a_capture_from_standard_input_is_called_dash():
    from conftest import run_wirecap

    r = run_wirecap("report", "-f", "json", "-", TOOL, input=Path(HELLO).read_bytes())
    assert r.returncode == 0, r.stderr
    cmp = json.loads(r.stdout)["compare"]
    assert cmp["a"] == "-" and cmp["b"] == TOOL and cmp["first_divergence"]["paths"] == ["turn[0].prompt"]
    r = run_wirecap("report", "-f", "term", "--width", "100", "-", TOOL, input=Path(HELLO).read_bytes())
    out = r.stdout.decode()
    # A is named `-`, never by the temporary copy standard input was read into (cli.common.readable_twice:
    # a `wirecap-*` folder under the temporary directory; the checkout itself may sit under /tmp too)
    assert "A  -\n" in out and "--- A -\n" in out
    assert os.path.join(tempfile.gettempdir(), "wirecap-") not in out


def test_captures_with_nothing_in_common_still_have_their_numbers_side_by_side():
    rep = build_report([str(CAPS / "codebuff-cli-1.0.115-ws.jsonl"), str(CAPS / "codebuff-sdk-0.10.7-http.jsonl")])
    cmp = rep.compare
    assert rep.diff is None and "different dialects" in rep.diff_note
    assert cmp is not None and cmp.failed == rep.diff_note and not cmp.pairs and cmp.first is None
    assert {r.metric: (r.a, r.b) for r in cmp.stats}["sessions"] == (1, 8)
    term = render_term(rep, width=100).split("== A vs B ==")[1]
    assert "not compared item by item" in term and "-- statistics side by side --" in term
    assert "-- aligned conversations --" not in term
    md = render_markdown(rep)
    assert "### Statistics side by side" in md and "### Aligned conversations" not in md
    assert json.loads(render_json(rep))["compare"]["failed"].startswith("different dialects: ")  # (not a failure: a fact)


def test_the_readers_complaints_are_capped():
    res = _result([], [], [])
    res.warnings = [f"a.jsonl:{i}: not JSON; skipped" for i in range(1, 101)]
    cmp = build_comparison(res, [], [])
    assert len(cmp.warnings) == 21 and cmp.warnings[-1].startswith("… 80 more")


def test_the_full_diff_json_is_made_only_for_the_json_format():
    rep = build_report([HELLO, TOOL], diff_json=False)
    assert rep.diff is not None and rep.diff["json"] is None and rep.compare.first is not None
    assert "▶ First divergence" in render_markdown(rep) and 'id="first-divergence"' in render_html_string(rep)
    assert json.loads(render_json(build_report([HELLO, TOOL])))["diff"]["json"]["summary"].startswith("13 differences")


def test_a_long_run_and_its_edited_copy(tmp_path: Path):
    """bench's session (1 MB) and a copy with four edits (a command changed, a message dropped, a text
    changed, a message inserted): the first divergence is the first edit, the four are rows, and the
    Markdown fits an issue with the first divergence in it."""
    import sys

    sys.path.insert(0, str(ROOT))
    from bench.attack_diff_memory import make_b
    from bench.bench_report import write_capture

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_capture(a, 1_000_000)
    make_b(a, b)
    rep = build_report([str(a), str(b)])
    cmp = rep.compare
    assert cmp.counts == {"added": 1, "removed": 1, "changed": 2}
    d = cmp.first
    assert d.op == "changed" and d.paths[0].endswith(".input.command") and d.fields[0].b == d.fields[0].a + " -v"
    shown = [r.op for p in cmp.pairs for r in p.rows if r.op not in ("equal", "gap")]
    assert sorted(shown) == ["added", "changed", "changed", "removed"]
    md = render_markdown(rep)
    assert len(md) <= 65_536 and "## ▶ First divergence" in md and '"make test-' in md
