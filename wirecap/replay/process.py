"""`replay exec` and `replay shim`: act as the recorded CLI.

Writes the recorded stdout and stderr lines (each with its own line end) at their recorded times,
then exits with the recorded exit code, or dies by the recorded signal, so a program that runs the
CLI cannot tell the difference. The pacing comes from `timing.Pacer`; the rest is plain file I/O.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

from wirecap.capture.inputs import is_stream
from wirecap.capture.payload import line_bytes
from wirecap.capture.reader import CaptureReader
from wirecap.errors import WirecapError
from wirecap.fsmode import private_dir, write_private
from wirecap.replay.script import ProcessScan, ProcessScript, build_process_script
from wirecap.replay.timing import Pacer


def load_process(path: str, channels: tuple[str, ...] = ()) -> ProcessScript:
    """The process to replay, checked; its lines are not held (a file is read again by `process_lines`),
    except from standard input, a pipe or a FIFO, which cannot be read twice."""
    with CaptureReader(path) as reader:
        if is_stream(path):
            script = build_process_script(reader, channels=channels or None)
        else:
            scan = ProcessScan(channels=channels or None)
            for _line in scan.run(reader):
                pass
            script = scan.script
    if script is None or (not script.n_lines and script.close is None):
        what = f" on {', '.join(channels)}" if channels else ""
        raise WirecapError(f"{path}: no process output{what} to replay (record one with `wirecap tee`)")
    unknown = [c for c in channels if c not in script.pipes and c not in script.pipes.values()]
    if unknown:
        known = ", ".join(sorted({*script.pipes, *script.pipes.values()})) or "none"
        raise WirecapError(f"{path}: no pipe channel or stream {unknown[0]!r} (there are: {known})")
    return script


def process_lines(path: str, channels: tuple[str, ...] = ()) -> Iterator[tuple[float, str, dict[str, Any]]]:
    """The lines `load_process` found, read again from the file one at a time."""
    with CaptureReader(path) as reader:
        yield from ProcessScan(channels=channels or None).run(reader)


def play_process(script: ProcessScript, pacer: Pacer, stdout: BinaryIO, stderr: BinaryIO,
                 lines: Iterable[tuple[float, str, dict[str, Any]]] | None = None) -> int:
    """Write every line (`script.lines`, or `lines` as they come) at its time; returns the exit
    status to use (128+N for a signal)."""
    outs = {"stdout": stdout, "stderr": stderr}
    start = time.monotonic()
    due = prev = 0.0  # `Pacer.schedule`, one line at a time
    last = None
    for t, stream, rec in script.lines if lines is None else lines:
        due += pacer.pause(t - prev)
        prev = max(prev, t)
        last = t
        wait = start + due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        f = outs[stream]
        try:
            f.write(line_bytes(rec))
            f.flush()
        except BrokenPipeError:
            outs[stream] = open(os.devnull, "wb")  # noqa: SIM115 - reader went away; finish quietly
    close = script.close or {}
    if close.get("t") is not None and last is not None:
        end = float(close["t"]) - float(script.open.get("t") or 0.0)
        time.sleep(pacer.pause(end - last))
    sig = close.get("signal")
    if sig:
        num = getattr(signal, str(sig), None)
        if isinstance(num, signal.Signals):
            return -int(num)
    code = close.get("exit_code")
    return int(code) if isinstance(code, int) else 0


# Signals that stop a process instead of ending it: sent to ourselves they would leave `replay exec`
# stopped until someone sends SIGCONT (a harness waiting for it hangs), so they are replayed only on request.
STOP_SIGNALS = frozenset(
    getattr(signal, name) for name in ("SIGTSTP", "SIGSTOP", "SIGTTIN", "SIGTTOU") if hasattr(signal, name)
)


def exit_like(status: int, stop_signals: bool = False) -> None:
    """Exit with `status`; a negative one is a signal to die by (as the recorded CLI did).

    A recorded stop signal (SIGTSTP, SIGSTOP, SIGTTIN, SIGTTOU) is not sent to ourselves unless
    `stop_signals`: we exit 128+N instead, the status a shell reports for a job stopped by signal N.
    With `stop_signals` we stop, and exit 128+N once continued (SIGCONT).
    """
    sys.stdout.flush()
    sys.stderr.flush()
    if status < 0:
        signum = -status
        if signum in STOP_SIGNALS and not stop_signals:
            sys.exit(128 + signum)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        time.sleep(1)
        os._exit(128 + signum)
    sys.exit(status)


def run_exec(path: str, speed: float = 1.0, max_wait: float | None = None, channels: tuple[str, ...] = (),
             stop_signals: bool = False) -> None:
    script = load_process(path, channels)
    lines = None if is_stream(path) else process_lines(path, channels)
    status = play_process(script, Pacer(speed, max_wait), sys.stdout.buffer, sys.stderr.buffer, lines)
    exit_like(status, stop_signals)


SHIM_TEMPLATE = """#!{python}
# wirecap replay shim: acts as `{name}` from the recorded session in {capture}
# (made by: wirecap replay shim). Arguments are ignored; the recorded output is replayed.
import sys
from wirecap.replay.process import run_exec
run_exec({capture!r}, speed={speed!r}, max_wait={max_wait!r}, channels={channels!r})
"""


def write_shim(capture: str, out: str, name: str, speed: float = 1.0, max_wait: float | None = None,
               channels: tuple[str, ...] = (), force: bool = False) -> str:
    """Write an executable that replays `capture` as the CLI `name`; returns its path."""
    load_process(capture, channels)  # fail now, not when the shim runs
    if os.path.exists(out) and not force:
        raise WirecapError(f"{out}: exists; refusing to overwrite it (use --force)")
    private_dir(os.path.dirname(os.path.abspath(out)))
    text = SHIM_TEMPLATE.format(python=sys.executable, name=shlex.quote(name), capture=os.path.abspath(capture),
                                speed=float(speed), max_wait=max_wait, channels=tuple(channels))
    try:
        write_private(out, text, executable=True)  # 0700: it goes first on PATH, nobody else may change it
    except OSError as e:
        raise WirecapError(f"{out}: cannot write: {e.strerror or e}") from None
    return out
