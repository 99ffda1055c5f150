"""Validate captures against the JSON Schema of format v1, without a JSON Schema dependency.

The schema (`capture-format.schema.json`, shipped beside this module and copied in `docs/`) is the
single source of truth; this module interprets the subset of draft 2020-12 the schema uses: `type`,
`enum`, `const`, `properties`, `required`, `additionalProperties`, `items`, `minimum`, `minLength`,
`pattern`, local `$ref`, `allOf` / `anyOf` / `oneOf` / `not`, `if` / `then` / `else`,
`dependentRequired`. An unknown keyword is an error (so the schema cannot silently outgrow it).
File-level rules a per-line schema cannot express (seq gap-free, t monotonic, header first,
`end.records`) are checked by `validate_capture_file`.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any

import orjson

SCHEMA_PATH = Path(__file__).with_name("capture-format.schema.json")

_KNOWN = frozenset(
    ["$schema", "$id", "title", "description", "$defs", "type", "enum", "const", "properties", "required", "additionalProperties", "items", "minimum", "minLength", "pattern", "$ref", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentRequired"]
)


@functools.cache
def load_schema() -> dict[str, Any]:
    return orjson.loads(SCHEMA_PATH.read_bytes())


def _type_ok(value: Any, name: str) -> bool:
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    raise ValueError(f"schema: unknown type {name!r}")


def _eq(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0 but True != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


@functools.cache
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


class _Validator:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

    def resolve(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            raise ValueError(f"schema: only local $ref supported, got {ref!r}")
        node: Any = self.root
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def errors(self, value: Any, schema: Any, path: str) -> list[str]:
        """Every violation of `schema` by `value`, as `PATH: what` strings (empty when valid)."""
        if schema is True:
            return []
        if schema is False:
            return [f"{path}: not allowed"]
        unknown = set(schema) - _KNOWN
        if unknown:
            raise ValueError(f"schema: unsupported keyword(s) {sorted(unknown)}")
        out: list[str] = []
        if "$ref" in schema:
            out += self.errors(value, self.resolve(schema["$ref"]), path)
        if "type" in schema:
            types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            if not any(_type_ok(value, t) for t in types):
                return out + [f"{path}: expected {' or '.join(types)}, got {_show(value)}"]
        if "const" in schema and not _eq(value, schema["const"]):
            out.append(f"{path}: must be {_show(schema['const'])}, got {_show(value)}")
        if "enum" in schema and not any(_eq(value, e) for e in schema["enum"]):
            out.append(f"{path}: must be one of {', '.join(_show(e) for e in schema['enum'])}; got {_show(value)}")
        if isinstance(value, str):
            if "minLength" in schema and len(value) < schema["minLength"]:
                out.append(f"{path}: shorter than {schema['minLength']}")
            if "pattern" in schema and not _regex(schema["pattern"]).search(value):
                out.append(f"{path}: does not match {schema['pattern']}")
        if "minimum" in schema and _type_ok(value, "number") and value < schema["minimum"]:
            out.append(f"{path}: {value} is below the minimum {schema['minimum']}")
        if isinstance(value, list) and "items" in schema:
            for i, item in enumerate(value):
                out += self.errors(item, schema["items"], f"{path}[{i}]")
        if isinstance(value, dict):
            out += self._object(value, schema, path)
        for sub in schema.get("allOf", ()):
            out += self.errors(value, sub, path)
        if "anyOf" in schema and not any(not self.errors(value, s, path) for s in schema["anyOf"]):
            out.append(f"{path}: matches none of the allowed forms")
        if "oneOf" in schema:
            n = sum(1 for s in schema["oneOf"] if not self.errors(value, s, path))
            if n != 1:
                out.append(f"{path}: must match exactly one of {_forms(schema['oneOf'])}, matches {n}")
        if "not" in schema and not self.errors(value, schema["not"], path):
            out.append(f"{path}: must not match {_forms([schema['not']])}")
        if "if" in schema:
            branch = "then" if not self.errors(value, schema["if"], path) else "else"
            if branch in schema:
                out += self.errors(value, schema[branch], path)
        return out

    def _object(self, value: dict[str, Any], schema: dict[str, Any], path: str) -> list[str]:
        out: list[str] = []
        for name in schema.get("required", ()):
            if name not in value:
                out.append(f"{path}: missing field {name!r}")
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for k, v in value.items():
            if k in props:
                out += self.errors(v, props[k], f"{path}.{k}")
            elif extra is False:
                out.append(f"{path}: unknown field {k!r}")
            elif extra is not True:
                out += self.errors(v, extra, f"{path}.{k}")
        for k, needed in schema.get("dependentRequired", {}).items():
            if k in value:
                for n in needed:
                    if n not in value:
                        out.append(f"{path}: field {k!r} needs field {n!r}")
        return out


def _show(value: Any) -> str:
    text = orjson.dumps(value).decode("utf-8", "replace") if _jsonable(value) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _jsonable(value: Any) -> bool:
    try:
        orjson.dumps(value)
    except TypeError:
        return False
    return True


def _forms(schemas: list[Any]) -> str:
    parts = []
    for s in schemas:
        if isinstance(s, dict) and set(s) == {"required"}:
            parts.append("+".join(s["required"]))
        elif isinstance(s, dict) and "$ref" in s:
            parts.append(s["$ref"].rsplit("/", 1)[-1])
        else:
            parts.append("a sub-schema")
    return "[" + ", ".join(parts) + "]"


def _numbered(f: Any, name: str, problems: list[str]) -> Any:
    """(line number, line) pairs; a damaged compressed stream ends them with a problem, not a traceback."""
    from wirecap.capture.inputs import OVERLONG, bounded_lines, overlong_message
    from wirecap.capture.reader import stream_errors

    lineno = 0
    try:
        for line in bounded_lines(f):
            lineno += 1
            if line is OVERLONG:
                problems.append(f"{name}:{lineno}: {overlong_message()}")
                continue
            yield lineno, line
    except Exception as e:  # noqa: BLE001 - only stream errors are findings
        if not isinstance(e, stream_errors()):
            raise
        problems.append(f"{name}:{lineno + 1}: compressed stream ends early ({e})")


@functools.cache
def _validator() -> _Validator:
    return _Validator(load_schema())


def validate_header(header: Any) -> list[str]:
    """Violations of the header schema (`$.field: what`), empty when valid."""
    v = _validator()
    return v.errors(header, v.resolve("#/$defs/header"), "$")


def validate_record(record: Any) -> list[str]:
    """Violations of the record schema (`$.field: what`), empty when valid."""
    v = _validator()
    return v.errors(record, v.resolve("#/$defs/record"), "$")


def validate_capture_file(path: str | os.PathLike[str]) -> list[str]:
    """Every way the capture at `path` departs from format v1, as `FILE:LINE: what` strings.

    Stricter than the reader (which tolerates and reports): a torn line, a missing `end`, a seq gap
    or a backwards `t` are all findings here. An empty list means the file is a valid, complete
    capture. Reads `.gz` / `.zst` too; streams, constant memory.
    """
    from wirecap.capture.reader import open_binary
    from wirecap.errors import WirecapError

    name = os.fspath(path)
    try:
        f = open_binary(name)
    except WirecapError as e:
        return [str(e)]
    problems: list[str] = []
    expected_seq = 1
    last_t = 0.0
    end_line = 0
    lineno = 0
    with f:
        for lineno, line in _numbered(f, name, problems):  # noqa: B007 - lineno used after the loop
            where = f"{name}:{lineno}"
            if not line.endswith(b"\n"):
                problems.append(f"{where}: torn line (no newline at the end)")
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                problems.append(f"{where}: invalid JSON ({str(e).split(':')[0]})")
                continue
            if lineno == 1:
                problems += [f"{where}: {p}" for p in validate_header(value)]
                continue
            problems += [f"{where}: {p}" for p in validate_record(value)]
            if not isinstance(value, dict):
                continue
            end_line = 0  # records after an `end` are an append (a later session); only the last counts
            seq = value.get("seq")
            if isinstance(seq, int) and not isinstance(seq, bool):
                if seq != expected_seq:
                    problems.append(f"{where}: seq {seq} where {expected_seq} was expected")
                expected_seq = seq + 1
            t = value.get("t")
            if isinstance(t, (int, float)) and not isinstance(t, bool):
                if t < last_t:
                    problems.append(f"{where}: t goes backwards ({t} < {last_t})")
                last_t = t
            if value.get("type") == "end":
                end_line = lineno
                if value.get("records") != seq:
                    problems.append(f"{where}: end.records is {value.get('records')}, its seq is {seq}")
    if lineno == 0:
        problems.append(f"{name}: empty file")
    elif not end_line:
        problems.append(f"{name}: no end record (interrupted capture)")
    return problems
