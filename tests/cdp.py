"""A tiny headless-Chromium driver over the DevTools protocol (127.0.0.1 only, `websockets` client).

Used by the report browser test and by `bench/bench_report.py`. Every wait has a timeout.
"""

from __future__ import annotations

import base64
import itertools
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from websockets.sync.client import connect

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def install_chromium(timeout: float = 600) -> tuple[str | None, str]:
    """Debian's `chromium` package when it is missing: (path or None, what happened)."""
    found = find_chromium()
    if found:
        return found, "already installed"
    if not shutil.which("apt-get"):
        return None, "chromium is not installed and apt-get is not available"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
            if r.returncode != 0:
                tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or [""]
                return None, f"{' '.join(cmd)} failed (exit {r.returncode}): {tail[0]}"
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"installing chromium failed: {e}"
    found = find_chromium()
    return found, "installed with apt-get" if found else "apt-get succeeded but no chromium binary was found"


class CDPError(RuntimeError):
    pass


class Browser:
    """One headless Chromium with one page attached (flat session)."""

    def __init__(self, binary: str, *, width: int = 1280, height: int = 900, timeout: float = 30) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="wirecap-chromium-")
        self.proc = subprocess.Popen(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace")[-500:] if self.proc.stderr else ""
                self.close()
                raise CDPError(f"chromium exited with {self.proc.returncode}: {err}")
            if time.monotonic() > deadline:
                self.close()
                raise CDPError("chromium did not open its DevTools port in time")
            time.sleep(0.05)
        port, path = port_file.read_text().splitlines()[:2]
        self._conn = connect(f"ws://127.0.0.1:{port}{path}", max_size=None, open_timeout=timeout)
        self.ws = self._conn.__enter__()
        self._ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.call(domain, session=True)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=True)

    def call(self, method: str, params: dict[str, Any] | None = None, *, session: bool = False,
             timeout: float | None = None) -> dict[str, Any]:
        mid = next(self._ids)
        msg: dict[str, Any] = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        self.ws.send(orjson.dumps(msg).decode())
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError(f"{method}: no answer in time")
            reply = orjson.loads(self.ws.recv(timeout=left))
            if reply.get("id") == mid:
                if "error" in reply:
                    raise CDPError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method: str, timeout: float | None = None) -> dict[str, Any]:
        for i, ev in enumerate(self.events):
            if ev.get("method") == method:
                return self.events.pop(i)
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError(f"no {method} event in time")
            ev = orjson.loads(self.ws.recv(timeout=left))
            if ev.get("method") == method:
                return ev
            if "method" in ev:
                self.events.append(ev)

    def navigate(self, url: str, timeout: float | None = None) -> None:
        self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
        self.call("Page.navigate", {"url": url}, session=True)
        self.wait_event("Page.loadEventFired", timeout)

    def evaluate(self, expression: str, timeout: float | None = None) -> Any:
        res = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True},
                        session=True, timeout=timeout)
        if "exceptionDetails" in res:
            raise CDPError(f"evaluate {expression[:60]!r}: {res['exceptionDetails'].get('text')} "
                           f"{res['exceptionDetails'].get('exception', {}).get('description', '')}")
        return res.get("result", {}).get("value")

    def js_errors(self) -> list[str]:
        """Uncaught exceptions, console.error calls and error log entries seen so far."""
        self.evaluate("1")  # drain pending events
        out = []
        for ev in self.events:
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append(f"exception: {d.get('text')} {d.get('exception', {}).get('description', '')}")
            elif m == "Runtime.consoleAPICalled" and p.get("type") == "error":
                out.append("console.error: " + " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(f"log: {p['entry'].get('text')} ({p['entry'].get('url', '')})")
        return out

    def screenshot(self, path: str | os.PathLike[str], *, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", params, session=True)["data"]
        out = Path(path)
        out.write_bytes(base64.b64decode(data))
        return out

    def screenshot_of(self, selector: str, path: str | os.PathLike[str], *, pad: int = 8) -> Path:
        """A screenshot of the element `selector` (scrolled into view), padded by `pad` pixels."""
        box = self.evaluate(
            f"(() => {{ var e = document.querySelector({orjson.dumps(selector).decode()}); if (!e) return null;"
            " var r = e.getBoundingClientRect();"
            " return {x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height}; })()")
        if box is None:
            raise CDPError(f"no element {selector!r} to screenshot")
        clip = {"x": max(0, box["x"] - pad), "y": max(0, box["y"] - pad), "width": box["w"] + 2 * pad,
                "height": box["h"] + 2 * pad, "scale": 1}
        data = self.call("Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True},
                         session=True)["data"]
        out = Path(path)
        out.write_bytes(base64.b64decode(data))
        return out

    def close(self) -> None:
        try:
            if getattr(self, "ws", None) is not None:
                self.ws.close()
        except Exception:  # noqa: BLE001 - best effort on teardown
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
