"""One readable line per record, and record filters (sans-I/O, for `wirecap cat`).

The summary puts what a reader scans for first: a JSON message's `type` / `subtype` / `data.type`
(the dialects' discriminators), an SSE event name, then the payload itself, escaped so one record
is always one line (control characters, U+2028 and invalid bytes are shown, never obeyed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any

import orjson

from wirecap.analysis.inventory import close_status, endpoint_of
from wirecap.analysis.notes import Note, NotesByPlace
from wirecap.capture.payload import payload_bytes, payload_text

ARROWS: dict[Any, str] = {"c2s": "→", "s2c": "←"}  # (keyed by whatever a record's `dir` holds)
MARKS = {"open": "+", "close": "×", "response": "←", "error": "!", "end": "="}

_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029\u0085]")


def _escape(m: re.Match[str]) -> str:
    c = m.group(0)
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c, f"\\u{ord(c):04x}")


def one_line(text: str) -> str:
    """Text made safe to print on one line."""
    return _CONTROL.sub(_escape, text)


def _kinds(value: Any) -> list[str]:
    """Discriminator fields of a JSON message, outermost first: type, subtype, then the first of
    data / event / item / message / part / delta / content_block `.type`."""
    out: list[str] = []
    if not isinstance(value, dict):
        return out
    for key in ("type", "subtype"):
        v = value.get(key)
        if isinstance(v, str):
            out.append(v)
    for outer in ("data", "event", "item", "message", "part", "delta", "content_block"):
        inner = value.get(outer)
        if isinstance(inner, dict):
            v = inner.get("type")
            if isinstance(v, str):
                out.append(v)
                break
    if not out and isinstance(value.get("method"), str):  # JSON-RPC
        out.append(value["method"])
    return out


# Where streamed text usually sits, so `cat` can show it before the (cut) JSON: Anthropic deltas,
# OpenAI chat and Responses deltas, Codebuff chunks, opencode parts, Claude Code results.
_TEXT_PATHS: tuple[tuple[str | int, ...], ...] = (
    ("delta", "text"), ("delta", "partial_json"), ("delta", "thinking"), ("delta",),
    ("choices", 0, "delta", "content"), ("data", "chunk"), ("chunk",), ("part", "text"), ("text",), ("result",),
)


def _preview(value: Any, width: int = 40) -> str | None:
    for path in _TEXT_PATHS:
        v = value
        for step in path:
            if isinstance(step, int):
                v = v[step] if isinstance(v, list) and len(v) > step else None
            else:
                v = v.get(step) if isinstance(v, dict) else None
            if v is None:
                break
        if isinstance(v, str) and v:
            text = orjson.dumps(v if len(v) <= width else v[:width] + "…").decode("utf-8", "replace")
            return one_line(text)
    return None


def msg_summary(rec: dict[str, Any]) -> str:
    parts: list[str] = []
    sse = rec.get("sse")
    if isinstance(sse, dict):
        parts.append(f"sse:{sse['event']}" if sse.get("event") else "sse")
        if sse.get("no_data"):
            comments = sse.get("comment") or []
            return " ".join(parts + [": " + one_line(" ".join(comments)) if comments else "(no data)"])
    if "json" in rec:
        kinds = _kinds(rec["json"])
        if kinds and isinstance(sse, dict) and sse.get("event") == kinds[0]:
            kinds = kinds[1:]  # `sse:message_start [message]`, not the event name twice
        if kinds:
            parts.append("[" + "/".join(kinds) + "]")
        preview = _preview(rec["json"])
        if preview:
            parts.append(preview)
        body = orjson.dumps(rec["json"]).decode("utf-8")
        parts.append(one_line(body))
    elif "text" in rec:
        parts.append(one_line(orjson.dumps(rec["text"]).decode("utf-8", "replace")))
    elif "b64" in rec:
        data = payload_bytes(rec)
        label = "binary" if rec.get("binary") else "bytes (not UTF-8)"
        parts.append(f"<{len(data)} {label}> {data[:32].hex(' ')}")
    flags = rec.get("flags")
    if "truncated" in rec:
        parts.append(f"(truncated, {rec['truncated']} bytes)")
    if flags:
        parts.append("{" + ",".join(str(f) for f in flags) + "}")
    return " ".join(parts)


def summary(rec: dict[str, Any]) -> str:
    """The short description of one record (everything after the type column)."""
    rtype = rec.get("type")
    if rtype == "msg":
        return msg_summary(rec)
    if rtype == "open":
        text = f"{rec.get('kind', '?')} {endpoint_of(rec)}"
        if rec.get("dialect"):
            text += f" (dialect {rec['dialect']})"
        return one_line(text)
    if rtype == "response":
        text = f"{rec.get('status')} {rec.get('reason') or ''}".rstrip()
        ctype = (rec.get("headers") or {}).get("content-type")
        if ctype:
            text += f" {ctype}"
        if rec.get("sse"):
            text += " (event stream)"
        if rec.get("note"):
            text += f" [{rec['note']}]"
        return one_line(text)
    if rtype == "close":
        text = close_status(None, rec)
        if rec.get("reason"):
            text += f" {rec['reason']!r}"
        if isinstance(rec.get("duration"), (int, float)):
            text += f" after {rec['duration']:.3f}s"
        return one_line(text)
    if rtype == "error":
        return one_line(f"{rec.get('where') or 'recorder'}: {rec.get('message')}")
    if rtype == "end":
        return (
            f"records {rec.get('records')} bytes {rec.get('bytes')} errors {rec.get('errors')} "
            f"duration {rec.get('duration')}"
        )
    return one_line(orjson.dumps(rec).decode("utf-8", "replace"))


def record_line(rec: dict[str, Any], width: int = 0) -> str:
    """`     t   seq ch       →  msg      summary`, cut to `width` characters (0: no limit)."""
    t = rec.get("t")
    tt = f"{t:10.3f}" if isinstance(t, (int, float)) else " " * 10
    rtype = str(rec.get("type"))
    mark = ARROWS.get(rec.get("dir"), "·") if rtype == "msg" else MARKS.get(rtype, "?")
    ch = str(rec.get("ch") or "-")
    line = f"{tt} {rec.get('seq', ''):>6} {ch:<9} {mark} {rtype:<8} {summary(rec)}"
    if width and len(line) > width:
        line = line[: max(width - 1, 10)] + "…"
    return line


@dataclass
class RecordFilter:
    """Which records `cat` shows. Empty tuples mean "any"."""

    channels: tuple[str, ...] = ()
    direction: str | None = None
    types: tuple[str, ...] = ()
    grep: re.Pattern[str] | None = None
    seqs: tuple[tuple[int, int], ...] = ()  # (first, last) ranges of seqs

    @property
    def last_seq(self) -> int | None:
        """The last seq this filter can let through (None: no bound): a reader may stop past it."""
        return max(b for _, b in self.seqs) if self.seqs else None

    def __call__(self, rec: dict[str, Any]) -> bool:
        if self.seqs and not any(a <= rec.get("seq", -1) <= b for a, b in self.seqs):
            return False
        if self.channels and rec.get("ch") not in self.channels:
            return False
        if self.direction and rec.get("dir") != self.direction:
            return False
        if self.types and rec.get("type") not in self.types:
            return False
        if self.grep is not None:
            if rec.get("type") == "msg":
                text = payload_text(rec)
            else:
                text = orjson.dumps(rec).decode("utf-8", "replace")
            if not self.grep.search(text):
                return False
        return True


def note_line(note: Note) -> str:
    """A note as `cat` shows it, under the record it points at: `✎ [tag] text (seq A-B) — author`."""
    span = ""
    if note.seq is not None and note.seq_end is not None and note.seq_end != note.seq:
        span = f" (seq {note.seq}-{note.seq_end})"
    who = f" — {note.author}" if note.author else ""
    return f"{'':>17} ✎ [{note.tag}] {one_line(note.text)}{span}{who}"


def write_listing(records: Iterable[dict[str, Any]], keep: RecordFilter, notes: NotesByPlace, width: int,
                  out: IO[bytes], *, follow: bool = False) -> None:
    """The records `keep` lets through as `record_line`s cut to `width`, each followed by its notes
    (capture-wide notes first); with `follow`, flushed after each record (a capture still growing)."""
    for n in notes.wide:
        out.write((note_line(n).lstrip() + "\n").encode())
    for rec in records:
        if not keep(rec):
            continue
        out.write((record_line(rec, width) + "\n").encode("utf-8", "replace"))
        for n in notes.at(rec):
            out.write((note_line(n) + "\n").encode("utf-8", "replace"))
        if follow:
            out.flush()
