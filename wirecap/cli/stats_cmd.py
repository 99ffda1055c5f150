"""`wirecap stats`: per-session numbers (duration, ttft, usage per model, calls, cost, errors)."""

from __future__ import annotations

from typing import Any

import click
import orjson

from wirecap.analysis.stats import listed_sessions, stats_capture
from wirecap.analysis.tables import stats_table
from wirecap.cli.common import check_dialect


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
    check_dialect(dialect)
    sessions: list[dict[str, Any]] = []
    totals: dict[str, dict[str, Any]] = {}
    for cap in captures:
        problems: list[str] = []
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
        click.echo(stats_table(sessions, totals, several=len(captures) > 1))
