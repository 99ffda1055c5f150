"""Doors closed (issue 14): loopback listeners, owner-only files whatever the umask, a replay client
that goes only to its URL, and no live secret in anything `replay serve` or its pytest fixture says.

Real subprocesses (mitmdump with the addon, the wirecap CLI, pytest) and real sockets on 127.0.0.1;
the helpers (capture, /proc/net listener parsing, recording servers) are `bench/attack_doors.py`'s.
"""

from __future__ import annotations

import asyncio
import http.client
import os
import stat
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the bench package lives at the repo root, outside the installed wirecap

from conftest import free_port  # noqa: E402

from bench.attack_doors import (  # noqa: E402
    COOKIE,
    EXTRA,
    KEY,
    LIVE,
    LOGIN_TOKEN,
    SHAPE,
    TOKEN,
    Recorder,
    WsTarget,
    listen_addrs,
    make_capture,
    make_login_capture,
    stop,
    wait_for,
)
from wirecap.fsmode import create_private, open_private, private_dir, write_private  # noqa: E402

pytestmark = pytest.mark.timeout(120)
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def cap(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("doors") / "doors.jsonl"
    make_capture(p)
    return p


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(WIRECAP_HOME=str(tmp / "home"), **extra)
    return env


def _wirecap(*args: str) -> list[str]:
    return [sys.executable, "-m", "wirecap", *args]


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


# --- 1. listeners -----------------------------------------------------------------------------------
def _mitmdump_listens(tmp: Path, expect: list[str], *args: str) -> list[str]:
    """Where the documented `mitmdump -s $(wirecap addon-path)` listens once it runs (waits, bounded,
    for `expect`: mitmdump binds before it loads the addon, which then moves the listener)."""
    port = free_port()
    addon = subprocess.run(_wirecap("addon-path"), capture_output=True, text=True, check=True).stdout.strip()
    out = tmp / f"mitm{port}.jsonl"
    p = subprocess.Popen([str(BIN / "mitmdump"), "-q", "-s", addon, "--set", f"wirecap_out={out}", "--listen-port",
                          str(port), "--mode", "reverse:http://127.0.0.1:9", *args],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(tmp), cwd=tmp)
    try:
        assert wait_for(lambda: out.exists() and listen_addrs(port)), "mitmdump did not start"
        wait_for(lambda: listen_addrs(port) == expect, timeout=10)
        return listen_addrs(port)
    finally:
        stop(p)


def test_documented_mitmdump_with_addon_listens_on_loopback_only(tmp_path):
    assert _mitmdump_listens(tmp_path, ["127.0.0.1"]) == ["127.0.0.1"]


def test_addon_keeps_a_listen_host_the_user_gave(tmp_path):
    # 127.0.0.2 is loopback too (127/8): a chosen address is kept without opening a door in the test
    assert _mitmdump_listens(tmp_path, ["127.0.0.2"], "--listen-host", "127.0.0.2") == ["127.0.0.2"]


def test_replay_serve_and_record_listen_on_loopback_by_default(tmp_path, cap):
    for argv, pf in ((["replay", "serve", str(cap), "--port-file", "s.port"], "s.port"),
                     (["record", "-o", "r.jsonl", "--listen", "0", "--port-file", "r.port"], "r.port")):
        p = subprocess.Popen(_wirecap(*argv), cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        try:
            assert wait_for(lambda pf=pf: (tmp_path / pf).exists() and (tmp_path / pf).read_text().strip())
            assert listen_addrs(int((tmp_path / pf).read_text())) == ["127.0.0.1"]
        finally:
            stop(p)


# --- 2. file modes ----------------------------------------------------------------------------------
@pytest.mark.parametrize("mask", [0o000, 0o022])
def test_every_output_is_owner_only_whatever_the_umask(tmp_path, cap, mask):
    env = _env(tmp_path)
    cli = ROOT / "captures" / "claude-code-2.1.197-hello.jsonl"
    own = tmp_path / "cli.jsonl"
    own.write_bytes(cli.read_bytes())
    old = tmp_path / "old.har"
    old.write_text("{}")
    os.chmod(old, 0o666)

    def run(*args: str) -> None:
        p = subprocess.run(_wirecap(*args), cwd=tmp_path, env=env, capture_output=True, timeout=60,
                           preexec_fn=lambda: os.umask(mask))
        assert p.returncode == 0, (args, p.stderr.decode())

    run("tee", "-o", "new/sub/tee.jsonl", "--", "echo", "hi")
    run("report", str(own), "-f", "html", "-o", "report.html")
    run("report", str(own), "-f", "md", "-o", "report.md")
    run("convert", str(own), "-o", "events.jsonl")
    run("export", str(cap), "-o", "out.har")
    run("export", str(cap), "-o", "old.har", "--force")
    (tmp_path / "stdout.txt").write_text('{"type":"system","subtype":"init"}\n')
    run("import", "stdout.txt", "-o", "imported.jsonl")
    run("annotate", str(own), "--seq", "1", "a note")
    run("replay", "shim", str(own), "-o", "bin/claude")
    files = ["new/sub/tee.jsonl", "report.html", "report.md", "events.jsonl", "out.har", "old.har",
             "imported.jsonl", "cli.notes.jsonl"]
    assert {f: oct(_mode(tmp_path / f)) for f in files} == {f: oct(0o600) for f in files}
    dirs = ["new", "new/sub", "bin", "bin/claude"]
    assert {d: oct(_mode(tmp_path / d)) for d in dirs} == {d: oct(0o700) for d in dirs}
    for argv, pf in ((["replay", "serve", str(cap), "--port-file", "s.port"], "s.port"),
                     (["record", "-o", "r.jsonl", "--listen", "0", "--port-file", "r.port"], "r.port")):
        p = subprocess.Popen(_wirecap(*argv), cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, preexec_fn=lambda: os.umask(mask))
        try:
            assert wait_for(lambda pf=pf: (tmp_path / pf).exists())
        finally:
            stop(p)
        assert _mode(tmp_path / pf) == 0o600
    assert _mode(tmp_path / "r.jsonl") == 0o600
    ca = tmp_path / "home" / "ca"
    assert _mode(tmp_path / "home") == 0o700 and _mode(ca) == 0o700
    assert {f.name: oct(_mode(f)) for f in ca.iterdir()} == {f.name: oct(0o600) for f in ca.iterdir()}


def test_fsmode_forces_modes_and_leaves_devices_alone(tmp_path):
    old = os.umask(0o000)
    try:
        p = tmp_path / "f"
        p.write_text("x")
        os.chmod(p, 0o666)
        with create_private(p, "w") as f:  # truncating an existing file: its mode is fixed too
            f.write("y")
        assert _mode(p) == 0o600 and p.read_text() == "y"
        with pytest.raises(FileExistsError):
            create_private(p, exclusive=True)
        write_private(tmp_path / "x", b"#!/bin/sh\n", executable=True)
        assert _mode(tmp_path / "x") == 0o700
        private_dir(tmp_path / "a" / "b" / "c")
        assert [_mode(tmp_path / q) for q in ("a", "a/b", "a/b/c")] == [0o700] * 3
        os.chmod(tmp_path, 0o755)
        private_dir(tmp_path)  # an existing folder is the user's: left as it is
        assert _mode(tmp_path) == 0o755
        before = _mode(Path("/dev/null"))
        os.close(open_private("/dev/null", os.O_WRONLY))
        assert _mode(Path("/dev/null")) == before
    finally:
        os.umask(old)


# --- 3. replay client goes only to its URL ---------------------------------------------------------
SECRET_ARGS = ["--secret", "authtoken=LIVE_TOKEN", "--secret", "bearer=LIVE_TOKEN", "--secret", "x-api-key=LIVE_KEY",
               "--timeout", "5", "--speed", "0"]


def test_replay_client_reports_a_redirect_and_does_not_follow_it(tmp_path, cap):
    ws_target = WsTarget()
    http_target = Recorder(lambda head: b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")

    def redirect(head: bytes) -> bytes:
        to = (f"ws://127.0.0.1:{ws_target.port}/ws" if b"upgrade: websocket" in head.lower()
              else f"http://127.0.0.1:{http_target.port}/v1/messages")
        return f"HTTP/1.1 302 Found\r\nlocation: {to}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".encode()

    redirector = Recorder(redirect)
    p = subprocess.run(_wirecap("replay", "client", str(cap), "--url", f"http://127.0.0.1:{redirector.port}",
                                *SECRET_ARGS), capture_output=True, text=True, timeout=60,
                       env=_env(tmp_path, LIVE_TOKEN=TOKEN, LIVE_KEY=KEY))
    assert redirector.conns == 2  # it did go where it was told, with the secrets filled in
    assert KEY.encode() in redirector.data and TOKEN.encode() in redirector.data
    assert ws_target.conns == 0 and http_target.conns == 0
    assert p.returncode == 2, p.stderr
    assert "ws-1" in p.stderr and "302" in p.stderr and "not followed" in p.stderr
    assert "http-1: the server answered 302" in p.stderr


def test_replay_client_ignores_proxy_variables_and_uses_an_explicit_proxy(tmp_path, cap):
    proxy = Recorder(lambda head: b"HTTP/1.1 200 Connection established\r\n\r\n" if head.startswith(b"CONNECT")
                     else b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
    target = WsTarget()
    url = f"http://127.0.0.1:{target.port}"
    env = _env(tmp_path, LIVE_TOKEN=TOKEN, LIVE_KEY=KEY, **{
        k: f"http://127.0.0.1:{proxy.port}" for k in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY",
                                                      "HTTPS_PROXY", "ALL_PROXY")})
    subprocess.run(_wirecap("replay", "client", str(cap), "--url", url, *SECRET_ARGS),
                   capture_output=True, text=True, timeout=60, env=env)
    assert proxy.conns == 0
    assert target.conns == 1 and TOKEN.encode() in target.data
    # asked for: --proxy goes through it (CONNECT for the WebSocket, absolute form for HTTP)
    subprocess.run(_wirecap("replay", "client", str(cap), "--url", url, "--proxy", f"http://127.0.0.1:{proxy.port}",
                            *SECRET_ARGS), capture_output=True, text=True, timeout=60,
                   env=_env(tmp_path, LIVE_TOKEN=TOKEN, LIVE_KEY=KEY))
    assert proxy.conns == 2
    assert f"CONNECT 127.0.0.1:{target.port}".encode() in proxy.data
    assert f"POST {url}/v1/messages HTTP/1.1".encode() in proxy.data


def test_replay_client_never_prints_the_secrets_it_filled_in(tmp_path, cap):
    def echo(head: bytes) -> bytes:  # a server that answers with the key it was sent
        body = orjson.dumps({"echo": head.decode(errors="replace").split("authorization: Bearer ")[-1][:60]})
        return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n" \
               b"connection: close\r\n\r\n%s" % (len(body), body)

    server = Recorder(echo)
    p = subprocess.run(_wirecap("replay", "client", str(cap), "--url", f"http://127.0.0.1:{server.port}",
                                *SECRET_ARGS), capture_output=True, text=True, timeout=60,
                       env=_env(tmp_path, LIVE_TOKEN=TOKEN, LIVE_KEY=KEY))
    assert TOKEN.encode() in server.data  # sent where it was told
    assert "divergence" in p.stderr and "echo" in p.stderr and "«redacted:" in p.stderr, p.stderr
    assert _leaks(p.stderr) == []


def test_replay_client_refuses_a_proxy_that_is_not_http(tmp_path, cap):
    p = subprocess.run(_wirecap("replay", "client", str(cap), "--url", "http://127.0.0.1:9", "--proxy", "socks5://x:1"),
                       capture_output=True, text=True, timeout=60, env=_env(tmp_path))
    assert p.returncode == 2 and p.stderr.startswith("wirecap: --proxy") and "Traceback" not in p.stderr


# --- 4. live secrets never in what replay serve says -----------------------------------------------
def _leaks(text: str | bytes) -> list[str]:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return [name for name, s in LIVE.items() if s in text]


def _post(port: int) -> tuple[int, bytes]:
    body = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], **EXTRA})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("POST", f"/v1/messages?key={KEY}", body=body, headers={
        "authorization": f"Bearer {TOKEN}", "x-api-key": KEY, "cookie": f"a=b; session={COOKIE}",
        "content-type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


async def _ws(port: int) -> tuple[int | None, str]:
    from websockets.asyncio.client import connect

    async with connect(f"ws://127.0.0.1:{port}/ws", additional_headers={"x-api-key": KEY}, proxy=None) as ws:
        await ws.send(orjson.dumps({"type": "hello", "authToken": TOKEN, **EXTRA}).decode())
        try:
            async for _ in ws:
                pass
        except Exception:  # noqa: BLE001 - the close is what we look at
            pass
        return ws.close_code, ws.close_reason or ""


def test_replay_serve_redacts_live_secrets_everywhere(tmp_path, cap):
    err = tmp_path / "err"
    with open(err, "wb") as ef:
        p = subprocess.Popen(_wirecap("replay", "serve", str(cap), "--port-file", "p", "--speed", "0"),
                             cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.DEVNULL, stderr=ef)
        try:
            assert wait_for(lambda: (tmp_path / "p").exists() and (tmp_path / "p").read_text().strip())
            port = int((tmp_path / "p").read_text())
            status, body = _post(port)
            code, reason = asyncio.run(_ws(port))
        finally:
            stop(p)
    log = err.read_text()
    assert status == 400 and code == 1008
    assert "replay mismatch" in log and "note_a" in log and "«redacted:" in log  # still says what differed
    assert _leaks(log) == [] and _leaks(body) == [] and _leaks(reason) == []
    assert b"note_b" in body


def test_mismatch_kept_by_the_server_holds_no_live_secret(cap):
    from wirecap.replay.http_server import ReplayServer, ThreadedReplayServer

    server = ReplayServer.from_capture(str(cap), speed=0)
    with ThreadedReplayServer(server) as runner:
        status, body = _post(runner.server.port)
    assert status == 400
    [mm] = server.mismatches
    text = mm.report() + mm.message() + mm.brief() + orjson.dumps(mm.to_json()).decode() + repr(mm.live)
    assert _leaks(text) == [] and _leaks(body) == []
    assert SHAPE not in repr(mm.diffs)


def test_pytest_fixture_failure_shows_no_live_secret(tmp_path, cap):
    test = tmp_path / "test_leak.py"
    test.write_text(
        "import http.client, orjson\n"
        "def test_leak(wirecap_server):\n"
        f"    url = wirecap_server({str(cap)!r})\n"
        "    c = http.client.HTTPConnection('127.0.0.1', int(url.rsplit(':', 1)[1]), timeout=10)\n"
        f"    body = orjson.dumps({{'model': 'm', 'messages': [{{'role': 'user', 'content': 'hi'}}], **{EXTRA!r}}})\n"
        f"    c.request('POST', '/v1/messages', body=body, headers={{'authorization': 'Bearer {TOKEN}', "
        f"'x-api-key': '{KEY}', 'cookie': 'session={COOKIE}'}})\n"
        "    c.getresponse().read()\n")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)],
                       capture_output=True, text=True, cwd=tmp_path, env=_env(tmp_path), timeout=120)
    out = p.stdout + p.stderr
    assert p.returncode == 1 and "unmatched client message" in out, out
    assert _leaks(out) == []


def test_replay_serve_serves_stand_ins_for_redacted_values_and_matches_them_back(tmp_path):
    """A recorded login answer's session cookie and token were redacted: the client gets well-formed
    stand-ins (ASCII, the same for the same secret), one warning per kind naming the seq, and its
    next request carrying the token back matches the recorded one (which holds the placeholder)."""
    from wirecap.replay.http_server import ReplayServer, ThreadedReplayServer

    tok = LOGIN_TOKEN
    path = tmp_path / "login.jsonl"
    make_login_capture(path)
    text = path.read_text()
    assert tok not in text and "c00k1eV4lue" not in text  # the recording holds placeholders only

    warnings: list[str] = []
    server = ReplayServer.from_capture(str(path), speed=0, warn=warnings.append)
    with ThreadedReplayServer(server) as runner:
        c = http.client.HTTPConnection("127.0.0.1", runner.server.port, timeout=10)
        c.request("POST", "/login", body=b'{"user": "me"}')
        r = c.getresponse()
        body = orjson.loads(r.read())
        cookie = r.getheader("set-cookie")
        assert r.status == 200
        got = body["access_token"]
        assert got.startswith("wirecap-redacted-accesstoken-") and got.isascii()
        assert cookie.startswith("wirecap-redacted-set-cookie-") and cookie.isascii()
        c.request("POST", "/use", body=orjson.dumps({"use": got}))
        r = c.getresponse()
        assert (r.status, orjson.loads(r.read())) == (200, {"ok": True})
    assert server.mismatches == []
    assert sorted(w.split(":")[0] for w in warnings) == ["seq 3 (http-1)", "seq 4 (http-1)"]
    assert any("set-cookie" in w for w in warnings) and any("accesstoken" in w for w in warnings)
