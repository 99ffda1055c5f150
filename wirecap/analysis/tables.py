"""What `wirecap stats` and `wirecap validate` print as text: their tables and summary lines, laid out
from the library's results (sessions with their capture totals; findings). Pure: values in, text out.

`fit_table` is the one table layout of the text outputs (info, stats, validate, report -f term): given a
width, text columns wrap (or are cut with `…`) down to a floor, headers wrap at their spaces, and when that
is not enough the columns of least importance are left out (a last line names them); a number is never
cut. Without a width (output to a pipe or a file) every column is shown whole."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import Any

from wirecap.dialects.base import Finding


@dataclass(frozen=True)
class Col:
    """A column of `fit_table`: its header; `drop`, when it is left out to fit (0 never; the highest goes
    first, the rightmost first among equals); `fold`, how a text cell wider than the column is shown
    ("wrap" onto more lines; "words": wrap at spaces only, a word longer than the column stays whole;
    "cut" with `…`; "tail": its end kept, `…` first, for paths); `floor`, the narrowest a text column is squeezed to;
    `numeric` (None: when every cell looks like a number): right-aligned, never cut."""

    header: str
    drop: int = 0
    fold: str = "wrap"
    floor: int = 8
    numeric: bool | None = None


GAP = 2  # spaces between two columns
IMPORTANT = 2  # a column of `drop` above this goes before any text column is wrapped
_FIGURE = r"[-+]?(\d[\d,]*(\.\d+)?|\.\d+)(e[-+]?\d+)?( ?(s|ms|%|x|×|B|KB|MB|GB))?"
_NUMBER = re.compile(rf"{_FIGURE}(/{_FIGURE})*|-|")  # 12, 0.5, 3.037s, 49.0 KB, 9664/12, -, empty


def _is_numeric(col: Col, cells: list[list[str]], i: int) -> bool:
    if col.numeric is not None:
        return col.numeric
    return any(r[i] not in ("", "-") for r in cells) and all(_NUMBER.fullmatch(r[i]) for r in cells)


def cells_of(text: str) -> int:
    """How many terminal cells `text` takes: East Asian wide and full-width characters (CJK, most emoji)
    take two, combining marks none."""
    if text.isascii():
        return len(text)
    import unicodedata

    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _pad(text: str, w: int, right: bool = False) -> str:
    gap = " " * max(0, w - cells_of(text))
    return gap + text if right else text + gap


def _wrap_cells(text: str, w: int) -> list[str]:
    """Text with wide characters wrapped to `w` cells: at spaces, and a run wider than a line (CJK has no
    spaces) character by character."""
    lines: list[str] = []
    line, used = "", 0
    for word in text.split(" "):
        n = cells_of(word)
        if line and used + 1 + n <= w:
            line, used = f"{line} {word}", used + 1 + n
            continue
        if n <= w:
            if line:
                lines.append(line)
            line, used = word, n
            continue
        if line and used + 2 <= w:  # a long run starts on this line, after a space
            line, used = line + " ", used + 1
        for c in word:
            k = cells_of(c)
            if used + k > w and line:
                lines.append(line)
                line, used = "", 0
            line, used = line + c, used + k
    return [*lines, line] if line else lines


def _longest_word(text: str) -> int:
    return max((cells_of(w) for w in text.split()), default=0)


def _squeeze(cols: list[Col], cells: list[list[str]], shown: list[int], numeric: list[bool],
             width: int, *, text: bool) -> tuple[dict[int, int], bool]:
    """The widths of the `shown` columns fitted to `width`, and whether they fit: headers wrap at their
    spaces first, then the columns that cut narrow, and (with `text`) those that wrap, the widest first,
    down to their floors."""
    data = {i: max([cells_of(r[i]) for r in cells], default=0) for i in shown}
    widths = {i: max(data[i], cells_of(cols[i].header)) for i in shown}
    excess = sum(widths.values()) + GAP * (len(shown) - 1) - width
    if excess <= 0:
        return widths, True
    for i in shown:  # headers wrap at their spaces
        narrower = max(data[i], _longest_word(cols[i].header), 1)
        excess -= widths[i] - narrower
        widths[i] = narrower
    # a column that cuts (or keeps its tail) narrows first; one that wraps only when `text` allows it
    floors = {i: widths[i] if numeric[i] or not (text or cols[i].fold in ("cut", "tail"))
              else min(widths[i], max(cols[i].floor, _longest_word(cols[i].header))) for i in shown}
    while excess > 0:
        i = max(shown, key=lambda j: (widths[j] - floors[j], -j))
        if widths[i] <= floors[i]:
            return widths, False
        take = min(excess, widths[i] - floors[i], max(1, (widths[i] - floors[i]) // 2))
        widths[i] -= take
        excess -= take
    return widths, True


def _layout(cols: list[Col], cells: list[list[str]], shown: list[int], numeric: list[bool],
            width: int) -> tuple[dict[int, int], list[str]]:
    """The widths that fit `width`, and the headers of the columns left out for it: the columns of
    `drop` above IMPORTANT go (in order) before any text is wrapped, the others only after."""
    left_out: list[str] = []
    while True:
        widths, fits = _squeeze(cols, cells, shown, numeric, width, text=False)
        if fits:
            return widths, left_out
        droppable = [i for i in shown if cols[i].drop > IMPORTANT]
        if not droppable:
            widths, fits = _squeeze(cols, cells, shown, numeric, width, text=True)
            droppable = [i for i in shown if cols[i].drop > 0]
            if fits or not droppable:
                return widths, left_out
        gone = max(droppable, key=lambda j: (cols[j].drop, j))
        shown.remove(gone)
        left_out.insert(0, cols[gone].header)


def _cell_lines(text: str, w: int, col: Col, numeric: bool) -> list[str]:
    if numeric or cells_of(text) <= w:
        return [_pad(text, w, right=True) if numeric else text]
    if cells_of(text) != len(text):  # wide characters: laid out by cells
        return _wrap_cells(text, w) if col.fold in ("wrap", "words") else [_wrap_cells(text, w - 1)[0] + "…"]
    if col.fold == "cut":
        return [text[: max(1, w - 1)] + "…"]
    if col.fold == "tail":  # a path: its end tells it apart
        return ["…" + text[len(text) - max(1, w - 1):]]
    whole = col.fold == "words"  # a path or a file:line stays whole (copyable), even past the width
    return textwrap.wrap(text, w, break_long_words=not whole, break_on_hyphens=not whole) or [""]


def _render(cols: list[Col], cells: list[list[str]], shown: list[int], numeric: list[bool],
            widths: dict[int, int]) -> list[str]:
    heads = {i: textwrap.wrap(cols[i].header, widths[i], break_long_words=True) or [""] for i in shown}
    height = max(len(h) for h in heads.values())
    lines = []
    for k in range(height):
        parts = []
        for i in shown:
            h = heads[i]
            text = h[k - (height - len(h))] if k >= height - len(h) else ""
            parts.append(_pad(text, widths[i], right=numeric[i]))
        lines.append((" " * GAP).join(parts).rstrip())
    lines.append((" " * GAP).join("-" * widths[i] for i in shown))
    for r in cells:
        block = {i: _cell_lines(r[i], widths[i], cols[i], numeric[i]) for i in shown}
        for k in range(max(len(b) for b in block.values())):
            parts = [_pad(block[i][k] if k < len(block[i]) else "", widths[i]) for i in shown]
            lines.append((" " * GAP).join(parts).rstrip())
    return lines


def fit_table(cols: list[Col], rows: list[list[Any]], width: int | None, *, drop_empty: bool = False) -> str:
    """`rows` under the headers of `cols` in at most `width` columns (None: no limit); see the module's
    docstring. With `drop_empty`, a column with no cell filled is left out (it says nothing)."""
    cells = [[str(v).replace("\n", " ") for v in r] for r in rows]
    numeric = [_is_numeric(c, cells, i) for i, c in enumerate(cols)]
    shown = [i for i in range(len(cols)) if not drop_empty or any(r[i] for r in cells)]
    if width is None:
        widths = {i: max([cells_of(r[i]) for r in cells] + [cells_of(cols[i].header)]) for i in shown}
        left_out: list[str] = []
    else:
        widths, left_out = _layout(cols, cells, shown, numeric, width)
    lines = _render(cols, cells, shown, numeric, widths)
    if left_out:
        note = f"(not shown to fit {width} columns: {', '.join(left_out)}; see --json)"
        lines += textwrap.wrap(note, max(20, width or 0))
    return "\n".join(lines)


STATS_COLUMNS = [Col("capture", fold="tail", floor=16), Col("session", floor=10), Col("ch", 1), Col("dialect", 2, floor=8),
                 Col("duration s", 1), Col("ttft s", 4), Col("msgs", 7), Col("bytes", 7), Col("models", 6, floor=10),
                 Col("prompt tok", 2), Col("compl tok", 2), Col("llm calls", 2), Col("failed", 4),
                 Col("tools", 6, floor=10), Col("cost $", 2), Col("errors", 1)]
CALL_COLUMNS = [Col("capture", fold="tail", floor=16), Col("ch"), Col("call"), Col("seq", 4), Col("transport", 1), Col("model", 5, "cut"),
                Col("outcome", floor=8), Col("ttft s", 3), Col("duration s", 2), Col("in tok", 3), Col("out tok", 3),
                Col("tools", 6, floor=10), Col("note", 4, floor=12)]
FINDING_COLUMNS = [Col("severity"), Col("rule", floor=10), Col("seq", 1), Col("ch", 1), Col("message", fold="words", floor=20)]
NOTE_COLUMNS = [Col("id", floor=8), Col("points at", floor=9), Col("tag", 1, floor=8), Col("text", floor=20),
                Col("author", 1, "cut", floor=8), Col("time (UTC)", 2, floor=10)]  # `notes.NOTE_HEADERS`
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
SEVERITY_COLORS = {"error": "\x1b[1;31m", "warning": "\x1b[33m"}


def _grouped(rows: list[list[Any]], width: int | None) -> list[list[Any]]:
    """On a terminal (a width), a capture is named on its first row only; piped, on every row (a script
    reading the text keeps every row whole)."""
    if width is None:
        return rows
    return [["" if i and r[0] == rows[i - 1][0] else r[0], *r[1:]] for i, r in enumerate(rows)]


def _words(text: str, width: int | None) -> str:
    """A sentence wrapped to `width` (None: one line)."""
    return text if width is None else "\n".join(textwrap.wrap(text, max(width, 20), break_on_hyphens=False))


def fmt_number(v: Any, digits: int = 3) -> str:
    """A figure for a table cell: `-` for none, floats without trailing zeros."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}".rstrip("0").rstrip(".") if v else "0"
    return str(v)


def _session_row(s: dict[str, Any]) -> list[Any]:
    usage = s["models_usage"]
    prompt = sum(m["prompt_tokens"] for m in usage.values())
    completion = sum(m["completion_tokens"] for m in usage.values())
    tools = ", ".join(f"{k}×{v}" for k, v in s["tool_calls"].items()) or "-"
    return [s["capture"], s["session"][:20], s["ch"], s["dialect"] or "-", fmt_number(s["duration"]),
            fmt_number(s["ttft"]), sum(s["messages_by_type"].values()), fmt_number(s["bytes"]), ", ".join(usage) or "-",
            prompt if usage else "-", completion if usage else "-", fmt_number(s["llm_calls"]),
            fmt_number(s["failed_calls"] or None), tools, fmt_number(s["total_cost"], 6), s["errors"]]


def _total_row(cap: str, t: dict[str, Any], calls_reported: bool) -> list[Any]:
    """The capture's total, each call counted once; its LLM calls are `-` when no session reports any."""
    return [cap, "(total, calls once)", "", "", fmt_number(t["duration"]), fmt_number(t["ttft"]), "", "", "",
            int(t["prompt_tokens"] or 0), int(t["completion_tokens"] or 0),
            int(t["llm_calls"] or 0) if calls_reported else "-", int(t["failed_calls"] or 0) or "-",
            int(t["tool_calls"] or 0) or "-", fmt_number(t["cost_usd"], 6), int(t["errors"] or 0)]


def stats_table(sessions: list[dict[str, Any]], totals: dict[str, dict[str, Any]], *, several: bool,
                width: int | None = None) -> str:
    """The sessions (each with its `capture`) as a table, each capture's total (from `totals`) after its
    last session; with one capture (`several` false) the capture column is left out. Fitted to `width`."""
    last = {s["capture"]: i for i, s in enumerate(sessions)}
    reported: dict[str, bool] = {}
    for s in sessions:
        reported[s["capture"]] = reported.get(s["capture"], False) or s["llm_calls"] is not None
    rows = []
    for i, s in enumerate(sessions):
        rows.append(_session_row(s))
        cap = s["capture"]
        if last[cap] == i and cap in totals:
            rows.append(_total_row(cap, totals[cap], reported[cap]))
    if not rows:
        return "no decoded sessions (use --all to list undecoded channels)"
    if several:
        return fit_table(STATS_COLUMNS, _grouped(rows, width), width)
    return fit_table(STATS_COLUMNS[1:], [r[1:] for r in rows], width)


def _call_row(c: dict[str, Any]) -> list[Any]:
    tools = ", ".join(f"{k}×{v}" for k, v in (c.get("tool_calls") or {}).items()) or "-"
    note = "prewarm (generate: false)" if c.get("prewarm") else (c.get("reason") or "")
    return [c["capture"], c["ch"], c["call"], c["seq"], c["transport"], c.get("model") or "-", c["outcome"],
            fmt_number(c.get("ttft")), fmt_number(c.get("duration")), fmt_number(c.get("input_tokens")),
            fmt_number(c.get("output_tokens")), tools, str(note)[:60]]


def calls_table(calls: list[dict[str, Any]], *, several: bool, width: int | None = None) -> str:
    """`wirecap stats --calls`: one row per LLM call on the wire (each with its `capture`); with one
    capture (`several` false) the capture column is left out."""
    if not calls:
        return _words("no LLM calls on the wire (stdout alone does not show them: record the traffic too)", width)
    rows = [_call_row(c) for c in calls]
    if several:
        return fit_table(CALL_COLUMNS, _grouped(rows, width), width)
    return fit_table(CALL_COLUMNS[1:], [r[1:] for r in rows], width)


def at_or_above(found: list[Finding], min_severity: str) -> list[Finding]:
    """The findings of severity `min_severity` or above."""
    floor = SEVERITY_RANK[min_severity]
    return [f for f in found if SEVERITY_RANK.get(f.severity, 0) >= floor]


def findings_text(capture: str, found: list[Finding], min_severity: str, *, width: int | None = None,
                  color: bool = False) -> str:
    """What `wirecap validate` prints: the findings shown (a table fitted to `width` and their counts by
    severity), or why there are none to show. With `color`, errors and warnings in color."""
    shown = at_or_above(found, min_severity)
    if not shown:
        if found:
            return _words(f"{capture}: no findings of severity {min_severity} or above "
                          f"({len(found)} below it hidden by --min-severity)", width)
        return _words(f"{capture}: no findings", width)
    rows = [[f.severity, f.rule, "" if f.seq is None else f.seq, f.ch or "", f.message] for f in shown]
    counts = {s: sum(1 for f in found if f.severity == s) for s in ("error", "warning", "info")}
    table = fit_table(FINDING_COLUMNS, rows, width)
    if color:
        table = "\n".join(_colored(line) for line in table.split("\n"))
    return table + f"\n{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info"


def _colored(line: str) -> str:
    """A findings table line whose first word is a severity, in that severity's color."""
    start = SEVERITY_COLORS.get(line.split(" ", 1)[0])
    return f"{start}{line}\x1b[0m" if start else line
