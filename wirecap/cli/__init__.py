"""The `wirecap` command: a click group whose subcommands load lazily.

Lazy loading keeps `wirecap cat` from importing mitmproxy; each subcommand lives in its own module
under `wirecap/cli/` and is a thin shell over the library.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import click

from wirecap import __version__
from wirecap.errors import ExitStatus, WirecapError

INTERNAL_ERROR = ExitStatus.INTERNAL_ERROR  # (kept importable: the fuzz tests name it)

# name -> "module:attribute". A command whose module is not there yet is simply not listed.
COMMANDS: dict[str, str] = {
    "info": "wirecap.cli.info_cmd:info",
    "cat": "wirecap.cli.cat_cmd:cat",
    "import": "wirecap.cli.import_cmd:import_",
    "tee": "wirecap.cli.tee_cmd:tee",
    "record": "wirecap.cli.record_cmd:record",
    "ca": "wirecap.cli.record_cmd:ca",
    "addon-path": "wirecap.cli.record_cmd:addon_path",
    "convert": "wirecap.cli.convert_cmd:convert",
    "validate": "wirecap.cli.validate_cmd:validate",
    "stats": "wirecap.cli.stats_cmd:stats",
    "replay": "wirecap.cli.replay_cmd:replay",
    "diff": "wirecap.cli.diff_cmd:diff",
    "annotate": "wirecap.cli.annotate_cmd:annotate",
    "report": "wirecap.cli.report_cmd:report",
    "export": "wirecap.cli.export_cmd:export",
}


class _DownstreamClosed(Exception):
    """A BrokenPipeError carried past click, which would otherwise turn it into exit status 1."""


class LazyGroup(click.Group):
    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except BrokenPipeError as e:
            raise _DownstreamClosed() from e

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = []
        for name, target in COMMANDS.items():
            module = target.split(":")[0]
            if importlib.util.find_spec(module) is not None:
                names.append(name)
        return names

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        from wirecap.cli.console import normalize_color_argument

        return super().parse_args(ctx, normalize_color_argument(args))

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        """A mistyped subcommand gets "did you mean" (`wirecap stat` -> stats)."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and not ctx.resilient_parsing and self.get_command(ctx, name) is None:
            import difflib

            close = difflib.get_close_matches(name, self.list_commands(ctx), n=3, cutoff=0.6)
            close += [c for c in self.list_commands(ctx) if c.startswith(name) and c not in close]
            # (worded as click's own for a subcommand's subcommand: `wirecap replay sevre`)
            hint = (f" Did you mean {close[0]!r}?" if len(close) == 1 else
                    f" Did you mean one of {', '.join(repr(c) for c in close[:3])}?" if close else "")
            ctx.fail(f"No such command {name!r}.{hint}")
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        if importlib.util.find_spec(module_name) is None:
            return None
        return getattr(importlib.import_module(module_name), attr)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="wirecap")
@click.option("--color", "color", type=click.Choice(["auto", "always", "never"]), default=None, metavar="WHEN",
              help="Color for every command: auto (a terminal, unless NO_COLOR is set), always, never.")
@click.option("--no-pager", "no_pager", is_flag=True, help="Never page long output (like git --no-pager).")
def cli(color: str | None, no_pager: bool) -> None:
    """Record, replay, decode, diff, annotate and report on coding-agent traffic.

    Captures are JSONL files (see docs/capture-format.md). Exit codes: 0 ok, 1 a finding or
    difference (validate, diff), 2 an error (unreadable input, refused operation), 3 an internal
    error (a bug in wirecap: please report it; WIRECAP_DEBUG=1 shows the traceback), 130 interrupted.
    """
    from wirecap.cli.console import SETTINGS

    SETTINGS.color, SETTINGS.pager = color, not no_pager


def usage_error_line(e: click.UsageError) -> str:
    """Click's four-line usage error as one line: `info: Missing argument 'CAP' (see 'wirecap info --help')`."""
    path = e.ctx.command_path if e.ctx is not None else "wirecap"
    sub = path.partition(" ")[2]
    message = " ".join(e.format_message().split()).rstrip(".")
    return f"{sub + ': ' if sub else ''}{message} (see '{path} --help')"


def main(argv: list[str] | None = None) -> None:
    """Entry point: user errors become one line on stderr and exit 2 (`ExitStatus`), never a traceback."""
    if argv is None:
        from wirecap.cli import common

        common.AS_PROGRAM = True
    try:
        cli.main(args=argv, prog_name="wirecap", standalone_mode=False)
    except WirecapError as e:
        click.echo(f"wirecap: {e}", err=True)
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        click.echo("wirecap: aborted", err=True)
        sys.exit(ExitStatus.INTERRUPTED)
    except click.exceptions.NoArgsIsHelpError as e:
        # `wirecap` or `wirecap replay` alone: the help, as --help prints it.
        click.echo(e.ctx.get_help() if e.ctx is not None else e.format_message())
        sys.exit(ExitStatus.OK)
    except click.UsageError as e:
        click.echo(f"wirecap: {usage_error_line(e)}", err=True)
        sys.exit(ExitStatus.ERROR)
    except click.ClickException as e:
        click.echo(f"wirecap: {e.format_message()}", err=True)
        sys.exit(ExitStatus.ERROR)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except (BrokenPipeError, _DownstreamClosed):
        # Downstream closed early (`wirecap cat | head`): quiet, like cat. Point stdout at /dev/null
        # so the interpreter's final flush of what is still buffered cannot fail again.
        try:
            import os

            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        sys.exit(ExitStatus.OK)
    except KeyboardInterrupt:
        sys.exit(ExitStatus.INTERRUPTED)
    except Exception as e:  # noqa: BLE001 - the last resort: a bug, never bad input (tests/integration/test_fuzz_commands.py)
        import os

        if os.environ.get("WIRECAP_DEBUG"):
            if argv is not None:  # called from Python (tests): the exception itself
                raise
            import traceback

            traceback.print_exc()
            sys.exit(ExitStatus.INTERNAL_ERROR)
        what = " ".join(str(e).split())[:200]
        click.echo(f"wirecap: internal error: {type(e).__name__}{': ' + what if what else ''} — please report "
                   f"it; WIRECAP_DEBUG=1 shows the traceback", err=True)
        sys.exit(ExitStatus.INTERNAL_ERROR)
