"""Progress on standard error, for the operations that take more than about a second.

The one progress helper of the CLI. A `Progress` writes ONE line on stderr (rewritten in place with
`\\r` and erase-line) and only when stderr is a terminal: a pipe, a file, a CI log or a test's captured
stream never sees it. It is throttled (a line at most every `interval` seconds, the first one only after
`delay` seconds, so a quick command prints nothing) and cleared at the end, so what the command prints
afterwards starts on a clean line. The hot path is an attribute increment: the line is drawn every
`interval` by an interval timer (SIGALRM, on the main thread: no thread is started, so a command that
forks only while it has one thread, such as `diff`'s parallel sides, still can; a forked child does not
inherit the timer; the previous handler and timer are put back at the end), or by a daemon thread when
the progress is made off the main thread; never by the caller.

    with Progress("report") as p:
        p.stage("reading run.jsonl", total=os.path.getsize(path), unit="bytes")
        for rec in records:
            p.add(len(line))
        p.stage("writing run.report.html")

`WIRECAP_PROGRESS=0` turns it off, `WIRECAP_PROGRESS=1` on even without a terminal and from the start
(for a person watching a log, and for tests); `TERM=dumb` turns it off.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, TypeVar

T = TypeVar("T")

CLEAR = "\r\x1b[K"
DELAY = 0.8  # seconds before the first line: an operation quicker than that shows nothing
INTERVAL = 0.2  # seconds between two lines


def wanted(stream: IO[str] | None = None) -> bool:
    """Whether progress should be shown on `stream` (stderr by default): a terminal, not `TERM=dumb`,
    unless `WIRECAP_PROGRESS` says 0 (never) or 1 (always)."""
    env = os.environ.get("WIRECAP_PROGRESS", "").strip().lower()
    if env in ("0", "no", "false", "off", "never"):
        return False
    if env in ("1", "yes", "true", "on", "always"):
        return True
    stream = stream if stream is not None else sys.stderr
    try:
        tty = bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False
    return tty and os.environ.get("TERM") != "dumb"


def forced() -> bool:
    """`WIRECAP_PROGRESS=1`: progress on whatever stderr is, from the start (no delay)."""
    return os.environ.get("WIRECAP_PROGRESS", "").strip().lower() in ("1", "yes", "true", "on", "always")


def _amount(n: float, unit: str) -> str:
    if unit == "bytes":
        for u in ("B", "KB", "MB", "GB"):
            if n < 1024 or u == "GB":
                return f"{n:.0f} {u}" if u == "B" else f"{n:.1f} {u}"
            n /= 1024
    return f"{int(n):,}" + (f" {unit}" if unit else "")


class Progress:
    """One progress line on stderr (see the module's docstring). Inert (every method a no-op but the
    counting) when not `enabled`, which defaults to `wanted(stream)`."""

    def __init__(self, what: str, *, stream: IO[str] | None = None, enabled: bool | None = None,
                 delay: float = DELAY, interval: float = INTERVAL, thread: bool = True,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.what = what
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = wanted(self.stream) if enabled is None else enabled
        self.delay = 0.0 if enabled is None and forced() else delay
        self.interval = interval
        self.clock = clock
        self.text = ""  # the current stage
        self.total: float | None = None
        self.unit = ""
        self.done: float = 0  # the hot path: callers add to it
        self.shown = False  # a line is on the terminal (to clear)
        self._start = clock()
        self._lock = threading.RLock()  # (re-entered when the timer's signal lands inside stage())
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._timer: tuple[Any, tuple[float, float]] | None = None  # (previous SIGALRM handler, timer)
        if self.enabled and thread:
            self._start_drawing()

    def _start_drawing(self) -> None:
        first = max(min(self.delay, self.interval), 0.001)
        if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
            old = signal.signal(signal.SIGALRM, self._tick)
            self._timer = (old, signal.setitimer(signal.ITIMER_REAL, first, self.interval))
            return
        self._thread = threading.Thread(target=self._run, name="wirecap-progress", daemon=True)
        self._thread.start()

    def _tick(self, signum: int, frame: Any) -> None:
        self.draw()

    # --- what the caller says ------------------------------------------------------------------------
    def stage(self, text: str, *, total: float | None = None, unit: str = "") -> None:
        """A new stage: its words, and what `done` counts toward (`total`, in `unit`; none: a count)."""
        with self._lock:
            self.text, self.total, self.unit, self.done = text, total, unit, 0

    def add(self, n: float = 1) -> None:
        self.done += n

    def iterate(self, items: Iterable[T], size: Callable[[T], float] | None = None) -> Iterator[T]:
        """`items`, counting each (by `size(item)` when given) as it passes."""
        if size is None:
            for item in items:
                self.done += 1
                yield item
        else:
            for item in items:
                self.done += size(item)
                yield item

    # --- the line ------------------------------------------------------------------------------------
    def line(self) -> str:
        """The line as it would be drawn now."""
        done, total, unit = self.done, self.total, self.unit
        head = f"wirecap {self.what}: {self.text}" if self.text else f"wirecap {self.what}"
        if total:
            pct = min(100.0, 100.0 * done / total)
            count = f"{_amount(done, unit if unit == 'bytes' else '')} of {_amount(total, unit)} ({pct:.0f}%)"
        elif done:
            count = _amount(done, unit)
        else:
            count = ""
        secs = self.clock() - self._start
        line = f"{head} {count} [{secs:.0f}s]" if count else f"{head} [{secs:.0f}s]"
        width = _columns()
        return line if len(line) < width else line[: max(0, width - 2)] + "…"

    def draw(self) -> None:
        """Draw the line now, if enabled and past the delay (the thread calls this every interval)."""
        if not self.enabled or self.clock() - self._start < self.delay:
            return
        with self._lock:
            try:
                self._write(CLEAR + self.line())
                self.shown = True
            except (OSError, ValueError):  # stderr went away: stop drawing, never fail the command
                self.enabled = False
            except RuntimeError:  # (the timer landed inside a write to the same stream: next time)
                pass

    def _write(self, text: str) -> None:
        """To the stream's file descriptor when it has one (a signal handler must not re-enter Python's
        buffered writer), else through the stream."""
        try:
            fd = self.stream.fileno()
        except (AttributeError, OSError, ValueError):
            self.stream.write(text)
            self.stream.flush()
            return
        self.stream.flush()
        os.write(fd, text.encode())

    def _run(self) -> None:
        wait = min(self.delay, self.interval)  # (delay 0: the first line at once)
        while not self._stop.wait(wait):
            self.draw()
            wait = self.interval

    def close(self) -> None:
        """Stop drawing (the previous SIGALRM handler and timer put back) and clear the line (idempotent)."""
        self._stop.set()
        if self._timer is not None:
            old, (left, every) = self._timer
            self._timer = None
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
            if left > 0:
                signal.setitimer(signal.ITIMER_REAL, left, every)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
        self._thread = None
        with self._lock:
            if self.shown:
                try:
                    self._write(CLEAR)
                except (OSError, ValueError, RuntimeError):
                    pass
                self.shown = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _columns() -> int:
    """stderr's width (100 when it has none: a pty whose size was never set says 0)."""
    try:
        cols = os.get_terminal_size(2).columns
    except OSError:
        return 100
    return cols if cols >= 20 else 100
