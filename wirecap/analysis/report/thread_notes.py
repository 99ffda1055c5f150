"""Notes (`wirecap annotate`) where a person reads: in the thread, at the part whose records they point at.

A note on a record sits at the first place of the thread, in reading order, that came from it: the
call's head for its request record, else the message, tool call or tool result that holds it (a range:
the place of its first record the thread shows; `--ch` with a seq: only that channel's records); a
note on a whole channel sits at the head of the thread of that channel. A note no place holds (a record
the thread does not show, a channel it does not cover) stays in the notes section only; the notes
section lists every note whatever happens here.

Placing is pure and bounded: the thread's places are indexed once by seq (the first place of each seq
in reading order), each note is looked up by bisection, at most `MAX_INLINE` notes are placed in all
and a place shows at most `MAX_PER_PLACE` of its notes (then how many more). A call laid out as one
line (past `thread_view.MAX_SHOWN_CALLS`) holds the notes of its parts at its head.
"""

from __future__ import annotations

import textwrap
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from html import escape
from typing import Any

from wirecap.analysis.notes import Note
from wirecap.analysis.report.model import CaptureReport
from wirecap.analysis.report.thread import Part, Thread, ThreadCall

MAX_INLINE = 2000  # notes placed in the thread in all (the others: in the notes section only)
MAX_PER_PLACE = 10  # notes one place shows (then a line saying how many more)
NOTE_TEXT = 500  # characters of a note's text shown in the thread (the notes section has it whole)
MAX_RANGE_STEPS = 10_000  # records of a range looked at for one on its channel

Walk = Callable[[Thread], Iterable[tuple[str, Any, int]]]


@dataclass
class NotePlaces:
    """Which notes sit where: by the thread object they sit on (a `Thread` for its head, a `ThreadCall`
    for its head, a `Part`, an `Aside`), with the anchor of that place (`call-3`, `call-3-p1`,
    `aside-45`, `thread-0`: an html page prefixes `cI-`)."""

    at_obj: dict[int, list[Note]] = field(default_factory=dict)
    anchor_obj: dict[int, str] = field(default_factory=dict)
    anchor_note: dict[str, str] = field(default_factory=dict)

    def at(self, obj: Any) -> list[Note]:
        return self.at_obj.get(id(obj), [])

    def anchor(self, obj: Any) -> str | None:
        """The anchor of a place that holds notes (None for one that holds none)."""
        return self.anchor_obj.get(id(obj))

    def put(self, note: Note, obj: Any, anchor: str) -> None:
        self.at_obj.setdefault(id(obj), []).append(note)
        self.anchor_obj[id(obj)] = anchor
        self.anchor_note[note.id] = anchor

    def __len__(self) -> int:
        return len(self.anchor_note)


def shown_parts(c: ThreadCall) -> Iterator[Part]:
    """The parts of a call a renderer lays out one by one, in order: the new messages sent (not the
    replies sent back as history), then what came back."""
    for m in c.new:
        if m.echo_of is None:
            yield from m.parts
    yield from c.reply


class _Index:
    """The first place of each seq in reading order."""

    def __init__(self, threads: list[Thread], walk: Walk, max_full: int) -> None:
        self.first: dict[int, tuple[Any, str]] = {}
        for th in threads:
            shown = 0
            for kind, item, _ in walk(th):
                if kind == "call":
                    shown += 1
                    self._call(item, shown <= max_full)
                elif kind == "aside" and item.seq is not None:
                    self.first.setdefault(item.seq, (item, f"aside-{item.seq}"))
        self.keys = sorted(self.first)

    def _call(self, c: ThreadCall, full: bool) -> None:
        head = (c, f"call-{c.n}")
        self.first.setdefault(c.seq, head)
        for j, p in enumerate(shown_parts(c)):
            place = (p, f"call-{c.n}-p{j}") if full else head
            for s in p.seqs:
                self.first.setdefault(s, place)

    def find(self, note: Note, seq_ch: dict[int, str]) -> tuple[Any, str] | None:
        """The place of the first record the note covers (on its channel, when it names one)."""
        assert note.seq is not None
        last = note.last if note.last is not None else note.seq
        i = bisect_left(self.keys, note.seq)
        for s in self.keys[i:i + MAX_RANGE_STEPS]:
            if s > last:
                return None
            if note.ch is None or seq_ch.get(s, note.ch) == note.ch:
                return self.first[s]
        return None


def _seq_channels(cap: CaptureReport) -> dict[int, str]:
    """The channel of each record the conversation came from (what a note with `--ch` and a seq needs)."""
    out: dict[int, str] = {}
    for ch, entries in cap.conversation.items():
        for e in entries:
            for s in e.records():
                out[s] = ch
    for th in cap.threads:
        for c in th.calls:
            out[c.seq] = c.ch
    return out


def _thread_of(cap: CaptureReport, ch: str) -> int | None:
    """The thread a channel's messages are in: the one with a call on it, else (the client's own
    output, merged into the session's one thread) the first, when the conversation has that channel."""
    for ti, th in enumerate(cap.threads):
        if any(c.ch == ch for c in th.calls):
            return ti
    return 0 if cap.threads and cap.conversation.get(ch) else None


def place_notes(cap: CaptureReport, walk: Walk, max_full: int) -> NotePlaces:
    """Where each of the capture's notes sits in its thread (`walk`: the thread in reading order, as
    `thread_view.steps`; `max_full`: calls laid out in full, the next ones one line each)."""
    places = NotePlaces()
    if not cap.notes or not cap.threads:
        return places
    index = _Index(cap.threads, walk, max_full)
    seq_ch = _seq_channels(cap) if any(n.seq is not None and n.ch for n in cap.notes) else {}
    for n in cap.notes:
        if len(places) >= MAX_INLINE:
            break
        if n.seq is not None:
            found = index.find(n, seq_ch)
            if found is not None:
                places.put(n, *found)
        elif n.ch is not None:
            ti = _thread_of(cap, n.ch)
            if ti is not None:
                places.put(n, cap.threads[ti], f"thread-{ti}")
    return places


# --- laid out --------------------------------------------------------------------------------------------


def note_text(n: Note) -> str:
    """One line: ✎ tag [id] where (author): text (the text cut at NOTE_TEXT characters)."""
    text = " ".join(n.text.split())
    if len(text) > NOTE_TEXT:
        text = text[:NOTE_TEXT] + f"… ({len(text) - NOTE_TEXT:,} more characters: the notes section)"
    who = f", {n.author}" if n.author else ""
    return f"✎ {n.tag} [{n.id}] {n.target()}{who}: {text}"


def _more(notes: list[Note]) -> str:
    left = len(notes) - MAX_PER_PLACE
    return f"… {left:,} more note(s) here: the notes section lists them all" if left > 0 else ""


def notes_term(notes: list[Note], pad: str, width: int) -> list[str]:
    """The notes of a place as terminal lines, wrapped at `width` under `pad`."""
    if not notes:
        return []
    out: list[str] = []
    for line in [note_text(n) for n in notes[:MAX_PER_PLACE]] + ([_more(notes)] if _more(notes) else []):
        out += textwrap.wrap(line, max(20, width - len(pad)), initial_indent=pad, subsequent_indent=pad + "  ")
    return out


def notes_markdown(notes: list[Note]) -> list[str]:
    """The notes of a place as Markdown lines (a list, then a blank line)."""
    if not notes:
        return []
    lines = [f"- {_md_escape(note_text(n))}" for n in notes[:MAX_PER_PLACE]]
    more = _more(notes)
    return [*lines, *([f"- _{more}_"] if more else []), ""]


def _md_escape(text: str) -> str:
    return text.replace("<", "&lt;").replace("`", "\\`")


def notes_html(notes: list[Note], anchor: Callable[[int], str]) -> str:
    """The notes of a place as HTML: each with its tag, text, author, id, and a link to its record."""
    out = []
    for n in notes[:MAX_PER_PLACE]:
        text = " ".join(n.text.split())
        shown = escape(text[:NOTE_TEXT]) + (f"… ({len(text) - NOTE_TEXT:,} more characters)" if len(text) > NOTE_TEXT else "")
        where = (f'<a href="#{anchor(n.seq)}">{escape(n.target())}</a>' if n.seq is not None else escape(n.target()))
        out.append(f'<div class="note tag-{escape(n.tag, quote=True)}" data-note="{escape(n.id, quote=True)}">'
                   f'<span class="badge">✎ {escape(n.tag)}</span> {shown} <span class="muted">— '
                   f"{escape(n.author)}, <code>{escape(n.id)}</code>, {where}</span></div>")
    more = _more(notes)
    return "".join(out) + (f'<div class="note muted">{escape(more)}</div>' if more else "")
