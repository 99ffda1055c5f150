"""`wirecap info CAP`: what a capture holds (header, channels, clean or interrupted)."""

from __future__ import annotations

import click
import orjson

from wirecap.analysis.inventory import Inventory, build_inventory
from wirecap.capture.reader import CaptureReader


def _fmt_duration(d: float | None) -> str:
    return "" if d is None else f"{d:.3f}s"


def render_info(path: str, inv: Inventory, status: str, problems: list[str]) -> str:
    h = inv.header
    origin = h.get("origin") or {}
    red = h.get("redaction") or {}
    argv = origin.get("argv")
    origin_text = " ".join(
        str(x) for x in (origin.get("tool"), origin.get("version"), origin.get("source")) if x
    )
    if origin.get("host"):
        origin_text += f" on {origin['host']}"
    lines = [
        f"capture    {path}",
        f"format     v{h.get('wirecap')}",
        f"id         {h.get('id')}",
        f"created    {h.get('created')}",
        f"origin     {origin_text}",
    ]
    if isinstance(argv, list) and argv:
        lines.append(f"argv       {' '.join(str(a) for a in argv)}")
    if origin.get("imported_from"):
        lines.append(f"imported   {orjson.dumps(origin['imported_from']).decode()}")
    if red.get("enabled"):
        lines.append(f"redaction  on ({red.get('policy', '?')})")
    else:
        lines.append("redaction  OFF (written with --no-redact)")
    j = inv.to_json()
    lines.append(
        f"records    {inv.records}   messages {inv.messages}   bytes {inv.bytes}   "
        f"duration {_fmt_duration(j['duration'])}"
    )
    lines.append(f"status     {status}")
    if inv.channels:
        from tabulate import tabulate

        rows = [
            [c.ch, c.kind or "?", _short(c.endpoint), c.dialect or "", c.c2s, c.s2c, c.bytes,
             _fmt_duration(c.duration), c.status]
            for c in inv.channels.values()
        ]
        lines.append("")
        lines.append(
            tabulate(
                rows,
                headers=["ch", "kind", "endpoint", "dialect", "c2s", "s2c", "bytes", "duration", "close"],
                disable_numparse=True,
            )
        )
    if inv.errors:
        lines.append("")
        lines.append(f"recorder errors ({len(inv.errors)}):")
        lines += [f"  {e}" for e in inv.errors[:20]]
    if problems:
        lines.append("")
        lines.append(f"reader problems ({len(problems)}):")
        lines += [f"  {p}" for p in problems[:20]]
        if len(problems) > 20:
            lines.append(f"  ... and {len(problems) - 20} more")
    return "\n".join(lines)


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


@click.command()
@click.argument("capture", metavar="CAP")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the table.")
def info(capture: str, as_json: bool) -> None:
    """Describe the capture CAP: header, channels, clean or interrupted.

    One row per channel: kind, endpoint (URL, command line or pipe), dialect (hinted or detected), messages
    client-to-server and server-to-client, payload bytes, duration and how it closed
    ("open" = never closed). CAP may be `-` (stdin), `.gz` or `.zst`.
    """
    reader = CaptureReader(capture)
    with reader:
        inv = build_inventory(reader.header, reader)
    problems = list(reader.problems)
    status = "interrupted: " + reader.interrupted if reader.interrupted else "clean (end record present)"
    if as_json:
        out = inv.to_json()
        out["capture"] = capture
        out["clean"] = reader.interrupted is None
        out["interrupted"] = reader.interrupted
        out["problems"] = problems
        click.echo(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode())
        return
    click.echo(render_info(capture, inv, status, problems))
