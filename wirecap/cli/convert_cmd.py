"""`wirecap convert`: a capture as universal events (JSONL), each with the seqs of its records."""

from __future__ import annotations

import sys
from typing import IO, Any

import click
import orjson

from wirecap.cli.common import (
    check_channels_exist,
    check_dialect,
    noting_channels,
    refuse_output_over_input,
    replacing_file,
)
from wirecap.errors import WirecapError
from wirecap.events import dumps as event_line


def _notes(capture: str) -> list[Any]:
    """Annotations of CAP (CAP.notes.jsonl), when the notes module and the sidecar exist."""
    if capture == "-":
        return []
    try:
        from wirecap.analysis.notes import load_notes
    except ImportError:
        return []
    try:
        return sorted(load_notes(capture), key=lambda n: (n.seq is not None, n.seq or 0))
    except WirecapError:
        return []


def _note_json(n: Any) -> dict[str, Any]:
    seq = [] if n.seq is None else [n.seq] if not getattr(n, "seq_end", None) else [n.seq, n.seq_end]
    out = {"kind": "note", "ch": getattr(n, "ch", None), "seq": seq, "id": getattr(n, "id", None),
           "tag": getattr(n, "tag", None), "text": getattr(n, "text", None), "author": getattr(n, "author", None)}
    return {k: v for k, v in out.items() if v is not None}


def write_events(capture: str, out: IO[bytes], *, dialect: str | None, ch: str | None, notes: bool) -> int:
    from wirecap.capture.reader import CaptureReader
    from wirecap.dialects import decode_batches, decode_records

    pending = _notes(capture) if notes else []
    i = 0
    while i < len(pending) and pending[i].seq is None:  # capture-wide notes first
        out.write(orjson.dumps(_note_json(pending[i])) + b"\n")
        i += 1
    dumps = orjson.dumps
    line_of = event_line
    first_note = i
    n = 0  # events written (the lines in buf less the notes among them)
    buf: list[bytes] = []
    seen: set[str] = set()
    with CaptureReader(capture) as reader:
        if ch:
            batches: Any = ([ev] for ev in decode_records(noting_channels(reader, seen), dialect=dialect, ch=ch))
        else:
            batches = decode_batches(reader, dialect=dialect)
        notes_left = i < len(pending)
        for events in batches:
            for ev in events:
                if notes_left and ev.seq and ev.seq[0] > pending[i].seq:
                    while i < len(pending) and ev.seq[0] > pending[i].seq:
                        buf.append(dumps(_note_json(pending[i])))
                        i += 1
                    notes_left = i < len(pending)
                buf.append(line_of(ev))
            if len(buf) >= 512:
                n += len(buf)
                buf.append(b"")
                out.write(b"\n".join(buf))
                buf = []
        n += len(buf) - (i - first_note)
        for note in pending[i:]:
            buf.append(dumps(_note_json(note)))
        if buf:
            buf.append(b"")
            out.write(b"\n".join(buf))
        for line in reader.report():
            click.echo(f"wirecap: {line}", err=True)
    if ch:
        check_channels_exist(capture, [ch], seen)
    return n


@click.command()
@click.argument("capture", metavar="CAP")
@click.option("-o", "--output", metavar="OUT", help="Write the events to OUT instead of standard output.")
@click.option("--dialect", metavar="NAME", help="Decode with this dialect instead of detecting it "
              "(applies to every channel of its transport). See `wirecap convert --list-dialects`.")
@click.option("--ch", metavar="CH", help="Only events of channel CH (a process name selects its pipes too).")
@click.option("--no-notes", is_flag=True, help="Leave out annotations from CAP.notes.jsonl.")
@click.option("--list-dialects", is_flag=True, is_eager=True, expose_value=False,
              callback=lambda ctx, _p, v: _list(ctx) if v else None, help="List the dialects and exit.")
def convert(capture: str, output: str | None, dialect: str | None, ch: str | None, no_notes: bool) -> None:
    """Decode CAP into universal events, one JSON object per line.

    Each event has kind (session.started, turn.started, item.started / item.delta /
    item.completed, usage, error, turn.ended, session.ended, unparsed), ch, seq (the records it
    came from), t, dialect, and kind-specific data (docs/events.md). Annotations appear as
    `{"kind": "note", ...}` lines after the events of their seq.
    """
    check_dialect(dialect)
    if output and output != "-":
        refuse_output_over_input(output, [capture])
        try:
            with replacing_file(output) as f:
                write_events(capture, f, dialect=dialect, ch=ch, notes=not no_notes)
        except OSError as e:
            raise WirecapError(f"{output}: cannot write: {e.strerror}") from None
    else:
        write_events(capture, sys.stdout.buffer, dialect=dialect, ch=ch, notes=not no_notes)
        sys.stdout.buffer.flush()


def _list(ctx: click.Context) -> None:
    from wirecap.dialects import DIALECTS

    for d in DIALECTS.values():
        click.echo(f"{d.name:22} {d.transport:5} {d.summary}")
    ctx.exit(0)
