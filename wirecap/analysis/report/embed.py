"""Which records an HTML report embeds, so the page stays bounded whatever the capture's size.

A page that embedded every record was as big as its capture (a 200 MB capture, a 215 MB page). The
page now embeds records within a byte budget: the first ones (the start of a session), the last ones
(how it ended: errors, the result), and in between the records the page links to (findings, notes,
conversation entries), each record cut past `cut` bytes to a preview that says how big it was and how to
see it whole (`wirecap cat CAP --seq N --json`). What is left out is one `Gap` per run of skipped
records, which the page shows as a row saying how many and how to list them. Pure: records in, the
records to embed (already serialized) and the gaps out, in seq order, holding at most the tail's budget.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from wirecap.capture.payload import payload_text

CUT = 2_000  # bytes of one embedded record's JSON; past it the payload becomes a preview
LINKED_CUT = 1_000  # the same for a linked record between the head and the tail
HEAD_SHARE = 0.6  # of the budget: the first records
TAIL_SHARE = 0.25  # the last records; the rest is for linked records in between
INDEX_COST = 160  # about what one record costs the page's index besides its data line
_KEEP_KEYS = ("seq", "t", "type", "ch", "dir", "kind", "url", "method", "status", "code", "reason", "by",
              "exit_code", "signal")


@dataclass
class Kept:
    """A record to embed: itself (or its cut form) and its JSON line."""

    rec: dict[str, Any]
    line: bytes
    cut: bool = False


@dataclass
class Gap:
    """Records left out of the page: seqs `first` to `last`, `count` of them."""

    first: int
    last: int
    count: int


def cat_command(path: str) -> str:
    """`wirecap cat` on the capture read from `path` (standard input's is named CAP: it is gone)."""
    return f"wirecap cat {path if path != '-' else 'CAP'}"


def see_whole(path: str, seq: object) -> str:
    """The command that prints a record whole."""
    return f"{cat_command(path)} --seq {seq} --json"


def cut_record(rec: dict[str, Any], line: bytes, limit: int, path: str) -> Kept:
    """`rec` as the page embeds it: itself, or past `limit` bytes of JSON (`line`) its small fields and a
    preview of its payload (or of the record) saying how many bytes it has and how to see it whole."""
    if len(line) <= limit:
        return Kept(rec, line)
    out: dict[str, Any] = {k: rec[k] for k in _KEEP_KEYS if k in rec and not isinstance(rec[k], (dict, list))}
    text = payload_text(rec) if rec.get("type") == "msg" else line.decode("utf-8", "replace")
    keep = max(0, limit // 2)
    out["text"] = text[:keep] + f"… (cut: the record is {len(line):,} bytes)"
    out["cut"] = {"bytes": len(line), "see": see_whole(path, rec.get("seq"))}
    return Kept(out, orjson.dumps(out), cut=True)


class Selection:
    """The records to embed, chosen as they stream past (see the module's docstring)."""

    def __init__(self, budget: int, path: str, *, linked: Iterable[int] = (), cut: int = CUT,
                 linked_cut: int = LINKED_CUT) -> None:
        self.path = path
        self.linked = set(linked)
        self.cut = cut
        self.linked_cut = linked_cut
        self.head_left = int(budget * HEAD_SHARE)
        self.tail_budget = int(budget * TAIL_SHARE)
        self.linked_left = budget - self.head_left - self.tail_budget
        self.skipped = 0
        self.shown: Callable[[dict[str, Any], bytes], dict[str, Any]] | None = None

    def select(self, records: Iterable[tuple[dict[str, Any], bytes]],
               shown: Callable[[dict[str, Any], bytes], dict[str, Any]] | None = None) -> Iterator[Kept | Gap]:
        """The records to embed and the gaps between them, in order. `records`: each with its JSON line (as
        in the capture); `shown(rec, line)` makes a record fit to be shown (redacted): only the kept ones are."""
        self.shown = shown
        it = iter(records)
        for rec, line in it:
            kept = self._keep(rec, line, self.cut)
            self.head_left -= len(kept.line) + INDEX_COST
            yield kept
            if self.head_left <= 0:
                break
        yield from self._after_head(it)

    def _keep(self, rec: dict[str, Any], line: bytes, limit: int) -> Kept:
        if self.shown is not None:
            rec = self.shown(rec, line)
        return cut_record(rec, orjson.dumps(rec), limit, self.path)

    def _after_head(self, records: Iterator[tuple[dict[str, Any], bytes]]) -> Iterator[Kept | Gap]:
        """Past the head: a window of the last records; a record leaving it is kept when linked (and
        the budget for those allows), else counted into the gap (and never serialized or redacted)."""
        tail: deque[tuple[dict[str, Any], bytes, int]] = deque()
        size = 0
        gap: Gap | None = None
        for rec, line in records:
            n = min(len(line), self.cut) + INDEX_COST  # (cut records cost about `cut`)
            tail.append((rec, line, n))
            size += n
            while size > self.tail_budget and len(tail) > 1:
                old, old_line, m = tail.popleft()
                size -= m
                if self._linked(old):
                    if gap is not None:
                        yield gap
                        gap = None
                    kept = self._keep(old, old_line, self.linked_cut)
                    self.linked_left -= len(kept.line) + INDEX_COST
                    yield kept
                else:
                    gap = self._skip(gap, old, old_line)
        if gap is not None:
            yield gap
        for rec, line, _ in tail:
            yield self._keep(rec, line, self.cut)

    def _linked(self, rec: dict[str, Any]) -> bool:
        return self.linked_left > 0 and rec.get("seq") in self.linked

    def _skip(self, gap: Gap | None, rec: dict[str, Any], line: bytes) -> Gap:
        self.skipped += 1
        if self.shown is not None and ("headers" in rec or "response_headers" in rec):
            self.shown(rec, line)  # (not shown, but a secret header teaches the redactor its value for later)
        seq = rec.get("seq")
        s = seq if isinstance(seq, int) else 0
        if gap is None:
            return Gap(s, s, 1)
        gap.last = s
        gap.count += 1
        return gap
