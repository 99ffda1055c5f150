"""`wirecap tee`: record a CLI's stdout/stderr (or a pipe) while passing it through untouched.

A thin shell over `wirecap.record.tee` (the recorders) and `wirecap.record.supervise` (signals)."""

from __future__ import annotations

import os
import sys

import click

from wirecap.cli.common import (
    check_capture_output,
    check_dialect,
    complete_files,
    make_redactor,
    redaction_options,
)
from wirecap.errors import WirecapError


@click.command(context_settings={"allow_interspersed_args": False})
@click.option("-o", "--output", required=True, metavar="CAP", shell_complete=complete_files, help="Capture file to write (.jsonl, .jsonl.gz, .jsonl.zst).")
@click.option("--dialect", metavar="NAME", help="Store NAME as a hint for the decoders (e.g. claude-code).")
@click.option("--pty", "use_pty", is_flag=True, help="Run CMD on a pseudo-terminal (stdin and stdout); stderr stays a pipe.")
@click.option("--record-stdin", is_flag=True, help="Also record what is forwarded to CMD's stdin (channel `stdin`).")
@click.option("--force", is_flag=True, help="Overwrite CAP if it exists.")
@redaction_options
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[-- CMD ARGS...]")
def tee(output: str, dialect: str | None, use_pty: bool, record_stdin: bool, force: bool, no_redact: bool,
        redact_keys: tuple[str, ...], redact_patterns: tuple[str, ...], command: tuple[str, ...]) -> None:
    """Run CMD, pass its stdout/stderr through byte for byte, and record every line with its time.

    \b
      wirecap tee -o run.jsonl -- claude -p "say hello" --output-format stream-json --verbose
      some-cli --json | wirecap tee -o run.jsonl | jq .

    Without CMD, records standard input and copies it to standard output (pipe mode). Exits with
    CMD's exit code (128+N when it died of signal N). SIGINT, SIGTERM, SIGHUP and SIGQUIT are passed
    on to CMD. If the capture cannot be written, output still passes through unchanged and one
    warning is printed. See docs/commands/tee.md.
    """
    from wirecap.capture.writer import default_origin, open_writer
    from wirecap.record.supervise import blocked, supervise, supervise_pipe, waited_signals
    from wirecap.record.tee import PipeTee, TeeRunner

    redactor = make_redactor(no_redact, redact_keys, redact_patterns)
    check_capture_output(output)
    check_dialect(dialect)
    if not command and (use_pty or record_stdin):
        raise WirecapError("--pty and --record-stdin need a command: wirecap tee -o CAP [OPTIONS] -- CMD ARGS...")

    waited = waited_signals(use_pty)
    runner: TeeRunner | PipeTee | None = None

    def on_error(message: str) -> None:
        text = f"{message} (capture incomplete; recording stopped, output still passes through)"
        if runner is not None:
            runner.warn(text)
        else:
            try:
                os.write(2, f"wirecap: warning: {text}\n".encode())
            except OSError:
                pass

    # The signals are blocked before any thread exists, so every thread inherits the mask and the main
    # thread alone collects them (with who sent them) through sigtimedwait.
    with blocked(waited):
        writer = open_writer(output, origin=default_origin("tee"), redactor=redactor, force=force, on_error=on_error)
        try:
            if command:
                runner = TeeRunner(writer, list(command), pty=use_pty, record_stdin=record_stdin, dialect=dialect)
                runner.start()
                status = supervise(runner, waited, use_pty)
            else:
                runner = PipeTee(writer, dialect=dialect)
                status = supervise_pipe(runner, waited)
        finally:
            writer.close()
    sys.stdout.flush()
    sys.exit(status)
