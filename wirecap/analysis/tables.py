"""What `wirecap stats` and `wirecap validate` print as text: their tables and summary lines, laid out
from the library's results (sessions with their capture totals; findings). Pure: values in, text out."""

from __future__ import annotations

from typing import Any

from wirecap.dialects.base import Finding

STATS_HEADERS = ["capture", "session", "ch", "dialect", "duration s", "ttft s", "msgs", "bytes", "models",
                 "prompt tok", "compl tok", "llm calls", "failed", "tools", "cost $", "errors"]
CALL_HEADERS = ["capture", "ch", "call", "seq", "transport", "model", "outcome", "ttft s", "duration s", "in tok",
                "out tok", "tools", "note"]
FINDING_HEADERS = ["severity", "rule", "seq", "ch", "message"]
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


def fmt_number(v: Any, digits: int = 3) -> str:
    """A figure for a table cell: `-` for none, floats without trailing zeros."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}".rstrip("0").rstrip(".") if v else "0"
    return str(v)


def _session_row(s: dict[str, Any]) -> list[Any]:
    usage = s["models_usage"]
    prompt = sum(m["prompt_tokens"] for m in usage.values())
    completion = sum(m["completion_tokens"] for m in usage.values())
    tools = ", ".join(f"{k}×{v}" for k, v in s["tool_calls"].items()) or "-"
    return [s["capture"], s["session"][:20], s["ch"], s["dialect"] or "-", fmt_number(s["duration"]),
            fmt_number(s["ttft"]), sum(s["messages_by_type"].values()), fmt_number(s["bytes"]), ", ".join(usage) or "-",
            prompt if usage else "-", completion if usage else "-", fmt_number(s["llm_calls"]),
            fmt_number(s["failed_calls"] or None), tools, fmt_number(s["total_cost"], 6), s["errors"]]


def _total_row(cap: str, t: dict[str, Any], calls_reported: bool) -> list[Any]:
    """The capture's total, each call counted once; its LLM calls are `-` when no session reports any."""
    return [cap, "(total, calls once)", "", "", fmt_number(t["duration"]), fmt_number(t["ttft"]), "", "", "",
            int(t["prompt_tokens"] or 0), int(t["completion_tokens"] or 0),
            int(t["llm_calls"] or 0) if calls_reported else "-", int(t["failed_calls"] or 0) or "-",
            int(t["tool_calls"] or 0) or "-", fmt_number(t["cost_usd"], 6), int(t["errors"] or 0)]


def stats_table(sessions: list[dict[str, Any]], totals: dict[str, dict[str, Any]], *, several: bool) -> str:
    """The sessions (each with its `capture`) as a table, each capture's total (from `totals`) after its
    last session; with one capture (`several` false) the capture column is left out."""
    last = {s["capture"]: i for i, s in enumerate(sessions)}
    reported: dict[str, bool] = {}
    for s in sessions:
        reported[s["capture"]] = reported.get(s["capture"], False) or s["llm_calls"] is not None
    rows = []
    for i, s in enumerate(sessions):
        rows.append(_session_row(s))
        cap = s["capture"]
        if last[cap] == i and cap in totals:
            rows.append(_total_row(cap, totals[cap], reported[cap]))
    if not rows:
        return "no decoded sessions (use --all to list undecoded channels)"
    from tabulate import tabulate  # (30+ ms to import: only when there is a table)

    if several:
        return tabulate(rows, headers=STATS_HEADERS, tablefmt="simple")
    return tabulate([r[1:] for r in rows], headers=STATS_HEADERS[1:], tablefmt="simple")


def _call_row(c: dict[str, Any]) -> list[Any]:
    tools = ", ".join(f"{k}×{v}" for k, v in (c.get("tool_calls") or {}).items()) or "-"
    note = "prewarm (generate: false)" if c.get("prewarm") else (c.get("reason") or "")
    return [c["capture"], c["ch"], c["call"], c["seq"], c["transport"], c.get("model") or "-", c["outcome"],
            fmt_number(c.get("ttft")), fmt_number(c.get("duration")), fmt_number(c.get("input_tokens")),
            fmt_number(c.get("output_tokens")), tools, str(note)[:60]]


def calls_table(calls: list[dict[str, Any]], *, several: bool) -> str:
    """`wirecap stats --calls`: one row per LLM call on the wire (each with its `capture`); with one
    capture (`several` false) the capture column is left out."""
    if not calls:
        return "no LLM calls on the wire (stdout alone does not show them: record the traffic too)"
    from tabulate import tabulate  # (as above)

    rows = [_call_row(c) for c in calls]
    if several:
        return tabulate(rows, headers=CALL_HEADERS, tablefmt="simple")
    return tabulate([r[1:] for r in rows], headers=CALL_HEADERS[1:], tablefmt="simple")


def at_or_above(found: list[Finding], min_severity: str) -> list[Finding]:
    """The findings of severity `min_severity` or above."""
    floor = SEVERITY_RANK[min_severity]
    return [f for f in found if SEVERITY_RANK.get(f.severity, 0) >= floor]


def findings_text(capture: str, found: list[Finding], min_severity: str) -> str:
    """What `wirecap validate` prints: the findings shown (a table and their counts by severity), or
    why there are none to show."""
    shown = at_or_above(found, min_severity)
    if not shown:
        if found:
            return (f"{capture}: no findings of severity {min_severity} or above "
                    f"({len(found)} below it hidden by --min-severity)")
        return f"{capture}: no findings"
    from tabulate import tabulate  # (as above)

    rows = [(f.severity, f.rule, "" if f.seq is None else f.seq, f.ch or "", f.message) for f in shown]
    counts = {s: sum(1 for f in found if f.severity == s) for s in ("error", "warning", "info")}
    return (tabulate(rows, headers=FINDING_HEADERS, tablefmt="simple")
            + f"\n{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info")
