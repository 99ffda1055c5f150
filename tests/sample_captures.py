"""Turn the committed real samples into captures (a test helper for the report and annotate tests):
`wirecap import` when it is there, else `CaptureWriter`: client stdout files become a process with a stdout pipe, fake-server wire logs
become HTTP exchanges or WebSocket connections, with the recorded timing."""

from __future__ import annotations

import json
from pathlib import Path

from wirecap.capture.redact import Redactor
from wirecap.capture.writer import CaptureWriter, default_origin

SAMPLES = Path(__file__).resolve().parent / "fixtures" / "samples"


def sample_files() -> list[Path]:
    """Every sample data file (README files and the `_full` folders excluded)."""
    out = []
    for p in sorted(SAMPLES.rglob("*")):
        if p.is_file() and p.suffix in (".jsonl", ".ndjson", ".txt") and not p.parent.name.endswith("_full"):
            out.append(p)
    return out


def _lines(path: Path) -> list[bytes]:
    data = path.read_bytes()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _full_body(path: Path, kind: str, seq: int) -> bytes | None:
    full = path.with_name(path.name.rsplit(".", 1)[0] + "_full") / f"{kind}_{seq:03d}.json"
    return full.read_bytes() if full.exists() else None


def _stdout_capture(path: Path, w: CaptureWriter, client: str) -> None:
    w.open("proc", "process", t=0.0, argv=[client], cwd="/home/dev/lab", pid=1000)
    w.open("stdout", "pipe", t=0.001, proc="proc", stream="stdout")
    lines = _lines(path)
    for i, line in enumerate(lines):
        w.msg("stdout", "s2c", line.rstrip(b"\r"), t=0.05 + i * 0.01, **({"eol": "\r\n"} if line.endswith(b"\r") else {}))
    end = 0.06 + len(lines) * 0.01
    w.close_channel("stdout", t=end, bytes=sum(len(x) for x in lines), lines=len(lines))
    w.close_channel("proc", t=end, exit_code=0, duration=end)


def _requests_capture(path: Path, w: CaptureWriter) -> None:
    entries = [json.loads(x) for x in _lines(path) if x.strip()]
    t0 = entries[0]["ts"] if entries else 0.0
    for e in entries:
        ch = w.new_channel("http")
        t = max(0.0, e["ts"] - t0) + 0.001
        host = (e.get("headers") or {}).get("host", "127.0.0.1:8080")
        w.open(ch, "http", t=t, method=e.get("method", "GET"), url=f"http://{host}{e.get('path', '/')}",
               headers=e.get("headers") or {})
        body = _full_body(path, "req", e["seq"])
        if body is None and e.get("body") is not None:
            body = json.dumps(e["body"]).encode() if not isinstance(e["body"], str) else e["body"].encode()
        if body:
            w.msg(ch, "c2s", body, t=t + 0.001)
        status = int(e.get("status") or 200)
        w.response(ch, status, {"content-type": "application/json"}, t=t + 0.01)
        if e.get("response") is not None:
            w.msg(ch, "s2c", json.dumps(e["response"]).encode(), t=t + 0.02)
        w.close_channel(ch, t=t + 0.03, status=status, ttfb=0.01, duration=0.03)


def _ws_capture(path: Path, w: CaptureWriter) -> None:
    entries = [json.loads(x) for x in _lines(path) if x.strip()]
    t0 = entries[0]["ts"] if entries else 0.0
    chans: dict[str, str] = {}
    for e in entries:
        t = max(0.0, e["ts"] - t0) + 0.001
        conn = e.get("conn", "c")
        if e["dir"] == "open":
            ch = chans[conn] = w.new_channel("ws")
            frame = e.get("frame") or {}
            w.open(ch, "ws", t=t, url=f"ws://127.0.0.1:4242{e.get('path', '/ws')}", headers=frame.get("headers") or {})
            continue
        ch = chans.setdefault(conn, w.new_channel("ws"))
        if e["dir"] == "close":
            w.close_channel(ch, t=t, code=1000, reason="", by="client")
            continue
        body = _full_body(path, e["dir"], e["seq"]) if e["dir"] == "c2s" else None
        if body is None:
            frame = e.get("frame")
            body = frame.encode() if isinstance(frame, str) else json.dumps(frame).encode()
        w.msg(ch, e["dir"], body, t=t)


def make_capture(sample: Path, out: Path, *, redact: bool = True) -> Path:
    """Write a capture made from one sample file with `wirecap import` (run in-process) when this build
    has it, else with the `CaptureWriter` helpers above; returns its path."""
    try:
        from wirecap.cli.import_cmd import import_
    except ImportError:
        return make_capture_with_writer(sample, out, redact=redact)
    import_.main([str(sample), "-o", str(out), *([] if redact else ["--no-redact"])], standalone_mode=False)
    return out


def make_capture_with_writer(sample: Path, out: Path, *, redact: bool = True) -> Path:
    """The fallback: a capture written record by record from one sample file."""
    w = CaptureWriter(out, origin=default_origin("test", ["sample_captures", sample.name]),
                      redactor=Redactor(enabled=redact))
    try:
        name = sample.name
        if name.endswith("_requests.jsonl"):
            _requests_capture(sample, w)
        elif name.endswith("_ws_frames.jsonl"):
            _ws_capture(sample, w)
        else:
            _stdout_capture(sample, w, name.split("_")[0])
    finally:
        w.close()
    return out
