"""Make one capture from transcripts people already have: the program behind `wirecap import`.

The converters are pure (`wirecap.capture.importers`: source bytes -> `ImportOp`s); this module is the
I/O around them: it opens the sources (a pipe or FIFO is first kept in a bounded temporary copy, since
the converters read a source more than once), makes a first pass per source (what the header says
about it: its kind, whether the log trimmed anything, its first time), then merges every source's ops
by time into one `CaptureWriter`. `import_sources` is testable in-process; the click command only
parses options and prints the summary.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from wirecap.capture.importers import (
    LINE_KINDS,
    PIECE,
    ImportOp,
    Source,
    convert_stream,
    iso,
    merge_stream,
    stdout_first_time,
)
from wirecap.capture.inputs import human, is_stream, max_line, open_input, spool
from wirecap.capture.payload import encode_payload
from wirecap.capture.redact import Redactor
from wirecap.capture.writer import CaptureWriter, default_origin
from wirecap.dialects import session_file_dialect
from wirecap.errors import WirecapError

_PREFIX = {"ws": "ws", "http": "http", "process": "proc"}


@dataclass
class ImportResult:
    """What one import wrote: the capture's record count and how many of them are messages."""

    records: int
    messages: int
    sources: int


def read_side_file(path: str) -> bytes:
    """A side file (one logged body or frame): read whole, but refused past the line limit (it becomes
    one capture line) and when it is not a regular file."""
    limit = max_line()
    with open_input(path) as f:
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise WirecapError(f"{path}: cannot read: {e.strerror}") from None
    if len(data) > limit:
        raise WirecapError(f"{path}: longer than {human(limit)} (WIRECAP_MAX_LINE)")
    return data


def _side_reader(path: str) -> Callable[[str], bytes | None]:
    folder = os.path.dirname(os.path.abspath(path))

    def side(name: str) -> bytes | None:
        p = os.path.join(folder, name)
        if not os.path.isfile(p):
            return None
        return read_side_file(p)

    return side


def refuse_capture(path: str, src: Source) -> None:
    """A wirecap capture given as a source would be imported as the text of a CLI's stdout."""
    lines = src.lines(cut=PIECE)
    try:
        first = next((line for _lineno, line, _eol in lines), b"")
    finally:
        close = getattr(lines, "close", None)  # (a generator: its file is closed now, not when collected)
        if close is not None:
            close()
    try:
        obj = orjson.loads(first)
    except orjson.JSONDecodeError:
        return
    if isinstance(obj, dict) and obj.get("type") == "header" and "wirecap" in obj:
        raise WirecapError(f"{path}: already a wirecap capture; nothing to import (force with --kind stdout "
                           "to record its lines as text)")


def write_ops(writer: CaptureWriter, t0: float | None, ops: Iterable[ImportOp]) -> dict[str, str]:
    """Write merged ops; returns the channel token -> channel name map."""
    names: dict[str, str] = {}
    for op in ops:
        t = 0.0 if op.ts is None or t0 is None else max(op.ts - t0, 0.0)
        fields = dict(op.fields)
        if op.rtype == "open" and op.ch is not None:
            kind = str(fields.get("kind"))
            prefix = str(_PREFIX.get(kind, fields.get("stream", "ch")) if kind != "pipe" else fields["stream"])
            names[op.ch] = writer.new_channel(prefix)
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


def kept_streams(sources: Iterable[str], stack: contextlib.ExitStack) -> dict[str, str]:
    """Source path -> a file to read it from: itself, or for a pipe or FIFO (read several times by the
    streaming converters) a bounded temporary copy (`wirecap.capture.inputs.spool`); devices refused."""
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


@dataclass
class _Survey:
    """The first pass over one source: what the header says about it."""

    entry: dict[str, Any]
    first: float | None  # its first time (None: untimed)
    untimed: bool  # some of its ops have no time


def _survey(path: str, size: int, kind: str, src: Source, ops: Callable[[], Iterator[ImportOp]]) -> _Survey:
    entry: dict[str, Any] = {"path": path, "kind": kind, "bytes": size}
    truncated = summary = untimed = False
    first: float | None = None
    if kind in LINE_KINDS:  # (its first time says it all: no trimming, all records timed or none)
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
    if truncated:
        entry["note"] = "some bodies/frames were trimmed by the source log (records marked truncated)"
    if summary:
        entry["summary"] = "some responses are the log's summaries, not wire bytes (flags: summary)"
    if first is None:
        entry["timing"] = "none (the source has no timestamps; t is 0)"
    return _Survey(entry, first, untimed)


def import_sources(sources: list[str], output: str, *, kind: str | None = None, dialect: str | None = None,
                   force: bool = False, redactor: Redactor | None = None,
                   warn: Callable[[str], None] | None = None) -> ImportResult:
    """Write the capture `output` from `sources` (paths, `-` for standard input), merged by time.

    `kind` forces the kind of every source (else detected per file; a wirecap capture is refused
    unless forced); `dialect` is the hint stored for stdout transcripts; `warn` gets one line per
    suspicious source (an empty file). Raises WirecapError (one line) on bad input; the capture is
    then not left half-written by the converters' first pass, which runs before it is opened.
    """
    with contextlib.ExitStack() as stack:
        files = kept_streams(sources, stack)
        converted: list[Callable[[], Iterator[ImportOp]]] = []
        imported_from: list[dict[str, Any]] = []
        timing: list[tuple[bool, bool]] = []  # per source: has untimed ops, has timed ops
        t0: float | None = None
        for path in sources:
            src = Source(name=path, side=_side_reader(path), opener=_opener(files[path]))
            size = os.path.getsize(files[path])
            if not size and warn is not None:  # legal (a CLI that printed nothing), but usually the wrong file
                warn(f"{path} is empty; imported as a stream with no messages")
            if kind is None:
                refuse_capture(path, src)
            k, ops = convert_stream(src, kind, dialect=dialect, session_kind=session_file_dialect)
            converted.append(ops)
            survey = _survey(path, size, k, src, ops)
            timing.append((survey.untimed, survey.first is not None))
            if survey.first is not None and (t0 is None or survey.first < t0):
                t0 = survey.first
            imported_from.append(survey.entry)
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
    return ImportResult(records=writer.records, messages=n, sources=len(sources))


def _opener(path: str) -> Callable[[], Any]:
    """Opens the source file afresh for each pass of the converters (special files refused)."""
    return lambda: open_input(path)
