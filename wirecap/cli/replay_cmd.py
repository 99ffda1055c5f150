"""`wirecap replay`: serve a capture to a live client, drive a live server, act as a recorded CLI."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import click

from wirecap.cli.common import (
    check_capture_output,
    complete_files,
    make_redactor,
    redaction_options,
    refuse_output_over_input,
)
from wirecap.errors import WirecapError

SPEED_HELP = "Time scale: 1 real time (default), 2.5 faster, 0 no waits."
MAX_WAIT_HELP = "Cap every single pause at SECONDS."


def _err(text: str) -> None:
    click.echo(f"wirecap: {text}", err=True)


def _listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", value
    if not port.isdigit() or int(port) > 65535:
        raise WirecapError(f"--listen {value!r}: expected HOST:PORT or PORT (0-65535)")
    return host or "127.0.0.1", int(port)


def _check_url(url: str, option: str, schemes: tuple[str, ...], expected: str) -> None:
    """A one-line error unless `url` has one of `schemes`, a host and a valid port."""
    from urllib.parse import urlsplit

    try:
        u = urlsplit(url)
        ok = u.scheme.lower() in schemes and bool(u.hostname)
        u.port  # noqa: B018 - raises on a port that is not a number or beyond 65535
    except ValueError:
        ok = False
    if not ok:
        raise WirecapError(f"{option} {url!r}: expected {expected}")


@click.group()
def replay() -> None:
    """Replay a capture: as the server (serve), as the client (client), or as the CLI (exec, shim)."""


@replay.command()
@click.argument("capture", metavar="CAP", shell_complete=complete_files)
@click.option("--listen", "listen", default="127.0.0.1:0", show_default=True, metavar="HOST:PORT",
              help="Address to listen on (port 0 picks a free one).")
@click.option("--port", type=click.IntRange(0, 65535), default=None, metavar="PORT", help="Port to listen on (same as --listen 127.0.0.1:PORT).")
@click.option("--port-file", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Write the port number to this file once listening.")
@click.option("--speed", type=float, default=1.0, show_default=True, metavar="FACTOR", help=SPEED_HELP)
@click.option("--max-wait", type=float, default=None, metavar="SECONDS", help=MAX_WAIT_HELP)
@click.option("--mode", type=click.Choice(["strict", "lenient"]), default="strict", show_default=True,
              help="strict: an unmatched client message fails in a form clients do not retry (HTTP 400 "
                   "with the provider's error shape; WS: the dialect's error message, then close 1008); "
                   "lenient: send the next recorded response anyway and log the mismatch.")
@click.option("--loop", is_flag=True, help="Let a recording be used again once every one was used.")
@click.option("--ignore", "ignore", multiple=True, metavar="PATH",
              help="Also ignore this field when matching (path syntax of docs/paths.md; repeatable).")
@click.option("-q", "--quiet", is_flag=True, help="Do not log each connection (mismatches are still printed).")
def serve(capture: str, listen: str, port: int | None, port_file: str | None, speed: float,
          max_wait: float | None, mode: str, loop: bool, ignore: tuple[str, ...], quiet: bool) -> None:
    """Play the server side of CAP's WebSocket and HTTP/SSE channels on one port.

    Each live client message is matched (in order, volatile fields ignored) against the recorded
    one, and the recorded server messages that followed it are sent with their timing. Runs until
    interrupted (Ctrl-C or SIGTERM); exits 1 if any client message went unmatched.
    """
    from wirecap.replay.http_server import MismatchPrinter, ReplayServer

    host, p = _listen(listen)
    if port is not None:
        p = port
    server = ReplayServer.from_capture(
        capture, speed=speed, max_wait=max_wait, strict=mode == "strict", loop=loop, ignore=list(ignore),
        on_mismatch=MismatchPrinter(), log=None if quiet else lambda s: click.echo(f"wirecap replay: {s}", err=True),
        warn=lambda s: click.echo(f"wirecap replay: warning: {s}", err=True))

    async def main() -> None:
        actual = await server.start(host, p)
        if port_file:
            from wirecap.fsmode import write_private

            write_private(port_file, str(actual))
        paths = sorted(server.pool.ws_paths())
        click.echo(f"wirecap replay: serving {capture} on http://{host}:{actual}"
                   + (f" (WebSocket at {', '.join(paths)})" if paths else ""), err=True)
        stop = asyncio.Event()
        lp = asyncio.get_running_loop()
        for s in (signal.SIGINT, signal.SIGTERM):
            lp.add_signal_handler(s, stop.set)
        await stop.wait()
        await server.stop()

    asyncio.run(main())
    if server.mismatches:
        _err(f"{len(server.mismatches)} unmatched client message(s)")
        sys.exit(1)


@replay.command()
@click.argument("capture", metavar="CAP", shell_complete=complete_files)
@click.option("--url", required=True, metavar="URL", help="The live server: ws://HOST:PORT[/path] or http://HOST:PORT[/prefix].")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False), default=None, metavar="CAP",
              help="Record the new exchange to this capture.")
@click.option("--force", is_flag=True, help="Overwrite the output capture if it exists.")
@click.option("--speed", type=float, default=1.0, show_default=True, metavar="FACTOR", help=SPEED_HELP)
@click.option("--max-wait", type=float, default=None, metavar="SECONDS", help=MAX_WAIT_HELP)
@click.option("--secret", "secrets", multiple=True, metavar="NAME=ENVVAR",
              help="Fill redacted placeholders of kind NAME (e.g. authtoken, bearer, x-api-key) with the "
                   "value of environment variable ENVVAR (repeatable).")
@click.option("--timeout", type=float, default=30.0, show_default=True, metavar="SECONDS",
              help="Seconds to wait for an expected server message before going on.")
@click.option("--ignore", "ignore", multiple=True, metavar="PATH",
              help="Also ignore this field when comparing live server messages with recorded ones.")
@click.option("--proxy", metavar="URL", default=None,
              help="Go through this HTTP proxy (http://HOST:PORT). Proxy variables of the environment "
                   "(http_proxy, https_proxy, all_proxy) are never used.")
@click.option("-q", "--quiet", is_flag=True, help="Print only divergences and the summary.")
@redaction_options
def client(capture: str, url: str, output: str | None, force: bool, speed: float, max_wait: float | None,
           secrets: tuple[str, ...], timeout: float, ignore: tuple[str, ...], proxy: str | None, quiet: bool,
           no_redact: bool, redact_keys: tuple[str, ...], redact_patterns: tuple[str, ...]) -> None:
    """Drive a live server at URL with the client side of CAP, and record what it answers.

    It goes only to URL (with the secrets it fills in): a redirect is reported, never followed, and
    no proxy is used unless --proxy names one.

    Exit 0 when every channel completed as recorded, 1 when the server diverged or timed out,
    2 on errors (cannot connect, a WebSocket handshake answered with a redirect, bad capture).
    """
    from wirecap.capture.writer import default_origin, open_writer
    from wirecap.replay.client import run_client
    from wirecap.replay.script import load_scripts
    from wirecap.replay.secrets import SecretFiller

    _check_url(url, "--url", ("ws", "wss", "http", "https"), "ws://HOST:PORT[/path] or http://HOST:PORT[/prefix]")
    if proxy is not None:
        _check_url(proxy, "--proxy", ("http",), "http://HOST:PORT")
    _header, scripts = load_scripts(capture)
    if not scripts:
        raise WirecapError(f"{capture}: no WebSocket or HTTP channel to replay")
    filler = SecretFiller.from_options(secrets)
    writer = None
    if output:
        check_capture_output(output)
        refuse_output_over_input(output, [capture])
        origin = default_origin("replay-client")
        origin["replayed_from"] = os.path.abspath(capture)
        writer = open_writer(output, origin=origin, force=force,
                             redactor=make_redactor(no_redact, redact_keys, redact_patterns))
    log = None if quiet else (lambda s: click.echo(f"wirecap replay: {s}", err=True))
    try:
        result = asyncio.run(run_client(scripts, url, writer=writer, speed=speed, max_wait=max_wait,
                                        timeout=timeout, secrets=filler, ignore=list(ignore), log=log,
                                        proxy=proxy))
    finally:
        if writer is not None:
            writer.close()
    for mm in result.divergences:
        click.echo("divergence: " + mm.report().removeprefix("replay mismatch: "), err=True)
    for t in result.timeouts:
        _err(t)
    for e in result.errors:
        _err(e)
    click.echo(f"wirecap replay: {result.completed}/{result.channels} channel(s) completed, "
               f"{len(result.divergences)} divergence(s), {len(result.timeouts)} timeout(s)"
               + (f"; new capture {output}" if output else ""), err=True)
    sys.exit(result.exit_code)


@replay.command("exec")
@click.argument("capture", metavar="CAP", shell_complete=complete_files)
@click.option("--speed", type=float, default=1.0, show_default=True, metavar="FACTOR", help=SPEED_HELP)
@click.option("--max-wait", type=float, default=None, metavar="SECONDS", help=MAX_WAIT_HELP)
@click.option("--ch", "channels", multiple=True, metavar="CH",
              help="Replay only this pipe channel or stream (stdout, stderr; repeatable).")
@click.option("--replay-stop-signals", "stop_signals", is_flag=True,
              help="Really stop on a recorded SIGTSTP/SIGSTOP/SIGTTIN/SIGTTOU (default: exit 128+N instead).")
def exec_(capture: str, speed: float, max_wait: float | None, channels: tuple[str, ...], stop_signals: bool) -> None:
    """Act as the recorded CLI: print its stdout/stderr lines with their timing, exit as it did."""
    from wirecap.replay.process import run_exec

    run_exec(capture, speed=speed, max_wait=max_wait, channels=channels, stop_signals=stop_signals)


@replay.command()
@click.argument("capture", metavar="CAP", shell_complete=complete_files)
@click.option("--name", default=None, metavar="NAME", help="The CLI it stands for (for the comment in the script).")
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="Where to write the executable (e.g. bin/claude).")
@click.option("--speed", type=float, default=1.0, show_default=True, metavar="FACTOR", help=SPEED_HELP)
@click.option("--max-wait", type=float, default=None, metavar="SECONDS", help=MAX_WAIT_HELP)
@click.option("--ch", "channels", multiple=True, metavar="CH",
              help="Replay only this pipe channel or stream (stdout, stderr; repeatable).")
@click.option("--force", is_flag=True, help="Overwrite FILE if it exists.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the 'wrote FILE' line on stderr.")
def shim(capture: str, name: str | None, output: str, speed: float, max_wait: float | None,
         channels: tuple[str, ...], force: bool, quiet: bool) -> None:
    """Write an executable that acts as the recorded CLI, so a program that runs it works offline.

    Put its folder first on PATH: `PATH=$PWD/bin:$PATH your-program`.
    """
    from wirecap.replay.process import write_shim

    refuse_output_over_input(output, [capture])
    path = write_shim(capture, output, name or os.path.basename(output), speed=speed, max_wait=max_wait,
                      channels=channels, force=force)
    if not quiet:
        click.echo(f"wirecap replay: wrote {path}", err=True)
