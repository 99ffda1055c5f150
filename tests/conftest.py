"""Shared fixtures: paths to the committed real samples, free loopback ports, running the CLI."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SAMPLES = FIXTURES / "samples"
LAB = FIXTURES / "lab"


def lab_dir(binary: str = "claude") -> Path | None:
    """The installed lab of real agent CLIs (`make lab`): $WIRECAP_LAB, else <repo>/.lab, when it holds
    node_modules/.bin/BINARY; None otherwise (real-client tests skip then)."""
    for cand in (os.environ.get("WIRECAP_LAB"), str(ROOT / ".lab")):
        if cand and (Path(cand) / "node_modules" / ".bin" / binary).exists():
            return Path(cand).resolve()
    return None


@pytest.fixture
def samples_dir() -> Path:
    return SAMPLES


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (loopback only, always)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_wirecap(*args: str, input: bytes | None = None, timeout: float = 60, cwd: str | None = None,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run `python -m wirecap ARGS` as a real subprocess and capture its output."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "wirecap", *args],
        input=input,
        capture_output=True,
        timeout=timeout,
        cwd=cwd,
        env=full_env,
    )


@pytest.fixture
def wirecap_cli():
    return run_wirecap
