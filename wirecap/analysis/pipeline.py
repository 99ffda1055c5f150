"""The decode-once pass: each record of a capture is decoded once, and the record with its events is
handed in the same step to every consumer that needs it (statistics, findings, the report's record
summary, the conversation).

`stats`, `validate` and `report` all run through `decode_pass`; none of them keeps a decode loop of
its own, so a capture a report describes is decoded exactly once, whatever parts the report has.

A consumer is a *sink* (see `Sink`): `on_record(rec, events)` for every record in order (the events
its decoding produced, often none), then `on_unit_end(unit, events)` for each decoding unit at the
end of the stream (the events its decoder held back). The pass itself yields each non-empty batch of
events, so a consumer that pulls events (a fold over the whole stream) can drive it while the sinks
ride along; a caller with sinks only runs it with `run_pass` (which yields nothing).

Pure: records in, calls out; nothing here opens a file (the callers' thin shells do).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from wirecap.dialects import Decoding, Unit
from wirecap.events import Event

__all__ = ["Isolated", "Sink", "UnknownChannel", "decode_pass", "drain", "run_pass", "selected_units"]


class Sink(Protocol):
    """A consumer of the pass. Calls come in record order; `on_unit_end` calls come after the last
    `on_record`, one per unit, in the order the units were first seen."""

    def on_record(self, rec: dict[str, Any], events: list[Event]) -> None: ...

    def on_unit_end(self, unit: Unit, events: list[Event]) -> None: ...


def decode_pass(records: Iterable[dict[str, Any]], decoding: Decoding, sinks: Iterable[Sink], *,
                yield_events: bool = True) -> Iterator[list[Event]]:
    """Decode `records` (header excluded) with `decoding`, feed every sink, and yield each non-empty
    batch of events (a record's, then each unit's end-of-stream events; nothing with
    `yield_events=False`, which spares a pass with sinks only one generator step per record). Lazy:
    nothing happens until the result is iterated; iterate it to the end (`drain`) for the sinks to
    see everything."""
    sinks = list(sinks)
    feed = _each(sinks)
    hot, feed_any = decoding.hot, decoding.feed
    for rec in records:
        try:  # the driver's hot path: a message of a decided unit (`Decoding.events`, without its call)
            feed_msg = hot[rec["ch"]] if rec["type"] == "msg" else None
        except (KeyError, TypeError):  # no ch or type, an unhashable ch, a channel not decided yet
            feed_msg = None
        events = feed_msg(rec) if feed_msg is not None else feed_any(rec)[1]
        feed(rec, events)
        if events and yield_events:
            yield events
    for unit, events in decoding.finish():
        for s in sinks:
            s.on_unit_end(unit, events)
        if events:
            yield events


def _each(sinks: list[Sink]) -> Callable[[dict[str, Any], list[Event]], None]:
    """One callable that gives a record to every sink: the sink's own `on_record` when there is one
    (a pass of `stats` or `validate_records`: no loop per record)."""
    if len(sinks) == 1:
        return sinks[0].on_record
    feeds = [s.on_record for s in sinks]

    def each(rec: dict[str, Any], events: list[Event]) -> None:
        for feed in feeds:
            feed(rec, events)

    return each


def run_pass(records: Iterable[dict[str, Any]], decoding: Decoding, sinks: Iterable[Sink]) -> None:
    """A whole pass for sinks only (nobody pulls the events)."""
    drain(decode_pass(records, decoding, sinks, yield_events=False))


def drain(batches: Iterator[Any]) -> None:
    """Run an iterator to its end, keeping nothing (what a pass with sinks only needs)."""
    deque(batches, maxlen=0)


class Isolated[S: Sink]:
    """A sink whose failure does not stop the pass: the first exception it raises is kept in `error`
    and it is not called again. For callers (the report) where one part failing must not cost the
    others; `stats` and `validate` on their own let a failure propagate."""

    def __init__(self, sink: S) -> None:
        self.sink = sink
        self.error: Exception | None = None

    def on_record(self, rec: dict[str, Any], events: list[Event]) -> None:
        if self.error is None:
            try:
                self.sink.on_record(rec, events)
            except Exception as e:  # noqa: BLE001 - kept and reported by the caller
                self.error = e

    def on_unit_end(self, unit: Unit, events: list[Event]) -> None:
        if self.error is None:
            try:
                self.sink.on_unit_end(unit, events)
            except Exception as e:  # noqa: BLE001 - as above
                self.error = e


class UnknownChannel(LookupError):
    """A channel asked for (`--ch`) that the capture does not have; `have` lists the ones it has."""

    def __init__(self, ch: str, have: list[str]) -> None:
        super().__init__(ch)
        self.ch, self.have = ch, have

    def describe(self, capture: str) -> str:
        """The one-line error for `capture` (the same words as `wirecap cat --ch` uses)."""
        return f"{capture}: no channel {self.ch!r} (channels: {', '.join(self.have) or 'none'})"


def selected_units(decoding: Decoding, channels: Iterable[str]) -> set[str] | None:
    """The keys of the units holding `channels` (a pipe selects its process's unit), or None when no
    channel was asked for. A channel the decoded stream lacks raises UnknownChannel."""
    wanted = set(channels)
    if not wanted:
        return None
    chan_unit = decoding.chan_unit
    missing = sorted(wanted - chan_unit.keys())
    if missing:
        raise UnknownChannel(missing[0], sorted(chan_unit))
    return {chan_unit[c].key for c in wanted}
