"""Turn the committed real samples into captures (a test helper for the report, detection and doors
tests): `wirecap import`'s program (`wirecap.record.imports.import_sources`, in-process) makes client
stdout files a process with a stdout pipe and the fake servers' wire logs HTTP exchanges or WebSocket
connections, with the recorded timing."""

from __future__ import annotations

from pathlib import Path

from wirecap.capture.redact import Redactor
from wirecap.record.imports import import_sources

SAMPLES = Path(__file__).resolve().parent / "fixtures" / "samples"


def sample_files() -> list[Path]:
    """Every sample data file (README files and the `_full` folders excluded)."""
    out = []
    for p in sorted(SAMPLES.rglob("*")):
        if p.is_file() and p.suffix in (".jsonl", ".ndjson", ".txt") and not p.parent.name.endswith("_full"):
            out.append(p)
    return out


def make_capture(sample: Path, out: Path, *, redact: bool = True) -> Path:
    """Write a capture made from one sample file, as `wirecap import SAMPLE -o OUT [--no-redact]` would;
    returns its path."""
    import_sources([str(sample)], str(out), redactor=Redactor(enabled=redact))
    return out
