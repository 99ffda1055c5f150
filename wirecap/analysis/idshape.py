"""Values that change from run to run by their SHAPE: ids, timestamps, ports, the client's environment.

The one home of "this looks like an id" for both replay matching and `wirecap diff` (see
docs/paths.md, "Volatile by shape"). Dialects list the fields they know to be volatile; this module
catches the rest by what a value looks like, so a capture still matches a run made at another time,
on another port, in another working directory or HOME. What is masked is a SUBSTRING: the prompt text
around an id is still compared.

Shapes (each a whole token: not preceded or followed by a letter or digit):

| shape | example | becomes |
|---|---|---|
| UUID (any version, any case) | `5fbd64d2-c0cd-5756-9e7f-69d9cb045d7a` | `<uuid>` |
| ULID (26 Crockford base32, first char 0-7, letters and digits) | `01ARZ3NDEKTSV4RRFFQ69G5FAV` | `<ulid>` |
| long hex (16+ digits, one case, letters and digits) | `04673da466324136b527d9b57bdb14c9` | `<hex>` |
| prefixed random id | `msg_01XFDUDYJgAACzvnptvVoYEL`, `call_2799251657`, `run_25718dc81ab3…` | `msg_<id>` |
| ISO 8601 date or date-time | `2026-11-25`, `2026-11-25T06:01:03.572Z` | `<date>`, `<time>` |
| loopback address with a port | `127.0.0.1:49891`, `localhost:8080` | `127.0.0.1:<port>` |
| Codex's per-run tool output id | `Chunk ID: 9e2e36` | `Chunk ID: <id>` |
| a machine-dependent line of an environment block | `\n - OS Version: Linux 6.18`, `\nPlatform: linux` | `OS Version: <env>` |

A prefixed id is `PREFIX_TAIL` or `PREFIX-TAIL` (the prefix one to three letter-led words) whose tail
(8+ letters and digits) looks random: hex with a digit and a letter; or, after a vendor prefix
(`msg`, `toolu`, `call`, `resp`, `chatcmpl`, `fc`, `rs`, `req`, `run`, `step`, `item`, `ses`, `prt`,
`tool`, ...), digits only, mixed case, or 16+ characters with a digit; or 16+ characters with two
digits and two letters, mixed case or with a digit before its last four characters. So `read_file`, `claude-opus-4-8`, `gpt-4o-2024-08-06`, `backup2024`, a path, a word, a
token count or any number outside the shapes above are never ids.

In JSON (only), also:
- a string under an id-named key (`promptId`, `client_id`, `uuid`, `runId`, ...) made of 8+ letters,
  digits and `_-.:` with at least one digit and one letter becomes `<id>` (Codebuff's base-36
  `wkyyyxk9byj`);
- an epoch number (seconds, ms, µs or ns between 2001 and 2286) under a time-named key (`timestamp`,
  `created`, `createdAt`, `sent_at`, `start`, `end`, `lastReadTime`, ...) becomes `"<time>"`.

The environment: a path that is the client's working directory, HOME or temporary directory becomes
`<cwd>`, `<home>`, `<tmp>` wherever it appears, also as a Claude/CodeBuddy project slug
(`-tmp-work-main`). Which paths those are is learned per side from the traffic itself (`Working
directory: X`, `<cwd>X</cwd>`, `X/.claude/...`, opencode's "Use `X` for temporary work") and from the
capture (the process's recorded `cwd`), see `EnvMask`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

# Vendor prefixes of random ids (Anthropic, OpenAI, Codex, opencode, Codebuff, CodeBuddy...).
KNOWN_PREFIXES = frozenset((
    "msg", "toolu", "srvtoolu", "call", "resp", "chatcmpl", "fc", "fco", "rs", "req", "run", "step", "item",
    "ctc", "file", "batch", "sess", "session", "thread", "asst", "evt", "conv", "tool", "ses", "prt", "cmpl",
    "ws", "turn", "trace", "span", "user", "input", "ci", "mc",
))

_B = r"(?:(?<![A-Za-z0-9\\])|(?<=\\[nrtbf]))"  # token start (also right after a JSON escape such as \n)
_E = r"(?![A-Za-z0-9])"  # token end
_NOKEY = r'(?!":)'  # not the end of a JSON object key (a masked key could collide with its neighbour)
_PATTERN = (
    # 1: an ISO date with an optional time (digits only: cheap to rule out)
    r"(?:(?<![0-9A-Za-z_\-])|(?<=\\[nrtbf]))(?P<date>(?:19|20)[0-9]{2}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
    r"(?P<time>[T ](?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:[.,][0-9]{1,9})?)?"
    r"(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?)(?![0-9])"
    # 2: UUID
    r"|" + _B + r"(?P<uuid>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})" + _E
    # 3: prefixed id (checked by `_prefixed`)
    + r"|(?:(?<![A-Za-z0-9_\-\\])|(?<=\\[nrtbf]))(?P<pre>(?:[A-Za-z][A-Za-z0-9]{0,15}[_\-]){1,3})(?P<tail>[A-Za-z0-9]{8,})"
    r"(?![A-Za-z0-9_\-])" + _NOKEY
    # 4: ULID or long hex (checked by `_bare`)
    + r"|" + _B + r"(?P<bare>[0-9A-Za-z]{16,})" + _E + _NOKEY
    # 5: a loopback address with a port
    + r"|(?P<host>(?<![0-9A-Za-z.])(?:127\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}|localhost|0\.0\.0\.0|\[::1\])):"
    r"[0-9]{2,5}(?![0-9])"
    # 6: Codex's random chunk id in tool output
    r"|(?P<chunk>Chunk ID: )[0-9a-f]{4,16}(?![0-9A-Za-z])"
    # 7: the machine-dependent lines of an agent's environment block (Claude Code, CodeBuddy, opencode)
    r"|(?P<envk>(?:^|(?<=\")|(?<=\n)|(?<=\\n)|(?<=\n - )|(?<=\\n - )|(?<=\n  )|(?<=\\n  ))"
    r"(?:Is a git repository|Is directory a git repo|Platform|Shell|OS Version|Current branch|Main branch)): "
    r"[^\n\\\"]+"  # (never past the end quote of a JSON string)
)
_RE_S = re.compile(_PATTERN)
_RE_B = re.compile(_PATTERN.encode())
_ULID = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}|[0-7][0-9a-hjkmnp-tv-z]{25}")
_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")
_DIGIT = re.compile(r"[0-9]")
_ALPHA = re.compile(r"[A-Za-z]")

# JSON only: a key naming an id / a time, and what its value looks like
_ID_KEY = (r'"(?P<ikey>[A-Za-z0-9_]*(?:[a-z0-9]Id|[a-z0-9]ID|_id|_ID|uuid|Uuid|UUID))":'
           r'"(?P<ival>(?:[A-Za-z0-9]{1,24}[_.:\-]){0,4}(?P<ilast>[A-Za-z0-9]{8,64}))"')
_TIME_KEY = (r'"(?P<tkey>(?:[A-Za-z0-9_]*(?:[Tt]imestamp|[Tt]ime|_at|[a-z]At|[Dd]ate))|created|updated|started|ended|'
             r'completed|start|end|ts|sentAt|sent_at)":(?P<tval>[0-9]{10,19}(?:\.[0-9]+)?)(?=[,}\]])')
_JSON_RE = re.compile((_ID_KEY + "|" + _TIME_KEY).encode())

PLACEHOLDERS = ("<uuid>", "<ulid>", "<hex>", "<id>", "<date>", "<time>", "<port>", "<env>", "<cwd>", "<home>", "<tmp>")


def _random_tail(prefix: str, tail: str) -> bool:
    """Whether the tail of `PREFIX_TAIL` looks random (see the module docstring)."""
    has_digit = _DIGIT.search(tail) is not None
    if _HEX.fullmatch(tail):  # (all digits is hex too)
        return has_digit and (_ALPHA.search(tail) is not None or prefix in KNOWN_PREFIXES)
    mixed = not tail.islower() and not tail.isupper() and not tail[1:].islower()
    if prefix in KNOWN_PREFIXES and (mixed or has_digit and len(tail) >= 16):
        return True
    return len(tail) >= 16 and len(_DIGIT.findall(tail)) >= 2 and len(_ALPHA.findall(tail)) >= 2 and (
        mixed or _DIGIT.search(tail, 0, len(tail) - 4) is not None)


def _bare_kind(tok: str) -> str | None:
    """`ulid`, `hex` or None for a 16+ character letters-and-digits token."""
    if len(tok) == 26 and _ULID.fullmatch(tok) and _ALPHA.search(tok):
        return "<ulid>"
    if _HEX.fullmatch(tok) and _ALPHA.search(tok) and _DIGIT.search(tok):
        return "<hex>"
    return None


def _decide(g: str | None, m: re.Match[Any], dec: Callable[[Any], str]) -> str | None:
    """The placeholder for match `m` (of group `g`), or None to keep it; `dec` turns a group into str."""
    if g == "date" or g == "time":
        return "<time>" if m.group("time") else "<date>"
    if g == "uuid":
        return "<uuid>"
    if g == "tail":
        pre = dec(m.group("pre"))
        last = pre[:-1].rsplit("_", 1)[-1].rsplit("-", 1)[-1].lower()
        return pre + "<id>" if _random_tail(last, dec(m.group("tail"))) else None
    if g == "bare":
        return _bare_kind(dec(m.group("bare")))
    if g == "host":
        return dec(m.group("host")) + ":<port>"
    if g == "chunk":
        return "Chunk ID: <id>"
    if g == "envk":
        return dec(m.group("envk")) + ": <env>"
    return None


def _same(x: str) -> str:
    return x


def _ascii(x: bytes) -> str:
    return x.decode("ascii")


def _repl_s(m: re.Match[str]) -> str:
    r = _decide(m.lastgroup, m, _same)
    return m.group(0) if r is None else r


def _repl_b(m: re.Match[bytes]) -> bytes:
    r = _decide(m.lastgroup, m, _ascii)  # (every group that is read is ASCII by its pattern)
    return m.group(0) if r is None else r.encode()


def _repl_json(m: re.Match[bytes]) -> bytes:
    if m.lastgroup == "ival":
        v = m.group("ilast")
        if not (_DIGIT_B.search(v) and _ALPHA_B.search(v)):
            return m.group(0)
        return b'"' + m.group("ikey") + b'":"<id>"'
    v = float(m.group("tval"))
    if any(lo <= v < hi for lo, hi in _EPOCHS):
        return b'"' + m.group("tkey") + b'":"<time>"'
    return m.group(0)


_DIGIT_B = re.compile(rb"[0-9]")
_ALPHA_B = re.compile(rb"[A-Za-z]")
# seconds, ms, µs, ns between 2001-09-09 and 2286-11-20
_EPOCHS = ((1e9, 1e10), (1e12, 1e13), (1e15, 1e16), (1e18, 1e19))


def mask_text(s: str) -> str:
    """`s` with id-, time- and port-shaped substrings replaced by placeholders (the text around them kept).
    Cheap when there is nothing to mask: strings shorter than 8 characters or without a digit, dash,
    underscore or colon are returned as they are, before any regular expression runs."""
    if len(s) < 8 or _MAYBE.search(s) is None:
        return s
    return _RE_S.sub(_repl_s, s)


_MAYBE = re.compile(r"[0-9_\-:]")  # every shape holds a digit, a dash or underscore (a UUID of letters), or a colon


def mask_json(b: bytes) -> bytes:
    """Canonical JSON bytes (orjson, no spaces) with every id-shaped substring masked, id-named keys'
    random values and time-named keys' epoch numbers replaced (see the module docstring)."""
    if len(b) < 8:
        return b
    out = _RE_B.sub(_repl_b, b)
    if b'Id":"' in out or b'_id":"' in out or b'ID":"' in out or b'uuid":"' in out or b'":1' in out:
        out = _JSON_RE.sub(_repl_json, out)
    return out


def mask_value(value: Any, env: EnvMask | None = None) -> Any:
    """A JSON value (dict, list, string...) with shapes masked, and the environment when `env` is given.
    The value itself is returned when nothing changed."""
    if value.__class__ is str:
        out = mask_text(value)
        return env.apply_text(out) if env is not None else out
    if value.__class__ is not dict and value.__class__ is not list:
        return value
    try:
        raw = orjson.dumps(value)
    except TypeError:
        return value
    masked = mask_json(raw)
    if env is not None:
        masked = env.apply_json(masked)
    return value if masked == raw else orjson.loads(masked)


# --- the client's environment ------------------------------------------------------------------------------
_PATH = r"(/[^\s\"'`<>()\[\]{}:,;|*?\\]*[^\s\"'`<>()\[\]{}:,;|*?\\./])"
_ENV_LEARN = tuple((re.compile(rx.encode()), what) for rx, what in (
    # (fragment, what its path is) over JSON bytes or text; group 1 is the path
    (r"(?:Primary working directory|Working directory|Current working directory): ?" + _PATH, "cwd"),
    (r"<cwd>" + _PATH + r"</cwd>", "cwd"),
    (r"\"cwd\": ?\"" + _PATH + r"\"", "cwd"),
    (_PATH + r"/\.(?:claude|codebuddy|codex|codebuff|config|local/share|cache)/", "home"),
    (r"Use `" + _PATH + r"` for temporary work", "tmp"),
    (r"Chunk ID: ([0-9a-f]{4,16})(?![0-9A-Za-z])", "id"),  # (the chunk id recurs alone in streamed deltas)
))
_ENV_HINTS = (b"directory", b"<cwd>", b'"cwd"', b"/.c", b"/.local/", b"temporary work", b"Chunk ID: ")


class EnvMask:
    """The environment of ONE side (a capture, or the live client): paths learned from its traffic,
    replaced by `<cwd>`, `<home>`, `<tmp>` in that side's values.

    `learn_json(b)` / `learn(text)` look for the known fragments; `add(what, path)` adds one directly
    (e.g. the recorded process's cwd). A path is only used when it is absolute and at least 4
    characters long, and it is replaced only as a whole path (not `/rootfs` for `/root`). The project
    slug of a cwd (`/tmp/w_x` -> `tmp-w-x`, as in Claude Code's and CodeBuddy's per-project folder
    names) is masked too."""

    def __init__(self) -> None:
        self.paths: dict[str, str] = {}  # path -> placeholder
        self._re_s: re.Pattern[str] | None = None
        self._re_b: re.Pattern[bytes] | None = None
        self._subs: dict[str, str] = {}

    def add(self, what: str, path: str) -> None:
        if what == "id":  # a token learned as an id: masked wherever it recurs on this side
            if len(path) >= 6 and path not in self.paths:
                self.paths[path] = "<id>"
                self._re_s = self._re_b = None
            return
        path = path.rstrip("/")
        if len(path) < 4 or not path.startswith("/") or path in self.paths or "<" in path:
            return
        self.paths[path] = f"<{what}>"
        self._re_s = self._re_b = None

    def learn_json(self, b: bytes) -> None:
        if not any(h in b for h in _ENV_HINTS):
            return
        for rx, what in _ENV_LEARN:
            for m in rx.finditer(b):
                self.add(what, m.group(1).decode("utf-8", "replace"))

    def learn(self, text: str) -> None:
        self.learn_json(text.encode("utf-8", "surrogatepass"))

    def learn_value(self, value: Any) -> None:
        try:
            self.learn_json(orjson.dumps(value))
        except TypeError:
            pass

    def _compile(self) -> None:
        subs: dict[str, str] = {}
        for path, ph in self.paths.items():
            subs[path] = ph
            if ph == "<cwd>":  # Claude Code's and CodeBuddy's per-project folder names
                for slug in (re.sub(r"[^A-Za-z0-9]", "-", path), re.sub(r"[/.]", "-", path), path.replace("/", "-")):
                    slug = slug.lstrip("-")
                    if len(slug) >= 4:
                        subs.setdefault(slug, ph)
        self._subs = subs
        alts = "|".join(re.escape(p) for p in sorted(subs, key=len, reverse=True))
        pat = r"(?<![A-Za-z0-9_.])(?:" + alts + r")(?![A-Za-z0-9_\-]|\.[A-Za-z0-9])"
        self._re_s = re.compile(pat)
        self._re_b = re.compile(pat.encode())

    def apply_text(self, s: str) -> str:
        if not self.paths:
            return s
        if self._re_s is None:
            self._compile()
        assert self._re_s is not None
        return self._re_s.sub(lambda m: self._subs[m.group(0)], s)

    def apply_json(self, b: bytes) -> bytes:
        if not self.paths:
            return b
        if self._re_b is None:
            self._compile()
        assert self._re_b is not None
        return self._re_b.sub(lambda m: self._subs[m.group(0).decode()].encode(), b)
