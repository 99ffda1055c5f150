"""Streaming capture reader: constant memory, tolerant of torn tails and corrupt lines.

Splits on `\\n` bytes only (a U+2028 inside a JSON string is not a line break), never loads the whole
file, and turns every defect into a `FILE:LINE: what` problem instead of an exception.
"""

from __future__ import annotations

import functools
import io
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator
from typing import IO, Any, TypedDict, cast

import orjson

from wirecap.capture.inputs import (
    OVERLONG,
    drain_line,
    max_line,
    max_ratio,
    open_input,
    overlong_message,
)
from wirecap.capture.records import EndRecord
from wirecap.errors import CaptureFormatError, WirecapError

SUPPORTED_VERSION = 1
MAX_PROBLEMS = 1000  # problems listed one by one; the rest are counted
MAX_HEADER = 16 << 20  # a first line longer than this is not a header (binary junk without newlines)
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def stream_errors() -> tuple[type[BaseException], ...]:
    """What a damaged gzip/zstd stream raises while being read (not all are OSError)."""
    import zlib

    errors: tuple[type[BaseException], ...] = (OSError, EOFError, zlib.error)
    zstd = sys.modules.get("zstandard")
    if zstd is not None:
        errors += (zstd.ZstdError,)
    return errors


def open_binary(path: str) -> IO[bytes]:
    """`path` ("-": stdin) opened for reading bytes, gzip and zstd undone by their magic bytes (whatever the
    file is called); a missing file, a directory, a device or an unreadable one is a WirecapError, and so
    is a compressed input that outgrows its limit (`wirecap.capture.inputs`: special files, FIFOs, limits)."""
    return _decoded(path, open_input(path))


def _decoded(path: str, raw: IO[bytes]) -> IO[bytes]:
    """What `raw` holds, gzip or zstd undone."""
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(cast(io.RawIOBase, raw))
    magic = buffered.peek(4)[:4]
    if magic.startswith(_GZIP_MAGIC) or magic == _ZSTD_MAGIC:
        # Torn-tolerant: every decodable line first, then `TornStream` (an OSError) if the stream was cut.
        from wirecap.capture.compressed import open_decompressed

        compression = "gzip" if magic.startswith(_GZIP_MAGIC) else "zstd"
        return open_decompressed(buffered, compression, max_ratio=max_ratio(), name=path)
    return buffered


def parse_header(path: str, line: bytes) -> dict[str, Any]:
    """Check the first line; raise CaptureFormatError with a one-line reason if it is not a header."""
    if not line.strip():
        raise CaptureFormatError(f"{path}: empty file, not a wirecap capture")
    try:
        header = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise CaptureFormatError(f"{path}:1: not a wirecap capture (first line is not JSON)") from None
    if not isinstance(header, dict) or header.get("type") != "header" or "wirecap" not in header:
        raise CaptureFormatError(
            f"{path}:1: not a wirecap capture (first line is not a wirecap header)"
        )
    version = header["wirecap"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise CaptureFormatError(f"{path}:1: bad format version {version!r} in header")
    if version > SUPPORTED_VERSION:
        raise CaptureFormatError(
            f"{path}: unsupported capture format version {version} "
            f"(this wirecap reads up to {SUPPORTED_VERSION}); upgrade wirecap"
        )
    return header


class CaptureReader:
    """Iterate the records of one capture.

    After iteration: `end` is the end record (or None), `interrupted` says why the capture is
    incomplete (or None), `problems` lists `FILE:LINE: what` strings for skipped or suspicious lines.
    """

    def __init__(self, path: str | os.PathLike[str], *, follow: bool = False, poll: float = 0.2) -> None:
        self.path = os.fspath(path)
        self.follow = follow
        self.poll = poll
        self.problems: list[str] = []
        self.unlisted = 0  # problems beyond MAX_PROBLEMS
        self.skipped = 0
        self.end: EndRecord | None = None
        self.interrupted: str | None = None
        self.last_seq = 0
        self.records = 0
        self._max_line = max_line()
        self._f = open_binary(self.path)
        compressed = not (isinstance(self._f, io.BufferedReader) and isinstance(self._f.raw, io.FileIO))
        try:
            first = self._f.readline(MAX_HEADER)
        except Exception as e:  # noqa: BLE001 - only decompression errors are turned into a message
            self._f.close()
            if not isinstance(e, stream_errors()):
                raise
            raise CaptureFormatError(f"{self.path}: cannot read: {e}") from None
        if compressed and not first:
            self._f.close()
            raise CaptureFormatError(f"{self.path}: compressed capture holds no complete header (truncated?)")
        self.header_line = first
        self.line = b""  # the raw bytes of the record last yielded (for byte-exact output)
        try:
            self.header = parse_header(self.path, first)
        except CaptureFormatError:
            self._f.close()
            raise
        from wirecap.capture.schema import header_shape_problems

        for name, what in header_shape_problems(self.header).items():  # wrong-typed: left out, said
            del self.header[name]
            self._problem(1, f"header {what} (ignored)")
        self._consumed = False

    def __enter__(self) -> CaptureReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._f is not sys.stdin.buffer:
            self._f.close()

    def _problem(self, lineno: int, what: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(f"{self.path}:{lineno}: {what}")
        else:  # (a file of a million junk lines: its problems are counted, not kept)
            self.unlisted += 1

    def _follow_lines(self) -> Iterator[bytes]:
        """Lines of a capture that is still being written; returns once its `end` was read."""
        f = self._f
        limit = self._max_line
        partial = b""
        dropping = False  # inside a line longer than the limit: read on to its newline, then yield OVERLONG
        while True:
            line = f.readline(limit + 1)
            if not line:
                if self.end is not None:
                    return
                time.sleep(self.poll)
                continue
            if not line.endswith(b"\n"):
                if not dropping and len(partial) + len(line) > limit:
                    dropping, partial = True, b""
                if not dropping:
                    partial += line
                if len(line) <= limit:
                    time.sleep(self.poll)
                continue
            if dropping:
                dropping = False
                yield OVERLONG
                continue
            if partial:
                line, partial = partial + line, b""
                if len(line) > limit + 1:
                    yield OVERLONG
                    continue
            yield line

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self._consumed:
            raise WirecapError(f"{self.path}: a capture reader can be iterated only once")
        self._consumed = True
        if self.follow:
            return self._records(self._follow_lines())
        # (a bounded readline: a line of zeros without a newline is never held whole; see _records)
        return self._records(iter(functools.partial(self._f.readline, self._max_line + 1), b""))

    def _records(self, lines: Iterable[bytes]) -> Iterator[dict[str, Any]]:
        # The hot loop of every command: one orjson.loads and a few checks per line. Counters live in
        # locals and reach `self` when the loop ends (or is abandoned); the well-formed record takes
        # the shortest path, defects are sorted out by the helpers below it.
        from wirecap.capture.payload import json_problem
        from wirecap.capture.schema import shape_checks, shape_problem

        loads = orjson.loads
        decode_error = orjson.JSONDecodeError
        shape_of, any_shape = shape_checks()
        expected = 1
        lineno = 1
        last_t = 0.0
        passed = 0  # lines that were not records (the record count is the rest)
        end: EndRecord | None = None
        pending_problem: str | None = None
        line: bytes = b"\n"
        try:
            for line in lines:
                lineno += 1
                if pending_problem is not None:  # the bad line was not the last one: corruption
                    self._problem(lineno - 1, pending_problem)
                    self.skipped += 1
                    pending_problem = None
                try:
                    rec = loads(line)
                    seq = rec["seq"]
                except decode_error as e:
                    passed += 1
                    line, pending_problem = self._not_json(line, e)
                    continue
                except (TypeError, KeyError, IndexError):
                    passed += 1
                    line, pending_problem = self._not_a_record(line)
                    continue
                if seq != expected or seq.__class__ is not int:
                    if seq.__class__ is not int:
                        passed += 1
                        pending_problem = "not a record (no integer seq)"
                        continue
                    self._problem(lineno, f"seq {seq} where {expected} was expected")
                expected = seq + 1
                rtype = rec.get("type")
                if ((shape_of(rtype) if rtype.__class__ is str else None) or any_shape)(rec) is not None or (
                        json_problem(rec, line) is not None):  # a field of the wrong type: no consumer meets it
                    passed += 1
                    self._skip(lineno, seq, rec, shape_problem(rec) or json_problem(rec, line) or "")
                    continue
                t = rec.get("t")
                last_t = t if t.__class__ is float and t >= last_t else self._odd_time(lineno, seq, t, last_t)
                if end is not None:
                    end = self.end = None  # appended after an earlier clean stop
                if rtype == "end":
                    end = self.end = rec  # (at once: --follow stops on it)
                self.line = line
                self.last_seq = seq
                yield rec
        except Exception as e:  # a truncated or damaged gzip/zstd stream
            if not isinstance(e, stream_errors()):
                raise
            self.interrupted = f"compressed stream ends early ({e})"
        finally:
            self.records += lineno - 1 - passed
            self.end = end
        self._finish(lineno, line, pending_problem)

    # --- the reader's defects (off the hot path) ----------------------------------------------------
    def _overlong(self, line: bytes) -> bool:
        """`line` is the start of a line longer than the limit (its rest is still in the file)."""
        return len(line) > self._max_line and line[-1:] != b"\n"

    def _not_json(self, line: bytes, e: Exception) -> tuple[bytes, str]:
        """(the line as it counts for the torn-tail check, the problem) for a line that is no JSON."""
        if line is OVERLONG or self._overlong(line):
            if line is not OVERLONG:
                drain_line(self._f)
            return b"\n", overlong_message(self._max_line)  # (read to its end: not a torn tail)
        if not line.strip():
            return line, "empty line"
        return line, f"invalid JSON ({str(e).split(':')[0]})"

    def _not_a_record(self, line: bytes) -> tuple[bytes, str]:
        """As `_not_json`, for JSON that is no record (no integer seq)."""
        if self._overlong(line):  # (a JSON prefix of an over-long line)
            drain_line(self._f)
            return b"\n", overlong_message(self._max_line)
        return line, "not a record (no integer seq)"

    def _skip(self, lineno: int, seq: int, rec: dict[str, Any], bad: str) -> None:
        """A record whose fields have the wrong types: skipped, and said."""
        self.skipped += 1
        rtype = rec.get("type")
        self._problem(lineno, f"seq {seq}: {rtype if rtype.__class__ is str else 'a'} record skipped: {bad}")

    def _odd_time(self, lineno: int, seq: int, t: Any, last_t: float) -> float:
        """The latest time after a record whose `t` is no float at or after `last_t`: an int counts, a
        backwards time is said (and counts), anything else is ignored."""
        if isinstance(t, (int, float)) and not isinstance(t, bool):
            if t < last_t:
                self._problem(lineno, f"seq {seq}: time goes backwards ({t} < {last_t})")
            return t
        return last_t

    def _finish(self, lineno: int, line: bytes, pending_problem: str | None) -> None:
        """After the last line: only it can lack its newline (a torn tail); it was read like any other."""
        if pending_problem is not None:
            self.interrupted = f"torn last line {lineno}: {pending_problem}"
            self.skipped += 1
        elif line[-1:] != b"\n" and self.interrupted is None:
            self.interrupted = f"torn last line {lineno}: no newline at the end"
        if self.end is None and self.interrupted is None:
            self.interrupted = "no end record (the recorder did not stop cleanly)"
        if self.unlisted:  # (the count stays in `unlisted`)
            self.problems.append(f"{self.path}: {self.unlisted} more problems like these (not listed)")

    def report(self) -> list[str]:
        """Human lines describing defects: problems, then interruption (call after iterating)."""
        lines = list(self.problems)
        if self.interrupted:
            lines.append(f"{self.path}: interrupted capture: {self.interrupted}")
        return lines


def open_capture(path: str | os.PathLike[str], **kwargs: Any) -> CaptureReader:
    return CaptureReader(path, **kwargs)


def read_records(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """All records of a capture (header excluded), skipping defects silently."""
    with CaptureReader(path) as reader:
        yield from reader


_CH_RE = re.compile(r"^(?P<prefix>[a-z]+)(?:-(?P<n>\d+))?$")


class TailInfo(TypedDict):
    """What appending to a capture continues from (`scan_tail`)."""

    header: dict[str, Any]
    last_seq: int
    last_t: float
    channels: dict[str, int]  # the highest number of each channel prefix (`ws` of `ws-3`: 3)


def scan_tail(path: str) -> TailInfo:
    """For appending: cut a torn tail and return the header, the last seq and t, channel counters."""
    header: dict[str, Any] | None = None
    last_seq = 0
    last_t = 0.0
    good_end = 0
    channels: dict[str, int] = {}
    limit = max_line()
    with open_input(path) as f:
        first = f.readline(MAX_HEADER)
        header = parse_header(path, first)
        good_end = len(first) if first.endswith(b"\n") else 0
        offset = good_end
        while line := f.readline(limit + 1):
            offset += len(line)
            if not line.endswith(b"\n"):
                if len(line) <= limit:
                    break  # the torn tail
                while line and not line.endswith(b"\n"):  # an over-long line: skipped like invalid JSON
                    line = f.readline(1 << 20)
                    offset += len(line)
                if not line:
                    break
                continue
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(rec, dict) and isinstance(rec.get("seq"), int):
                last_seq = rec["seq"]
                last_t = float(rec.get("t") or last_t)
                if rec.get("type") == "open" and isinstance(rec.get("ch"), str):
                    m = _CH_RE.match(rec["ch"])
                    if m:
                        p, n = m.group("prefix"), int(m.group("n") or 1)
                        channels[p] = max(channels.get(p, 0), n)
            good_end = offset
    if good_end == 0:
        raise CaptureFormatError(f"{path}: header is torn; cannot append")
    if os.path.getsize(path) != good_end:
        with open(path, "r+b") as f:
            f.truncate(good_end)
    return {"header": header, "last_seq": last_seq, "last_t": last_t, "channels": channels}
