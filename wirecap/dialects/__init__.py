"""Dialects: decode each channel of a capture into universal events (sans-I/O).

One module per dialect, each declaring a module-level `DIALECT`; `DIALECTS` is found, not kept: every
module of this package that declares one (ascending priority, then name). Detection and volatile
paths live in the dialects too (each `Dialect`'s `sniff` and `volatile`; `detect_channel`,
`volatile_paths` here only ask them). The driver here groups records into **units**
(a WebSocket or HTTP channel; a process together with its stdout/stdin/stderr pipes), detects each
unit's dialect from what the capture knows (the `dialect` hint, URL path, argv, the first messages),
and feeds the unit's records to that dialect's decoder. `--dialect` overrides detection for every
unit of that dialect's transport. A unit nobody recognizes is still decoded: each of its messages
becomes an `unparsed` event whose reason says why detection failed. Nothing is dropped.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from wirecap.dialects.base import (
    DEFAULT_OPTIONS,
    DETECT_MSGS,
    INFO,
    Decoder,
    Dialect,
    Finding,
    is_stderr,
    is_telemetry,
    out_msgs,
    url_path,
)
from wirecap.errors import WirecapError
from wirecap.events import Event


def _discover() -> dict[str, Dialect]:
    """Every module of this package with a module-level `DIALECT` (a `Dialect`), by name, in the order
    detection asks them: ascending `priority`, then name. Adding a dialect is adding its module: there
    is no list to keep. Two modules declaring one name is a bug, said at import."""
    found: dict[str, Dialect] = {}
    for info in pkgutil.iter_modules(__path__, __name__ + "."):
        d = getattr(importlib.import_module(info.name), "DIALECT", None)
        if not isinstance(d, Dialect):
            continue
        if d.name in found:
            raise RuntimeError(f"dialect {d.name!r} is declared twice ({info.name})")
        found[d.name] = d
    return {d.name: d for d in sorted(found.values(), key=lambda d: (d.priority, d.name))}


DIALECTS: dict[str, Dialect] = _discover()

_TRANSPORT_OF_KIND = {"ws": "ws", "http": "http", "process": "pipe", "pipe": "pipe"}

# The sniffs in the order they are asked: the registry's (ascending priority, then name).
SNIFF_ORDER: tuple[Dialect, ...] = tuple(d for d in DIALECTS.values() if d.sniff is not None)


def dialect_names() -> list[str]:
    return list(DIALECTS)


def get_dialect(name: str) -> Dialect:
    try:
        return DIALECTS[name]
    except KeyError:
        raise WirecapError(f"unknown dialect {name!r} (known: {', '.join(DIALECTS)})") from None


# --- what changes run to run ------------------------------------------------------------------------
# One home: each dialect's `volatile` (in its module), plus the one rule for analytics requests below.
# Replay matching and `diff` ask here; neither keeps paths of its own per dialect.
TELEMETRY = "telemetry"
"""Not a dialect: the volatile profile of an analytics request (`is_telemetry_channel`). What such a
batch holds depends on the client's flush timer, not on the conversation, so its whole payload is
volatile: replay matches a live batch with any recorded one of its route, diff leaves them out. The
decoders do not claim these channels (they stay undecoded, as any unknown HTTP exchange)."""

TELEMETRY_VOLATILE: tuple[str, ...] = ("batch", "sent_at", "**.timestamp", "**.uuid", "properties")


def is_telemetry_channel(open_record: Any) -> bool:
    """Whether a channel is an analytics request: HTTP, no `dialect` hint (a hint says what it is),
    and a URL path `base.is_telemetry` knows (`/batch`, `/capture`, ...)."""
    if not isinstance(open_record, dict) or open_record.get("kind") != "http":
        return False
    hint = open_record.get("dialect")
    if isinstance(hint, str) and hint:
        return False
    return is_telemetry(url_path(open_record))


def volatile_paths(dialect: str | None) -> list[str]:
    """Paths (normalize syntax) of fields in this dialect's messages that change run to run: its
    descriptor's `volatile`; `TELEMETRY` gives an analytics request's; None gives none. An unknown
    name is a `WirecapError` (as for `--dialect`)."""
    if dialect is None:
        return []
    if dialect == TELEMETRY:
        return list(TELEMETRY_VOLATILE)
    return list(get_dialect(dialect).volatile)


# --- detection ---------------------------------------------------------------------------------------
# One home: each dialect's `sniff` (in its module) says whether a unit is that dialect; this driver
# only asks them in priority order. `info`, `validate`, `report`, `diff` and replay all come here.
def _describe(rec: dict[str, Any]) -> str:
    sse = rec.get("sse")
    value = rec.get("json")
    if isinstance(sse, dict):
        name = sse.get("event") or (value.get("type") if isinstance(value, dict) else None)
        return f"SSE event {name!r}" if isinstance(name, str) else "SSE data"
    if isinstance(value, dict):
        t = value.get("type")
        return f"type {t!r}" if isinstance(t, str) else "a JSON object without a type"
    if "json" in rec:
        return f"a JSON {type(value).__name__}"
    return "text" if "text" in rec else "binary"


def _context(o: dict[str, Any]) -> str:
    kind = o.get("kind")
    if kind in ("ws", "http"):
        path = url_path(o) or "/"
        return f"WebSocket {path}" if kind == "ws" else f"HTTP {o.get('method', '?')} {path}"
    if kind == "process":
        argv = o.get("argv")
        words = " ".join(map(str, argv[:3])) if isinstance(argv, list) else ""
        return f"argv {words!r}" if words else "a process without argv"
    if kind is not None:
        return f"channel kind {kind!r}"
    return "no open record"


def detect_channel(open_record: dict[str, Any] | None, first_msgs: list[dict[str, Any]]) -> tuple[str | None, str]:
    """Which dialect a unit speaks, and why (or why none could be told).

    `open_record` is the unit's open record (for a process unit the process's); `first_msgs` its
    first message records in order (stderr lines and anything past `DETECT_MSGS` are not looked at).
    A `dialect` hint in the open record wins; otherwise the sniffs of the unit's transport are asked
    in ascending priority and the first that answers decides. Never raises.
    """
    o = open_record if isinstance(open_record, dict) else {}
    why: list[str] = []
    hint = o.get("dialect")
    if isinstance(hint, str) and hint:
        if hint in DIALECTS:
            return hint, f"the open record names dialect {hint!r}"
        why.append(f"dialect hint {hint!r} is not a known dialect")
    sample = out_msgs(first_msgs)[:DETECT_MSGS]
    kind = o.get("kind")
    transport = _TRANSPORT_OF_KIND.get(kind) if isinstance(kind, str) else None
    opened = open_record if isinstance(open_record, dict) else None
    for d in SNIFF_ORDER:
        sniff = d.sniff
        if sniff is None or (transport is not None and d.transport != transport):
            continue
        try:
            reason = sniff(opened, sample)
        except Exception as e:  # noqa: BLE001 - a sniff must not raise; if one does, it just did not answer
            why.append(f"the {d.name} sniff failed: {type(e).__name__}")
            continue
        if isinstance(reason, str) and reason:
            return d.name, reason
    seen = list(dict.fromkeys(_describe(r) for r in sample))
    msgs = ("messages: " + ", ".join(seen[:4])) if seen else "no messages"
    why.insert(0, f"no dialect recognizes {_context(o)} ({msgs})")
    return None, "; ".join(why)


def session_file_dialect(line: Any) -> str | None:
    """The dialect of the agent-written file (`Dialect.session_file`: a Claude Code session file, a
    Codex rollout) that the JSON value `line` is a line of, else None: those dialects' own sniffs,
    asked about that one line as stdout. What `wirecap import` uses to tell a file's kind. Never raises."""
    sample = [{"type": "msg", "ch": "stdout", "dir": "s2c", "json": line}]
    for d in SNIFF_ORDER:
        if d.session_file and d.sniff is not None:
            try:
                if d.sniff(None, sample):
                    return d.name
            except Exception:  # noqa: BLE001 - as in detect_channel: a sniff that raises did not answer
                continue
    return None


def forced_for(forced: Dialect | None, main_open: dict[str, Any] | None) -> bool:
    """Whether `--dialect` (`forced`) decides a unit whose main open record is `main_open`: every unit
    of that dialect's transport, and a unit without a known kind. The one rule `Decoding` and
    `Detection` (info, report) both apply, so a forced dialect is named where it is decoded."""
    if forced is None:
        return False
    kind = main_open.get("kind") if isinstance(main_open, dict) else None
    return kind is None or _TRANSPORT_OF_KIND.get(kind) == forced.transport


def unit_key(rec: dict[str, Any], chan_unit: dict[str, Any]) -> str:
    """The unit a record belongs to: a pipe's open names its process; other channels are their own."""
    ch = rec["ch"]
    if rec.get("type") == "open":
        if rec.get("kind") == "pipe" and isinstance(rec.get("proc"), str):
            return rec["proc"]
        return ch
    known = chan_unit.get(ch)
    if known is None:
        return ch
    return known if isinstance(known, str) else known.key


def unit_open(opens: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The open record detection reads for a unit: the process's (else the first), with the `dialect`
    hint of one of its pipes when it has none of its own (`wirecap tee --dialect`, imports)."""
    if not opens:
        return None
    main = next((o for o in opens if o.get("kind") == "process"), opens[0])
    if not isinstance(main.get("dialect"), str) or not main.get("dialect"):
        for o in opens:
            if isinstance(o.get("dialect"), str) and o["dialect"]:
                return {**main, "dialect": o["dialect"]}
    return main


@dataclass(slots=True)
class _Sample:
    opens: list[dict[str, Any]] = field(default_factory=list)
    msgs: list[dict[str, Any]] = field(default_factory=list)
    closed: bool = False


class Detection:
    """Detection without decoding, for the summaries (`info`, `report`): feed every record in order,
    then `verdict(ch)` is the (dialect, reason) the decoders decide for that channel's unit. Units and
    samples are formed exactly as `Decoding` forms them (same unit keys, the first `DETECT_MSGS`
    non-stderr messages, sampling stops at the unit's close), and `dialect` (`--dialect`) is forced by
    the same rule (`forced_for`), so the two cannot disagree. Memory: a few records per open unit, a
    verdict per closed one."""

    def __init__(self, *, dialect: str | None = None) -> None:
        self.forced = get_dialect(dialect) if dialect else None
        self.units: dict[str, _Sample] = {}
        self.chan_unit: dict[str, str] = {}
        self._verdicts: dict[str, tuple[str | None, str]] = {}
        self._stderr: set[str] = set()

    def feed(self, rec: dict[str, Any]) -> None:
        ch = rec.get("ch")
        if ch.__class__ is not str:
            return
        rtype = rec.get("type")
        if rtype == "open":
            key = unit_key(rec, self.chan_unit)
            self.chan_unit[ch] = key
            if rec.get("stream") == "stderr" or is_stderr(ch):
                self._stderr.add(ch)
            sample = self.units.get(key)
            if sample is None:
                sample = self.units[key] = _Sample()
            sample.opens.append(rec)
            return
        known = self.chan_unit.get(ch)
        if known is None:
            known = self.chan_unit[ch] = ch
        key = known
        sample = self.units.get(key)
        if sample is None:
            sample = self.units[key] = _Sample()
        if sample.closed:
            return
        if rtype == "msg":
            if len(sample.msgs) < DETECT_MSGS and not is_stderr(ch):
                sample.msgs.append(rec)
        elif rtype == "close" and ch == key:
            sample.closed = True
            # decided now, as the decoders decide at the unit's close; the sample is let go, so a
            # capture of many units holds one verdict each, not their first messages
            self.verdict(key)
            sample.msgs = []

    def verdict(self, ch: str) -> tuple[str | None, str]:
        """(dialect, reason) of the unit `ch` belongs to; a stderr pipe has none of its own (its free
        text is decoded as status lines of its process's unit)."""
        key = self.chan_unit.get(ch, ch)
        if ch in self._stderr and key != ch:
            return None, f"stderr of {key}: free text, decoded as status lines of that unit"
        got = self._verdicts.get(key)
        if got is None:
            sample = self.units.get(key)
            main = unit_open(sample.opens) if sample is not None else None
            if self.forced is not None and forced_for(self.forced, main):
                got = (self.forced.name, "--dialect")
            elif sample is None:
                got = (None, "no records")
            else:
                got = detect_channel(main, sample.msgs)
            self._verdicts[key] = got
        return got


# --- the driver ---------------------------------------------------------------------------------------
class UnknownDecoder(Decoder):
    """A unit no dialect claimed: its messages become `unparsed` events with the reason."""

    dialect = ""

    def __init__(self, unit: str, options: dict[str, Any] | None = None, reason: str = "") -> None:
        super().__init__(unit, options)
        self.reason = reason
        self.msgs = 0

    def on_msg(self, rec: dict[str, Any]) -> list[Event]:
        self.msgs += 1
        return [self.unparsed(rec, f"no dialect for {self.unit}: {self.reason}")]

    def on_response(self, rec: dict[str, Any]) -> list[Event]:
        return []

    def on_close(self, rec: dict[str, Any]) -> list[Event]:
        return []

    def on_finish(self) -> list[Event]:
        if self.msgs:
            self.find(INFO, "no-dialect", f"{self.msgs} message(s) not decoded: {self.reason}", seq=None)
        return []


@dataclass(slots=True)
class Unit:
    """A decoding unit: one channel, or a process with its pipes."""

    key: str
    kind: str | None = None
    opens: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    decoder: Decoder | None = None
    dialect: str | None = None
    reason: str = ""
    channels: list[str] = field(default_factory=list)
    # how many of `pending` are non-stderr msg records (what detection samples), so `Decoding` builds
    # the sample only once there are enough of them rather than on every record
    out_pending: int = 0


class Decoding:
    """Sans-I/O driver: `feed(record)` -> (unit, events); `finish()` -> [(unit, events)]."""

    def __init__(self, *, dialect: str | None = None, options: dict[str, Any] | None = None) -> None:
        self.forced = get_dialect(dialect) if dialect else None
        self.options = options
        self.units: dict[str, Unit] = {}
        self.chan_unit: dict[str, Unit] = {}
        # channel -> its decoder's feed_msg, once the channel's unit is decided: the hot path of
        # `events`. Dropped when an open record (which may move the channel to another unit) comes.
        self.hot: dict[str, Any] = {}

    def unit_for(self, rec: dict[str, Any]) -> Unit:
        ch = rec["ch"]
        key = unit_key(rec, {})
        unit = self.units.get(key)
        if unit is None:
            unit = self.units[key] = Unit(key)
        self.chan_unit[ch] = unit
        unit.channels.append(ch)
        return unit

    def _start(self, unit: Unit, name: str | None, reason: str) -> list[Event]:
        unit.dialect = name
        unit.reason = reason
        if name is None:
            unit.decoder = UnknownDecoder(unit.key, self.options, reason)
        else:
            unit.decoder = DIALECTS[name].decoder(unit.key, self.options)
        out: list[Event] = []
        pending, unit.pending = unit.pending, []
        for rec in pending:
            out.extend(unit.decoder.feed(rec))
        return out

    def _try_detect(self, unit: Unit, final: bool) -> list[Event] | None:
        opened = unit_open(unit.opens)
        if self.forced is not None and forced_for(self.forced, opened):
            return self._start(unit, self.forced.name, "--dialect")
        hinted = opened is not None and isinstance(opened.get("dialect"), str) and opened["dialect"] in DIALECTS
        if not (hinted or final or unit.out_pending >= DETECT_MSGS):
            return None  # detection decides from several messages: wait for them (or the unit's end)
        msgs = out_msgs([r for r in unit.pending if r.get("type") == "msg"])
        name, reason = detect_channel(opened, msgs)
        return self._start(unit, name, reason)

    def feed(self, rec: dict[str, Any]) -> tuple[Unit | None, list[Event]]:
        ch = rec.get("ch")
        if ch.__class__ is not str:
            return None, []
        unit = self.chan_unit.get(ch)
        rtype = rec.get("type")
        if unit is not None and unit.decoder is not None and rtype != "open":
            if rtype == "msg":
                self.hot[ch] = unit.decoder.feed_msg
            return unit, unit.decoder.feed(rec)
        if unit is None or rtype == "open":
            self.hot.pop(ch, None)
            unit = self.unit_for(rec)
        if rtype == "open":
            unit.opens.append(rec)
            if unit.kind is None or rec.get("kind") == "process":
                unit.kind = rec.get("kind")
        if unit.decoder is not None:
            return unit, unit.decoder.feed(rec)
        unit.pending.append(rec)
        if rtype == "msg" and not is_stderr(ch):
            unit.out_pending += 1
        final = rtype == "close" and (rec.get("ch") == unit.key)
        events = self._try_detect(unit, final)
        return unit, events or []

    def events(self, rec: dict[str, Any]) -> list[Event]:
        """The events of one record (`feed` without the unit; the hot path for messages of a decided unit)."""
        try:
            feed_msg = self.hot[rec["ch"]] if rec["type"] == "msg" else None
        except (KeyError, TypeError):  # no ch or type, an unhashable ch, a channel not decided yet
            feed_msg = None
        if feed_msg is not None:
            return feed_msg(rec)
        return self.feed(rec)[1]

    def finish(self) -> list[tuple[Unit, list[Event]]]:
        out: list[tuple[Unit, list[Event]]] = []
        for unit in self.units.values():
            events: list[Event] = []
            if unit.decoder is None:
                events.extend(self._try_detect(unit, True) or [])
            assert unit.decoder is not None
            events.extend(unit.decoder.finish())
            out.append((unit, events))
        return out

    def findings(self) -> list[Finding]:
        found: list[Finding] = []
        for unit in self.units.values():
            if unit.decoder is not None:
                found.extend(unit.decoder.findings)
        return found


def _ch_filter(ch: str, decoding: Decoding):
    def keep(ev: Event) -> bool:
        if ev.ch == ch:
            return True
        unit = decoding.chan_unit.get(ev.ch) or decoding.units.get(ev.ch)
        return unit is not None and unit.key == ch

    return keep


def decode_batches(records: Iterable[dict[str, Any]], *, dialect: str | None = None,
                   options: dict[str, Any] | None = None) -> Iterator[list[Event]]:
    """The events of each record that has some, then the end-of-stream events of each unit.

    `decode_records` without the per-event generator step: what a consumer that loops over all
    events anyway (convert) iterates.
    """
    decoding = Decoding(dialect=dialect, options=options)
    hot = decoding.hot
    feed = decoding.feed
    for rec in records:
        try:  # the hot path: a message of a decided unit (as in Decoding.events)
            feed_msg = hot[rec["ch"]] if rec["type"] == "msg" else None
        except (KeyError, TypeError):
            feed_msg = None
        events = feed_msg(rec) if feed_msg is not None else feed(rec)[1]
        if events:
            yield events
    for _unit, events in decoding.finish():
        if events:
            yield events


def decode_records(records: Iterable[dict[str, Any]], *, dialect: str | None = None, ch: str | None = None,
                   options: dict[str, Any] | None = None) -> Iterator[Event]:
    """Universal events of a capture's records (header excluded), streaming, in record order."""
    if ch is None:
        for events in decode_batches(records, dialect=dialect, options=options):
            yield from events
        return
    decoding = Decoding(dialect=dialect, options=options)
    keep = _ch_filter(ch, decoding)
    feed = decoding.feed
    for rec in records:
        for ev in feed(rec)[1]:
            if keep(ev):
                yield ev
    for _unit, events in decoding.finish():
        for ev in events:
            if keep(ev):
                yield ev


def decode_capture(path: str, *, dialect: str | None = None, ch: str | None = None,
                   options: dict[str, Any] | None = None) -> Iterator[Event]:
    """Universal events of the capture at `path` (streaming, constant memory)."""
    from wirecap.capture.reader import CaptureReader

    with CaptureReader(path) as reader:
        yield from decode_records(reader, dialect=dialect, ch=ch, options=options)


__all__ = [
    "DEFAULT_OPTIONS",
    "DETECT_MSGS",
    "DIALECTS",
    "SNIFF_ORDER",
    "TELEMETRY",
    "TELEMETRY_VOLATILE",
    "Detection",
    "Decoding",
    "Dialect",
    "Finding",
    "Unit",
    "decode_batches",
    "decode_capture",
    "decode_records",
    "detect_channel",
    "forced_for",
    "unit_key",
    "unit_open",
    "dialect_names",
    "get_dialect",
    "is_telemetry_channel",
    "session_file_dialect",
    "volatile_paths",
]
