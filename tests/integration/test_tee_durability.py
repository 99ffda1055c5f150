"""`wirecap tee` never loses what it passed on: SIGKILL at full speed, a slow capture disk (backpressure).

The guarantee under test: a chunk's complete lines are in the capture file before the chunk is forwarded,
so every complete line the consumer received is in the capture after a SIGKILL of wirecap; only an
unfinished last line (no `\\n` yet) can be missing. Real subprocesses, no timing assertions.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from wirecap.capture import CaptureReader, CaptureWriter
from wirecap.capture.payload import payload_bytes
from wirecap.record.tee import TeeRunner

pytestmark = pytest.mark.timeout(120)

# Numbered 100-byte JSON lines as fast as the pipe takes them (count 0: until the pipe breaks).
PRODUCER = r"""
import os, sys
count = int(sys.argv[1])
fmt = b'{"n":%d,"pad":"' + b"x" * 70 + b'"}\n'
i = 0
try:
    while count == 0 or i < count:
        k = 500 if count == 0 else min(500, count - i)
        data = b"".join([fmt % j for j in range(i, i + k)])
        view = memoryview(data)
        while view:
            view = view[os.write(1, view):]
        i += k
except OSError:
    pass
"""


def producer(count: int = 0) -> list[str]:
    return [sys.executable, "-c", PRODUCER, str(count)]


def recorded_numbers(path: Path, ch: str = "stdout") -> list[int]:
    with CaptureReader(path) as r:
        return [orjson.loads(payload_bytes(rec))["n"] for rec in r if rec["type"] == "msg" and rec["ch"] == ch]


def consume_then_kill(proc: subprocess.Popen[bytes], kill_after: int) -> int:
    """Read wirecap's stdout; SIGKILL wirecap once `kill_after` lines came; read to EOF; lines received."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    lines = 0
    killed = False
    deadline = time.monotonic() + 60  # a bound on the test, not a measurement
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        lines += chunk.count(b"\n")
        if not killed and (lines >= kill_after or time.monotonic() > deadline):
            os.kill(proc.pid, signal.SIGKILL)
            killed = True
    proc.wait(timeout=30)
    proc.stdout.close()
    assert killed and lines >= kill_after, "wirecap did not get going"
    return lines


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".jsonl.zst"])
def test_sigkill_at_full_speed_loses_no_line_the_consumer_received(tmp_path, suffix):
    cap = tmp_path / f"k{suffix}"
    proc = subprocess.Popen([sys.executable, "-m", "wirecap", "tee", "-o", str(cap), "--", *producer()],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    received = consume_then_kill(proc, 30_000)
    assert proc.returncode == -signal.SIGKILL
    numbers = recorded_numbers(cap)
    assert numbers == list(range(len(numbers)))  # in order, nothing skipped
    assert len(numbers) >= received


def test_sigkill_in_pipe_mode_loses_no_line_the_consumer_received(tmp_path):
    cap = tmp_path / "p.jsonl"
    src = subprocess.Popen(producer(), stdout=subprocess.PIPE)
    assert src.stdout is not None
    try:
        proc = subprocess.Popen([sys.executable, "-m", "wirecap", "tee", "-o", str(cap)], stdin=src.stdout,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        src.stdout.close()
        received = consume_then_kill(proc, 30_000)
    finally:
        src.kill()
        src.wait(timeout=30)
    numbers = recorded_numbers(cap)
    assert numbers == list(range(len(numbers))) and len(numbers) >= received


def test_a_slow_capture_slows_the_source_and_nothing_is_skipped(tmp_path):
    """The capture is a FIFO this test drains 4 KiB at a time: the consumer never gets ahead of what was
    written to the capture by more than the FIFO holds, and in the end every line is recorded, in order."""
    n = 20_000
    fifo = tmp_path / "cap.jsonl"
    os.mkfifo(fifo)
    cap_r = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    fcntl.fcntl(cap_r, fcntl.F_SETPIPE_SZ, 4096)
    fifo_size = fcntl.fcntl(cap_r, fcntl.F_GETPIPE_SZ)
    out_r, out_w = os.pipe()
    devnull = os.open(os.devnull, os.O_WRONLY)
    writer = CaptureWriter(fifo, force=True)
    runner = TeeRunner(writer, producer(n), stdout=out_w, stderr=devnull)
    runner.start()
    captured = bytearray()
    msg_lines = 0
    received = 0
    # The least size of a msg record here: the shortest head and a payload of 86 bytes (`{"n":0,...}`).
    shortest = len(b'{"seq":1,"t":0.0,"type":"msg","ch":"stdout","dir":"s2c","json":}\n') + 86
    try:
        while received < n:
            ready, _, _ = select.select([cap_r, out_r], [], [], 5.0)
            if out_r in ready:
                received += os.read(out_r, 1 << 20).count(b"\n")
                # Every line received was written to the capture first: at most a FIFO's worth (and one
                # record cut by it) is still in the FIFO, unread by us.
                assert received <= msg_lines + fifo_size // shortest + 1
            if cap_r in ready:
                captured += os.read(cap_r, 4096)
                end = captured.rfind(b"\n") + 1
                msg_lines += captured.count(b'"type":"msg"', 0, end)
                del captured[:end]

        def drain() -> None:
            while True:
                select.select([cap_r], [], [], 5.0)
                try:
                    chunk = os.read(cap_r, 1 << 20)
                except BlockingIOError:
                    continue
                if not chunk:
                    return
                captured.extend(chunk)

        t = threading.Thread(target=drain)
        t.start()
        assert runner.wait(60) == 0
        writer.close()
        t.join(60)
    finally:
        for fd in (cap_r, out_r, out_w, devnull):
            os.close(fd)
    records = [orjson.loads(line) for line in bytes(captured).splitlines()]
    msgs = [r for r in records if r.get("type") == "msg"]
    assert msg_lines + len(msgs) == n
    assert not [r for r in records if r.get("type") == "error"]
    assert records[-1]["type"] == "end"


def test_a_clean_run_records_every_line_and_says_nothing(tmp_path):
    cap = tmp_path / "c.jsonl"
    res = subprocess.run([sys.executable, "-m", "wirecap", "tee", "-o", str(cap), "--", *producer(100_000)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    assert (res.returncode, res.stderr) == (0, b"")
    assert recorded_numbers(cap) == list(range(100_000))
