"""tests/codexws_record.py's `compare`: the check behind the real-Codex exactness tests notices every way a
recording could be wrong (a changed byte, a lost or extra message, a binary/text mix-up, a time that
contradicts the server's clock, a handshake field missing or different)."""

from __future__ import annotations

import base64
import json
import sys
import time

import pytest
from conftest import ROOT

from wirecap.capture import CaptureWriter

sys.path.insert(0, str(ROOT / "tests"))
from codexws_record import compare  # noqa: E402

REQ = ("GET /v1/responses HTTP/1.1\r\nHost: 127.0.0.1:1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
       "Authorization: Bearer sk-fake-000000\r\nSec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n")
RESP = [["Upgrade", "websocket"], ["Connection", "Upgrade"], ["Sec-WebSocket-Extensions", "permessage-deflate"]]
MSGS = [("c2s", b'{"type":"response.create"}'), ("s2c", b'{"type": "response.created"}'),
        ("s2c", '{"type":"response.output_text.delta","delta":"caf\u00e9"}'.encode())]


def _write(tmp_path, *, msgs=MSGS, ext="permessage-deflate", resp=RESP, url="ws://127.0.0.1:1/v1/responses",
           binary=(), early=None):
    """The fake's frame log and a capture of the same session (to be spoiled by the arguments)."""
    frames = tmp_path / "frames.jsonl"
    cap = tmp_path / "cap.jsonl"
    lines = [{"ev": "open", "conn": 1, "t": time.time(), "request": REQ, "response_headers": RESP, "status": 101,
              "extensions": "permessage-deflate"}]
    with CaptureWriter(cap) as w:
        head = {k.lower(): v for k, v in (ln.split(": ", 1) for ln in REQ.split("\r\n")[1:] if ln)}
        head["authorization"] = "Bearer «redacted:bearer:12345678»"
        fields = {"extensions": ext} if ext else {}
        w.open("ws-1", "ws", url=url, headers=head, status=101, response_headers={k.lower(): v for k, v in resp},
               **fields)
        for i, (d, data) in enumerate(MSGS):
            t = time.time()
            if d == "s2c":
                lines.append({"ev": "msg", "conn": 1, "t": t - 0.01, "dir": d, "opcode": "text", "len": len(data),
                              "b64": base64.b64encode(data).decode()})
            if i < len(msgs):
                w.msg("ws-1", msgs[i][0], msgs[i][1], **({"binary": True} if i in binary else {}))
            if d == "c2s":
                late = -1.0 if early == i else 0.01
                lines.append({"ev": "msg", "conn": 1, "t": time.time() + late, "dir": d, "opcode": "text",
                              "len": len(data), "b64": base64.b64encode(data).decode()})
        for extra in msgs[len(MSGS):]:
            w.msg("ws-1", *extra)
        w.close_channel("ws-1", code=1006, reason="", by="client")
    frames.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return frames, cap


def test_an_exact_recording_passes_with_its_numbers(tmp_path):
    res = compare(*_write(tmp_path))
    assert res["ok"], res["why"]
    assert res["messages_sent"] == res["messages_recorded"] == 3 and res["c2s"] == 1 and res["s2c"] == 2
    assert res["bytes_recorded"] == res["bytes_sent"] == sum(len(b) for _, b in MSGS)
    assert res["lag_min_ms"] >= 0 and res["closes"] == [{"code": 1006, "by": "client", "reason": ""}]


@pytest.mark.parametrize(("spoil", "words"), [
    ({"msgs": [MSGS[0], MSGS[1], ("s2c", MSGS[2][1].replace(b"caf", b"cab"))]}, "messages differ"),
    ({"msgs": MSGS[:2]}, "messages differ"),
    ({"msgs": [*MSGS, ("s2c", b"{}")]}, "messages differ"),
    ({"binary": (1,)}, "messages differ"),
    ({"early": 0}, "out of order"),
    ({"ext": None}, "extensions"),
    ({"resp": RESP[:2]}, "response headers differ"),
    ({"url": "ws://127.0.0.1:1/v1/other"}, "url"),
])
def test_each_kind_of_wrong_recording_is_caught(tmp_path, spoil, words):
    res = compare(*_write(tmp_path, **spoil))
    assert not res["ok"] and any(words in w for w in res["why"]), res["why"]
