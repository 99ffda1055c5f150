"""`wirecap export CAP -o OUT`: a capture as HAR 1.2 for browser devtools and HTTP tools."""

from __future__ import annotations

import contextlib
import os

import click

from wirecap.capture.reader import CaptureReader
from wirecap.cli.common import refuse_output_over_input
from wirecap.errors import WirecapError
from wirecap.export.har import write_har
from wirecap.fsmode import open_private


@click.command()
@click.argument("capture", metavar="CAP")
@click.option("-o", "--output", "--har", "har_path", required=True, metavar="OUT",
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
    with CaptureReader(capture) as reader:  # written as the channels close: memory stays bounded
        if har_path == "-":
            counts = write_har(reader.header, reader, click.get_binary_stream("stdout"))
        else:
            if not force and os.path.lexists(har_path):
                raise WirecapError(f"{har_path}: exists; refusing to overwrite it (use --force)")
            # through a temp file renamed into place: bad input met halfway leaves no half a HAR
            tmp = f"{har_path}.tmp{os.getpid()}"
            try:
                fd = open_private(tmp, os.O_WRONLY | os.O_EXCL)
            except OSError as e:
                raise WirecapError(f"{har_path}: cannot create: {e.strerror}") from None
            try:
                with os.fdopen(fd, "wb") as f:
                    counts = write_har(reader.header, reader, f)
                os.replace(tmp, har_path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
    for line in reader.report():
        click.echo(f"wirecap: {line}", err=True)
    if quiet:
        return
    click.echo(f"wirecap: exported {counts['http']} HTTP and {counts['ws']} WebSocket entries"
               + (f"; skipped {counts['skipped']} process/pipe channels" if counts["skipped"] else ""), err=True)
