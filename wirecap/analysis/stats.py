"""Per-session numbers: duration, time to first token, messages, bytes, usage per model, calls, cost, errors.

A session is one decoding unit (a process with its pipes, a WebSocket, an HTTP exchange). The usage
mapping (docs/stats.md) follows how established harnesses count:
- prompt_tokens = input + cache read + cache creation (decoders normalize `input_tokens` to exclude
  the cache, whatever the API's own convention), completion_tokens = output, total = both;
- message-level usage counts once per message id (Claude Code repeats it on every content-block
  line, and it is only the `message_start` snapshot there); per field the largest value wins, so a
  later `message_delta` with the final output count replaces the snapshot;
- session-level usage (Claude Code's `result`: `modelUsage` per model with `costUSD`) is the
  authoritative total when present; the last one wins (it is cumulative);
- thread-level usage (Codex `turn.completed`) is the thread's running total: each turn's figure is
  the difference to the previous total; the first total of a resumed thread also holds the calls of
  earlier runs, so it is reported as `thread_usage` and not as this session's usage.
Calls are counted apart from failures: `llm_calls` are the calls that answered, `failed_calls` the
attempts that failed (an error status, an error event, a stream that ended without its terminal
event, a client's retry notice, a synthetic API-error message) and `retries` the attempts the client said it retried; the usage a failed call had reported
(a stream cut by an error event) is `failed_usage`, not part of `models_usage`; ttft comes only from
real output.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from wirecap.analysis.pipeline import UnknownChannel, run_pass, selected_units
from wirecap.analysis.transport import CallTracker
from wirecap.capture.payload import payload_size
from wirecap.dialects import DIALECTS, Decoding, Unit
from wirecap.errors import WirecapError
from wirecap.events import (
    ERROR,
    ITEM_COMPLETED,
    ITEM_DELTA,
    ITEM_STARTED,
    MESSAGE,
    REASONING,
    SESSION_STARTED,
    TOOL_CALL,
    TURN_ENDED,
    TURN_STARTED,
    USAGE,
    Event,
)

_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens")
_OUTPUT_ITEMS = frozenset((MESSAGE, REASONING, TOOL_CALL))
_OUTPUT_KINDS = frozenset((ITEM_STARTED, ITEM_DELTA, ITEM_COMPLETED))


def _n(v: Any) -> float:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


class SessionStats:
    """Accumulates one session; `add_record` (optional) and `add_event`, then `result()`."""

    def __init__(self, key: str, dialect: str | None = None, *, records_mode: bool = False) -> None:
        self.key = key
        self.dialect = dialect
        self.records_mode = records_mode
        self.session_id: str | None = None
        self.model: str | None = None
        self.first_t: float | None = None
        self.last_t: float | None = None
        self.start_t: float | None = None
        self.first_output_t: float | None = None
        self.types: Counter[str] = Counter()
        self.bytes = 0
        self.msg_usage: dict[Any, dict[str, Any]] = {}
        self.turn_usage: list[dict[str, Any]] = []
        self.thread_usage: list[dict[str, Any]] = []
        self.failed_ids: set[str] = set()
        self.failed_calls = 0
        self.retries = 0
        self.session_usage: dict[str, dict[str, Any]] = {}
        self.session_usage_seq: Any = None
        self.tool_names: dict[str, str] = {}
        self.tool_anon: Counter[str] = Counter()
        self.errors = 0
        self.credits: float | None = None
        self.cost_hint: float | None = None
        self.waiting: list[dict[str, Any]] = []
        self.timed = False  # imported streams without timestamps have t == 0 throughout
        self.calls: CallTracker | None = None  # a unit of several LLM calls (a WebSocket): each listed
        self.prewarm = False  # inside a prewarm call (Responses `generate: false`): its output is not the client's

    def count_waiting(self, decoder: Any) -> None:
        for rec in self.waiting:
            self.types[decoder.msg_type(rec)] += 1
        self.waiting = []

    def _time(self, t: Any) -> None:
        if not isinstance(t, (int, float)):
            return
        if self.first_t is None:
            self.first_t = t
        if self.start_t is None:
            self.start_t = t
        if self.last_t is None or t > self.last_t:
            self.last_t = t
        if t:
            self.timed = True

    def add_record(self, rec: dict[str, Any], msg_type: str | None) -> None:
        self._time(rec.get("t"))
        if rec.get("type") != "msg":
            return
        if msg_type is not None:
            self.types[msg_type] += 1
        self.bytes += payload_size(rec)
        if rec.get("dir") == "c2s" and self.first_output_t is None:
            self.start_t = rec.get("t", self.start_t)

    def add_wire_record(self, rec: dict[str, Any], decoder: Any) -> None:
        """A record of this session's unit, `decoder` its unit's decoder (None while the unit waits for
        detection: its messages are counted by type once the dialect is known)."""
        is_msg = rec.get("type") == "msg"
        if decoder is None:
            self.add_record(rec, None)
            if is_msg:
                self.waiting.append(rec)
            return
        if self.waiting:
            self.count_waiting(decoder)
        self.add_record(rec, decoder.msg_type(rec) if is_msg else None)

    def add_event(self, ev: Event) -> None:
        if self.calls is not None:
            self.calls.add(ev)
        if not self.records_mode:
            self._time(ev.t)
            self.types[ev.kind if ev.item is None else f"{ev.kind}:{ev.item}"] += 1
        kind = ev.kind
        if kind in _OUTPUT_KINDS:
            self._output(ev)
            return
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, ev)
        data = ev.data
        if "cost_usd" in data and kind != USAGE and isinstance(data.get("cost_usd"), (int, float)):
            self.cost_hint = data["cost_usd"]

    def _output(self, ev: Event) -> None:
        """An item event: the first real output (ttft) and completed tool calls (not a prewarm's: the
        client waits for a prewarm's end and drops what it said)."""
        if self.prewarm:
            return
        if (self.first_output_t is None and ev.item in _OUTPUT_ITEMS and ev.role in ("assistant", None)
                and not ev.data.get("synthetic")):  # a client's made-up API-error message is no token
            self.first_output_t = ev.t
        if ev.kind == ITEM_COMPLETED and ev.item == TOOL_CALL:
            name = str(ev.data.get("name"))
            if isinstance(ev.id, str) and ev.id:
                self.tool_names[ev.id] = name
            else:
                self.tool_anon[name] += 1

    def _failed(self, data: dict[str, Any]) -> None:
        """One failed call; its message's usage (if any) is then no answer."""
        self.failed_calls += 1
        mid = data.get("message_id")
        if isinstance(mid, str) and mid:
            self.failed_ids.add(mid)

    def _on_error(self, ev: Event) -> None:
        data = ev.data
        self.errors += 1
        if data.get("failed_call") or data.get("retry"):
            self._failed(data)
            if data.get("retry"):
                self.retries += 1

    def _on_session_started(self, ev: Event) -> None:
        data = ev.data
        if self.session_id is None and data.get("session_id"):
            self.session_id = str(data["session_id"])
        if data.get("model") and self.model is None:
            self.model = str(data["model"])

    def _on_turn_ended(self, ev: Event) -> None:
        self.prewarm = False
        if ev.data.get("truncated"):  # a stream that died without its end: failed
            self._failed(ev.data)

    def _on_turn_started(self, ev: Event) -> None:
        self.prewarm = ev.data.get("prewarm") is True
        if not self.records_mode and self.first_output_t is None:
            self.start_t = ev.t

    def _on_usage(self, ev: Event) -> None:
        self._usage(ev, ev.data)

    def _usage(self, ev: Event, data: dict[str, Any]) -> None:
        scope = data.get("scope", "message")
        if data.get("credits") is not None:
            self.credits = (self.credits or 0) + _n(data.get("credits"))
        if scope == "session":
            if ev.seq != self.session_usage_seq:
                self.session_usage = {}
                self.session_usage_seq = ev.seq
            model = str(data.get("model") or self.model or "unknown")
            self.session_usage[model] = data
            return
        if scope == "turn":
            self.turn_usage.append(data)
            return
        if scope == "thread":
            self.thread_usage.append(data)
            return
        if scope != "message" or not any(f in data for f in _FIELDS):
            return
        mid = data.get("message_id")
        key = (mid if isinstance(mid, str) else repr(mid)) if mid else ("anon", len(self.msg_usage))
        prev = self.msg_usage.get(key)
        if prev is None:
            self.msg_usage[key] = dict(data)
            return
        for f in (*_FIELDS, "cost_usd"):
            if f in data and _n(data[f]) > _n(prev.get(f)):
                prev[f] = data[f]
        if not prev.get("model") and data.get("model"):
            prev["model"] = data["model"]

    def _thread_turns(self) -> list[dict[str, Any]]:
        """Per-turn usages from a thread's running totals (the first one only when it is this run's own)."""
        out: list[dict[str, Any]] = []
        prev: dict[str, Any] | None = None
        for u in self.thread_usage:
            if prev is None:
                if u.get("resumed") is not True:
                    out.append(u)
            else:
                out.append({**u, **{f: max(_n(u.get(f)) - _n(prev.get(f)), 0) for f in (*_FIELDS, "reasoning_tokens")}})
            prev = u
        return out

    def _split_usage(self) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
        """(the message usages of calls that answered, the usage by model of calls that failed), in one
        scan: what a failed call had reported (a stream cut by an error event) is no answer."""
        answered: list[dict[str, Any]] = []
        failed: dict[str, dict[str, Any]] = {}
        for k, u in self.msg_usage.items():
            if k in self.failed_ids:
                _add_usage(failed, self._model_of(u), u)
            else:
                answered.append(u)
        return answered, failed

    def _model_of(self, u: dict[str, Any]) -> str:
        return str(u.get("model") or self.model or "unknown")

    def _models_usage(self, answered: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Usage per model: the session's own total when it reports one, else the sum of its calls'."""
        if self.session_usage:
            sources = list(self.session_usage.items())
        else:
            sources = [(self._model_of(u), u) for u in (*answered, *self.turn_usage, *self._thread_turns())]
        models: dict[str, dict[str, Any]] = {}
        for model, u in sources:
            _add_usage(models, model, u)
        return models

    def _llm_calls(self, answered: int) -> int | None:
        if self.msg_usage:  # a failed call's usage (a stream cut by an error event) is no answered call
            calls: int | None = answered
        else:
            calls = len(self.turn_usage) or len(self.thread_usage) or None
        if calls is None and self.failed_calls:
            return 0
        return calls

    def _ttft(self) -> float | None:
        if self.first_output_t is None or self.start_t is None or not self.timed:
            return None
        return round(max(self.first_output_t - self.start_t, 0.0), 6)

    def _duration(self) -> float | None:
        if self.first_t is None or self.last_t is None or not self.timed:
            return None
        return round(self.last_t - self.first_t, 6)

    def result(self) -> dict[str, Any]:
        answered, failed = self._split_usage()
        models = self._models_usage(answered)
        costs = [m["cost_usd"] for m in models.values() if m["cost_usd"] is not None]
        # the session's own total (Claude Code's result.total_cost_usd) wins: modelUsage may omit models
        total_cost = self.cost_hint if self.cost_hint is not None else (round(sum(costs), 10) if costs else None)
        tools: Counter[str] = Counter(self.tool_names.values())
        tools.update(self.tool_anon)
        out = {
            "session": self.session_id or self.key,
            "ch": self.key,
            "dialect": self.dialect,
            "duration": self._duration(),
            "ttft": self._ttft(),
            "messages_by_type": dict(sorted(self.types.items())),
            "bytes": self.bytes if self.records_mode else None,
            "models_usage": models,
            "llm_calls": self._llm_calls(len(answered)),
            "failed_calls": self.failed_calls,
            "retries": self.retries,
            "tool_calls": dict(sorted(tools.items())),
            "total_cost": total_cost,
            "errors": self.errors,
        }
        if self.credits is not None:
            out["credits"] = self.credits
        if failed:
            out["failed_usage"] = failed
        if self.calls is not None:
            out["calls"] = [c.to_json() for c in self.calls.calls]
        if self.thread_usage:
            last = self.thread_usage[-1]
            thread: dict[str, dict[str, Any]] = {}
            _add_usage(thread, self._model_of(last), last)
            out["thread_usage"] = thread
            out["resumed"] = last.get("resumed")
        return out


_HANDLERS = {
    USAGE: SessionStats._on_usage,
    ERROR: SessionStats._on_error,
    SESSION_STARTED: SessionStats._on_session_started,
    TURN_ENDED: SessionStats._on_turn_ended,
    TURN_STARTED: SessionStats._on_turn_started,
}


def _add_usage(models: dict[str, dict[str, Any]], model: str, u: dict[str, Any]) -> None:
    m = models.setdefault(model, {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0,
                                  "cache_read_tokens": 0, "cache_creation_tokens": 0, "reasoning_tokens": 0,
                                  "cost_usd": None})
    inp, out = _n(u.get("input_tokens")), _n(u.get("output_tokens"))
    cr, cc = _n(u.get("cache_read_tokens")), _n(u.get("cache_creation_tokens"))
    m["prompt_tokens"] += inp + cr + cc
    m["completion_tokens"] += out
    m["total_tokens"] += inp + cr + cc + out
    m["cache_read_tokens"] += cr
    m["cache_creation_tokens"] += cc
    m["reasoning_tokens"] += _n(u.get("reasoning_tokens"))  # as the API reports them (OpenAI: inside output)
    if isinstance(u.get("cost_usd"), (int, float)):
        m["cost_usd"] = round((m["cost_usd"] or 0) + u["cost_usd"], 10)


def stats_from_events(events: Iterable[Event]) -> list[dict[str, Any]]:
    """Sessions from events alone (grouped by channel; messages_by_type counts events, bytes is null)."""
    sessions: dict[tuple[str, str], SessionStats] = {}
    proc_of: dict[str, str] = {}
    for ev in events:
        ch = ev.ch
        if ch.startswith(("stdout", "stdin", "stderr")):  # a process's pipes belong to its process
            suffix = ch.partition("-")[2]
            ch = proc_of.setdefault(ch, f"proc-{suffix}" if suffix else "proc")
        key = (ch, ev.dialect)
        s = sessions.get(key)
        if s is None:
            s = sessions[key] = SessionStats(ch, ev.dialect or None)
        s.add_event(ev)
    return link_wire_sessions([s.result() for s in sessions.values()], {k for (k, _d) in sessions if k.startswith("proc")})


class SessionsSink:
    """The statistics part of a decode pass (`wirecap.analysis.pipeline`): one `SessionStats` per
    decoding unit, fed with its records (bytes, timing, message types) and its events."""

    def __init__(self, decoding: Decoding) -> None:
        self.decoding = decoding
        self._chan_unit = decoding.chan_unit
        self.sessions: dict[str, SessionStats] = {}

    def _session(self, key: str) -> SessionStats:
        s = self.sessions.get(key)
        if s is None:
            s = self.sessions[key] = SessionStats(key, records_mode=True)
        return s

    def on_record(self, rec: dict[str, Any], events: list[Event]) -> None:
        ch = rec.get("ch")
        if ch.__class__ is not str:  # (not decoded: no unit)
            return
        unit = self._chan_unit[ch]
        s = self._session(unit.key)
        s.add_wire_record(rec, unit.decoder)
        if events and s.calls is None and unit.dialect and DIALECTS[unit.dialect].per_call:
            s.calls = CallTracker(unit.key, str(unit.kind))
        for ev in events:
            s.add_event(ev)

    def on_unit_end(self, unit: Unit, events: list[Event]) -> None:
        s = self._session(unit.key)
        s.dialect = unit.dialect
        if s.waiting and unit.decoder is not None:
            s.count_waiting(unit.decoder)
        for ev in events:
            s.add_event(ev)

    def results(self, channels: Iterable[str] = ()) -> list[dict[str, Any]]:
        """The sessions (after the pass), linked to their process; with `channels`, only the sessions
        holding them. A channel the stream lacks raises UnknownChannel."""
        keys = selected_units(self.decoding, channels)
        procs = {u.key for u in self.decoding.units.values() if u.kind == "process"}
        results = link_wire_sessions([s.result() for s in self.sessions.values()], procs)
        return results if keys is None else [r for r in results if r["ch"] in keys]


def stats_records(records: Iterable[dict[str, Any]], *, dialect: str | None = None,
                  channels: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Sessions of a record stream (header excluded); with `channels`, only the sessions holding them
    (a pipe selects its process's session). A channel the stream lacks raises UnknownChannel."""
    decoding = Decoding(dialect=dialect)
    sink = SessionsSink(decoding)
    run_pass(records, decoding, [sink])
    return sink.results(channels)


def link_wire_sessions(sessions: list[dict[str, Any]], process_keys: set[str]) -> list[dict[str, Any]]:
    """Mark the network sessions of a capture with one decoded process as that process's (`part_of`).

    `wirecap record -- CMD` puts CMD's stdout and the HTTP / WebSocket traffic it caused in one
    capture: the same LLM calls are then seen twice, as the agent reports them (stdout) and as they
    crossed the wire. With exactly one decoded process, every decoded network session is its traffic;
    `capture_totals` then counts the calls once. With several processes the owner is unknown: no link.
    """
    procs = [s for s in sessions if s["ch"] in process_keys and s["dialect"]]
    if len(procs) != 1:
        return sessions
    owner = procs[0]["ch"]
    for s in sessions:
        if s["dialect"] and s["ch"] not in process_keys:
            s["part_of"] = owner
    return sessions


def counted_sessions(sessions: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the sessions whose calls, tokens and tool calls count, the sessions whose cost counts): for a
    process with wire sessions (`part_of`) that have usage or calls, the wire's; else each session's own."""
    wire_of: dict[str, list[dict[str, Any]]] = {}
    for s in sessions:
        if s.get("part_of"):
            wire_of.setdefault(s["part_of"], []).append(s)
    counted: list[dict[str, Any]] = []
    cost_from: list[dict[str, Any]] = []
    for s in sessions:
        if s.get("part_of"):
            continue
        wire = wire_of.get(s["ch"], [])
        if any(w.get("models_usage") or w.get("llm_calls") or w.get("failed_calls") for w in wire):
            counted.extend(wire)
            cost_from.extend([s] if isinstance(s.get("total_cost"), (int, float)) else wire)
        else:
            counted.append(s)
            cost_from.append(s)
    return counted, cost_from


_TOKEN_KEYS = ("prompt_tokens", "completion_tokens", "cache_read_tokens", "cache_creation_tokens", "total_tokens")


def capture_totals(sessions: list[dict[str, Any]]) -> dict[str, float | None]:
    """One number per metric over the sessions of one capture, each LLM call counted once.

    A process whose traffic is in the same capture (`part_of`) is seen twice; its calls are taken from
    one side only: the wire's (one usage per call, exact even where the agent reports a running total,
    e.g. a resumed Codex thread) when a network session of that process has usage or calls, else the
    process's. Tool calls follow the same side. Cost: the process's own total when it reports one
    (Claude Code's result; the wire carries no price), else the sum. Duration and ttft: the process's
    when there is one (its wall time; network exchanges overlap it), else the sum of durations and
    the first ttft. `errors` adds every session's (each side reports what it saw), as do `retries`
    (only an agent's own output tells them).
    """
    tot: dict[str, float | None] = {"sessions": float(len(sessions)), "duration": None, "ttft": None,
                                    "llm_calls": 0.0, "failed_calls": 0.0, "retries": 0.0,
                                    **dict.fromkeys(_TOKEN_KEYS, 0.0), "tool_calls": 0.0, "cost_usd": 0.0,
                                    "errors": 0.0}
    counted, cost_from = counted_sessions(sessions)
    for s in counted:
        _add_calls(tot, s)
    tot["cost_usd"] = float(sum(_n(s.get("total_cost")) for s in cost_from))
    tot["errors"] = float(sum(_n(s.get("errors")) for s in sessions))
    tot["retries"] = float(sum(_n(s.get("retries")) for s in sessions))  # only an agent's stdout reports them
    wire_of = {s["part_of"] for s in sessions if s.get("part_of")}
    timed = [s for s in sessions if s["ch"] in wire_of] or sessions
    durs = [s["duration"] for s in timed if isinstance(s.get("duration"), (int, float))]
    tot["duration"] = float(sum(durs)) if durs else None
    ttfts = [s["ttft"] for s in timed if isinstance(s.get("ttft"), (int, float))]
    tot["ttft"] = float(ttfts[0]) if ttfts else None
    return tot


def _add_calls(tot: dict[str, float | None], s: dict[str, Any]) -> None:
    """Add one counted session's tokens, calls and tool calls to the totals `tot`."""
    for usage in (s.get("models_usage") or {}).values():
        if isinstance(usage, dict):
            for k in _TOKEN_KEYS:
                tot[k] = (tot[k] or 0.0) + _n(usage.get(k))
    for k in ("llm_calls", "failed_calls"):
        tot[k] = (tot[k] or 0.0) + _n(s.get(k))
    tc = s.get("tool_calls")
    if isinstance(tc, dict):
        tot["tool_calls"] = (tot["tool_calls"] or 0.0) + sum(_n(v) for v in tc.values())


def stats_capture(path: str, *, dialect: str | None = None, channels: Iterable[str] = (),
                  problems: list[str] | None = None) -> list[dict[str, Any]]:
    """Sessions of the capture at `path` (the thin shell around `stats_records`); the reader's problems
    (`FILE:LINE: what`, interruption) are added to `problems` when given. A channel the capture lacks
    is a WirecapError naming the ones it has."""
    from wirecap.capture.reader import CaptureReader

    with CaptureReader(path) as reader:
        try:
            found = stats_records(reader, dialect=dialect, channels=channels)
        except UnknownChannel as e:
            raise WirecapError(e.describe(path)) from None
        if problems is not None:
            problems += reader.report()
        return found


def listed_sessions(capture: str, found: list[dict[str, Any]], *, undecoded: bool = False
                    ) -> tuple[list[dict[str, Any]], dict[str, float | None] | None]:
    """(the sessions `wirecap stats` lists for `capture`, each with its `capture`: the decoded ones, and
    with `undecoded` the others too; the capture's totals when it has several decoded sessions)."""
    decoded = [s for s in found if s["dialect"]]
    totals = capture_totals(decoded) if len(decoded) > 1 else None
    return [{"capture": capture, **s} for s in found if s["dialect"] is not None or undecoded], totals
