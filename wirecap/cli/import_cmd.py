"""`wirecap import SRC... -o CAP`: turn transcripts people already have into one capture."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import click
import orjson

from wirecap.capture.importers import (
    KINDS,
    LINE_KINDS,
    PIECE,
    ImportOp,
    Source,
    convert_stream,
    iso,
    merge_stream,
    stdout_first_time,
)
from wirecap.capture.payload import encode_payload
from wirecap.capture.writer import CaptureWriter, default_origin
from wirecap.cli.common import (
    check_capture_output,
    check_dialect,
    make_redactor,
    redaction_options,
    refuse_output_over_input,
)
from wirecap.errors import WirecapError

_PREFIX = {"ws": "ws", "http": "http", "process": "proc"}


def _read(path: str) -> bytes:
    """A side file (one logged body or frame): read whole, but refused past the line limit (it becomes
    one capture line) and when it is not a regular file."""
    from wirecap.capture.inputs import human, max_line, open_input

    limit = max_line()
    with open_input(path) as f:
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise WirecapError(f"{path}: cannot read: {e.strerror}") from None
    if len(data) > limit:
        raise WirecapError(f"{path}: longer than {human(limit)} (WIRECAP_MAX_LINE)")
    return data


def _opener(path: str):  # type: ignore[no-untyped-def]
    """Opens the source file afresh for each pass of the converters (special files refused)."""
    from wirecap.capture.inputs import open_input

    return lambda: open_input(path)


def _refuse_capture(path: str, src: Source) -> None:
    """A wirecap capture given as a source would be imported as the text of a CLI's stdout."""
    first = b""
    with contextlib.closing(src.lines(cut=PIECE)) as lines:
        for _lineno, line, _eol in lines:
            first = line
            break
    try:
        obj = orjson.loads(first)
    except orjson.JSONDecodeError:
        return
    if isinstance(obj, dict) and obj.get("type") == "header" and "wirecap" in obj:
        raise WirecapError(f"{path}: already a wirecap capture; nothing to import (force with --kind stdout "
                           "to record its lines as text)")


def _side_reader(path: str):  # type: ignore[no-untyped-def]
    folder = os.path.dirname(os.path.abspath(path))

    def side(name: str) -> bytes | None:
        p = os.path.join(folder, name)
        if not os.path.isfile(p):
            return None
        return _read(p)

    return side


def write_ops(writer: CaptureWriter, t0: float | None, ops: Iterable[ImportOp]) -> dict[str, str]:
    """Write merged ops; returns the channel token -> channel name map."""
    names: dict[str, str] = {}
    for op in ops:
        t = 0.0 if op.ts is None or t0 is None else max(op.ts - t0, 0.0)
        fields = dict(op.fields)
        if op.rtype == "open":
            kind = fields.get("kind")
            prefix = _PREFIX.get(kind, fields.get("stream", "ch")) if kind != "pipe" else fields["stream"]
            names[op.ch] = writer.new_channel(prefix)  # type: ignore[index]
            if "proc" in fields:
                fields["proc"] = names.get(fields["proc"], fields["proc"])
        ch = names.get(op.ch, op.ch) if op.ch else None
        if ch is not None:
            fields["ch"] = ch
        if op.rtype == "msg":
            data = op.data or b""
            nbytes = int(fields["truncated"]) if "truncated" in fields else len(data)
            writer.write("msg", t, nbytes, **{"ch": fields.pop("ch"), "dir": fields.pop("dir"),
                                              **encode_payload(data), **fields})
        else:
            writer.write(op.rtype, t, **fields)
    return names


@click.command("import")
@click.argument("sources", metavar="SRC...", nargs=-1, required=True)
@click.option("-o", "--output", "output", required=True, metavar="CAP", help="The capture to write.")
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
    with contextlib.ExitStack() as stack:
        files = _kept_streams(sources, stack)
        converted: list[Callable[[], Iterator[ImportOp]]] = []
        imported_from: list[dict[str, Any]] = []
        timing: list[tuple[bool, bool]] = []  # per source: has untimed ops, has timed ops
        t0: float | None = None
        for path in sources:
            src = Source(name=path, side=_side_reader(path), opener=_opener(files[path]))
            size = os.path.getsize(files[path])
            if not size and not quiet:  # legal (a CLI that printed nothing), but usually the wrong file
                click.echo(f"wirecap: warning: {path} is empty; imported as a stream with no messages", err=True)
            if kind is None:
                _refuse_capture(path, src)
            k, ops = convert_stream(src, kind, dialect=dialect)
            converted.append(ops)
            entry: dict[str, Any] = {"path": path, "kind": k, "bytes": size}
            # (a first pass over the source: what the header says about it, and its first time)
            truncated = summary = untimed = False
            first: float | None = None
            if k in LINE_KINDS:  # (its first time says it all: no trimming, all records timed or none)
                first = stdout_first_time(src)
                untimed = first is None
            else:
                for op in ops():
                    truncated = truncated or "truncated" in op.fields
                    summary = summary or "summary" in (op.fields.get("flags") or ())
                    if op.ts is None:
                        untimed = True
                    elif first is None:
                        first = op.ts
            timing.append((untimed, first is not None))
            if truncated:
                entry["note"] = "some bodies/frames were trimmed by the source log (records marked truncated)"
            if summary:
                entry["summary"] = "some responses are the log's summaries, not wire bytes (flags: summary)"
            if first is None:
                entry["timing"] = "none (the source has no timestamps; t is 0)"
            elif t0 is None or first < t0:
                t0 = first
            imported_from.append(entry)
        origin = default_origin("import")
        origin["imported_from"] = {"sources": imported_from}
        extra = {"created": iso(t0)} if t0 is not None else None
        writer = CaptureWriter(output, origin=origin, redactor=redactor, force=force, extra_header=extra)
        n = 0

        def counted(ops: Iterable[ImportOp]) -> Iterator[ImportOp]:
            nonlocal n
            for op in ops:
                n += op.rtype == "msg"
                yield op

        try:
            write_ops(writer, t0, counted(merge_stream(converted, timing)))
        finally:
            writer.close()
    if not quiet:
        click.echo(f"wirecap: wrote {output}: {writer.records} records, {n} message{'' if n == 1 else 's'} "
                   f"from {len(sources)} source(s)", err=True)


def _kept_streams(sources: tuple[str, ...], stack: contextlib.ExitStack) -> dict[str, str]:
    """Source path -> a file to read it from: itself, or for a pipe or FIFO (read several times by the
    streaming converters) a bounded temporary copy (`wirecap.capture.inputs.spool`); devices refused."""
    from wirecap.capture.inputs import is_stream, open_input, spool

    files: dict[str, str] = {}
    folder: str | None = None
    for i, path in enumerate(sources):
        if not is_stream(path):
            open_input(path).close()  # (a missing file, a directory: its one-line error now)
            files[path] = path
            continue
        if folder is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="wirecap-import-"))
        files[path] = os.path.join(folder, f"source{i + 1}")
        spool(path, files[path])
    return files
