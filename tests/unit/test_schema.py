"""The JSON Schema of the capture format and its validator: accepts what the writer writes, rejects the rest."""

from __future__ import annotations

import orjson
import pytest
from conftest import ROOT

from wirecap.capture import CaptureWriter
from wirecap.capture.schema import (
    SCHEMA_PATH,
    _Validator,
    load_schema,
    validate_capture_file,
    validate_header,
    validate_record,
)


def test_docs_copy_is_the_shipped_schema():
    assert (ROOT / "docs" / "capture-format.schema.json").read_bytes() == SCHEMA_PATH.read_bytes()
    schema = load_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert set(schema["$defs"]) >= {"header", "record", "open", "msg", "response", "close", "error", "end"}


def _full_capture(path):
    with CaptureWriter(path) as w:
        w.open("proc", "process", argv=["claude", "-p", "hi"], cwd="/tmp", env={"HOME": None}, pid=42)
        w.open("stdout", "pipe", proc="proc", stream="stdout", dialect="claude-code")
        w.msg("stdout", "s2c", b'{"type":"system"}')
        w.msg("stdout", "s2c", b"last", eol="")
        w.open("ws-1", "ws", url="ws://127.0.0.1:1/ws", headers={"host": "x"}, status=101, subprotocol=None)
        w.msg("ws-1", "c2s", b"\x00\x01", binary=True)
        w.msg("ws-1", "s2c", b'{"a": 1}')
        w.close_channel("ws-1", code=1000, reason="", by="server")
        w.open("http-1", "http", method="POST", url="http://127.0.0.1:1/v1/messages", headers={})
        w.msg("http-1", "c2s", b"{}", truncated=10)
        w.response("http-1", 200, {"content-type": "text/event-stream"}, reason="OK", sse=True)
        w.msg("http-1", "s2c", '{"x":1}', sse={"event": "ping"})
        w.msg("http-1", "s2c", "", sse={"comment": ["hb"], "no_data": True}, raw=": hb\n\n\n")
        w.close_channel("http-1", status=200, ttfb=0.1, duration=0.2, bytes=12)
        w.close_channel("stdout", bytes=22, lines=2)
        w.close_channel("proc", exit_code=0, duration=1.0)
        w.error("boom", where="test", ch="ws-1")
    return path


def test_every_record_kind_the_writer_makes_is_valid(tmp_path):
    path = _full_capture(tmp_path / "full.jsonl")
    assert validate_capture_file(path) == []
    gz = tmp_path / "full.jsonl.gz"
    _full_capture(gz)
    assert validate_capture_file(gz) == []


def _lines(path):
    return [orjson.loads(x) for x in path.read_bytes().splitlines()]


def _write(path, objs):
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in objs))


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda recs: recs[3].update(dir="up"), ':4: $.dir: must be one of "c2s", "s2c"; got "up"'),
        (lambda recs: recs[3].update(text="x"), ":4: $: must match exactly one of [json, text, b64], matches 2"),
        (lambda recs: recs[3].update(color="red"), ":4: $: unknown field 'color'"),
        (lambda recs: recs[6].update(raw="{ }"), ":7: $: field 'raw' needs field 'json'"),
        (lambda recs: recs[1].update(kind="pigeon"), ':2: $.kind: must be one of "ws", "http", "process", "pipe"'),
        (lambda recs: recs[2].pop("stream"), ":3: $: missing field 'stream'"),
        (lambda recs: recs[5].update(type="bogus"), ":6: $.type: must be one of"),
        (lambda recs: recs[5].update(seq=99), ":6: seq 99 where 5 was expected"),
        (lambda recs: recs[5].update(t=-1), ":6: $.t: -1 is below the minimum 0"),
        (lambda recs: recs[6].update(t=0.0, seq=7), ":7: t goes backwards"),
        (lambda recs: recs[0].pop("id"), ":1: $: missing field 'id'"),
        (lambda recs: recs[0].update(created="yesterday"), ":1: $.created: does not match"),
        (lambda recs: recs[-1].update(records=3), ": end.records is 3, its seq is"),
        (lambda recs: recs.pop(), ": no end record (interrupted capture)"),
        (lambda recs: recs[4].update(seq=True), ":5: $.seq: expected integer, got true"),
    ],
)
def test_violations_are_reported_with_file_and_line(tmp_path, mutate, expected):
    good = _full_capture(tmp_path / "good.jsonl")
    recs = _lines(good)
    mutate(recs)
    bad = tmp_path / "bad.jsonl"
    _write(bad, recs)
    problems = validate_capture_file(bad)
    assert any(p.startswith(str(bad)) and expected in p for p in problems), problems


def test_torn_and_unreadable_files(tmp_path):
    good = _full_capture(tmp_path / "good.jsonl")
    data = good.read_bytes()
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(data[:-5])
    problems = validate_capture_file(torn)
    n = data.count(b"\n")
    assert f"{torn}:{n}: torn line (no newline at the end)" in problems
    assert validate_capture_file(tmp_path / "missing.jsonl") == [f"{tmp_path / 'missing.jsonl'}: no such file"]
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert validate_capture_file(empty) == [f"{empty}: empty file"]


def test_header_and_record_validators_directly():
    assert validate_header({"wirecap": 1, "type": "header", "id": "a", "created": "2026-01-01T00:00:00.000001Z",
                            "origin": {"tool": "x"}, "redaction": {"enabled": False}}) == []
    assert validate_header({"wirecap": 1, "type": "header", "id": "a", "created": "2026-01-01T00:00:00Z",
                            "origin": {"tool": "x"}, "redaction": {"enabled": True}}) == [
        "$.redaction: missing field 'policy'"]
    assert validate_record({"seq": 1, "t": 0, "type": "end", "records": 1, "bytes": 0, "errors": 0}) == []
    assert validate_record({"seq": 1, "t": 0, "type": "end", "records": 1, "bytes": 0, "errors": 0, "ch": "x"}) == [
        '$: must not match [ch]']


def test_validator_refuses_keywords_it_does_not_implement():
    with pytest.raises(ValueError, match="unsupported keyword"):
        _Validator({}).errors(1, {"multipleOf": 2}, "$")


SHIPPED = sorted((ROOT / "captures").rglob("*.jsonl"))


@pytest.mark.parametrize("capture", SHIPPED, ids=lambda p: str(p.relative_to(ROOT / "captures")))
def test_shipped_captures_are_valid(capture):
    assert validate_capture_file(capture) == []
