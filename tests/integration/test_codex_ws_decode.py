"""The real Codex over WebSocket, decoded: each codex-ws case of tests/realclient.py (the lab's Codex 0.169.0
against tests/fixtures/lab/fake/fake_openai_ws.py, recorded by `wirecap record --reverse`) gives a capture
whose every message is understood (0 `unparsed`, no drift), with the findings its mode must give and the
transport truth: over WebSocket when it worked, the fallback to HTTP (and the client's reason) when it did
not. The replay capture of the same run decodes the same way.

Skipped without the lab or without root / `unshare -n` (as the real-client suite).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import lab_dir
from labclients import can_unshare

from wirecap.analysis.transport import transport_capture
from wirecap.analysis.validate import validate_capture
from wirecap.dialects import decode_capture

RUNNER = Path(__file__).resolve().parents[1] / "realclient.py"
_LAB = lab_dir()
_WHY_SKIP = ("lab not installed (run `make lab` or set WIRECAP_LAB)" if _LAB is None
             else "needs root and `unshare -n` (a private network namespace)" if not can_unshare() else None)
pytestmark = [pytest.mark.realclient, pytest.mark.skipif(_WHY_SKIP is not None, reason=_WHY_SKIP or "")]

# mode -> (the rules its recording must break, the transports of its LLM calls, fell back)
EXPECT = {
    "hello": (set(), {"ws": 2}, False),
    "tool": (set(), {"ws": 3}, False),
    "failed": ({"ws-error-event", "ws-fallback"}, {"ws": 2, "http": 1}, True),
    "close": ({"ws-closed-mid-response", "ws-fallback"}, {"ws": 2, "http": 1}, True),
    "error_event": ({"ws-error-message", "codex-error", "codex-turn-failed"}, {"ws": 2}, False),
    "refuse": ({"ws-upgrade-refused", "ws-fallback"}, {"http": 1}, True),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("codex-ws")
    env = {**os.environ, "WIRECAP_LAB": str(_LAB), "WIRECAP_HOME": str(out / "home")}
    for mode in EXPECT:
        subprocess.run([sys.executable, str(RUNNER), "codex-ws", mode, str(out / mode)], env=env,
                       capture_output=True, timeout=600)
    return {mode: out / mode for mode in EXPECT}


@pytest.mark.parametrize("mode", sorted(EXPECT))
def test_real_codex_ws_capture_decodes(runs: dict[str, Path], mode: str) -> None:
    rec = runs[mode] / "rec.jsonl"
    assert rec.exists(), f"the runner made no capture for {mode} (see {runs[mode]})"
    events = list(decode_capture(str(rec)))
    assert [e for e in events if e.kind == "unparsed"] == []
    if mode != "refuse":
        assert {e.dialect for e in events if e.ch.startswith("ws-")} == {"openai-responses-ws"}
    found = validate_capture(str(rec), strict_schema=True)
    assert [f for f in found if f.rule == "drift"] == []
    rules, transports, fell_back = EXPECT[mode]
    assert {f.rule for f in found} == rules
    t = transport_capture(str(rec))
    assert t is not None and t["llm_calls"] == transports
    assert (t["fallback"] is not None) == fell_back
    if fell_back:
        assert t["fallback"]["reason_from"] == "client"


@pytest.mark.parametrize("mode", sorted(EXPECT))
def test_replay_capture_decodes_too(runs: dict[str, Path], mode: str) -> None:
    rep = runs[mode] / "rep.jsonl"
    if not rep.exists():
        pytest.skip(f"no replay capture for {mode}")
    assert [e for e in decode_capture(str(rep)) if e.kind == "unparsed"] == []
