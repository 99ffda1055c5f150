"""`wirecap export --har`: HTTP exchanges (SSE bodies byte-exact) and WebSockets with _webSocketMessages."""

from __future__ import annotations

import base64
import json

from conftest import SAMPLES, run_wirecap

from wirecap.capture import CaptureWriter
from wirecap.capture.schema import validate_capture_file
from wirecap.capture.sse import SSEParser, sse_record_fields

STREAM = (b"event: message_start\ndata: {\"type\":\"message_start\"}\n\n"
          b": ping\n\n"
          b"event: content_block_delta\r\ndata: {\"type\": \"content_block_delta\",\r\ndata: \"x\": 1}\r\n\r\n"
          b"data: last without blank line")


def _capture(path):
    with CaptureWriter(path) as w:
        w.open("proc", "process", argv=["agent"])
        w.open("http-1", "http", method="POST", url="http://127.0.0.1:1/v1/messages?beta=true",
               headers={"content-type": "application/json"})
        w.msg("http-1", "c2s", b'{"model":"m","stream":true}')
        w.response("http-1", 200, {"content-type": "text/event-stream"}, reason="OK", sse=True)
        p = SSEParser()
        events = p.feed(STREAM[:40]) + p.feed(STREAM[40:]) + p.close()
        for ev in events:
            w.write("msg", None, len(ev.raw), ch="http-1", dir="s2c", **sse_record_fields(ev))
        w.close_channel("http-1", status=200, ttfb=0.05, duration=0.5, bytes=len(STREAM))
        w.open("ws-1", "ws", url="ws://127.0.0.1:2/ws", headers={"host": "127.0.0.1:2"}, status=101,
               response_headers={"upgrade": "websocket"})
        w.msg("ws-1", "c2s", b'{"type":"action"}')
        w.msg("ws-1", "s2c", b"\x00\x01\xff", binary=True)
        w.close_channel("ws-1", code=1000, reason="", by="client")
    assert validate_capture_file(path) == []
    return path


def test_har_entries(tmp_path):
    cap = _capture(tmp_path / "c.jsonl")
    out = tmp_path / "c.har"
    res = run_wirecap("export", str(cap), "--har", str(out))
    assert res.returncode == 0, res.stderr
    assert res.stderr.decode().strip().endswith(
        "exported 1 HTTP and 1 WebSocket entries; skipped 1 process/pipe channels")
    har = json.loads(out.read_bytes())
    log = har["log"]
    assert log["version"] == "1.2" and log["creator"]["name"] == "wirecap"
    http, ws = log["entries"]
    assert http["request"]["method"] == "POST"
    assert http["request"]["queryString"] == [{"name": "beta", "value": "true"}]
    assert http["request"]["postData"]["text"] == '{"model":"m","stream":true}'
    assert http["response"]["status"] == 200 and http["response"]["statusText"] == "OK"
    assert http["response"]["content"]["text"].encode() == STREAM  # events joined back, byte for byte
    assert http["time"] == 500.0 and http["timings"]["wait"] == 50.0
    assert ws["_resourceType"] == "websocket" and ws["response"]["status"] == 101
    msgs = ws["_webSocketMessages"]
    assert [(m["type"], m["opcode"]) for m in msgs] == [("send", 1), ("receive", 2)]
    assert msgs[0]["data"] == '{"type":"action"}'
    assert base64.b64decode(msgs[1]["data"]) == b"\x00\x01\xff"
    assert msgs[0]["time"] <= msgs[1]["time"]
    res = run_wirecap("export", str(cap), "--har", str(out))
    assert res.returncode == 2 and "refusing to overwrite" in res.stderr.decode()


def test_har_of_an_imported_sample_leaves_summaries_out(tmp_path):
    cap = tmp_path / "imp.jsonl"
    assert run_wirecap("import", str(SAMPLES / "codex_hello_requests.jsonl"), "-o", str(cap)).returncode == 0
    res = run_wirecap("export", str(cap), "--har", "-")
    assert res.returncode == 0
    (entry,) = json.loads(res.stdout)["log"]["entries"]
    assert entry["request"]["url"].endswith("/v1/responses")
    assert entry["response"]["content"]["size"] == 0  # the log kept only a summary: not passed off as a body
    assert json.loads(entry["request"]["postData"]["text"])["model"]


def test_write_har_streams_the_same_bytes_in_open_order():
    """`write_har` (what `export` runs) writes exactly what dumping the whole document would, also when
    channels close out of their open order (a later exchange finishing first waits in a spool) and
    when there is no entry at all."""
    import io

    import orjson

    from wirecap.export.har import capture_to_har, write_har

    header = {"id": "x", "created": "2026-01-01T00:00:00Z"}

    def rec(seq, t, rtype, ch, **kw):
        return {"seq": seq, "t": t, "type": rtype, "ch": ch, **kw}

    records = [
        rec(1, 0.1, "open", "http-1", kind="http", method="POST", url="http://h/a"),
        rec(2, 0.2, "open", "http-2", kind="http", method="GET", url="http://h/b"),
        rec(3, 0.3, "open", "ws-1", kind="ws", url="ws://h/ws"),
        rec(4, 0.4, "msg", "http-1", dir="c2s", json={"q": 1}),
        rec(5, 0.5, "response", "http-2", status=200, headers={"content-type": "text/plain"}),
        rec(6, 0.6, "msg", "http-2", dir="s2c", text="two"),
        rec(7, 0.7, "close", "http-2", status=200),
        rec(8, 0.8, "msg", "ws-1", dir="s2c", text="hi"),
        rec(9, 0.9, "response", "http-1", status=201, headers={}),
        rec(10, 1.0, "close", "http-1", status=201),
    ]  # ws-1 never closes: it comes last, in open order
    for recs in (records, records[:0], [r for r in records if r["ch"] == "http-2"]):
        out = io.BytesIO()
        counts = write_har(header, iter(recs), out)
        har, want = capture_to_har(header, iter(recs))
        assert out.getvalue() == orjson.dumps(har, option=orjson.OPT_INDENT_2) + b"\n"
        assert counts == want
    assert [e["request"]["url"] for e in json.loads(out.getvalue())["log"]["entries"]] == ["http://h/b"]
    out = io.BytesIO()
    write_har(header, iter(records), out)
    assert [e["_wirecap_ch"] for e in json.loads(out.getvalue())["log"]["entries"]] == ["http-1", "http-2", "ws-1"]
