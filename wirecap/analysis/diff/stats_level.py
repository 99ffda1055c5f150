"""The stats level and timing: the numbers of `wirecap stats` side by side, and latency regressions.

Pure: given the sessions of `wirecap.analysis.stats` (the shell reads them) and a diff's result.
"""

from __future__ import annotations

from typing import Any

from wirecap.analysis.diff.result import DiffResult, TimingFlag
from wirecap.analysis.stats import capture_totals, counted_sessions

STAT_METRICS = (
    # (metric, timing?)
    ("sessions", False),
    ("duration", True),
    ("ttft", True),
    ("llm_calls", False),
    ("failed_calls", False),
    ("retries", False),
    ("prompt_tokens", False),
    ("completion_tokens", False),
    ("cache_read_tokens", False),
    ("cache_creation_tokens", False),
    ("total_tokens", False),
    ("tool_calls", False),
    ("cost_usd", False),
    ("errors", False),
)


def _num(v: Any) -> float:
    if isinstance(v, bool) or v is None:
        return 0.0
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, (list, tuple, set)):
        return float(len(v))
    if isinstance(v, dict):
        return float(sum(_num(x) for x in v.values()))
    return 0.0


def stats_totals(sessions: list[dict[str, Any]]) -> dict[str, float | None]:
    """One number per metric over all sessions, each LLM call counted once (stats.capture_totals)."""
    return capture_totals(sessions)


def stats_rows(sa: list[dict[str, Any]], sb: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Metric, A, B, delta, ratio; `differs` for non-timing metrics that are not equal."""
    ta, tb = stats_totals(sa), stats_totals(sb)
    rows = []
    for metric, timing in STAT_METRICS:
        va, vb = ta[metric], tb[metric]
        delta = (vb - va) if va is not None and vb is not None else None
        ratio = (vb / va) if va and vb is not None else None
        differs = (not timing) and (abs(delta) > 1e-9 if delta is not None else va != vb)
        rows.append({"metric": metric, "a": _round(va), "b": _round(vb), "delta": _round(delta),
                     "ratio": round(ratio, 4) if ratio is not None else None, "timing": timing,
                     "differs": bool(differs)})
    tools_a: dict[str, float] = {}
    tools_b: dict[str, float] = {}
    for sessions, acc in ((sa, tools_a), (sb, tools_b)):
        for s in counted_sessions(sessions)[0]:  # a call seen on stdout and on the wire counts once
            tc = s.get("tool_calls")
            if isinstance(tc, dict):
                for name, n in tc.items():
                    acc[name] = acc.get(name, 0.0) + _num(n)
    for name in sorted(set(tools_a) | set(tools_b)):
        va, vb = tools_a.get(name, 0.0), tools_b.get(name, 0.0)
        rows.append({"metric": f"tool_calls.{name}", "a": va, "b": vb, "delta": vb - va,
                     "ratio": round(vb / va, 4) if va else None, "timing": False, "differs": va != vb})
    return rows


def _round(v: float | None) -> float | int | None:
    if v is None:
        return None
    if float(v).is_integer() and abs(v) < 1e15:
        return int(v)
    return round(v, 6)


def regression(metric: str, where: str, va: Any, vb: Any, threshold: float, result: DiffResult) -> None:
    if not isinstance(va, (int, float)) or not isinstance(vb, (int, float)):
        return
    result.timing_checked.append({"metric": metric, "where": where, "a": va, "b": vb})
    # a regression: slower by more than the threshold, and by more than a millisecond (clock noise)
    if vb > va * (1 + threshold) and vb - va > 0.001:
        result.timing.append(TimingFlag(metric, where, float(va), float(vb), threshold))


def session_timing(result: DiffResult, sa: list[dict[str, Any]], sb: list[dict[str, Any]], threshold: float) -> None:
    """Whole-session time to first token and duration, A's sessions against B's."""
    ta, tb = stats_totals(sa), stats_totals(sb)
    for metric in ("ttft", "duration"):
        regression(metric, "session", ta[metric], tb[metric], threshold, result)


def stream_timing(result: DiffResult, threshold: float) -> None:
    """Per channel pair: time from the channel's first to its last record (an HTTP exchange, a process)."""
    for p in result.pairs:
        if p.a is None or p.b is None:
            continue
        if p.a.t_first is None or p.b.t_first is None or p.a.t_last is None or p.b.t_last is None:
            continue
        regression("channel duration", p.title, p.a.t_last - p.a.t_first, p.b.t_last - p.b.t_first,
                    threshold, result)
