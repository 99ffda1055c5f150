"""Correlating fields: ids one side makes up and the other side echoes.

A replayed side must echo the live peer's ids, not the recorded ones: an ack carries the live txid,
a response-chunk or prompt-response the live promptId/userInputId, a tool-call-response the
requestId the live server chose, a Responses `response.create` over WebSocket the live server's
response id as its `previous_response_id` (learnt from `response.id`) and call ids as `call_id`. `Correlator` learns "recorded value -> live value" by walking a
recorded message and its live counterpart in step, and rewrites those values wherever they appear
in the recorded messages it sends next. Sans-I/O.
"""

from __future__ import annotations

from typing import Any

# Keys whose values are correlation ids. txid is an integer counter; the rest are strings.
TXID_KEYS = frozenset({"txid"})
ID_KEYS = frozenset({
    "promptId", "userInputId", "requestId", "toolCallId", "runId", "stepId", "agentRunId",
    "tool_use_id", "tool_call_id", "call_id", "id", "item_id", "previous_response_id",
})


def _group(key: Any, value: Any) -> str | None:
    if key in TXID_KEYS and isinstance(value, int) and not isinstance(value, bool):
        return "txid"
    if key in ID_KEYS and isinstance(value, str) and value:
        return "id"
    return None


class Correlator:
    """Recorded-to-live id mapping for one session (one replayed connection or exchange set)."""

    def __init__(self) -> None:
        self.map: dict[tuple[str, Any], Any] = {}

    def learn(self, recorded: Any, live: Any) -> None:
        """Walk both values in step; remember every correlation id that differs."""
        if isinstance(recorded, dict) and isinstance(live, dict):
            for k, rv in recorded.items():
                if k not in live:
                    continue
                lv = live[k]
                g = _group(k, rv)
                if g is not None:
                    if _group(k, lv) == g and lv != rv:
                        self.map[(g, rv)] = lv
                elif isinstance(rv, (dict, list)):
                    self.learn(rv, lv)
        elif isinstance(recorded, list) and isinstance(live, list):
            for rv, lv in zip(recorded, live, strict=False):
                self.learn(rv, lv)

    def set(self, group: str, recorded: Any, live: Any) -> None:
        if recorded != live:
            self.map[(group, recorded)] = live

    def rewrite(self, value: Any) -> tuple[Any, bool]:
        """(rewritten copy, changed). Untouched values are returned as they are (no copy)."""
        if not self.map:
            return value, False
        return self._rw(value)

    def _rw(self, value: Any) -> tuple[Any, bool]:
        if isinstance(value, dict):
            out: dict[str, Any] | None = None
            for k, v in value.items():
                g = _group(k, v)
                if g is not None:
                    nv = self.map.get((g, v), v)
                    changed = nv is not v and nv != v
                else:
                    nv, changed = self._rw(v) if isinstance(v, (dict, list)) else (v, False)
                if changed:
                    if out is None:
                        out = dict(value)
                    out[k] = nv
            return (out, True) if out is not None else (value, False)
        if isinstance(value, list):
            lst: list[Any] | None = None
            for i, v in enumerate(value):
                nv, changed = self._rw(v)
                if changed:
                    if lst is None:
                        lst = list(value)
                    lst[i] = nv
            return (lst, True) if lst is not None else (value, False)
        return value, False


def rewrite_record(corr: Correlator, record: dict[str, Any]) -> dict[str, Any]:
    """A msg record with its JSON payload rewritten; the original (byte-exact) when nothing changed.

    A rewritten payload loses `raw` (the original spelling no longer applies); for an SSE event
    `raw` is the whole block, so it goes too and the event is serialized canonically.
    """
    if "json" not in record or not corr.map:
        return record
    value, changed = corr.rewrite(record["json"])
    if not changed:
        return record
    out = {k: v for k, v in record.items() if k not in ("raw", "raw_b64")}
    out["json"] = value
    return out
