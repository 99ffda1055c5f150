"""The shipped captures: each is listed in captures/README.md, small, redacted and readable by `wirecap info`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT, run_wirecap

from wirecap.cli import cli

CAPTURES = ROOT / "captures"
FILES = sorted(f for f in CAPTURES.rglob("*.jsonl") if not f.name.endswith(".notes.jsonl"))
# The lab's fake keys: none of them may survive redaction.
FAKE_SECRETS = [b"sk-ant-fake-0000000000000000", b"cb-fake-key-000", b"cb-fake-000", b"sk-fake-000000"]


def test_there_are_captures_and_the_readme_lists_every_one():
    assert len(FILES) >= 10
    readme = (CAPTURES / "README.md").read_text()
    listed = set(re.findall(r"`((?:imported/)?[\w.-]+\.jsonl)`", readme))
    on_disk = {str(f.relative_to(CAPTURES)) for f in FILES}
    assert on_disk - listed == set(), "captures missing from captures/README.md"
    assert listed - on_disk == set(), "captures/README.md lists files that do not exist"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_capture_is_small_redacted_and_readable(path: Path):
    data = path.read_bytes()
    assert len(data) < 200_000
    for secret in FAKE_SECRETS:
        assert secret not in data
    # `wirecap info` in-process (the real command; a subprocess per file would cost ~1 s each)
    result = CliRunner().invoke(cli, ["info", str(path)])
    assert result.exit_code == 0, result.output
    assert "clean (end record present)" in result.output
    assert "redaction  on" in result.output


def test_wirecap_info_reads_a_shipped_capture():
    p = run_wirecap("info", str(CAPTURES / "codebuff-sdk-0.3.13-ws-tool.jsonl"))
    assert p.returncode == 0 and b"ws-1" in p.stdout, p.stderr.decode()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_capture_decodes_without_unparsed_events_where_the_dialect_is_known(path: Path):
    from wirecap.dialects import decode_capture

    events = list(decode_capture(str(path)))
    assert events
    bad = [(e.seq, e.data.get("reason")) for e in events if e.kind == "unparsed" and e.dialect]
    assert bad == []


def test_legacy_codebuff_tool_call_is_paired_with_its_result():
    from wirecap.dialects import decode_capture

    events = list(decode_capture(str(CAPTURES / "codebuff-cli-1.0.115-ws.jsonl")))
    calls = [e for e in events if e.item == "tool_call" and e.kind == "item.completed"]
    results = [e for e in events if e.item == "tool_result" and e.kind == "item.completed"]
    assert [(c.id, c.data["name"], c.data["input"]) for c in calls] == [
        ("tool_eb3accca443b", "run_terminal_command", {"command": "echo hi"})]
    assert [r.data["call_id"] for r in results] == ["tool_eb3accca443b"]
    assert "hi" in results[0].data["output"]
