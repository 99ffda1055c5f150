"""Values that change from run to run by their SHAPE: ids, timestamps, ports, the client's environment.

The one home of "this looks like an id" for both replay matching and `wirecap diff` (see
docs/paths.md, "Volatile by shape"). Dialects list the fields they know to be volatile; this module
catches the rest by what a value looks like, so a capture still matches a run made at another time,
on another port, in another working directory or HOME. What is masked is a SUBSTRING: the prompt text
around an id is still compared.

Shapes (each a whole token: not preceded or followed by a letter, digit, `_` or `-`; every id shape
holds a DIGIT, a token without one is never an id):

| shape | example | becomes |
|---|---|---|
| UUID (any version, any case; inside a token too) | `5fbd64d2-c0cd-5756-9e7f-69d9cb045d7a` | `<uuid>` |
| ULID (26 Crockford base32, first char 0-7, letters and digits) | `01ARZ3NDEKTSV4RRFFQ69G5FAV` | `<ulid>` |
| long hex (16+ digits, one case, letters and digits) | `04673da466324136b527d9b57bdb14c9` | `<hex>` |
| prefixed random id | `msg_01XFDUDYJgAACzvnptvVoYEL`, `call_2799251657`, `run_25718dc81ab3…` | `msg_<id>` |
| ISO 8601 date or date-time | `2026-11-25`, `2026-11-25T06:01:03.572Z` | `<date>`, `<time>` |
| loopback address (`127.0.0.1`, `localhost`, `0.0.0.0`, `[::1]`) with a port | `127.0.0.1:49891`, `localhost:8080` | `127.0.0.1:<port>` |
| Codex's per-run tool output id | `Chunk ID: 9e2e36` | `Chunk ID: <id>` |
| a duration written in text (Claude Code's `<usage>` of a subagent, in the Agent tool's result) | `duration_ms: 432` | `duration_ms: <ms>` |
| a machine-dependent line of an environment block (one with a `Platform:` or `OS Version:` line) | `\n - OS Version: Linux 6.18`, `\nPlatform: linux` | `OS Version: <env>` |

A prefixed id is `PREFIX_TAIL` or `PREFIX-TAIL` (the prefix one to three letter-led words) whose tail
(8+ letters and digits) looks random: hex with a digit and a letter; or, after a vendor prefix
(`msg`, `toolu`, `call`, `resp`, `chatcmpl`, `fc`, `rs`, `req`, `run`, `step`, `item`, `ses`, `prt`,
`tool`, ...), digits only, of mixed case, or 16+ characters; or 16+ characters with two digits and
two letters, of mixed case or with a digit before its last four characters. So `read_file`,
`file_usage100`, `claude-opus-4-8`, `gpt-4o-2024-08-06`, `backup2024`, a path, a word, a token count
or any number outside the shapes above are never ids.

In JSON (only), also:
- a string under an id-named key (`promptId`, `client_id`, `uuid`, `runId`, ...) made of 8+ letters,
  digits and `_-.:` with at least one digit and one letter becomes `<id>` (Codebuff's base-36
  `wkyyyxk9byj`);
- an epoch number (seconds, ms, µs or ns between 2001 and 2286) under a time-named key (`timestamp`,
  `created`, `createdAt`, `sent_at`, `start`, `end`, `lastReadTime`, ...; a time word may be the last
  segment of a `_`/`-` separated key and be followed by an epoch and a unit: `turn_started_at_unix_ms`,
  `x-codex-ws-stream-request-start-ms`, `startMs`) becomes `"<time>"`; so does such an epoch written as
  a string (`"...-start-ms": "1795611759254"` -> `"<time>"`).

In text (and so inside JSON held in a JSON string, a header's JSON value), a `KEY: VALUE` / `KEY=VALUE` /
`"KEY":VALUE` pair whose key is id-named and value random (as above) gives `<id>`; whose key is
time-named and value a whole epoch number gives `<time>`.

The environment: a path that is the client's working directory, HOME or temporary directory becomes
`<cwd>`, `<home>`, `<tmp>` wherever it appears, also as a Claude/CodeBuddy project slug
(`-tmp-work-main`). Which paths those are is learned per side from the traffic itself (`Working
directory: X`, `<cwd>X</cwd>`, `X/.claude/...`, opencode's "Use `X` for temporary work") and from the
capture (the process's recorded `cwd`), see `EnvMask`.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from wirecap.dialects.base import TELEMETRY_PATHS

# Vendor prefixes of random ids (Anthropic, OpenAI, Codex, opencode, Codebuff, CodeBuddy...).
KNOWN_PREFIXES = frozenset((
    "msg", "toolu", "srvtoolu", "call", "resp", "chatcmpl", "fc", "fco", "rs", "req", "run", "step", "item",
    "ctc", "file", "batch", "sess", "session", "thread", "asst", "evt", "conv", "tool", "ses", "prt", "cmpl",
    "ws", "turn", "trace", "span", "user", "input", "ci", "mc",
))

# Each shape has its own regular expression, built so that the regex engine can skip ahead to the few
# places where it may start (a literal or a rare first character), and the rarer shapes only run when
# a plain substring test says they may match: ordinary text costs a few C-level scans, not an attempt
# of every rule at every position. Tokens (letters, digits, `_`, `-`) are found from their first
# digit: A TOKEN WITHOUT A DIGIT IS NEVER AN ID (a scan for digit-less ones doubled the cost).
_TOKCH = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
# (a token's first digit: 8+ token characters from there, or after letters / `_` / `-`; so the engine
# skips numbers shorter than 8 digits, which are most digits in JSON, without a Python-level step)
_DIGIT_RUN = r"[0-9](?:[A-Za-z0-9_\-]{7,}|(?<=[A-Za-z_\-][0-9])[A-Za-z0-9_\-]*)"
_DATE = (r"(?:19|20)[0-9]{2}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
         r"(?P<time>[T ](?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:[.,][0-9]{1,9})?)?"
         r"(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?(?![0-9])")
# (these begin with their literal text, so the regex engine can skip to it; what must precede them is
# checked in the callback, as a look-behind first would make the engine try every position)
_HOST = r"(?P<host>127\.0\.0\.1|localhost|0\.0\.0\.0|\[::1\]):[0-9]{2,5}(?![0-9])"
_CHUNK = r"Chunk ID: [0-9a-f]{4,16}(?![0-9A-Za-z])"
# (text: in canonical JSON a key has no space after its colon; gated by its literal, so the look-behind is cheap)
_DURATION = r"(?:(?<![A-Za-z0-9_\-])|(?<=\\[nrt]))duration_ms: [0-9]+(?![0-9A-Za-z_.\-])"  # (JSON: after `\n`)
_ENVK = (r"(?P<envk>Is a git repository|Is directory a git repo|Platform|Shell|OS Version|Current branch|Main branch): "
         r"[^\n\\\"]+")  # (never past the end quote of a JSON string)
_HOST_GATE = ("127.0.0.1:", "localhost:", "0.0.0.0:", "[::1]:")
# one search for every rarer shape (3x faster than a substring test each); its literals begin with
# characters that are rare in JSON (not digits), so the regex engine skips most positions
_RARE = ("host:", ".0.0.1:", ".0.0.0:", "[::1]:", "Chunk ID: ", "Platform: ", "OS Version: ", "duration_ms: ")
# (a gate for `EnvMask.learn_json`: every fragment it learns from holds one of these; they begin with
# characters that are not frequent in JSON, so the regex engine skips most positions)
_ENV_HINTS = ("y: /", "y:/", "<cwd>", 'wd":"', 'wd": "', "/.c", "/.l", "porary work")
_UUID = r"(?<![A-Za-z0-9])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![A-Za-z0-9])"
_PREFIXED = re.compile(r"(?P<pre>(?:[A-Za-z][A-Za-z0-9]{0,15}[_\-]){1,3})(?P<tail>[A-Za-z0-9]{8,})")
_UUID_S = re.compile(_UUID)
_ULID = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}|[0-7][0-9a-hjkmnp-tv-z]{25}")
_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")
_ALNUM = re.compile(r"[A-Za-z0-9]+")
_DIGIT = re.compile(r"[0-9]")
_ALPHA = re.compile(r"[A-Za-z]")


# Text (a log line, util.inspect or repr output): `KEY: 'TOKEN'`, `KEY: "TOKEN"`, `KEY=TOKEN`, `"KEY": "TOKEN"`.
_TEXT_KV = re.compile(r"([A-Za-z0-9_\-]+)['\"]?[ ]?[:=][ ]?['\"]?\Z")
_TEXT_KV_END = frozenset(("'", '"', "=", ":", " "))
_TEXT_VALUE_END = frozenset(("'", '"', ",", " ", "}", ")", "\n", ""))


def _mask_token(tok: str) -> str:
    """One token (letters, digits, `_`, `-`; 8+ long, with a digit or a UUID/prefix look) masked."""
    if "-" in tok and _UUID_S.search(tok):
        return _UUID_S.sub("<uuid>", tok)
    m = _PREFIXED.fullmatch(tok)
    if m is not None:
        pre = m.group("pre")
        last = pre[:-1].rsplit("_", 1)[-1].rsplit("-", 1)[-1].lower()
        return pre + "<id>" if _random_tail(last, m.group("tail")) else tok
    if len(tok) >= 16 and _ALNUM.fullmatch(tok):
        return _bare_kind(tok) or tok
    return tok


class _Shapes:
    """The shape rules compiled for `str` (text) or `bytes` (canonical JSON)."""

    def __init__(self, enc: bool) -> None:
        def c(p: str) -> re.Pattern[Any]:
            return re.compile(p.encode() if enc else p)

        def lit(x: str) -> Any:
            return x.encode() if enc else x

        self.digit_run, self.date = c(_DIGIT_RUN), c(_DATE)
        self.host, self.chunk, self.envk, self.duration = c(_HOST), c(_CHUNK), c(_ENVK), c(_DURATION)
        self.tokch = frozenset(_TOKCH.encode()) if enc else frozenset(_TOKCH)
        self.escapes = frozenset(b"nrtbf") if enc else frozenset()  # JSON escapes: `\n` before a token
        self.backslash = ord("\\") if enc else None
        self.years = (b"19", b"20") if enc else ("19", "20")
        self.key_end = lit('":')
        self.rare = c("|".join(re.escape(g) for g in _RARE))
        self.host_gate = tuple(lit(g) for g in _HOST_GATE)
        self.env_gate = (lit("Platform: "), lit("OS Version: "))
        self.chunk_gate, self.duration_gate = lit("Chunk ID: "), lit("duration_ms: ")
        self.ph = {k: lit(k) for k in ("<time>", "<date>", ":<port>", "Chunk ID: <id>", ": <env>", "duration_ms: <ms>")}
        self.empty = lit("")
        self.dot = lit(".")
        self.number_before = frozenset((b":", b",", b"[", b".", b"+", b"-"))
        self.number_inside = frozenset((b".", b"+", b"-"))
        # what may precede an environment line: a line start (also a JSON `\n`), a ` - ` bullet, an indent
        self.line_starts = frozenset(lit(x) for x in ('"', "\n", "\\n", "\n - ", "\\n - ", "\n  ", "\\n  "))
        self.kv_end = frozenset(lit(x) for x in _TEXT_KV_END)
        self.enc = enc
        self.cache: dict[Any, Any] = {}  # token -> masked token (tokens repeat: ids, model names)

    def _token(self, tok: Any) -> Any:
        out = self.cache.get(tok)
        if out is None:
            out = _mask_token(tok.decode("ascii") if self.enc else tok)
            out = out.encode() if self.enc else out
            if len(self.cache) < 4096:
                self.cache[tok] = out
        return out

    def _start(self, s: Any, i: int) -> int:
        """Where the token holding position i starts (after a JSON escape such as `\n`)."""
        tokch = self.tokch
        st = i
        while st > 0 and s[st - 1] in tokch:
            st -= 1
        if self.enc and st > 0 and s[st - 1] == self.backslash and s[st] in self.escapes and st < i:
            st += 1
        return st

    def _tokens(self, s: Any) -> Any:
        """Id-shaped tokens and ISO dates/times, found from each token's first digit."""
        pieces: list[Any] = []
        last = 0
        for m in self.digit_run.finditer(s):
            i, end = m.start(), m.end()
            if i < last:
                continue
            st = self._start(s, i)
            if st == i and s[i: i + 2] in self.years:  # (a token can only start with a date)
                d = self.date.match(s, i)
                if d is not None:
                    pieces += (s[last:i], self.ph["<time>"] if d.group("time") else self.ph["<date>"])
                    last = d.end()
                    continue
            if end - st < 8 or s[end: end + 2] == self.key_end:  # (a JSON key: masked keys could collide)
                continue
            rep, end = self._masked(s, st, end)
            if rep is not None:
                pieces += (s[last:st], rep)
                last = end
        if last == 0:
            return s
        pieces.append(s[last:])
        return self.empty.join(pieces)

    def _masked(self, s: Any, st: int, end: int) -> tuple[Any, int]:
        """(what replaces the token s[st:end], or None to keep it; where the replaced span ends)."""
        tok = s[st:end]
        if self.enc and s[st - 1: st] in self.number_before and _NUMBER_PART.fullmatch(tok) \
                and (s[st - 1: st] in self.number_inside or b"e" in tok or b"E" in tok):
            return None, end  # (part of a JSON number, `1.0000000000000002e+16`: never a string's token)
        rep = self._token(tok)
        if rep == tok and self.enc and (s[st - 2: st] == b'":' or s[st - 3: st] == b'":"'):
            rep, end = _json_value(s, st, end, tok)  # (JSON: an epoch under a time-named key, ...)
        elif rep == tok and st > 2 and s[st - 1: st] in self.kv_end:
            rep = _text_value(s, st, end, tok)  # (a log's `client_id: 'x7…'`, `runId=x7…`)
        return (None if rep == tok else rep), end

    def _host(self, m: re.Match[Any]) -> Any:
        i = m.start()
        prev = m.string[i - 1: i]
        if prev and (prev.isalnum() or prev in self.dot) and prev.isascii():  # (not `x127.0.0.1`, `a.localhost`)
            return m.group(0)
        return m.group("host") + self.ph[":<port>"]

    def _envk(self, m: re.Match[Any]) -> Any:
        s, i = m.string, m.start()
        if i == 0 or any(s[max(0, i - k): i] in self.line_starts for k in (1, 2, 3, 4, 5)):
            return m.group("envk") + self.ph[": <env>"]
        return m.group(0)

    def mask(self, s: Any, rare: bool | None = None) -> Any:
        """`s` masked; `rare=False` says a search for `_RARE` found nothing (skip those shapes)."""
        if rare is None:
            rare = self.rare.search(s) is not None
        if rare:
            if any(g in s for g in self.host_gate):
                s = self.host.sub(self._host, s)
            if self.chunk_gate in s:
                s = self.chunk.sub(self.ph["Chunk ID: <id>"], s)
            if self.duration_gate in s:
                s = self.duration.sub(self.ph["duration_ms: <ms>"], s)
            if any(g in s for g in self.env_gate):
                s = self.envk.sub(self._envk, s)
        return self._tokens(s)


# Analytics endpoints (PostHog's, as the Codebuff SDK 0.10 sends them): the client flushes its events
# on a timer, so two events share one request in one run and travel in two in the next. Replay answers
# them whatever they hold; diff leaves them out.
# a log line naming an analytics request's URL (a fetch shim's `POST https://host/batch/ -> ...`)
TELEMETRY_URL = re.compile(rb"https?://[^\s\"/]+(?:/(?:" + b"|".join(re.escape(p[1:].encode()) for p in sorted(TELEMETRY_PATHS))
                           + rb"))/?(?=[\s\"?]|$)")


_TEXT = _Shapes(False)
_JSONB = _Shapes(True)

# JSON only: the key of a whole-value token, checked by `_json_value`
_ID_KEY = re.compile(rb"[A-Za-z0-9_]*(?:[a-z0-9]Id|[a-z0-9]ID|_id|_ID|uuid|Uuid|UUID)")
# a time-named key: `timestamp`, `...Time`, `..._at`, `...At`, `...Date`, or a time word (`start`, `created`,
# ...) alone or as the last segment of a `_`/`-` separated key (`x-codex-ws-stream-request-start`); either
# may end with an epoch and a unit (`turn_started_at_unix_ms`, `...-start-ms`, `startMs`, `sent_at_s`)
_TIME_KEY = re.compile(rb"(?:[A-Za-z0-9_\-]*(?:[Tt]imestamp|[Tt]ime|_at|[a-z]At|[Dd]ate)|(?:[A-Za-z0-9_\-]*[_\-])?"
                       rb"(?:created|updated|started|ended|completed|start|end|ts|sentAt|sent_at))"
                       rb"(?:[_\-](?:unix|epoch)|Unix|Epoch)?"
                       rb"(?:[_\-](?:ms|us|ns|s|sec|secs|seconds|millis)|Ms|Us|Ns|Sec|Secs|Seconds|Millis)?")



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


def _json_value(s: bytes, st: int, end: int, tok: bytes) -> tuple[bytes, int]:
    """A token that is a whole JSON value (`"key":TOKEN` or `"key":"TOKEN"`): an epoch number under a
    time-named key becomes `"<time>"`, a random string under an id-named key `<id>`; else itself.
    Returns (replacement, end of what it replaces)."""
    quoted = s[st - 1] == 0x22
    k0 = st - (3 if quoted else 2)
    key = s[s.rfind(b'"', 0, k0) + 1: k0]
    nested = key.endswith(b"\\")  # (JSON inside a JSON string: `\"key\":123`, a header's value)
    if nested:
        key = key[:-1]
    if quoted:
        whole = s[end: end + 1] == b'"'  # (the token is the whole string)
        if whole and tok.isdigit() and _epoch(tok) and _TIME_KEY.fullmatch(key):
            return b"<time>", end  # (an epoch as a string: `"...-start-ms":"1795611759254"`)
        last = _SEGMENTS.split(tok)[-1]
        if whole and len(last) >= 8 and _ALPHA_B.search(last) and _DIGIT_B.search(last) and _ID_KEY.fullmatch(key):
            return b"<id>", end
        return tok, end
    m = _NUMBER_REST.match(s, end)  # (the digits were the token; a fraction may follow)
    stop = m.end() if m else end
    if not tok.isdigit() or s[stop: stop + 1] not in (b",", b"}", b"]", b""):
        return tok, end
    if nested:  # (inside a string, as text masking sees it: `_text_value`)
        return _text_value(s, st, end, tok), end
    if _epoch(s[st:stop]) and _TIME_KEY.fullmatch(key):
        return b'"<time>"', stop
    return tok, end


def _epoch(number: bytes) -> bool:
    """Whether a JSON number is an epoch time (see `_EPOCHS`)."""
    v = float(number)
    return any(lo <= v < hi for lo, hi in _EPOCHS)




_TEXT_KV_B = re.compile(rb"([A-Za-z0-9_\-]+)(?:\\?['\"])?[ ]?[:=][ ]?(?:\\?['\"])?\Z")  # (in JSON: `\"`)
_TEXT_VALUE_END_B = frozenset(x.encode() for x in _TEXT_VALUE_END) | {b"\\"}


def _text_value(s: Any, st: int, end: int, tok: Any) -> Any:
    """A token that is the value of an id-named key written in text (`client_id: '0uaukw5ylmh'`), also
    inside a JSON string: `<id>` when it is random-looking by the same rule as a JSON value (8+ letters
    and digits, both), else itself."""
    enc = isinstance(s, bytes)
    if s[end: end + 1] not in (_TEXT_VALUE_END_B if enc else _TEXT_VALUE_END):
        return tok
    tb = tok if enc else tok.encode()
    epoch = tb.isdigit() and _epoch(tb)
    last = _SEGMENTS.split(tb)[-1]
    if not epoch and (len(last) < 8 or _ALPHA_B.search(last) is None or _DIGIT_B.search(last) is None):
        return tok
    m = (_TEXT_KV_B if enc else _TEXT_KV).search(s, max(0, st - 48), st)
    if m is None:
        return tok
    key = m.group(1)
    key = key if isinstance(key, bytes) else key.encode()
    if epoch:
        return (b"<time>" if enc else "<time>") if _TIME_KEY.fullmatch(key) else tok
    if not _ID_KEY.fullmatch(key.rsplit(b"-", 1)[-1]):  # (an id-named key's last dashed segment)
        return tok
    return b"<id>" if enc else "<id>"


_NUMBER_REST = re.compile(rb"\.[0-9]+")
_NUMBER_PART = re.compile(rb"[0-9]+(?:[eE][0-9]*)?")
_SEGMENTS = re.compile(rb"[_\-]")


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
    return _TEXT.mask(s)


_MAYBE = re.compile(r"[0-9_\-:]")  # every shape holds a digit, a dash or underscore (a UUID of letters), or a colon


def mask_json(b: bytes, env: EnvMask | None = None) -> bytes:
    """Canonical JSON bytes (orjson, no spaces) with every id-shaped substring masked, id-named keys'
    random values and time-named keys' epoch numbers replaced (see the module docstring); with `env`,
    that side's environment is learned from `b` and its paths masked too."""
    if len(b) < 8:
        return b
    rare = _JSONB.rare.search(b) is not None
    if env is not None and (b"/" in b or rare):  # (every environment fragment holds a path)
        env.learn_json(b)
    out = _JSONB.mask(b, rare)
    return out if env is None else env.apply_json(out)


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
    masked = mask_json(raw, env)
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
_ENV_HINT = re.compile("|".join(re.escape(h) for h in (*_ENV_HINTS, "Chunk ID: ")).encode())


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
        self._any_b: re.Pattern[bytes] | None = None

    def add(self, what: str, path: str) -> None:
        if what == "id":  # a token learned as an id: masked wherever it recurs on this side
            if len(path) >= 6 and path not in self.paths:
                self.paths[path] = "<id>"
                self._re_s = self._re_b = None
            return
        path = path.rstrip("/")
        if len(path) < 4 or not path.startswith("/") or path.startswith("//") or path in self.paths or "<" in path:
            return
        self.paths[path] = f"<{what}>"
        self._re_s = self._re_b = None

    def learn_json(self, b: bytes) -> None:
        if _ENV_HINT.search(b) is None:
            return
        for rx, what in _ENV_LEARN:
            for m in rx.finditer(b):
                self.add(what, m.group(1).decode("utf-8", "replace"))

    def learn(self, text: str) -> None:
        self.learn_json(text.encode("utf-8", "surrogatepass"))

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
        pat = r"(?:" + alts + r")(?![A-Za-z0-9_\-]|\.[A-Za-z0-9])"  # (the left side: `_sub_*`)
        self._re_s = re.compile(pat)
        self._re_b = re.compile(pat.encode())
        self._any_b = re.compile("|".join(re.escape(k) for k in subs).encode())

    def apply_text(self, s: str) -> str:
        if not self.paths:
            return s
        if self._re_s is None:
            self._compile()
        assert self._re_s is not None
        return self._re_s.sub(self._sub_s, s)

    def apply_json(self, b: bytes) -> bytes:
        if not self.paths:
            return b
        if self._re_b is None:
            self._compile()
        assert self._re_b is not None
        assert self._any_b is not None
        if self._any_b.search(b) is None:  # (the usual answer, from a search for the plain paths)
            return b
        return self._re_b.sub(self._sub_b, b)

    def _sub_s(self, m: re.Match[str]) -> str:
        prev = m.string[m.start() - 1: m.start()]
        if prev and prev.isascii() and (prev.isalnum() or prev in "_."):  # (a whole path: not `/x/tmp/a`)
            return m.group(0)
        return self._subs[m.group(0)]

    def _sub_b(self, m: re.Match[bytes]) -> bytes:
        prev = m.string[m.start() - 1: m.start()]
        if prev and (prev.isalnum() or prev in b"_."):
            return m.group(0)
        return self._subs[m.group(0).decode()].encode()
