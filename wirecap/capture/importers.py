"""Turn transcripts people already have into capture records (pure converters, no file writing).

Each converter takes the source's bytes (and, for the lab logs, the untrimmed side files) and yields
`ImportOp`s: records with the source's own absolute time (or None when it has none) and channel
*tokens* that the writing shell maps to real channel names. Nothing is invented: where a source
kept only a trimmed copy or a summary, the record says so (`truncated`, `flags: ["summary"]`, `note`).

Kinds:
- `stdout`: a saved stdout of an agent CLI (`claude -p ... --output-format stream-json > out.jsonl`,
  codebuddy, codebuff, codex, opencode), one `msg` per line, byte-exact (line ends in `eol`);
- `claude-session`: a Claude Code session file (`~/.claude/projects/*/<session>.jsonl`), timed by
  its `timestamp` fields, dialect `claude-session`;
- `codex-rollout`: a Codex rollout file (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`), timed by its
  `timestamp` fields, dialect `codex-rollout`;
- `ws-frames`: the lab's WebSocket log (`*_ws_frames.jsonl`, untrimmed frames from `*_ws_frames_full/`);
- `requests`: the lab's HTTP log (`*_requests.jsonl`, full bodies from `*_requests_full/`).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import heapq
import json
import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import orjson

from wirecap.capture.records import RecordType
from wirecap.errors import WirecapError

KINDS = ("stdout", "claude-session", "codex-rollout", "ws-frames", "requests")
LINE_KINDS = ("stdout", "claude-session", "codex-rollout")  # one message per line (`from_stdout`)
# the session-file kinds are the same shape as `stdout` with the dialect of the same name
_SESSION_KINDS = ("claude-session", "codex-rollout")
# A stdout line longer than this is imported as pieces with eol "" (as `wirecap.record.lines.MAX_LINE` cuts a
# recorded pipe's), so a transcript without newlines costs that much memory at most.
PIECE = 64 << 20


@dataclass
class ImportOp:
    """One record to write. `ch` is a token local to the import; `data` is a message's wire bytes."""

    ts: float | None
    rtype: RecordType
    ch: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    data: bytes | None = None


_UNKNOWN = object()


@dataclass
class Source:
    """A source and a way to fetch its side files (`*_full/NAME`), both from the shell.

    Either `data` holds the source's bytes, or `opener` opens it afresh for each pass over its lines (a
    file: the converters stream, so an import holds one line at a time, never the whole source). A line
    longer than `max_line` bytes (default: `wirecap.capture.inputs.max_line()`, WIRECAP_MAX_LINE) stops
    the import with a `NAME:LINE` error."""

    name: str
    data: bytes | None = None
    side: Callable[[str], bytes | None] = lambda name: None
    opener: Callable[[], IO[bytes]] | None = None
    max_line: int = 0
    first_time: Any = field(default=None, init=False, repr=False)  # from_stdout's look-ahead, once

    def __post_init__(self) -> None:
        self.first_time = _UNKNOWN

    def lines(self, cut: int = 0) -> Generator[tuple[int, bytes, str], None, None]:
        """(line number, line without its terminator, terminator) for every line; `\\n` splits only.

        With `cut`, a line longer than that comes as pieces of `cut` bytes with terminator "" (as the
        recorder cuts a pipe's over-long line: the bytes still add up); without, it is an error."""
        from wirecap.capture.inputs import OVERLONG, bounded_lines, human, max_line

        limit = self.max_line or max_line()
        if cut:
            yield from self._pieces(min(cut, limit))
            return
        if self.data is not None:
            for lineno, line, eol in _split_lines(self.data):
                if len(line) > limit:
                    raise WirecapError(f"{self.name}:{lineno}: line longer than {human(limit)} (WIRECAP_MAX_LINE)")
                yield lineno, line, eol
            return
        if self.opener is None:
            return
        with self.opener() as f:
            for lineno, raw in enumerate(bounded_lines(f, limit + 2), 1):  # (+2: the line end)
                if raw is OVERLONG or len(raw.rstrip(b"\r\n")) > limit:
                    raise WirecapError(f"{self.name}:{lineno}: line longer than {human(limit)} (WIRECAP_MAX_LINE)")
                if raw.endswith(b"\n"):
                    if raw.endswith(b"\r\n"):
                        yield lineno, raw[:-2], "\r\n"
                    else:
                        yield lineno, raw[:-1], "\n"
                else:
                    yield lineno, raw, ""


    def _pieces(self, cut: int) -> Iterator[tuple[int, bytes, str]]:
        if self.data is not None:
            for lineno, line, eol in _split_lines(self.data):
                if len(line) <= cut:
                    yield lineno, line, eol
                    continue
                for start in range(0, len(line), cut):
                    yield lineno, line[start:start + cut], eol if start + cut >= len(line) else ""
            return
        if self.opener is None:
            return
        with self.opener() as f:
            lineno = 1
            while raw := f.readline(cut):
                if raw.endswith(b"\r\n"):
                    yield lineno, raw[:-2], "\r\n"
                elif raw.endswith(b"\n"):
                    yield lineno, raw[:-1], "\n"
                else:  # a piece of a longer line (the rest follows), or the last line, without its end
                    yield lineno, raw, ""
                    continue
                lineno += 1


# --- helpers -------------------------------------------------------------------------------------

def _split_lines(data: bytes) -> Iterator[tuple[int, bytes, str]]:
    """(line number, line without its terminator, terminator) for every line; `\\n` splits only."""
    start = 0
    n = len(data)
    lineno = 0
    while start < n:
        lineno += 1
        end = data.find(b"\n", start)
        if end < 0:
            yield lineno, data[start:], ""
            return
        line = data[start:end]
        if line.endswith(b"\r"):
            yield lineno, line[:-1], "\r\n"
        else:
            yield lineno, line, "\n"
        start = end + 1


def _json_lines(src: Source) -> Iterator[tuple[int, Any]]:
    for lineno, line, _eol in src.lines():
        if not line.strip():
            continue
        try:
            yield lineno, orjson.loads(line)
        except orjson.JSONDecodeError as e:
            raise WirecapError(f"{src.name}:{lineno}: invalid JSON ({str(e).split(':')[0]})") from None


_LAST_TS = 253402300799.0  # 9999-12-31T23:59:59Z: the last time `iso` can write


def parse_timestamp(value: Any) -> float | None:
    """Epoch seconds from an ISO 8601 string or an epoch number (seconds or milliseconds); None for
    anything else, NaN, or a time before 1970 or after 9999 (no log of an agent run has one)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        v = float(value)
        v = v / 1000.0 if v > 1e11 else v
    elif isinstance(value, str) and value:
        try:
            v = _dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except (ValueError, OverflowError, OSError):
            return None
    else:
        return None
    return v if 0.0 <= v <= _LAST_TS else None


def iso(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_TRIM_RE = re.compile(r"\.\.\.\[\+\d+ (?:chars|items)\]$")


def _was_trimmed(value: Any) -> bool:
    """True when the lab logger's `trim()` cut something inside `value`."""
    if isinstance(value, str):
        return _TRIM_RE.search(value) is not None
    if isinstance(value, list):
        return any(_was_trimmed(v) for v in value)
    if isinstance(value, dict):
        return any(_was_trimmed(v) for v in value.values())
    return False


def _rebuild(value: Any, length: int) -> bytes | None:
    """The wire bytes of a logged JSON value, when one usual serialization has exactly `length` chars.

    The lab logs keep the parsed value and the original length; Python servers send `json.dumps`
    (`, ` and `: `), JavaScript clients `JSON.stringify` (compact). A match on length with an
    untrimmed value is taken as the original; anything else is not guessed.
    """
    if _was_trimmed(value):
        return None
    for text in (json.dumps(value), json.dumps(value, separators=(",", ":"), ensure_ascii=False),
                 json.dumps(value, ensure_ascii=False)):
        if len(text) == length:
            return text.encode("utf-8")
    return None


SessionSniff = Callable[[dict[str, Any]], str | None]


def detect_kind(src: Source, session_kind: SessionSniff | None = None) -> str:
    """Which of KINDS a source is, from its name and first lines. `session_kind` names the session-file
    dialect of one line or None (the caller passes `wirecap.dialects.session_file_dialect`: detection
    is the dialects' own, and this layer sits below them); without it a session file reads as stdout."""
    name = src.name
    if name.endswith("_ws_frames.jsonl"):
        return "ws-frames"
    if name.endswith("_requests.jsonl"):
        return "requests"
    objs: list[Any] = []
    budget = 1 << 20  # the first MiB: a line that crosses it is not looked at
    with contextlib.closing(src.lines(cut=PIECE)) as lines:
        for _lineno, line, eol in lines:
            budget -= len(line) + len(eol)
            if len(objs) >= 50 or budget < 0:  # a session file can start with many `summary` lines
                break
            try:
                objs.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                break
    dicts = [o for o in objs if isinstance(o, dict)]
    if dicts and all({"conn", "dir", "frame"} <= set(o) for o in dicts):
        return "ws-frames"
    if dicts and all({"method", "path", "body_len"} <= set(o) for o in dicts):
        return "requests"
    if session_kind is None:
        return "stdout"
    for o in dicts:
        kind = session_kind(o)
        if kind is not None:
            return kind
    return "stdout"


# --- converters ------------------------------------------------------------------------------------

def _line_time(line: bytes) -> float | None:
    if line[:1] != b"{":
        return None
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return parse_timestamp(obj.get("timestamp", obj.get("__timestamp"))) if isinstance(obj, dict) else None


def stdout_first_time(src: Source) -> float | None:
    """The time of a line-per-message source's first timed line (None: it has none, and so `from_stdout`
    gives every record ts None; otherwise every record has a time). Looked for once per source."""
    if src.first_time is _UNKNOWN:
        src.first_time = None
        with contextlib.closing(src.lines(cut=PIECE)) as lines:
            for _lineno, line, _eol in lines:
                src.first_time = _line_time(line)
                if src.first_time is not None:
                    break
    return src.first_time


def from_stdout(src: Source, *, dialect: str | None = None) -> Iterator[ImportOp]:
    """A process and its stdout pipe, one message per line, byte-exact; timed by the lines' own
    `timestamp` / `__timestamp` fields when they have them (else no timing: t stays 0)."""
    # (no guessed hint: the decoders' detection, wirecap.dialects.detect_channel, decides; the session-file
    # kinds pass their dialect in)
    # (two passes, one line at a time: the lines before the first timed one take its time)
    first_ts = stdout_first_time(src)
    proc_open: dict[str, Any] = {"kind": "process", "argv": [], "imported": True}
    pipe_open: dict[str, Any] = {"kind": "pipe", "proc": "proc", "stream": "stdout"}
    if dialect:
        pipe_open["dialect"] = dialect
    yield ImportOp(first_ts, "open", "proc", proc_open)
    yield ImportOp(first_ts, "open", "stdout", pipe_open)
    nbytes = 0
    nlines = 0
    last: float | None = None
    for _lineno, line, eol in src.lines(cut=PIECE):
        ts = _line_time(line)
        if ts is not None and (last is None or ts >= last):
            last = ts
        fields: dict[str, Any] = {}
        if eol != "\n":
            fields["eol"] = eol
        nbytes += len(line) + len(eol)
        nlines += 1
        yield ImportOp(last if last is not None else first_ts, "msg", "stdout", {"dir": "s2c", **fields}, line)
    end_ts = last if last is not None else first_ts
    yield ImportOp(end_ts, "close", "stdout", {"bytes": nbytes, "lines": nlines})
    yield ImportOp(end_ts, "close", "proc", {})


def from_ws_frames(src: Source) -> Iterator[ImportOp]:
    """One `ws` channel per logged connection, timed by the log's `ts`."""
    stem = src.name.rsplit("/", 1)[-1].removesuffix(".jsonl")
    opened: set[str] = set()
    for lineno, rec in _json_lines(src):
        if not isinstance(rec, dict) or "conn" not in rec or "dir" not in rec:
            raise WirecapError(f"{src.name}:{lineno}: not a WebSocket frame log line (no conn/dir)")
        token = f"ws:{rec['conn']}"
        ts = parse_timestamp(rec.get("ts"))
        d = rec["dir"]
        frame = rec.get("frame")
        if d == "open":
            headers = frame.get("headers", {}) if isinstance(frame, dict) else {}
            headers = {str(k).lower(): str(v) for k, v in headers.items()}
            host = headers.get("host", "127.0.0.1")
            opened.add(token)
            yield ImportOp(ts, "open", token, {"kind": "ws", "url": f"ws://{host}{rec.get('path') or '/'}",
                                               "headers": headers})
            continue
        if token not in opened:
            opened.add(token)
            yield ImportOp(ts, "open", token, {"kind": "ws", "url": "ws://unknown/", "headers": {},
                                               "note": "the log has no open line for this connection"})
        if d == "close":
            yield ImportOp(ts, "close", token, {"code": None, "reason": None, "by": None})
            continue
        if d not in ("c2s", "s2c"):
            raise WirecapError(f"{src.name}:{lineno}: unknown frame direction {d!r}")
        length = int(rec.get("len") or 0)
        full = src.side(f"{stem}_full/{d}_{int(rec['seq']):03d}.json")
        if full is not None:
            yield ImportOp(ts, "msg", token, {"dir": d}, full)
            continue
        if isinstance(frame, dict) and set(frame) == {"raw"} and isinstance(frame["raw"], str):
            raw = frame["raw"]  # a frame that was not JSON, logged as text
            if len(raw) == length:
                yield ImportOp(ts, "msg", token, {"dir": d}, raw.encode("utf-8"))
            else:
                yield ImportOp(ts, "msg", token, {"dir": d, "truncated": length,
                                                  "note": "trimmed by the source log"}, raw.encode("utf-8"))
            continue
        exact = _rebuild(frame, length)
        if exact is not None:
            yield ImportOp(ts, "msg", token, {"dir": d}, exact)
        else:
            yield ImportOp(ts, "msg", token, {"dir": d, "truncated": length, "note": "trimmed by the source log"},
                           orjson.dumps(frame))


def from_requests(src: Source) -> Iterator[ImportOp]:
    """One `http` channel per logged request: open, request body, response head and what the log
    kept of the response (a full JSON answer, or only the fake's summary of an event stream)."""
    stem = src.name.rsplit("/", 1)[-1].removesuffix(".jsonl")
    for lineno, rec in _json_lines(src):
        if not isinstance(rec, dict) or "method" not in rec or "path" not in rec:
            raise WirecapError(f"{src.name}:{lineno}: not an HTTP request log line (no method/path)")
        token = f"http:{rec.get('seq', lineno)}"
        ts = parse_timestamp(rec.get("ts"))
        logged = rec.get("headers")
        headers = {str(k).lower(): str(v) for k, v in logged.items()} if isinstance(logged, dict) else {}
        host = headers.get("host", "127.0.0.1")
        method = str(rec["method"])
        yield ImportOp(ts, "open", token, {"kind": "http", "method": method,
                                           "url": f"http://{host}{rec['path']}", "headers": headers})
        body = _request_body(src, stem, rec, lineno)
        if body is not None:
            yield ImportOp(ts, "msg", token, body[0], body[1])
        yield from _response_ops(rec, ts, token, method)


def _request_body(src: Source, stem: str, rec: dict[str, Any], lineno: int) -> tuple[dict[str, Any], bytes] | None:
    """(fields, data) of a logged request's body message: the full body from the side file, else the
    log's copy when it is exact, else that copy marked `truncated`; None when it had no body."""
    body_len = int(rec.get("body_len") or 0)
    if not body_len:
        return None
    full = src.side(f"{stem}_full/req_{int(rec.get('seq', lineno)):03d}.json")
    if full is not None:
        return {"dir": "c2s"}, full
    body = rec.get("body")
    exact = body.encode("utf-8") if isinstance(body, str) and len(body) == body_len else None
    if exact is None and not isinstance(body, str):
        exact = _rebuild(body, body_len)
    if exact is not None:
        return {"dir": "c2s"}, exact
    data = body.encode("utf-8") if isinstance(body, str) else orjson.dumps(body)
    return {"dir": "c2s", "truncated": body_len, "note": "trimmed by the source log"}, data


def _response_ops(rec: dict[str, Any], ts: float | None, token: str, method: str) -> Iterator[ImportOp]:
    """The response head, the body the log kept (whole, or a summary said so) and the close."""
    status = rec.get("status")
    resp = rec.get("response")
    if not isinstance(status, int):
        yield ImportOp(ts, "close", token, {"status": None})
        return
    streamed = isinstance(resp, dict) and resp.get("stream") is True
    head: dict[str, Any] = {"status": status, "headers": {},
                            "note": "imported from a wire log: response headers were not logged"}
    if streamed:
        head["sse"] = True
        head["note"] = ("imported from a wire log that kept only a summary of this event stream: "
                        "no events recorded")
    yield ImportOp(ts, "response", token, head)
    if resp is not None and method != "HEAD":
        if streamed or _was_trimmed(resp):
            what = "summary of the event stream" if streamed else "trimmed copy of the body"
            yield ImportOp(ts, "msg", token, {"dir": "s2c", "flags": ["summary"],
                                              "note": f"the source log's {what}, not the wire bytes"},
                           orjson.dumps(resp))
        else:
            # The lab's fakes answer with json.dumps(obj): that is the body they sent.
            yield ImportOp(ts, "msg", token, {"dir": "s2c"}, json.dumps(resp).encode("utf-8"))
    yield ImportOp(ts, "close", token, {"status": status})


def convert_stream(src: Source, kind: str | None = None, *, dialect: str | None = None,
                   session_kind: SessionSniff | None = None) -> tuple[str, Callable[[], Iterator[ImportOp]]]:
    """(kind, ops) for one source, `kind` None auto-detected (`detect_kind` with `session_kind`);
    `ops()` converts afresh on each call (one line of the source at a time), with the source's clock
    made never to run backwards."""
    kind = kind or detect_kind(src, session_kind)
    if kind == "stdout":
        make: Callable[[], Iterator[ImportOp]] = lambda: from_stdout(src, dialect=dialect)  # noqa: E731
    elif kind in _SESSION_KINDS:
        make = lambda: from_stdout(src, dialect=dialect or kind)  # noqa: E731
    elif kind == "ws-frames":
        make = lambda: from_ws_frames(src)  # noqa: E731
    elif kind == "requests":
        make = lambda: from_requests(src)  # noqa: E731
    else:
        raise WirecapError(f"unknown import kind {kind!r} (one of {', '.join(KINDS)})")

    def ops() -> Iterator[ImportOp]:
        last: float | None = None
        for op in make():  # a source's clock never runs backwards in the capture
            if op.ts is not None:
                if last is not None and op.ts < last:
                    op.ts = last
                last = op.ts
            yield op

    return kind, ops


def merge_stream(sources: list[Callable[[], Iterator[ImportOp]]],
                 timing: list[tuple[bool, bool]] | None = None) -> Iterator[ImportOp]:
    """One timeline from several sources, without holding the ops: a pass per source for the untimed ops
    (in order), then the timed ones of all sources merged by time (each source's are in order already;
    ties keep the sources' order, and one source's own order is never changed).
    `timing` (per source: has untimed ops, has timed ops; from an earlier pass) skips passes that would
    find nothing."""
    timing = timing or [(True, True)] * len(sources)
    for ops, (untimed, _timed) in zip(sources, timing, strict=True):
        if untimed:
            yield from (op for op in ops() if op.ts is None)
    yield from heapq.merge(*((op for op in ops() if op.ts is not None)
                             for ops, (_untimed, timed) in zip(sources, timing, strict=True) if timed),
                           key=lambda op: op.ts)  # type: ignore[arg-type, return-value]
