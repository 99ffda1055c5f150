"""The report for a terminal: tabulate tables fitted to the terminal's width."""

from __future__ import annotations

import shutil
import textwrap
from typing import Any

from tabulate import tabulate

from wirecap.analysis import tables
from wirecap.analysis.report import common, compare_view
from wirecap.analysis.report.model import CaptureReport, Report, timeline_bins
from wirecap.analysis.report.thread_view import thread_term
from wirecap.analysis.tables import Col
from wirecap.capture.redact import Redactor

SPARK = " ▁▂▃▄▅▆▇█"


def _cut(v: Any, n: int) -> str:
    s = str(v).replace("\n", " ")
    return s if len(s) <= n else s[: max(1, n - 1)] + "…"


def fit_table(headers: list[str], rows: list[list[Any]], width: int, wide: tuple[int, ...] = (),
              kept: tuple[int, ...] = ()) -> str:
    """A table no wider than `width` (`tables.fit_table`): the `wide` columns wrap; the `kept` ones are
    never left out but cut to one line (a channel's URL or argv: its start says what it is, and a path
    wrapped mid-word reads badly); the other text columns are cut, then left out from the right (never
    the first); numbers are never cut; empty columns say nothing and are left out."""
    if not rows:
        return "(none)"
    cols = [Col(h, 0, "cut", 16) if i in kept else Col(h, 0, "wrap", 12) if i in wide or i == 0
            else Col(h, 1, "cut", 6) for i, h in enumerate(headers)]
    return tables.fit_table(cols, rows, width, drop_empty=True)


def _timeline(cap: CaptureReport, width: int) -> str:
    chans = [c for c in cap.channels if len(c.times)]
    if not chans:
        return "(no messages)"
    label_w = min(14, max(len(c.ch) for c in chans))
    bins_n = max(10, width - label_w - 3)
    lines = [f"{'':{label_w}}  0s{' ' * max(0, bins_n - 2 - len(common.fmt_secs(cap.duration)))}{common.fmt_secs(cap.duration)}"]
    for c in chans:
        bins = timeline_bins(c.times, cap.duration, bins_n)
        top = max(bins) or 1
        row = "".join(SPARK[0] if b == 0 else SPARK[max(1, round(b / top * 8))] for b in bins)
        lines.append(f"{_cut(c.ch, label_w):{label_w}}  {row}")
    marks = []
    for c in chans:
        bits = []
        if c.first_reply is not None:
            bits.append(f"first reply after {common.fmt_secs(c.first_reply)}")
        for a, b in c.gaps:
            bits.append(f"gap {common.fmt_secs(b - a)} at {a:.2f}s")
        if bits:
            marks.append(f"{c.ch}: " + "; ".join(bits))
    return "\n".join(lines + [""] + marks) if marks else "\n".join(lines)


def _capture(cap: CaptureReport, width: int, side: str = "") -> list[str]:
    out = [f"== {side}{cap.name} ==", ""]
    out.append(tabulate([[k, _cut(v, max(20, width - 28))] for k, v in cap.summary_rows()], tablefmt="plain",
                        disable_numparse=True))
    out += ["", "-- channels --", fit_table(common.CHANNEL_HEADERS, common.channel_rows(cap), width, wide=(9, 10), kept=(2,))]
    out += ["", "-- sessions --"]
    out.append(fit_table(common.SESSION_HEADERS, common.session_rows(cap), width, wide=(0, 6)) if cap.sessions is not None
               else cap.sessions_note)
    if cap.transport is not None:
        out += ["", "-- transport --", *[w for line in common.transport_lines(cap)
                                          for w in textwrap.wrap(line, width, subsequent_indent="    ")],
                fit_table(common.CALL_HEADERS, common.call_rows(cap), width, wide=(8,))]
    out += ["", "-- timeline --", _timeline(cap, width)]
    out += ["", "-- findings --"]
    if cap.findings is None:
        out.append(cap.findings_note)
    else:
        rows = [[f["severity"], f["rule"], f["message"], common.finding_where(f)] for f in cap.findings]
        out.append(fit_table(common.FINDING_HEADERS, rows, width, wide=(2,)) if rows else "no findings")
    problems = common.capture_problems(cap, interrupted=False)
    if problems:
        out += ["", "-- capture problems --"]
        out += [f"  {p}" for p in problems]
    out += ["", "-- notes --"]
    rows = [common.note_cells(n) for n in cap.notes]
    out.append(fit_table(common.NOTE_HEADERS, rows, width, wide=(3,)) if rows else "no notes")
    out += [f"  warning: {w}" for w in cap.note_warnings]
    out += ["", "-- conversation --", *thread_term(cap, width)]
    out += [f"warning: {w}" for w in cap.warnings]
    return out


def _folded(lines: list[str], width: int) -> list[str]:
    """Lines longer than `width` wrapped at spaces under their own indentation (a long word stays whole)."""
    out = []
    for line in (one for block in lines for one in block.split("\n")):  # (an element may hold several)
        if len(line) <= width:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip(" ")) + 4)
        out += textwrap.wrap(line, width, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False)
    return out


def render_term(report: Report, *, width: int | None = None, redactor: Redactor | None = None) -> str:
    width = width or shutil.get_terminal_size((100, 24)).columns
    width = max(40, width)
    lines: list[str] = []
    two = len(report.captures) == 2
    if two:  # A vs B: the verdict and the first divergence first, the side-by-side after the two reports
        lines += (compare_view.term_head(report.compare, width) if report.compare is not None else
                  ["== A vs B ==", report.diff_note]) + [""]
    for i, cap in enumerate(report.captures):
        lines += _capture(cap, width, "AB"[i] + ": " if two else "") + [""]
    if two and report.compare is not None:
        lines += _folded(compare_view.term_body(report.compare, width), width)  # (its unified diff too)
    return common.redact_report_text(report, "\n".join(lines).rstrip() + "\n", redactor)
