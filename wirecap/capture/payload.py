"""Payload forms of a `msg` record: json / text / b64, byte-exact both ways.

Kept apart from I/O so recorders, replayers and decoders all agree on one encoding.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

PAYLOAD_KEYS = ("json", "text", "b64")
_JSON_FIRST = frozenset(b'{["0123456789-tfn \t\r\n')  # first bytes worth a JSON parse


def encode_payload(data: bytes | str) -> dict[str, Any]:
    """Return the payload fields for `data` so that `payload_bytes()` gives `data` back exactly."""
    if isinstance(data, str):
        try:
            raw = data.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: keep the exact code units
            return {"b64": base64.b64encode(data.encode("utf-8", "surrogatepass")).decode("ascii")}
    else:
        raw = bytes(data)
        try:
            data = raw.decode("utf-8")
        except UnicodeDecodeError:
            return {"b64": base64.b64encode(raw).decode("ascii")}
    first = raw[:1]
    if first and first in b'{["0123456789-tfn \t\r\n':
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {"text": data}
        try:
            canonical = orjson.dumps(value)
        except TypeError:  # e.g. integers beyond 64 bits: keep the text, it is exact
            return {"text": data}
        if canonical == raw:
            return {"json": value}
        return {"json": value, "raw": data}
    return {"text": data}


JSON_KEY = b',"json":'
TEXT_KEY = b',"text":'


def serialized_payload(data: bytes | str) -> tuple[bytes, bytes, int] | None:
    """`encode_payload(data)` as the bytes it takes inside a record: `(key, value, size)`, where `key +
    value` are the bytes `orjson.dumps` gives for those fields (`key` is `,"json":` or `,"text":`) and
    `size` is the size of `data`; None for a binary payload (b64), which goes the dict way.

    For the writer's hot path: canonical JSON is spliced in as the original bytes (parsed once to
    prove it is canonical, never serialized again), and the key comes apart so that the writer can keep
    it in a cached record head.
    """
    if isinstance(data, str):
        try:
            raw = data.encode("utf-8")
        except UnicodeEncodeError:
            return None
        text: str | None = data
    else:
        raw = data if data.__class__ is bytes else bytes(data)
        text = None
    if raw and raw[0] in _JSON_FIRST:
        try:
            value = orjson.loads(raw)
            canonical = orjson.dumps(value)
        except (orjson.JSONDecodeError, TypeError):
            pass  # not JSON (or not re-encodable): text
        else:
            if canonical == raw:
                return JSON_KEY, raw, len(raw)
            try:
                return JSON_KEY, canonical + b',"raw":' + orjson.dumps(text or raw.decode("utf-8")), len(raw)
            except UnicodeDecodeError:
                return None
    if text is None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return TEXT_KEY, orjson.dumps(text), len(raw)


def line_bytes(record: dict[str, Any]) -> bytes:
    """A line's exact bytes: its payload and its terminator (`eol`, "\\n" when absent): pipe lines
    and the lines of a JSON-lines HTTP body."""
    return payload_bytes(record) + record.get("eol", "\n").encode("utf-8", "surrogatepass")  # (any string)


def payload_bytes(record: dict[str, Any]) -> bytes:
    """The exact bytes a message carried (as far as redaction left them)."""
    if "raw" in record:
        return record["raw"].encode("utf-8")
    if "json" in record:
        return orjson.dumps(record["json"])
    if "text" in record:
        return record["text"].encode("utf-8", "surrogatepass")
    if "b64" in record:
        return base64.b64decode(record["b64"])
    return b""


JSON_DEPTH = 254  # the deepest JSON orjson writes (it refuses deeper values with "Recursion limit reached")


def dumps_nested(value: Any, *, indent: bool = False, default: Any = None) -> bytes:
    """`orjson.dumps(value)` (compact, or indented by 2), also when `value` nests a payload deeper than
    orjson writes: a `json` payload may be JSON_DEPTH levels deep, and an event or a report holding it
    adds a few. Only then the standard library's encoder writes it (same JSON, slower)."""
    try:
        return orjson.dumps(value, default=default,
                            option=orjson.OPT_NON_STR_KEYS | (orjson.OPT_INDENT_2 if indent else 0))
    except TypeError as e:
        if "Recursion limit" not in str(e):
            raise
    import json

    text = json.dumps(value, ensure_ascii=False, default=default, indent=2 if indent else None,
                      separators=(",", ": ") if indent else (",", ":"))
    return text.encode("utf-8", "surrogatepass")


def json_problem(record: dict[str, Any], line: bytes) -> str | None:
    """Why the `json` payload of `record` (read from `line`) cannot be written back as bytes, or None.
    A writer keeps such a payload as `text`; a record holding it anyway is damaged. Cheap: only a line
    with more than JSON_DEPTH brackets can nest that deep, and only then is the payload serialized."""
    if len(line) <= 2 * JSON_DEPTH or line.count(b"[") + line.count(b"{") <= JSON_DEPTH or "json" not in record:
        return None
    try:
        orjson.dumps(record["json"])
    except TypeError as e:
        return f"json payload cannot be written back ({e}; deeper than {JSON_DEPTH} levels?)"
    return None


def payload_text(record: dict[str, Any]) -> str:
    """The payload as text for display and matching (binary decoded with replacement)."""
    if "raw" in record:
        return record["raw"]
    if "text" in record:
        return record["text"]
    if "json" in record:
        return orjson.dumps(record["json"]).decode("utf-8")
    if "b64" in record:
        return base64.b64decode(record["b64"]).decode("utf-8", "replace")
    return ""


def payload_value(record: dict[str, Any]) -> Any:
    """The parsed JSON value of a message, or None when it is not JSON."""
    return record.get("json")


def payload_size(record: dict[str, Any]) -> int:
    """Size in bytes of the payload (the original size when it was truncated)."""
    if "truncated" in record:
        return int(record["truncated"])
    return len(payload_bytes(record))
