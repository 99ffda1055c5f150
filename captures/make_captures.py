#!/usr/bin/env python3
"""Re-make the lab captures in this folder: real agent CLIs against the lab's fake backends.

For each case: start the fake server (tests/fixtures/lab/fake), then run the client through the real
CLI, `wirecap record -o CAP --reverse http://FAKE --listen 127.0.0.1:P -- CLIENT ...`, with the
client's base URL pointed at P: the proxy and the tee write ONE capture on one clock. Network-only
cases run a standalone `wirecap record --reverse` beside the client and stop it with SIGINT.
Redaction is on (the default). Needs the lab (`make lab`); runs inside a private network
namespace (`unshare -n`, loopback only) when root, else on 127.0.0.1 directly. How each client is
launched (argv, environment, its fake, config files) is defined once, in tests/labclients.py, which
the real-client suite uses too.

    .venv/bin/python captures/make_captures.py            # every case
    .venv/bin/python captures/make_captures.py --only claude-code-2.1.197-hello --force
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))  # the lab's clients are defined once, beside the real-client suite

import labclients as lc  # noqa: E402
from labclients import FAKES, LABKIT, type_slowly, wait_listening  # noqa: E402


@dataclass
class Case:
    name: str
    fake: str  # fake server script in tests/fixtures/lab/fake
    fake_args: tuple[str, ...]
    argv: tuple[str, ...]  # {LAB}, {PROXY} (host:port), {LABKIT} substituted
    env: dict[str, str] = field(default_factory=dict)
    workdir: str = "work_main"
    home: str = "claude"
    dialect: str | None = None
    pty: bool = False
    typed: str | None = None  # typed on the client's stdin, one character every 100 ms, after `wait` s
    wait: float = 0.0
    tee: bool = True  # False: only the network side is recorded (the client's output goes to the log)
    timeout: float = 120
    https: bool = False  # the fake speaks TLS (self-signed); wirecap runs as a regular proxy with its CA


def case(name: str, launch: lc.Launch, **kw) -> Case:
    return Case(name, launch.fake, launch.fake_args, launch.argv, launch.env, **kw)


NO_RETRIES = {"CLAUDE_CODE_MAX_RETRIES": "0"}
CB = {"workdir": "work_cb"}
CASES = [
    case("claude-code-2.1.197-hello", lc.claude("text", "say hello"), dialect="claude-code"),
    case("claude-code-2.1.197-tool-bash", lc.claude("tool_bash", "run echo hi", "--allowedTools", "Bash(echo:*)"),
         dialect="claude-code"),
    # A subagent: the main agent's Agent tool call starts one, which runs Bash once and answers; the main
    # agent gets that answer as the tool's result (stdout: the subagent's lines carry parent_tool_use_id).
    case("claude-code-2.1.197-subagent",
         lc.claude("task", "use a subagent to run echo", "--allowedTools", "Bash(echo:*)", "--tools", "Agent,Bash"), dialect="claude-code"),
    case("claude-code-2.1.197-partial-messages", lc.claude("text", "say hello", "--include-partial-messages"),
         dialect="claude-code"),
    case("claude-code-2.1.197-overloaded-error",
         lc.claude("http_error", "say hello", env=NO_RETRIES,
                   fake_args=("--error-status", "529", "--error-type", "overloaded_error")), dialect="claude-code"),
    case("claude-code-2.1.197-stream-error",
         lc.claude("sse_error", "say hello", "--include-partial-messages", env=NO_RETRIES,
                   fake_args=("--error-type", "overloaded_error")), dialect="claude-code"),
    # (a tool round trip is two 100 KB requests: over the 200 KB budget of this folder)
    case("codebuddy-2.117.0-hello", lc.codebuddy("text", "say hello"), home="codebuddy", dialect="codebuddy"),
    case("codex-0.169.0-hello", lc.codex("text", "say hello"), workdir="work_codex", home="codex",
         dialect="codex-exec"),
    # Codex over its default transport, the Responses WebSocket (HTTP + SSE on the same port for a fallback).
    case("codex-0.169.0-ws-tool", lc.codex("tool", "run echo hi", ws=True), workdir="work_codex", home="codex-ws",
         dialect="codex-exec"),
    case("codex-0.169.0-ws-fallback", lc.codex("failed", "say hello", ("--error-type", "server_error"), ws=True),
         workdir="work_codex", home="codex-ws", dialect="codex-exec"),
    case("opencode-1.18.33-hello", lc.opencode("text", "say hello"), workdir="work_opencode", home="opencode",
         dialect="opencode"),
    case("codebuff-cli-1.0.115-ws", lc.cb115("tool", "run echo hi", work="{LAB}/work_cb"), **CB, home="cb115",
         pty=True, typed="exit\r", wait=8, tee=False, timeout=60),
    case("codebuff-sdk-0.3.13-ws-tool", lc.cbsdk03("tool", "run echo hi"), **CB, home="cbsdk03", tee=False),
    case("codebuff-sdk-0.10.7-http", lc.cbsdk("text", "say hello"), **CB, home="cbsdk", dialect="codebuff-events"),
    # The same client over HTTPS through wirecap as a regular proxy: TLS decrypted with wirecap's CA.
    Case("codebuff-sdk-0.10.7-https-ca", "fake_openai.py", ("--mode", "text"),
         ("node", "-r", "{TMP}/fetch-proxy.cjs", "{LABKIT}/cb_sdk_run.mjs", "say hello", "fake-helper"),
         {"CB_SDK_DIR": "{LAB}/node_modules/@codebuff/sdk", "FAKE_BACKEND": "https://{FAKE}",
          "UNDICI_PATH": "{LAB}/node_modules/undici"},
         workdir="work_cb", home="cbsdk", dialect="codebuff-events", https=True),
]


# Serve a fake over TLS with a throwaway self-signed certificate (the upstream of an HTTPS capture).
TLS_WRAPPER = """
import ssl, sys, runpy, http.server
cert, key, script = sys.argv[1:4]
class TLSServer(http.server.ThreadingHTTPServer):
    def server_bind(self):
        super().server_bind()
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.socket = ctx.wrap_socket(self.socket, server_side=True)
http.server.ThreadingHTTPServer = TLSServer
sys.argv = [script] + sys.argv[4:]
sys.path.insert(0, script.rsplit("/", 1)[0])
runpy.run_path(script, run_name="__main__")
"""
# Node 20's fetch ignores HTTP(S)_PROXY: this preload sends it through the proxy wirecap names.
FETCH_PROXY = """const { setGlobalDispatcher, ProxyAgent } = require(process.env.UNDICI_PATH || 'undici');
if (process.env.HTTPS_PROXY) setGlobalDispatcher(new ProxyAgent(process.env.HTTPS_PROXY));
"""


def start_fake(case: Case, tmp: Path) -> tuple[subprocess.Popen, int]:
    portfile = tmp / f"{case.name}.port"
    log = tmp / f"{case.name}.fake.log"
    prefix = [sys.executable]
    if case.https:
        cert, key = tmp / "fake-cert.pem", tmp / "fake-key.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                        str(cert), "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                       check=True, capture_output=True)
        (tmp / "fetch-proxy.cjs").write_text(FETCH_PROXY)
        prefix = [sys.executable, "-c", TLS_WRAPPER, str(cert), str(key)]
    p = subprocess.Popen([*prefix, str(FAKES / case.fake), *case.fake_args, "--log", str(log),
                          "--portfile", str(portfile)], stderr=open(tmp / f"{case.name}.fake.stderr", "wb"),  # noqa: SIM115
                         start_new_session=True)
    for _ in range(100):
        if portfile.exists() and portfile.read_text().strip():
            return p, int(portfile.read_text().strip())
        if p.poll() is not None:
            break
        time.sleep(0.1)
    p.kill()
    raise SystemExit(f"{case.name}: the fake server did not start (see {tmp})")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make(case: Case, lab: Path, out: Path, tmp: Path) -> None:
    """One case through the real CLI: `wirecap record --reverse FAKE --listen P [-- CLIENT]`."""
    fake, fake_port = start_fake(case, tmp)
    pxy = f"127.0.0.1:{free_port()}"
    procs: list[subprocess.Popen] = []
    try:
        home = lab / "home" / case.home
        home.mkdir(parents=True, exist_ok=True)
        (lab / case.workdir).mkdir(parents=True, exist_ok=True)
        ctmp = lab / "tmpdir"
        ctmp.mkdir(exist_ok=True)
        if case.home.startswith("codex"):
            lc.write_codex_config(home, pxy, websockets=case.home == "codex-ws")

        def sub(s: str) -> str:
            return lc.substitute(s, {"OPENCODE_CONFIG": lc.opencode_config(pxy), "LAB": str(lab), "PROXY": pxy,
                                     "LABKIT": str(LABKIT), "TMP": str(tmp), "FAKE": f"127.0.0.1:{fake_port}"})

        argv = [sub(a) for a in case.argv]
        # The client's whole environment (like the lab runners' `env -i`); wirecap passes it on to CMD.
        env = {"HOME": str(home), "TMPDIR": str(ctmp), "PATH": "/usr/local/bin:/usr/bin:/bin", "TERM": "dumb",
               **{k: sub(v) for k, v in case.env.items()}}
        cwd = str(lab / case.workdir)
        record = [sys.executable, "-m", "wirecap", "record", "-o", str(out), "--force", "-q", "--listen", pxy]
        if case.https:  # regular proxy: CONNECT, decrypted with wirecap's CA; the fake's cert is self-signed
            record.append("--ssl-insecure")
        else:
            record += ["--reverse", f"http://127.0.0.1:{fake_port}"]
        stdin_r = os.open(os.devnull, os.O_RDONLY)
        typer = None
        if case.typed:
            stdin_r, stdin_w = os.pipe()
            typer = threading.Thread(target=type_slowly, args=(stdin_w, case.typed, case.wait), daemon=True)
        client_log = open(tmp / f"{case.name}.client.out", "wb")  # noqa: SIM115
        t0 = time.monotonic()
        if case.tee:  # proxy + tee in one capture: the client runs under `wirecap record -- CMD`
            extra = (["--dialect", case.dialect] if case.dialect else []) + (["--pty"] if case.pty else [])
            p = subprocess.Popen([*record, *extra, "--", *argv], env=env, cwd=cwd, stdin=stdin_r,
                                 stdout=client_log, stderr=client_log, start_new_session=True)
            procs.append(p)
            if typer:
                typer.start()
            rc = p.wait(case.timeout)
        else:  # network only: a standalone recorder, the client beside it
            rec = subprocess.Popen(record, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=client_log,
                                   stderr=client_log, start_new_session=True)
            procs.append(rec)
            wait_listening(pxy, rec, "wirecap record")
            if case.pty:
                argv = ["script", "-qefc", " ".join(f"'{a}'" for a in argv), "/dev/null"]
            p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=stdin_r, stdout=client_log,
                                 stderr=subprocess.STDOUT, start_new_session=True)
            procs.append(p)
            if typer:
                typer.start()
            rc = p.wait(case.timeout)
            time.sleep(0.3)  # the last close frames
            rec.send_signal(signal.SIGINT)  # Ctrl-C: the recorder writes `end` and exits
            rec.wait(20)
        with contextlib.suppress(OSError):
            os.close(stdin_r)
        client_log.close()
        print(f"{case.name}: client exit {rc} in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    finally:
        for p in procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)
        fake.terminate()
        fake.wait(5)
    size = out.stat().st_size
    print(f"{case.name}: {out.name} {size // 1024} KB", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", default=[], help="case name (repeatable)")
    ap.add_argument("--lab", default=os.environ.get("WIRECAP_LAB", str(REPO / ".lab")))
    ap.add_argument("--out", default=str(HERE), help="where the captures go (default: this folder)")
    ap.add_argument("--force", action="store_true", help="replace existing captures")
    ap.add_argument("--no-netns", action="store_true", help="do not re-run inside `unshare -n`")
    ap.add_argument("--list", action="store_true", help="print the case names and exit")
    args = ap.parse_args()
    if args.list:
        print("\n".join(c.name for c in CASES))
        return 0
    lab = Path(args.lab).resolve()
    if not (lab / "node_modules" / ".bin" / "claude").exists():
        raise SystemExit(f"no lab at {lab} (run `make lab`, or set WIRECAP_LAB)")
    if not args.no_netns and os.geteuid() == 0 and not os.environ.get("WIRECAP_IN_NETNS"):
        # A private network namespace: only loopback exists, so nothing can leave the machine.
        script = "ip link set lo up && exec \"$@\""
        os.execvp("unshare", ["unshare", "-n", "sh", "-c", script, "sh", "env", "WIRECAP_IN_NETNS=1",
                              sys.executable, *sys.argv])
    cases = [c for c in CASES if not args.only or c.name in args.only]
    if not cases:
        raise SystemExit(f"no case named {args.only}; --list shows them")
    tmp = Path(tempfile.mkdtemp(prefix="wirecap-captures-"))
    failed = 0
    for case in cases:
        out = Path(args.out) / f"{case.name}.jsonl"
        if out.exists() and not args.force:
            print(f"{case.name}: exists, skipped (--force to re-make)", file=sys.stderr)
            continue
        try:
            make(case, lab, out, tmp)
        except Exception as e:  # one broken case must not stop the others
            failed += 1
            print(f"{case.name}: FAILED: {e}", file=sys.stderr)
    if failed:
        print(f"logs kept in {tmp}", file=sys.stderr)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
