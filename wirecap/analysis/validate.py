"""Validation: protocol rules checked over a capture, as findings (severity, rule, seq, message).

The dialect decoders keep the protocol state and record rule violations while they decode (one
pass, constant memory); this module adds the capture-level rules (corrupt lines, interruption,
unparsed messages) and orders the result. Every rule is named and documented in
docs/validation-rules.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from wirecap.analysis.pipeline import UnknownChannel, run_pass, selected_units
from wirecap.analysis.transport import TransportCheck
from wirecap.capture.schema import validate_header, validate_record
from wirecap.dialects import DIALECTS, Decoding, Unit
from wirecap.dialects.base import DEFAULT_OPTIONS, ERROR_SEV, INFO, WARNING, Finding
from wirecap.dialects.drift import DriftCheck
from wirecap.errors import WirecapError
from wirecap.events import UNPARSED, Event

__all__ = ["DEFAULT_OPTIONS", "Finding", "SEVERITIES", "has_errors", "validate_capture", "validate_records"]

SEVERITIES = (ERROR_SEV, WARNING, INFO)
FORMAT_DETAIL = 50  # capture-format violations listed one by one; the rest are counted
UNPARSED_DETAIL = 20  # unparsed findings listed one by one per unit; the rest are summed up
EARLY_MSGS = 64  # messages of a channel held for the drift check until its unit's dialect is decided
_UNDECIDED = object()


def _check_options(options: dict[str, Any] | None) -> dict[str, Any] | None:
    if not options:
        return None
    for k, v in options.items():
        if k not in DEFAULT_OPTIONS:
            raise WirecapError(f"unknown validation option {k!r} (known: {', '.join(DEFAULT_OPTIONS)})")
        if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0):
            raise WirecapError(f"validation option {k}: expected a number of seconds >= 0, got {v!r}")
    return options


class RulesSink:
    """The rules part of a decode pass (`wirecap.analysis.pipeline`): what the decoders find while they
    decode, `unparsed` messages, `drift` (message types and fields a dialect does not know),
    checked on each channel once its unit's dialect is known, and the capture-level transport rule
    (`ws-fallback`, `wirecap.analysis.transport`). `findings()` after the pass."""

    def __init__(self, decoding: Decoding) -> None:
        self.decoding = decoding
        self._chan_unit = decoding.chan_unit
        self.drift = DriftCheck()
        self._drift_of: dict[Any, Any] = {}  # channel -> its drift check once its unit is decided (None: not checked)
        self._early: dict[Any, list[dict[str, Any]]] = {}  # channel -> its messages before its unit was decided
        self._unparsed: dict[str, int] = {}
        self._found: list[Finding] = []
        self.transport = TransportCheck(decoding)

    def on_record(self, rec: dict[str, Any], events: list[Event]) -> None:
        rtype = rec.get("type")
        if rtype == "msg":  # drift: once the channel's unit has a dialect that declares what it knows
            try:
                check = self._drift_of[rec.get("ch")]
            except KeyError:
                check = self._decide(rec.get("ch"), rec)
            except TypeError:  # an unhashable ch: the decoder already said what it thinks
                check = None
            if check is not None:
                check(rec)
        elif self._early and rtype == "close":  # a unit ends: decided now if it was not
            self._release(rec.get("ch"))
        if events:
            for ev in events:
                if ev.kind == UNPARSED:
                    self._note_unparsed(ev)
            self.transport.on_record(rec, events)

    def on_unit_end(self, unit: Unit, events: list[Event]) -> None:
        for ev in events:
            if ev.kind == UNPARSED:
                self._note_unparsed(ev)
        self.transport.on_unit_end(unit, events)

    def _note_unparsed(self, ev: Event) -> None:
        """The first UNPARSED_DETAIL unparsed messages of a channel one by one; the rest counted."""
        if not ev.dialect:
            return
        n = self._unparsed.get(ev.ch, 0) + 1
        self._unparsed[ev.ch] = n
        if n <= UNPARSED_DETAIL:
            self._found.append(Finding(WARNING, "unparsed", f"{ev.dialect}: {ev.data.get('reason')}",
                                       ev.seq[0] if ev.seq else None, ev.ch))

    def _drift_for(self, ch: Any) -> Any:
        """The drift check of a channel (None: not checked), or _UNDECIDED while its unit has no dialect yet."""
        unit = self._chan_unit.get(ch)
        if unit is None or unit.decoder is None:
            return _UNDECIDED
        dialect = unit.dialect
        if not dialect:
            return None
        known = DIALECTS[dialect].known
        return self.drift.for_channel(dialect, known, ch) if known is not None else None

    def _decide(self, ch: Any, rec: dict[str, Any]) -> Any:
        """The drift check for the first message of `ch` since its unit was decided (its held messages
        are checked now), or None while undecided (`rec` is then held, up to EARLY_MSGS)."""
        check = self._drift_for(ch)
        if check is _UNDECIDED:  # checked once its unit's dialect is known
            held = self._early.setdefault(ch, [])
            if len(held) < EARLY_MSGS:
                held.append(rec)
            return None
        self._drift_of[ch] = check
        for r in self._early.pop(ch, ()):
            if check is not None:
                check(r)
        return check

    def _release(self, ch: Any) -> None:
        """Check the held messages of the closed channel's unit once it has its dialect (a unit of
        fewer than 8 messages is decided at its close): `early` holds undecided units only, not every
        short exchange of the capture until the end."""
        unit = self._chan_unit.get(ch) if ch.__class__ is str else None
        if unit is None:
            return
        for c in [c for c in self._early if self._chan_unit.get(c) is unit]:
            check = self._drift_for(c)
            if check is _UNDECIDED:
                continue
            self._drift_of[c] = check
            for r in self._early.pop(c):
                if check is not None:
                    check(r)

    def findings(self, *, strict_schema: bool = False, channels: Iterable[str] = ()) -> list[Finding]:
        """Every finding of the pass, in order. With `channels`, only the findings of the units holding
        them and those of no channel; a channel the stream lacks raises UnknownChannel."""
        for ch, held in self._early.items():  # units decided only at the end of the stream
            check = self._drift_for(ch)
            if check is not None and check is not _UNDECIDED:
                for r in held:
                    check(r)
        self._early = {}
        found = list(self._found)
        for ch, n in self._unparsed.items():
            if n > UNPARSED_DETAIL:
                found.append(Finding(WARNING, "unparsed", f"{n - UNPARSED_DETAIL} more unparsed messages on {ch}", None, ch))
        found.extend(self.decoding.findings())
        found.extend(self.transport.findings())
        found.extend(self.drift.findings(strict_schema))
        keys = selected_units(self.decoding, channels)
        if keys is not None:
            chan_unit = self._chan_unit
            found = [f for f in found if f.ch is None or f.ch in keys
                     or (f.ch in chan_unit and chan_unit[f.ch].key in keys)]
        return sort_findings(found)


def validate_records(records: Iterable[dict[str, Any]], *, dialect: str | None = None,
                     options: dict[str, Any] | None = None, channels: Iterable[str] = (),
                     strict_schema: bool = False) -> list[Finding]:
    """Findings for a stream of records (header excluded). With `channels`, only the findings of
    the units holding them (a pipe selects its process and the process its pipes), and those of no
    channel; a channel the stream lacks raises UnknownChannel. Message types and fields a dialect
    does not know are `drift` findings: info, or errors with `strict_schema`."""
    decoding = Decoding(dialect=dialect, options=_check_options(options))
    rules = RulesSink(decoding)
    run_pass(records, decoding, [rules])
    return rules.findings(strict_schema=strict_schema, channels=channels)


def sort_findings(found: list[Finding]) -> list[Finding]:
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(found, key=lambda f: (f.seq is None, f.seq or 0, order.get(f.severity, 9), f.rule))


def validate_capture(path: str, *, dialect: str | None = None, options: dict[str, Any] | None = None,
                     channels: Iterable[str] = (), strict_schema: bool = False) -> list[Finding]:
    """Findings for the capture at `path`: its dialects' rules, and the format's own (`capture-format`:
    the JSON Schema of docs/capture-format.schema.json, corrupt lines, seq and t order, `end.records`),
    which are errors; an interrupted capture (no `end`, a torn last line) is a warning; a channel the
    capture lacks is a WirecapError naming the ones it has. (The thin
    shell: it opens the capture and runs one decode pass with the format and rules sinks.)"""
    from wirecap.capture.reader import CaptureReader

    with CaptureReader(path) as reader:
        decoding = Decoding(dialect=dialect, options=_check_options(options))
        fmt = FormatCheck(path, reader.header_line)
        rules = RulesSink(decoding)
        run_pass(reader, decoding, [fmt, rules])
        try:
            found = rules.findings(strict_schema=strict_schema, channels=channels)
        except UnknownChannel as e:
            raise WirecapError(e.describe(path)) from None
        found += fmt.with_reader(reader.problems, reader.unlisted, reader.interrupted, reader.last_seq)
    return sort_findings(found)


class FormatCheck:
    """The `capture-format` rule: each record (and the header) against the format's JSON Schema, plus the
    reader's problems (corrupt lines, seq gaps and repeats, time going backwards, records skipped for a
    wrong-typed field). The first FORMAT_DETAIL violations are findings one by one, the rest summed up."""

    def __init__(self, path: str, header_line: bytes) -> None:
        import orjson

        self.path = path
        self.detail: list[Finding] = []
        self.more = 0
        try:
            header = orjson.loads(header_line)
        except orjson.JSONDecodeError:  # (the reader accepted it, so this cannot happen)
            header = None
        for what in validate_header(header):
            self.add(f"{path}:1: header: {what}")

    def add(self, message: str, seq: int | None = None) -> None:
        if len(self.detail) < FORMAT_DETAIL:
            self.detail.append(Finding(ERROR_SEV, "capture-format", message, seq, None))
        else:
            self.more += 1

    def on_record(self, rec: dict[str, Any], events: list[Event]) -> None:
        seq = rec["seq"]
        for what in validate_record(rec):
            self.add(f"{self.path}: seq {seq}: {what}", seq)
        if rec.get("type") == "end" and rec.get("records") != seq:
            self.add(f"{self.path}: seq {seq}: end.records is {rec.get('records')!r}, its seq is {seq}", seq)

    def on_unit_end(self, unit: Unit, events: list[Event]) -> None:
        pass

    def findings(self) -> list[Finding]:
        if self.more:
            return [*self.detail, Finding(ERROR_SEV, "capture-format",
                                          f"{self.path}: {self.more} more format violations", None, None)]
        return self.detail

    def with_reader(self, problems: list[str], unlisted: int, interrupted: str | None,
                    last_seq: int | None) -> list[Finding]:
        """The findings once the reader is done: its problems (`FILE:LINE: what`; when it did not list
        them all, its last problem says how many and `unlisted` counts them) as format errors, and an
        interrupted capture as a warning at its last seq."""
        for problem in problems[:-1] if unlisted else problems:
            self.add(problem)
        self.more += unlisted  # (the reader's last problem then says how many it did not list)
        found = self.findings()
        if interrupted:
            found.append(Finding(WARNING, "capture-interrupted", f"interrupted capture: {interrupted}",
                                 last_seq or None, None))
        return found


def has_errors(found: Iterable[Finding]) -> bool:
    return any(f.severity == ERROR_SEV for f in found)
