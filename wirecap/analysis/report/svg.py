"""The report's pictures, as inline SVG (no JavaScript needed to see them; hover titles on every mark).

- `waterfall`: the session on one time axis, one row per step: each LLM call (request sent -> first
  token -> last token; failed calls marked ✕, calls cut short dashed, a call after a failed one marked
  as a retry ↻) and each tool execution between calls (tool call issued -> its result), with the idle
  gaps between steps shaded and labelled.
- `token_bars`: one stacked bar per LLM call: input, cache read, cache write, output tokens, and the
  call's cost when known.

Pure: plain data in (`Step`, `TokenRow`), SVG text out. `steps_of` / `token_rows_of` make that data
from a capture's report (its LLM calls, `analysis.transport.Call`, and the conversation's tool calls and
results). Bounded: at most MAX_ROWS rows are drawn, the rest counted in a line under the picture.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from html import escape
from typing import Any

from wirecap.analysis.report.common import fmt_secs

MAX_ROWS = 150
ROW_H = 16
LABEL_W = 230
PLOT_W = 720
AXIS_H = 34
GAP_MIN = 1.0  # seconds of idle between steps worth shading (and at least GAP_SHARE of the span)
GAP_SHARE = 0.03


def _e(v: Any) -> str:
    return escape(str(v), quote=True)


@dataclass
class Step:
    """One row of the waterfall: an LLM call or a tool execution."""

    kind: str  # "call" | "tool"
    label: str
    start: float
    end: float | None  # None: never ended in the capture
    first: float | None = None  # a call's first token
    outcome: str = "completed"  # completed | failed | cut | open
    retry: bool = False  # a call after a failed or cut one
    detail: str = ""  # more words for the hover title
    reason: str = ""  # why it failed (short, beside the mark)
    seq: int | None = None
    call: int | None = None  # the thread's call number (its label links to the call in the thread)


@dataclass
class TokenRow:
    """One LLM call's tokens (None: not on the wire)."""

    label: str
    input: int = 0  # input tokens not read from or written to a cache
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0
    cost: float | None = None
    seq: int | None = None
    call: int | None = None  # as Step.call

    @property
    def total(self) -> int:
        return self.input + self.cache_read + self.cache_write + self.output


# --- from a report's data -----------------------------------------------------------------------------


def _num(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v else 0


def call_steps(calls: Iterable[Any]) -> list[Step]:
    """The waterfall rows of LLM calls (`analysis.transport.Call`s, or anything with their fields)."""
    out: list[Step] = []
    last_failed = False
    for c in calls:
        model = getattr(c, "model", None) or ""
        label = f"call {c.n} {c.ch}" + (f" {model}" if model else "")
        bits = [f"{c.transport}", f"outcome {c.outcome}" + (f": {c.reason}" if getattr(c, "reason", None) else "")]
        if c.first_output_t is not None:
            bits.append(f"first token after {fmt_secs(max(0.0, c.first_output_t - c.t))}")
        if c.end_t is not None:
            bits.append(f"took {fmt_secs(max(0.0, c.end_t - c.t))}")
        if getattr(c, "prewarm", False):
            bits.append("prewarm")
        out.append(Step("call", label, c.t, c.end_t, c.first_output_t, c.outcome, retry=last_failed,
                        detail="; ".join(bits), reason=str(getattr(c, "reason", None) or ""), seq=c.seq))
        last_failed = c.outcome in ("failed", "cut")
    return out


def tool_steps(entries: Iterable[Any]) -> list[Step]:
    """Tool executions from conversation entries: a tool call issued (its earliest sighting, on any
    channel) to its result (the earliest too); a call without a result is open."""
    issued: dict[str, Any] = {}
    done: dict[str, Any] = {}
    for e in entries:
        cid = getattr(e, "call_id", None)
        if not cid:
            continue
        if e.kind == "tool_call" and (cid not in issued or e.t < issued[cid].t):
            issued[cid] = e
        elif e.kind == "tool_result" and (cid not in done or e.t < done[cid].t):
            done[cid] = e
    out = []
    for cid, call in issued.items():
        res = done.get(cid)
        end = res.t if res is not None else None
        outcome = "open" if res is None else ("failed" if res.is_error else "completed")
        detail = f"tool {call.name or '?'} ({cid})" + (f"; result after {fmt_secs(max(0.0, end - call.t))}"
                                                         if end is not None else "; no result in the capture")
        out.append(Step("tool", f"tool {call.name or '?'}", call.t, end, None, outcome, detail=detail, seq=call.seq))
    return out


def _thread_call_detail(c: Any) -> str:
    bits = [f"{c.transport}, {c.dialect}", f"outcome {c.outcome}" + (f": {c.error}" if c.error else "")]
    if c.ttft is not None:
        bits.append(f"first token after {fmt_secs(c.ttft)}")
    if c.duration is not None:
        bits.append(f"took {fmt_secs(c.duration)}")
    if c.stop_reason:
        bits.append(f"stop: {c.stop_reason}")
    if c.parent is not None:
        bits.append(f"subagent of call {c.parent[0]}")
    if c.retry:
        bits.append(f"retry of call {c.retry_of}" if c.retry_of else "retry")
    return "; ".join(bits)


def _tool_run_step(r: Any) -> Step:
    outcome = "open" if r.t_end is None else ("failed" if r.is_error else "completed")
    where = f"; issued by call {r.issued_by}" if r.issued_by else ""
    took = f"; result after {fmt_secs(max(0.0, r.t_end - r.t_start))}" if r.t_end is not None else "; no result in the capture"
    return Step("tool", f"tool {r.name or '?'}", r.t_start, r.t_end, None, outcome,
                detail=f"tool {r.name or '?'} ({r.call_id}){where}{took}", seq=r.seqs[0] if r.seqs else None)


def thread_steps(threads: Iterable[Any]) -> list[Step]:
    """The waterfall rows of a report's threads (`report.thread.Thread`): every call (a subagent's marked
    ⤷, a retry ↻) and every tool execution between calls."""
    out: list[Step] = []
    for th in threads:
        for c in th.calls:
            label = ("⤷ " if c.parent is not None else "") + f"call {c.n} {c.ch}" + (f" {c.model}" if c.model else "")
            out.append(Step("call", label, c.t_sent, c.t_last, c.t_first_token, c.outcome, retry=c.retry,
                            detail=_thread_call_detail(c), reason=c.error or "", seq=c.seq, call=c.n))
        out += [_tool_run_step(r) for r in th.tool_runs]
    return out


def steps_of(cap: Any) -> list[Step]:
    """A capture report's waterfall rows, in start order: from its threads when they have calls or tool
    runs, else its LLM calls on the wire and the tool executions its conversation shows."""
    steps = thread_steps(cap.threads) if getattr(cap, "threads", None) else []
    if not steps:  # (a client's stdout alone: its tool calls and results still show the tools' times)
        entries = [e for es in cap.conversation.values() for e in es]
        steps = call_steps(cap.calls) + tool_steps(entries)
    steps.sort(key=lambda s: (s.start, s.kind != "call"))
    return steps


def token_rows_of(cap: Any) -> list[TokenRow]:
    """A capture report's LLM calls with tokens on the wire: from its threads (input split into fresh
    input, cache read and cache write; cost when the wire prices it), else from its calls."""
    rows = []
    if getattr(cap, "threads", None):
        for th in cap.threads:
            for c in th.calls:
                parts = (c.input_tokens, c.cache_read_tokens, c.cache_write_tokens, c.output_tokens)
                if all(v is None for v in parts):
                    continue
                n_in, n_read, n_write, n_out = (_num(v) for v in parts)
                rows.append(TokenRow(f"call {c.n} {c.ch}", n_in, n_read, n_write, n_out, cost=c.cost_usd, seq=c.seq,
                                     call=c.n))
        return rows
    for c in cap.calls:
        if c.input_tokens is None and c.output_tokens is None:
            continue
        fresh = getattr(c, "fresh_input_tokens", None)
        rows.append(TokenRow(f"call {c.n} {c.ch}", input=_num(fresh if fresh is not None else c.input_tokens),
                             cache_read=_num(getattr(c, "cache_read_tokens", None)),
                             cache_write=_num(getattr(c, "cache_write_tokens", None)), output=_num(c.output_tokens),
                             cost=getattr(c, "cost_usd", None), seq=c.seq))
    return rows


# --- drawing ------------------------------------------------------------------------------------------


def nice_ticks(span: float, n: int = 6) -> list[float]:
    """Round tick positions from 0 to about `span` (1, 2 or 5 times a power of ten apart)."""
    if span <= 0 or not math.isfinite(span):
        return [0.0]
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    count = int(span / step + 1e-9)
    return [i * step for i in range(count + 1)]


def _tick_label(v: float, step: float) -> str:
    if step >= 1:
        return f"{v:.0f} s" if v < 120 else f"{int(v // 60)}m{int(v % 60):02d}s"
    decimals = min(6, max(1, -math.floor(math.log10(step) + 1e-9)))
    return f"{v:.{decimals}f} s"


class _Scale:
    def __init__(self, lo: float, hi: float) -> None:
        self.lo = lo
        self.span = max(hi - lo, 1e-6)

    def x(self, t: float) -> float:
        return LABEL_W + PLOT_W * min(max((t - self.lo) / self.span, 0.0), 1.0)


def _axis(sc: _Scale, height: int, title: str) -> str:
    ticks = nice_ticks(sc.span)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    first = math.ceil(sc.lo / step - 1e-9) * step  # round times since the capture began, from where it is drawn
    parts = []
    for v in (first + t - sc.lo for t in ticks):
        if v > sc.span + 1e-9:
            break
        x = sc.x(sc.lo + v)
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{height}" class="wf-grid"/>'
                     f'<text x="{x:.1f}" y="{height + 13}" class="wf-axis" text-anchor="middle">'
                     f'{_e(_tick_label(sc.lo + v, step))}</text>')
    parts.append(f'<text x="{LABEL_W + PLOT_W / 2:.0f}" y="{height + 28}" class="wf-axis wf-title" '
                 f'text-anchor="middle">{_e(title)}</text>')
    return "".join(parts)


def _gaps(steps: list[Step], sc: _Scale, height: int, dur: float) -> str:
    """Idle stretches between steps (nothing running), shaded across the rows with their length."""
    out = []
    busy_until: float | None = None
    least = max(GAP_MIN, GAP_SHARE * dur)
    for s in steps:
        if busy_until is not None and s.start - busy_until >= least:
            x0, x1 = sc.x(busy_until), sc.x(s.start)
            out.append(f'<rect x="{x0:.1f}" y="0" width="{max(1.0, x1 - x0):.1f}" height="{height}" class="wf-gap">'
                       f'<title>idle {_e(fmt_secs(s.start - busy_until))} ({busy_until:.2f} s → {s.start:.2f} s)</title></rect>'
                       f'<text x="{(x0 + x1) / 2:.1f}" y="10" class="wf-gaptext" text-anchor="middle">'
                       f'{_e(fmt_secs(s.start - busy_until))} idle</text>')
        end = s.end if s.end is not None else s.start
        busy_until = end if busy_until is None else max(busy_until, end)
    return "".join(out)


def _bar(s: Step, y: float, sc: _Scale, end_of_all: float) -> str:
    """One step's bar (a call: waiting for the first token, then streaming), its marks and title."""
    end = s.end if s.end is not None else end_of_all
    x0, x1 = sc.x(s.start), sc.x(end)
    title = f"<title>{_e(s.label)}: {s.start:.3f} s → " + (f"{s.end:.3f} s" if s.end is not None else "(no end)") + \
        (f"; {_e(s.detail)}" if s.detail else "") + "</title>"
    cls = f"wf-{s.kind} wf-{s.outcome}"
    h = ROW_H - 6
    if s.kind == "call" and s.first is not None and s.first >= s.start:
        xf = sc.x(min(s.first, end))
        bar = (f'<rect x="{x0:.1f}" y="{y + 3}" width="{max(1.0, xf - x0):.1f}" height="{h}" class="{cls} wf-wait"/>'
               f'<rect x="{xf:.1f}" y="{y + 3}" width="{max(1.0, x1 - xf):.1f}" height="{h}" class="{cls}"/>')
    else:
        bar = f'<rect x="{x0:.1f}" y="{y + 3}" width="{max(1.5, x1 - x0):.1f}" height="{h}" class="{cls}"/>'
    return f'<g class="wf-row">{title}{bar}{_mark(s, x0, x1, y)}</g>'


def _mark(s: Step, x0: float, x1: float, y: float) -> str:
    """✕ failed (and why, short), cut or no end: after the bar, or before it near the right edge."""
    if s.outcome == "failed":
        why = s.reason if len(s.reason) <= 40 else s.reason[:39] + "…"
        text, cls = "✕ failed" + (f": {why}" if why else ""), "wf-x"
    elif s.outcome in ("cut", "open"):
        text, cls = ("cut" if s.outcome == "cut" else "no end"), "wf-note"
    else:
        return ""
    need = 6.5 * len(text)
    if x1 + need <= LABEL_W + PLOT_W + 60:
        x, anchor = x1 + 3, "start"
    elif x0 - need >= LABEL_W:
        x, anchor = x0 - 3, "end"
    else:  # the bar fills the plot: the words go inside it
        x, anchor, cls = x0 + 3, "start", cls + " wf-inside"
    return f'<text x="{x:.1f}" y="{y + ROW_H - 4}" class="{cls}" text-anchor="{anchor}">{_e(text)}</text>'


def _link(anchor: Any, seq: int | None, call: int | None) -> str:
    """The page id a row links to: `anchor(seq)`, or `anchor.call(n)` for a thread's call when the anchor
    has one (then the label leads to the call in the thread)."""
    if anchor is None:
        return ""
    if call is not None and hasattr(anchor, "call"):
        return str(anchor.call(call))
    return str(anchor(seq)) if seq is not None else ""


def _label(s: Step, y: float, link: str) -> str:
    text = ("↻ " if s.retry else "") + s.label
    if len(text) > 34:
        text = text[:33] + "…"
    inner = f'<text x="4" y="{y + ROW_H - 4}" class="wf-label wf-l{s.kind}">{_e(text)}</text>'
    return f'<a href="#{link}">{inner}</a>' if link else inner


def time_span(steps: list[Step]) -> tuple[float, float]:
    """(first start, last end) of `steps`: what a waterfall of them spans."""
    ends = [s.end if s.end is not None else s.start for s in steps] + [s.first or s.start for s in steps]
    return min(s.start for s in steps), max(ends)


def waterfall(steps: list[Step], *, anchor: Any = None, max_rows: int = MAX_ROWS,
              span: tuple[float, float] | None = None, legend: bool = True) -> str:
    """The waterfall of `steps` (in start order) as SVG, and a line for the rows left out. `anchor(seq)`
    gives the page id a row's label links to (`anchor.call(n)`, when it has one, a thread call's; None: no
    links). `span`: the time axis's (from, to), to draw several waterfalls on one scale."""
    if not steps:
        return ""
    shown = steps[:max_rows]
    lo, hi = span if span is not None else time_span(shown)
    lo = max(0.0, lo - 0.02 * (hi - lo))  # (a margin before the first bar)
    sc = _Scale(lo, hi if hi > lo else lo + 1.0)
    height = ROW_H * len(shown)
    rows = []
    for i, s in enumerate(shown):
        y = i * ROW_H
        if i % 2:
            rows.append(f'<rect x="0" y="{y}" width="{LABEL_W + PLOT_W}" height="{ROW_H}" class="wf-stripe"/>')
        rows.append(_label(s, y, _link(anchor, s.seq, s.call)) + _bar(s, y, sc, hi))
    n_calls = sum(1 for s in steps if s.kind == "call")
    svg = (f'<svg class="waterfall" viewBox="0 0 {LABEL_W + PLOT_W + 70} {height + AXIS_H}" '
           f'width="{LABEL_W + PLOT_W + 70}" role="img" aria-label="waterfall: {n_calls} LLM calls and '
           f'{len(steps) - n_calls} tool executions over time">'
           + _axis(sc, height, "seconds since the capture began") + _gaps(shown, sc, height, sc.span)
           + "".join(rows) + "</svg>")
    return svg + (WATERFALL_LEGEND if legend else "") + _not_drawn(steps, len(shown), hi, anchor)


def _not_drawn(steps: list[Step], shown: int, hi: float, anchor: Any) -> str:
    """The line under a waterfall cut at `shown` rows: how many are not drawn, and the failed ones among
    them (the first 10, linked): what went wrong late in a long session is still one click away."""
    if len(steps) <= shown:
        return ""
    failed = [s for s in steps[shown:] if s.outcome in ("failed", "cut")]
    links = []
    for s in failed[:10]:
        link = _link(anchor, s.seq, s.call)
        text = _e(f"{s.label} at {s.start:.2f} s")
        links.append(f'<a href="#{link}">{text}</a>' if link else text)
    tail = ""
    if failed:
        tail = (f" Not drawn, {len(failed)} failed or cut: " + ", ".join(links)
                + (f" and {len(failed) - 10} more" if len(failed) > 10 else "") + ".")
    return (f'<p class="muted">The first {shown} of {len(steps):,} steps are drawn (up to {fmt_secs(hi)}); every call '
            f'is in the conversation below.{tail}</p>')


WATERFALL_LEGEND = (
    '<p class="legend"><span class="sw wf-call wf-wait"></span> LLM call: waiting for the first token '
    '<span class="sw wf-call"></span> streaming to the last token <span class="sw wf-tool"></span> tool execution '
    '(call issued → result) <span class="sw wf-failed"></span> failed ✕ <span class="sw wf-gap"></span> idle · '
    '↻ a retry after a failed call</p>')


_TOKEN_PARTS = (("input", "wf-tin", "input"), ("cache_read", "wf-tcr", "cache read"),
                ("cache_write", "wf-tcw", "cache write"), ("output", "wf-tout", "output"))


def _token_row(r: TokenRow, y: float, top: int, width: float, link: str) -> str:
    """One call's stacked bar, its total (and cost) after it, its label linking to the call."""
    parts = []
    x = float(LABEL_W)
    bits = []
    for attr, cls, name in _TOKEN_PARTS:
        n = getattr(r, attr)
        if not n:
            continue
        w = max(3.0, width * n / top)  # (a few output tokens beside 20,000 input still show)
        parts.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{max(w, 1.0):.1f}" height="{ROW_H - 6}" class="{cls}">'
                     f'<title>{_e(r.label)}: {n:,} {name} tokens</title></rect>')
        x += w
        bits.append(f"{n:,} {name}")
    cost = f" · ${r.cost:.4f}" if r.cost is not None else ""
    parts.append(f'<text x="{x + 4:.1f}" y="{y + ROW_H - 4}" class="wf-note">{_e(f"{r.total:,}" + cost)}'
                 f'<title>{_e(", ".join(bits) + cost)}</title></text>')
    label = f'<text x="4" y="{y + ROW_H - 4}" class="wf-label">{_e(r.label[:34])}</text>'
    parts.append(f'<a href="#{link}">{label}</a>' if link else label)
    return "".join(parts)


def _token_summary(rows: list[TokenRow]) -> str:
    costs = [r.cost for r in rows if r.cost is not None]
    sums = {name: sum(getattr(r, attr) for r in rows) for attr, _, name in _TOKEN_PARTS}
    text = ", ".join(f"{n:,} {name}" for name, n in sums.items() if n)
    return text + (f"; cost ${sum(costs):.4f}" if costs else "")


def token_bars(rows: list[TokenRow], *, anchor: Any = None, max_rows: int = MAX_ROWS) -> str:
    """Per-call token bars as SVG (stacked: input, cache read, cache write, output; the cost after the
    numbers when known), and a line with the totals (and the calls left out)."""
    rows = [r for r in rows if r.total]
    if not rows:
        return ""
    shown = rows[:max_rows]
    top = max(r.total for r in shown)
    parts = [_token_row(r, i * ROW_H, top, PLOT_W - 160, _link(anchor, r.seq, r.call)) for i, r in enumerate(shown)]
    height = ROW_H * len(shown)
    drawn = (f'<svg class="tokens" viewBox="0 0 {LABEL_W + PLOT_W + 70} {height + 6}" width="{LABEL_W + PLOT_W + 70}" '
             f'role="img" aria-label="tokens per LLM call">' + "".join(parts) + "</svg>")
    more = f" (the first {len(shown)} of {len(rows):,} calls are drawn)" if len(rows) > len(shown) else ""
    return drawn + TOKEN_LEGEND + f'<p class="muted">All {len(rows):,} calls: {_e(_token_summary(rows))}{more}.</p>'


TOKEN_LEGEND = ('<p class="legend"><span class="sw wf-tin"></span> input <span class="sw wf-tcr"></span> cache read '
                '<span class="sw wf-tcw"></span> cache write <span class="sw wf-tout"></span> output</p>')

CSS = """
svg.waterfall,svg.tokens{max-width:100%;height:auto;font-size:11px;background:var(--bg)}
svg .wf-grid{stroke:var(--line)}svg .wf-axis{fill:var(--muted)}svg .wf-title{font-style:italic}
svg .wf-stripe{fill:var(--bg2)}svg .wf-label{fill:var(--fg);font-family:ui-monospace,monospace}
svg a .wf-label:hover{fill:var(--acc);text-decoration:underline}
svg .wf-call,.sw.wf-call{fill:#2f6fd6;background:#2f6fd6}svg .wf-wait,.sw.wf-wait{fill:#9dbbec;background:#9dbbec}
svg .wf-tool,.sw.wf-tool{fill:#8a63d2;background:#8a63d2}
svg .wf-failed,.sw.wf-failed{fill:#c62f2f;background:#c62f2f}svg .wf-cut{fill:#b7791f;stroke:#b7791f;stroke-dasharray:3 2}
svg .wf-open{opacity:.55}svg .wf-gap,.sw.wf-gap{fill:rgba(198,47,47,.10);background:rgba(198,47,47,.25)}
svg .wf-gaptext{fill:var(--err);font-size:10px}svg .wf-x{fill:var(--err);font-weight:600}svg .wf-note{fill:var(--muted)}
svg .wf-inside{fill:#fff}
svg .wf-tin,.sw.wf-tin{fill:#2f6fd6;background:#2f6fd6}svg .wf-tcr,.sw.wf-tcr{fill:#7fb3a0;background:#7fb3a0}
svg .wf-tcw,.sw.wf-tcw{fill:#e0a030;background:#e0a030}svg .wf-tout,.sw.wf-tout{fill:#2f8f4e;background:#2f8f4e}
"""
