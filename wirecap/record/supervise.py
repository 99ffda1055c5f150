"""Signals for the recording programs (`wirecap tee`, `wirecap record`): collected by the main thread.

The recorders themselves (`TeeRunner`, `PipeTee`, the proxy) install no signal handlers, so they can
run inside any program. The CLI shells block the signals below before any thread starts (`blocked`:
every thread inherits the mask) and then collect them, with who sent them, through `sigtimedwait` in
the main thread: `supervise` forwards them to a child, `supervise_pipe` stops a pipe copy,
`wait_for_signal` just waits (a recorder with no command). Linux/POSIX only, like the recorders.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Protocol

from wirecap.errors import ExitStatus

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
SI_KERNEL = 0x80  # siginfo si_code of a signal the kernel raised itself (e.g. Ctrl-C on a terminal)
TICK = 0.05  # how often the main thread looks up from waiting for signals while a child runs
IDLE_TICK = 0.2  # ... and while it only waits to be stopped


class _Supervised(Protocol):
    def wait(self, timeout: float | None = None) -> int | None: ...
    def forward_signal(self, signum: int) -> None: ...
    def resize(self) -> None: ...


class _Pipe(Protocol):
    def run(self) -> int: ...
    def forward_signal(self, signum: int) -> None: ...


def waited_signals(pty: bool) -> tuple[int, ...]:
    """The signals a recording program collects: FORWARDED, plus SIGWINCH with a pseudo-terminal."""
    return FORWARDED + ((signal.SIGWINCH,) if pty else ())


@contextlib.contextmanager
def blocked(signals: tuple[int, ...]) -> Iterator[None]:
    """Block `signals` in this thread (and so in every thread started inside), restore the mask after."""
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)


def supervise(runner: _Supervised, waited: tuple[int, ...], use_pty: bool) -> int:
    """Collect signals for the child until it has exited and its output is recorded; its status."""
    while True:
        status = runner.wait(0)
        if status is not None:
            return status
        info = signal.sigtimedwait(waited, TICK)
        if info is None:
            continue
        if info.si_signo == getattr(signal, "SIGWINCH", -1):
            runner.resize()
        elif info.si_code == SI_KERNEL and not use_pty:
            # Raised by our terminal (Ctrl-C, Ctrl-\, hangup) for the whole foreground process
            # group, the child included: it already has it, so do not deliver it twice.
            continue
        else:
            runner.forward_signal(info.si_signo)


def supervise_pipe(pipe: _Pipe, waited: tuple[int, ...]) -> int:
    """Pipe mode: copy until EOF; a signal stops us (cleanly, with `end`) like it stops `tee`."""
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(pipe.run()), name="wirecap-tee-pipe", daemon=True)
    worker.start()
    got: int | None = None
    while worker.is_alive():
        info = signal.sigtimedwait(waited, TICK)
        if info is not None:
            got = info.si_signo
            pipe.forward_signal(got)
    worker.join()
    if got is not None:
        return ExitStatus.killed_by(got)
    return result[0] if result else ExitStatus.INTERNAL_ERROR  # (the copy raised: a bug, already printed)


def wait_for_signal(waited: tuple[int, ...] = FORWARDED) -> int:
    """Wait until one of `waited` arrives (blocked beforehand); returns its number."""
    while True:
        info = signal.sigtimedwait(waited, IDLE_TICK)
        if info is not None:
            return info.si_signo
