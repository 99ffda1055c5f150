"""`wirecap record -- CMD`, HTTPS through the regular proxy with wirecap's CA, `wirecap ca`, and
`mitmdump -s $(wirecap addon-path)`: real subprocesses, real servers, 127.0.0.1 only."""

from __future__ import annotations

import http.server
import os
import signal
import socket
import ssl
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import lab_dir as _lab
from conftest import run_wirecap
from record_util import ROOT, channel, read_capture, record_home, self_signed_cert  # noqa: F401

from wirecap.capture.payload import payload_bytes

pytestmark = pytest.mark.usefixtures("record_home")


class _Hello(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802
        body = b'{"hello":"' + self.path.encode() + b'"}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _serve(tls_dir: Path | None = None) -> http.server.ThreadingHTTPServer:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    if tls_dir is not None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(tls_dir / "cert.pem", tls_dir / "key.pem")
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


CLIENT = """
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=20) as r:
    sys.stdout.write(r.read().decode() + "\\n")
print("done", flush=True)
sys.exit(3)
"""


def test_record_command_sets_proxy_and_records_network_and_stdout(tmp_path):
    srv = _serve()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/v1/ping"
        cap = tmp_path / "run.jsonl"
        res = run_wirecap("record", "-o", str(cap), "--", sys.executable, "-c", CLIENT, url, timeout=90,
                          env={"NO_PROXY": "localhost,127.0.0.1,example.com"})
    finally:
        srv.shutdown()
    err = res.stderr.decode()
    assert res.returncode == 3, err
    assert res.stdout == b'{"hello":"/v1/ping"}\ndone\n'  # passed through untouched
    assert "set HTTPS_PROXY=http://127.0.0.1:" in err and "set http_proxy=" in err
    assert "set NO_PROXY=example.com" in err  # loopback entries removed so local servers are recorded
    assert "set NODE_EXTRA_CA_CERTS=" in err and str(cap) in err
    _, records, reader = read_capture(cap)
    assert reader.end is not None
    proc = channel(records, "proc")
    assert proc[0]["kind"] == "process" and proc[-1]["type"] == "close" and proc[-1]["exit_code"] == 3
    out = [payload_bytes(r) for r in channel(records, "stdout") if r["type"] == "msg"]
    assert out == [b'{"hello":"/v1/ping"}', b"done"]
    http = channel(records, "http-1")
    assert [r["type"] for r in http] == ["open", "response", "msg", "close"]
    assert http[0]["url"] == url and http[2]["json"] == {"hello": "/v1/ping"}
    # one writer, one clock: the request happened between the process start and its exit
    assert proc[0]["t"] <= http[0]["t"] <= proc[-1]["t"]


class _Forwarder(http.server.BaseHTTPRequestHandler):
    """A minimal upstream HTTP proxy: absolute-URI GETs fetched directly; the request lines are kept."""

    protocol_version = "HTTP/1.1"
    seen: list[str] = []

    def do_GET(self):  # noqa: N802
        import urllib.request

        type(self).seen.append(self.requestline)
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with direct.open(self.path, timeout=10) as r:
            body = r.read()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.send_header("via", "1.1 test-upstream")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_upstream_chains_through_another_proxy_and_records_the_exchange(tmp_path):
    srv = _serve()
    up = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Forwarder)
    threading.Thread(target=up.serve_forever, daemon=True).start()
    _Forwarder.seen = []
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/via-upstream"
        cap = tmp_path / "up.jsonl"
        res = run_wirecap("record", "-o", str(cap), "--upstream", f"http://127.0.0.1:{up.server_address[1]}",
                          "--", sys.executable, "-c", CLIENT, url, timeout=90)
    finally:
        srv.shutdown()
        up.shutdown()
    err = res.stderr.decode()
    assert res.returncode == 3, err
    assert res.stdout == b'{"hello":"/via-upstream"}\ndone\n'
    assert _Forwarder.seen == [f"GET {url} HTTP/1.1"]  # the request went through the other proxy
    assert f"proxy via http://127.0.0.1:{up.server_address[1]}" in err
    _, records, reader = read_capture(cap)
    assert reader.end is not None
    http_ch = channel(records, "http-1")
    assert [r["type"] for r in http_ch] == ["open", "response", "msg", "close"]
    assert http_ch[0]["url"] == url and http_ch[1]["status"] == 200
    assert http_ch[1]["headers"]["via"] == "1.1 test-upstream"  # the response the other proxy sent
    assert http_ch[2]["json"] == {"hello": "/via-upstream"}


def test_https_through_regular_proxy_trusting_wirecaps_ca(tmp_path):
    srv = _serve(self_signed_cert(tmp_path))
    try:
        url = f"https://127.0.0.1:{srv.server_address[1]}/secure"
        cap = tmp_path / "tls.jsonl"
        res = run_wirecap("record", "-o", str(cap), "--ssl-insecure", "--", sys.executable, "-c", CLIENT, url,
                          timeout=90)
    finally:
        srv.shutdown()
    assert res.returncode == 3, res.stderr.decode()
    assert res.stdout.startswith(b'{"hello":"/secure"}')
    _, records, _ = read_capture(cap)
    http = channel(records, "http-1")
    assert http[0]["url"] == url and http[1]["status"] == 200
    assert payload_bytes(http[2]) == b'{"hello":"/secure"}'


def test_ca_command_prints_paths_and_keeps_the_key_private():
    home_dir = Path(os.environ["WIRECAP_HOME"])
    res = run_wirecap("ca")
    assert res.returncode == 0
    lines = res.stdout.decode().splitlines()
    cert = home_dir / "ca" / "mitmproxy-ca-cert.pem"
    assert lines[0] == f"# wirecap CA certificate: {cert}"
    names = {ln.split("=")[0].removeprefix("export ") for ln in lines[1:]}
    assert names == {"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CODEX_CA_CERTIFICATE"}
    assert cert.read_bytes().startswith(b"-----BEGIN CERTIFICATE-----")
    key = home_dir / "ca" / "mitmproxy-ca.pem"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    bundle = Path([ln for ln in lines if "SSL_CERT_FILE" in ln][0].split("=", 1)[1])
    assert cert.read_bytes() in bundle.read_bytes()


def test_mitmdump_loads_the_addon_from_addon_path(tmp_path):
    home_dir = Path(os.environ["WIRECAP_HOME"])
    res = run_wirecap("addon-path")
    path = res.stdout.decode().strip()
    assert res.returncode == 0 and Path(path).is_file()
    srv = _serve()
    port = _free_port()
    cap = tmp_path / "mitm.jsonl"
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "mitmdump"), "-q", "-s", path, "--set", f"wirecap_out={cap}",
         "--mode", f"reverse:http://127.0.0.1:{srv.server_address[1]}", "--listen-host", "127.0.0.1",
         "--listen-port", str(port), "--set", f"confdir={home_dir / 'ca'}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "mitmdump did not start"
                time.sleep(0.1)
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/via-mitmdump", timeout=20) as r:
            assert r.read() == b'{"hello":"/via-mitmdump"}'
    finally:
        proc.send_signal(signal.SIGINT)
        out = proc.communicate(timeout=30)[0]
        srv.shutdown()
    header, records, reader = read_capture(cap)
    assert header["origin"]["source"] == "mitmproxy-addon", out
    assert reader.end is not None
    http = channel(records, "http-1")
    assert [r["type"] for r in http] == ["open", "response", "msg", "close"]
    assert http[0]["url"].endswith("/via-mitmdump")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_record_refuses_bad_arguments_without_a_traceback(tmp_path):
    res = run_wirecap("record", "-o", str(tmp_path / "x.jsonl"), "--reverse", "ftp://nope")
    assert res.returncode == 2 and b"Traceback" not in res.stderr and b"--reverse" in res.stderr
    res = run_wirecap("record", "-o", str(tmp_path / "x.jsonl"), "--", "no-such-command-wirecap")
    assert res.returncode == 127 and b"command not found" in res.stderr
    assert not (tmp_path / "x.jsonl").exists()


# --- real client (the lab's Claude Code against the lab's fake Anthropic server) ---------------------


@pytest.mark.realclient
@pytest.mark.skipif(_lab() is None, reason="lab not installed (no node_modules/.bin/claude)")
@pytest.mark.parametrize("how", ["reverse", "http_proxy"])
def test_claude_code_capture_holds_sse_exchange_and_stdout(tmp_path, how):
    """`--reverse` + ANTHROPIC_BASE_URL (recommended), and plain `-- CMD` where Claude Code goes
    through HTTP_PROXY (it does honour it for an http:// loopback base URL in the lab's version)."""
    lab = _lab()
    assert lab is not None
    fake = ROOT / "tests" / "fixtures" / "lab" / "fake" / "fake_anthropic.py"
    pf = tmp_path / "fake.port"
    fake_proc = subprocess.Popen([sys.executable, str(fake), "--mode", "text", "--log", str(tmp_path / "fake.jsonl"),
                                  "--portfile", str(pf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not (pf.exists() and pf.read_text().strip()):
            assert time.monotonic() < deadline and fake_proc.poll() is None, "fake server did not start"
            time.sleep(0.1)
        port = int(pf.read_text())
        home = tmp_path / "home"
        home.mkdir()
        work = tmp_path / "work"
        work.mkdir()
        env = {"HOME": str(home), "TMPDIR": str(tmp_path), "ANTHROPIC_API_KEY": "sk-ant-fake-0000000000000000",
               "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "TERM": "dumb"}
        cap = tmp_path / "claude.jsonl"
        if how == "reverse":
            mode = ["--reverse", f"http://127.0.0.1:{port}", "--base-url-env", "ANTHROPIC_BASE_URL"]
        else:
            mode = []
            env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{port}"
        res = run_wirecap("record", "-o", str(cap), *mode, "--",
                          str(lab / "node_modules" / ".bin" / "claude"), "-p", "say hello",
                          "--output-format", "stream-json", "--verbose", timeout=180, cwd=str(work), env=env)
    finally:
        fake_proc.terminate()
        fake_proc.wait(10)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    _, records, reader = read_capture(cap)
    assert reader.end is not None
    opens = {r["ch"]: r for r in records if r["type"] == "open"}
    sse_chs = [r["ch"] for r in records if r["type"] == "response" and r.get("sse")]
    assert sse_chs, "no SSE response recorded"
    ch = sse_chs[-1]
    assert opens[ch]["url"].endswith("/v1/messages") or "/v1/messages?" in opens[ch]["url"]
    assert "sk-ant-fake" not in cap.read_text()  # the API key was redacted
    events = [r for r in channel(records, ch) if r["type"] == "msg" and r["dir"] == "s2c"]
    assert [e["sse"].get("event") for e in events][0] == "message_start"
    assert any(e["sse"].get("event") == "message_stop" for e in events)
    stdout = [r for r in channel(records, "stdout") if r["type"] == "msg"]
    assert any(isinstance(r.get("json"), dict) and r["json"].get("type") == "result" for r in stdout)
