"""`make demo` end to end: every step succeeds, the artifacts exist, and no process is left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from wirecap.capture.reader import CaptureReader

ROOT = Path(__file__).resolve().parents[2]


def processes_tagged(tag: str) -> list[str]:
    """Live processes whose environment holds `tag` (every process the demo started inherits it)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            if tag.encode() not in Path(f"/proc/{pid}/environ").read_bytes():
                continue
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        found.append(f"{pid}: {cmd}")
    return found


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_demo_runs_every_step_and_leaves_nothing_behind(tmp_path):
    out = tmp_path / "demo-out"
    tag = f"WIRECAP_DEMO_TEST_TAG={uuid.uuid4().hex}"
    env = dict(os.environ, WIRECAP_DEMO_TEST_TAG=tag.split("=", 1)[1])
    probe = subprocess.Popen(["sleep", "30"], env=env)  # the leak detector must see a tagged process
    try:
        # Popen may return before the kernel has published the new environment (a vfork parent wakes
        # mid-exec, and /proc/PID/environ reads empty until then), so look for a bounded while.
        deadline = time.monotonic() + 5
        while not any(line.startswith(f"{probe.pid}:") for line in processes_tagged(tag)):
            assert time.monotonic() < deadline, "the leak detector cannot see a tagged process"
            time.sleep(0.02)
    finally:
        probe.kill()
        probe.wait()
    p = subprocess.run([sys.executable, "-m", "wirecap.demo", "--out", str(out)], cwd=ROOT, capture_output=True,
                       text=True, timeout=170, env=env)
    story = p.stdout
    assert p.returncode == 0, story + p.stderr
    assert "FAILED" not in story
    assert "12/12 steps ok" in story
    for step in ("replay serve", "record --reverse", "replay client", "validate", "diff", "report",
                 "replay exec` under `tee"):
        assert step in story

    # The round-trip captures are real, complete captures (end record present) with traffic in them.
    for name in ("ws-roundtrip.jsonl", "cli-rerun.jsonl"):
        reader = CaptureReader(out / name)
        records = list(reader)
        assert reader.interrupted is None, f"{name}: {reader.interrupted}"
        assert sum(1 for r in records if r["type"] == "msg") >= 2
    ws = [r for r in CaptureReader(out / "ws-roundtrip.jsonl") if r["type"] == "open"]
    assert any(r.get("kind") == "ws" for r in ws)
    for name in ("ws-report.html", "cli-report.html"):
        html = (out / name).read_text()
        assert "<html" in html.lower() and len(html) > 1000

    assert processes_tagged(tag) == []  # replay serve, record, replay client, tee: all gone


def test_demo_names_what_is_missing_instead_of_pretending(tmp_path):
    """With an empty captures folder the demo stops at once, says which capture is missing, and fails."""
    code = ("import sys, pathlib, wirecap.demo as d; "
            f"d.WS_CAPTURE = pathlib.Path({str(tmp_path / 'nope.jsonl')!r}); "
            f"sys.exit(d.main(['--out', {str(tmp_path / 'o')!r}]))")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert "not available yet: the shipped capture" in p.stdout and "nope.jsonl" in p.stdout
    assert "nothing was faked" in p.stdout
    assert not (tmp_path / "o").exists()
