"""The HTML report in a real headless Chromium (driven over the DevTools protocol on 127.0.0.1):
it opens from a file:// URL without JavaScript errors, the search box filters the rows, and a
finding's link (on a later page) brings its message into view. A screenshot is kept as an artifact."""

from __future__ import annotations

import json
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
