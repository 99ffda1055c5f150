"""What every dialect decoder shares: the `Dialect` descriptor, the `Decoder` base and `Finding`.

A decoder is sans-I/O: the driver in `wirecap.dialects` feeds it the records of one unit (a channel,
or a process with its pipes) and it returns universal events. It also keeps the protocol state that
validation needs, so one pass both decodes and checks: rule violations go to `decoder.findings`.
Nothing here raises on bad input; what a decoder does not understand becomes an `unparsed` event.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wirecap.events import (
    ERROR,
    ITEM_COMPLETED,
    SESSION_ENDED,
    STATUS,
    UNPARSED,
    Event,
)

ERROR_SEV = "error"
WARNING = "warning"
INFO = "info"

# Validation options and their defaults (seconds). Documented in docs/validation-rules.md.
DEFAULT_OPTIONS: dict[str, float] = {
    "heartbeat_interval": 30.0,
    "heartbeat_timeout": 60.0,
    "ack_latency": 5.0,
    "tool_call_timeout": 30.0,
    "gap": 30.0,
}


@dataclass(slots=True)
class Finding:
    """One validation result: a rule broken (or worth noting) at a record."""

    severity: str  # "error" | "warning" | "info"
    rule: str
    message: str
    seq: int | None
    ch: str | None

    def to_json(self) -> dict[str, Any]:
        return {"severity": self.severity, "rule": self.rule, "message": self.message, "seq": self.seq, "ch": self.ch}


Sniff = Callable[[dict[str, Any] | None, list[dict[str, Any]]], str | None]


@dataclass(frozen=True, slots=True)
class Dialect:
    """A registry entry: the decoder class, where it runs, how it is recognized, what changes run to run.

    `sniff(open_record, first_msgs)` is the dialect's own detector: given the unit's open record (for a
    process: the process's; None when the capture has none) and its first message records (up to
    `DETECT_MSGS`, stderr left out, in order) it returns a short reason when the unit speaks this
    dialect, else None. It decides from all the messages it is given (one unknown type is not a
    reason to say no) and never raises. The driver asks the sniffs of the unit's transport in
    ascending `priority`: more specific dialects (CodeBuddy before the Claude Code it extends,
    session files before streams) come first.
    """

    name: str
    transport: str  # "pipe" (process stdout/stdin), "ws" or "http"
    decoder: Callable[..., Decoder]
    summary: str
    volatile: tuple[str, ...] = ()
    rules: tuple[tuple[str, str, str], ...] = field(default=())  # (rule, severity, one-line meaning)
    sniff: Callable[[dict[str, Any] | None, list[dict[str, Any]]], str | None] | None = None
    priority: int = 100
    known: Any = None  # a wirecap.dialects.drift.Known: the message types and fields it knows (rule `drift`)


# --- what sniffs read ----------------------------------------------------------------------------------
DETECT_MSGS = 8  # first messages of a unit that detection looks at (decode, info, report, replay alike)

_INTERPRETERS = frozenset(("node", "nodejs", "npx", "bun", "bunx", "deno", "python", "python3", "env", "pnpm",
                           "yarn", "sh", "bash", "uv", "uvx"))
_EXTS = (".js", ".cjs", ".mjs", ".exe", ".cmd", ".sh", ".py")


def _names_of(word: str) -> tuple[str, ...]:
    parts = [p for p in word.replace("\\", "/").split("/") if p]
    if not parts:
        return ()
    base = parts[-1]
    for ext in _EXTS:
        if base.endswith(ext):
            base = base[: -len(ext)]
    return (base, *reversed(parts[:-1]))


def program_names(open_record: Any) -> tuple[str, ...]:
    """The names the program of a process open record goes by, most specific first: the base name of
    argv[0] and its folders (`.../node_modules/@anthropic-ai/claude-code/cli.js` gives `cli`,
    `claude-code`, ...); for an interpreter (`node`, `python3`, `npx`, ...) those of its script.
    Empty when there is no argv or the words are not strings."""
    if not isinstance(open_record, dict):
        return ()
    argv = open_record.get("argv")
    if not isinstance(argv, list):
        return ()
    for i, word in enumerate(argv[:4]):
        if not isinstance(word, str):
            return ()
        if i > 0 and word.startswith("-"):
            continue
        names = _names_of(word)
        if not names:
            continue
        if names[0].rstrip("0123456789.") in _INTERPRETERS and i < 3:
            continue
        return names
    return ()


def argv_option(open_record: Any, option: str) -> str | None:
    """The value of `--option VALUE` or `--option=VALUE` in a process open record's argv, else None."""
    argv = open_record.get("argv") if isinstance(open_record, dict) else None
    if not isinstance(argv, list):
        return None
    for i, word in enumerate(argv):
        if not isinstance(word, str):
            continue
        if word == option and i + 1 < len(argv) and isinstance(argv[i + 1], str):
            return argv[i + 1]
        if word.startswith(option + "="):
            return word[len(option) + 1:]
    return None


def url_path(open_record: Any) -> str:
    """The path of an http/ws open record's URL without a trailing slash ("" when there is none)."""
    url = open_record.get("url") if isinstance(open_record, dict) else None
    if not isinstance(url, str):
        return ""
    from urllib.parse import urlsplit

    try:
        return urlsplit(url).path.rstrip("/")
    except ValueError:
        return ""


def out_msgs(msgs: Any) -> list[dict[str, Any]]:
    """The msg records of a sample that are not stderr lines (what sniffs judge)."""
    if not isinstance(msgs, list):
        return []
    out = []
    for r in msgs:
        if isinstance(r, dict) and r.get("type", "msg") == "msg":
            ch = r.get("ch")
            if isinstance(ch, str) and ch[:6] == "stderr":
                continue
            out.append(r)
    return out


def json_objects(msgs: Any) -> list[dict[str, Any]]:
    """The JSON-object payloads of a sample's non-stderr messages, in order."""
    return [r["json"] for r in out_msgs(msgs) if isinstance(r.get("json"), dict)]


def by_argv(open_record: Any, msgs: Any, names: frozenset[str] | tuple[str, ...], what: str) -> str | None:
    """The argv half of a pipe dialect's sniff: the process runs one of `names` and its stdout does not
    contradict (it printed nothing yet, or at least one JSON object: text output, e.g. `-p` without
    `--output-format stream-json` or a terminal UI, is not the JSON-lines dialect)."""
    prog = program_names(open_record)
    hit = next((n for n in prog if n in names), None)
    if hit is None:
        return None
    sample = out_msgs(msgs)
    if sample and not any(isinstance(r.get("json"), (dict, list)) for r in sample):
        return None
    fmt = argv_option(open_record, "--output-format") or argv_option(open_record, "--format")
    if fmt == "text":
        return None
    return f"argv runs {hit} ({what})" + ("" if sample else "; no output yet")


def raw_payload(rec: dict[str, Any]) -> Any:
    """The payload of a msg record as it is kept in an `unparsed` event."""
    if "json" in rec:
        return rec["json"]
    if "text" in rec:
        return rec["text"]
    if "b64" in rec:
        return {"b64": rec["b64"]}
    return None


def payload_json(rec: dict[str, Any]) -> Any:
    """The JSON value of a msg (None when the payload is not JSON)."""
    return rec.get("json")


def text_of(rec: dict[str, Any]) -> str | None:
    """The payload as text when it is text (or JSON spelled as text), else None."""
    if "text" in rec:
        return rec["text"]
    if "b64" in rec:
        try:
            return base64.b64decode(rec["b64"], validate=False).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return None
    return None


class Decoder:
    """Base decoder for one unit. Subclasses implement `on_msg` (and optionally the other hooks).

    `feed(record)` accepts any record type; `finish()` runs end-of-stream checks. Both return lists
    of events and never raise on bad input (a bug in a hook becomes an `unparsed` event too).
    """

    dialect = ""
    json_lines = True  # payloads are expected to be JSON (a non-JSON message breaks `invalid-json`)

    def __init__(self, unit: str, options: dict[str, Any] | None = None) -> None:
        self.unit = unit
        opts = dict(DEFAULT_OPTIONS)
        if options:
            opts.update({k: v for k, v in options.items() if v is not None})
        self.options = opts
        self.findings: list[Finding] = []
        self.exit_code: int | None = None
        self.signal: str | None = None
        self._last: dict[str, Any] | None = None  # the latest record fed (times and seqs read from it)
        self.closed_session = False

    @property
    def last_t(self) -> float:
        t = self._last.get("t") if self._last is not None else None
        return t if isinstance(t, (int, float)) and not isinstance(t, bool) else 0.0

    @property
    def last_seq(self) -> int | None:
        return self._last.get("seq") if self._last is not None else None

    # --- helpers ---------------------------------------------------------------------------------
    def ev(self, kind: str, rec: dict[str, Any], item: str | None = None, id: str | None = None,
           role: str | None = None, data: dict[str, Any] | None = None) -> Event:
        return Event(kind, rec.get("ch") or self.unit, (rec.get("seq", 0),), rec.get("t", 0.0), self.dialect,
                     item, id, role, data if data is not None else {})

    def unparsed(self, rec: dict[str, Any], reason: str) -> Event:
        return Event(UNPARSED, rec.get("ch") or self.unit, (rec.get("seq", 0),), rec.get("t", 0.0), self.dialect,
                     None, None, None, {"reason": reason, "raw": raw_payload(rec)})

    def find(self, severity: str, rule: str, message: str, rec: dict[str, Any] | None = None,
             seq: int | None = None, ch: str | None = None) -> None:
        if rec is not None:
            seq = rec.get("seq") if seq is None else seq
            ch = rec.get("ch") if ch is None else ch
        self.findings.append(Finding(severity, rule, message, seq, ch if ch is not None else self.unit))

    def msg_type(self, rec: dict[str, Any]) -> str:
        """The wire message type used by stats (`messages_by_type`)."""
        value = rec.get("json")
        if isinstance(value, dict):
            t = value.get("type")
            if isinstance(t, str):
                return t
            return "object"
        if "json" in rec:
            return type(value).__name__
        return "text" if "text" in rec else "binary"

    # --- driver entry points ------------------------------------------------------------------------
    def feed(self, rec: dict[str, Any]) -> list[Event]:
        self._last = rec
        rtype = rec.get("type")
        try:
            if rtype == "msg":
                return self.on_msg(rec)
            if rtype == "open":
                return self.on_open(rec)
            if rtype == "close":
                return self.on_close(rec)
            if rtype == "response":
                return self.on_response(rec)
            if rtype == "error":
                return self.on_error_record(rec)
            return [self.unparsed(rec, f"unexpected record type {rtype!r}")]
        except Exception as e:  # noqa: BLE001 - a decoder bug must not lose the record or the run
            return self._failed(rec, e)

    def feed_msg(self, rec: dict[str, Any]) -> list[Event]:
        """`feed` for a record known to be a msg: the driver's hot path skips the type dispatch."""
        self._last = rec
        try:
            return self.on_msg(rec)
        except Exception as e:  # noqa: BLE001 - as in feed
            return self._failed(rec, e)

    def _failed(self, rec: dict[str, Any], e: Exception) -> list[Event]:
        self.find(WARNING, "decoder-error", f"{self.dialect} decoder failed on this record: {type(e).__name__}: {e}", rec)
        return [self.unparsed(rec, f"decoder error: {type(e).__name__}: {e}")]

    def finish(self) -> list[Event]:
        try:
            return self.on_finish()
        except Exception as e:  # noqa: BLE001
            self.find(WARNING, "decoder-error", f"{self.dialect} decoder failed at end of stream: {type(e).__name__}: {e}",
                      seq=self.last_seq)
            return []

    # --- hooks ---------------------------------------------------------------------------------------
    def on_open(self, rec: dict[str, Any]) -> list[Event]:
        return []

    def on_msg(self, rec: dict[str, Any]) -> list[Event]:
        return [self.unparsed(rec, "not decoded")]

    def on_response(self, rec: dict[str, Any]) -> list[Event]:
        return [self.unparsed(rec, "unexpected HTTP response record")]

    def on_close(self, rec: dict[str, Any]) -> list[Event]:
        if rec.get("kind") == "process" or "exit_code" in rec or "signal" in rec:
            if isinstance(rec.get("exit_code"), int):
                self.exit_code = rec["exit_code"]
            if rec.get("signal"):
                self.signal = str(rec["signal"])
            return self.end_session(rec)
        return []

    def on_error_record(self, rec: dict[str, Any]) -> list[Event]:
        msg = str(rec.get("message", ""))
        self.find(WARNING, "recorder-error", f"the recorder reported: {msg}", rec)
        return [self.ev(ERROR, rec, data={"message": msg, "code": "recorder", "fatal": False})]

    def on_finish(self) -> list[Event]:
        return []

    def end_session(self, rec: dict[str, Any], **data: Any) -> list[Event]:
        """session.ended once per unit (at the process close, or at end of stream)."""
        if self.closed_session:
            return []
        self.closed_session = True
        if self.exit_code is not None:
            data.setdefault("exit_code", self.exit_code)
        if self.signal is not None:
            data.setdefault("signal", self.signal)
        if "duration" in rec and "duration_ms" not in data and isinstance(rec["duration"], (int, float)):
            data["duration_ms"] = round(rec["duration"] * 1000, 3)
        return [self.ev(SESSION_ENDED, rec, data=data)]

    def status(self, rec: dict[str, Any], text: str, **data: Any) -> Event:
        data["text"] = text
        return self.ev(ITEM_COMPLETED, rec, item=STATUS, data=data)


def str_or_none(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def num(v: Any) -> int | float:
    """A token count or cost from untrusted JSON: numbers pass, anything else is 0."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return 0
    return v


def hkey(v: Any) -> Any:
    """A dict key from an untrusted JSON value (lists and objects are not hashable)."""
    return v if v is None or isinstance(v, (str, int, float)) else repr(v)
