"""The capture format: writing (redaction on) and reading+parsing a large generated capture.

Writing: a child process writes a realistic record mix with `CaptureWriter` (default redaction on):
small JSON WebSocket messages, SSE events with their `sse` object, stdout text lines, and a channel
open/close now and then; ~1 GB (quick: ~20 MB). Figure: records/s (target >= 300k/s).

Reading: a child process iterates the same file with `CaptureReader` (every line parsed, seq and t
checked); records/s against the same-run baselines `wc -l` (lines/s) and a bare orjson loop
(`for line in f: orjson.loads(line)`); peak RSS of the reading process (target: >= 500k records/s
and < 100 MB).
"""

from __future__ import annotations

import json
import sys

from bench.common import figure, run_measured, tempdir

WRITER = r"""
import json, sys, time
from wirecap.capture import CaptureWriter
path, target = sys.argv[1], int(sys.argv[2])
ws = [('{"type":"action","data":{"type":"response-chunk","userInputId":"mc-input-%d","chunk":"%s"}}'
       % (i, ("Hello world " * 4)[: 10 + i % 30])).encode() for i in range(64)]
sse = ['{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"%s"}}'
       % ("lorem ipsum " * 6)[: 20 + i % 40] for i in range(64)]
text = [("line %d of the agent's terminal output: all good here " % i).encode() for i in range(64)]
w = CaptureWriter(path, force=True)
n = 0
size_check = 0
t0 = time.perf_counter()
k = 0
while True:
    ch = "ws-%d" % (k + 1)
    w.open(ch, "ws", url="ws://127.0.0.1:4242/ws", headers={"host": "127.0.0.1:4242"})
    h = "http-%d" % (k + 1)
    w.open(h, "http", method="POST", url="http://127.0.0.1:4243/v1/messages",
           headers={"content-type": "application/json", "x-api-key": "sk-ant-api03-" + "A" * 40})
    w.response(h, 200, {"content-type": "text/event-stream"}, sse=True)
    n += 3
    for i in range(2000):
        w.msg(ch, "s2c" if i % 3 else "c2s", ws[i & 63])
        w.msg(h, "s2c", sse[i & 63], sse={"event": "content_block_delta"})
        w.msg("stdout", "s2c", text[i & 63])
        n += 3
    w.close_channel(ch, code=1000, reason="", by="client")
    w.close_channel(h, status=200, duration=1.0)
    n += 2
    k += 1
    if k % 8 == 0:
        import os
        if os.path.getsize(path) >= target:
            break
w.close()
dt = time.perf_counter() - t0
print(json.dumps({"records": n + 1, "seconds": dt}))
"""

BARE_WRITER = r"""
import json, os, sys, time, orjson
from wirecap.capture.payload import encode_payload
path, n_target = sys.argv[1], int(sys.argv[2])
ws = [('{"type":"action","data":{"type":"response-chunk","userInputId":"mc-input-%d","chunk":"%s"}}'
       % (i, ("Hello world " * 4)[: 10 + i % 30])).encode() for i in range(64)]
sse = [('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"%s"}}'
       % ("lorem ipsum " * 6)[: 20 + i % 40]).encode() for i in range(64)]
text = [("line %d of the agent's terminal output: all good here " % i).encode() for i in range(64)]
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
dumps, write, mono = orjson.dumps, os.write, time.monotonic
t0 = time.perf_counter()
seq = 0
while seq < n_target:
    for i in range(2000):
        for ch, data, extra in (("ws-1", ws[i & 63], None), ("http-1", sse[i & 63], {"event": "x"}),
                                ("stdout", text[i & 63], None)):
            seq += 1
            rec = {"seq": seq, "t": mono(), "type": "msg", "ch": ch, "dir": "s2c", **encode_payload(data)}
            if extra:
                rec["sse"] = extra
            write(fd, dumps(rec) + b"\n")
os.close(fd)
print(json.dumps({"records": seq, "seconds": time.perf_counter() - t0}))
"""

READER = r"""
import json, sys, time
from wirecap.capture import CaptureReader
t0 = time.perf_counter()
n = 0
with CaptureReader(sys.argv[1]) as r:
    for rec in r:
        n += 1
dt = time.perf_counter() - t0
print(json.dumps({"records": n, "seconds": dt, "problems": len(r.problems), "interrupted": r.interrupted}))
"""

ORJSON_LOOP = r"""
import json, sys, time, orjson
t0 = time.perf_counter()
n = 0
loads = orjson.loads
with open(sys.argv[1], "rb") as f:
    for line in f:
        loads(line)
        n += 1
print(json.dumps({"records": n - 1, "seconds": time.perf_counter() - t0}))
"""


def _child(script: str, *args: str) -> tuple[dict, int]:
    m = run_measured([sys.executable, "-c", script, *args], timeout=600)
    return json.loads(m.stdout), m.peak_rss


def run(quick: bool = False) -> list[dict]:
    target = 20_000_000 if quick else 1_000_000_000
    out: list[dict] = []
    with tempdir() as d:
        path = d / "big.jsonl"
        w, _ = _child(WRITER, str(path), str(target))
        size = path.stat().st_size
        write_rate = w["records"] / w["seconds"]
        bare_n = min(w["records"], 300_000 if quick else 2_000_000)
        b, _ = _child(BARE_WRITER, str(d / "bare.jsonl"), str(bare_n))
        (d / "bare.jsonl").unlink()
        bare_rate = b["records"] / b["seconds"]
        r, rss = _child(READER, str(path))
        assert r["records"] == w["records"] and r["problems"] == 0 and r["interrupted"] is None, r
        o, _ = _child(ORJSON_LOOP, str(path))
        wc = run_measured(["wc", "-l", str(path)])
        wc_rate = w["records"] / wc.seconds
        read_rate = r["records"] / r["seconds"]
        orjson_rate = o["records"] / o["seconds"]
        note = f"{size / 1e6:.0f} MB, {w['records']} records, avg {size / w['records']:.0f} B/record"
        out.append(figure("capture write (redaction on)", write_rate, "records/s",
                          baseline="bare encode_payload+orjson.dumps+os.write loop", baseline_value=bare_rate,
                          target=">= 300k records/s", ok=write_rate >= 300_000, note=note))
        out.append(figure("capture read+parse (CaptureReader)", read_rate, "records/s",
                          baseline="bare orjson loop", baseline_value=orjson_rate,
                          target=">= 500k records/s", ok=read_rate >= 500_000, note=note))
        out.append(figure("capture read+parse vs wc -l", read_rate, "records/s", baseline="wc -l (lines/s)",
                          baseline_value=wc_rate, target="", ok=None, note="wc -l only counts newlines"))
        out.append(figure("capture read peak RSS", rss / 1e6, "MB", target="< 100 MB",
                          ok=rss < 100e6, note=f"whole reading process, {size / 1e6:.0f} MB file"))
    return out


if __name__ == "__main__":
    from bench.common import print_table

    print_table(run(quick="--quick" in sys.argv))
