"""Fill redaction placeholders (`«redacted:KIND:FP»`) with real secrets for a replay against a live server.

`--secret NAME=ENVVAR` names a placeholder KIND (`authtoken`, `bearer`, `x-api-key`, ...) or one exact
`KIND:FP`; the value comes from the environment, never from the command line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

import orjson

from wirecap.capture.redact import fingerprint
from wirecap.errors import WirecapError

PLACEHOLDER = re.compile(r"«redacted:([a-z0-9\-]+):([0-9a-f]{8})»")


class SecretFiller:
    def __init__(self, secrets: dict[str, str]) -> None:
        self.secrets = {k.lower(): v for k, v in secrets.items()}
        self.missing: set[str] = set()
        self.mismatched: set[str] = set()
        self.by_fp: dict[str, str] = {}  # one secret reads the same (FP) under every placeholder kind

    def prime(self, text: str) -> None:
        """See the placeholders of a capture first, so a secret given for one kind also fills the
        placeholders of the same secret recorded under another kind (same fingerprint)."""
        for m in PLACEHOLDER.finditer(text):
            kind, fp = m.group(1), m.group(2)
            value = self.secrets.get(f"{kind}:{fp}", self.secrets.get(kind))
            if value is not None:
                self.by_fp.setdefault(fp, value)

    @classmethod
    def from_options(cls, specs: Iterable[str], environ: dict[str, str] | None = None) -> SecretFiller:
        env = os.environ if environ is None else environ
        out: dict[str, str] = {}
        for spec in specs:
            name, sep, var = spec.partition("=")
            if not sep or not name or not var:
                raise WirecapError(f"--secret {spec!r}: expected NAME=ENVVAR (e.g. authtoken=CODEBUFF_API_KEY)")
            if var not in env:
                raise WirecapError(f"--secret {spec}: environment variable {var} is not set")
            out[name] = env[var]
        return cls(out)

    def _lookup(self, kind: str, fp: str) -> str | None:
        value = self.secrets.get(f"{kind}:{fp}")
        if value is None:
            value = self.secrets.get(kind)
        if value is None:
            value = self.by_fp.get(fp)
        if value is None:
            self.missing.add(kind)
        elif fingerprint(value) != fp:
            self.mismatched.add(f"{kind}:{fp}")
        return value

    def text(self, text: str) -> str:
        if "«redacted:" not in text:
            return text

        def sub(m: re.Match[str]) -> str:
            v = self._lookup(m.group(1), m.group(2))
            return m.group(0) if v is None else v

        return PLACEHOLDER.sub(sub, text)

    def json_bytes(self, data: bytes) -> bytes:
        """Fill placeholders inside serialized JSON: the secret is escaped as a JSON string body."""
        if "«redacted:".encode() not in data:
            return data
        text = data.decode("utf-8", "surrogatepass")

        def sub(m: re.Match[str]) -> str:
            v = self._lookup(m.group(1), m.group(2))
            return m.group(0) if v is None else orjson.dumps(v).decode("utf-8")[1:-1]

        return PLACEHOLDER.sub(sub, text).encode("utf-8", "surrogatepass")

    def warnings(self) -> list[str]:
        out = [f"placeholder kind {k!r} left as is (give --secret {k}=ENVVAR to fill it)"
               for k in sorted(self.missing)]
        out += [f"the secret given for {k} has another fingerprint than the recorded one"
                for k in sorted(self.mismatched)]
        return out
