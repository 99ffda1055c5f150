"""`wirecap convert`: a capture as universal events (JSONL), each with the seqs of its records."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import IO

import click

from wirecap.analysis.convert import sorted_notes, write_event_lines
from wirecap.analysis.notes import notes_beside
from wirecap.capture.reader import CaptureReader
from wirecap.cli import console
from wirecap.cli.common import (
    check_channels_exist,
    check_dialect,
    complete_files,
    force_option,
    noting_channels,
    refuse_output_over_input,
    refuse_overwrite,
    replacing_file,
)
from wirecap.dialects import decode_batches, decode_records
from wirecap.errors import WirecapError
from wirecap.events import Event


def write_events(capture: str, out: IO[bytes], *, dialect: str | None, ch: str | None, notes: bool) -> int:
    """Decode CAP and write its events (and notes) to `out` as JSON lines; returns the events written."""
    pending = sorted_notes(notes_beside(capture)[0]) if notes else []
    seen: set[str] = set()
    with CaptureReader(capture) as reader:
        if ch:
            batches: Iterable[list[Event]] = ([ev] for ev in decode_records(noting_channels(reader, seen),
                                                                            dialect=dialect, ch=ch))
        else:
            batches = decode_batches(reader, dialect=dialect)
        n = write_event_lines(batches, pending, out)
        for line in reader.report():
            click.echo(f"wirecap: {line}", err=True)
    if ch:
        check_channels_exist(capture, [ch], seen)
    return n


@click.command()
@click.argument("capture", metavar="CAP", shell_complete=complete_files)
@click.option("-o", "--output", metavar="OUT", shell_complete=complete_files, help="Write the events to OUT instead of standard output.")
@click.option("--dialect", metavar="NAME", help="Decode with this dialect instead of detecting it "
              "(applies to every channel of its transport). See `wirecap convert --list-dialects`.")
@click.option("--ch", metavar="CH", help="Only events of channel CH (a process name selects its pipes too).")
@click.option("--no-notes", is_flag=True, help="Leave out annotations from CAP.notes.jsonl.")
@force_option
@click.option("--list-dialects", is_flag=True, is_eager=True, expose_value=False,
              callback=lambda ctx, _p, v: _list(ctx) if v else None, help="List the dialects and exit.")
def convert(capture: str, output: str | None, dialect: str | None, ch: str | None, no_notes: bool, force: bool) -> None:
    """Decode CAP into universal events, one JSON object per line.

    Each event has kind (session.started, turn.started, item.started / item.delta /
    item.completed, usage, error, turn.ended, session.ended, unparsed), ch, seq (the records it
    came from), t, dialect, and kind-specific data (docs/events.md). Annotations appear as
    `{"kind": "note", ...}` lines after the events of their seq.
    """
    check_dialect(dialect)
    if output and output != "-":
        refuse_output_over_input(output, [capture])
        refuse_overwrite(output, force)
        try:
            with replacing_file(output) as f, console.reading("convert", [capture]):
                write_events(capture, f, dialect=dialect, ch=ch, notes=not no_notes)
        except OSError as e:
            raise WirecapError(f"{output}: cannot write: {e.strerror}") from None
    else:
        with console.reading("convert", [capture], quiet_stdout=True):
            write_events(capture, sys.stdout.buffer, dialect=dialect, ch=ch, notes=not no_notes)
            sys.stdout.buffer.flush()


def _list(ctx: click.Context) -> None:
    from wirecap.dialects import DIALECTS

    for d in DIALECTS.values():
        click.echo(f"{d.name:22} {d.transport:5} {d.summary}")
    ctx.exit(0)
