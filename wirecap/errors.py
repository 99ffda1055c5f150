"""Errors that the CLI turns into one clear line and a non-zero exit (never a traceback), and the exit
statuses every command uses (`ExitStatus`)."""

from __future__ import annotations

import enum


class ExitStatus(enum.IntEnum):
    """What `wirecap`'s exit status means, for every command (docs/commands/reference.md).

    A caller may rely on these values: scripts test them. `sys.exit(ExitStatus.X)` exits with the
    integer; a command that runs another program (`tee`, `record -- CMD`, `replay exec`) exits with
    that program's own status instead, or `killed_by(N)` when it died of signal N.
    """

    OK = 0
    FINDING = 1  # validate found a problem of the asked severity
    DIFFERENCE = 1  # diff: the captures differ (the same status as FINDING)
    ERROR = 2  # bad input, a usage error, a refused operation
    INTERNAL_ERROR = 3  # an unexpected exception: a bug in wirecap, never bad input
    CANNOT_EXECUTE = 126  # the command given after `--` exists but could not be run (shell convention)
    COMMAND_NOT_FOUND = 127  # the command given after `--` was not found (shell convention)
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)

    @staticmethod
    def killed_by(signum: int) -> int:
        """The shell's status of a process ended by signal `signum`: 128 + N."""
        return 128 + signum


class WirecapError(Exception):
    """A user-facing failure: bad input, a refused operation. `str()` is the one-line message;
    `exit_code` the status the CLI exits with (ERROR unless the raiser says otherwise)."""

    exit_code: int = ExitStatus.ERROR

    def __init__(self, message: str = "", *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class CaptureFormatError(WirecapError):
    """The file is not a capture wirecap can read (bad header, future version)."""
