"""`wirecap annotate`: add, list and remove notes kept beside a capture (`CAP.notes.jsonl`)."""

from __future__ import annotations

import os

import click
import orjson

from wirecap.analysis import notes as notes_mod
from wirecap.cli.common import check_dialect, complete_files
from wirecap.errors import WirecapError


def _require_capture(path: str) -> None:
    if path == "-":
        raise WirecapError("annotate needs a capture file, not standard input")
    if not os.path.exists(path):
        raise WirecapError(f"{path}: no such file")
    if os.path.isdir(path):
        raise WirecapError(f"{path}: is a directory, not a capture")


def _list(capture: str, as_json: bool) -> None:
    problems: list[str] = []
    notes = notes_mod.load_notes(capture, problems=problems)
    last_seq, channels = notes_mod.capture_extent(capture)
    problems += notes_mod.check_notes(notes, last_seq, channels, notes_mod.notes_path(capture))
    for p in problems:
        click.echo(f"wirecap: warning: {p}", err=True)
    if as_json:
        for n in notes:
            click.echo(orjson.dumps(n.to_json()).decode())
        return
    if not notes:
        click.echo(f"no notes on {capture}")
        return
    from wirecap.analysis.tables import NOTE_COLUMNS, fit_table
    from wirecap.cli import console

    rows = [notes_mod.note_cells(n) for n in notes]
    click.echo(fit_table(NOTE_COLUMNS, rows, console.columns()))  # (fitted to the terminal; whole in a pipe)


def _from_validate(capture: str, author: str, dialect: str | None) -> None:
    from wirecap.analysis.validate import validate_capture

    findings = validate_capture(capture, dialect=dialect)
    existing = notes_mod.load_notes(capture)
    new = notes_mod.notes_from_findings(findings, existing, author=author)
    if new:
        notes_mod.add_notes(capture, new)
    skipped = len(findings) - len(new)
    click.echo(f"{len(new)} note(s) added from {len(findings)} finding(s)"
               + (f" ({skipped} already noted or capture-wide)" if skipped else ""))


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("capture", metavar="CAP", shell_complete=complete_files)
@click.argument("text", required=False)
@click.option("--seq", type=int, metavar="SEQ", help="The message (record seq) the note is about.")
@click.option("--to", "seq_end", type=int, metavar="SEQ", help="Make it a range: --seq FIRST --to LAST.")
@click.option("--ch", metavar="CH", help="The channel the note is about (alone: the whole channel).")
@click.option("--tag", default="note", metavar="TAG", show_default=True, help="One word: bug, question, expected, ...")
@click.option("--author", metavar="NAME", help="Who wrote it (default: $WIRECAP_AUTHOR, git user.name, $USER).")
@click.option("--list", "list_", is_flag=True, help="List the notes (a table; --json for JSON lines).")
@click.option("--json", "as_json", is_flag=True, help="With --list: one JSON object per note.")
@click.option("--rm", "rm_id", metavar="ID", help="Remove a note (appends a tombstone; a unique id prefix works).")
@click.option("--from-validate", is_flag=True, help="Turn validation findings into notes (tag = severity); "
              "findings already noted are skipped.")
@click.option("--dialect", metavar="NAME", help="With --from-validate: decode every channel as this dialect.")
def annotate(capture: str, text: str | None, seq: int | None, seq_end: int | None, ch: str | None, tag: str,
             author: str | None, list_: bool, as_json: bool, rm_id: str | None, from_validate: bool,
             dialect: str | None) -> None:
    """Add, list or remove notes on a capture.

    Notes live beside the capture in CAP.notes.jsonl (append-only); the capture is never rewritten.

    \b
      wirecap annotate run.jsonl --seq 42 --tag bug "no ack for txid 7"
      wirecap annotate run.jsonl --seq 40 --to 50 --ch ws-1 --tag question "why twice?"
      wirecap annotate run.jsonl --ch stderr --tag expected "warnings are normal here"
      wirecap annotate run.jsonl --list [--json]
      wirecap annotate run.jsonl --rm 3f2a9c1b
      wirecap annotate run.jsonl --from-validate
    """
    _require_capture(capture)
    modes = sum([list_, rm_id is not None, from_validate])
    adding = text is not None or seq is not None or ch is not None
    if modes > 1 or (modes and adding):
        raise WirecapError("give one of: a note (TEXT with --seq/--ch), --list, --rm ID, --from-validate")
    if as_json and not list_:
        raise WirecapError("--json goes with --list")
    if dialect is not None and not from_validate:
        raise WirecapError("--dialect goes with --from-validate")
    check_dialect(dialect)
    if list_:
        _list(capture, as_json)
        return
    who = author or notes_mod.default_author()
    if rm_id is not None:
        note = notes_mod.remove_note(capture, rm_id, author=who)
        click.echo(f"removed note {note.id} ({note.target()}, {note.tag})")
        return
    if from_validate:
        _from_validate(capture, who, dialect)
        return
    if text is None:
        raise WirecapError("no note text given (wirecap annotate CAP --seq N --tag TAG \"TEXT\")")
    if seq is None and ch is None:
        raise WirecapError("say what the note is about: --seq N, --seq N --to M, or --ch CHANNEL")
    note = notes_mod.add_note(capture, tag=tag, text=text, seq=seq, seq_end=seq_end, ch=ch, author=who)
    click.echo(f"{note.id}  {note.target()}  [{note.tag}]  {note.text}")
