"""Small helpers shared by the CLI shells: redaction options, output of records."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import click

from wirecap.capture.redact import Redactor
from wirecap.errors import WirecapError


def redaction_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--no-redact / --redact-key / --redact-pattern, for every command that writes a capture."""
    f = click.option(
        "--redact-pattern",
        "redact_patterns",
        multiple=True,
        metavar="REGEX",
        help="Also redact substrings matching REGEX (repeatable).",
    )(f)
    f = click.option(
        "--redact-key",
        "redact_keys",
        multiple=True,
        metavar="NAME",
        help="Also redact JSON values under key NAME (repeatable).",
    )(f)
    f = click.option(
        "--no-redact",
        is_flag=True,
        help="Write secrets as they are (off by default; the header says so).",
    )(f)
    return f


def make_redactor(no_redact: bool, redact_keys: tuple[str, ...], redact_patterns: tuple[str, ...]) -> Redactor:
    for rx in redact_patterns:
        try:
            re.compile(rx)
        except re.error as e:
            raise WirecapError(f"--redact-pattern {rx!r}: invalid regular expression: {e}") from None
    return Redactor(enabled=not no_redact, extra_keys=tuple(redact_keys), extra_patterns=tuple(redact_patterns))
