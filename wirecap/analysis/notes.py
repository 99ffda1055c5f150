"""Notes on a capture: a sidecar `CAP.notes.jsonl` beside it, append-only (the capture is evidence
and is never rewritten).

Each line of the sidecar is one JSON object: a note (`"op": "add"`) or a tombstone (`"op": "rm"`,
`"id"`) that hides an earlier note. The sans-I/O part (the `Note` model, applying tombstones,
checking a note against a capture's seq range and channels) is separate from the few functions that
touch files (`load_notes`, `add_note`, `remove_note`), so `cat`, `diff` and `report` can reuse it.
"""

from __future__ import annotations

import datetime as _dt
import getpass
import hashlib
import os
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

import orjson

from wirecap.errors import WirecapError

COMMON_TAGS = ("bug", "question", "expected", "unexpected", "todo", "info", "warning", "error")
_CAPTURE_SUFFIXES = (".jsonl.gz", ".jsonl.zst", ".jsonl", ".gz", ".zst", ".json")
MAX_SEQ = 2**63  # seqs are JSON integers; beyond 64 bits no capture can reach


@dataclass(frozen=True, slots=True)
class Note:
    """One note. It points at a seq (`seq`), a seq range (`seq`..`seq_end`) or a channel (`ch` only);
    `seq` with `ch` means "this message, on this channel". `source` names where a generated note came
    from (`validate:RULE:SEQ:CH`) so re-running the generator does not duplicate it."""

    id: str
    tag: str
    text: str
    author: str
    time: str
    seq: int | None = None
    seq_end: int | None = None
    ch: str | None = None
    source: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def first(self) -> int | None:
        return self.seq

    @property
    def last(self) -> int | None:
        return self.seq_end if self.seq_end is not None else self.seq

    def covers(self, seq: int, ch: str | None = None) -> bool:
        """Whether this note is about the record `seq` (on channel `ch`)."""
        if self.seq is None:
            return self.ch is not None and ch == self.ch
        if self.ch is not None and ch is not None and ch != self.ch:
            return False
        last = self.last if self.last is not None else self.seq
        return self.seq <= seq <= last

    def target(self) -> str:
        """Where the note points, as people write it: `seq 42`, `seq 42-50`, `ch ws-1`."""
        parts = []
        if self.seq is not None:
            parts.append(f"seq {self.seq}" if self.seq_end in (None, self.seq) else f"seq {self.seq}-{self.seq_end}")
        if self.ch is not None:
            parts.append(f"ch {self.ch}")
        return ", ".join(parts) or "capture"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": "add", "id": self.id}
        if self.seq is not None:
            out["seq"] = self.seq
        if self.seq_end is not None:
            out["seq_end"] = self.seq_end
        if self.ch is not None:
            out["ch"] = self.ch
        out.update({"tag": self.tag, "text": self.text, "author": self.author, "time": self.time})
        if self.source is not None:
            out["source"] = self.source
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Note:
        """Build a note from a sidecar line; raises ValueError with a short reason when malformed."""
        nid = obj.get("id")
        if not isinstance(nid, str) or not nid:
            raise ValueError("note without an id")
        seq, seq_end, ch = obj.get("seq"), obj.get("seq_end"), obj.get("ch")
        for name, v in (("seq", seq), ("seq_end", seq_end)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
                raise ValueError(f"note {nid}: {name} is not an integer")
        if ch is not None and not isinstance(ch, str):
            raise ValueError(f"note {nid}: ch is not a string")
        if seq is None and ch is None:
            raise ValueError(f"note {nid}: points at nothing (no seq, no ch)")
        known = {"op", "id", "seq", "seq_end", "ch", "tag", "text", "author", "time", "source"}
        return cls(
            id=nid,
            tag=str(obj.get("tag") or "note"),
            text=str(obj.get("text") or ""),
            author=str(obj.get("author") or ""),
            time=str(obj.get("time") or ""),
            seq=seq,
            seq_end=seq_end,
            ch=ch,
            source=obj.get("source") if isinstance(obj.get("source"), str) else None,
            extra={k: v for k, v in obj.items() if k not in known},
        )


# --- sans-I/O -------------------------------------------------------------------------------------


def utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def note_id(fields: dict[str, Any], taken: Iterable[str] = ()) -> str:
    """A short id derived from the note's content and time: stable once written, 8 hex digits
    (longer only if that would collide with an id already in the file)."""
    digest = hashlib.sha256(orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)).hexdigest()
    used = set(taken)
    for n in range(8, len(digest) + 1):
        if digest[:n] not in used:
            return digest[:n]
    return digest  # pragma: no cover - a full sha256 collision


def make_note(
    *,
    tag: str,
    text: str,
    author: str,
    seq: int | None = None,
    seq_end: int | None = None,
    ch: str | None = None,
    time: str | None = None,
    source: str | None = None,
    taken: Iterable[str] = (),
) -> Note:
    """A new note with a fresh id; checks the shape (not the capture: see `check_target`)."""
    if seq is None and ch is None:
        raise WirecapError("a note must point at a seq (--seq), a range (--seq/--to) or a channel (--ch)")
    if seq is not None and seq < 1:
        raise WirecapError(f"--seq {seq}: seqs start at 1")
    for name, value in (("--seq", seq), ("--to", seq_end)):
        if value is not None and value >= MAX_SEQ:
            raise WirecapError(f"{name} {value}: past the end of any capture")
    if seq_end is not None:
        if seq is None:
            raise WirecapError("--to needs --seq")
        if seq_end < seq:
            raise WirecapError(f"--to {seq_end} is before --seq {seq}")
        if seq_end == seq:
            seq_end = None
    tag = tag.strip()
    if not tag or any(c.isspace() for c in tag):
        raise WirecapError(f"tag {tag!r}: a tag is one word (bug, question, expected, ...)")
    when = time or utc_now()
    fields = {"seq": seq, "seq_end": seq_end, "ch": ch, "tag": tag, "text": text, "author": author,
              "time": when, "source": source}
    return Note(id=note_id(fields, taken), tag=tag, text=text, author=author, time=when, seq=seq,
                seq_end=seq_end, ch=ch, source=source)


def tombstone(nid: str, *, author: str, time: str | None = None) -> dict[str, Any]:
    return {"op": "rm", "id": nid, "author": author, "time": time or utc_now()}


def apply_lines(objs: Iterable[tuple[int, Any]], path: str = "notes") -> tuple[list[Note], list[str]]:
    """Replay sidecar lines `(lineno, obj)` in order: adds, then tombstones hiding them.

    Returns the live notes (in the order they were added) and `FILE:LINE: what` problems for lines
    that were skipped. A tombstone for an unknown id is harmless and reported.
    """
    notes: dict[str, Note] = {}
    removed: set[str] = set()
    problems: list[str] = []
    for lineno, obj in objs:
        if not isinstance(obj, dict):
            problems.append(f"{path}:{lineno}: not a JSON object")
            continue
        op = obj.get("op", "add")
        if op == "rm":
            nid = obj.get("id")
            if not isinstance(nid, str):
                problems.append(f"{path}:{lineno}: tombstone without an id")
            elif nid not in notes:
                problems.append(f"{path}:{lineno}: tombstone for unknown note {nid}")
            else:
                removed.add(nid)
                del notes[nid]
            continue
        if op != "add":
            problems.append(f"{path}:{lineno}: unknown op {op!r}")
            continue
        try:
            note = Note.from_json(obj)
        except ValueError as e:
            problems.append(f"{path}:{lineno}: {e}")
            continue
        if note.id in notes or note.id in removed:
            problems.append(f"{path}:{lineno}: duplicate note id {note.id}")
            continue
        notes[note.id] = note
    return list(notes.values()), problems


def parse_notes(data: bytes, path: str = "notes") -> tuple[list[Note], list[str]]:
    """Parse a whole sidecar (bytes); a torn last line is ignored and reported."""
    objs: list[tuple[int, Any]] = []
    problems: list[str] = []
    lines = data.split(b"\n")
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            objs.append((i, orjson.loads(line)))
        except orjson.JSONDecodeError:
            last = i == len(lines)
            problems.append(f"{path}:{i}: " + ("torn last line (ignored)" if last else "invalid JSON (skipped)"))
    notes, more = apply_lines(objs, path)
    return notes, problems + more


def check_target(note: Note, last_seq: int, channels: Iterable[str]) -> str | None:
    """Why `note` does not fit a capture whose records are 1..`last_seq` on `channels` (None if it fits)."""
    chans = set(channels)
    if note.seq is not None and note.seq > last_seq:
        return f"seq {note.seq} is past the end of the capture (last seq {last_seq})"
    if note.seq_end is not None and note.seq_end > last_seq:
        return f"seq {note.seq_end} is past the end of the capture (last seq {last_seq})"
    if note.ch is not None and note.ch not in chans:
        known = ", ".join(sorted(chans)) or "none"
        return f"unknown channel {note.ch!r} (channels: {known})"
    return None


def check_notes(notes: Iterable[Note], last_seq: int, channels: Iterable[str], path: str = "notes") -> list[str]:
    """One warning per note that points outside the capture (the note is kept, not dropped)."""
    chans = list(channels)
    out = []
    for n in notes:
        why = check_target(n, last_seq, chans)
        if why:
            out.append(f"{path}: note {n.id}: {why}")
    return out


def finding_source(finding: Any) -> str:
    """The `source` key of a note generated from a validation finding (identity for idempotency)."""
    return f"validate:{finding.rule}:{finding.seq if finding.seq is not None else '-'}:{finding.ch or '-'}"


def notes_from_findings(findings: Iterable[Any], existing: Iterable[Note], *, author: str,
                        time: str | None = None) -> list[Note]:
    """New notes for findings that no live note was made from yet (so running it twice adds nothing).
    Tag = severity, text = `RULE: message`."""
    have = {n.source for n in existing if n.source}
    taken = {n.id for n in existing}
    out: list[Note] = []
    when = time or utc_now()
    for f in findings:
        src = finding_source(f)
        if src in have:
            continue
        if f.seq is None and f.ch is None:
            continue  # a capture-wide finding has nothing to point at; the report shows it anyway
        note = make_note(tag=str(f.severity), text=f"{f.rule}: {f.message}", author=author, seq=f.seq,
                         ch=f.ch, time=when, source=src, taken=taken)
        taken.add(note.id)
        have.add(src)
        out.append(note)
    return out


def notes_by_seq(notes: Iterable[Note]) -> dict[int, list[Note]]:
    """Notes indexed by the first seq they point at (channel-only notes are left out)."""
    out: dict[int, list[Note]] = {}
    for n in notes:
        if n.seq is not None:
            out.setdefault(n.seq, []).append(n)
    return out


@dataclass
class NotesByPlace:
    """Notes placed for a listing of records (`wirecap cat`): after the record they point at, a
    channel's notes at its open record, capture-wide notes (`wide`) before everything."""

    by_seq: dict[int, list[Note]] = field(default_factory=dict)
    by_ch: dict[str, list[Note]] = field(default_factory=dict)
    wide: list[Note] = field(default_factory=list)

    @classmethod
    def of(cls, notes: Iterable[Note]) -> NotesByPlace:
        placed = cls()
        for n in notes:
            if n.seq is not None:
                placed.by_seq.setdefault(n.seq, []).append(n)
            elif n.ch is not None:
                placed.by_ch.setdefault(n.ch, []).append(n)
            else:
                placed.wide.append(n)
        return placed

    def at(self, rec: dict[str, Any]) -> list[Note]:
        """The notes to show right after `rec`."""
        seq = rec.get("seq")
        notes = self.by_seq.get(seq) if isinstance(seq, int) else None
        if rec.get("type") == "open" and rec.get("ch") in self.by_ch:
            notes = [*(notes or []), *self.by_ch[rec["ch"]]]
        return notes or []


# --- I/O ------------------------------------------------------------------------------------------


def notes_path(capture_path: str | os.PathLike[str]) -> str:
    """`CAP.notes.jsonl` beside the capture: `run.jsonl` (or `run.jsonl.gz`) -> `run.notes.jsonl`."""
    p = os.fspath(capture_path)
    if p == "-":
        raise WirecapError("notes need a capture file, not standard input")
    for suffix in _CAPTURE_SUFFIXES:
        if p.endswith(suffix) and len(p) > len(suffix):
            return p[: -len(suffix)] + ".notes.jsonl"
    return p + ".notes.jsonl"


def load_notes(capture_path: str | os.PathLike[str], *, problems: list[str] | None = None) -> list[Note]:
    """The live notes of a capture (tombstones applied); [] when there is no sidecar.

    Malformed lines are skipped; their `FILE:LINE: what` descriptions go to `problems` if given.
    """
    path = notes_path(capture_path)
    try:
        with _open_notes(path) as f:
            data = f.read()
    except FileNotFoundError:
        return []
    except OSError as e:
        raise WirecapError(f"{path}: cannot read notes: {e.strerror}") from None
    notes, probs = parse_notes(data, path)
    if problems is not None:
        problems.extend(probs)
    return notes


def notes_beside(capture_path: str) -> tuple[list[Note], list[str]]:
    """(the notes, problems) for a command that shows notes beside its own output: none for standard
    input; a sidecar that cannot be read is a problem line, not an error."""
    if capture_path == "-":
        return [], []
    problems: list[str] = []
    try:
        return load_notes(capture_path, problems=problems), problems
    except WirecapError as e:
        return [], [str(e)]


def _open_notes(path: str) -> IO[bytes]:
    """The sidecar opened by the input layer (a device or a writerless FIFO in its place is refused, not
    read forever); FileNotFoundError when there is none."""
    from wirecap.capture.inputs import open_input

    if not os.path.lexists(path):
        raise FileNotFoundError(path)
    return open_input(path)


def _all_ids(path: str) -> set[str]:
    try:
        with _open_notes(path) as f:
            data = f.read()
    except FileNotFoundError:
        return set()
    ids = set()
    for line in data.split(b"\n"):
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("id"), str):
            ids.add(obj["id"])
    return ids


def append_lines(capture_path: str | os.PathLike[str], objs: Iterable[dict[str, Any]]) -> None:
    """Append to the sidecar through the capture layer's appender (`append_records`: one `write` per
    line, `O_APPEND`, created `0600`, fsynced; a torn tail left by a crash is closed with a newline
    first so the next line stays readable)."""
    from wirecap.capture.writer import append_records

    path = notes_path(capture_path)
    try:
        append_records(path, objs)
    except OSError as e:
        raise WirecapError(f"{path}: cannot write notes: {e.strerror}") from None


def capture_extent(capture_path: str | os.PathLike[str]) -> tuple[int, list[str]]:
    """The last seq and the channels of a capture (one streaming pass)."""
    from wirecap.capture.reader import CaptureReader

    channels: dict[str, None] = {}
    with CaptureReader(capture_path) as reader:
        for rec in reader:
            ch = rec.get("ch")
            if isinstance(ch, str):
                channels.setdefault(ch, None)
        return reader.last_seq, list(channels)


def default_author() -> str:
    """`$WIRECAP_AUTHOR`, else `git config user.name`, else `$USER`, else the login name."""
    author = os.environ.get("WIRECAP_AUTHOR", "").strip()
    if author:
        return author
    try:
        out = subprocess.run(["git", "config", "user.name"], capture_output=True, text=True, timeout=5)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    user = os.environ.get("USER", "").strip()
    if user:
        return user
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no passwd entry in a container
        return "unknown"


def add_note(
    capture_path: str | os.PathLike[str],
    *,
    tag: str,
    text: str,
    seq: int | None = None,
    seq_end: int | None = None,
    ch: str | None = None,
    author: str | None = None,
    time: str | None = None,
    source: str | None = None,
    check: bool = True,
) -> Note:
    """Check the note against the capture (seq in range, channel known) and append it."""
    path = os.fspath(capture_path)
    if check:
        if not os.path.exists(path):
            raise WirecapError(f"{path}: no such file")
        last_seq, channels = capture_extent(path)
    note = make_note(tag=tag, text=text, author=author or default_author(), seq=seq, seq_end=seq_end,
                     ch=ch, time=time, source=source, taken=_all_ids(notes_path(path)))
    if check:
        why = check_target(note, last_seq, channels)
        if why:
            raise WirecapError(f"{path}: {why}")
    append_lines(path, [note.to_json()])
    return note


def add_notes(capture_path: str | os.PathLike[str], notes: Iterable[Note]) -> None:
    """Append already-made notes (one write per line)."""
    append_lines(capture_path, [n.to_json() for n in notes])


def remove_note(capture_path: str | os.PathLike[str], nid: str, *, author: str | None = None) -> Note:
    """Hide a live note by appending a tombstone; `nid` may be a unique prefix of the id."""
    live = load_notes(capture_path)
    matches = [n for n in live if n.id == nid] or [n for n in live if n.id.startswith(nid)]
    if not matches:
        raise WirecapError(f"{notes_path(capture_path)}: no note with id {nid!r}")
    if len(matches) > 1:
        ids = ", ".join(n.id for n in matches)
        raise WirecapError(f"note id {nid!r} is ambiguous ({ids}); give more of it")
    note = matches[0]
    append_lines(capture_path, [tombstone(note.id, author=author or default_author())])
    return note


NOTE_HEADERS = ["id", "points at", "tag", "text", "author", "time (UTC)"]


def note_cells(n: Note) -> list[str]:
    """A note as the NOTE_HEADERS cells (plain text; `annotate --list` and the reports add their own markup)."""
    return [n.id, n.target(), n.tag, n.text, n.author, n.time[:19].replace("T", " ")]
