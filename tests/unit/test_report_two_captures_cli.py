"""`wirecap report A B` as a person runs it: the hint when A and B have nothing to compare is one that
works for `report` (which has no --ch), and the progress line says when the comparing starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_wirecap

from wirecap.analysis.report.build import build_report
from wirecap.cli import progress as progress_mod

CAPS = Path(__file__).resolve().parents[2] / "captures"
WS = str(CAPS / "codebuff-cli-1.0.115-ws.jsonl")  # codebuff-ws
HTTP = str(CAPS / "codebuff-sdk-0.10.7-http.jsonl")  # codebuff-events, codebuff-rest, openai-chat-sse
HELLO = str(CAPS / "claude-code-2.1.197-hello.jsonl")
TOOL = str(CAPS / "claude-code-2.1.197-tool-bash.jsonl")


def test_diff_hints_at_its_own_ch_option():
    r = run_wirecap("diff", WS, HTTP)
    err = r.stderr.decode()
    assert r.returncode == 2 and err.startswith("wirecap: different dialects: ")
    assert err.rstrip().endswith("; nothing to compare (pick comparable channels with --ch A:B)")


def test_report_hints_at_the_diff_command_it_does_not_have_the_option_of():
    hint = f"to compare channels you pick: `wirecap diff {WS} {HTTP} --ch A:B`"
    r = run_wirecap("report", WS, HTTP, "-f", "json")
    assert r.returncode == 0
    note = json.loads(r.stdout)["diff_note"]
    assert note.startswith("different dialects: ") and note.endswith(hint) and "pick comparable" not in note
    for fmt in ("term", "md"):
        out = " ".join(run_wirecap("report", WS, HTTP, "-f", fmt).stdout.decode().split())  # (wrapped at spaces)
        assert hint in out and "pick comparable channels" not in out, fmt


def test_report_from_standard_input_names_it_in_the_hint():
    r = run_wirecap("report", "-f", "json", "-", HTTP, input=Path(WS).read_bytes())
    assert json.loads(r.stdout)["diff_note"].endswith(f"`wirecap diff - {HTTP} --ch A:B`")


def test_build_report_says_when_comparing_starts():
    """`comparing(a, b)` comes after both captures are read, before the diff: once, and only for two."""
    seen: list[Any] = []

    def watch(reader: Any) -> Any:
        seen.append(("read", reader.path))
        yield from reader

    build_report([HELLO, TOOL], watch=watch, comparing=lambda a, b: seen.append(("comparing", a, b)))
    assert seen == [("read", HELLO), ("read", TOOL), ("comparing", HELLO, TOOL)]
    seen.clear()
    build_report([HELLO], watch=watch, comparing=lambda a, b: seen.append(("comparing", a, b)))
    assert seen == [("read", HELLO)]


def test_the_progress_line_has_a_comparing_stage(monkeypatch: pytest.MonkeyPatch):
    """The CLI's progress line goes from reading B to comparing A and B (not stuck at reading 100%), then
    to writing; a capture from standard input is named `-`."""
    stages: list[str] = []
    real = progress_mod.Progress.stage

    def stage(self: progress_mod.Progress, text: str, **kw: Any) -> None:
        stages.append(text)
        real(self, text, **kw)

    monkeypatch.setattr(progress_mod.Progress, "stage", stage)
    r = run_wirecap("report", "-f", "json", "-", TOOL, input=Path(HELLO).read_bytes(),
                    env={"WIRECAP_PROGRESS": "1", "WIRECAP_PROGRESS_DELAY": "0"})
    assert r.returncode == 0
    assert stages == ["reading -", f"reading {TOOL}", f"comparing - and {TOOL}", "writing the json report"]
