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

Why it is cheap: a declaration is compiled once per process into the source of one Python function
with the shape inlined and the paths fixed, so a message's check is a few dict lookups and one
`issuperset` per object it walks (no string is built unless something is unknown). Results are a plain list of `Finding`s (rule `drift`).

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
from functools import partial
from typing import Any

from wirecap.dialects.base import ERROR_SEV, INFO, Finding, is_stderr


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
        return is_stderr(ch)


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
# A checker is `check(value, report, rec)`; `report(rec, kind, label, path, detail)` counts one drift
# of the message record `rec`. A spec is compiled into the source of one Python function (exec'd once per process) that walks the message with
# the spec's shape inlined: no call per nesting level, fixed paths and message-type labels, and only
# one `issuperset` per object on the hot path (measured on the Claude stream of bench/bench_dialects.py:
# 0.99 us per message with one closure per node, 0.64 us generated). Unions with many variants
# dispatch through a dict to one generated function per variant instead of a long if-chain.
Report = Callable[[dict[str, Any], str, str, str, str], None]
_INLINE_VARIANTS = 12  # a union with more variants dispatches through a dict


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _fields(v: dict[str, Any], keys: frozenset[str], path: str, label: str, report: Report,
            rec: dict[str, Any]) -> None:
    """The slow path: report each field of `v` not in `keys`."""
    for k in v:
        if k not in keys:
            report(rec, "field", label, _join(path, str(k)), "")


def _unknown(t: Any, labelled: bool, label: str, where: str, report: Report, rec: dict[str, Any]) -> None:
    """The slow path: a union value (a type) the spec does not know."""
    t = t if isinstance(t, str) else repr(t)
    if labelled:
        report(rec, "type", f"{label}/{t}" if label else t, "", "")
    else:
        report(rec, "value", label, where, t)


def _noop(v: Any, report: Report, rec: dict[str, Any]) -> None:
    return None


def _active(spec: Any) -> bool:
    """Whether a checker for `spec` would look at anything."""
    if spec is None or spec is OPEN:
        return False
    if isinstance(spec, list):
        return bool(spec) and _active(spec[0])
    if isinstance(spec, MapOf):
        return _active(spec.value)
    if isinstance(spec, (dict, Union)):
        return True
    raise TypeError(f"not a drift spec: {spec!r}")


class _Gen:
    """The source of one checker function and the constants it refers to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {"_fields": _fields, "_unknown": _unknown}
        self.n = 0

    def name(self, prefix: str, value: Any = None) -> str:
        self.n += 1
        name = f"{prefix}{self.n}"
        if value is not None:
            self.ns[name] = value
        return name

    def emit(self, ind: int, line: str) -> None:
        self.lines.append("    " * ind + line)

    def function(self) -> Callable[..., None]:
        """The generated function `check` (the source starts with its `def check(...)`)."""
        exec("\n".join(self.lines), self.ns)  # noqa: S102 - our own generated code, from constant specs
        return self.ns["check"]


def _emit(g: _Gen, spec: Any, x: str, path: str, label: str, ind: int) -> None:
    """Code that checks the value in variable `x` against `spec` (nothing for a leaf or OPEN)."""
    if not _active(spec):
        return
    if isinstance(spec, dict):
        g.emit(ind, f"if {x}.__class__ is dict:")
        _emit_object(g, spec, x, path, label, ind + 1)
    elif isinstance(spec, list):
        item = g.name("i")
        g.emit(ind, f"if {x}.__class__ is list:")
        g.emit(ind + 1, f"for {item} in {x}:")
        _emit(g, spec[0], item, f"{path}[*]", label, ind + 2)
    elif isinstance(spec, MapOf):
        item = g.name("m")
        g.emit(ind, f"if {x}.__class__ is dict:")
        g.emit(ind + 1, f"for {item} in {x}.values():")
        _emit(g, spec.value, item, f"{path}.*" if path else "*", label, ind + 2)
    else:
        g.emit(ind, f"if {x}.__class__ is dict:")
        _emit_union(g, spec, x, path, label, ind + 1)


def _emit_object(g: _Gen, spec: dict[str, Any], x: str, path: str, label: str, ind: int) -> None:
    """Code for an object already known to be a dict: its keys, then its children worth a look."""
    keys = g.name("K", frozenset(spec))
    g.emit(ind, f"if not {keys}.issuperset({x}):")
    g.emit(ind + 1, f"_fields({x}, {keys}, {path!r}, {label!r}, report, rec)")
    for k, sub in spec.items():
        if _active(sub):
            y = g.name("y")
            g.emit(ind, f"{y} = {x}.get({k!r})")
            g.emit(ind, f"if {y} is not None:")
            _emit(g, sub, y, _join(path, k), label, ind + 1)


def _variant(g: _Gen, sub: Any, x: str, at: str, named: str, ind: int) -> None:
    """Code for one union variant (the value in `x` is a dict)."""
    if isinstance(sub, dict):
        _emit_object(g, sub, x, at, named, ind)
    elif isinstance(sub, Union):
        _emit_union(g, sub, x, at, named, ind)
    elif _active(sub):
        _emit(g, sub, x, at, named, ind)
    else:
        g.emit(ind, "pass")


def _emit_union(g: _Gen, spec: Union, x: str, path: str, label: str, ind: int) -> None:
    """Code for a union whose value is known to be a dict. A labelled union names the message type,
    so its variants' paths need no `<value>` mark."""
    t = g.name("t")
    labelled = spec.label
    where = _join(path, spec.key)
    g.emit(ind, f"{t} = {x}.get({spec.key!r})")
    kw = "if"
    if spec.missing is not None:
        g.emit(ind, f"if {t} is None and {spec.key!r} not in {x}:")
        _variant(g, spec.missing, x, path, label, ind + 1)
        kw = "elif"

    def place(value: str) -> tuple[str, str]:
        return (path if labelled else f"{path}<{value}>",
                (f"{label}/{value}" if label else value) if labelled else label)

    if len(spec.variants) <= _INLINE_VARIANTS:
        for value, sub in spec.variants.items():
            g.emit(ind, f"{kw} {t} == {value!r}:")
            _variant(g, sub, x, *place(value), ind + 1)
            kw = "elif"
        g.emit(ind, "else:" if kw == "elif" else "if True:")
    else:  # one generated function per variant, found through a dict
        table = {}
        for value, sub in spec.variants.items():
            at, named = place(value)
            if _active(sub):
                sg = _Gen()
                sg.emit(0, "def check(v, report, rec):")
                _variant(sg, sub, "v", at, named, 1)
                table[value] = sg.function()
            else:
                table[value] = _noop
        d, f = g.name("D", table), g.name("f")
        g.emit(ind, f"{kw} {t}.__class__ is str and ({f} := {d}.get({t})) is not None:")
        g.emit(ind + 1, f"{f}({x}, report, rec)")
        g.emit(ind, "else:")
    g.emit(ind + 1, f"_unknown({t}, {labelled!r}, {label!r}, {where!r}, report, rec)")


def compile_known(known: Known) -> Callable[[Report, dict[str, Any]], None]:
    """One function `check(report, rec)` for a declaration: the payload of a msg record, by direction."""
    g = _Gen()
    g.emit(0, "def check(report, rec):")
    g.emit(1, "v = rec.get('json')")
    g.emit(1, "if v.__class__ is dict:")
    sides = [(known.c2s, known.c2s_name), (known.s2c, "")]
    if known.c2s is known.s2c or not _active(known.c2s):
        g.emit(2, "if rec.get('dir') != 'c2s':" if not _active(known.c2s) else "if True:")
        sides = [(known.s2c, "")]
    else:
        g.emit(2, "if rec.get('dir') == 'c2s':")
    for i, (spec, name) in enumerate(sides):
        if i:
            g.emit(2, "else:")
        if not _active(spec):
            g.emit(3, "pass")
        elif isinstance(spec, dict):
            _emit_object(g, spec, "v", "", name, 3)
        elif isinstance(spec, Union):
            _emit_union(g, spec, "v", "", name, 3)
        else:
            _emit(g, spec, "v", "", name, 3)
    return g.function()


_COMPILED: dict[int, tuple[Known, Callable[[Report, dict[str, Any]], None]]] = {}


def compiled(known: Known) -> Callable[[Report, dict[str, Any]], None]:
    """`compile_known(known)`, once per process (declarations are constants)."""
    got = _COMPILED.get(id(known))
    if got is None or got[0] is not known:
        got = _COMPILED[id(known)] = (known, compile_known(known))
    return got[1]


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
        """`check` bound to one channel of a unit decoded as `dialect` (the hot path of validate: one
        C-level partial call into the generated code per record), or None when the channel is not
        checked (stderr)."""
        if known.skip_channel(ch):
            return None
        seen = self.seen

        def report(rec: dict[str, Any], kind: str, label: str, path: str, detail: str) -> None:
            key = (dialect, kind, label, path, detail)
            s = seen.get(key)
            if s is None:
                seen[key] = _Seen(1, rec.get("seq"), rec.get("ch"), rec)
            elif s.last is not rec:
                s.count += 1
                s.last = rec

        return partial(compiled(known), report)

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


__all__ = ["OPEN", "DriftCheck", "Known", "MapOf", "Union", "compile_known", "extend", "open_paths"]
