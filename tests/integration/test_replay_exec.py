"""`replay exec` and `replay shim`: the recorded CLI re-emitted byte for byte, with its exit status."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from conftest import SAMPLES, run_wirecap

from wirecap.capture.writer import CaptureWriter, default_origin

pytestmark = pytest.mark.timeout(60)


def cli_capture(path, lines, *, exit_code=0, sig=None):
    """A capture shaped like `wirecap tee` writes: proc + stdout/stderr pipes, lines with their eol."""
    w = CaptureWriter(path, origin=default_origin("test"))
    w.open("proc", "process", t=0.0, argv=["claude", "-p", "hi"], cwd="/", pid=1)
    w.open("stdout", "pipe", t=0.0, proc="proc", stream="stdout")
    w.open("stderr", "pipe", t=0.0, proc="proc", stream="stderr")
    t = 0.0
    for stream, data, eol in lines:
        t += 0.001
        w.msg(stream, "s2c", data, t=t, **({} if eol == "\n" else {"eol": eol}))
    w.close_channel("stdout", t=t, bytes=0, lines=len(lines))
    fields = {"signal": sig} if sig else {"exit_code": exit_code}
    w.close_channel("proc", t=t + 0.001, duration=t, **fields)
    w.close()
    return path


def claude_lines():
    raw = (SAMPLES / "claude_code_tool_bash.jsonl").read_bytes()
    return raw, [("stdout", line, "\n") for line in raw.split(b"\n")[:-1]]


def test_exec_is_byte_exact_with_exit_code(tmp_path):
    raw, lines = claude_lines()
    lines = [*lines, ("stderr", b"warning: something\r", "\r\n"), ("stdout", b"no newline at end", "")]
    cap = cli_capture(tmp_path / "c.jsonl", lines, exit_code=3)
    r = run_wirecap("replay", "exec", str(cap), "--speed", "0")
    assert r.returncode == 3
    assert r.stdout == raw + b"no newline at end"
    assert r.stderr == b"warning: something\r\r\n"
    only = run_wirecap("replay", "exec", str(cap), "--speed", "0", "--ch", "stderr")
    assert only.stdout == b"" and only.stderr == b"warning: something\r\r\n" and only.returncode == 3


def test_exec_dies_by_the_recorded_signal(tmp_path):
    cap = cli_capture(tmp_path / "s.jsonl", [("stdout", b"working", "\n")], sig="SIGTERM")
    r = subprocess.run([sys.executable, "-m", "wirecap", "replay", "exec", str(cap), "--speed", "0"],
                       capture_output=True, timeout=30)
    assert r.returncode == -signal.SIGTERM and r.stdout == b"working\n"


@pytest.mark.parametrize("name", ["SIGTSTP", "SIGSTOP", "SIGTTIN", "SIGTTOU"])
def test_exec_ignores_a_recorded_stop_signal_by_default(tmp_path, name):
    cap = cli_capture(tmp_path / "s.jsonl", [("stdout", b"working", "\n")], sig=name)
    r = subprocess.run([sys.executable, "-m", "wirecap", "replay", "exec", str(cap), "--speed", "0"],
                       capture_output=True, timeout=30)
    assert (r.returncode, r.stdout) == (128 + getattr(signal, name), b"working\n")


def test_exec_replays_a_stop_signal_only_on_request(tmp_path):
    cap = cli_capture(tmp_path / "s.jsonl", [("stdout", b"working", "\n")], sig="SIGTSTP")
    p = subprocess.Popen([sys.executable, "-m", "wirecap", "replay", "exec", str(cap), "--speed", "0",
                          "--replay-stop-signals"], stdout=subprocess.PIPE)
    reaped = False
    try:
        _, status = os.waitpid(p.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status) and os.WSTOPSIG(status) == signal.SIGTSTP
        os.kill(p.pid, signal.SIGCONT)
        _, status = os.waitpid(p.pid, 0)
        reaped = True
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 128 + signal.SIGTSTP
        assert p.stdout is not None and p.stdout.read() == b"working\n"
    finally:
        if not reaped:
            os.kill(p.pid, signal.SIGKILL)
            os.waitpid(p.pid, 0)
        p.returncode = 0  # reaped here: keep Popen from waiting again
        if p.stdout is not None:
            p.stdout.close()


def test_exec_of_a_capture_without_a_process_is_a_clear_error(tmp_path):
    w = CaptureWriter(tmp_path / "n.jsonl", origin=default_origin("test"))
    w.close()
    r = run_wirecap("replay", "exec", str(tmp_path / "n.jsonl"))
    assert r.returncode == 2 and b"no process output" in r.stderr and b"Traceback" not in r.stderr


def test_exec_under_tee_round_trips_the_stream(tmp_path):
    """What `make demo` does: exec re-run under `wirecap tee` records the same stdout lines."""
    raw, lines = claude_lines()
    cap = cli_capture(tmp_path / "c.jsonl", lines, exit_code=0)
    new = tmp_path / "rerun.jsonl"
    r = run_wirecap("tee", "-o", str(new), "--", sys.executable, "-m", "wirecap", "replay", "exec", str(cap),
                    "--speed", "0")
    if r.returncode == 2 and b"No such command" in r.stderr:
        pytest.skip("wirecap tee is not there")
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == raw
    from replay_support import channel_messages

    assert [m.get("json") for m in channel_messages(new, "stdout")] == \
        [m.get("json") for m in channel_messages(cap, "stdout")]


def test_shim_is_run_by_another_program_as_claude(tmp_path):
    raw, lines = claude_lines()
    cap = cli_capture(tmp_path / "c.jsonl", lines, exit_code=0)
    shim = tmp_path / "bin" / "claude"
    r = run_wirecap("replay", "shim", str(cap), "--name", "claude", "-o", str(shim), "--speed", "0")
    assert r.returncode == 0, r.stderr.decode()
    assert os.access(shim, os.X_OK)
    assert shim.read_text().startswith(f"#!{sys.executable}\n")
    env = {**os.environ, "PATH": f"{shim.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    # a program that runs `claude` by name from PATH, through a shell, and reads its stream
    prog = subprocess.run(["sh", "-c", "claude -p 'run echo hi' --output-format stream-json | tail -n 1"],
                          capture_output=True, env=env, timeout=30)
    assert prog.returncode == 0
    assert prog.stdout == raw.split(b"\n")[-2] + b"\n"
    again = run_wirecap("replay", "shim", str(cap), "-o", str(shim))
    assert again.returncode == 2 and b"exists" in again.stderr
