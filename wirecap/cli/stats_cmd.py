"""`wirecap stats`: per-session numbers (duration, ttft, usage per model, calls, cost, errors)."""

from __future__ import annotations

from typing import Any

import click
import orjson

from wirecap.cli.common import check_dialect
from wirecap.errors import WirecapError


def _last_of(sessions: list[dict[str, Any]], cap: str) -> dict[str, Any] | None:
    mine = [s for s in sessions if s["capture"] == cap]
    return mine[-1] if mine else None


def _total_calls(sessions: list[dict[str, Any]], cap: str, t: dict[str, Any]) -> Any:
    """The total's LLM calls; "-" when no session of the capture reports calls at all."""
    if all(s["llm_calls"] is None for s in sessions if s["capture"] == cap):
        return "-"
    return int(t["llm_calls"] or 0)


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}".rstrip("0").rstrip(".") if v else "0"
    return str(v)


@click.command()
@click.argument("captures", metavar="CAP...", nargs=-1, required=True)
@click.option("--dialect", metavar="NAME", help="Decode with this dialect instead of detecting it.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per session, in a JSON array.")
@click.option("--all", "show_all", is_flag=True, help="Also list channels no dialect recognized.")
@click.option("--ch", "channels", multiple=True, metavar="CH",
              help="Only the session of channel CH (a pipe selects its process; repeatable).")
def stats(captures: tuple[str, ...], dialect: str | None, as_json: bool, show_all: bool,
          channels: tuple[str, ...]) -> None:
    """Per session of each CAP: duration, time to first token, messages by type, bytes, tokens per
    model (prompt = input + cache read + cache creation), LLM calls (answered / failed), tool calls,
    cost, errors; and a total per capture that counts a call seen on stdout and on the wire once.

    The mapping is documented in docs/stats.md.
    """
    from wirecap.analysis.pipeline import UnknownChannel
    from wirecap.analysis.stats import capture_totals, stats_capture
    check_dialect(dialect)
    sessions: list[dict[str, Any]] = []
    totals: dict[str, dict[str, Any]] = {}
    for cap in captures:
        problems: list[str] = []
        try:
            found = stats_capture(cap, dialect=dialect, channels=channels, problems=problems)
        except UnknownChannel as e:
            raise WirecapError(f"{cap}: no channel {e.ch!r} (channels: {', '.join(e.have) or 'none'})") from None
        for line in problems:  # skipped lines change the numbers: say so (stderr, stdout stays the table)
            click.echo(f"wirecap: warning: {line}", err=True)
        decoded = [s for s in found if s["dialect"]]
        if len(decoded) > 1:
            totals[cap] = capture_totals(decoded)
        for s in found:
            if s["dialect"] is None and not show_all and not channels:
                continue
            sessions.append({"capture": cap, **s})
    if as_json:
        click.echo(orjson.dumps(sessions, option=orjson.OPT_INDENT_2).decode())
        return
    from tabulate import tabulate

    rows = []
    for s in sessions:
        usage = s["models_usage"]
        models = ", ".join(usage) or "-"
        prompt = sum(m["prompt_tokens"] for m in usage.values())
        completion = sum(m["completion_tokens"] for m in usage.values())
        tools = ", ".join(f"{k}×{v}" for k, v in s["tool_calls"].items()) or "-"
        rows.append((s["capture"] if len(captures) > 1 else "", s["session"][:20], s["ch"], s["dialect"] or "-",
                     _fmt(s["duration"]), _fmt(s["ttft"]), sum(s["messages_by_type"].values()), _fmt(s["bytes"]),
                     models, prompt if usage else "-", completion if usage else "-", _fmt(s["llm_calls"]),
                     _fmt(s["failed_calls"] or None), tools, _fmt(s["total_cost"], 6), s["errors"]))
        if s is _last_of(sessions, s["capture"]) and s["capture"] in totals:
            t = totals[s["capture"]]
            rows.append((s["capture"] if len(captures) > 1 else "", "(total, calls once)", "", "", _fmt(t["duration"]),
                         _fmt(t["ttft"]), "", "", "", int(t["prompt_tokens"] or 0), int(t["completion_tokens"] or 0),
                         _total_calls(sessions, s["capture"], t), int(t["failed_calls"] or 0) or "-",
                         int(t["tool_calls"] or 0) or "-",
                         _fmt(t["cost_usd"], 6), int(t["errors"] or 0)))
    headers = ["capture", "session", "ch", "dialect", "duration s", "ttft s", "msgs", "bytes", "models",
               "prompt tok", "compl tok", "llm calls", "failed", "tools", "cost $", "errors"]
    if len(captures) == 1:
        headers = headers[1:]
        rows = [r[1:] for r in rows]
    if not rows:
        click.echo("no decoded sessions (use --all to list undecoded channels)")
        return
    click.echo(tabulate(rows, headers=headers, tablefmt="simple"))
