"""The writer's batch path for pipe lines writes exactly the records `msg` writes, line by line."""

from __future__ import annotations

from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wirecap.capture.redact import Redactor, chunk_is_clean
from wirecap.capture.writer import CaptureWriter

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False),
              st.text(max_size=20)),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=12,
)
line_payloads = st.one_of(
    json_values.map(orjson.dumps),  # canonical JSON (the fast path when it is an object or array)
    json_values.map(lambda v: orjson.dumps(v, option=orjson.OPT_INDENT_2).replace(b"\n", b" ")),  # not canonical
    st.sampled_from([b'{"apiKey":"hunter2-secret"}', b'{"x":"sk-ant-api03-AAAAAAAAAAAAAAAA"}', b'{"a":"\\u0073k-ant-xxxxxxxxxxxx"}',
                     b'{"input_tokens":3}', b"[1,2]", b'{"a":1} ', b"{", b'"s"', b"\xff\xfe{", b""]),
    st.binary(max_size=30).filter(lambda b: b"\n" not in b),
)
lines_st = st.lists(st.tuples(line_payloads, st.sampled_from(["\n", "\r\n", ""])), max_size=12)


def body(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)[1:]  # the header differs (id, created)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=lines_st, redact=st.booleans())
def test_msg_lines_equals_msg_per_line(tmp_path: Path, lines: list[tuple[bytes, str]], redact: bool) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    with CaptureWriter(a, redactor=Redactor(enabled=redact), force=True) as wa:
        for payload, eol in lines:
            if eol == "\n":
                wa.msg("stdout", "s2c", payload, 0.25)
            else:
                wa.msg("stdout", "s2c", payload, 0.25, eol=eol)
    with CaptureWriter(b, redactor=Redactor(enabled=redact), force=True) as wb:
        raw = b"".join(p + e.encode() for p, e in lines)
        wb.msg_lines("stdout", "s2c", lines, 0.25, screened=chunk_is_clean(wb.redactor, raw))
    ra, rb = [orjson.loads(x) for x in body(a)], [orjson.loads(x) for x in body(b)]
    # the same records (key order may differ after a redaction walk); `end` has the writer's own duration
    assert ra[:-1] == rb[:-1]
    ea, eb = ra[-1], rb[-1]
    assert (ea["records"], ea["bytes"], ea["errors"]) == (eb["records"], eb["bytes"], eb["errors"])


lf_payloads = st.lists(line_payloads.filter(lambda b: b"\r" not in b), max_size=300)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payloads=lf_payloads, redact=st.booleans())
def test_msg_payloads_equals_msg_per_line(tmp_path: Path, payloads: list[bytes], redact: bool) -> None:
    """The batch path (lines proved canonical 128 at a time, then spliced) writes the very same bytes."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    with CaptureWriter(a, redactor=Redactor(enabled=redact), force=True) as wa:
        for payload in payloads:
            wa.msg("stdout", "s2c", payload, 0.25)
    with CaptureWriter(b, redactor=Redactor(enabled=redact), force=True) as wb:
        raw = b"".join(p + b"\n" for p in payloads)
        wb.msg_payloads("stdout", "s2c", payloads, 0.25, screened=chunk_is_clean(wb.redactor, raw))
    assert body(a)[:-1] == body(b)[:-1]
    assert orjson.loads(body(a)[-1])["bytes"] == orjson.loads(body(b)[-1])["bytes"]


def test_msg_payloads_batches_of_canonical_lines(tmp_path: Path) -> None:
    """300 canonical lines (three batches, spliced) and the same with one secret and one text line among them."""
    lines = [orjson.dumps({"type": "stream_event", "n": i, "text": "x" * (i % 7)}) for i in range(300)]
    for payloads in (lines, [*lines[:150], b'{"apiKey":"hunter2-secret"}', b"plain text", *lines[150:]]):
        a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
        with CaptureWriter(a, force=True) as wa:
            for payload in payloads:
                wa.msg("stdout", "s2c", payload, 0.5)
        with CaptureWriter(b, force=True) as wb:
            raw = b"".join(p + b"\n" for p in payloads)
            wb.msg_payloads("stdout", "s2c", payloads, 0.5, screened=chunk_is_clean(wb.redactor, raw))
        assert body(a)[:-1] == body(b)[:-1]
        assert len(body(b)) == len(payloads) + 1
        assert b"hunter2" not in b.read_bytes()  # not a hex string: the header id is random hex


def test_a_secret_in_a_chunk_is_never_screened_clean() -> None:
    red = Redactor()
    assert not chunk_is_clean(red, b'{"type":"x"}\n{"key":"sk-ant-api03-AAAAAAAAAAAAAAAA"}\n')
    assert not chunk_is_clean(red, b'{"apiKey": "abc"}\n')
    assert not chunk_is_clean(red, b'{"a":"\\u0073k-ant-api03-AAAAAAAAAAAA"}\n')  # escape spells a key
    assert chunk_is_clean(red, b'{"type":"stream_event","text":"hello"}\n')
    assert not chunk_is_clean(Redactor(extra_patterns=("hello",)), b"hello\n")
