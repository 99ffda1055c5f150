"""Small helpers shared by the CLI shells: redaction options, output of records."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import click

from wirecap.capture.redact import Redactor
from wirecap.errors import WirecapError

# Set by `wirecap.cli.main` when it runs as the program (not when Python code calls it with arguments).
AS_PROGRAM = False


def exit_without_teardown(code: int) -> None:
    """End the program once its output is flushed, without freeing what the command built: a diff
    of 100k messages holds a few hundred thousand objects, and freeing them one by one at exit
    takes ~0.15 s for nothing. Called from Python (tests): a plain `sys.exit` for a non-zero code."""
    sys.stdout.flush()
    sys.stderr.flush()
    if AS_PROGRAM:
        os._exit(code)
    if code:
        sys.exit(code)


def complete_files(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Shell completion for a file argument or option: the shell's own filename completion (click's
    `file` item; a plain string argument would offer nothing and turn the shell's completion off)."""
    from click.shell_completion import CompletionItem

    return [CompletionItem(incomplete, type="file")]


def redaction_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--no-redact / --redact-key / --redact-pattern, for every command that writes a capture."""
    f = click.option(
        "--redact-pattern",
        "redact_patterns",
        multiple=True,
        metavar="REGEX",
        help="Also redact substrings matching REGEX (repeatable).",
    )(f)
    f = click.option(
        "--redact-key",
        "redact_keys",
        multiple=True,
        metavar="NAME",
        help="Also redact JSON values under key NAME (repeatable).",
    )(f)
    f = click.option(
        "--no-redact",
        is_flag=True,
        help="Write secrets as they are (off by default; the header says so).",
    )(f)
    return f


def make_redactor(no_redact: bool, redact_keys: tuple[str, ...], redact_patterns: tuple[str, ...]) -> Redactor:
    for rx in redact_patterns:
        try:
            re.compile(rx)
        except re.error as e:
            raise WirecapError(f"--redact-pattern {rx!r}: invalid regular expression: {e}") from None
    return Redactor(enabled=not no_redact, extra_keys=tuple(redact_keys), extra_patterns=tuple(redact_patterns))


def noting_channels(records: Iterable[dict[str, Any]], seen: set[str]) -> Iterator[dict[str, Any]]:
    """Pass records through, adding each one's channel to `seen` (to tell a typo in --ch from silence)."""
    for rec in records:
        ch = rec.get("ch")
        if ch is not None:
            seen.add(ch)
        yield rec


def check_channels_exist(capture: str, wanted: Iterable[str], seen: set[str]) -> None:
    """A --ch that names no channel of the capture is an error, not an empty result."""
    missing = [c for c in wanted if c not in seen]
    if missing:
        raise WirecapError(f"{capture}: no channel {missing[0]!r} (channels: {', '.join(sorted(seen)) or 'none'})")


def refuse_output_over_input(output: str, inputs: Iterable[str], option: str = "-o") -> None:
    """Writing a result over the capture it was made from would destroy the capture."""
    if output == "-" or not os.path.exists(output):
        return
    for path in inputs:
        if path != "-" and os.path.exists(path) and os.path.samefile(output, path):
            raise WirecapError(f"{option} {output}: that is the input {path}; refusing to overwrite it")


def refuse_overwrite(output: str, force: bool) -> None:
    """An output file that exists is replaced only with --force (every command's -o does this)."""
    if not force and output != "-" and os.path.lexists(output):
        raise WirecapError(f"{output}: exists; refusing to overwrite it (use --force)")


def force_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """`--force`: replace the -o file if it exists."""
    return click.option("--force", is_flag=True, help="Replace the -o file if it exists.")(f)


@contextlib.contextmanager
def replacing_file(path: str, mode: str = "wb") -> Iterator[IO[Any]]:
    """Write `path` through a temporary file renamed into place on success: a failure (bad input,
    Ctrl-C) leaves no half-written file and an existing one as it was. The file is 0600 (`fsmode`)."""
    from wirecap.fsmode import create_private, temp_name

    tmp = temp_name(path)
    try:
        f = create_private(tmp, mode)  # owner-only, whatever the umask
    except OSError as e:
        raise WirecapError(f"{path}: cannot write: {e.strerror}") from None
    try:
        with f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def check_capture_output(output: str) -> None:
    """`-o -` would make a file named `-`: a capture goes to a file (stdout carries the passed-through output)."""
    if output == "-":
        raise WirecapError("-o -: a capture is written to a file, not to standard output (give a path)")


def check_dialect(name: str | None) -> None:
    """--dialect must name a known dialect: a typo stored as a hint would silently decode nothing."""
    if name is not None:
        from wirecap.dialects import get_dialect

        get_dialect(name)


def non_negative(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    """Click callback: a count or width below 0 is refused (IntRange would print `[x>=0]` in --help)."""
    if value is not None and value < 0:
        raise click.BadParameter(f"{value} is below 0", ctx=ctx, param=param)
    return value


@contextlib.contextmanager
def readable_twice(paths: list[str]) -> Iterator[list[str]]:
    """For commands that read an input more than once (diff, report): standard input and pipes are first
    kept in a temporary file (a 0700 folder, 0600 files, at most WIRECAP_MAX_SPOOL bytes each; devices
    and writerless FIFOs refused: `wirecap.capture.inputs`); errors still name the input as the user gave it."""
    from wirecap.capture.inputs import is_stream, spool

    if paths.count("-") > 1:
        raise WirecapError("only one input can be standard input (-)")
    if not any(is_stream(p) for p in paths):
        yield list(paths)
        return
    folder = tempfile.mkdtemp(prefix="wirecap-")  # (0700)
    kept: dict[str, str] = {}
    try:
        out = []
        for i, path in enumerate(paths):
            if is_stream(path):
                copy = os.path.join(folder, f"input{i + 1}.jsonl")
                spool(path, copy)
                kept[copy] = path
                path = copy
            out.append(path)
        try:
            yield out
        except WirecapError as e:
            text = str(e)
            for copy, original in kept.items():
                text = text.replace(copy, original)
            raise WirecapError(text) from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
