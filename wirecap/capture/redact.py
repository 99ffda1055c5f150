"""Redaction at write time: secrets are replaced before any byte reaches the disk.

A placeholder keeps the kind of secret and a short fingerprint (`«redacted:KIND:FP»`) so the same
secret reads the same everywhere and two captures can still be compared without the secret.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

POLICY_NAME = "default-v1"

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

# (kind, regex) pairs; order matters: specific shapes before generic ones.
SECRET_PATTERNS: tuple[tuple[str, str], ...] = (
    ("anthropic-key", r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    ("openrouter-key", r"sk-or-[A-Za-z0-9_\-]{8,}"),
    ("openai-key", r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}"),
    ("openai-key", r"sk-[A-Za-z0-9]{3,}-[A-Za-z0-9_\-]{6,}"),
    ("codebuff-key", r"cb-[A-Za-z0-9]+-[A-Za-z0-9_\-]{3,}"),
    ("github-token", r"gh[pousr]_[A-Za-z0-9]{20,}"),
    ("github-token", r"github_pat_[A-Za-z0-9_]{20,}"),
    ("aws-key", r"AKIA[0-9A-Z]{16}"),
    ("google-key", r"AIza[0-9A-Za-z_\-]{35}"),
    ("slack-token", r"xox[abprs]-[A-Za-z0-9\-]{10,}"),
    ("posthog-key", r"phc_[A-Za-z0-9]{20,}"),
    ("jwt", r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ("bearer", r"(?<=Bearer )[A-Za-z0-9._~+/=\-]{8,}"),
)

_KEY_VALUE_RE = re.compile(r'("([A-Za-z0-9_\-]+)")(\s*:\s*)"((?:[^"\\]|\\.)*)"')
PLACEHOLDER_RE = re.compile(r"«redacted:[a-z0-9\-]+:[0-9a-f]{8}»")


def fingerprint(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def placeholder(kind: str, secret: str) -> str:
    return f"«redacted:{kind}:{fingerprint(secret)}»"


def _norm_key(key: str) -> str:
    return key.lower().replace("-", "").replace("_", "")


@dataclass
class Redactor:
    """Applies one redaction policy. `enabled=False` makes every method the identity."""

    enabled: bool = True
    extra_keys: tuple[str, ...] = ()
    extra_patterns: tuple[str, ...] = ()
    headers: tuple[str, ...] = SECRET_HEADERS
    hits: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._keys = frozenset(_norm_key(k) for k in (*SECRET_KEYS, *self.extra_keys))
        self._headers = frozenset(h.lower() for h in self.headers)
        parts = [f"(?P<p{i}>{rx})" for i, (_, rx) in enumerate(SECRET_PATTERNS)]
        self._kinds = [kind for kind, _ in SECRET_PATTERNS]
        for rx in self.extra_patterns:
            re.compile(rx)  # a bad pattern fails here, with re's message
            parts.append(f"(?P<p{len(self._kinds)}>{rx})")
            self._kinds.append("custom")
        self._rx = re.compile("|".join(parts))
        # Cheap pre-check: most strings hold none of these and skip the big regex.
        self._hint = re.compile(
            r"sk-|cb-|gh[pousr]_|github_pat_|AKIA|AIza|xox|phc_|eyJ|Bearer "
            + "".join(f"|{rx}" for rx in self.extra_patterns)
        )

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
            "patterns": [kind for kind in self._kinds],
            "extra_keys": list(self.extra_keys),
            "extra_patterns": list(self.extra_patterns),
            "placeholder": "«redacted:KIND:FP», FP = first 8 hex digits of sha256(secret)",
        }

    def is_secret_key(self, key: str) -> bool:
        k = _norm_key(key)
        return k in self._keys or k.endswith(SECRET_KEY_SUFFIXES)

    def _replace(self, m: re.Match[str]) -> str:
        secret = m.group(0)
        if PLACEHOLDER_RE.fullmatch(secret):
            return secret
        self.hits += 1
        return placeholder(self._kinds[int(m.lastgroup[1:])], secret)

    def text(self, s: str) -> str:
        """Redact secret shapes inside a string."""
        if not self.enabled or not self._hint.search(s):
            return s
        return self._rx.sub(self._replace, s)

    def value(self, v: Any, key: str | None = None) -> Any:
        """Redact a JSON value: secret keys wholesale, secret shapes inside every string."""
        if not self.enabled:
            return v
        if key is not None and self.is_secret_key(key) and v not in (None, "", True, False):
            if isinstance(v, (dict, list)):
                return self.value(v)
            if isinstance(v, str) and PLACEHOLDER_RE.fullmatch(v):
                return v
            self.hits += 1
            return placeholder(_norm_key(key), v if isinstance(v, str) else repr(v))
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, dict):
            return {k: self.value(x, k) for k, x in v.items()}
        if isinstance(v, list):
            return [self.value(x) for x in v]
        return v

    def header_value(self, name: str, value: str) -> str:
        if not self.enabled:
            return value
        if name.lower() in self._headers:
            scheme, sep, rest = value.partition(" ")
            if sep and scheme.lower() in ("bearer", "basic", "token", "digest") and rest:
                if PLACEHOLDER_RE.fullmatch(rest):
                    return value
                self.hits += 1
                return f"{scheme} {placeholder(scheme.lower(), rest)}"
            if PLACEHOLDER_RE.fullmatch(value) or not value:
                return value
            self.hits += 1
            return placeholder(name.lower(), value)
        return self.text(value)

    def headers_dict(self, headers: dict[str, str]) -> dict[str, str]:
        if not self.enabled:
            return headers
        return {k: self.header_value(k, v) for k, v in headers.items()}

    def payload(self, fields: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Redact the payload fields of a msg record; returns (fields, changed)."""
        if not self.enabled:
            return fields, False
        before = self.hits
        out = dict(fields)
        if "json" in out:
            out["json"] = self.value(out["json"])
            if "raw" in out:
                out["raw"] = self._raw_json(out["raw"])
        elif "text" in out:
            out["text"] = self.text(out["text"])
        # b64 payloads are binary: shapes are searched in their latin-1 view and replaced in place.
        elif "b64" in out:
            raw = base64.b64decode(out["b64"])
            view = raw.decode("latin-1")
            if self._hint.search(view):
                red = self._rx.sub(self._replace, view)
                if red != view:
                    out["b64"] = base64.b64encode(red.encode("latin-1")).decode("ascii")
        return out, self.hits != before

    def _raw_json(self, raw: str) -> str:
        """Redact a non-canonical JSON original: values of secret keys, then secret shapes.

        Keys first, as `value()` does for the parsed form, so `raw` and `json` get the same placeholders.
        """

        # "authToken" : "value"  (keys compared in normalized form, so match loosely then check)
        def sub(m: re.Match[str]) -> str:
            if not self.is_secret_key(m.group(2)) or PLACEHOLDER_RE.fullmatch(m.group(4)):
                return m.group(0)
            self.hits += 1
            return f'{m.group(1)}{m.group(3)}"{placeholder(_norm_key(m.group(2)), m.group(4))}"'

        return self.text(_KEY_VALUE_RE.sub(sub, raw))


_HEADER_FIELDS = ("headers", "response_headers")
_PAYLOAD_FIELDS = ("json", "text", "b64", "raw")


def needs_redaction(redactor: Redactor, record: dict[str, Any], serialized: bytes) -> bool:
    """True when `record` may hold a secret under `redactor`'s policy."""
    if not redactor.enabled:
        return False
    if "headers" in record or "response_headers" in record:
        return True
    if redactor.extra_patterns or redactor.extra_keys:
        return True
    if "b64" in record:  # binary: its secrets are invisible in the base64 text
        return True
    return may_hold_secret(serialized)


# The screen runs once per record on the hot path, where `re`'s fixed cost per search (not the bytes
# scanned) dominates, and once per chunk in `wirecap tee`, where the cost per byte does; `re` is fast
# at both only for a pattern that starts with one literal (a leading alternation makes it try every
# position). So: five literal-led searches for the token shapes over the bytes as they are (the shapes
# are case-sensitive, as in `SECRET_PATTERNS`), and ONE search for secret keys over a normalized copy
# read backwards, where every key starts with its `:"` and a secret word must follow at once.
_SHAPE_SEARCHES = tuple(
    re.compile(rx).search
    for rx in (
        rb"-(?:(?<=sk-)|(?<=cb-)|(?<=xox[abprs]-))",
        rb"_(?<=[pousrcb]_)(?:(?<=gh[pousr]_)|(?<=phc_)|(?<=github_))",  # (github_pat_)
        rb"A(?:KIA|Iza)",
        rb"J(?<=eyJ)",
        rb"Bearer ",
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

    A superset test: a token shape anywhere (as `SECRET_PATTERNS` would find it), or a key that
    `Redactor.is_secret_key` would call secret. Escapes are not decoded: callers that screen raw
    input refuse `\\u` (see `chunk_is_clean`); orjson escapes only control characters, `"` and `\\`.
    """
    for search in _SHAPE_SEARCHES:  # noqa: SIM110 - any(<genexpr>) costs as much as the searches
        if search(serialized) is not None:
            return True
    return _KEY_SEARCH(serialized.translate(_NORM_TABLE, _NORM_DROP)[::-1]) is not None


def chunk_is_clean(redactor: Redactor, data: bytes) -> bool:
    """True when no msg record made from (lines of) the raw bytes `data` can need redaction.

    For recorders that hold raw bytes before records are built (`wirecap tee`): one screen per
    chunk instead of one per record. A JSON `\\u` escape could spell a secret only once decoded, so
    a chunk holding one is never clean; nor is any chunk under extra user rules.
    """
    if not redactor.enabled:
        return True
    if redactor.extra_patterns or redactor.extra_keys or (b"\\" in data and b"\\u" in data):
        return False
    return not may_hold_secret(data)


def redact_record(redactor: Redactor, record: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of `record` with every secret replaced; marks changed payloads `redacted`."""
    out: dict[str, Any] = {}
    payload = {k: record[k] for k in _PAYLOAD_FIELDS if k in record}
    for k, v in record.items():
        if k in _PAYLOAD_FIELDS:
            continue
        if k in _HEADER_FIELDS and isinstance(v, dict):
            out[k] = redactor.headers_dict(v)
        elif k in ("seq", "t", "type", "ch", "dir"):
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
    return out
