"""Run a command (or read a pipe) and record its output while passing it through untouched.

The order of work per chunk is the whole point: read it, take its arrival time, write its complete
lines into the capture (whole records, `write(2)` returned: in the file, safe from a SIGKILL of
this process; a compressed capture flushed), and only then forward the chunk to our own stdout/stderr (one `write`, same bytes).
What the consumer has seen is therefore always in the capture, except the unfinished last line that
the line splitter holds until its `\n` arrives. A slow disk slows the source (the pump reads the
next chunk only when this one is recorded and passed on: backpressure through the pipe), never
skips; a failed or full disk disables the writer (it reports once and counts the rest) and
passthrough carries on at full speed.

Threads: one pump per stream (child stdout, child stderr, our stdin when forwarded), each recording
its own stream on the shared, thread-safe writer, and one waiter that notices the child's exit.
Nothing here installs signal handlers, so a `TeeRunner` can run inside a program whose main thread
is busy (e.g. `wirecap record -- CMD` with mitmproxy in another thread); the CLI forwards signals
with `forward_signal`.
"""

from __future__ import annotations

import datetime as _dt
import errno
import fcntl
import os
import re
import select
import signal
import stat
import struct
import subprocess
import sys
import termios
import threading
import tty
from collections.abc import Callable
from typing import IO, Any

from wirecap.capture.records import Direction
from wirecap.capture.redact import chunk_is_clean
from wirecap.capture.writer import CaptureWriter
from wirecap.errors import ExitStatus, WirecapError
from wirecap.record.lines import LineSplitter

CHUNK = 256 * 1024  # one read; big enough that a fast producer costs few syscalls per MB
POLL_MS = 200  # how often a pump blocked on a silent pipe checks whether it should give up

# Environment values recorded as they are; every other variable is recorded by name with value null.
ENV_VALUE_NAMES = frozenset(
    {"TERM", "COLORTERM", "TERM_PROGRAM", "LANG", "LANGUAGE", "SHELL", "PWD", "TZ", "NO_COLOR",
     "FORCE_COLOR", "CI", "COLUMNS", "LINES", "NODE_ENV"}
)
ENV_VALUE_PREFIXES = ("LC_",)
ENV_VALUE_SUFFIXES = ("_BASE_URL",)
_SECRETISH = re.compile(r"KEY|TOKEN|SECRET|PASSW|AUTH|COOKIE|CREDENTIAL|SESSION", re.IGNORECASE)
_URL_USERINFO = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://[^/?#]*@")


def env_record(env: dict[str, str]) -> dict[str, str | None]:
    """Names of all variables; values only where they are known to be harmless and useful."""
    out: dict[str, str | None] = {}
    for name in sorted(env):
        value: str | None = None
        if not _SECRETISH.search(name) and (
            name in ENV_VALUE_NAMES or name.startswith(ENV_VALUE_PREFIXES) or name.endswith(ENV_VALUE_SUFFIXES)
        ):
            value = env[name]
            if _URL_USERINFO.match(value):  # https://user:password@host/...
                value = None
        out[name] = value
    return out


def exit_status(returncode: int) -> int:
    """A shell-style status: the exit code, or 128+N for a child killed by signal N."""
    return ExitStatus.killed_by(-returncode) if returncode < 0 else returncode


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"SIG{signum}"


def _now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class _Out:
    """Where one stream is forwarded: a file descriptor (one `write` per chunk) or a binary file."""

    def __init__(self, target: IO[bytes] | int | None, lock: threading.Lock | None = None) -> None:
        self.fd: int | None = None
        self.file: IO[bytes] | None = None
        if isinstance(target, int):
            self.fd = target
        elif target is not None:
            try:
                self.fd = target.fileno()
                target.flush()
            except (AttributeError, OSError, ValueError):
                self.file = target
        self.lock = lock
        self.closed = False
        self.error: str | None = None

    def write(self, data: bytes) -> bool:
        """Forward all of `data`; False once the reader is gone (EPIPE) or the target broke."""
        if self.closed:
            return False
        try:
            if self.lock is not None:
                with self.lock:
                    self._write(data)
            else:
                self._write(data)
        except OSError as e:
            self.closed = True
            if e.errno != errno.EPIPE:
                self.error = e.strerror or str(e)
            return False
        return True

    def _write(self, data: bytes) -> None:
        if self.fd is not None:
            try:
                n = os.write(self.fd, data)
            except BlockingIOError:  # someone made our stdout non-blocking: wait, never drop
                n = 0
            if n < len(data):
                view = memoryview(data)[n:]
                while view:
                    try:
                        view = view[os.write(self.fd, view):]
                    except BlockingIOError:
                        select.select([], [self.fd], [], 1.0)
        else:
            assert self.file is not None
            self.file.write(data)
            self.file.flush()


class _Stream:
    """Recording state of one pipe channel (touched only by the pump of that stream)."""

    __slots__ = ("ch", "dir", "splitter", "bytes", "lines", "extra", "broken")

    def __init__(self, ch: str, direction: Direction) -> None:
        self.ch = ch
        self.dir: Direction = direction
        self.splitter = LineSplitter()
        self.bytes = 0
        self.lines = 0
        self.extra: dict[str, Any] = {}
        self.broken = False  # recording this stream failed unexpectedly: passthrough only from then on


class _TeeBase:
    """The pumps (read, record, forward) shared by command mode and pipe mode."""

    def __init__(self, writer: CaptureWriter, stdout: Any = None, stderr: Any = None) -> None:
        self.writer = writer
        self._err_lock = threading.Lock()
        self.out = _Out(stdout if stdout is not None else sys.stdout.fileno())
        self.err = _Out(stderr if stderr is not None else sys.stderr.fileno(), self._err_lock)
        self._abandon = threading.Event()  # stop waiting for EOF (child gone, we were told to stop)

    # --- warnings -------------------------------------------------------------------------------
    def warn(self, message: str) -> None:
        """One line on our stderr, never inside a chunk of the child's stderr."""
        try:
            with self._err_lock:
                os.write(self.err.fd if self.err.fd is not None else 2, f"wirecap: warning: {message}\n".encode())
        except OSError:
            pass

    # --- pumps (one thread per stream) ----------------------------------------------------------
    def _pump(self, src: int, out: _Out | None, stream: _Stream, on_closed: Callable[[], bool] | None) -> None:
        """Read `src` until EOF; record each chunk, then forward it.

        `on_closed` runs when the downstream reader goes away; it returns True to stop reading
        (so the writer of `src` sees a broken pipe, as it would without us).
        """
        read, now, record, poller = os.read, self.writer.now, self._record, select.poll()
        poller.register(src, select.POLLIN | select.POLLHUP | select.POLLERR)
        abandon = self._abandon.is_set
        try:
            while not abandon():
                if not poller.poll(POLL_MS):
                    continue
                try:
                    chunk = read(src, CHUNK)
                except OSError as e:
                    if e.errno != errno.EIO:  # EIO: the pty's other side is gone, i.e. EOF
                        self.writer.error(f"reading {stream.ch}: {e.strerror or e}", where="tee.pump", ch=stream.ch)
                    break
                if not chunk:
                    break
                record(stream, now(), chunk)  # in the capture before the consumer can see it
                if out is not None and not out.write(chunk):
                    if out.error and out.fd != 2:
                        self.warn(f"cannot forward {stream.ch}: {out.error}")
                    stream.extra["downstream_closed"] = True
                    out = None
                    if on_closed is not None and on_closed():
                        break
        finally:
            self._finish(stream, now())

    # --- recording (on the pump's thread) -------------------------------------------------------
    def _record(self, stream: _Stream, t: float, data: bytes) -> None:
        """Write the complete lines of one chunk; the rest of an unfinished line waits in the splitter.

        Never raises: an unexpected failure is reported once (stderr and an `error` record) and the
        stream is passed through unrecorded from then on, since passthrough must never stop.
        """
        stream.bytes += len(data)
        if stream.broken:
            return
        try:
            with self.writer.batch():
                self._record_lines(stream, t, data)
        except Exception as e:  # noqa: BLE001 - a recorder bug must not stop the traffic
            self._broke(stream, e)

    def _record_lines(self, stream: _Stream, t: float, data: bytes) -> None:
        w = self.writer
        # One secret screen for the whole chunk instead of one per record; a line that began in
        # an earlier chunk may hide a secret across the boundary, so it is screened on its own.
        clean = chunk_is_clean(w.redactor, data)
        joined = stream.splitter.pending > 0
        payloads = stream.splitter.feed_lf(data)
        if payloads is not None:  # the usual chunk: whole lines ending in "\n", no CR
            stream.lines += len(payloads)
            if joined:
                w.msg_payloads(stream.ch, stream.dir, payloads[:1], t)
                payloads = payloads[1:]
            w.msg_payloads(stream.ch, stream.dir, payloads, t, screened=clean)
            return
        lines = stream.splitter.feed(data)
        if not lines:
            return
        stream.lines += len(lines)
        if joined:
            w.msg_lines(stream.ch, stream.dir, lines[:1], t)
            lines = lines[1:]
        w.msg_lines(stream.ch, stream.dir, lines, t, screened=clean)

    def _finish(self, stream: _Stream, t: float) -> None:
        """End of a stream: its unfinished last line (eol ""), then its `close` record."""
        w = self.writer
        try:
            if not stream.broken:
                with w.batch():
                    for payload, eol in stream.splitter.close():
                        w.msg(stream.ch, stream.dir, payload, t, eol=eol)
                        stream.lines += 1
            if stream.broken:
                stream.extra["recording_failed"] = True
            w.close_channel(stream.ch, t, bytes=stream.bytes, lines=stream.lines, **stream.extra)
        except Exception as e:  # noqa: BLE001 - as in `_record`
            self._broke(stream, e)

    def _broke(self, stream: _Stream, e: Exception) -> None:
        if stream.broken:
            return
        stream.broken = True
        message = f"recording {stream.ch} failed: {type(e).__name__}: {e}"
        self.warn(f"{message} (output still passes through, unrecorded)")
        try:
            self.writer.error(message, where="tee.record", ch=stream.ch)
        except Exception:  # noqa: BLE001
            pass


class TeeRunner(_TeeBase):
    """Run `argv`, forward its output byte for byte, record it on `writer` (which it does not close)."""

    def __init__(
        self,
        writer: CaptureWriter,
        argv: list[str],
        *,
        pty: bool = False,
        record_stdin: bool = False,
        dialect: str | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        stdout: Any = None,
        stderr: Any = None,
        stdin: Any = None,
    ) -> None:
        if not argv:
            raise WirecapError("no command given (usage: wirecap tee -o CAP -- CMD ARGS...)")
        super().__init__(writer, stdout, stderr)
        self.argv = list(argv)
        self.pty = pty
        self.record_stdin = record_stdin
        self.dialect = dialect
        self.env = dict(os.environ if env is None else env)
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self.stdin_fd = stdin if isinstance(stdin, int) else (stdin.fileno() if stdin is not None else 0)
        self.proc: subprocess.Popen[bytes] | None = None
        self.status: int | None = None
        self._done = threading.Event()
        self._threads: list[threading.Thread] = []
        self._master: int | None = None
        self._saved_tty: list[Any] | None = None
        self._child_exited = threading.Event()

    # --- starting -------------------------------------------------------------------------------
    def start(self) -> None:
        """Open the channels, start the child, then its pumps and the waiter. A child that cannot be
        started is a WirecapError with the shell's status (127 not found, 126 not runnable) and an
        `error` record in the capture."""
        w = self.writer
        # The child's API keys (ANTHROPIC_API_KEY, ...) are recorded by name only; learned here, they are
        # also redacted wherever the child prints or sends them (even in a shape no rule knows).
        w.redactor.learn_env(self.env)
        self.proc_ch = w.new_channel("proc")
        self.stdout_ch = w.new_channel("stdout")
        self.stderr_ch = w.new_channel("stderr")
        self.stdin_ch = w.new_channel("stdin") if self.record_stdin else None
        t0 = w.now()
        started = _now_iso()
        self.proc = self._popen()
        self.t_start = t0
        self._open_channels(t0, started)
        self._start_pumps()

    def _popen(self) -> subprocess.Popen[bytes]:
        """The child, on a new pseudo-terminal (`pty`) or on pipes; our ends stay with us."""
        slave = None
        kwargs: dict[str, Any] = {}
        if self.pty:
            self._master, slave = os.openpty()
            os.set_inheritable(self._master, False)
            _set_winsize(slave, _get_winsize(self.stdin_fd) or (24, 80, 0, 0))
            kwargs.update(stdin=slave, stdout=slave, start_new_session=True, preexec_fn=_pty_child_setup)
        else:
            kwargs.update(stdin=subprocess.PIPE if self.record_stdin else self.stdin_fd, stdout=subprocess.PIPE)
            if signal.pthread_sigmask(signal.SIG_BLOCK, []):
                kwargs["preexec_fn"] = _unblock_signals  # our CLI blocks signals to sigwait them
        try:
            return subprocess.Popen(
                self.argv, stderr=subprocess.PIPE, env=self.env, cwd=self.cwd, bufsize=0, close_fds=True, **kwargs
            )
        except OSError as e:
            if self._master is not None:
                os.close(self._master)
                self._master = None
            self.writer.error(f"cannot run {self.argv[0]}: {e.strerror or e}", where="tee.start")
            status = ExitStatus.COMMAND_NOT_FOUND if isinstance(e, FileNotFoundError) else ExitStatus.CANNOT_EXECUTE
            raise WirecapError(f"{self.argv[0]}: {e.strerror or e}", exit_code=status) from None
        finally:
            if slave is not None:
                os.close(slave)

    def _open_channels(self, t0: float, started: str) -> None:
        assert self.proc is not None
        w = self.writer
        hint = {"dialect": self.dialect} if self.dialect else {}
        w.open(self.proc_ch, "process", t0, argv=self.argv, cwd=self.cwd, env=env_record(self.env),
               pid=self.proc.pid, started=started, **({"pty": True} if self.pty else {}), **hint)
        w.open(self.stdout_ch, "pipe", t0, proc=self.proc_ch, stream="stdout", **hint)
        w.open(self.stderr_ch, "pipe", t0, proc=self.proc_ch, stream="stderr")
        if self.stdin_ch:
            w.open(self.stdin_ch, "pipe", t0, proc=self.proc_ch, stream="stdin", **hint)

    def _start_pumps(self) -> None:
        """One pump per stream (stdout, stderr, and stdin when forwarded through us), then the waiter."""
        assert self.proc is not None and self.proc.stderr is not None
        out_stream = _Stream(self.stdout_ch, "s2c")
        err_stream = _Stream(self.stderr_ch, "s2c")
        if self.pty:
            assert self._master is not None
            src_out = self._master
            close_out = None  # a terminal has no broken pipe: keep draining and recording
        else:
            assert self.proc.stdout is not None
            src_out = self.proc.stdout.fileno()
            close_out = self._closer(self.proc.stdout)
            _grow_pipe(src_out)
        self._spawn(self._pump, src_out, self.out, out_stream, close_out)
        self._spawn(self._pump, self.proc.stderr.fileno(), self.err, err_stream, self._closer(self.proc.stderr))
        if self.pty or self.record_stdin:
            self._spawn(self._stdin_pump)
        self._waiter = threading.Thread(target=self._wait_child, name="wirecap-tee-wait", daemon=True)
        self._waiter.start()

    def _spawn(self, target: Callable[..., None], *args: Any) -> None:
        th = threading.Thread(target=target, args=args, name=f"wirecap-tee-{len(self._threads)}", daemon=True)
        self._threads.append(th)
        th.start()

    @staticmethod
    def _closer(pipe: IO[bytes]) -> Callable[[], bool]:
        """Downstream is gone: close our end so the child's next write breaks, as with a direct pipe."""

        def close() -> bool:
            try:
                pipe.close()
            except OSError:
                pass
            return True

        return close

    # --- stdin ------------------------------------------------------------------------------------
    def _stdin_pump(self) -> None:
        """Forward our stdin to the child (pipe or pty), recording it when asked."""
        dst = self._stdin_target()
        stream = _Stream(self.stdin_ch, "c2s") if self.stdin_ch else None
        poller = select.poll()
        poller.register(self.stdin_fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        now = self.writer.now
        last = b"\n"
        try:
            while not self._child_exited.is_set():
                if not poller.poll(POLL_MS):
                    continue
                try:
                    chunk = os.read(self.stdin_fd, CHUNK)
                except OSError:
                    chunk = b""
                t = now()
                if not chunk:
                    self._send_eof(dst, last)
                    break
                if stream is not None:
                    self._record(stream, t, chunk)  # recorded before the child can act on it
                if not _write_all(dst, chunk):
                    break  # the child closed its stdin (or exited): stop reading ours
                last = chunk
        finally:
            self._close_child_stdin()
            if stream is not None:
                self._finish(stream, now())

    def _stdin_target(self) -> int:
        """Where our stdin goes: the pty (our terminal switched to raw mode: keystrokes go to the child's
        terminal as typed, restored when the child exits) or the child's stdin pipe."""
        assert self.proc is not None
        if not self.pty:
            assert self.proc.stdin is not None
            return self.proc.stdin.fileno()
        assert self._master is not None
        if os.isatty(self.stdin_fd):
            try:
                self._saved_tty = termios.tcgetattr(self.stdin_fd)
                tty.setraw(self.stdin_fd)
            except termios.error:
                self._saved_tty = None
        return self._master

    def _send_eof(self, dst: int, last: bytes) -> None:
        """End of our input. On a pty: the terminal's EOF character (twice after a partial line); a pipe
        is closed by `_close_child_stdin`."""
        if not self.pty:
            return
        try:
            eof = termios.tcgetattr(dst)[6][termios.VEOF]
            os.write(dst, eof if last.endswith(b"\n") else eof * 2)
        except (OSError, termios.error):
            pass

    def _close_child_stdin(self) -> None:
        assert self.proc is not None
        if not self.pty and self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    # --- waiting and signals ----------------------------------------------------------------------
    def _wait_child(self) -> None:
        assert self.proc is not None
        rc = self.proc.wait()
        t_exit = self.writer.now()
        self._child_exited.set()
        for th in self._threads:
            th.join()
        self._restore_tty()
        fields: dict[str, Any] = {"duration": round(t_exit - self.t_start, 6)}
        if rc < 0:
            fields["signal"] = _signal_name(-rc)
        else:
            fields["exit_code"] = rc
        self.writer.close_channel(self.proc_ch, t_exit, **fields)
        for f in (self.proc.stdout, self.proc.stderr):
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass
        if self._master is not None:
            os.close(self._master)
            self._master = None
        self.status = exit_status(rc)
        self._done.set()

    def wait(self, timeout: float | None = None) -> int | None:
        """The child's status once it has exited and all its output is recorded (None on timeout)."""
        if not self._done.wait(timeout):
            return None
        return self.status

    def forward_signal(self, signum: int) -> None:
        """Pass a signal to the child; once the child is gone, stop waiting for its pipes' EOF."""
        if self.proc is None:
            return
        if self._child_exited.is_set() or self.proc.poll() is not None:
            self._abandon.set()
            return
        try:
            if self.pty:
                os.killpg(self.proc.pid, signum)  # the child leads its own session on the pty
            else:
                os.kill(self.proc.pid, signum)
        except ProcessLookupError:
            pass

    def resize(self) -> None:
        """Copy our terminal's window size to the child's (SIGWINCH follows from the kernel)."""
        if self._master is None:
            return
        size = _get_winsize(self.stdin_fd)
        if size is not None:
            try:
                _set_winsize(self._master, size)
            except OSError:
                pass

    def _restore_tty(self) -> None:
        if self._saved_tty is not None:
            try:
                termios.tcsetattr(self.stdin_fd, termios.TCSADRAIN, self._saved_tty)
            except termios.error:
                pass
            self._saved_tty = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None


class PipeTee(_TeeBase):
    """`CMD | wirecap tee -o CAP`: our stdin to our stdout, recorded as a `stdout` channel."""

    def __init__(self, writer: CaptureWriter, *, dialect: str | None = None, stdin: int = 0,
                 stdout: Any = None, stderr: Any = None) -> None:
        super().__init__(writer, stdout, stderr)
        self.dialect = dialect
        self.stdin_fd = stdin
        self.downstream_closed = False

    def run(self) -> int:
        """Until EOF or until downstream closes (then stop, like `tee`: the producer sees a broken pipe).

        Returns 0, or 141 (128+SIGPIPE, what `tee` dies with) when downstream closed early.
        """
        w = self.writer
        proc_ch, ch = w.new_channel("proc"), w.new_channel("stdout")
        hint = {"dialect": self.dialect} if self.dialect else {}
        # The producer upstream is unknown to us: its process channel has no argv and no pid.
        t0 = w.now()
        w.open(proc_ch, "process", t0, pid=None, upstream=True, started=_now_iso(), **hint)
        w.open(ch, "pipe", t0, proc=proc_ch, stream="stdout", source="stdin", **hint)
        stream = _Stream(ch, "s2c")

        def closed() -> bool:
            self.downstream_closed = True
            return True

        try:
            if stat.S_ISFIFO(os.fstat(self.stdin_fd).st_mode):
                _grow_pipe(self.stdin_fd)
        except OSError:
            pass
        self._pump(self.stdin_fd, self.out, stream, closed)
        t_end = w.now()
        w.close_channel(proc_ch, t_end, exit_code=None, duration=round(t_end - t0, 6))
        return ExitStatus.killed_by(signal.SIGPIPE) if self.downstream_closed else ExitStatus.OK

    def forward_signal(self, signum: int) -> None:
        self._abandon.set()


def _write_all(fd: int, data: bytes) -> bool:
    """Write all of `data` to `fd`; False when the reader is gone (or the write failed)."""
    try:
        n = os.write(fd, data)
        while n < len(data):
            n += os.write(fd, data[n:])
    except OSError:
        return False
    return True


def _grow_pipe(fd: int) -> None:
    """Let the child's pipe hold a whole read (CHUNK): while we record one chunk, the child can write
    the next at full size instead of stalling on the default 64 KiB, and we read it in one call."""
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, CHUNK)
    except (OSError, AttributeError):  # not Linux, or above /proc/sys/fs/pipe-max-size: keep the default
        pass


# --- terminal helpers (run in the parent, or in the child before exec) -----------------------------
def _get_winsize(fd: int) -> tuple[int, int, int, int] | None:
    try:
        if not os.isatty(fd):
            return None
        rows, cols, xp, yp = struct.unpack("HHHH", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))
    except OSError:
        return None
    return (rows, cols, xp, yp) if rows and cols else None


def _set_winsize(fd: int, size: tuple[int, int, int, int]) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", *size))


def _unblock_signals() -> None:
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def _pty_child_setup() -> None:
    """In the child after setsid(): unblock signals and make the pty our controlling terminal."""
    _unblock_signals()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
