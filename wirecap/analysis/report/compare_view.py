"""Two captures side by side, laid out: for a terminal (`term_lines`), for Markdown (`markdown_parts`:
the parts, which `markdown.py` assembles within its budget) and for HTML (`html_section`: the fragment
`html.py` places in the page). Pure: the `Comparison` of `compare.py` in, text out.

Everywhere the sides are called A and B; the file names are said once, at the top."""

from __future__ import annotations

import re
import textwrap
from html import escape
from typing import Any

from wirecap.analysis.diff.render import fmt_delta, fmt_stat
from wirecap.analysis.report.common import fmt_secs
from wirecap.analysis.report.compare import Comparison, Divergence, FieldDiff, PairView, Ref, Row, StatRow

OP_MARKS = {"equal": " ", "changed": "~", "removed": "-", "added": "+", "gap": "…", "more": "…"}
OP_WORDS = {"equal": "the same", "changed": "changed", "removed": "only in A", "added": "only in B", "gap": "",
            "more": ""}
FIRST = "▶"
MAX_HEAD_FIELDS = 6  # field differences of the first divergence a terminal shows with their values


def _cut(s: str, n: int) -> str:
    s = s.replace("\n", " ")
    return s if len(s) <= n else s[: max(1, n - 1)] + "…"


def fmt_ratio(r: StatRow) -> str:
    if r.ratio is not None:
        return f"{r.ratio:.2f}×"
    if isinstance(r.a, (int, float)) and not r.a and isinstance(r.b, (int, float)) and r.b:
        return "new in B"
    return ""


def stat_cells(r: StatRow) -> list[str]:
    if r.timing:  # seconds, as people read them
        delta = "" if not isinstance(r.delta, (int, float)) else ("+" if r.delta >= 0 else "-") + fmt_secs(abs(r.delta))
        return [r.metric, _secs(r.a), _secs(r.b), delta, fmt_ratio(r)]
    return [r.metric, fmt_stat(r.a), fmt_stat(r.b), fmt_delta(r.delta), fmt_ratio(r)]


def _secs(v: Any) -> str:
    return fmt_secs(v) if isinstance(v, (int, float)) else "-"


STAT_HEADERS = ["metric", "A", "B", "B − A", "B/A"]


def shown_stats(cmp: Comparison) -> list[StatRow]:
    """The numbers worth a row: those either side has (a metric both lack says nothing)."""
    return [r for r in cmp.stats if r.a not in (None, 0) or r.b not in (None, 0)]


def verdict(cmp: Comparison) -> str:
    if cmp.failed:
        return f"A and B are not compared item by item ({cmp.failed}); their numbers are, below"
    return ("A and B are equal" if cmp.equal else "A and B differ") + f": {cmp.summary}"


def divergence_where(d: Divergence) -> str:
    refs = [r.where() for r in (d.a, d.b) if r is not None]
    return d.where + (", " + " · ".join(refs) if refs else "")


def ref_text(r: Ref | None) -> str:
    return f"{r.name} {r.label}".rstrip() if r is not None else ""


def row_more(row: Row) -> str:
    """What a row adds beside its items: the moved item's other place, the folded items."""
    items = f"{row.skipped} item{'s' if row.skipped != 1 else ''}"
    if row.op == "gap":
        return f"{items} the same in A and B"
    if row.op == "more":
        return f"{items} more"
    if row.moved is not None:
        other = "B" if row.op == "removed" else "A"
        return f"(the same as {other}'s {row.moved}, at another place)"
    return ""


# --- terminal ----------------------------------------------------------------------------------------


def term_lines(cmp: Comparison, width: int) -> list[str]:
    """The comparison for a terminal `width` columns wide: `term_head` then `term_body`."""
    return term_head(cmp, width) + [""] + term_body(cmp, width)


def term_head(cmp: Comparison, width: int) -> list[str]:
    """What a terminal shows first: the files, the verdict, the first divergence with its fields."""
    out = ["== A vs B ==", f"A  {cmp.a_path}", f"B  {cmp.b_path}"]
    for line in [verdict(cmp), *(f"warning: {w}" for w in cmp.warnings), *(f"timing: {t}" for t in cmp.timing)]:
        out += textwrap.wrap(line, max(20, width), subsequent_indent="  ", break_on_hyphens=False) or [""]
    d = cmp.first
    if d is not None:
        out += ["", f"-- first divergence ({FIRST}) --"]
        for line in (divergence_where(d), d.what):
            out += textwrap.wrap(line, max(20, width), subsequent_indent="  ", break_on_hyphens=False) or [""]
        for f in d.fields[:MAX_HEAD_FIELDS]:
            a, b = value_texts(f, max(20, width - 12))
            out += [f"  {_cut(f.path, width - 2)}", f"    A: {_cut(a if f.in_a else '(missing)', width - 7)}",
                    f"    B: {_cut(b if f.in_b else '(missing)', width - 7)}"]
    return out


def term_body(cmp: Comparison, width: int) -> list[str]:
    """The rest, after the two captures' reports: the numbers, the aligned conversations, the unified diff."""
    out = ["== A vs B, side by side ==", "", "-- statistics side by side --", *_term_stats(cmp, width)]
    if cmp.failed:
        return out
    out += ["", "-- aligned conversations --"]
    for p in cmp.pairs:
        out += _term_pair(p, width)
    if cmp.rows_omitted:
        out.append(f"… {cmp.rows_omitted} more rows (`wirecap diff A B --json` lists every difference)")
    out += ["", "-- unified diff --", cmp.unified.rstrip("\n")]
    if cmp.unified_cut:
        out.append(f"… ({cmp.unified_cut} more characters: `wirecap diff {cmp.a_path} {cmp.b_path}`)")
    return out


def _term_stats(cmp: Comparison, width: int) -> list[str]:
    if not cmp.stats:
        return [cmp.stats_note or "(none)"]
    rows = [stat_cells(r) for r in shown_stats(cmp)]
    if not rows:
        return ["(no numbers on either side)"]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(STAT_HEADERS)]
    widths[0] = min(widths[0], max(10, width - sum(widths[1:]) - 2 * len(widths) - 2))
    line = "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(STAT_HEADERS, widths,
                                                                                            strict=True)))
    out = [" " + line.rstrip(), " " + "  ".join("-" * w for w in widths)]
    for r, cells in zip(shown_stats(cmp), rows, strict=True):
        mark = "*" if r.differs else " "
        cells = [_cut(cells[0], widths[0])] + cells[1:]
        out.append(mark + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                    for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip())
    return out + ["(* differs; timings are never counted as a difference)"]


def _term_pair(p: PairView, width: int) -> list[str]:
    out = ["", f"[{p.title}]"]
    if p.only is not None:
        out.append(f"  only in {p.only} ({p.items_a if p.only == 'A' else p.items_b} items)")
    col = max(16, (width - 6) // 2)
    out.append(f"  {'A'.ljust(col)}   B")
    for row in p.rows:
        out += _term_row(row, col, width)
    return out


def _term_cell(r: Ref | None, col: int) -> str:
    if r is None:
        return "".ljust(col)
    seq = f"#{r.seq} " if r.seq is not None else ""
    return _cut(seq + ref_text(r), col).ljust(col)


def _term_row(row: Row, col: int, width: int) -> list[str]:
    lead = FIRST if row.first else " "
    if row.op in ("gap", "more"):
        return [f"{lead} {_cut('… ' + row_more(row), col)}"]
    line = f"{lead} {_term_cell(row.a, col)} {OP_MARKS[row.op]} {_term_cell(row.b, col).rstrip()}".rstrip()
    out = [line]
    more = row_more(row)
    if more:
        out.append("      " + _cut(more, width - 6))
    for f in row.fields:
        out.append("      " + _cut(f"{f.path}: {f.text}", width - 6))
    if row.fields_omitted:
        out.append(f"      … {row.fields_omitted} more field differences")
    return out


# --- markdown ----------------------------------------------------------------------------------------


def md_cell(v: Any, *, code: bool = False) -> str:
    """Text in a table cell: one line, `|` escaped, at most 300 characters; outside code `<` and `&` as
    entities (a prompt's `<system-reminder>` must show, not be taken for HTML)."""
    s = str(v).replace("\r", "").replace("\n", " ")
    s = s if len(s) <= 300 else s[:299] + "…"
    if not code:
        s = s.replace("&", "&amp;").replace("<", "&lt;")
    return s.replace("|", "\\|")


def md_code(s: str) -> str:
    """Inline code that survives any backticks inside."""
    s = s.replace("\n", " ")
    ticks = "``" if "`" in s else "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


def markdown_parts(cmp: Comparison) -> dict[str, list[str]]:
    """The comparison's parts as Markdown lines: `head` (the files and the verdict), `first` (the first
    divergence with its field differences), `stats`, `aligned` (every pair's aligned rows) and
    `unified` (the unified diff, folded). Each is self-contained: a budget may drop any after `head`."""
    head = ["| | file |", "|---|---|", f"| **A** | `{md_cell(cmp.a_path, code=True)}` |", f"| **B** | `{md_cell(cmp.b_path, code=True)}` |",
            "", f"**{verdict(cmp)}**", ""]
    head += [f"- ⚠ {w}" for w in cmp.warnings] + [f"- ⏱ {t}" for t in cmp.timing]
    return {"head": head, "first": _md_first(cmp), "stats": _md_stats(cmp), "aligned": _md_aligned(cmp),
            "unified": _md_unified(cmp)}


def _md_first(cmp: Comparison) -> list[str]:
    d = cmp.first
    if d is None:
        return []
    out = [f"## {FIRST} First divergence", "", f"{md_cell(divergence_where(d))}", "", f"> {md_cell(d.what)}", ""]
    if d.fields:
        out += ["| path | A | B |", "|---|---|---|"]
        for f in d.fields:
            a, b = value_texts(f, 240)
            out.append(f"| `{md_cell(f.path, code=True)}` | {_md_value(a, f.in_a)} | {_md_value(b, f.in_b)} |")
        out.append("")
    return out


def value_texts(f: FieldDiff, width: int) -> tuple[str, str]:
    """A field's two values as text of about `width` characters: two long strings around their first
    difference (a prompt that differs in its last line shows that line)."""
    a = f.a if isinstance(f.a, str) else ("" if not f.in_a else str(f.a))
    b = f.b if isinstance(f.b, str) else ("" if not f.in_b else str(f.b))
    if max(len(a), len(b)) <= width:
        return a, b
    p = 0
    limit = min(len(a), len(b))
    while p < limit and a[p] == b[p]:
        p += 1
    start = max(0, p - width // 3)
    lead = "…" if start else ""

    def window(v: str) -> str:
        return lead + v[start:start + width] + ("…" if len(v) > start + width else "")

    return window(a), window(b)


def _md_value(text: str, has: bool) -> str:
    if not has:
        return "_(missing)_"
    return md_code(md_cell(text, code=True))


def _md_stats(cmp: Comparison) -> list[str]:
    out = ["### Statistics side by side", ""]
    if not cmp.stats:
        return out + [f"_{cmp.stats_note or 'none'}_", ""]
    rows = shown_stats(cmp)
    out += ["| " + " | ".join(STAT_HEADERS) + " |", "|---|---:|---:|---:|---:|"]
    for r in rows:
        cells = stat_cells(r)
        if r.differs:
            cells[0] = f"**{cells[0]}**"
        out.append("| " + " | ".join(md_cell(c) for c in cells) + " |")
    return out + ["", "<sub>bold: differs (timings never count as a difference)</sub>", ""]


def _md_aligned(cmp: Comparison) -> list[str]:
    if cmp.failed:
        return []
    out = ["### Aligned conversations", "", f"`~` changed, `-` only in A, `+` only in B, {FIRST} the first divergence", ""]
    for p in cmp.pairs:
        out += [f"#### {md_cell(p.title)}", ""]
        if p.only is not None:
            out += [f"Only in {p.only} ({p.items_a if p.only == 'A' else p.items_b} items).", ""]
        out += ["| | A | B | differences |", "|---|---|---|---|"]
        out += [_md_row(r) for r in p.rows]
        out.append("")
    if cmp.rows_omitted:
        out += [f"_… {cmp.rows_omitted} more rows: `wirecap diff A B --json` lists every difference_", ""]
    return out


def _md_ref(r: Ref | None, *, same: bool = False) -> str:
    if r is None:
        return ""
    at = ([f"call {r.call}"] if r.call is not None else []) + ([f"seq {r.seq}"] if r.seq is not None else [])
    seq = f" <sub>{' · '.join(at)}</sub>" if at else ""
    return f"`{md_cell(r.name, code=True)}` " + ("_(the same)_" if same else md_cell(r.label)) + seq


def _md_row(row: Row) -> str:
    mark = f"**{FIRST}** " if row.first else ""
    if row.op in ("gap", "more"):
        return f"| {mark}… | _{row_more(row)}_ | | |"
    diffs = "<br>".join(md_cell(f"{f.path}: {f.text}") for f in row.fields)
    if row.fields_omitted:
        diffs += f"<br>… {row.fields_omitted} more"
    diffs = diffs or md_cell(row_more(row))
    b = _md_ref(row.b)
    if row.op == "equal" and row.a is not None and row.b is not None and row.a.label == row.b.label:
        b = _md_ref(row.b, same=True)  # (said once: the budget goes to what differs)
    return f"| {mark}`{OP_MARKS[row.op]}` | {_md_ref(row.a)} | {b} | {diffs} |"


def _md_unified(cmp: Comparison) -> list[str]:
    if not cmp.unified.strip():
        return []
    body = cmp.unified.rstrip("\n")
    ticks = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", body)), default=0))
    out = ["<details><summary>unified diff (<code>wirecap diff A B</code>)</summary>", "", f"{ticks}diff", body,
           ticks, "", "</details>", ""]
    if cmp.unified_cut:
        out.insert(-2, f"… ({cmp.unified_cut} more characters: `wirecap diff {cmp.a_path} {cmp.b_path}`)")
    return out


# --- html ----------------------------------------------------------------------------------------------


def _e(v: Any) -> str:
    return escape(str(v), quote=True)


CSS = """
#compare .cmp{border-collapse:collapse;width:100%;table-layout:fixed;font-size:13px}
#compare .cmp td,#compare .cmp th{border-bottom:1px solid var(--line,#dde2ea);padding:2px 6px;vertical-align:top;
overflow-wrap:anywhere}
#compare .cmp th.op,#compare .cmp td.op{width:3.2em;white-space:nowrap;text-align:center;font-family:monospace}
#compare tr.changed td{background:rgba(183,121,31,.10)}#compare tr.removed td.a{background:rgba(198,47,47,.12)}
#compare tr.added td.b{background:rgba(47,143,78,.14)}#compare tr.gap td{color:var(--muted,#6a7385);font-style:italic}
#compare tr.fields td{font-family:monospace;font-size:12px;color:var(--muted,#6a7385)}
#compare tr.first td{outline:2px solid var(--err,#c62f2f);outline-offset:-2px}
#compare .divergence{border-left:4px solid var(--err,#c62f2f);padding:6px 10px;background:var(--bg2,#f5f7fa)}
#compare pre.diff .l-del{color:#c62f2f}#compare pre.diff .l-add{color:#2f8f4e}#compare pre.diff .l-chg{color:#b7791f}
#compare pre.diff .l-hunk{color:#2f6fd6}#compare .num{text-align:right;font-variant-numeric:tabular-nums}
#compare tr.differs td:first-child{font-weight:600}
#compare pre.value{white-space:pre-wrap;margin:0;max-height:24em;overflow:auto}
"""


def html_section(cmp: Comparison | None, note: str = "") -> str:
    """The section of the page that compares A and B (`<section id="compare">`, also reachable as
    `#diff`), or the note saying why there is none."""
    parts = [f"<style>{CSS}</style>", '<section id="compare"><a id="diff"></a><h2>A vs B</h2>']
    if cmp is None:
        return "".join(parts) + f'<p class="muted">{_e(note)}</p></section>'
    parts.append(f'<table class="kv"><tr><th>A</th><td><code>{_e(cmp.a_path)}</code></td></tr>'
                 f'<tr><th>B</th><td><code>{_e(cmp.b_path)}</code></td></tr></table>')
    parts.append(f"<p><strong>{_e(verdict(cmp))}</strong></p>")
    parts += [f'<p class="warn">⚠ {_e(w)}</p>' for w in cmp.warnings]
    parts += [f'<p class="warn">⏱ {_e(t)}</p>' for t in cmp.timing]
    parts.append(_html_first(cmp))
    parts.append(_html_stats(cmp))
    if cmp.failed:
        return "".join(parts) + "</section>"
    parts.append('<h3 id="compare-aligned">Aligned conversations</h3>')
    parts += [_html_pair(p, k) for k, p in enumerate(cmp.pairs)]
    if cmp.rows_omitted:
        parts.append(f'<p class="muted">… {cmp.rows_omitted} more rows (<code>wirecap diff A B --json</code> lists every '
                     "difference)</p>")
    parts.append(_html_unified(cmp))
    parts.append("</section>")
    return "".join(parts)


def _html_first(cmp: Comparison) -> str:
    d = cmp.first
    if d is None:
        return ""
    link = '<a href="#first-divergence">in the aligned conversation</a>' if d.row is not None else ""
    where = " · ".join(_html_ref_link(r, r.where()) for r in (d.a, d.b) if r is not None)
    calls = " · ".join(f'<a href="#{_e(r.call_anchor())}">{r.side}\'s call {r.call} in its thread</a>'
                       for r in (d.a, d.b) if r is not None and r.call is not None)
    where += f" ({calls})" if calls else ""
    out = [f'<div class="divergence" id="compare-first"><h3>{FIRST} First divergence</h3>',
           f"<p>{_e(d.where)}{', ' + where if where else ''} {link}</p><p><strong>{_e(d.what)}</strong></p>"]
    if d.fields:
        rows = "".join(f"<tr><td><code>{_e(f.path)}</code></td><td>{_html_value(a, f.in_a)}</td>"
                       f"<td>{_html_value(b, f.in_b)}</td></tr>" for f in d.fields for a, b in [value_texts(f, 1200)])
        out.append(f'<table class="cmp"><thead><tr><th>path</th><th>A</th><th>B</th></tr></thead><tbody>{rows}'
                   "</tbody></table>")
    out.append("</div>")
    return "".join(out)


def _html_value(text: str, has: bool) -> str:
    if not has:
        return '<em class="muted">(missing)</em>'
    return f'<pre class="value">{_e(text)}</pre>'


def _html_stats(cmp: Comparison) -> str:
    head = '<h3 id="compare-stats">Statistics side by side</h3>'
    if not cmp.stats:
        return head + f'<p class="muted">{_e(cmp.stats_note or "none")}</p>'
    rows = []
    for r in shown_stats(cmp):
        cells = stat_cells(r)
        tds = f"<td>{_e(cells[0])}</td>" + "".join(f'<td class="num">{_e(c)}</td>' for c in cells[1:])
        rows.append(f'<tr class="{"differs" if r.differs else ""}">{tds}</tr>')
    ths = "".join(f"<th>{_e(h)}</th>" for h in STAT_HEADERS)
    return (head + f'<table class="cmp stats"><thead><tr>{ths}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
            '<p class="muted">bold: differs (timings never count as a difference)</p>')


def _html_ref_link(r: Ref, text: str) -> str:
    if r.seq is None:
        return _e(text)
    return f'<a href="#{_e(r.anchor())}">{_e(text)}</a>'


def _html_cell(r: Ref | None) -> str:
    if r is None:
        return ""
    seq = f' <a class="muted" href="#{_e(r.anchor())}">seq {r.seq}</a>' if r.seq is not None else ""
    call = r.call_anchor()
    if call is not None:
        seq = f' <a class="muted" href="#{_e(call)}">call {r.call}</a>' + seq
    return f"<code>{_e(r.name)}</code> {_e(r.label)}{seq}"


def _html_pair(p: PairView, k: int) -> str:
    only = f'<p class="muted">only in {p.only}</p>' if p.only is not None else ""
    rows = "".join(_html_row(r) for r in p.rows)
    return (f'<h4 id="compare-pair-{k}">{_e(p.title)}</h4>{only}<table class="cmp aligned"><thead><tr>'
            f'<th class="op"></th><th>A</th><th>B</th></tr></thead><tbody>{rows}</tbody></table>')


def _html_row(row: Row) -> str:
    rid = ' id="first-divergence"' if row.first else ""
    cls = row.op + (" first" if row.first else "")
    mark = (FIRST + " " if row.first else "") + OP_MARKS[row.op]
    if row.op in ("gap", "more"):
        return f'<tr class="gap"{rid}><td class="op">{mark}</td><td colspan="2">{_e(row_more(row))}</td></tr>'
    out = (f'<tr class="{cls}"{rid} title="{_e(OP_WORDS[row.op])}"><td class="op">{_e(mark)}</td>'
           f'<td class="a">{_html_cell(row.a)}</td><td class="b">{_html_cell(row.b)}</td></tr>')
    lines = [f"{f.path}: {f.text}" for f in row.fields]
    if row.fields_omitted:
        lines.append(f"… {row.fields_omitted} more field differences")
    more = row_more(row)
    if more:
        lines.append(more)
    if lines:
        out += '<tr class="fields"><td></td><td colspan="2">' + "<br>".join(_e(x) for x in lines) + "</td></tr>"
    return out


def _html_unified(cmp: Comparison) -> str:
    if not cmp.unified.strip():
        return ""
    cls = {"-": "l-del", "+": "l-add", "~": "l-chg", "@": "l-hunk"}
    lines = []
    for line in cmp.unified.rstrip("\n").split("\n"):
        c = cls.get(line[:1]) if not line.startswith(("--- A", "+++ B")) else "l-hunk"
        lines.append(f'<span class="{c}">{_e(line)}</span>' if c else _e(line))
    cut = (f'<p class="muted">… {cmp.unified_cut} more characters: <code>wirecap diff {_e(cmp.a_path)} '
           f"{_e(cmp.b_path)}</code></p>" if cmp.unified_cut else "")
    return ('<details open id="compare-unified"><summary><h3 style="display:inline">Unified diff</h3></summary>'
            f'<pre class="diff">{chr(10).join(lines)}</pre>{cut}</details>')
