"""`wirecap report`: every shared sample renders in every format; redaction of what is shown; the
HTML data survives hostile payloads; bad input gives one clear line."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import orjson
import pytest
from conftest import run_wirecap
from sample_captures import make_capture, sample_files

from wirecap.analysis import notes as N
from wirecap.analysis.report import build_report
from wirecap.analysis.report.html import render_html_string
from wirecap.analysis.report.json import render_json
from wirecap.analysis.report.markdown import render_markdown
from wirecap.analysis.report.term import render_term
from wirecap.capture.reader import read_records
from wirecap.capture.redact import Redactor
from wirecap.capture.writer import CaptureWriter

SAMPLES = sample_files()


class _Scripts(HTMLParser):
    """Collects <script> elements (attributes and text) and element ids."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.ids: set[str] = set()
        self._in: dict[str, str | None] | None = None
        self._buf: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "script":
            self._in, self._buf = a, []

    def handle_data(self, data):
        if self._in is not None:
            self._buf.append(data)

    def handle_endtag(self, tag):
        if tag == "script" and self._in is not None:
            self.scripts.append((self._in, "".join(self._buf)))
            self._in = None


def html_records(html: str, ci: int = 0) -> tuple[list[dict], list[list], set[str]]:
    """The records and index embedded in a report, parsed the way the page's script does."""
    p = _Scripts()
    p.feed(html)
    recs: list[dict] = []
    index: list[list] = []
    for attrs, text in p.scripts:
        if attrs.get("class") == "wc-raw" and attrs.get("data-cap") == str(ci):
            recs += [json.loads(line) for line in text.split("\n")]
        if attrs.get("id") == f"wc-index-{ci}":
            index = json.loads(text)
    return recs, index, p.ids


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.name for s in SAMPLES])
def test_every_sample_renders_in_every_format(sample: Path, tmp_path: Path):
    cap = make_capture(sample, tmp_path / "cap.jsonl")
    records = list(read_records(cap))
    rep = build_report([str(cap)])
    term = render_term(rep, width=100)
    assert "cap.jsonl" in term and "-- channels --" in term and "-- conversation --" in term
    md = render_markdown(rep)
    assert md.startswith("# wirecap report: `cap.jsonl`") and "## Findings" in md
    data = json.loads(render_json(rep))
    assert data["captures"][0]["records"] == len(records)
    assert sum(c["messages_c2s"] + c["messages_s2c"] for c in data["captures"][0]["channels"]) == \
        sum(1 for r in records if r["type"] == "msg")
    html = render_html_string(rep)
    recs, index, ids = html_records(html)
    assert [r["seq"] for r in recs] == [r["seq"] for r in records] == [i[0] for i in index]
    assert {f"seq-{r['seq']}" for r in records[:100]} <= ids
    # The conversation is shown where a decoder understood the channel, or says why not.
    cap_rep = rep.captures[0]
    for c in cap_rep.channels:
        assert c.ch in cap_rep.conversation or c.ch in cap_rep.conversation_notes or c.parent in cap_rep.conversation \
            or any(o.parent == c.ch and o.ch in cap_rep.conversation for o in cap_rep.channels) or c.messages == 0


def test_tool_conversation_is_shown_as_people_think_of_it(tmp_path: Path):
    sample = next(s for s in SAMPLES if s.name == "claude_code_tool_bash.jsonl")
    cap = make_capture(sample, tmp_path / "tool.jsonl")
    rep = build_report([str(cap)])
    entries = [e for es in rep.captures[0].conversation.values() for e in es]
    kinds = [e.kind for e in entries]
    assert "tool_call" in kinds and "tool_result" in kinds and "assistant" in kinds
    call = next(e for e in entries if e.kind == "tool_call")
    assert call.name == "Bash" and (call.input or {}).get("command") == "echo hi"
    md = render_markdown(rep)
    assert "**tool call Bash**" in md and "echo hi" in md and "The tool returned: hi" in md


def test_records_alone_when_no_decoder_is_used(tmp_path: Path):
    sample = next(s for s in SAMPLES if s.name == "codex_hello.jsonl")
    cap = make_capture(sample, tmp_path / "c.jsonl")
    rep = build_report([str(cap)], with_analysis=False)
    c = rep.captures[0]
    assert c.conversation == {} and c.messages == 4
    assert all(v.startswith("no decoder for this channel") for v in c.conversation_notes.values())
    term = render_term(rep, width=90)
    assert "no decoder for this channel" in term and "Hello! This is a reply" not in term.split("-- conversation --")[1]


SECRETS = ["sk-ant-api03-SECRETSECRETSECRET123", "supersecretauthtokenvalue42", "ghp_abcdefghijklmnopqrstuvwx1234"]


def secret_capture(path: Path) -> Path:
    with CaptureWriter(path, redactor=Redactor(enabled=False)) as w:
        w.open("http-1", "http", method="POST", url="http://127.0.0.1:9/v1/messages",
               headers={"x-api-key": SECRETS[0], "authorization": f"Bearer {SECRETS[0]}"})
        w.msg("http-1", "c2s", json.dumps({"authToken": SECRETS[1], "prompt": f"use {SECRETS[2]} please"}))
        w.response("http-1", 200, {"content-type": "application/json"})
        w.msg("http-1", "s2c", json.dumps({"type": "error", "error": {"message": f"bad key {SECRETS[0]}"}}))
        w.close_channel("http-1", status=200)
    return path


def test_no_secret_is_shown_even_from_a_no_redact_capture(tmp_path: Path):
    cap = secret_capture(tmp_path / "leaky.jsonl")
    raw = cap.read_text()
    assert all(s in raw for s in SECRETS)  # the capture itself holds them (--no-redact)
    N.add_note(cap, tag="bug", text=f"the key {SECRETS[0]} leaked", seq=2, author="a")
    N.add_note(cap, tag="bug", text="header", seq=1, author="a")
    rep = build_report([str(cap)])
    md = render_markdown(rep)
    assert "<details><summary>seq 2" in md and "<details><summary>seq 1" in md  # the raw messages are there
    outputs = {"md": md, "term": render_term(rep, width=120), "json": render_json(rep), "html": render_html_string(rep)}
    for fmt, text in outputs.items():
        for s in SECRETS:
            assert s not in text, f"{fmt} shows {s}"
        assert "«redacted:" in text, fmt
    r = run_wirecap("report", str(cap), "-f", "md")
    assert r.returncode == 0 and not any(s.encode() in r.stdout for s in SECRETS)


def test_html_data_survives_hostile_payloads(tmp_path: Path):
    cap = tmp_path / "hostile.jsonl"
    evil = ["</script><script>alert(1)</script>", "line\u2028sep\u2029para", "<!-- <script>", "\x00\x1b[31m"]
    with CaptureWriter(cap) as w:
        w.open("stdout", "pipe", proc="proc", stream="stdout")
        for s in evil:
            w.msg("stdout", "s2c", s)
            w.msg("stdout", "s2c", json.dumps({"text": s}))
        w.msg("stdout", "s2c", b"\xff\xfe binary")
    html = render_html_string(build_report([str(cap)]))
    assert html.count("<script>alert(1)") == 0
    p = _Scripts()
    p.feed(html)
    for _attrs, text in p.scripts:  # inside scripts the JS line separators are escaped
        assert "\u2028" not in text and "\u2029" not in text and "</script" not in text.lower()
    recs, index, _ = html_records(html)
    assert recs == list(read_records(cap))
    assert len(index) == len(recs)


def test_many_records_are_chunked_and_indexed(tmp_path: Path):
    cap = tmp_path / "many.jsonl"
    with CaptureWriter(cap) as w:
        w.open("ws-1", "ws", url="ws://127.0.0.1:1/ws", headers={})
        for i in range(2500):
            w.msg("ws-1", "s2c", json.dumps({"n": i}))
    html = render_html_string(build_report([str(cap)], with_analysis=False))
    recs, index, ids = html_records(html)
    assert len(recs) == len(index) == 2502 and recs[-1]["type"] == "end"
    assert html.count('class="wc-raw"') == 3
    assert "seq-100" in ids and "seq-101" not in ids  # only the first page is static HTML


def test_notes_inline_and_past_the_end_warning(tmp_path: Path):
    sample = next(s for s in SAMPLES if s.name == "claude_code_hello.jsonl")
    cap = make_capture(sample, tmp_path / "hello.jsonl")
    note = N.add_note(cap, tag="bug", text="the greeting is canned", seq=4, author="Ann")
    N.add_notes(cap, [N.make_note(tag="question", text="from another run", author="a", seq=999)])
    rep = build_report([str(cap)])
    term = render_term(rep, width=120)
    assert "the greeting is canned" in term and "seq 999 is past the end of the capture" in term
    md = render_markdown(rep)
    assert f"`{note.id}`" in md and "past the end" in md
    html = render_html_string(rep)
    assert 'href="#seq-4"' in html and "the greeting is canned" in html


def test_term_fits_the_width(tmp_path: Path):
    sample = next(s for s in SAMPLES if s.name == "codebuff_sdk0107_hello_requests.jsonl")
    cap = make_capture(sample, tmp_path / "w.jsonl")
    rep = build_report([str(cap)])
    for width in (80, 132):
        lines = render_term(rep, width=width).splitlines()
        too_wide = [ln for ln in lines if len(ln) > width]
        assert not too_wide, too_wide[:3]


def test_two_captures_include_the_diff(tmp_path: Path):
    a = make_capture(next(s for s in SAMPLES if s.name == "claude_code_hello.jsonl"), tmp_path / "a.jsonl")
    b = make_capture(next(s for s in SAMPLES if s.name == "claude_code_partial_text.jsonl"), tmp_path / "b.jsonl")
    rep = build_report([str(a), str(b)])
    assert rep.diff is not None, rep.diff_note
    assert rep.diff["equal"] is False
    md = render_markdown(rep)
    assert "## A vs B" in md and "**A and B differ:" in md
    html = render_html_string(rep)
    recs_b, _, ids = html_records(html, 1)
    assert recs_b and "c1-seq-1" in ids and 'id="diff"' in html
    assert json.loads(render_json(rep))["diff"]["equal"] is False


def test_two_captures_include_the_unified_diff(tmp_path: Path):
    """The unified diff (what `wirecap diff` prints) is part of a two-capture report in every format
    (it was silently left out while the report looked for `render_unified` in the wrong module)."""
    a = make_capture(next(s for s in SAMPLES if s.name == "claude_code_hello.jsonl"), tmp_path / "a.jsonl")
    b = make_capture(next(s for s in SAMPLES if s.name == "claude_code_partial_text.jsonl"), tmp_path / "b.jsonl")
    rep = build_report([str(a), str(b)])
    assert rep.diff is not None, rep.diff_note
    text = rep.diff["text"]
    assert f"--- A {a}" in text and f"+++ B {b}" in text and "@@ A:" in text
    assert "<details><summary>unified diff (<code>wirecap diff A B</code>)</summary>" in render_markdown(rep)
    assert f"+++ B {b}" in render_term(rep, width=120)
    assert '<pre class="diff">' in render_html_string(rep)
    assert json.loads(render_json(rep))["diff"]["text"] == text


def test_cli_formats_outputs_and_errors(tmp_path: Path):
    cap = make_capture(next(s for s in SAMPLES if s.name == "codex_hello.jsonl"), tmp_path / "run.jsonl")
    r = run_wirecap("report", str(cap), "-f", "html")
    assert r.returncode == 0, r.stderr
    out = Path(r.stdout.decode().strip())
    assert out == tmp_path / "run.report.html" and out.read_text().startswith("<!doctype html>")
    r = run_wirecap("report", str(cap), "-f", "json", "-o", str(tmp_path / "r.json"))
    assert r.returncode == 0 and orjson.loads((tmp_path / "r.json").read_bytes())["captures"][0]["records"] == 9
    r = run_wirecap("report", str(cap))
    assert r.returncode == 0 and b"-- timeline --" in r.stdout
    for args, msg in [((str(tmp_path / "missing.jsonl"),), "no such file"),
                      ((str(cap), str(cap), str(cap)), "one capture, or two"),
                      ((str(cap), "-f", "pdf"), "Invalid value")]:
        r = run_wirecap("report", *args)
        err = r.stderr.decode()
        assert r.returncode == 2 and msg in err and "Traceback" not in err, err
    notcap = tmp_path / "x.jsonl"
    notcap.write_text("hello\n")
    r = run_wirecap("report", str(notcap))
    assert r.returncode == 2 and re.search(r"x\.jsonl:1: not a wirecap capture", r.stderr.decode())


@pytest.mark.parametrize("dialect", ["claude-code", "opencode", "anthropic-sse"])
def test_report_dialect_names_the_forced_dialect_where_it_decodes(dialect: str):
    """`report --dialect D` shows D in the channel table for exactly the units the decoders force
    (every unit of D's transport; the others keep their detected dialect), as the sessions do.
    Real capture: CodeBuddy 2.117.0 recorded with `wirecap record` (process + pipes + one HTTP exchange)."""
    from wirecap.dialects import Decoding

    cap = Path(__file__).resolve().parents[2] / "captures" / "codebuddy-2.117.0-hello.jsonl"
    r = run_wirecap("report", "--json", "--dialect", dialect, str(cap))
    assert r.returncode == 0, r.stderr.decode()
    rep = json.loads(r.stdout)["captures"][0]
    d = Decoding(dialect=dialect)
    for rec in read_records(str(cap)):
        d.feed(rec)
    d.finish()
    decoded = {ch: u.dialect for ch, u in d.chan_unit.items()}
    shown = {c["ch"]: c["dialect"] for c in rep["channels"] if c["ch"] != "stderr"}  # (stderr: no dialect of its own)
    assert shown == {ch: decoded[ch] for ch in shown}
    assert dialect in shown.values() and len(set(shown.values())) == 2  # forced where its transport is, not elsewhere
    assert all(c["dialect_reason"] == "--dialect" for c in rep["channels"] if c["dialect"] == dialect)
    assert {s["ch"]: s["dialect"] for s in rep["sessions"]} == {ch: shown[ch] for ch in ("proc", "http-1")}


def test_report_reads_and_decodes_a_capture_once(tmp_path: Path, monkeypatch):
    """One pass feeds the record summary, the statistics, the findings and the conversation: the
    capture is opened once (no finding or note points at a record here) and decoded once."""
    from wirecap.analysis import stats, validate
    from wirecap.analysis.report import build
    from wirecap.capture.reader import CaptureReader
    from wirecap.dialects import Decoding

    cap = make_capture(next(s for s in SAMPLES if s.name == "claude_code_hello.jsonl"), tmp_path / "a.jsonl")
    opened: list[str] = []
    decodings: list[Decoding] = []

    class CountingReader(CaptureReader):
        def __init__(self, path, *a, **kw):
            opened.append(str(path))
            super().__init__(path, *a, **kw)

    class CountingDecoding(Decoding):
        def __init__(self, *a, **kw):
            decodings.append(self)
            super().__init__(*a, **kw)

    def no_second_decoding(*a, **kw):
        raise AssertionError("a second decoding")

    monkeypatch.setattr(build, "CaptureReader", CountingReader)
    monkeypatch.setattr(build, "Decoding", CountingDecoding)
    monkeypatch.setattr(stats, "Decoding", no_second_decoding)
    monkeypatch.setattr(validate, "Decoding", no_second_decoding)
    rep = build.build_capture_report(str(cap))
    assert opened == [str(cap)] and len(decodings) == 1
    assert rep.sessions and rep.sessions[0]["dialect"] == "claude-code"
    assert rep.findings is not None and not rep.findings_note
    assert rep.conversation and not rep.warnings


def test_a_failing_part_costs_only_itself(tmp_path: Path, monkeypatch):
    """Statistics that fail on a capture say so; findings and the conversation are still there."""
    from wirecap.analysis.stats import SessionsSink

    def boom(self, rec, events):
        raise RuntimeError("stats bug")

    monkeypatch.setattr(SessionsSink, "on_record", boom)
    cap = make_capture(next(s for s in SAMPLES if s.name == "claude_code_hello.jsonl"), tmp_path / "a.jsonl")
    rep = build_report([str(cap)]).captures[0]
    assert rep.sessions is None and rep.sessions_note == "statistics failed: RuntimeError: stats bug"
    assert rep.findings is not None and rep.conversation


def test_a_failing_record_summary_is_not_a_decoding_failure(tmp_path: Path, monkeypatch):
    """The record summary comes from the records alone: a bug there is raised, not reported as
    "decoding failed" in a report that would then look merely incomplete."""
    from wirecap.analysis.report.model import RecordSummarizer

    def boom(self, rec):
        raise RuntimeError("summary bug")

    monkeypatch.setattr(RecordSummarizer, "feed", boom)
    cap = make_capture(next(s for s in SAMPLES if s.name == "claude_code_hello.jsonl"), tmp_path / "a.jsonl")
    with pytest.raises(RuntimeError, match="summary bug"):
        build_report([str(cap)])
