"""The Anthropic Messages shapes the drift check knows (rule `drift`, wirecap.dialects.drift).

One home for what a message, a content block, a delta and a stream event look like, because three
dialects carry them: `anthropic-sse` (the API itself), `claude-code` and `codebuddy` (their stdout
mirrors the API's messages and, with --include-partial-messages, its stream events). Taken from the
shipped captures and lab runs of Claude Code 2.1.197 and CodeBuddy 2.117.0 (text, tool_use, thinking,
errors), plus the block and delta types the decoders handle by name.
"""

from __future__ import annotations

from wirecap.dialects.drift import OPEN, MapOf, Union

USAGE = {
    "input_tokens": None, "output_tokens": None, "cache_creation_input_tokens": None, "cache_read_input_tokens": None,
    "cache_creation": None, "server_tool_use": None, "service_tier": None, "inference_geo": None, "iterations": None,
    "speed": None,
}

_TOOL_USE = {"type": None, "id": None, "name": None, "input": OPEN, "caller": None}
_TOOL_RESULT_OUT = {"type": None, "tool_use_id": None, "content": OPEN, "is_error": None}

# Content blocks of an assistant message (what the model produced).
BLOCK = Union("type", {
    "text": {"type": None, "text": None, "citations": OPEN},
    "thinking": {"type": None, "thinking": None, "signature": None},
    "redacted_thinking": {"type": None, "data": None},
    "tool_use": _TOOL_USE,
    "server_tool_use": _TOOL_USE,
    "mcp_tool_use": {**_TOOL_USE, "server_name": None},
    "web_search_tool_result": _TOOL_RESULT_OUT,
    "web_fetch_tool_result": _TOOL_RESULT_OUT,
    "code_execution_tool_result": _TOOL_RESULT_OUT,
    "bash_code_execution_tool_result": _TOOL_RESULT_OUT,
    "text_editor_code_execution_tool_result": _TOOL_RESULT_OUT,
    "mcp_tool_result": _TOOL_RESULT_OUT,
}, label=False)

DELTA = Union("type", {
    "text_delta": {"type": None, "text": None},
    "input_json_delta": {"type": None, "partial_json": None},
    "thinking_delta": {"type": None, "thinking": None},
    "signature_delta": {"type": None, "signature": None},
    "citations_delta": {"type": None, "citation": OPEN},
}, label=False)

MESSAGE = {
    "id": None, "type": None, "role": None, "model": None, "content": [BLOCK], "stop_reason": None,
    "stop_sequence": None, "stop_details": OPEN, "usage": USAGE, "container": OPEN, "context_management": OPEN,
}

ERROR = {"type": None, "message": None}

# The events of a streamed message (`event:` names of the SSE stream, `stream_event.event` in stdout).
EVENTS = {
    "message_start": {"type": None, "message": MESSAGE},
    "content_block_start": {"type": None, "index": None, "content_block": BLOCK},
    "content_block_delta": {"type": None, "index": None, "delta": DELTA},
    "content_block_stop": {"type": None, "index": None},
    "message_delta": {"type": None, "delta": {"stop_reason": None, "stop_sequence": None, "stop_details": OPEN,
                                              "container": OPEN},
                      "usage": USAGE, "context_management": OPEN},
    "message_stop": {"type": None},
    "ping": {"type": None},
    "error": {"type": None, "error": ERROR, "request_id": None},
}


def user_blocks(**tool_result_extra: object) -> Union:
    """Content blocks of a user message (the prompt, attachments, tool results); a dialect may add
    fields to its tool results (CodeBuddy's `_meta`)."""
    return Union("type", {
        "text": {"type": None, "text": None, "cache_control": None},
        "image": {"type": None, "source": OPEN, "cache_control": None},
        "document": {"type": None, "source": OPEN, "title": None, "context": None, "citations": OPEN,
                     "cache_control": None},
        "tool_result": {"type": None, "tool_use_id": None, "content": OPEN, "is_error": None, "cache_control": None,
                        **tool_result_extra},
    }, label=False)


MODEL_USAGE = MapOf({
    "inputTokens": None, "outputTokens": None, "cacheReadInputTokens": None, "cacheCreationInputTokens": None,
    "webSearchRequests": None, "costUSD": None, "contextWindow": None, "maxOutputTokens": None,
    "input_tokens": None, "output_tokens": None, "cache_read_input_tokens": None,
    "cache_creation_input_tokens": None, "cost_usd": None,
})
