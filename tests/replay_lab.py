"""Real-client replay mismatch runs: record a lab client against its fake, replay the capture with
another prompt, and time how long the client takes to give up (and what it printed).

    python tests/replay_lab.py [--wirecap PATH] [--timeout S] CLIENT...   # prints one JSON line per client

CLIENT: claude, codebuddy, codex, opencode, cb115, sdk03, sdk0107. Re-executes itself under
`unshare -n` (only loopback exists), like the lab's runners; needs the lab (WIRECAP_LAB, see
tests/fixtures/lab/README.md) and root. Each run gets its own HOME, work dir and TMPDIR under a
temporary folder. The recorder is `wirecap record --reverse FAKE --listen 127.0.0.1:P` and the replay
`wirecap replay serve CAP --port P`, so the client's configuration (base URL, config files) is the
same in both runs; only the prompt differs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIX = HERE / "fixtures" / "lab"
FAKE = FIX / "fake"
MARK = "wirecap replay mismatch"
PROMPT_A = "say hello"
PROMPT_B = "say goodbye, in other words"
CLIENTS = ("claude", "codebuddy", "codex", "opencode", "cb115", "sdk03", "sdk0107")


def lab_root() -> Path | None:
    for cand in (os.environ.get("WIRECAP_LAB"), str(HERE.parent / ".lab")):
        if cand and (Path(cand) / "node_modules" / ".bin" / "claude").exists():
            return Path(cand)
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port_file(path: Path, proc: subprocess.Popen, timeout: float = 30) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text().strip())
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[:3]} exited with {proc.returncode} before listening")
        time.sleep(0.05)
    raise RuntimeError(f"{proc.args[:3]} did not listen in {timeout}s")


@dataclass
class Run:
    rc: int | None
    seconds: float
    first_mark: float | None  # seconds until the output first named the mismatch
    out: str


def run_client(argv: list[str], env: dict[str, str], cwd: Path, timeout: float, stdin_script=None) -> Run:
    """Run a client, collecting stdout+stderr with the time the mismatch text first showed up."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.PIPE if stdin_script else subprocess.DEVNULL, start_new_session=True)
    chunks: list[bytes] = []
    first: list[float] = []

    def reader() -> None:
        assert proc.stdout is not None
        while True:
            b = proc.stdout.read1(65536)
            if not b:
                return
            chunks.append(b)
            if not first and MARK.encode() in b"".join(chunks[-3:]):
                first.append(time.monotonic() - start)

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    if stdin_script:
        threading.Thread(target=stdin_script, args=(proc, first), daemon=True).start()
    try:
        rc: int | None = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        rc = None
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    seconds = time.monotonic() - start
    t.join(5)
    return Run(rc, round(seconds, 2), round(first[0], 2) if first else None,
               b"".join(chunks).decode("utf-8", "replace"))


def cb115_typist(proc: subprocess.Popen, first: list[float], wait: float = 8.0) -> None:
    """codebuff 1.0.115 is a REPL: type `exit` (slowly, its paste detection drops fast input) once it
    showed the mismatch or after `wait` seconds."""
    start = time.monotonic()
    while time.monotonic() - start < wait and not first and proc.poll() is None:
        time.sleep(0.1)
    time.sleep(0.5)
    try:
        for ch in "exit\r":
            proc.stdin.write(ch.encode())
            proc.stdin.flush()
            time.sleep(0.1)
    except (BrokenPipeError, OSError, ValueError):
        pass


class Client:
    """One lab client: its fake, its command line and environment for a backend at 127.0.0.1:PORT."""

    def __init__(self, name: str, lab: Path, root: Path) -> None:
        self.name, self.lab, self.root = name, lab, root
        self.home = root / "home"
        self.work = root / "work"
        self.tmp = root / "tmp"
        for d in (self.home, self.work, self.tmp):
            d.mkdir(parents=True, exist_ok=True)

    def fake(self) -> list[str]:
        py = str(self.lab / "venv" / "bin" / "python")
        if self.name == "claude":
            return [sys.executable, str(FAKE / "fake_anthropic.py"), "--mode", "text"]
        if self.name == "cb115":
            return [py, str(FAKE / "fake_codebuff_ws.py"), "--mode", "text"]
        if self.name == "sdk03":
            return [py, str(FAKE / "fake_codebuff_ws.py"), "--proto", "sdk", "--mode", "text"]
        return [sys.executable, str(FAKE / "fake_openai.py"), "--mode", "text"]

    def command(self, port: int, prompt: str) -> tuple[list[str], dict[str, str]]:
        lab, base = self.lab, f"http://127.0.0.1:{port}"
        env = {"HOME": str(self.home), "TMPDIR": str(self.tmp), "PATH": "/usr/local/bin:/usr/bin:/bin",
               "TERM": "dumb"}
        quiet = {"DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1"}
        n = self.name
        if n == "claude":
            env |= quiet | {"ANTHROPIC_BASE_URL": base, "ANTHROPIC_API_KEY": "sk-ant-fake-0000000000000000",
                            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
            return [str(lab / "node_modules/.bin/claude"), "-p", prompt, "--output-format", "stream-json",
                    "--verbose"], env
        if n == "codebuddy":
            env |= quiet | {"CODEBUDDY_BASE_URL": base, "CODEBUDDY_API_KEY": "cb-fake-000",
                            "CODEBUDDY_SKIP_BUILTIN_MARKETPLACE": "1"}
            return [str(lab / "codebuddy/node_modules/@tencent-ai/agent-sdk/cli/bin/codebuddy"), "-p", prompt,
                    "--output-format", "stream-json", "--verbose"], env
        if n == "codex":
            cfg = self.home / ".codex"
            cfg.mkdir(exist_ok=True)
            (cfg / "config.toml").write_text(f'''model = "gpt-5.5"
model_provider = "fake"
check_for_update_on_startup = false

[features]
plugins = false
remote_plugin = false
apps = false
plugin_sharing = false
tool_suggest = false
in_app_updates = false

[analytics]
enabled = false

[model_providers.fake]
name = "Fake local"
base_url = "{base}/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
supports_websockets = false
''')
            env |= {"OPENAI_API_KEY": "sk-fake-000000"}
            return [str(lab / "node_modules/.bin/codex"), "exec", "--json", "--skip-git-repo-check", prompt], env
        if n == "opencode":
            cfg = {"$schema": "https://opencode.ai/config.json",
                   "provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "Fake local",
                                         "options": {"baseURL": f"{base}/v1", "apiKey": "sk-fake-000"},
                                         "models": {"fake-model": {"name": "Fake Model", "tool_call": True}}}},
                   "model": "fake/fake-model", "small_model": "fake/fake-model", "autoupdate": False,
                   "share": "disabled", "permission": {"bash": "allow", "edit": "allow"}}
            env |= {"OPENCODE_CONFIG_CONTENT": json.dumps(cfg), "OPENCODE_DISABLE_MODELS_FETCH": "1",
                    "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
                    "OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
                    "BUN_CONFIG_REGISTRY": base + "/", "NPM_CONFIG_REGISTRY": base + "/"}
            return [str(lab / "node_modules/.bin/opencode"), "run", "--format", "json", prompt], env
        if n == "cb115":
            env |= {"ENVIRONMENT": "local", "NEXT_PUBLIC_BACKEND_URL": f"127.0.0.1:{port}",
                    "NEXT_PUBLIC_APP_URL": base, "NEXT_PUBLIC_SUPPORT_EMAIL": "support@example.invalid"}
            inner = (f"node -r '{FAKE / 'cb115_env.cjs'}' '{lab / 'cb115/node_modules/codebuff/dist/index.js'}' "
                     f"'{self.work}' '{prompt}'")
            return ["script", "-qefc", inner, "/dev/null"], env
        if n == "sdk03":
            env |= {"CB_SDK_DIR": str(lab / "cbsdk0313/node_modules/@codebuff/sdk"),
                    "NEXT_PUBLIC_CODEBUFF_BACKEND_URL": f"127.0.0.1:{port}", "NEXT_PUBLIC_CODEBUFF_APP_URL": base}
            return ["node", str(FIX / "cb_sdk03_run.cjs"), prompt], env
        if n == "sdk0107":
            env |= {"CB_SDK_DIR": str(lab / "node_modules/@codebuff/sdk"), "FAKE_BACKEND": base}
            return ["node", str(FIX / "cb_sdk_run.mjs"), prompt, "fake-helper"], env
        raise ValueError(n)


def stop(proc: subprocess.Popen, timeout: float = 20) -> tuple[int | None, str]:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return proc.returncode, (err or b"").decode("utf-8", "replace")


def one(name: str, lab: Path, wirecap: list[str], timeout: float, keep: Path | None) -> dict:
    root = Path(tempfile.mkdtemp(prefix=f"replay-{name}-"))
    c = Client(name, lab, root)
    port = free_port()
    cap = root / "cap.jsonl"
    stdin = cb115_typist if name == "cb115" else None
    res: dict = {"client": name}
    pf = root / "fake.port"
    fake = subprocess.Popen([*c.fake(), "--portfile", str(pf), "--log", str(root / "fake.log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        fport = wait_port_file(pf, fake)
        rpf = root / "rec.port"
        rec = subprocess.Popen([*wirecap, "record", "-q", "-o", str(cap), "--reverse", f"http://127.0.0.1:{fport}",
                                "--listen", f"127.0.0.1:{port}", "--port-file", str(rpf)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            wait_port_file(rpf, rec)
            argv, env = c.command(port, PROMPT_A)
            r1 = run_client(argv, env, c.work, timeout, stdin)
        finally:
            stop(rec)
    finally:
        fake.terminate()
        fake.wait(10)
    res["record_rc"] = r1.rc
    res["record_seconds"] = r1.seconds
    spf = root / "serve.port"
    serve = subprocess.Popen([*wirecap, "replay", "serve", str(cap), "--port", str(port), "--speed", "0",
                              "--port-file", str(spf), "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_port_file(spf, serve)
        argv, env = c.command(port, PROMPT_B)
        r2 = run_client(argv, env, c.work, timeout, stdin)
    finally:
        src, serr = stop(serve)
    res |= {"rc": r2.rc, "seconds": r2.seconds, "first_mark": r2.first_mark,
            "client_says_mismatch": MARK in r2.out,
            "client_lines": [ln for ln in r2.out.splitlines() if MARK in ln or "rror" in ln][:6],
            "client_tail": r2.out[-1500:], "serve_rc": src, "serve_stderr": serr[-3000:]}
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(cap, keep / f"{name}.jsonl")
        (keep / f"{name}.replay.out").write_text(r2.out)
        (keep / f"{name}.serve.err").write_text(serr)
    shutil.rmtree(root, ignore_errors=True)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("clients", nargs="+", choices=CLIENTS)
    ap.add_argument("--wirecap", default=None, help="wirecap executable (default: this Python's -m wirecap)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds a client may run")
    ap.add_argument("--keep", default=None, help="copy captures and outputs into this folder")
    a = ap.parse_args()
    if not os.environ.get("REPLAY_LAB_INNS"):
        os.execvpe("unshare", ["unshare", "-n", sys.executable, *sys.argv],
                   {**os.environ, "REPLAY_LAB_INNS": "1"})
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    lab = lab_root()
    if lab is None:
        print("lab not installed (set WIRECAP_LAB)", file=sys.stderr)
        return 2
    wirecap = [a.wirecap] if a.wirecap else [sys.executable, "-m", "wirecap"]
    for name in a.clients:
        try:
            res = one(name, lab, wirecap, a.timeout, Path(a.keep) if a.keep else None)
        except Exception as e:  # noqa: BLE001 - report and go on with the next client
            res = {"client": name, "error": f"{type(e).__name__}: {e}"}
        print(json.dumps(res), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
