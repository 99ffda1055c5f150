"""`wirecap record`, `wirecap ca`, `wirecap addon-path`: live network capture through mitmproxy."""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path

import click

from wirecap.cli.common import check_capture_output, check_dialect, make_redactor, redaction_options
from wirecap.errors import WirecapError

WAITED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
TICK = 0.2
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]", "127.0.0.0/8", ".localhost", "*.localhost"}


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
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, _t, _p, _c, addr = infos[0]
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(addr)
    except OSError as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise WirecapError(f"--listen {host}:{port}: cannot listen there: {why}") from None


def parse_size(spec: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)[bB]?\s*", spec)
    if not m:
        raise WirecapError(f"--body-cap {spec!r}: expected a size such as 1048576, 512k or 16m")
    return int(m.group(1)) * {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[m.group(2).lower()]


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


def _announce(line: str) -> None:
    try:
        os.write(2, f"wirecap: {line}\n".encode())
    except OSError:
        pass


def _write_port_file(path: str, port: int) -> None:
    from wirecap.fsmode import write_private

    write_private(path, f"{port}\n")


@click.command(context_settings={"ignore_unknown_options": False})
@click.option("-o", "--output", required=True, metavar="CAP", help="Capture file to write (.jsonl, .jsonl.gz, .jsonl.zst).")
@click.option("--reverse", "reverse", metavar="URL",
              help="Reverse proxy to URL (http://HOST:PORT or https://...): point the client's base URL at the proxy.")
@click.option("--upstream", metavar="URL", help="Regular proxy that forwards through another proxy at URL.")
@click.option("--listen", metavar="HOST:PORT",
              help="Where the proxy listens (default 127.0.0.1:8080; 127.0.0.1 and a free port with -- CMD). Port 0 picks a free one.")
@click.option("--port-file", type=click.Path(dir_okay=False), metavar="FILE", help="Write the listening port to this file once listening (for scripts).")
@click.option("--body-cap", default="0", metavar="SIZE", help="Cut recorded bodies and messages at SIZE bytes (512k, 16m; 0 keeps all). The cut is recorded.")
@click.option("--base-url-env", "base_url_envs", multiple=True, metavar="NAME",
              help="With --reverse and CMD: set env NAME (e.g. ANTHROPIC_BASE_URL) to the proxy's URL for CMD (repeatable).")
@click.option("--dialect", metavar="NAME", help="With CMD: hint for the decoders of CMD's stdout (e.g. claude-code).")
@click.option("--pty", "use_pty", is_flag=True, help="With CMD: run it on a pseudo-terminal.")
@click.option("--ssl-insecure", is_flag=True, help="Do not verify the upstream server's certificate.")
@click.option("--force", is_flag=True, help="Overwrite CAP if it exists.")
@click.option("-q", "--quiet", is_flag=True,
              help="Print nothing on stderr when all is well (no progress lines, no mitmproxy log); warnings stay.")
@redaction_options
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[-- CMD ARGS...]")
def record(output: str, reverse: str | None, upstream: str | None, listen: str | None, port_file: str | None,
           body_cap: str, base_url_envs: tuple[str, ...], dialect: str | None, use_pty: bool, ssl_insecure: bool,
           force: bool, quiet: bool, no_redact: bool, redact_keys: tuple[str, ...], redact_patterns: tuple[str, ...],
           command: tuple[str, ...]) -> None:
    """Record WebSocket and HTTP/SSE traffic live through mitmproxy, without changing it.

    \b
      wirecap record -o cap.jsonl --reverse http://127.0.0.1:4242 --listen 127.0.0.1:8080
      wirecap record -o cap.jsonl --listen 127.0.0.1:8080            # HTTPS_PROXY=http://127.0.0.1:8080
      wirecap record -o cap.jsonl -- codex exec --json "say hello"   # proxy + tee in one capture
      wirecap record -o cap.jsonl --reverse https://api.anthropic.com \\
          --base-url-env ANTHROPIC_BASE_URL -- claude -p hi --output-format stream-json --verbose

    With --reverse, clients talk to the proxy as if it were the server (set their base URL to the
    printed address). Without it, the proxy is a regular HTTP(S) proxy; HTTPS is decrypted with
    wirecap's own CA (`wirecap ca`). With -- CMD, CMD runs with HTTP(S)_PROXY / ALL_PROXY and the CA
    variables set (or, with --reverse, WIRECAP_PROXY_URL and --base-url-env), its stdout/stderr are
    recorded into the same capture, and wirecap exits with CMD's exit code. Ctrl-C or SIGTERM stops
    recording cleanly. See docs/commands/record.md.
    """
    from wirecap.capture.writer import default_origin, open_writer
    from wirecap.record.proxy import normalize_mode, start_proxy

    redactor = make_redactor(no_redact, redact_keys, redact_patterns)
    check_capture_output(output)
    check_dialect(dialect)
    cap = parse_size(body_cap)
    if reverse and upstream:
        raise WirecapError("--reverse and --upstream cannot be combined")
    if base_url_envs and not (reverse and command):
        raise WirecapError("--base-url-env needs --reverse and a command (-- CMD ARGS...)")
    if reverse:
        if not re.match(r"^https?://", reverse):
            raise WirecapError(f"--reverse {reverse!r}: expected http://HOST:PORT or https://HOST[:PORT]")
        mode = f"reverse:{reverse}"
    else:
        mode = "regular"
    if upstream and not re.match(r"^https?://[^/:]+(:\d+)?/?$", upstream):
        raise WirecapError(f"--upstream {upstream!r}: expected http://HOST:PORT (the other proxy)")
    mode = normalize_mode(mode, upstream)
    host, port = parse_listen(listen, 0 if command else 8080)
    check_listen(host, port)
    if command:
        _check_command(command)

    # Signals are collected by this (main) thread alone: block them before any thread starts.
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, WAITED)
    status = 0
    say = _silent if quiet else _announce
    try:
        warned: list[str] = []

        def on_error(message: str) -> None:
            if not warned:
                warned.append(message)
                _announce(f"warning: {message} (capture incomplete; traffic still passes through)")

        writer = open_writer(output, origin=default_origin("record"), redactor=redactor, force=force, on_error=on_error)
        started = False
        try:
            handle = start_proxy(writer, mode=mode, listen_host=host, listen_port=port, body_cap=cap,
                                 ssl_insecure=ssl_insecure, log=None if quiet else _proxy_log)
            started = True
            try:
                url = f"http://{'[' + host + ']' if ':' in host else host}:{handle.port}"
                if port_file:
                    _write_port_file(port_file, handle.port)
                what = f"reverse proxy to {reverse}" if reverse else (f"proxy via {upstream}" if upstream else "proxy")
                say(f"{what} listening on {url}; recording to {output}")
                if command:
                    status = _run_command(writer, command, url, reverse, base_url_envs, dialect, use_pty, say)
                    say(f"{command[0]} exited with status {status}; capture: {output}")
                else:
                    _wait_for_signal()
                    say(f"stopping; capture: {output}")
            finally:
                handle.stop()
        finally:
            writer.close()
            if not started:
                _remove_if_empty(output)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    sys.stdout.flush()
    sys.exit(status)


def _silent(line: str) -> None:
    pass


def _proxy_log(line: str) -> None:
    _announce(f"proxy: {line}")


def _check_command(command: tuple[str, ...]) -> None:
    import shutil

    if os.sep not in command[0] and shutil.which(command[0]) is None:
        err = WirecapError(f"{command[0]}: command not found")
        err.exit_code = 127
        raise err


def _remove_if_empty(path: str) -> None:
    """A proxy that never started leaves no capture behind (so a retry needs no --force)."""
    try:
        with open(path, "rb") as f:
            lines = f.read(1 << 20).count(b"\n")
        if lines <= 2:
            os.unlink(path)
    except OSError:
        pass


def _wait_for_signal() -> None:
    while signal.sigtimedwait(WAITED, TICK) is None:
        pass


def _run_command(writer, command: tuple[str, ...], proxy_url: str, reverse: str | None,
                 base_url_envs: tuple[str, ...], dialect: str | None, use_pty: bool, say) -> int:
    from wirecap.cli.tee_cmd import _supervise
    from wirecap.record.tee import TeeRunner

    if reverse:
        env, told = child_env(dict(os.environ), None, base_url_envs, proxy_url)
    else:
        env, told = child_env(dict(os.environ), proxy_url, (), None)
    for name, value in told.items():
        say(f"set {name}={value}")
    runner = TeeRunner(writer, list(command), pty=use_pty, dialect=dialect, env=env)
    runner.start()
    return _supervise(runner, WAITED + ((signal.SIGWINCH,) if use_pty else ()), use_pty)


@click.command()
@click.option("--path", "path_only", is_flag=True, help="Print only the certificate's path.")
def ca(path_only: bool) -> None:
    """Print wirecap's CA certificate path and the variables that make clients trust it.

    The CA is created on first use in wirecap's config folder ($WIRECAP_HOME, else
    ~/.config/wirecap), private key mode 0600. `eval "$(wirecap ca)"` sets the variables.
    """
    from wirecap.record.ca import ca_cert_path, ca_env, ensure_ca

    ensure_ca()
    if path_only:
        click.echo(str(ca_cert_path()))
        return
    click.echo(f"# wirecap CA certificate: {ca_cert_path()}")
    for name, value in ca_env().items():
        click.echo(f"export {name}={_shell_quote(value)}")


def _shell_quote(s: str) -> str:
    import shlex

    return shlex.quote(s)


@click.command("addon-path")
def addon_path() -> None:
    """Print the path of the mitmproxy addon file, for `mitmdump -s`.

    \b
      mitmdump --listen-host 127.0.0.1 -s "$(wirecap addon-path)" --set wirecap_out=cap.jsonl \\
          --mode reverse:http://127.0.0.1:4242

    Without --listen-host the addon keeps the proxy on 127.0.0.1 (mitmproxy's own default is every interface).
    """
    import wirecap.record

    click.echo(str(Path(wirecap.record.__file__).resolve().parent / "mitm_addon.py"))
