"""`wirecap record`, `wirecap ca`, `wirecap addon-path`: live network capture through mitmproxy.

A thin shell: the session (proxy, capture, the command under tee) is `wirecap.record.session`,
the signal handling `wirecap.record.supervise`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from wirecap.cli.common import (
    check_capture_output,
    check_dialect,
    complete_files,
    make_redactor,
    redaction_options,
)
from wirecap.errors import ExitStatus, WirecapError


def _announce(line: str) -> None:
    try:
        os.write(2, f"wirecap: {line}\n".encode())
    except OSError:
        pass


@click.command(context_settings={"ignore_unknown_options": False})
@click.option("-o", "--output", required=True, metavar="CAP", shell_complete=complete_files, help="Capture file to write (.jsonl, .jsonl.gz, .jsonl.zst).")
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
    from wirecap.record.session import RecordSession, check_command, parse_size
    from wirecap.record.supervise import blocked, supervise, wait_for_signal, waited_signals

    redactor = make_redactor(no_redact, redact_keys, redact_patterns)
    check_capture_output(output)
    check_dialect(dialect)
    cap = parse_size(body_cap)
    if base_url_envs and not (reverse and command):
        raise WirecapError("--base-url-env needs --reverse and a command (-- CMD ARGS...)")
    warned: list[str] = []

    def on_error(message: str) -> None:
        if not warned:
            warned.append(message)
            _announce(f"warning: {message} (capture incomplete; traffic still passes through)")

    session = RecordSession(output, reverse=reverse, upstream=upstream, listen=listen, default_port=0 if command else 8080,
                            port_file=port_file, body_cap=cap, ssl_insecure=ssl_insecure, force=force,
                            redactor=redactor, say=_silent if quiet else _announce,
                            proxy_log=None if quiet else _proxy_log, on_error=on_error)
    if command:
        check_command(command)
    waited = waited_signals(use_pty and bool(command))
    status: int = ExitStatus.OK
    # Signals are collected by this (main) thread alone: blocked before any thread starts.
    with blocked(waited), session:
        if command:
            runner = session.spawn(command, base_url_envs=base_url_envs, dialect=dialect, pty=use_pty)
            status = supervise(runner, waited, use_pty)
            session.say(f"{command[0]} exited with status {status}; capture: {output}")
        else:
            wait_for_signal(waited)
            session.say(f"stopping; capture: {output}")
    sys.stdout.flush()
    sys.exit(status)


def _silent(line: str) -> None:
    pass


def _proxy_log(line: str) -> None:
    _announce(f"proxy: {line}")


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
