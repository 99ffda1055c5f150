"""Run `wirecap ARGS` inside the calling Python process, its output captured as bytes.

What the tests (`tests/conftest.py: run_wirecap`) and the golden snapshot (`tools/golden.py`) use
instead of a subprocess: no interpreter start, the same `wirecap.cli.main` a user runs. A caller may
rely on: standard input, output and error are replaced for the run (stdin from `input`, empty by
default; stdout and stderr as UTF-8 text over byte buffers, as a pipe would get them) and restored
after, as are the environment variables in `env` and the working directory (`cwd`); the status is
the one the program would exit with. Not for commands that start children, block or send signals,
or write to file descriptors 1 and 2 directly (`tee`, `record`, `replay exec` / `serve`): run those
as a real process.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def captured_io(input: bytes | None = None) -> Iterator[tuple[io.BytesIO, io.BytesIO]]:
    """sys.stdin/stdout/stderr over byte buffers for the duration; yields (stdout, stderr) buffers."""
    out, err = io.BytesIO(), io.BytesIO()
    saved = sys.stdout, sys.stderr, sys.stdin
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    sys.stdin = io.TextIOWrapper(io.BytesIO(input or b""), encoding="utf-8")
    try:
        yield out, err
    finally:
        for stream in (sys.stdout, sys.stderr, sys.stdin):
            with contextlib.suppress(ValueError):
                stream.flush()
            with contextlib.suppress(ValueError):
                stream.detach()  # keep the BytesIO readable when the wrapper is collected
        sys.stdout, sys.stderr, sys.stdin = saved


@contextlib.contextmanager
def environment(env: dict[str, str] | None, cwd: str | None = None) -> Iterator[None]:
    """The variables of `env` set (and `cwd` entered) for the duration; both put back after."""
    saved_env = {k: os.environ.get(k) for k in (env or {})}
    saved_cwd = os.getcwd()
    os.environ.update(env or {})
    try:
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(saved_cwd)
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run(argv: list[str], *, input: bytes | None = None, env: dict[str, str] | None = None,
        cwd: str | None = None) -> tuple[int, bytes, bytes]:
    """`wirecap ARGV` in this process: (exit status, stdout bytes, stderr bytes)."""
    from wirecap.cli import main

    with environment(env, cwd), captured_io(input) as (out, err):
        try:
            main(list(argv))
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    return int(code), out.getvalue(), err.getvalue()
