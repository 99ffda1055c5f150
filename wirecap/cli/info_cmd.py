"""`wirecap info CAP`: what a capture holds (header, channels, clean or interrupted)."""

from __future__ import annotations

import click
import orjson

from wirecap.analysis.inventory import build_inventory, info_json, info_text
from wirecap.capture.reader import CaptureReader
from wirecap.cli import console
from wirecap.cli.common import complete_files


@click.command()
@click.argument("capture", metavar="CAP", shell_complete=complete_files)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the table.")
@console.pager_option
def info(capture: str, as_json: bool, no_pager: bool) -> None:
    """Describe the capture CAP: header, channels, clean or interrupted.

    One row per channel: kind, endpoint (URL, command line or pipe), dialect (hinted or detected), messages
    client-to-server and server-to-client, payload bytes, duration and how it closed
    ("open" = never closed). When a client used or tried a WebSocket, the LLM calls per transport and
    whether it fell back from WebSocket to HTTP. CAP may be `-` (stdin), `.gz` or `.zst`.
    """
    with console.reading("info", [capture]):
        reader = CaptureReader(capture)
        with reader:  # stdin is read once: decoded in the same pass (a file only when it needs it, below)
            inv = build_inventory(reader.header, reader, transport=capture == "-")
        problems = list(reader.problems)
        if inv.ws_tried and capture != "-":  # which transport each LLM call used: a second, decoding pass
            from wirecap.analysis.transport import transport_capture

            inv.transport = transport_capture(capture)
    if as_json:
        out = info_json(capture, inv, reader.interrupted, problems)
        click.echo(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode())
    else:
        console.emit(info_text(capture, inv, reader.interrupted, problems, console.columns()), pager=not no_pager)
