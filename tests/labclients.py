"""The lab's real agent CLIs, as wirecap runs them against the lab's fake backends: the one definition
used by the real-client suite (tests/realclient.py) and by the capture maker (captures/make_captures.py).

A client is a `Launch`: the fake server script (tests/fixtures/lab/fake) with its arguments, and the
client's argv and environment. Strings may hold placeholders filled in at run time by `substitute`:
{LAB} (the lab install, `make lab`), {LABKIT} (tests/fixtures/lab), {PROXY} (host:port the client is
pointed at: the recording proxy), {WORK} (its work dir), {OPENCODE_CONFIG} (`opencode_config`), and
whatever else a caller passes. Here too: the config files some clients need (`codex_config`,
`opencode_config`), typing into a terminal client like a person (`type_slowly`) and waiting for a
server to listen (`wait_listening`). Importing this module imports nothing of wirecap or pytest.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

LABKIT = Path(__file__).resolve().parent / "fixtures" / "lab"
FAKES = LABKIT / "fake"
SJ = ("--output-format", "stream-json", "--verbose")
QUIET_CLAUDE = {"DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}


@dataclass(frozen=True)
class Launch:
    """How one client is run: the fake (script, arguments) and the client (argv, environment)."""

    fake: str
    fake_args: tuple[str, ...]
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)


def claude(mode: str, prompt: str, *extra: str, fake_args: tuple[str, ...] = (),
           env: dict[str, str] | None = None) -> Launch:
    """Claude Code `-p PROMPT` in stream-json, its base URL at the proxy (fake_anthropic.py)."""
    return Launch("fake_anthropic.py", ("--mode", mode, *fake_args),
                  ("{LAB}/node_modules/.bin/claude", "-p", prompt, *SJ, *extra),
                  {"ANTHROPIC_BASE_URL": "http://{PROXY}", "ANTHROPIC_API_KEY": "sk-ant-fake-0000000000000000",
                   **QUIET_CLAUDE, **(env or {})})


def codebuddy(mode: str, prompt: str, *extra: str, fake_args: tuple[str, ...] = ()) -> Launch:
    return Launch("fake_openai.py", ("--mode", mode, *fake_args),
                  ("{LAB}/codebuddy/node_modules/@tencent-ai/agent-sdk/cli/bin/codebuddy", "-p", prompt, *SJ, *extra),
                  {"CODEBUDDY_BASE_URL": "http://{PROXY}", "CODEBUDDY_API_KEY": "cb-fake-000",
                   "CODEBUDDY_SKIP_BUILTIN_MARKETPLACE": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1"})


def codex(mode: str, prompt: str, fake_args: tuple[str, ...] = (), *, ws: bool = False) -> Launch:
    """Codex `exec --json`; its provider is configured in HOME/.codex/config.toml (`codex_config`).
    `ws`: against fake_openai_ws.py (the Responses API over WebSocket, HTTP + SSE on the same port),
    for a config with `supports_websockets = true`."""
    return Launch("fake_openai_ws.py" if ws else "fake_openai.py", ("--mode", mode, *fake_args),
                  ("{LAB}/node_modules/.bin/codex", "exec", "--json", "--skip-git-repo-check", prompt),
                  {"OPENAI_API_KEY": "sk-fake-000000"})


def opencode(mode: str, prompt: str, fake_args: tuple[str, ...] = ()) -> Launch:
    return Launch("fake_openai.py", ("--mode", mode, *fake_args),
                  ("{LAB}/node_modules/.bin/opencode", "run", "--format", "json", prompt),
                  {"OPENCODE_CONFIG_CONTENT": "{OPENCODE_CONFIG}", "OPENCODE_DISABLE_MODELS_FETCH": "1",
                   "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
                   "OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
                   "BUN_CONFIG_REGISTRY": "http://{PROXY}/", "NPM_CONFIG_REGISTRY": "http://{PROXY}/"})


def cb115(mode: str, prompt: str, work: str = "{WORK}") -> Launch:
    """The legacy Codebuff CLI 1.0.115 over WebSocket: a terminal program (run it on a pty, type `exit`)."""
    return Launch("fake_codebuff_ws.py", ("--mode", mode, "--proto", "npm-app"),
                  ("node", "-r", "{LABKIT}/fake/cb115_env.cjs", "{LAB}/cb115/node_modules/codebuff/dist/index.js",
                   work, prompt),
                  {"ENVIRONMENT": "local", "NEXT_PUBLIC_BACKEND_URL": "{PROXY}", "NEXT_PUBLIC_APP_URL": "http://{PROXY}",
                   "NEXT_PUBLIC_SUPPORT_EMAIL": "support@example.invalid"})


def cbsdk03(mode: str, prompt: str) -> Launch:
    """@codebuff/sdk 0.3.13 over WebSocket, driven by the lab's cb_sdk03_run.cjs."""
    return Launch("fake_codebuff_ws.py", ("--mode", mode, "--proto", "sdk"),
                  ("node", "{LABKIT}/cb_sdk03_run.cjs", prompt),
                  {"CB_SDK_DIR": "{LAB}/cbsdk0313/node_modules/@codebuff/sdk",
                   "NEXT_PUBLIC_CODEBUFF_BACKEND_URL": "{PROXY}", "NEXT_PUBLIC_CODEBUFF_APP_URL": "http://{PROXY}"})


def cbsdk(mode: str, prompt: str, fake_args: tuple[str, ...] = ()) -> Launch:
    """@codebuff/sdk 0.10.7 over HTTP+SSE, driven by the lab's cb_sdk_run.mjs."""
    return Launch("fake_openai.py", ("--mode", mode, *fake_args),
                  ("node", "{LABKIT}/cb_sdk_run.mjs", prompt, "fake-helper"),
                  {"CB_SDK_DIR": "{LAB}/node_modules/@codebuff/sdk", "FAKE_BACKEND": "http://{PROXY}"})


def opencode_config(proxy: str) -> str:
    """OPENCODE_CONFIG_CONTENT: one provider, the fake at `proxy`, every tool allowed."""
    return ('{"$schema":"https://opencode.ai/config.json","provider":{"fake":{"npm":"@ai-sdk/openai-compatible",'
            f'"name":"Fake local","options":{{"baseURL":"http://{proxy}/v1","apiKey":"sk-fake-000"}},'
            '"models":{"fake-model":{"name":"Fake Model","tool_call":true}}}},"model":"fake/fake-model",'
            '"small_model":"fake/fake-model","autoupdate":false,"share":"disabled",'
            '"permission":{"bash":"allow","edit":"allow"}}')


def codex_config(proxy: str, *, default_retries: bool = False, websockets: bool = False) -> str:
    """HOME/.codex/config.toml: the fake at `proxy` as the provider, no retries (or Codex's default ones),
    over HTTP + SSE only, or (`websockets`) over the Responses WebSocket first, Codex's default transport."""
    cfg = f"""model = "gpt-5.5"
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
base_url = "http://{proxy}/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
supports_websockets = {"true" if websockets else "false"}
request_max_retries = 0
stream_max_retries = 0
"""
    if default_retries:
        cfg = "".join(ln for ln in cfg.splitlines(keepends=True) if "_max_retries" not in ln)
    return cfg


def write_codex_config(home: Path, proxy: str, *, default_retries: bool = False, websockets: bool = False) -> None:
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    (home / ".codex" / "config.toml").write_text(codex_config(proxy, default_retries=default_retries,
                                                              websockets=websockets))


def substitute(s: str, values: dict[str, str]) -> str:
    """`s` with each {NAME} of `values` replaced (in the order given)."""
    for name, value in values.items():
        s = s.replace("{" + name + "}", value)
    return s


def type_slowly(fd: int, text: str, wait: float, ready: tuple[str, int] | None = None,
                log: Path | None = None) -> None:
    """Type like a person (codebuff 1.0.115 ignores a fast write: paste detection), once the client's
    output in LOG holds READY's text READY's count times (its prompt again: the reply is done), or
    after WAIT seconds: a loaded machine only makes it later, never too early. Closes `fd` after."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if ready and log is not None and log.exists() and log.read_bytes().count(ready[0].encode()) >= ready[1]:
            time.sleep(0.5)
            break
        time.sleep(0.1)
    with contextlib.suppress(OSError):
        for ch in text:
            os.write(fd, ch.encode())
            time.sleep(0.1)
        time.sleep(3)
    with contextlib.suppress(OSError):
        os.close(fd)


def wait_listening(hostport: str, proc: subprocess.Popen, what: str, timeout: float = 30) -> None:
    """Return once something accepts connections on HOST:PORT; raise if `proc` exits first or time runs out."""
    host, port = hostport.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited ({proc.returncode}) before listening on {hostport}")
        with socket.socket() as s:
            if s.connect_ex((host, int(port))) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {hostport} within {timeout:.0f} s")


def can_unshare() -> bool:
    """True when this process may make a private network namespace (root and a working `unshare -n`): what
    every real-client run needs, so that nothing can leave the machine."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=20).returncode == 0
