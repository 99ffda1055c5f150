"""Dialects: decode each channel of a capture into universal events (sans-I/O).

One module per dialect, registered in `DIALECTS`. The driver here groups records into **units**
(a WebSocket or HTTP channel; a process together with its stdout/stdin/stderr pipes), detects each
unit's dialect from what the capture knows (the `dialect` hint, URL path, argv, the first messages),
and feeds the unit's records to that dialect's decoder. `--dialect` overrides detection for every
unit of that dialect's transport. A unit nobody recognizes is still decoded: each of its messages
becomes an `unparsed` event whose reason says why detection failed. Nothing is dropped.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from wirecap.dialects import (
    anthropic_sse,
    claude_code,
    codebuddy,
    codebuff_events,
    codebuff_rest,
    codebuff_ws,
    codex_exec,
    openai_chat_sse,
    openai_responses_sse,
    opencode,
)
from wirecap.dialects.base import DEFAULT_OPTIONS, INFO, Decoder, Dialect, Finding
from wirecap.errors import WirecapError
from wirecap.events import Event

DIALECTS: dict[str, Dialect] = {
    m.DIALECT.name: m.DIALECT
    for m in (
        codebuff_ws,
        codebuff_events,
        claude_code,
        codebuddy,
        codex_exec,
        opencode,
        anthropic_sse,
        openai_chat_sse,
        openai_responses_sse,
        codebuff_rest,
    )
}

_TRANSPORT_OF_KIND = {"ws": "ws", "http": "http", "process": "pipe", "pipe": "pipe"}
_DETECT_MSGS = 5  # messages looked at before a unit is declared unknown

# Program names (argv) -> dialect. Matched against argv[0] and, for interpreters, the script.
_PROGRAMS = {
    "claude": "claude-code",
    "claude-code": "claude-code",
    "codebuddy": "codebuddy",
    "codebuddy-code": "codebuddy",
    "codex": "codex-exec",
    "opencode": "opencode",
    "opencode-ai": "opencode",
    "codebuff": "codebuff-events",
}
_INTERPRETERS = ("node", "nodejs", "npx", "bun", "bunx", "deno", "python", "python3", "env", "pnpm", "yarn")

_CODEX_TYPES = frozenset(("thread.started", "turn.started", "turn.completed", "turn.failed", "item.started",
                          "item.updated", "item.completed"))
_OPENCODE_TYPES = frozenset(("step_start", "step_finish", "text", "tool_use", "reasoning", "error"))
_CODEBUFF_EVENT_TYPES = frozenset(("start", "text", "tool_call", "tool_result", "subagent_start", "subagent_finish",
                                   "reasoning_delta", "error", "finish", "download"))
_CLAUDE_TYPES = frozenset(("system", "assistant", "user", "result", "stream_event", "control_request",
                           "control_response", "control_cancel_request", "keep_alive"))
_CB_WS_ENVELOPES = frozenset(("action", "ack", "identify", "subscribe", "unsubscribe", "ping", "pong"))


def dialect_names() -> list[str]:
    return list(DIALECTS)


def get_dialect(name: str) -> Dialect:
    try:
        return DIALECTS[name]
    except KeyError:
        raise WirecapError(f"unknown dialect {name!r} (known: {', '.join(DIALECTS)})") from None


def volatile_paths(dialect: str | None) -> list[str]:
    """Paths (normalize syntax) of fields in this dialect's messages that change run to run."""
    if dialect is None:
        return []
    return list(get_dialect(dialect).volatile)


# --- detection ---------------------------------------------------------------------------------------
def _program(argv: Any) -> str | None:
    if not isinstance(argv, list) or not argv:
        return None
    words = [a for a in argv[:4] if isinstance(a, str)]
    for i, word in enumerate(words):
        parts = [p for p in word.replace("\\", "/").split("/") if p]
        if not parts:
            continue
        base = parts[-1]
        for ext in (".js", ".cjs", ".mjs", ".exe", ".cmd", ".sh"):
            if base.endswith(ext):
                base = base[: -len(ext)]
        if base in _PROGRAMS:
            return _PROGRAMS[base]
        for p in reversed(parts[:-1]):  # .../node_modules/@anthropic-ai/claude-code/cli.js
            if p in _PROGRAMS:
                return _PROGRAMS[p]
        if i == 0 and base.rstrip("0123456789.") not in _INTERPRETERS:
            return None
        if i > 0 and not word.startswith("-"):
            return None  # the interpreter's script is not one we know
    return None


def _from_message(obj: Any, rec: dict[str, Any]) -> tuple[str | None, str]:
    if rec.get("sse") is not None or (rec.get("dir") == "s2c" and rec.get("text") == "[DONE]"):
        ev = (rec.get("sse") or {}).get("event") or (obj.get("type") if isinstance(obj, dict) else None)
        if isinstance(ev, str):
            if ev.startswith(("message_", "content_block_")):
                return "anthropic-sse", f"SSE event {ev!r}"
            if ev.startswith("response."):
                return "openai-responses-sse", f"SSE event {ev!r}"
        if isinstance(obj, dict) and obj.get("object") == "chat.completion.chunk":
            return "openai-chat-sse", "SSE data with object chat.completion.chunk"
        if rec.get("text") == "[DONE]":
            return "openai-chat-sse", "SSE data [DONE]"
        return None, f"SSE event {ev!r} of no known API"
    if not isinstance(obj, dict):
        return None, "first message is not a JSON object"
    t = obj.get("type")
    if "kind" in obj and obj.get("kind") in ("event", "chunk", "result") and "type" not in obj:
        return "codebuff-events", f"Codebuff SDK event wrapper kind {obj['kind']!r}"
    if t in _CB_WS_ENVELOPES and ("txid" in obj or "data" in obj):
        return "codebuff-ws", f"Codebuff WebSocket envelope {t!r}"
    if t in _CLAUDE_TYPES:
        if "__timestamp" in obj or "_requestId" in obj or obj.get("apiKeySource") == "www.codebuddy.ai":
            return "codebuddy", f"Claude-style {t!r} line with CodeBuddy fields"
        return "claude-code", f"stream-json line type {t!r}"
    if t == "file-history-snapshot":
        return "codebuddy", "CodeBuddy file-history-snapshot line"
    if t in _CODEX_TYPES:
        return "codex-exec", f"Codex exec event {t!r}"
    if t in _OPENCODE_TYPES and isinstance(obj.get("part"), dict):
        return "opencode", f"opencode event {t!r} with a part"
    if t in _CODEBUFF_EVENT_TYPES:
        return "codebuff-events", f"Codebuff print-mode event {t!r}"
    if obj.get("object") == "chat.completion":
        return "openai-chat-sse", "JSON chat.completion body"
    if obj.get("object") == "response":
        return "openai-responses-sse", "JSON Responses API body"
    if t == "message" and obj.get("role") == "assistant":
        return "anthropic-sse", "JSON Anthropic message body"
    return None, f"message type {t!r} is not one any dialect starts with"


def detect_channel(open_record: dict[str, Any] | None, first_msgs: list[dict[str, Any]]) -> tuple[str | None, str]:
    """Which dialect a channel speaks, and why (or why none could be told)."""
    why: list[str] = []
    o = open_record or {}
    hint = o.get("dialect")
    if isinstance(hint, str) and hint:
        if hint in DIALECTS:
            return hint, f"the open record names dialect {hint!r}"
        why.append(f"dialect hint {hint!r} is not a known dialect")
    kind = o.get("kind")
    for d in sorted((d for d in DIALECTS.values() if d.sniff is not None), key=lambda d: d.priority):
        if d.transport == _TRANSPORT_OF_KIND.get(kind):  # a dialect's own sniff comes first
            try:
                reason = d.sniff(open_record, first_msgs)  # type: ignore[misc]
            except Exception:  # noqa: BLE001 - a sniff must not raise; if one does, it did not answer
                reason = None
            if reason:
                return d.name, reason
    if kind in ("ws", "http"):
        url = o.get("url") if isinstance(o.get("url"), str) else ""
        try:
            path = urlsplit(url).path.rstrip("/")
        except ValueError:
            path = ""
        if kind == "ws":
            if path.endswith("/ws"):
                return "codebuff-ws", f"WebSocket at {path}"
            why.append(f"WebSocket path {path or '/'!r} is not /ws")
        else:
            if path.endswith("/v1/messages") or (path.endswith("/messages") and "/v1/" in path):
                return "anthropic-sse", f"HTTP {o.get('method', '')} {path} (Anthropic Messages)".replace("  ", " ")
            if path.endswith("/chat/completions"):
                return "openai-chat-sse", f"HTTP {path} (OpenAI Chat Completions)"
            if path.endswith("/responses"):
                return "openai-responses-sse", f"HTTP {path} (OpenAI Responses)"
            why.append(f"HTTP {o.get('method', '?')} {path or '/'} is not an LLM API path")
    elif kind == "process":
        prog = _program(o.get("argv"))
        if prog:
            return prog, f"argv {os.path.basename(str(o['argv'][0]))!r}... runs {prog}"
        argv = o.get("argv")
        why.append(f"argv {' '.join(map(str, argv[:3])) if isinstance(argv, list) else argv!r} names no known agent CLI")
    elif kind is not None:
        why.append(f"channel kind {kind!r}")
    else:
        why.append("no open record")
    seen: list[str] = []
    for rec in first_msgs:
        if rec.get("type") != "msg" or str(rec.get("ch", ""))[:6] == "stderr":
            continue
        name, reason = _from_message(rec.get("json"), rec)
        if name:
            return name, reason
        seen.append(reason)
    if seen:
        why.append("; ".join(dict.fromkeys(seen)))
    elif not first_msgs:
        why.append("no messages")
    return None, "; ".join(why)


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

    @property
    def main_open(self) -> dict[str, Any] | None:
        for o in self.opens:
            if o.get("kind") == "process":
                return o
        return self.opens[0] if self.opens else None


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
        key = ch
        if rec.get("type") == "open" and rec.get("kind") == "pipe" and isinstance(rec.get("proc"), str):
            key = rec["proc"]
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
        main = unit.main_open
        kind = main.get("kind") if main else None
        if self.forced is not None and (kind is None or _TRANSPORT_OF_KIND.get(kind) == self.forced.transport):
            return self._start(unit, self.forced.name, "--dialect")
        msgs = [r for r in unit.pending if r.get("type") == "msg"]
        name, reason = detect_channel(main, msgs)
        if name is not None:
            return self._start(unit, name, reason)
        if final or len(msgs) >= _DETECT_MSGS:
            return self._start(unit, None, reason)
        return None

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
    "DIALECTS",
    "Decoding",
    "Dialect",
    "Finding",
    "Unit",
    "decode_batches",
    "decode_capture",
    "decode_records",
    "detect_channel",
    "dialect_names",
    "get_dialect",
    "volatile_paths",
]
