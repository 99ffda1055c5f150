"""The SSE parser re-splits any byte stream into the same events, and records give the bytes back."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from wirecap.capture.sse import SSEParser, sse_data_bytes, sse_event_bytes, sse_record_fields


def parse_all(chunks: list[bytes]):
    p = SSEParser()
    out = []
    for c in chunks:
        out.extend(p.feed(c))
    out.extend(p.close())
    return out


def key(ev):
    return (ev.event, ev.id, ev.retry, ev.data, tuple(ev.comments), ev.raw)


# --- strategies: real-looking event blocks with every kind of line and line end --------------------
EOL = st.sampled_from([b"\n", b"\r\n", b"\r"])
VALUE = st.one_of(
    st.text(alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12),
    st.sampled_from(['{"type":"message_start"}', '{"a": 1}', "[DONE]", "", " lead", "x\u2028y", "\0"]),
).map(lambda s: s.encode("utf-8"))
FIELD = st.sampled_from([b"data", b"event", b"id", b"retry", b"foo", b""])
SEP = st.sampled_from([b": ", b":", b":  ", b""])
LINE = st.one_of(
    st.tuples(FIELD, SEP, VALUE).map(lambda t: t[0] + t[1] + t[2] if t[1] or t[0] else b":" + t[2]),
    st.sampled_from([b"retry: 3000", b"retry: x1", b"data", b": heartbeat", b":", b"\xff\xfe bad utf8"]),
)
BLOCK = st.tuples(st.lists(st.tuples(LINE, EOL), min_size=1, max_size=5), EOL).map(
    lambda t: b"".join(line + eol for line, eol in t[0]) + t[1]
)
STREAM = st.tuples(
    st.booleans(), st.lists(BLOCK, max_size=8), st.binary(max_size=6)
).map(lambda t: (b"\xef\xbb\xbf" if t[0] else b"") + b"".join(t[1]) + t[2])


@st.composite
def stream_and_cuts(draw):
    data = draw(STREAM)
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=12)))
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    return data, chunks


@settings(max_examples=150, deadline=None)
@given(stream_and_cuts())
def test_any_split_parses_identically_and_losslessly(sc):
    data, chunks = sc
    whole = parse_all([data])
    split = parse_all(chunks)
    assert [key(e) for e in split] == [key(e) for e in whole]
    assert b"".join(e.raw for e in whole) == data
    bytewise = parse_all([data[i : i + 1] for i in range(len(data))])
    assert [key(e) for e in bytewise] == [key(e) for e in whole]


@settings(max_examples=150, deadline=None)
@given(STREAM)
def test_record_reproduces_event_bytes(data):
    for ev in parse_all([data]):
        rec = sse_record_fields(ev)
        rec = orjson.loads(orjson.dumps(rec))  # as it comes back from a capture file
        assert sse_event_bytes(rec) == ev.raw
        assert sum(k in rec for k in ("json", "text", "b64")) == 1
        if ev.data is not None:
            assert sse_data_bytes(rec).decode("utf-8") == ev.data or "json" in rec


def test_anthropic_style_stream():
    body = (
        b'event: message_start\ndata: {"type":"message_start"}\n\n'
        b": heartbeat\n\n"
        b'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"text":"hi"}}\n\n'
    )
    evs = parse_all([body[:7], body[7:60], body[60:]])
    assert [e.event for e in evs] == ["message_start", None, "content_block_delta"]
    assert evs[1].comments == ["heartbeat"] and evs[1].data is None
    recs = [sse_record_fields(e) for e in evs]
    assert recs[0] == {"json": {"type": "message_start"}, "sse": {"event": "message_start"}}
    assert recs[1] == {"text": "", "sse": {"comment": ["heartbeat"], "no_data": True}}
    assert "raw" not in recs[2]


def test_crlf_multiline_data_and_fields():
    body = b"id: 7\r\nevent: x\r\ndata: a\r\ndata: b\r\nretry: 250\r\n\r\n"
    (ev,) = parse_all([body])
    assert (ev.id, ev.event, ev.data, ev.retry) == ("7", "x", "a\nb", 250)
    rec = sse_record_fields(ev)
    assert rec["raw"] == body.decode()  # \r\n differs from the canonical \n
    assert sse_event_bytes(rec) == body


def test_lone_cr_waits_for_next_byte():
    p = SSEParser()
    assert p.feed(b"data: a\r") == []
    assert p.feed(b"\r") == []  # may still be \r\r\n
    (ev,) = p.feed(b"\n")
    assert ev.raw == b"data: a\r\r\n" and ev.data == "a"


def test_openai_done_and_no_space():
    evs = parse_all([b'data:{"x":1}\n\ndata: [DONE]\n\n'])
    assert [e.data for e in evs] == ['{"x":1}', "[DONE]"]
    r0, r1 = (sse_record_fields(e) for e in evs)
    assert r0["json"] == {"x": 1} and r0["raw"] == 'data:{"x":1}\n\n'
    assert r1 == {"text": "[DONE]", "sse": {}}


def test_trailing_event_without_blank_line_and_invalid_utf8():
    evs = parse_all([b"data: ok\n\ndata: \xff\xfe"])
    assert evs[1].data == "\ufffd\ufffd"
    rec = sse_record_fields(evs[1])
    assert "raw_b64" in rec and sse_event_bytes(rec) == b"data: \xff\xfe"
