"""Redaction: worst-case seconds per MB on adversarial inputs, and the two rates on the seeded corpora.

Worst case: 1 MB of each input that once made a shape backtrack or could (`eyJ` repeated made the v1 JWT
shape quadratic: 100 KB took 2.3 s, so 1 MB ~230 s; measured again each run as the baseline), through every entry point a
recorder uses (`text`, a kept `raw`, a binary `b64` payload). The figure is the slowest of them.
Rates: the 100,000 non-secrets of tests/redaction_corpus.py (bytes altered: must be 0) and every secret
shape in 8 positions (recall: must be 100 %); the same corpora the tests put through the recorders.
"""

from __future__ import annotations

import base64
import random
import string
import sys
import time

from bench.common import ROOT, figure

sys.path.insert(0, str(ROOT / "tests"))
from redaction_corpus import ADVERSARIAL, json_escape_ascii, non_secrets, secrets  # noqa: E402 - tests/ is on the path now

# The v1 policy's JWT shape (default-v1, before whole tokens): it backtracks quadratically on "eyJ"s.
V1_JWT = r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"


def _v1_per_mb(quick: bool) -> tuple[float, int]:
    """CPU-s per MB of the v1 JWT shape on "eyJ"s, measured on a prefix and scaled quadratically (a whole MB
    would take minutes)."""
    import re

    n = 30_000 if quick else 100_000
    rx = re.compile(V1_JWT)
    s = "eyJ" * (n // 3)
    t = time.process_time()
    rx.sub("x", s)
    seconds = time.process_time() - t
    return seconds * (1_000_000 / n) ** 2, n


def _worst_case(quick: bool) -> tuple[float, str]:
    from wirecap.capture.redact import Redactor

    size = 200_000 if quick else 1_000_000
    worst, which = 0.0, ""
    # and a MB of distinct realistic keys: every one is learned (up to the cap) and searched for again
    rnd = random.Random(13)
    alphabet = string.ascii_letters + string.digits + "-_"
    keys = " ".join("sk-ant-api03-" + "".join(rnd.choice(alphabet) for _ in range(93)) + "AA"
                    for _ in range(size // 108 + 1))[:size]
    for unit in (*ADVERSARIAL, keys):
        s = unit * (size // len(unit))
        b64 = base64.b64encode(s.encode()).decode()
        for name, fn in (("text", lambda r, s=s: r.text(s)), ("raw", lambda r, s=s: r.raw_json(s)),
                         ("b64", lambda r, b=b64: r.b64(b))):
            red = Redactor()
            t = time.process_time()
            fn(red)
            per_mb = (time.process_time() - t) / (len(s.encode()) / 1e6)
            if per_mb > worst:
                worst, which = per_mb, f"{unit if unit is not keys else 'distinct keys'!r} via {name}"
    return worst, which


def _rates(quick: bool) -> tuple[int, int, int, int, float]:
    from wirecap.capture.redact import Redactor

    corpus = non_secrets(20_000 if quick else 100_000)
    red = Redactor()
    altered = 0
    nbytes = 0
    t = time.process_time()
    for _, s in corpus:
        out = red.text(s)
        nbytes += len(s.encode())
        if out != s:
            altered += sum(a != b for a, b in zip(out, s, strict=False)) + abs(len(out) - len(s))
    clean_rate = nbytes / 1e6 / max(time.process_time() - t, 1e-9)
    placed = found = 0
    for _, secret in secrets():
        r = Redactor()
        for text in (f"x {secret} y", f"\n{secret}\n", f'"{secret}"', f"key={secret}&b=1", f"({secret})",
                     secret + ".", f"data: {secret}"):
            placed += 1
            found += secret not in r.text(text)
        esc = json_escape_ascii(secret)
        out = r.raw_json('{"a" : "line\\n' + esc + '"}')
        placed += 1
        found += esc not in out and secret not in out
    return len(corpus), altered, placed, found, clean_rate


def run(quick: bool = False) -> list[dict]:
    worst, which = _worst_case(quick)
    v1_per_mb, v1_n = _v1_per_mb(quick)
    n, altered, placed, found, clean_rate = _rates(quick)
    return [
        figure("redaction worst case (adversarial 1 MB)", worst, "CPU-s/MB",
               baseline=f"v1 JWT shape, 1 MB of eyJ (measured on {v1_n // 1000} KB, scaled quadratically)",
               baseline_value=v1_per_mb,
               target="< 1 s/MB, linear", ok=worst < 1.0,
               note=f"slowest: {which}; {len(ADVERSARIAL) + 1} inputs x text/raw/b64"),
        figure("redaction false positives (non-secret corpus)", altered, "bytes altered",
               target="0", ok=altered == 0, note=f"{n} realistic non-secrets (UUIDs, ULIDs, digests, base64, "
               f"identifiers, paths, prose); scanned at {clean_rate:.1f} MB/CPU-s"),
        figure("redaction recall (every shape, 8 positions)", 100.0 * found / placed, "%",
               target="100 %", ok=found == placed, note=f"{found}/{placed} placements redacted"),
    ]


if __name__ == "__main__":
    from bench.common import print_table

    print_table(run("--quick" in sys.argv))
