"""`wirecap tee` end to end: real child processes, real pipes and ptys, real files.

The invariant behind most assertions: what the consumer received is byte for byte what the child
wrote, and the recorded lines (payload + eol) concatenate to exactly that too.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from conftest import SAMPLES, run_wirecap
from conftest import lab_dir as _lab
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wirecap.capture.payload import payload_bytes
from wirecap.capture.reader import CaptureReader, open_binary
from wirecap.capture.schema import validate_capture_file

EMITTERS = Path(__file__).resolve().parents[1] / "emitters"
PY = sys.executable


def emitter(name: str, *args: str) -> list[str]:
    return [PY, str(EMITTERS / name), *args]


def tee(cap: Path, cmd: list[str], *opts: str, input: bytes | None = None, timeout: float = 60,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return run_wirecap("tee", "-o", str(cap), *opts, "--", *cmd, input=input, timeout=timeout, env=env)


def records(cap: Path) -> list[dict]:
    with CaptureReader(cap) as r:
        return list(r)


def recorded_stream(recs: list[dict], ch: str) -> bytes:
    return b"".join(payload_bytes(r) + r.get("eol", "\n").encode() for r in recs if r["type"] == "msg" and r["ch"] == ch)


def assert_clean(cap: Path) -> list[dict]:
    """A complete, schema-valid capture with a gap-free seq and an `end`; returns its records."""
    assert validate_capture_file(cap) == []
    with CaptureReader(cap) as r:
        recs = list(r)
        assert r.interrupted is None and r.problems == []
    assert recs[-1]["type"] == "end" and recs[-1]["records"] == len(recs)
    return recs


def by(recs: list[dict], rtype: str, ch: str) -> dict:
    (rec,) = [r for r in recs if r["type"] == rtype and r.get("ch") == ch]
    return rec


# --- replaying real agent output ---------------------------------------------------------------

@pytest.mark.parametrize("sample", ["claude_code_partial_text.jsonl", "codex_hello.jsonl", "codebuff115_hello_stdout.txt"])
def test_replayed_agent_stream_passes_through_and_is_recorded_line_by_line(tmp_path: Path, sample: str) -> None:
    data = (SAMPLES / sample).read_bytes()
    cap = tmp_path / "cap.jsonl"
    # ~0.15 s of pauses in all (at least 5 ms a line): a busy machine cannot squeeze them into one read
    delay = max(0.005, 0.15 / max(1, data.count(b"\n") - 1))
    p = tee(cap, emitter("replay_lines.py", str(SAMPLES / sample), "--delay", f"{delay:.4f}", "--stderr", "starting\n"),
            "--dialect", "claude-code")
    assert p.returncode == 0, p.stderr
    assert p.stdout == data
    assert p.stderr == b"starting\n"
    recs = assert_clean(cap)
    assert recorded_stream(recs, "stdout") == data
    assert recorded_stream(recs, "stderr") == b"starting\n"
    msgs = [r for r in recs if r["type"] == "msg" and r["ch"] == "stdout"]
    assert len(msgs) == data.count(b"\n") + (not data.endswith(b"\n"))
    if sample.endswith(".jsonl"):
        assert all("json" in m for m in msgs)
        assert [m["json"] for m in msgs] == [orjson.loads(x) for x in data.splitlines()]
    ts = [r["t"] for r in recs]
    assert ts == sorted(ts)
    assert msgs[-1]["t"] - msgs[0]["t"] > delay * (len(msgs) - 1) * 0.5  # arrival times, not one batch
    proc = by(recs, "open", "proc")
    assert proc["kind"] == "process" and proc["argv"][1].endswith("replay_lines.py")
    assert proc["pid"] > 0 and proc["cwd"] == os.getcwd() and proc["dialect"] == "claude-code"
    assert "PATH" in proc["env"] and proc["env"]["PATH"] is None
    assert by(recs, "open", "stdout")["proc"] == "proc"
    assert by(recs, "close", "stdout")["bytes"] == len(data)
    assert by(recs, "close", "stdout")["lines"] == len(msgs)
    close = by(recs, "close", "proc")
    assert close["exit_code"] == 0 and close["duration"] > 0


# --- byte-exact passthrough --------------------------------------------------------------------

stream_bytes = st.lists(
    st.one_of(st.binary(max_size=300), st.sampled_from([b"\n", b"\r\n", b"\r", b"\xff", b"\xe2\x80\xa8", b'{"a":1}\n',
                                                         b"\x00", "é".encode(), b"\xc3"])),
    max_size=40,
).map(b"".join)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=stream_bytes, chunk=st.integers(1, 700), to_stderr=st.booleans())
def test_arbitrary_bytes_pass_through_exactly(tmp_path: Path, data: bytes, chunk: int, to_stderr: bool) -> None:
    src = tmp_path / "data.bin"
    src.write_bytes(data)
    cap = tmp_path / "cap.jsonl"
    args = ["--chunk", str(chunk)] + (["--stderr"] if to_stderr else [])
    p = tee(cap, emitter("emit_bytes.py", str(src), *args), "--force")
    assert p.returncode == 0
    got, other = (p.stderr, p.stdout) if to_stderr else (p.stdout, p.stderr)
    assert got == data and other == b""
    recs = assert_clean(cap)
    assert recorded_stream(recs, "stderr" if to_stderr else "stdout") == data


@pytest.mark.slow
def test_a_20_mb_line_passes_through_and_is_one_record(tmp_path: Path) -> None:
    n = 20_000_000
    cap = tmp_path / "cap.jsonl"
    p = tee(cap, emitter("big_line.py", str(n)), timeout=120)
    assert p.returncode == 0
    assert len(p.stdout) == n + 1 and p.stdout == b"x" * n + b"\n"
    recs = assert_clean(cap)
    (msg,) = [r for r in recs if r["type"] == "msg"]
    assert msg["text"] == "x" * n and "eol" not in msg


def test_a_non_blocking_stdout_with_a_slow_reader_still_gets_every_byte(tmp_path: Path) -> None:
    import fcntl

    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)
    cap = tmp_path / "cap.jsonl"
    p = subprocess.Popen([PY, "-m", "wirecap", "tee", "-o", str(cap), "--", *emitter("big_line.py", "3000000")],
                         stdout=w, stderr=subprocess.PIPE)
    os.close(w)
    try:
        time.sleep(0.5)  # let the pipe fill up: wirecap's writes now get EAGAIN
        got = b""
        while chunk := os.read(r, 65536):
            got += chunk
        assert p.wait(timeout=60) == 0
    finally:
        os.close(r)
        if p.poll() is None:
            p.kill()
    assert got == b"x" * 3_000_000 + b"\n"
    assert p.stderr.read() == b""
    assert recorded_stream(assert_clean(cap), "stdout") == got


def test_no_trailing_newline_is_recorded_with_empty_eol(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    p = tee(cap, ["printf", "one\r\ntwo"])
    assert p.stdout == b"one\r\ntwo"
    recs = assert_clean(cap)
    msgs = [r for r in recs if r["type"] == "msg"]
    assert [(m["text"], m.get("eol", "\n")) for m in msgs] == [("one", "\r\n"), ("two", "")]


# --- exit codes and signals --------------------------------------------------------------------

def test_exit_code_is_the_childs(tmp_path: Path) -> None:
    p = tee(tmp_path / "cap.jsonl", ["sh", "-c", "echo out; exit 7"])
    assert p.returncode == 7 and p.stdout == b"out\n"
    assert by(assert_clean(tmp_path / "cap.jsonl"), "close", "proc")["exit_code"] == 7


def test_child_killed_by_sigterm_gives_143(tmp_path: Path) -> None:
    p = tee(tmp_path / "cap.jsonl", ["sh", "-c", "echo before; kill -TERM $$; echo after"])
    assert p.returncode == 143 and p.stdout == b"before\n"
    close = by(assert_clean(tmp_path / "cap.jsonl"), "close", "proc")
    assert close["signal"] == "SIGTERM" and "exit_code" not in close


def read_line(f, timeout: float = 20) -> bytes:
    """One line from a pipe, bounded in time."""
    buf = b""
    deadline = time.monotonic() + timeout
    while not buf.endswith(b"\n"):
        left = deadline - time.monotonic()
        assert left > 0, f"no line within {timeout}s (got {buf!r})"
        if select.select([f], [], [], left)[0]:
            b = os.read(f.fileno(), 1)
            assert b, f"EOF before a full line (got {buf!r})"
            buf += b
    return buf


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signals_to_wirecap_are_forwarded_and_end_is_written(tmp_path: Path, sig: int) -> None:
    cap = tmp_path / "cap.jsonl"
    p = subprocess.Popen([PY, "-m", "wirecap", "tee", "-o", str(cap), "--", *emitter("signal_wait.py")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert read_line(p.stdout) == b"ready\n"
        p.send_signal(sig)
        out, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
    name = signal.Signals(sig).name
    assert p.returncode == 40 + sig, err
    assert out == f"got {name}\n".encode()
    recs = assert_clean(cap)
    assert recorded_stream(recs, "stdout") == f"ready\ngot {name}\n".encode()
    assert by(recs, "close", "proc")["exit_code"] == 40 + sig


def test_ctrl_c_on_the_terminal_reaches_the_child_once(tmp_path: Path) -> None:
    """Ctrl-C on a terminal signals the whole foreground group: wirecap must not deliver it again."""
    import fcntl
    import pty
    import termios

    master, slave = pty.openpty()

    def own_terminal() -> None:  # wirecap leads a new session whose controlling terminal is the pty
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    cap = tmp_path / "cap.jsonl"
    p = subprocess.Popen([PY, "-m", "wirecap", "tee", "-o", str(cap), "--", *emitter("count_signals.py")],
                         stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                         preexec_fn=own_terminal)
    try:
        assert read_line(p.stdout) == b"ready\n"
        os.write(master, b"\x03")  # the terminal's interrupt character
        out, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)
        os.close(slave)
    assert out == b"sigint=1\n", err
    assert p.returncode == 0
    assert recorded_stream(assert_clean(cap), "stdout") == b"ready\nsigint=1\n"


# --- stdin -------------------------------------------------------------------------------------

def test_stdin_stream_json_conversation_is_forwarded_and_recorded(tmp_path: Path) -> None:
    turns = [
        {"type": "user", "message": {"role": "user", "content": "say hello"}},
        {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "and goodbye"}]}},
    ]
    stdin = b"".join(orjson.dumps(t) + b"\n" for t in turns)
    cap = tmp_path / "cap.jsonl"
    p = tee(cap, emitter("stream_json_peer.py"), "--record-stdin", "--dialect", "claude-code", input=stdin)
    assert p.returncode == 0, p.stderr
    out = [orjson.loads(x) for x in p.stdout.splitlines()]
    assert [o["type"] for o in out] == ["assistant", "result", "assistant", "result"]
    assert out[2]["message"]["content"][0]["text"] == "you said: and goodbye"
    recs = assert_clean(cap)
    assert recorded_stream(recs, "stdin") == stdin
    assert recorded_stream(recs, "stdout") == p.stdout
    sent = [r for r in recs if r["type"] == "msg" and r["ch"] == "stdin"]
    assert [r["dir"] for r in sent] == ["c2s", "c2s"] and [r["json"] for r in sent] == turns
    assert by(recs, "open", "stdin")["stream"] == "stdin"
    # every reply is recorded after the user line that caused it
    first_reply = next(r for r in recs if r["type"] == "msg" and r["ch"] == "stdout")
    assert first_reply["seq"] > sent[0]["seq"]


def test_stdin_is_inherited_when_not_recorded(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    p = tee(cap, ["cat"], input=b"abc\ndef")
    assert p.stdout == b"abc\ndef"
    recs = assert_clean(cap)
    assert not [r for r in recs if r.get("ch") == "stdin"]


# --- downstream closes early, disk full ----------------------------------------------------------

def test_downstream_closing_early_is_quiet_and_the_capture_ends_cleanly(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    p = subprocess.run(
        ["bash", "-c", f'"{PY}" -m wirecap tee -o "{cap}" -- "{PY}" "{EMITTERS}/endless.py" 0.002 | head -1; '
                       'echo "status=${PIPESTATUS[0]}"'],
        capture_output=True, timeout=60,
    )
    assert p.stdout == b"line 0\nstatus=141\n"  # the child died of SIGPIPE, as it would piped into head directly
    assert p.stderr == b""
    recs = assert_clean(cap)
    assert by(recs, "close", "stdout")["downstream_closed"] is True
    assert by(recs, "close", "proc")["signal"] == "SIGPIPE"
    assert recorded_stream(recs, "stdout").startswith(b"line 0\n")


@pytest.fixture
def tiny_fs(tmp_path: Path):
    """A 64 KiB tmpfs (needs root and mount(2)); skipped where that is not possible."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_full_disk_keeps_passthrough_exact_with_one_warning(tmp_path: Path, tiny_fs: Path) -> None:
    data = b"".join(b'{"n":%d,"pad":"%s"}\n' % (i, b"p" * 200) for i in range(5000))  # ~1 MB: cannot fit
    src = tmp_path / "data.jsonl"
    src.write_bytes(data)
    cap = tiny_fs / "cap.jsonl"
    p = tee(cap, emitter("emit_bytes.py", str(src), "--chunk", "4096"))
    assert p.returncode == 0
    assert p.stdout == data
    warnings = p.stderr.decode().splitlines()
    assert len(warnings) == 1 and warnings[0].startswith("wirecap: warning:"), p.stderr
    assert "No space left on device" in warnings[0]
    with CaptureReader(cap) as r:
        recs = list(r)
        assert r.interrupted is not None  # no `end`: the capture says it is incomplete
    assert recs and recs[-1]["type"] != "end"
    assert data.startswith(recorded_stream(recs, "stdout"))  # what was written is a correct prefix


# --- pipe mode, pty, environment, errors ---------------------------------------------------------

def test_pipe_mode_records_stdin_and_copies_it(tmp_path: Path) -> None:
    data = (SAMPLES / "claude_code_hello.jsonl").read_bytes() + b"tail without newline \xff"
    cap = tmp_path / "cap.jsonl"
    p = run_wirecap("tee", "-o", str(cap), "--dialect", "claude-code", input=data)
    assert p.returncode == 0 and p.stdout == data and p.stderr == b""
    recs = assert_clean(cap)
    assert recorded_stream(recs, "stdout") == data
    assert by(recs, "open", "proc")["upstream"] is True
    assert by(recs, "open", "stdout")["dialect"] == "claude-code"


def test_pty_gives_the_child_a_terminal(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    plain = tee(tmp_path / "plain.jsonl", emitter("tty_check.py", "--require"))
    assert plain.returncode == 3  # without --pty the child sees pipes and refuses
    p = tee(cap, emitter("tty_check.py", "--require"), "--pty", input=b"")
    assert p.returncode == 0, p.stderr
    recs = assert_clean(cap)
    assert recorded_stream(recs, "stdout") == p.stdout  # raw terminal output, CRLF from the pty included
    (info,) = [orjson.loads(r["raw"] if "raw" in r else orjson.dumps(r["json"])) for r in recs
               if r["type"] == "msg" and r["ch"] == "stdout"]
    assert info["stdin"] is True and info["stdout"] is True and info["stderr"] is False
    assert (info["rows"], info["cols"]) == (24, 80)  # our stdin is no terminal: a sane default size
    assert p.stdout.endswith(b"\r\n")
    assert by(recs, "open", "proc")["pty"] is True


def test_pty_copies_the_window_size_of_our_terminal(tmp_path: Path) -> None:
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 132, 0, 0))
        before = termios.tcgetattr(slave)
        cap = tmp_path / "cap.jsonl"
        p = subprocess.run([PY, "-m", "wirecap", "tee", "-o", str(cap), "--pty", "--", *emitter("tty_check.py")],
                           stdin=slave, capture_output=True, timeout=60)
        assert p.returncode == 0, p.stderr
        info = orjson.loads(p.stdout.strip())
        assert (info["rows"], info["cols"]) == (50, 132)
        assert termios.tcgetattr(slave) == before  # our terminal's mode is restored after the raw run
        assert recorded_stream(assert_clean(cap), "stdout") == p.stdout
    finally:
        os.close(master)
        os.close(slave)


def test_environment_names_are_recorded_values_only_when_harmless(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    secret = "sk-ant-api03-" + "A" * 40
    env = {"MY_API_KEY": secret, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "LC_ALL": "C.UTF-8",
           "SECRET_BASE_URL": "http://u:pw@127.0.0.1:9", "TERM": "dumb"}
    p = tee(cap, ["true"], env=env)
    assert p.returncode == 0
    proc = by(assert_clean(cap), "open", "proc")
    assert proc["env"]["MY_API_KEY"] is None
    assert proc["env"]["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert proc["env"]["LC_ALL"] == "C.UTF-8" and proc["env"]["TERM"] == "dumb"
    assert proc["env"]["SECRET_BASE_URL"] is None
    assert secret.encode() not in cap.read_bytes() and b"pw@" not in cap.read_bytes()


def test_existing_capture_is_refused_without_force(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    cap.write_text("keep me\n")
    p = tee(cap, ["echo", "hi"])
    assert p.returncode == 2 and p.stdout == b""
    assert b"exists" in p.stderr and b"Traceback" not in p.stderr
    assert cap.read_text() == "keep me\n"
    p = tee(cap, ["echo", "hi"], "--force")
    assert p.returncode == 0 and p.stdout == b"hi\n"
    assert_clean(cap)


def test_missing_command_exits_127_and_the_capture_says_why(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    p = tee(cap, ["/nonexistent/agent-cli", "--json"])
    assert p.returncode == 127
    assert p.stderr.decode().startswith("wirecap: /nonexistent/agent-cli:")
    recs = assert_clean(cap)
    assert recs[0]["type"] == "error" and recs[-1]["errors"] == 1


def test_pty_without_command_is_a_usage_error(tmp_path: Path) -> None:
    p = run_wirecap("tee", "-o", str(tmp_path / "c.jsonl"), "--pty", input=b"")
    assert p.returncode == 2 and b"need a command" in p.stderr
    assert not (tmp_path / "c.jsonl").exists()


# --- a real agent CLI ----------------------------------------------------------------------------



@pytest.mark.realclient
@pytest.mark.skipif(_lab() is None, reason="lab not installed ($WIRECAP_LAB or <repo>/.lab with node_modules/.bin/claude)")
@pytest.mark.parametrize("name", ["claude.jsonl", "claude.jsonl.zst"])
def test_real_claude_code_stream_is_recorded_byte_for_byte(tmp_path: Path, name: str) -> None:
    lab = _lab()
    assert lab is not None
    fake = Path(__file__).resolve().parents[1] / "fixtures" / "lab" / "fake" / "fake_anthropic.py"
    portfile = tmp_path / "port"
    server = subprocess.Popen([PY, str(fake), "--mode", "text", "--log", str(tmp_path / "requests.jsonl"),
                               "--portfile", str(portfile)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not (portfile.exists() and portfile.read_text().strip()):
            assert time.monotonic() < deadline and server.poll() is None, "fake server did not start"
            time.sleep(0.05)
        port = portfile.read_text().strip()
        home, work, tmp = tmp_path / "home", tmp_path / "work", tmp_path / "tmp"
        for d in (home, work, tmp):
            d.mkdir()
        env = {"HOME": str(home), "TMPDIR": str(tmp), "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
               "ANTHROPIC_API_KEY": "sk-ant-fake-0000000000000000", "DISABLE_TELEMETRY": "1",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "PATH": f"{Path(PY).parent}:/usr/local/bin:/usr/bin:/bin", "TERM": "dumb"}
        cap = tmp_path / name
        p = subprocess.run(
            [PY, "-m", "wirecap", "tee", "-o", str(cap), "--dialect", "claude-code", "--",
             str(lab / "node_modules" / ".bin" / "claude"), "-p", "say hello", "--output-format", "stream-json",
             "--verbose"],
            cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=180,
        )
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert p.returncode == 0, p.stderr.decode(errors="replace")[-2000:]
    lines = [orjson.loads(x) for x in p.stdout.splitlines()]
    assert lines[0]["type"] == "system" and lines[-1]["type"] == "result"
    recs = assert_clean(cap)
    assert recorded_stream(recs, "stdout") == p.stdout
    assert recorded_stream(recs, "stderr") == p.stderr
    assert by(recs, "open", "proc")["env"]["ANTHROPIC_BASE_URL"] == f"http://127.0.0.1:{port}"
    with open_binary(str(cap)) as f:
        assert b"sk-ant-fake-0000000000000000" not in f.read()
