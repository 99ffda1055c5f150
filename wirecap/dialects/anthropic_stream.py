"""The Anthropic Messages stream as one sans-I/O state machine (`AnthropicStream`).

Three dialects carry the same stream: `anthropic-sse` (the API's own SSE events), and `claude-code` /
`codebuddy` (the same events wrapped in `stream_event` lines by `--include-partial-messages`). This
module is the one place that knows its grammar:

    message_start  (content_block_start  content_block_delta*  content_block_stop)*  message_delta*  message_stop
    ping and error may come anywhere

Contract (what a decoder may rely on):
- `AnthropicStream.feed(event)` takes one stream event, a JSON object whose `type` names it (the SSE
  `event:` name when the data has no `type`: pass it as `name`). It never raises on bad input and
  returns exactly one output, a value of one of the classes below: `MessageStart`,
  `BlockStart`, `BlockDelta`, `BlockStop`, `MessageDelta`, `MessageStop`, `StreamError`, `QUIET`
  (an event that says nothing: ping, a signature or citations delta) or `Problem` (the event does
  not fit: an unknown type, a delta of a block never started; its `reason` is one line).
- Blocks are keyed by their `index` (`hkey`: any JSON value). A block's item id is its `tool_use` id,
  else `<message id>:<index>`, the same in every dialect, so the ids of streamed items match those
  the completed message (or the assistant line) gives.
- The machine decides nothing about events, usage policy or findings: each decoder maps the outputs
  to universal events its own way (Claude Code marks message_start usage as a snapshot, the SSE
  dialect completes blocks at their stop).
- `accumulate=True` keeps every text / JSON piece of a block, so `BlockStop.block.text()` is the
  whole block; without it (Claude Code prints the completed message anyway) pieces are not kept.
- Steps: `feed` dispatches on the type to one public step per event type (`message_start`,
  `block_start`, `block_delta`, `block_stop`, `message_delta`, `message_stop`, `error`). A decoder
  that already dispatches on the type may call the step itself: `block_start` / `block_stop` then
  give the `Block` (or a `Problem`) unwrapped, `message_delta` the counts (the stop reason is in
  `stop_reason`) and `message_stop` the unfinished blocks, which spares an allocation on frequent
  lines. The state changes the same either way.
- Hot path: for a `content_block_delta` of a started block, `blocks[index]` and
  `DELTA_FIELD[delta type]` are exactly what `block_delta` uses, and for a `content_block_stop` of a
  started block `blocks.pop(index)` is exactly what `block_stop` does; a decoder that does not
  accumulate may do them directly instead (Claude Code does, on most lines of a partial-messages run),
  and takes any other case (an index not started) to the step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from wirecap.dialects.base import hkey, num
from wirecap.events import MESSAGE, REASONING, TOOL_CALL

# content block type -> universal item
BLOCK_ITEM: Final[dict[str, str]] = {
    "text": MESSAGE,
    "thinking": REASONING,
    "redacted_thinking": REASONING,
    "tool_use": TOOL_CALL,
    "server_tool_use": TOOL_CALL,
    "mcp_tool_use": TOOL_CALL,
}
# delta type -> (field of the delta holding the piece, field of the item.delta event's data)
DELTA_FIELD: Final[dict[str, tuple[str, str]]] = {
    "text_delta": ("text", "text"),
    "input_json_delta": ("partial_json", "arguments"),
    "thinking_delta": ("thinking", "text"),
}
QUIET_DELTAS: Final = frozenset(("signature_delta", "citations_delta"))


# --- usage ------------------------------------------------------------------------------------------
_MISSING = object()


def _count(u: dict[str, Any], snake: str, camel: str) -> int | float:
    """u[snake], else u[camel], else 0, through `num` (an int takes the short way)."""
    v = u.get(snake, _MISSING)
    if v is _MISSING:
        v = u.get(camel, 0)
    return v if v.__class__ is int else num(v)


def usage_fields(u: dict[str, Any]) -> dict[str, Any]:
    """Anthropic usage (input excludes cache) in universal names; both spellings (snake, camel) read."""
    return {
        "input_tokens": _count(u, "input_tokens", "inputTokens"),
        "output_tokens": _count(u, "output_tokens", "outputTokens"),
        "cache_read_tokens": _count(u, "cache_read_input_tokens", "cacheReadInputTokens"),
        "cache_creation_tokens": _count(u, "cache_creation_input_tokens", "cacheCreationInputTokens"),
    }


def delta_counts(u: dict[str, Any]) -> dict[str, Any]:
    """The counts a `message_delta` updates: the non-zero ones, and `output_tokens` always (in the
    order of `usage_fields`)."""
    out: dict[str, Any] = {}
    v = _count(u, "input_tokens", "inputTokens")
    if v:
        out["input_tokens"] = v
    out["output_tokens"] = _count(u, "output_tokens", "outputTokens")
    v = _count(u, "cache_read_input_tokens", "cacheReadInputTokens")
    if v:
        out["cache_read_tokens"] = v
    v = _count(u, "cache_creation_input_tokens", "cacheCreationInputTokens")
    if v:
        out["cache_creation_tokens"] = v
    return out


# --- outputs ----------------------------------------------------------------------------------------
class Block:
    """A content block being streamed: its universal item, its item id, the `content_block` object its
    start gave (`type`, `name`, `call_id` read from it) and, when the machine accumulates, the pieces
    so far. Four slots: a block is made per content block of every streamed message."""

    __slots__ = ("content", "id", "item", "parts")

    def __init__(self, item: str, id: str, content: dict[str, Any], parts: list[str] | None) -> None:
        self.item = item
        self.id = id
        self.content = content
        self.parts = parts

    @property
    def type(self) -> str:
        """The content block type (`text`, `thinking`, `redacted_thinking`, `tool_use`, ...)."""
        return self.content["type"]  # (a str: block_start checked it)

    @property
    def name(self) -> Any:
        """A tool use's name as given (None for other blocks)."""
        return self.content.get("name") if self.item == TOOL_CALL else None

    @property
    def call_id(self) -> Any:
        """A tool use's id as given (None for other blocks)."""
        return self.content.get("id") if self.item == TOOL_CALL else None

    def text(self) -> str:
        """The pieces joined ("" when the machine does not accumulate)."""
        return "".join(self.parts) if self.parts else ""


class _Output:
    """What the machine says about one event. Plain slotted classes (not dataclasses: they cost at
    import, and a decoder imports this module on every run); read-only by convention."""

    __slots__: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={getattr(self, k)!r}' for k in self.__slots__)})"


class MessageStart(_Output):
    """A message began: its id (None when it has none), the model it names (as given) and its usage
    snapshot (the raw usage object, None when absent)."""

    __slots__ = ("message_id", "model", "usage")

    def __init__(self, message_id: str | None, model: Any, usage: dict[str, Any] | None) -> None:
        self.message_id = message_id
        self.model = model
        self.usage = usage


class BlockStart(_Output):
    __slots__ = ("block",)

    def __init__(self, block: Block) -> None:
        self.block = block


class BlockDelta(_Output):
    """A piece of a block: `field` is the item.delta data field ("text" or "arguments")."""

    __slots__ = ("block", "field", "piece")

    def __init__(self, block: Block, field: str, piece: Any) -> None:
        self.block = block
        self.field = field
        self.piece = piece


class BlockStop(_Output):
    __slots__ = ("block",)

    def __init__(self, block: Block) -> None:
        self.block = block


class MessageDelta(_Output):
    """The message's stop reason (None when this delta has none) and its updated counts
    (`delta_counts`, None when the event carries no usage)."""

    __slots__ = ("counts", "stop_reason")

    def __init__(self, stop_reason: Any, counts: dict[str, Any] | None) -> None:
        self.stop_reason = stop_reason
        self.counts = counts


class MessageStop(_Output):
    """The terminal event; `unfinished` are the blocks started and never stopped (in start order)."""

    __slots__ = ("unfinished",)

    def __init__(self, unfinished: tuple[Block, ...]) -> None:
        self.unfinished = unfinished


class StreamError(_Output):
    """An `error` event; `error` is its `error` value as given."""

    __slots__ = ("error",)

    def __init__(self, error: Any) -> None:
        self.error = error


class Quiet(_Output):
    """An event that says nothing (ping, a signature or citations delta)."""

    __slots__ = ()


class Problem(_Output):
    """An event that does not fit the stream; `reason` is one line for an `unparsed` event."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


QUIET: Final = Quiet()

Output = MessageStart | BlockStart | BlockDelta | BlockStop | MessageDelta | MessageStop | StreamError | Quiet | Problem


class AnthropicStream:
    """The state of one Anthropic message stream: the current message id, the blocks open by index,
    whether a message is open (started, not stopped) and its last stop reason. See the module's
    contract; `feed` is the only way the state changes."""

    __slots__ = ("_handlers", "accumulate", "blocks", "message_id", "open", "stop_reason")

    def __init__(self, *, accumulate: bool = False) -> None:
        self.accumulate = accumulate
        self.message_id: str | None = None
        self.blocks: dict[Any, Block] = {}  # one dict for the machine's life (cleared, never replaced)
        self.open = False
        self.stop_reason: Any = None
        self._handlers: dict[str, Callable[[dict[str, Any]], Output]] = {
            "content_block_delta": self.block_delta,
            "content_block_start": self._feed_block_start,
            "content_block_stop": self._feed_block_stop,
            "message_start": self.message_start,
            "message_delta": self._feed_message_delta,
            "message_stop": self._feed_message_stop,
            "ping": _quiet,
            "error": self.error,
        }

    def feed(self, event: dict[str, Any], name: str | None = None) -> Output:
        """The output of one stream event (its `type`, else `name`, says which); never raises."""
        et = event.get("type") or name
        handler = self._handlers.get(et) if isinstance(et, str) else None
        if handler is None:
            return Problem(f"unknown stream event type {et!r}")
        return handler(event)

    def take_unfinished(self) -> tuple[Block, ...]:
        """The blocks still open, in start order, now closed (a stream cut before their stop)."""
        if not self.blocks:
            return ()
        out = tuple(self.blocks.values())
        self.blocks.clear()
        return out

    def _feed_block_start(self, ev: dict[str, Any]) -> Output:
        b = self.block_start(ev)
        return BlockStart(b) if isinstance(b, Block) else b

    def _feed_block_stop(self, ev: dict[str, Any]) -> Output:
        b = self.block_stop(ev)
        return BlockStop(b) if isinstance(b, Block) else b

    def _feed_message_delta(self, ev: dict[str, Any]) -> Output:
        counts = self.message_delta(ev)
        delta = ev.get("delta")
        stop = delta.get("stop_reason") if delta.__class__ is dict else None
        return MessageDelta(stop or None, counts)

    def _feed_message_stop(self, ev: dict[str, Any]) -> Output:
        return MessageStop(self.message_stop(ev))

    # --- the steps, one per event type -----------------------------------------------------------------
    # What `feed` calls once it knows the type. A decoder that has already dispatched on the type may
    # call them directly: block_start / block_stop then give the `Block` itself (not wrapped in
    # BlockStart / BlockStop) and message_stop the unfinished blocks, which spares an allocation on
    # the lines most frequent in a partial-messages run.
    def message_start(self, ev: dict[str, Any]) -> MessageStart | Problem:
        msg = ev.get("message")
        if msg.__class__ is not dict:
            return Problem("message_start without a message")
        mid = msg.get("id")
        self.message_id = mid if isinstance(mid, str) else None
        self.blocks.clear()
        self.open = True
        self.stop_reason = None
        usage = msg.get("usage")
        return MessageStart(self.message_id, msg.get("model"), usage if usage.__class__ is dict else None)

    def block_start(self, ev: dict[str, Any]) -> Block | Problem:
        cb: Any = ev.get("content_block")
        try:
            item = BLOCK_ITEM[cb["type"]]  # (not an object, no type, an unknown or unhashable type: below)
        except (KeyError, TypeError, IndexError):
            if cb.__class__ is not dict:
                return Problem("content_block_start without a block")
            return Problem(f"unknown content block type {cb.get('type')!r:.60}")
        idx = ev.get("index")
        if idx.__class__ is not int:
            idx = hkey(idx)
        if item == TOOL_CALL and (bid := cb.get("id")).__class__ is str:
            iid = bid
        else:
            iid = f"{self.message_id}:{idx}"
        block = self.blocks[idx] = Block(item, iid, cb, [] if self.accumulate else None)
        return block

    def block_delta(self, ev: dict[str, Any]) -> BlockDelta | Quiet | Problem:
        delta = ev.get("delta")
        if delta.__class__ is not dict:
            return Problem(f"unknown content_block_delta {delta!r:.60}")
        dt = delta.get("type")
        spec = DELTA_FIELD.get(dt) if isinstance(dt, str) else None
        if spec is None:
            return QUIET if isinstance(dt, str) and dt in QUIET_DELTAS else Problem(f"unknown content_block_delta {delta!r:.60}")
        idx = ev.get("index")
        block = self.blocks.get(idx if idx.__class__ is int else hkey(idx))
        if block is None:
            return Problem("delta for a content block that was not started")
        piece = delta.get(spec[0])
        if block.parts is not None and isinstance(piece, str):
            block.parts.append(piece)
        return BlockDelta(block, spec[1], piece)

    def block_stop(self, ev: dict[str, Any]) -> Block | Problem:
        idx = ev.get("index")
        block = self.blocks.pop(idx if idx.__class__ is int else hkey(idx), None)
        if block is None:
            return Problem("stop for a content block that was not started")
        return block

    def message_delta(self, ev: dict[str, Any]) -> dict[str, Any] | None:
        """The updated counts (`delta_counts`; None without usage); a stop reason goes to `stop_reason`."""
        delta = ev.get("delta")
        if delta.__class__ is dict and (stop := delta.get("stop_reason")):
            self.stop_reason = stop
        usage = ev.get("usage")
        return delta_counts(usage) if usage.__class__ is dict else None

    def message_stop(self, ev: dict[str, Any]) -> tuple[Block, ...]:
        self.open = False
        return self.take_unfinished() if self.blocks else ()

    def error(self, ev: dict[str, Any]) -> StreamError:
        return StreamError(ev.get("error"))


def _quiet(ev: dict[str, Any]) -> Output:
    return QUIET


# the event types the machine knows (the drift declaration of the stream names the same)
EVENT_TYPES: Final = frozenset(AnthropicStream()._handlers)

__all__ = [
    "BLOCK_ITEM",
    "DELTA_FIELD",
    "EVENT_TYPES",
    "QUIET",
    "QUIET_DELTAS",
    "AnthropicStream",
    "Block",
    "BlockDelta",
    "BlockStart",
    "BlockStop",
    "MessageDelta",
    "MessageStart",
    "MessageStop",
    "Output",
    "Problem",
    "Quiet",
    "StreamError",
    "delta_counts",
    "usage_fields",
]
