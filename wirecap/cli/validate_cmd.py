"""`wirecap validate`: protocol rules over a capture; exit 1 when an error-severity finding exists."""

from __future__ import annotations

import click
import orjson

from wirecap.analysis.tables import at_or_above, findings_text
from wirecap.analysis.validate import has_errors, validate_capture
from wirecap.cli import console
from wirecap.cli.common import check_dialect, complete_files
from wirecap.errors import WirecapError


@click.command()
@click.argument("capture", metavar="CAP", shell_complete=complete_files)
@click.option("--dialect", metavar="NAME", help="Decode with this dialect instead of detecting it.")
@click.option("--json", "as_json", is_flag=True, help="Findings as a JSON array instead of a table.")
@click.option("--heartbeat-interval", type=float, metavar="S", help="Codebuff ping interval (default 30).")
@click.option("--heartbeat-timeout", type=float, metavar="S", help="Codebuff: warn on a ping gap longer than S (default 60).")
@click.option("--ack-latency", type=float, metavar="S", help="Codebuff: warn on an ack later than S (default 5).")
@click.option("--tool-call-timeout", type=float, metavar="S",
              help="Codebuff: tool-call-request timeout when the request names none (default 30).")
@click.option("--gap", type=float, metavar="S", help="SSE, Responses WebSocket: warn on a pause between events of a response longer than S (default 30).")
@click.option("--ch", "channels", multiple=True, metavar="CH",
              help="Only findings of channel CH's session (a pipe selects its process; repeatable), and those of "
                   "the capture as a whole.")
@click.option("--strict-schema", is_flag=True,
              help="A message type or field its dialect does not know (rule drift) is an error, not info.")
@click.option("--min-severity", type=click.Choice(["info", "warning", "error"]), default="info", show_default=True,
              help="Show findings of this severity and above.")
@console.color_option
@console.pager_option
def validate(capture: str, dialect: str | None, as_json: bool, heartbeat_interval: float | None,
             heartbeat_timeout: float | None, ack_latency: float | None, tool_call_timeout: float | None,
             gap: float | None, channels: tuple[str, ...], strict_schema: bool, min_severity: str,
             color: str | None, no_color: bool, no_pager: bool) -> None:
    """Check CAP against its format and its dialects' rules (docs/validation-rules.md).

    The format: the header and every record against the capture's JSON Schema, seq and t order,
    end.records (capture-format errors). Prints severity, rule, seq, channel and a one-line message per
    finding. Exit status: 1 when an error-severity finding exists (a format error, or with
    --strict-schema, drift), 0 otherwise, 2 when CAP cannot be read.
    """
    check_dialect(dialect)
    options = _options(heartbeat_interval=heartbeat_interval, heartbeat_timeout=heartbeat_timeout,
                       ack_latency=ack_latency, tool_call_timeout=tool_call_timeout, gap=gap)
    with console.reading("validate", [capture]):
        found = validate_capture(capture, dialect=dialect, channels=channels, strict_schema=strict_schema,
                                 options=options)
    if as_json:
        shown = at_or_above(found, min_severity)
        click.echo(orjson.dumps([f.to_json() for f in shown], option=orjson.OPT_INDENT_2).decode())
    else:
        use_color = console.color_wanted(console.when(color, no_color))
        console.emit(findings_text(capture, found, min_severity, width=console.columns(), color=use_color),
                     pager=not no_pager, color=use_color)
    raise SystemExit(1 if has_errors(found) else 0)


def _options(**given: float | None) -> dict[str, float]:
    """The rule options given on the command line (NaN refused: every comparison with it is false, so
    no rule would fire)."""
    for name, value in given.items():
        if value is not None and value != value:
            raise WirecapError(f"--{name.replace('_', '-')} nan: expected a number of seconds")
    return {k: v for k, v in given.items() if v is not None}
