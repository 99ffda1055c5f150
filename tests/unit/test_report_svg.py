"""report/svg.py: the waterfall and the per-call token bars, as inline SVG drawn from the report's data."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from conftest import ROOT

from wirecap.analysis.report import build_report
from wirecap.analysis.report import svg as S
from wirecap.analysis.report.html import render_html_string
from wirecap.analysis.report.model import ConvEntry
from wirecap.analysis.transport import Call

NS = "{http://www.w3.org/2000/svg}"


def _parse(svg_text: str) -> ET.Element:
    """The first <svg> of `svg_text` as XML (it must be well-formed to be inline in any page)."""
    m = re.search(r"<svg.*?</svg>", svg_text, re.S)
    assert m is not None
    return ET.fromstring(m[0].replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1))


def _call(n: int, t: float, first: float | None, end: float | None, outcome: str = "completed", **kw) -> Call:
    return Call("http-1", "http", n, 10 * n, t, model="m", first_output_t=first, end_t=end, outcome=outcome, **kw)


def test_waterfall_rows_marks_and_titles() -> None:
    calls = [_call(1, 1.0, 1.5, 3.0), _call(2, 3.2, None, 3.4, "failed", reason="overloaded"),
             _call(3, 8.0, 8.3, 9.0, input_tokens=100, output_tokens=20)]
    tools = [ConvEntry("tool_call", "stdout", 25, 3.0, name="Bash", call_id="t1"),
             ConvEntry("tool_call", "http-1", 12, 2.9, name="Bash", call_id="t1"),  # the same call, seen earlier
             ConvEntry("tool_result", "stdout", 26, 3.1, call_id="t1")]
    steps = S.call_steps(calls) + S.tool_steps(tools)
    steps.sort(key=lambda s: s.start)
    assert [s.kind for s in steps] == ["call", "tool", "call", "call"]
    assert steps[1].start == 2.9 and steps[1].end == 3.1 and steps[1].seq == 12
    assert steps[3].retry and not steps[2].retry  # the call after the failed one
    out = S.waterfall(steps, anchor=lambda seq: f"seq-{seq}")
    root = _parse(out)
    titles = [t.text or "" for t in root.iter(f"{NS}title")]
    assert any("call 2 http-1 m" in t and "outcome failed: overloaded" in t for t in titles)
    assert any(t.startswith("idle 4.60 s") for t in titles)  # 3.4 s -> 8.0 s: nothing ran
    texts = "".join(t.text or "" for t in root.iter(f"{NS}text"))
    assert "✕ failed: overloaded" in texts and "↻ call 3 http-1 m" in texts
    assert "seconds since the capture began" in texts
    assert [a.get("href") for a in root.iter(f"{NS}a")] == ["#seq-10", "#seq-12", "#seq-20", "#seq-30"]
    assert len(root.findall(f".//{NS}rect[@class='wf-call wf-completed wf-wait']")) == 2  # waiting, then streaming


def test_waterfall_is_bounded_and_names_the_failures_it_does_not_draw() -> None:
    steps = [S.Step("call", f"call {i}", float(i), i + 0.5, seq=i,
                    outcome="failed" if i in (10, 700, 900) else "completed") for i in range(1000)]
    out = S.waterfall(steps, max_rows=50, anchor=lambda seq: f"seq-{seq}")
    assert len(_parse(out).findall(f".//{NS}g")) == 50
    assert "The first 50 of 1,000 steps are drawn" in out
    assert ('Not drawn, 2 failed or cut: <a href="#seq-700">call 700 at 700.00 s</a>, '
            '<a href="#seq-900">call 900 at 900.00 s</a>.') in out


def test_token_bars_stack_and_cost() -> None:
    rows = [S.TokenRow("call 1", input=100, cache_read=1000, cache_write=50, output=30, cost=0.0123, seq=4),
            S.TokenRow("call 2", output=5), S.TokenRow("call 3")]
    out = S.token_bars(rows, anchor=lambda seq: f"seq-{seq}")
    root = _parse(out)
    rects = root.findall(f".//{NS}rect")
    assert [r.get("class") for r in rects] == ["wf-tin", "wf-tcr", "wf-tcw", "wf-tout", "wf-tout"]
    widths = [float(r.get("width") or 0) for r in rects[:4]]
    assert widths[1] > widths[0] > widths[3]  # proportional to the counts
    assert "1,180 · $0.0123" in "".join(t.text or "" for t in root.iter(f"{NS}text"))
    assert "All 2 calls: 100 input, 1,000 cache read, 50 cache write, 35 output; cost $0.0123." in out
    assert S.token_bars([S.TokenRow("x")]) == ""


def test_nice_ticks() -> None:
    assert S.nice_ticks(10) == [0, 2, 4, 6, 8, 10]
    assert S.nice_ticks(0.012)[:3] == [0, 0.002, 0.004]
    assert S.nice_ticks(0) == [0.0]


def test_html_report_draws_the_pictures_first() -> None:
    rep = build_report([str(ROOT / "captures/claude-code-2.1.197-tool-bash.jsonl")])
    page = render_html_string(rep)
    order = [page.index(f'id="c0-{s}"') for s in ("summary", "findings", "pictures", "channels", "conversation")]
    assert order == sorted(order)
    section = page[page.index('id="c0-pictures"'):page.index('id="c0-channels"')]
    root = _parse(section)
    labels = [t.text for t in root.iter(f"{NS}text") if (t.get("class") or "").startswith("wf-label")]
    assert labels == ["call 1 http-2 claude-opus-4-8", "tool Bash", "call 2 http-3 claude-opus-4-8"]  # (the thread's)
    assert '<svg class="tokens"' in section


def test_from_the_thread_model_cache_tokens_cost_subagents_and_retries() -> None:
    from wirecap.analysis.report.thread import Thread, ThreadCall, ToolRun

    calls = [ThreadCall(1, "http-1", "http", "anthropic-sse", 5, 1.0, 1.2, 2.0, "m", input_tokens=10,
                        cache_read_tokens=900, cache_write_tokens=40, output_tokens=7, cost_usd=0.5),
             ThreadCall(2, "http-2", "http", "anthropic-sse", 9, 2.5, None, 2.6, outcome="failed", error="overloaded"),
             ThreadCall(3, "http-3", "http", "anthropic-sse", 12, 3.0, 3.1, 3.5, retry=True, retry_of=2,
                        parent=(1, "toolu_1"))]
    runs = [ToolRun("toolu_1", "Task", 2.0, 4.0, issued_by=1, seqs=(7,))]
    th = Thread("session", calls, runs)

    class Cap:
        threads = [th]

    steps = S.steps_of(Cap())
    assert [(s.kind, s.label) for s in steps] == [("call", "call 1 http-1 m"), ("tool", "tool Task"),
                                                  ("call", "call 2 http-2"), ("call", "⤷ call 3 http-3")]
    assert steps[2].outcome == "failed" and steps[2].reason == "overloaded" and steps[3].retry
    assert "subagent of call 1; retry of call 2" in steps[3].detail
    rows = S.token_rows_of(Cap())
    assert [(r.input, r.cache_read, r.cache_write, r.output, r.cost) for r in rows] == [(10, 900, 40, 7, 0.5)]
    out = S.waterfall(steps)
    assert "✕ failed: overloaded" in out and "↻ ⤷ call 3 http-3" in out


def test_the_cost_the_client_reported_is_said_under_the_token_bars_as_its_figure_for_the_session() -> None:
    page = render_html_string(build_report([str(ROOT / "captures" / "claude-code-2.1.197-tool-bash.jsonl")]))
    assert "Cost the client reported: $0.1977 for session f3032032-8eb0-40e9-b941-1bac400f72c3" in page
    codex = render_html_string(build_report([str(ROOT / "captures" / "codex-0.169.0-ws-tool.jsonl")]))
    assert "Tokens per LLM call" in codex and "Cost the client reported" not in codex  # Codex prints no cost
