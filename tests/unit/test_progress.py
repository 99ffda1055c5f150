"""wirecap/cli/progress.py: one line on stderr, only on a terminal, throttled, cleared at the end."""

from __future__ import annotations

import io

import pytest

from wirecap.cli import progress as P


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WIRECAP_PROGRESS", raising=False)
    monkeypatch.setenv("TERM", "xterm")


def test_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    assert P.wanted(Tty()) is True
    assert P.wanted(io.StringIO()) is False  # a pipe, a file, a captured stream
    monkeypatch.setenv("TERM", "dumb")
    assert P.wanted(Tty()) is False
    monkeypatch.setenv("WIRECAP_PROGRESS", "1")
    assert P.wanted(io.StringIO()) is True
    monkeypatch.setenv("WIRECAP_PROGRESS", "0")
    assert P.wanted(Tty()) is False


def test_not_a_terminal_writes_nothing() -> None:
    out = io.StringIO()
    with P.Progress("report", stream=out, delay=0, thread=False) as p:
        p.stage("reading x", total=10, unit="bytes")
        p.add(5)
        p.draw()
    assert out.getvalue() == ""
    assert p.done == 5  # (it still counts)


def test_nothing_before_the_delay_then_a_line_then_cleared() -> None:
    out, clock = Tty(), Clock()
    p = P.Progress("report", stream=out, delay=1.0, thread=False, clock=clock)
    p.stage("reading run.jsonl", total=2048, unit="bytes")
    p.add(1024)
    p.draw()
    assert out.getvalue() == ""  # a quick command prints nothing
    clock.now += 1.5
    p.draw()
    assert out.getvalue() == P.CLEAR + "wirecap report: reading run.jsonl 1.0 KB of 2.0 KB (50%) [2s]"
    p.close()
    assert out.getvalue().endswith(P.CLEAR)  # the line is erased: what follows starts clean
    n = len(out.getvalue())
    p.close()
    assert len(out.getvalue()) == n  # idempotent


def test_counts_without_total_and_iterate() -> None:
    out, clock = Tty(), Clock()
    p = P.Progress("stats", stream=out, delay=0, thread=False, clock=clock)
    p.stage("decoding", unit="records")
    assert list(p.iterate(range(1500))) == list(range(1500))
    assert p.line() == "wirecap stats: decoding 1,500 records [0s]"
    p.stage("writing", total=3000, unit="records")
    p.add(1500)
    assert p.line() == "wirecap stats: writing 1,500 of 3,000 records (50%) [0s]"
    p.stage("sizing")
    assert list(p.iterate(["ab", "cde"], size=len)) == ["ab", "cde"]
    assert p.done == 5
    p.close()
    assert out.getvalue() == ""  # never drawn: nothing to clear


def test_thread_draws_and_close_clears() -> None:
    out = Tty()
    with P.Progress("report", stream=out, delay=0, interval=0.01) as p:
        p.stage("working")
        for _ in range(1000):  # (bounded: at most 10 s)
            if "working" in out.getvalue():
                break
            p._stop.wait(0.01)
    text = out.getvalue()
    assert "wirecap report: working" in text
    assert text.endswith(P.CLEAR)


def test_a_broken_stream_never_fails_the_command() -> None:
    class Broken(Tty):
        def write(self, s: str) -> int:
            raise OSError("EPIPE")

    p = P.Progress("report", stream=Broken(), delay=0, thread=False)
    p.draw()
    assert p.enabled is False
    p.close()


def test_on_the_main_thread_a_timer_draws_not_a_thread() -> None:
    """No thread is started (a command that forks only while it has one thread still can), and the
    previous SIGALRM handler and timer are put back at the end."""
    import signal
    import threading

    def before(signum, frame) -> None:  # pragma: no cover - never fires (its timer is far away)
        pass

    old = signal.signal(signal.SIGALRM, before)
    signal.setitimer(signal.ITIMER_REAL, 500.0, 0)
    try:
        out = Tty()
        threads = threading.active_count()
        with P.Progress("diff", stream=out, delay=0, interval=0.01) as p:
            assert threading.active_count() == threads
            assert signal.getsignal(signal.SIGALRM) == p._tick
            p.stage("working")
            for _ in range(1000):  # (bounded: at most 10 s)
                if "working" in out.getvalue():
                    break
                p._stop.wait(0.01)
        assert "wirecap diff: working" in out.getvalue() and out.getvalue().endswith(P.CLEAR)
        assert signal.getsignal(signal.SIGALRM) is before
        assert 400 < signal.getitimer(signal.ITIMER_REAL)[0] <= 500  # (the earlier timer, running on)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_off_the_main_thread_a_thread_draws() -> None:
    import threading

    out = Tty()
    seen: dict = {}

    def work() -> None:
        with P.Progress("report", stream=out, delay=0, interval=0.01) as p:
            seen["thread"] = p._thread is not None and p._timer is None
            p.stage("elsewhere")
            for _ in range(1000):
                if "elsewhere" in out.getvalue():
                    break
                p._stop.wait(0.01)

    t = threading.Thread(target=work)
    t.start()
    t.join(timeout=20)
    assert seen["thread"] and "wirecap report: elsewhere" in out.getvalue() and out.getvalue().endswith(P.CLEAR)
