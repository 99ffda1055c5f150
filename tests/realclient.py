#!/usr/bin/env python3
"""The real-client suite's runner: record one client x case through `wirecap record`, replay it strictly.

For one case (say `claude` x `tool`), inside a private network namespace (`unshare -n`: only loopback
exists, so nothing can leave the machine and fixed ports cannot collide with other runs):

1. the lab's fake backend (tests/fixtures/lab/fake) listens on BACKEND (127.0.0.1:40001);
2. **record**: `wirecap record -o rec.jsonl --reverse http://BACKEND --listen PROXY -- CLIENT ...`, the
   client's base URL pointed at PROXY (127.0.0.1:40000): network and stdout in one capture;
3. the fake stops; **replay**: `wirecap replay serve rec.jsonl` (strict, no `--ignore`) listens on
   BACKEND instead, and the same client runs again the same way (same argv and env) but under another
   HOME, work dir and TMPDIR (OUT/rec/... when recording, OUT/replay-elsewhere/... when replaying: a
   capture made in another working directory or HOME must still match), through `wirecap record -o
   rep.jsonl`, so what it did is captured the same way;
4. the checks: the client exits as recorded; `wirecap diff rec rep --ch proc` (its stdout, events level)
   and `wirecap diff rec rep` (everything, events level) exit 0 (both mask each side's own cwd, HOME
   and TMPDIR, nothing else); the replay server reports no mismatch (exit 0, no mismatch line on stderr).

A `drive` case (Codex over WebSocket) also plays the recorded client side to a fresh fake with `wirecap
replay client` (after step 2; OUT/client.jsonl), which must see no divergence.

The `mismatch` case of each client records `hello`, then replays it to the client asked something
else, with the client's default retry settings: the server must report the mismatch, the client must
exit by itself (MISMATCH_TIMEOUT is only the subprocess bound, not a timing assertion) and print
wirecap's message. How long it took from the mismatch answer to its exit is measured on the
recorder's clock (`mismatch_exit_times`) and printed in the suite's table.

A terminal client (codebuff 1.0.115 needs a TTY) redraws a spinner every ~80 ms, so how many frames
it printed is a matter of time, not of what it said: its stdout is compared as the text left on the
screen (`screen_lines`: a line's carriage returns and erase-line sequences keep only its last frame),
and the capture diff covers its network channels (`Case.net`) instead of the raw terminal bytes.

The outcome goes to OUT/result.json (see `CaseResult`); every file of the case stays in OUT. How each
client is launched (argv, environment, its fake, config files) comes from tests/labclients.py, shared
with captures/make_captures.py.

    python tests/realclient.py CLIENT CASE OUT      # one case (re-runs itself under `unshare -n`)
    python tests/realclient.py --list               # the client x case matrix

tests/integration/test_realclient_suite.py runs the whole matrix a few cases at a time and prints the table.
Needs root (for `unshare -n`), the lab (`make lab`; WIRECAP_LAB or <repo>/.lab) and node.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import labclients as lc
from conftest import lab_dir  # noqa: F401 - also used by the suite module as realclient.lab_dir
from labclients import FAKES, LABKIT, type_slowly, wait_listening

ROOT = Path(__file__).resolve().parent.parent
PROXY = "127.0.0.1:40000"  # where the client is pointed (the recording proxy), in both runs
BACKEND = "127.0.0.1:40001"  # the fake when recording, `replay serve` when replaying
CLIENT_TIMEOUT = 90.0  # seconds per client run (the slowest, opencode, takes ~10 s)
RUN_DIRS = {"record": "rec", "replay": "replay-elsewhere"}  # per run: HOME, work dir and TMPDIR under OUT/THIS
MISMATCH_TIMEOUT = 20.0  # seconds a client may take to give up on a replay mismatch, startup included (a retry loop is a hang)

NO_RETRIES = {"CLAUDE_CODE_MAX_RETRIES": "0"}  # Claude Code: an HTTP error ends the run (no retry loop)


@dataclass(frozen=True)
class Case:
    """One client x case: the fake's arguments and how the client is run. Strings may hold {LAB},
    {LABKIT}, {PROXY}, {WORK}, {SHARED} (a folder of the case both runs see, holding `hello.txt`) and
    {OPENCODE_CONFIG}, filled in at run time."""

    fake: str
    fake_args: tuple[str, ...]
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    pty: bool = False
    typed: str | None = None  # typed on stdin one character every 100 ms once the client is `ready`
    ready: tuple[str, int] | None = None  # ... i.e. once its output holds this text that many times
    wait: float = 0.0  # at most this long (seconds): then it is typed anyway
    setup: str | None = None  # "codex": write HOME/.codex/config.toml ("codex-ws": WebSocket on; "-retries": default retries)
    net: tuple[str, ...] = ()  # pty clients: the network channels `wirecap diff --ch` compares
    replay_swap: tuple[str, str] | None = None  # (recorded, live): the replay run's argv differs: a mismatch
    drive: bool = False  # also `wirecap replay client`: the recorded client side drives a fresh fake (0 divergences)


def _case(launch: lc.Launch, **kw) -> Case:
    return Case(launch.fake, launch.fake_args, launch.argv, launch.env, **kw)


def _claude(mode: str, prompt: str, *extra: str, fake_args: tuple[str, ...] = ()) -> Case:
    return _case(lc.claude(mode, prompt, *extra, fake_args=fake_args, env=NO_RETRIES))


def _codebuddy(mode: str, prompt: str, *extra: str, fake_args: tuple[str, ...] = ()) -> Case:
    return _case(lc.codebuddy(mode, prompt, *extra, fake_args=fake_args))


def _codex(mode: str, prompt: str, fake_args: tuple[str, ...] = ()) -> Case:
    return _case(lc.codex(mode, prompt, fake_args), setup="codex")


def _codex_ws(mode: str, prompt: str, fake_args: tuple[str, ...] = ()) -> Case:
    return _case(lc.codex(mode, prompt, fake_args, ws=True), setup="codex-ws", drive=True)


def _opencode(mode: str, prompt: str, fake_args: tuple[str, ...] = ()) -> Case:
    return _case(lc.opencode(mode, prompt, fake_args))


def _cb115(mode: str, prompt: str) -> Case:
    return _case(lc.cb115(mode, prompt), pty=True, typed="exit\r", ready=("work > ", 2), wait=30, net=("ws-1",))


def _cbsdk03(mode: str, prompt: str) -> Case:
    return _case(lc.cbsdk03(mode, prompt))


def _cbsdk(mode: str, prompt: str, fake_args: tuple[str, ...] = ()) -> Case:
    return _case(lc.cbsdk(mode, prompt, fake_args))


# client -> case -> Case. Cases: a plain reply, a tool round trip, every error mode of the client's fake.
# HTTP errors use a status the client does not retry forever: Claude Code and Codex have retries set to 0
# (CLAUDE_CODE_MAX_RETRIES, the provider's request_max_retries); the others get a 400.
MATRIX: dict[str, dict[str, Case]] = {
    "claude": {
        "hello": _claude("text", "say hello"),
        "tool": _claude("tool_bash", "run echo hi", "--allowedTools", "Bash(echo:*)"),
        "http_error": _claude("http_error", "say hello", fake_args=("--error-status", "529")),
        "sse_error": _claude("sse_error", "say hello"),
        "sse_drop": _claude("sse_drop", "say hello"),
        # A thinking block before the reply (the fake's `think` mode).
        "think": _claude("think", "think, then say hello"),
        # The Read tool. The file lies outside both runs' work dirs, in the case's SHARED folder: the
        # recorded answer names an absolute path, and a replayed answer cannot change, so a file in the
        # recording's work dir would be named in the replayed request as the recording's path, which the
        # live side (another cwd) rightly does not mask: a real difference made by the case, not by the
        # client. A path both runs share is read the same way in both.
        "tool_read": _claude("tool_read", "read the file", "--allowedTools", "Read",
                             fake_args=("--read-path", "{SHARED}/hello.txt")),
        # A subagent (the fake's `task` mode): the Agent tool call, the subagent's own two requests (one
        # Bash call), the main agent's last request with the subagent's answer.
        "subagent": _claude("task", "use a subagent to run echo", "--allowedTools", "Bash(echo:*)",
                            "--tools", "Agent,Bash"),
    },
    "codebuddy": {
        "hello": _codebuddy("text", "say hello"),
        "tool": _codebuddy("tool", "run echo hi", "--allowedTools", "Bash(echo:*)"),
        "http_error": _codebuddy("http_error", "say hello", fake_args=("--error-status", "400",
                                                                       "--error-type", "invalid_request_error")),
        "sse_error": _codebuddy("sse_error", "say hello", fake_args=("--error-type", "server_error")),
    },
    "codex": {
        "hello": _codex("text", "say hello"),
        "tool": _codex("tool", "run echo hi"),
        "http_error": _codex("http_error", "say hello", ("--error-status", "500", "--error-type", "server_error")),
        "sse_error": _codex("sse_error", "say hello", ("--error-type", "server_error")),
    },
    # Codex over the Responses WebSocket (its default transport): fake_openai_ws.py serves the socket
    # and, on the same port, HTTP + SSE, so a fallback is served too (and shows on the wire).
    "codex-ws": {
        "hello": _codex_ws("text", "say hello"),
        "tool": _codex_ws("tool", "run echo hi"),
        "failed": _codex_ws("failed", "say hello", ("--error-type", "server_error")),
        "close": _codex_ws("close", "say hello"),
        "error_event": _codex_ws("error_event", "say hello", ("--error-status", "400")),
        "refuse": _codex_ws("refuse", "say hello"),
        "plain": _codex_ws("text", "say hello", ("--no-deflate",)),
    },
    "opencode": {
        "hello": _opencode("text", "say hello"),
        "tool": _opencode("tool", "run echo hi"),
        "http_error": _opencode("http_error", "say hello", fake_args=("--error-status", "400",
                                                                      "--error-type", "invalid_request_error")),
        "sse_error": _opencode("sse_error", "say hello", fake_args=("--error-type", "invalid_request_error")),
    },
    "codebuff-1.0.115": {
        "hello": _cb115("text", "say hello"),
        "tool": _cb115("tool", "run echo hi"),
        "error": _cb115("error", "say hello"),
    },
    "codebuff-sdk-0.3.13": {
        "hello": _cbsdk03("text", "say hello"),
        "tool": _cbsdk03("tool", "run echo hi"),
        "error": _cbsdk03("error", "say hello"),
    },
    "codebuff-sdk-0.10.7": {
        "hello": _cbsdk("text", "say hello"),
        "tool": _cbsdk("tool", "run echo hi"),
        "http_error": _cbsdk("http_error", "say hello", fake_args=("--error-status", "400",
                                                                   "--error-type", "invalid_request_error")),
        "sse_error": _cbsdk("sse_error", "say hello", ("--error-type", "server_error")),
    },
}


# The `mismatch` case of every client: `hello` recorded, then replayed to the client asked "say goodbye".
# The request cannot match: the replay server must say so in the protocol's own non-retryable form,
# and the client must give up (within MISMATCH_TIMEOUT) and print wirecap's message.
# The clients keep their default retry settings here (no CLAUDE_CODE_MAX_RETRIES, no Codex retries 0):
# a mismatch answered in a retryable form shows as a client that does not give up.
for _cases in MATRIX.values():
    _h = _cases["hello"]
    _cases["mismatch"] = replace(_h, replay_swap=("say hello", "say goodbye"), setup=_h.setup and _h.setup + "-retries",
                                 drive=False,
                                 env={k: v for k, v in _h.env.items() if k != "CLAUDE_CODE_MAX_RETRIES"})


# Clients whose exit status reports a failed request: on a mismatch they must exit non-zero. The others
# report it inside their output and exit 0: CodeBuddy's `-p` result line ("errors": [...]), and the
# Codebuff SDK drivers of the lab, which print the run's result (the SDKs resolve `run()` with the error).
MISMATCH_EXITS_NONZERO = frozenset({"claude", "codex", "codex-ws", "opencode", "codebuff-1.0.115"})




@dataclass
class CaseResult:
    """What one case did; the suite asserts on it and prints it. `ok` is the verdict, `why` the reasons."""

    client: str
    case: str
    record_rc: int | None = None
    replay_rc: int | None = None
    record_s: float = 0.0
    replay_s: float = 0.0
    total_s: float = 0.0
    server_rc: int | None = None  # `replay serve`'s exit status after SIGTERM (1 = a message went unmatched)
    server_mismatch: list[str] = field(default_factory=list)  # its mismatch lines
    diff_stdout_rc: int | None = None
    diff_stdout: str = ""
    diff_all_rc: int | None = None
    diff_all: str = ""
    client_rc: int | None = None  # `replay client` of the recorded client side against a fresh fake (a `drive` case)
    client_out: str = ""  # ... its stderr (the divergences)
    mismatch_case: bool = False  # a `mismatch` case: judged on how the client fails, not on equality
    client_said: str = ""  # mismatch case: the client's output line that names wirecap's mismatch
    mismatch_to_exit_s: float | None = None  # mismatch case: seconds from the mismatch answer to the client's exit
    mismatch_run_s: float | None = None  # ... and from the client's start to its exit (`mismatch_exit_times`)
    error: str = ""  # the runner itself failed (fake did not start, timeout, ...)
    why: list[str] = field(default_factory=list)
    ok: bool = False

    def judge(self) -> None:
        why = []
        if self.error:
            why.append(self.error)
        if self.mismatch_case:
            if not self.error and (self.server_rc != 1 or not self.server_mismatch):
                why.append(f"replay serve reported no mismatch (exit {self.server_rc})")
            if not self.error and not self.client_said:
                why.append("the client's output does not name the mismatch (no 'wirecap replay' in it)")
            if not self.error and self.client in MISMATCH_EXITS_NONZERO and self.replay_rc == 0:
                why.append("the client exited 0 on a mismatch (it reports failed requests by its exit status)")
            if not self.error and self.mismatch_to_exit_s is None:
                why.append("the replay capture shows no mismatch answer (400 marked x-wirecap-replay, "
                           "a message naming it, or close 1008) followed by the client's exit")
            self.why, self.ok = why, not why
            return
        if self.record_rc is not None and self.replay_rc != self.record_rc:
            why.append(f"client exit {self.replay_rc} on replay, {self.record_rc} when recorded")
        if self.server_rc != 0 or self.server_mismatch:
            first = self.server_mismatch[0] if self.server_mismatch else ""
            why.append(f"replay serve exit {self.server_rc}: {first}"[:600])
        if self.diff_stdout_rc != 0:
            why.append(f"stdout differs (exit {self.diff_stdout_rc}): " + _gist(self.diff_stdout))
        if self.diff_all_rc != 0:
            why.append(f"captures differ (wirecap diff exit {self.diff_all_rc}): " + _gist(self.diff_all))
        if self.client_rc not in (None, 0):
            first = next((ln for ln in self.client_out.splitlines() if ln.startswith(("divergence", "wirecap:"))), "")
            why.append(f"replay client against the fake exit {self.client_rc}: {first}"[:600])
        self.why = why
        self.ok = not why


def _gist(diff_text: str, n: int = 4) -> str:
    """The first N differing fields of a `wirecap diff` (or screen diff) output and its summary line."""
    lines = diff_text.strip().splitlines()
    fields = [ln.strip() for ln in lines if ln.lstrip().startswith(("~ ", "+", "-"))
              and not ln.startswith(("---", "+++")) and ln.strip() not in ("~", "+", "-")]
    # a changed item's field lines ("~   path: a -> b") say more than its header line
    detail = [f for f in fields if ": " in f and "->" in f] or fields
    gist = " | ".join(x[:240] for x in detail[:n])
    return f"{gist} [{lines[-1][:160]}]" if lines else "(no output)"


_CSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")
_REDRAW = re.compile(rb"\x1b\[2K|\r")


def screen_lines(data: bytes) -> list[str]:
    """The text a terminal shows for DATA, line by line: after a carriage return or an erase-line
    (`ESC[2K`) only what follows stays (a spinner's frames overwrite each other), other escape
    sequences are dropped, trailing blanks too."""
    out = []
    for line in data.replace(b"\r\n", b"\n").split(b"\n"):
        last = _REDRAW.split(line)[-1]
        out.append(_CSI.sub(b"", last).decode("utf-8", "replace").rstrip())
    return out


def stdout_bytes(cap: Path) -> bytes:
    """The bytes the client wrote to stdout, from a capture of `wirecap record -- CMD` (uncompressed)."""
    from wirecap.capture.payload import line_bytes

    chunks = []
    with open(cap, encoding="utf-8") as f:
        for ln in f:
            r = json.loads(ln)
            if r.get("type") == "msg" and r.get("ch") == "stdout":
                chunks.append(line_bytes(r))
    return b"".join(chunks)


MISMATCH_MARK = "wirecap replay mismatch"


def mismatch_exit_times(cap: Path) -> tuple[float | None, float | None]:
    """(seconds from the first mismatch answer to the client's exit, seconds from its start to its exit)
    in a capture of `wirecap record -- CLIENT` replayed against a mismatching `replay serve`, both read
    on the recorder's own clock (the records' `t`).

    The mismatch answer is the first record on a network channel (HTTP or WebSocket, as the recording
    proxy saw it on its way to the client) that carries it: a response marked `x-wirecap-replay:
    mismatch`, a message naming "wirecap replay mismatch", or a WebSocket close 1008. Start and exit are
    the process channel's open and close. The first number is the one the issue bounds ("exits within
    5 s of the mismatch"): it leaves out the client's own start-up (node loading its bundle, a REPL
    drawing itself), which says nothing about how it takes a mismatch. None when not found."""
    kinds: dict[str, str] = {}
    t_answer = t_open = t_exit = None
    with open(cap, encoding="utf-8") as f:
        for ln in f:
            r = json.loads(ln)
            ch, rtype, t = r.get("ch"), r.get("type"), r.get("t")
            if rtype == "open":
                kinds[ch] = r.get("kind")
                if r.get("kind") == "process":
                    t_open = t
            if kinds.get(ch) == "process" and rtype == "close":
                t_exit = t
            if t_answer is None and kinds.get(ch) in ("http", "ws") and (
                    (rtype == "response" and (r.get("headers") or {}).get("x-wirecap-replay") == "mismatch")
                    or (rtype == "msg" and r.get("dir") == "s2c" and MISMATCH_MARK in ln)
                    or (rtype == "close" and r.get("code") == 1008)):
                t_answer = t
    to_exit = round(t_exit - t_answer, 2) if t_exit is not None and t_answer is not None else None
    run = round(t_exit - t_open, 2) if t_exit is not None and t_open is not None else None
    return to_exit, run


def compare_screens(a: Path, b: Path, paths_a: dict[str, str], paths_b: dict[str, str]) -> tuple[int, str]:
    """(0, "") when both captures left the same text on the screen, else (1, the first differing lines).
    PATHS_A / PATHS_B: each side's own directories (path -> placeholder, e.g. its work dir -> `<cwd>`),
    replaced in that side's lines only, as `wirecap diff` masks a side's cwd and HOME: codebuff 1.0.115
    prints the folder it works in ("Codebuff will read and write files in "<cwd>""), which is the
    run's own and differs between recording and replay on purpose."""
    def masked(lines: list[str], paths: dict[str, str]) -> list[str]:
        order = sorted(paths, key=len, reverse=True)
        out = []
        for ln in lines:
            for p in order:
                ln = ln.replace(p, paths[p])
            out.append(ln)
        return out

    sa = masked(screen_lines(stdout_bytes(a)), paths_a)
    sb = masked(screen_lines(stdout_bytes(b)), paths_b)
    if sa == sb:
        return 0, f"equal: the same {len(sa)} screen lines"
    import difflib

    d = list(difflib.unified_diff(sa, sb, "recorded", "replayed", lineterm="", n=1))
    return 1, "\n".join(d[:40])


def _kill_group(p: subprocess.Popen) -> None:
    if p.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(5)


class Runner:
    """One case in one private network namespace; files under OUT."""

    def __init__(self, lab: Path, client: str, name: str, out: Path) -> None:
        self.lab, self.client, self.name, self.out = lab, client, name, out
        self.case = MATRIX[client][name]
        self.wirecap = [sys.executable, "-m", "wirecap"]
        self.use_dirs("record")

    def use_dirs(self, tag: str) -> None:
        """HOME, work dir and TMPDIR of the run TAG: OUT/rec/... when recording, OUT/replay-elsewhere/...
        when replaying. Different paths (of a different length) on purpose: a capture made in another
        working directory and HOME must still match, and the client's stdout still diff equal (`wirecap
        diff` and replay matching mask each side's own cwd, HOME and TMPDIR: docs/paths.md)."""
        base = self.out / RUN_DIRS[tag]
        self.home, self.work, self.tmp = base / "home", base / "work", base / "tmp"

    def sub(self, s: str) -> str:
        return lc.substitute(s, {"OPENCODE_CONFIG": lc.opencode_config(PROXY), "LABKIT": str(LABKIT),
                                 "LAB": str(self.lab), "PROXY": PROXY, "WORK": str(self.work),
                                 "SHARED": str(self.out / "shared")})

    def paths(self, tag: str) -> dict[str, str]:
        """The run TAG's directories and what `wirecap diff` calls them."""
        base = self.out / RUN_DIRS[tag]
        return {str(base / "work"): "<cwd>", str(base / "home"): "<home>", str(base / "tmp"): "<tmp>"}

    def fresh_dirs(self) -> None:
        """This run's paths, emptied (a case run again starts from the same state)."""
        for d in (self.home, self.work, self.tmp):
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir(parents=True)
        if self.case.setup and self.case.setup.startswith("codex"):  # ("-retries": Codex's default retries)
            lc.write_codex_config(self.home, PROXY, default_retries=self.case.setup.endswith("-retries"),
                                  websockets=self.case.setup.startswith("codex-ws"))

    def env(self) -> dict[str, str]:
        """The client's whole environment (like the lab runners' `env -i`); wirecap passes it on."""
        env = {"HOME": str(self.home), "TMPDIR": str(self.tmp), "PATH": "/usr/local/bin:/usr/bin:/bin",
               "TERM": "dumb", "LANG": "C.UTF-8", **{k: self.sub(v) for k, v in self.case.env.items()}}
        if os.environ.get("WIRECAP_HOME"):  # wirecap's own CA, made once for the whole suite
            env["WIRECAP_HOME"] = os.environ["WIRECAP_HOME"]
        return env

    def client_run(self, cap: Path, tag: str, timeout: float = CLIENT_TIMEOUT) -> tuple[int | None, float]:
        """The client under `wirecap record -- CMD`, pointed at PROXY, reverse-proxied to BACKEND."""
        self.use_dirs(tag)
        self.fresh_dirs()
        argv = [self.sub(a) for a in self.case.argv]
        if tag == "replay" and self.case.replay_swap:
            was, now = self.case.replay_swap
            argv = [now if a == was else a for a in argv]
        cmd = [*self.wirecap, "record", "-q", "-o", str(cap), "--listen", PROXY, "--reverse", f"http://{BACKEND}",
               *(["--pty"] if self.case.pty else []), "--", *argv]
        stdin_r = os.open(os.devnull, os.O_RDONLY)
        typer = None
        if self.case.typed:
            stdin_r, stdin_w = os.pipe()
            typer = threading.Thread(target=type_slowly, daemon=True,
                                     args=(stdin_w, self.case.typed, self.case.wait, self.case.ready,
                                           self.out / f"{tag}.out"))
        t0 = time.monotonic()
        with open(self.out / f"{tag}.out", "wb") as log:
            p = subprocess.Popen(cmd, env=self.env(), cwd=str(self.work), stdin=stdin_r, stdout=log, stderr=log,
                                 start_new_session=True)
            os.close(stdin_r)
            if typer:
                typer.start()
            try:
                rc: int | None = p.wait(timeout)
            except subprocess.TimeoutExpired:
                _kill_group(p)
                rc = None
        return rc, time.monotonic() - t0

    def start_fake(self, tag: str = "fake") -> subprocess.Popen:
        py = sys.executable
        if self.case.fake == "fake_codebuff_ws.py":  # needs `websockets`: the lab's venv has it
            py = str(self.lab / "venv" / "bin" / "python")
        port = BACKEND.rsplit(":", 1)[1]
        shared = self.out / "shared"
        shared.mkdir(exist_ok=True)
        (shared / "hello.txt").write_text("hello from the shared folder\n")
        p = subprocess.Popen([py, str(FAKES / self.case.fake), *map(self.sub, self.case.fake_args), "--port", port,
                              "--log", str(self.out / f"{tag}.log.jsonl")],
                             stdout=subprocess.DEVNULL, stderr=open(self.out / f"{tag}.stderr", "wb"),  # noqa: SIM115
                             start_new_session=True)
        wait_listening(BACKEND, p, "the fake server")
        return p

    def run(self) -> CaseResult:
        res = CaseResult(self.client, self.name, mismatch_case=self.case.replay_swap is not None)
        t0 = time.monotonic()
        rec, rep = self.out / "rec.jsonl", self.out / "rep.jsonl"
        try:
            fake = self.start_fake()
            try:
                res.record_rc, res.record_s = self.client_run(rec, "record")
            finally:
                fake.terminate()
                fake.wait(10)
            if res.record_rc is None:
                raise RuntimeError(f"the client did not finish within {CLIENT_TIMEOUT:.0f} s when recorded")
            if self.case.drive:
                res.client_rc, res.client_out = self.drive_fake(rec)
            serve = subprocess.Popen([*self.wirecap, "replay", "serve", str(rec), "--listen", BACKEND, "--max-wait", "2"],
                                     stdout=subprocess.DEVNULL, stderr=open(self.out / "serve.stderr", "wb"),  # noqa: SIM115
                                     start_new_session=True)
            try:
                wait_listening(BACKEND, serve, "wirecap replay serve")
                res.replay_rc, res.replay_s = self.client_run(
                    rep, "replay", MISMATCH_TIMEOUT if res.mismatch_case else CLIENT_TIMEOUT)
            finally:
                serve.send_signal(signal.SIGTERM)
                try:
                    res.server_rc = serve.wait(15)
                except subprocess.TimeoutExpired:
                    _kill_group(serve)
                    res.server_rc = None
            lines = (self.out / "serve.stderr").read_text(errors="replace").splitlines()
            res.server_mismatch = [ln for ln in lines if "match" in ln.lower()][:20]
            if res.mismatch_case:
                said = [ln.strip() for ln in (self.out / "replay.out").read_text(errors="replace").splitlines()
                        if "wirecap replay" in ln]  # (from where it names the mismatch, a little before)
                res.client_said = said[0][max(0, said[0].find("wirecap replay") - 30):][:300] if said else ""
                res.mismatch_to_exit_s, res.mismatch_run_s = mismatch_exit_times(rep)
                if res.replay_rc is None:
                    raise RuntimeError(f"the client did not give up within {MISMATCH_TIMEOUT:.0f} s of the mismatch")
            elif res.replay_rc is None:
                raise RuntimeError(f"the client did not finish within {CLIENT_TIMEOUT:.0f} s on replay")
            elif self.case.pty:
                res.diff_stdout_rc, res.diff_stdout = compare_screens(rec, rep, self.paths("record"),
                                                                      self.paths("replay"))
                outs = [self.diff("--ch", ch) for ch in self.case.net]
                res.diff_all_rc = max(rc for rc, _ in outs)
                res.diff_all = "\n".join(text for _, text in outs)
            else:
                res.diff_stdout_rc, res.diff_stdout = self.diff("--ch", "proc")
                res.diff_all_rc, res.diff_all = self.diff()
        except Exception as e:  # the case failed to run: reported, never a traceback in the table
            res.error = f"{type(e).__name__}: {e}"
        res.total_s = time.monotonic() - t0
        res.judge()
        (self.out / "result.json").write_text(json.dumps(asdict(res), indent=1))
        return res

    def drive_fake(self, rec: Path) -> tuple[int, str]:
        """`wirecap replay client` plays the recorded client side of REC's network channels to a fresh
        fake (which makes up new ids: they must be answered) and records it to OUT/client.jsonl."""
        fake = self.start_fake("fake-client")
        try:
            r = subprocess.run([*self.wirecap, "replay", "client", str(rec), "--url", f"http://{BACKEND}", "-o",
                                str(self.out / "client.jsonl"), "--force", "--speed", "0", "--timeout", "20"],
                               capture_output=True, timeout=120)
        finally:
            fake.terminate()
            fake.wait(10)
        return r.returncode, (r.stdout + r.stderr).decode(errors="replace")

    def diff(self, *args: str) -> tuple[int, str]:
        r = subprocess.run([*self.wirecap, "diff", "--no-color", *args, str(self.out / "rec.jsonl"),
                            str(self.out / "rep.jsonl")], capture_output=True, timeout=120)
        return r.returncode, (r.stdout + r.stderr).decode(errors="replace")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--list"]:
        for client, cases in MATRIX.items():
            print(client, " ".join(cases))
        return 0
    if len(argv) != 3 or argv[0] not in MATRIX or argv[1] not in MATRIX[argv[0]]:
        print("usage: realclient.py CLIENT CASE OUT   (--list shows the matrix)", file=sys.stderr)
        return 2
    lab = lab_dir()
    if lab is None:
        print("realclient: no lab (run `make lab`, or set WIRECAP_LAB)", file=sys.stderr)
        return 2
    if not os.environ.get("WIRECAP_IN_NETNS"):
        # A private network namespace: only loopback exists, so nothing leaves the machine and the fixed
        # ports of this case collide with no other run. And a PID namespace whose first process is this
        # runner: when it dies (even by SIGKILL on the suite's timeout), every process of the case dies.
        # Its own /proc too (--mount-proc): with the host's, Codex took its `echo hi` for a process still
        # running (pids differ) and reported "Process running" after a 10 s wait instead of its output.
        script = 'ip link set lo up && exec "$@"'
        ns = ["-n", "-p", "-f", "--kill-child", "--mount-proc"]
        os.execvp("unshare", ["unshare", *ns, "sh", "-c", script, "sh", "env", "WIRECAP_IN_NETNS=1",
                              f"WIRECAP_LAB={lab}", sys.executable, os.path.abspath(__file__), *argv])
    out = Path(argv[2]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("WIRECAP_HOME", str(out / "wirecap-home"))  # wirecap's CA, outside the client's HOME
    res = Runner(lab, argv[0], argv[1], out).run()
    print(f"{res.client} {res.case}: {'ok' if res.ok else 'FAIL'} in {res.total_s:.1f} s", file=sys.stderr)
    for w in res.why:
        print("  " + w, file=sys.stderr)
    return 0 if res.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
