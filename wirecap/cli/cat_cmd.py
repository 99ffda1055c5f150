"""`wirecap cat CAP`: the records of a capture, one readable line each (or raw with --json)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterable, Iterator
from typing import IO, Any

import click

from wirecap.analysis.listing import RecordFilter, write_listing
from wirecap.analysis.notes import NotesByPlace, notes_beside
from wirecap.capture.reader import CaptureReader
from wirecap.cli import console
from wirecap.cli.common import check_channels_exist, complete_files, non_negative, noting_channels
from wirecap.errors import WirecapError


def _width(width: int | None) -> int:
    if width is not None:
        return max(width, 0)
    if sys.stdout.isatty():
        return shutil.get_terminal_size((120, 24)).columns
    cols = os.environ.get("COLUMNS", "")
    return int(cols) if cols.isdigit() else 0


def _format(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """-f was --follow before it was --format: a capture given to it gets told where follow went."""
    if value not in ("text", "json"):
        raise click.BadParameter(f"{value!r}: -f is --format (text or json); to follow a growing capture use -F",
                                 ctx=ctx, param=param)
    return value


def _seq_ranges(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[tuple[int, int], ...]:
    """`--seq N` or `--seq A-B` as (first, last) ranges."""
    out = []
    for v in value:
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", v)
        if m is None:
            raise click.BadParameter(f"{v!r}: give a seq N or a range A-B")
        a = int(m[1])
        b = int(m[2]) if m[2] is not None else a
        out.append((min(a, b), max(a, b)))
    return tuple(out)


def _upto(records: Iterable[dict[str, Any]], last: int) -> Iterator[dict[str, Any]]:
    """The records up to seq `last` (seqs only grow: `cat --seq` need not read the rest)."""
    for rec in records:
        yield rec
        if rec.get("seq", 0) >= last:
            return


def _see_channels(scanned: Iterable[dict[str, Any]], seen: set[str], wanted: set[str]) -> None:
    """Reading stopped at the last --seq: a --ch channel not met yet may open later in the capture (then
    it exists, and nothing of it was in the range). Reads on, only while one is still missing."""
    for _ in scanned:
        if wanted <= seen:
            return


@click.command()
@click.argument("capture", metavar="CAP", shell_complete=complete_files)
@click.option("--format", "-f", "fmt", default="text", show_default=True, metavar="text|json", callback=_format,
              help="text: one readable line per record; json: the records' lines exactly as they are in the file "
                   "(header first).")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--ch", "channels", multiple=True, metavar="CH", help="Only channel CH (repeatable).")
@click.option("--dir", "direction", type=click.Choice(["c2s", "s2c"]),
              help="Only messages in this direction.")
@click.option("--type", "types", multiple=True,
              type=click.Choice(["open", "msg", "response", "close", "error", "end"]),
              help="Only records of this type (repeatable).")
@click.option("--seq", "seqs", multiple=True, metavar="N|A-B", callback=_seq_ranges,
              help="Only the record with seq N, or seqs A to B (repeatable; reading stops past the last).")
@click.option("--grep", "grep", metavar="REGEX",
              help="Only messages whose payload text matches REGEX (other records: their JSON).")
@click.option("--follow", "-F", is_flag=True,
              help="Keep reading as the capture grows; stop at its end record (Ctrl-C to quit). (-F as in less; "
                   "-f is --format.)")
@click.option("--width", type=int, callback=non_negative, default=None, metavar="N",
              help="Cut lines to N characters (default: the terminal width; 0 = never).")
@click.option("--no-notes", is_flag=True, help="Do not show annotations from CAP.notes.jsonl.")
@console.pager_option
def cat(capture: str, fmt: str, as_json: bool, channels: tuple[str, ...], direction: str | None,
        types: tuple[str, ...], seqs: tuple[tuple[int, int], ...], grep: str | None, follow: bool, width: int | None,
        no_notes: bool, no_pager: bool) -> None:
    """Print the records of the capture CAP, one line each.

    Columns: t (seconds since the capture began), seq, channel, direction (→ client to server,
    ← server to client; + open, × close, ! error, = end), record type, and a summary: the
    message's type fields first (`type`, `subtype`, `data.type`), then its payload. CAP may be `-`
    (stdin), `.gz` or `.zst`. Reader problems and "interrupted capture" go to stderr, one line
    each; the exit status is 0 unless CAP cannot be read (2).
    """
    as_json = as_json or fmt == "json"
    try:
        rx = re.compile(grep) if grep is not None else None
    except re.error as e:
        raise WirecapError(f"--grep {grep!r}: invalid regular expression: {e}") from None
    keep = RecordFilter(channels=channels, direction=direction, types=types, grep=rx, seqs=seqs)
    reader = CaptureReader(capture, follow=follow and capture != "-")
    note_problems: list[str] = []
    seen: set[str] = set()
    scanned: Iterable[dict[str, Any]] = noting_channels(reader, seen) if channels else reader
    records = _upto(scanned, keep.last_seq) if keep.last_seq is not None else scanned
    try:
        if as_json:
            out = sys.stdout.buffer
            _raw(reader, records, keep, out, follow)
            out.flush()
        else:
            notes, note_problems = ([], []) if no_notes else notes_beside(capture)
            with console.paging(not (no_pager or follow)) as out:  # (following: the lines as they come)
                write_listing(records, keep, NotesByPlace.of(notes), _width(width), out, follow=follow)
                out.flush()
        if channels and records is not scanned and not follow:
            _see_channels(scanned, seen, set(channels))
    finally:
        reader.close()
    for line in [*note_problems, *reader.report()]:
        click.echo(f"wirecap: {line}", err=True)
    check_channels_exist(capture, channels, seen)


def _raw(reader: CaptureReader, records: Iterable[dict[str, Any]], keep: RecordFilter, out: IO[bytes],
         follow: bool) -> None:
    """The header line, then the lines of the records `keep` lets through, exactly as in the file."""
    out.write(reader.header_line if reader.header_line.endswith(b"\n") else reader.header_line + b"\n")
    for rec in records:
        if keep(rec):
            line = reader.line
            out.write(line if line.endswith(b"\n") else line + b"\n")
            if follow:
                out.flush()
