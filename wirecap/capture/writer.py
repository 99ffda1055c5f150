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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from wirecap import __version__
from wirecap.capture.payload import encode_payload, serialized_payload
from wirecap.capture.redact import Redactor, may_hold_secret, needs_redaction, redact_record
from wirecap.errors import WirecapError
from wirecap.fsmode import open_private, private_dir

FORMAT_VERSION = 1
SYNC_INTERVAL = 1.0
# Lines proved canonical together (`msg_payloads`): small enough that their parsed values never make
# the garbage collector run (its threshold is 700 live new containers), large enough to amortize.
_BATCH = 128
# Keys a msg record sets itself (or that always need redaction): extra fields named so take the dict path.
# `batch_delay` writers: a batch is written when it holds this many messages or bytes (else on the timer).
_QUEUE_MAX = 256
_QUEUE_BYTES = 1 << 20
_MSG_OWN_KEYS = frozenset({"seq", "t", "type", "ch", "dir", "json", "text", "b64", "raw", "headers",
                           "response_headers"})


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
            n = os.write(self.fd, data)  # one write(2) per record; the loop is for a short write only
            if n != len(data):
                self._write_all(memoryview(data)[n:])
        else:
            self.pending.append(data)

    def _write_all(self, view: memoryview) -> None:
        while view:
            n = os.write(self.fd, view)
            view = view[n:]

    def flush(self) -> None:
        """Compress and write what is buffered, decodable up to its last byte (compressed sinks)."""
        if not self.pending:
            return
        data = b"".join(self.pending) if len(self.pending) > 1 else self.pending[0]
        self.pending.clear()
        z = self._z
        self._write_all(memoryview(z.compress(data) + z.flush(self._sync_mode)))

    def finish(self) -> None:
        """Write what is buffered and end the compressed stream (no-op for a plain file)."""
        if self._z is None:
            return
        self.flush()
        z, self._z = self._z, None
        self._write_all(memoryview(z.flush()))

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
        self._queue: list[tuple[int, float, str, str, bytes | str, bool]] = []  # batched msgs, in seq order
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
        self._heads: dict[tuple[str, str], bytes] = {}  # msg record heads by (channel, direction)
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

    # --- records --------------------------------------------------------------------------------
    def write(self, rtype: str, t: float | None = None, _nbytes: int | None = None, _screened: bool = False,
              **fields: Any) -> int:
        """Append one record; returns its seq (0 when the writer is disabled)."""
        return self._append(rtype, t, _nbytes, _screened, fields)

    def _append(self, rtype: str, t: float | None, _nbytes: int | None, _screened: bool,
                fields: dict[str, Any]) -> int:
        with self._lock:
            if self._queue:
                self._drain()
            if self.closed:
                return 0
            if self.failed is not None:
                self.errors += 1
                return 0
            now = time.monotonic() - self._mono0 if t is None else t
            if now < self._last_t:
                now = self._last_t
            self._last_t = now
            seq = self._seq + 1
            record: dict[str, Any] = {"seq": seq, "t": round(now, 6), "type": rtype, **fields}
            if rtype == "end":  # counted under the lock: no record can slip in between
                record.update(records=seq, bytes=self.bytes, errors=self.errors)
            if self._emit(self._serialize(record, _screened)):
                self._seq = seq
                self.records += 1
                if rtype == "msg":
                    self.bytes += _nbytes if _nbytes is not None else _payload_len(record)
                elif rtype == "end":
                    self.closed = True  # nothing may follow the end record
                return seq
            return 0

    def _serialize(self, record: dict[str, Any], screened: bool = False) -> bytes:
        try:
            line = orjson.dumps(record)
        except TypeError:
            line = orjson.dumps(_scrub(record))
        # `screened`: the caller already ran `chunk_is_clean` over the raw bytes of this payload.
        if not screened and needs_redaction(self.redactor, record, line):
            try:
                line = orjson.dumps(redact_record(self.redactor, record))
            except TypeError:
                line = orjson.dumps(_scrub(redact_record(self.redactor, record)))
        return line + b"\n"

    def _emit(self, data: bytes, more: bool = False) -> bool:
        """Write serialized records; a compressed file gets them decodable at once unless `more` follows
        (or this thread is inside `batch()`). Call with the lock held (or from the constructor)."""
        sink = self._sink
        try:
            sink.write(data)
            if sink.compression is not None and not more and not getattr(self._tls, "depth", 0):
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

    def open(self, ch: str, kind: str, t: float | None = None, **fields: Any) -> int:
        return self.write("open", t, ch=ch, kind=kind, **fields)

    def msg(self, ch: str, dir: str, data: bytes | str, t: float | None = None, _screened: bool = False,
            **fields: Any) -> int:
        """A message from wire bytes (or text): picks the json / text / b64 form.

        The hot path of every recorder. The record is built as bytes: its head is cached per
        channel and direction, the payload is spliced (canonical JSON as its original bytes, never
        parsed into a dict to be serialized again), and one secret screen runs over the finished
        bytes outside the lock. A record that may hold a secret, a binary payload, or fields that
        do not serialize plainly take the dict path below, which redacts; both give the same bytes.
        """
        if self.batch_delay and not fields and data.__class__ in (bytes, str):
            return self._enqueue(ch, dir, data, t, _screened)
        part = serialized_payload(data)
        if part is not None:
            head = self._heads.get((ch, dir))
            if head is None:
                head = self._msg_head(ch, dir)
            extra = b"}\n"
            if fields:
                extra = self._fields_part(fields)
            if head and extra is not None:
                tail = head + part[0] + extra
                if _screened or not self.redactor.screen(tail):
                    return self._append_tail(tail, t, part[1])
        return self._msg_dict(ch, dir, data, t, _screened, fields)

    def _msg_head(self, ch: str, dir: str) -> bytes:
        """`,"type":"msg","ch":...,"dir":...` for a (channel, direction), b"" when not plain."""
        try:
            head = b',"type":"msg","ch":' + orjson.dumps(ch) + b',"dir":' + orjson.dumps(dir)
        except TypeError:
            return b""
        if not isinstance(ch, str) or not isinstance(dir, str) or may_hold_secret(head):
            return b""
        if len(self._heads) >= 4096:  # channels come and go: bound the cache
            self._heads.clear()
        self._heads[(ch, dir)] = head
        return head

    @staticmethod
    def _fields_part(fields: dict[str, Any]) -> bytes | None:
        """The extra fields of a msg record as bytes (`,"k":v...}\n`), None when they need the dict path."""
        if not _MSG_OWN_KEYS.isdisjoint(fields):
            return None
        try:
            return b"," + orjson.dumps(fields)[1:] + b"\n"
        except TypeError:
            return None

    def _append_tail(self, tail: bytes, t: float | None, nbytes: int) -> int:
        """Append a record given as the bytes after its `seq` and `t` (from `,"type"` to the newline)."""
        with self._lock:
            if self._queue:
                self._drain()
            if self.closed:
                return 0
            if self.failed is not None:
                self.errors += 1
                return 0
            now = time.monotonic() - self._mono0 if t is None else t
            if now < self._last_t:
                now = self._last_t
            self._last_t = now
            seq = self._seq + 1
            if self._emit(b'{"seq":%d,"t":%b%b' % (seq, orjson.dumps(round(now, 6)), tail)):
                self._seq = seq
                self.records += 1
                self.bytes += nbytes
                return seq
            return 0

    # --- batched msg records (batch_delay > 0) ------------------------------------------------------
    def _enqueue(self, ch: str, dir: str, data: bytes | str, t: float | None, screened: bool) -> int:
        """Give a msg record its seq and time now; `_drain` writes it (with the records queued around it)."""
        with self._lock:
            if self.closed:
                return 0
            if self.failed is not None:
                self.errors += 1
                return 0
            now = time.monotonic() - self._mono0 if t is None else t
            if now < self._last_t:
                now = self._last_t
            self._last_t = now
            seq = self._seq = self._seq + 1
            self.records += 1
            n = len(data) if data.__class__ is bytes else len(data.encode("utf-8", "surrogatepass"))  # type: ignore[union-attr]
            self.bytes += n
            self._queue.append((seq, now, ch, dir, data, screened))
            self._queued_bytes += n
            if len(self._queue) >= _QUEUE_MAX or self._queued_bytes >= _QUEUE_BYTES:
                self._drain()
            return seq

    def _drain(self) -> None:
        """Write the queued msg records, one `write` for all. Call with the lock held.

        Gives each record exactly the bytes `msg` would have: canonical JSON payloads are proved so
        for the whole batch at once (each parsed alone, the list serialized once: see
        `msg_payloads`), and the secret screen runs once over all the records' bytes (a superset of
        screening each: a shape or key inside one record is inside their concatenation); when it
        flags, every record is screened on its own, and those it flags take the redacting dict path.
        """
        queue, nbytes = self._queue, self._queued_bytes
        self._queue = []
        self._queued_bytes = 0
        if self.failed is not None:  # counted as written when queued: they are lost
            self.errors += len(queue)
            self.records -= len(queue)
            self.bytes -= nbytes
            return
        screen = self.redactor.screen
        heads = self._heads
        datas = [item[4] for item in queue]
        parts: list[tuple[bytes, int] | None] | None = None
        if all(d.__class__ is bytes for d in datas):
            try:
                if orjson.dumps(list(map(orjson.loads, datas))) == b"[" + b",".join(datas) + b"]":  # type: ignore[arg-type]
                    parts = [(b',"json":' + d, len(d)) for d in datas]  # type: ignore[operator]
            except (orjson.JSONDecodeError, TypeError):
                pass
        if parts is None:
            parts = [serialized_payload(d) for d in datas]
        tails: list[bytes | None] = []
        for (_, _, ch, dir, _, _), part in zip(queue, parts, strict=True):
            head = heads.get((ch, dir)) or self._msg_head(ch, dir)
            tails.append(head + part[0] + b"}\n" if head and part is not None else None)
        clean = None not in tails and not screen(b"".join(tails))  # type: ignore[arg-type]
        dumps = orjson.dumps
        lines: list[bytes] = []
        for (seq, now, ch, dir, data, screened), part, tail in zip(queue, parts, tails, strict=True):
            if tail is not None and part is not None and (
                    clean or screened or not screen(tail)):
                lines.append(b'{"seq":%d,"t":%b%b' % (seq, dumps(round(now, 6)), tail))
                continue
            record: dict[str, Any] = {"seq": seq, "t": round(now, 6), "type": "msg", "ch": ch, "dir": dir}
            record.update(encode_payload(data))
            lines.append(self._serialize(record, screened))
        if not self._emit(b"".join(lines)):  # `_emit` disabled the writer (one error): none reached the file
            self.errors += len(queue) - 1
            self.records -= len(queue)
            self.bytes -= nbytes

    def flush(self) -> None:
        """Write the queued msg records now (batch_delay writers) and make a compressed file decodable up
        to its last record; a no-op for a plain writer without a queue (its records are written at once)."""
        with self._lock:
            if self._queue and not self._fd_closed:
                self._drain()
            self._commit()

    def _commit(self) -> None:
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

    def _msg_dict(self, ch: str, dir: str, data: bytes | str, t: float | None, _screened: bool,
                  fields: dict[str, Any]) -> int:
        if isinstance(data, (bytes, bytearray)):
            nbytes = len(data)
        else:
            nbytes = len(data.encode("utf-8", "surrogatepass"))
        body: dict[str, Any] = {"ch": ch, "dir": dir}
        body.update(encode_payload(data))
        if fields:
            body.update(fields)
        return self._append("msg", t, nbytes, _screened, body)

    def msg_lines(self, ch: str, dir: str, lines: list[tuple[bytes, str]], t: float | None = None, *,
                  screened: bool = False) -> None:
        """The lines `(payload, eol)` of one pipe chunk, all arrived at `t`: the hot path of `wirecap tee`.

        Writes exactly the records `msg(ch, dir, payload, t, eol=eol)` would (eol omitted when
        `"\\n"`), one `write` each. A line that is canonical compact JSON (an object or array, as
        agent CLIs print) is spliced into its record as bytes instead of being re-serialized inside a
        dict, which is most of the cost of a record; every other line goes through `msg`.
        `screened`: the caller ran `chunk_is_clean` over the raw bytes these lines came from.
        """
        loads, dumps = orjson.loads, orjson.dumps
        prefix = b',"type":"msg","ch":' + dumps(ch) + b',"dir":' + dumps(dir) + b',"json":'
        run: list[tuple[bytes, str]] = []  # consecutive spliceable lines, written under one lock
        for payload, eol in lines:
            canonical = False
            if payload.startswith((b"{", b"[")):
                try:
                    canonical = dumps(loads(payload)) == payload
                except (orjson.JSONDecodeError, TypeError):
                    pass
            if canonical:
                run.append((payload, eol))
                if len(run) >= 256:  # bound how long other threads wait for the lock
                    self._write_run(ch, dir, run, t, prefix, screened)
                    run = []
                continue
            if run:
                self._write_run(ch, dir, run, t, prefix, screened)
                run = []
            self._slow_line(ch, dir, payload, t, eol, screened)
        if run:
            self._write_run(ch, dir, run, t, prefix, screened)

    def msg_payloads(self, ch: str, dir: str, payloads: list[bytes], t: float | None = None, *,
                     screened: bool = False) -> None:
        """Lines of one pipe chunk that all ended in `\\n` (payloads only), all arrived at `t`.

        The hot path of `wirecap tee`: the records `msg(ch, dir, payload, t)` would write (a spliced
        batch in one `write`). Lines are proved canonical JSON a batch at a time: each is parsed on its own (so each
        is one complete value), then the parsed batch is serialized as one array and compared with the
        lines joined into one; the two are equal only when every line is exactly its canonical form,
        and such a batch is spliced into records as bytes. Any other batch goes line by line through
        `msg`. `screened`: the caller ran `chunk_is_clean` over the raw bytes these lines came from.
        """
        head = self._heads.get((ch, dir)) or self._msg_head(ch, dir)
        if not head or (not screened and self.redactor.enabled):
            for payload in payloads:  # each record screened on its own
                self.msg(ch, dir, payload, t)
            return
        loads, dumps = orjson.loads, orjson.dumps
        prefix = head + b',"json":'
        for i in range(0, len(payloads), _BATCH):
            batch = payloads[i:i + _BATCH]
            try:
                canonical = dumps(list(map(loads, batch))) == b"[" + b",".join(batch) + b"]"
            except (orjson.JSONDecodeError, TypeError):
                canonical = False
            if canonical:
                self._splice_batch(batch, t, prefix)
            else:
                for payload in batch:
                    self.msg(ch, dir, payload, t, _screened=True)

    def _splice_batch(self, batch: list[bytes], t: float | None, prefix: bytes) -> None:
        """Write one record per canonical JSON payload of `batch`, under one lock, in one `write`.

        One `write(2)` for the batch instead of one per record (a fifth of `wirecap tee`'s time went to
        those calls): the records are whole and in order either way, and a write cut short (a full disk,
        a SIGKILL inside the call) can only leave a torn tail, as with one record per write.
        """
        with self._lock:
            if self._queue:
                self._drain()
            if self.closed:
                return
            if self.failed is not None:
                self.errors += len(batch)
                return
            now = time.monotonic() - self._mono0 if t is None else t
            if now < self._last_t:
                now = self._last_t
            self._last_t = now
            head = b',"t":' + orjson.dumps(round(now, 6)) + prefix
            seq = self._seq
            data = b"".join([b'{"seq":%d%b%b}\n' % (seq + i, head, payload) for i, payload in enumerate(batch, 1)])
            if self._emit(data):
                self._seq = seq + len(batch)
                self.records += len(batch)
                self.bytes += sum(map(len, batch))
            else:  # `_emit` disabled the writer and counted one error
                self.errors += len(batch) - 1

    def _write_run(self, ch: str, dir: str, run: list[tuple[bytes, str]], t: float | None, prefix: bytes,
                   screened: bool) -> None:
        i = 0
        while i < len(run):
            i = self._splice(run, i, t, prefix, screened)
            if i < len(run):  # run[i] may hold a secret: the full path, with redaction
                self._slow_line(ch, dir, run[i][0], t, run[i][1], screened)
                i += 1

    def _splice(self, run: list[tuple[bytes, str]], i: int, t: float | None, prefix: bytes, screened: bool) -> int:
        """Write spliced records for `run[i:]` under one lock; returns where it stopped."""
        dumps = orjson.dumps
        with self._lock:
            if self._queue:
                self._drain()
            if self.closed:
                return len(run)
            now = time.monotonic() - self._mono0 if t is None else t
            if now < self._last_t:
                now = self._last_t
            self._last_t = now
            head = b',"t":' + dumps(round(now, 6)) + prefix
            try:
                for j in range(i, len(run)):
                    payload, eol = run[j]
                    if self.failed is not None:
                        self.errors += len(run) - j
                        return len(run)
                    seq = self._seq + 1
                    line = b'{"seq":%d%b%b%b' % (
                        seq, head, payload, b"}\n" if eol == "\n" else b',"eol":' + dumps(eol) + b"}\n")
                    if not screened and needs_redaction(self.redactor, {}, line):
                        return j
                    if self._emit(line, more=True):
                        self._seq = seq
                        self.records += 1
                        self.bytes += len(payload)
            finally:
                self._commit()  # the run reaches a compressed file in one flush
        return len(run)

    def _slow_line(self, ch: str, dir: str, payload: bytes, t: float | None, eol: str, screened: bool) -> None:
        if eol == "\n":
            self.msg(ch, dir, payload, t, _screened=screened)
        else:
            self.msg(ch, dir, payload, t, eol=eol, _screened=screened)

    def response(self, ch: str, status: int, headers: dict[str, str], t: float | None = None, **fields: Any) -> int:
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
