"""Notes (`wirecap annotate`) in the report's thread: each at the part it points at, in term, markdown and html.

The notes are made by `wirecap annotate` on tmp copies of shipped captures: a note on a message, on a
tool result, on a range, on a whole channel, on the request record (the call's head), and one that
points at nothing the thread shows (it stays in the notes section only: no note is lost).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import run_wirecap

from wirecap.analysis import notes as N
from wirecap.analysis.report.build import build_report
from wirecap.analysis.report.html import render_html_string
from wirecap.analysis.report.markdown import render_markdown
from wirecap.analysis.report.term import render_term
from wirecap.analysis.report.thread_notes import MAX_INLINE, MAX_PER_PLACE

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
ENV = {"WIRECAP_AUTHOR": "Ann"}


def _copy(tmp_path: Path, name: str) -> Path:
    cap = tmp_path / name
    shutil.copyfile(CAPTURES / name, cap)
    return cap


def annotate(cap: Path, *args: str) -> str:
    """`wirecap annotate CAP ARGS`; the new note's id."""
    r = run_wirecap("annotate", str(cap), *args, env=ENV)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode().split()[0]


def report(cap: Path, *args: str) -> str:
    r = run_wirecap("report", str(cap), *args, env=ENV)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode()


def term_sections(text: str) -> tuple[str, str]:
    """(the conversation, the notes section) of a terminal report."""
    notes = text.split("\n-- notes --\n", 1)[1].split("\n-- ", 1)[0]
    return text.split("\n-- conversation --\n", 1)[1], notes


def md_sections(text: str) -> tuple[str, str]:
    conv = text.split("\n## Conversation\n", 1)[1].split("\n## ", 1)[0]
    notes = text.split("\n## Notes\n", 1)[1].split("\n## ", 1)[0]
    return conv, notes


def html_sections(page: str) -> tuple[str, str]:
    def section(sid: str) -> str:
        m = re.search(rf'<section id="{sid}">(.*?)</section>', page, re.S)
        assert m is not None, sid
        return m.group(1)

    return section("c0-conversation"), section("c0-notes")


@pytest.fixture
def claude(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The Claude Code tool run with a note of each kind (text -> id)."""
    cap = _copy(tmp_path, "claude-code-2.1.197-tool-bash.jsonl")
    ids = {
        "MSGNOTE": annotate(cap, "--seq", "19", "--tag", "bug", "MSGNOTE said twice?"),  # stdout's copy of the reply
        "RESULTNOTE": annotate(cap, "--seq", "33", "--tag", "question", "RESULTNOTE why hi"),  # the tool result line
        "RANGENOTE": annotate(cap, "--seq", "20", "--to", "24", "--tag", "todo", "RANGENOTE the Bash call"),
        "CHANNOTE": annotate(cap, "--ch", "stdout", "--tag", "expected", "CHANNOTE stream json"),
        "HEADNOTE": annotate(cap, "--seq", "35", "--tag", "info", "HEADNOTE the second request"),
        "LOSTNOTE": annotate(cap, "--seq", "4", "--tag", "info", "LOSTNOTE the HEAD probe"),  # no thread part
    }
    return cap, ids


PLACED = ("MSGNOTE", "RESULTNOTE", "RANGENOTE", "CHANNOTE", "HEADNOTE")


def _each_once(conv: str, notes: str, ids: dict[str, str]) -> None:
    for word, nid in ids.items():
        assert notes.count(word) == 1 and nid in notes, (word, "notes section")  # no note is lost
        assert conv.count(word) == (1 if word in PLACED else 0), (word, "conversation")


def test_term_shows_each_note_at_its_part(claude: tuple[Path, dict[str, str]]) -> None:
    cap, ids = claude
    conv, notes = term_sections(report(cap, "--width", "120"))
    _each_once(conv, notes, ids)
    lines = conv.splitlines()

    def at(word: str) -> int:
        return next(i for i, line in enumerate(lines) if word in line)

    # the channel's note heads the thread; the others follow the part they point at
    assert at("CHANNOTE") == 0
    assert at("← assistant") < at("MSGNOTE") < at("← tool call Bash") < at("RANGENOTE") < at("── call 2")
    assert at("── call 2") < at("HEADNOTE") < at("sent: 4 messages") < at("→ tool result") < at("RESULTNOTE")
    assert f"[{ids['RANGENOTE']}] seq 20-24, Ann: RANGENOTE" in lines[at("RANGENOTE")]


def test_markdown_shows_each_note_at_its_part(claude: tuple[Path, dict[str, str]]) -> None:
    cap, ids = claude
    conv, notes = md_sections(report(cap, "-f", "md"))
    _each_once(conv, notes, ids)
    assert conv.index("I'll run that command.") < conv.index("MSGNOTE") < conv.index("tool call Bash") < \
        conv.index("RANGENOTE") < conv.index("call 2 ·") < conv.index("HEADNOTE") < conv.index("RESULTNOTE")
    assert conv.lstrip().startswith(f"- ✎ expected [{ids['CHANNOTE']}] ch stdout")


def test_html_notes_link_to_their_record_and_sit_on_an_anchored_part(claude: tuple[Path, dict[str, str]]) -> None:
    cap, ids = claude
    out = cap.with_suffix(".html")
    report(cap, "-f", "html", "-o", str(out))
    page = out.read_text()
    conv, notes = html_sections(page)
    _each_once(conv, notes, ids)
    for word, seq in (("MSGNOTE", 19), ("RESULTNOTE", 33), ("RANGENOTE", 20), ("HEADNOTE", 35)):
        note = re.search(rf'<div class="note [^"]*" data-note="{ids[word]}">.*?</div>', conv)
        assert note is not None and f'href="#seq-{seq}"' in note.group(0) and word in note.group(0)
    # the notes section links each placed note to the part it sits on, and that part has the id
    for word in PLACED:
        row = next(r for r in notes.split("<tr>") if word in r)
        link = re.search(r'href="#(c0-[a-z0-9-]+)">in the conversation', row)
        assert link is not None, word
        holder = re.search(rf'id="{link.group(1)}"(.*?)(?=id="c0-|$)', conv, re.S)
        assert holder is not None and ids[word] in holder.group(1), word
    assert "in the conversation" not in next(r for r in notes.split("<tr>") if "LOSTNOTE" in r)
    assert re.search(r'id="c0-call-1-p\d+"><div class="tp k-text"><div><span class="who">← assistant', conv)
    assert 'id="c0-thread-0"' in conv and 'id="c0-call-2"' in conv


def test_codebuff_ws_and_codex_asides(tmp_path: Path) -> None:
    """A WebSocket call's reply parts (Codebuff: the tool call, the tool result the client sent within the
    call, the text) and what only the client printed (Codex's stdout tool result) hold their notes."""
    cb = _copy(tmp_path, "codebuff-sdk-0.3.13-ws-tool.jsonl")
    ids = {"CBCALL": annotate(cb, "--seq", "5", "CBCALL"), "CBRESULT": annotate(cb, "--seq", "7", "CBRESULT"),
           "CBTEXT": annotate(cb, "--seq", "12", "CBTEXT"), "CBCHAN": annotate(cb, "--ch", "ws-1", "CBCHAN")}
    conv, _ = term_sections(report(cb, "--width", "120"))
    assert all(conv.count(w) == 1 for w in ids)
    assert conv.index("tool call") < conv.index("CBCALL") < conv.index("tool result") < conv.index("CBRESULT") < \
        conv.index("The tool returned") < conv.index("CBTEXT")
    cx = _copy(tmp_path, "codex-0.169.0-ws-tool.jsonl")
    nid = annotate(cx, "--seq", "21", "CXASIDE")
    page = tmp_path / "cx.html"
    report(cx, "-f", "html", "-o", str(page))
    conv_html, _ = html_sections(page.read_text())
    assert conv_html.count("CXASIDE") == 1
    assert re.search(rf'<div class="noted" id="c0-aside-21">.*?data-note="{nid}"', conv_html, re.S)


def test_a_channel_range_and_bounds(tmp_path: Path) -> None:
    """`--ch` narrows a range to its channel's records; a place shows at most MAX_PER_PLACE notes and
    says how many more (the notes section lists them all); thousands of notes stay cheap."""
    cap = _copy(tmp_path, "claude-code-2.1.197-tool-bash.jsonl")
    # 19 is stdout's (the reply text), 20.. http-2's (the tool call)
    N.add_note(cap, tag="a", text="ONWIRE", seq=19, seq_end=30, ch="http-2", author="a")
    N.add_note(cap, tag="a", text="ANYCH", seq=19, seq_end=30, author="a")
    N.add_notes(cap, [N.make_note(tag="many", text=f"MANY{i:04d}", author="a", seq=9, time=f"t{i}") for i in range(3000)])
    rep = build_report([str(cap)])
    conv, notes = term_sections(render_term(rep, width=120))
    assert conv.index("I'll run that command.") < conv.index("ANYCH") < conv.index("tool call Bash") < \
        conv.index("ONWIRE") < conv.index("── call 2")
    assert len(re.findall(r"MANY\d{4}", conv)) == MAX_PER_PLACE  # at the call's head (seq 9: its request)
    more = re.search(r"… ([\d,]+) more note\(s\) here", conv)  # (MAX_INLINE placed in all)
    assert more is not None and int(more.group(1).replace(",", "")) == MAX_INLINE - 2 - MAX_PER_PLACE
    assert len(re.findall(r"MANY\d{4}", notes)) == 3000
    md_conv, _ = md_sections(render_markdown(rep, max_chars=0))
    assert len(re.findall(r"MANY\d{4}", md_conv)) == MAX_PER_PLACE
    html_conv, _ = html_sections(render_html_string(rep))
    assert len(re.findall(r"MANY\d{4}", html_conv)) == MAX_PER_PLACE


def test_place_notes_collapsed_calls_and_channels_without_a_thread(tmp_path: Path) -> None:
    """A call laid out as one line holds its parts' notes at its head; a channel the thread does not
    cover (stderr printed nothing; http-1 has no decoder) has no place."""
    from wirecap.analysis.report.thread_notes import place_notes
    from wirecap.analysis.report.thread_view import steps

    cap = _copy(tmp_path, "claude-code-2.1.197-tool-bash.jsonl")
    result = N.add_note(cap, tag="a", text="on the tool result", seq=33, author="a")
    reply = N.add_note(cap, tag="a", text="on call 1's reply", seq=19, author="a")
    quiet = N.add_note(cap, tag="a", text="stderr", ch="stderr", author="a")
    undecoded = N.add_note(cap, tag="a", text="http-1", ch="http-1", author="a")
    rep = build_report([str(cap)]).captures[0]
    full = place_notes(rep, steps, 300).anchor_note
    assert full == {result.id: "call-2-p0", reply.id: "call-1-p3"}
    one_line = place_notes(rep, steps, 1).anchor_note  # call 2 laid out as one line
    assert one_line == {result.id: "call-2", reply.id: "call-1-p3"} and quiet.id not in one_line
    assert undecoded.id not in one_line
