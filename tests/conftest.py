"""Shared fixtures: paths to the committed real samples, free loopback ports, running the CLI.

`run_wirecap(ARGS...)` runs the CLI in this process (`wirecap.cli.main`, stdout and stderr captured as
bytes, the exit status from SystemExit), which is what almost every test needs and costs no interpreter
start; commands that are about processes (`tee`, `record`, `replay exec`/`serve`, `cat --follow`: they
spawn children, block or send signals, write to file descriptors 1 and 2 directly, or run until
stopped) run as a real subprocess there, and `run_wirecap_process` always does. Both return a
`subprocess.CompletedProcess` with bytes.
"""

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


def run_wirecap_process(*args: str, input: bytes | None = None, timeout: float = 60, cwd: str | None = None,
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


def needs_process(args: tuple[str, ...]) -> bool:
    """Commands that cannot run inside the test process (see the module doc)."""
    return (bool(args) and args[0] in ("tee", "record")) or args[:2] in (("replay", "exec"), ("replay", "serve")) \
        or (bool(args) and args[0] == "cat" and ("--follow" in args or "-F" in args))


def run_wirecap(*args: str, input: bytes | None = None, timeout: float = 60, cwd: str | None = None,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """`wirecap ARGS` in this process (a real subprocess for the commands of `needs_process`).
    `timeout` bounds only a subprocess; in-process runs are bounded by pytest-timeout."""
    if needs_process(args):
        return run_wirecap_process(*args, input=input, timeout=timeout, cwd=cwd, env=env)
    from wirecap.cli.inprocess import run

    code, out, err = run(list(args), input=input, env=env, cwd=cwd)
    return subprocess.CompletedProcess(["wirecap", *args], code, out, err)


# What a person's terminal puts in the environment (its width, color and pager wishes) must not
# change what a test sees (pytest-xdist's workers even get COLUMNS=80), nor may one test leave them
# behind for the next: the process starts without them, and whatever a test left is taken away after
# it (a test sets them itself: run_wirecap(env=...), monkeypatch).
TERMINAL_ENV = ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "PAGER", "WIRECAP_PAGER", "LESS",
                "WIRECAP_PROGRESS", "WIRECAP_PROGRESS_DELAY")
for _name in TERMINAL_ENV:
    os.environ.pop(_name, None)


@pytest.fixture(autouse=True)
def _no_terminal_env():
    yield
    for name in TERMINAL_ENV:
        os.environ.pop(name, None)


@pytest.fixture
def wirecap_cli():
    return run_wirecap


# --- summaries from pytest-xdist workers ----------------------------------------------------------------
class _WorkerSummaries:
    """Sections a test module prints at the end of the run (the real-client table) when it ran on a
    pytest-xdist worker: the worker puts `[title, lines]` in `config.workeroutput["wirecap_summaries"]`,
    the controller gets it when the worker ends and prints it here."""

    def __init__(self) -> None:
        self.sections: list[tuple[str, list[str]]] = []

    def pytest_testnodedown(self, node, error) -> None:
        for title, lines in getattr(node, "workeroutput", {}).get("wirecap_summaries", []):
            self.sections.append((title, lines))

    def pytest_terminal_summary(self, terminalreporter) -> None:
        for title, lines in self.sections:
            terminalreporter.section(title)
            for line in lines:
                terminalreporter.write_line(line)


def pytest_collection_modifyitems(session, config, items) -> None:
    """tests/unit first, then the rest in their usual order: a unit test then never runs in a process
    where an integration test has left a thread behind (the fork tests of tests/unit/test_diff_sides.py
    need one with none)."""
    items.sort(key=lambda item: 0 if "/tests/unit/" in item.path.as_posix() else 1)


def pytest_configure(config) -> None:
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_WorkerSummaries(), "wirecap-worker-summaries")
