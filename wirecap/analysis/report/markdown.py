"""The report as Markdown, made for pasting into a bug report: summary, findings, notes, and the raw
messages they point at in collapsible `<details>` sections. Every secret shape is redacted again,
whatever the capture's own redaction was."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from wirecap.analysis.report import common
from wirecap.analysis.report.model import CaptureReport, ConvEntry, Report
from wirecap.analysis.report.thread_view import thread_markdown
from wirecap.capture.redact import Redactor

MAX_RAW_CHARS = 6000
MAX_CONV_ENTRIES = 200


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


def _raw(rec: dict[str, Any]) -> str:
    body = orjson.dumps(rec, option=orjson.OPT_INDENT_2).decode()
    if len(body) > MAX_RAW_CHARS:
        body = body[:MAX_RAW_CHARS] + f"\n… ({len(body) - MAX_RAW_CHARS} more characters)"
    return body


def _conversation(cap: CaptureReport) -> list[str]:
    out: list[str] = []
    shown = 0
    for ch in cap.conversation_channels():
        entries = cap.conversation.get(ch)
        if not entries:
            if ch in cap.conversation_notes:
                out.append(f"- `{ch}`: {cap.conversation_notes[ch]}")
            continue
        out += ["", f"#### `{ch}`", ""]
        out += [_note_line(n) for n in common.channel_notes(cap.notes, ch)]
        take = entries[:max(0, MAX_CONV_ENTRIES - shown)]
        shown += len(take)
        for e in take:
            out += _conv_entry(e)
            out += [_note_line(n) for n in common.notes_at(cap.notes, e)]
    total = sum(len(v) for v in cap.conversation.values())
    if total > shown:
        out.append(f"\n_… {total - shown} more conversation entries (see the HTML report)_")
    return out


def _note_line(n: Any) -> str:
    return f"> 📝 **{n.tag}** ({n.author}, `{n.id}`): {n.text}\n"


def _conv_entry(e: ConvEntry) -> list[str]:
    where = f"seq {e.seq}" if e.seq is not None else ""
    return _CONV_LINES.get(e.kind, _conv_line)(e, where)


def _conv_title(e: ConvEntry, where: str) -> str:
    return f"**{common.entry_title(e)}**" + (f" <sub>{where}</sub>" if where else "")


def _conv_folded(e: ConvEntry, summary: str) -> list[str]:
    return [f"<details><summary>{summary}</summary>", "", fence(e.text), "", "</details>", ""]


def _conv_reasoning(e: ConvEntry, where: str) -> list[str]:
    return _conv_folded(e, f"{common.entry_title(e)} ({len(e.text)} characters) {where}")


def _conv_tool_call(e: ConvEntry, where: str) -> list[str]:
    args = e.arguments(indent=True)
    return [_conv_title(e, where), "", fence(args, "json") if args else "", ""]


def _conv_tool_result(e: ConvEntry, where: str) -> list[str]:
    return _conv_folded(e, f"{common.entry_title(e)} {where}")


def _conv_user(e: ConvEntry, where: str) -> list[str]:
    return [_conv_title(e, where), "", _quote(e.text), ""]


def _conv_assistant(e: ConvEntry, where: str) -> list[str]:
    return [_conv_title(e, where), "", e.text, ""]


def _conv_line(e: ConvEntry, where: str) -> list[str]:
    """Status, session, result and error entries say it in their title line; others show the title alone."""
    said = e.kind in ("status", "session", "result", "error")
    return [_conv_title(e, where) + (f": {e.text}" if said else ""), ""]


_CONV_LINES: dict[str, Callable[[ConvEntry, str], list[str]]] = {
    "reasoning": _conv_reasoning, "tool_call": _conv_tool_call, "tool_result": _conv_tool_result,
    "user": _conv_user, "assistant": _conv_assistant,
}


def _transport(cap: CaptureReport, h: str) -> list[str]:
    if cap.transport is None:
        return []
    return [f"{h}# Transport", "", *(f"- {line}" for line in common.transport_lines(cap)), "",
            table(common.CALL_HEADERS, common.call_rows(cap)), ""]


def _capture(cap: CaptureReport, two: bool) -> list[str]:
    h = "##" if two else "#"
    out = [f"{h} wirecap report: `{cap.name}`", ""]
    out += [f"{h}# Summary", "", table(["", ""], [[k, v] for k, v in cap.summary_rows()]), ""]
    out += [f"{h}# Channels", "", table(common.CHANNEL_HEADERS, common.channel_rows(cap)), ""]
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
    out += [f"{h}# Findings", ""]
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
    out += ["", f"{h}# Notes", ""]
    rows = [[f"`{n.id}`", *common.note_cells(n)[1:]] for n in cap.notes]
    out.append(table(common.NOTE_HEADERS, rows) if rows else "No notes.")
    out += [f"- ⚠ {w}" for w in cap.note_warnings]
    out += ["", f"{h}# Conversation", "", *thread_markdown(cap, h + "##"), ""]
    if cap.relevant:
        out += [f"{h}# Messages referred to above", ""]
        for seq in sorted(cap.relevant):
            rec = cap.relevant[seq]
            summary = f"seq {seq} · {rec.get('ch', '')} · {rec.get('dir', '')} {rec.get('type', '')}".strip()
            out += [f"<details><summary>{summary}</summary>", "", fence(_raw(rec), "json"), "", "</details>", ""]
    out += [f"- warning: {w}" for w in cap.warnings]
    return out


def render_markdown(report: Report, *, redactor: Redactor | None = None) -> str:
    two = len(report.captures) == 2
    lines: list[str] = []
    if two:
        lines += [f"# wirecap report: `{report.captures[0].name}` vs `{report.captures[1].name}`", ""]
    for cap in report.captures:
        lines += _capture(cap, two)
    if two:
        lines += ["## Diff", ""]
        if report.diff is None:
            lines.append(f"_{report.diff_note}_")
        else:
            lines.append("The captures are **equal**." if report.diff["equal"] else "The captures **differ**.")
            rows = common.diff_table(report.diff)
            if rows is not None:
                lines += ["", table(*rows)]
            if report.diff.get("text"):
                lines += ["", "<details><summary>unified diff</summary>", "", fence(report.diff["text"], "diff"), "",
                          "</details>"]
    lines.append("")
    lines.append("<sub>made by `wirecap report`; secrets are redacted.</sub>")
    return common.redact_report_text(report, "\n".join(lines) + "\n", redactor)
