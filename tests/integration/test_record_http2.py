"""HTTP/2 through `wirecap record`: an SSE stream over h2 (TLS + ALPN) is recorded one event per msg.

Clients such as Codex (Rust, reqwest) negotiate HTTP/2 when the server offers it, so the recorder's
SSE path must work on h2 streams too. The server is the `h2` library (pinned as mitmproxy's
dependency) on a TLS socket; the client is curl built with nghttp2 (skipped where curl lacks it).
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import pytest
from conftest import run_wirecap
from record_util import channel, read_capture, record_home, self_signed_cert  # noqa: F401

pytestmark = pytest.mark.usefixtures("record_home")

EVENTS = [b'event: message_start\ndata: {"type":"message_start","n":0}\n\n',
          b'event: content_block_delta\ndata: {"type":"content_block_delta","text":"Hel"}\n\n',
          b'event: content_block_delta\ndata: {"type":"content_block_delta","text":"lo"}\n\n',
          b'event: message_stop\ndata: {"type":"message_stop"}\n\n']


def _curl_has_http2() -> bool:
    curl = shutil.which("curl")
    if curl is None:
        return False
    out = subprocess.run([curl, "-V"], capture_output=True, text=True, timeout=10).stdout
    return "HTTP2" in out


class H2SSEServer:
    """One TLS listener speaking only h2; each request gets EVENTS as an SSE stream, 100 ms apart."""

    def __init__(self, tls_dir: Path) -> None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(tls_dir / "cert.pem", tls_dir / "key.pem")
        ctx.set_alpn_protocols(["h2"])
        self.ctx = ctx
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.alpn: list[str | None] = []
        self.paths: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                raw, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        import h2.config
        import h2.connection
        import h2.events

        try:
            conn_sock = self.ctx.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            return
        self.alpn.append(conn_sock.selected_alpn_protocol())
        conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False))
        conn.initiate_connection()
        conn_sock.sendall(conn.data_to_send())
        conn_sock.settimeout(10)
        try:
            while True:
                data = conn_sock.recv(65536)
                if not data:
                    return
                for ev in conn.receive_data(data):
                    if isinstance(ev, h2.events.RequestReceived):
                        path = dict(ev.headers).get(b":path", b"")
                        self.paths.append(path.decode() if isinstance(path, bytes) else str(path))
                        conn.send_headers(ev.stream_id, [(":status", "200"), ("content-type", "text/event-stream"),
                                                         ("cache-control", "no-cache")])
                        conn_sock.sendall(conn.data_to_send())
                        for i, event in enumerate(EVENTS):
                            conn.send_data(ev.stream_id, event, end_stream=i == len(EVENTS) - 1)
                            conn_sock.sendall(conn.data_to_send())
                            time.sleep(0.1)
                conn_sock.sendall(conn.data_to_send())
        except (OSError, ssl.SSLError):
            return
        finally:
            conn_sock.close()

    def close(self) -> None:
        self._stop.set()
        self.sock.close()
        self._thread.join(5)


@pytest.mark.skipif(not _curl_has_http2(), reason="curl with HTTP/2 (nghttp2) is not installed")
def test_sse_over_http2_is_recorded_one_event_per_msg(tmp_path):
    server = H2SSEServer(self_signed_cert(tmp_path))
    try:
        url = f"https://127.0.0.1:{server.port}/v1/messages"
        cap = tmp_path / "h2.jsonl"
        res = run_wirecap("record", "-o", str(cap), "--ssl-insecure", "--",
                          "curl", "-sSN", "-k", "--http2", "--max-time", "20", url, timeout=90)
    finally:
        server.close()
    err = res.stderr.decode()
    assert res.returncode == 0, err
    assert res.stdout.replace(b"\r\n", b"\n") == b"".join(EVENTS)  # the client got the stream unchanged
    assert server.alpn == ["h2"] and server.paths == ["/v1/messages"]  # the proxy spoke HTTP/2 to the server
    _, records, reader = read_capture(cap)
    assert reader.end is not None and reader.interrupted is None
    http = channel(records, "http-1")
    assert http[0]["type"] == "open" and http[0]["url"] == url
    assert http[0]["http_version"] == "HTTP/2.0"  # curl's side
    resp = next(r for r in http if r["type"] == "response")
    assert resp["status"] == 200 and resp.get("sse") is True and resp["http_version"] == "HTTP/2.0"  # the server's
    msgs = [r for r in http if r["type"] == "msg" and r["dir"] == "s2c"]
    assert [m["sse"]["event"] for m in msgs] == ["message_start", "content_block_delta", "content_block_delta",
                                                 "message_stop"]
    assert [m["json"] for m in msgs][1] == {"type": "content_block_delta", "text": "Hel"}
    # one record per event, each timed when it passed (the server spaced them 100 ms apart)
    gaps = [b["t"] - a["t"] for a, b in zip(msgs, msgs[1:], strict=False)]
    assert all(g > 0.05 for g in gaps), gaps
    assert http[-1]["type"] == "close"
