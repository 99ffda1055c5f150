"""Transport truth: which transport each LLM call of a capture used, and whether the client fell back.

Codex talks to the Responses API over a WebSocket by default and falls back to HTTP + SSE when the
WebSocket fails (a refused upgrade, a stream that broke). Both look like success from the agent's
stdout; only the wire tells them apart. Pure, over universal events (a sink of the decode pass,
`wirecap.analysis.pipeline`):

- `Call`: one LLM call of a network unit (a `turn.started` ... `turn.ended` of an HTTP exchange or of a
  WebSocket, which carries one per `response.create`): its transport (the unit's `kind`), model,
  response id, ttft and duration, tokens, tool calls and how it ended (`completed`, `failed`, `cut`);
- `CallTracker`: the calls of one unit, from its events in order (what `stats` lists per call);
- `TransportCheck`: every network unit's calls, the refused WebSocket upgrades, the client's own
  fallback notice (Codex prints an `error` item "Falling back from WebSockets to HTTPS transport. ...")
  and the rule `ws-fallback`: an HTTP LLM call after a WebSocket attempt failed, with the reason the
  client gave (else what the wire shows: the refused upgrade's status, the failed response's error,
  the close).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from wirecap.dialects import DIALECTS, Decoding, Unit, unit_open
from wirecap.dialects.base import WARNING, Finding, url_path
from wirecap.events import (
    ERROR,
    ITEM_COMPLETED,
    ITEM_DELTA,
    ITEM_STARTED,
    MESSAGE,
    REASONING,
    STATUS,
    TOOL_CALL,
    TURN_ENDED,
    TURN_STARTED,
    USAGE,
    Event,
)

FALLBACK_RULE = "ws-fallback"
# What a client says when its WebSocket fails: Codex's stdout error item ("Falling back from WebSockets to
# HTTPS transport. <why>") and its stderr log line when the upgrade itself fails ("... ERROR
# codex_api::endpoint::responses_websocket: failed to connect to Responses WebSocket ...").
FALLBACK_NOTICES = ("Falling back from WebSockets", "responses_websocket: failed")
_LOG_TIME = re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+Z\s+")
NETWORK = frozenset(("ws", "http"))
_OUTPUT = frozenset((ITEM_STARTED, ITEM_DELTA, ITEM_COMPLETED))
_OUTPUT_ITEMS = frozenset((MESSAGE, REASONING, TOOL_CALL))


_UNSEEN: Any = object()


def _n(v: Any) -> int | float:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


@dataclass
class Call:
    """One LLM call as the wire shows it."""

    ch: str
    transport: str
    n: int  # 1-based, per unit
    seq: int
    t: float
    model: str | None = None
    prewarm: bool = False
    response_id: str | None = None
    first_output_t: float | None = None
    end_t: float | None = None
    input_tokens: int | float | None = None  # None: no usage on the wire for this call
    output_tokens: int | float | None = None
    tools: Counter[str] = field(default_factory=Counter)
    outcome: str = "open"  # completed | failed | cut (no terminal event) | open (the capture ended first)
    reason: str | None = None
    # the parts of input_tokens (the report's thread and its pictures; not in to_json: `stats` stays as it was)
    fresh_input_tokens: int | float | None = None  # input not read from a cache
    cache_read_tokens: int | float | None = None
    cache_write_tokens: int | float | None = None
    cost_usd: int | float | None = None  # when the wire prices the call
    stop_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "ch": self.ch, "transport": self.transport, "call": self.n, "seq": self.seq, "model": self.model,
            "prewarm": self.prewarm, "response_id": self.response_id,
            "ttft": None if self.first_output_t is None else round(max(self.first_output_t - self.t, 0.0), 6),
            "duration": None if self.end_t is None else round(max(self.end_t - self.t, 0.0), 6),
            "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
            "tool_calls": dict(sorted(self.tools.items())), "outcome": self.outcome, "reason": self.reason,
        }


class CallTracker:
    """The LLM calls of one network unit, from its events in order."""

    def __init__(self, ch: str, transport: str, path: str = "") -> None:
        self.ch = ch
        self.transport = transport
        self.path = path  # the URL path of the unit (a fallback lands on the same path over HTTP)
        self.calls: list[Call] = []
        self.current: Call | None = None

    def add(self, ev: Event) -> None:
        kind = ev.kind
        if kind == TURN_STARTED:
            self.current = Call(ev.ch, self.transport, len(self.calls) + 1, ev.seq[0] if ev.seq else 0, ev.t,
                                model=ev.data.get("model"), prewarm=ev.data.get("prewarm") is True)
            self.calls.append(self.current)
            return
        call = self.current
        if call is None:
            return
        if kind in _OUTPUT:
            self._output(call, ev)
        elif kind == USAGE and ev.data.get("scope", "message") == "message":
            self._usage(call, ev.data)
        elif kind == ERROR and ev.data.get("failed_call"):
            call.outcome, call.reason = "failed", _text(ev.data.get("message")) or _text(ev.data.get("code"))
            if isinstance(ev.data.get("message_id"), str):
                call.response_id = ev.data["message_id"]
        elif kind == TURN_ENDED:
            self._end(call, ev)

    @staticmethod
    def _output(call: Call, ev: Event) -> None:
        if call.first_output_t is None and ev.item in _OUTPUT_ITEMS and ev.role in ("assistant", None):
            call.first_output_t = ev.t
        if ev.kind == ITEM_COMPLETED and ev.item == TOOL_CALL:
            call.tools[str(ev.data.get("name"))] += 1

    @staticmethod
    def _usage(call: Call, d: dict[str, Any]) -> None:
        """A usage event holds the latest figures of the fields it has: Anthropic splits a message's usage
        into message_start (input, cache) and message_delta (output only), which must not zero the input."""
        if any(k in d for k in ("input_tokens", "cache_read_tokens", "cache_creation_tokens")):
            call.input_tokens = (_n(d.get("input_tokens")) + _n(d.get("cache_read_tokens"))
                                 + _n(d.get("cache_creation_tokens")))
            call.fresh_input_tokens = _n(d.get("input_tokens"))
            call.cache_read_tokens = _n(d.get("cache_read_tokens"))
            call.cache_write_tokens = _n(d.get("cache_creation_tokens"))
        if isinstance(d.get("cost_usd"), (int, float)) and not isinstance(d.get("cost_usd"), bool):
            call.cost_usd = d["cost_usd"]
        if "output_tokens" in d:
            call.output_tokens = _n(d.get("output_tokens"))
        if isinstance(d.get("message_id"), str):
            call.response_id = d["message_id"]
        if d.get("model") and not call.model:
            call.model = str(d["model"])

    def _end(self, call: Call, ev: Event) -> None:
        call.end_t = ev.t
        call.stop_reason = _text(ev.data.get("stop_reason"))
        if ev.data.get("truncated"):
            call.outcome = "cut"
        elif ev.data.get("is_error"):
            call.outcome = "failed"
            call.reason = call.reason or _text(ev.data.get("stop_reason"))
        elif call.outcome == "open":
            call.outcome = "completed"
        self.current = None


def _text(v: Any) -> str | None:
    return None if v is None else str(v)


@dataclass
class _Attempt:
    """A WebSocket attempt that failed: where, and what the wire says about it."""

    seq: int
    ch: str
    reason: str
    path: str = ""


class TransportCheck:
    """A sink of the decode pass: the calls of every network unit, and the `ws-fallback` rule."""

    def __init__(self, decoding: Decoding) -> None:
        self.decoding = decoding
        self.trackers: dict[str, CallTracker] = {}
        self.failed_ws: list[_Attempt] = []  # refused upgrades and WebSocket calls that failed or were cut
        self.notices: list[tuple[int, str]] = []  # (seq, text) of the client's own fallback notices
        self.ws_used = False  # a WebSocket LLM unit, or a refused upgrade: transport is a question here
        self._fallback: tuple[Call, _Attempt | None] | None = None
        self._closing: str | None = None  # what the close record being decoded says (a call it cuts)
        self._of: dict[str, CallTracker | None] = {}  # channel -> its unit's calls (None: not an LLM unit)

    def _tracker(self, ev: Event) -> CallTracker | None:
        """The calls of the network LLM unit the event belongs to (None for any other unit); kept
        per channel after its first event (a unit's dialect is decided before it has events)."""
        unit = self.decoding.chan_unit.get(ev.ch) or self.decoding.units.get(ev.ch)
        tr = None
        if unit is not None and unit.kind in NETWORK and unit.dialect and DIALECTS[unit.dialect].llm_calls:
            tr = self.trackers.get(unit.key)
            if tr is None:
                tr = self.trackers[unit.key] = CallTracker(unit.key, str(unit.kind), url_path(unit_open(unit.opens)))
                self.ws_used = self.ws_used or unit.kind == "ws"
        self._of[ev.ch] = tr
        return tr

    def on_record(self, rec: dict[str, Any], events: list[Event]) -> None:
        if not events:
            return
        if self._of.get(rec.get("ch") or "", _UNSEEN) is None:  # a channel of no LLM unit: only its errors and
            for ev in events:  # status lines can matter (a client's notice, a refused upgrade's body)
                if ev.kind == ERROR or ev.kind == ITEM_COMPLETED:
                    self.add(ev)
            return
        self._closing = _close_text(rec) if rec.get("type") == "close" else None
        for ev in events:
            self.add(ev)

    def on_unit_end(self, unit: Unit, events: list[Event]) -> None:
        for ev in events:
            self.add(ev)

    def _refusal(self, ev: Event) -> bool:
        """A refused upgrade (openai-responses-sse's error event with `transport: ws`, then the status
        item with what the body said): a failed WebSocket attempt."""
        if ev.kind == ERROR and ev.data.get("transport") == "ws":
            self.ws_used = True
            unit = self.decoding.chan_unit.get(ev.ch)
            path = url_path(unit_open(unit.opens)) if unit is not None else ""
            self.failed_ws.append(_Attempt(ev.seq[0] if ev.seq else 0, ev.ch, _text(ev.data.get("message")) or "refused",
                                           path))
            return True
        if ev.kind == ITEM_COMPLETED and ev.data.get("subtype") == "ws-upgrade-refused" and self.failed_ws:
            self.failed_ws[-1].reason = _text(ev.data.get("text")) or self.failed_ws[-1].reason  # the body says why
            return True
        return False

    def add(self, ev: Event) -> None:
        kind = ev.kind
        tr = self._of.get(ev.ch, _UNSEEN)
        if tr is _UNSEEN:
            tr = self._tracker(ev)
        if kind == ITEM_DELTA:  # the hot path: a delta only matters as a call's first output
            call = tr.current if tr is not None else None
            if call is not None and call.first_output_t is None:
                tr.add(ev)
            return
        if kind in (ERROR, ITEM_COMPLETED) and self._refusal(ev):
            return
        if tr is None:
            self._notice(ev)
            return
        tr.add(ev)
        if kind == TURN_STARTED and tr.transport == "http" and self._fallback is None:
            self._fell_back(tr)
        elif kind == TURN_ENDED and tr.transport == "ws":
            self._ws_call_ended(tr.calls[-1] if tr.calls else None)

    def _fell_back(self, tr: CallTracker) -> None:
        """An HTTP call to the path of a WebSocket attempt that failed before it: the fallback."""
        attempt = next((a for a in reversed(self.failed_ws) if not a.path or not tr.path or a.path == tr.path), None)
        if attempt is not None:
            self._fallback = (tr.calls[-1], attempt)

    def _notice(self, ev: Event) -> None:
        """A client's own words about its WebSocket failing (an error event, or a status line of its
        stderr), kept with their seq (a log line without its time)."""
        if ev.kind == ERROR:
            text = ev.data.get("message")
        elif ev.kind == ITEM_COMPLETED and ev.item == STATUS:
            text = ev.data.get("text")
        else:
            return
        if isinstance(text, str) and any(n in text for n in FALLBACK_NOTICES):
            self.notices.append((ev.seq[0] if ev.seq else 0, _LOG_TIME.sub("", text)))

    def _ws_call_ended(self, call: Call | None) -> None:
        """A WebSocket call that failed or was cut is a failed attempt (a fallback may follow)."""
        if call is None or call.outcome not in ("failed", "cut"):
            return
        if call.outcome == "cut" and call.reason is None:
            call.reason = self._closing or "no terminal event before the next response.create or the end"
        self._failed(call)

    def _failed(self, call: Call) -> None:
        what = "was cut" if call.outcome == "cut" else "failed"
        self.failed_ws.append(_Attempt(call.seq, call.ch, f"call {call.n} on {call.ch} {what}: "
                                       f"{call.reason or 'no reason on the wire'}", self._path_of(call.ch)))

    def _path_of(self, ch: str) -> str:
        tr = self.trackers.get(ch)
        return tr.path if tr is not None else ""

    # --- results ---------------------------------------------------------------------------------------
    def calls(self) -> list[Call]:
        """Every LLM call of the capture's network units, in the order they started."""
        return sorted((c for tr in self.trackers.values() for c in tr.calls), key=lambda c: c.seq)

    def fallback(self) -> dict[str, Any] | None:
        """The first fall back from WebSocket to HTTP: the HTTP call, the failed attempt before it, and
        the reason (the client's own notice when it printed one before that call, else the wire's)."""
        if self._fallback is None:
            return None
        call, attempt = self._fallback
        notice = next((text for seq, text in reversed(self.notices) if seq <= call.seq), None)
        wire = attempt.reason if attempt is not None else None
        return {"ch": call.ch, "seq": call.seq, "after_ch": attempt.ch if attempt else None,
                "after_seq": attempt.seq if attempt else None, "reason": notice or wire,
                "reason_from": "client" if notice else "wire", "wire": wire}

    def by_transport(self) -> dict[str, int]:
        out: Counter[str] = Counter(c.transport for c in self.calls())
        return dict(sorted(out.items()))

    def findings(self) -> list[Finding]:
        fb = self.fallback()
        if fb is None:
            return []
        return [Finding(WARNING, FALLBACK_RULE, f"fell back from WebSocket to HTTP after {fb['after_ch']} "
                        f"(seq {fb['after_seq']}); {_why(fb)}"[:320], fb["seq"], fb["ch"])]

    def summary(self) -> dict[str, Any]:
        """What `info` and `report` print: calls per transport, and the fallback (None when none)."""
        return {"llm_calls": self.by_transport(), "fallback": self.fallback()}

    def shown(self) -> dict[str, Any] | None:
        """What `info` and `report` show: the summary with every call (`Call.to_json()`), or None when no
        client used or tried a WebSocket for its LLM calls (then there is no transport to tell apart)."""
        if not self.ws_used:
            return None
        return {**self.summary(), "calls": [c.to_json() for c in self.calls()]}


def _why(fb: dict[str, Any]) -> str:
    """The reason of a fallback in words: the client's, and the wire's when it adds to it."""
    if fb.get("reason_from") != "client":
        return f"the wire shows: {fb.get('reason')}"
    wire = fb.get("wire")
    return f"the client said: {fb.get('reason')}" + (f" (the wire: {wire})" if wire else "")


def _close_text(rec: dict[str, Any]) -> str:
    code, by, reason = rec.get("code"), rec.get("by"), rec.get("reason")
    return f"socket closed {code}" + (f" by the {by}" if by else "") + (f": {reason}" if reason else "")


def describe_transport(t: dict[str, Any]) -> list[str]:
    """A transport summary (`TransportCheck.summary()` with its `calls`) in words, one line each: the
    LLM calls per transport with their channels, and the fallback (or that there was none)."""
    by = t.get("llm_calls") or {}
    chans: dict[str, list[str]] = {}
    for c in t.get("calls") or []:
        seen = chans.setdefault(str(c.get("transport")), [])
        if str(c.get("ch")) not in seen:
            seen.append(str(c.get("ch")))
    calls = ", ".join(f"{n} over {tr} ({', '.join(chans.get(tr, []))})" for tr, n in by.items()) or "none"
    out = [f"LLM calls: {calls}"]
    fb = t.get("fallback")
    if fb:
        out.append(f"fell back from WebSocket to HTTP at {fb.get('ch')} (seq {fb.get('seq')}) after {fb.get('after_ch')} "
                   f"(seq {fb.get('after_seq')}); {_why(fb)}")
    else:
        out.append("no fallback from WebSocket to HTTP")
    return out


def transport_records(records: Any) -> TransportCheck:
    """The transport check of a record stream (header excluded), after one decode pass."""
    from wirecap.analysis.pipeline import run_pass

    decoding = Decoding()
    check = TransportCheck(decoding)
    run_pass(records, decoding, [check])
    return check


def transport_capture(path: str) -> dict[str, Any] | None:
    """The transport summary of the capture at `path` (with its calls), as `info` and `report` show it;
    None when no client used or tried a WebSocket for its LLM calls."""
    from wirecap.capture.reader import CaptureReader

    with CaptureReader(path) as reader:
        return transport_records(reader).shown()


def capture_calls(path: str) -> list[dict[str, Any]]:
    """Every LLM call on the wire of the capture at `path` (`Call.to_json()`, in the order they started),
    whatever the transport: what `wirecap stats --calls` lists."""
    from wirecap.capture.reader import CaptureReader

    with CaptureReader(path) as reader:
        check = transport_records(reader)
    return [c.to_json() for c in check.calls()]
