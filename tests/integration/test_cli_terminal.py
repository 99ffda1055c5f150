"""The terminal as a person meets it, on a real pseudo-terminal: the pager runs on a TTY and never on a
pipe, color is on by default on a TTY and off with NO_COLOR, tables fit the terminal's own width, the
progress line appears on a TTY's stderr and is erased, and bash completes a file name after a wirecap
command (click's completion script loaded in an interactive bash)."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import shutil
import struct
import subprocess
import sys
import termios
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import ROOT

TOOL = ROOT / "captures" / "claude-code-2.1.197-tool-bash.jsonl"
FALLBACK = ROOT / "captures" / "codex-0.169.0-ws-fallback.jsonl"
WIRECAP = [sys.executable, "-m", "wirecap"]
CLEAN = ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "PAGER", "WIRECAP_PAGER", "LESS", "WIRECAP_PROGRESS",
         "WIRECAP_PROGRESS_DELAY")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CLEAN}
    env["TERM"] = "xterm"
    env.update(extra)
    return env


def _read_until(master: int, done: Callable[[bytes], bool], timeout: float = 30) -> bytes:
    """What the terminal shows until `done(shown)`, the child closes it, or `timeout` (a bound, not a test)."""
    out = b""
    while not done(out):
        ready, _, _ = select.select([master], [], [], timeout)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer of the terminal is gone
            break
        if not chunk:
            break
        out += chunk
    return out


def in_pty(args: list[str], *, env: dict[str, str], cols: int = 80, rows: int = 24, stderr_pipe: bool = False,
           keys: bytes = b"", cwd: str | None = None) -> tuple[int, bytes, bytes]:
    """Run ARGS with a pseudo-terminal of `cols` x `rows` as its controlling terminal, stdin and stdout
    (and stderr, unless `stderr_pipe`): (exit status, what the terminal showed, stderr when piped)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def own_terminal() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    p = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=subprocess.PIPE if stderr_pipe else slave,
                         env=env, cwd=cwd, start_new_session=True, preexec_fn=own_terminal)
    os.close(slave)
    try:
        if keys:
            os.write(master, keys)
        shown = _read_until(master, lambda _: False)
        err = p.stderr.read() if p.stderr is not None else b""
        code = p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)
    return code, shown, err


def lines_of(shown: bytes) -> list[str]:
    return shown.decode("utf-8", "replace").replace("\r\n", "\n").split("\n")


# --- pager ---------------------------------------------------------------------------------------------

MARKING_PAGER = "sed 's/^/paged: /'"  # a pager whose every line says it went through it


def test_long_output_goes_through_the_pager_on_a_terminal():
    code, shown, _ = in_pty([*WIRECAP, "report", str(TOOL)], env=_env(PAGER=MARKING_PAGER))
    assert code == 0, shown[-2000:]
    text = shown.decode("utf-8", "replace")
    assert "paged: == claude-code-2.1.197-tool-bash.jsonl ==" in text
    assert "paged: -- channels --" in text


@pytest.mark.parametrize("args", [["report", "--no-pager", str(TOOL)], ["--no-pager", "report", str(TOOL)]])
def test_no_pager_prints_straight_to_the_terminal(args):
    code, shown, _ = in_pty([*WIRECAP, *args], env=_env(PAGER=MARKING_PAGER))
    assert code == 0
    text = shown.decode("utf-8", "replace")
    assert "== claude-code-2.1.197-tool-bash.jsonl ==" in text and "paged:" not in text


def test_output_that_fits_the_screen_is_not_paged():
    code, shown, _ = in_pty([*WIRECAP, "validate", str(FALLBACK)], env=_env(PAGER=MARKING_PAGER), rows=60)
    assert code == 1
    assert b"ws-fallback" in shown and b"paged:" not in shown


def test_never_paged_into_a_pipe():
    p = subprocess.run([*WIRECAP, "report", str(TOOL)], env=_env(PAGER=MARKING_PAGER), capture_output=True,
                       timeout=60)
    assert p.returncode == 0
    assert b"paged:" not in p.stdout and p.stdout.startswith(b"== claude-code")


@pytest.mark.skipif(shutil.which("less") is None, reason="no less on this machine")
def test_the_default_pager_is_less_and_q_quits_it():
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    p = subprocess.Popen([*WIRECAP, "report", str(TOOL)], stdin=slave, stdout=slave, stderr=slave, env=_env(),
                         start_new_session=True, preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(slave)
    try:
        first = _read_until(master, lambda b: b"-- channels --" in b or b"(END)" in b or b":" in b[-40:])
        os.write(master, b"q")
        rest = _read_until(master, lambda _: False)
        code = p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)
    assert code == 0
    assert b"== claude-code-2.1.197-tool-bash.jsonl ==" in first
    assert b"-- conversation --" not in first + rest  # less showed one screen; q quit before the end


# --- color and width -------------------------------------------------------------------------------------

def test_color_is_on_by_default_on_a_terminal_and_off_with_no_color():
    _, shown, _ = in_pty([*WIRECAP, "validate", str(FALLBACK)], env=_env(), rows=60)
    assert b"\x1b[1;31merror" in shown
    _, plain, _ = in_pty([*WIRECAP, "validate", str(FALLBACK)], env=_env(NO_COLOR="1"), rows=60)
    assert b"ws-fallback" in plain and b"\x1b[" not in plain
    _, never, _ = in_pty([*WIRECAP, "validate", "--color", "never", str(FALLBACK)], env=_env(), rows=60)
    assert b"ws-fallback" in never and b"\x1b[" not in never


@pytest.mark.parametrize("cols", [80, 100])
@pytest.mark.parametrize("command", ["info", "stats", "validate"])
def test_tables_fit_the_terminal_own_width(command, cols):
    _, shown, _ = in_pty([*WIRECAP, command, "--no-pager", str(FALLBACK)], env=_env(NO_COLOR="1"), cols=cols)
    lines = [x for x in lines_of(shown) if x.strip()]
    assert len(lines) > 2
    assert max(len(x) for x in lines) <= cols, "\n".join(lines)


# --- progress ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [["stats"], ["validate"], ["info"], ["convert", "-o", "{tmp}/ev.jsonl"],
                                     ["diff", str(ROOT / "captures" / "codex-0.169.0-hello.jsonl")],
                                     ["export", "-q", "-o", "{tmp}/x.har"]])
def test_progress_is_drawn_on_a_terminal_stderr_and_erased(tmp_path, command):
    args = [a.replace("{tmp}", str(tmp_path)) for a in command]
    code, shown, _ = in_pty([*WIRECAP, *args[:1], str(FALLBACK), *args[1:]] if args[0] == "diff" else
                            [*WIRECAP, *args, str(FALLBACK)], env=_env(WIRECAP_PROGRESS_DELAY="0", NO_COLOR="1"),
                            rows=200)
    assert code in (0, 1), shown
    text = shown.decode("utf-8", "replace")
    assert f"wirecap {args[0]}: reading " in text
    line_at = text.index(f"wirecap {args[0]}: reading ")
    assert "\r\x1b[K" in text[line_at:]  # erased afterwards: what follows starts on a clean line


def test_no_progress_when_stderr_is_not_a_terminal():
    code, shown, err = in_pty([*WIRECAP, "stats", "--no-pager", str(FALLBACK)],
                              env=_env(WIRECAP_PROGRESS_DELAY="0"), stderr_pipe=True)
    assert code == 0
    assert b"reading" not in err and b"reading" not in shown


def test_no_progress_between_lines_streamed_to_the_same_terminal():
    code, shown, _ = in_pty([*WIRECAP, "convert", str(FALLBACK)], env=_env(WIRECAP_PROGRESS_DELAY="0"))
    assert code == 0
    assert b"session.started" in shown and b"wirecap convert: reading" not in shown


# --- shell completion ----------------------------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completes_a_capture_file_name_after_a_wirecap_command(tmp_path: Path):
    (tmp_path / "capture-one.jsonl").write_bytes(TOOL.read_bytes())
    bindir = tmp_path / "bin"
    bindir.mkdir()
    launcher = bindir / "wirecap"
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} -m wirecap \"$@\"\n")
    launcher.chmod(0o755)
    env = _env(PATH=f"{bindir}:{os.environ['PATH']}", PYTHONPATH=str(ROOT), PS1="$ ", HOME=str(tmp_path),
               INPUTRC="/dev/null")
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 200, 0, 0))
    p = subprocess.Popen(["bash", "--norc", "--noprofile", "-i"], stdin=slave, stdout=slave, stderr=slave, env=env,
                         cwd=tmp_path, start_new_session=True,
                         preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(slave)
    try:
        os.write(master, b'eval "$(_WIRECAP_COMPLETE=bash_source wirecap)"; echo load""ed\n')
        _read_until(master, lambda b: b"loaded" in b)
        os.write(master, b"wirecap info capture-o\t")
        shown = _read_until(master, lambda b: b"ne.jsonl" in b, timeout=20)
        os.write(master, b"\x03exit\n")
        _read_until(master, lambda _: False, timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)
        os.close(master)
    assert b"capture-one.jsonl" in shown or b"ne.jsonl" in shown, shown[-500:]


def test_cat_streams_through_the_pager_on_a_terminal_but_not_when_following():
    code, shown, _ = in_pty([*WIRECAP, "cat", str(TOOL)], env=_env(PAGER=MARKING_PAGER))
    assert code == 0
    paged = [x for x in lines_of(shown) if x.startswith("paged: ")]
    assert len(paged) >= 53 and "+ open" in paged[0]  # every record, each through the pager
    code, shown, _ = in_pty([*WIRECAP, "cat", "-F", str(TOOL)], env=_env(PAGER=MARKING_PAGER))
    assert code == 0
    assert b"+ open" in shown and b"paged:" not in shown
    code, shown, _ = in_pty([*WIRECAP, "cat", "--no-pager", str(TOOL)], env=_env(PAGER=MARKING_PAGER))
    assert b"+ open" in shown and b"paged:" not in shown


def test_quitting_the_pager_early_ends_cat_quietly():
    code, shown, _ = in_pty([*WIRECAP, "cat", str(TOOL)], env=_env(PAGER="head -n 3"))
    assert code == 0
    assert b"Traceback" not in shown and b"Broken pipe" not in shown
    assert len([x for x in lines_of(shown) if x.strip()]) == 3


def test_report_progress_is_drawn_and_erased_without_a_thread(tmp_path):
    code, shown, _ = in_pty([*WIRECAP, "report", "-f", "html", "-o", str(tmp_path / "r.html"), str(TOOL)],
                            env=_env(WIRECAP_PROGRESS_DELAY="0", NO_COLOR="1"))
    assert code == 0, shown
    text = shown.decode("utf-8", "replace")
    assert "wirecap report" in text and text.rstrip().endswith(str(tmp_path / "r.html"))
    assert "\r\x1b[K" + str(tmp_path / "r.html") in text  # the line erased before the path is printed
