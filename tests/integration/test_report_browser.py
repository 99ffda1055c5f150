"""The HTML report in a real headless Chromium (driven over the DevTools protocol on 127.0.0.1):
it opens from a file:// URL without JavaScript errors, the search box filters the rows, and a
finding's link (on a later page) brings its message into view. A screenshot is kept as an artifact."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cdp import Browser, install_chromium

from wirecap.analysis import notes as N
from wirecap.analysis.report import build_report
from wirecap.analysis.report.html import render_html
from wirecap.capture.writer import CaptureWriter

UNACKED = 250  # txid whose ack never comes: a `cb-ack-missing` finding far past the first page


@pytest.fixture(scope="session")
def chromium() -> str:
    path, why = install_chromium()
    if path is None:
        pytest.skip(f"headless Chromium unavailable: {why}")
    return path


@pytest.fixture(scope="module")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    d = tmp_path_factory.mktemp("browser")
    cap = d / "ws.jsonl"
    with CaptureWriter(cap) as w:
        w.open("ws-1", "ws", t=0.0, url="ws://127.0.0.1:4242/ws", headers={})
        t = 0.01
        for i in range(300):
            w.msg("ws-1", "c2s", json.dumps({"type": "action", "txid": i,
                                             "data": {"type": "user-input", "prompt": f"question number {i}"}}), t=t)
            t += 0.01
            if i != UNACKED:
                w.msg("ws-1", "s2c", json.dumps({"type": "ack", "txid": i, "success": True}), t=t)
                t += 0.01
            if i == 150:
                t += 3.0  # a long silence for the timeline
        w.close_channel("ws-1", t=t, code=1000, reason="", by="client")
    N.add_note(cap, tag="bug", text="the server stalls here", seq=300, author="tester")
    rep = build_report([str(cap)])
    finding = next(f for f in rep.captures[0].findings if f["rule"] == "cb-ack-missing")
    out = d / "ws.report.html"
    with open(out, "w", encoding="utf-8") as f:
        render_html(rep, f)
    return out, finding["seq"]


@pytest.fixture(scope="module")
def page(chromium: str, report_file: tuple[Path, int]):
    with Browser(chromium) as b:
        b.navigate(report_file[0].as_uri())
        yield b


def test_opens_from_file_without_js_errors(page: Browser, report_file):
    assert page.evaluate("location.protocol") == "file:"
    assert page.evaluate("typeof window.wirecapReport") == "object"
    assert page.evaluate("document.querySelectorAll('#wc-rows-0 tr').length") == 100
    assert page.evaluate("document.querySelector('#c0-messages .wc-count').textContent") == f"{2 + 300 + 299 + 1} records"
    assert page.js_errors() == []


def test_search_filters_rows(page: Browser):
    page.evaluate("var s = document.getElementById('wc-search-0'); s.value = 'question number 123';"
                  "s.dispatchEvent(new Event('input'))")
    rows = page.evaluate("new Promise(r => setTimeout(() => r(Array.from(document.querySelectorAll('#wc-rows-0 tr'))"
                         ".map(tr => tr.textContent)), 500))")
    assert len(rows) == 1 and "question number 123" in rows[0]
    page.evaluate("var s = document.getElementById('wc-search-0'); s.value = '\"ack\"';"
                  "s.dispatchEvent(new Event('input'))")
    count = page.evaluate("new Promise(r => setTimeout(() => r(document.querySelector('#c0-messages .wc-count')"
                          ".textContent), 500))")
    assert count == "299 of 602 records match"
    page.evaluate("var s = document.getElementById('wc-search-0'); s.value = '';"
                  "s.dispatchEvent(new Event('input'))")
    assert page.evaluate("new Promise(r => setTimeout(() => r(document.querySelectorAll('#wc-rows-0 tr').length), 400))") == 100
    assert page.js_errors() == []


def test_finding_link_scrolls_to_its_message(page: Browser, report_file, tmp_path_factory):
    seq = report_file[1]
    assert seq > 100  # not on the first page: the link must page there
    link = f"#c0-findings a[href='#seq-{seq}']"
    assert page.evaluate(f"!!document.querySelector(\"{link}\")")
    page.evaluate(f"document.querySelector(\"{link}\").click()")
    state = page.evaluate(
        "new Promise(r => setTimeout(() => { var row = document.getElementById('seq-" + str(seq) + "');"
        "var box = row && row.getBoundingClientRect();"
        "r({found: !!row, top: box && box.top, bottom: box && box.bottom, h: innerHeight,"
        " hl: row && row.classList.contains('hl'), raw: row && row.querySelector('pre').textContent}); }, 400))")
    assert state["found"] and state["hl"]
    assert state["top"] >= 0 and state["bottom"] <= state["h"]  # in the viewport
    assert f'"txid": {UNACKED}' in state["raw"]  # the raw view of that message is open
    shot = tmp_path_factory.mktemp("artifacts") / "report-finding.png"
    page.screenshot(shot)
    print(f"\nscreenshot: {shot}")
    assert shot.stat().st_size > 10_000
    assert page.js_errors() == []


def test_summary_is_readable_without_javascript(chromium: str, report_file):
    with Browser(chromium) as b:
        b.call("Emulation.setScriptExecutionDisabled", {"value": True}, session=True)
        b.navigate(report_file[0].as_uri())
        text = b.evaluate("document.body.innerText")
        shot = report_file[0].with_name("report-nojs.png")
        b.screenshot(shot, full_page=True)
        print(f"\nscreenshot: {shot}")
    assert "cb-ack-missing" in text and "the server stalls here" in text and "Timeline" in text
    assert "Without JavaScript only the first 100 of 602 records are listed." in text


# --- the reports people read, as a person would look at them (screenshots saved) ---------------------

CAPTURES = Path(__file__).resolve().parents[2] / "captures"


def screenshots_dir() -> Path:
    """Where the screenshots go: $WIRECAP_SCREENSHOTS, else tests/artifacts/ (gitignored)."""
    d = Path(os.environ.get("WIRECAP_SCREENSHOTS") or Path(__file__).resolve().parents[1] / "artifacts")
    d.mkdir(parents=True, exist_ok=True)
    return d


def _page_of(paths: list[Path], out: Path, **kw) -> Path:
    rep = build_report([str(p) for p in paths])
    with open(out, "w", encoding="utf-8") as f:
        render_html(rep, f, **kw)
    return out


def _look(b: Browser, name: str) -> dict:
    """Screenshots of the whole page and of its pictures (when it has them); what the page says."""
    d = screenshots_dir()
    full = b.screenshot(d / f"{name}.png", full_page=True)
    assert full.stat().st_size > 10_000
    if b.evaluate("!!document.querySelector('#c0-pictures svg.waterfall')"):
        assert b.screenshot_of("#c0-pictures", d / f"{name}-pictures.png").stat().st_size > 3_000
    return {"text": b.evaluate("document.body.innerText"), "errors": b.js_errors()}


def _svg_labels(b: Browser, ci: int = 0) -> list[str]:
    return b.evaluate(f"Array.from(document.querySelectorAll('#c{ci}-pictures svg.waterfall text.wf-label'))"
                      ".map(t => t.textContent)")


def _visible(b: Browser, selector: str) -> bool:
    return b.evaluate(f"(() => {{ var e = document.querySelector({json.dumps(selector)}); if (!e) return false;"
                      " var r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; })()")


def test_claude_code_tool_run(chromium: str, tmp_path: Path):
    page = _page_of([CAPTURES / "claude-code-2.1.197-tool-bash.jsonl"], tmp_path / "claude-tool.html")
    with Browser(chromium, width=1280, height=1000) as b:
        b.navigate(page.as_uri())
        seen = _look(b, "claude-code-tool-run")
        assert seen["errors"] == []
        assert _svg_labels(b) == ["call 1 http-2 claude-opus-4-8", "tool Bash", "call 2 http-3 claude-opus-4-8"]
        assert _visible(b, "#c0-pictures svg.waterfall") and _visible(b, "#c0-pictures svg.tokens")
        # the pictures come right after the summary and the findings
        order = b.evaluate("['summary','findings','pictures','conversation'].map(s => "
                           "document.getElementById('c0-' + s).getBoundingClientRect().top + scrollY)")
        assert order == sorted(order)
        # hover titles say what each bar is
        titles = b.evaluate("Array.from(document.querySelectorAll('#c0-pictures svg.waterfall title'))"
                            ".map(t => t.textContent)")
        assert any(t.startswith("tool Bash:") and "result after" in t for t in titles)
        # a label links to its record, and following it shows that record
        b.evaluate("document.querySelector('#c0-pictures svg.waterfall a').dispatchEvent("
                   "new MouseEvent('click', {bubbles: true}))")
        href = b.evaluate("document.querySelector('#c0-pictures svg.waterfall a').getAttribute('href')")
        assert b.evaluate("new Promise(r => setTimeout(() => r(location.hash), 300))") == href
        assert b.evaluate(f"!!document.getElementById({json.dumps(href[1:])})")
        assert href == "#c0-call-1"  # a call's label leads to that call in the thread
        # the thread: what the model saw (system prompt, tool definitions), the tool result going back
        conv = "#c0-conversation"
        assert b.evaluate(f"document.querySelector('{conv} details.system summary').textContent").startswith(
            "System prompt (3 block(s)")
        assert b.evaluate(f"document.querySelector('{conv} details.tools summary').textContent") == "Tools (24)"
        text = b.evaluate(f"document.querySelector('{conv}').innerText")
        assert "→ tool result" in text and "\nhi\n" in text
        # stdout and the wire are one conversation: each assistant message once
        assert text.count("I'll run that command.") == 1 and text.count("The tool returned: hi") == 1
        b.evaluate(f"document.querySelector('{conv} details.system').open = true")
        b.screenshot_of(conv, screenshots_dir() / "claude-code-tool-run-thread.png")


def test_codebuff_websocket_session(chromium: str, tmp_path: Path):
    page = _page_of([CAPTURES / "codebuff-cli-1.0.115-ws.jsonl"], tmp_path / "codebuff-ws.html")
    with Browser(chromium) as b:
        b.navigate(page.as_uri())
        seen = _look(b, "codebuff-ws-session")
        assert seen["errors"] == []
        assert "tool run_terminal_command" in _svg_labels(b)
        text = b.evaluate("document.getElementById('c0-conversation').innerText")
        assert "<terminal_command_result>" in text  # the tool result
        assert "run echo hi" in text  # the user's turn
        assert text.count("The command output was:") == 1  # one copy of the assistant's message
        assert "no system prompt on the wire" in text  # (Codebuff 1.0 sends none: the thread says so)
        assert text.count("→ tool result") == 1  # the tool result going back to the model, in call 2


def test_error_run_marks_the_failed_call(chromium: str, tmp_path: Path):
    page = _page_of([CAPTURES / "claude-code-2.1.197-overloaded-error.jsonl"], tmp_path / "error.html")
    with Browser(chromium) as b:
        b.navigate(page.as_uri())
        seen = _look(b, "error-run")
        assert seen["errors"] == []
        marks = b.evaluate("Array.from(document.querySelectorAll('#c0-pictures svg.waterfall .wf-x'))"
                           ".map(t => t.textContent)")
        assert marks and all(m.startswith("✕ failed") for m in marks)
        assert any("overloaded" in m for m in marks)
        assert b.evaluate("document.querySelectorAll('#c0-pictures svg.waterfall rect.wf-failed').length") >= 1


def test_two_capture_diff_marks_the_first_divergence(chromium: str, tmp_path: Path):
    page = _page_of([CAPTURES / "claude-code-2.1.197-hello.jsonl", CAPTURES / "claude-code-2.1.197-tool-bash.jsonl"],
                    tmp_path / "two.html")
    with Browser(chromium, width=1280, height=1000) as b:
        b.navigate(page.as_uri())
        seen = _look(b, "two-capture-diff")
        assert seen["errors"] == []
        assert _visible(b, "#compare-first")
        first = b.evaluate("document.getElementById('compare-first').innerText")
        assert "First divergence" in first
        assert _svg_labels(b, 0) and _svg_labels(b, 1)  # both captures have their pictures
        # and A's and B's waterfalls on one time axis, right after the comparison
        ticks = b.evaluate("Array.from(document.querySelectorAll('#compare-pictures svg.waterfall')).map(s => "
                           "Array.from(s.querySelectorAll('text.wf-axis')).map(t => t.textContent + '@' + t.getAttribute('x')))")
        assert len(ticks) == 2 and ticks[0] == ticks[1]
        b.screenshot_of("#compare-pictures", screenshots_dir() / "two-capture-diff-one-axis.png")
        b.evaluate("document.getElementById('compare-first').scrollIntoView()")
        b.screenshot(screenshots_dir() / "two-capture-diff-divergence.png")


def test_big_capture_page_says_how_to_see_what_it_left_out(chromium: str, tmp_path: Path):
    import sys

    sys.path.insert(0, str(CAPTURES.parent))
    from bench.bench_report import write_capture

    cap = tmp_path / "big.jsonl"
    records = write_capture(cap, 6_000_000)
    page = _page_of([cap], tmp_path / "big.html", max_bytes=2_000_000)
    assert page.stat().st_size < 2_100_000
    with Browser(chromium) as b:
        b.navigate(page.as_uri())
        count = b.evaluate("document.querySelector('#c0-messages .wc-count').textContent")
        assert count.endswith(f" of {records} records in this page")
        left_out = b.evaluate("window.wirecapReport.views[0].idx.find(e => e[3] === 'gap')[0]")  # a record not kept
        b.evaluate(f"location.hash = '#seq-{left_out}'")
        missing = b.evaluate("new Promise(r => setTimeout(() => { var p = document.querySelector('#c0-messages "
                             ".wc-missing'); r(p.hidden ? null : p.textContent); }, 300))")
        assert missing is not None and f"wirecap cat {cap} --seq {left_out} --json" in missing
        _look(b, "big-capture")
        gap_rows = b.evaluate("new Promise(r => { var v = window.wirecapReport.views[0];"
                              " var i = v.idx.findIndex(e => e[3] === 'gap'); v.go(Math.floor(i / 100));"
                              " r(Array.from(document.querySelectorAll('#wc-rows-0 tr.gap')).map(t => t.textContent)); })")
        assert gap_rows and "records not in this page" in gap_rows[0] and "wirecap cat" in gap_rows[0]
        assert b.js_errors() == []


def test_pictures_need_no_javascript(chromium: str, tmp_path: Path):
    page = _page_of([CAPTURES / "claude-code-2.1.197-tool-bash.jsonl"], tmp_path / "nojs.html")
    with Browser(chromium) as b:
        b.call("Emulation.setScriptExecutionDisabled", {"value": True}, session=True)
        b.navigate(page.as_uri())
        assert b.evaluate("document.documentElement.classList.contains('js')") is False  # (the script never ran)
        box = b.evaluate("(() => { var r = document.querySelector('#c0-pictures svg.waterfall').getBoundingClientRect();"
                         " return [r.width, r.height]; })()")
        assert box[0] > 500 and box[1] > 40
        assert b.evaluate("document.querySelectorAll('#c0-pictures svg.waterfall rect.wf-tool').length") == 1
        b.screenshot_of("#c0-pictures", screenshots_dir() / "claude-code-tool-run-pictures-nojs.png")
