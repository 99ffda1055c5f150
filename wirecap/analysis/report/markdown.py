"""The report as Markdown, made for pasting into a bug report: what matters first (the findings, the
failing call, for two captures the first divergence), then the summary, the conversation and the
rest, with the raw messages findings and notes point at in collapsible `<details>` sections. Every
secret shape is redacted again, whatever the capture's own redaction was.

It fits a budget (`max_chars`, by default MAX_CHARS: what a GitHub issue accepts): the document is
made of parts (`Part`), each given its share in the order of what matters (`fit`), and a part that
does not fit whole is cut at a line, its open code fence and `<details>` closed, with a line that says
what was left out and how to see it (`wirecap report CAP -f html`, `wirecap cat CAP --seq N`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from wirecap.analysis.report import common, compare_view, thread_view
from wirecap.analysis.report.model import CaptureReport, ConvEntry, Report
from wirecap.analysis.report.thread import ThreadCall
from wirecap.capture.redact import Redactor

MAX_CHARS = 65_536  # a GitHub issue's body limit, in characters
MAX_RAW_CHARS = 6000
FOOTER = "<sub>made by `wirecap report`; secrets are redacted.</sub>"


def _cell(v: Any) -> str:
    s = str(v).replace("\r", "").replace("\n", " ").replace("|", "\\|")
    return s if len(s) <= 300 else s[:299] + "…"


def table(headers: list[str], rows: list[list[Any]]) -> str:
    if not rows:
        return "_none_"
    out = ["| " + " | ".join(_cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(_cell(v) for v in r) + " |" for r in rows]
    return "\n".join(out)


def fence(body: str, lang: str = "") -> str:
    """A code fence longer than any run of backticks inside `body`."""
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{body}\n{ticks}"


def _quote(text: str) -> str:
    return "\n".join("> " + line for line in text.splitlines()) or "> "


def _raw(rec: dict[str, Any], path: str) -> str:
    body = orjson.dumps(rec, option=orjson.OPT_INDENT_2).decode()
    if len(body) > MAX_RAW_CHARS:
        body = body[:MAX_RAW_CHARS] + (f"\n… ({len(body) - MAX_RAW_CHARS} more characters: "
                                       f"`wirecap cat {path} --seq {rec.get('seq')} --json` shows it whole)")
    return body


# --- the budget ----------------------------------------------------------------------------------------


@dataclass
class Part:
    """A piece of the document: its lines, how much it matters (`rank`: lower is kept first), the share
    of the budget it is sure of (`floor`), and what to say when it is cut (`what` was left out, `hint`:
    how to see it whole)."""

    lines: list[str]
    rank: int
    what: str
    hint: str
    floor: float = 0.05
    cut: int = 0  # characters left out (after `fit`)

    def size(self) -> int:
        return sum(len(line) + 1 for line in self.lines)


# Ranks: what matters first. (The comparison of two captures, its numbers side by side and its aligned
# conversations, is what a two-capture report is read for: before each capture's own thread.)
TITLE, FINDINGS, FAILING, DIVERGENCE, SUMMARY, STATS, ALIGNED, THREAD, REST, RAW, UNIFIED = range(11)
_FLOORS = {TITLE: 1.0, FINDINGS: 0.15, FAILING: 0.12, DIVERGENCE: 0.1, SUMMARY: 0.04, STATS: 0.03, ALIGNED: 0.15,
           THREAD: 0.2}
_CUT_NOTE_ROOM = 400  # characters kept for a cut part's closing lines and its note


MIN_KEPT = 700  # characters a cut part must keep to be worth showing; below, it is left out whole
_DROPPED_ROOM = 600  # characters kept for the line naming the parts left out whole


def _share(parts: list[Part], alloc: list[int], left: int, budget: int, floors: bool) -> int:
    """Give `left` characters to the parts in the order of rank (up to each one's floor with `floors`);
    returns what is left."""
    for i in sorted(range(len(parts)), key=lambda i: parts[i].rank):
        if alloc[i] < 0:  # left out whole
            continue
        want = parts[i].size() - alloc[i]
        if floors:
            want = min(want, int(_FLOORS.get(parts[i].rank, 0.02) * budget))
        take = max(0, min(want, left))
        alloc[i] += take
        left -= take
    return left


def fit(parts: list[Part], budget: int) -> list[Part]:
    """The parts cut to fit `budget` characters (0: no limit): every part is given up to its floor in the
    order of rank, then what is left in that order again; a part that would keep less than MIN_KEPT is
    left out whole (its room going to the others) and named on one line at the end. Parts keep their
    place in the document."""
    if budget <= 0 or sum(p.size() for p in parts) <= budget:
        return parts
    alloc = [p.size() if p.rank == TITLE else 0 for p in parts]  # (titles are never cut)
    left = budget - sum(alloc) - _DROPPED_ROOM
    left = _share(parts, alloc, left, budget, True)
    left = _share(parts, alloc, left, budget, False)
    for i in sorted(range(len(parts)), key=lambda i: -parts[i].rank):  # the least important go first
        if 0 <= alloc[i] < min(MIN_KEPT, parts[i].size()):
            left += alloc[i]
            alloc[i] = -1
            left = _share(parts, alloc, left, budget, False)
    out = [p if alloc[i] >= p.size() or p.rank == TITLE else cut_part(p, alloc[i])
           for i, p in enumerate(parts) if alloc[i] >= 0]
    dropped = [p for i, p in enumerate(parts) if alloc[i] < 0]
    if dropped:
        by_hint: dict[str, list[str]] = {}
        for p in dropped:
            by_hint.setdefault(p.hint, []).append(p.what)
        said = "; ".join(f"{', '.join(whats)} ({hint})" for hint, whats in by_hint.items())
        out.append(Part([f"_✂ left out to fit the size limit: {said}._", ""], TITLE, "", "",
                        cut=sum(p.size() for p in dropped)))
    return out


_FENCE = re.compile(r"^(`{3,})")


def _closers(fence_ticks: str | None, details: int) -> list[str]:
    out = [fence_ticks] if fence_ticks else []
    for _ in range(details):
        out += ["", "</details>"]
    return out


def cut_part(p: Part, room: int) -> Part:
    """`p` cut to about `room` characters at a line (a long line inside a code fence is cut itself), its
    open fence and `<details>` closed, and a line saying what was left out."""
    room -= _CUT_NOTE_ROOM
    kept: list[str] = []
    used = 0
    ticks: str | None = None
    details = 0
    for line in "\n".join(p.lines).split("\n"):  # (an element may hold several lines: a fence)
        closing = sum(len(c) + 1 for c in _closers(ticks, details))
        if used + len(line) + 1 + closing > room:
            if ticks is not None and room - used - closing > 200:
                n = room - used - closing - 80
                kept.append(line[:n] + f"… ({len(line) - n} more characters)")
            break
        kept.append(line)
        used += len(line) + 1
        ticks, details = _track(line, ticks, details)
    if len(kept) <= 2 and p.rank != TITLE:  # nothing worth keeping: the note alone
        kept, ticks, details = [p.lines[0]] if p.lines and p.lines[0].startswith("#") else [], None, 0
    kept += _closers(ticks, details)
    left = max(0, p.size() - sum(len(x) + 1 for x in kept))
    note = f"_✂ {p.what}: {left} more characters left out to fit the size limit; {p.hint}._"
    return Part([*kept, "", note, ""], p.rank, p.what, p.hint, p.floor, left)


def _track(line: str, ticks: str | None, details: int) -> tuple[str | None, int]:
    """The open fence and `<details>` depth after `line`."""
    m = _FENCE.match(line)
    if ticks is None:
        if m:
            return m.group(1), details
        return None, details + line.count("<details") - line.count("</details>")
    if m and line.strip() == m.group(1) and len(m.group(1)) >= len(ticks):
        return None, details
    return ticks, details


# --- the parts of one capture --------------------------------------------------------------------------


def _transport(cap: CaptureReport, h: str) -> list[str]:
    if cap.transport is None:
        return []
    return [f"{h}# Transport", "", *(f"- {line}" for line in common.transport_lines(cap)), "",
            table(common.CALL_HEADERS, common.call_rows(cap)), ""]


def _findings(cap: CaptureReport, h: str) -> list[str]:
    out = [f"{h}# Findings", ""]
    if cap.findings is None:
        out.append(f"_{cap.findings_note}_")
    elif not cap.findings:
        out.append("No findings.")
    else:
        out.append(table(["severity", "rule", "message", "where"],
                         [[f["severity"], f"`{f['rule']}`", f["message"], common.finding_where(f)] for f in cap.findings]))
    problems = common.capture_problems(cap)
    if problems:
        out += ["", f"{h}# Capture problems", "", *[f"- {p}" for p in problems]]
    return [*out, ""]


def failing_call(cap: CaptureReport) -> ThreadCall | None:
    """The first LLM call of the thread that did not complete (failed, cut), in the order sent."""
    failed = [c for th in cap.threads for c in th.calls if c.outcome in ("failed", "cut")]
    return min(failed, key=lambda c: (c.t_sent, c.seq)) if failed else None


def failing_entry(cap: CaptureReport) -> ConvEntry | None:
    """The first thing that failed in the conversation: an error, or a turn or session ended in error."""
    errors = [e for es in cap.conversation.values() for e in es
              if e.kind == "error" or (e.kind == "result" and e.is_error)]
    return min(errors, key=lambda e: (e.t, e.seq if e.seq is not None else 0)) if errors else None


def _quoted(text: str, limit: int = 800) -> list[str]:
    cut = text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"
    return [_quote(cut), ""]


def _call_lines(c: ThreadCall, path: str) -> list[str]:
    """A failed call: its head and figures, what was new in what it sent, what came back."""
    out = [f"**{thread_view.call_head(c)}** <sub>seq {c.seq}</sub>", "", " · ".join(thread_view.call_figures(c)), ""]
    if not c.detailed:
        return out
    out += [f"_sent: {thread_view.sent_text(c)}_", ""]
    fresh, _ = thread_view.new_first(c)
    for m in fresh[-3:]:
        for p in m.parts[-2:]:
            out += [f"→ **{thread_view.part_label(p, m.role)}**", "", *_quoted(p.text)]
    for p in c.reply[-3:]:
        out += [f"← **{thread_view.part_label(p, 'assistant')}**", "", *_quoted(p.text)]
    return out + [f"The request and its answer: `wirecap cat {path} --seq {c.seq}` and the records after it.", ""]


def _failing(cap: CaptureReport, h: str) -> list[str]:
    """The failing call: the first LLM call that failed, else the first error the conversation shows."""
    call = failing_call(cap)
    if call is not None:
        return [f"{h}# Failing call", "", *_call_lines(call, cap.path)]
    e = failing_entry(cap)
    if e is None:
        return []
    where = f"`{e.ch}`" + (f", seq {e.seq}" if e.seq is not None else "") + f", at {e.t:.2f}s"
    out = [f"{h}# Failing call", "", f"**{common.entry_title(e)}** ({where}): {_cell(e.text)}", ""]
    rows = [r for r in common.channel_rows(cap) if r[0] == e.ch]
    if rows:
        out += [table(common.CHANNEL_HEADERS, rows), ""]
    if e.seq is not None and e.seq in cap.relevant:
        out += _raw_details(e.seq, cap.relevant[e.seq], cap.path)
    elif e.seq is not None:
        out += [f"The record: `wirecap cat {cap.path} --seq {e.seq}`.", ""]
    return out


def _summary(cap: CaptureReport, h: str) -> list[str]:
    return [f"{h}# Summary", "", table(["", ""], [[k, v] for k, v in cap.summary_rows()]), ""]


def _thread(cap: CaptureReport, h: str) -> list[str]:
    return [f"{h}# Conversation", "", *thread_view.thread_markdown(cap, h + "##"), ""]


def _rest(cap: CaptureReport, h: str) -> list[str]:
    out = [f"{h}# Channels", "", table(common.CHANNEL_HEADERS, common.channel_rows(cap)), ""]
    if cap.sessions is not None:
        out += [f"{h}# Sessions", "", table(common.SESSION_HEADERS, common.session_rows(cap)), ""]
    elif cap.sessions_note:
        out += [f"_{cap.sessions_note}_", ""]
    out += _transport(cap, h)
    marks = []
    for c in cap.channels:
        if c.first_reply is not None:
            marks.append(f"- `{c.ch}`: first reply after {common.fmt_secs(c.first_reply)}")
        for a, b in c.gaps:
            marks.append(f"- `{c.ch}`: silent for {common.fmt_secs(b - a)} from {a:.2f}s to {b:.2f}s")
    if marks:
        out += [f"{h}# Timeline marks", "", *marks, ""]
    out += [f"{h}# Notes", ""]
    rows = [[f"`{n.id}`", *common.note_cells(n)[1:]] for n in cap.notes]
    out.append(table(common.NOTE_HEADERS, rows) if rows else "No notes.")
    out += [f"- ⚠ {w}" for w in cap.note_warnings]
    out += [f"- warning: {w}" for w in cap.warnings]
    return [*out, ""]


def _raw_details(seq: int, rec: dict[str, Any], path: str) -> list[str]:
    summary = f"seq {seq} · {rec.get('ch', '')} · {rec.get('dir', '')} {rec.get('type', '')}".strip()
    return [f"<details><summary>{summary}</summary>", "", fence(_raw(rec, path), "json"), "", "</details>", ""]


def _relevant(cap: CaptureReport, h: str) -> list[str]:
    if not cap.relevant:
        return []
    out = [f"{h}# Messages referred to above", ""]
    for seq in sorted(cap.relevant):
        out += _raw_details(seq, cap.relevant[seq], cap.path)
    return out


def capture_parts(cap: CaptureReport, h: str) -> list[Part]:
    """The parts of one capture's report, in the order of the document (`h`: its heading level)."""
    html = f"`wirecap report {cap.path} -f html` shows it all"
    return [
        Part(_findings(cap, h), FINDINGS, "findings", f"`wirecap validate {cap.path}` lists them all"),
        Part(_failing(cap, h), FAILING, "the failing call", html),
        Part(_summary(cap, h), SUMMARY, "the summary", f"`wirecap info {cap.path}`"),
        Part(_thread(cap, h), THREAD, "the conversation", html),
        Part(_rest(cap, h), REST, "channels, sessions and notes", html),
        Part(_relevant(cap, h), RAW, "the raw messages", f"`wirecap cat {cap.path} --seq N` shows message N"),
    ]


# --- the document --------------------------------------------------------------------------------------


def _compare_parts(report: Report) -> tuple[list[Part], list[Part], list[Part]]:
    """A two-capture report's parts: (its head, the first divergence; the comparison at the end)."""
    cmp = report.compare
    if cmp is None:
        note = Part(["## A vs B", "", f"_{report.diff_note or 'no comparison'}_", ""], TITLE, "", "")
        return [note], [], []
    md = compare_view.markdown_parts(cmp)
    diff = f"`wirecap diff {cmp.a_path} {cmp.b_path}` shows it all"
    return ([Part(md["head"], TITLE, "", "")],
            [Part(md["first"], DIVERGENCE, "the first divergence", diff)],
            [Part(["## A vs B", ""], TITLE, "", ""),
             Part(md["stats"], STATS, "the statistics", f"`wirecap diff --level stats {cmp.a_path} {cmp.b_path}`"),
             Part(md["aligned"], ALIGNED, "the aligned conversations", diff),
             Part(md["unified"], UNIFIED, "the unified diff", diff)])


def document_parts(report: Report) -> list[Part]:
    """Every part of the document, in its order."""
    two = len(report.captures) == 2
    if not two:
        cap = report.captures[0]
        return [Part([f"# wirecap report: `{cap.name}`", ""], TITLE, "", ""), *capture_parts(cap, "#")]
    a, b = report.captures
    head, first, end = _compare_parts(report)
    parts = [Part([f"# wirecap report: A `{a.name}` vs B `{b.name}`", ""], TITLE, "", ""), *head, *first]
    for side, cap in zip("AB", report.captures, strict=True):
        parts.append(Part([f"## {side}: `{cap.name}`", ""], TITLE, "", ""))
        parts += capture_parts(cap, "##")
    return parts + end


def render_markdown(report: Report, *, redactor: Redactor | None = None, max_chars: int = MAX_CHARS) -> str:
    """The Markdown report, at most `max_chars` characters (0: no limit)."""
    parts = [p for p in document_parts(report) if p.lines]
    budget = max_chars - len(FOOTER) - 2 if max_chars > 0 else 0
    text = ""
    for _ in range(4):  # (the last redaction may lengthen the text: then again with less room)
        shown = fit(parts, max(1, budget)) if max_chars > 0 else parts
        lines = [line for p in shown for line in p.lines] + ["", FOOTER]
        text = common.redact_report_text(report, "\n".join(lines) + "\n", redactor)
        if max_chars <= 0 or len(text) <= max_chars:
            return text
        budget -= len(text) - max_chars + 64
    return text[: max(0, max_chars - 1)] + "\n" if max_chars > 0 else text

