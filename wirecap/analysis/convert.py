"""A capture's universal events as JSON lines (`wirecap convert`), its notes merged in by seq.

Each event is one line written by `wirecap.events.dumps` (the one event serializer). A note is a
`{"kind": "note", ...}` line placed after the events of the seq it points at; capture-wide notes
come first, notes past the last event last. Writes to the byte stream it is given; opens nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, Any

import orjson

from wirecap.analysis.notes import Note
from wirecap.events import Event
from wirecap.events import dumps as event_line

FLUSH_LINES = 512  # lines gathered before one write


def note_event(n: Note) -> dict[str, Any]:
    """A note as a line of the event stream."""
    seq = [] if n.seq is None else [n.seq] if not n.seq_end else [n.seq, n.seq_end]
    out = {"kind": "note", "ch": n.ch, "seq": seq, "id": n.id, "tag": n.tag, "text": n.text, "author": n.author}
    return {k: v for k, v in out.items() if v is not None}


def sorted_notes(notes: Iterable[Note]) -> list[Note]:
    """Notes in the order the event stream places them: capture-wide first, then by seq."""
    return sorted(notes, key=lambda n: (n.seq is not None, n.seq or 0))


class _NoteQueue:
    """The notes still to place, in `sorted_notes` order."""

    def __init__(self, notes: list[Note]) -> None:
        self.notes = notes
        self.i = 0
        self.placed = 0

    def wide(self) -> list[bytes]:
        """The lines of the capture-wide notes (those with no seq, at the head of the queue)."""
        out = []
        while self.i < len(self.notes) and self.notes[self.i].seq is None:
            out.append(orjson.dumps(note_event(self.notes[self.i])))
            self.i += 1
        return out

    def next_seq(self) -> int | None:
        """The seq of the next note to place (None: none left)."""
        return self.notes[self.i].seq if self.i < len(self.notes) else None

    def before(self, seq: int, buf: list[bytes]) -> int | None:
        """Append to `buf` the notes that belong before an event at `seq`; returns `next_seq()`."""
        notes = self.notes
        while self.i < len(notes) and seq > (notes[self.i].seq or 0):
            buf.append(orjson.dumps(note_event(notes[self.i])))
            self.i += 1
            self.placed += 1
        return self.next_seq()

    def rest(self) -> list[bytes]:
        return [orjson.dumps(note_event(n)) for n in self.notes[self.i:]]


def write_event_lines(batches: Iterable[list[Event]], notes: list[Note], out: IO[bytes]) -> int:
    """Write the events of `batches` (and `notes`, in `sorted_notes` order) to `out` as JSON lines;
    returns the number of event lines written."""
    queue = _NoteQueue(notes)
    for line in queue.wide():
        out.write(line + b"\n")
    next_note = queue.next_seq()
    n = 0  # lines flushed (events and the notes among them)
    buf: list[bytes] = []
    encode = event_line  # (a local: this loop runs once per event)
    for events in batches:
        for ev in events:
            if next_note is not None and ev.seq and ev.seq[0] > next_note:
                next_note = queue.before(ev.seq[0], buf)
            buf.append(encode(ev))
        if len(buf) >= FLUSH_LINES:
            n += len(buf)
            buf.append(b"")
            out.write(b"\n".join(buf))
            buf = []
    n += len(buf) - queue.placed
    buf += queue.rest()
    if buf:
        buf.append(b"")
        out.write(b"\n".join(buf))
    return n
