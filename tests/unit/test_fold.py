"""The one fold of universal events into items (`wirecap.analysis.fold`): its documented contract."""

from __future__ import annotations

from wirecap.analysis.fold import Folder, channel_unit, fold, usage_first
from wirecap.events import Event


def ev(kind: str, seq: int, *, item: str | None = None, id: str | None = None, role: str | None = None,
       ch: str = "stdout", **data) -> Event:
    return Event(kind, ch, (seq,), float(seq), "d", item=item, id=id, role=role, data=data)


def test_streamed_and_completed_are_one_item():
    items = fold([
        ev("item.started", 1, item="message", id="m:0", role="assistant"),
        ev("item.delta", 2, item="message", id="m:0", text="Hel"),
        ev("item.delta", 3, item="message", id="m:0", text="lo"),
        ev("item.completed", 4, item="message", id="m", text="Hello"),
    ])
    assert len(items) == 1
    m = items[0]
    assert (m.kind, m.role, m.text, m.pieces, m.seq, m.t, m.t_last, m.complete) == (
        "message", "assistant", "Hello", ("Hel", "lo"), (1, 2, 3, 4), 1.0, 4.0, True)


def test_deltas_alone_are_joined():
    (m,) = fold([ev("item.delta", 1, item="message", id="x", text="a"), ev("item.delta", 2, item="message", id="x",
                                                                           text="b", extra=1)])
    assert m.text == "ab" and m.data == {"extra": 1} and not m.complete


def test_a_tool_result_is_joined_to_its_call():
    items = fold([
        ev("item.started", 1, item="tool_call", id="c1", name="Bash", call_id="c1"),
        ev("item.delta", 2, item="tool_call", id="c1", arguments='{"cmd": '),
        ev("item.delta", 3, item="tool_call", id="c1", arguments='"ls"}'),
        ev("item.completed", 4, item="tool_call", id="c1", name="Bash", call_id="c1"),
        ev("item.completed", 5, item="message", id="m", role="assistant", text="meanwhile"),
        ev("item.completed", 6, item="tool_result", id="r1", call_id="c1", output="a.txt", is_error=False),
    ])
    assert [i.kind for i in items] == ["tool_call", "message"]
    call, msg = items
    assert (call.name, call.call_id, call.input, call.seq) == ("Bash", "c1", {"cmd": "ls"}, (1, 2, 3, 4, 6))
    assert call.pos == 0 and msg.pos == 1 and call.order == 0 and msg.order == 1
    r = call.result
    assert r is not None and (r.kind, r.output, r.is_error, r.seq, r.t, r.pos, r.index, r.order) == (
        "tool_result", "a.txt", False, (6,), 6.0, -1, -1, 2)


def test_an_unanswered_or_second_result_is_an_item_of_its_own():
    items = fold([
        ev("item.completed", 1, item="tool_call", id="c1", name="Bash", call_id="c1"),
        ev("item.completed", 2, item="tool_result", call_id="c1", output="one"),
        ev("item.completed", 3, item="tool_result", call_id="c1", output="two"),
        ev("item.completed", 4, item="tool_result", call_id="zz", output="three"),
    ])
    assert [(i.kind, i.index) for i in items] == [("tool_call", 0), ("tool_result", 0), ("tool_result", 1)]
    assert items[0].result is not None and items[0].result.output == "one"


def test_items_reach_the_sink_when_final_and_order_restores_the_start():
    seen = []
    f = Folder(seen.append)
    f.feed(ev("item.started", 1, item="message", id="a", role="assistant"))
    f.feed(ev("usage", 2, input_tokens=3))
    assert [i.kind for i in seen] == ["usage"]
    f.feed(ev("item.completed", 3, item="message", id="a", text="x"))
    units = f.finish()
    assert [(i.kind, i.pos, i.order) for i in seen] == [("usage", 1, 1), ("message", 0, 0)]
    assert list(units) == ["proc"] and units["proc"].channels == ["stdout"] and units["proc"].t_last == 3.0


def test_whole_event_items_and_units():
    items = fold([ev("session.started", 1, ch="stdout-2", model="m"), ev("error", 2, ch="http-1", message="x")])
    assert [(i.kind, i.unit) for i in items] == [("session", "proc-2"), ("error", "http-1")]
    assert channel_unit("stderr") == "proc" and channel_unit("stdoutx") == "stdoutx"


def test_usage_first_in_each_record():
    items = fold([ev("item.completed", 1, item="message", id="m", text="t"), ev("usage", 1, input_tokens=1),
                  ev("usage", 2, input_tokens=2)])
    assert [i.kind for i in usage_first(items)] == ["usage", "message", "usage"]
