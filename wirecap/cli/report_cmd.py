"""`wirecap report`: a report on one capture (or two, with their diff) for a terminal, a bug report
(Markdown), a browser (one self-contained HTML file) or a script (JSON)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import click

from wirecap.analysis.notes import notes_path
from wirecap.analysis.report.build import build_report
from wirecap.analysis.report.model import Report
from wirecap.capture.reader import CaptureReader
from wirecap.capture.redact import Redactor
from wirecap.cli import console
from wirecap.cli.common import (
    check_dialect,
    complete_files,
    force_option,
    make_redactor,
    non_negative,
    readable_twice,
    refuse_output_over_input,
    refuse_overwrite,
    replacing_file,
)
from wirecap.cli.progress import Progress
from wirecap.errors import WirecapError

FORMATS = ("term", "md", "html", "json")


def default_html_path(capture: str) -> str:
    """`run.jsonl` -> `run.report.html` (beside the capture, like its notes)."""
    return notes_path(capture)[: -len(".notes.jsonl")] + ".report.html"


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("captures", metavar="CAP [CAP2]", nargs=-1, required=True, shell_complete=complete_files)
@click.option("--format", "-f", "fmt", type=click.Choice(FORMATS), default="term", show_default=True,
              help="term: tables for this terminal; md: Markdown for a bug report; html: one self-contained "
                   "file; json: the report model.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json (like every command's --json).")
@click.option("-o", "--output", metavar="FILE", shell_complete=complete_files, help="Write here instead of standard output "
              "(html without -o writes CAP.report.html beside the capture, replacing it).")
@force_option
@click.option("--dialect", metavar="NAME", help="Decode every channel as this dialect instead of detecting it.")
@click.option("--width", type=int, callback=non_negative, metavar="N", help="With --format term: the width to fit (default: the terminal's).")
@click.option("--max-chars", type=int, callback=non_negative, default=65_536, show_default=True, metavar="N",
              help="With --format md: at most N characters (a GitHub issue takes 65,536), what matters first; "
                   "0 = no limit.")
@click.option("--redact-key", "redact_keys", multiple=True, metavar="NAME",
              help="Also redact JSON values under key NAME in what is shown (repeatable).")
@click.option("--redact-pattern", "redact_patterns", multiple=True, metavar="REGEX",
              help="Also redact substrings matching REGEX in what is shown (repeatable).")
@console.pager_option
def report(captures: tuple[str, ...], fmt: str, as_json: bool, output: str | None, dialect: str | None, width: int | None,
           max_chars: int, redact_keys: tuple[str, ...], redact_patterns: tuple[str, ...], force: bool,
           no_pager: bool) -> None:
    """Report on CAP (stats, timeline, conversation, findings, notes), or on CAP and CAP2 with their diff.

    Secrets are redacted in everything shown, even when the capture was recorded with --no-redact.

    \b
      wirecap report run.jsonl                      # tables in the terminal
      wirecap report run.jsonl -f md > bug.md       # paste into an issue
      wirecap report run.jsonl -f html              # writes run.report.html
      wirecap report a.jsonl b.jsonl -f html -o cmp.html
    """
    if len(captures) > 2:
        raise WirecapError("report takes one capture, or two to compare")
    if as_json:
        if fmt not in ("term", "json"):
            raise WirecapError(f"--json and --format {fmt} ask for two formats; give one")
        fmt = "json"
    check_dialect(dialect)
    redactor = make_redactor(False, redact_keys, redact_patterns)
    # before the work: a refusal should not come after a minute of it
    if fmt == "html" and output is None:  # (CAP.report.html, replaced without --force)
        if captures[0] == "-":
            raise WirecapError("--format html from standard input needs -o FILE")
        output = default_html_path(captures[0])
        refuse_output_over_input(output, captures)
    elif output is not None:
        refuse_output_over_input(output, captures)
        refuse_overwrite(output, force)
    # (drawn from a timer, not a thread: report A B's diff builds B in a forked child only without threads)
    with readable_twice(list(captures)) as paths, console.ticking("report") as progress:
        # (the raw records findings and notes point at are shown by markdown and json only)
        names = dict(zip(paths, captures, strict=True))
        rep = build_report(paths, redactor=redactor, dialect=dialect, relevant=fmt in ("md", "json"), diff_json=fmt == "json",
                           watch=_reading(progress, names),
                           comparing=lambda a, b: progress.stage(f"comparing {names.get(a, a)} and {names.get(b, b)}"))
        _name_inputs_as_given(rep, paths, list(captures))
        if fmt == "html":
            progress.stage("writing the html report", total=sum(c.records for c in rep.captures), unit="records")
            _count_records(rep, progress)
        else:
            progress.stage(f"writing the {fmt} report")
        shown = _render(rep, fmt, output, width, redactor, max_chars)
    # after the progress line is gone: it must not draw over the pager, nor end on the line printed
    if shown is not None:
        kind, text = shown
        if kind == "page":
            console.emit(text, pager=not no_pager, nl=False)
        else:
            click.echo(text, nl=False)


def _reading(progress: Progress, names: dict[str, str]) -> Callable[[CaptureReader], Iterable[dict[str, Any]]]:
    """What `build_report` reads each capture through: its records, counted for the progress line (bytes
    of a plain file, of which its size is the total; records of a compressed one or of standard input)."""
    def watch(reader: CaptureReader) -> Iterator[dict[str, Any]]:
        name = names.get(reader.path, reader.path)
        plain = not reader.path.endswith((".gz", ".zst")) and os.path.isfile(reader.path)
        if not progress.enabled:
            yield from reader
        elif plain:
            progress.stage(f"reading {name}", total=os.path.getsize(reader.path), unit="bytes")
            for rec in reader:
                progress.done += len(reader.line)
                yield rec
        else:
            progress.stage(f"reading {name}", unit="records")
            yield from progress.iterate(reader)
    return watch


def _count_records(rep: Report, progress: Progress) -> None:
    """The HTML page streams each capture's records into itself: count them for the progress line."""
    if not progress.enabled:
        return
    for cap in rep.captures:  # (the page embeds from iter_lines; iter_records only for a hand-made report)
        if cap.iter_lines is not None:
            lines = cap.iter_lines
            cap.iter_lines = lambda lines=lines: progress.iterate(lines())  # (the default binds this capture's)
        elif cap.iter_records is not None:
            each = cap.iter_records
            cap.iter_records = lambda each=each: progress.iterate(each())


def _name_inputs_as_given(rep: Report, paths: list[str], given: list[str]) -> None:
    """A capture read from standard input is `-` in the report, not the temporary copy."""
    for cap, path, name in zip(rep.captures, paths, given, strict=True):
        if path == name:
            continue
        cap.path = name
        if rep.diff_note:
            rep.diff_note = rep.diff_note.replace(path, name)
        if rep.compare is not None:
            rep.compare.rename(path, name)
        if rep.diff is not None:
            rep.diff["text"] = rep.diff["text"].replace(path, name)
            for side in ("a", "b"):
                if rep.diff["json"] and rep.diff["json"].get(side) == path:
                    rep.diff["json"][side] = name


def _render(rep: Report, fmt: str, output: str | None, width: int | None, redactor: Redactor,
            max_chars: int = 65_536) -> tuple[str, str] | None:
    """Write the report (to `output`, checked already: html always has one); what is left to print is
    returned: ("page", the report for a person: term, md), ("plain", json, or the path of the file written)."""
    if fmt == "html":
        from wirecap.analysis.report.html import render_html

        assert output is not None
        if output == "-":
            render_html(rep, sys.stdout, redactor=redactor)
            return None
        with replacing_file(output, "w") as f:
            render_html(rep, f, redactor=redactor)
        return "plain", output + "\n"
    if fmt == "term":
        from wirecap.analysis.report.term import render_term

        text = render_term(rep, width=width or console.columns(), redactor=redactor)
    elif fmt == "md":
        from wirecap.analysis.report.markdown import render_markdown

        text = render_markdown(rep, redactor=redactor, max_chars=max_chars)
    else:
        from wirecap.analysis.report.json import render_json

        text = render_json(rep, redactor=redactor)
    if output and output != "-":
        with replacing_file(output, "w") as f:
            f.write(text)
        return "plain", output + "\n"
    return ("plain" if fmt == "json" else "page"), text
