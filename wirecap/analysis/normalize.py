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
from collections.abc import Callable
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


_IDX = object()  # cache key for "some list index" when no rule names a specific index
_DEAD, _IGNORED, _ALIVE = 0, 1, 2  # what a state means for the value found there
_REDACTED = "«redacted:"


class Normalizer:
    """Compiled ignore/keep rules. `keep` wins over `ignore` (it brings one field back).

    The rules are compiled lazily into a small automaton over path steps (a set of rule positions per
    state, transitions cached per state and key), so normalizing a message costs one dict lookup per
    field, and subtrees no rule can reach are not walked at all (only scanned for redaction placeholders,
    unless the caller asks for no placeholder rewriting: see `__call__`).
    """

    def __init__(self, ignore: list[str] | tuple[str, ...] = (), keep: list[str] | tuple[str, ...] = (),
                 redaction_fingerprints: bool = True) -> None:
        self.ignore = [parse_path(p) for p in ignore]
        self.keep = [parse_path(p) for p in keep]
        self.redaction_fingerprints = redaction_fingerprints
        self._rules: list[tuple[tuple[Any, ...], bool]] = [(p.steps, False) for p in self.ignore]
        self._rules += [(p.steps, True) for p in self.keep]
        self._int_steps = any(isinstance(x, int) for steps, _ in self._rules for x in steps)
        self._state_ids: dict[frozenset[tuple[int, int]], int] = {}
        self._states: list[frozenset[tuple[int, int]]] = []
        self._mode: list[int] = []  # per state: _DEAD, _IGNORED or _ALIVE (what a value found there needs)
        self._alive: list[bool] = []  # per state: some rule can still match below it
        self._trans: list[dict[Any, int]] = []  # per state: step key -> next state
        # per state: the keys a rule names next (None: a `*` or `**` step, any key may lead somewhere);
        # and whether one of them is a list index
        self._lit: list[frozenset[Any] | None] = []
        self._lit_int: list[bool] = []
        # per state: when every rule alive there is an ignore rule `**.NAME` (nothing else, no keep
        # rule), the NAMEs: a key of those anywhere below is volatile and nothing else changes
        self._deep: list[frozenset[str] | None] = []
        self._sid_at: dict[tuple[Any, ...], int] = {}  # a few recent paths -> state
        self._start = self._state({(r, 0) for r in range(len(self._rules))})

    # --- automaton -------------------------------------------------------------------------------
    def _state(self, positions: set[tuple[int, int]]) -> int:
        todo = list(positions)
        closed = set(positions)
        while todo:  # `**` also matches zero steps
            r, i = todo.pop()
            steps = self._rules[r][0]
            if i < len(steps) and steps[i] is DEEP and (r, i + 1) not in closed:
                closed.add((r, i + 1))
                todo.append((r, i + 1))
        key = frozenset(closed)
        sid = self._state_ids.get(key)
        if sid is None:
            sid = self._state_ids[key] = len(self._states)
            self._states.append(key)
            accept_ignore = any(i == len(self._rules[r][0]) and not self._rules[r][1] for r, i in key)
            accept_keep = any(i == len(self._rules[r][0]) and self._rules[r][1] for r, i in key)
            alive = any(i < len(self._rules[r][0]) for r, i in key)
            self._mode.append(_IGNORED if accept_ignore and not accept_keep else _ALIVE if alive else _DEAD)
            self._alive.append(alive)
            self._trans.append({})
            nxt = [self._rules[r][0][i] for r, i in key if i < len(self._rules[r][0])]
            wild = any(x is ANY or x is DEEP for x in nxt)
            self._lit.append(None if wild else frozenset(nxt))
            self._lit_int.append(any(x.__class__ is int for x in nxt))
            self._deep.append(self._deep_names(key))
        return sid

    def _deep_names(self, positions: frozenset[tuple[int, int]]) -> frozenset[str] | None:
        names: set[str] = set()
        for r, i in positions:
            steps, is_keep = self._rules[r]
            if is_keep or len(steps) < 2 or steps[-2] is not DEEP or steps[-1].__class__ is not str:
                return None
            if i not in (len(steps) - 2, len(steps) - 1):  # (before the `**`, or past it to NAME)
                return None
            names.add(steps[-1])
        return frozenset(names) if names else None

    def _step(self, sid: int, key: Any) -> int:
        ck = key if (key.__class__ is str or self._int_steps) else _IDX
        trans = self._trans[sid]
        nxt = trans.get(ck)
        if nxt is None:
            pos: set[tuple[int, int]] = set()
            for r, i in self._states[sid]:
                steps = self._rules[r][0]
                if i >= len(steps):
                    continue
                step = steps[i]
                if step is DEEP:
                    pos.add((r, i))
                elif step is ANY or (step == key and step.__class__ is key.__class__):
                    pos.add((r, i + 1))
            nxt = trans[ck] = self._state(pos)
        return nxt

    @property
    def index_free(self) -> bool:
        """No rule names a list index: every index of a list leads to the same state."""
        return not self._int_steps

    def _ignored(self, path: tuple[Any, ...]) -> bool:
        sid = self._start
        for k in path:
            sid = self._step(sid, k)
        return bool(path) and self._mode[sid] == _IGNORED

    # --- normalizing ------------------------------------------------------------------------------
    def __call__(self, value: Any, path: tuple[Any, ...] = (), *, fingerprints: bool | None = None) -> Any:
        """`value` (found at `path`) normalized. `fingerprints=False` skips rewriting redaction
        placeholders (the caller has checked that the result holds none), which spares scanning the
        subtrees no rule reaches; the result may then be `value` itself when no rule applies."""
        sid = self._sid_at.get(path)
        if sid is None:
            sid = self._start
            for k in path:
                sid = self._step(sid, k)
            if len(self._sid_at) < 256:  # callers normalizing many values at one place ask again
                self._sid_at[path] = sid
        fps = self.redaction_fingerprints and fingerprints is not False
        if self._mode[sid] == _IGNORED and path:
            return VOLATILE
        if not self._alive[sid]:
            return self._fingerprints(value) if fps else value
        return self._walk(value, sid, fps)

    def fixed(self, path: tuple[Any, ...]) -> Callable[[Any], Any]:
        """`lambda v: self(v, path, fingerprints=False)` with the path resolved once: for callers that
        normalize many values found at one place (the diff's items of one kind)."""
        sid = self._start
        for k in path:
            sid = self._step(sid, k)
        if self._mode[sid] == _IGNORED and path:
            return lambda value: VOLATILE
        if not self._alive[sid]:
            return lambda value: value
        walk = self._walk
        return lambda value: walk(value, sid, False)

    def _walk(self, value: Any, sid: int, fps: bool) -> Any:
        # hot loop: one transition lookup and one mode lookup per field; scalars handled without a call
        # (the dict and list loops are twins on purpose: one shared per-child helper measured 5.7% more
        # instructions for a wire-level diff)
        if not fps:
            deep = self._deep[sid]
            if deep is not None:
                return _deep_walk(value, deep)
        if value.__class__ is dict:
            lit = self._lit[sid]
            if lit is not None and not fps:  # only named keys matter here: look those up
                return value if lit.isdisjoint(value) else self._walk_named(value, sid, lit)
            return self._walk_dict(value, sid, fps)
        if value.__class__ is list:
            if not fps and self._lit[sid] is not None and not self._lit_int[sid]:
                return value  # no rule goes on through a list index here
            return self._walk_list(value, sid, fps)
        return self._fingerprints(value) if fps else value

    def _walk_named(self, value: dict[Any, Any], sid: int, lit: frozenset[Any]) -> dict[Any, Any]:
        """A dict of which only the keys in `lit` can change (and at least one of them is there)."""
        mode, trans = self._mode, self._trans[sid]
        out: dict[Any, Any] = dict(value)
        for k in value.keys() & lit:
            nsid = trans.get(k)
            if nsid is None:
                nsid = self._step(sid, k)
            m = mode[nsid]
            if m == _IGNORED:
                out[k] = VOLATILE
            elif m == _ALIVE:
                v = out[k]
                if v.__class__ is dict or v.__class__ is list:
                    out[k] = self._walk(v, nsid, False)
        return out

    def _walk_dict(self, value: dict[Any, Any], sid: int, fps: bool) -> dict[Any, Any]:
        # Copy on write: a subtree nothing changes is returned as it is (most of a message, when
        # a `**` rule makes every level worth a look), so only the changed path is rebuilt.
        # The per-member block is written out here and in `_walk_list` on purpose: one helper call per
        # member made this walk 14% slower (fingerprints on; measured with the shipped Claude capture).
        mode, trans = self._mode, self._trans[sid]
        changed: dict[Any, Any] | None = None
        for k, v in value.items():
            nsid = trans.get(k)
            if nsid is None:
                nsid = self._step(sid, k)
            m = mode[nsid]
            if m == _IGNORED:
                nv = VOLATILE
            elif m == _ALIVE:
                if v.__class__ is dict or v.__class__ is list:
                    nv = self._walk(v, nsid, fps)
                elif fps and v.__class__ is str and _REDACTED in v:
                    nv = _PLACEHOLDER_FP_RE.sub(r"«redacted:\1»", v)
                else:
                    continue
            elif fps:
                nv = self._fingerprints(v)
            else:
                continue
            if nv is not v:
                if changed is None:
                    changed = dict(value)
                changed[k] = nv
        return value if changed is None else changed

    def _walk_list(self, value: list[Any], sid: int, fps: bool) -> list[Any]:
        mode = self._mode
        res: list[Any] | None = None
        same = None if self._int_steps else self._step(sid, 0)  # every index leads to one state
        for i, v in enumerate(value):
            nsid = same if same is not None else self._step(sid, i)
            m = mode[nsid]
            if m == _IGNORED:
                nv = VOLATILE
            elif m == _ALIVE:
                if v.__class__ is dict or v.__class__ is list:
                    nv = self._walk(v, nsid, fps)
                elif fps and v.__class__ is str and _REDACTED in v:
                    nv = _PLACEHOLDER_FP_RE.sub(r"«redacted:\1»", v)
                else:
                    continue
            elif fps:
                nv = self._fingerprints(v)
            else:
                continue
            if nv is not v:
                if res is None:
                    res = list(value)
                res[i] = nv
        return value if res is None else res

    def _fingerprints(self, value: Any) -> Any:
        """Redaction placeholders compare without their fingerprint (`«redacted:KIND»`)."""
        if not self.redaction_fingerprints:
            return value
        if isinstance(value, str):
            return _PLACEHOLDER_FP_RE.sub(r"«redacted:\1»", value) if _REDACTED in value else value
        if isinstance(value, (dict, list)):
            if _REDACTED not in _dumps_str(value):
                return value
            if isinstance(value, dict):
                return {k: self._fingerprints(v) for k, v in value.items()}
            return [self._fingerprints(v) for v in value]
        return value


def _deep_walk(value: Any, names: frozenset[str]) -> Any:
    """`value` with every key in `names`, at any depth, made volatile (copy on write): the walk for
    rules like `**.tool_use_id`, one set lookup per key instead of a state transition."""
    if value.__class__ is dict:
        changed: dict[Any, Any] | None = None
        for k, v in value.items():
            if k in names:
                nv = VOLATILE
            elif v.__class__ is dict or v.__class__ is list:
                nv = _deep_walk(v, names)
            else:
                continue
            if nv is not v:
                if changed is None:
                    changed = dict(value)
                changed[k] = nv
        return value if changed is None else changed
    if value.__class__ is list:
        res: list[Any] | None = None
        for i, v in enumerate(value):
            if v.__class__ is dict or v.__class__ is list:
                nv = _deep_walk(v, names)
                if nv is not v:
                    if res is None:
                        res = list(value)
                    res[i] = nv
        return value if res is None else res
    return value


def _dumps_str(value: Any) -> str:
    try:
        import orjson

        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()
    except TypeError:
        return repr(value)


def normalize(value: Any, ignore: list[str] | tuple[str, ...] = (), keep: list[str] | tuple[str, ...] = (),
              redaction_fingerprints: bool = True) -> Any:
    """`value` with ignored fields replaced by `"<volatile>"` (a new value; subtrees no rule touches
    may be shared with the input, so do not mutate the result in place)."""
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
