"""The capture format: writing (redaction on) and reading+parsing a large generated capture.

Writing: a child process writes a realistic record mix with `CaptureWriter` (default redaction on):
small JSON WebSocket messages, SSE events with their `sse` object, stdout text lines, and a channel
open/close now and then; ~1 GB (quick: ~20 MB). Figure: records/s (target >= 300k/s).

Reading: a child process iterates the same file with `CaptureReader` (every line parsed, seq and t
checked); records/s against the same-run baselines `wc -l` (lines/s) and a bare orjson loop
(`for line in f: orjson.loads(line)`, over the first 250 MB: it is a rate, and the whole run must
stay near 90 s); peak RSS of the reading process (target: >= 500k records/s
and < 100 MB).

Rates are per CPU second of the measuring child (`time.process_time`): the benchmark machine is shared,
and wall-clock rates there swing by 3x from run to run while the ratios to the same-run baselines hold;
the wall-clock rates of the same runs are in the notes.
The big file is made by replicating the records of a capture that CaptureWriter wrote (seq and t
rewritten), so reading is measured on exactly what the writer makes, without spending minutes writing it.
"""

from __future__ import annotations

import json
import sys

from bench.common import figure, run_measured, tempdir

MIX = r"""
import os
ws = [('{"type":"action","data":{"type":"response-chunk","userInputId":"mc-input-%d","chunk":"%s"}}'
       % (i, ("Hello world " * 4)[: 10 + i % 30])).encode() for i in range(64)]
sse = [('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"%s"}}'
       % ("lorem ipsum " * 6)[: 20 + i % 40]).encode() for i in range(64)]
text = [("line %d of the agent's terminal output: all good here " % i).encode() for i in range(64)]
big = ('{"model":"claude-opus-4-8","messages":[{"role":"user","content":"%s"}],"stream":true}'
       % ("please look at this code " * 800)).encode()

def mix(w, n):
    # n records: channel opens/closes, WS messages, SSE events, stdout lines, a 20 KB request body now and then
    done, k = 0, 0
    while done < n:
        k += 1
        ch, h = "ws-%d" % k, "http-%d" % k
        w.open(ch, "ws", url="ws://127.0.0.1:4242/ws", headers={"host": "127.0.0.1:4242"})
        w.open(h, "http", method="POST", url="http://127.0.0.1:4243/v1/messages",
               headers={"content-type": "application/json", "x-api-key": "sk-ant-api03-" + "A" * 40})
        w.msg(h, "c2s", big)
        w.response(h, 200, {"content-type": "text/event-stream"}, sse=True)
        done += 4
        for i in range(min(600, max(1, (n - done) // 3))):
            w.msg(ch, "s2c" if i % 3 else "c2s", ws[i & 63])
            w.msg(h, "s2c", sse[i & 63], sse={"event": "content_block_delta"})
            w.msg("stdout", "s2c", text[i & 63])
            done += 3
        w.close_channel(ch, code=1000, reason="", by="client")
        w.close_channel(h, status=200, duration=1.0)
        done += 2
"""

WRITER = MIX + r"""
import json, sys, time
from wirecap.capture import CaptureWriter
w = CaptureWriter(sys.argv[1], force=True)
n = int(sys.argv[2])
t0, w0 = time.process_time(), time.perf_counter()
mix(w, n)
w.close()
dt = time.process_time() - t0
print(json.dumps({"records": w.records, "seconds": dt, "wall": time.perf_counter() - w0}))
"""

# Replicates the records of a small capture written by CaptureWriter (the MIX above) into a big one,
# rewriting seq and t: the big file holds exactly the records the writer makes, generated fast.
GENERATOR = r"""
import json, sys
src, dst, target = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(src, "rb") as f:
    header = f.readline()
    tails = [line[line.index(b',"type":'):] for line in f]
tails = [t for t in tails if not t.startswith(b',"type":"end"')]
seq, t, size = 0, 0.0, len(header)
with open(dst, "wb", buffering=1 << 22) as out:
    out.write(header)
    while size < target:
        for tail in tails:
            seq += 1
            t += 0.000013
            line = b'{"seq":%d,"t":%.6f%b' % (seq, t, tail)
            out.write(line)
            size += len(line)
    seq += 1
    out.write(b'{"seq":%d,"t":%.6f,"type":"end","records":%d,"bytes":0,"errors":0,"duration":%.6f}\n'
              % (seq, t, seq, t))
print(json.dumps({"records": seq, "bytes": size}))
"""

# The same records through the least a writer must do: payload form, serialize, one write(2).
BARE_WRITER = MIX + r"""
import json, os, sys, time, orjson
from wirecap.capture.payload import encode_payload

class Bare:
    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        self.seq = 0
    def write(self, rtype, **fields):
        self.seq += 1
        os.write(self.fd, orjson.dumps({"seq": self.seq, "t": time.monotonic(), "type": rtype, **fields}) + b"\n")
    def open(self, ch, kind, **f):
        self.write("open", ch=ch, kind=kind, **f)
    def msg(self, ch, dir, data, **f):
        self.write("msg", ch=ch, dir=dir, **encode_payload(data), **f)
    def response(self, ch, status, headers, **f):
        self.write("response", ch=ch, status=status, headers=headers, **f)
    def close_channel(self, ch, **f):
        self.write("close", ch=ch, **f)

w = Bare(sys.argv[1])
t0, w0 = time.process_time(), time.perf_counter()
mix(w, int(sys.argv[2]))
os.close(w.fd)
print(json.dumps({"records": w.seq, "seconds": time.process_time() - t0, "wall": time.perf_counter() - w0}))
"""

READER = r"""
import json, sys, time
from wirecap.capture import CaptureReader
t0, w0 = time.process_time(), time.perf_counter()
n = 0
with CaptureReader(sys.argv[1]) as r:
    for rec in r:
        n += 1
dt = time.process_time() - t0
print(json.dumps({"records": n, "seconds": dt, "wall": time.perf_counter() - w0, "problems": len(r.problems),
                  "interrupted": r.interrupted}))
"""

ORJSON_LOOP = r"""
import json, sys, time, orjson
limit = int(sys.argv[2])
t0, w0 = time.process_time(), time.perf_counter()
n = 0
size = 0
loads = orjson.loads
with open(sys.argv[1], "rb") as f:
    for line in f:
        loads(line)
        n += 1
        size += len(line)
        if size >= limit:
            break
print(json.dumps({"records": n, "seconds": time.process_time() - t0, "wall": time.perf_counter() - w0}))
"""


def _child(script: str, *args: str) -> tuple[dict, int]:
    m = run_measured([sys.executable, "-c", script, *args], timeout=600)
    return json.loads(m.stdout), m.peak_rss


def run(quick: bool = False) -> list[dict]:
    target = 20_000_000 if quick else 1_000_000_000
    n_write = 60_000 if quick else 200_000
    out: list[dict] = []
    with tempdir() as d:
        small = d / "written.jsonl"
        w, _ = _child(WRITER, str(small), str(n_write))
        write_rate = w["records"] / w["seconds"]
        b, _ = _child(BARE_WRITER, str(d / "bare.jsonl"), str(n_write))
        (d / "bare.jsonl").unlink()
        bare_rate = b["records"] / b["seconds"]
        path = d / "big.jsonl"
        g, _ = _child(GENERATOR, str(small), str(path), str(target))
        small.unlink()
        size = path.stat().st_size
        r, rss = _child(READER, str(path))
        assert r["records"] == g["records"] and r["problems"] == 0 and r["interrupted"] is None, r
        o, _ = _child(ORJSON_LOOP, str(path), str(min(size, 250_000_000)))  # a rate: a prefix is enough
        wc = run_measured(["wc", "-l", str(path)])
        wc_rate = g["records"] / wc.seconds
        read_rate = r["records"] / r["seconds"]
        orjson_rate = o["records"] / o["seconds"]
        note = (f"{size / 1e6:.0f} MB, {g['records']} records, avg {size / g['records']:.0f} B/record; wall: "
                f"{r['records'] / r['wall']:.0f} records/s vs bare loop {o['records'] / o['wall']:.0f}/s")
        out.append(figure("capture write (redaction on)", write_rate, "records/CPU-s",
                          baseline="bare encode_payload+orjson.dumps+os.write loop", baseline_value=bare_rate,
                          target=">= 300k records/s", ok=write_rate >= 300_000,
                          note=f"{w['records']} records of the mix, one write(2) each; wall: "
                               f"{w['records'] / w['wall']:.0f} records/s vs bare loop {b['records'] / b['wall']:.0f}/s"))
        out.append(figure("capture read+parse (CaptureReader)", read_rate, "records/CPU-s",
                          baseline="bare orjson loop", baseline_value=orjson_rate,
                          target=">= 500k records/s", ok=read_rate >= 500_000, note=note))
        out.append(figure("capture read+parse vs wc -l", read_rate, "records/CPU-s", baseline="wc -l (lines/s)",
                          baseline_value=wc_rate, target="", ok=None, note="wc -l only counts newlines"))
        out.append(figure("capture read peak RSS", rss / 1e6, "MB", target="< 100 MB",
                          ok=rss < 100e6, note=f"whole reading process (interpreter included), {size / 1e6:.0f} MB file"))
    return out


if __name__ == "__main__":
    from bench.common import print_table

    print_table(run(quick="--quick" in sys.argv))
