"""Tables and labels every renderer shows the same way (so term, markdown and html agree)."""

from __future__ import annotations

from typing import Any

from wirecap.analysis.notes import NOTE_HEADERS, note_cells  # noqa: F401 - shared with the renderers
from wirecap.analysis.report.model import CaptureReport, ConvEntry
from wirecap.analysis.transport import describe_transport

CHANNEL_HEADERS = ["channel", "kind", "what", "dialect", "c2s", "s2c", "bytes", "duration", "first reply",
                   "long gaps", "end"]
SESSION_HEADERS = ["session", "channel", "dialect", "duration", "ttft", "LLM calls", "tool calls", "tokens in/out",
                   "cost USD", "errors"]
FINDING_HEADERS = ["severity", "rule", "message", "where"]

KIND_LABELS = {
    "user": "user",
    "assistant": "assistant",
    "reasoning": "reasoning",
    "tool_call": "tool call",
    "tool_result": "tool result",
    "error": "error",
    "status": "status",
    "session": "session",
    "result": "result",
}


def fmt_bytes(n: int | float | None) -> str:
    if n is None:
        return ""
    n = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{int(n)} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"  # pragma: no cover


def fmt_secs(s: float | None) -> str:
    if s is None:
        return ""
    if s != s or s in (float("inf"), float("-inf")):  # a damaged capture's t (1e308 - -1e308)
        return f"{s} s"
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 120:
        return f"{s:.2f} s"
    return f"{int(s // 60)}m{s % 60:04.1f}s"


def channel_rows(cap: CaptureReport) -> list[list[Any]]:
    rows = []
    for c in cap.channels:
        gaps = ", ".join(f"{fmt_secs(b - a)} at {a:.1f}s" for a, b in c.gaps[:3])
        if len(c.gaps) > 3:
            gaps += f" (+{len(c.gaps) - 3})"
        rows.append([c.ch, c.transport, c.label, c.dialect or "", c.msgs_c2s, c.msgs_s2c, fmt_bytes(c.bytes),
                     fmt_secs(c.duration), fmt_secs(c.first_reply), gaps, c.end_state])
    return rows


def _sum_usage(models: Any) -> tuple[int, int]:
    tin = tout = 0
    if isinstance(models, dict):
        for u in models.values():
            if isinstance(u, dict):
                tin += int(u.get("prompt_tokens") or 0)
                tout += int(u.get("completion_tokens") or 0)
    return tin, tout


def _blank(v: Any) -> Any:
    return "" if v is None else v


def _calls(s: dict[str, Any]) -> Any:
    """LLM calls that answered, and the failed attempts beside them (`0 (+2 failed)`)."""
    failed = s.get("failed_calls")
    if isinstance(failed, int) and failed:
        return f"{_blank(s.get('llm_calls'))} (+{failed} failed)"
    return _blank(s.get("llm_calls"))


def session_rows(cap: CaptureReport) -> list[list[Any]]:
    rows = []
    for s in cap.sessions or []:
        tin, tout = _sum_usage(s.get("models_usage"))
        tools = s.get("tool_calls") or {}
        tool_text = ", ".join(f"{k}×{v}" for k, v in tools.items()) if isinstance(tools, dict) else str(tools)
        cost = s.get("total_cost")
        rows.append([s.get("session") or "", s.get("ch") or "", s.get("dialect") or "",
                     fmt_secs(s.get("duration")) if isinstance(s.get("duration"), (int, float)) else "",
                     fmt_secs(s.get("ttft")) if isinstance(s.get("ttft"), (int, float)) else "",
                     _calls(s), tool_text, f"{tin}/{tout}" if tin or tout else "",
                     f"{cost:.4f}" if isinstance(cost, (int, float)) else "", _blank(s.get("errors"))])
    return rows


CALL_HEADERS = ["channel", "call", "transport", "model", "ttft", "duration", "tokens in/out", "tools", "outcome"]


def transport_lines(cap: CaptureReport) -> list[str]:
    """What the transport part says in words: the LLM calls per transport, and the fallback."""
    return describe_transport(cap.transport) if cap.transport else []


def _call_row(c: dict[str, Any]) -> list[Any]:
    tools = c.get("tool_calls")
    outcome = f"{c.get('outcome')}: {c['reason']}" if c.get("reason") else str(c.get("outcome"))
    tin, tout = c.get("input_tokens"), c.get("output_tokens")
    return [c.get("ch") or "", f"{c.get('call')}{' (prewarm)' if c.get('prewarm') else ''}", c.get("transport") or "",
            _blank(c.get("model")), _secs(c.get("ttft")), _secs(c.get("duration")), f"{tin}/{tout}" if tin or tout else "",
            ", ".join(f"{k}×{v}" for k, v in tools.items()) if isinstance(tools, dict) else "", outcome]


def _secs(v: Any) -> str:
    return fmt_secs(v) if isinstance(v, (int, float)) else ""


def call_rows(cap: CaptureReport) -> list[list[Any]]:
    """One row per LLM call of the transport part."""
    return [_call_row(c) for c in (cap.transport or {}).get("calls") or [] if isinstance(c, dict)]


def capture_problems(cap: CaptureReport, *, interrupted: bool = True) -> list[str]:
    """What went wrong reading or recording the capture, one line each."""
    problems = list(cap.reader_problems) + [
        f"seq {e['seq']}: recorder error at {e.get('where') or '?'}: {e.get('message')}" for e in cap.recorder_errors]
    if interrupted and cap.interrupted:
        problems.append(f"interrupted capture: {cap.interrupted}")
    return problems


def finding_where(f: dict[str, Any]) -> str:
    parts = []
    if f.get("seq") is not None:
        parts.append(f"seq {f['seq']}")
    if f.get("ch"):
        parts.append(str(f["ch"]))
    return ", ".join(parts)


def entry_title(e: ConvEntry) -> str:
    label = KIND_LABELS.get(e.kind, e.kind)
    if e.kind in ("tool_call", "tool_result") and e.name:
        label += f" {e.name}"
    if e.is_error and e.kind not in ("error",):
        label += " (error)"
    return label


def rule_names(report: Any) -> set[str]:
    """Validation rule names in a report: our own vocabulary, never a secret."""
    return {str(f.get("rule")) for c in report.captures for f in (c.findings or []) if f.get("rule")}


def redact_report_text(report: Any, text: str, redactor: Any | None = None) -> str:
    """The last pass of every renderer: secret shapes in the rendered text redacted again, the report's
    rule names left alone (default policy when no redactor is given)."""
    if redactor is None:
        from wirecap.capture.redact import Redactor

        redactor = Redactor()
    return redact_text(redactor, text, rule_names(report))


def redact_text(redactor: Any, text: str, keep: set[str] = frozenset()) -> str:  # type: ignore[assignment]
    """Redact secret shapes in rendered text, leaving the `keep` words alone (rule names such as
    `cb-ack-missing` look like a Codebuff key to the key pattern)."""
    if not redactor.enabled:
        return text
    marks = {}
    for i, word in enumerate(sorted(keep, key=len, reverse=True)):
        if word in text:
            mark = f"\x00{i}\x00"
            marks[mark] = word
            text = text.replace(word, mark)
    text = redactor.text(text)
    for mark, word in marks.items():
        text = text.replace(mark, word)
    return text
