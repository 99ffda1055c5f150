"""Seeded corpora for redaction: realistic strings that are NOT secrets, and every secret shape.

Generated in code (deterministic for a seed), never committed as data. Used by
tests/integration/test_redaction_corpus.py (false positives must be 0 bytes, recall 100 %) and bench/bench_redact.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid

ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

# Words of real code and prose, many holding a secret prefix inside them (sk-, cb-, ghp, AKIA, eyJ, phc).
WORDS = (  # noqa: SIM905 - a paragraph of words reads better than a list literal
    "disk usage report task queue worker risk score desk lamp mask layer ask user whisk kiosk tusk husk "
    "dusk brisk asterisk flask sketch skip skill sky cb callback cbor cbz rcb abcb ghp ghpages akia kakiage "
    "eyjafjallajokull heyjude phc phcache xox xoxo sk bearer token api key secret password auth session "
    "select all status container heading gradient row tick inbox pattern clip card learn image proj admin "
    "svcacct live test pat fake none main src lib util core index worker service handler client server "
    "config settings schema model view controller router cache store queue stream event message request "
    "response error retry timeout limit offset page cursor batch chunk frame buffer socket proxy replay "
    "record capture decode encode parse format render build deploy release version commit branch merge "
    "rebase diff patch hunk line column file path dir home user root tmp var log data blob hash digest"
).split()
EXTS = ("ts", "tsx", "js", "mjs", "py", "rs", "go", "md", "json", "jsonl", "yaml", "toml", "sh", "css", "html")
PROSE = (
    "run the disk-usage-report script on src/task-queue-worker.ts",
    "the risk-free desk-bound task-oriented team asked for a brisk review",
    "Bearer tokens are sent in the Authorization header (the Bearer scheme)",
    "set Authorization: Bearer YOUR_API_KEY or Bearer $TOKEN or Bearer ${process.env.API_KEY}",
    "Bearer authentication is described in RFC 6750; use Bearer <token>",
    "the kakiage at the kiosk-stand near the eyjafjallajokull-tour desk",
    "heyJude played while the ghpages deploy ran; AKIA is how AWS key ids start",
    "sk- and cb- prefixes, ghp_ and eyJ are only prefixes, not keys",
    "use sk-learn-style pipelines, the cb-select-all-1 checkbox and the cb-pat-${size} pattern id",
    "a phc_ prefix or xoxb- alone is no token; sk_live_ and rk_test_ neither",
    "asterisk-free whisk-ready flask-app task-runner-v2 disk-io-stats-2024-q3",
)


def _choice(r: random.Random, alphabet: str, n: int) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def _words(r: random.Random, n: int) -> list[str]:
    return [r.choice(WORDS) for _ in range(n)]


def _uuid(r: random.Random) -> str:
    u = str(uuid.UUID(int=r.getrandbits(128), version=4))
    if r.random() < 0.3:  # force a "cb-" inside (about 1.6 % of real UUIDs have one)
        i = r.choice([6, 11, 16, 21])
        u = u[:i] + "cb" + u[i + 2:]
    return u


def _ident(r: random.Random) -> str:
    ws = _words(r, r.randint(2, 5))
    if r.random() < 0.3:
        ws.append(str(r.randint(0, 9999)))
    style = r.randrange(6)
    if style == 0:
        return "-".join(ws)
    if style == 1:
        return "_".join(ws)
    if style == 2:
        return ws[0] + "".join(w.capitalize() for w in ws[1:])
    if style == 3:
        return "".join(w.capitalize() for w in ws)
    if style == 4:
        return "_".join(w.upper() for w in ws)
    return "-".join(ws) + "-" + _choice(r, HEX, r.choice([7, 8, 12]))


def _path(r: random.Random) -> str:
    parts = [_ident(r) if r.random() < 0.5 else r.choice(WORDS) for _ in range(r.randint(1, 5))]
    lead = r.choice(["", "/", "./", "~/", "/home/user/", "node_modules/@scope/", "C:\\\\Users\\\\dev\\\\"])
    return lead + "/".join(parts) + "." + r.choice(EXTS)


def _b64(r: random.Random) -> str:
    raw = r.randbytes(r.randint(6, 96))
    if r.random() < 0.3:  # base64 of JSON starts with eyJ, a single segment is no JWT
        raw = json.dumps({r.choice(WORDS): r.choice(WORDS), "n": r.randint(0, 99)}).encode()
    if r.random() < 0.5:
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")
    return base64.b64encode(raw).decode()


def _prose(r: random.Random) -> str:
    if r.random() < 0.3:
        return r.choice(PROSE)
    ws = _words(r, r.randint(4, 14))
    for i in range(len(ws)):
        if r.random() < 0.15:
            ws[i] = ws[i] + "-" + r.choice(WORDS)
    return " ".join(ws).capitalize() + r.choice([".", "!", "?", ":", ""])


def _misc(r: random.Random) -> str:
    k = r.randrange(8)
    if k == 0:
        return f"2026-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:00:00.{r.randint(0, 999):03d}Z"
    if k == 1:
        return f"{r.randint(0, 30)}.{r.randint(0, 30)}.{r.randint(0, 300)}"
    if k == 2:
        return f"https://example.com/{'/'.join(_words(r, 3))}?page={r.randint(1, 9)}&q={_ident(r)}#sec-{r.choice(WORDS)}"
    if k == 3:
        return f"{r.choice(WORDS)}.{r.choice(WORDS)}@example.org"
    if k == 4:
        return "toolu_" + _choice(r, ALNUM, 24)  # a tool-use id
    if k == 5:
        return "msg_" + _choice(r, ALNUM, 24)
    if k == 6:
        return "chatcmpl-" + _choice(r, ALNUM, 29)
    return "call_" + _choice(r, ALNUM, 24)


_KINDS = (
    ("uuid", _uuid, 3),
    ("ulid", lambda r: _choice(r, CROCKFORD, 26), 1),
    ("sha256", lambda r: hashlib.sha256(r.randbytes(8)).hexdigest(), 1),
    ("git-sha", lambda r: _choice(r, HEX, r.choice([7, 8, 12, 40])), 1),
    ("base64", _b64, 2),
    ("identifier", _ident, 4),
    ("path", _path, 3),
    ("prose", _prose, 3),
    ("misc", _misc, 2),
)


def non_secrets(n: int = 100_000, seed: int = 13) -> list[tuple[str, str]]:
    """`n` (kind, string) pairs of realistic non-secret text, the same for a seed."""
    r = random.Random(seed)
    table = [(name, fn) for name, fn, w in _KINDS for _ in range(w)]
    return [(name, fn(r)) for name, fn in (r.choice(table) for _ in range(n))]


def _with_digit(r: random.Random, alphabet: str, n: int) -> str:
    s = list(_choice(r, alphabet, n))
    s[r.randrange(n)] = r.choice(string.digits)
    return "".join(s)


def secrets(per_shape: int = 8, seed: int = 13) -> list[tuple[str, str]]:
    """(kind, secret) for every supported shape, `per_shape` realistic samples each (all fake)."""
    r = random.Random(seed)
    makers = {
        "anthropic-key": lambda: "sk-ant-api03-" + _with_digit(r, B64URL, 93) + "AA",
        "anthropic-oauth": lambda: "sk-ant-oat01-" + _with_digit(r, B64URL, 93) + "AA",
        "openai-key": lambda: "sk-" + _choice(r, ALNUM, 20) + "T3BlbkFJ" + _choice(r, ALNUM, 20),
        "openai-proj": lambda: "sk-proj-" + _with_digit(r, B64URL, 156),
        "openai-svcacct": lambda: "sk-svcacct-" + _with_digit(r, B64URL, 120),
        "deepseek": lambda: "sk-" + _with_digit(r, HEX, 32),
        "openrouter-key": lambda: "sk-or-v1-" + _choice(r, HEX, 64),
        "codebuff-key": lambda: "cb-pat-" + _with_digit(r, HEX, 64),
        "github-token": lambda: r.choice(["ghp_", "gho_", "ghs_", "ghu_", "ghr_"]) + _choice(r, ALNUM, 36),
        "github-pat": lambda: "github_pat_" + _choice(r, ALNUM, 22) + "_" + _choice(r, ALNUM, 59),
        "aws-key": lambda: r.choice(["AKIA", "ASIA"]) + _choice(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
        "google-key": lambda: "AIza" + _choice(r, B64URL, 35),
        "slack-token": lambda: f"xoxb-{r.randint(10**10, 10**12)}-{r.randint(10**10, 10**12)}-" + _choice(r, ALNUM, 24),
        "posthog-key": lambda: "phc_" + _choice(r, ALNUM, 43),
        "stripe-key": lambda: r.choice(["sk_live_", "rk_test_"]) + _choice(r, ALNUM, 24),
        "jwt": lambda: ".".join([
            base64.urlsafe_b64encode(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()).decode().rstrip("="),
            base64.urlsafe_b64encode(json.dumps({"sub": _choice(r, ALNUM, 12), "iat": r.randint(10**9, 2 * 10**9)}).encode()).decode().rstrip("="),
            _choice(r, B64URL, 43)]),
    }
    return [(kind, make()) for kind, make in makers.items() for _ in range(per_shape)]


def json_escape_ascii(s: str, every: int = 3) -> str:
    """`s` with every `every`-th character written as a JSON `\\u00XX` escape (as some encoders do)."""
    return "".join(f"\\u{ord(c):04x}" if i % every == 1 else c for i, c in enumerate(s))


# Adversarial units, each repeated to a megabyte: what made the v1 shapes backtrack (`eyJ`...), starts of
# shapes that never complete, escapes, and a key that ends in a non-ASCII letter. The redaction tests check
# each against the reference scanner; `make bench` (bench/bench_redact.py) reports the slowest per MB.
ADVERSARIAL = ("eyJ", "sk-", "a-", "eyJa.", "Bearer ", "eyJaaaaaaaaaaaa.", "sk-ant-", "\\u002d", '"\\"', "\\n",
               "AKIA", "xoxb-1", "ghp_", "cb-pat-", "sk-ant-api03-aaaaaaaaaaaaaaaaaaaaaaaaaaa1é ")
