"""Attack: are wirecap's doors closed? (issue 14, "Doors closed")

    .venv/bin/python -m bench.attack_doors [--wirecap PATH] [--only listen,modes,client,serve]

Runs the wirecap at PATH (default: this checkout's) as a subprocess and prints one table:

- listen: the local address of the listening socket (from /proc/net/tcp*) of the documented
  `mitmdump -s "$(wirecap addon-path)"` (mitmdump of the same environment, that install's addon),
  of `wirecap record --listen PORT`, of `wirecap replay serve` and of the pytest fixture's server;
- modes: the mode of every file and folder each writing command makes, under umask 000 and 022
  (tee and its new parent folders, report, convert, export, import, annotate, replay shim, record's
  capture, the port files of record and replay serve); counts those not owner-only;
- client: `replay client` with secrets filled from the environment, against (a) a server that answers
  the WebSocket handshake and the HTTP request with 302 to another local server, (b) http_proxy,
  https_proxy and all_proxy pointing at a local listener: was the other server / proxy contacted,
  and did the live token reach it;
- serve: a live client sends its key, token, cookie and a key-shaped string in headers and a
  mismatching body; are they in `replay serve`'s stderr, the HTTP 400 body, the WebSocket close
  reason, and the output of a failing pytest test using the `wirecap_server` fixture.

Everything listens on 127.0.0.1 (the "elsewhere" servers included); nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import os
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent
TOKEN = "wcLiveTok" + secrets.token_hex(16)  # a live bearer/authToken (random: learnt as a secret)
KEY = "wcLiveKey" + secrets.token_hex(16)  # a live x-api-key
COOKIE = "wcLiveCookie" + secrets.token_hex(12)
SHAPE = "sk-ant-api03-" + secrets.token_urlsafe(30).replace("-", "x").replace("_", "y")  # by shape
LIVE = {"token": TOKEN, "x-api-key": KEY, "cookie": COOKIE, "sk-ant shape": SHAPE}
# fields a live client adds to a recorded body: each one is a difference a mismatch report shows
EXTRA = {"note_a": TOKEN, "note_b": KEY, "note_c": COOKIE, "note_d": "see " + SHAPE}


# --- helpers -------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listen_addrs(port: int) -> list[str]:
    """Local addresses of TCP sockets listening on `port` (IPv4 and IPv6), from /proc/net."""
    out = []
    for name, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
        try:
            lines = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            local, st = f[1], f[3]
            addr, p = local.split(":")
            if st != "0A" or int(p, 16) != port:
                continue
            raw = bytes.fromhex(addr)
            if v6:
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                out.append("[" + socket.inet_ntop(socket.AF_INET6, raw) + "]")
            else:
                out.append(socket.inet_ntop(socket.AF_INET, raw[::-1]))
    return sorted(set(out))


def wait_for(pred, timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def umask_fn(mask: int):
    return lambda: os.umask(mask)


def stop(p: subprocess.Popen) -> None:
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def make_capture(path: Path) -> None:
    """A small capture with one WebSocket and one HTTP channel whose requests carry (redacted) secrets."""
    from wirecap.capture.writer import CaptureWriter

    w = CaptureWriter(path, force=True)
    w.open("ws-1", "ws", url="ws://127.0.0.1:4242/ws",
           headers={"host": "127.0.0.1:4242", "x-api-key": "wcRecKey" + "a1b2c3d4e5f6a7b8c9d0",
                    "upgrade": "websocket", "connection": "Upgrade"}, status=101)
    w.msg("ws-1", "c2s", orjson.dumps({"type": "hello", "authToken": "wcRecTok" + "f0e1d2c3b4a5968778695a4b"}))
    w.msg("ws-1", "s2c", orjson.dumps({"type": "ack"}))
    w.close_channel("ws-1", code=1000, reason="", by="client")
    w.open("http-1", "http", method="POST", url="http://127.0.0.1:4242/v1/messages",
           headers={"host": "127.0.0.1:4242", "authorization": "Bearer wcRecTok" + "f0e1d2c3b4a5968778695a4b",
                    "content-type": "application/json"})
    w.msg("http-1", "c2s", orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}))
    w.response("http-1", 200, {"content-type": "application/json"})
    w.msg("http-1", "s2c", orjson.dumps({"ok": True}))
    w.close_channel("http-1", status=200)
    w.close()


LOGIN_TOKEN = "tokZ" + "9f8e7d6c5b4a39281706f5e4d3c2b1a0"


def make_login_capture(path: Path) -> None:
    """A recorded login: its answer sets a session cookie and returns a token (both redacted in the
    capture), and the next request sends the token back."""
    from wirecap.capture.writer import CaptureWriter

    w = CaptureWriter(path, force=True)
    w.open("http-1", "http", method="POST", url="http://127.0.0.1:4242/login", headers={"host": "x"})
    w.msg("http-1", "c2s", b'{"user": "me"}')
    w.response("http-1", 200, {"content-type": "application/json",
                               "set-cookie": "session=c00k1eV4lue8f7e6d5c4b3a2; Path=/"})
    w.msg("http-1", "s2c", orjson.dumps({"access_token": LOGIN_TOKEN}))
    w.close_channel("http-1", status=200)
    w.open("http-2", "http", method="POST", url="http://127.0.0.1:4242/use", headers={"host": "x"})
    w.msg("http-2", "c2s", orjson.dumps({"use": LOGIN_TOKEN}))
    w.response("http-2", 200, {"content-type": "application/json"})
    w.msg("http-2", "s2c", b'{"ok": true}')
    w.close_channel("http-2", status=200)
    w.close()


# --- listen ---------------------------------------------------------------------------------------
def attack_listen(wirecap: str, tmp: Path) -> list[tuple[str, str, str]]:
    rows = []
    env = dict(os.environ, WIRECAP_HOME=str(tmp / "home"))
    bindir = Path(wirecap).parent
    addon = subprocess.run([wirecap, "addon-path"], capture_output=True, text=True, env=env).stdout.strip()
    port = free_port()
    cmd = [str(bindir / "mitmdump"), "-q", "-s", addon, "--set", f"wirecap_out={tmp / 'mitm.jsonl'}",
           "--listen-port", str(port), "--mode", "reverse:http://127.0.0.1:9"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=tmp)
    try:
        # the addon may move the listener once mitmdump runs: wait for the capture, then a moment
        wait_for(lambda: listen_addrs(port) and (tmp / "mitm.jsonl").exists())
        time.sleep(1.0)
        addrs = listen_addrs(port)
    finally:
        stop(p)
    rows.append(("mitmdump -s $(wirecap addon-path) (documented)", ", ".join(addrs) or "none", _verdict(addrs)))

    pf = tmp / "rec.port"
    port = free_port()
    p = subprocess.Popen([wirecap, "record", "-o", str(tmp / "rec.jsonl"), "--force", "--listen", str(port),
                          "--port-file", str(pf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        wait_for(lambda: pf.exists())
        addrs = listen_addrs(port)
    finally:
        stop(p)
    rows.append(("wirecap record --listen PORT", ", ".join(addrs) or "none", _verdict(addrs)))

    cap = tmp / "doors.jsonl"
    pf = tmp / "serve.port"
    p = subprocess.Popen([wirecap, "replay", "serve", str(cap), "--port-file", str(pf)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        wait_for(lambda: pf.exists() and pf.read_text().strip())
        addrs = listen_addrs(int(pf.read_text().strip()))
    finally:
        stop(p)
    rows.append(("wirecap replay serve CAP", ", ".join(addrs) or "none", _verdict(addrs)))

    code = ("import sys\nfrom wirecap.replay.http_server import ReplayServer, ThreadedReplayServer\n"
            f"r = ThreadedReplayServer(ReplayServer.from_capture({str(cap)!r}))\nport = r.start()\n"
            "print(port, flush=True)\nsys.stdin.readline()\n")
    p = subprocess.Popen([str(bindir / "python"), "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True, env=env)
    try:
        port = int(p.stdout.readline())
        addrs = listen_addrs(port)
    finally:
        p.communicate("\n", timeout=10)
    rows.append(("pytest fixture wirecap_server (ThreadedReplayServer)", ", ".join(addrs) or "none", _verdict(addrs)))
    return rows


def _verdict(addrs: list[str]) -> str:
    if not addrs:
        return "?"
    return "loopback" if all(a in ("127.0.0.1", "[::1]") for a in addrs) else "OPEN"


# --- modes ----------------------------------------------------------------------------------------
def attack_modes(wirecap: str, tmp: Path) -> list[tuple[str, str, str]]:
    rows = []
    for mask in (0o000, 0o022):
        rows += _modes_under(wirecap, tmp, mask)
    return rows


def _modes_under(wirecap: str, tmp: Path, mask: int) -> list[tuple[str, str, str]]:
    rows = []
    cap_cli = REPO / "captures" / "claude-code-2.1.197-hello.jsonl"
    d = tmp / f"umask{mask:03o}"
    d.mkdir()
    env = dict(os.environ, WIRECAP_HOME=str(d / "home"))
    bad: list[str] = []
    seen: list[str] = []

    def run(*args: str, ok=(0,), stdin=None) -> None:
        subprocess.run([wirecap, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                       preexec_fn=umask_fn(mask), cwd=d, input=stdin, timeout=120)

    def check(rel: str, want: int) -> None:
        pth = d / rel
        if not pth.exists():
            return
        mode = stat.S_IMODE(pth.stat().st_mode)
        seen.append(f"{rel}={mode:04o}")
        if mode & 0o077 or (want and mode != want):
            bad.append(f"{rel} {mode:04o}")

    cap = d / "cap.jsonl"
    shutil.copyfile(cap_cli, cap)
    os.chmod(cap, 0o600)
    run("tee", "-o", "new/sub/tee.jsonl", "--", "echo", "hi")
    check("new", 0o700)
    check("new/sub", 0o700)
    check("new/sub/tee.jsonl", 0o600)
    run("report", str(cap), "-f", "html", "-o", "report.html")
    check("report.html", 0o600)
    run("report", str(cap), "-f", "html")  # the default path beside the capture
    check("cap.report.html", 0o600)
    run("convert", str(cap), "-o", "events.jsonl")
    check("events.jsonl", 0o600)
    run("export", str(d.parent / "doors.jsonl"), "-o", "out.har")
    check("out.har", 0o600)
    (d / "stdout.txt").write_text('{"type":"system","subtype":"init"}\n')
    run("import", "stdout.txt", "-o", "imported.jsonl")
    check("imported.jsonl", 0o600)
    run("annotate", str(cap), "--seq", "1", "a note")
    check("cap.notes.jsonl", 0o600)
    run("replay", "shim", str(cap), "-o", "bin/claude")
    check("bin", 0o700)
    check("bin/claude", 0o700)
    # port files (and record's capture) of the long-running commands
    for name, argv, pf in (
            ("record", ["record", "-o", "rec.jsonl", "--listen", "0", "--port-file", "rec.port"], "rec.port"),
            ("serve", ["replay", "serve", str(d.parent / "doors.jsonl"), "--port-file", "serve.port"],
             "serve.port")):
        p = subprocess.Popen([wirecap, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=env, preexec_fn=umask_fn(mask), cwd=d)
        try:
            wait_for(lambda pf=pf: (d / pf).exists())
        finally:
            stop(p)
        check(pf, 0o600)
        if name == "record":
            check("rec.jsonl", 0o600)
            check("home", 0o700)
            check("home/ca", 0o700)
            for f in sorted((d / "home" / "ca").glob("*")) if (d / "home" / "ca").exists() else []:
                check(f"home/ca/{f.name}", 0o600)
    rows.append((f"umask {mask:03o}: files/folders made", str(len(seen)), f"{len(bad)} not owner-only"))
    if bad:
        rows.append((f"umask {mask:03o}: not owner-only", "", "; ".join(bad)))
    return rows


# --- client ---------------------------------------------------------------------------------------
class Recorder:
    """A TCP listener on 127.0.0.1 that keeps every byte it receives and answers with `reply(head)`."""

    def __init__(self, reply) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.data = bytearray()
        self.conns = 0
        self.reply = reply
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._conn, args=(c,), daemon=True).start()

    def _conn(self, c: socket.socket) -> None:
        self.conns += 1
        c.settimeout(5)
        buf = b""
        try:
            while b"\r\n\r\n" not in buf:
                chunk = c.recv(65536)
                if not chunk:
                    break
                buf += chunk
            self.data += buf
            answer = self.reply(buf)
            if answer:
                c.sendall(answer)
            while True:  # keep what follows (a tunnelled request, a first message)
                chunk = c.recv(65536)
                if not chunk:
                    break
                self.data += chunk
        except OSError:
            pass
        finally:
            c.close()

    def got_secret(self) -> bool:
        return any(s.encode() in self.data for s in (TOKEN, KEY))


class WsTarget:
    """A real WebSocket server (websockets) on 127.0.0.1 that keeps the headers and messages it gets."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.conns = 0
        self.port = free_port()
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        ready.wait(10)

    def _run(self, ready: threading.Event) -> None:
        from websockets.asyncio.server import serve

        async def handler(ws) -> None:
            self.conns += 1
            self.data += str(list(ws.request.headers.raw_items())).encode()
            try:
                async for m in ws:
                    self.data += m.encode() if isinstance(m, str) else m
                    await ws.send(orjson.dumps({"type": "ack"}).decode())
            except Exception:  # noqa: BLE001
                pass

        async def main() -> None:
            async with serve(handler, "127.0.0.1", self.port):
                ready.set()
                await asyncio.Future()

        asyncio.run(main())

    def got_secret(self) -> bool:
        return any(s.encode() in self.data for s in (TOKEN, KEY))


def attack_client(wirecap: str, tmp: Path) -> list[tuple[str, str, str]]:
    rows = []
    cap = tmp / "doors.jsonl"
    ws_target = WsTarget()
    http_target = Recorder(lambda head: b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")

    def redirect(head: bytes) -> bytes:
        if b"upgrade: websocket" in head.lower():
            loc = f"ws://127.0.0.1:{ws_target.port}/ws"
        else:
            loc = f"http://127.0.0.1:{http_target.port}/v1/messages"
        return (f"HTTP/1.1 302 Found\r\nlocation: {loc}\r\ncontent-length: 0\r\n"
                "connection: close\r\n\r\n").encode()

    redirector = Recorder(redirect)
    env = dict(os.environ, WIRECAP_HOME=str(tmp / "home"), LIVE_TOKEN=TOKEN, LIVE_KEY=KEY)
    for k in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "no_proxy",
              "NO_PROXY"):
        env.pop(k, None)
    secrets_args = ["--secret", "authtoken=LIVE_TOKEN", "--secret", "bearer=LIVE_TOKEN",
                    "--secret", "x-api-key=LIVE_KEY", "--timeout", "5", "--speed", "0"]
    p = subprocess.run([wirecap, "replay", "client", str(cap), "--url", f"http://127.0.0.1:{redirector.port}",
                        *secrets_args], capture_output=True, text=True, env=env, timeout=60)
    followed_ws = ws_target.conns > 0
    followed_http = http_target.conns > 0
    rows.append(("302 to another server: WS followed / token there", f"{'yes' if followed_ws else 'no'} / "
                 f"{'yes' if ws_target.got_secret() else 'no'}", "LEAK" if ws_target.got_secret() else
                 ("followed" if followed_ws else "ok")))
    rows.append(("302 to another server: HTTP followed / token there", f"{'yes' if followed_http else 'no'} / "
                 f"{'yes' if http_target.got_secret() else 'no'}", "LEAK" if http_target.got_secret() else
                 ("followed" if followed_http else "ok")))
    rows.append(("  replay client exit / says", str(p.returncode),
                 next((ln.strip()[:90] for ln in p.stderr.splitlines() if "302" in ln or "redirect" in ln), "-")))

    def tunnel(head: bytes) -> bytes:
        if head.startswith(b"CONNECT"):
            return b"HTTP/1.1 200 Connection established\r\n\r\n"
        return b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"

    proxy = Recorder(tunnel)
    target = WsTarget()
    penv = dict(env)
    for k in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        penv[k] = f"http://127.0.0.1:{proxy.port}"
    subprocess.run([wirecap, "replay", "client", str(cap), "--url", f"http://127.0.0.1:{target.port}",
                    *secrets_args], capture_output=True, text=True, env=penv, timeout=60)
    rows.append(("http(s)_proxy/all_proxy set: proxy contacted / token there",
                 f"{'yes' if proxy.conns else 'no'} / {'yes' if proxy.got_secret() else 'no'}",
                 "LEAK" if proxy.got_secret() else ("used" if proxy.conns else "ok")))
    return rows


# --- serve ------------------------------------------------------------------------------------------
def _found(text: str | bytes) -> list[str]:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return [name for name, s in LIVE.items() if s in text]


def _live_request(port: int) -> bytes:
    body = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], **EXTRA})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("POST", "/v1/messages", body=body, headers={
        "authorization": f"Bearer {TOKEN}", "x-api-key": KEY, "cookie": f"session={COOKIE}",
        "content-type": "application/json"})
    data = c.getresponse().read()
    c.close()
    return data


async def _live_ws(port: int) -> str:
    from websockets.asyncio.client import connect

    async with connect(f"ws://127.0.0.1:{port}/ws", additional_headers={"x-api-key": KEY}, proxy=None) as ws:
        await ws.send(orjson.dumps({"type": "hello", "authToken": TOKEN, **EXTRA}).decode())
        try:
            async for _ in ws:
                pass
        except Exception:  # noqa: BLE001
            pass
        return ws.close_reason or ""


def attack_serve(wirecap: str, tmp: Path) -> list[tuple[str, str, str]]:
    rows = []
    cap = tmp / "doors.jsonl"
    env = dict(os.environ, WIRECAP_HOME=str(tmp / "home"))
    pf = tmp / "serve2.port"
    err = tmp / "serve.stderr"
    with open(err, "wb") as ef:
        p = subprocess.Popen([wirecap, "replay", "serve", str(cap), "--port-file", str(pf), "--speed", "0"],
                             stdout=subprocess.DEVNULL, stderr=ef, env=env)
        try:
            wait_for(lambda: pf.exists() and pf.read_text().strip())
            port = int(pf.read_text().strip())
            body = _live_request(port)
            reason = asyncio.run(_live_ws(port))
        finally:
            stop(p)
    log = err.read_text(errors="replace")
    for where, text in (("serve stderr (mismatch log)", log), ("HTTP 400 mismatch body", body),
                        ("WebSocket close reason", reason)):
        f = _found(text)
        rows.append((where, ", ".join(f) or "none", f"LEAK {len(f)}" if f else "ok"))

    # a recorded answer's redacted values: what the client gets, and whether giving them back matches
    login = tmp / "login.jsonl"
    make_login_capture(login)
    pf = tmp / "serve3.port"
    p = subprocess.Popen([wirecap, "replay", "serve", str(login), "--port-file", str(pf), "--speed", "0"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        wait_for(lambda: pf.exists() and pf.read_text().strip())
        c = http.client.HTTPConnection("127.0.0.1", int(pf.read_text().strip()), timeout=10)
        c.request("POST", "/login", body=b'{"user": "me"}')
        r = c.getresponse()
        token = orjson.loads(r.read()).get("access_token", "")
        cookie = r.getheader("set-cookie") or ""
        c.request("POST", "/use", body=orjson.dumps({"use": token}))
        r2 = c.getresponse()
        r2.read()
    finally:
        stop(p)

    def shown(v: str) -> str:
        return ("placeholder (not ASCII)" if not v.isascii() else "stand-in") + f" {v[:28]}"

    rows.append(("recorded set-cookie served as", shown(cookie), "ok" if cookie.isascii() else "PLACEHOLDER"))
    rows.append(("recorded access_token served as", shown(token), "ok" if token.isascii() else "PLACEHOLDER"))
    rows.append(("client sends the token back: status", str(r2.status), "ok" if r2.status == 200 else "MISMATCH"))

    test = tmp / "pt" / "test_leak.py"
    test.parent.mkdir()
    test.write_text(
        "import http.client, orjson\n"
        "def test_leak(wirecap_server):\n"
        f"    url = wirecap_server({str(cap)!r})\n"
        "    port = int(url.rsplit(':', 1)[1])\n"
        f"    body = orjson.dumps({{'model': 'm', 'messages': [{{'role': 'user', 'content': 'hi'}}], **{EXTRA!r}}})\n"
        "    c = http.client.HTTPConnection('127.0.0.1', port, timeout=10)\n"
        f"    c.request('POST', '/v1/messages', body=body, headers={{'authorization': 'Bearer {TOKEN}', 'x-api-key': '{KEY}', 'cookie': 'session={COOKIE}'}})\n"
        "    c.getresponse().read()\n")
    p = subprocess.run([str(Path(wirecap).parent / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(test)], capture_output=True, text=True, cwd=test.parent, env=env, timeout=120)
    out = p.stdout + p.stderr
    f = _found(out)
    failed = "failed" in out
    rows.append(("pytest output (fixture mismatch)", ", ".join(f) or "none",
                 (f"LEAK {len(f)}" if f else "ok") + ("" if failed else " (test did not fail?)")))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wirecap", default=str(REPO / ".venv" / "bin" / "wirecap"))
    ap.add_argument("--only", default="listen,modes,client,serve")
    args = ap.parse_args()
    wirecap = os.path.abspath(args.wirecap)
    tmp = Path(tempfile.mkdtemp(prefix="attack-doors-"))
    rows: list[tuple[str, str, str]] = []
    try:
        make_capture(tmp / "doors.jsonl")
        for name, fn in (("listen", attack_listen), ("modes", attack_modes), ("client", attack_client),
                         ("serve", attack_serve)):
            if name in args.only.split(","):
                t = time.monotonic()
                got = fn(wirecap, tmp)
                rows += [(f"[{name}] {a}", b, c) for a, b, c in got]
                print(f"# {name}: {time.monotonic() - t:.1f} s", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"wirecap: {wirecap}")
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    for a, b, c in rows:
        print(f"{a:<{w0}}  {b:<{w1}}  {c}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
