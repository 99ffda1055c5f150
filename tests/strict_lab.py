"""Strict replay of real lab clients, recorded in one place and replayed in another.

    python tests/strict_lab.py [--cases CASE ...] [--keep DIR]      # one JSON line per case

For each case: record the real client against its fake (`wirecap record --reverse FAKE -- CLIENT`,
the cases and the recorder of captures/make_captures.py) with HOME and working directory under lab
copy A, then serve that capture with `wirecap replay serve CAP` (strict, no --ignore) and run the same
client again under lab copy B (another HOME, working directory and TMPDIR: the paths in the system
prompt differ), recorded too. Reports the client's exit status in both runs, the replay server's exit
status and mismatch lines, and `wirecap diff` (events level) of the two runs. Re-executes itself under
`unshare -n` when root (only loopback exists). Needs the lab (WIRECAP_LAB; tests/fixtures/lab/README.md).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("make_captures", REPO / "captures" / "make_captures.py")
mc = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["make_captures"] = mc
_spec.loader.exec_module(mc)  # type: ignore[union-attr]
Case, SJ = mc.Case, mc.SJ

_CB = {"CODEBUDDY_BASE_URL": "http://{PROXY}", "CODEBUDDY_API_KEY": "cb-fake-000",
       "CODEBUDDY_SKIP_BUILTIN_MARKETPLACE": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1"}
_CBBIN = "{LAB}/codebuddy/node_modules/@tencent-ai/agent-sdk/cli/bin/codebuddy"
_OC = {"OPENCODE_CONFIG_CONTENT": "{OPENCODE_CONFIG}", "OPENCODE_DISABLE_MODELS_FETCH": "1",
       "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_SHARE": "1",
       "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "BUN_CONFIG_REGISTRY": "http://{PROXY}/",
       "NPM_CONFIG_REGISTRY": "http://{PROXY}/"}
_CB115 = ["node", "-r", "{LABKIT}/fake/cb115_env.cjs", "{LAB}/cb115/node_modules/codebuff/dist/index.js", "{LAB}/work_cb"]
_CB115_ENV = {"ENVIRONMENT": "local", "NEXT_PUBLIC_BACKEND_URL": "{PROXY}", "NEXT_PUBLIC_APP_URL": "http://{PROXY}",
              "NEXT_PUBLIC_SUPPORT_EMAIL": "support@example.invalid"}
_SDK03 = {"CB_SDK_DIR": "{LAB}/cbsdk0313/node_modules/@codebuff/sdk", "NEXT_PUBLIC_CODEBUFF_BACKEND_URL": "{PROXY}",
          "NEXT_PUBLIC_CODEBUFF_APP_URL": "http://{PROXY}"}
_SDK10 = {"CB_SDK_DIR": "{LAB}/node_modules/@codebuff/sdk", "FAKE_BACKEND": "http://{PROXY}"}


def _codex(name: str, mode: str, prompt: str) -> Case:
    return Case(name, "fake_openai.py", ["--mode", mode],
                ["{LAB}/node_modules/.bin/codex", "exec", "--json", "--skip-git-repo-check", prompt],
                {"OPENAI_API_KEY": "sk-fake-000000"}, workdir="work_codex", home="codex", dialect="codex-exec")


CASES: dict[str, Case] = {c.name: c for c in (
    mc.claude("claude-hello", "text", ["-p", "say hello", *SJ]),
    mc.claude("claude-tool", "tool_bash", ["-p", "run echo hi", *SJ, "--allowedTools", "Bash(echo:*)"]),
    mc.claude("claude-tool-read", "tool_read", ["-p", "read the file", *SJ, "--allowedTools", "Read"]),
    mc.claude("claude-think", "think", ["-p", "think, then say hello", *SJ]),
    mc.claude("claude-http-error", "http_error", ["-p", "say hello", *SJ], extra_env={"CLAUDE_CODE_MAX_RETRIES": "0"},
              fake_args=["--error-status", "529", "--error-type", "overloaded_error"]),
    mc.claude("claude-sse-error", "sse_error", ["-p", "say hello", *SJ, "--include-partial-messages"],
              extra_env={"CLAUDE_CODE_MAX_RETRIES": "0"}, fake_args=["--error-type", "overloaded_error"]),
    Case("codebuddy-hello", "fake_openai.py", ["--mode", "text"], [_CBBIN, "-p", "say hello", *SJ], _CB,
         home="codebuddy", dialect="codebuddy"),
    Case("codebuddy-tool", "fake_openai.py", ["--mode", "tool"],
         [_CBBIN, "-p", "run echo hi", *SJ, "--allowedTools", "Bash(echo:*)"], _CB, home="codebuddy",
         dialect="codebuddy"),
    _codex("codex-hello", "text", "say hello"),
    _codex("codex-tool", "tool", "run echo hi"),
    Case("opencode-hello", "fake_openai.py", ["--mode", "text"],
         ["{LAB}/node_modules/.bin/opencode", "run", "--format", "json", "say hello"], _OC,
         workdir="work_opencode", home="opencode", dialect="opencode"),
    Case("opencode-tool", "fake_openai.py", ["--mode", "tool"],
         ["{LAB}/node_modules/.bin/opencode", "run", "--format", "json", "run echo hi"], _OC,
         workdir="work_opencode", home="opencode", dialect="opencode"),
    Case("cb115-hello", "fake_codebuff_ws.py", ["--mode", "text", "--proto", "npm-app"], [*_CB115, "say hello"],
         _CB115_ENV, workdir="work_cb", home="cb115", pty=True, typed="exit\r", wait=6, tee=False, timeout=60),
    Case("cb115-tool", "fake_codebuff_ws.py", ["--mode", "tool", "--proto", "npm-app"], [*_CB115, "run echo hi"],
         _CB115_ENV, workdir="work_cb", home="cb115", pty=True, typed="exit\r", wait=8, tee=False, timeout=60),
    Case("sdk03-hello", "fake_codebuff_ws.py", ["--mode", "text", "--proto", "sdk"],
         ["node", "{LABKIT}/cb_sdk03_run.cjs", "say hello"], _SDK03, workdir="work_cb", home="cbsdk03"),
    Case("sdk03-tool", "fake_codebuff_ws.py", ["--mode", "tool", "--proto", "sdk"],
         ["node", "{LABKIT}/cb_sdk03_run.cjs", "run echo hi"], _SDK03, workdir="work_cb", home="cbsdk03"),
    Case("sdk10-hello", "fake_openai.py", ["--mode", "text"],
         ["node", "{LABKIT}/cb_sdk_run.mjs", "say hello", "fake-helper"], _SDK10, workdir="work_cb", home="cbsdk",
         dialect="codebuff-events"),
    Case("sdk10-tool", "fake_openai.py", ["--mode", "tool"],
         ["node", "{LABKIT}/cb_sdk_run.mjs", "run echo hi", "fake-helper"], _SDK10, workdir="work_cb",
         home="cbsdk", dialect="codebuff-events"),
)}


def lab_root() -> Path | None:
    for cand in (os.environ.get("WIRECAP_LAB"), str(REPO / ".lab")):
        if cand and (Path(cand) / "node_modules" / ".bin" / "claude").exists():
            return Path(cand)
    return None


def lab_copy(real: Path, d: Path) -> Path:
    """A lab folder of our own (its own home/ and work dirs) sharing the real lab's installs."""
    d.mkdir(parents=True, exist_ok=True)
    for n in ("node_modules", "cb115", "cbsdk0313", "codebuddy", "venv"):
        if (real / n).exists() and not (d / n).exists():
            (d / n).symlink_to(real / n)
    return d


def client_rc(log: Path) -> int | None:
    for line in log.read_text(errors="replace").splitlines():
        if ": client exit " in line:
            with contextlib.suppress(ValueError):
                return int(line.split(": client exit ", 1)[1].split()[0])
    return None


def one(name: str, real: Path, work: Path) -> dict:
    case = CASES[name]
    caps = work / "caps"
    caps.mkdir(parents=True, exist_ok=True)
    tmp = work / "tmp"
    tmp.mkdir(exist_ok=True)
    rec, rep = caps / f"{name}.jsonl", caps / f"{name}.replayed.jsonl"
    out: dict = {"case": name}
    log = tmp / f"{name}.log"
    with open(log, "w") as f, contextlib.redirect_stderr(f):
        mc.make(case, lab_copy(real, work / "labA"), rec, tmp)
    out["record_rc"] = client_rc(log)
    server: dict = {}
    orig = mc.start_fake

    def start_replay(case: Case, tmp: Path) -> tuple[subprocess.Popen, int]:
        pf = tmp / f"{case.name}.rport"
        err = open(tmp / f"{case.name}.replay.stderr", "wb")  # noqa: SIM115
        p = subprocess.Popen([sys.executable, "-m", "wirecap", "replay", "serve", str(rec), "--port-file", str(pf),
                              "--speed", "0", "-q"], stdout=err, stderr=err, start_new_session=True)
        server["proc"] = p
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if pf.exists() and pf.read_text().strip():
                return p, int(pf.read_text())
            time.sleep(0.05)
        raise RuntimeError("replay serve did not listen")

    mc.start_fake = start_replay
    try:
        with open(log, "w") as f, contextlib.redirect_stderr(f):
            mc.make(case, lab_copy(real, work / "labB"), rep, tmp)
    finally:
        mc.start_fake = orig
    out["replay_rc"] = client_rc(log)
    out["serve_rc"] = server["proc"].returncode if "proc" in server else None
    errs = (tmp / f"{name}.replay.stderr").read_text(errors="replace").splitlines()
    out["mismatch"] = [e for e in errs if "mismatch" in e][:3]
    d = subprocess.run([sys.executable, "-m", "wirecap", "diff", "--no-color", str(rec), str(rep)],
                       capture_output=True, text=True, cwd=REPO)
    out["diff_rc"] = d.returncode
    out["diff"] = d.stdout.strip().splitlines()[-1:] + d.stderr.strip().splitlines()[-1:]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--keep", help="keep the captures and logs in this folder")
    args = ap.parse_args()
    real = lab_root()
    if real is None:
        print("no lab (set WIRECAP_LAB)", file=sys.stderr)
        return 2
    if os.geteuid() == 0 and not os.environ.get("WIRECAP_IN_NETNS"):
        os.execvp("unshare", ["unshare", "-n", "sh", "-c", "ip link set lo up && exec \"$@\"", "sh", "env",
                              "WIRECAP_IN_NETNS=1", sys.executable, *sys.argv])
    os.chdir(REPO)  # `python -m wirecap` runs this checkout
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="wirecap-strict-"))
    try:
        for name in args.cases:
            try:
                res = one(name, real, work)
            except Exception as e:  # one broken case must not stop the others
                res = {"case": name, "error": str(e)}
            print(json.dumps(res), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
