"""The report as ONE self-contained HTML file: inline CSS and JS, no network, works from file://.

The summary, the findings, the pictures (`svg`: the session's waterfall and the tokens per call), the
channels, sessions, timeline, notes, the conversation (`thread_view`: the thread as the model saw it)
and the first page of messages are plain HTML, readable without JavaScript; two captures start with
their comparison (`compare_view`). The records are embedded as data: compact JSON lines in
`<script type="text/plain">` chunks (with `<` and U+2028/U+2029 escaped, so no `</script>` can end
them early) plus a small index; the script shows them a page at a time, filters them, and parses a
record only when its raw view is opened. The page is bounded whatever the capture's size (MAX_PAGE):
`embed.Selection` keeps the first, last and linked records, cut past 2 KB, and says how to see the
rest (`wirecap cat CAP --seq N`). The file is written as a stream: the capture is read again, never
held in memory.
"""

from __future__ import annotations

import io
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from html import escape
from typing import IO, Any

import orjson

from wirecap.analysis.report import common, compare_view, svg
from wirecap.analysis.report.embed import Gap, Kept, Selection, cat_command, see_whole
from wirecap.analysis.report.model import (
    CaptureReport,
    ChannelActivity,
    Report,
    preview,
    timeline_bins,
)
from wirecap.analysis.report.thread_view import THREAD_CSS, note_places, thread_html
from wirecap.analysis.report.thread_view import linked_seqs as thread_linked_seqs
from wirecap.capture.payload import payload_size
from wirecap.capture.redact import Redactor

PAGE_SIZE = 100
CHUNK = 1000  # records per embedded data chunk
MAX_STATIC_RAW = 4_000
MAX_PAGE = 9_000_000  # bytes a page aims at, whatever the capture's size (the embedded records adapt)
MAX_TABLE_ROWS = 200  # channels, sessions and transport calls listed (a capture of 50,000 HTTP exchanges stays readable)
MAX_LANES = 60  # timeline lanes
MIN_EMBED = 1_000_000  # bytes of embedded records a page keeps even when its summary parts are big
TIMELINE_BINS = 240


def _e(v: Any) -> str:
    return escape(str(v), quote=True)


def script_safe(data: bytes) -> bytes:
    """JSON text made safe inside a <script> element: `<` and the JS line separators escaped.

    In JSON these can only occur inside strings, where `\\u003c` etc. mean the same thing."""
    return data.replace(b"<", b"\\u003c").replace("\u2028".encode(), b"\\u2028").replace("\u2029".encode(), b"\\u2029")


def seq_anchor(cap_index: int, seq: int | None) -> str:
    """The id of the row of record `seq` (the reader guarantees one; a hand-made model may lack it)."""
    return f"seq-{seq}" if cap_index == 0 else f"c{cap_index}-seq-{seq}"


def _table(headers: list[str], rows: list[list[str]], cls: str = "") -> str:
    """rows hold ready-made (escaped) HTML cells."""
    if not rows:
        return '<p class="muted">none</p>'
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<div class="scroll"><table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _seq_link(ci: int, seq: int | None, label: str | None = None) -> str:
    if seq is None:
        return ""
    return f'<a href="#{seq_anchor(ci, seq)}">{_e(label or f"#{seq}")}</a>'


_LANE_H, _LABEL_W, _PLOT_W = 24, 150, 830
_LEGEND = ('<p class="legend"><span class="sw msg"></span> messages (bar height = density) '
           '<span class="sw ttft"></span> first reply (time to first token) '
           '<span class="sw gap"></span> silence ≥ 2 s <span class="sw life"></span> channel open</p>')


def _axis(dur: float, h: int, x: Callable[[float], float]) -> str:
    anchors = ("start", "middle", "middle", "middle", "end")
    return "".join(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="0" y2="{h - 18}" class="tick"/>'
                   f'<text x="{x(t):.1f}" y="{h - 4}" class="axis" text-anchor="{anchors[i]}">{_e(common.fmt_secs(t) or "0 ms")}</text>'
                   for i, t in ((i, dur * i / 4) for i in range(5)))


def _density(c: ChannelActivity, y: int, dur: float) -> str:
    """The lane's message bars: one per non-empty slice of the capture, height by count."""
    bins = timeline_bins(c.times, dur, TIMELINE_BINS)
    top = max(bins) or 1
    bw = _PLOT_W / TIMELINE_BINS
    parts = []
    for bi, n in enumerate(bins):
        if n:
            bh = 4 + (_LANE_H - 10) * n / top
            parts.append(f'<rect x="{_LABEL_W + bi * bw:.1f}" y="{y + _LANE_H - 3 - bh:.1f}" width="{max(bw, 1.5):.1f}" '
                         f'height="{bh:.1f}" class="msg"><title>{n} message(s) near {dur * bi / TIMELINE_BINS:.2f}s</title></rect>')
    return "".join(parts)


def _lane(c: ChannelActivity, li: int, dur: float, x: Callable[[float], float]) -> str:
    """One channel's lane: its label, its open life, message density, silences and first reply."""
    y = li * _LANE_H
    parts = [f'<text x="4" y="{y + 16}" class="lane">{_e(c.ch)}</text>'
             f'<rect x="{_LABEL_W}" y="{y + 3}" width="{_PLOT_W}" height="{_LANE_H - 6}" class="lanebg"/>']
    if c.opened is not None or c.first is not None:
        a = c.opened if c.opened is not None else (c.first or 0.0)
        b = c.closed if c.closed is not None else (c.last if c.last is not None else dur)
        parts.append(f'<rect x="{x(a):.1f}" y="{y + 10}" width="{max(1.0, x(b) - x(a)):.1f}" height="4" class="life">'
                     f'<title>{_e(c.ch)}: open {a:.3f}s → {b:.3f}s</title></rect>')
    parts.append(_density(c, y, dur))
    for a, b in c.gaps:
        parts.append(f'<rect x="{x(a):.1f}" y="{y + 2}" width="{max(1.0, x(b) - x(a)):.1f}" height="{_LANE_H - 4}" '
                     f'class="gap"><title>{_e(c.ch)}: silent {common.fmt_secs(b - a)} ({a:.2f}s → {b:.2f}s)</title></rect>')
    if c.first_reply_at is not None:
        fx = x(c.first_reply_at)
        parts.append(f'<path d="M{fx:.1f},{y + 1} l-4,-0 l4,7 l4,-7 z" class="ttft"><title>{_e(c.ch)}: first reply after '
                     f'{_e(common.fmt_secs(c.first_reply))}</title></path><line x1="{fx:.1f}" x2="{fx:.1f}" y1="{y + 3}" '
                     f'y2="{y + _LANE_H - 3}" class="ttftline"/>')
    return "".join(parts)


def _marks(chans: list[ChannelActivity]) -> str:
    """The timeline's marks as text (first replies, silences), for readers of the page without the SVG."""
    marks = []
    for c in chans:
        bits = []
        if c.first_reply is not None:
            bits.append(f"first reply after {_e(common.fmt_secs(c.first_reply))}")
        bits += [f"silent {_e(common.fmt_secs(b - a))} from {a:.2f}s" for a, b in c.gaps]
        if bits:
            marks.append(f"<li><code>{_e(c.ch)}</code>: {'; '.join(bits)}</li>")
    return f"<ul class=\"marks\">{''.join(marks)}</ul>" if marks else ""


def _timeline(cap: CaptureReport) -> str:
    chans = [c for c in cap.channels if len(c.times) or c.opened is not None]
    if not chans:
        return '<p class="muted">no channels</p>'
    more = ""
    if len(chans) > MAX_LANES:
        more = f'<p class="muted">The first {MAX_LANES} of {len(chans):,} channels are drawn.</p>'
        chans = chans[:MAX_LANES]
    dur = cap.duration or 0.0
    h = _LANE_H * len(chans) + 26
    scale = _PLOT_W / dur if dur > 0 else 0.0

    def x(t: float) -> float:
        return _LABEL_W + (t * scale if scale else 0.0)

    drawn = (f'<svg class="timeline" viewBox="0 0 {_LABEL_W + _PLOT_W + 10} {h}" role="img" '
           f'aria-label="messages over time, one lane per channel">' + _axis(dur, h, x)
           + "".join(_lane(c, li, dur, x) for li, c in enumerate(chans)) + "</svg>")
    return drawn + _LEGEND + more + _marks(chans)


def _row(ci: int, rec: dict[str, Any], flags: str, path: str) -> str:
    seq = rec.get("seq")
    raw = orjson.dumps(rec, option=orjson.OPT_INDENT_2).decode()
    if len(raw) > MAX_STATIC_RAW:
        raw = raw[:MAX_STATIC_RAW] + f"\n… ({len(raw) - MAX_STATIC_RAW:,} more characters; see it whole: {see_whole(path, seq)})"
    size = payload_size(rec) if rec.get("type") == "msg" else ""
    t = rec.get("t")
    return (f'<tr id="{seq_anchor(ci, seq)}"><td class="num"><a href="#{seq_anchor(ci, seq)}">{_e(seq)}</a></td>'
            f'<td class="num">{_e(f"{t:.3f}" if isinstance(t, (int, float)) else "")}</td><td>{_e(rec.get("ch", ""))}</td>'
            f'<td>{_e(rec.get("dir", ""))}</td><td>{_e(rec.get("type", ""))}</td><td class="num">{_e(size)}</td>'
            f'<td class="pv">{flags}<details><summary>{_e(preview(rec, 120)) or "&nbsp;"}</summary><pre>{_e(raw)}</pre></details></td></tr>')


def _flags_for(seq: int, ch: str | None, cap: CaptureReport, findings_by_seq: dict[int, list[dict[str, Any]]]) -> str:
    out = ""
    for f in findings_by_seq.get(seq, []):
        out += f'<span class="badge sev-{_e(f["severity"])}" title="{_e(f["rule"] + ": " + f["message"])}">{_e(f["severity"])}</span>'
    for n in cap.notes:
        if n.seq is not None and n.covers(seq, ch):
            out += f'<span class="badge note-b" title="{_e(n.text)}">✎ {_e(n.tag)}</span>'
    return out


def _transport(cap: CaptureReport, ci: int) -> str:
    if cap.transport is None:
        return ""
    lines = "".join(f"<li>{_e(line)}</li>" for line in common.transport_lines(cap))
    rows = common.call_rows(cap)
    calls = _table(common.CALL_HEADERS, [[_e(v) for v in r] for r in rows[:MAX_TABLE_ROWS]])
    more = (f'<p class="muted">The first {MAX_TABLE_ROWS} of {len(rows):,} calls are listed '
            f'(<code>wirecap stats --calls {_e(cap.path)}</code> lists them all).</p>' if len(rows) > MAX_TABLE_ROWS else "")
    return f'<section id="c{ci}-transport"><h3>Transport</h3><ul>{lines}</ul>{calls}{more}</section>'


def _pictures(cap: CaptureReport, ci: int) -> str:
    """The waterfall of the session and the tokens per call (inline SVG), or why there are none."""
    anchor = _Anchor(ci)
    steps = svg.steps_of(cap)
    fall = svg.waterfall(steps, anchor=anchor)
    bars = svg.token_bars(svg.token_rows_of(cap), anchor=anchor)
    parts = [f'<section id="c{ci}-pictures" class="pictures"><h3>Waterfall</h3>']
    parts.append(fall or '<p class="muted">No LLM call or tool execution on the wire to draw.</p>')
    if bars:
        parts.append(f"<h3>Tokens per LLM call</h3>{bars}{_reported_cost(cap)}")
    parts.append("</section>")
    return "".join(parts)


def _reported_cost(cap: CaptureReport) -> str:
    """What the client itself says the session cost (Claude Code's result line), when the wire does
    not price the calls: said as the client's figure for the whole session, never spread over calls."""
    if any(getattr(c, "cost_usd", None) is not None for c in cap.calls or ()):
        return ""
    costs = [(str(s.get("session") or s.get("ch")), s["total_cost"]) for s in cap.sessions or ()
             if isinstance(s.get("total_cost"), (int, float))]
    if not costs:
        return ""
    said = "; ".join(f"${cost:.4f} for session {name}" for name, cost in costs[:5])
    more = f" (and {len(costs) - 5} more sessions)" if len(costs) > 5 else ""
    return (f'<p class="muted">Cost the client reported: {_e(said)}{more}; the wire does not price each '
            "call.</p>")


class _Anchor:
    """A record's id in capture `ci`'s part of the page (`#seq-N`, `#c1-seq-N`), and a thread call's
    (`#cI-call-N`, where the thread shows it)."""

    def __init__(self, ci: int) -> None:
        self.ci = ci

    def __call__(self, seq: int) -> str:
        return seq_anchor(self.ci, seq)

    def call(self, n: int) -> str:
        return f"c{self.ci}-call-{n}"


BOTH_ROWS = 60  # rows of each capture in the two-capture waterfalls


def _both_waterfalls(report: Report) -> str:
    """A's and B's waterfalls one above the other on ONE time axis (seconds since each capture began):
    where one run waited, failed or retried beside the other."""
    steps = [svg.steps_of(cap) for cap in report.captures]
    drawn = [s[:BOTH_ROWS] for s in steps if s]
    if not drawn:
        return ""
    spans = [svg.time_span(s) for s in drawn]
    span = (min(a for a, _ in spans), max(b for _, b in spans))
    parts = ['<section id="compare-pictures"><h3>A and B on one time axis</h3>']
    for ci, (cap, st) in enumerate(zip(report.captures, steps, strict=True)):
        fall = svg.waterfall(st, anchor=_Anchor(ci), max_rows=BOTH_ROWS, span=span, legend=ci == 1)
        parts.append(f'<h4>{"AB"[ci]}: <code>{_e(cap.name)}</code></h4>'
                     + (fall or '<p class="muted">No LLM call or tool execution on the wire to draw.</p>'))
    parts.append("</section>")
    return "".join(parts)


def _channels(cap: CaptureReport, ci: int) -> str:
    rows = [[_e(v) for v in r] for r in common.channel_rows(cap)[:MAX_TABLE_ROWS]]
    more = (f'<p class="muted">The first {MAX_TABLE_ROWS} of {len(cap.channels):,} channels are listed '
            f'(<code>wirecap info {_e(cap.path)}</code> lists them all).</p>' if len(cap.channels) > MAX_TABLE_ROWS else "")
    return f'<section id="c{ci}-channels"><h3>Channels</h3>{_table(common.CHANNEL_HEADERS, rows)}{more}</section>'


def _sessions(cap: CaptureReport, ci: int) -> str:
    if cap.sessions is None:
        return f'<section id="c{ci}-sessions"><h3>Sessions</h3><p class="muted">{_e(cap.sessions_note)}</p></section>'
    rows = common.session_rows(cap)
    more = (f'<p class="muted">The first {MAX_TABLE_ROWS} of {len(rows):,} sessions are listed '
            f'(<code>wirecap stats {_e(cap.path)}</code> lists them all).</p>' if len(rows) > MAX_TABLE_ROWS else "")
    table = _table(common.SESSION_HEADERS, [[_e(v) for v in r] for r in rows[:MAX_TABLE_ROWS]])
    return f'<section id="c{ci}-sessions"><h3>Sessions</h3>{table}{more}</section>'


def _findings(cap: CaptureReport, ci: int) -> str:
    parts = [f'<section id="c{ci}-findings"><h3>Findings</h3>']
    if cap.findings is None:
        parts.append(f'<p class="muted">{_e(cap.findings_note)}</p>')
    else:
        rows = [[f'<span class="badge sev-{_e(f["severity"])}">{_e(f["severity"])}</span>', f"<code>{_e(f['rule'])}</code>",
                 _e(f["message"]), _seq_link(ci, f.get("seq"), common.finding_where(f)) or _e(common.finding_where(f))]
                for f in cap.findings]
        parts.append(_table(["severity", "rule", "message", "where"], rows, "findings") if rows else "<p>No findings.</p>")
    problems = common.capture_problems(cap)
    if problems:
        parts.append('<h4>Capture problems</h4><ul class="problems">' + "".join(f"<li>{_e(p)}</li>" for p in problems) + "</ul>")
    parts.append("</section>")
    return "".join(parts)


def _notes(cap: CaptureReport, ci: int) -> str:
    parts = [f'<section id="c{ci}-notes"><h3>Notes</h3>']
    shown_at = note_places(cap).anchor_note  # where each note sits in the conversation
    rows = [[f"<code>{_e(n.id)}</code>", (_seq_link(ci, n.seq, n.target()) or _e(n.target())) + (
             f' · <a href="#c{ci}-{shown_at[n.id]}">in the conversation</a>' if n.id in shown_at else ""),
             *[_e(v) for v in common.note_cells(n)[2:]]] for n in cap.notes]
    parts.append(_table(common.NOTE_HEADERS, rows, "notes") if rows else "<p>No notes.</p>")
    parts += [f'<p class="warn">⚠ {_e(w)}</p>' for w in cap.note_warnings]
    parts.append("</section>")
    return "".join(parts)


def _capture_static(cap: CaptureReport, ci: int, two: bool) -> str:
    """One capture's summary parts, what matters first: the summary, the findings, the pictures; then
    channels, sessions, transport, the message timeline, notes and the conversation."""
    summary = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in cap.summary_rows())
    parts = [f'<section class="capture" id="c{ci}"><h2>{"ABCD"[ci] + ": " if two else ""}<code>{_e(cap.name)}</code></h2>',
             f'<section id="c{ci}-summary"><h3>Summary</h3><table class="kv">{summary}</table></section>',
             _findings(cap, ci), _pictures(cap, ci), _channels(cap, ci), _sessions(cap, ci), _transport(cap, ci),
             f'<section id="c{ci}-timeline"><h3>Timeline</h3>{_timeline(cap)}</section>', _notes(cap, ci),
             f'<section id="c{ci}-conversation"><h3>Conversation</h3>{thread_html(cap, ci, lambda s: seq_anchor(ci, s))}'
             '</section>']
    parts += [f'<p class="warn">⚠ {_e(w)}</p>' for w in cap.warnings]
    return "".join(parts)


def _messages_head(cap: CaptureReport, ci: int) -> str:
    chans = "".join(f'<option value="{_e(c.ch)}">{_e(c.ch)}</option>' for c in cap.channels)
    return (f'<section id="c{ci}-messages" class="messages" data-cap="{ci}"><h3>Messages</h3>'
            f'<div class="controls"><input type="search" class="wc-search" id="wc-search-{ci}" '
            f'placeholder="Filter messages (text, channel, type)…" aria-label="filter messages">'
            f'<select class="wc-ch" aria-label="channel"><option value="">all channels</option>{chans}</select>'
            f'<button type="button" class="wc-prev">◀ prev</button><span class="wc-page"></span>'
            f'<button type="button" class="wc-next">next ▶</button><span class="wc-count muted"></span></div>'
            f'<p class="wc-missing warn" hidden></p>'
            f'<div class="scroll"><table class="msgs"><thead><tr><th>seq</th><th>t (s)</th><th>ch</th><th>dir</th>'
            f'<th>type</th><th>bytes</th><th>payload (click for the raw record)</th></tr></thead>'
            f'<tbody id="wc-rows-{ci}">')


def _spool_capture_data(ci: int, picked: Iterable[Kept | Gap], spool: IO[str], index: IO[str], path: str) -> None:
    """Write the records `picked` for the page (`embed.Selection`) to `spool` as chunks of JSON lines, and
    the index (a JSON array, to put first) to `index`: both go to files, so memory stays one chunk
    whatever the capture's size. A gap (records left out) is a line and an index entry of its own.

    The index and the script come before the chunks in the page, so the first page of messages is
    rendered while the browser is still reading the bulk of the data."""
    buf: list[bytes] = []
    n = 0
    dumps = orjson.dumps

    def flush() -> None:
        spool.write(f'<script type="text/plain" class="wc-raw" id="wc-raw-{ci}-{(n - 1) // CHUNK}" data-cap="{ci}">')
        spool.write(script_safe(b"\n".join(buf)).decode())
        spool.write("</script>\n")
        buf.clear()

    index.write("[")
    for item in picked:
        if isinstance(item, Gap):
            span = f"{item.first}-{item.last}" if item.last != item.first else str(item.first)
            text = (f"… {item.count:,} records not in this page (seq {span}); list them with "
                    f"{cat_command(path)} --seq {span}")
            buf.append(dumps({"gap": {"first": item.first, "last": item.last, "records": item.count}, "text": text}))
            entry = dumps([item.first, None, "", "gap", "", item.count, text])
        else:
            rec = item.rec
            buf.append(item.line)
            rtype = rec.get("type", "")
            size = (item.rec["cut"]["bytes"] if item.cut else payload_size(rec)) if rtype == "msg" else None
            entry = dumps([rec.get("seq"), rec.get("t"), rec.get("ch", ""), rtype, rec.get("dir", ""),
                           size, preview(rec, 100)])
        index.write(("," if n else "") + script_safe(entry).decode())
        n += 1
        if len(buf) == CHUNK:
            flush()
    if buf:
        flush()
    index.write("]")


def linked_seqs(cap: CaptureReport) -> set[int]:
    """The records the page links to (findings, notes, conversation entries): embedded even past the
    head of a big capture, while the budget for them lasts."""
    seqs = {f["seq"] for f in cap.findings or [] if isinstance(f.get("seq"), int)}
    for n in cap.notes:
        if n.seq is not None:
            seqs.add(n.seq)
    for entries in cap.conversation.values():
        for e in entries:
            seqs.update(e.seqs or ((e.seq,) if e.seq is not None else ()))
    seqs.update(thread_linked_seqs(cap.threads))  # (the thread's links: requests, replies, stdout lines)
    return seqs


def _head(report: Report) -> str:
    """The page up to `<main>`: head (CSS, a CSP that forbids the network), header and navigation."""
    title = " vs ".join(c.name for c in report.captures)
    two = len(report.captures) == 2
    nav = "".join((f'<b class="navcap">{"AB"[i]}:</b>' if two else "")
                  + "".join(f'<a href="#c{i}-{s}">{s}</a>'
                            for s in ("summary", "findings", "pictures", "timeline", "notes", "conversation", "messages"))
                  for i in range(len(report.captures)))
    diff_link = '<a href="#compare"><b>A vs B</b></a>' if two else ""
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'; '
            f'script-src \'unsafe-inline\'; img-src data:">'
            f"<title>wirecap report: {_e(title)}</title><style>{CSS}{svg.CSS}{THREAD_CSS}</style></head><body>"
            f'<header><h1>wirecap report</h1><nav>{diff_link}{nav}</nav></header><main>')


def _findings_by_seq(cap: CaptureReport) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for f in cap.findings or []:
        if isinstance(f.get("seq"), int):
            out.setdefault(f["seq"], []).append(f)
    return out


def _first_rows(out: IO[str], cap: CaptureReport, ci: int, findings_by_seq: dict[int, list[dict[str, Any]]],
                page_size: int) -> int:
    """The first page of records as static rows (what a reader without JavaScript sees); returns how many."""
    shown = 0
    if cap.iter_records is not None:
        for rec in cap.iter_records():
            out.write(_row(ci, rec, _flags_for(rec.get("seq", 0), rec.get("ch"), cap, findings_by_seq), cap.path))
            shown += 1
            if shown >= page_size:
                break
    return shown


def _capture_meta(cap: CaptureReport, ci: int, findings_by_seq: dict[int, list[dict[str, Any]]]) -> dict[str, Any]:
    """What the script needs of one capture to lay out its rows (badges of findings and notes)."""
    return {
        "prefix": "" if ci == 0 else f"c{ci}-",
        "records": cap.records,
        "cat": cat_command(cap.path),
        # Texts here were redacted when the model was built (rule names are ours, left alone).
        "findings": {str(s): [[f["severity"], f["rule"], f["message"]] for f in fs] for s, fs in findings_by_seq.items()},
        "notes": [[n.id, n.seq, n.seq_end if n.seq_end is not None else n.seq, n.ch, n.tag, n.text]
                  for n in cap.notes if n.seq is not None],
    }


def _embed_records(out: IO[str], report: Report, budget: int) -> None:
    """The records of every capture as data (within `budget` bytes in all: `embed.Selection`), with the
    script between the index and the bulk (spooled to temporary files: memory stays one chunk whatever the
    captures' size)."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as spool:
        for ci, cap in enumerate(report.captures):
            out.write(f'<script type="application/json" id="wc-index-{ci}">')
            pick = Selection(budget // len(report.captures), cap.path, linked=linked_seqs(cap))
            records = _sized_records(cap)
            if records is None:
                out.write("[]")
            else:
                with tempfile.TemporaryFile("w+", encoding="utf-8") as index:
                    _spool_capture_data(ci, pick.select(records, cap.shown), spool, index, cap.path)
                    index.seek(0)
                    shutil.copyfileobj(index, out, 1 << 20)
            out.write("</script>\n")
        out.write(f"<script>{JS}</script>\n")
        spool.seek(0)
        shutil.copyfileobj(spool, out, 1 << 20)


def _sized_records(cap: CaptureReport) -> Iterator[tuple[dict[str, Any], bytes]] | None:
    """The capture's records with their lines: as written (redacted only when kept: `cap.shown`), else
    those `iter_records` gives (redacted already; a hand-made report), serialized."""
    if cap.iter_lines is not None:
        return cap.iter_lines()
    if cap.iter_records is None:
        return None
    return ((rec, orjson.dumps(rec)) for rec in cap.iter_records())


class _Counted:
    """A text stream that counts the bytes (UTF-8) written through it (the page's budget)."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.n = 0

    def write(self, s: str) -> int:
        self.n += len(s) if s.isascii() else len(s.encode())  # (bytes in the file: UTF-8)
        return self.out.write(s)


def render_html(report: Report, out: IO[str], *, redactor: Redactor | None = None, page_size: int = PAGE_SIZE,
                max_bytes: int = MAX_PAGE) -> None:
    """Write the whole report to `out` (a text stream), about `max_bytes` at most: the summary parts are
    bounded on their own; the embedded records get what they leave (at least MIN_EMBED)."""
    redactor = redactor if redactor is not None else Redactor()
    counted = _Counted(out)
    out = counted  # type: ignore[assignment]
    two = len(report.captures) == 2
    out.write(_head(report))
    if two:  # A and B side by side first: what changed is what a two-capture report is read for
        out.write(common.redact_text(redactor, compare_view.html_section(report.compare, report.diff_note)
                                     + _both_waterfalls(report), common.rule_names(report)))
    meta: dict[str, Any] = {"page": page_size, "chunk": CHUNK, "captures": []}
    for ci, cap in enumerate(report.captures):
        findings_by_seq = _findings_by_seq(cap)
        static = _capture_static(cap, ci, two)
        out.write(static if cap.pre_redacted else common.redact_text(redactor, static, common.rule_names(report)))
        out.write(_messages_head(cap, ci))
        shown = _first_rows(out, cap, ci, findings_by_seq, page_size)
        out.write("</tbody></table></div>")
        out.write(f'<p class="nojs muted">Without JavaScript only the first {shown} of {cap.records} records are listed.</p>'
                  "</section></section>")
        meta["captures"].append(_capture_meta(cap, ci, findings_by_seq))
    out.write("</main><footer class=\"muted\">made by <code>wirecap report</code>; secrets are redacted.</footer>\n")
    out.write('<script type="application/json" id="wc-meta">')
    out.write(script_safe(orjson.dumps(meta)).decode())
    out.write("</script>\n")
    _embed_records(out, report, max(MIN_EMBED, max_bytes - counted.n - len(JS) - 2_000))
    out.write("</body></html>\n")


def render_html_string(report: Report, **kw: Any) -> str:
    buf = io.StringIO()
    render_html(report, buf, **kw)
    return buf.getvalue()


CSS = """
:root{--fg:#1d2330;--muted:#6a7385;--bg:#fff;--bg2:#f5f7fa;--line:#dde2ea;--acc:#2f6fd6;--err:#c62f2f;--warn:#b7791f;
--ok:#2f8f4e;--note:#fff6d6;--hl:#fff1a8;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
@media (prefers-color-scheme:dark){:root{--fg:#e3e7ee;--muted:#98a2b3;--bg:#14171c;--bg2:#1d2128;--line:#30363f;
--acc:#6ea2ff;--note:#3a3418;--hl:#4a4420}}
h2 code{font-size:inherit}*{box-sizing:border-box}body{margin:0;color:var(--fg);background:var(--bg);font-size:14px;line-height:1.45}
header{position:sticky;top:0;z-index:5;background:var(--bg2);border-bottom:1px solid var(--line);padding:6px 16px;
display:flex;gap:16px;align-items:baseline;flex-wrap:wrap}
header h1{font-size:16px;margin:0}.navcap{margin:0 4px 0 8px;font-size:13px}nav a{margin-right:10px;color:var(--acc);text-decoration:none;font-size:13px}
main{padding:8px 16px 40px;max-width:1400px;margin:0 auto}h2{font-size:20px;margin:18px 0 6px}
h3{font-size:16px;margin:22px 0 6px;padding-bottom:3px;border-bottom:1px solid var(--line)}h4{margin:12px 0 4px}
section{scroll-margin-top:48px}table{border-collapse:collapse;font-size:13px}
th,td{border-bottom:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--bg2);font-weight:600}table.kv th{width:190px}.scroll{overflow-x:auto}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
pre{background:var(--bg2);border:1px solid var(--line);padding:8px;overflow:auto;max-height:480px;white-space:pre-wrap;
word-break:break-word;margin:4px 0}
.muted{color:var(--muted)}.warn{color:var(--warn)}a{color:var(--acc)}
.badge{display:inline-block;border-radius:9px;padding:0 7px;font-size:11.5px;margin-right:4px;background:var(--bg2);
border:1px solid var(--line)}.sev-error{background:var(--err);color:#fff;border-color:var(--err)}
.sev-warning{background:var(--warn);color:#fff;border-color:var(--warn)}.sev-info{background:var(--acc);color:#fff}
.note-b{background:var(--note)}
.note{background:var(--note);border-left:3px solid var(--warn);padding:3px 8px;margin:4px 0 4px 16px;font-size:13px}
.conv{border:1px solid var(--line);border-radius:6px;padding:6px 10px;margin:8px 0}
.entry{margin:6px 0;padding:4px 8px;border-left:3px solid var(--line)}.entry .who{font-weight:600}
.entry .seq{font-size:12px}.entry .text{white-space:pre-wrap}
.k-user{border-left-color:var(--acc);background:rgba(47,111,214,.06)}.k-assistant{border-left-color:var(--ok)}
.k-tool_call,.k-tool_result{border-left-color:#8a63d2}.k-reasoning{border-left-color:var(--muted)}
.is-error,.k-error{border-left-color:var(--err);background:rgba(198,47,47,.07)}
.k-session,.k-result,.k-status{font-size:12.5px;color:var(--muted)}
svg.timeline{width:100%;max-width:1000px;height:auto;background:var(--bg);font-size:11px}
svg .lane{fill:var(--fg);font-family:ui-monospace,monospace}svg .axis{fill:var(--muted)}svg .tick{stroke:var(--line)}
svg .lanebg{fill:var(--bg2)}svg .msg{fill:var(--acc);opacity:.8}svg .gap{fill:var(--err);opacity:.18}
svg .life{fill:var(--muted);opacity:.35}svg .ttft{fill:var(--ok)}svg .ttftline{stroke:var(--ok);stroke-dasharray:2 2}
.legend{font-size:12px;color:var(--muted)}.sw{display:inline-block;width:10px;height:10px;margin:0 3px 0 10px;vertical-align:-1px}
.sw.msg{background:var(--acc)}.sw.ttft{background:var(--ok)}.sw.gap{background:rgba(198,47,47,.35)}.sw.life{background:var(--muted)}
.marks{font-size:12.5px;margin:4px 0}
.controls{display:flex;gap:8px;align-items:center;flex-wrap:wrap;margin:6px 0;position:sticky;top:34px;background:var(--bg);
padding:4px 0;z-index:4}
.controls input{flex:1 1 280px;padding:5px 8px;font-size:14px;border:1px solid var(--line);border-radius:5px;
background:var(--bg);color:var(--fg)}.controls select,.controls button{padding:4px 8px;font-size:13px}
table.msgs{width:100%;table-layout:fixed}table.msgs th:nth-child(1){width:70px}table.msgs th:nth-child(2){width:80px}
table.msgs th:nth-child(3){width:90px}table.msgs th:nth-child(4){width:48px}table.msgs th:nth-child(5){width:72px}
table.msgs th:nth-child(6){width:70px}td.pv summary{cursor:pointer;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;
font-family:ui-monospace,monospace;font-size:12px}td.pv details[open] summary{white-space:normal}
td.pv .badge{float:right}tr.gap td{text-align:center;font-style:italic;background:var(--bg2)}tr.hl>td{background:var(--hl)}tr:target>td{background:var(--hl)}
.nojs{font-size:12px}html.js .nojs{display:none}footer{padding:10px 16px;font-size:12px}
"""

JS = r"""
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  var meta = JSON.parse(document.getElementById("wc-meta").textContent);
  var PAGE = meta.page, CHUNK = meta.chunk;
  function el(tag, cls, text) { var e = document.createElement(tag); if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text); return e; }
  function View(ci, cm) {
    var self = this;
    this.ci = ci; this.prefix = cm.prefix; this.cm = cm;
    var idxEl = document.getElementById("wc-index-" + ci);
    this.idx = idxEl ? JSON.parse(idxEl.textContent) : [];
    this.kept = 0; for (var g = 0; g < this.idx.length; g++) if (this.idx[g][3] !== "gap") this.kept++;
    this.lines = {}; this.lower = {};
    this.matches = null; this.page = 0; this.token = 0;
    var sec = this.sec = document.getElementById("c" + ci + "-messages");
    this.tbody = document.getElementById("wc-rows-" + ci);
    this.search = sec.querySelector(".wc-search"); this.chSel = sec.querySelector(".wc-ch");
    this.count = sec.querySelector(".wc-count"); this.pageLbl = sec.querySelector(".wc-page");
    sec.querySelector(".wc-prev").addEventListener("click", function () { self.go(self.page - 1); });
    sec.querySelector(".wc-next").addEventListener("click", function () { self.go(self.page + 1); });
    var timer = null;
    function onFilter() { clearTimeout(timer); timer = setTimeout(function () { self.filter(); }, 120); }
    this.search.addEventListener("input", onFilter); this.chSel.addEventListener("change", onFilter);
    this.tbody.addEventListener("toggle", function (ev) {
      var d = ev.target; if (!d || d.tagName !== "DETAILS" || !d.open) return;
      var pre = d.querySelector("pre"); if (pre && pre.getAttribute("data-pos") !== null && !pre.textContent) {
        self.fill(pre, +pre.getAttribute("data-pos")); }
    }, true);
  }
  function whenLoaded(fn) {
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", fn); else fn();
  }
  View.prototype.chunkLines = function (k) {
    if (!this.lines[k]) { var s = document.getElementById("wc-raw-" + this.ci + "-" + k);
      if (!s) return []; this.lines[k] = s.textContent.split("\n"); }
    return this.lines[k];
  };
  View.prototype.fill = function (pre, pos) {
    var self = this;
    if (document.readyState === "loading") { pre.textContent = "loading…";
      whenLoaded(function () { pre.textContent = self.pretty(pos); }); }
    else pre.textContent = this.pretty(pos);
  };
  View.prototype.raw = function (pos) { return this.chunkLines(Math.floor(pos / CHUNK))[pos % CHUNK] || ""; };
  View.prototype.pretty = function (pos) {
    var r = this.raw(pos); try { return JSON.stringify(JSON.parse(r), null, 2); } catch (e) { return r; }
  };
  View.prototype.total = function () { return this.matches ? this.matches.length : this.idx.length; };
  View.prototype.posAt = function (i) { return this.matches ? this.matches[i] : i; };
  View.prototype.rowFor = function (pos) {
    var it = this.idx[pos], seq = it[0], ch = it[2];
    if (it[3] === "gap") { var gr = el("tr", "gap"); gr.id = this.prefix + "gap-" + seq;
      var gd = el("td", "muted", it[6]); gd.colSpan = 7; gr.appendChild(gd); return gr; }
    var tr = el("tr"); tr.id = this.prefix + "seq-" + seq;
    var a = el("a", null, seq); a.href = "#" + tr.id;
    var td = el("td", "num"); td.appendChild(a); tr.appendChild(td);
    tr.appendChild(el("td", "num", typeof it[1] === "number" ? it[1].toFixed(3) : ""));
    tr.appendChild(el("td", null, ch)); tr.appendChild(el("td", null, it[4])); tr.appendChild(el("td", null, it[3]));
    tr.appendChild(el("td", "num", it[5] === null ? "" : it[5]));
    var pv = el("td", "pv");
    var fs = this.cm.findings[String(seq)] || [];
    for (var i = 0; i < fs.length; i++) { var b = el("span", "badge sev-" + fs[i][0], fs[i][0]);
      b.title = fs[i][1] + ": " + fs[i][2]; pv.appendChild(b); }
    var ns = this.cm.notes;
    for (var j = 0; j < ns.length; j++) { var n = ns[j];
      if (seq >= n[1] && seq <= n[2] && (!n[3] || n[3] === ch)) { var nb = el("span", "badge note-b", "\u270e " + n[4]);
        nb.title = n[5]; pv.appendChild(nb); } }
    var d = el("details"), s = el("summary", null, it[6] || "\u00a0"), pre = el("pre");
    pre.setAttribute("data-pos", pos); d.appendChild(s); d.appendChild(pre); pv.appendChild(d); tr.appendChild(pv);
    return tr;
  };
  View.prototype.render = function () {
    var total = this.total(), pages = Math.max(1, Math.ceil(total / PAGE));
    if (this.page >= pages) this.page = pages - 1; if (this.page < 0) this.page = 0;
    var frag = document.createDocumentFragment(), start = this.page * PAGE, end = Math.min(total, start + PAGE);
    for (var i = start; i < end; i++) frag.appendChild(this.rowFor(this.posAt(i)));
    this.tbody.textContent = ""; this.tbody.appendChild(frag);
    this.pageLbl.textContent = "page " + (this.page + 1) + " of " + pages;
    this.count.textContent = this.matches ? total + " of " + this.kept + " records match"
      : (this.kept < this.cm.records ? this.kept + " of " + this.cm.records + " records in this page" : this.kept + " records");
  };
  View.prototype.go = function (p) { this.page = p; this.render(); };
  View.prototype.filter = function () {
    var q = this.search.value.trim().toLowerCase(), ch = this.chSel.value, self = this, token = ++this.token;
    if (!q && !ch) { this.matches = null; this.page = 0; this.render(); return; }
    if (document.readyState === "loading") { this.count.textContent = "loading…";
      whenLoaded(function () { if (token === self.token) self.filter(); }); return; }
    var out = [], n = this.idx.length, k = 0, nk = Math.ceil(n / CHUNK);
    this.count.textContent = "searching…";
    function step() {
      if (token !== self.token) return;
      var t0 = Date.now();
      while (k < nk && Date.now() - t0 < 30) {
        var low = self.lower[k];
        if (!low && q) { low = self.lower[k] = self.chunkLines(k).map(function (s) { return s.toLowerCase(); }); }
        var base = k * CHUNK, m = Math.min(CHUNK, n - base);
        for (var j = 0; j < m; j++) {
          if (ch && self.idx[base + j][2] !== ch) continue;
          if (q && low[j].indexOf(q) < 0 && String(self.idx[base + j][0]) !== q) continue;
          out.push(base + j);
        }
        k++;
      }
      self.matches = out; if (k >= nk || out.length >= PAGE) { if (self.page !== 0 && k < nk) {} }
      if (k < nk) { self.count.textContent = "searching… " + Math.round(100 * k / nk) + "%"; setTimeout(step, 0); }
      else { self.page = 0; self.render(); }
    }
    step();
  };
  View.prototype.missing = function (seq) {
    if (this.cm.records && seq > this.cm.records) return false;
    var p = this.sec.querySelector(".wc-missing");
    p.textContent = "Record #" + seq + " is not in this page (it keeps " + this.kept + " of " + this.cm.records +
      " records, to stay small); see it whole with: " + this.cm.cat + " --seq " + seq + " --json";
    p.hidden = false; p.scrollIntoView({block: "center"}); return true;
  };
  View.prototype.find = function (seq) {
    var lo = 0, hi = this.idx.length - 1;
    while (lo <= hi) { var mid = (lo + hi) >> 1, s = this.idx[mid][0];
      if (s === seq) return mid; if (s < seq) lo = mid + 1; else hi = mid - 1; }
    return -1;
  };
  View.prototype.reveal = function (seq) {
    var pos = this.find(seq); if (pos < 0 || this.idx[pos][3] === "gap") return this.missing(seq);
    this.sec.querySelector(".wc-missing").hidden = true;
    var at = pos;
    if (this.matches) { at = this.matches.indexOf(pos);
      if (at < 0) { this.token++; this.search.value = ""; this.chSel.value = ""; this.matches = null; at = pos; } }
    this.page = Math.floor(at / PAGE); this.render();
    var row = document.getElementById(this.prefix + "seq-" + seq);
    if (row) { var old = document.querySelectorAll("tr.hl"); for (var i = 0; i < old.length; i++) old[i].classList.remove("hl");
      row.classList.add("hl"); var d = row.querySelector("details"); if (d) d.open = true;
      var pre = row.querySelector("pre"); if (pre && !pre.textContent) this.fill(pre, pos);
      row.scrollIntoView({block: "center"}); }
    return true;
  };
  var views = [];
  for (var c = 0; c < meta.captures.length; c++) { var v = new View(c, meta.captures[c]); views.push(v); v.render(); }
  function onHash() {
    var m = /^#(?:c(\d+)-)?seq-(\d+)$/.exec(location.hash); if (!m) return;
    var v = views[m[1] ? +m[1] : 0]; if (v) v.reveal(+m[2]);
  }
  window.addEventListener("hashchange", onHash);
  onHash();
  window.wirecapReport = {views: views, ready: performance.now()};
})();
"""
