"""The input layer's limits (wirecap/capture/inputs.py): special files, FIFOs, line length, compression bombs,
temporary copies, streaming import. Small limits through the environment keep every test fast."""

from __future__ import annotations

import gzip
import os
import resource
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest
from conftest import ROOT, run_wirecap

from wirecap.capture.importers import Source
from wirecap.capture.inputs import OVERLONG, bounded_lines, spool
from wirecap.capture.reader import CaptureReader, scan_tail
from wirecap.cli.common import readable_twice
from wirecap.errors import WirecapError

GOOD = ROOT / "captures" / "codex-0.169.0-hello.jsonl"
READERS = [("info",), ("cat",), ("stats",), ("convert",), ("validate",), ("export", "-o", "-"),
           ("diff", str(GOOD)), ("report", "-f", "json")]


def _one_line_error(res: subprocess.CompletedProcess[bytes], *needles: str) -> str:
    err = res.stderr.decode()
    assert res.returncode == 2, err
    assert b"Traceback" not in res.stderr
    assert err.count("\n") == 1 and err.startswith("wirecap: "), err
    for n in needles:
        assert n in err, err
    return err


def _capture_with(tmp_path: Path, middle: bytes, name: str = "c.jsonl") -> Path:
    """GOOD with `middle` inserted as its third line (the reader skips it, later records stay)."""
    lines = GOOD.read_bytes().splitlines(keepends=True)
    path = tmp_path / name
    path.write_bytes(b"".join(lines[:2]) + middle + b"".join(lines[2:]))
    return path


# --- special files ---------------------------------------------------------------------------------

@pytest.mark.parametrize("cmd", READERS, ids=lambda c: c[0])
def test_devices_and_directories_are_refused_by_every_reader(tmp_path, cmd):
    for target, what in (("/dev/zero", "character device"), (str(tmp_path), "is a directory")):
        _one_line_error(run_wirecap(cmd[0], target, *cmd[1:], timeout=30), target, what)


def test_stdin_from_a_device_is_refused_but_dev_null_is_an_empty_input():
    with open("/dev/zero", "rb") as zero:
        res = subprocess.run([sys.executable, "-m", "wirecap", "info", "-"], stdin=zero, capture_output=True,
                             timeout=30)
    _one_line_error(res, "standard input is a character device")
    with open(os.devnull, "rb") as null:
        res = subprocess.run([sys.executable, "-m", "wirecap", "info", "-"], stdin=null, capture_output=True,
                             timeout=30)
    _one_line_error(res, "empty file")


@pytest.mark.parametrize("cmd", [("info",), ("diff", str(GOOD)), ("import", "-o", "OUT")], ids=lambda c: c[0])
def test_a_fifo_without_writer_is_refused_after_the_timeout(tmp_path, cmd):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    args = [a.replace("OUT", str(tmp_path / "o.jsonl")) for a in cmd[1:]]
    res = run_wirecap(cmd[0], str(fifo), *args, env={"WIRECAP_FIFO_TIMEOUT": "0.3"}, timeout=30)
    _one_line_error(res, str(fifo), "FIFO with no writer after 0.3 s", "WIRECAP_FIFO_TIMEOUT")


def _slow_writer(fifo: Path, data: bytes, delay: float) -> threading.Thread:
    def write() -> None:
        fd = os.open(fifo, os.O_WRONLY)  # waits for the reader
        try:
            time.sleep(delay)  # connected, but silent for longer than WIRECAP_FIFO_TIMEOUT
            for i in range(0, len(data), 4096):
                os.write(fd, data[i:i + 4096])
        finally:
            os.close(fd)

    t = threading.Thread(target=write, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("cmd", [("info",), ("diff", str(GOOD)), ("report", "-f", "json")], ids=lambda c: c[0])
def test_a_fifo_with_a_slow_writer_is_read_whatever_the_timeout(tmp_path, cmd):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = _slow_writer(fifo, GOOD.read_bytes(), delay=1.0)
    res = run_wirecap(cmd[0], str(fifo), *cmd[1:], env={"WIRECAP_FIFO_TIMEOUT": "0.2"}, timeout=30)
    writer.join(10)
    assert res.returncode == 0, res.stderr.decode()
    assert res.stdout


def test_an_anonymous_pipe_like_process_substitution_is_read(tmp_path):
    r, w = os.pipe()
    data = GOOD.read_bytes()

    def feed() -> None:
        time.sleep(0.5)  # (no timeout applies to an anonymous pipe: its writer exists from the start)
        with open(w, "wb") as f:
            f.write(data)

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    try:
        res = subprocess.run([sys.executable, "-m", "wirecap", "diff", f"/dev/fd/{r}", str(GOOD)], pass_fds=(r,),
                             capture_output=True, timeout=30, env=dict(os.environ, WIRECAP_FIFO_TIMEOUT="0.1"))
    finally:
        os.close(r)
        t.join(10)
    assert res.returncode == 0, res.stderr.decode()


# --- line length ---------------------------------------------------------------------------------

def test_an_over_long_line_is_skipped_and_named_and_the_records_after_it_are_read(tmp_path):
    path = _capture_with(tmp_path, b"x" * 100_000 + b"\n")  # (GOOD's longest line is 38 KB)
    with CaptureReader(path) as r:
        want = sum(1 for _ in r)
    os.environ["WIRECAP_MAX_LINE"] = "64K"
    try:
        with CaptureReader(path) as r:
            got = sum(1 for _ in r)
    finally:
        del os.environ["WIRECAP_MAX_LINE"]
    assert got == want
    assert r.problems == [f"{path}:3: line longer than 64 KiB (WIRECAP_MAX_LINE); skipped"]
    assert r.interrupted is None
    res = run_wirecap("info", str(path), env={"WIRECAP_MAX_LINE": "64K"})
    assert res.returncode == 0 and f"{path}:3: line longer than 64 KiB" in (res.stdout + res.stderr).decode()


def test_an_over_long_torn_last_line_is_an_interruption(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes(GOOD.read_bytes() + b"{" + b"1" * 100_000)
    os.environ["WIRECAP_MAX_LINE"] = "50000"
    try:
        with CaptureReader(path) as r:
            list(r)
    finally:
        del os.environ["WIRECAP_MAX_LINE"]
    assert r.interrupted is not None and "line longer than 48.8 KiB" in r.interrupted


def test_bounded_lines_drops_the_rest_of_an_over_long_line():
    import io

    f = io.BufferedReader(io.BytesIO(b"ab\n" + b"z" * 100 + b"\ncd\n" + b"y" * 50))  # type: ignore[arg-type]
    assert list(bounded_lines(f, 10)) == [b"ab\n", OVERLONG, b"cd\n", OVERLONG]


def test_a_bad_limit_in_the_environment_is_a_one_line_error():
    _one_line_error(run_wirecap("info", str(GOOD), env={"WIRECAP_MAX_LINE": "lots"}), "WIRECAP_MAX_LINE='lots'")


def test_a_line_of_zeros_without_newline_is_never_held_whole(tmp_path):
    """1 GiB of zeros after a valid header, zstd-compressed (a few KB): read under a 700 MiB address-space cap
    with the line limit at 1 MiB (and the ratio limit off, to reach the line limit)."""
    import zstandard

    path = tmp_path / "zeros.jsonl.zst"
    with open(path, "wb") as raw, zstandard.ZstdCompressor(level=1).stream_writer(raw) as f:
        f.write(GOOD.read_bytes().splitlines(keepends=True)[0])
        zeros = bytes(1 << 20)
        for _ in range(1024):
            f.write(zeros)
    assert path.stat().st_size < 200_000
    cap = 700 << 20

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    res = subprocess.run([sys.executable, "-m", "wirecap", "info", str(path)], capture_output=True, timeout=60,
                         preexec_fn=limit, env=dict(os.environ, WIRECAP_MAX_LINE="1M", WIRECAP_MAX_RATIO="0"))
    assert b"MemoryError" not in res.stderr and b"Traceback" not in res.stderr, res.stderr.decode()[-2000:]
    assert res.returncode == 0
    assert b"line longer than 1 MiB" in res.stdout + res.stderr


def test_scan_tail_steps_over_an_over_long_line(tmp_path, monkeypatch):
    path = _capture_with(tmp_path, b"y" * 100_000 + b"\n")
    lines = path.read_bytes().splitlines()
    last_seq = orjson.loads(lines[-1])["seq"]
    monkeypatch.setenv("WIRECAP_MAX_LINE", "64K")
    tail = scan_tail(str(path))
    assert tail["last_seq"] == last_seq
    assert path.read_bytes().endswith(lines[-1] + b"\n")


# --- compression bombs ------------------------------------------------------------------------------

def _bomb(path: Path, zeros_mib: int) -> Path:
    header = GOOD.read_bytes().splitlines(keepends=True)[0]
    if path.suffix == ".gz":
        with gzip.open(path, "wb", compresslevel=6) as f:  # (zeros: 1,030 times; level 1 only 229)
            f.write(header + b"\n".join(bytes(1 << 20) for _ in range(zeros_mib)))
    else:
        import zstandard

        with open(path, "wb") as raw, zstandard.ZstdCompressor(level=1).stream_writer(raw) as f:
            f.write(header)
            for _ in range(zeros_mib):
                f.write(bytes(1 << 20) + b"\n")
    return path


@pytest.mark.parametrize("suffix", [".gz", ".zst"])
def test_a_compression_bomb_stops_with_one_line(tmp_path, suffix):
    bomb = _bomb(tmp_path / f"bomb.jsonl{suffix}", 80)
    for cmd in (("info",), ("validate",), ("diff", str(GOOD))):
        _one_line_error(run_wirecap(cmd[0], str(bomb), *cmd[1:], timeout=60), str(bomb),
                        "times its compressed size", "WIRECAP_MAX_RATIO")


def test_the_ratio_limit_can_be_lifted(tmp_path):
    bomb = _bomb(tmp_path / "bomb.jsonl.zst", 80)
    res = run_wirecap("info", str(bomb), env={"WIRECAP_MAX_RATIO": "0"}, timeout=60)
    assert res.returncode == 0, res.stderr.decode()
    assert b"Traceback" not in res.stderr


def test_a_real_compressed_capture_is_far_below_the_ratio(tmp_path):
    path = tmp_path / "c.jsonl.gz"
    path.write_bytes(gzip.compress(GOOD.read_bytes() * 1))
    res = run_wirecap("info", str(path), env={"WIRECAP_MAX_RATIO": "10"})
    assert res.returncode == 0, res.stderr.decode()


# --- temporary copies -------------------------------------------------------------------------------

def test_a_stream_kept_in_a_temporary_file_is_bounded():
    res = run_wirecap("diff", "-", str(GOOD), input=GOOD.read_bytes(), env={"WIRECAP_MAX_SPOOL": "2K"})
    _one_line_error(res, "-: more than 2 KiB", "WIRECAP_MAX_SPOOL")
    res = run_wirecap("report", "-", "-f", "json", input=GOOD.read_bytes())
    assert res.returncode == 0, res.stderr.decode()


def test_temporary_copies_are_owner_only_whatever_the_umask(tmp_path):
    old = os.umask(0)
    r, w = os.pipe()
    try:
        os.write(w, GOOD.read_bytes()[:4000])
        os.close(w)
        dest = tmp_path / "copy"
        spool(f"/dev/fd/{r}", str(dest))
        assert stat.S_IMODE(dest.stat().st_mode) == 0o600
        r2, w2 = os.pipe()
        os.write(w2, b"{}\n")
        os.close(w2)
        with readable_twice([f"/dev/fd/{r2}"]) as (copy,):
            assert stat.S_IMODE(os.stat(copy).st_mode) == 0o600
            assert stat.S_IMODE(os.stat(os.path.dirname(copy)).st_mode) == 0o700
        os.close(r2)
    finally:
        os.umask(old)
        os.close(r)


# --- import -------------------------------------------------------------------------------------------

def test_import_refuses_devices_and_reads_pipes(tmp_path):
    out = tmp_path / "o.jsonl"
    _one_line_error(run_wirecap("import", "/dev/zero", "-o", str(out)), "/dev/zero", "character device")
    res = run_wirecap("import", "-", "-o", str(out), "-q", input=b'{"type":"x"}\nplain text\n')
    assert res.returncode == 0, res.stderr.decode()
    with CaptureReader(out) as r:
        assert sum(1 for rec in r if rec["type"] == "msg") == 2


def test_import_cuts_an_over_long_stdout_line_into_pieces_that_add_up():
    data = b"short\n" + b"L" * 25 + b"\r\nend"
    src = Source("s", data)
    pieces = list(src.lines(cut=10))
    assert b"".join(line + eol.encode() for _n, line, eol in pieces) == data
    assert max(len(line) for _n, line, _eol in pieces) == 10
    assert [n for n, _l, _e in pieces] == [1, 2, 2, 2, 3]


def test_import_cuts_the_same_when_streaming(tmp_path):
    import io

    data = b"short\n" + b"L" * 25 + b"\r\nend"
    src = Source("s", opener=lambda: io.BufferedReader(io.BytesIO(data)))  # type: ignore[arg-type]
    assert b"".join(line + eol.encode() for _n, line, eol in src.lines(cut=10)) == data


def test_import_refuses_an_over_long_json_log_line(tmp_path):
    log = tmp_path / "x_ws_frames.jsonl"
    log.write_bytes(b'{"conn":1,"dir":"open","frame":{}}\n' + b'{"conn":1,"dir":"c2s","frame":"' + b"a" * 3000 + b'"}\n')
    res = run_wirecap("import", str(log), "-o", str(tmp_path / "o.jsonl"), env={"WIRECAP_MAX_LINE": "1K"})
    _one_line_error(res, f"{log}:2: line longer than 1 KiB")


def test_event_file_over_long_line_names_file_and_line(tmp_path):
    events = tmp_path / "e.jsonl"
    conv = run_wirecap("convert", str(GOOD))
    assert conv.returncode == 0
    lines = conv.stdout.splitlines(keepends=True)
    events.write_bytes(lines[0] + b"z" * 3000 + b"\n" + b"".join(lines[1:]))
    res = run_wirecap("diff", str(events), str(events), env={"WIRECAP_MAX_LINE": "1K"})
    _one_line_error(res, f"{events}:2: line longer than 1 KiB")


def test_wirecap_errors_are_the_only_failures_of_the_input_layer(tmp_path):
    with pytest.raises(WirecapError, match="no such file"):
        spool(str(tmp_path / "missing"), str(tmp_path / "dest"))


def test_a_notes_sidecar_that_is_a_device_or_writerless_fifo_is_refused(tmp_path):
    cap = tmp_path / "c.jsonl"
    cap.write_bytes(GOOD.read_bytes())
    sidecar = tmp_path / "c.notes.jsonl"
    sidecar.symlink_to("/dev/zero")
    _one_line_error(run_wirecap("annotate", str(cap), "--list", timeout=30), str(sidecar), "character device")
    sidecar.unlink()
    os.mkfifo(sidecar)
    res = run_wirecap("report", str(cap), "-f", "json", env={"WIRECAP_FIFO_TIMEOUT": "0.3"}, timeout=30)
    _one_line_error(res, str(sidecar), "FIFO with no writer")


def test_follow_skips_an_over_long_line_that_arrives_in_pieces(tmp_path, monkeypatch):
    lines = GOOD.read_bytes().splitlines(keepends=True)
    path = tmp_path / "growing.jsonl"
    path.write_bytes(lines[0] + lines[1])
    monkeypatch.setenv("WIRECAP_MAX_LINE", "64K")

    def grow() -> None:
        with open(path, "ab") as f:
            for piece in (b"x" * 50_000, b"x" * 50_000, b"x\n", *lines[2:]):
                time.sleep(0.02)
                f.write(piece)
                f.flush()

    t = threading.Thread(target=grow, daemon=True)
    t.start()
    reader = CaptureReader(path, follow=True, poll=0.01)
    got = sum(1 for _ in reader)  # (returns at the end record)
    t.join(10)
    assert got == len(lines) - 1  # every record (all lines but the header; the junk line skipped)
    assert reader.problems == [f"{path}:3: line longer than 64 KiB (WIRECAP_MAX_LINE); skipped"]


def test_replay_exec_from_a_fifo_holds_the_lines_it_cannot_read_twice(tmp_path):
    """`replay exec` reads a plain file twice (check, then play); a FIFO once, holding its lines."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    expected = run_wirecap("replay", "exec", "--speed", "0", str(GOOD), timeout=30)
    writer = _slow_writer(fifo, GOOD.read_bytes(), delay=0.5)
    res = run_wirecap("replay", "exec", "--speed", "0", str(fifo), env={"WIRECAP_FIFO_TIMEOUT": "0.2"},
                      timeout=30)
    writer.join(10)
    assert (res.returncode, res.stdout) == (expected.returncode, expected.stdout), res.stderr.decode()
    assert expected.stdout
    assert b"Traceback" not in res.stderr and b"internal error" not in res.stderr


def test_replay_scripts_from_a_fifo_are_held_not_read_back_by_offset(tmp_path):
    """A FIFO cannot be read back by offset (`pread`): its messages are kept as records."""
    from wirecap.replay.script import RecordRef, load_scripts

    cap = ROOT / "captures" / "codebuff-sdk-0.3.13-ws-tool.jsonl"
    _header, from_file = load_scripts(str(cap))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = _slow_writer(fifo, cap.read_bytes(), delay=0.2)
    _header, from_fifo = load_scripts(str(fifo))
    writer.join(10)
    refs = [s for sc in from_file for s in sc.steps if s._client.__class__ is RecordRef]
    assert refs  # (the plain file is read back by offset)
    assert [s.client for sc in from_fifo for s in sc.steps] == [s.client for sc in from_file for s in sc.steps]
    assert not [s for sc in from_fifo for s in sc.steps if s._client.__class__ is RecordRef]
