"""The sans-I/O line splitter: lines and their eol always add back up to the exact stream."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from wirecap.record.lines import LineSplitter

pieces = st.lists(
    st.one_of(st.binary(max_size=40), st.sampled_from([b"\n", b"\r\n", b"\r", b"\r\r\n", b"\xff\xfe", b"{}"])),
    max_size=30,
).map(b"".join)


def split_all(data: bytes, cuts: list[int], max_line: int = 1 << 30) -> list[tuple[bytes, str]]:
    sp = LineSplitter(max_line=max_line)
    out = []
    pos = 0
    for c in sorted(set(cuts)):
        out += sp.feed(data[pos:c])
        pos = c
    out += sp.feed(data[pos:])
    out += sp.close()
    return out


@settings(max_examples=300)
@given(pieces, st.lists(st.integers(min_value=0, max_value=1200), max_size=8))
def test_lines_add_up_to_the_stream(data: bytes, cuts: list[int]) -> None:
    lines = split_all(data, [min(c, len(data)) for c in cuts])
    assert b"".join(p + e.encode() for p, e in lines) == data
    for i, (payload, eol) in enumerate(lines):
        assert b"\n" not in payload
        assert eol in ("\n", "\r\n", "")
        if eol == "":
            assert i == len(lines) - 1, "only the last line may lack a terminator"
        if eol == "\n":
            assert not payload.endswith(b"\r"), "a CR before LF belongs to the eol"
    assert len(lines) == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


@settings(max_examples=100)
@given(pieces, st.lists(st.integers(min_value=0, max_value=1200), max_size=8), st.integers(1, 16))
def test_long_lines_are_cut_but_still_add_up(data: bytes, cuts: list[int], max_line: int) -> None:
    lines = split_all(data, [min(c, len(data)) for c in cuts], max_line=max_line)
    assert b"".join(p + e.encode() for p, e in lines) == data


def test_crlf_split_across_chunks_and_partial_last_line() -> None:
    sp = LineSplitter()
    assert sp.feed(b"ab\r") == []
    assert sp.pending == 3
    assert sp.feed(b"\ncd\n\nef") == [(b"ab", "\r\n"), (b"cd", "\n"), (b"", "\n")]
    assert sp.close() == [(b"ef", "")]
    assert sp.close() == []


def test_a_line_spanning_many_chunks_is_joined_once() -> None:
    sp = LineSplitter()
    for _ in range(100):
        assert sp.feed(b"x" * 1000) == []
    (line, eol), = sp.feed(b"y\nz")
    assert line == b"x" * 100_000 + b"y" and eol == "\n"
    assert sp.pending == 1


@settings(max_examples=300)
@given(pieces, st.lists(st.integers(min_value=0, max_value=1200), max_size=8), st.integers(min_value=1, max_value=64))
def test_feed_lf_gives_the_lines_feed_gives(data: bytes, cuts: list[int], max_line: int) -> None:
    """The fast path (payloads of LF-terminated lines, or None to say "use feed") changes nothing."""
    cuts = sorted({min(c, len(data)) for c in cuts})
    fast = LineSplitter(max_line=max_line)
    out: list[tuple[bytes, str]] = []
    pos = 0
    for c in [*cuts, len(data)]:
        chunk, pos = data[pos:c], c
        payloads = fast.feed_lf(chunk)
        out += fast.feed(chunk) if payloads is None else [(p, "\n") for p in payloads]
    out += fast.close()
    assert out == split_all(data, cuts, max_line=max_line)
