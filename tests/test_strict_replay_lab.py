"""Strict replay with real clients (tests/strict_lab.py): recorded under one HOME and working directory,
replayed with `wirecap replay serve CAP` (no --ignore) to the same client under another; the client
succeeds, no message is unmatched, and the two runs diff equal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from strict_lab import lab_root  # noqa: E402

# the fast ones, one per id problem: Claude's env block and paths, Codex's input ids and chunk id,
# CodeBuddy's message ids in a tool round trip, the Codebuff SDK's prompt/fingerprint ids, SDK 0.10 gzip
CASES = ["claude-tool", "codex-tool", "codebuddy-tool", "opencode-tool", "sdk03-tool", "sdk10-tool"]


@pytest.mark.realclient
@pytest.mark.skipif(lab_root() is None or os.geteuid() != 0, reason="lab not installed, or not root (unshare -n)")
def test_strict_replay_of_real_clients_in_another_home_and_workdir():
    res = subprocess.run([sys.executable, str(HERE / "strict_lab.py"), "--cases", *CASES], capture_output=True,
                         text=True, timeout=600, cwd=HERE.parent)
    rows = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    assert [r["case"] for r in rows] == CASES, res.stderr[-2000:]
    for r in rows:
        assert "error" not in r, r
        assert (r["record_rc"], r["replay_rc"], r["serve_rc"], r["mismatch"]) == (0, 0, 0, []), r
        assert r["diff_rc"] == 0, r
