"""What an LLM request told the model, as plain typed data: the system prompt, the tool definitions
and the messages (`RequestView`). Each dialect that carries requests on the wire turns its request
body into one (`Dialect.request_view`: the Anthropic Messages, OpenAI chat/completions, Responses
over SSE and WebSocket, and Codebuff WebSocket dialects); the report's thread
(`wirecap.analysis.report.thread`) lays them out.

A view references the body's own strings (nothing is copied or cut here): the caller keeps what it
needs of it and lets the body go. Pure; never raises on an odd body (a part it does not know is kept
as `other`, with its JSON as text).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import orjson

# the kinds of a message part
TEXT = "text"
THINKING = "thinking"
TOOL_CALL = "tool_call"
TOOL_RESULT = "tool_result"
IMAGE = "image"
OTHER = "other"


@dataclass(slots=True)
class ViewPart:
    """One piece of a message: text, thinking, a tool call (`name`, `call_id`, its input as `text`),
    a tool result (`call_id`, `is_error`), an image or document (its description), or `other`."""

    kind: str
    text: str = ""
    name: str | None = None
    call_id: str | None = None
    is_error: bool = False


@dataclass(slots=True)
class ViewMessage:
    role: str  # user | assistant | tool | system | developer | ...
    parts: list[ViewPart] = field(default_factory=list)


@dataclass(slots=True)
class ToolDef:
    name: str
    description: str = ""
    schema: str = ""  # its parameters' JSON schema, as JSON text ("" when none)


class LazyMessages(Sequence[ViewMessage]):
    """A request's messages read on demand: `raw` as the body has them, each turned into a ViewMessage
    (by `read`) only when asked for. A long conversation resends its whole history with every call;
    the thread reads only what is new (it tells old from new by the raw messages' hashes)."""

    __slots__ = ("_done", "raw", "read")

    def __init__(self, raw: list[Any], read: Callable[[Any], ViewMessage]) -> None:
        self.raw = raw
        self.read = read
        self._done: dict[int, ViewMessage] = {}

    def __len__(self) -> int:
        return len(self.raw)

    @overload
    def __getitem__(self, i: int) -> ViewMessage: ...

    @overload
    def __getitem__(self, i: slice) -> list[ViewMessage]: ...

    def __getitem__(self, i: int | slice) -> ViewMessage | list[ViewMessage]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self.raw)))]
        if i < 0:
            i += len(self.raw)
        m = self._done.get(i)
        if m is None:
            m = self._done[i] = self.read(self.raw[i])
        return m


@dataclass(slots=True)
class RequestView:
    """A request as the model sees it. `continues`: the request carries only what is new since an
    earlier response the server keeps (Responses' `previous_response_id`): its messages all are new."""

    model: str | None = None
    system: list[str] = field(default_factory=list)
    tools: list[ToolDef] | None = None  # None: the request carries no tool definitions
    messages: Sequence[ViewMessage] = field(default_factory=list)  # a list, or LazyMessages
    continues: str | None = None  # the previous response's id


def as_json_text(value: Any) -> str:
    """A value as text: a string itself, else its JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def text_of_content(content: Any) -> str:
    """The text of a content value (a string, or a list of blocks with `text`), other blocks as JSON."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] if isinstance(b, dict) and isinstance(b.get("text"), str) else as_json_text(b)
                         for b in content)
    return as_json_text(content)


def media_part(block: dict[str, Any]) -> ViewPart:
    """An image or a document block: what it is, never its bytes."""
    src = obj(block, "source")
    data = src.get("data")
    what = " ".join(str(x) for x in (block.get("type"), src.get("media_type")) if x)
    size = f" ({len(data)} bytes of base64)" if isinstance(data, str) else ""
    return ViewPart(IMAGE, f"[{what}{size}]")


def tool_defs(tools: Any, read: Callable[[dict[str, Any]], ToolDef | None]) -> list[ToolDef] | None:
    """The tool definitions of a request (`read` turns one into a ToolDef), None when it has none."""
    if not isinstance(tools, list):
        return None
    out = []
    for t in tools:
        d = read(t) if isinstance(t, dict) else None
        out.append(d if d is not None else ToolDef(str(t.get("type") if isinstance(t, dict) else "?"),
                                                   schema=as_json_text(t)))
    return out


def obj(d: Any, key: str) -> dict[str, Any]:
    """d[key] when d is a dict and that is a dict, else {}."""
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, dict) else {}


def arr(d: Any, key: str) -> list[Any]:
    """d[key] when d is a dict and that is a list, else []."""
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, list) else []
