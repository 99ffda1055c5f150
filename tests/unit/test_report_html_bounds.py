"""The HTML report stays bounded whatever the capture's size (report/embed.py, report/html.py)."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import orjson
import pytest
from conftest import ROOT

from wirecap.analysis.report import build_report
from wirecap.analysis.report import html as H
from wirecap.analysis.report.embed import Gap, Kept, Selection, cut_record, see_whole

sys.path.insert(0, str(ROOT))  # the bench package lives at the repo root, outside the installed wirecap
from bench.bench_report import write_capture  # noqa: E402


def _recs(n: int, size: int = 100) -> list[dict]:
    return [{"seq": i, "t": i / 10, "type": "msg", "ch": "ws-1", "dir": "s2c", "text": "x" * size} for i in range(1, n + 1)]


def _sized(recs: list[dict]) -> list[tuple[dict, bytes]]:
    return [(r, orjson.dumps(r)) for r in recs]


def test_cut_record_says_how_big_and_how_to_see_it() -> None:
    rec = {"seq": 7, "t": 1.0, "type": "msg", "ch": "stdout", "dir": "s2c", "json": {"big": "y" * 5000}}
    kept = cut_record(rec, orjson.dumps(rec), 1000, "run.jsonl")
    assert kept.cut and len(kept.line) < 1000
    assert kept.rec["cut"] == {"bytes": len(orjson.dumps(rec)), "see": "wirecap cat run.jsonl --seq 7 --json"}
    assert kept.rec["seq"] == 7 and kept.rec["ch"] == "stdout" and "json" not in kept.rec
    small = {"seq": 1, "type": "msg", "text": "hi"}
    assert cut_record(small, orjson.dumps(small), 1000, "x").rec is small
    assert see_whole("-", 3) == "wirecap cat CAP --seq 3 --json"


def test_selection_keeps_head_tail_and_linked_within_budget() -> None:
    recs = _recs(5000)
    sel = Selection(200_000, "cap.jsonl", linked={2500, 2600})
    shown: list[int] = []

    def show(rec: dict, line: bytes) -> dict:
        shown.append(rec["seq"])
        return {**rec, "text": rec["text"].upper()}

    out = list(sel.select(_sized(recs), show))
    kept = [o.rec["seq"] for o in out if isinstance(o, Kept)]
    gaps = [o for o in out if isinstance(o, Gap)]
    assert kept[0] == 1 and kept[-1] == 5000  # the start and the end of the session
    assert 2500 in kept and 2600 in kept  # what the page links to
    assert kept == sorted(kept)
    assert len(gaps) == 3 and sum(g.count for g in gaps) == sel.skipped == 5000 - len(kept)
    # every seq is either kept or in exactly one gap
    covered = set(kept)
    for g in gaps:
        covered.update(range(g.first, g.last + 1))
    assert covered == set(range(1, 5001))
    size = sum(len(o.line) for o in out if isinstance(o, Kept))
    assert size < 200_000
    assert shown == kept  # only the records kept are made fit to show (redacted), each once
    assert all(o.rec["text"].startswith("XXX") for o in out if isinstance(o, Kept))


def test_selection_keeps_everything_of_a_small_capture() -> None:
    recs = _recs(50)
    out = list(Selection(1_000_000, "c").select(_sized(recs)))
    assert [o.rec for o in out] == recs  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def big_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    cap = tmp_path_factory.mktemp("bounds") / "big.jsonl"
    write_capture(cap, 6_000_000)
    rep = build_report([str(cap)])
    buf = io.StringIO()
    H.render_html(rep, buf, max_bytes=2_000_000)
    return cap, buf.getvalue()


def test_page_fits_its_budget_and_says_what_it_left_out(big_report: tuple[Path, str]) -> None:
    cap, page = big_report
    assert cap.stat().st_size > 5_000_000
    assert len(page.encode()) < 2_000_000 + 50_000  # (the budget, give or take non-ASCII text)
    m = re.search(r"… ([\d,]+) records not in this page \(seq (\d+)-(\d+)\); list them with "
                  r"wirecap cat (\S+) --seq \2-\3", page)
    assert m is not None and m[4] == str(cap)
    assert page.rstrip().endswith("</html>")
    assert '"gap":{"first":' in page


def test_a_small_capture_embeds_every_record() -> None:
    rep = build_report([str(ROOT / "captures/claude-code-2.1.197-tool-bash.jsonl")])
    page = H.render_html_string(rep)
    assert "records not in this page" not in page
    n = rep.captures[0].records
    assert page.count('class="wc-raw"') >= 1
    index = re.search(r'<script type="application/json" id="wc-index-0">(.*?)</script>', page, re.S)
    assert index is not None and len(orjson.loads(index[1])) == n


def test_a_big_page_shows_no_secret_even_from_a_no_redact_capture(tmp_path: Path) -> None:
    """Records are redacted only when kept (embed.Selection with `cap.shown`); a secret header in a run
    left out still has its value redacted where a kept record repeats it."""
    import json

    from wirecap.capture.redact import Redactor
    from wirecap.capture.writer import CaptureWriter

    key = "plainlookingvalue0123456789abcdef"  # not secret-shaped: known only from its header
    shaped = "sk-ant-api03-SECRETSECRETSECRET123"
    cap = tmp_path / "leaky-big.jsonl"
    filler = "word " * 200
    with CaptureWriter(cap, redactor=Redactor(enabled=False)) as w:
        w.open("stdout", "pipe", proc="proc", stream="stdout")
        for i in range(3000):
            if i == 1500:  # far past the head, far before the tail: left out of the page
                w.open("http-1", "http", method="POST", url="http://127.0.0.1:9/v1/messages",
                       headers={"x-api-key": key})
            w.msg("stdout", "s2c", json.dumps({"n": i, "text": filler}))
        w.msg("stdout", "s2c", json.dumps({"echo": f"the key was {key}", "other": shaped}))  # in the tail: kept
    rep = build_report([str(cap)])
    buf = io.StringIO()
    H.render_html(rep, buf, max_bytes=1_500_000)
    page = buf.getvalue()
    assert "records not in this page" in page  # (the header's record was left out)
    assert key not in page and shaped not in page
    assert page.count("«redacted:") >= 2


def test_the_transport_table_lists_at_most_max_table_rows_calls_and_says_how_to_see_them_all() -> None:
    from conftest import ROOT

    from wirecap.analysis.report import build_report
    from wirecap.analysis.report import html as H

    cap = build_report([str(ROOT / "captures" / "codex-0.169.0-ws-tool.jsonl")]).captures[0]
    assert cap.transport is not None
    one = cap.transport["calls"][0]
    cap.transport["calls"] = [dict(one, call=n) for n in range(H.MAX_TABLE_ROWS + 50)]
    part = H._transport(cap, 0)
    assert part.count("<tr>") == H.MAX_TABLE_ROWS + 1  # (the head row)
    assert f"The first {H.MAX_TABLE_ROWS} of {H.MAX_TABLE_ROWS + 50:,} calls are listed" in part
    assert "wirecap stats --calls" in part
