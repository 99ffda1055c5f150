"""Markdown that fits a GitHub issue (`report -f md`, `--max-chars`): what matters first, every cut said."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from conftest import run_wirecap

from wirecap.analysis.report.build import build_report
from wirecap.analysis.report.markdown import FINDINGS, MAX_CHARS, THREAD, Part, cut_part, fit, render_markdown

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from bench.bench_report import write_capture  # noqa: E402

CAPS = ROOT / "captures"
OVERLOADED = str(CAPS / "claude-code-2.1.197-overloaded-error.jsonl")


def balanced(md: str) -> list[str]:
    """What is left open at the end: a code fence, `<details>` blocks (outside fences)."""
    ticks: str | None = None
    details = 0
    for line in md.split("\n"):
        m = re.match(r"^(`{3,})", line)
        if ticks is None:
            if m:
                ticks = m.group(1)
            else:
                details += line.count("<details") - line.count("</details>")
        elif m and line.strip() == m.group(1) and len(m.group(1)) >= len(ticks):
            ticks = None
    return ([f"fence {ticks}"] if ticks else []) + ([f"{details} <details>"] if details else [])


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("big") / "big.jsonl"
    write_capture(path, 3_000_000)
    return str(path)


def test_a_big_capture_fits_an_issue_by_default(big: str):
    rep = build_report([big])
    md = render_markdown(rep)
    assert len(md) <= MAX_CHARS and not balanced(md)
    assert md.index("## Findings") < md.index("## Summary") < md.index("## Conversation") < md.index("## Channels")
    cut = re.search(r"_✂ the conversation: (\d+) more characters left out to fit the size limit; "
                    rf"`wirecap report {re.escape(big)} -f html` shows it all._", md)
    assert cut and int(cut.group(1)) > 100_000
    whole = render_markdown(rep, max_chars=0)
    assert len(whole) > 2 * MAX_CHARS and "✂" not in whole and not balanced(whole)


@pytest.mark.parametrize("limit", [20_000, 6000, 2500])
def test_a_small_budget_keeps_the_findings_and_the_failing_call(limit: int):
    rep = build_report([OVERLOADED])
    whole = render_markdown(rep, max_chars=0)
    md = render_markdown(rep, max_chars=limit)
    assert len(md) <= limit and not balanced(md)
    assert "| error | `http-status` | HTTP status 529 | seq 10, http-2 |" in md
    assert "## Failing call" in md and "fake server: simulated overloaded_error" in md
    assert (md == whole) == (len(whole) <= limit)
    if len(whole) > limit:
        assert "✂" in md


def test_two_captures_keep_the_first_divergence_first():
    rep = build_report([str(CAPS / "claude-code-2.1.197-hello.jsonl"), str(CAPS / "claude-code-2.1.197-tool-bash.jsonl")])
    md = render_markdown(rep, max_chars=5000)
    assert len(md) <= 5000 and not balanced(md)
    assert "## ▶ First divergence" in md and "`turn[0].prompt`" in md and "run echo hi" in md
    assert "✂" in md and "`wirecap diff " in md  # the comparison's cut parts say how to see them


def test_an_absurd_budget_is_still_kept():
    md = render_markdown(build_report([OVERLOADED]), max_chars=300)
    assert len(md) <= 300 and md.startswith("# wirecap report")


def test_cut_part_closes_what_it_opened():
    body = ["## Conversation", "", "<details><summary>tool result</summary>", "", "```\n" + "line\n" * 2000 + "```",
            "", "</details>", "", "**assistant**", "", "done"]
    p = Part(body, THREAD, "the conversation", "`wirecap report x -f html` shows it all")
    cut = cut_part(p, 3000)
    text = "\n".join(cut.lines)
    assert len(text) <= 3000 and not balanced(text) and text.startswith("## Conversation")
    assert cut.cut > 6000 and "✂ the conversation:" in text and "done" not in text


def test_fit_gives_what_matters_its_room_first():
    findings = Part(["## Findings", *[f"| error | rule | message {i} |" for i in range(2000)]], FINDINGS, "findings", "h")
    thread = Part(["## Conversation", *[f"entry {i}" for i in range(2000)]], THREAD, "the conversation", "h")
    small = Part(["## Summary", "a"], 4, "the summary", "h")
    out = fit([thread, small, findings], 20_000)
    assert [p.lines[0] for p in out] == ["## Conversation", "## Summary", "## Findings"]  # the order stays
    assert out[1].cut == 0 and out[2].cut > 0 and out[0].cut > 0
    assert sum(p.size() for p in out) <= 20_000
    kept_findings = sum(1 for line in out[2].lines if line.startswith("| error"))
    kept_entries = sum(1 for line in out[0].lines if line.startswith("entry "))
    assert kept_findings * len("| error | rule | message 0000 |") > kept_entries * len("entry 0000")


def test_every_shipped_capture_fits_and_is_balanced():
    for cap in sorted(CAPS.glob("*.jsonl")):
        md = render_markdown(build_report([str(cap)]))
        assert len(md) <= MAX_CHARS and not balanced(md), cap.name


def test_cli_max_chars(tmp_path: Path):
    r = run_wirecap("report", "-f", "md", "--max-chars", "2500", OVERLOADED)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.decode()) <= 2500 and "## Failing call" in r.stdout.decode()
    r = run_wirecap("report", "-f", "md", "--max-chars", "-1", OVERLOADED)
    assert r.returncode == 2 and b"below 0" in r.stderr


def test_parts_too_small_to_show_are_named_on_one_line():
    """At 1200 characters the findings stay whole; what could not keep a useful piece is left out whole
    and named once, with how to see it."""
    md = render_markdown(build_report([OVERLOADED]), max_chars=1200)
    assert len(md) <= 1200 and not balanced(md)
    assert "| error | `http-status` | HTTP status 529 |" in md and "## Conversation" not in md
    line = next(x for x in md.splitlines() if x.startswith("_✂ left out to fit the size limit: "))
    assert "the conversation" in line and f"`wirecap report {OVERLOADED} -f html` shows it all" in line
    assert line.count("-f html") == 1  # one hint for the parts it serves
