"""The shell of `wirecap diff`: reads the two inputs and runs the pure parts over them.

Everything that touches the outside world is here and only here: opening files (captures, universal-
event files, notes sidecars, stats), building side B in a forked child (`wirecap.analysis.sides`),
keeping long bodies in a temporary file (`wirecap.analysis.spill`), pausing the garbage collector.
The rest of the package (items, wire, pairing, alignment, result, stats_level, render) is pure.
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from wirecap.analysis import stats as stats_mod
from wirecap.analysis.diff import result as result_mod
from wirecap.analysis.diff.alignment import diff_items
from wirecap.analysis.diff.items import (
    ItemBuilder,
    ItemStream,
    pack_streams,
    unit_key,
    unpack_streams,
)
from wirecap.analysis.diff.pairing import pair_streams
from wirecap.analysis.diff.result import DiffResult, PairDiff
from wirecap.analysis.diff.stats_level import session_timing, stats_rows, stream_timing
from wirecap.analysis.diff.wire import WireBuilder, dialect_volatile, note_open
from wirecap.analysis.idshape import EnvMask
from wirecap.analysis.normalize import Normalizer
from wirecap.analysis.notes import load_notes
from wirecap.analysis.sides import build_both, can_fork
from wirecap.analysis.spill import BodyStore
from wirecap.capture.inputs import OVERLONG, bounded_lines, overlong_message
from wirecap.capture.reader import MAX_HEADER, CaptureReader, open_binary
from wirecap.dialects import decode_records
from wirecap.errors import WirecapError
from wirecap.events import EVENT_KINDS, VOLATILE_PATHS, Event

LEVELS = ("events", "wire", "stats")
_KIND_NAMES = {"capture": "a capture", "events": "a universal-event file"}
Side = tuple[list[ItemStream], list[str]]  # a side's streams, and what its reader complained about


# --- input detection and loading ------------------------------------------------------------------------
def input_kind(path: str) -> str:
    """`capture` or `events` (universal-event JSONL), from the first line; WirecapError otherwise."""
    if not os.path.exists(path):
        raise WirecapError(f"{path}: no such file")
    if os.path.isdir(path):
        raise WirecapError(f"{path}: is a directory, not a capture")
    first = _first_line(path)
    if not first.strip():
        if os.path.getsize(path) > 0:
            raise WirecapError(f"{path}:1: no complete first line (a compressed file cut short?), not a wirecap capture")
        raise WirecapError(f"{path}: empty file, not a wirecap capture")
    try:
        obj = orjson.loads(first)
    except orjson.JSONDecodeError:
        raise WirecapError(f"{path}:1: not a wirecap capture or event file (first line is not JSON)") from None
    if isinstance(obj, dict):
        if obj.get("type") == "header" and "wirecap" in obj:
            return "capture"
        if obj.get("kind") in EVENT_KINDS or _is_events_header(obj):
            return "events"
    raise WirecapError(f"{path}:1: not a wirecap capture or universal-event file "
                       "(first line is neither a capture header nor an event)")


def _is_events_header(obj: dict[str, Any]) -> bool:
    return obj.get("type") in ("events", "events-header", "header") and "kind" not in obj and (
        "wirecap_events" in obj or "events" in str(obj.get("type")) or "format" in obj)


def _first_line(path: str) -> bytes:
    try:
        with open_binary(path) as f:  # (gzip and zstd by their magic bytes, as the capture reader does)
            return f.readline(MAX_HEADER)
    except OSError as e:
        raise WirecapError(f"{path}: cannot read: {e.strerror or e}") from None
    except Exception as e:  # noqa: BLE001 - a damaged compressed frame (zstandard.ZstdError, EOFError)
        raise WirecapError(f"{path}: cannot read: {type(e).__name__}: {e}") from None


def read_event_file(path: str) -> Iterator[Event]:
    """Universal events from a JSONL file written by `wirecap convert` (header line tolerated)."""
    with open_binary(path) as f:
        for lineno, line in enumerate(bounded_lines(f), 1):
            if line is OVERLONG:
                raise WirecapError(f"{path}:{lineno}: {overlong_message().removesuffix('; skipped')}")
            if not line.strip():
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                raise WirecapError(f"{path}:{lineno}: not JSON") from None
            if not isinstance(obj, dict) or obj.get("kind") not in EVENT_KINDS:
                if isinstance(obj, dict) and (lineno == 1 or obj.get("kind") == "note"):
                    continue  # a header line; annotations (`wirecap convert` interleaves them)
                raise WirecapError(f"{path}:{lineno}: not a universal event (no known `kind`)")
            try:
                event = Event.from_json(obj)
            except ValueError as e:
                raise WirecapError(f"{path}:{lineno}: not a universal event ({e})") from None
            yield event


def _noting_opens(records: Iterable[dict[str, Any]], skip: set[str], env: EnvMask) -> Iterator[dict[str, Any]]:
    """The records, their open records noted as at the wire level (`wire.note_open`: the process's cwd
    into `env`, analytics channels into `skip`)."""
    for rec in records:
        if rec.get("type") == "open":
            note_open(rec, env, skip)
        yield rec


@contextlib.contextmanager
def _events_of(path: str, kind: str, ch: str | None, warnings: list[str],
               env: EnvMask | None = None) -> Iterator[tuple[Iterator[Event], set[str]]]:
    """Events of one side, and the channels whose events are left out (analytics requests: their
    batches follow the client's flush timer, not the run; filled as the records are read). The
    reader's complaints (skipped lines, an interrupted capture) go to `warnings` when it is done."""
    skip: set[str] = set()
    if kind == "events":
        yield (ev for ev in read_event_file(path) if ch is None or ev.ch == ch or unit_key(ev.ch) == ch), skip
        return
    with CaptureReader(path) as reader:
        yield decode_records(_noting_opens(reader, skip, env) if env is not None else reader, ch=ch), skip
        warnings.extend(reader.report())


def _event_streams(path: str, kind: str, ch: str | None, ignore: tuple[str, ...], keep: tuple[str, ...],
                   chunks: bool, warnings: list[str] | None = None, shapes: bool = True,
                   store: BodyStore | None = None) -> list[ItemStream]:
    # (the side's cwd from its process record: CodeBuddy names its project folder, a slug of the cwd,
    # in a prompt long before any item states the cwd itself)
    env = EnvMask() if shapes else None
    with _events_of(path, kind, ch, warnings if warnings is not None else [], env) as (events, skip):
        first = next((ev for ev in events if ev.ch not in skip), None)
        dialect = first.dialect if first is not None else None
        extra = [f"unparsed[*].raw.{p}" for p in dialect_volatile(dialect)]
        builder = ItemBuilder(Normalizer((*VOLATILE_PATHS, *extra, *ignore), keep), chunks=chunks,
                              unit_of=(lambda c: "picked") if ch is not None else unit_key, shapes=shapes,
                              store=store)
        builder.env = env
        feed = builder.feed
        if first is not None:
            feed(first)
        for ev in events:  # (the hot loop: no generator layer of its own)
            if ev.ch not in skip:
                feed(ev)
    streams = list(builder.finish().values())
    if ch is not None:
        for u in streams:
            u.key = ch
    return streams


def _wire_streams(path: str, ch: str | None, ignore: tuple[str, ...], keep: tuple[str, ...],
                  warnings: list[str] | None = None, shapes: bool = True,
                  store: BodyStore | None = None) -> list[ItemStream]:
    builder = WireBuilder(ignore, keep, only=ch, shapes=shapes, store=store)
    with CaptureReader(path) as reader:
        for rec in reader:
            builder.feed(rec)
    if warnings is not None:
        warnings.extend(reader.report())
    return [u for u in builder.finish().values() if u.items or u.kind != "process"]


def _notes(path: str) -> list[Any]:
    try:
        return list(load_notes(path))
    except Exception:  # noqa: BLE001 - notes are a side show; a broken sidecar must not stop a diff
        return []


def _stats(path: str, kind: str) -> list[dict[str, Any]]:
    if kind == "events":
        return list(stats_mod.stats_from_events(read_event_file(path)))
    return list(stats_mod.stats_capture(path))


# --- the entry point --------------------------------------------------------------------------------------
def parse_threshold(spec: str | float | None) -> float | None:
    """`50%`, `50` -> 0.5 (a relative increase)."""
    if spec is None:
        return None
    if isinstance(spec, (int, float)):
        return float(spec)
    s = str(spec).strip().rstrip("%").strip()
    try:
        v = float(s)
    except ValueError:
        raise WirecapError(f"bad timing threshold {spec!r} (write it like 50%)") from None
    if not math.isfinite(v):
        raise WirecapError(f"bad timing threshold {spec!r}: must be a finite number (write it like 50%)")
    if v < 0:
        raise WirecapError(f"bad timing threshold {spec!r}: must not be negative")
    return v / 100.0




def _split_ch(ch: str | None) -> tuple[str | None, str | None]:
    if ch is None:
        return None, None
    a, sep, b = ch.partition(":")
    return (a or None), ((b or None) if sep else (a or None))


def diff_captures(a: str, b: str, *, level: str = "events", ch: str | None = None, ignore: Iterable[str] = (),
                  keep: Iterable[str] = (), chunks: bool = False, timing_threshold: float | str | None = None,
                  context_notes: bool = True, shapes: bool = True) -> DiffResult:
    """Compare two captures (or two universal-event JSONL files). Raises WirecapError on bad input.
    `shapes=False` compares ids, times, ports and paths that are volatile only by their shape
    (`wirecap.analysis.idshape`) as they are."""
    ignore, keep = tuple(ignore), tuple(keep)
    kind = _input_kinds(a, b, level, ignore, keep)
    threshold = parse_threshold(timing_threshold)
    result = DiffResult(a, b, level)
    if level == "stats":
        sa, sb = _stats(a, kind), _stats(b, kind)
        _check_dialects(a, b, {s.get("dialect") for s in sa}, {s.get("dialect") for s in sb})
        result.stats = stats_rows(sa, sb)
    else:
        _diff_streams(result, kind, _split_ch(ch), ignore, keep, chunks, shapes)
        if threshold is not None:
            stream_timing(result, threshold)
    if threshold is not None:
        try:
            sa, sb = _stats(a, kind), _stats(b, kind)
        except WirecapError:
            pass
        else:
            session_timing(result, sa, sb, threshold)
    if context_notes:
        result.notes_a, result.notes_b = _notes(a), _notes(b)
    return result


def _input_kinds(a: str, b: str, level: str, ignore: tuple[str, ...], keep: tuple[str, ...]) -> str:
    """What both inputs are (`capture` or `events`); WirecapError for bad options or unlike inputs."""
    if level not in LEVELS:
        raise WirecapError(f"unknown level {level!r} (one of {', '.join(LEVELS)})")
    Normalizer(ignore, keep)  # a bad path fails here, before any reading
    kind_a, kind_b = input_kind(a), input_kind(b)
    if kind_a != kind_b:
        raise WirecapError(f"cannot compare {_KIND_NAMES[kind_a]} ({a}) with {_KIND_NAMES[kind_b]} ({b}): give two "
                           "captures or two universal-event files")
    if level == "wire" and kind_a == "events":
        raise WirecapError(f"{a}: the wire level needs captures, not universal-event files")
    return kind_a


def _diff_streams(result: DiffResult, kind: str, chs: tuple[str | None, str | None], ignore: tuple[str, ...],
                  keep: tuple[str, ...], chunks: bool, shapes: bool) -> None:
    """The events or wire level: both sides' streams built (B in a forked child when it can), paired
    and aligned into `result`."""
    a, b, level = result.a, result.b, result.level
    # long bodies are kept aside (`wirecap.analysis.spill`); B's store shares its file with a forked child
    store_a, store_b = BodyStore(), BodyStore()
    if can_fork():
        store_b.open_file()
    with paused_gc():
        def side(path: str, c: str | None, store: BodyStore) -> Side:
            warnings: list[str] = []
            if level == "events":
                return _event_streams(path, kind, c, ignore, keep, chunks, warnings, shapes, store), warnings
            return _wire_streams(path, c, ignore, keep, warnings, shapes, store), warnings

        def pack_b(s: Side) -> tuple[Any, ...]:  # (in the child)
            store_b.seal()
            return pack_streams(s[0], consume=True), s[1], store_b.state()

        def unpack_b(p: tuple[Any, ...]) -> Side:
            store_b.adopt(p[2])
            return unpack_streams(p[0], store_b), list(p[1])

        (streams_a, warn_a), (streams_b, warn_b) = build_both(
            lambda: side(a, chs[0], store_a), lambda: side(b, chs[1], store_b), pack_b, unpack_b)
        result.warnings = warn_a + warn_b
        for path, streams, c in ((a, streams_a, chs[0]), (b, streams_b, chs[1])):
            if c is not None and not streams:
                raise WirecapError(f"{path}: no channel {c!r}")
        _check_dialects(a, b, {u.dialect for u in streams_a}, {u.dialect for u in streams_b})
        if chs[0] is not None:  # one channel each: compare them whatever their groups
            for u in (*streams_a, *streams_b):
                u.group = ("picked",)
        budget = [result_mod.SHOWN_MAX]
        for ua, ub in pair_streams(streams_a, streams_b):
            pd = PairDiff(ua, ub)
            if ua is not None and ub is not None:
                pd.script = diff_items(ua.items, ub.items, wire=level == "wire", budget=budget)
            result.pairs.append(pd)
        result.not_shown = max(0, -budget[0])
    result.items_a = sum(len(u.items) for u in streams_a)
    result.items_b = sum(len(u.items) for u in streams_b)


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while the sides are built and aligned: the builders keep
    hundreds of thousands of small acyclic objects, and the collector's repeated passes over them
    cost about a second per 100k messages while finding nothing to free."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class NothingToCompare(WirecapError):
    """Two inputs with nothing to compare item by item (no dialect in common): `reason` says why; the
    message ends with how to compare them anyway with `wirecap diff` (a caller without --ch, such as
    `report`, says it its own way from `reason`)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"{reason}; nothing to compare (pick comparable channels with --ch A:B)")


def _check_dialects(a: str, b: str, da: set[Any], db: set[Any]) -> None:
    da = {d for d in da if d}
    db = {d for d in db if d}
    if da and db and not (da & db):
        raise NothingToCompare(f"different dialects: {a} is {', '.join(sorted(da))} but {b} is {', '.join(sorted(db))}")
