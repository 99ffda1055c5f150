"""`wirecap cat CAP`: the records of a capture, one readable line each (or raw with --json)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from typing import Any

import click

from wirecap.analysis.listing import RecordFilter, one_line, record_line
from wirecap.capture.reader import CaptureReader
from wirecap.cli.common import check_channels_exist, non_negative, noting_channels
from wirecap.errors import WirecapError


def _load_notes(capture: str) -> tuple[dict[int, list[Any]], dict[str, list[Any]], list[Any], list[str]]:
    """Notes by seq, by channel, capture-wide, and problems; empty without the notes module or sidecar."""
    if capture == "-":
        return {}, {}, [], []
    try:
        from wirecap.analysis import notes as notes_mod
    except ImportError:
        return {}, {}, [], []
    problems: list[str] = []
    try:
        notes = notes_mod.load_notes(capture, problems=problems)
    except WirecapError as e:
        return {}, {}, [], [str(e)]
    by_seq: dict[int, list[Any]] = {}
    by_ch: dict[str, list[Any]] = {}
    wide: list[Any] = []
    for n in notes:
        if n.seq is not None:
            by_seq.setdefault(n.seq, []).append(n)
        elif n.ch is not None:
            by_ch.setdefault(n.ch, []).append(n)  # a note on a whole channel: shown at its open
        else:
            wide.append(n)
    return by_seq, by_ch, wide, problems


def _note_line(note: Any) -> str:
    span = ""
    if note.seq is not None and note.seq_end is not None and note.seq_end != note.seq:
        span = f" (seq {note.seq}-{note.seq_end})"
    who = f" — {note.author}" if note.author else ""
    return f"{'':>17} ✎ [{note.tag}] {one_line(note.text)}{span}{who}"


def _width(width: int | None) -> int:
    if width is not None:
        return max(width, 0)
    if sys.stdout.isatty():
        return shutil.get_terminal_size((120, 24)).columns
    cols = os.environ.get("COLUMNS", "")
    return int(cols) if cols.isdigit() else 0


@click.command()
@click.argument("capture", metavar="CAP")
@click.option("--json", "as_json", is_flag=True,
              help="Print the records' lines exactly as they are in the file (header first).")
@click.option("--ch", "channels", multiple=True, metavar="CH", help="Only channel CH (repeatable).")
@click.option("--dir", "direction", type=click.Choice(["c2s", "s2c"]),
              help="Only messages in this direction.")
@click.option("--type", "types", multiple=True,
              type=click.Choice(["open", "msg", "response", "close", "error", "end"]),
              help="Only records of this type (repeatable).")
@click.option("--grep", "grep", metavar="REGEX",
              help="Only messages whose payload text matches REGEX (other records: their JSON).")
@click.option("--follow", "-f", is_flag=True,
              help="Keep reading as the capture grows; stop at its end record (Ctrl-C to quit).")
@click.option("--width", type=int, callback=non_negative, default=None, metavar="N",
              help="Cut lines to N characters (default: the terminal width; 0 = never).")
@click.option("--no-notes", is_flag=True, help="Do not show annotations from CAP.notes.jsonl.")
def cat(capture: str, as_json: bool, channels: tuple[str, ...], direction: str | None,
        types: tuple[str, ...], grep: str | None, follow: bool, width: int | None, no_notes: bool) -> None:
    """Print the records of the capture CAP, one line each.

    Columns: t (seconds since the capture began), seq, channel, direction (→ client to server,
    ← server to client; + open, × close, ! error, = end), record type, and a summary: the
    message's type fields first (`type`, `subtype`, `data.type`), then its payload. CAP may be `-`
    (stdin), `.gz` or `.zst`. Reader problems and "interrupted capture" go to stderr, one line
    each; the exit status is 0 unless CAP cannot be read (2).
    """
    try:
        rx = re.compile(grep) if grep is not None else None
    except re.error as e:
        raise WirecapError(f"--grep {grep!r}: invalid regular expression: {e}") from None
    keep = RecordFilter(channels=channels, direction=direction, types=types, grep=rx)
    reader = CaptureReader(capture, follow=follow and capture != "-")
    out = sys.stdout.buffer
    by_seq: dict[int, list[Any]] = {}
    by_ch: dict[str, list[Any]] = {}
    note_problems: list[str] = []
    seen: set[str] = set()
    records = noting_channels(reader, seen) if channels else reader
    try:
        if as_json:
            out.write(reader.header_line if reader.header_line.endswith(b"\n") else reader.header_line + b"\n")
            for rec in records:
                if keep(rec):
                    line = reader.line
                    out.write(line if line.endswith(b"\n") else line + b"\n")
                    if follow:
                        out.flush()
        else:
            if not no_notes:
                by_seq, by_ch, wide, note_problems = _load_notes(capture)
                for n in wide:
                    out.write((_note_line(n).lstrip() + "\n").encode())
            cut = _width(width)
            for rec in records:
                if not keep(rec):
                    continue
                out.write((record_line(rec, cut) + "\n").encode("utf-8", "replace"))
                notes = by_seq.get(rec.get("seq"))  # type: ignore[arg-type]
                if rec.get("type") == "open" and rec.get("ch") in by_ch:
                    notes = [*(notes or []), *by_ch[rec["ch"]]]
                if notes:
                    for n in notes:
                        out.write((_note_line(n) + "\n").encode("utf-8", "replace"))
                if follow:
                    out.flush()
        out.flush()
    finally:
        reader.close()
    for line in [*note_problems, *reader.report()]:
        click.echo(f"wirecap: {line}", err=True)
    check_channels_exist(capture, channels, seen)
