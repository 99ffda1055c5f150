"""The report's conversation is the shared fold (`wirecap.analysis.fold`) laid out per channel: a
streamed item and its completion are one entry, tool results are entries of their own where they
started, and only the first entries (in start order) are kept."""

from __future__ import annotations

from wirecap.analysis.report.model import ConversationBuilder, conversation_from_events
from wirecap.events import (
    ITEM_COMPLETED,
    ITEM_DELTA,
    ITEM_STARTED,
    MESSAGE,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_STARTED,
    UNPARSED,
    USAGE,
    Event,
)


def ev(kind: str, seq: int, *, item: str | None = None, id: str | None = None, role: str | None = "assistant",
       ch: str = "stdout", **data: object) -> Event:
    return Event(kind, ch, (seq,), float(seq), "test", item=item, id=id, role=role if item else None, data=data)


def test_a_streamed_message_and_its_completion_are_one_entry():
    events = [
        ev(ITEM_STARTED, 1, item=MESSAGE, id="msg_1:0"),
        ev(ITEM_DELTA, 2, item=MESSAGE, id="msg_1:0", text="Hel"),
        ev(ITEM_DELTA, 3, item=MESSAGE, id="msg_1:0", text="lo"),
        ev(ITEM_COMPLETED, 4, item=MESSAGE, id="msg_1", text="Hello!"),  # (the id spelled without the block)
    ]
    conv, unparsed, dropped = conversation_from_events(events)
    [entry] = conv["stdout"]
    assert (entry.kind, entry.seq, entry.text, entry.seqs) == ("assistant", 1, "Hello!", (1, 2, 3, 4))
    assert (unparsed, dropped) == ({}, 0)


def test_deltas_without_an_id_are_one_entry():
    events = [ev(ITEM_DELTA, 1, item=MESSAGE, text="a"), ev(ITEM_DELTA, 2, item=MESSAGE, text="b"),
              ev(ITEM_COMPLETED, 3, item=MESSAGE, text="ab"), ev(ITEM_COMPLETED, 4, item=MESSAGE, text="next")]
    conv, _, _ = conversation_from_events(events)
    assert [(e.seq, e.text) for e in conv["stdout"]] == [(1, "ab"), (4, "next")]


def test_a_tool_result_is_its_own_entry_where_it_started():
    events = [
        ev(ITEM_STARTED, 1, item=TOOL_CALL, id="t1", name="Bash", call_id="t1"),
        ev(ITEM_DELTA, 2, item=TOOL_CALL, id="t1", arguments='{"command": "ls"}'),
        ev(ITEM_COMPLETED, 3, item=TOOL_CALL, id="t1", name="Bash", call_id="t1", input={"command": "ls"}),
        ev(ITEM_COMPLETED, 4, item=MESSAGE, id="m1", text="running it"),
        ev(ITEM_COMPLETED, 5, item=TOOL_RESULT, id="t1", role="user", call_id="t1", output="a\nb", is_error=True),
    ]
    conv, _, _ = conversation_from_events(events)
    call, said, result = conv["stdout"]
    assert (call.kind, call.name, call.text, call.input, call.seqs) == (
        "tool_call", "Bash", '{"command": "ls"}', {"command": "ls"}, (1, 2, 3))
    assert call.arguments() == '{"command": "ls"}'
    assert (said.kind, said.text) == ("assistant", "running it")
    assert (result.kind, result.text, result.is_error, result.call_id, result.seqs) == (
        "tool_result", "a\nb", True, "t1", (5,))


def test_only_the_first_entries_are_kept_in_start_order():
    events = [
        ev(ITEM_STARTED, 1, item=MESSAGE, id="long"),  # starts first, completes last
        *(ev(ITEM_COMPLETED, s, item=MESSAGE, id=f"m{s}", text=f"m{s}") for s in range(2, 7)),
        ev(ITEM_COMPLETED, 7, item=MESSAGE, id="long", text="long one"),
    ]
    conv, _, dropped = conversation_from_events(events, limit=3)
    assert [e.text for e in conv["stdout"]] == ["long one", "m2", "m3"]
    assert dropped == 3


def test_what_is_not_shown_is_counted_or_left_out():
    b = ConversationBuilder(limit=1)
    for e in (ev(UNPARSED, 1, reason="?", raw="x"), ev(USAGE, 2, input_tokens=1), ev(TURN_STARTED, 3, prompt=None),
              ev(UNPARSED, 4, ch="http-1", reason="?", raw="y"), ev(TURN_STARTED, 5, prompt="hi")):
        b.feed(e)
    conv, unparsed, dropped = b.finish()
    assert [(e.kind, e.text) for e in conv["stdout"]] == [("user", "hi")]  # (a turn without a prompt takes no place)
    assert (unparsed, dropped) == ({"stdout": 1, "http-1": 1}, 0)
