"""`wirecap stats`: per-session numbers (duration, ttft, usage per model, calls, cost, errors)."""

from __future__ import annotations

from typing import Any

import click
import orjson

from wirecap.analysis.stats import listed_sessions, stats_capture
from wirecap.analysis.tables import calls_table, stats_table
from wirecap.analysis.transport import capture_calls
from wirecap.cli import console
from wirecap.cli.common import check_dialect, complete_files


@click.command()
@click.argument("captures", metavar="CAP...", nargs=-1, required=True, shell_complete=complete_files)
@click.option("--dialect", metavar="NAME", help="Decode with this dialect instead of detecting it.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per session, in a JSON array.")
@click.option("--all", "show_all", is_flag=True, help="Also list channels no dialect recognized.")
@click.option("--ch", "channels", multiple=True, metavar="CH",
              help="Only the session of channel CH (a pipe selects its process; repeatable).")
@click.option("--calls", "per_call", is_flag=True,
              help="One row per LLM call on the wire instead: transport (ws / http), model, outcome, ttft, "
                   "duration, tokens, tool calls (a WebSocket carries several calls).")
@console.pager_option
def stats(captures: tuple[str, ...], dialect: str | None, as_json: bool, show_all: bool,
          channels: tuple[str, ...], per_call: bool, no_pager: bool) -> None:
    """Per session of each CAP: duration, time to first token, messages by type, bytes, tokens per
    model (prompt = input + cache read + cache creation), LLM calls (answered / failed), tool calls,
    cost, errors; and a total per capture that counts a call seen on stdout and on the wire once.

    The mapping is documented in docs/stats.md.
    """
    check_dialect(dialect)
    if per_call:
        _calls(captures, channels, as_json, no_pager)
        return
    sessions: list[dict[str, Any]] = []
    totals: dict[str, dict[str, Any]] = {}
    for cap in captures:
        problems: list[str] = []
        with console.reading("stats", [cap]):
            found = stats_capture(cap, dialect=dialect, channels=channels, problems=problems)
        for line in problems:  # skipped lines change the numbers: say so (stderr, stdout stays the table)
            click.echo(f"wirecap: warning: {line}", err=True)
        listed, total = listed_sessions(cap, found, undecoded=show_all or bool(channels))
        sessions += listed
        if total is not None:
            totals[cap] = total
    if as_json:
        click.echo(orjson.dumps(sessions, option=orjson.OPT_INDENT_2).decode())
    else:
        console.emit(stats_table(sessions, totals, several=len(captures) > 1, width=console.columns()),
                     pager=not no_pager)


def _calls(captures: tuple[str, ...], channels: tuple[str, ...], as_json: bool, no_pager: bool) -> None:
    """`--calls`: the LLM calls of every capture's network channels (of `channels` when given)."""
    calls: list[dict[str, Any]] = []
    for cap in captures:
        with console.reading("stats", [cap]):
            calls += [{"capture": cap, **c} for c in capture_calls(cap) if not channels or c["ch"] in channels]
    if as_json:
        click.echo(orjson.dumps(calls, option=orjson.OPT_INDENT_2).decode())
    else:
        console.emit(calls_table(calls, several=len(captures) > 1, width=console.columns()), pager=not no_pager)
