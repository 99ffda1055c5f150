"""Errors that the CLI turns into one clear line and a non-zero exit (never a traceback)."""


class WirecapError(Exception):
    """A user-facing failure: bad input, a refused operation. `str()` is the one-line message."""

    exit_code = 2


class CaptureFormatError(WirecapError):
    """The file is not a capture wirecap can read (bad header, future version)."""
