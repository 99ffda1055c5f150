"""The one Anthropic stream machine (wirecap.dialects.anthropic_stream): its outputs and its contract."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from wirecap.dialects import anthropic_stream as s
from wirecap.dialects.anthropic_stream import AnthropicStream


def _stream() -> list[dict]:
    return [
        {"type": "message_start", "message": {"id": "msg_1", "model": "m", "usage": {"input_tokens": 3}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "he"}},
        {"type": "ping"},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "llo"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1,
         "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"a"'}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "signature_delta", "signature": "x"}},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 7}},
        {"type": "message_stop"},
    ]


def test_a_whole_stream_gives_one_typed_output_per_event() -> None:
    m = AnthropicStream(accumulate=True)
    outs = [m.feed(ev) for ev in _stream()]
    assert [type(o).__name__ for o in outs] == [
        "MessageStart", "BlockStart", "BlockDelta", "Quiet", "BlockDelta", "BlockStop", "BlockStart", "BlockDelta",
        "Quiet", "MessageDelta", "MessageStop"]
    start = outs[0]
    assert isinstance(start, s.MessageStart) and (start.message_id, start.model, start.usage) == (
        "msg_1", "m", {"input_tokens": 3})
    stop = outs[5]
    assert isinstance(stop, s.BlockStop) and stop.block.id == "msg_1:0" and stop.block.text() == "hello"
    tool = outs[6]
    assert isinstance(tool, s.BlockStart) and (tool.block.id, tool.block.name, tool.block.call_id) == (
        "toolu_1", "Bash", "toolu_1")
    delta = outs[9]
    assert isinstance(delta, s.MessageDelta) and delta.stop_reason == "tool_use" and delta.counts == {"output_tokens": 7}
    end = outs[10]
    assert isinstance(end, s.MessageStop) and [b.id for b in end.unfinished] == ["toolu_1"]
    assert end.unfinished[0].text() == '{"a"' and not m.open and m.stop_reason == "tool_use" and not m.blocks


def test_what_does_not_fit_is_a_problem_not_an_exception() -> None:
    m = AnthropicStream()
    assert isinstance(m.feed({"type": "nope"}), s.Problem)
    assert isinstance(m.feed({"type": []}), s.Problem)
    assert isinstance(m.feed({"type": "message_start"}), s.Problem)
    assert isinstance(m.feed({"type": "content_block_delta", "index": 5, "delta": {"type": "text_delta"}}), s.Problem)
    assert isinstance(m.feed({"type": "content_block_stop", "index": 5}), s.Problem)
    assert isinstance(m.feed({"type": "content_block_start", "index": 0, "content_block": {"type": {}}}), s.Problem)
    err = m.feed({"type": "error", "error": {"type": "overloaded_error"}})
    assert isinstance(err, s.StreamError) and err.error == {"type": "overloaded_error"}
    assert m.feed({}, "ping") is s.QUIET  # (the SSE event name when the data has no type)


def test_the_steps_change_the_state_as_feed_does() -> None:
    fed, stepped = AnthropicStream(), AnthropicStream()
    for ev in _stream()[:3]:
        fed.feed(ev)
    stepped.message_start(_stream()[0])
    block = stepped.block_start(_stream()[1])
    assert isinstance(block, s.Block) and stepped.blocks[0] is block
    assert fed.message_id == stepped.message_id and list(fed.blocks) == list(stepped.blocks)
    assert stepped.message_delta({"usage": {"input_tokens": 0, "output_tokens": 2}}) == {"output_tokens": 2}


_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
_json = st.recursive(_scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
                     max_leaves=8)
_event = st.fixed_dictionaries({"type": st.sampled_from(sorted(s.EVENT_TYPES)) | _json}, optional={
    "index": _json, "delta": _json, "content_block": _json, "message": _json, "usage": _json, "error": _json})


@settings(max_examples=300, deadline=None)
@given(st.lists(_event, max_size=12))
def test_any_events_give_outputs_and_never_raise(events: list[dict]) -> None:
    m = AnthropicStream(accumulate=True)
    for ev in events:
        out = m.feed(ev)
        assert isinstance(out, s._Output)
        if isinstance(out, s.Problem):
            assert isinstance(out.reason, str) and out.reason and "\n" not in out.reason
    m.take_unfinished()
    assert not m.blocks
