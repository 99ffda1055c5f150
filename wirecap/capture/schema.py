"""Validate captures against the JSON Schema of format v1, without a JSON Schema dependency.

The schema (`capture-format.schema.json`, shipped beside this module and copied in `docs/`) is the
single source of truth; this module interprets the subset of draft 2020-12 the schema uses: `type`,
`enum`, `const`, `properties`, `required`, `additionalProperties`, `items`, `minimum`, `minLength`,
`pattern`, local `$ref`, `allOf` / `anyOf` / `oneOf` / `not`, `if` / `then` / `else`,
`dependentRequired`. An unknown keyword is an error (so the schema cannot silently outgrow it).
File-level rules a per-line schema cannot express (seq gap-free, t monotonic, header first,
`end.records`) are checked by `validate_capture_file`.

Two speeds: `validate_record` / `validate_header` apply the whole schema (compiled once into closures,
records of an already valid skeleton memoized: `wirecap validate` runs it on every record), and
`shape_problem` / `header_shape_problems` apply only its JSON types, fast enough for the reader's hot
loop: the reader skips a record whose fields have the wrong type, so no consumer ever meets one.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
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
        self._compiled: dict[int, Any] = {}
        self._keep: list[Any] = []  # the compiled schemas stay alive, so their ids stay theirs

    def resolve(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            raise ValueError(f"schema: only local $ref supported, got {ref!r}")
        node: Any = self.root
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def errors(self, value: Any, schema: Any, path: str) -> list[str]:
        """Every violation of `schema` by `value`, as `PATH: what` strings (empty when valid)."""
        return self.compiled(schema)(value, path)

    def compiled(self, schema: Any) -> Any:
        """`schema` turned once into a function (value, path) -> violations: the keywords are looked up
        and the `$ref`s resolved when compiling, not for every value (validate runs it on every record)."""
        key = id(schema)
        fn = self._compiled.get(key)
        if fn is None:
            self._compiled[key] = lambda value, path: self._compiled[key](value, path)  # recursion guard
            fn = self._compiled[key] = self._compile(schema)
            self._keep.append(schema)
        return fn

    def _compile(self, schema: Any) -> Any:
        if schema is True:
            return lambda value, path: []
        if schema is False:
            return lambda value, path: [f"{path}: not allowed"]
        unknown = set(schema) - _KNOWN
        if unknown:
            raise ValueError(f"schema: unsupported keyword(s) {sorted(unknown)}")
        # each step: (value, path, out) -> None, appending violations to out; in keyword order
        steps: list[Any] = [step for build in _STEP_BUILDERS for step in build(self, schema)]
        types = None
        if "type" in schema:
            types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if types is None:
            return _checker(steps) if steps else lambda value, path: []
        return _typed_checker(types, steps, "$ref" in schema)

    # --- one builder per keyword (or group of keywords): the steps it adds ---------------------------
    def _ref_steps(self, schema: dict[str, Any]) -> list[Any]:
        if "$ref" not in schema:
            return []
        ref = self.compiled(self.resolve(schema["$ref"]))
        return [lambda v, p, out: out.extend(ref(v, p))]

    def _items_steps(self, schema: dict[str, Any]) -> list[Any]:
        if "items" not in schema:
            return []
        item = self.compiled(schema["items"])

        def items(v: Any, p: str, out: list[str]) -> None:
            if isinstance(v, list):
                for i, x in enumerate(v):
                    out.extend(item(x, f"{p}[{i}]"))
        return [items]

    def _object_steps(self, schema: dict[str, Any]) -> list[Any]:
        if not any(k in schema for k in ("required", "properties", "additionalProperties", "dependentRequired")):
            return []
        obj = self._compile_object(schema)
        return [lambda v, p, out: obj(v, p, out) if isinstance(v, dict) else None]

    def _all_of_steps(self, schema: dict[str, Any]) -> list[Any]:
        fs = [self.compiled(sub) for sub in schema.get("allOf", ())]
        return [lambda v, p, out, f=f: out.extend(f(v, p)) for f in fs]

    def _any_of_steps(self, schema: dict[str, Any]) -> list[Any]:
        if "anyOf" not in schema:
            return []
        fs = [self.compiled(x) for x in schema["anyOf"]]
        return [lambda v, p, out: None if any(not f(v, p) for f in fs) else out.append(
            f"{p}: matches none of the allowed forms")]

    def _one_of_steps(self, schema: dict[str, Any]) -> list[Any]:
        if "oneOf" not in schema:
            return []
        one = [self.compiled(x) for x in schema["oneOf"]]
        forms = _forms(schema["oneOf"])

        def one_of(v: Any, p: str, out: list[str]) -> None:
            n = sum(1 for f in one if not f(v, p))
            if n != 1:
                out.append(f"{p}: must match exactly one of {forms}, matches {n}")
        return [one_of]

    def _not_steps(self, schema: dict[str, Any]) -> list[Any]:
        if "not" not in schema:
            return []
        neg, shown = self.compiled(schema["not"]), _forms([schema["not"]])
        return [lambda v, p, out: out.append(f"{p}: must not match {shown}") if not neg(v, p) else None]

    def _if_steps(self, schema: dict[str, Any]) -> list[Any]:
        if "if" not in schema:
            return []
        cond = self.compiled(schema["if"])
        then = self.compiled(schema["then"]) if "then" in schema else None
        other = self.compiled(schema["else"]) if "else" in schema else None

        def if_(v: Any, p: str, out: list[str]) -> None:
            branch = then if not cond(v, p) else other
            if branch is not None:
                out.extend(branch(v, p))
        return [if_]

    def _compile_object(self, schema: dict[str, Any]) -> Any:
        required = tuple(schema.get("required", ()))
        props = {k: self.compiled(s) for k, s in schema.get("properties", {}).items()}
        extra_schema = schema.get("additionalProperties", True)
        extra = None if isinstance(extra_schema, bool) else self.compiled(extra_schema)
        dependent = tuple(schema.get("dependentRequired", {}).items())

        def obj(value: dict[str, Any], path: str, out: list[str]) -> None:
            for name in required:
                if name not in value:
                    out.append(f"{path}: missing field {name!r}")
            if extra_schema is True:  # only the named fields matter (an `if` names one of a record's ten)
                for k, f in props.items():
                    if k in value:
                        out.extend(f(value[k], f"{path}.{k}"))
            else:
                for k, v in value.items():
                    f = props.get(k, extra)
                    if f is not None:
                        out.extend(f(v, f"{path}.{k}"))
                    elif extra_schema is False and k not in props:
                        out.append(f"{path}: unknown field {k!r}")
            for k, needed in dependent:
                if k in value:
                    for n in needed:
                        if n not in value:
                            out.append(f"{path}: field {k!r} needs field {n!r}")
        return obj


def _const_steps(_validator: _Validator, schema: dict[str, Any]) -> list[Any]:
    if "const" not in schema:
        return []
    const = schema["const"]
    return [lambda v, p, out: None if _eq(v, const) else out.append(f"{p}: must be {_show(const)}, got {_show(v)}")]


def _enum_steps(_validator: _Validator, schema: dict[str, Any]) -> list[Any]:
    if "enum" not in schema:
        return []
    enum = schema["enum"]
    return [lambda v, p, out: None if any(_eq(v, e) for e in enum) else out.append(
        f"{p}: must be one of {', '.join(_show(e) for e in enum)}; got {_show(v)}")]


def _min_length_steps(_validator: _Validator, schema: dict[str, Any]) -> list[Any]:
    if "minLength" not in schema:
        return []
    n = schema["minLength"]
    return [lambda v, p, out: out.append(f"{p}: shorter than {n}") if isinstance(v, str) and len(v) < n else None]


def _pattern_steps(_validator: _Validator, schema: dict[str, Any]) -> list[Any]:
    if "pattern" not in schema:
        return []
    rx, pattern = _regex(schema["pattern"]), schema["pattern"]
    return [lambda v, p, out: out.append(f"{p}: does not match {pattern}")
            if isinstance(v, str) and not rx.search(v) else None]


def _minimum_steps(_validator: _Validator, schema: dict[str, Any]) -> list[Any]:
    if "minimum" not in schema:
        return []
    low = schema["minimum"]
    return [lambda v, p, out: out.append(f"{p}: {v} is below the minimum {low}")
            if _type_ok(v, "number") and v < low else None]


# The keyword step builders, in the order their violations are listed.
_STEP_BUILDERS: tuple[Any, ...] = (
    _Validator._ref_steps, _const_steps, _enum_steps, _min_length_steps, _pattern_steps, _minimum_steps,
    _Validator._items_steps, _Validator._object_steps, _Validator._all_of_steps, _Validator._any_of_steps,
    _Validator._one_of_steps, _Validator._not_steps, _Validator._if_steps,
)


def _checker(steps: list[Any]) -> Any:
    """A compiled schema without a type: every step, in order."""
    def check(value: Any, path: str) -> list[str]:
        out: list[str] = []
        for step in steps:
            step(value, path, out)
        return out
    return check


def _typed_checker(types: list[str], steps: list[Any], has_ref: bool) -> Any:
    """A compiled schema with a `type`: a value of another type gets that one violation (after its
    `$ref`'s, if any); a value of the type runs every step."""
    classes = frozenset(c for t in types for c in _CLASSES[t])
    wanted = " or ".join(types)

    if not steps:  # a type alone (most leaves)
        def leaf(value: Any, path: str) -> list[str]:
            if value.__class__ in classes or any(_type_ok(value, t) for t in types):
                return []
            return [f"{path}: expected {wanted}, got {_show(value)}"]
        return leaf
    ref_steps = steps[:1] if has_ref else []

    def check(value: Any, path: str) -> list[str]:
        out: list[str] = []
        if value.__class__ not in classes and not any(_type_ok(value, t) for t in types):
            for step in ref_steps:
                step(value, path, out)
            return out + [f"{path}: expected {wanted}, got {_show(value)}"]
        for step in steps:
            step(value, path, out)
        return out
    return check


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
    """Violations of the record schema (`$.field: what`), empty when valid.

    `validate` runs this on every record, so a record whose *skeleton* (see `_skeleton`) was already
    found valid is valid without a second look: most records of a capture share a few skeletons."""
    key = _skeleton(record)
    if key is not None and key in _VALID:
        return []
    v = _validator()
    out = v.errors(record, v.resolve("#/$defs/record"), "$")
    if key is not None and not out:
        if len(_VALID) > 4096:
            _VALID.clear()
        _VALID.add(key)
    return out


_VALID: set[Any] = set()
_SHORT = 32  # strings up to this length are part of a skeleton as they are (every enum value is shorter)


def _token(value: Any, depth: int) -> Any:
    cls = value.__class__
    if cls is str:
        return value if len(value) <= _SHORT else (str, True)
    if cls is int or cls is float:
        return cls, value < 0, value < 1  # the schema's minimums are 0 and 1
    if cls is bool or value is None:
        return value
    if depth and cls is dict and len(value) <= 8:
        return dict, tuple((k, _token(v, depth - 1)) for k, v in value.items())
    if depth and cls is list and len(value) <= 8:
        return list, tuple(_token(v, depth - 1) for v in value)
    raise _Unskeletal


class _Unskeletal(Exception):
    pass


def _skeleton(record: Any) -> Any:
    """What the record schema's verdict depends on, as a hashable key, or None when that is the whole
    record. Field names, classes, short strings (enums, consts), the sign of numbers, small objects and
    arrays (sse, flags) are kept; long strings become "a long string" (no record field has a pattern or
    an enum that could tell two apart, save b64 and raw_b64, whose records get no skeleton), and a
    field the schema allows any value for (`json`) is just its class."""
    if record.__class__ is not dict or "b64" in record or "raw_b64" in record:
        return None
    try:
        return tuple((k, v.__class__ if k in _ANY_VALUE else _token(v, 2)) for k, v in record.items())
    except _Unskeletal:
        return None


_ANY_VALUE = frozenset({"json"})  # fields whose schema is `true`


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


# --- the reader's fast shape check ---------------------------------------------------------------------
# Every consumer of records (decoders, stats, report, replay, export) relies on the JSON types the schema
# gives each field: `text` is a string, `ch` a string, `status` an integer, `headers` an object of strings.
# Checking that is the reader's job, once, so no consumer meets `"text": 5`. The full schema (oneOf,
# patterns, unknown fields, enum values) is `validate`'s job (`validate_record`); this is its type layer,
# compiled from the same schema into class lookups, cheap enough for the reader's hot loop. Enums are
# checked for their type only (a value a newer writer added is no reason to drop a record).

_CLASSES = {"object": (dict,), "array": (list,), "string": (str,), "integer": (int,), "number": (int, float),
            "boolean": (bool,), "null": (type(None),)}
_NAMES = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null", int: "integer",
          float: "number"}
# A check takes a value and returns None when its shape is right, else (path below the value, what is wrong).
_Check = Any


def _compile(schema: Any, v: _Validator) -> _Check | None:
    """A shape check for `schema` (types, the types of enums and consts, array items, object fields and
    values), or None when any value will do."""
    if not isinstance(schema, dict):
        return None
    if "$ref" in schema:
        return _compile(v.resolve(schema["$ref"]), v)
    checks: list[_Check] = []
    names: list[str] | None = None
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    elif "enum" in schema or "const" in schema:
        choices = schema.get("enum", [schema.get("const")])
        names = sorted({_NAMES.get(c.__class__, "object") for c in choices})
    if names is not None:
        classes = frozenset(c for n in names for c in _CLASSES[n])
        wanted = " or ".join(names)
        checks.append(lambda x: None if x.__class__ in classes
                      else ("", f"expected {wanted}, got {_NAMES.get(x.__class__, x.__class__.__name__)}"))
    if "pattern" in schema:  # b64 and raw_b64: undecodable base64 would fail every consumer
        rx, pattern = _regex(schema["pattern"]), schema["pattern"]
        checks.append(lambda x: None if x.__class__ is not str or rx.search(x) else ("", f"does not match {pattern}"))
    item = _compile(schema.get("items"), v)
    if item is not None:
        def items(x: Any, item: _Check = item) -> tuple[str, str] | None:
            if x.__class__ is list:
                for i, e in enumerate(x):
                    bad = item(e)
                    if bad:
                        return f"[{i}]{bad[0]}", bad[1]
            return None
        checks.append(items)
    fields = _compile_object(schema, v)
    if fields is not None:
        checks.append(fields)
    if not checks:
        return None
    if len(checks) == 1:
        return checks[0]

    def all_of(x: Any) -> tuple[str, str] | None:
        for c in checks:
            bad = c(x)
            if bad:
                return bad
        return None
    return all_of


def _compile_object(schema: dict[str, Any], v: _Validator) -> _Check | None:
    props = {k: _compile(s, v) for k, s in schema.get("properties", {}).items()}
    extra = _compile(schema.get("additionalProperties"), v)
    required = tuple(schema.get("required", ()))
    if not any(props.values()) and extra is None and not required:
        return None
    # The hot path: fields whose whole check is their type are a class lookup; the others a call.
    simple: dict[str, frozenset[type]] = {}
    for k, s in schema.get("properties", {}).items():
        classes = _plain_classes(s, v)
        if classes is not None:
            simple[k] = classes
    need = frozenset(required)
    simple_get = simple.get

    def slow(x: dict[str, Any]) -> tuple[str, str] | None:
        for name in required:
            if name not in x:
                return "", f"missing field {name!r}"
        for k, val in x.items():
            c = props.get(k, extra)
            if c is not None:
                bad = c(val)
                if bad:
                    return f".{k}{bad[0]}", bad[1]
        return None

    # A record's verdict depends on its field names and their classes only, except for fields with
    # inner structure (headers, sse, argv, flags): so the verdict of each (names, classes) signature is
    # computed once and cached, and only the inner fields are looked into for every record.
    verdicts: dict[tuple[Any, ...], tuple[str, ...] | None] = {}

    def verdict(x: dict[str, Any]) -> tuple[str, ...] | None:
        """None: the signature fails; else the fields whose insides must be checked."""
        if not need <= x.keys():
            return None
        inner = []
        for k, val in x.items():
            classes = simple_get(k)
            if classes is not None:
                if val.__class__ not in classes:
                    return None
            elif (props.get(k, extra)) is not None:
                inner.append(k)
        return tuple(inner)

    def obj(x: Any) -> tuple[str, str] | None:
        if x.__class__ is not dict:
            return None  # the type check, if any, says so
        sig = (*x, *map(type, x.values()))  # names then classes: never ambiguous (a name is no class)
        try:
            inner = verdicts[sig]
        except KeyError:
            if len(verdicts) > 4096:  # odd captures with ever new signatures: stay bounded
                verdicts.clear()
            inner = verdicts[sig] = verdict(x)
        if inner is None:
            return slow(x)
        for k in inner:
            if (props.get(k, extra))(x[k]):  # type: ignore[misc]
                return slow(x)
        return None
    return obj


def _plain_classes(schema: Any, v: _Validator) -> frozenset[type] | None:
    """The classes a value of `schema` may have when its type is all there is to check, else None."""
    if isinstance(schema, dict) and "$ref" in schema:
        schema = v.resolve(schema["$ref"])
    if not isinstance(schema, dict) or any(k in schema for k in ("items", "properties", "additionalProperties", "pattern")):
        return None
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    elif "enum" in schema or "const" in schema:
        names = sorted({_NAMES.get(c.__class__, "object") for c in schema.get("enum", [schema.get("const")])})
    else:
        return None
    return frozenset(c for n in names for c in _CLASSES[n])


@functools.cache
def _shape_checks() -> dict[str, _Check]:
    v = _validator()
    base = v.resolve("#/$defs/record")
    # The payload and header fields mean the same on every record (redaction and the payload helpers
    # read them wherever they are), so their types are checked on every record type.
    msg_props = v.resolve("#/$defs/msg")["properties"]
    payload = {k: msg_props[k] for k in ("json", "text", "b64", "raw", "raw_b64")}
    payload |= {k: {"$ref": "#/$defs/headers"} for k in ("headers", "response_headers")}
    out: dict[str, _Check] = {}
    for kind in base["properties"]["type"]["enum"]:
        body = v.resolve(f"#/$defs/{kind}")
        merged = {**body, "properties": {**base["properties"], **payload, **body.get("properties", {})},
                  "required": sorted({*base["required"], *body.get("required", ())})}
        out[kind] = _compile_object(merged, v)
    # A record of a type this wirecap does not know (a newer writer's): what every record has.
    out["*"] = _compile_object({**base, "properties": {**base["properties"], **payload}}, v)
    return out


@functools.cache
def _header_checks() -> dict[str, _Check]:
    v = _validator()
    return {k: c for k, c in ((k, _compile(s, v)) for k, s in v.resolve("#/$defs/header")["properties"].items()) if c}


def header_shape_problems(header: dict[str, Any]) -> dict[str, str]:
    """The header's fields whose JSON types are wrong, each with what is wrong (`origin`: `expected
    object, got integer`). A reader drops them (and says so) rather than refusing the capture."""
    out = {}
    for k, check in _header_checks().items():
        if k in header:
            bad = check(header[k])
            if bad:
                out[k] = f"field {k}{bad[0]}: {bad[1]}"
    return out


_SHAPES: dict[str, _Check] = {}


def _load_shapes() -> dict[str, _Check]:
    _SHAPES.update(_shape_checks())
    return _SHAPES


def shape_checks() -> tuple[Callable[[Any], _Check | None], _Check]:
    """For the reader's hot loop: (`get`, `default`), where `(get(type) or default)(record)` is None
    exactly when `shape_problem(record)` is (for a record whose `type` is a string; any other `type`
    takes `default`). One call per record instead of two; `shape_problem` says what is wrong."""
    shapes = _SHAPES or _load_shapes()
    return shapes.get, shapes["*"]


def shape_problem(record: dict[str, Any]) -> str | None:
    """What is wrong with the JSON types of `record`'s fields (`field text: expected string, got
    integer`), or None. A record of a type this wirecap does not know is checked for what every record
    has (`seq`, `t`, a string `type`); the decoders call it unparsed."""
    shapes = _SHAPES or _load_shapes()
    kind = record.get("type")
    check = shapes.get(kind) if kind.__class__ is str else None
    bad = (check or shapes["*"])(record)
    if bad is None:
        return None
    path, what = bad
    return f"field {path[1:]}: {what}" if path else what
