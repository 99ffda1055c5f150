"""The terminal as a good citizen: the width tables fit, whether to color, and the pager.

One home for the three decisions every command that prints for a person makes:

- `columns()`: the width to fit. `COLUMNS` when set, else the terminal's when standard output is one,
  else none (a pipe or a file gets whole lines: a script cutting columns must not lose them).
- `color_wanted(when)`: `--color always|never` first, then `NO_COLOR` (https://no-color.org: set and not
  empty turns color off), then `FORCE_COLOR` (set, and not `0` / `false`: on), else whether standard output
  is a terminal (and not `TERM=dumb`).
- `emit(text)`: print, through a pager when standard output is a terminal and the text is taller than it
  (like git: `WIRECAP_PAGER`, else `PAGER`, else `less` with `LESS=FRX` unless `LESS` is set; an empty
  pager or `cat` means none), never when piped; `--no-pager` (or `wirecap --no-pager CMD`) turns it off.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    import subprocess

WHENS = ("auto", "always", "never")


class Settings:
    """What the group's own options said (`wirecap --color never --no-pager CMD`): the defaults of the
    command's options of the same names."""

    color: str | None = None
    pager: bool = True


SETTINGS = Settings()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False


def columns(stream: Any = None) -> int | None:
    """The width tables are fitted to (see the module's docstring); None: no limit."""
    env = os.environ.get("COLUMNS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    stream = sys.stdout if stream is None else stream
    if not _isatty(stream):
        return None
    try:
        return os.get_terminal_size(stream.fileno()).columns or None
    except (OSError, ValueError, AttributeError):
        return None


def _env_on(name: str) -> bool | None:
    """An environment switch: None when unset or empty, False for 0/false/no/off, True otherwise."""
    value = os.environ.get(name)
    if not value:
        return None
    return value.strip().lower() not in ("0", "false", "no", "off")


def color_wanted(when: str | None = None, stream: Any = None) -> bool:
    """Whether to color what goes to `stream` (stdout by default); `when` is --color's value."""
    when = when or SETTINGS.color or "auto"
    if when != "auto":
        return when == "always"
    if os.environ.get("NO_COLOR"):
        return False
    forced = _env_on("FORCE_COLOR")
    if forced is not None:
        return forced
    stream = sys.stdout if stream is None else stream
    return _isatty(stream) and os.environ.get("TERM") != "dumb"


def pager_command() -> str | None:
    """The pager to run (a shell command line), or None for none."""
    for name in ("WIRECAP_PAGER", "PAGER"):
        value = os.environ.get(name)
        if value is not None:
            value = value.strip()
            return None if value in ("", "cat") else value
    return "less"


def _rows_needed(text: str, width: int) -> int:
    return sum(max(1, -(-len(line) // width)) for line in text.split("\n"))


def emit(text: str, *, pager: bool = True, color: bool = False, nl: bool = True) -> None:
    """Print `text` for a person: through the pager when it is wanted (the module's docstring), else
    straight to stdout. ANSI colors are kept only when `color` is true."""
    if nl and not text.endswith("\n"):
        text += "\n"
    if pager and SETTINGS.pager and _isatty(sys.stdout):
        import shutil

        size = shutil.get_terminal_size((80, 24))
        command = pager_command()
        if command and _rows_needed(text.rstrip("\n"), max(1, size.columns)) >= size.lines and _page(command, text):
            return
    click.echo(text, nl=False, color=color)


@contextlib.contextmanager
def paging(pager: bool = True) -> Iterator[IO[bytes]]:
    """Where a command that streams its output (`cat`) writes: the pager's input when standard output is
    a terminal and paging is wanted (`less -F` quits at once when it fits one screen), else stdout's
    bytes. The reader quitting the pager early ends the output quietly."""
    command = pager_command() if pager and SETTINGS.pager and _isatty(sys.stdout) else None
    proc = _start_pager(command) if command is not None else None
    if proc is None or proc.stdin is None:
        yield sys.stdout.buffer
        return
    try:
        yield proc.stdin
    except BrokenPipeError:  # the reader quit the pager: nothing more to show
        pass
    finally:
        with contextlib.suppress(OSError):
            proc.stdin.close()
        _wait(proc)


def _start_pager(command: str) -> subprocess.Popen[bytes] | None:
    """The pager started with its input a pipe, or None when it cannot be."""
    import subprocess  # (only when paging: 5+ ms to import)

    env = dict(os.environ)
    env.setdefault("LESS", "FRX")  # quit if one screen, raw colors, no screen clearing (git's defaults)
    env.setdefault("LV", "-c")
    try:
        return subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)  # noqa: S602 - $PAGER is a command line
    except OSError:
        return None


def _wait(proc: subprocess.Popen[bytes]) -> None:
    """Wait for the pager to end (an interrupt while the reader pages: still wait, the pager has the terminal)."""
    try:
        proc.wait()
    except KeyboardInterrupt:
        proc.wait()


def _page(command: str, text: str) -> bool:
    """Run the pager on `text`; False when it cannot be started (the caller prints instead)."""
    proc = _start_pager(command)
    if proc is None:
        return False
    assert proc.stdin is not None
    try:
        proc.stdin.write(text.encode("utf-8", "replace"))
        proc.stdin.close()
    except (BrokenPipeError, OSError):  # the reader quit the pager early: fine
        pass
    _wait(proc)
    return proc.returncode != 127  # 127: the shell did not find the pager


def color_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """`--color WHEN` (auto, always, never) and its short form `--no-color`."""
    f = click.option("--no-color", "no_color", is_flag=True, help="Same as --color never.")(f)
    return click.option("--color", "color", type=click.Choice(WHENS), default=None, metavar="WHEN",
                        help="Color: auto (a terminal, unless NO_COLOR is set), always, never.")(f)


def pager_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """`--no-pager`: print long output straight to the terminal."""
    return click.option("--no-pager", "no_pager", is_flag=True,
                        help="Do not page long output on a terminal ($PAGER, else less -FRX).")(f)


def when(color: str | None, no_color: bool) -> str | None:
    """--color's value once --no-color is folded in."""
    return "never" if no_color else color


def normalize_color_argument(args: list[str]) -> list[str]:
    """`--color` given alone (the old on/off flag: `wirecap diff --color A B`) means `--color always`:
    the token after it is an argument, not its value, unless it is one of auto/always/never."""
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            return out + args[i:]
        if arg == "--color" and (i + 1 >= len(args) or args[i + 1] not in WHENS):
            arg = "--color=always"
        out.append(arg)
    return out


# --- progress of the commands that read whole captures ----------------------------------------------------

def _open_positions(real: set[str]) -> dict[str, int]:
    """How far this process and its children have read each file of `real` (paths made real): the
    largest offset of a descriptor open on it, from /proc (Linux; elsewhere nothing)."""
    pids = ["self"]
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as f:
                pids += f.read().split()
    except OSError:
        pass
    found: dict[str, int] = {}
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target not in real:
                    continue
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    pos = int(f.readline().split()[1])
            except (OSError, ValueError, IndexError):
                continue
            found[target] = max(found.get(target, 0), pos)
    return found


def ticking(what: str) -> Any:
    """`with console.ticking("report") as progress:` the progress line (`wirecap.cli.progress.Progress`:
    drawn by an interval timer on the main thread), its delay from WIRECAP_PROGRESS_DELAY when set."""
    from wirecap.cli.progress import DELAY, Progress

    delay = _env_float("WIRECAP_PROGRESS_DELAY")
    progress = Progress(what, delay=DELAY if delay is None else delay)
    if progress.enabled and delay == 0:
        progress.draw()  # at once (tests, demos)
    return progress


class ReadingProgress:
    """The progress line of a command that reads captures through the library (which takes paths): how
    far the reading has got is taken from the open files' offsets, so the library needs no hook. Bytes
    of the regular files' total size; for standard input, the time only. `Progress` draws it from an
    interval timer (no thread: `diff` forks its side B only while the process has one).

        with console.reading("stats", paths):
            ...
    """

    def __init__(self, what: str, paths: list[str], enabled: bool | None = None) -> None:
        from wirecap.cli.progress import DELAY, Progress

        files = [p for p in paths if p != "-" and os.path.isfile(p)]
        self.real = {os.path.realpath(p) for p in files}
        self.seen: dict[str, int] = {}
        delay = _env_float("WIRECAP_PROGRESS_DELAY")
        self.progress = Progress(what, enabled=enabled, delay=DELAY if delay is None else delay)
        names = ", ".join(os.path.basename(p) for p in paths)
        self.total = sum(os.path.getsize(p) for p in files) if len(files) == len(paths) else None
        self.progress.stage(f"reading {names}", total=self.total, unit="bytes" if self.total else "")
        self._line = self.progress.line
        self.progress.line = self.line  # type: ignore[method-assign]
        if self.progress.enabled and delay == 0:
            self.progress.draw()  # at once (tests, demos): not only after the first interval

    def line(self) -> str:
        """The progress line, with how far the files have been read now."""
        for path, pos in _open_positions(self.real).items():
            self.seen[path] = max(self.seen.get(path, 0), pos)
        if self.total:
            self.progress.done = sum(self.seen.values())
        return self._line()

    def __enter__(self) -> ReadingProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.close()


def _env_float(name: str) -> float | None:
    try:
        return float(os.environ[name])
    except (KeyError, ValueError):
        return None


def reading(what: str, paths: list[str] | tuple[str, ...], *, quiet_stdout: bool = False) -> ReadingProgress:
    """Progress on standard error while `paths` are read (see ReadingProgress). With `quiet_stdout`
    (a command that streams its output to standard output), none when standard output is the same
    terminal: the line would be drawn between the output's lines."""
    enabled = False if quiet_stdout and _isatty(sys.stdout) else None
    return ReadingProgress(what, list(paths), enabled)
