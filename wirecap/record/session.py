"""One recording session: the proxy and (optionally) a command under tee, writing ONE capture.

`wirecap record` is a thin shell over `RecordSession`; tests and other programs use it in-process:

    with RecordSession("cap.jsonl", reverse="http://127.0.0.1:4242") as s:   # listening when entered
        runner = s.spawn(["curl", s.url])        # optional: a command pointed at the proxy, under tee
        status = runner.wait()
    # left: proxy stopped, capture closed (`end` written)

What a caller may rely on: the options are checked when the session is made (`WirecapError`, one
line, before anything is opened); `start()` returns once the proxy listens (`port`, `url`), or raises
and leaves no capture behind; `stop()` is idempotent and always closes the capture; the proxy and
the command's output share the capture's one clock. The session installs no signal handlers: the
CLI collects signals itself (`wirecap.record.supervise`). mitmproxy allows one proxy per process,
so one session runs at a time.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
from collections.abc import Callable, Sequence
from typing import Any

from wirecap.capture.redact import Redactor
from wirecap.capture.writer import CaptureWriter
from wirecap.errors import ExitStatus, WirecapError
from wirecap.record.proxy import ProxyHandle
from wirecap.record.tee import TeeRunner

PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]", "127.0.0.0/8", ".localhost", "*.localhost"}
DEFAULT_PORT = 8080  # a standalone proxy's port; with a command, a free one (0)


def parse_listen(spec: str | None, default_port: int) -> tuple[str, int]:
    """`HOST:PORT`, `PORT`, `[::1]:PORT` or `HOST` -> (host, port). Loopback unless told otherwise."""
    if not spec:
        return "127.0.0.1", default_port
    m = re.fullmatch(r"\[([^\]]+)\](?::(\d+))?|([^:]*):(\d+)|(\d+)|([^:]+)", spec.strip())
    if not m:
        raise WirecapError(f"--listen {spec!r}: expected HOST:PORT or PORT")
    v6host, v6port, host, port, only_port, only_host = m.groups()
    h = v6host or host or only_host or "127.0.0.1"
    p = v6port or port or only_port
    portn = int(p) if p is not None else default_port
    if not 0 <= portn <= 65535:
        raise WirecapError(f"--listen {spec!r}: port out of range")
    return h, portn


def check_listen(host: str, port: int) -> None:
    """Fail early, in one line, when the proxy could not listen there (mitmproxy would print its own
    multi-line error that suggests one of its options, not ours)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, _t, _p, _c, addr = infos[0]
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(addr)
    except OSError as e:
        why = e.strerror if e.strerror else str(e)
        raise WirecapError(f"--listen {host}:{port}: cannot listen there: {why}") from None


def parse_size(spec: str) -> int:
    """`--body-cap`: `1048576`, `512k`, `16m`, `1g` (a trailing `b` allowed) -> bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)[bB]?\s*", spec)
    if not m:
        raise WirecapError(f"--body-cap {spec!r}: expected a size such as 1048576, 512k or 16m")
    return int(m.group(1)) * {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[m.group(2).lower()]


def proxy_mode(reverse: str | None, upstream: str | None) -> str:
    """The mitmproxy mode for `--reverse URL` / `--upstream URL` / neither (a regular proxy)."""
    from wirecap.record.proxy import normalize_mode

    if reverse and upstream:
        raise WirecapError("--reverse and --upstream cannot be combined")
    mode = "regular"
    if reverse:
        if not re.match(r"^https?://", reverse):
            raise WirecapError(f"--reverse {reverse!r}: expected http://HOST:PORT or https://HOST[:PORT]")
        mode = f"reverse:{reverse}"
    if upstream and not re.match(r"^https?://[^/:]+(:\d+)?/?$", upstream):
        raise WirecapError(f"--upstream {upstream!r}: expected http://HOST:PORT (the other proxy)")
    return normalize_mode(mode, upstream)


def child_env(base: dict[str, str], proxy_url: str | None, base_url_envs: tuple[str, ...],
              reverse_url: str | None) -> tuple[dict[str, str], dict[str, str]]:
    """The command's environment and the part of it wirecap set (to print)."""
    from wirecap.record.ca import ca_env

    env = dict(base)
    told: dict[str, str] = {}
    if proxy_url:
        for name in PROXY_VARS:
            told[name] = proxy_url
        for name in ("NO_PROXY", "no_proxy"):
            if name in env:
                kept = [x for x in env[name].split(",") if x.strip() and x.strip().lower() not in LOOPBACK_NAMES]
                if kept:
                    told[name] = ",".join(kept)
                else:
                    env.pop(name)
        told.update(ca_env())
    if reverse_url:
        told["WIRECAP_PROXY_URL"] = reverse_url
        for name in base_url_envs:
            told[name] = reverse_url
    env.update(told)
    return env, told


def check_command(command: Sequence[str]) -> None:
    """A command that is not on PATH fails now (exit 127, as a shell would), before the proxy starts."""
    if os.sep not in command[0] and shutil.which(command[0]) is None:
        raise WirecapError(f"{command[0]}: command not found", exit_code=ExitStatus.COMMAND_NOT_FOUND)


def _remove_if_empty(path: str) -> None:
    """A proxy that never started leaves no capture behind (so a retry needs no --force)."""
    try:
        with open(path, "rb") as f:
            lines = f.read(1 << 20).count(b"\n")
        if lines <= 2:
            os.unlink(path)
    except OSError:
        pass


def _quiet(line: str) -> None:
    pass


class RecordSession:
    """The proxy (regular, `reverse` to a server, or through an `upstream` proxy) recording into
    `output`, plus at most one command run under tee (`spawn`) into the same capture.

    `listen` is `HOST:PORT` (default 127.0.0.1:8080; port 0 picks a free one). `say` gets wirecap's
    progress lines (without the `wirecap: ` prefix); `proxy_log` mitmproxy's warnings (None: silent);
    `on_error` the first failure to write the capture (traffic keeps passing either way).
    """

    def __init__(self, output: str, *, reverse: str | None = None, upstream: str | None = None,
                 listen: str | None = None, default_port: int = DEFAULT_PORT, port_file: str | None = None,
                 body_cap: int = 0, ssl_insecure: bool = False, force: bool = False,
                 redactor: Redactor | None = None, say: Callable[[str], None] = _quiet,
                 proxy_log: Callable[[str], None] | None = None,
                 on_error: Callable[[str], None] | None = None) -> None:
        self.output = output
        self.reverse = reverse
        self.upstream = upstream
        self.mode = proxy_mode(reverse, upstream)
        self.host, self.requested_port = parse_listen(listen, default_port)
        check_listen(self.host, self.requested_port)
        self.port_file = port_file
        self.body_cap = body_cap
        self.ssl_insecure = ssl_insecure
        self.force = force
        self.redactor = redactor
        self.say = say
        self.proxy_log = proxy_log
        self.on_error = on_error
        self.writer: CaptureWriter | None = None
        self.proxy: ProxyHandle | None = None
        self.runner: TeeRunner | None = None
        self._port: int | None = None

    # --- lifecycle ----------------------------------------------------------------------------------
    def start(self) -> RecordSession:
        """Open the capture and start the proxy; returns once it listens. On failure nothing is left
        running and a capture with no traffic is removed."""
        from wirecap.capture.writer import default_origin, open_writer
        from wirecap.record.proxy import start_proxy

        self.writer = open_writer(self.output, origin=default_origin("record"), redactor=self.redactor,
                                  force=self.force, on_error=self.on_error)
        try:
            self.proxy = start_proxy(self.writer, mode=self.mode, listen_host=self.host,
                                     listen_port=self.requested_port, body_cap=self.body_cap,
                                     ssl_insecure=self.ssl_insecure, log=self.proxy_log)
        except BaseException:
            self.writer.close()
            self.writer = None
            _remove_if_empty(self.output)
            raise
        self._port = self.proxy.port
        try:
            if self.port_file:
                from wirecap.fsmode import write_private

                write_private(self.port_file, f"{self._port}\n")
        except BaseException:
            self.stop()
            raise
        self.say(f"{self._what()} listening on {self.url}; recording to {self.output}")
        return self

    def stop(self) -> None:
        """Stop the proxy (live connections end, the addon finishes), then close the capture. A command
        still running is not waited for: `spawn`'s runner is the caller's to wait on first."""
        proxy, writer = self.proxy, self.writer
        self.proxy = self.writer = None
        try:
            if proxy is not None:
                proxy.stop()
        finally:
            if writer is not None:
                writer.close()

    def __enter__(self) -> RecordSession:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- where it listens ---------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The port the proxy listens on (still known after `stop`)."""
        if self._port is None:
            raise RuntimeError("the session is not started")
        return self._port

    @property
    def url(self) -> str:
        """`http://HOST:PORT` of the proxy (IPv6 hosts in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def _what(self) -> str:
        if self.reverse:
            return f"reverse proxy to {self.reverse}"
        return f"proxy via {self.upstream}" if self.upstream else "proxy"

    # --- a command under tee ------------------------------------------------------------------------
    def command_env(self, base: dict[str, str], base_url_envs: tuple[str, ...] = ()) -> tuple[dict[str, str],
                                                                                           dict[str, str]]:
        """The environment a command runs with (pointed at the proxy) and the part wirecap set: with
        `reverse`, WIRECAP_PROXY_URL and each of `base_url_envs`; else HTTP(S)_PROXY / ALL_PROXY and
        the CA variables (loopback dropped from NO_PROXY)."""
        if self.reverse:
            return child_env(base, None, base_url_envs, self.url)
        if base_url_envs:
            raise WirecapError("--base-url-env needs --reverse and a command (-- CMD ARGS...)")
        return child_env(base, self.url, (), None)

    def spawn(self, command: Sequence[str], *, base_url_envs: tuple[str, ...] = (), dialect: str | None = None,
              pty: bool = False, env: dict[str, str] | None = None, **streams: Any) -> TeeRunner:
        """Start `command` pointed at the proxy, its stdout/stderr recorded into the same capture and
        passed through (`streams`: TeeRunner's stdout/stderr/stdin/cwd). Returns the started runner;
        its `wait()` gives the command's status once all its output is recorded."""
        if self.writer is None:
            raise RuntimeError("the session is not started")
        full_env, told = self.command_env(dict(os.environ if env is None else env), base_url_envs)
        for name, value in told.items():
            self.say(f"set {name}={value}")
        self.runner = TeeRunner(self.writer, list(command), pty=pty, dialect=dialect, env=full_env, **streams)
        self.runner.start()
        return self.runner
