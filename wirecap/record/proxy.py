"""Run mitmproxy with the wirecap addon in a background thread with its own event loop.

`start_proxy()` returns once the proxy listens (or raises WirecapError saying why it cannot);
`handle.stop()` shuts it down within a bounded time. The caller owns the writer (several
recorders can share one writer, hence one clock).

mitmproxy keeps its master in module-level globals (`mitmproxy.ctx`), so one process runs one
proxy at a time; a second `start_proxy()` while one runs is refused.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from wirecap.capture.writer import CaptureWriter
from wirecap.errors import WirecapError
from wirecap.record.addon import WirecapAddon

_running_lock = threading.Lock()
_running: list[ProxyHandle] = []

MODE_PREFIXES = ("regular", "reverse:", "upstream:")


def _default_log(line: str) -> None:
    print(f"wirecap: proxy: {line}", file=sys.stderr, flush=True)


class _LogTap(logging.Handler):
    """Collects mitmproxy's log lines: errors for startup failures, warnings to the user."""

    def __init__(self, sink: Callable[[str], None] | None, level: int) -> None:
        super().__init__(logging.DEBUG)
        self.sink = sink
        self.show_level = level
        self.errors: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001
            return
        if record.levelno >= logging.ERROR:
            self.errors.append(msg)
        if self.sink is not None and record.levelno >= self.show_level:
            try:
                self.sink(msg)
            except Exception:  # noqa: BLE001
                pass


@dataclass
class ProxyHandle:
    """A running proxy: where it listens, its addon (error counts), and how to stop it."""

    mode: str
    host: str
    port: int = 0
    addon: WirecapAddon | None = None
    _thread: threading.Thread | None = None
    _loop: asyncio.AbstractEventLoop | None = None
    _master: object | None = None
    _stopped: threading.Event = field(default_factory=threading.Event)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def stop(self, timeout: float = 10.0) -> None:
        """Stop listening, end live connections, run the addon's `done`. Idempotent, bounded."""
        master = self._master
        if master is not None and self._loop is not None and not self._loop.is_closed():
            try:
                master.shutdown()  # type: ignore[attr-defined]
            except RuntimeError:  # loop already closed
                pass
        if self._thread is not None:
            self._thread.join(timeout)
        self._stopped.set()
        with _running_lock:
            if self in _running:
                _running.remove(self)

    def __enter__(self) -> ProxyHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def normalize_mode(mode: str, upstream: str | None = None) -> str:
    """Accept `reverse:URL`, `regular`, `upstream:URL`; `upstream=` turns regular into upstream."""
    if upstream:
        if mode not in ("regular", ""):
            raise WirecapError(f"--upstream cannot be combined with mode {mode!r}")
        mode = f"upstream:{upstream}"
    if not mode:
        mode = "regular"
    if not mode.startswith(MODE_PREFIXES):
        raise WirecapError(f"unknown proxy mode {mode!r} (use regular, reverse:URL or upstream:URL)")
    from mitmproxy.proxy import mode_specs

    try:
        mode_specs.ProxyMode.parse(mode)
    except ValueError as e:
        raise WirecapError(f"invalid proxy mode {mode!r}: {e}") from None
    return mode


def start_proxy(
    writer: CaptureWriter,
    *,
    mode: str,
    listen_host: str = "127.0.0.1",
    listen_port: int = 0,
    upstream: str | None = None,
    confdir: str | None = None,
    body_cap: int = 0,
    ssl_insecure: bool = False,
    log: Callable[[str], None] | None = _default_log,
    log_level: int = logging.WARNING,
    startup_timeout: float = 20.0,
) -> ProxyHandle:
    """Start mitmproxy with a WirecapAddon writing to `writer`. Returns when it listens."""
    mode = normalize_mode(mode, upstream)
    if confdir is None:
        from wirecap.record.ca import ensure_ca

        confdir = str(ensure_ca())
    with _running_lock:
        if _running:
            raise WirecapError("a wirecap proxy is already running in this process (mitmproxy allows one)")
        handle = ProxyHandle(mode=mode, host=listen_host)
        _running.append(handle)
    addon = WirecapAddon(writer, body_cap=body_cap)
    handle.addon = addon
    tap = _LogTap(log, log_level)
    ready = threading.Event()
    failure: list[str] = []

    def run() -> None:
        loop = asyncio.new_event_loop()
        handle._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(_serve(handle, addon, tap, ready, failure, mode, listen_host,
                                           listen_port, confdir, ssl_insecure))
        except BaseException as e:  # noqa: BLE001 - report, never crash the host program
            failure.append(f"{type(e).__name__}: {e}")
        finally:
            ready.set()
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()

    mlog = logging.getLogger("mitmproxy")
    mlog.addHandler(tap)
    mlog.setLevel(logging.INFO)
    thread = threading.Thread(target=run, name="wirecap-proxy", daemon=True)
    handle._thread = thread
    thread.start()
    if not ready.wait(startup_timeout):
        handle.stop(timeout=2)
        mlog.removeHandler(tap)
        raise WirecapError(f"proxy did not start within {startup_timeout:.0f} s")
    if failure or not handle.port:
        handle.stop(timeout=5)
        mlog.removeHandler(tap)
        why = "; ".join(failure or tap.errors) or "unknown error"
        raise WirecapError(f"cannot start proxy ({mode} on {listen_host}:{listen_port}): {why}")
    thread_stop = handle.stop

    def stop(timeout: float = 10.0) -> None:
        thread_stop(timeout)
        mlog.removeHandler(tap)

    handle.stop = stop  # type: ignore[method-assign]
    return handle


async def _serve(handle: ProxyHandle, addon: WirecapAddon, tap: _LogTap, ready: threading.Event,
                 failure: list[str], mode: str, host: str, port: int, confdir: str,
                 ssl_insecure: bool) -> None:
    from mitmproxy import master, options
    from mitmproxy.addons import (
        core,
        disable_h2c,
        next_layer,
        proxyserver,
        tlsconfig,
        update_alt_svc,
        upstream_auth,
    )
    from mitmproxy.utils import asyncio_utils

    opts = options.Options()
    m = master.Master(opts)
    ps = proxyserver.Proxyserver()
    m.addons.add(core.Core(), ps, next_layer.NextLayer(), tlsconfig.TlsConfig(), disable_h2c.DisableH2C(),
                 upstream_auth.UpstreamAuth(), update_alt_svc.UpdateAltSvc(), addon)
    try:
        opts.update(mode=[mode], listen_host=host, listen_port=port, confdir=confdir,
                    ssl_insecure=ssl_insecure)
    except Exception as e:  # noqa: BLE001 - mitmproxy's OptionsError and friends
        failure.append(str(e))
        return
    handle._master = m

    def on_exception(loop: asyncio.AbstractEventLoop, context: dict) -> None:
        exc = context.get("exception")
        tap.errors.append(str(exc or context.get("message")))

    with asyncio_utils.install_exception_handler(on_exception), asyncio_utils.set_eager_task_factory():
        ok = await ps.setup_servers()
        addrs = ps.listen_addrs()
        if not ok or not addrs:
            failure.extend(tap.errors or ["no listening address"])
            return
        handle.port = addrs[0][1]
        await m.running()
        ready.set()
        try:
            await m.should_exit.wait()
        finally:
            await _wind_down(m, ps)


async def _wind_down(m: object, ps: object) -> None:
    """Close listeners and live connections (bounded), then let addons finish (`done`)."""
    me = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
    for t in tasks:
        t.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=3)
    try:
        await asyncio.wait_for(ps.servers.update([]), 3)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - stopping is best effort, bounded
        pass
    await m.done()  # type: ignore[attr-defined]
