"""`wirecap.record.session.RecordSession` in-process: the orchestration behind `wirecap record`, without
the CLI (no wirecap subprocess; a real proxy thread and real sockets on 127.0.0.1)."""

from __future__ import annotations

import http.server
import os
import sys
import threading
import urllib.request

import pytest
from record_util import channel, read_capture, record_home  # noqa: F401

from wirecap.capture.payload import payload_bytes
from wirecap.errors import ExitStatus, WirecapError
from wirecap.record.session import RecordSession, check_command, child_env, parse_listen, parse_size

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


@pytest.fixture
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def _get(url: str) -> bytes:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never the environment's proxy
    with opener.open(url, timeout=20) as r:
        return r.read()


def test_a_reverse_session_records_an_exchange_and_closes_the_capture(tmp_path, server):
    cap = tmp_path / "s.jsonl"
    said: list[str] = []
    with RecordSession(str(cap), reverse=server, listen="127.0.0.1:0", say=said.append) as s:
        assert s.url == f"http://127.0.0.1:{s.port}"
        assert _get(f"{s.url}/v1/ping") == b'{"hello":"/v1/ping"}'
    assert said == [f"reverse proxy to {server} listening on {s.url}; recording to {cap}"]
    _, records, reader = read_capture(cap)
    assert reader.end is not None and reader.interrupted is None
    http = [r for r in records if r.get("ch", "").startswith("http-")]
    assert [r["type"] for r in http if r["type"] != "msg"] == ["open", "response", "close"]
    assert http[0]["method"] == "GET" and http[0]["url"].endswith("/v1/ping")
    assert [payload_bytes(r) for r in http if r["type"] == "msg" and r["dir"] == "s2c"] == [b'{"hello":"/v1/ping"}']


def test_spawn_runs_a_command_pointed_at_the_proxy_into_the_same_capture(tmp_path, server):
    cap = tmp_path / "s.jsonl"
    out, err = tmp_path / "out", tmp_path / "err"
    client = ("import os, sys, urllib.request\n"
              "print(urllib.request.urlopen(os.environ['WIRECAP_PROXY_URL'] + '/x', timeout=20).read().decode())\n"
              "sys.exit(4)\n")
    said: list[str] = []
    with open(out, "wb") as o, open(err, "wb") as e, \
            RecordSession(str(cap), reverse=server, listen="127.0.0.1:0", say=said.append) as s:
        runner = s.spawn([sys.executable, "-c", client], base_url_envs=("MY_BASE_URL",), stdout=o, stderr=e,
                         env={k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")})
        assert runner.wait(60) == 4
    assert out.read_bytes() == b'{"hello":"/x"}\n'
    assert f"set MY_BASE_URL={s.url}" in said and f"set WIRECAP_PROXY_URL={s.url}" in said
    _, records, reader = read_capture(cap)
    assert reader.end is not None
    assert channel(records, "proc")[-1]["exit_code"] == 4
    assert [payload_bytes(r) for r in channel(records, "stdout") if r["type"] == "msg"] == [b'{"hello":"/x"}']
    assert any(r["type"] == "response" for r in records if r.get("ch", "").startswith("http-"))


def test_options_are_checked_before_anything_is_opened(tmp_path):
    cap = tmp_path / "never.jsonl"
    for kwargs, message in [
        ({"reverse": "http://a:1", "upstream": "http://b:2"}, "--reverse and --upstream cannot be combined"),
        ({"reverse": "ftp://a"}, "--reverse 'ftp://a': expected"),
        ({"upstream": "junk"}, "--upstream 'junk': expected"),
        ({"listen": "x:y"}, "--listen 'x:y': expected HOST:PORT"),
        ({"listen": "127.0.0.1:70000"}, "port out of range"),
    ]:
        with pytest.raises(WirecapError) as e:
            RecordSession(str(cap), **kwargs)
        assert message in str(e.value)
    assert not cap.exists()


def test_a_session_that_cannot_listen_leaves_no_capture(tmp_path):
    import socket

    cap = tmp_path / "never.jsonl"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(WirecapError, match="cannot listen there"):
            RecordSession(str(cap), listen=f"127.0.0.1:{port}").start()
    assert not cap.exists()


def test_the_small_parsers():
    assert parse_listen(None, 8080) == ("127.0.0.1", 8080)
    assert parse_listen("9000", 8080) == ("127.0.0.1", 9000)
    assert parse_listen("[::1]:7", 8080) == ("::1", 7)
    assert parse_listen("localhost", 0) == ("localhost", 0)
    assert [parse_size(s) for s in ("0", "512k", "16m", "1g", "10 KB")] == [0, 512 << 10, 16 << 20, 1 << 30, 10 << 10]
    with pytest.raises(WirecapError):
        parse_size("lots")
    with pytest.raises(WirecapError) as e:
        check_command(["surely-no-such-command-here"])
    assert e.value.exit_code == ExitStatus.COMMAND_NOT_FOUND == 127


def test_child_env_points_at_the_proxy_and_keeps_only_non_loopback_no_proxy():
    env, told = child_env({"NO_PROXY": "localhost,127.0.0.1,example.com", "no_proxy": "::1"},
                          "http://127.0.0.1:5", (), None)
    assert told["HTTPS_PROXY"] == told["all_proxy"] == "http://127.0.0.1:5"
    assert told["NO_PROXY"] == "example.com" and "no_proxy" not in env
    assert "NODE_EXTRA_CA_CERTS" in told
    env, told = child_env({}, None, ("ANTHROPIC_BASE_URL",), "http://127.0.0.1:6")
    assert told == {"WIRECAP_PROXY_URL": "http://127.0.0.1:6", "ANTHROPIC_BASE_URL": "http://127.0.0.1:6"}
