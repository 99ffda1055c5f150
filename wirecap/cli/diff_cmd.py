"""`wirecap diff A B`: what really changed between two agent runs (thin shell over analysis.diff)."""

from __future__ import annotations

import sys

import click
import orjson

from wirecap.analysis.diff import LEVELS, diff_captures
from wirecap.analysis.diff.render import render_summary, render_unified
from wirecap.cli import console
from wirecap.cli.common import complete_files, exit_without_teardown, readable_twice


@click.command()
@click.argument("a", metavar="A", shell_complete=complete_files)
@click.argument("b", metavar="B", shell_complete=complete_files)
@click.option("--level", type=click.Choice(LEVELS), default="events", show_default=True,
              help="events: universal events (messages, tool calls and results, reasoning, errors, usage); "
                   "wire: every message after normalization; stats: the numbers side by side.")
@click.option("--ch", metavar="A[:B]", help="Compare one channel of each side (B defaults to A), e.g. stdout or http-2:http-3.")
@click.option("--ignore", "ignore", multiple=True, metavar="PATH",
              help="Also ignore this field (path syntax of docs/paths.md; repeatable).")
@click.option("--keep", "keep", multiple=True, metavar="PATH",
              help="Compare this field even though it is volatile by default (repeatable; wins over --ignore).")
@click.option("--chunks", is_flag=True, help="Also compare how streamed text was split into chunks.")
@click.option("--summary", is_flag=True, help="A table of added / removed / changed by kind instead of the view.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable result (one JSON object).")
@click.option("--timing", is_flag=True, help="Flag latency regressions (time to first token, durations).")
@click.option("--threshold", default="50%", show_default=True, metavar="PCT",
              help="With --timing: the slowdown that counts as a regression (50% = 1.5 times as long).")
@click.option("--context", "context", type=click.IntRange(min=0), default=3, show_default=True, metavar="N",
              help="Unchanged items shown around each difference.")
@console.color_option
@console.pager_option
def diff(a: str, b: str, level: str, ch: str | None, ignore: tuple[str, ...], keep: tuple[str, ...], chunks: bool,
         summary: bool, as_json: bool, timing: bool, threshold: str, context: int, color: str | None,
         no_color: bool, no_pager: bool) -> None:
    """Compare two captures (or two universal-event files from `wirecap convert`).

    Ids, timestamps, txids, session ids, fingerprints and chunk boundaries are ignored by default, so
    two runs of the same session compare equal. Streams are aligned (Myers/patience) and changed items
    are reported by field path, e.g. `tool_call[2].input.command: "ls" -> "ls -la"`.

    A or B may be `-` (standard input). Exit status: 0 equal (one summary line), 1 different, 2 error
    — like diff(1).
    """
    with readable_twice([a, b]) as (path_a, path_b), console.reading("diff", [path_a, path_b]):
        result = diff_captures(path_a, path_b, level=level, ch=ch, ignore=ignore, keep=keep, chunks=chunks,
                               timing_threshold=threshold if timing else None)
    result.a, result.b = a, b
    # what the readers skipped: a diff that looks equal must not hide a damaged capture
    result.warnings = [w.replace(path_a, a).replace(path_b, b) for w in result.warnings]
    for line in result.warnings:
        click.echo(f"wirecap: warning: {line}", err=True)
    if as_json:
        sys.stdout.buffer.write(orjson.dumps(result.to_json(), option=orjson.OPT_INDENT_2, default=str) + b"\n")
    elif result.equal:
        click.echo(result.summary_line())
    elif summary:
        console.emit(render_summary(result), pager=not no_pager)
    else:
        use_color = console.color_wanted(console.when(color, no_color))
        console.emit(render_unified(result, color=use_color, context=context, width=console.columns()),
                     pager=not no_pager, color=use_color)
    exit_without_teardown(0 if result.equal else 1)
