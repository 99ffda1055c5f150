"""Validation: protocol rules checked over a capture, as findings (severity, rule, seq, message).

The dialect decoders keep the protocol state and record rule violations while they decode (one
pass, constant memory); this module adds the capture-level rules (corrupt lines, interruption,
unparsed messages) and orders the result. Every rule is named and documented in
docs/validation-rules.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from wirecap.analysis.pipeline import UnknownChannel
from wirecap.dialects import DIALECTS, Decoding
from wirecap.dialects.base import DEFAULT_OPTIONS, ERROR_SEV, INFO, WARNING, Finding
from wirecap.dialects.drift import DriftCheck
from wirecap.events import UNPARSED

__all__ = ["DEFAULT_OPTIONS", "Finding", "SEVERITIES", "has_errors", "validate_capture", "validate_records"]

SEVERITIES = (ERROR_SEV, WARNING, INFO)
FORMAT_DETAIL = 50  # capture-format violations listed one by one; the rest are counted
UNPARSED_DETAIL = 20  # unparsed findings listed one by one per unit; the rest are summed up
EARLY_MSGS = 64  # messages of a channel held for the drift check until its unit's dialect is decided
_UNDECIDED = object()


def _check_options(options: dict[str, Any] | None) -> dict[str, Any] | None:
    if not options:
        return None
    from wirecap.errors import WirecapError

    for k, v in options.items():
        if k not in DEFAULT_OPTIONS:
            raise WirecapError(f"unknown validation option {k!r} (known: {', '.join(DEFAULT_OPTIONS)})")
        if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0):
            raise WirecapError(f"validation option {k}: expected a number of seconds >= 0, got {v!r}")
    return options


def validate_records(records: Iterable[dict[str, Any]], *, dialect: str | None = None,
                     options: dict[str, Any] | None = None, channels: Iterable[str] = (),
                     strict_schema: bool = False) -> list[Finding]:
    """Findings for a stream of records (header excluded). With `channels`, only the findings of
    the units holding them (a pipe selects its process and the process its pipes), and those of no
    channel; a channel the stream lacks raises UnknownChannel. Message types and fields a dialect
    does not know are `drift` findings: info, or errors with `strict_schema`."""
    decoding = Decoding(dialect=dialect, options=_check_options(options))
    drift = DriftCheck()
    drift_of: dict[Any, Any] = {}  # channel -> its drift check once its unit is decided (None: not checked)
    unparsed: dict[str, int] = {}
    found: list[Finding] = []

    def note(events: list) -> None:
        for ev in events:
            if ev.kind == UNPARSED and ev.dialect:
                n = unparsed.get(ev.ch, 0) + 1
                unparsed[ev.ch] = n
                if n <= UNPARSED_DETAIL:
                    found.append(Finding(WARNING, "unparsed", f"{ev.dialect}: {ev.data.get('reason')}",
                                         ev.seq[0] if ev.seq else None, ev.ch))

    events_of = decoding.events
    chan_unit = decoding.chan_unit
    early: dict[Any, list[dict[str, Any]]] = {}  # channel -> its messages before its unit was decided

    def drift_for(ch: Any) -> Any:
        """The drift check of a channel (None: not checked), or _UNDECIDED while its unit has no dialect yet."""
        unit = chan_unit.get(ch)
        if unit is None or unit.decoder is None:
            return _UNDECIDED
        known = DIALECTS[unit.dialect].known if unit.dialect else None
        return drift.for_channel(unit.dialect, known, ch) if known is not None else None

    def _drain(ch: Any) -> None:
        """Check the held messages of the closed channel's unit once it has its dialect (a unit of
        fewer than 8 messages is decided at its close): `early` holds undecided units only, not every
        short exchange of the capture until the end."""
        unit = chan_unit.get(ch) if ch.__class__ is str else None
        if unit is None:
            return
        for c in [c for c in early if chan_unit.get(c) is unit]:
            check = drift_for(c)
            if check is _UNDECIDED:
                continue
            drift_of[c] = check
            for r in early.pop(c):
                if check is not None:
                    check(r)

    for rec in records:
        events = events_of(rec)
        if rec.get("type") == "msg":  # drift: once the channel's unit has a dialect that declares what it knows
            ch = rec.get("ch")
            try:
                check = drift_of[ch]
            except KeyError:
                check = drift_for(ch)
                if check is _UNDECIDED:  # checked once its unit's dialect is known
                    held = early.setdefault(ch, [])
                    if len(held) < EARLY_MSGS:
                        held.append(rec)
                    check = None
                else:
                    drift_of[ch] = check
                    for r in early.pop(ch, ()):
                        if check is not None:
                            check(r)
            except TypeError:  # an unhashable ch: the decoder already said what it thinks
                check = None
            if check is not None:
                check(rec)
        elif early and rec.get("type") == "close":  # a unit ends: decided now if it was not
            _drain(rec.get("ch"))
        if events:
            for ev in events:  # (note() inlined: once per record)
                if ev.kind == UNPARSED:
                    note([ev])
    for _unit, events in decoding.finish():
        note(events)
    for ch, held in early.items():  # units decided only at the end of the stream
        check = drift_for(ch)
        if check is not None and check is not _UNDECIDED:
            for r in held:
                check(r)
    for ch, n in unparsed.items():
        if n > UNPARSED_DETAIL:
            found.append(Finding(WARNING, "unparsed", f"{n - UNPARSED_DETAIL} more unparsed messages on {ch}", None, ch))
    found.extend(decoding.findings())
    found.extend(drift.findings(strict_schema))
    wanted = set(channels)
    if wanted:
        chan_unit = decoding.chan_unit
        missing = sorted(wanted - chan_unit.keys())
        if missing:
            raise UnknownChannel(missing[0], sorted(chan_unit))
        keys = {chan_unit[c].key for c in wanted}
        found = [f for f in found if f.ch is None or f.ch in keys
                 or (f.ch in chan_unit and chan_unit[f.ch].key in keys)]
    return sort_findings(found)


def sort_findings(found: list[Finding]) -> list[Finding]:
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(found, key=lambda f: (f.seq is None, f.seq or 0, order.get(f.severity, 9), f.rule))


def validate_capture(path: str, *, dialect: str | None = None, options: dict[str, Any] | None = None,
                     channels: Iterable[str] = (), strict_schema: bool = False) -> list[Finding]:
    """Findings for the capture at `path`: its dialects' rules, and the format's own (`capture-format`:
    the JSON Schema of docs/capture-format.schema.json, corrupt lines, seq and t order, `end.records`),
    which are errors; an interrupted capture (no `end`, a torn last line) is a warning."""
    from wirecap.capture.reader import CaptureReader

    with CaptureReader(path) as reader:
        fmt = FormatCheck(path, reader.header_line)
        found = validate_records(fmt.records(reader), dialect=dialect, options=options, channels=channels,
                                 strict_schema=strict_schema)
        for problem in reader.problems[:-1] if reader.unlisted else reader.problems:
            fmt.add(problem)
        fmt.more += reader.unlisted  # (the reader's last problem then says how many it did not list)
        found += fmt.findings()
        if reader.interrupted:
            found.append(Finding(WARNING, "capture-interrupted", f"interrupted capture: {reader.interrupted}",
                                 reader.last_seq or None, None))
    return sort_findings(found)


class FormatCheck:
    """The `capture-format` rule: each record (and the header) against the format's JSON Schema, plus the
    reader's problems (corrupt lines, seq gaps and repeats, time going backwards, records skipped for a
    wrong-typed field). The first FORMAT_DETAIL violations are findings one by one, the rest summed up."""

    def __init__(self, path: str, header_line: bytes) -> None:
        import orjson

        from wirecap.capture.schema import validate_header

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

    def records(self, records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        from wirecap.capture.schema import validate_record

        for rec in records:
            seq = rec["seq"]
            for what in validate_record(rec):
                self.add(f"{self.path}: seq {seq}: {what}", seq)
            if rec.get("type") == "end" and rec.get("records") != seq:
                self.add(f"{self.path}: seq {seq}: end.records is {rec.get('records')!r}, its seq is {seq}", seq)
            yield rec

    def findings(self) -> list[Finding]:
        if self.more:
            return [*self.detail, Finding(ERROR_SEV, "capture-format",
                                          f"{self.path}: {self.more} more format violations", None, None)]
        return self.detail


def has_errors(found: Iterable[Finding]) -> bool:
    return any(f.severity == ERROR_SEV for f in found)
