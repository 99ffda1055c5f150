"""The record TypedDicts (wirecap.capture.records) follow the schema, the one source of truth."""

from __future__ import annotations

import typing

import orjson
import pytest

from wirecap.capture import records
from wirecap.capture.schema import load_schema

TYPED = {"header": records.Header, "open": records.OpenRecord, "msg": records.MsgRecord,
         "response": records.ResponseRecord, "close": records.CloseRecord, "error": records.ErrorRecord,
         "end": records.EndRecord}


def test_every_record_type_has_its_typeddict() -> None:
    defs = load_schema()["$defs"]
    assert set(typing.get_args(records.RecordType)) == set(defs["record"]["properties"]["type"]["enum"])
    assert set(typing.get_args(records.Record)) == {TYPED[k] for k in typing.get_args(records.RecordType)}
    assert set(typing.get_args(records.Transport)) == set(defs["open"]["properties"]["kind"]["enum"])
    assert set(typing.get_args(records.Direction)) == set(defs["msg"]["properties"]["dir"]["enum"])


@pytest.mark.parametrize("name", sorted(TYPED))
def test_fields_and_required_follow_the_schema(name: str) -> None:
    defs = load_schema()["$defs"]
    body = defs[name]
    base = defs["record"] if name != "header" else {"properties": {}, "required": []}
    td = TYPED[name]
    assert set(td.__annotations__) == set(base["properties"]) | set(body.get("properties", {}))
    assert td.__required_keys__ == set(base["required"]) | set(body.get("required", ()))


def test_a_seq_given_by_the_caller_never_makes_a_second_seq_key(tmp_path):
    from wirecap.capture.writer import CaptureWriter, default_origin

    path = tmp_path / "c.jsonl"
    w = CaptureWriter(path, origin=default_origin("test"))
    w.write("open", ch="x", kind="pipe", seq=99)
    w.close()
    line = path.read_bytes().splitlines()[1]
    assert line.count(b'"seq"') == 1 and orjson.loads(line)["seq"] == 1
