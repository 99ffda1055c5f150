"""Commands that read a whole capture hold a bounded amount of it (issue 14: "a 1 GB capture goes
through every command under 1 GB RSS").

Each command runs as a child under a hard address-space limit (RLIMIT_AS) far above what it needs
and far below what holding the capture took: the base 0.1 code needed 190-450 MB for these inputs
(report html kept an index entry per record in a list, export the whole HAR document, replay exec
every line's record); now each stays near the interpreter's own ~60 MB. No timing, no sampling: the
kernel refuses the allocation, the child fails. The 1 GB figures are in bench/attack_memory.py.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import orjson
import pytest

LIMIT = 160 * 1024 * 1024  # bytes of address space for the child


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def run_limited(*args: str, cwd: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "wirecap", *args], capture_output=True, timeout=60, cwd=cwd,
                          preexec_fn=_limited)


HEADER = orjson.dumps({"wirecap": 1, "type": "header", "id": "mem", "created": "2026-01-01T00:00:00.000000Z",
                       "origin": {"tool": "wirecap"}, "redaction": {"enabled": False}}) + b"\n"


def pipe_capture(path, n: int) -> None:
    """A process printing `n` short lines: many small records (Python holds a dict per record)."""
    with open(path, "wb") as f:
        f.write(HEADER)
        f.write(b'{"seq":1,"t":0.0,"type":"open","ch":"proc","kind":"process","argv":["x"]}\n'
                b'{"seq":2,"t":0.0,"type":"open","ch":"stdout","kind":"pipe","proc":"proc","stream":"stdout"}\n')
        f.write(b"".join(b'{"seq":%d,"t":0.5,"type":"msg","ch":"stdout","dir":"s2c","text":"line %d"}\n' % (i + 3, i)
                         for i in range(n)))
        f.write(b'{"seq":%d,"t":1.0,"type":"close","ch":"proc","exit_code":3}\n'
                b'{"seq":%d,"t":1.0,"type":"end","records":%d,"bytes":0,"errors":0}\n' % (n + 3, n + 4, n + 4))


def http_capture(path, n: int) -> None:
    """`n` small HTTP exchanges."""
    with open(path, "wb") as f:
        f.write(HEADER)
        parts = []
        for i in range(n):
            s, ch = 4 * i, b"http-%d" % i
            parts.append(b'{"seq":%d,"t":0.5,"type":"open","ch":"%s","kind":"http","method":"POST","url":"http://h/v1/x"}\n'
                         b'{"seq":%d,"t":0.5,"type":"msg","ch":"%s","dir":"c2s","json":{"q":%d}}\n'
                         b'{"seq":%d,"t":0.5,"type":"response","ch":"%s","status":200}\n'
                         b'{"seq":%d,"t":0.5,"type":"close","ch":"%s","status":200}\n'
                         % (s + 1, ch, s + 2, ch, i, s + 3, ch, s + 4, ch))
        f.write(b"".join(parts))
        f.write(b'{"seq":%d,"t":1.0,"type":"end","records":%d,"bytes":0,"errors":0}\n' % (4 * n + 1, 4 * n + 1))


def short_exchanges(path, n: int) -> None:
    """`n` HTTP exchanges of one request each (no answer body), a body of 2000 empty objects: 6 KB of
    JSON that is 140 KB as Python objects, so holding the messages of every unit shows at once."""
    body = b'{"model":"m","messages":[' + b",".join(b"{}" for _ in range(2000)) + b"]}"
    with open(path, "wb") as f:
        f.write(HEADER)
        for i in range(n):
            s, ch = 4 * i, b"http-%d" % i
            f.write(b'{"seq":%d,"t":0.5,"type":"open","ch":"%s","kind":"http","method":"POST","url":"http://h/v1/messages"}\n'
                    b'{"seq":%d,"t":0.5,"type":"msg","ch":"%s","dir":"c2s","json":%s}\n'
                    b'{"seq":%d,"t":0.5,"type":"response","ch":"%s","status":200}\n'
                    b'{"seq":%d,"t":0.5,"type":"close","ch":"%s","status":200}\n'
                    % (s + 1, ch, s + 2, ch, body, s + 3, ch, s + 4, ch))
        f.write(b'{"seq":%d,"t":1.0,"type":"end","records":%d,"bytes":0,"errors":0}\n' % (4 * n + 1, 4 * n + 1))


pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS semantics are Linux's")


def test_replay_exec_streams_the_lines(tmp_path):
    cap = tmp_path / "pipe.jsonl"
    pipe_capture(cap, 300_000)  # 25 MB; holding it took 230 MB
    r = run_limited("replay", "exec", str(cap), "--speed", "0", cwd=str(tmp_path))
    assert r.returncode == 3, r.stderr.decode()[-500:]
    assert r.stdout.count(b"\n") == 300_000 and r.stdout.endswith(b"line 299999\n")


def test_export_har_streams_the_entries(tmp_path):
    cap = tmp_path / "http.jsonl"
    http_capture(cap, 50_000)  # 16 MB; the whole HAR document took 300 MB
    r = run_limited("export", str(cap), "-o", "out.har", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr.decode()[-500:]
    entries = orjson.loads((tmp_path / "out.har").read_bytes())["log"]["entries"]
    assert len(entries) == 50_000 and entries[-1]["_wirecap_ch"] == "http-49999"
    assert oct(os.stat(tmp_path / "out.har").st_mode & 0o777) == "0o600"


def test_report_html_spools_the_index(tmp_path):
    cap = tmp_path / "pipe.jsonl"
    pipe_capture(cap, 40_000)  # 3.3 MB; the in-memory index (and its copies) took 190 MB
    r = run_limited("report", str(cap), "-f", "html", "-o", "r.html", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr.decode()[-500:]
    html = (tmp_path / "r.html").read_text()
    # the page is bounded (report/embed.py): the first and the last records, 1000 a chunk, and a row for
    # the run of records left out between them
    assert 20 < html.count('class="wc-raw"') < 41
    assert '"line 0"' in html and '"line 39999"' in html and "records not in this page" in html


def test_replay_scripts_from_a_file_keep_offsets_not_messages(tmp_path):
    """`replay serve`/`client` load scripts holding where each message is; what they read back is the
    record itself, and a capture rewritten under a running replay is said so, not misread."""
    import gzip

    from wirecap.capture.reader import read_records
    from wirecap.errors import WirecapError
    from wirecap.replay.script import RecordRef, build_scripts, load_scripts

    cap = tmp_path / "http.jsonl"
    http_capture(cap, 3)
    _header, lazy = load_scripts(str(cap))
    eager = build_scripts(read_records(str(cap)))
    assert [s.request_body for s in lazy] == [s.request_body for s in eager] == [
        [r] for r in read_records(str(cap)) if r["type"] == "msg"]
    assert all(isinstance(s.steps[0]._client, RecordRef) for s in lazy)
    gz = tmp_path / "http.jsonl.gz"
    gz.write_bytes(gzip.compress(cap.read_bytes()))
    _header, held = load_scripts(str(gz))  # compressed: no offsets to go back to, held in memory
    assert [s.request_body for s in held] == [s.request_body for s in eager]
    assert not any(isinstance(s.steps[0]._client, RecordRef) for s in held)
    cap.write_bytes(cap.read_bytes().replace(b'"seq":2,', b'"seq":2,     '))  # every later record moves
    with pytest.raises(WirecapError, match="changed while being replayed"):
        _ = lazy[1].request_body


def test_report_model_keeps_bounded_previews():
    """What the report model holds of one payload, one tool input, and of lists that grow with the
    capture (recorder errors) is bounded, and says what it left out and where the whole is."""
    from wirecap.analysis.report.model import (
        MAX_ENTRY_INPUT,
        MAX_RECORDER_ERRORS,
        MAX_SHOWN_RECORD,
        CaptureReport,
        bounded_input,
        bounded_record,
        summarize_records,
    )

    small = {"seq": 4, "t": 0.1, "type": "msg", "ch": "stdout", "dir": "s2c", "json": {"a": 1}}
    assert bounded_record(small) is small
    big = {**small, "seq": 5, "json": {"text": "x" * (3 * MAX_SHOWN_RECORD)}}
    shown = bounded_record(big)
    assert len(orjson.dumps(shown)) < MAX_SHOWN_RECORD
    assert shown["shown_truncated"] == len(orjson.dumps(big)) and "json" not in shown
    assert shown["text"].endswith("more characters; the whole record is #seq-5)")
    assert bounded_input({"command": "ls"}, 7) == {"command": "ls"}
    cut = bounded_input({"content": "y" * (2 * MAX_ENTRY_INPUT)}, 7)
    assert isinstance(cut, str) and len(cut) < MAX_ENTRY_INPUT + 100 and cut.endswith("all of it in #seq-7)")

    n = MAX_RECORDER_ERRORS + 5
    recs = [{"seq": i + 1, "t": 0.0, "type": "error", "where": "tee", "message": "boom"} for i in range(n)]
    rep = summarize_records(CaptureReport(path="x", header={}), recs)
    assert len(rep.recorder_errors) == MAX_RECORDER_ERRORS and rep.recorder_errors_omitted == 5
    assert ("recorder errors", n) in rep.summary_rows()
    assert any("first 1000 recorder errors" in w for w in rep.warnings)


def test_report_lists_a_bounded_number_of_findings(tmp_path):
    """A capture with more findings than MAX_FINDINGS: the first ones listed, all of them counted."""
    from wirecap.analysis.report import build
    from wirecap.analysis.report.model import MAX_FINDINGS
    from wirecap.capture.redact import Redactor
    from wirecap.dialects.base import WARNING, Finding

    cap = tmp_path / "pipe.jsonl"
    pipe_capture(cap, 3)
    n = MAX_FINDINGS + 7
    rep = build.build_capture_report(str(cap))
    build.list_findings(rep, [Finding(WARNING, "r", f"m{i}", None, None) for i in range(n)], Redactor())
    assert len(rep.findings) == MAX_FINDINGS and rep.findings_omitted == {WARNING: 7}
    assert ("findings", f"{n} {WARNING}") in rep.summary_rows()
    assert any(f"first {MAX_FINDINGS} of {n} findings" in w for w in rep.warnings)
    assert rep.to_json()["findings_omitted"] == {WARNING: 7}


@pytest.mark.parametrize("command", ["validate", "info"])
def test_short_units_are_let_go_when_they_close(tmp_path, command):
    """A unit of fewer than 8 messages is decided at its close: validation's drift check and the
    summaries' dialect detection let its messages go then, not at the end (both held every request of
    this 9.5 MB capture: 240 MB)."""
    cap = tmp_path / "short.jsonl"
    short_exchanges(cap, 1500)
    r = run_limited(command, str(cap), cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr.decode()[-500:]
    assert (b"no findings" if command == "validate" else b"http-1499") in r.stdout
