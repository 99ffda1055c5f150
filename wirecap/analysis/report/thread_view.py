"""The thread (`report.thread`) laid out: one function per format (terminal lines, Markdown lines, an
HTML fragment; JSON is the model's `to_json`).

Every format says the same things in the same order: per call its head (when it was sent, how long
to the first and the last token, the tokens, the cost when known, how it ended), what is new since
the previous call of its conversation first (the new user turn, the tool results going back), then
the rest of what was sent (system prompt, tools, the earlier messages: folded), then what came back;
between calls the tool executions; a subagent's calls under the call that started it. A text cut by
the model says how much is left out and how to see it whole (`wirecap cat CAP --seq N`).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from html import escape
from typing import Any

from wirecap.analysis.report.common import fmt_secs
from wirecap.analysis.report.model import CaptureReport
from wirecap.analysis.report.thread import Aside, Message, Part, Thread, ThreadCall, ToolRun
from wirecap.analysis.report.thread_notes import (
    NotePlaces,
    notes_html,
    notes_markdown,
    notes_term,
    place_notes,
)

TERM_PART_LINES = 12  # lines of one part a terminal shows
HTML_PART_TEXT = 4000  # characters of one part the page shows (the model keeps at most that much anyway)
HTML_FOLD = {"tool_result": 400}  # characters past which the page folds a part of that kind (else 1200)
MD_PART_TEXT = 2000  # ... and Markdown
MD_FOLD = 600  # characters past which Markdown folds a part (<details>)
MAX_SHOWN_CALLS = 300  # calls laid out in full by a renderer; past them one line each


# --- what every format says -------------------------------------------------------------------------------


def _num(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) else (f"{v:,.0f}" if isinstance(v, float) else "")


def usage_text(c: ThreadCall) -> str:
    """The call's tokens: input, cache read, cache write, output (what the wire says of them)."""
    bits = []
    for label, v in (("in", c.input_tokens), ("cache read", c.cache_read_tokens), ("cache write", c.cache_write_tokens),
                     ("out", c.output_tokens)):
        if v is not None:
            bits.append(f"{_num(v)} {label}")
    return " · ".join(bits)


def call_head(c: ThreadCall) -> str:
    """call N · channel · model (and what kind of call: prewarm, a retry, a side call outside the main
    conversation, a subagent's)."""
    bits = [f"call {c.n}", c.ch]
    if c.parent is not None:
        bits.append(f"subagent of call {c.parent[0]}")
    elif c.side:
        bits.append("side call")
    if c.model:
        bits.append(c.model)
    if c.prewarm:
        bits.append("prewarm")
    if c.retry:
        bits.append(f"retry of call {c.retry_of}")
    return " · ".join(bits)


def call_figures(c: ThreadCall) -> list[str]:
    """When and how it went: sent at, first token after, last token after, tokens, cost, the end."""
    out = [f"sent at {c.t_sent:.3f} s"]
    if c.ttft is not None:
        out.append(f"first token after {fmt_secs(c.ttft)}")
    if c.duration is not None:
        out.append(f"last after {fmt_secs(c.duration)}")
    usage = usage_text(c)
    if usage:
        out.append(usage)
    if c.cost_usd is not None:
        out.append(f"${c.cost_usd:.4f}")
    out.append(outcome_text(c))
    return out


def outcome_text(c: ThreadCall) -> str:
    if c.outcome == "completed":
        return f"stop: {c.stop_reason}" if c.stop_reason else "completed"
    return f"{c.outcome.upper()}" + (f": {c.error}" if c.error else "")


def sent_text(c: ThreadCall) -> str:
    """What the request held, in a line."""
    bits = [f"{c.messages_total} message{'s' if c.messages_total != 1 else ''}"]
    if c.earlier:
        fresh = c.messages_total - c.earlier
        bits.append(f"{fresh} new" if fresh > 0 else "nothing new")
    if c.system is not None:
        size = sum(p.size for p in c.system)
        bits.append(f"system prompt {size:,} characters" if size else
                    "an empty system prompt" if c.system else "no system prompt on the wire")
    elif c.system_same_as is not None:
        bits.append(f"system prompt as in call {c.system_same_as}")
    if c.tools_count is not None:
        bits.append(f"{c.tools_count} tools" + (f" as in call {c.tools_same_as}" if c.tools_same_as else ""))
    return ", ".join(b for b in bits if b)


def part_label(p: Part, role: str | None = None) -> str:
    label = {"text": role or "text", "thinking": "thinking", "tool_call": "tool call", "tool_result": "tool result",
             "image": "image", "error": "error"}.get(p.kind, p.kind)
    if p.name and p.kind in ("tool_call", "tool_result"):
        label += f" {p.name}"
    if p.is_error and p.kind != "error":
        label += " (error)"
    return label


def cut_note(p: Part, path: str) -> str:
    """What a cut text leaves out and where it is whole."""
    if not p.cut:
        return ""
    seq = p.at[0] if p.at else None
    where = f": `wirecap cat {path} --seq {seq} --json`" if seq is not None else ""
    return f"… ({p.cut:,} more characters{where})"


def new_first(c: ThreadCall) -> tuple[list[Message], list[Message]]:
    """(the messages new since the previous call, the replies it sends back as history)."""
    fresh = [m for m in c.new if m.echo_of is None]
    return fresh, [m for m in c.new if m.echo_of is not None]


def omitted_text(c: ThreadCall, path: str) -> str:
    """The new messages of a call the report did not keep (the newest are kept), and where they are."""
    if not c.new_omitted:
        return ""
    return f"… {c.new_omitted:,} earlier new message(s) not shown: `wirecap cat {path} --seq {c.seq} --json`"


def reply_arrow(p: Part) -> str:
    """← what came back; → a tool result the client sent within the call (Codebuff's server runs the
    loop: it asks the client to run a tool and waits for the result)."""
    return "→" if p.kind == "tool_result" else "←"


def run_text(r: ToolRun) -> str:
    took = fmt_secs(r.t_end - r.t_start) if r.t_end is not None else "no result seen"
    back = f" → result sent back in call {r.returned_in}" if r.returned_in is not None else ""
    return f"⚙ {r.name or 'tool'} ran {took}" + (" (error)" if r.is_error else "") + back


Step = tuple[str, Any, int]  # ("call" | "run" | "aside", the item, depth)


def steps(th: Thread) -> Iterator[Step]:
    """The thread in reading order: asides and top-level calls by time; after each call its tool runs,
    then, one level deeper and by time, the calls of the subagents it started and what the client printed
    of them (an aside naming a `parent` tool call of that call's reply). On the client's output alone (no
    call), a subagent's lines follow the tool call line that started it, one level deeper."""
    issued = {p.call_id: c.n for c in th.calls for p in c.reply if p.kind == "tool_call" and p.call_id}
    aside_calls = {a.call_id for a in th.asides if a.kind == "tool_call" and a.call_id}
    under_call: dict[int, list[tuple[float, int, Any]]] = {}
    under_aside: dict[str, list[Aside]] = {}
    top: list[tuple[float, int, Any]] = []
    for c in th.calls:
        (top if c.parent is None else under_call.setdefault(c.parent[0], [])).append((c.t_sent, 1, c))
    for a in th.asides:
        if a.parent is not None and a.parent in issued:
            under_call.setdefault(issued[a.parent], []).append((a.t, 0, a))
        elif a.parent is not None and a.parent in aside_calls and a.parent != a.call_id:
            under_aside.setdefault(a.parent, []).append(a)
        else:
            top.append((a.t, 0, a))
    runs: dict[int | None, list[ToolRun]] = {}
    for r in th.tool_runs:
        runs.setdefault(r.issued_by, []).append(r)
    shown: set[str] = set()  # (an aside tool call lists its subagent's lines once, whatever the ids say)

    def aside_steps(a: Aside, depth: int) -> Iterator[Step]:
        yield "aside", a, depth
        if a.kind == "tool_call" and a.call_id in under_aside and a.call_id not in shown:
            shown.add(a.call_id)
            for sub in under_aside[a.call_id]:
                yield from aside_steps(sub, depth + 1)

    def call_steps(c: ThreadCall, depth: int) -> Iterator[Step]:
        yield "call", c, depth
        for r in runs.get(c.n, ()):
            yield "run", r, depth
        for _, _, item in sorted(under_call.get(c.n, ()), key=lambda x: (x[0], x[1])):
            yield from (aside_steps(item, depth + 1) if isinstance(item, Aside) else call_steps(item, depth + 1))

    for _, _, item in sorted(top, key=lambda x: (x[0], x[1])):
        yield from (aside_steps(item, 0) if isinstance(item, Aside) else call_steps(item, 0))


def note_places(cap: CaptureReport) -> NotePlaces:
    """Where the capture's notes sit in its thread (`thread_notes`: each at the part it points at)."""
    return place_notes(cap, steps, MAX_SHOWN_CALLS)


def linked_seqs(threads: list[Thread]) -> list[int]:
    """Every record a thread links to (a page embeds these so the links land)."""
    out: dict[int, None] = {}
    for th in threads:
        for c in th.calls:
            out[c.seq] = None
            for p in _all_parts(c):
                out.update(dict.fromkeys(p.at))
        for a in th.asides:
            if a.seq is not None:
                out[a.seq] = None
    return list(out)


def _all_parts(c: ThreadCall) -> Iterator[Part]:
    yield from c.system or ()
    for m in c.new:
        yield from m.parts
    yield from c.reply


def _no_thread(cap: CaptureReport) -> str:
    if cap.threads_note:
        return cap.threads_note
    return "nothing to show (no LLM call on the wire, no client conversation decoded)"


# --- terminal -----------------------------------------------------------------------------------------------


def _term_text(text: str, indent: str, width: int) -> list[str]:
    """`text` wrapped at `width`, at most TERM_PART_LINES lines of it (then how many more there are)."""
    lines = text.splitlines() or [""]
    out: list[str] = []
    for i, line in enumerate(lines):
        if len(out) >= TERM_PART_LINES:
            out.append(f"{indent}… ({len(lines) - i} more lines)")
            break
        out += textwrap.wrap(line, max(20, width - len(indent)), initial_indent=indent, subsequent_indent=indent) or [indent]
    return out


def _term_part(p: Part, role: str | None, arrow: str, pad: str, width: int, path: str) -> list[str]:
    where = " ".join(f"#{s}" for s in p.at)
    head = f"{pad}{arrow} {part_label(p, role)}" + (f"  [{where}]" if where else "")
    head = head if len(head) < width else head[:width - 2] + "…"
    if p.kind == "thinking":
        return [f"{head}: ({p.size:,} characters, folded)"]
    out = [head + ":"] + _term_text(p.text, pad + "    ", width)
    note = cut_note(p, path)
    return out + (textwrap.wrap(note, width, initial_indent=pad + "    ", subsequent_indent=pad + "    ") if note else [])


def _term_aside(a: Aside, pad: str, width: int, path: str) -> list[str]:
    part = a.as_part()
    if part is not None:
        return _term_part(part, a.kind if a.kind == "user" else "assistant", "·", pad, width, path)
    return _term_text(f"· {a.kind}: {a.text}  [#{a.seq}]", pad, width)[:3]


def _term_call(c: ThreadCall, pad: str, width: int, path: str, places: NotePlaces) -> list[str]:
    out = [*textwrap.wrap(f"{pad}── {call_head(c)}  [#{c.seq}]", width, subsequent_indent=pad + "   "), *textwrap.wrap(" · ".join(call_figures(c)), max(20, width - len(pad) - 3),
                                                                 initial_indent=pad + "   ", subsequent_indent=pad + "   ")]
    out += notes_term(places.at(c), pad + "   ", width)
    if not c.detailed:
        return out
    out += textwrap.wrap(f"{pad}   sent: {sent_text(c)}", width, subsequent_indent=pad + "      ")
    fresh, echoes = new_first(c)
    if c.new_omitted:
        out += textwrap.wrap(omitted_text(c, path), width, initial_indent=pad + "   ", subsequent_indent=pad + "     ")
    for m in fresh:
        for p in m.parts:
            out += _term_part(p, m.role, "→", pad + "   ", width, path) + notes_term(places.at(p), pad + "     ", width)
    out += [f"{pad}   (call {m.echo_of}'s reply, sent back)" for m in echoes[:1]]
    for p in c.reply:
        out += _term_part(p, "assistant", reply_arrow(p), pad + "   ", width, path) + \
            notes_term(places.at(p), pad + "     ", width)
    return out


def thread_term(cap: CaptureReport, width: int) -> list[str]:
    """The thread as terminal lines (system prompts and tool definitions by their size: `-f html` shows them)."""
    out: list[str] = [] if cap.threads else [_no_thread(cap)]
    places = note_places(cap)
    for th in cap.threads:
        shown = 0
        out += notes_term(places.at(th), "", width)
        for kind, item, depth in steps(th):
            pad = "    " * depth
            if kind == "call":
                shown += 1
                out += _term_call(item, pad, width, cap.path, places) if shown <= MAX_SHOWN_CALLS else textwrap.wrap(
                    f"{pad}── {call_head(item)} · {' · '.join(call_figures(item))}", width, subsequent_indent=pad + "   "
                ) + notes_term(places.at(item), pad + "   ", width)
            elif kind == "run":
                out += textwrap.wrap(f"{pad}   {run_text(item)}", width, subsequent_indent=pad + "     ")
            else:
                out += _term_aside(item, pad, width, cap.path) + notes_term(places.at(item), pad + "  ", width)
        out += th.notes
    for ch, why in cap.conversation_notes.items():
        out += textwrap.wrap(f"[{ch}] {why}", width, subsequent_indent="    ")
    return out


# --- markdown -----------------------------------------------------------------------------------------------


def _md_fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}\n{text}\n{ticks}"


def _md_at(p: Part) -> str:
    return " ".join(f"seq {s}" for s in p.at)


def _md_part(p: Part, role: str | None, arrow: str, path: str) -> list[str]:
    title = f"{arrow} **{part_label(p, role)}**" + (f" <sub>{_md_at(p)}</sub>" if p.at else "")
    text = p.text[:MD_PART_TEXT]
    more = len(p.text) - len(text) + p.cut
    note = f"\n… ({more:,} more characters: `wirecap cat {path} --seq {p.at[0]} --json`)" if more and p.at else ""
    if p.kind == "thinking" or len(text) > MD_FOLD:
        return [f"<details><summary>{title} ({p.size:,} characters)</summary>", "", _md_fence(text) + note, "",
                "</details>", ""]
    if p.kind in ("text", "error"):
        return [title, "", "\n".join("> " + line for line in text.splitlines()) or "> ", note, ""]
    return [title, "", _md_fence(text) + note, ""]


def _md_aside(a: Aside, path: str) -> list[str]:
    part = a.as_part()
    if part is not None:
        return _md_part(part, a.kind if a.kind == "user" else "assistant", "·", path)
    return [f"- _{a.kind}_ <sub>seq {a.seq}</sub>: {a.text[:300]}", ""]


def _md_nested(lines: list[str], depth: int) -> list[str]:
    """A subagent's line (what the client printed of it) quoted once per level it is nested."""
    if not depth:
        return lines
    quote = "> " * depth
    body = "\n".join(lines).rstrip("\n").split("\n")
    return [(quote + line).rstrip() for line in body] + [""]


def _md_system(c: ThreadCall, path: str) -> list[str]:
    if c.system is None or not c.system:
        return []
    size = sum(p.size for p in c.system)
    body = "\n\n".join(p.text[:MD_PART_TEXT] for p in c.system)
    left = size - len(body) + 2 * (len(c.system) - 1)
    note = f"… ({left:,} more characters: `wirecap cat {path} --seq {c.seq} --json`)" if left > 0 else ""
    return [f"<details><summary>System prompt ({len(c.system)} block(s), {size:,} characters)</summary>", "",
            _md_fence(body), note, "", "</details>", ""]


def _md_tools(c: ThreadCall) -> list[str]:
    if c.tools is None:
        return []
    lines = [f"- `{t.name}`: {t.description.splitlines()[0][:160] if t.description else ''}" for t in c.tools]
    return [f"<details><summary>Tools ({len(c.tools)})</summary>", "", *lines, "", "</details>", ""]


def _md_call(c: ThreadCall, h: str, path: str, places: NotePlaces) -> list[str]:
    out = [f"{h} {call_head(c)} <sub>seq {c.seq}</sub>", "", " · ".join(call_figures(c)), "",
           *notes_markdown(places.at(c))]
    if not c.detailed:
        return out
    out += [f"_sent: {sent_text(c)}_", ""]
    fresh, echoes = new_first(c)
    out += [omitted_text(c, path), ""] if c.new_omitted else []
    for m in fresh:
        for p in m.parts:
            out += _md_part(p, m.role, "→", path) + notes_markdown(places.at(p))
    out += [f"_(call {m.echo_of}'s reply, sent back as history)_\n" for m in echoes[:1]]
    out += _md_system(c, path) + _md_tools(c)
    for p in c.reply:
        out += _md_part(p, "assistant", reply_arrow(p), path) + notes_markdown(places.at(p))
    return out


def thread_markdown(cap: CaptureReport, h: str = "###") -> list[str]:
    """The thread as Markdown lines (`h`: the heading level of a call)."""
    out: list[str] = [] if cap.threads else [f"_{_no_thread(cap)}_", ""]
    places = note_places(cap)
    for th in cap.threads:
        shown = 0
        out += notes_markdown(places.at(th))
        for kind, item, depth in steps(th):
            if kind == "call":
                shown += 1
                sub = "#" * min(depth, 2)
                out += _md_call(item, h + sub, cap.path, places) if shown <= MAX_SHOWN_CALLS else \
                    [f"- {call_head(item)}: {' · '.join(call_figures(item))}", *notes_markdown(places.at(item))]
            elif kind == "run":
                out += [f"- {run_text(item)}", ""]
            else:
                out += _md_nested(_md_aside(item, cap.path) + notes_markdown(places.at(item)), depth)
        out += [f"- {n}" for n in th.notes]
    return out + [f"- `{ch}`: {why}" for ch, why in cap.conversation_notes.items()]


# --- html ---------------------------------------------------------------------------------------------------


def _e(v: Any) -> str:
    return escape(str(v), quote=True)


def _links(at: tuple[int, ...], anchor: Callable[[int], str]) -> str:
    return " ".join(f'<a href="#{anchor(s)}">#{s}</a>' for s in at)


def _html_text(p: Part, path: str) -> str:
    text = p.text[:HTML_PART_TEXT]
    more = len(p.text) - len(text) + p.cut
    note = ""
    if more:
        where = f": <code>wirecap cat {_e(path)} --seq {p.at[0]} --json</code>" if p.at else ""
        note = f'<div class="muted">… ({more:,} more characters{where})</div>'
    return f"<pre>{_e(text)}</pre>{note}"


def _html_part(p: Part, role: str | None, arrow: str, anchor: Callable[[int], str], path: str) -> str:
    cls = f"tp k-{p.kind}" + (" is-error" if p.is_error or p.kind == "error" else "")
    title = f'<span class="who">{arrow} {_e(part_label(p, role))}</span> <span class="seq">{_links(p.at, anchor)}</span>'
    if p.kind == "thinking" or (len(p.text) > HTML_FOLD.get(p.kind, 1200) and not p.is_error):
        first = p.text.strip().split("\n", 1)[0][:100]
        return (f'<div class="{cls}"><details><summary>{title} <span class="muted">{_e(first)} … ({p.size:,} '
                f"characters)</span></summary>{_html_text(p, path)}</details></div>")
    return f'<div class="{cls}"><div>{title}</div>{_html_text(p, path)}</div>'


def _html_system(c: ThreadCall, ci: int, path: str) -> str:
    if c.system is None:
        return (f'<p class="muted sent-same">System prompt: as in <a href="#c{ci}-call-{c.system_same_as}">'
                f"call {c.system_same_as}</a></p>" if c.system_same_as is not None else "")
    if not c.system:
        return ""  # (the sent line says so)
    size = sum(p.size for p in c.system)
    blocks = "".join(f"<pre>{_e(p.text)}</pre>" + (f'<div class="muted">… ({p.cut:,} more characters: <code>wirecap cat '
                                                   f"{_e(path)} --seq {c.seq} --json</code>)</div>" if p.cut else "")
                     for p in c.system)
    return (f'<details class="system"><summary>System prompt <span class="muted">({len(c.system)} block(s), '
            f"{size:,} characters)</span></summary>{blocks}</details>")


def _html_tools(c: ThreadCall, ci: int) -> str:
    if c.tools is None:
        if c.tools_same_as is not None:
            return (f'<p class="muted sent-same">Tools ({c.tools_count}): as in '
                    f'<a href="#c{ci}-call-{c.tools_same_as}">call {c.tools_same_as}</a></p>')
        return ""
    items = "".join(f'<details class="tooldef"><summary><code>{_e(t.name)}</code> <span class="muted">'
                    f"{_e(t.description.splitlines()[0][:140] if t.description else '')}</span></summary>"
                    f"<pre>{_e(t.description)}</pre>{'<pre>' + _e(t.schema) + '</pre>' if t.schema else ''}"
                    f"{'<div class=muted>… (cut)</div>' if t.size > len(t.description) + len(t.schema) else ''}</details>"
                    for t in c.tools)
    return f'<details class="tools"><summary>Tools ({len(c.tools)})</summary>{items}</details>'


def _with_notes(body: str, obj: Any, ci: int, anchor: Callable[[int], str], places: NotePlaces) -> str:
    """A place of the thread with the notes that sit on it (and an id the notes section links to)."""
    notes = places.at(obj)
    if not notes:
        return body
    return f'<div class="noted" id="c{ci}-{places.anchor(obj)}">{body}{notes_html(notes, anchor)}</div>'


def _html_call(c: ThreadCall, ci: int, anchor: Callable[[int], str], path: str, places: NotePlaces) -> str:
    cls = "tcall" + (" is-error" if c.outcome in ("failed", "cut") else "") + (" retry" if c.retry else "")
    head = (f'<div class="thead"><b>{_e(call_head(c))}</b> <span class="seq"><a href="#{anchor(c.seq)}">#{c.seq}</a></span>'
            f'<div class="figs">{" · ".join(_e(f) for f in call_figures(c))}</div>{notes_html(places.at(c), anchor)}</div>')
    if not c.detailed:
        return f'<div class="{cls}" id="c{ci}-call-{c.n}">{head}</div>'
    fresh, echoes = new_first(c)
    new = (f'<p class="muted">{_e(omitted_text(c, path))}</p>' if c.new_omitted else "") + \
        "".join(_with_notes(_html_part(p, m.role, "→", anchor, path), p, ci, anchor, places) for m in fresh for p in m.parts)
    echo = "".join(f'<p class="muted">(<a href="#c{ci}-call-{m.echo_of}">call {m.echo_of}</a>\'s reply, sent back as '
                   "history)</p>" for m in echoes[:1])
    earlier = (f'<p class="muted">{c.earlier} earlier message(s), as sent before (see the calls above)</p>'
               if c.earlier else "")
    sent = (f'<div class="sent"><div class="muted">sent: {_e(sent_text(c))}</div>{new or "<p class=muted>nothing new</p>"}'
            f"{echo}{_html_system(c, ci, path)}{_html_tools(c, ci)}{earlier}</div>")
    reply = "".join(_with_notes(_html_part(p, "assistant", reply_arrow(p), anchor, path), p, ci, anchor, places)
                    for p in c.reply)
    return f'<div class="{cls}" id="c{ci}-call-{c.n}">{head}{sent}<div class="reply">{reply}</div></div>'


def _html_step(kind: str, item: Any, ci: int, anchor: Callable[[int], str], path: str, full: bool,
               places: NotePlaces) -> str:
    if kind == "call":
        if full:
            return _html_call(item, ci, anchor, path, places)
        return (f'<div class="tcall" id="c{ci}-call-{item.n}"><b>{_e(call_head(item))}</b> '
                f'{" · ".join(_e(f) for f in call_figures(item))}{notes_html(places.at(item), anchor)}</div>')
    if kind == "run":
        return f'<div class="trun{" is-error" if item.is_error else ""}">{_e(run_text(item))} {_links(item.seqs[:1], anchor)}</div>'
    return _with_notes(_html_aside(item, anchor, path), item, ci, anchor, places)


def _html_aside(item: Aside, anchor: Callable[[int], str], path: str) -> str:
    part = item.as_part()
    if part is not None:
        return _html_part(part, item.kind if item.kind == "user" else "assistant", "·", anchor, path)
    seq = f' <a href="#{anchor(item.seq)}">#{item.seq}</a>' if item.seq is not None else ""
    return f'<div class="taside{" is-error" if item.is_error else ""}">· {_e(item.kind)}: {_e(item.text)}{seq}</div>'


def thread_html(cap: CaptureReport, ci: int, anchor: Callable[[int], str] | None = None) -> str:
    """The thread as an HTML fragment (no script needed: <details> fold the long parts). `anchor(seq)`
    gives the id a record's row has on the page (default `seq-N`, `cI-seq-N` for a second capture)."""
    if anchor is None:
        def anchor(seq: int) -> str:
            return f"seq-{seq}" if ci == 0 else f"c{ci}-seq-{seq}"
    out: list[str] = [] if cap.threads else [f'<p class="muted">{_e(_no_thread(cap))}</p>']
    places = note_places(cap)
    for th in cap.threads:
        shown = 0
        tid = places.anchor(th)
        out.append(f'<div class="thread" id="c{ci}-{tid}">' if tid else '<div class="thread">')
        out.append(notes_html(places.at(th), anchor))
        for kind, item, depth in steps(th):
            shown += kind == "call"
            body = _html_step(kind, item, ci, anchor, cap.path, shown <= MAX_SHOWN_CALLS, places)
            out.append(f'<div class="sub" style="margin-left:{depth * 24}px">{body}</div>' if depth else body)
        out += [f'<p class="muted">{_e(n)}</p>' for n in th.notes]
        out.append("</div>")
    out += [f'<p class="muted nodecoder"><code>{_e(ch)}</code>: {_e(why)}</p>' for ch, why in cap.conversation_notes.items()]
    return "".join(out)


THREAD_CSS = """
.thread .tcall{border:1px solid var(--line);border-radius:6px;padding:6px 10px;margin:10px 0}
.thread .tcall.is-error{border-color:#c33}.thread .thead .figs{font-size:12px;color:var(--muted,#666)}
.thread .sent{border-left:3px solid #79c;padding-left:8px;margin:6px 0}
.thread .reply{border-left:3px solid #7b7;padding-left:8px;margin:6px 0}
.thread .tp{margin:4px 0}.thread .tp pre{white-space:pre-wrap;margin:2px 0}.thread .tp .who{font-weight:600}
.thread .tp.is-error .who{color:#c33}.thread .trun,.thread .taside{font-size:13px;margin:4px 0;color:var(--muted,#666)}
.thread .trun.is-error{color:#c33}.thread details.tooldef{margin-left:12px}
.thread .noted:target{background:var(--hl)}.thread .noted,.thread .tcall{scroll-margin-top:48px}
"""
