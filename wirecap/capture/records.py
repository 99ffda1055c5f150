"""The record types of capture format v1, as `TypedDict`s: names and types for the type checker, at no
run-time cost (a record is the plain dict `orjson.loads` gives; nothing here is ever instantiated).

They follow the schema (`capture-format.schema.json`, the one source of truth, and
[docs/capture-format.md](../../docs/capture-format.md)): required fields are `Required`, the rest may be
absent, and fields the schema allows beyond those named (every type but `msg` allows some) are not
listed. What a caller may rely on for a record a `CaptureReader` yielded: its fields have these types
(the reader skips a record whose fields do not, see `schema.shape_problem`); field values the
schema leaves open (an `open` record's `kind` beyond the four known, a newer writer's record type)
are not checked beyond their JSON type.

Names: the on-disk field names never change. Where a field's name is ambiguous in code, the types
say what it is: an `open` record's `kind` is the channel's transport (`Transport`), a record's `type`
is its record type (`RecordType`).
"""

from typing import Any, Literal, Required, TypedDict

# An open record's `kind`: how the channel's messages travel.
Transport = Literal["ws", "http", "process", "pipe"]
# A message's `dir`: client to server (a request, what a process reads) or server to client.
Direction = Literal["c2s", "s2c"]
# A record's `type` (the header's is "header").
RecordType = Literal["open", "msg", "response", "close", "error", "end"]
Headers = dict[str, str]


class Header(TypedDict, total=False):
    """The first line of a capture."""

    wirecap: Required[int]  # the format version
    type: Required[Literal["header"]]
    id: Required[str]
    created: Required[str]  # ISO 8601 UTC; every record's `t` counts from it
    origin: Required[dict[str, Any]]  # tool, version, host, argv, source, imported_from
    redaction: Required[dict[str, Any]]  # the policy the writer applied


class OpenRecord(TypedDict, total=False):
    """A channel begins: a WebSocket, an HTTP exchange, a process, one of its pipes."""

    seq: Required[int]
    t: Required[float]
    type: Required[Literal["open"]]
    ch: Required[str]
    kind: Required[Transport]  # the channel's transport
    url: str
    method: str
    http_version: str
    headers: Headers
    response_headers: Headers
    status: int | None
    subprotocol: str | None
    extensions: str  # ws: the negotiated Sec-WebSocket-Extensions (e.g. permessage-deflate)
    argv: list[str]
    cwd: str | None
    env: dict[str, str]
    pid: int | None
    proc: str  # a pipe's process channel
    stream: Literal["stdout", "stderr", "stdin"]
    dialect: str | None
    client: str | None
    server: str | None


class MsgRecord(TypedDict, total=False):
    """One message on a channel: exactly one payload form (`json`, `text` or `b64`; `raw` keeps the
    original text of a `json` payload that does not re-encode to it)."""

    seq: Required[int]
    t: Required[float]
    type: Required[Literal["msg"]]
    ch: Required[str]
    dir: Required[Direction]
    json: Any
    text: str
    b64: str
    raw: str
    raw_b64: str
    binary: Literal[True]
    sse: dict[str, Any]  # the SSE fields of an event (event, id, retry, ...)
    truncated: int  # the original size, when only a prefix was kept
    eol: Literal["\n", "\r\n", ""]  # a pipe line's terminator ("\n" when absent)
    flags: list[Literal["injected", "dropped", "redacted", "undecoded", "summary"]]
    note: str
    encoding: str | None


class ResponseRecord(TypedDict, total=False):
    """The head of an HTTP response."""

    seq: Required[int]
    t: Required[float]
    type: Required[Literal["response"]]
    ch: Required[str]
    status: Required[int]
    reason: str | None
    headers: Headers
    sse: bool
    http_version: str
    lines: bool  # a JSON-lines body: one msg per line
    encoding: str | None
    note: str


class CloseRecord(TypedDict, total=False):
    """A channel ends: a WebSocket close, an HTTP exchange's end, a process exit, a pipe's EOF."""

    seq: Required[int]
    t: Required[float]
    type: Required[Literal["close"]]
    ch: Required[str]
    code: int | None
    reason: str | None
    by: Literal["client", "server"] | None
    status: int | None
    ttfb: float | None
    duration: float | None
    bytes: int | None
    exit_code: int | None
    signal: str | None
    lines: int | None
    error: str | None
    incomplete: bool


class ErrorRecord(TypedDict, total=False):
    """A recorder failure (the traffic itself was not affected)."""

    seq: Required[int]
    t: Required[float]
    type: Required[Literal["error"]]
    message: Required[str]
    ch: str
    where: str


class EndRecord(TypedDict, total=False):
    """The last record of a clean stop, with the counts of the whole file."""

    seq: Required[int]
    t: Required[float]
    type: Required[Literal["end"]]
    records: Required[int]
    bytes: Required[int]  # payload bytes of the msg records
    errors: Required[int]
    duration: float


Record = OpenRecord | MsgRecord | ResponseRecord | CloseRecord | ErrorRecord | EndRecord
