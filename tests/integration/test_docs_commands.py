"""docs/commands/reference.md is generated from --help and must be in step with the CLI."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from conftest import ROOT


def test_command_reference_is_in_step_with_help():
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "gen-command-docs.py"), "--check"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr + "\n(regenerate with: .venv/bin/python tools/gen-command-docs.py)"


def test_reference_covers_every_listed_command_and_the_index_links_it():
    from wirecap.cli import COMMANDS

    ref = (ROOT / "docs" / "commands" / "reference.md").read_text()
    index = (ROOT / "docs" / "commands" / "README.md").read_text()
    for name, target in COMMANDS.items():
        if importlib.util.find_spec(target.split(":")[0]) is None:
            continue  # not in this checkout (then not listed by `wirecap --help` either)
        assert f"## wirecap {name}\n" in ref, f"wirecap {name} missing from reference.md"
        assert f"`{name}`" in index, f"wirecap {name} missing from docs/commands/README.md"
    assert "reference.md" in index


def test_check_mode_notices_a_stale_file(tmp_path):
    stale = tmp_path / "reference.md"
    stale.write_text("# Command reference\n\nold\n")
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "gen-command-docs.py"), "--check", "-o", str(stale)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and "out of date" in p.stderr
