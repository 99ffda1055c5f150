"""Redaction placeholders (`«redacted:KIND:FP»`) on a live wire.

`SecretFiller` (replay client): fills them with real secrets for a replay against a live server.
`--secret NAME=ENVVAR` names a placeholder KIND (`authtoken`, `bearer`, `x-api-key`, ...) or one exact
`KIND:FP`; the value comes from the environment, never from the command line.

`StandIns` (replay serve): serves a well-formed stand-in where a recorded response has one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from typing import Any

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


# --- replay serve: what the client gets where the recording has a placeholder --------------------------
_PLACEHOLDER_BYTES = re.compile(r"«redacted:([a-z0-9\-]+):([0-9a-f]{8})»".encode())
_PLACEHOLDER_MARK = "«redacted:".encode()
STAND_IN_PREFIX = "wirecap-redacted-"
_STAND_IN = re.compile(rb"wirecap-redacted-([a-z0-9\-]+?)-([0-9a-f]{8})(?![A-Za-z0-9_\-])")


def stand_in(kind: str, fp: str) -> str:
    """The value served for `«redacted:KIND:FP»`: `wirecap-redacted-KIND-FP`. Token characters only
    (valid in a header, a cookie, a URL, a JSON string, without escaping), the same for the same
    recorded secret, and visibly not a real one."""
    return f"{STAND_IN_PREFIX}{kind}-{fp}"


class StandIns:
    """`replay serve` never hands a client a redaction placeholder where it expects a value: a
    placeholder in a recorded response (header, body, SSE event, WebSocket message) is served as its
    stand-in (`stand_in`), with one warning per kind naming the first seq; a stand-in the client sends
    back is read as the placeholder again (`restore`), so it matches the recorded request (matching
    already ignores a placeholder's fingerprint). A client that needed the real value (a session token
    it must present elsewhere) sees a well-formed wrong one instead of bytes no header may hold."""

    def __init__(self, warn: Callable[[str], None] | None = None) -> None:
        self._warn = warn
        self.warned: set[str] = set()
        self.served = False

    def _note(self, kind: str, fp: str, seq: Any, ch: str) -> None:
        if kind in self.warned:
            return
        self.warned.add(kind)
        if self._warn is not None:
            self._warn(f"seq {seq} ({ch}): the recording holds a redacted {kind} value; serving the stand-in "
                       f"{stand_in(kind, fp)} (every redacted {kind} is served this way)")

    def fill(self, data: bytes, seq: Any, ch: str) -> bytes:
        """`data` (recorded at `seq` on channel `ch`) with every placeholder replaced by its stand-in."""
        if _PLACEHOLDER_MARK not in data:
            return data
        self.served = True

        def sub(m: re.Match[bytes]) -> bytes:
            kind, fp = m.group(1).decode(), m.group(2).decode()
            self._note(kind, fp, seq, ch)
            return stand_in(kind, fp).encode()

        return _PLACEHOLDER_BYTES.sub(sub, data)

    def fill_text(self, text: str, seq: Any, ch: str) -> str:
        if "«redacted:" not in text:
            return text
        return self.fill(text.encode("utf-8", "surrogatepass"), seq, ch).decode("utf-8", "surrogatepass")

    def restore(self, data: bytes) -> bytes:
        """A live message with the stand-ins we served turned back into placeholders."""
        if not self.served or STAND_IN_PREFIX.encode() not in data:
            return data
        return _STAND_IN.sub(lambda m: f"«redacted:{m.group(1).decode()}:{m.group(2).decode()}»".encode(), data)
