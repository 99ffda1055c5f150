"""The universal event model (`wirecap.events`): the kinds, the typed data of each, the one serializer."""

from __future__ import annotations

import marshal

import orjson

from wirecap import events as E
from wirecap.events import DATA_OF, EVENT_KINDS, ITEM_KINDS, Event, EventKind, ItemKind


def test_kinds_are_one_vocabulary_of_plain_strings():
    assert tuple(EventKind) == EVENT_KINDS and tuple(ItemKind) == ITEM_KINDS
    assert E.USAGE == EventKind.USAGE and E.TOOL_CALL == ItemKind.TOOL_CALL and f"{EventKind.USAGE}" == "usage"
    # events carry exact strings: marshal (the diff's fork) refuses str subclasses
    for value in (E.SESSION_STARTED, E.ITEM_DELTA, E.UNPARSED, E.MESSAGE, E.TOOL_RESULT):
        assert value.__class__ is str
        marshal.dumps(value)
    assert set(DATA_OF) == set(EventKind)


def test_one_serializer_in_the_output_order():
    ev = Event("item.delta", "stdout", (7, 8), 0.5, "claude-code", "message", "msg_1:0", "assistant", {"text": "Hi"})
    line = E.dumps(ev)
    assert line == (b'{"kind":"item.delta","ch":"stdout","seq":[7,8],"t":0.5,"item":"message","id":"msg_1:0",'
                    b'"role":"assistant","dialect":"claude-code","data":{"text":"Hi"}}')
    assert orjson.loads(line) == E.to_json(ev) == ev.to_json()
    assert Event.from_json(orjson.loads(line)) == ev
    bare = Event("usage", "http-1", (3,), 1.0, "")
    assert E.dumps(bare) == b'{"kind":"usage","ch":"http-1","seq":[3],"t":1.0,"dialect":""}'


def test_the_serializer_writes_what_orjson_alone_cannot():
    deep: object = "x"
    for _ in range(300):  # deeper than orjson writes
        deep = [deep]
    line = E.dumps(Event("unparsed", "stdout", (1,), 0.0, "", data={"raw": deep}))
    assert line.startswith(b'{"kind":"unparsed"') and line.count(b"[") == 301  # (seq's and the payload's)
    odd = Event("error", "x", (1,), 0.0, "", data={"message": {1}, 2: "non-str key"})
    assert orjson.loads(E.dumps(odd))["data"] == {"message": "{1}", "2": "non-str key"}
