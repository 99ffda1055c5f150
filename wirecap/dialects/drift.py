"""Drift: message types and fields a dialect does not know, found while validating (sans-I/O).

Each dialect declares the shapes it knows (`Dialect.known`, a `Known`): what its decoder reads or
deliberately ignores, taken from the real traffic the project ships (captures/, tests/fixtures/) and
from runs of the real CLIs in the lab. `DriftCheck` walks every JSON message of a unit against that
declaration and counts what is new:

- a message type (or a nested `type` such as a content block's or a stream event's) the dialect does
  not know: one finding per (dialect, message type), with the first seq and how many;
- a field the dialect does not know: one finding per (dialect, message type, field path).

Only names are checked, not the types of values (a number that becomes a string is not drift).
Free-form content (tool inputs and outputs, JSON schemas of tools, prompts, model text, session state
blobs, free metadata) is declared `OPEN` and never looked into: a new key there is the user's or the
model's business, not drift. Each dialect page in docs/dialects/ lists what is open.

Why it is cheap: a declaration is compiled once into nested closures with static paths, and a
message's check is a few dict lookups and one `issuperset` per object it walks (no path strings are
built unless something is unknown). Results are a plain list of `Finding`s (rule `drift`).

Spec language (plain Python values, so the tables read like the JSON they describe):

    None          a known field whose value is not looked into (a scalar, or anything)
    OPEN          a known field holding free-form content (same as None, but listed as open)
    {"k": spec}   an object with exactly these fields (any other field is drift)
    [spec]        a list whose items have this shape
    MapOf(spec)   an object with free keys (model names, file names) whose values have this shape
    Union(key, {value: spec}, missing=spec, label=True)
                  an object told apart by `key` (e.g. "type"); an unknown value is an unknown type.
                  `missing` is the shape when the key is absent; `label` adds the value to the
                  message type named in findings ("system/init", "action/prompt-response").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wirecap.dialects.base import ERROR_SEV, INFO, Finding


class _Open:
    """The marker of free-form content (a singleton; `repr` shows in docs and errors)."""

    _instance: _Open | None = None

    def __new__(cls) -> _Open:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "OPEN"


OPEN = _Open()


@dataclass(frozen=True, slots=True)
class MapOf:
    """An object with free keys whose values all have `value`'s shape."""

    value: Any


@dataclass(frozen=True, slots=True)
class Union:
    """An object discriminated by `key`; see the module docstring."""

    key: str
    variants: dict[str, Any]
    missing: Any = None  # shape when `key` is absent (None: such an object is an unknown type)
    label: bool = True


@dataclass(frozen=True, slots=True)
class Known:
    """What a dialect knows: the shape of client-to-server and server-to-client JSON messages.

    `s2c` / `c2s` are specs (usually a `Union` on the message type). A direction without a spec is
    not checked. `skip_channel(ch)` tells channels whose messages are not protocol messages (stderr).
    """

    s2c: Any = None
    c2s: Any = None
    c2s_name: str = ""  # the message type named in findings when the c2s spec names none ("request")

    @staticmethod
    def skip_channel(ch: Any) -> bool:
        return isinstance(ch, str) and ch[:6] == "stderr"


def extend(spec: Any, fields: dict[str, Any] | None = None, variants: dict[str, Any] | None = None) -> Any:
    """A copy of a top-level spec with `fields` added to every object variant (through nested
    unions) and `variants` added to the outermost union: how a dialect that is another's with
    extras (CodeBuddy's `__timestamp` on every line) says so without repeating the table."""
    fields = fields or {}
    if isinstance(spec, Union):
        vs = {k: extend(v, fields) for k, v in spec.variants.items()}
        if variants:
            vs.update({k: extend(v, fields) for k, v in variants.items()})
        missing = extend(spec.missing, fields) if spec.missing is not None else None
        return Union(spec.key, vs, missing, spec.label)
    if isinstance(spec, dict):
        return {**spec, **fields}
    return spec


def open_paths(spec: Any, path: str = "") -> list[str]:
    """The paths declared OPEN in a spec (for the docs and their test), `<type>` marking a variant."""
    out: list[str] = []
    if spec is OPEN:
        out.append(path)
    elif isinstance(spec, dict):
        for k, v in spec.items():
            out.extend(open_paths(v, f"{path}.{k}" if path else k))
    elif isinstance(spec, list) and spec:
        out.extend(open_paths(spec[0], f"{path}[*]"))
    elif isinstance(spec, MapOf):
        out.extend(open_paths(spec.value, f"{path}.*" if path else "*"))
    elif isinstance(spec, Union):
        for k, v in spec.variants.items():
            out.extend(open_paths(v, f"{path}<{k}>"))
        if spec.missing is not None:
            out.extend(open_paths(spec.missing, path))
    return out


# --- compiling a spec into checkers ------------------------------------------------------------------
# A checker is `check(value, report)`; `report(kind, label, path, detail)` counts one drift. Paths and
# message-type labels are fixed when compiling (every union variant compiles its own subtree), so a
# check builds no string unless something is unknown.
Report = Callable[[str, str, str, str], None]
Checker = Callable[[Any, Report], None]


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def compile_spec(spec: Any, path: str = "", label: str = "") -> Checker | None:
    """A checker for `spec` at `path` inside message type `label`, or None when nothing under it is
    ever looked at."""
    if spec is None or spec is OPEN:
        return None
    if isinstance(spec, dict):
        return _compile_object(spec, path, label)
    if isinstance(spec, list):
        if not spec:
            return None
        item = compile_spec(spec[0], f"{path}[*]", label)
        if item is None:
            return None

        def check_list(v: Any, report: Report) -> None:
            if v.__class__ is list:
                for x in v:
                    item(x, report)

        return check_list
    if isinstance(spec, MapOf):
        value = compile_spec(spec.value, f"{path}.*" if path else "*", label)
        if value is None:
            return None

        def check_map(v: Any, report: Report) -> None:
            if v.__class__ is dict:
                for x in v.values():
                    value(x, report)

        return check_map
    if isinstance(spec, Union):
        return _compile_union(spec, path, label)
    raise TypeError(f"not a drift spec at {path or 'the top'}: {spec!r}")


def _object_parts(spec: dict[str, Any], path: str,
                  label: str) -> tuple[frozenset[str], tuple[tuple[str, Checker], ...], str, str]:
    """An object spec's known keys, the checkers of the children worth looking into, path, label."""
    children = tuple((k, c) for k, c in ((k, compile_spec(v, _join(path, k), label)) for k, v in spec.items())
                     if c is not None)
    return frozenset(spec), children, path, label


def _compile_object(spec: dict[str, Any], path: str, label: str) -> Checker:
    keys, children, _, _ = _object_parts(spec, path, label)

    def check_object(v: Any, report: Report) -> None:
        if v.__class__ is not dict:
            return
        if not keys.issuperset(v):
            for k in v:
                if k not in keys:
                    report("field", label, _join(path, str(k)), "")
        for k, c in children:
            x = v.get(k)
            if x is not None:
                c(x, report)

    return check_object


def _compile_union(spec: Union, path: str, label: str) -> Checker:
    key = spec.key
    labelled = spec.label
    # Per value: the parts of an object variant, checked inline (one call less per level: this is the
    # hot path), or a checker (a nested union), or None (open). A labelled union names the message
    # type, so its variants' paths need no `<value>` mark.
    table: dict[Any, Any] = {}
    for value, sub in spec.variants.items():
        at = path if labelled else f"{path}<{value}>"
        named = (f"{label}/{value}" if label else value) if labelled else label
        table[value] = _object_parts(sub, at, named) if isinstance(sub, dict) else compile_spec(sub, at, named)
    missing = compile_spec(spec.missing, path, label) if spec.missing is not None else None
    has_missing = spec.missing is not None
    where = _join(path, key)

    def check_union(v: Any, report: Report) -> None:
        if v.__class__ is not dict:
            return
        t = v.get(key)
        if t is None and has_missing and key not in v:
            if missing is not None:
                missing(v, report)
            return
        try:
            c = table[t]
        except (KeyError, TypeError):  # a new type, or a value that is no type at all
            t = t if isinstance(t, str) else repr(t)
            if labelled:
                report("type", f"{label}/{t}" if label else t, "", "")
            else:
                report("value", label, where, t)
            return
        if c.__class__ is tuple:
            keys, children, at, named = c
            if not keys.issuperset(v):
                for k in v:
                    if k not in keys:
                        report("field", named, _join(at, str(k)), "")
            for k, cc in children:
                x = v.get(k)
                if x is not None:
                    cc(x, report)
        elif c is not None:
            c(v, report)

    return check_union


_COMPILED: dict[int, tuple[Known, Checker | None, Checker | None]] = {}


def compiled(known: Known) -> tuple[Checker | None, Checker | None]:
    """The (s2c, c2s) checkers of a declaration, compiled once per process (declarations are constants)."""
    got = _COMPILED.get(id(known))
    if got is None or got[0] is not known:
        got = _COMPILED[id(known)] = (known, compile_spec(known.s2c), compile_spec(known.c2s, label=known.c2s_name))
    return got[1], got[2]


@dataclass(slots=True)
class _Seen:
    count: int  # messages, not occurrences: three list items with the same new field count once
    seq: int | None
    ch: str | None
    last: dict[str, Any]  # the latest record counted


@dataclass(slots=True)
class DriftCheck:
    """Counts the drift of one capture's messages against each dialect's `Known` (sans-I/O).

    `check(dialect, known, rec)` per message record (or `for_channel` once, then its result per
    record); `findings(strict)` at the end: severity `info`, or `error` when `strict`
    (`validate --strict-schema`).
    """

    seen: dict[tuple[str, str, str, str, str], _Seen] = field(default_factory=dict)

    def check(self, dialect: str, known: Known, rec: dict[str, Any]) -> None:
        """Check one msg record of a unit decoded as `dialect` (non-JSON payloads are not drift)."""
        c = self.for_channel(dialect, known, rec.get("ch"))
        if c is not None:
            c(rec)

    def for_channel(self, dialect: str, known: Known, ch: Any) -> Callable[[dict[str, Any]], None] | None:
        """`check` bound to one channel of a unit decoded as `dialect` (the hot path of validate), or
        None when the channel is not checked (stderr)."""
        if known.skip_channel(ch):
            return None
        s2c, c2s = compiled(known)
        seen = self.seen
        current: list[dict[str, Any]] = [{}]

        def report(kind: str, label: str, path: str, detail: str) -> None:
            key = (dialect, kind, label, path, detail)
            s = seen.get(key)
            rec = current[0]
            if s is None:
                seen[key] = _Seen(1, rec.get("seq"), rec.get("ch"), rec)
            elif s.last is not rec:
                s.count += 1
                s.last = rec

        def check(rec: dict[str, Any]) -> None:
            obj = rec.get("json")
            if obj.__class__ is dict:
                c = c2s if rec.get("dir") == "c2s" else s2c
                if c is not None:
                    current[0] = rec
                    c(obj, report)

        return check

    def findings(self, strict: bool = False) -> list[Finding]:
        sev = ERROR_SEV if strict else INFO
        out = []
        for (dialect, kind, label, path, detail), s in self.seen.items():
            n = f"{s.count} message{'s' if s.count != 1 else ''}"
            if kind == "type":
                what = f"unknown message type {label!r}"
            elif kind == "value":
                what = f"unknown {path} {detail!r}" + (f" in {label}" if label else "")
            else:
                what = f"unknown field {path}" + (f" in {label}" if label else "")
            out.append(Finding(sev, "drift", f"{dialect}: {what} ({n})", s.seq, s.ch))
        return out


__all__ = ["OPEN", "DriftCheck", "Known", "MapOf", "Union", "compile_spec", "extend", "open_paths"]
