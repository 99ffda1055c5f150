"""Append-only capture writer: one `write` per record (or per batch), crash-safe, thread-safe, redacting.

The writer owns `seq` and the clock, so every recorder that shares one writer (proxy and tee in
`wirecap record -- CMD`) lands on one gap-free, monotonic timeline.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from wirecap import __version__
from wirecap.capture.payload import JSON_KEY, encode_payload, serialized_payload
from wirecap.capture.records import Direction, Headers, RecordType, Transport
from wirecap.capture.redact import Redactor, may_hold_secret, needs_redaction, redact_record
from wirecap.errors import WirecapError
from wirecap.fsmode import open_private, private_dir

FORMAT_VERSION = 1
SYNC_INTERVAL = 1.0
# Lines proved canonical together (`msg_payloads`): small enough that their parsed values never make
# the garbage collector run (its threshold is 700 live new containers), large enough to amortize.
_BATCH = 128
# `batch_delay` writers: a batch is written when it holds this many messages or bytes (else on the timer).
_QUEUE_MAX = 256
_QUEUE_BYTES = 1 << 20
# Keys a msg record sets itself (or that always need redaction): extra fields named so take the dict path.
_MSG_OWN_KEYS = frozenset({"seq", "t", "type", "ch", "dir", "json", "text", "b64", "raw", "headers",
                           "response_headers"})
# A record's line: its seq, its time (`orjson.dumps(round(t, 6))`) and its tail (see "records" below).
_LINE = b'{"seq":%d,"t":%b,%b\n'
_NO_FIELDS: dict[str, Any] = {}  # a msg without extra fields (shared: never mutated)
_QueuedMsg = tuple[str, str, bytes | str, bool]  # a batch_delay writer's msg: (ch, dir, data, screened)
_Queued = tuple[int, float, _QueuedMsg]  # ... admitted: with its seq and time
_SPLICED = b'{"seq":%d%b%b}\n'  # `_LINE` of a msg spliced from its head and time (one prefix) and payload


class _Splice:
    """`_append`'s tails are payloads proved canonical JSON: each record's tail is `head`, the payload
    and "}" (written as such: one copy of the payload, not two)."""

    __slots__ = ("head",)

    def __init__(self, head: bytes) -> None:
        self.head = head


# How `_append` takes what it is given: an end record's fields, a batch_delay writer's msg (ch, dir,
# data, screened), or payloads to splice (`_Splice`).
_Special = dict[str, Any] | _QueuedMsg | _Splice


def _proven_canonical(payloads: list[bytes]) -> bool:
    """True when every payload is exactly the canonical JSON of its value (`orjson.dumps(orjson.loads(p))
    == p`), proved for the whole list at once: each is parsed on its own (so each is one complete value),
    then the parsed list is serialized once and compared with the payloads joined as an array; the two
    are equal only when every payload is its canonical form."""
    try:
        return orjson.dumps(list(map(orjson.loads, payloads))) == b"[" + b",".join(payloads) + b"]"
    except (orjson.JSONDecodeError, TypeError):
        return False


def default_origin(source: str, argv: list[str] | None = None) -> dict[str, Any]:
    if argv is None:
        argv = list(sys.argv)
        # `python -m wirecap` puts the path of __main__.py first: say what the user typed.
        if argv and os.path.basename(argv[0]) == "__main__.py":
            argv[0] = "wirecap"
    return {
        "tool": "wirecap",
        "version": __version__,
        "host": socket.gethostname(),
        "argv": list(argv),
        "source": source,
    }


def _compression_for(path: str) -> str | None:
    if path.endswith(".gz"):
        return "gzip"
    if path.endswith(".zst"):
        return "zstd"
    return None


def write_all(fd: int, data: bytes | memoryview) -> None:
    """`data` in one `write(2)` (the loop is for a short write only): the records in it reach the file
    whole and in order, and a write cut short (a full disk, a SIGKILL inside the call) can only leave a
    torn tail. Raises OSError."""
    n = os.write(fd, data)
    if n != len(data):
        view = memoryview(data)[n:]
        while view:
            n = os.write(fd, view)
            view = view[n:]


def append_records(path: str, records: Iterable[Mapping[str, Any]]) -> None:
    """Append `records` to the append-only JSONL file `path`, one line each (compact JSON), `O_APPEND`,
    the file created owner-only: one `write` per record, then `fsync`, so they are on disk when this
    returns. A torn tail left by a crash is first closed with a newline, so the next line stays
    readable. For a file no `CaptureWriter` owns (a capture's notes sidecar). Raises OSError (or
    TypeError for a record orjson cannot serialize)."""
    fd = open_private(path, os.O_RDWR | os.O_APPEND)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            write_all(fd, b"\n")
        for record in records:
            write_all(fd, orjson.dumps(record) + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)


class _Sink:
    """Where serialized records go: a plain fd (one `write` each) or a streaming compressor.

    Compressed, `write` buffers and `flush` compresses what was buffered and ends it with a flush point
    (gzip: `Z_PARTIAL_FLUSH`, which ends the deflate block with a 10-bit empty block instead of
    `Z_SYNC_FLUSH`'s 4-byte marker: a quarter smaller at one record per flush; zstd: the end of a
    block), so every byte written so far can be decoded
    from the file as it stands, and a process killed after a `flush` leaves every record of that flush
    readable. The dictionary carries over from flush to flush (one gzip member, one zstd frame per
    file), which keeps the ratio close to compressing the whole file at once. `finish` writes the
    stream's end (gzip trailer, zstd frame end) at close.
    """

    def __init__(self, fd: int, compression: str | None) -> None:
        self.fd = fd
        self.compression = compression
        self.pending: list[bytes] = []
        self._z: Any = None
        self._sync_mode: Any = None
        if compression == "gzip":
            import zlib

            # wbits 31: a gzip header and trailer (mtime 0, no name), level 6 as `gzip` uses.
            self._z = zlib.compressobj(6, zlib.DEFLATED, 31)
            self._sync_mode = zlib.Z_PARTIAL_FLUSH
        elif compression == "zstd":
            import zstandard

            self._z = zstandard.ZstdCompressor(level=3).compressobj()
            self._sync_mode = zstandard.COMPRESSOBJ_FLUSH_BLOCK

    def write(self, data: bytes) -> None:
        if self.compression is None:
            write_all(self.fd, data)
        else:
            self.pending.append(data)

    def flush(self) -> None:
        """Compress and write what is buffered, decodable up to its last byte (compressed sinks)."""
        if not self.pending:
            return
        data = b"".join(self.pending) if len(self.pending) > 1 else self.pending[0]
        self.pending.clear()
        z = self._z
        write_all(self.fd, z.compress(data) + z.flush(self._sync_mode))

    def finish(self) -> None:
        """Write what is buffered and end the compressed stream (no-op for a plain file)."""
        if self._z is None:
            return
        self.flush()
        z, self._z = self._z, None
        write_all(self.fd, z.flush())

    def sync(self) -> None:
        self.flush()
        os.fdatasync(self.fd)


class CaptureWriter:
    """Writes one capture. Safe to call from several threads and from asyncio callbacks.

    Write failures never raise into the caller (recorders must keep passing traffic): the first one
    disables the writer, is reported once through `on_error`, and every record after it is counted
    in `errors`; the capture then has no `end` and reads as interrupted.

    `batch_delay` > 0 (seconds; the mitmproxy addon's own writer uses 0.05): plain `msg` records
    get their seq and time at once but are built and written in batches, one `write` per batch, at
    most `batch_delay` later (any other record, `sync` and `close` write them first, so the file
    stays in seq order). A crash then loses at most that much; no record is ever torn. Per message
    this saves a syscall and most of the per-record Python work (the JSON check and the secret
    screen run once over the whole batch).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        origin: dict[str, Any] | None = None,
        redactor: Redactor | None = None,
        force: bool = False,
        append: bool = False,
        on_error: Callable[[str], None] | None = None,
        extra_header: dict[str, Any] | None = None,
        batch_delay: float = 0.0,
    ) -> None:
        self.path = os.fspath(path)
        self.batch_delay = max(0.0, float(batch_delay))
        self._queue: list[_Queued] = []  # admitted msgs not yet written (batch_delay), in seq order
        self._queued_bytes = 0
        self.redactor = redactor if redactor is not None else Redactor()
        self.on_error = on_error
        self.records = 0
        self.bytes = 0
        self.errors = 0
        self.failed: str | None = None
        self.closed = False
        self._lock = threading.Lock()  # seq, clock and the file: one record at a time
        self._tls = threading.local()  # `batch()` depth of each thread
        self._sync_lock = threading.Lock()  # sync and close: never both at once
        self._fd_closed = False
        self._seq = 0
        self._last_t = 0.0
        self._counters: dict[str, int] = {}
        self._heads: dict[tuple[str, str, bytes], bytes] = {}  # msg record heads by (channel, direction, key)
        self._mono0 = time.monotonic()
        compression = _compression_for(self.path)
        if append and os.path.exists(self.path):
            if compression:
                raise WirecapError(f"{self.path}: cannot append to a compressed capture")
            self._open_append()
        else:
            flags = os.O_WRONLY | os.O_APPEND
            flags |= os.O_TRUNC if force else os.O_EXCL
            try:
                fd = open_private(self.path, flags)  # 0600 whatever the umask or an overwritten file's mode
            except FileExistsError:
                raise WirecapError(
                    f"{self.path}: capture exists; refusing to overwrite it (use --force)"
                ) from None
            except OSError as e:
                raise WirecapError(f"{self.path}: cannot create capture: {e.strerror}") from None
            self._sink = _Sink(fd, compression)
            self._plain_fd = fd if compression is None else -1  # `_emit` writes to it directly
            now = _dt.datetime.now(_dt.UTC)
            self.created = now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            self._wall0 = now.timestamp()
            self.id = uuid.uuid4().hex
            header = {
                "wirecap": FORMAT_VERSION,
                "type": "header",
                "id": self.id,
                "created": self.created,
                # argv and the like can carry keys (`agent --api-key sk-...`): redacted like a payload.
                "origin": self.redactor.value(origin or default_origin("api")),
                "redaction": self.redactor.policy(),
            }
            if extra_header:
                header.update(self.redactor.value(extra_header))
            self._emit(orjson.dumps(header) + b"\n")
        self._last_sync = time.monotonic()
        self._stop = threading.Event()
        self._flusher = threading.Thread(target=self._flush_loop, name="wirecap-flush", daemon=True)
        self._flusher.start()

    # --- append support -------------------------------------------------------------------------
    def _open_append(self) -> None:
        from wirecap.capture.reader import scan_tail

        info = scan_tail(self.path)  # cuts a torn tail, returns header and last seq / t
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        self._sink = _Sink(fd, None)
        self._plain_fd = fd
        header = info["header"]
        self.id = header.get("id", "")
        self.created = header.get("created", "")
        self._seq = info["last_seq"]
        self.records = info["last_seq"]  # `end.records` counts the records of the whole file
        self._last_t = info["last_t"]
        try:
            created = _dt.datetime.fromisoformat(self.created.replace("Z", "+00:00")).timestamp()
        except ValueError:
            created = time.time()
        # Continue the timeline from wall-clock time: the old process's monotonic clock is gone.
        self._mono0 = time.monotonic() - max(self._last_t, time.time() - created)
        self._counters = info["channels"]

    # --- clock and channels ---------------------------------------------------------------------
    def now(self) -> float:
        """Seconds since `created` on the capture's monotonic clock."""
        return time.monotonic() - self._mono0

    def new_channel(self, prefix: str) -> str:
        """A fresh channel name: `ws-1`, `http-2`, ... (`proc`, then `proc-2`, for processes)."""
        with self._lock:
            n = self._counters.get(prefix, 0) + 1
            self._counters[prefix] = n
        if prefix in ("proc", "stdout", "stderr", "stdin"):
            return prefix if n == 1 else f"{prefix}-{n}"
        return f"{prefix}-{n}"

    # --- records: one encoder, one admission path ------------------------------------------------
    # A record is written as `{"seq":N,"t":T,`, its *tail* and a newline (`_LINE`); the tail is the bytes
    # of its other fields, from `"type":` to the closing brace, exactly as `orjson.dumps` lays out the
    # whole record (seq and t come first, and redaction never changes them). So a record is encoded,
    # screened and redacted without its seq and time, outside the lock: `_tail` (any record, from a
    # dict) and `_msg_tail` (a `msg` from wire bytes: the payload spliced in as bytes where that gives
    # `_tail`'s bytes) are the one encoder. `_append` alone, under the lock, gives records their seq and
    # time and writes them. The fast paths are strategies for getting the tails, never a second way to
    # admit or lay out a record: `msg_payloads` proves a batch of payloads canonical at once (no parse
    # per line) and splices them (`_Splice`), `msg_lines` and `msg_payloads` admit up to `_BATCH`
    # records per `write`, and a `batch_delay` writer admits a message at once and encodes it later
    # with its batch (`_drain`: one canonical proof and one secret screen for the batch).

    def write(self, rtype: RecordType, t: float | None = None, _nbytes: int | None = None, _screened: bool = False,
              **fields: Any) -> int:
        """Append one record; returns its seq (0 when the writer is disabled). The writer owns `seq`
        (`fields` never hold one), `t` (the capture's clock when None) and, in an `end` record, the
        counts `records`, `bytes` and `errors`. `_nbytes`: the payload size a `msg` adds to `bytes`."""
        if "seq" in fields:  # never a second "seq" key in the line: the writer's is the one
            del fields["seq"]
        if rtype == "end":
            return self._append(b"", t, 0, fields)
        nbytes = 0
        if rtype == "msg":
            nbytes = _nbytes if _nbytes is not None else _payload_len(fields)
        return self._append(self._tail(rtype, fields, _screened), t, nbytes)

    def _tail(self, rtype: str, fields: dict[str, Any], screened: bool = False) -> bytes:
        """The encoder: the tail of a record of type `rtype` with `fields`, secrets redacted (unless the
        caller `screened` the payload's raw bytes already); values orjson cannot write are scrubbed
        (`_scrub`)."""
        body = {"type": rtype, **fields}
        try:
            line = orjson.dumps(body)
        except TypeError:
            line = orjson.dumps(_scrub(body))
        if not screened and needs_redaction(self.redactor, body, line):
            red = redact_record(self.redactor, body)
            try:
                line = orjson.dumps(red)
            except TypeError:
                line = orjson.dumps(_scrub(red))
        return line[1:]

    def _append(self, tails: bytes | list[bytes], t: float | None, nbytes: int, special: _Special | None = None) -> int:
        """The one admission path: records take the next seqs and one reading of the capture's clock
        (`t` if given, never earlier than the last record's), are counted (`records`, and `bytes`:
        `nbytes` of payload), and are written in one `write` before the lock is released, so the file
        stays in seq order. Returns the first one's seq, 0 when none was written (the writer is closed,
        or failed: then they count as errors).

        `tails`: the encoded record, or a list of them. `special` (a strategy for what `tails` hold,
        see `_admitted`): the end record's fields (tail b""), its counts filled in here so that no record
        can slip in between; a `batch_delay` writer's msg `(ch, dir, data, screened)` (tail b""),
        admitted now and encoded and written later with its batch (`_drain`; every other record writes
        that queue first); or `_Splice(head)`: `tails` are payloads proved canonical, each spliced
        after `head` as it is written (one copy of each).
        """
        one = tails.__class__ is bytes
        n = 1 if one else len(tails)
        with self._lock:
            if self._queue and special.__class__ is not tuple:
                self._drain()
            if self.closed:
                return 0
            if self.failed is not None:
                self.errors += n
                return 0
            now = time.monotonic() - self._mono0 if t is None else t
            if now < self._last_t:
                now = self._last_t
            self._last_t = now
            seq = self._seq = self._seq + n
            self.records += n
            self.bytes += nbytes
            if special is not None:
                if special.__class__ is tuple:  # a batch_delay writer's msg: queued
                    self._queue.append((seq, now, special))
                    self._queued_bytes += nbytes
                    if len(self._queue) >= _QUEUE_MAX or self._queued_bytes >= _QUEUE_BYTES:
                        self._drain()
                    return seq
                return self._admitted(seq, now, tails, nbytes, special)
            tb = orjson.dumps(round(now, 6))
            if one:
                data = _LINE % (seq, tb, tails)
            else:
                seq -= n - 1
                data = b"".join([_LINE % (s, tb, tail) for s, tail in enumerate(tails, seq)])
            if self._emit(data):
                return seq
            self._lost(n, nbytes, n - 1)  # `_emit` disabled the writer and counted one error
            return 0

    def _admitted(self, seq: int, now: float, tails: bytes | list[bytes], nbytes: int, special: _Special) -> int:
        """The end of `_append` for `special` records but queued ones (call from it, with the lock held)."""
        if isinstance(special, _Splice):
            n = len(tails)
            first = seq - n + 1
            lead = b',"t":' + orjson.dumps(round(now, 6)) + b"," + special.head  # (`_LINE` up to the payload)
            if self._emit(b"".join([_SPLICED % (s, lead, p) for s, p in enumerate(tails, first)])):
                return first
            self._lost(n, nbytes, n - 1)
            return 0
        end: dict[str, Any] = special  # type: ignore[assignment]  # (neither queued nor spliced: an end record)
        end.update(records=seq, bytes=self.bytes, errors=self.errors)
        if self._emit(_LINE % (seq, orjson.dumps(round(now, 6)), self._tail("end", end))):
            self.closed = True  # nothing may follow the end record
            return seq
        self._lost(1, 0, 0)
        return 0

    def _lost(self, n: int, nbytes: int, errors: int) -> None:
        """Take back the counts of the last n admitted records, which never reached the file."""
        self._seq -= n
        self.records -= n
        self.bytes -= nbytes
        self.errors += errors

    def _emit(self, data: bytes) -> bool:
        """Write serialized records; a compressed file gets them decodable at once unless this thread is
        inside `batch()`. Call with the lock held (or from the constructor)."""
        fd = self._plain_fd
        try:
            if fd >= 0:  # (`_Sink.write`, inlined: the hot path)
                n = os.write(fd, data)
                if n != len(data):
                    write_all(fd, memoryview(data)[n:])
            else:
                sink = self._sink
                sink.write(data)
                if not getattr(self._tls, "depth", 0):
                    sink.flush()
        except OSError as e:
            self._fail(f"{self.path}: write failed: {e.strerror or e}")
            return False
        return True

    def _fail(self, message: str) -> None:
        self.failed = message
        self.errors += 1
        if self.on_error is not None:
            try:
                self.on_error(message)
            except Exception:  # noqa: BLE001 - reporting must never break the caller
                pass

    def open(self, ch: str, transport: Transport, t: float | None = None, **fields: Any) -> int:
        """Open channel `ch` over `transport` (`ws`, `http`, `process`, `pipe`: the record's `kind` field)."""
        return self.write("open", t, ch=ch, kind=transport, **fields)

    # --- msg records --------------------------------------------------------------------------------
    def msg(self, ch: str, dir: Direction, data: bytes | str, t: float | None = None, _screened: bool = False,
            **fields: Any) -> int:
        """A message from wire bytes (or text): picks the json / text / b64 form (`_msg_tail`).

        The hot path of every recorder: the record is encoded outside the lock, then admitted and
        written in one `write`. A `batch_delay` writer queues a plain message (no extra fields) instead.
        """
        if self.batch_delay and not fields and data.__class__ in (bytes, str):
            n = len(data) if data.__class__ is bytes else len(data.encode("utf-8", "surrogatepass"))  # type: ignore[union-attr]
            return self._append(b"", t, n, (ch, dir, data, _screened))
        tail, nbytes = self._msg_tail(ch, dir, data, fields, _screened)
        return self._append(tail, t, nbytes)

    def _msg_tail(self, ch: str, dir: str, data: bytes | str, fields: dict[str, Any],
                  screened: bool) -> tuple[bytes, int]:
        """The tail of `msg(ch, dir, data, **fields)` and its payload size.

        Built as bytes where it can be: the head is cached per channel and direction, the payload
        spliced in (canonical JSON as its original bytes, never parsed into a dict to be serialized
        again: `serialized_payload`), and one secret screen runs over the finished tail. A message that
        may hold a secret, a binary payload, or fields that do not serialize plainly take the dict form
        (`_tail`), which redacts; both give the same bytes.
        """
        part = serialized_payload(data)
        if part is not None:
            key, value, nbytes = part
            head = self._heads.get((ch, dir, key)) or self._msg_head(ch, dir, key)
            extra = self._fields_part(fields) if fields else b"}"
            if head and extra is not None:
                tail = head + value + extra
                # (without extra fields only the payload is screened: redaction never changes the type,
                # ch or dir of a record, and the head holding them was screened clean when cached)
                if screened or not self.redactor.screen(tail if fields else value):
                    return tail, nbytes
        return self._msg_dict_tail(ch, dir, data, fields, screened)

    def _msg_dict_tail(self, ch: str, dir: str, data: bytes | str, fields: dict[str, Any],
                       screened: bool) -> tuple[bytes, int]:
        if isinstance(data, (bytes, bytearray)):
            nbytes = len(data)
        else:
            nbytes = len(data.encode("utf-8", "surrogatepass"))
        body: dict[str, Any] = {"ch": ch, "dir": dir}
        body.update(encode_payload(data))
        if fields:
            body.update(fields)
        return self._tail("msg", body, screened), nbytes

    def _msg_head(self, ch: str, dir: str, key: bytes) -> bytes:
        """`"type":"msg","ch":...,"dir":...` and the payload's `key` (`,"json":`, `,"text":`) for a
        (channel, direction), cached; b"" when not plain."""
        try:
            head = b'"type":"msg","ch":' + orjson.dumps(ch) + b',"dir":' + orjson.dumps(dir) + key
        except TypeError:
            return b""
        if not isinstance(ch, str) or not isinstance(dir, str) or may_hold_secret(head):
            return b""
        if len(self._heads) >= 4096:  # channels come and go: bound the cache
            self._heads.clear()
        self._heads[(ch, dir, key)] = head
        return head

    @staticmethod
    def _fields_part(fields: dict[str, Any]) -> bytes | None:
        """The extra fields of a msg record as the end of its tail (`,"k":v...}`), None when they need the
        dict form."""
        if not _MSG_OWN_KEYS.isdisjoint(fields):
            return None
        try:
            return b"," + orjson.dumps(fields)[1:]
        except TypeError:
            return None

    def _append_msgs(self, ch: str, dir: str, items: list[tuple[bytes, dict[str, Any]]], t: float | None,
                     screened: bool) -> None:
        """The records `msg(ch, dir, payload, t, **fields)` would write for each `(payload, fields)`,
        admitted together and written in one `write`."""
        tails: list[bytes] = []
        nbytes = 0
        for payload, fields in items:
            tail, n = self._msg_tail(ch, dir, payload, fields, screened)
            tails.append(tail)
            nbytes += n
        self._append(tails, t, nbytes)

    def msg_lines(self, ch: str, dir: Direction, lines: list[tuple[bytes, str]], t: float | None = None, *,
                  screened: bool = False) -> None:
        """The lines `(payload, eol)` of one pipe chunk, all arrived at `t`: the hot path of `wirecap tee`.

        Writes exactly the records `msg(ch, dir, payload, t, eol=eol)` would (eol omitted when
        `"\\n"`), up to `_BATCH` of them per `write`.
        `screened`: the caller ran `chunk_is_clean` over the raw bytes these lines came from.
        """
        for i in range(0, len(lines), _BATCH):
            self._append_msgs(ch, dir, [(p, _NO_FIELDS if eol == "\n" else {"eol": eol})
                                        for p, eol in lines[i:i + _BATCH]], t, screened)

    def msg_payloads(self, ch: str, dir: Direction, payloads: list[bytes], t: float | None = None, *,
                     screened: bool = False) -> None:
        """Lines of one pipe chunk that all ended in `\\n` (payloads only), all arrived at `t`.

        The hot path of `wirecap tee`: the records `msg(ch, dir, payload, t)` would write, up to
        `_BATCH` of them per `write`. A batch of screened payloads that `_proven_canonical` is spliced
        into records as bytes without a parse per line; any other batch is encoded line by line
        (`_msg_tail`). `screened`: the caller ran `chunk_is_clean` over the raw bytes these lines came from.
        """
        head = self._heads.get((ch, dir, JSON_KEY)) or self._msg_head(ch, dir, JSON_KEY)
        splice = bool(head) and (screened or not self.redactor.enabled)
        for i in range(0, len(payloads), _BATCH):
            batch = payloads[i:i + _BATCH]
            if splice and _proven_canonical(batch):
                self._append(batch, t, sum(map(len, batch)), _Splice(head))
            else:
                self._append_msgs(ch, dir, [(p, _NO_FIELDS) for p in batch], t, screened)

    # --- batched msg records (batch_delay > 0) ------------------------------------------------------
    def _drain(self) -> None:
        """Write the queued msg records, one `write` for all. Call with the lock held."""
        queue, nbytes = self._queue, self._queued_bytes
        self._queue = []
        self._queued_bytes = 0
        if self.failed is not None:  # counted when admitted: they are lost
            self._lost(len(queue), nbytes, len(queue))
            return
        dumps = orjson.dumps
        data = b"".join([_LINE % (item[0], dumps(round(item[1], 6)), tail)
                         for item, tail in zip(queue, self._queued_tails(queue), strict=True)])
        if not self._emit(data):  # `_emit` disabled the writer (one error): none reached the file
            self._lost(len(queue), nbytes, len(queue) - 1)

    def _queued_tails(self, queue: list[_Queued]) -> list[bytes]:
        """The tails `_msg_tail` gives the queued messages, for less work per message: their payloads
        are proved canonical JSON at once (`_proven_canonical`), and the secret screen runs once over
        all the tails (a superset of screening each: a shape or key inside one tail is inside their
        concatenation); when it flags, each message is screened on its own."""
        msgs = [item[2] for item in queue]
        datas = [m[2] for m in msgs]
        heads = self._heads
        tails: list[bytes | None] = []
        if all(d.__class__ is bytes for d in datas) and _proven_canonical(datas):  # type: ignore[arg-type]
            for ch, dir, data, _ in msgs:
                head = heads.get((ch, dir, JSON_KEY)) or self._msg_head(ch, dir, JSON_KEY)
                tails.append(head + data + b"}" if head else None)  # type: ignore[operator]
        else:
            for ch, dir, data, _ in msgs:
                part = serialized_payload(data)
                if part is None:
                    tails.append(None)
                    continue
                head = heads.get((ch, dir, part[0])) or self._msg_head(ch, dir, part[0])
                tails.append(head + part[1] + b"}" if head else None)
        screen = self.redactor.screen
        if None not in tails and not screen(b"".join(tails)):  # type: ignore[arg-type]
            return tails  # type: ignore[return-value]
        return [tail if tail is not None and (screened or not screen(tail))
                else self._msg_dict_tail(ch, dir, data, _NO_FIELDS, screened)[0]
                for (ch, dir, data, screened), tail in zip(msgs, tails, strict=True)]

    def flush(self) -> None:
        """Write the queued msg records now (batch_delay writers) and make a compressed file decodable up
        to its last record; a no-op for a plain writer without a queue (its records are written at once)."""
        with self._lock:
            if self._queue and not self._fd_closed:
                self._drain()
            self._flush_sink()

    def _flush_sink(self) -> None:
        """Compress and write what a compressed sink holds, unless this thread is inside `batch()`.
        Call with the lock held."""
        sink = self._sink
        if sink.pending and not self._fd_closed and not getattr(self._tls, "depth", 0):
            if self.failed is not None:
                sink.pending.clear()
                return
            try:
                sink.flush()
            except OSError as e:
                self._fail(f"{self.path}: write failed: {e.strerror or e}")

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Records this thread writes inside the block reach a compressed file together when it ends
        (one flush point, not one per record: a better ratio for many small records). A plain file gets
        each record at once, as ever. What callers may rely on: when the block is left, every record
        written in it is in the file (decodable after a SIGKILL); other threads are not held back."""
        depth = getattr(self._tls, "depth", 0)
        self._tls.depth = depth + 1
        try:
            yield
        finally:
            self._tls.depth = depth
            if depth == 0:
                self.flush()

    def response(self, ch: str, status: int, headers: Headers, t: float | None = None, **fields: Any) -> int:
        return self.write("response", t, ch=ch, status=status, headers=headers, **fields)

    def close_channel(self, ch: str, t: float | None = None, **fields: Any) -> int:
        return self.write("close", t, ch=ch, **fields)

    def error(self, message: str, *, where: str | None = None, ch: str | None = None) -> int:
        """Record a recorder failure (and count it); the traffic itself was not affected."""
        fields: dict[str, Any] = {"message": message}
        if where:
            fields["where"] = where
        if ch:
            fields["ch"] = ch
        with self._lock:
            self.errors += 1
        return self.write("error", **fields)

    # --- flushing and closing -------------------------------------------------------------------
    def _flush_loop(self) -> None:
        if not self.batch_delay:
            while not self._stop.wait(SYNC_INTERVAL):
                self.sync()
            return
        next_sync = time.monotonic() + SYNC_INTERVAL
        while not self._stop.wait(self.batch_delay):
            if time.monotonic() >= next_sync:
                next_sync = time.monotonic() + SYNC_INTERVAL
                self.sync()
            elif self._queue:
                self.flush()

    def sync(self) -> None:
        """Flush compressed output and fdatasync. The fdatasync runs outside the record lock, so a
        slow disk never holds up the threads that are recording traffic."""
        with self._sync_lock:
            with self._lock:
                if self._queue and not self._fd_closed:
                    self._drain()
                if self.failed is not None or self._fd_closed:
                    return
                try:
                    self._sink.flush()
                except OSError as e:
                    self._fail(f"{self.path}: write failed: {e.strerror or e}")
                    return
            try:
                os.fdatasync(self._sink.fd)
            except OSError as e:
                with self._lock:
                    self._fail(f"{self.path}: sync failed: {e.strerror or e}")

    def close(self, **extra: Any) -> None:
        """Write `end` (unless writing failed) and close the file. Idempotent, safe from any thread."""
        with self._sync_lock:
            if self._fd_closed:
                return
            self._stop.set()
            if self.failed is None and not self.closed:
                self.write(
                    "end",
                    records=0,  # the real counts are filled in under the record lock
                    bytes=0,
                    errors=0,
                    **{"duration": round(max(self.now(), self._last_t), 6), **extra},
                )
            with self._lock:
                if self._queue:
                    self._drain()
                self.closed = True
                self._fd_closed = True
                try:
                    if self.failed is None:
                        self._sink.finish()
                        self._sink.sync()
                except OSError as e:
                    self._fail(f"{self.path}: final sync failed: {e.strerror or e}")
                finally:
                    os.close(self._sink.fd)

    def __enter__(self) -> CaptureWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _payload_len(record: dict[str, Any]) -> int:
    if "truncated" in record:
        return int(record["truncated"])
    if "raw" in record:
        return len(record["raw"])
    if "text" in record:
        return len(record["text"])
    if "b64" in record:
        return len(record["b64"]) * 3 // 4
    if "json" in record:
        return len(orjson.dumps(record["json"]))
    return 0


def _scrub(value: Any) -> Any:
    """Make a value serializable: lone surrogates become U+FFFD, unknown objects their repr."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v) for v in value]
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    return repr(value)


def open_writer(path: str | os.PathLike[str], **kwargs: Any) -> CaptureWriter:
    """Create a capture, making parent folders as needed."""
    private_dir(Path(os.fspath(path)).parent)
    return CaptureWriter(path, **kwargs)
