"""The writer's byte-built msg records equal the dict-built ones, and its secret screen never misses.

`CaptureWriter.msg` splices payload bytes into a record instead of serializing a dict; these tests
hold it to the dict form byte for byte, and hold the screen that lets a record skip the redaction
walk to the walk itself: whenever redaction would change a record, the screen says so.
"""

from __future__ import annotations

import time
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wirecap.capture.payload import encode_payload
from wirecap.capture.redact import Redactor, may_hold_secret, redact_record
from wirecap.capture.writer import CaptureWriter

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False),
              st.text(max_size=20)),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=12,
)
payloads = st.one_of(
    json_values.map(orjson.dumps),
    json_values.map(lambda v: orjson.dumps(v, option=orjson.OPT_INDENT_2)),  # JSON, not canonical
    json_values.map(lambda v: orjson.dumps(v).decode()),  # str input
    st.text(max_size=30),
    st.binary(max_size=30),
    st.sampled_from([b"", b"1e5", b"9" * 30, b"\xff{", "x\ud800", b'"\\ud800"', b"tru", b"\x00", "\u2028"]),
)
extra_fields = st.dictionaries(st.sampled_from(["eol", "sse", "truncated", "binary", "note"]), json_values, max_size=2)


def records(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)[1:-1]  # no header, no end


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(st.tuples(payloads, extra_fields), max_size=8))
def test_msg_bytes_equal_the_dict_form(tmp_path: Path, items: list[tuple[bytes | str, dict]]) -> None:
    path = tmp_path / "c.jsonl"
    with CaptureWriter(path, redactor=Redactor(enabled=False), force=True) as w:
        for i, (data, fields) in enumerate(items):
            w.msg(f"ws-{i % 3}", "c2s" if i % 2 else "s2c", data, **fields)
    lines = records(path)
    assert len(lines) == len(items)
    for i, (line, (data, fields)) in enumerate(zip(lines, items, strict=True)):
        rec = orjson.loads(line)
        want = {"seq": rec["seq"], "t": rec["t"], "type": "msg", "ch": f"ws-{i % 3}",
                "dir": "c2s" if i % 2 else "s2c", **encode_payload(data), **fields}
        assert line == orjson.dumps(want) + b"\n"


secret_words = st.sampled_from(["token", "apiKey", "api_key", "API-KEY", "pass_word", "passwd", "Secret",
                                "client_secret", "authorization", "Cookie", "privateKey", "to\u212aen"])
keys = st.one_of(st.text(max_size=6), st.tuples(st.text("ab_-", max_size=3), secret_words,
                                                 st.text("_-", max_size=2)).map("".join))
shapes = st.sampled_from(["sk-ant-api03-AAAAAAAAAAAAAAAA", "ghp_" + "a" * 24, "AKIA" + "A" * 16, "Bearer abcdefghijk",
                          "eyJabcdefghij.eyJabcdefghij.abcdefghij", "xoxb-1234567890", "phc_" + "b" * 24])
strings = st.one_of(st.text(max_size=12), st.tuples(st.text(max_size=4), shapes).map("".join))
secretish = st.recursive(
    st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), strings),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(keys, kids, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(value=secretish, fields=st.dictionaries(keys.filter(lambda k: k not in ("json", "text", "b64", "raw")),
                                              secretish, max_size=2))
def test_the_screen_flags_every_record_redaction_would_change(value: object, fields: dict) -> None:
    red = Redactor()
    record = {"seq": 1, "t": 0.5, "type": "msg", "ch": "ws-1", "dir": "s2c",
              **encode_payload(orjson.dumps(value)), **fields}
    try:
        line = orjson.dumps(record)
    except TypeError:
        return
    if redact_record(red, record) != record:
        assert may_hold_secret(line), line


def test_keys_with_separators_inside_the_word_are_redacted(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with CaptureWriter(path, force=True) as w:
        w.msg("ws-1", "c2s", b'{"pass_word":"hunter2-AAAA","db":{"X_API-KEY_":"opensesame-BBBB"}}')
        w.msg("stdout", "s2c", b'{"to\xe2\x84\xaaen":"kelvin-CCCC"}')
    data = path.read_bytes()
    for secret in (b"hunter2-AAAA", b"opensesame-BBBB", b"kelvin-CCCC"):
        assert secret not in data
    assert b"".join(records(path)).count("«redacted:".encode()) == 3


batch_payloads = st.one_of(payloads, secretish.map(orjson.dumps), strings, strings.map(str.encode))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(st.tuples(batch_payloads, st.integers(0, 9)), max_size=40),
       redact=st.sampled_from(["on", "off", "extra"]))
def test_batched_writer_writes_the_bytes_of_the_unbatched_one(tmp_path: Path, items: list, redact: str) -> None:
    """`batch_delay` changes when records reach the file, never their bytes, order, redaction or counts."""
    out = []
    for delay in (0.0, 3600.0):  # a batch is then written only when full, by another record, or at close
        red = Redactor(enabled=redact != "off", extra_patterns=("hunter\\d",) if redact == "extra" else ())
        path = tmp_path / f"c{delay}.jsonl"
        with CaptureWriter(path, redactor=red, force=True, batch_delay=delay) as w:
            for i, (data, op) in enumerate(items):
                t = i / 8
                if op == 0:
                    w.open(f"ws-{i % 3}", "ws", t=t, url="ws://x/")
                elif op == 1:
                    w.msg(f"ws-{i % 3}", "c2s", data, t=t, note="x")  # extra fields: never batched
                else:
                    w.msg(f"ws-{i % 3}", "s2c" if op % 2 else "c2s", data, t=t)
            counts = (w.records, w.bytes, w.errors)
        end = orjson.loads(path.read_bytes().splitlines()[-1])
        out.append((records(path), counts, {k: v for k, v in end.items() if k not in ("t", "duration")}))
    assert out[0] == out[1]


def test_batched_writer_reaches_the_file_within_its_delay(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with CaptureWriter(path, force=True, batch_delay=0.05) as w:
        seqs = [w.msg("ws-1", "c2s", b'{"i":%d}' % i) for i in range(3)]
        assert seqs == [1, 2, 3]
        deadline = time.monotonic() + 30
        while len(path.read_bytes().splitlines()) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [orjson.loads(line)["seq"] for line in path.read_bytes().splitlines()[1:]] == [1, 2, 3]
        w.close_channel("ws-1")  # a record of another type writes the queued ones first
    assert [orjson.loads(line)["type"] for line in path.read_bytes().splitlines()] == [
        "header", "msg", "msg", "msg", "close", "end"]
