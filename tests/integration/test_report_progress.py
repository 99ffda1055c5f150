"""`wirecap report` shows progress on stderr: only on a terminal (or when asked), never in stdout, and
erases its line at the end."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the bench package lives at the repo root, outside the installed wirecap
from bench.bench_report import write_capture  # noqa: E402

CLEAR = "\r\x1b[K"


@pytest.fixture(scope="module")
def cap(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("progress") / "run.jsonl"
    write_capture(path, 5_000_000)
    return path


def _env(**kw: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "WIRECAP_PROGRESS"}
    return {**env, "TERM": "xterm", **kw}


def test_no_progress_when_stderr_is_not_a_terminal(cap: Path, tmp_path: Path):
    r = subprocess.run([sys.executable, "-m", "wirecap", "report", str(cap), "-f", "html", "-o", str(tmp_path / "a.html")],
                       capture_output=True, env=_env(), timeout=120)
    assert r.returncode == 0 and r.stderr == b""
    assert r.stdout == f"{tmp_path / 'a.html'}\n".encode()


def test_progress_when_asked_goes_to_stderr_and_is_erased(cap: Path, tmp_path: Path):
    out = tmp_path / "b.html"
    r = subprocess.run([sys.executable, "-m", "wirecap", "report", str(cap), "-f", "html", "-o", str(out)],
                       capture_output=True, env=_env(WIRECAP_PROGRESS="1"), timeout=120)
    err = r.stderr.decode()
    assert r.returncode == 0 and r.stdout == f"{out}\n".encode()  # stdout untouched
    assert err.startswith(CLEAR + "wirecap report") and err.endswith(CLEAR)
    assert "\n" not in err  # one line, rewritten in place


def test_a_terminal_gets_only_progress_on_stderr(cap: Path, tmp_path: Path):
    """On a terminal, without WIRECAP_PROGRESS: whatever stderr gets is the progress line, erased (a run
    quicker than the delay shows none: no timing is asserted)."""
    master, slave = pty.openpty()
    stdout = tmp_path / "out.txt"
    with open(stdout, "wb") as f:  # (a file: a full pipe would block the child while this reads the pty)
        p = subprocess.Popen([sys.executable, "-m", "wirecap", "report", str(cap), "-f", "term"],
                             stdout=f, stderr=slave, env=_env())
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # (the child closed its end)
            break
        if not chunk:
            break
        seen += chunk
    assert p.wait(timeout=120) == 0
    out = stdout.read_bytes()
    text = seen.decode()
    assert text == "" or (text.startswith(CLEAR + "wirecap report") and text.endswith(CLEAR))  # (a quick run: none)
    assert b"wirecap report:" not in out and out.startswith(b"== run.jsonl ==")
