"""Every read-side command's output on every shipped capture and fixture is what the manifest says.

tools/golden.py runs ~2,600 commands in-process (cat, info, convert, validate, stats, diff, report in
every format, export) and compares exit status and SHA-256 of stdout/stderr with tests/golden/manifest.json,
written before the issue-15 reshape. A deliberate change of output (a bug fix) updates the manifest
with `python tools/golden.py update` in the same commit and says why.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]


def _golden():
    spec = importlib.util.spec_from_file_location("wirecap_golden", ROOT / "tools" / "golden.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_output_is_unchanged(monkeypatch):
    golden = _golden()
    monkeypatch.chdir(ROOT)
    for key in golden.ENV:
        monkeypatch.setenv(key, os.environ.get(key, ""))  # restored after the test
    expected = orjson.loads(golden.MANIFEST.read_bytes())
    got = golden.snapshot()
    changed = golden.compare(expected, got)
    assert len(got) > 2500
    assert not changed, f"{len(changed)} outputs changed (dump both trees with tools/golden.py dump):\n" + "\n".join(changed[:40])
