"""`wirecap import`: every committed sample becomes a valid capture with the source's messages and bytes."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from conftest import SAMPLES, run_wirecap

from wirecap.capture import CaptureReader, payload_bytes
from wirecap.capture.importers import Source, detect_kind
from wirecap.capture.payload import payload_size
from wirecap.capture.schema import validate_capture_file
from wirecap.dialects import detect_channel, session_file_dialect

ALL_SAMPLES = sorted(
    p for p in [*SAMPLES.glob("*.jsonl"), *SAMPLES.glob("*.txt"), *(SAMPLES / "public").glob("*.*json*")]
)


def _import(tmp_path: Path, *srcs: Path, extra: tuple[str, ...] = ("--no-redact",)) -> Path:
    out = tmp_path / "out.jsonl"
    res = run_wirecap("import", *map(str, srcs), "-o", str(out), *extra)
    assert res.returncode == 0, res.stderr.decode()
    assert b"Traceback" not in res.stderr
    return out


def _read(path: Path):
    with CaptureReader(path) as r:
        recs = list(r)
    assert r.interrupted is None and r.problems == []
    return r.header, recs


LINE_KINDS = ("stdout", "claude-session", "codex-rollout")  # one message per line of the source


def _kind_of(p: Path) -> str:
    if p.name.startswith(("claude_session_", "codex_rollout_")):
        return "claude-session" if p.name.startswith("claude_") else "codex-rollout"
    if p.name.endswith("_ws_frames.jsonl"):
        return "ws-frames"
    if p.name.endswith("_requests.jsonl"):
        return "requests"
    return "stdout"


@pytest.mark.parametrize("sample", ALL_SAMPLES, ids=lambda p: p.name)
def test_every_sample_imports_to_a_valid_capture_with_matching_counts(tmp_path, sample):
    out = _import(tmp_path, sample)
    assert validate_capture_file(out) == []
    header, recs = _read(out)
    assert header["origin"]["imported_from"]["sources"][0]["kind"] == _kind_of(sample)
    msgs = [r for r in recs if r["type"] == "msg"]
    kind = _kind_of(sample)
    src_lines = [json.loads(x) for x in sample.read_text().splitlines() if x.strip()] if kind not in LINE_KINDS else None
    if kind in LINE_KINDS:
        data = sample.read_bytes()
        # One message per line; payloads plus their line ends are the file, byte for byte.
        assert len(msgs) == data.count(b"\n") + (0 if data.endswith(b"\n") else 1)  # `\n` splits, only
        rebuilt = b"".join(payload_bytes(m) + m.get("eol", "\n").encode() for m in msgs)
        assert rebuilt == data
    elif kind == "ws-frames":
        frames = [x for x in src_lines if x["dir"] in ("c2s", "s2c")]
        assert len(msgs) == len(frames)
        assert [m["dir"] for m in msgs] == [f["dir"] for f in frames]
        assert sum(payload_size(m) for m in msgs) == sum(f["len"] for f in frames)
        assert sum(1 for r in recs if r["type"] == "open") == len({f["conn"] for f in src_lines})
        # Untrimmed side files are used verbatim.
        full_dir = sample.with_name(sample.stem + "_full")
        for f in frames:
            side = full_dir / f"{f['dir']}_{f['seq']:03d}.json"
            if side.exists():
                assert side.read_bytes() in [payload_bytes(m) for m in msgs]
    else:
        reqs = src_lines
        c2s = [m for m in msgs if m["dir"] == "c2s"]
        assert len(c2s) == sum(1 for r in reqs if r["body_len"])
        assert sum(payload_size(m) for m in c2s) == sum(r["body_len"] for r in reqs)
        assert sum(1 for r in recs if r["type"] == "open") == len(reqs)
        assert [r["status"] for r in recs if r["type"] == "response"] == [r["status"] for r in reqs]
        s2c = [m for m in msgs if m["dir"] == "s2c"]
        assert len(s2c) == sum(1 for r in reqs if r.get("response") is not None and r["method"] != "HEAD")
        for m, r in zip(s2c, [r for r in reqs if r.get("response") is not None and r["method"] != "HEAD"],
                        strict=True):
            if isinstance(r["response"], dict) and r["response"].get("stream"):
                assert m["flags"] == ["summary"]  # only the log's summary: said so, no events invented
                assert m["json"] == r["response"]
        full_dir = sample.with_name(sample.stem + "_full")
        for r in reqs:
            side = full_dir / f"req_{r['seq']:03d}.json"
            if side.exists():
                assert side.read_bytes() in [payload_bytes(m) for m in c2s]
    # Timed sources keep their timing.
    if kind not in LINE_KINDS:
        first = min(x["ts"] for x in src_lines)
        last = max(x["ts"] for x in src_lines)
        assert recs[-2]["t"] == pytest.approx(last - first, abs=1e-5)


def test_import_redacts_by_default(tmp_path):
    sample = SAMPLES / "codebuff_sdk0313_hello_ws_frames.jsonl"
    secret = json.loads((SAMPLES / "codebuff_sdk0313_hello_ws_frames_full" / "c2s_002.json").read_bytes())[
        "data"]["authToken"]
    assert secret
    out = _import(tmp_path, sample, extra=())
    assert secret.encode() not in out.read_bytes()
    assert validate_capture_file(out) == []
    header, recs = _read(out)
    assert header["redaction"]["enabled"] is True
    assert any("redacted" in (r.get("flags") or ()) for r in recs)


def test_several_sources_share_one_timeline(tmp_path):
    out = _import(tmp_path, SAMPLES / "codex_hello.jsonl", SAMPLES / "codex_hello_requests.jsonl")
    assert validate_capture_file(out) == []
    _header, recs = _read(out)
    chans = {r["ch"]: r for r in recs if r["type"] == "open"}
    assert set(chans) == {"proc", "stdout", "http-1"}
    assert "dialect" not in chans["stdout"]  # no guessed hint: detection decides when decoding
    assert detect_channel(chans["proc"], [r for r in recs if r["type"] == "msg" and r["ch"] == "stdout"])[0] == "codex-exec"
    assert chans["http-1"]["url"].endswith("/v1/responses")


def test_timestamps_in_lines_are_kept(tmp_path):
    src = tmp_path / "session.jsonl"
    lines = [
        {"type": "summary", "summary": "hi", "leafUuid": "u0"},
        {"type": "user", "sessionId": "s1", "uuid": "u1", "timestamp": "2026-01-01T00:00:00.000Z",
         "message": {"role": "user", "content": "hello"}},
        {"type": "assistant", "sessionId": "s1", "uuid": "u2", "timestamp": "2026-01-01T00:00:02.500Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}},
    ]
    src.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    assert detect_kind(Source(str(src), src.read_bytes()), session_file_dialect) == "claude-session"
    out = _import(tmp_path, src)
    header, recs = _read(out)
    assert header["created"] == "2026-01-01T00:00:00.000000Z"
    msgs = [r for r in recs if r["type"] == "msg"]
    assert [m["t"] for m in msgs] == [0.0, 0.0, 2.5]
    assert [payload_bytes(m) for m in msgs] == [orjson.dumps(x) for x in lines]
    opened = [r for r in recs if r["type"] == "open" and r["kind"] == "pipe"]
    assert opened[0]["dialect"] == "claude-session"


def test_crlf_and_missing_final_newline_are_kept(tmp_path):
    src = tmp_path / "out.txt"
    data = b'{"type":"a"}\r\nplain text\n\xff\xfe binary\n{"type":"b"}'
    src.write_bytes(data)
    out = _import(tmp_path, src, extra=("--no-redact", "--dialect", "claude-code", "--kind", "stdout"))
    _header, recs = _read(out)
    msgs = [r for r in recs if r["type"] == "msg"]
    assert [m.get("eol", "\n") for m in msgs] == ["\r\n", "\n", "\n", ""]
    assert b"".join(payload_bytes(m) + m.get("eol", "\n").encode() for m in msgs) == data
    assert validate_capture_file(out) == []


def test_import_errors_are_one_line(tmp_path):
    res = run_wirecap("import", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "o.jsonl"))
    assert (res.returncode, res.stderr.decode()) == (2, f"wirecap: {tmp_path / 'nope.jsonl'}: no such file\n")
    bad = tmp_path / "x_ws_frames.jsonl"
    bad.write_bytes(b'{"seq": 1}\n')
    res = run_wirecap("import", str(bad), "-o", str(tmp_path / "o.jsonl"))
    assert (res.returncode, res.stderr.decode()) == (
        2, f"wirecap: {bad}:1: not a WebSocket frame log line (no conn/dir)\n")
    out = _import(tmp_path, SAMPLES / "codex_hello.jsonl")
    res = run_wirecap("import", str(SAMPLES / "codex_hello.jsonl"), "-o", str(out))
    assert (res.returncode, res.stderr.decode()) == (
        2, f"wirecap: {out}: capture exists; refusing to overwrite it (use --force)\n")


def test_untimed_import_has_no_duration_and_timed_import_keeps_it(tmp_path):
    out = _import(tmp_path, SAMPLES / "claude_code_hello.jsonl")
    res = run_wirecap("stats", "--json", str(out))
    assert res.returncode == 0, res.stderr.decode()
    (session,) = orjson.loads(res.stdout)
    assert (session["duration"], session["ttft"]) == (None, None)
    assert session["llm_calls"] == 1  # the numbers that do not need time are still there


def test_empty_source_imports_with_a_warning(tmp_path):
    src = tmp_path / "empty.jsonl"
    src.write_bytes(b"")
    out = tmp_path / "o.jsonl"
    res = run_wirecap("import", str(src), "-o", str(out))
    assert res.returncode == 0
    assert res.stderr.decode().splitlines()[0] == f"wirecap: warning: {src} is empty; imported as a stream with no messages"
    res = run_wirecap("import", "-q", "--force", str(src), "-o", str(out))
    assert (res.returncode, res.stderr) == (0, b"")
    assert validate_capture_file(out) == []
