"""`make demo`: the whole tool in under a minute, on shipped captures, over loopback only.

Two round trips, each told as a short story:
1. WebSocket: `replay serve` plays the server side of a recorded Codebuff session; `record --reverse`
   sits in front of it; `replay client` drives it through the proxy. The new capture is validated,
   diffed against the original (equal except volatile fields) and reported to HTML.
2. CLI stream: `replay exec` re-emits a recorded Claude Code stream under `tee`; same checks.

Every step runs the real `wirecap` command as a subprocess (the printed command line is what a user
would type). A command that is not in this checkout yet is named plainly and the demo exits 1: it
never pretends. Background servers run in their own process groups and are killed in `finally`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import orjson

from wirecap.fsmode import create_private, private_dir

REPO = Path(__file__).resolve().parent.parent
CAPTURES = REPO / "captures"
WS_CAPTURE = CAPTURES / "codebuff-sdk-0.3.13-ws-tool.jsonl"
CLI_CAPTURE = CAPTURES / "claude-code-2.1.197-tool-bash.jsonl"
STEP_TIMEOUT = 30.0


class StepFailed(Exception):
    """A step did not do what the story needs; the message says what happened."""


@dataclass
class Outcome:
    title: str
    ok: bool
    seconds: float
    story: list[str] = field(default_factory=list)


def wirecap_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "wirecap", *args]


def shown(args: list[str], base: Path) -> str:
    """The command as a user would type it, with paths relative to where the demo runs."""
    args = list(args)
    for i in range(len(args) - 2):  # a nested `python -m wirecap` reads as `wirecap`
        if args[i] == sys.executable and args[i + 1:i + 3] == ["-m", "wirecap"]:
            args[i:i + 3] = ["wirecap"]
            break
    out = []
    for a in args:
        if a.startswith("/") and Path(a).is_relative_to(base):
            a = os.path.relpath(a, base)
        out.append(shlex.quote(a))
    return "wirecap " + " ".join(out)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise StepFailed(f"{what} exited with status {proc.returncode} before listening")
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise StepFailed(f"{what} did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


def command_available(*words: str) -> bool:
    """True when `wirecap WORDS --help` works (a command whose module is absent is not listed)."""
    p = subprocess.run(wirecap_argv(*words, "--help"), capture_output=True, timeout=STEP_TIMEOUT)
    return p.returncode == 0


def help_text(*words: str) -> str:
    p = subprocess.run(wirecap_argv(*words, "--help"), capture_output=True, text=True, timeout=STEP_TIMEOUT)
    return p.stdout


def listen_args(words: tuple[str, ...], port: int) -> list[str]:
    """How this command takes its listening address: `--listen HOST:PORT` or `--port N`."""
    h = help_text(*words)
    if "--listen" in h:
        return ["--listen", f"127.0.0.1:{port}"]
    if "--port" in h:
        return ["--port", str(port)]
    raise StepFailed(f"`wirecap {' '.join(words)}` takes neither --listen nor --port")


def first_ws_url(path: Path) -> str:
    """The URL of the capture's first WebSocket channel (path and query are what the client asks for)."""
    with open(path, "rb") as f:
        for line in f:
            rec = orjson.loads(line)
            if rec.get("type") == "open" and rec.get("kind") == "ws":
                return rec["url"]
    raise StepFailed(f"{path}: no WebSocket channel")


class Demo:
    def __init__(self, out: Path, cwd: Path) -> None:
        self.out = out
        self.cwd = cwd
        self.outcomes: list[Outcome] = []
        self.background: list[subprocess.Popen] = []

    # --- running things -------------------------------------------------------------------------

    def run(self, *args: str, ok_codes: tuple[int, ...] = (0,), timeout: float = STEP_TIMEOUT,
            stdout=subprocess.PIPE) -> subprocess.CompletedProcess[str]:
        print(f"    $ {shown(list(args), self.cwd)}", flush=True)
        p = subprocess.run(wirecap_argv(*args), stdout=stdout, stderr=subprocess.PIPE, text=True,
                           timeout=timeout, cwd=self.cwd, start_new_session=True)
        if p.returncode not in ok_codes:
            tail = " | ".join((p.stderr or p.stdout or "").strip().splitlines()[-3:])
            raise StepFailed(f"exit status {p.returncode}: {tail or 'no output'}")
        return p

    def start(self, *args: str, log: str) -> subprocess.Popen:
        """A background wirecap process in its own process group (so `finally` can end all of it)."""
        print(f"    $ {shown(list(args), self.cwd)} &", flush=True)
        logf = create_private(self.out / log)
        p = subprocess.Popen(wirecap_argv(*args), stdout=logf, stderr=subprocess.STDOUT, cwd=self.cwd,
                             start_new_session=True)
        logf.close()
        self.background.append(p)
        return p

    def stop(self, p: subprocess.Popen, sig: int = signal.SIGINT, timeout: float = 10) -> int:
        """Ask politely (SIGINT: recorders write `end`), then insist."""
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, sig)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)
        return p.returncode

    def cleanup(self) -> None:
        for p in self.background:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for p in self.background:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)  # the group may outlive its leader
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(2)

    def step(self, title: str, fn: Callable[[], list[str]]) -> bool:
        n = len(self.outcomes) + 1
        print(f"\n[{n}] {title}", flush=True)
        t0 = time.monotonic()
        try:
            story = fn()
            ok = True
        except StepFailed as e:
            story, ok = [f"FAILED: {e}"], False
        except subprocess.TimeoutExpired as e:
            story, ok = [f"FAILED: `{shlex.join(map(str, e.cmd[2:]))}` did not finish within {e.timeout:.0f} s"], False
        dt = time.monotonic() - t0
        for line in story:
            print(f"    {line}")
        print(f"    -> {'ok' if ok else 'FAILED'} ({dt:.1f} s)", flush=True)
        self.outcomes.append(Outcome(title, ok, dt, story))
        return ok

    # --- the stories ----------------------------------------------------------------------------

    def info_story(self, cap: Path) -> list[str]:
        p = self.run("info", str(cap))
        lines = [ln.rstrip() for ln in p.stdout.splitlines() if ln.strip()]
        keep = [ln for ln in lines if ln.startswith(("records", "status"))]
        table = next((i for i, ln in enumerate(lines) if ln.startswith("ch ")), None)
        if table is not None:
            keep += [ln[:110] for ln in lines[table:table + 8]]
        return keep or lines[:10]

    def validate_story(self, cap: Path) -> list[str]:
        p = self.run("validate", str(cap), ok_codes=(0, 1))
        lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
        if p.returncode == 1:
            raise StepFailed("validation found errors in the new capture:\n      " + "\n      ".join(lines[:10]))
        return (lines[-6:] if lines else []) + ["no validation errors: every rule of the dialect holds"]

    def diff_story(self, a: Path, b: Path, *extra: str) -> list[str]:
        p = self.run("diff", str(a), str(b), "--level", "wire", *extra, ok_codes=(0, 1))
        lines = [ln for ln in (p.stdout + p.stderr).splitlines() if ln.strip()]
        if p.returncode == 1:
            raise StepFailed("the captures differ:\n      " + "\n      ".join(lines[:15]))
        return lines[-4:] + ["equal message for message on the wire: only volatile fields (ids, timestamps, "
                             "ports) changed"]

    def report_story(self, caps: list[Path], html: Path) -> list[str]:
        self.run("report", *map(str, caps), "--format", "html", "-o", str(html))
        if not html.exists() or html.stat().st_size == 0:
            raise StepFailed(f"{html} was not written")
        return [f"report: {os.path.relpath(html, self.cwd)} ({html.stat().st_size // 1024} KB, one self-contained file; open it in a browser)"]

    def ws_round_trip(self) -> None:
        orig = WS_CAPTURE
        new = self.out / "ws-roundtrip.jsonl"
        client_cap = self.out / "ws-client.jsonl"
        ports = {"serve": free_port(), "proxy": free_port()}
        procs: dict[str, subprocess.Popen] = {}

        def original() -> list[str]:
            return [f"the original: {os.path.relpath(orig, self.cwd)} (a real Codebuff SDK session)",
                    *self.info_story(orig)]

        def serve() -> list[str]:
            words = ("replay", "serve")
            procs["serve"] = self.start(*words, str(orig), *listen_args(words, ports["serve"]), "--speed", "0",
                                        log="replay-serve.log")
            wait_port(ports["serve"], procs["serve"], 15, "wirecap replay serve")
            return [f"replay server on 127.0.0.1:{ports['serve']} plays the recorded server side"]

        def record() -> list[str]:
            procs["record"] = self.start("record", "-o", str(new), "--reverse", f"http://127.0.0.1:{ports['serve']}",
                                         "--listen", f"127.0.0.1:{ports['proxy']}", log="record.log")
            wait_port(ports["proxy"], procs["record"], 20, "wirecap record")
            return [f"recording proxy on 127.0.0.1:{ports['proxy']} -> replay server, writing {new.name}"]

        def client() -> list[str]:
            u = urlsplit(first_ws_url(orig))
            url = urlunsplit(("ws", f"127.0.0.1:{ports['proxy']}", u.path or "/", u.query, ""))
            self.run("replay", "client", str(orig), "--url", url, "-o", str(client_cap))
            rc = self.stop(procs.pop("record"))
            self.stop(procs.pop("serve"), signal.SIGTERM)
            if not new.exists():
                raise StepFailed(f"the recorder wrote no capture (exit {rc}; see {self.out / 'record.log'})")
            return [f"the client replayed every recorded client message through the proxy to {url}",
                    f"the recorder stopped cleanly (exit {rc}) and wrote {new.name}:", *self.info_story(new)]

        steps = [("The original Codebuff WebSocket capture", original),
                 ("`replay serve`: the recorded server, live on loopback", serve),
                 ("`record --reverse`: a recording proxy in front of it", record),
                 ("`replay client`: drive the server through the proxy", client),
                 ("`validate` the new capture", lambda: self.validate_story(new)),
                 ("`diff` the new capture against the original", lambda: self.diff_story(orig, new)),
                 ("`report` the new capture to HTML", lambda: self.report_story([new], self.out / "ws-report.html"))]
        try:
            for title, fn in steps:
                if not self.step(title, fn):
                    break
        finally:
            for p in procs.values():
                self.stop(p, signal.SIGTERM, timeout=5)

    def cli_round_trip(self) -> None:
        orig = CLI_CAPTURE
        new = self.out / "cli-rerun.jsonl"
        stdout_file = self.out / "cli-rerun.stdout"

        def original() -> list[str]:
            return [f"the original: {os.path.relpath(orig, self.cwd)} (Claude Code's stream-json output)",
                    *self.info_story(orig)]

        def tee_exec() -> list[str]:
            with create_private(stdout_file) as f:
                self.run("tee", "-o", str(new), "--", sys.executable, "-m", "wirecap", "replay", "exec", str(orig),
                         "--speed", "0", stdout=f)
            n = stdout_file.read_bytes().count(b"\n")
            return [f"`replay exec` acted as the CLI and printed {n} lines; `tee` passed them through and recorded "
                    f"them in {new.name}", *self.info_story(new)]

        steps = [("The original Claude Code stream", original),
                 ("`replay exec` under `tee`: the recorded CLI, re-run and re-recorded", tee_exec),
                 ("`validate` the re-recorded stream", lambda: self.validate_story(new)),
                 ("`diff` it against the original stream", lambda: self.diff_story(orig, new, "--ch", "stdout")),
                 ("`report` it to HTML", lambda: self.report_story([new], self.out / "cli-report.html"))]
        for title, fn in steps:
            if not self.step(title, fn):
                break


REQUIRED = [("info",), ("validate",), ("diff",), ("report",), ("record",), ("tee",),
            ("replay", "serve"), ("replay", "client"), ("replay", "exec")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wirecap.demo", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="demo-out", help="folder for the new captures and reports (default demo-out/)")
    args = ap.parse_args(argv)
    cwd = Path.cwd()
    out = Path(args.out).resolve()
    t0 = time.monotonic()
    print("wirecap demo: record, replay, validate, diff and report, on loopback only.")

    missing_caps = [c for c in (WS_CAPTURE, CLI_CAPTURE) if not c.exists()]
    missing = [w for w in REQUIRED if not command_available(*w)]
    if missing_caps or missing:
        for c in missing_caps:
            print(f"not available yet: the shipped capture {os.path.relpath(c, cwd)}")
        for w in missing:
            print(f"not available yet: `wirecap {' '.join(w)}` (no such command in this checkout)")
        print("the demo cannot run end to end until these exist; nothing was faked.")
        return 1

    if out.exists():
        shutil.rmtree(out)
    private_dir(out)
    demo = Demo(out, cwd)
    try:
        print("\n== Part 1: a Codebuff WebSocket session, replayed through the recorder ==")
        demo.ws_round_trip()
        print("\n== Part 2: a Claude Code CLI stream, re-emitted under tee ==")
        demo.cli_round_trip()
    finally:
        demo.cleanup()

    failed = [o for o in demo.outcomes if not o.ok]
    total = time.monotonic() - t0
    print(f"\n{len(demo.outcomes) - len(failed)}/{len(demo.outcomes)} steps ok in {total:.1f} s; "
          f"everything is in {os.path.relpath(out, cwd)}/")
    for name in ("ws-report.html", "cli-report.html"):
        if (out / name).exists():
            print(f"  open {os.path.relpath(out / name, cwd)}")
    if failed:
        print("FAILED steps: " + "; ".join(o.title for o in failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
