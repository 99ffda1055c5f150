"""`wirecap info` and `wirecap cat` through the real CLI (subprocesses, real files, real pipes)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import orjson
import pytest
from conftest import SAMPLES, run_wirecap

from wirecap.capture import CaptureWriter
from wirecap.capture.schema import validate_capture_file


@pytest.fixture
def cap(tmp_path):
    path = tmp_path / "cap.jsonl"
    with CaptureWriter(path) as w:
        w.open("proc", "process", argv=["claude", "-p", "say hi"])
        w.open("stdout", "pipe", proc="proc", stream="stdout", dialect="claude-code")
        w.msg("stdout", "s2c", b'{"type":"system","subtype":"init","session_id":"s"}')
        w.msg("stdout", "s2c", b'{"type":"result","subtype":"success","result":"hi"}')
        w.open("ws-1", "ws", url="ws://127.0.0.1:9/ws", headers={"host": "127.0.0.1:9"})
        w.msg("ws-1", "c2s", b'{"type":"action","txid":0,"data":{"type":"init"}}')
        w.msg("ws-1", "s2c", b'{"type":"ack","txid":0,"success":true}')
        w.msg("ws-1", "s2c", b"\x00\xff\x10binary", binary=True)
        w.msg("ws-1", "s2c", "line1\nline2\u2028 \x1b[31mred")
        w.close_channel("ws-1", code=1000, reason="bye", by="client")
        w.close_channel("stdout", bytes=100, lines=2)
        w.close_channel("proc", exit_code=0, duration=1.25)
    assert validate_capture_file(path) == []
    return path


def test_info_table_and_json(cap):
    res = run_wirecap("info", str(cap))
    assert res.returncode == 0 and res.stderr == b""
    out = res.stdout.decode()
    assert "redaction  on (default-v2)" in out
    assert "status     clean (end record present)" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith(("proc ", "stdout ", "ws-1 "))}
    assert "claude -p 'say hi'" in rows["proc"] and "exit 0" in rows["proc"] and "1.250s" in rows["proc"]
    assert "claude-code" in rows["stdout"]
    assert rows["ws-1"].split()[:3] == ["ws-1", "ws", "ws://127.0.0.1:9/ws"]
    assert "1000 client" in rows["ws-1"]
    res = run_wirecap("info", "--json", str(cap))
    info = orjson.loads(res.stdout)
    assert info["clean"] is True and info["redaction"] is True and info["messages"] == 6
    ws = next(c for c in info["channels"] if c["ch"] == "ws-1")
    assert ws["messages"] == {"c2s": 1, "s2c": 3}
    # no hint recorded for proc and ws-1: detected from argv and URL path, as the decoders would
    assert {c["ch"]: c["dialect"] for c in info["channels"]} == {
        "proc": "claude-code", "stdout": "claude-code", "ws-1": "codebuff-ws"}
    assert ws["bytes"] == 49 + 38 + 9 + len("line1\nline2\u2028 \x1b[31mred".encode())


def test_info_on_interrupted_capture_lists_problems(cap, tmp_path):
    data = cap.read_bytes()
    bad = tmp_path / "bad.jsonl"
    lines = data.splitlines(keepends=True)
    bad.write_bytes(b"".join(lines[:3]) + b"garbage\n" + b"".join(lines[3:-1]))
    res = run_wirecap("info", "--json", str(bad))
    assert res.returncode == 0
    info = orjson.loads(res.stdout)
    assert info["clean"] is False
    assert info["interrupted"] == "no end record (the recorder did not stop cleanly)"
    assert info["problems"][0].startswith(f"{bad}:4: invalid JSON")
    res = run_wirecap("info", str(bad))
    assert "status     interrupted: no end record" in res.stdout.decode()
    assert f"  {bad}:4: invalid JSON" in res.stdout.decode()


def test_cat_one_line_per_record_with_type_fields_first(cap):
    res = run_wirecap("cat", "--width", "0", str(cap))
    assert res.returncode == 0 and res.stderr == b""
    lines = res.stdout.decode().splitlines()
    assert len(lines) == 13  # 12 records + end
    assert "→ msg      [action/init] " in lines[5]
    assert "← msg      [ack] " in lines[6]
    assert "<9 binary> 00 ff 10" in lines[7]
    # control characters and U+2028 are shown escaped: one record stays one line
    assert '"line1\\nline2\\u2028 \\u001b[31mred"' in lines[8]
    assert lines[9].split()[2:5] == ["ws-1", "×", "close"] and "1000 client 'bye'" in lines[9]
    assert lines[-1].split()[2:4] == ["-", "="]


def test_cat_width_cuts_lines(cap):
    res = run_wirecap("cat", "--width", "40", str(cap))
    assert all(len(line) <= 40 for line in res.stdout.decode().splitlines())


def test_cat_json_is_byte_identical(cap):
    res = run_wirecap("cat", "--json", str(cap))
    assert res.stdout == cap.read_bytes()
    res = run_wirecap("cat", "--json", "--ch", "ws-1", "--dir", "s2c", str(cap))
    file_lines = cap.read_bytes().splitlines(keepends=True)
    out_lines = res.stdout.splitlines(keepends=True)
    assert out_lines[0] == file_lines[0]
    assert out_lines[1:] == [x for x in file_lines[1:] if b'"ch":"ws-1"' in x and b'"dir":"s2c"' in x]
    assert len(out_lines) == 4


def test_cat_filters(cap):
    def seqs(*args):
        res = run_wirecap("cat", "--width", "0", *args, str(cap))
        assert res.returncode == 0, res.stderr
        return [int(line.split()[1]) for line in res.stdout.decode().splitlines()]

    assert seqs("--type", "open") == [1, 2, 5]
    assert seqs("--type", "open", "--type", "close") == [1, 2, 5, 10, 11, 12]
    assert seqs("--ch", "stdout") == [2, 3, 4, 11]
    assert seqs("--dir", "c2s") == [6]
    assert seqs("--grep", "subtype\":\"(init|success)") == [3, 4]
    assert seqs("--grep", "binary", "--type", "msg") == [8]
    res = run_wirecap("cat", "--grep", "(", str(cap))
    assert res.returncode == 2 and res.stderr.decode().startswith("wirecap: --grep '(': invalid regular expression")


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".jsonl.zst"])
def test_cat_reads_stdin_and_compressed(cap, tmp_path, suffix):
    expected = run_wirecap("cat", "--width", "0", str(cap)).stdout
    res = run_wirecap("cat", "--width", "0", "-", input=cap.read_bytes())
    assert res.returncode == 0 and res.stdout == expected
    comp = tmp_path / f"c{suffix}"
    with CaptureWriter(comp) as w:
        w.open("stdout", "pipe", proc="proc", stream="stdout")
        for i in range(50):
            w.msg("stdout", "s2c", f'{{"type":"n{i}"}}')
    res = run_wirecap("cat", "--width", "0", str(comp))
    assert res.returncode == 0 and res.stderr == b""
    assert len(res.stdout.splitlines()) == 52 and b"[n49]" in res.stdout
    res = run_wirecap("cat", "--json", "-", input=comp.read_bytes())
    assert len(res.stdout.splitlines()) == 53
    assert validate_capture_file(comp) == []


def test_cat_is_quiet_when_the_pipe_closes(cap, tmp_path):
    big = tmp_path / "big.jsonl"
    with CaptureWriter(big) as w:
        w.open("stdout", "pipe", proc="proc", stream="stdout")
        for i in range(20000):
            w.msg("stdout", "s2c", f'{{"type":"line","i":{i}}}')
    for args in (["cat", str(big)], ["cat", "--json", str(big)]):
        proc = subprocess.run(
            f"{sys.executable} -m wirecap {' '.join(args)} | head -n 2; exit ${{PIPESTATUS[0]}}",
            shell=True, executable="/bin/bash", capture_output=True, timeout=60)
        assert proc.returncode == 0
        assert proc.stderr == b""
        assert len(proc.stdout.splitlines()) == 2


FOLLOW_WRITER = textwrap.dedent(
    """
    import sys, time
    from wirecap.capture import CaptureWriter
    w = CaptureWriter(sys.argv[1])
    w.open("stdout", "pipe", proc="proc", stream="stdout")
    for i in range(30):
        w.msg("stdout", "s2c", '{"type":"tick","i":%d}' % i)
        time.sleep(0.02)
    w.close()
    """
)


def test_cat_follow_stops_at_end(tmp_path):
    path = tmp_path / "live.jsonl"
    writer = subprocess.Popen([sys.executable, "-c", FOLLOW_WRITER, str(path)])
    try:
        deadline = time.monotonic() + 20
        while not (path.exists() and path.stat().st_size > 0) and time.monotonic() < deadline:
            time.sleep(0.02)
        res = run_wirecap("cat", "--follow", "--width", "0", str(path), timeout=60)
    finally:
        writer.wait(timeout=30)
    assert res.returncode == 0 and res.stderr == b""
    lines = res.stdout.decode().splitlines()
    assert len(lines) == 32 and "[tick]" in lines[-2] and lines[-1].split()[3] == "="


def test_cat_shows_notes_beside_messages(cap):
    notes_mod = pytest.importorskip("wirecap.analysis.notes")
    notes_mod.add_notes(cap, [
        notes_mod.make_note(tag="bug", text="this ack is too early", author="tester", seq=7, ch="ws-1"),
        notes_mod.make_note(tag="info", text="the codebuff socket", author="tester", ch="ws-1"),
    ])
    res = run_wirecap("cat", "--width", "0", str(cap))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.decode().splitlines()
    i = next(n for n, line in enumerate(lines) if line.split()[1] == "7")
    assert "✎ [bug] this ack is too early" in lines[i + 1]
    i = next(n for n, line in enumerate(lines) if line.split()[1] == "5")  # ws-1's open
    assert "✎ [info] the codebuff socket" in lines[i + 1]
    res = run_wirecap("cat", "--no-notes", "--width", "0", str(cap))
    assert "✎" not in res.stdout.decode()


def test_cat_and_info_on_an_imported_sample(tmp_path):
    out = tmp_path / "imp.jsonl"
    assert run_wirecap("import", str(SAMPLES / "codebuff115_hello_ws_frames.jsonl"), "-o", str(out)).returncode == 0
    res = run_wirecap("cat", "--width", "0", "--dir", "s2c", str(out))
    assert res.stdout.decode().count("[action/response-chunk]") == 6
    res = run_wirecap("info", str(out))
    assert "ws://127.0.0.1:41255/ws" in res.stdout.decode()
    assert "codebuff-ws" in res.stdout.decode()
    assert os.stat(out).st_mode & 0o777 == 0o600


def test_cat_previews_streamed_text(tmp_path):
    path = tmp_path / "sse.jsonl"
    with CaptureWriter(path) as w:
        w.open("http-1", "http", method="POST", url="http://127.0.0.1:1/v1/messages", headers={})
        w.msg("http-1", "s2c", b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi\\nthere"}}',
              sse={"event": "content_block_delta"})
        w.msg("http-1", "s2c", b'{"choices":[{"delta":{"content":"' + b"x" * 60 + b'"}}]}')
    lines = run_wirecap("cat", "--width", "0", str(path)).stdout.decode().splitlines()
    assert 'sse:content_block_delta [text_delta] "Hi\\nthere" {' in lines[1]
    assert '"' + "x" * 40 + '…" {"choices"' in lines[2]


def test_info_gives_a_wrapper_process_the_dialect_of_its_stdout(tmp_path):
    path = tmp_path / "wrapped.jsonl"
    with CaptureWriter(path) as w:
        w.open("proc", "process", argv=["python3", "wrapper.py"])
        w.open("stdout", "pipe", proc="proc", stream="stdout")
        w.open("stderr", "pipe", proc="proc", stream="stderr")
        w.msg("stdout", "s2c", b'{"type":"system","subtype":"init","session_id":"s","claude_code_version":"2.1.0"}')
        w.msg("stderr", "s2c", b"some log line")
    info = orjson.loads(run_wirecap("info", "--json", str(path)).stdout)
    assert {c["ch"]: c["dialect"] for c in info["channels"]} == {
        "proc": "claude-code", "stdout": "claude-code", "stderr": None}
