"""Real clients against `replay serve` with a prompt that differs from the recording: each must stop
by itself (the mismatch is answered in a form it does not retry) and show the mismatch.

Each case records the client against its lab fake through `wirecap record --reverse`, serves the
capture, and runs the client again with another prompt (tests/replay_lab.py, under `unshare -n`).
The subprocess timeout is generous; a client that retried (as with the old HTTP 599) would hit the
harness's own client timeout and report `rc: null`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from replay_lab import MARK, lab_root

HERE = Path(__file__).resolve().parent

pytestmark = [
    pytest.mark.realclient,
    pytest.mark.skipif(lab_root() is None, reason="lab not installed (set WIRECAP_LAB)"),
    pytest.mark.timeout(400),
]


def mismatch_run(client: str, client_timeout: float = 60) -> dict:
    proc = subprocess.run([sys.executable, str(HERE / "replay_lab.py"), client, "--timeout", str(client_timeout)],
                          capture_output=True, timeout=360, cwd=HERE.parent)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    [line] = proc.stdout.decode().splitlines()
    res = json.loads(line)
    assert "error" not in res, res
    assert res["record_rc"] == 0, res
    return res


@pytest.mark.parametrize("client", ["claude", "codex", "opencode", "cb115"])
def test_real_client_stops_on_a_mismatch_and_says_why(client):
    res = mismatch_run(client)
    assert res["rc"] is not None, f"{client} was still running after 60 s: {res['client_tail'][-800:]}"
    assert res["rc"] != 0, res["client_tail"][-800:]
    assert res["client_says_mismatch"], res["client_tail"][-800:]
    assert res["serve_rc"] == 1 and "replay mismatch:" in res["serve_stderr"]
    assert MARK in "\n".join(res["client_lines"]) or MARK in res["client_tail"]


def test_codebuff_sdk03_run_ends_with_the_mismatch_as_its_error():
    """The SDK 0.3 WebSocket client gets a `prompt-error`, so `run()` resolves with that error (the
    lab driver prints the result and exits 0: the SDK reports errors in its result, not by throwing)."""
    res = mismatch_run("sdk03")
    assert res["rc"] is not None and res["client_says_mismatch"], res["client_tail"][-800:]
    result = [json.loads(x) for x in res["client_tail"].splitlines() if x.startswith('{"kind":"result"')]
    assert result and result[-1]["output"]["type"] == "error"
    assert result[-1]["output"]["message"].startswith(MARK)
    assert res["serve_rc"] == 1
