"""`wirecap export CAP -o OUT`: a capture as HAR 1.2 for browser devtools and HTTP tools."""

from __future__ import annotations

import sys
from typing import BinaryIO, cast

import click

from wirecap.capture.reader import CaptureReader
from wirecap.cli import console
from wirecap.cli.common import complete_files, refuse_output_over_input, refuse_overwrite, replacing_file
from wirecap.export.har import write_har


@click.command()
@click.argument("capture", metavar="CAP", shell_complete=complete_files)
@click.option("-o", "--output", "--har", "har_path", required=True, metavar="OUT", shell_complete=complete_files,
              help="Write HAR 1.2 to OUT (`-` for stdout). `--har OUT` is the same option.")
@click.option("--force", is_flag=True, help="Replace OUT if it exists.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the 'exported N entries' summary on stderr.")
def export(capture: str, har_path: str, force: bool, quiet: bool) -> None:
    """Export the capture CAP as HAR 1.2.

    One entry per HTTP exchange (request and response bodies; an SSE stream's events joined back
    into its bytes) and per WebSocket connection (with Chrome's `_webSocketMessages`). Process and
    pipe channels have no HAR form and are skipped (counted on stderr). Redaction placeholders stay
    as they are in the capture.
    """
    refuse_output_over_input(har_path, [capture])
    with CaptureReader(capture) as reader, console.reading("export", [capture], quiet_stdout=har_path == "-"):
        # written as the channels close: memory stays bounded
        if har_path == "-":
            counts = write_har(reader.header, reader, sys.stdout.buffer)
        else:
            refuse_overwrite(har_path, force)
            # through a temp file renamed into place: bad input met halfway leaves no half a HAR
            with replacing_file(har_path) as f:
                counts = write_har(reader.header, reader, cast(BinaryIO, f))  # (opened "wb")
    for line in reader.report():
        click.echo(f"wirecap: {line}", err=True)
    if quiet:
        return
    click.echo(f"wirecap: exported {counts['http']} HTTP and {counts['ws']} WebSocket entries"
               + (f"; skipped {counts['skipped']} process/pipe channels" if counts["skipped"] else ""), err=True)
