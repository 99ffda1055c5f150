#!/usr/bin/env python3
"""Record the real Codex over its Responses WebSocket through `wirecap record`, and prove the capture exact.

    python tests/codexws_record.py reverse|proxy FAKE_MODE OUT [--no-deflate] [--unset=VAR...] [--timeout=S]
    (re-runs itself under unshare -n; --unset: remove VAR from Codex's environment, e.g. CODEX_CA_CERTIFICATE;
    --timeout: stop the recording after S seconds, default 90: record_rc is then null)

Inside a private network namespace (`unshare -n`: only loopback), fake_openai_ws.py runs with `--frames`
(its exact log of every WebSocket message it received and sent), then `wirecap record` runs the lab's
Codex (`exec --json "say hello"`, `supports_websockets = true`):

- `reverse`: `wirecap record --reverse http://FAKE -- codex`, Codex's base_url at the proxy (ws://);
- `proxy`: the forward-proxy mode, `wirecap record -- codex` (HTTPS_PROXY and wirecap's CA in Codex's
  environment: CODEX_CA_CERTIFICATE). Codex's base_url is https:// (wss://) on a TLS terminator in
  front of the fake (a self-signed certificate: the proxy runs with --ssl-insecure), so Codex speaks wss
  to the proxy, which decrypts it with wirecap's CA.

Then `compare()` checks the capture against the fake's log: the same WebSocket connections, every
message in order with its direction, opcode and payload bytes identical, each with a time consistent
with the fake's clock (recorded after the fake sent it, before the fake read it), and the handshake in
the `open` record (status, request headers as the fake received them, response headers as it sent
them, the negotiated extensions, no subprotocol). Writes OUT/result.json (ok, why, numbers, whether Codex
fell back to HTTP: `http_responses_calls`, `fallback_message`) and keeps every file in OUT (cap.jsonl,
frames.jsonl, wire.jsonl, stdout/stderr). Exit 0 when the capture is exact.

Needs root (for `unshare -n`), the lab (WIRECAP_LAB or <repo>/.lab). Every step is bounded in time.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import labclients  # noqa: E402
from conftest import lab_dir  # noqa: E402
from record_util import self_signed_cert  # noqa: E402

FAKE_PORT = 40101
TLS_PORT = 40102
PROXY_PORT = 40100
CLIENT_TIMEOUT = 90
# Clock slack between the recorder's timeline (created + t, rounded to the microsecond) and the fake's
# time.time(): the same machine clock, so only rounding and the monotonic/wall split remain.
CLOCK_SLACK = 0.002


# --- a TLS terminator in front of the fake (the proxy mode's https:// server) ---------------------------
def self_signed(tmp: Path) -> tuple[Path, Path]:
    """(certificate, key) of a throwaway server certificate for 127.0.0.1 (`record_util.self_signed_cert`)."""
    d = self_signed_cert(tmp)
    return d / "cert.pem", d / "key.pem"


class TlsTerminator:
    """Accepts TLS on `port` and pipes the plaintext both ways to 127.0.0.1:`target` (byte for byte)."""

    def __init__(self, port: int, target: int, cert: Path, key: Path) -> None:
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.ctx.set_alpn_protocols(["http/1.1"])
        self.target = target
        self.sock = socket.create_server(("127.0.0.1", port))
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            tls = self.ctx.wrap_socket(conn, server_side=True)
            up = socket.create_connection(("127.0.0.1", self.target))
        except (OSError, ssl.SSLError):
            conn.close()
            return
        self.connections += 1
        threading.Thread(target=self._pipe, args=(up, tls), daemon=True).start()
        self._pipe(tls, up)

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except (OSError, ssl.SSLError):
            pass
        for s in (dst, src):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self.sock.close()


# --- running one case -----------------------------------------------------------------------------------
def stop_after(proc: subprocess.Popen, timeout: float) -> int | None:
    """The exit status of `wirecap record` within `timeout` s; None when it had to be stopped (SIGTERM: it
    ends the client and closes the capture), killed if even that hangs."""
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    return None


def run_case(lab: Path, how: str, fake_mode: str, out: Path, deflate: bool,
             unset: tuple[str, ...] = (), timeout: float = CLIENT_TIMEOUT) -> dict[str, Any]:
    home, work = out / "home", out / "work"
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    work.mkdir(exist_ok=True)
    os.environ.setdefault("WIRECAP_HOME", str(out / "wirecap-home"))
    fake_args = ["--mode", fake_mode, "--port", str(FAKE_PORT), "--log", str(out / "wire.jsonl"),
                 "--frames", str(out / "frames.jsonl"), *([] if deflate else ["--no-deflate"])]
    with open(out / "fake.stderr", "wb") as ferr:
        fake = subprocess.Popen([sys.executable, str(labclients.FAKES / "fake_openai_ws.py"), *fake_args],
                                stdout=subprocess.DEVNULL, stderr=ferr)
    tls = None
    try:
        labclients.wait_listening(f"127.0.0.1:{FAKE_PORT}", fake, "fake_openai_ws.py")
        cfg = labclients.codex_config(f"127.0.0.1:{PROXY_PORT if how == 'reverse' else TLS_PORT}", websockets=True)
        rec_args = ["--listen", f"127.0.0.1:{PROXY_PORT}"]
        if how == "reverse":
            rec_args += ["--reverse", f"http://127.0.0.1:{FAKE_PORT}"]
        else:
            cfg = cfg.replace('base_url = "http://', 'base_url = "https://')
            tls = TlsTerminator(TLS_PORT, FAKE_PORT, *self_signed(out))
            rec_args += ["--ssl-insecure"]
        (home / ".codex" / "config.toml").write_text(cfg)
        env = {"HOME": str(home), "TMPDIR": str(out), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "LANG": "C.UTF-8", "TERM": "dumb", "OPENAI_API_KEY": "sk-fake-000000",
               "WIRECAP_HOME": os.environ["WIRECAP_HOME"]}
        argv = [sys.executable, "-m", "wirecap", "record", "-o", str(out / "cap.jsonl"), "--force", *rec_args,
                "--", *(["env", *(f"-u{n}" for n in unset)] if unset else []),
                str(lab / "node_modules" / ".bin" / "codex"), "exec", "--json", "--skip-git-repo-check", "say hello"]
        t0 = time.monotonic()
        with open(out / "stdout.jsonl", "wb") as so, open(out / "stderr.txt", "wb") as se:
            rec = subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=so, stderr=se)
            rc = stop_after(rec, timeout)
        took = time.monotonic() - t0
    finally:
        fake.terminate()
        try:
            fake.wait(10)
        except subprocess.TimeoutExpired:
            fake.kill()
        if tls is not None:
            tls.close()
    res = compare(out / "frames.jsonl", out / "cap.jsonl", https=how == "proxy")
    stdout = (out / "stdout.jsonl").read_text(errors="replace")
    res.update(how=how, fake_mode=fake_mode, deflate=deflate, record_rc=rc, record_s=round(took, 2),
               tls_connections=tls.connections if tls is not None else None,
               fallback_message="Falling back from WebSockets" in stdout)
    return res


# --- the comparison -------------------------------------------------------------------------------------
def fake_log(path: Path) -> dict[int, dict[str, Any]]:
    """conn -> {"open": ..., "msgs": [(dir, opcode, bytes, t)], "end": ...} from --frames."""
    conns: dict[int, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        e = json.loads(line)
        c = conns.setdefault(e["conn"], {"open": None, "msgs": [], "end": None})
        if e["ev"] == "msg":
            c["msgs"].append((e["dir"], e["opcode"], base64.b64decode(e["b64"]), e["t"]))
        else:
            c[e["ev"]] = e
    return conns


def _request_headers(head: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in head.split("\r\n")[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            k = k.strip().lower()
            out[k] = f"{out[k]}, {v.strip()}" if k in out else v.strip()
    return out


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))] if s else 0.0


def compare(frames: Path, cap: Path, *, https: bool = False) -> dict[str, Any]:
    from wirecap.capture.payload import payload_bytes
    from wirecap.capture.reader import CaptureReader

    why: list[str] = []
    with CaptureReader(cap) as reader:
        records = list(reader)
    created = dt.datetime.fromisoformat(reader.header["created"].replace("Z", "+00:00")).timestamp()
    conns = fake_log(frames)
    opens = [r for r in records if r["type"] == "open" and r.get("kind") == "ws"]
    if len(opens) != len(conns):
        why.append(f"{len(opens)} ws channels recorded, the fake saw {len(conns)} connections")
    stats = {"connections": len(conns), "messages_sent": 0, "messages_recorded": 0, "bytes_sent": 0,
             "bytes_recorded": 0, "wire_bytes": 0, "c2s": 0, "s2c": 0}
    lags: list[float] = []
    for (_cid, c), op in zip(sorted(conns.items()), opens, strict=False):
        ch = op["ch"]
        msgs = [r for r in records if r.get("ch") == ch and r["type"] == "msg"]
        want = [(d, op_, b) for d, op_, b, _ in c["msgs"]]
        got = [(m["dir"], "binary" if m.get("binary") else "text", payload_bytes(m)) for m in msgs]
        stats["messages_sent"] += len(want)
        stats["messages_recorded"] += len(got)
        stats["bytes_sent"] += sum(len(b) for _, _, b in want)
        stats["bytes_recorded"] += sum(len(b) for _, _, b in got)
        stats["c2s"] += sum(1 for d, _, _ in want if d == "c2s")
        stats["s2c"] += sum(1 for d, _, _ in want if d == "s2c")
        if c["end"]:
            stats["wire_bytes"] += c["end"]["wire_in"] + c["end"]["wire_out"]
        if got != want:
            first = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want)))
            why.append(f"{ch}: messages differ from the fake's (first at #{first}; {len(got)} recorded, {len(want)} sent)")
        flagged = [m["seq"] for m in msgs if m.get("flags") or m.get("truncated")]
        if flagged:
            why.append(f"{ch}: messages flagged or cut: seqs {flagged[:5]}")
        for m, (d, _, _, ft) in zip(msgs, c["msgs"], strict=False):
            rt = created + m["t"]
            lag = rt - ft if d == "s2c" else ft - rt  # >= 0: causality (recorded after sent / before read)
            lags.append(lag)
            if lag < -CLOCK_SLACK:
                why.append(f"{ch} seq {m['seq']} ({d}): recorded at {rt:.6f}, the fake's time {ft:.6f}: out of order")
        ts = [m["t"] for m in msgs]
        if ts != sorted(ts):
            why.append(f"{ch}: message times go backwards")
        why += _check_handshake(op, c["open"], https)
    stats["lag_p50_ms"] = round(_pct(lags, 0.5) * 1000, 3)
    stats["lag_max_ms"] = round(max(lags, default=0.0) * 1000, 3)
    stats["lag_min_ms"] = round(min(lags, default=0.0) * 1000, 3)  # the causality margin (>= -CLOCK_SLACK)
    closes = [r for r in records if r["type"] == "close" and r["ch"] in {o["ch"] for o in opens}]
    stats["closes"] = [{k: r.get(k) for k in ("code", "by", "reason")} for r in closes]
    stats["errors"] = (reader.end or {}).get("errors")
    if reader.end is None or reader.end.get("errors"):
        why.append(f"capture end: {reader.end}")
    # Over HTTP + SSE instead (a fallback): expected in the error modes, never in text / tool.
    stats["http_responses_calls"] = sum(1 for r in records if r["type"] == "open" and r.get("kind") == "http"
                                        and "/responses" in r.get("url", ""))
    return {"ok": not why, "why": why, **stats}


def _check_handshake(op: dict[str, Any], fake_open: dict[str, Any] | None, https: bool) -> list[str]:
    why: list[str] = []
    if fake_open is None:
        return [f"{op['ch']}: the fake logged no handshake"]
    want_req = _request_headers(fake_open["request"])
    got_req = dict(op.get("headers") or {})
    auth = got_req.pop("authorization", "")
    if "sk-fake" in auth or "redacted" not in auth or "authorization" not in want_req:
        why.append(f"{op['ch']}: authorization not recorded redacted: {auth!r}")
    want_req.pop("authorization", None)
    if got_req != want_req:
        diff = sorted(k for k in set(got_req) | set(want_req) if got_req.get(k) != want_req.get(k))
        why.append(f"{op['ch']}: request headers differ from what the fake received: {diff}")
    want_resp: dict[str, str] = {}
    for k, v in fake_open["response_headers"]:
        want_resp[k.lower()] = f"{want_resp[k.lower()]}, {v}" if k.lower() in want_resp else v
    if op.get("response_headers") != want_resp:
        why.append(f"{op['ch']}: response headers differ: {op.get('response_headers')} != {want_resp}")
    if op.get("status") != fake_open["status"] or op.get("status") != 101:
        why.append(f"{op['ch']}: status {op.get('status')} (the fake sent {fake_open['status']})")
    if op.get("extensions") != fake_open["extensions"]:
        why.append(f"{op['ch']}: extensions {op.get('extensions')!r} in the open record, the fake agreed "
                   f"{fake_open['extensions']!r}")
    if op.get("subprotocol") or "sec-websocket-protocol" in want_req:
        why.append(f"{op['ch']}: a subprotocol where Codex asked for none")
    scheme = "wss://" if https else "ws://"
    if not str(op.get("url", "")).startswith(scheme) or not str(op.get("url", "")).endswith("/v1/responses"):
        why.append(f"{op['ch']}: url {op.get('url')!r} is not {scheme}.../v1/responses")
    return why


def main(argv: list[str]) -> int:
    unset = tuple(a.split("=", 1)[1] for a in argv if a.startswith("--unset="))
    timeout = [float(a.split("=", 1)[1]) for a in argv if a.startswith("--timeout=")]
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 3 or args[0] not in ("reverse", "proxy"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    lab = lab_dir("codex")
    if lab is None:
        print("codexws_record: no lab (set WIRECAP_LAB)", file=sys.stderr)
        return 2
    if not os.environ.get("WIRECAP_IN_NETNS"):
        script = 'ip link set lo up && exec "$@"'
        os.execvp("unshare", ["unshare", "-n", "-p", "-f", "--kill-child", "--mount-proc", "sh", "-c", script, "sh",
                              "env", "WIRECAP_IN_NETNS=1", f"WIRECAP_LAB={lab}", sys.executable,
                              os.path.abspath(__file__), *argv])
    out = Path(args[2]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    res = run_case(lab, args[0], args[1], out, deflate="--no-deflate" not in argv, unset=unset,
                   timeout=timeout[0] if timeout else CLIENT_TIMEOUT)
    (out / "result.json").write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res, indent=1))
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
