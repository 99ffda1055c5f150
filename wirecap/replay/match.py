"""Order-aware, normalized matching of a live client message against the recorded one.

"Same message" ignores what changes from run to run: the dialect's volatile fields (from
`wirecap.dialects.volatile_paths`, their one home; an analytics request's under the `TELEMETRY`
profile), the user's `--ignore PATH`s, the fingerprints of redaction placeholders (a live secret
matches any recorded placeholder of the same key), and values volatile by shape: ids, timestamps,
loopback ports and the client's working directory / HOME / TMPDIR, as substrings, so the prompt text
around them is still compared (`wirecap.analysis.idshape`, the same rules as `wirecap diff`). On a mismatch the closest recorded candidate and
a field-level diff say exactly what differed. Sans-I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from wirecap import dialects
from wirecap.analysis.idshape import EnvMask, mask_value
from wirecap.analysis.normalize import Normalizer
from wirecap.analysis.valuediff import aligned_diffs, jsonable, render, render_line
from wirecap.capture.payload import payload_bytes
from wirecap.capture.redact import Redactor
from wirecap.errors import WirecapError
from wirecap.replay.script import ChannelScript

# Analytics requests (`wirecap.dialects.is_telemetry_channel`) are matched under the `TELEMETRY`
# profile: a live request to one matches any recorded one of its route whatever it holds, and a
# recording may answer again (see `ScriptPool.take_http`).
TELEMETRY = dialects.TELEMETRY

# Placeholders of secrets: the live value is the secret itself, never the placeholder.
SECRET_VALUE_PATHS = ("**.authToken", "**.apiKey", "**.api_key")


def _seq_or_zero(rec: dict[str, Any]) -> int:
    seq = rec.get("seq")
    return seq if isinstance(seq, int) else 0


def channel_dialect(script: ChannelScript) -> str | None:
    """The channel's dialect as the decoders decide it: `wirecap.dialects.detect_channel` over the
    open record and the same first messages (the hint, else the dialects' sniffs). None when no
    dialect claims the channel (then only the id-shaped defaults and `--ignore`s apply)."""
    first: list[dict[str, Any]] = []
    for s in script.steps:
        if s.client is not None:
            first.append(s.client)
        first.extend(r.record for r in s.replies)
        if len(first) >= dialects.DETECT_MSGS:
            break
    first.sort(key=_seq_or_zero)
    return dialects.detect_channel(script.open, first[:dialects.DETECT_MSGS])[0]


_DETECT: Any = object()  # `match_profile`'s "not given": None is a dialect answer


def match_profile(script: ChannelScript, dialect: str | None = _DETECT) -> str | None:
    """What a live message of this channel is matched as: `TELEMETRY` for an analytics request
    (`wirecap.dialects.is_telemetry_channel`: its batches depend on the client's flush timer, not on
    the conversation, so a live request matches any recorded one of its route), else the channel's
    dialect (`channel_dialect`). Both are names `wirecap.dialects.volatile_paths` knows.
    `dialect`: the channel's `channel_dialect` when the caller already has it (detected once)."""
    if dialects.is_telemetry_channel(script.open):
        return TELEMETRY
    return channel_dialect(script) if dialect is _DETECT else dialect


def volatile_for(profile: str | None) -> list[str]:
    """Default volatile paths of a match profile (a dialect, `TELEMETRY` or None): the secrets'
    placeholders and what `wirecap.dialects.volatile_paths` says (the one home of volatile paths)."""
    paths: list[str] = list(SECRET_VALUE_PATHS)
    try:
        paths.extend(dialects.volatile_paths(profile))
    except WirecapError:  # a name the registry does not know (a hint from another version): no defaults
        pass
    return list(dict.fromkeys(paths))


def comparable(record: dict[str, Any] | None) -> Any:
    """What is compared of a message: its JSON value, else its text (binary as bytes)."""
    if record is None:
        return None
    if "json" in record:
        return record["json"]
    if "text" in record:
        return record["text"]
    return payload_bytes(record)


def describe(value: Any) -> str:
    """A short name for a message: `action user-input`, `ack`, `{"model": ...}`, `text 'abc'`."""
    if value is None:
        return "no body"
    if isinstance(value, dict):
        kind = value.get("type")
        data = value.get("data")
        sub = data.get("type") if isinstance(data, dict) else None
        if isinstance(kind, str):
            return f"{kind} {sub}" if isinstance(sub, str) else kind
        keys = ", ".join(map(str, list(value)[:4]))
        return "{" + keys + (", ..." if len(value) > 4 else "") + "}"
    text = value if isinstance(value, str) else repr(value)
    return "text " + repr(text[:40])


def _named(value: Any) -> str:
    """` (action user-input)` for a message with a type; nothing for a body that is only a key list."""
    d = describe(value)
    return "" if d.startswith("{") else f" ({d})"


MESSAGE_PREFIX = "wirecap replay mismatch: "


@dataclass
class Mismatch:
    """A live client message that matched no recorded one (or not the one expected next).

    `diffs` are `(path, recorded, live)` from `wirecap.analysis.valuediff.aligned_diffs` (lists
    aligned: an inserted element is one entry, its missing side `MISSING`). `reason()` is one line,
    `report()` several (what wirecap prints), `message()` what the live client is told."""

    ch: str
    index: int  # 1-based number of the live client message on its channel
    live: Any
    candidate_seq: int | None
    candidate: Any
    diffs: list[tuple[str, Any, Any]] = field(default_factory=list)  # (path, recorded, live)
    what: str = "message"
    expected_seq: int | None = None
    error: str | None = None  # matching itself failed (a bug): what was raised

    def reason(self) -> str:
        """One line: the message, the candidate and the first difference."""
        head = f"{self.what} #{self.index}{_named(self.live)} on {self.ch}"
        if self.error is not None:
            return f"{head}: wirecap could not match it: {self.error}"
        if self.candidate_seq is None:
            return f"{head}: no recorded {self.what} left to match"
        if not self.diffs and self.expected_seq not in (None, self.candidate_seq):
            return (f"{head} matches recorded seq {self.candidate_seq}, out of order: "
                    f"recorded seq {self.expected_seq} was expected first")
        s = f"{head} does not match recorded seq {self.candidate_seq}{_named(self.candidate)}"
        if self.diffs:
            s += ": " + render_line(self.diffs[0], 48)
            if len(self.diffs) > 1:
                s += f" (+{len(self.diffs) - 1} more)"
        return s

    @classmethod
    def failed(cls, ch: str, index: int, live: Any, error: BaseException, what: str = "message") -> Mismatch:
        """A message that could not be matched because matching raised: told like a mismatch (the
        client stops and says why) instead of dropping the connection."""
        return cls(ch, index, live, None, None, what=what, error=f"{type(error).__name__}: {error}"[:200])

    def message(self) -> str:
        """What the live client is told (an HTTP error message, the start of a WebSocket close reason)."""
        return MESSAGE_PREFIX + self.reason()

    def brief(self) -> str:
        """`message()` in about 120 characters (a WebSocket close reason): what, where, first difference."""
        head = f"{MESSAGE_PREFIX}{self.what} #{self.index}"
        if self.error is not None:
            return f"{head}: wirecap could not match it: {self.error}"
        if self.candidate_seq is None:
            return f"{head} on {self.ch}: no recorded {self.what} left"
        if not self.diffs:
            return f"{head} out of order: recorded seq {self.expected_seq} expected first"
        more = f" ({len(self.diffs)} differences)" if len(self.diffs) > 1 else ""
        return f"{head} vs seq {self.candidate_seq}{more}: {render_line(self.diffs[0], 24)}"

    def diff_lines(self, limit: int = 20) -> list[str]:
        """The differences, aligned, one short line each (`+ tools[17] {...}`, `~ path: recorded .., live ..`)."""
        return render(self.diffs, limit)

    def report(self) -> str:
        """Several lines for stderr or a test failure: the reason, then the aligned differences."""
        lines = ["replay mismatch: " + self.reason()]
        if self.candidate_seq is not None:
            lines.append(f"  closest recorded candidate: seq {self.candidate_seq}{_named(self.candidate)}")
            lines.extend("    " + line for line in self.diff_lines())
        return "\n".join(lines)

    def redacted(self, redactor: Redactor) -> Mismatch:
        """The same mismatch with the secrets `redactor` finds replaced by placeholders, on both sides
        (a live client's key, token or cookie, and what a `--no-redact` recording holds): what is
        printed, told to the client, kept and shown by pytest is built from this one."""
        def red(v: Any) -> Any:
            if isinstance(v, (bytes, bytearray)):
                text = bytes(v).decode("utf-8", "surrogateescape")
                out = redactor.text(text)
                return v if out == text else out.encode("utf-8", "surrogateescape")
            return redactor.value(v)

        return replace(
            self, live=red(self.live), candidate=red(self.candidate),
            diffs=[(path, red(rec), red(live)) for path, rec, live in self.diffs],
            error=None if self.error is None else redactor.text(self.error))

    def to_json(self) -> dict[str, Any]:
        """The mismatch as plain JSON values (bytes as text or base64; never raises)."""
        return {
            "error": "wirecap replay: unmatched " + self.what,
            "reason": self.reason(),
            "channel": self.ch,
            "index": self.index,
            "candidate_seq": self.candidate_seq,
            "diff": self.diff_lines(),
            "diffs": [{"path": p, "recorded": jsonable(o), "live": jsonable(n)} for p, o, n in self.diffs],
        }


class Matcher:
    """Compares live messages with recorded ones under one set of ignore rules."""

    def __init__(self, ignore: Sequence[str] = (), dialect: str | None = None, *, shapes: bool = True) -> None:
        self.ignore = list(dict.fromkeys([*volatile_for(dialect), *ignore]))
        self.dialect = dialect
        self._norm = Normalizer(self.ignore)
        self.shapes = shapes
        # Each side's environment (cwd, HOME, TMPDIR), learned from the messages it sent: the capture
        # may have been made in another directory or HOME than the live client runs in.
        self.env_recorded = EnvMask()
        self.env_live = EnvMask()
        self._live_memo: tuple[Any, EnvMask, int, Any] | None = None  # see `_live`

    def normalize(self, value: Any, env: EnvMask | None = None) -> Any:
        """`value` with volatile fields hidden and, unless `shapes` is off, id/time/port shapes and the
        paths of `env` (learned from `value` first) masked."""
        if isinstance(value, (dict, list, str)):
            value = self._norm(value)
        if not self.shapes:
            return value
        if env is not None and isinstance(value, str):
            env.learn(value)  # (JSON values are learned from inside `mask_value`)
        return mask_value(value, env)

    def same(self, live: Any, recorded: Any) -> bool:
        return self._live(live) == self.normalize(recorded, self.env_recorded)

    def diffs(self, live: Any, recorded: Any) -> list[tuple[str, Any, Any]]:
        """Aligned differences `(path, recorded, live)`, volatile fields hidden."""
        nrec = self.normalize(recorded, self.env_recorded)
        return aligned_diffs(nrec, self._live(live))

    def _live(self, live: Any) -> Any:
        """`self.normalize(live, self.env_live)`, computed once for a live message compared with several
        recorded ones (LLM request bodies are large): learning the live environment from the same value
        again learns nothing, so while the live environment has learned nothing else since (its paths
        only grow), the normalized value is the one kept for that very object."""
        env = self.env_live
        memo = self._live_memo
        if memo is not None and memo[0] is live and memo[1] is env and memo[2] == len(env.paths):
            return memo[3]
        nlive = self.normalize(live, env)
        self._live_memo = (live, env, len(env.paths), nlive)  # (holding `live`: its id stays its own)
        return nlive

    def closest(self, live: Any, candidates: Iterable[tuple[int | None, Any]]) -> tuple[int | None, Any, list]:
        """(seq, value, diffs) of the candidate with the fewest differing fields; the first on ties."""
        best: tuple[int | None, Any, list] = (None, None, [])
        best_n = -1
        for seq, value in candidates:
            d = self.diffs(live, value)
            if best_n < 0 or len(d) < best_n:
                best, best_n = (seq, value, d), len(d)
                if best_n == 0:
                    break
        return best


class ChannelMatcher:
    """Order-aware matching for one live WebSocket connection against one recorded channel.

    Client messages must come in the recorded order. `strict` refuses anything else; lenient mode
    takes the next recorded step anyway (and reports the mismatch).
    """

    def __init__(self, script: ChannelScript, matcher: Matcher, strict: bool = True) -> None:
        self.script = script
        self.matcher = matcher
        self.strict = strict
        self.steps = script.client_steps
        self.pos = 0
        self.live_count = 0

    @property
    def done(self) -> bool:
        return self.pos >= len(self.steps)

    def feed(self, live: Any) -> tuple[int | None, Mismatch | None]:
        """Match one live client message: (index of the step to play or None, mismatch or None)."""
        self.live_count += 1
        if self.pos >= len(self.steps):
            mm = Mismatch(self.script.ch, self.live_count, live, None, None)
            return None, mm
        step = self.steps[self.pos]
        client = step.client or {}  # (the steps here are the client steps)
        recorded = comparable(client)
        if self.matcher.same(live, recorded):
            self.pos += 1
            return self.pos - 1, None
        cands = [((s.client or {}).get("seq"), comparable(s.client)) for s in self.steps[self.pos:]]
        seq, value, diffs = self.matcher.closest(live, cands)
        mm = Mismatch(self.script.ch, self.live_count, live, seq, value, diffs, expected_seq=client.get("seq"))
        if self.strict:
            return None, mm
        self.pos += 1
        return self.pos - 1, mm
