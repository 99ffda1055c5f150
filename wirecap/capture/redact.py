"""Redaction at write time: secrets are replaced before any byte reaches the disk.

A placeholder keeps the kind of secret and a short fingerprint (`«redacted:KIND:FP»`) so the same
secret reads the same everywhere and two captures can still be compared without the secret.

What callers may rely on:

- **Whole tokens only.** A secret shape matches only a whole token: a maximal run of token
  characters (`A-Z a-z 0-9 _ -`) with no word character or `-` on either side. `disk-usage-report`,
  `src/task-queue-worker.ts` and a UUID holding `cb-` are never touched. Each shape also asks for a
  realistic length and alphabet (`SHAPES`), so ordinary words and identifiers cannot match. In binary
  payloads (their latin-1 view) a token may also follow a length or tag byte.
- **Escapes are seen through.** Strings are also searched in their JSON-unescaped views
  (`sk\\u002dant-…`, a key after `\\n`), and what is found there is replaced in the original spelling:
  a kept `raw` original gets the same placeholders as the parsed `json`.
- **Learned secrets.** A value seen where a secret is known to be (a secret header, a JSON value under
  a secret key, a secret-named argv flag, query parameter or environment variable) or a shape found
  anywhere is remembered when it looks random (`looks_random`); later whole-token occurrences of it, of
  its body without the vendor prefix, and of its percent-encoded form, get the same placeholder.
- **Linear time.** Every search is a left-anchored scan with possessive runs and no nested
  quantifiers (see `_scan`); the worst case per MB is measured by `make bench` (bench_redact).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import hashlib
import re
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

POLICY_NAME = "default-v2"

SECRET_HEADERS = (
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "cookie",
    "set-cookie",
    "x-codebuff-api-key",
    "x-openrouter-api-key",
    "x-goog-api-key",
    "x-auth-token",
    "x-access-token",
    "openai-api-key",
    "anthropic-api-key",
    "x-csrf-token",
)

# Compared after lower-casing and removing "-" and "_": authToken, auth_token and auth-token are one key.
SECRET_KEYS = (
    "authtoken",
    "apikey",
    "token",
    "accesstoken",
    "refreshtoken",
    "idtoken",
    "password",
    "passwd",
    "secret",
    "clientsecret",
    "privatekey",
    "authorization",
    "xapikey",
    "sessiontoken",
    "bearertoken",
    "cookie",
)

# A key also counts as secret when its normalized form ends with one of these (ANTHROPIC_API_KEY,
# githubAccessToken, db_password, ...). Not a bare "token": `max_tokens` and `next_page_token` are not secrets.
SECRET_KEY_SUFFIXES = ("apikey", "accesstoken", "authtoken", "refreshtoken", "password", "secretkey",
                       "clientsecret", "privatekey", "sessiontoken")

# Names of header lines, argv flags and environment variables are secret on these suffixes too
# (x-amz-security-token, GITHUB_TOKEN, --auth-secret); JSON keys and query parameters are not
# (`next_page_token`, `?pageToken=` are pagination, not secrets).
_NAME_SUFFIXES = (*SECRET_KEY_SUFFIXES, "token", "secret", "passwd", "accesskey", "credentials")
# Query parameters that carry secrets by convention (`?key=AIza…`, `?access_token=`, presigned URLs); with
# these weak names only a random-looking value (`looks_random`) counts: `?key=user-settings` is no secret.
_QUERY_NAMES = frozenset({"key", "token", "accesstoken", "auth", "signature", "sig", "xamzsignature",
                          "xamzsecuritytoken", "xgoogsignature"})

# The secret shapes. Each is matched against ONE WHOLE TOKEN (a maximal run of [A-Za-z0-9_-]): the
# regex must match the token entirely. `digit`: the token must also hold a digit, for shapes whose
# body may contain "-" or "_" (a kebab or snake identifier cannot pass for a key that way) or whose
# prefix is short. Realistic lengths: real keys are far longer than these minimums.
@dataclass(frozen=True)
class Shape:
    kind: str
    regex: str
    digit: bool = False


SHAPES: tuple[Shape, ...] = (
    Shape("anthropic-key", r"sk-ant-[A-Za-z0-9_\-]{20,}+", digit=True),
    Shape("openrouter-key", r"sk-or-[A-Za-z0-9_\-]{20,}+", digit=True),
    Shape("openai-key", r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{20,}+", digit=True),
    Shape("openai-key", r"sk-[A-Za-z0-9]{20,}+", digit=True),
    Shape("stripe-key", r"[rs]k_(?:live|test)_[A-Za-z0-9]{20,}+"),
    Shape("codebuff-key", r"cb-pat-[A-Za-z0-9_\-]{20,}+", digit=True),
    Shape("github-token", r"gh[pousr]_[A-Za-z0-9]{20,}+"),
    Shape("github-token", r"github_pat_[A-Za-z0-9_]{40,}+"),
    Shape("aws-key", r"A[KS]IA[0-9A-Z]{16}"),
    Shape("google-key", r"AIza[0-9A-Za-z_\-]{35}"),
    Shape("slack-token", r"xox[abprs]-[0-9]{4,}+-[A-Za-z0-9\-]{8,}+"),
    Shape("posthog-key", r"phc_[A-Za-z0-9]{30,}+"),
)
# JWT: three dot-separated tokens, the first two base64url JSON objects (`eyJ`), the last the
# signature (may be empty). Bearer: a token after `Bearer ` (the scheme as HTTP writes it; a secret
# header is redacted whole whatever its case) in free text, 16+ characters starting with
# a letter or digit and holding a digit and a letter, not holding both "/" and "." (prose such as
# "Bearer authentication", "Bearer YOUR_TOKEN" or "Bearer ./src/a2.ts" is no secret).
JWT_SEGMENT = re.compile(r"eyJ[A-Za-z0-9_\-]{10,}+")
BEARER_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._~+/\-]{15,}+=*+")

# The shape kinds as the header's policy lists them.
PATTERN_KINDS = tuple(dict.fromkeys([s.kind for s in SHAPES] + ["jwt", "bearer"]))

PLACEHOLDER_RE = re.compile(r"«redacted:[a-z0-9\-]+:[0-9a-f]{8}»")
MIN_LEARNED = 8  # shorter values are never learned (a 3-letter "secret" would match ordinary text)
MAX_LEARNED = 64  # distinct secrets remembered per Redactor (each adds a search to the screen)
MAX_LEARNED_LEN = 4096  # longer values are redacted where found, never searched for elsewhere


def fingerprint(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def placeholder(kind: str, secret: str) -> str:
    return f"«redacted:{kind}:{fingerprint(secret)}»"


def _norm_key(key: str) -> str:
    return key.lower().replace("-", "").replace("_", "")


# --- the scan -----------------------------------------------------------------------------------------
# One search finds candidate tokens: a literal prefix at a token start, then a possessive run of token
# characters. The lookbehind rejects every position inside a run (its excluded set contains the run's
# class), so no two attempts read the same run: the scan is linear in the input. A candidate is then
# classified by one anchored `fullmatch` (a bounded class repetition, no nesting) of the token.
_PREFIXES = r"sk-|cb-|gh[pousr]_|github_pat_|A[KS]IA|AIza|xox[abprs]-|phc_|[rs]k_(?:live|test)_|eyJ"
_CAND_TEXT = re.compile(
    r"(?<![\w\-])(?:(?P<tok>(?:" + _PREFIXES + r")[A-Za-z0-9_\-]*+)|(?P<bearer>Bearer[ ]++))")
# Binary payloads (searched in their latin-1 view): a length or tag byte may sit right before a
# string, so a token may also start one ASCII character after a non-printable byte; only ASCII counts
# as token characters there.
_CAND_BIN = re.compile(
    r"(?:(?<![A-Za-z0-9_\-])|(?<=[^\x20-\x7e][A-Za-z0-9_\-]))"
    r"(?:(?P<tok>(?:" + _PREFIXES + r")[A-Za-z0-9_\-]*+)|(?P<bearer>Bearer[ ]++))")
_JWT_TAIL = re.compile(r"\.(eyJ[A-Za-z0-9_\-]*+)\.([A-Za-z0-9_\-]*+)")
_BEARER_RUN = re.compile(r"[A-Za-z0-9._~+/\-]*+=*+")
_SHAPE_RES = tuple((s, re.compile(s.regex)) for s in SHAPES)


def _first_chars(regex: str) -> str:
    return regex[1:regex.index("]")] if regex.startswith("[") else regex[0]


# Shapes by the first character of their token, tried in `SHAPES` order (a candidate tries 0 to 5).
_BY_FIRST: dict[str, tuple[tuple[Shape, re.Pattern[str]], ...]] = {
    c: tuple(sr for sr in _SHAPE_RES if c in _first_chars(sr[0].regex))
    for c in "".join(_first_chars(s.regex) for s in SHAPES)
}
_MIN_TOKEN = 18  # the shortest whole match of any shape (xoxb-, 4 digits, -, 8)
_DIGIT = re.compile(r"[0-9]")
_LETTER = re.compile(r"[A-Za-z]")
_TOKEN_CHAR = re.compile(r"[\w\-]")


def _classify(token: str, binary: bool) -> tuple[str, int] | None:
    """(kind, length) of the secret shape the token is, None when it is none.

    Text: the whole token must match. Binary: a prefix of the token may (a following tag byte can be
    an ASCII letter)."""
    if len(token) < _MIN_TOKEN:
        return None
    for shape, rx in _BY_FIRST.get(token[0], ()):  # (an `eyJ` token that is no JWT: none)
        m = rx.match(token) if binary else rx.fullmatch(token)
        if m is not None and (not shape.digit or _DIGIT.search(m.group()) is not None):
            return shape.kind, m.end()
    return None


# Literals one of which every shape contains: strings holding none skip the scan (`str.__contains__`
# is a fast C search).
_QUICK = ("sk-", "cb-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "ASIA", "AIza",
          "xox", "phc_", "k_live_", "k_test_", "eyJ", "Bearer ")


def _has_quick(s: str) -> bool:
    """`s` holds one of the literals every shape contains (`_QUICK`): else no shape can be in it."""
    for lit in _QUICK:  # noqa: SIM110 - any(<genexpr>) costs more
        if lit in s:
            return True
    return False


def _scan(s: str, binary: bool = False) -> list[tuple[int, int, str]]:
    """Spans (start, end, kind) of the secret shapes in `s`, in order, not overlapping. Linear time."""
    return _scan_candidates(s, binary) if _has_quick(s) else []


def _scan_candidates(s: str, binary: bool) -> list[tuple[int, int, str]]:
    """`_scan` of a string known to hold one of the `_QUICK` literals."""
    out: list[tuple[int, int, str]] = []
    search = (_CAND_BIN if binary else _CAND_TEXT).search
    n = len(s)
    pos = 0
    while True:
        m = search(s, pos)
        if m is None:
            return out
        start, end = m.span()
        tok = m.group("tok")
        if tok is None:  # "Bearer " and what follows
            pos = _scan_bearer(s, end, binary, out)
        elif not binary and end < n and _TOKEN_CHAR.match(s, end):  # followed by a Unicode letter
            pos = end
        else:
            pos = _scan_token(s, start, end, tok, binary, out)


def _scan_bearer(s: str, end: int, binary: bool, out: list[tuple[int, int, str]]) -> int:
    """After `Bearer ` at `end`: the token there, if it is one (`BEARER_TOKEN`, a digit and a letter,
    not a path, whole), goes to `out` with its own kind when it is a known shape; returns where the scan
    goes on (the run itself is scanned when it is no bearer token: it may hold a shape)."""
    r = _BEARER_RUN.match(s, end)
    rend = r.end() if r is not None else end
    val = s[end:rend]
    if not (BEARER_TOKEN.fullmatch(val) and _DIGIT.search(val) and _LETTER.search(val)
            and not ("/" in val and "." in val)  # a path (src/a2.ts), not a token
            and (binary or rend >= len(s) or not _TOKEN_CHAR.match(s, rend))):
        return end
    sub = _scan(val, binary)  # a known shape inside keeps its own kind
    kind = sub[0][2] if len(sub) == 1 and sub[0][:2] == (0, len(val)) else "bearer"
    out.append((end, rend, kind))
    return rend


def _scan_token(s: str, start: int, end: int, tok: str, binary: bool, out: list[tuple[int, int, str]]) -> int:
    """A candidate token `s[start:end]`: a JWT (with the two segments after it) or a shape goes to
    `out`; returns where the scan goes on."""
    if tok.startswith("eyJ"):
        t = _JWT_TAIL.match(s, end) if end - start >= 13 else None
        if (t is not None and JWT_SEGMENT.fullmatch(tok) and JWT_SEGMENT.fullmatch(t.group(1))
                and (binary or t.end() >= len(s) or not _TOKEN_CHAR.match(s, t.end()))):
            out.append((start, t.end(), "jwt"))
            return t.end()
    hit = _classify(tok, binary)
    if hit is not None:
        out.append((start, start + hit[1], hit[0]))
    return end


# --- JSON-unescaped views -------------------------------------------------------------------------
_ESC = re.compile(r'\\(?:u[0-9a-fA-F]{4}|["\\/bfnrt])')
_ESC_CHAR = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_MAX_VIEWS = 3  # unescape levels searched (a JSON string inside a JSON string inside a payload)


class _View:
    """`text` is `src` with every JSON escape decoded (one character each); maps indices back to `src`
    (and through `parent` to the original). The map is built only when a span is asked for."""

    __slots__ = ("text", "src", "parent", "vpos", "rpos", "rlen")

    def __init__(self, src: str, parent: _View | None) -> None:
        self.src = src
        self.parent = parent
        self.text = _ESC.sub(_unescape, src)
        self.vpos: list[int] | None = None

    def _map(self) -> None:
        self.vpos, self.rpos, self.rlen = [], [], []  # per escape: view index, source index, source length
        shrink = 0
        for m in _ESC.finditer(self.src):
            a, b = m.span()
            self.vpos.append(a - shrink)
            self.rpos.append(a)
            self.rlen.append(b - a)
            shrink += b - a - 1

    def _src(self, i: int, end: bool) -> int:
        if self.vpos is None:
            self._map()
        vpos = self.vpos
        assert vpos is not None
        k = bisect.bisect_right(vpos, i) - 1
        if k >= 0 and vpos[k] == i:
            return self.rpos[k] + (self.rlen[k] if end else 0)
        shift = self.rpos[k] + self.rlen[k] - vpos[k] - 1 if k >= 0 else 0
        return i + shift + (1 if end else 0)

    def span(self, a: int, b: int) -> tuple[int, int]:
        """The span of the original string that view span [a, b) stands for."""
        ra, rb = self._src(a, False), self._src(b - 1, True)
        return self.parent.span(ra, rb) if self.parent is not None else (ra, rb)


def _unescape(m: re.Match[str]) -> str:
    e = m.group()
    return chr(int(e[2:], 16)) if e[1] == "u" else _ESC_CHAR[e[1]]


def _in_source(view: _View | None, a: int, b: int) -> tuple[int, int]:
    """The span of the original string that span [a, b) of `view` (None: the original) stands for."""
    return view.span(a, b) if view is not None else (a, b)


# An escape that spells a printable ASCII character: the only kind that can spell part of a token.
_ASCII_ESC = re.compile(r"\\u00[2-7]")


# --- learned secrets -------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Learned:
    """An immutable snapshot (swapped whole under a lock, read without one)."""

    forms: tuple[tuple[str, str, str], ...] = ()  # (literal, kind, secret), longest literal first
    needles: tuple[bytes, ...] = ()  # byte strings one of which any occurrence of a form contains
    tails: tuple[str, ...] = ()  # the same as text
    any_escape: bool = False  # a learned secret is not ASCII: a `\u` escape could spell part of it


def _derived_forms(secret: str) -> list[str]:
    """The secret, its percent-encoded form, and its bodies after a vendor-prefix cut ("-" or "_"),
    each at least 16 characters: `sk-ant-api03-XYZ…` also reads `api03-XYZ…` and `XYZ…`."""
    forms = [secret]
    quoted = urllib.parse.quote(secret, safe="")
    if quoted != secret:
        forms.append(quoted)
    cuts = 0
    for i, c in enumerate(secret):
        if c in "-_" and len(secret) - i - 1 >= 16 and cuts < 4:
            forms.append(secret[i + 1:])
            cuts += 1
    return forms


def _learned_screen(learned: _Learned) -> Callable[[bytes], bool]:
    """`may_hold_secret`, then a search for the learned secrets' tails: a closure (no attribute lookups,
    no loop for the usual one or two needles), as it runs once per record."""
    shapes = may_hold_secret
    needles = learned.needles
    if learned.any_escape:
        needles = (*needles, b"\\u")
    if len(needles) == 1:
        (n0,) = needles

        def screen1(serialized: bytes) -> bool:
            return shapes(serialized) or serialized.find(n0) >= 0
        return screen1
    if len(needles) == 2:
        n0, n1 = needles

        def screen2(serialized: bytes) -> bool:
            return shapes(serialized) or serialized.find(n0) >= 0 or serialized.find(n1) >= 0
        return screen2

    def screen(serialized: bytes) -> bool:
        if shapes(serialized):
            return True
        for needle in needles:  # noqa: SIM110 - any(<genexpr>) costs more
            if serialized.find(needle) >= 0:  # (faster than `in`, which takes any buffer)
                return True
        return False
    return screen


def _never(serialized: bytes) -> bool:
    return False


def _always(serialized: bytes) -> bool:
    return True


_NO_SPACE = re.compile(r"\S++")
_UPPER = re.compile(r"[A-Z]")
_LOWER = re.compile(r"[a-z]")


def looks_random(value: str) -> bool:
    """A value fit to be learned as a secret (or to be a secret by a weak name such as `?key=`): 8 to 4096
    characters, no whitespace, holding a digit or both cases. "YOUR_API_KEY", "changeme" or a sentence
    are not learned (they are still replaced where a name says they are secrets)."""
    return (MIN_LEARNED <= len(value) <= MAX_LEARNED_LEN and _NO_SPACE.fullmatch(value) is not None
            and "«redacted:" not in value
            and (_DIGIT.search(value) is not None or (_UPPER.search(value) is not None
                                                       and _LOWER.search(value) is not None)))


_ASCII_TOKEN_CHAR = re.compile(r"[A-Za-z0-9_\-]")


def _is_whole(s: str, a: int, b: int, binary: bool) -> bool:
    """`s[a:b]` is not glued to token characters on a side where it starts/ends with one. Binary (as for
    the shapes): one ASCII character after a non-printable byte may be a length or tag byte, and what
    follows is not asked."""
    if binary:
        tok = _ASCII_TOKEN_CHAR
        return (a == 0 or not tok.match(s, a) or not tok.match(s, a - 1) or a == 1
                or not "\x20" <= s[a - 2] <= "\x7e")
    tok = _TOKEN_CHAR
    if a > 0 and tok.match(s, a) and tok.match(s, a - 1):
        return False
    return not (b < len(s) and tok.match(s, b - 1) and tok.match(s, b))


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*+")
_HEADER_NAME = re.compile(r"[A-Za-z0-9\-]++")


@dataclass
class Redactor:
    """Applies one redaction policy. `enabled=False` makes every method the identity.

    Safe to share between threads (the proxy and the tee of `wirecap record -- CMD` do): what it
    learns is published as one immutable snapshot.
    """

    enabled: bool = True
    extra_keys: tuple[str, ...] = ()
    extra_patterns: tuple[str, ...] = ()
    headers: tuple[str, ...] = SECRET_HEADERS
    hits: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._keys = frozenset(_norm_key(k) for k in (*SECRET_KEYS, *self.extra_keys))
        self._headers = frozenset(h.lower() for h in self.headers)
        self._extra = []
        for rx in self.extra_patterns:
            self._extra.append(re.compile(rx))  # a bad pattern fails here, with re's message
        self._learned = _Learned()
        self._learn_lock = threading.Lock()
        # `screen(serialized) -> bool`: True when redacting the serialized record (or raw bytes) could
        # change it; may say so too often, never "no" when a secret is there. On the hot path of every
        # recorder, so it is the cheapest function that is right for the policy so far: never (disabled),
        # always (user rules: any regex), the module's `may_hold_secret`, and once a secret was learned,
        # that and a search for the learned tails (`_learned_screen`).
        self._screen_dynamic = self.enabled and not (self._extra or self.extra_keys)
        self.screen: Callable[[bytes], bool] = (
            _never if not self.enabled else _always if self._extra or self.extra_keys else may_hold_secret)
        self._seen: set[str] = set()

    def policy(self) -> dict[str, Any]:
        """The header's `redaction` field."""
        if not self.enabled:
            return {"enabled": False}
        return {
            "enabled": True,
            "policy": POLICY_NAME,
            "headers": sorted(self._headers),
            "keys": sorted(self._keys),
            "key_suffixes": list(SECRET_KEY_SUFFIXES),
            "patterns": list(PATTERN_KINDS) + ["custom"] * len(self.extra_patterns),
            "extra_keys": list(self.extra_keys),
            "extra_patterns": list(self.extra_patterns),
            "placeholder": "«redacted:KIND:FP», FP = first 8 hex digits of sha256(secret)",
        }

    # --- names ----------------------------------------------------------------------------------
    def is_secret_key(self, key: str) -> bool:
        """A JSON object key whose value is a secret."""
        k = _norm_key(key)
        return k in self._keys or k.endswith(SECRET_KEY_SUFFIXES)

    def is_secret_name(self, name: str) -> bool:
        """A header, argv flag or environment variable whose value is a secret."""
        k = _norm_key(name)
        return k in self._keys or k.endswith(_NAME_SUFFIXES)

    def is_secret_header(self, name: str) -> bool:
        """A listed header, or one named like a secret (`x-amz-security-token`, `x-custom-auth`)."""
        return name.lower() in self._headers or self.is_secret_name(name) or _norm_key(name).endswith("auth")

    # --- learning -------------------------------------------------------------------------------
    def learn(self, secret: Any, kind: str) -> None:
        """Remember `secret` (seen where a secret is): later whole-token occurrences of it and of its
        derived forms are replaced by `placeholder(kind, secret)`."""
        if not self.enabled or not isinstance(secret, str) or secret in self._seen or not looks_random(secret):
            return
        with self._learn_lock:
            if secret in self._seen or len(self._seen) >= MAX_LEARNED:
                return
            self._seen.add(secret)
            old = self._learned
            forms = dict((f, (k, s)) for f, k, s in old.forms)
            for f in _derived_forms(secret):
                forms.setdefault(f, (kind, secret))
            ordered = tuple(sorted(((f, k, s) for f, (k, s) in forms.items()), key=lambda x: -len(x[0])))
            needles = set(old.needles)
            tails = set(old.tails)
            nonascii = False
            for form in (secret, urllib.parse.quote(secret, safe="")):
                t = form[-12:]  # every derived form ends with the secret's tail
                tails.add(t)
                needles.add(t.encode("utf-8", "surrogatepass"))
                needles.add(orjson.dumps(t)[1:-1] if t.isascii() else t.encode("utf-8", "surrogatepass"))
                nonascii = nonascii or not t.isascii() or not t.isprintable()
            self._learned = _Learned(ordered, tuple(needles), tuple(tails), old.any_escape or nonascii)
            if self._screen_dynamic:
                self.screen = _learned_screen(self._learned)

    def learn_env(self, env: dict[str, str]) -> None:
        """Learn the values of secret-named environment variables (a child's API key, before it prints it)."""
        for name, value in env.items():
            if self.is_secret_name(name):
                self.learn(value, _norm_key(name))

    # --- screening --------------------------------------------------------------------------------
    # --- strings ----------------------------------------------------------------------------------
    def _spans(self, s: str, binary: bool = False, levels: int = _MAX_VIEWS,
               again: bool = False) -> list[tuple[int, int, str, str]]:
        """(start, end, kind, secret) of every secret in `s` or in its unescaped views, in `s`'s indices.

        A secret first seen here also counts where it occurs earlier in `s` (one more pass)."""
        found: list[tuple[int, int, str, str]] = []
        learned = self._learned
        view: _View | None = None
        text = s
        for level in range(levels + 1):
            quick = _has_quick(text) and self._shape_spans(text, view, binary, found)
            tails = bool(learned.forms) and self._learned_spans(text, view, learned, binary, found)
            for rx in self._extra:
                for m in rx.finditer(text):
                    if m.end() > m.start():
                        found.append((*_in_source(view, *m.span()), "custom", m.group()))
            # A view can only tell more where an escape hides a boundary next to a prefix, or spells
            # ASCII; one that decodes nothing ends the search.
            if (level == levels or "\\" not in text
                    or not (quick or tails or self._extra or _ASCII_ESC.search(text))):
                break
            nxt = _View(text, view)
            if nxt.text == text:
                break
            view, text = nxt, nxt.text
        if self._learned is not learned and not again:
            return self._spans(s, binary, levels, again=True)
        return found

    def _shape_spans(self, text: str, view: _View | None, binary: bool,
                     found: list[tuple[int, int, str, str]]) -> bool:
        """The secret shapes in `text` (a view of the original) to `found`, learned; True (the text
        holds a shape's literal, so a further view may tell more)."""
        for a, b, kind in _scan_candidates(text, binary):
            secret = text[a:b]
            ra, rb = view.span(a, b) if view is not None else (a, b)  # (`_in_source`, inlined)
            found.append((ra, rb, kind, secret))
            if secret not in self._seen:
                self.learn(secret, kind)
        return True

    @staticmethod
    def _learned_spans(text: str, view: _View | None, learned: _Learned, binary: bool,
                       found: list[tuple[int, int, str, str]]) -> bool:
        """Whole-token occurrences of the `learned` secrets' forms (there are some) in `text` to `found`;
        True when `text` holds one of their tails (whether or not an occurrence was whole)."""
        if not any(t in text for t in learned.tails):
            return False
        for lit, kind, secret in learned.forms:
            i = text.find(lit)
            while i >= 0:
                j = i + len(lit)
                if _is_whole(text, i, j, binary):
                    ra, rb = view.span(i, j) if view is not None else (i, j)  # (`_in_source`, inlined)
                    found.append((ra, rb, kind, secret))
                    i = text.find(lit, j)
                else:
                    i = text.find(lit, i + 1)
        return True

    def _apply(self, s: str, found: list[tuple[int, int, str, str]]) -> str:
        """`s` with the spans replaced (overlaps: the earliest, then the longest, wins)."""
        if not found:
            return s
        found.sort(key=lambda f: (f[0], -f[1]))
        out: list[str] = []
        last = 0
        for a, b, kind, secret in found:
            if a < last:
                continue
            if PLACEHOLDER_RE.fullmatch(secret):
                continue
            out.append(s[last:a])
            out.append(placeholder(kind, secret))
            self.hits += 1
            last = b
        out.append(s[last:])
        return "".join(out)

    def text(self, s: str) -> str:
        """Redact secret shapes and learned secrets inside a string."""
        if not self.enabled or not s:
            return s
        return self._apply(s, self._spans(s))

    def _wholesale(self, kind: str, value: Any, *, learn: bool = True) -> Any:
        """The whole value is a secret (its name says so): one placeholder, and learned (a string,
        unless `learn` is False). A value that hides nothing (`_wholesale_secret`) is kept as it is."""
        secret = _wholesale_secret(value)
        if secret is None:
            return value
        self.hits += 1
        if learn and isinstance(value, str):
            self.learn(value, kind)
        return placeholder(kind, secret)

    # --- JSON values --------------------------------------------------------------------------------
    def value(self, v: Any, key: str | None = None) -> Any:
        """Redact a JSON value: secret keys wholesale, secret shapes inside every string."""
        if not self.enabled:
            return v
        if key is not None and self.is_secret_key(key):
            if isinstance(v, (dict, list)):  # a structure: its secrets are found inside it
                return self.value(v)
            return self._wholesale(_norm_key(key), v)
        if isinstance(v, str):
            if key == "url":
                return self.url(v)
            return self.text(v)
        if isinstance(v, dict):
            return {k: self.value(x, k) for k, x in v.items()}
        if isinstance(v, list):
            if key == "argv" and all(isinstance(a, str) for a in v):
                return self.argv(v)
            return [self.value(x) for x in v]
        return v

    # --- headers ----------------------------------------------------------------------------------
    def header_value(self, name: str, value: str) -> str:
        if not self.enabled:
            return value
        if self.is_secret_header(name):
            scheme, sep, rest = value.partition(" ")
            if sep and scheme.lower() in ("bearer", "basic", "token", "digest") and rest:
                if PLACEHOLDER_RE.fullmatch(rest):
                    return value
                if scheme.lower() == "basic":
                    self._learn_basic(rest)
                return f"{scheme} {self._wholesale(scheme.lower(), rest)}"
            # (a cookie header holds many values: the whole is no token to look for elsewhere)
            return self._wholesale(name.lower(), value, learn=name.lower() not in ("cookie", "set-cookie"))
        return self.text(value)

    def _learn_basic(self, token: str) -> None:
        try:
            user, _, password = base64.b64decode(token, validate=True).decode("utf-8").partition(":")
        except (binascii.Error, ValueError):
            return
        self.learn(password, "basic")

    def headers_dict(self, headers: dict[str, str]) -> dict[str, str]:
        """Secret headers first (what they carry is then known in every other header)."""
        if not self.enabled:
            return headers
        out = {k: self.header_value(k, v) for k, v in headers.items() if self.is_secret_header(k)}
        return {k: out[k] if k in out else self.header_value(k, v) for k, v in headers.items()}

    # --- URLs and argv -----------------------------------------------------------------------------
    _URL_PARTS = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*+://)([^/?#@]*+@)?([^?#]*+)(\?[^#]*+)?(#.*+)?", re.S)

    def url(self, u: str) -> str:
        """A URL: the password of its userinfo, and query/fragment parameters with secret names,
        replaced whole; secret shapes anywhere."""
        if not self.enabled:
            return u
        m = self._URL_PARTS.fullmatch(u)
        if m is None:
            return self.text(u)
        scheme, userinfo, rest, query, frag = m.groups()
        out = [scheme]
        if userinfo:
            user, sep, password = userinfo[:-1].partition(":")
            out.append(self.text(user) + sep + (self._wholesale("password", urllib.parse.unquote(password))
                                                  if sep and password else "") + "@")
        out.append(self.text(rest))
        for part, mark in ((query, "?"), (frag, "#")):
            if part is None:
                continue
            params = []
            for p in part[1:].split("&"):
                name, eq, val = p.partition("=")
                uname = urllib.parse.unquote(name)
                uval = urllib.parse.unquote(val)
                if eq and val and (self.is_secret_key(uname) or (_norm_key(uname) in _QUERY_NAMES
                                                                 and looks_random(uval))):
                    params.append(name + "=" + self._wholesale(_norm_key(uname), uval))
                else:
                    params.append(self.text(p))
            out.append(mark + "&".join(params))
        return "".join(out)

    def argv(self, args: list[str]) -> list[str]:
        """A command line: values of secret-named flags (`--api-key V`, `--token=V`), of secret-named
        `NAME=V` assignments and of secret header arguments (`-H "x-api-key: V"`) replaced whole."""
        if not self.enabled:
            return args
        out: list[str] = []
        pending: str | None = None
        for a in args:
            if pending is not None:
                out.append(self._wholesale(pending, a))
                pending = None
                continue
            if a.startswith("-") and len(a) > 2:
                name, eq, val = a.partition("=")
                flag = name.lstrip("-")
                if flag and self.is_secret_name(flag) and not _norm_key(flag).startswith("no"):
                    if eq:
                        out.append(name + "=" + self._wholesale(_norm_key(flag), val))
                    else:
                        pending = _norm_key(flag)
                        out.append(a)
                    continue
            elif "=" in a:
                name, _, val = a.partition("=")
                if _ENV_NAME.fullmatch(name) and self.is_secret_name(name):
                    out.append(name + "=" + self._wholesale(_norm_key(name), val))
                    continue
            elif ":" in a:
                name, _, val = a.partition(":")
                if _HEADER_NAME.fullmatch(name) and self.is_secret_header(name):
                    v = val.lstrip(" ")
                    out.append(name + ":" + val[: len(val) - len(v)] + self.header_value(name, v))
                    continue
            out.append(self.text(a))
        return out

    # --- payloads ---------------------------------------------------------------------------------
    def payload(self, fields: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Redact the payload fields of a msg record; returns (fields, changed)."""
        if not self.enabled:
            return fields, False
        before = self.hits
        out = dict(fields)
        if "json" in out:
            raw = None
            if "raw" in out:  # learn from the original first: both forms then get the same placeholders
                learned = self._learned  # (a snapshot: replaced whole whenever a secret is learned)
                raw = self.raw_json(out["raw"])
                raw_hits = self.hits - before
                before = self.hits
            out["json"] = self.value(out["json"])
            if raw is not None:
                if self._learned is learned:  # nothing learned since: a second pass would give the same
                    self.hits += raw_hits
                    out["raw"] = raw
                else:
                    out["raw"] = self.raw_json(out["raw"])
        elif "text" in out:
            out["text"] = self.text(out["text"])
            if "raw" in out:
                out["raw"] = self.raw_json(out["raw"])
        # b64 payloads are binary: shapes are searched in their latin-1 view and replaced in place.
        elif "b64" in out:
            out["b64"] = self.b64(out["b64"])
        if "raw_b64" in out:
            out["raw_b64"] = self.b64(out["raw_b64"])
        return out, self.hits != before

    def b64(self, data: str) -> str:
        """A base64 field holding binary: secrets replaced in its latin-1 view."""
        raw = base64.b64decode(data)
        view = raw.decode("latin-1")
        found = self._spans(view, binary=True)
        if not found:
            return data
        red = self._apply(view, found)
        return base64.b64encode(red.encode("latin-1", "replace")).decode("ascii") if red != view else data

    _STRING = re.compile(r'"(?:[^"\\\n]|\\.)*+"')  # a JSON string literal never spans lines
    _AFTER_KEY = re.compile(r'\s*+:\s*+')
    _SCALAR = re.compile(r'"(?:[^"\\]|\\.)*+"|-?[0-9][0-9.eE+\-]*+|true|false|null')

    def raw_json(self, raw: str) -> str:
        """Redact a kept original (JSON text, or an SSE block holding JSON) so that it gets the
        placeholders its parsed form gets: values under secret keys (a string, number or literal:
        replaced whole by a placeholder string), then secrets in every view of the text (escapes
        such as `\\u002d` decoded), each replaced in its original spelling."""
        found: list[tuple[int, int, str, str]] = []
        pos = raw.find('"')
        while pos >= 0:
            m = self._STRING.match(raw, pos)
            if m is None:  # not closed on its line (an SSE field, prose): go on on the next line
                nl = raw.find("\n", pos)
                pos = raw.find('"', nl) if nl >= 0 else -1
                continue
            pos = raw.find('"', m.end())
            k = self._AFTER_KEY.match(raw, m.end())
            if k is None:
                continue
            try:
                key = orjson.loads(m.group())
            except orjson.JSONDecodeError:
                continue
            if not isinstance(key, str) or not self.is_secret_key(key):
                continue
            v = self._SCALAR.match(raw, k.end())
            if v is None:
                continue
            try:
                val = orjson.loads(v.group())
            except orjson.JSONDecodeError:
                continue
            secret = _wholesale_secret(val)
            if secret is None:
                continue
            if isinstance(val, str):
                self.learn(val, _norm_key(key))
            found.append((v.start(), v.end(), "\x00" + _norm_key(key), secret))
        found += self._spans(raw, levels=_MAX_VIEWS + 1)
        if not found:
            return raw
        # A wholesale value becomes a JSON string holding the placeholder.
        found.sort(key=lambda f: (f[0], -f[1]))
        out: list[str] = []
        last = 0
        for a, b, kind, secret in found:
            if a < last or PLACEHOLDER_RE.fullmatch(secret):
                continue
            out.append(raw[last:a])
            if kind.startswith("\x00"):
                out.append('"' + placeholder(kind[1:], secret) + '"')
            else:
                out.append(placeholder(kind, secret))
            self.hits += 1
            last = b
        out.append(raw[last:])
        return "".join(out)


def _wholesale_secret(value: Any) -> str | None:
    """What a value under a secret name is, as a secret: the string itself, or the repr of a number;
    None when it hides nothing: null, "", a boolean (and the numbers equal to one: 0, 1), a placeholder."""
    if value in (None, "", True, False):
        return None
    if isinstance(value, str):
        return None if PLACEHOLDER_RE.fullmatch(value) else value
    return repr(value)


_HEADER_FIELDS = ("headers", "response_headers")
_PAYLOAD_FIELDS = ("json", "text", "b64", "raw", "raw_b64")


def needs_redaction(redactor: Redactor, record: dict[str, Any], serialized: bytes) -> bool:
    """True when `record` may hold a secret under `redactor`'s policy."""
    if not redactor.enabled:
        return False
    if "headers" in record or "response_headers" in record or "argv" in record or "url" in record:
        return True
    if "b64" in record or "raw_b64" in record:  # binary: its secrets are invisible in the base64 text
        return True
    return redactor.screen(serialized)


# The screen runs once per record on the hot path, where `re`'s fixed cost per search (not the bytes
# scanned) dominates, and once per chunk in `wirecap tee`, where the cost per byte does; `re` is fast
# at both only for a pattern that starts with one literal (a leading alternation makes it try every
# position). So: literal-led searches for the token shapes over the bytes as they are (the shapes are
# case-sensitive, as in `SHAPES`), each asking for what a whole match needs right after its prefix
# (so `disk-usage` or `task-queue` are not even a maybe), and ONE search for secret keys over a
# normalized copy read backwards, where every key starts with its `:"` and a secret word must follow at
# once. No boundaries here: a boundary may hide behind an escape (`\\nsk-ant-…`); this only says maybe.
_SHAPE_SEARCHES = tuple(
    re.compile(rx).search
    for rx in (
        rb"-(?:(?<=sk-)(?:ant-|or-|proj-|svcacct-|admin-|None-|[A-Za-z0-9]{20})|(?<=cb-)pat-|(?<=xox[abprs]-))",
        rb"_(?<=[pousrcbk]_)(?:(?<=gh[pousr]_)|(?<=phc_)|(?<=github_)|(?<=[rs]k_)(?:live|test)_)",
        rb"A(?:KIA|SIA|Iza)",
        rb"J(?<=eyJ)",
        rb"Bearer ",
        rb"\\\\u00[2-7]",  # an escape spelling ASCII inside a string: only its unescaped view can tell
    )
)
def _key_words() -> list[str]:
    """The words a secret key (normalized) ends with: every secret key and suffix, minus the redundant."""
    words = {_norm_key(w) for w in (*SECRET_KEYS, *SECRET_KEY_SUFFIXES)}
    return sorted(w for w in words if not any(o != w and w.endswith(o) for o in words))


def _trie(words: list[bytes]) -> bytes:
    """A regex matching exactly `words`, factored by first letter (`re` tries alternatives one by one)."""
    groups: dict[bytes, list[bytes]] = {}
    for w in words:
        groups.setdefault(w[:1], []).append(w[1:])
    alts = []
    for first, rests in sorted(groups.items()):
        if not first:
            continue
        sub = _trie(rests)
        alts.append(re.escape(first) + (b"(?:" + sub + b")?" if b"" in rests and sub else sub))
    return alts[0] if len(alts) == 1 else b"(?:" + b"|".join(alts) + b")" if alts else b""


# The normalized copy: lower case; "-" and "_" dropped (as `_norm_key` does), JSON whitespace dropped
# (`"apiKey" : 1` reads `"apikey":1`); the Kelvin sign (U+212A, e2 84 aa: the one non-ASCII character
# whose lower case is an ASCII letter) read as "k". Mangling other UTF-8 can only add matches.
_NORM_TABLE = bytes(c + 32 if 65 <= c <= 90 else (107 if c == 0xAA else c) for c in range(256))
_NORM_DROP = b"-_ \t\r\n\xe2\x84"
# A JSON key is secret when its normalized form ends with one of `_key_words()` (true of every entry
# of SECRET_KEYS and SECRET_KEY_SUFFIXES): backwards, `:"` and then such a word.
_KEY_SEARCH = re.compile(b':"' + _trie([w.encode()[::-1] for w in _key_words()])).search


def may_hold_secret(serialized: bytes) -> bool:
    """True when redacting the record (or raw JSON) `serialized` under the default policy could change it.

    A superset test: what a token shape needs right after its prefix (as `_scan` would find it), an
    escaped ASCII character inside a string (`\\\\u002d`), or a key that `Redactor.is_secret_key`
    would call secret. orjson escapes only control characters, `"` and `\\`; callers that screen raw
    input also refuse `\\u00XX` escapes of ASCII (see `chunk_is_clean`). Learned secrets are the
    `Redactor.screen` method's business.
    """
    for search in _SHAPE_SEARCHES:  # noqa: SIM110 - any(<genexpr>) costs as much as the searches
        if search(serialized) is not None:
            return True
    return _KEY_SEARCH(serialized.translate(_NORM_TABLE, _NORM_DROP)[::-1]) is not None


_RAW_ASCII_ESCAPE = re.compile(rb"\\u00[2-7]").search


def chunk_is_clean(redactor: Redactor, data: bytes) -> bool:
    """True when no msg record made from (lines of) the raw bytes `data` can need redaction.

    For recorders that hold raw bytes before records are built (`wirecap tee`): one screen per
    chunk instead of one per record. A JSON `\\u00XX` escape of an ASCII character could spell a
    secret only once decoded, so a chunk holding one is never clean; nor is any chunk under extra
    user rules, nor one holding a learned secret.
    """
    if not redactor.enabled:
        return True
    if b"\\" in data and _RAW_ASCII_ESCAPE(data) is not None:
        return False
    return not redactor.screen(data)


def redact_record(redactor: Redactor, record: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of `record` with every secret replaced; marks changed payloads `redacted`."""
    out: dict[str, Any] = {}
    payload = {k: record[k] for k in _PAYLOAD_FIELDS if k in record}
    # Secret headers first: a value they carry is then known everywhere else in the record.
    for k in _HEADER_FIELDS:
        v = record.get(k)
        if isinstance(v, dict):
            out[k] = redactor.headers_dict(v)
    for k, v in record.items():
        if k in _PAYLOAD_FIELDS or (k in _HEADER_FIELDS and isinstance(v, dict)):
            continue
        if k in ("seq", "t", "type", "ch", "dir"):
            out[k] = v
        else:
            out[k] = redactor.value(v, k)
    if payload:
        red, changed = redactor.payload(payload)
        out.update(red)
        if changed:
            flags = list(out.get("flags") or [])
            if "redacted" not in flags:
                flags.append("redacted")
            out["flags"] = flags
    # Keep the record's key order (headers were done first only for what they teach).
    return {k: out[k] for k in record if k in out} | {k: v for k, v in out.items() if k not in record}
