"""Normalization: hide the fields that change from run to run (ids, txids, timestamps, fingerprints).

Used by replay matching and by diff, so "same message" means the same thing in both.

Path syntax (documented in docs/paths.md):
- `a.b.c`          key `c` inside key `b` inside key `a`
- `a[*].id`        key `id` of every element of list `a`;  `a[2]` one element
- `*`              any one key (or index);  `**` any depth (zero or more steps)
- `**.timestamp`   key `timestamp` anywhere
Keys containing dots or brackets are written in quotes: `headers."x-request-id"`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from wirecap.errors import WirecapError

VOLATILE = "<volatile>"
ANY = object()  # one step, any key or index
DEEP = object()  # zero or more steps

_TOKEN_RE = re.compile(r'"((?:[^"\\]|\\.)*)"|\[(\*|\d+)\]|([^.\[\]"]+)|(\.)')
_PLACEHOLDER_FP_RE = re.compile(r"«redacted:([a-z0-9\-]+):[0-9a-f]{8}»")


@dataclass(frozen=True, slots=True)
class Path:
    spec: str
    steps: tuple[Any, ...]

    def matches(self, concrete: tuple[Any, ...]) -> bool:
        return _match(self.steps, 0, concrete, 0)


def parse_path(spec: str) -> Path:
    """Parse a path spec; a malformed one raises WirecapError naming the spec and the position."""
    steps: list[Any] = []
    pos = 0
    expect_step = True
    spec_s = spec.strip()
    if not spec_s:
        raise WirecapError("empty path")
    while pos < len(spec_s):
        m = _TOKEN_RE.match(spec_s, pos)
        if not m:
            raise WirecapError(f"bad path {spec!r} at position {pos}")
        quoted, index, bare, dot = m.groups()
        if dot:
            if expect_step:
                raise WirecapError(f"bad path {spec!r}: empty step at position {pos}")
            expect_step = True
        elif index is not None:
            steps.append(ANY if index == "*" else int(index))
            expect_step = False
        else:
            if not expect_step:
                raise WirecapError(f"bad path {spec!r}: missing '.' at position {pos}")
            key = quoted.replace('\\"', '"') if quoted is not None else bare
            steps.append(DEEP if (bare == "**") else ANY if (bare == "*") else key)
            expect_step = False
        pos = m.end()
    if expect_step:
        raise WirecapError(f"bad path {spec!r}: ends with '.'")
    return Path(spec, tuple(steps))


def _match(steps: tuple[Any, ...], i: int, path: tuple[Any, ...], j: int) -> bool:
    while i < len(steps):
        step = steps[i]
        if step is DEEP:
            if i + 1 == len(steps):
                return True
            return any(_match(steps, i + 1, path, k) for k in range(j, len(path) + 1))
        if j >= len(path):
            return False
        if step is not ANY and step != path[j]:
            return False
        i += 1
        j += 1
    return j == len(path)


def format_path(concrete: tuple[Any, ...]) -> str:
    """Render a concrete path the way the path syntax reads: `tool_call[2].input.command`."""
    out: list[str] = []
    for step in concrete:
        if isinstance(step, int):
            out.append(f"[{step}]")
        else:
            s = str(step)
            if re.fullmatch(r"[A-Za-z_$@][\w$@\-]*", s):
                out.append(("." if out else "") + s)
            else:
                out.append(("." if out else "") + '"' + s.replace('"', '\\"') + '"')
    return "".join(out)


class Normalizer:
    """Compiled ignore/keep rules. `keep` wins over `ignore` (it brings one field back)."""

    def __init__(self, ignore: list[str] | tuple[str, ...] = (), keep: list[str] | tuple[str, ...] = (),
                 redaction_fingerprints: bool = True) -> None:
        self.ignore = [parse_path(p) for p in ignore]
        self.keep = [parse_path(p) for p in keep]
        self.redaction_fingerprints = redaction_fingerprints
        # Fast path: last-step keys of ignore rules; a field whose key is not among them (and no rule
        # ends in a wildcard) cannot match, so most fields skip the matcher entirely.
        lasts = {p.steps[-1] for p in self.ignore if p.steps}
        self._wild = any(x is ANY or x is DEEP or isinstance(x, int) for x in lasts)
        self._last_keys = {x for x in lasts if isinstance(x, str)}

    def _ignored(self, path: tuple[Any, ...]) -> bool:
        if not self._wild and (not path or path[-1] not in self._last_keys):
            return False
        if any(p.matches(path) for p in self.ignore):
            return not any(p.matches(path) for p in self.keep)
        return False

    def __call__(self, value: Any, path: tuple[Any, ...] = ()) -> Any:
        if path and self.ignore and self._ignored(path):
            return VOLATILE
        if isinstance(value, dict):
            return {k: self(v, (*path, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v, (*path, i)) for i, v in enumerate(value)]
        if isinstance(value, str) and self.redaction_fingerprints and "«redacted:" in value:
            return _PLACEHOLDER_FP_RE.sub(r"«redacted:\1»", value)
        return value


def normalize(value: Any, ignore: list[str] | tuple[str, ...] = (), keep: list[str] | tuple[str, ...] = (),
              redaction_fingerprints: bool = True) -> Any:
    """A copy of `value` with ignored fields replaced by `"<volatile>"`."""
    return Normalizer(ignore, keep, redaction_fingerprints)(value)


MISSING = object()


def field_diffs(a: Any, b: Any, path: tuple[Any, ...] = ()) -> list[tuple[str, Any, Any]]:
    """Field-level differences as (path, old, new); a side that lacks the field gives `MISSING`."""
    out: list[tuple[str, Any, Any]] = []
    _diff(a, b, path, out)
    return out


def _diff(a: Any, b: Any, path: tuple[Any, ...], out: list[tuple[str, Any, Any]]) -> None:
    if type(a) is type(b) and isinstance(a, dict):
        for k in a:
            if k in b:
                _diff(a[k], b[k], (*path, k), out)
            else:
                out.append((format_path((*path, k)), a[k], MISSING))
        for k in b:
            if k not in a:
                out.append((format_path((*path, k)), MISSING, b[k]))
        return
    if type(a) is type(b) and isinstance(a, list):
        for i in range(max(len(a), len(b))):
            if i >= len(a):
                out.append((format_path((*path, i)), MISSING, b[i]))
            elif i >= len(b):
                out.append((format_path((*path, i)), a[i], MISSING))
            else:
                _diff(a[i], b[i], (*path, i), out)
        return
    if a != b or type(a) is not type(b):
        out.append((format_path(path) or ".", a, b))
