"""HTTP + Server-Sent Events through `wirecap record --reverse`: live, one record per event, exact bytes."""

from __future__ import annotations

import socket
import threading
import time
import zlib

import pytest
from record_util import channel, read_capture, record_home, recorder  # noqa: F401

from wirecap.capture.payload import line_bytes, payload_bytes
from wirecap.capture.schema import validate_capture_file
from wirecap.capture.sse import SSEParser, sse_event_bytes

pytestmark = pytest.mark.usefixtures("record_home")

EVENTS = [
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1"}}\n\n',
    b": heartbeat\n\n",
    b'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"text":"Hel"}}\n\n',
    b'event: content_block_delta\r\ndata: {"type":"content_block_delta", "delta":{"text":"lo"}}\r\n\r\n',
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
]


class SSEServer:
    """A raw HTTP/1.1 server: one event stream per request, chunked, `gap` seconds between events.

    `sent_at[i]` is when it began sending event i; `split` sends each event in three TCP writes
    (20 ms apart) so the proxy sees it in pieces; `gzip` compresses the stream (sync-flushed per event).
    """

    def __init__(self, events: list[bytes], *, gap: float = 0.2, split: bool = False, gzip: bool = False,
                 bad_gzip: bool = False, conns: int = 1, ctype: bytes = b"text/event-stream; charset=utf-8") -> None:
        self.events, self.gap, self.split, self.gzip, self.bad_gzip = events, gap, split, gzip, bad_gzip
        self.ctype = ctype
        self.conns = conns
        self.sent_at: list[float] = []
        self.request = b""
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.sock.settimeout(30)
        for _ in range(self.conns):
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.sent_at = []
            self._serve(conn)

    def _serve(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            conn.settimeout(30)
            buf = b""
            while b"\r\n\r\n" not in buf:
                buf += conn.recv(65536)
            head, _, body = buf.partition(b"\r\n\r\n")
            length = int(next((ln.split(b":")[1] for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length")), b"0"))
            while len(body) < length:
                body += conn.recv(65536)
            self.request = head + b"\r\n\r\n" + body
            enc = b"content-encoding: gzip\r\n" if self.gzip or self.bad_gzip else b""
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: " + self.ctype + b"\r\n" + enc
                         + b"transfer-encoding: chunked\r\n\r\n")
            comp = zlib.compressobj(wbits=31)
            for i, ev in enumerate(self.events):
                if i:
                    time.sleep(self.gap)
                data = ev
                if self.gzip:
                    data = comp.compress(ev) + comp.flush(zlib.Z_SYNC_FLUSH)
                pieces = [data[: len(data) // 3], data[len(data) // 3 : 2 * len(data) // 3], data[2 * len(data) // 3 :]] \
                    if self.split else [data]
                self.sent_at.append(time.monotonic())
                for j, p in enumerate(pieces):
                    if j:
                        time.sleep(0.02)
                    if p:
                        conn.sendall(b"%x\r\n%s\r\n" % (len(p), p))
            if self.gzip:
                tail = comp.flush()
                conn.sendall(b"%x\r\n%s\r\n" % (len(tail), tail))
            conn.sendall(b"0\r\n\r\n")
            time.sleep(0.2)

    def close(self) -> None:
        self.sock.close()
        self.thread.join(10)


def stream_through(port: int, *, gzip: bool = False) -> tuple[bytes, list[tuple[bytes, float]]]:
    """POST to the proxy, read the chunked body as it comes; returns (raw body, [(event, arrival)])."""
    body = b'{"model":"claude-x","stream":true,"messages":[{"role":"user","content":"hi"}]}'
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                  b"content-length: %d\r\n\r\n%s" % (len(body), body))
        f = s.makefile("rb")
        status = f.readline()
        assert b" 200 " in status, status
        while f.readline() not in (b"\r\n", b""):
            pass
        raw = b""
        parser = SSEParser()
        dec = zlib.decompressobj(wbits=47) if gzip else None
        got: list[tuple[bytes, float]] = []
        while True:
            size = int(f.readline().strip(), 16)
            if size == 0:
                break
            chunk = f.read(size)
            f.read(2)
            raw += chunk
            plain = dec.decompress(chunk) if dec else chunk
            now = time.monotonic()
            got += [(ev.raw, now) for ev in parser.feed(plain)]
        got += [(ev.raw, time.monotonic()) for ev in parser.close()]
    return raw, got


def _check_live(server: SSEServer, got: list[tuple[bytes, float]]) -> None:
    """Each event reached the client before the server started sending the next one."""
    assert [e for e, _ in got] == server.events
    for i in range(len(got) - 1):
        assert got[i][1] < server.sent_at[i + 1], f"event {i} arrived only after event {i + 1} was sent"


def _sse_records(cap) -> tuple[list[dict], dict]:
    _, records, reader = read_capture(cap)
    assert reader.end is not None
    http = channel(records, "http-1")
    return http, reader.end


@pytest.mark.parametrize("split", [False, True], ids=["whole", "split-writes"])
def test_sse_events_arrive_live_and_are_recorded_one_per_event(tmp_path, split):
    server = SSEServer(EVENTS, split=split)
    try:
        with recorder(tmp_path, "--reverse", f"http://127.0.0.1:{server.port}") as rec:
            raw, got = stream_through(rec.port)
            rec.stop()
    finally:
        server.close()
    _check_live(server, got)
    assert raw == b"".join(EVENTS)
    http, end = _sse_records(rec.cap)
    kinds = [r["type"] for r in http]
    assert kinds == ["open", "msg", "response", *["msg"] * len(EVENTS), "close"]
    assert http[0]["method"] == "POST" and http[0]["url"].endswith("/v1/messages")
    assert http[1]["dir"] == "c2s" and http[1]["json"]["model"] == "claude-x"
    assert http[2]["status"] == 200 and http[2]["sse"] is True
    events = http[3:-1]
    assert [sse_event_bytes(r) for r in events] == EVENTS
    assert events[0]["sse"] == {"event": "message_start"} and events[0]["json"]["type"] == "message_start"
    assert events[1]["sse"]["comment"] == ["heartbeat"]
    assert "raw" in events[3]  # \r\n line ends are kept exactly
    times = [r["t"] for r in events]
    assert times == sorted(times) and times[-1] - times[0] > 0.5  # each event has its own time
    close = http[-1]
    assert close["status"] == 200 and close["bytes"] == len(raw) and close["duration"] >= close["ttfb"]
    assert end["errors"] == 0


def test_gzip_sse_is_decoded_for_the_record_and_passed_encoded(tmp_path):
    server = SSEServer(EVENTS, gzip=True, split=True)
    try:
        with recorder(tmp_path, "--reverse", f"http://127.0.0.1:{server.port}") as rec:
            raw, got = stream_through(rec.port, gzip=True)
            rec.stop()
    finally:
        server.close()
    _check_live(server, got)
    assert raw[:2] == b"\x1f\x8b"  # the client got the gzip bytes, unchanged
    assert zlib.decompress(raw, wbits=47) == b"".join(EVENTS)
    http, end = _sse_records(rec.cap)
    assert http[2]["type"] == "response" and http[2]["encoding"] == "gzip"
    events = [r for r in http if r["type"] == "msg" and r["dir"] == "s2c"]
    assert [sse_event_bytes(r) for r in events] == EVENTS
    assert http[-1]["bytes"] == len(raw) and end["errors"] == 0


def test_recorder_failure_never_reaches_the_client(tmp_path):
    """A stream claiming gzip but not gzip: the record fails (error counted), the client gets every byte."""
    server = SSEServer(EVENTS, gap=0.05, bad_gzip=True)
    try:
        with recorder(tmp_path, "--reverse", f"http://127.0.0.1:{server.port}") as rec:
            raw, _ = stream_through(rec.port)
            rec.stop()
    finally:
        server.close()
    assert raw == b"".join(EVENTS)
    _, records, reader = read_capture(rec.cap)
    errors = [r for r in records if r["type"] == "error"]
    assert errors and errors[0]["ch"] == "http-1" and errors[0]["where"].startswith("addon.")
    assert reader.end["errors"] == len(errors)
    assert [r["type"] for r in channel(records, "http-1")][-1] == "close"


def test_unwritable_capture_keeps_traffic_flowing(tmp_path):
    """The capture hits a file-size limit (EFBIG, like a full disk) mid-stream: traffic is unaffected."""
    import resource
    import signal

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2500, 2500))

    big = [b"data: " + (b"x" * 400) + b" %d\n\n" % i for i in range(30)]
    server = SSEServer(big, gap=0.01, conns=2)
    try:
        with recorder(tmp_path, "--reverse", f"http://127.0.0.1:{server.port}", preexec_fn=limit) as rec:
            raw, got = stream_through(rec.port)
            raw2, _ = stream_through(rec.port)  # after the failure, the proxy still serves
            status = rec.stop()
    finally:
        server.close()
    assert raw == raw2 == b"".join(big) and [e for e, _ in got] == big
    assert status == 0
    assert "write failed" in rec.stderr()
    _, records, reader = read_capture(rec.cap)
    assert reader.end is None and reader.interrupted  # no `end`: the capture says it is incomplete
    assert records and records[0]["type"] == "open"


def test_plain_json_body_recorded_whole_and_capped(tmp_path):
    """A non-SSE response is recorded whole; with --body-cap the cut is recorded explicitly."""
    payload = b'{"id":"x","content":"' + b"y" * 5000 + b'"}'

    def serve(sock: socket.socket) -> None:
        for _ in range(2):
            conn, _ = sock.accept()
            with conn:
                buf = b""
                while b"\r\n\r\n" not in buf:
                    buf += conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                             b"connection: close\r\n\r\n%s" % (len(payload), payload))

    sock = socket.create_server(("127.0.0.1", 0))
    th = threading.Thread(target=serve, args=(sock,), daemon=True)
    th.start()
    bodies = []
    try:
        for name, extra in (("whole.jsonl", ()), ("capped.jsonl", ("--body-cap", "1k"))):
            with recorder(tmp_path, "--reverse", f"http://127.0.0.1:{sock.getsockname()[1]}", *extra, name=name) as rec:
                with socket.create_connection(("127.0.0.1", rec.port), timeout=10) as s:
                    s.sendall(b"GET /v1/models HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
                    data = b""
                    while chunk := s.recv(65536):
                        data += chunk
                bodies.append(data.partition(b"\r\n\r\n")[2])
                rec.stop()
    finally:
        sock.close()
        th.join(10)
    assert bodies == [payload, payload]
    _, whole, _ = read_capture(tmp_path / "whole.jsonl")
    msgs = [r for r in whole if r["type"] == "msg"]
    assert len(msgs) == 1 and payload_bytes(msgs[0]) == payload and "truncated" not in msgs[0]
    _, capped, _ = read_capture(tmp_path / "capped.jsonl")
    msgs = [r for r in capped if r["type"] == "msg"]
    assert len(msgs) == 1 and payload_bytes(msgs[0]) == payload[:1024] and msgs[0]["truncated"] == len(payload)


def chunks_through(port: int) -> list[tuple[bytes, float]]:
    """GET through the proxy, read the chunked body as it comes: [(chunk, arrival)]."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"GET /api/chat HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        f = s.makefile("rb")
        assert b" 200 " in f.readline()
        while f.readline() not in (b"\r\n", b""):
            pass
        got = []
        while size := int(f.readline().strip(), 16):
            got.append((f.read(size), time.monotonic()))
            f.read(2)
    return got


LINES = [b'{"message":{"content":"Hel"},"done":false}\n', b'{"message":{"content":"lo"},"done":false}\n',
         b'{"message":{"content":""},"done":true,"eval_count":2}\n']


def _ndjson_capture(tmp_path, gzip: bool = False):
    server = SSEServer(LINES, ctype=b"application/x-ndjson", gzip=gzip, split=True)
    try:
        with recorder(tmp_path, "--reverse", f"http://127.0.0.1:{server.port}", name=f"nd{int(gzip)}.jsonl") as rec:
            got = chunks_through(rec.port)
            rec.stop()
    finally:
        server.close()
    return server, got, rec.cap


def _line_arrivals(got: list[tuple[bytes, float]], plain=lambda b: b) -> list[float]:
    """When each line was complete at the client."""
    arrived: list[float] = []
    seen = b""
    for chunk, at in got:
        seen += plain(chunk)
        arrived += [at] * (seen.count(b"\n") - len(arrived))
    return arrived


@pytest.mark.parametrize("gzip", [False, True], ids=["plain", "gzip"])
def test_ndjson_stream_passes_through_live_and_is_recorded_line_by_line(tmp_path, gzip):
    """A chunked application/x-ndjson body (Ollama's stream) reaches the client line by line, as sent
    (mitmproxy alone would hold it back until its end), and the record has one msg per line, each
    at its own time, whose bytes add up to the (decoded) body."""
    server, got, cap = _ndjson_capture(tmp_path, gzip)
    wire = b"".join(c for c, _ in got)
    dec = zlib.decompressobj(wbits=47)
    assert (dec.decompress(wire) if gzip else wire) == b"".join(LINES)
    dec = zlib.decompressobj(wbits=47)
    arrived = _line_arrivals(got, dec.decompress if gzip else (lambda b: b))
    for i in range(len(LINES) - 1):
        assert arrived[i] < server.sent_at[i + 1], f"line {i} arrived only after line {i + 1} was sent"
    http, end = _sse_records(cap)
    assert [r["type"] for r in http] == ["open", "response", "msg", "msg", "msg", "close"]
    assert http[1]["lines"] is True and "sse" not in http[1]
    lines = http[2:5]
    assert b"".join(line_bytes(r) for r in lines) == b"".join(LINES)
    assert lines[2]["json"]["done"] is True and all(r["dir"] == "s2c" for r in lines)
    times = [r["t"] for r in lines]
    assert times[1] - times[0] > 0.1 and times[2] - times[1] > 0.1  # sent 200 ms apart, each timed
    assert http[-1]["bytes"] == len(wire) and end["errors"] == 0
    assert validate_capture_file(cap) == []  # a valid format-v1 capture (lines, eol on http msgs)


def test_ndjson_capture_replays_line_by_line_and_exports_whole(tmp_path):
    """replay serve sends the lines again, byte-exact and spaced as recorded; HAR gets the whole body."""
    import json

    from conftest import run_wirecap

    from wirecap.replay.http_server import ReplayServer, ThreadedReplayServer

    _, _, cap = _ndjson_capture(tmp_path)
    with ThreadedReplayServer(ReplayServer.from_capture(str(cap), speed=1.0)) as srv:
        got = chunks_through(srv.server.port)
        assert srv.server.mismatches == []
    assert b"".join(c for c, _ in got) == b"".join(LINES)
    arrived = _line_arrivals(got)
    assert arrived[1] - arrived[0] > 0.1 and arrived[2] - arrived[1] > 0.1  # the recorded pacing
    har = tmp_path / "nd.har"
    res = run_wirecap("export", str(cap), "--har", str(har))
    assert res.returncode == 0, res.stderr.decode()
    entry = json.loads(har.read_text())["log"]["entries"][0]
    assert entry["response"]["content"]["text"] == b"".join(LINES).decode()
