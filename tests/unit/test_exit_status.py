"""Exit statuses are one enum (`wirecap.errors.ExitStatus`) and the CLI exits with its values."""

from __future__ import annotations

from conftest import ROOT, run_wirecap

from wirecap.cli import INTERNAL_ERROR
from wirecap.errors import ExitStatus, WirecapError

HELLO = ROOT / "captures" / "claude-code-2.1.197-hello.jsonl"
TOOL = ROOT / "captures" / "claude-code-2.1.197-tool-bash.jsonl"


def test_the_values_are_the_documented_ones():
    assert [int(s) for s in (ExitStatus.OK, ExitStatus.FINDING, ExitStatus.DIFFERENCE, ExitStatus.ERROR,
                             ExitStatus.INTERNAL_ERROR, ExitStatus.CANNOT_EXECUTE, ExitStatus.COMMAND_NOT_FOUND,
                             ExitStatus.INTERRUPTED)] == [0, 1, 1, 2, 3, 126, 127, 130]
    assert INTERNAL_ERROR is ExitStatus.INTERNAL_ERROR
    assert ExitStatus.killed_by(15) == 143 and ExitStatus.killed_by(2) == ExitStatus.INTERRUPTED


def test_a_wirecap_error_carries_its_status():
    assert WirecapError("x").exit_code == ExitStatus.ERROR
    assert WirecapError("x", exit_code=ExitStatus.COMMAND_NOT_FOUND).exit_code == 127


def test_the_cli_exits_with_them(tmp_path):
    assert run_wirecap("info", str(HELLO)).returncode == ExitStatus.OK
    assert run_wirecap("diff", str(HELLO), str(TOOL)).returncode == ExitStatus.DIFFERENCE
    assert run_wirecap("info", str(tmp_path / "missing.jsonl")).returncode == ExitStatus.ERROR
    assert run_wirecap("nosuchcommand").returncode == ExitStatus.ERROR
    assert run_wirecap().returncode == ExitStatus.OK  # the help
