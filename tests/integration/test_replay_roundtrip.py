"""Round trip: `replay serve` behind `wirecap record --reverse`, driven by `replay client`.

The capture the recorder writes must equal the original except volatile fields (compared with the
replay matcher), for a WebSocket tool-call session and an Anthropic SSE exchange.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_wirecap
from replay_support import claude_capture, fake_server, record_sdk_tool_session, same_except_volatile

from wirecap.capture.reader import CaptureReader

pytestmark = pytest.mark.timeout(120)


def start(args: list[str], portfile: Path, log: Path, timeout: float = 30) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, "-m", "wirecap", *args, "--port-file", str(portfile)],
                            stdout=subprocess.DEVNULL, stderr=open(log, "wb"))  # noqa: SIM115
    deadline = time.monotonic() + timeout
    while not (portfile.exists() and portfile.read_text().strip()):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"{args[:2]} did not start: {log.read_text()}")
        time.sleep(0.05)
    return proc, int(portfile.read_text())


def stop(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(5)


def round_trip(orig: Path, tmp: Path, scheme: str) -> tuple[Path, subprocess.CompletedProcess]:
    if run_wirecap("record", "--help").returncode != 0:
        pytest.skip("wirecap record is not there")
    new = tmp / "through-proxy.jsonl"
    serve, sport = start(["replay", "serve", str(orig), "--speed", "0"], tmp / "serve.port", tmp / "serve.log")
    try:
        rec, pport = start(["record", "-o", str(new), "--reverse", f"http://127.0.0.1:{sport}",
                            "--listen", "127.0.0.1:0"], tmp / "rec.port", tmp / "rec.log")
        try:
            r = run_wirecap("replay", "client", str(orig), "--url", f"{scheme}://127.0.0.1:{pport}",
                            "--speed", "0", "--timeout", "15", timeout=90)
        finally:
            assert stop(rec) == 0, (tmp / "rec.log").read_text()
    finally:
        serve_rc = stop(serve)
    assert serve_rc == 0, (tmp / "serve.log").read_text()  # no unmatched client message
    return new, r


def test_ws_tool_session_round_trip_through_the_recorder(tmp_path):
    with fake_server("fake_codebuff_ws.py", "--proto", "sdk", "--mode", "tool", tmp=tmp_path) as port:
        orig = asyncio.run(record_sdk_tool_session(tmp_path / "orig.jsonl", port))
    new, r = round_trip(orig, tmp_path, "ws")
    assert r.returncode == 0, r.stderr.decode()
    assert same_except_volatile(orig, new) == []
    with CaptureReader(new) as rd:
        recs = list(rd)
    assert rd.end is not None and any(x["type"] == "close" and x.get("kind") is None for x in recs)


def test_anthropic_sse_round_trip_through_the_recorder(tmp_path):
    orig = claude_capture(tmp_path)
    new, r = round_trip(orig, tmp_path, "http")
    assert r.returncode == 0, r.stderr.decode()
    assert same_except_volatile(orig, new) == []
    resp = next(x for x in CaptureReader(new) if x["type"] == "response")
    assert resp["sse"] is True and resp["status"] == 200
