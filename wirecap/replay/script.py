"""Turn a capture's channels into replay scripts: what the client said, and what the server said after.

A WebSocket channel becomes a list of steps: each recorded client message with the server messages
that followed it (up to the next client message), each at its offset from that client message. An
HTTP channel becomes one exchange: the request, the response head and the body messages (one body or
the SSE events), timed from the end of the request. Records in, plain data out; the one piece of
I/O is `RecordSource`, which lets a script loaded from a plain file keep offsets instead of messages.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson

from wirecap.capture.bodies import content_encodings, decode_body
from wirecap.capture.payload import encode_payload, payload_bytes
from wirecap.capture.reader import CaptureReader
from wirecap.errors import WirecapError


class RecordSource:
    """A plain (uncompressed) capture file that records are read back from by offset: a replay of a
    big capture keeps where each message is, not the message. Reads use `pread` (no shared file
    position), so threads may load at the same time."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY)

    def __del__(self) -> None:
        with contextlib.suppress(OSError, AttributeError):
            os.close(self.fd)

    def load(self, off: int, size: int, seq: Any) -> dict[str, Any]:
        """The record at `off` (`size` bytes), checked to be the one with `seq` that was there."""
        line = os.pread(self.fd, size, off)
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            rec = None
        if not isinstance(rec, dict) or rec.get("seq") != seq:
            raise WirecapError(f"{self.path}: changed while being replayed (record seq {seq} is not where it was)")
        return rec


class RecordRef:
    """A record left in its file (see `RecordSource`): `load()` reads it again."""

    __slots__ = ("off", "seq", "size", "src")

    def __init__(self, src: RecordSource, off: int, size: int, seq: Any) -> None:
        self.src, self.off, self.size, self.seq = src, off, size, seq

    def load(self) -> dict[str, Any]:
        return self.src.load(self.off, self.size, self.seq)


def _resolve(rec: Any) -> Any:
    return rec.load() if rec.__class__ is RecordRef else rec


class Reply:
    """One server message and when it went, in seconds after the step's anchor (the client message).
    `record` is read from the capture file again on each access when the script was loaded from one."""

    __slots__ = ("_record", "offset")

    def __init__(self, record: dict[str, Any] | RecordRef, offset: float) -> None:
        self._record = record
        self.offset = offset

    @property
    def record(self) -> dict[str, Any]:
        return _resolve(self._record)

    def __repr__(self) -> str:
        return f"Reply(record={self._record!r}, offset={self.offset!r})"


class Step:
    """A client message and the server messages that followed it. `client` is None for the prologue
    (server messages sent before the client said anything, timed from the open). Like `Reply.record`,
    `client` may be read from the file on each access."""

    __slots__ = ("_client", "replies", "t")

    def __init__(self, client: dict[str, Any] | RecordRef | None, replies: list[Reply] | None = None,
                 t: float = 0.0) -> None:
        self._client = client
        self.replies = replies if replies is not None else []
        self.t = t  # capture time of the anchor

    @property
    def client(self) -> dict[str, Any] | None:
        return _resolve(self._client)

    @property
    def has_client(self) -> bool:
        return self._client is not None

    def __repr__(self) -> str:
        return f"Step(client={self._client!r}, replies={self.replies!r}, t={self.t!r})"


@dataclass(slots=True)
class ChannelScript:
    ch: str
    kind: str  # "ws" or "http"
    open: dict[str, Any]
    steps: list[Step] = field(default_factory=list)
    response: dict[str, Any] | None = None  # http: the response head
    response_offset: float = 0.0  # http: response head time after the request's end
    close: dict[str, Any] | None = None
    close_offset: float = 0.0  # after the last recorded message of the channel

    @property
    def path(self) -> str:
        """Path (no query) the client asked for."""
        return urlsplit(self.open.get("url") or "/").path or "/"

    @property
    def target(self) -> str:
        """Path and query, as in an HTTP request line."""
        u = urlsplit(self.open.get("url") or "/")
        return (u.path or "/") + (f"?{u.query}" if u.query else "")

    @property
    def method(self) -> str:
        return str(self.open.get("method") or "GET").upper()

    @property
    def prologue(self) -> Step | None:
        return self.steps[0] if self.steps and not self.steps[0].has_client else None

    @property
    def client_steps(self) -> list[Step]:
        return [s for s in self.steps if s.has_client]

    @property
    def request_body(self) -> list[dict[str, Any]]:
        """http: the c2s message records (normally one: the request body)."""
        return [s.client for s in self.steps if s.client is not None]

    @property
    def server_messages(self) -> list[dict[str, Any]]:
        return [r.record for s in self.steps for r in s.replies]

    @property
    def sse(self) -> bool:
        return bool(self.response and self.response.get("sse"))

    @property
    def lines(self) -> bool:
        """A JSON-lines body recorded one `msg` per line (each carries its terminator as `eol`)."""
        return bool(self.response and self.response.get("lines"))


def decode_request_body(body: bytes, content_encoding: str | None) -> bytes:
    """A request body as the server reads it: its `content-encoding` (gzip, deflate, br, zstd,
    stacked) undone. A body that does not decode as it claims is returned as sent (it then matches
    only a recording of the same bytes, and the mismatch shows them)."""
    encs = content_encodings(content_encoding)
    if not body or not encs:
        return body
    try:
        return decode_body(body, encs)
    except Exception:  # noqa: BLE001 - zlib.error, brotli.error, ValueError...: keep the bytes as sent
        return body


def request_payload(script: ChannelScript) -> list[dict[str, Any]]:
    """http: the request body records as they compare with a decoded live body. The recorder stores
    bodies decoded (it says so in `encoding`); a body kept encoded (an import, an `undecoded` body)
    whose open headers name a content-encoding is decoded here, when it decodes."""
    out = script.request_body
    enc = (script.open.get("headers") or {}).get("content-encoding")
    if not enc or not isinstance(enc, str):
        return out
    fixed: list[dict[str, Any]] = []
    for rec in out:
        if "b64" in rec and "encoding" not in rec:
            raw = payload_bytes(rec)
            body = decode_request_body(raw, enc)
            if body is not raw:
                rec = {**encode_payload(body), "seq": rec.get("seq")}
        fixed.append(rec)
    return fixed


def build_scripts(records: Iterable[dict[str, Any]],
                  keep: Callable[[dict[str, Any]], dict[str, Any] | RecordRef] | None = None) -> list[ChannelScript]:
    """Network channels (ws, http) of a capture as replay scripts, in the order they opened. `keep`
    (optional) turns each message record into what the script holds (a `RecordRef`: see `load_scripts`)."""
    scripts: dict[str, ChannelScript] = {}
    last_t: dict[str, float] = {}
    for rec in records:
        ch = rec.get("ch")
        if not isinstance(ch, str):
            continue
        rtype = rec.get("type")
        if rtype == "open":
            if rec.get("kind") in ("ws", "http"):
                scripts[ch] = ChannelScript(ch=ch, kind=rec["kind"], open=rec)
                last_t[ch] = float(rec.get("t") or 0.0)
            continue
        sc = scripts.get(ch)
        if sc is None:
            continue
        t = float(rec.get("t") or 0.0)
        if rtype == "msg":
            held = rec if keep is None else keep(rec)
            if rec.get("dir") == "c2s":
                sc.steps.append(Step(client=held, t=t))
            else:
                if not sc.steps:
                    sc.steps.append(Step(client=None, t=float(sc.open.get("t") or 0.0)))
                step = sc.steps[-1]
                step.replies.append(Reply(held, max(0.0, t - step.t)))
            last_t[ch] = t
        elif rtype == "response":
            sc.response = rec
            sc.response_offset = max(0.0, t - _http_anchor(sc))
            last_t[ch] = t
        elif rtype == "close":
            sc.close = rec
            sc.close_offset = max(0.0, t - last_t.get(ch, t))
    return list(scripts.values())


def _http_anchor(sc: ChannelScript) -> float:
    """When the request was complete: its last body message, else the open."""
    for s in reversed(sc.steps):
        if s.has_client:
            return s.t
    return float(sc.open.get("t") or 0.0)


def load_scripts(path: str) -> tuple[dict[str, Any], list[ChannelScript]]:
    """Header and network scripts of the capture at `path`. From a plain file the scripts hold where
    each message is (`RecordRef`), not the message, so serving a 1 GB capture does not take 1 GB; a
    compressed capture or standard input is held in memory."""
    with CaptureReader(path) as reader:
        scripts = build_scripts(reader, _offsets(reader))
        return reader.header, scripts


def _offsets(reader: CaptureReader) -> Callable[[dict[str, Any]], dict[str, Any] | RecordRef] | None:
    """For a plain capture file: a `keep` for `build_scripts` that gives the record just read as a
    `RecordRef` (checked once against the bytes the reader read: anything unexpected keeps records
    in memory instead)."""
    f = getattr(reader, "_f", None)
    if not (isinstance(f, io.BufferedReader) and isinstance(f.raw, io.FileIO)) or reader.follow:
        return None
    if not stat.S_ISREG(os.fstat(f.raw.fileno()).st_mode):  # a FIFO or `<(...)`: no reading back by offset
        return None
    src = RecordSource(reader.path)
    checked = False

    def keep(rec: dict[str, Any]) -> dict[str, Any] | RecordRef:
        nonlocal checked
        line = reader.line
        off = f.tell() - len(line)
        seq = rec.get("seq")
        if not checked:
            if off < 0 or os.pread(src.fd, len(line), off) != line:
                return rec
            checked = True
        return RecordRef(src, off, len(line), seq)

    return keep


@dataclass(slots=True)
class ProcessScript:
    """A recorded CLI run: its output lines in order and how it ended."""

    ch: str
    open: dict[str, Any]
    lines: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)  # (t from open, stream, msg)
    close: dict[str, Any] | None = None
    pipes: dict[str, str] = field(default_factory=dict)  # every stdout/stderr pipe of the run, ch -> stream
    n_lines: int = 0  # lines seen (also when `lines` was not kept: see ProcessScan)


class ProcessScan:
    """Picks the first (or the named) process of a capture and the lines of its stdout/stderr pipes,
    one record at a time. `run(records)` yields each line as (t from the open, stream, msg record) and
    leaves the process in `script` (its `lines` left empty: the caller keeps them or not). The same
    scan over the same records yields the same lines, so a big capture can be scanned once to check
    it and again to play it, never held whole."""

    def __init__(self, proc: str | None = None, channels: Iterable[str] | None = None) -> None:
        self.proc = proc
        self.wanted = set(channels) if channels else None
        self.script: ProcessScript | None = None

    def run(self, records: Iterable[dict[str, Any]]) -> Iterator[tuple[float, str, dict[str, Any]]]:
        self.script = None
        self._pipes: dict[str, str] = {}  # the pipes played: ch -> stream
        self._seen: dict[str, str] = {}  # every stdout/stderr pipe of the run
        pipes = self._pipes
        t0 = 0.0
        for rec in records:
            rtype = rec.get("type")
            ch = rec.get("ch")
            if rtype == "msg":  # (the hot path: one dict lookup for a line that is not played)
                if ch in pipes:
                    script = self.script
                    if script is None:  # pipes recorded without a process record (e.g. `tee` of a pipe)
                        script = self.script = ProcessScript(ch="proc", open={}, pipes=self._seen)
                        t0 = float(rec.get("t") or 0.0)
                    script.n_lines += 1
                    yield max(0.0, float(rec.get("t") or 0.0) - t0), pipes[ch], rec
            elif rtype == "open":
                opened = self._open(rec, ch)
                if opened is not None:
                    t0 = opened
            elif rtype == "close" and self.script is not None and ch == self.script.ch:
                self.script.close = rec

    def _open(self, rec: dict[str, Any], ch: Any) -> float | None:
        """An `open`: the process (its time is returned: lines are timed from it) or one of its pipes."""
        kind = rec.get("kind")
        if kind == "process" and self.script is None and (self.proc is None or ch == self.proc):
            self.script = ProcessScript(ch=ch, open=rec, pipes=self._seen)
            return float(rec.get("t") or 0.0)
        if kind == "pipe" and rec.get("stream") in ("stdout", "stderr"):
            owner = rec.get("proc")
            if self.script is not None and owner not in (None, self.script.ch):
                return None
            self._seen[ch] = rec["stream"]
            if self.wanted is None or ch in self.wanted or rec.get("stream") in self.wanted:
                self._pipes[ch] = rec["stream"]
        return None


def build_process_script(records: Iterable[dict[str, Any]], proc: str | None = None,
                         channels: Iterable[str] | None = None) -> ProcessScript | None:
    """The first (or the named) process of a capture with the lines of its stdout/stderr pipes
    (held in memory: `ProcessScan` streams them)."""
    scan = ProcessScan(proc, channels)
    lines = list(scan.run(records))
    if scan.script is not None:
        scan.script.lines = lines
    return scan.script
