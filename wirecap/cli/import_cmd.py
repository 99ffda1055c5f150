"""`wirecap import SRC... -o CAP`: turn transcripts people already have into one capture.

A thin shell over `wirecap.record.imports.import_sources`."""

from __future__ import annotations

import click

from wirecap.capture.importers import KINDS
from wirecap.cli.common import (
    check_capture_output,
    check_dialect,
    complete_files,
    make_redactor,
    redaction_options,
    refuse_output_over_input,
)
from wirecap.record.imports import import_sources


@click.command("import")
@click.argument("sources", metavar="SRC...", nargs=-1, required=True, shell_complete=complete_files)
@click.option("-o", "--output", "output", required=True, metavar="CAP", shell_complete=complete_files, help="The capture to write.")
@click.option("--kind", type=click.Choice(KINDS),
              help="What the sources are (default: detected per file from its name and first lines).")
@click.option("--dialect", metavar="NAME",
              help="Dialect hint for stdout transcripts (default: none; the decoders detect it when the "
                   "capture is read; session files get claude-session / codex-rollout).")
@click.option("--force", is_flag=True, help="Replace CAP if it exists.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the 'wrote CAP' summary or warnings on stderr.")
@redaction_options
def import_(sources: tuple[str, ...], output: str, kind: str | None, dialect: str | None, force: bool, quiet: bool,
            no_redact: bool, redact_keys: tuple[str, ...], redact_patterns: tuple[str, ...]) -> None:
    """Make the capture CAP from transcripts you already have.

    \b
    Sources (detected, or forced with --kind):
      stdout          a saved stdout JSONL of an agent CLI (claude/codebuddy stream-json,
                      codebuff, codex exec --json, opencode run --format json), or any text
      claude-session  a Claude Code session file (~/.claude/projects/*/SESSION.jsonl)
      codex-rollout   a Codex rollout file (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl)
      ws-frames       a lab WebSocket log (*_ws_frames.jsonl; untrimmed *_ws_frames_full/)
      requests        a lab HTTP log (*_requests.jsonl; full bodies from *_requests_full/)

    Lines and bodies are kept byte for byte; timing is kept where the source has it. What a
    source did not keep is not invented: trimmed copies carry `truncated`, summaries
    `flags: ["summary"]`. Secrets are redacted unless --no-redact.
    """
    redactor = make_redactor(no_redact, redact_keys, redact_patterns)
    check_capture_output(output)
    check_dialect(dialect)
    refuse_output_over_input(output, sources)

    def warn(line: str) -> None:
        click.echo(f"wirecap: warning: {line}", err=True)

    done = import_sources(list(sources), output, kind=kind, dialect=dialect, force=force, redactor=redactor,
                          warn=None if quiet else warn)
    if not quiet:
        n = done.messages
        click.echo(f"wirecap: wrote {output}: {done.records} records, {n} message{'' if n == 1 else 's'} "
                   f"from {done.sources} source(s)", err=True)
