"""Aligned differences between two JSON-like values, and their short one-line rendering.

Used where a person reads why two messages differ (a replay mismatch, the pytest plugin's failure):
lists are compared by alignment (`align`), so an element inserted into or removed from a list is ONE
difference (`+ tools[17] {"name": "NewTool", ...}`), not a shift of every later index; long values
are shortened (a long string around its first difference). Sans-I/O, never raises on odd values
(bytes, non-string keys, floats that are NaN).

A difference is a plain `(path, recorded, live)` tuple: a side that lacks the value holds `MISSING`,
so `+` (added in live), `-` (missing from live) and `~` (changed) follow from it.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Any

import orjson

from wirecap.analysis.align import align
from wirecap.analysis.normalize import MISSING, format_path

Diff = tuple[str, Any, Any]

# Keys that name a list element (a tool, a message, a content block): a replaced run of elements is
# re-aligned on them, so a changed element pairs with its namesake instead of its neighbour.
IDENTITY_KEYS = ("name", "type", "role", "id", "tool_use_id", "call_id")
WIDTH = 72  # characters of one shortened value
LIMIT = 20  # differences rendered before "... N more"


def aligned_diffs(recorded: Any, live: Any, path: tuple[Any, ...] = (), *, at: str = "live",
                  scalar_lists: bool = False) -> list[Diff]:
    """Differences `(path, recorded, live)` in document order; equal values give none.

    Dicts are compared key by key; lists element by element after aligning them (minimal edit
    script), so one inserted element is one `(path[j], MISSING, element)`; other values by equality
    (and type: `1` and `1.0` and `True` differ). The one structural difference of wirecap: replay
    mismatches and the pytest plugin read it as it is, `wirecap diff` with its two options:
    `at` ("live" or "recorded"): whose index names a paired list element (diff names items and their
    fields by side A's positions); `scalar_lists`: two lists of scalars that differ (either longer
    than one element) are one difference, the lists whole (diff shows them as `-x +y`)."""
    if at not in ("live", "recorded"):
        raise ValueError(f"at must be 'live' or 'recorded', not {at!r}")
    out: list[Diff] = []
    _Differ(out, at == "live", scalar_lists).diff(recorded, live, path)
    return out


class _Differ:
    """One run of `aligned_diffs`: its options and where the differences go."""

    __slots__ = ("out", "at_live", "scalar_lists")

    def __init__(self, out: list[Diff], at_live: bool, scalar_lists: bool) -> None:
        self.out = out
        self.at_live = at_live
        self.scalar_lists = scalar_lists

    def diff(self, a: Any, b: Any, path: tuple[Any, ...]) -> None:
        if a.__class__ is dict and b.__class__ is dict:
            self._dicts(a, b, path)
        elif a.__class__ is list and b.__class__ is list:
            self._lists(a, b, path)
        elif not _same(a, b):
            self.out.append((format_path(path) or ".", a, b))

    def _dicts(self, a: dict[Any, Any], b: dict[Any, Any], path: tuple[Any, ...]) -> None:
        out = self.out
        for k, v in a.items():
            if k in b:
                self.diff(v, b[k], (*path, k))
            else:
                out.append((format_path((*path, k)), v, MISSING))
        for k, v in b.items():
            if k not in a:
                out.append((format_path((*path, k)), MISSING, v))

    def _lists(self, a: list[Any], b: list[Any], path: tuple[Any, ...]) -> None:
        ka, kb = [_key(v) for v in a], [_key(v) for v in b]
        if ka == kb:  # (the list's own key is its elements' keys joined: no need to dump it whole)
            return
        if self.scalar_lists and (len(a) > 1 or len(b) > 1) and all(map(_scalar, a)) and all(map(_scalar, b)):
            self.out.append((format_path(path) or ".", a, b))
            return
        for tag, i1, i2, j1, j2 in align(ka, kb):
            if tag != "equal":
                self._run(a, b, i1, i2, j1, j2, path)

    def _run(self, a: list[Any], b: list[Any], i1: int, i2: int, j1: int, j2: int, path: tuple[Any, ...]) -> None:
        """A replaced run a[i1:i2] -> b[j1:j2]: pair elements by identity, then by position, rest +/-."""
        if i2 - i1 != j2 - j1 and (i2 - i1) * (j2 - j1) <= 250_000:
            ops = align([_identity(v) for v in a[i1:i2]], [_identity(v) for v in b[j1:j2]])
            if any(tag == "equal" for tag, *_ in ops):
                for tag, x1, x2, y1, y2 in ops:
                    if tag == "equal":
                        for k in range(x2 - x1):
                            self._pair(a, b, i1 + x1 + k, j1 + y1 + k, path)
                    else:
                        self._pairs(a, b, i1 + x1, i1 + x2, j1 + y1, j1 + y2, path)
                return
        self._pairs(a, b, i1, i2, j1, j2, path)

    def _pair(self, a: list[Any], b: list[Any], i: int, j: int, path: tuple[Any, ...]) -> None:
        self.diff(a[i], b[j], (*path, j if self.at_live else i))

    def _pairs(self, a: list[Any], b: list[Any], i1: int, i2: int, j1: int, j2: int, path: tuple[Any, ...]) -> None:
        n = min(i2 - i1, j2 - j1)
        for k in range(n):
            self._pair(a, b, i1 + k, j1 + k, path)
        for k in range(i1 + n, i2):
            self.out.append((format_path((*path, k)), a[k], MISSING))
        for k in range(j1 + n, j2):
            self.out.append((format_path((*path, k)), MISSING, b[k]))


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def _same(a: Any, b: Any) -> bool:
    """Equal with types (so `1 == True` and `1 == 1.0` do not hide a difference); NaN equals NaN."""
    if a.__class__ is not b.__class__:
        return False
    if a.__class__ is float and math.isnan(a) and math.isnan(b):
        return True
    if a.__class__ in (dict, list):
        return _key(a) == _key(b)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an odd value: compare what it looks like
        return repr(a) == repr(b)


def _key(v: Any) -> Hashable:
    """A hashable, type-exact fingerprint of a value (its canonical JSON; odd values by repr)."""
    try:
        return orjson.dumps(v, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=_odd)
    except (TypeError, orjson.JSONEncodeError):
        return repr(v)


def _odd(v: Any) -> Any:
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"<bytes>": bytes(v).hex()}
    return {"<" + type(v).__name__ + ">": repr(v)}


def _identity(v: Any) -> Hashable:
    if v.__class__ is dict:
        ident = tuple((k, _key(v[k])) for k in IDENTITY_KEYS if k in v and not isinstance(v[k], (dict, list)))
        if ident:
            return ident
        return ("keys", tuple(sorted(map(str, v))))
    if v.__class__ is list:
        return ("list",)
    return _key(v)


# --- rendering -----------------------------------------------------------------------------------------
def short(value: Any, width: int = WIDTH) -> str:
    """A value in at most about `width` characters: JSON, a dict by its identifying keys when it is
    too long (`{"name": "NewTool", ...}`), a long string cut with `...`."""
    if value is MISSING:
        return "(absent)"
    s = _json(value)
    if len(s) <= width:
        return s
    if value.__class__ is dict:
        parts = [f"{_json(k)}: {_json(value[k])}" for k in IDENTITY_KEYS
                 if k in value and not isinstance(value[k], (dict, list)) and len(_json(value[k])) <= width // 2]
        if parts:
            inner = ", ".join(parts)
            if len(inner) <= width - 8:
                return "{" + inner + (", ...}" if len(parts) < len(value) else "}")
    if value.__class__ is list:
        return f"[{len(value)} items: " + _cut(s[1:], width - 12) + "]"
    if value.__class__ is str:
        return _str_short(value, width)
    return _cut(s, width)


def short_pair(recorded: Any, live: Any, width: int = WIDTH) -> tuple[str, str]:
    """Both sides shortened; two long strings are shown around where they start to differ."""
    if isinstance(recorded, str) and isinstance(live, str) and max(len(_json(recorded)), len(_json(live))) > width:
        i = 0
        n = min(len(recorded), len(live))
        while i < n and recorded[i] == live[i]:
            i += 1
        j = 0  # common suffix, not overlapping the prefix
        while j < n - i and recorded[-1 - j] == live[-1 - j]:
            j += 1
        return _window(recorded, i, len(recorded) - j, width), _window(live, i, len(live) - j, width)
    return short(recorded, width), short(live, width)


def _window(s: str, start: int, end: int, width: int) -> str:
    """`s` around its differing part s[start:end]: a little context before, the difference, then `...`."""
    lead = max(0, start - 16)
    return _str_short(s[lead:], width, cut_front=lead > 0)


def _cut(s: str, width: int) -> str:
    return s if len(s) <= width else s[: max(1, width - 3)] + "..."


def _str_short(s: str, width: int, cut_front: bool = False) -> str:
    """A string as a JSON literal of about `width` characters, cut on characters (never inside an
    escape) and still quoted: `"abc..."`, `"...xyz..."`."""
    front = "..." if cut_front else ""
    js = _json(s)
    if len(js) + len(front) <= width:
        return '"' + front + js[1:]
    n = min(len(s), width)
    while n > 0:
        js = _json(s[:n])
        over = len(js) + len(front) + 3 - width
        if over <= 0:
            return '"' + front + js[1:-1] + '..."'
        n -= max(1, over // 2)
    return '"' + front + '..."'


def _json(v: Any) -> str:
    try:
        return orjson.dumps(v, option=orjson.OPT_NON_STR_KEYS, default=_odd).decode("utf-8")
    except (TypeError, orjson.JSONEncodeError):
        return repr(v)


def render_line(d: Diff, width: int = WIDTH) -> str:
    """One difference: `+ PATH VALUE`, `- PATH VALUE` or `~ PATH: recorded X, live Y`."""
    path, old, new = d
    if old is MISSING:
        return f"+ {path} {short(new, width)}"
    if new is MISSING:
        return f"- {path} {short(old, width)}"
    a, b = short_pair(old, new, width)
    return f"~ {path}: recorded {a}, live {b}"


def render(diffs: list[Diff], limit: int = LIMIT, width: int = WIDTH) -> list[str]:
    """The first `limit` differences, one line each, then `... N more differences` if any."""
    lines = [render_line(d, width) for d in diffs[:limit]]
    if len(diffs) > limit:
        lines.append(f"... {len(diffs) - limit} more difference{'s' if len(diffs) - limit > 1 else ''}")
    return lines


def jsonable(value: Any) -> Any:
    """`value` made safe for a JSON document: MISSING -> None, bytes -> their text or `{"b64": ...}`."""
    if value is MISSING:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            import base64

            return {"b64": base64.b64encode(raw).decode("ascii")}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    return repr(value)
