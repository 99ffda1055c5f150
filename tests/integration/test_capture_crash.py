"""Crashes and damage: a SIGKILLed writer, torn tails, corrupt lines, and bad files given to the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import run_wirecap

from wirecap.capture import CaptureReader, CaptureWriter, payload_bytes

WRITER_SCRIPT = textwrap.dedent(
    """
    import sys
    from wirecap.capture import CaptureWriter
    w = CaptureWriter(sys.argv[1])
    w.open("stdout", "pipe", proc="proc", stream="stdout")
    i = 0
    while True:
        seq = w.msg("stdout", "s2c", '{"i": %d, "pad": "%s"}' % (i, "x" * (i % 700)))
        sys.stdout.write(f"{seq}\\n")
        sys.stdout.flush()
        i += 1
    """
)


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".jsonl.zst"])
def test_sigkilled_writer_keeps_every_complete_record(tmp_path, suffix):
    """Plain or compressed: every record `msg` had returned from is readable after a SIGKILL."""
    path = tmp_path / f"killed{suffix}"
    proc = subprocess.Popen([sys.executable, "-c", WRITER_SCRIPT, str(path)], stdout=subprocess.PIPE)
    acknowledged = 0
    deadline = time.monotonic() + 30
    try:
        assert proc.stdout is not None
        while acknowledged < 3000 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            acknowledged = int(line)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    assert acknowledged >= 3000, "writer subprocess did not get going"
    with CaptureReader(path) as r:
        recs = list(r)
    msgs = [rec for rec in recs if rec["type"] == "msg"]
    # Every record the writer had finished (and said so) is there, in order, intact.
    assert len(recs) >= acknowledged
    assert [rec["seq"] for rec in recs] == list(range(1, len(recs) + 1))
    assert [json.loads(payload_bytes(m))["i"] for m in msgs] == list(range(len(msgs)))
    assert r.end is None
    assert r.interrupted is not None
    assert any("interrupted capture" in line for line in r.report())


def _capture(path, n=5):
    with CaptureWriter(path) as w:
        w.open("stdout", "pipe", proc="proc", stream="stdout")
        for i in range(n):
            w.msg("stdout", "s2c", f"line {i}")
    return path.read_bytes()


def test_torn_last_line_is_reported_and_everything_before_is_read(tmp_path):
    path = tmp_path / "t.jsonl"
    data = _capture(path)
    lines = data.splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][:10])  # end record torn mid-way
    with CaptureReader(path) as r:
        recs = list(r)
    assert [rec["seq"] for rec in recs] == [1, 2, 3, 4, 5, 6]
    assert r.interrupted == f"torn last line {len(lines)}: invalid JSON (unexpected end of data)"
    assert r.report() == [f"{path}: interrupted capture: {r.interrupted}"]
    assert r.problems == []


def test_corrupt_middle_line_is_skipped_and_reported_with_file_and_line(tmp_path):
    path = tmp_path / "c.jsonl"
    data = _capture(path)
    lines = data.splitlines(keepends=True)
    lines[3] = b'{"seq": 3, "t": 0.1, "type": "msg", \x00garbage\n'
    path.write_bytes(b"".join(lines))
    with CaptureReader(path) as r:
        recs = list(r)
    assert [rec["seq"] for rec in recs] == [1, 2, 4, 5, 6, 7]
    assert r.skipped == 1
    assert r.problems[0].startswith(f"{path}:4: invalid JSON")
    assert any(p.startswith(f"{path}:5: seq 4 where 3 was expected") for p in r.problems)
    assert r.interrupted is None
    # The CLI says it on stderr, one line each, and still exits 0.
    res = run_wirecap("cat", str(path))
    assert res.returncode == 0
    err = res.stderr.decode().splitlines()
    assert err[0].startswith(f"wirecap: {path}:4: invalid JSON")
    assert b"Traceback" not in res.stderr
    assert len(res.stdout.decode().splitlines()) == 6


BAD_INPUTS = [
    ("empty", b"", "wirecap: {p}: empty file, not a wirecap capture"),
    ("garbage", b"hello world\nmore\n", "wirecap: {p}:1: not a wirecap capture (first line is not JSON)"),
    ("json-not-header", b'{"type": "msg"}\n',
     "wirecap: {p}:1: not a wirecap capture (first line is not a wirecap header)"),
    ("future", b'{"wirecap": 2, "type": "header", "id": "x"}\n',
     "wirecap: {p}: unsupported capture format version 2 (this wirecap reads up to 1); upgrade wirecap"),
    ("bad-version", b'{"wirecap": "1", "type": "header"}\n', "wirecap: {p}:1: bad format version '1' in header"),
    ("binary", bytes(range(256)) * 40, "wirecap: {p}:1: not a wirecap capture (first line is not JSON)"),
]


@pytest.mark.parametrize("command", ["cat", "info"])
@pytest.mark.parametrize(("name", "content", "message"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_gives_one_line_and_exit_2(tmp_path, command, name, content, message):
    path = tmp_path / f"{name}.jsonl"
    path.write_bytes(content)
    res = run_wirecap(command, str(path))
    assert res.returncode == 2
    assert res.stderr.decode() == message.format(p=path) + "\n"
    assert res.stdout == b""


@pytest.mark.parametrize("command", ["cat", "info"])
def test_missing_file_and_directory(tmp_path, command):
    res = run_wirecap(command, str(tmp_path / "nope.jsonl"))
    assert (res.returncode, res.stderr.decode()) == (2, f"wirecap: {tmp_path / 'nope.jsonl'}: no such file\n")
    res = run_wirecap(command, str(tmp_path))
    assert (res.returncode, res.stderr.decode()) == (2, f"wirecap: {tmp_path}: is a directory, not a capture\n")


def test_truncated_gzip_reads_as_interrupted(tmp_path):
    path = tmp_path / "c.jsonl.gz"
    _capture(path, n=200)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 30])
    res = run_wirecap("cat", str(path))
    assert res.returncode == 0
    assert b"interrupted capture" in res.stderr
    assert b"Traceback" not in res.stderr


@pytest.mark.parametrize(("suffix", "magic"), [(".jsonl.zst", b"\x28\xb5\x2f\xfd"), (".jsonl.gz", b"\x1f\x8b")])
def test_compressed_junk_is_one_line_not_a_traceback(tmp_path, suffix, magic):
    path = tmp_path / f"junk{suffix}"
    path.write_bytes(magic + b"junkjunkjunkjunk\n" * 3)
    for command in ("cat", "info"):
        res = run_wirecap(command, str(path))
        assert res.returncode == 2
        err = res.stderr.decode()
        assert err.startswith(f"wirecap: {path}: cannot read: ") and err.count("\n") == 1, err


def test_zstd_cut_in_the_middle_of_its_frame_gives_the_records_before_the_cut(tmp_path):
    path = tmp_path / "c.jsonl.zst"
    _capture(path, n=50)  # one frame, a block per record
    full = run_wirecap("cat", str(path)).stdout.decode().splitlines()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 3 // 4])
    res = run_wirecap("cat", str(path))
    assert res.returncode == 0
    lines = res.stdout.decode().splitlines()
    assert 5 <= len(lines) < len(full) and lines == full[:len(lines)]  # the records before the cut, in order
    assert "interrupted capture: compressed stream ends early (zstd stream cut short" in res.stderr.decode()


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".jsonl.zst"])
def test_compressed_capture_cut_inside_its_header_is_one_line_exit_2(tmp_path, suffix):
    path = tmp_path / f"c{suffix}"
    _capture(path, n=3)
    path.write_bytes(path.read_bytes()[:12])
    res = run_wirecap("cat", str(path))
    err = res.stderr.decode()
    assert res.returncode == 2 and err.startswith(f"wirecap: {path}: cannot read: ") and err.count("\n") == 1, err
