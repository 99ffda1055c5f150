"""The wire level: every message of a channel as an item, normalized with its dialect's volatile paths.

Pure: fed records one at a time (`WireBuilder.feed`), never opens a file. A channel's dialect is
told by `wirecap.dialects.detect_channel` from its first messages (the decoders' own detection), its
volatile paths by `wirecap.dialects.volatile_paths`, an analytics channel by
`wirecap.dialects.is_telemetry_channel`.
"""

from __future__ import annotations

from typing import Any

from wirecap.analysis.diff.items import (
    REDACTED,
    Item,
    ItemStream,
    canon,
    interned,
    new_item,
    stderr_multiset,
    unit_key,
)
from wirecap.analysis.idshape import EnvMask, mask_json, mask_text
from wirecap.analysis.normalize import Normalizer
from wirecap.analysis.spill import BodyStore
from wirecap.dialects import detect_channel, is_telemetry_channel, volatile_paths
from wirecap.dialects.base import DETECT_MSGS, is_stderr, url_path
from wirecap.errors import WirecapError

_WIRE_RECORDS = frozenset(("open", "msg", "response", "close"))
_END_FIELDS = ("code", "status", "exit_code", "signal")


def dialect_volatile(dialect: str | None) -> list[str]:
    """The dialect's volatile paths; none for no dialect or one this build does not know (a
    universal-event file may name any)."""
    if not dialect:
        return []
    try:
        return volatile_paths(dialect)
    except WirecapError:
        return []


def note_open(rec: dict[str, Any], env: EnvMask, skip: set[str]) -> None:
    """What a diff that masks shapes keeps of an open record, at both levels: a recorded process's cwd,
    learned into `env` (its paths are masked), and an analytics HTTP channel, added to `skip` (left
    out: its batches follow the client's flush timer, not the run)."""
    if isinstance(rec.get("cwd"), str):
        env.add("cwd", rec["cwd"])
    if is_telemetry_channel(rec):
        skip.add(rec["ch"])


def _is_line(it: Item) -> bool:
    return it.kind == "msg"


class WireBuilder:
    """Per channel: each message (and HTTP status / exit code), normalized with the dialect's volatile paths."""

    DETECT_AFTER = DETECT_MSGS  # as many first messages as the decoders' detection reads

    def __init__(self, ignore: tuple[str, ...], keep: tuple[str, ...], *, only: str | None = None,
                 shapes: bool = True, store: BodyStore | None = None) -> None:
        self.ignore = ignore
        self.store = store  # where long bodies go (None: kept in the items)
        self._sigs: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # one tuple per distinct signature
        self.env: EnvMask | None = EnvMask() if shapes else None  # this side's cwd/HOME/TMPDIR, learned
        self.keep = keep
        self.only = only
        self.streams: dict[str, ItemStream] = {}
        self._opens: dict[str, dict[str, Any]] = {}
        self._pending: dict[str, list[dict[str, Any]]] = {}  # records held until the channel's dialect is told
        self._norm: dict[str, Normalizer] = {}
        self._counts: dict[tuple[str, str], int] = {}
        self._norm_cache: dict[str | None, Normalizer] = {}
        self._skip: set[str] = set()

    def _normalizer(self, dialect: str | None) -> Normalizer:
        n = self._norm_cache.get(dialect)
        if n is None:
            n = self._norm_cache[dialect] = Normalizer((*dialect_volatile(dialect), *self.ignore), self.keep)
        return n

    def feed(self, rec: dict[str, Any]) -> None:
        ch = rec.get("ch")
        rtype = rec.get("type")
        if not isinstance(ch, str) or rtype not in _WIRE_RECORDS:
            return
        if self.only is not None and ch != self.only and unit_key(ch) != self.only:
            return
        if rtype == "open":
            self._open(ch, rec)
        if ch in self._skip:
            return
        u = self.streams.get(ch)
        if u is None:
            u = self.streams[ch] = ItemStream(ch, *self._kind_group(ch))
            self._pending[ch] = []
        t = rec.get("t")
        if isinstance(t, (int, float)):
            if u.t_first is None:
                u.t_first = t
            u.t_last = t
        if rtype == "open":
            return
        pend = self._pending.get(ch)
        if pend is None:
            self._add(u, rec)
            return
        pend.append(rec)
        if rtype == "close" or sum(1 for r in pend if r.get("type") == "msg") >= self.DETECT_AFTER:
            self._detect(u)

    def _open(self, ch: str, rec: dict[str, Any]) -> None:
        """An open record: kept (kind, URL), and noted (`note_open`) when shapes are masked."""
        self._opens[ch] = rec
        if self.env is not None:
            note_open(rec, self.env, self._skip)

    def _kind_group(self, ch: str) -> tuple[str, None, tuple[Any, ...]]:
        """A new channel's kind, (dialect: told later) and pairing group."""
        o = self._opens.get(ch, {})
        kind = o.get("kind") or ("pipe" if unit_key(ch) != ch else "?")
        group: tuple[Any, ...] = (kind,)
        if kind == "pipe":
            group = (kind, o.get("stream") or ch.split("-")[0])
        elif kind == "http":  # (an id in the path, `/agent-runs/run_<id>/steps`, is not the endpoint)
            upath = url_path(o)
            group = (kind, o.get("method"), mask_text(upath) if self.env is not None and upath else upath)
        elif kind == "ws":
            group = (kind, url_path(o))
        return kind, None, group

    def _detect(self, u: ItemStream) -> None:
        pend = self._pending.pop(u.key, [])
        o = self._opens.get(u.key)
        if o is not None and o.get("kind") == "pipe" and isinstance(o.get("proc"), str):
            proc_open = self._opens.get(o["proc"])
            o = {**(proc_open or {}), **{k: v for k, v in o.items() if k == "dialect"}} if proc_open else o
        u.dialect = detect_channel(o, [r for r in pend if r.get("type") == "msg"])[0]
        u.group = (*u.group, u.dialect)
        self._norm[u.key] = self._normalizer(u.dialect)
        for r in pend:
            self._add(u, r)

    def _add(self, u: ItemStream, rec: dict[str, Any]) -> None:
        rtype = rec["type"]
        if rtype == "msg":
            kind = "msg"
            body, sig = self._message(u, rec)
        elif rtype == "response":
            kind = "response"
            sig, body = (kind,), canon({"status": rec.get("status")})
        else:
            kind = "close"
            sig, body = (kind,), canon({k: rec[k] for k in _END_FIELDS if k in rec})
        n = self._counts.get((u.key, kind), 0)
        self._counts[(u.key, kind)] = n + 1
        u.items.append(new_item(kind, n, interned(self._sigs, sig), body, (rec.get("seq", 0),), u.key,
                                float(rec.get("t") or 0.0), self.store))

    def _message(self, u: ItemStream, rec: dict[str, Any]) -> tuple[bytes, tuple[Any, ...]]:
        """A message's canonical body `[dir, sse event, normalized payload]` and its signature."""
        norm = self._norm[u.key]
        sse = rec.get("sse") or {}
        ev = sse.get("event") if isinstance(sse, dict) else None
        if "json" in rec:
            payload = norm(rec["json"], fingerprints=False)
            body = canon([rec.get("dir"), ev, payload])
            if body.find(REDACTED) >= 0:  # placeholders: compared without their fingerprints
                payload = norm(rec["json"])
                body = canon([rec.get("dir"), ev, payload])
        else:
            payload = rec["text"] if "text" in rec else {"b64": rec.get("b64")}
            body = canon([rec.get("dir"), ev, payload])
        typ = payload.get("type") if isinstance(payload, dict) else None
        if self.env is not None:
            body = mask_json(body, self.env)
        return body, (rec.get("dir"), ev, typ if isinstance(typ, str) else None, *_shape(payload))

    def finish(self) -> dict[str, ItemStream]:
        for key in list(self._pending):
            self._detect(self.streams[key])
        for u in self.streams.values():
            if u.kind == "pipe" and is_stderr(u.key):  # a multiset of lines
                u.items = stderr_multiset(u.items, _is_line, lines_first=True)
        return self.streams


def _shape(payload: Any) -> tuple[Any, ...]:
    """A little more signature for wire messages: subtype and content-block types (Anthropic/Claude shapes),
    so an assistant text line does not pair with an assistant tool_use line."""
    if not isinstance(payload, dict):
        return ()
    msg = payload.get("message")
    content = msg.get("content") if isinstance(msg, dict) else payload.get("content")
    blocks = tuple(b.get("type") for b in content if isinstance(b, dict)) if isinstance(content, list) else ()
    sub = payload.get("subtype")
    return (sub if isinstance(sub, str) else None, blocks)
