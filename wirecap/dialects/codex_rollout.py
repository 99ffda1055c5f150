"""Codex CLI rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`), imported as a pipe.

Codex appends one line per thread entry: `{"timestamp", "type", "payload"}` with `type`
- `session_meta` (thread id, cwd, cli_version, base instructions), `turn_context` (model, policies),
  `world_state`, `compacted`;
- `response_item`: the model-facing history (messages by role, reasoning, function / custom / local
  shell calls and their outputs) — the one source of items here;
- `event_msg`: lifecycle (`task_started` / `task_complete` / `turn_aborted`; a failed turn is a
  `task_complete` with an `error` object), `token_count`, `error`,
  `stream_error`, and UI mirrors of the response items (`item_completed`, `agent_message`,
  `user_message`, `exec_command_end`, ...) that are not turned into items a second time;
- `token_usage_record` (0.169+): the usage of one response, by `response_id`.

Usage traps handled here: `token_count.info.total_token_usage` is the whole thread's running total
(in a resumed thread it includes every earlier run) and `codex exec --json` prints that total in
`turn.completed`; the per-call numbers are `token_usage_record.usage` (or, in rollouts without those
lines, `token_count.info.last_token_usage`, counted only when the running total moved, since the same
`token_count` can be written twice). OpenAI's `input_tokens` includes `cached_input_tokens`, so the
universal input is the difference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from wirecap.dialects.base import ERROR_SEV, WARNING, Dialect, as_dict, json_objects, str_or_none
from wirecap.dialects.codex_exec import codex_usage
from wirecap.dialects.stream import StreamDecoder
from wirecap.events import (
    ERROR,
    ITEM_COMPLETED,
    MESSAGE,
    REASONING,
    SESSION_STARTED,
    STATUS,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_ENDED,
    TURN_STARTED,
    USAGE,
    Event,
)

LINE_TYPES = frozenset(("session_meta", "turn_context", "response_item", "event_msg", "compacted", "world_state",
                        "token_usage_record"))
# event_msg types that repeat what response_items already say (the UI's view): no second item.
_MIRRORS = frozenset(("item_started", "item_completed", "user_message", "agent_message", "agent_message_delta",
                      "agent_reasoning", "agent_reasoning_delta", "agent_reasoning_raw_content",
                      "agent_reasoning_section_break", "exec_command_begin", "exec_command_end",
                      "exec_command_output_delta", "patch_apply_begin", "patch_apply_end", "mcp_tool_call_begin",
                      "mcp_tool_call_end", "web_search_begin", "web_search_end", "view_image_tool_call",
                      "turn_diff"))
# event_msg types kept as status items.
_NOTES = frozenset(("thread_settings_applied", "context_compacted", "plan_update", "background_event", "warning",
                    "entered_review_mode", "exited_review_mode", "thread_rolled_back", "session_configured",
                    "undo_completed", "deprecation_notice"))
# response_item types that are bookkeeping, not conversation: status items.
_ITEM_NOTES = frozenset(("ghost_snapshot", "compaction", "compaction_summary"))
_CALLS = frozenset(("function_call", "custom_tool_call", "local_shell_call"))
_OUTPUTS = frozenset(("function_call_output", "custom_tool_call_output"))


def sniff(open_record: dict[str, Any] | None, first: list[dict[str, Any]]) -> str | None:
    """A rollout line: `{"timestamp", "type": <rollout line type>, "payload": {...}}`."""
    for obj in json_objects(first):
        t = obj.get("type")
        if isinstance(t, str) and t in LINE_TYPES and isinstance(obj.get("payload"), dict) \
                and isinstance(obj.get("timestamp"), str):
            return f"a {t!r} line with a payload (Codex rollout file)"
    return None


def _context(e: Event) -> bool:
    """Events a turn's context makes before its prompt: instructions, context messages, status items."""
    return e.kind in (SESSION_STARTED, TURN_STARTED, TURN_ENDED) or e.item == STATUS or (
        e.item == MESSAGE and e.role in ("user", "system"))


def _text(content: Any) -> str | None:
    """The text of a message's content parts (input_text / output_text / text), joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    parts = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return "\n".join(parts) if parts else None


class CodexRolloutDecoder(StreamDecoder):
    dialect = "codex-rollout"

    def __init__(self, unit: str, options: dict[str, Any] | None = None) -> None:
        super().__init__(unit, options)
        self.session_id: str | None = None
        self.model: str | None = None
        self.turn: dict[str, Any] | None = None  # the open turn's task_started record
        self.turn_shown = False  # its turn.started is out (it waits for the prompt, see _open_turn)
        self.turn_user: Any = None  # the last user message of the open turn (the prompt, without a mirror)
        self.turn_error = False  # the open turn had an `error` line (its cx-error finding is out)
        self.calls: dict[str, tuple[str, int | None, str | None]] = {}
        self.exit_codes: dict[str, Any] = {}  # call_id -> exit code (from the UI mirror lines)
        self.usage_records = False  # token_usage_record lines seen: token_count is then not counted
        self.last_total: Any = None
        self._dispatch = {
            "session_meta": self._session_meta,
            "turn_context": self._turn_context,
            "response_item": self._response_item,
            "event_msg": self._event_msg,
            "compacted": self._compacted,
            "world_state": self._world_state,
            "token_usage_record": self._usage_record,
        }
        self._items: dict[str, Callable[[dict[str, Any], dict[str, Any]], Event]] = {
            "message": self._message,
            "reasoning": self._reasoning,
            "web_search_call": self._web_search,
        }

    def msg_type(self, rec: dict[str, Any]) -> str:
        obj = rec.get("json")
        if isinstance(obj, dict):
            t, p = obj.get("type"), obj.get("payload")
            if isinstance(t, str) and isinstance(p, dict) and isinstance(p.get("type"), str):
                return f"{t}/{p['type']}"
        return super().msg_type(rec)

    def on_object(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        t = obj.get("type")
        handler = self._dispatch.get(t) if isinstance(t, str) else None
        if handler is None:
            return [self.unparsed(rec, f"unknown rollout line type {t!r}")]
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            return [self.unparsed(rec, f"{t} line without a payload object")]
        out = handler(rec, payload)
        if self.turn is not None and not self.turn_shown:
            for e in out:
                if e.item == MESSAGE and e.role == "user":
                    self.turn_user = e.data.get("text")
                elif not _context(e):  # output before a prompt mirror line: the turn starts here
                    out[:0] = self._open_turn(rec, self.turn_user)
                    break
        return out

    # --- thread and turns ---------------------------------------------------------------------------
    def _session_meta(self, rec: dict[str, Any], p: dict[str, Any]) -> list[Event]:
        sid = str_or_none(p.get("id")) or str_or_none(p.get("session_id"))
        if self.session_id is not None:  # a fork or a second meta line: the thread is already open
            return [self.status(rec, "session meta", subtype="session_meta", session_id=sid)]
        self.session_id = sid
        return [self.ev(SESSION_STARTED, rec, data={
            "session_id": sid, "model": None, "cwd": p.get("cwd"), "version": p.get("cli_version"),
            "originator": p.get("originator"), "source": p.get("source"), "model_provider": p.get("model_provider")})]

    def _turn_context(self, rec: dict[str, Any], p: dict[str, Any]) -> list[Event]:
        model = str_or_none(p.get("model"))
        if model:
            self.model = model
        return [self.status(rec, f"turn context: model {model}", subtype="turn_context", model=model,
                            cwd=p.get("cwd"), approval_policy=p.get("approval_policy"))]

    def _world_state(self, rec: dict[str, Any], p: dict[str, Any]) -> list[Event]:
        return [self.status(rec, "world state", subtype="world_state", full=p.get("full"))]

    def _compacted(self, rec: dict[str, Any], p: dict[str, Any]) -> list[Event]:
        return [self.status(rec, "history compacted", subtype="compacted", message=p.get("message"))]

    def _start_turn(self, rec: dict[str, Any], p: dict[str, Any]) -> list[Event]:
        """task_started: the turn opens; its turn.started waits for the prompt (the user_message /
        UserMessage mirror line), because Codex writes the turn's context messages in between."""
        out = self._end_turn(rec, "superseded", False) if self.turn is not None else []
        self.turn, self.turn_shown, self.turn_user, self.turn_error = rec, False, None, False
        return out

    def _open_turn(self, rec: dict[str, Any], prompt: str | None) -> list[Event]:
        if self.turn is None or self.turn_shown:
            return []
        self.turn_shown = True
        return [self.ev(TURN_STARTED, rec, data={"prompt": prompt})]

    def _end_turn(self, rec: dict[str, Any], stop: Any, is_error: bool, **data: Any) -> list[Event]:
        out = self._open_turn(rec, None)
        self.turn = None
        out.append(self.ev(TURN_ENDED, rec, data={"stop_reason": stop, "is_error": is_error, **data}))
        return out

    # --- response items: one handler per kind of item ------------------------------------------------------
    def _response_item(self, rec: dict[str, Any], p: dict[str, Any]) -> list[Event]:
        it = p.get("type")
        if not isinstance(it, str):
            return [self.unparsed(rec, f"unknown response item type {it!r}")]
        if it in _CALLS:
            return [self._call(rec, it, p)]
        if it in _OUTPUTS:
            return [self._output(rec, p)]
        if it in _ITEM_NOTES:
            return [self.status(rec, it, subtype=it)]
        handler = self._items.get(it)
        if handler is None:
            return [self.unparsed(rec, f"unknown response item type {it!r}")]
        return [handler(rec, p)]

    def _message(self, rec: dict[str, Any], p: dict[str, Any]) -> Event:
        role = p.get("role")
        iid = str_or_none(p.get("id"))
        text = _text(p.get("content"))
        if role in ("assistant", "user"):
            return self.ev(ITEM_COMPLETED, rec, MESSAGE, iid, role, {"text": text})
        if role in ("developer", "system"):  # instructions Codex puts in the model's input
            return self.ev(ITEM_COMPLETED, rec, MESSAGE, iid, "system", {"text": text, "wire_role": role})
        return self.unparsed(rec, f"message with unknown role {role!r}")

    def _reasoning(self, rec: dict[str, Any], p: dict[str, Any]) -> Event:
        data: dict[str, Any] = {"text": _text(p.get("summary")) or _text(p.get("content"))}
        if p.get("encrypted_content"):
            data["encrypted"] = True
        return self.ev(ITEM_COMPLETED, rec, REASONING, str_or_none(p.get("id")), "assistant", data)

    def _web_search(self, rec: dict[str, Any], p: dict[str, Any]) -> Event:
        iid = str_or_none(p.get("id"))
        return self.ev(ITEM_COMPLETED, rec, TOOL_CALL, iid, "assistant",
                       {"name": "web_search", "input": p.get("action"), "call_id": iid})

    def _call(self, rec: dict[str, Any], it: str, p: dict[str, Any]) -> Event:
        """A function / custom tool / local shell call (remembered until its output comes)."""
        cid = str_or_none(p.get("call_id")) or str_or_none(p.get("id"))
        if it == "function_call":
            name, inp = p.get("name"), p.get("arguments")
            if isinstance(inp, str):
                try:
                    inp = orjson.loads(inp)
                except orjson.JSONDecodeError:
                    pass
        elif it == "custom_tool_call":
            name, inp = p.get("name"), p.get("input")
        else:
            name, inp = "local_shell", p.get("action")
        if cid is not None:
            self.calls[cid] = (str(name), rec.get("seq"), rec.get("ch"))
        return self.ev(ITEM_COMPLETED, rec, TOOL_CALL, cid, "assistant", {"name": name, "input": inp, "call_id": cid})

    def _output(self, rec: dict[str, Any], p: dict[str, Any]) -> Event:
        """A call's output: failed when it says so or its command exited non-zero (from the UI mirror)."""
        cid = str_or_none(p.get("call_id"))
        if cid is not None:
            self.calls.pop(cid, None)
        output = p.get("output")
        failed = False
        if isinstance(output, dict):  # {"content": ..., "success": bool} in some versions
            failed = output.get("success") is False
            output = output.get("content", output)
        exit_code = self.exit_codes.pop(cid, None) if cid is not None else None
        if isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0:
            failed = True
        data = {"call_id": cid, "output": output, "is_error": failed}
        if exit_code is not None:
            data["exit_code"] = exit_code
        return self.ev(ITEM_COMPLETED, rec, TOOL_RESULT, cid, "tool", data)

    # --- events ---------------------------------------------------------------------------------------------
    def _event_msg(self, rec: dict[str, Any], p: dict[str, Any]) -> list[Event]:
        et = p.get("type")
        if et in ("task_started", "turn_started"):
            return self._start_turn(rec, p)
        if et in ("task_complete", "turn_complete"):
            err = p.get("error")
            if isinstance(err, dict) or (isinstance(err, str) and err):
                return self._failed_turn(rec, p, err)
            return self._end_turn(rec, "completed", False, result=p.get("last_agent_message"),
                                  duration_ms=p.get("duration_ms"))
        if et == "turn_aborted":
            reason = p.get("reason")
            self.find(WARNING, "cx-turn-aborted", f"turn aborted: {reason}"[:160], rec)
            return self._end_turn(rec, reason if isinstance(reason, str) else "aborted", False)
        if et == "token_count":
            return self._token_count(rec, p)
        if et == "error":
            self.turn_error = True
            self.find(ERROR_SEV, "cx-error", f"error: {p.get('message')}"[:160], rec)
            return [self.ev(ERROR, rec, data={"message": p.get("message"), "code": p.get("codex_error_info"),
                                              "fatal": True})]
        if et == "stream_error":
            self.find(WARNING, "cx-stream-error", f"stream error (retried): {p.get('message')}"[:160], rec)
            return [self.ev(ERROR, rec, data={"message": p.get("message"), "code": "stream_error", "fatal": False})]
        if et in _MIRRORS:
            return self._mirror(rec, et, p)
        if et in _NOTES:
            msg = p.get("message")
            return [self.status(rec, msg if isinstance(msg, str) else et, subtype=et)]
        return [self.unparsed(rec, f"unknown event_msg type {et!r}")]

    def _failed_turn(self, rec: dict[str, Any], p: dict[str, Any], err: Any) -> list[Event]:
        """A turn that ended with an error (Codex 0.169 writes no `error` line to the rollout: the
        failure is `task_complete.error` {message, codex_error_info}). The turn's LLM call failed: an
        `error` event with `failed_call` (stats: a failed call, not an answer, as `codex exec --json`'s
        `turn.failed`) and the finding `cx-error` — unless an `error` line of this turn said it already,
        which then only gets the failed call."""
        message = err.get("message") if isinstance(err, dict) else err
        code = err.get("codex_error_info") if isinstance(err, dict) else None
        if not self.turn_error:
            self.find(ERROR_SEV, "cx-error", f"turn failed: {message}"[:160], rec)
        out = self._open_turn(rec, None)
        out.append(self.ev(ERROR, rec, data={"message": message, "code": code, "fatal": True, "failed_call": True}))
        out.extend(self._end_turn(rec, "failed", True, duration_ms=p.get("duration_ms")))
        return out

    def _mirror(self, rec: dict[str, Any], et: str, p: dict[str, Any]) -> list[Event]:
        """Keep what a UI mirror line adds to the response items: which user message is the prompt
        (its turn.started), a command's exit code."""
        item = as_dict(p.get("item"))
        if et == "user_message" or (et == "item_completed" and item.get("type") == "UserMessage"):
            text = p.get("message") if et == "user_message" else _text(item.get("content"))
            return self._open_turn(rec, text if isinstance(text, str) else None)
        if et == "exec_command_end":
            cid, code = p.get("call_id"), p.get("exit_code")
        elif et == "item_completed" and isinstance(p.get("item"), dict) and p["item"].get("type") == "CommandExecution":
            cid, code = p["item"].get("id"), p["item"].get("exit_code")
        else:
            return []
        if isinstance(cid, str) and code is not None:
            self.exit_codes[cid] = code
        return []

    # --- usage ----------------------------------------------------------------------------------------------
    def _usage_record(self, rec: dict[str, Any], p: dict[str, Any]) -> list[Event]:
        self.usage_records = True
        u = p.get("usage")
        if not isinstance(u, dict):
            return [self.unparsed(rec, "token_usage_record without a usage object")]
        return [self.ev(USAGE, rec, data={"model": self.model, "message_id": str_or_none(p.get("response_id")),
                                          **codex_usage(u), "scope": "message"})]

    def _token_count(self, rec: dict[str, Any], p: dict[str, Any]) -> list[Event]:
        info = p.get("info")
        if not isinstance(info, dict):  # (written before the first response: rate limits only)
            return [self.status(rec, "token count (no usage yet)", subtype="token_count")]
        total = info.get("total_token_usage")
        moved = total != self.last_total
        self.last_total = total
        last = info.get("last_token_usage")
        if self.usage_records or not moved or not isinstance(last, dict):
            return [self.status(rec, "token count", subtype="token_count", total=total)]
        return [self.ev(USAGE, rec, data={"model": self.model, "message_id": None, **codex_usage(last), "scope": "message"})]

    # --- end --------------------------------------------------------------------------------------------------
    def on_finish(self) -> list[Event]:
        if self.turn is not None:
            self.find(WARNING, "cx-turn-unfinished", "a turn started but the file ends before it completed", self.turn)
        for cid, (name, seq, ch) in self.calls.items():
            self.find(WARNING, "cx-call-without-output", f"{name} call {cid} has no output in the rollout",
                      seq=seq, ch=ch)
        return super().on_finish()


RULES = (
    ("cx-error", ERROR_SEV, "an error event, or a turn that completed with an error (the turn failed)"),
    ("cx-stream-error", WARNING, "a stream error Codex retried"),
    ("cx-turn-aborted", WARNING, "a turn aborted (interrupted or replaced)"),
    ("cx-turn-unfinished", WARNING, "a turn started but the file ends before task_complete / turn_aborted"),
    ("cx-call-without-output", WARNING, "a tool call with no output by the end of the file"),
    ("invalid-json", ERROR_SEV, "a line that is not JSON"),
)

# --- drift (rule `drift`, wirecap/dialects/drift.py): the lines and fields this dialect knows -------------
# From the rollout files the project ships (tests/fixtures/samples/codex_rollout_*.jsonl: Codex 0.169.0
# in the lab, hello, a tool call resumed, a run killed offline) and the rollouts of lab runs (tool,
# http_error, sse_error, replay mismatch). A `response_item` or `event_msg` type the decoder names but
# no such file shows is known by its type only: its fields are not looked into until a real file shows
# them. Settings and policy objects (permission profiles, sandbox policy, collaboration mode, rate
# limits) are known fields whose insides are not looked into.
def _known() -> Any:
    from wirecap.dialects.drift import OPEN, Known, Union

    tokens = {"input_tokens": None, "cached_input_tokens": None, "cache_write_input_tokens": None,
              "output_tokens": None, "reasoning_output_tokens": None, "total_tokens": None}
    passthrough = {"internal_chat_message_metadata_passthrough": OPEN}
    part = Union("type", {
        "input_text": {"type": None, "text": None},
        "output_text": {"type": None, "text": None, "annotations": None},
    }, label=False)
    items = Union("type", {
        "message": {"type": None, "id": None, "role": None, "content": [part], "status": None, **passthrough},
        "function_call": {"type": None, "id": None, "status": None, "name": None, "arguments": OPEN, "call_id": None,
                          **passthrough},
        "function_call_output": {"type": None, "id": None, "call_id": None, "output": OPEN, **passthrough},
        **dict.fromkeys(("reasoning", "custom_tool_call", "custom_tool_call_output", "local_shell_call",
                         "web_search_call", *_ITEM_NOTES)),
    })
    settings = {"model": None, "model_provider_id": None, "approval_policy": None, "approvals_reviewer": None,
                "requested_approvals_reviewer": None, "permission_profile": None, "active_permission_profile": None,
                "cwd": None, "runtime_workspace_roots": None, "collaboration_mode": None, "disabled_plugin_ids": None}
    ui_item = Union("type", {
        "UserMessage": {"type": None, "id": None, "content": [{"type": None, "text": None, "text_elements": None}]},
        "AgentMessage": {"type": None, "id": None, "content": [{"type": None, "text": None}]},
        "CommandExecution": {"type": None, "id": None, "process_id": None, "command": None, "cwd": None,
                             "parsed_cmd": None, "source": None, "status": None, "aggregated_output": None,
                             "exit_code": None, "duration": None},
    }, label=False)
    events = Union("type", {
        "task_started": {"type": None, "turn_id": None, "root_turn_id": None, "turn_attribution": None,
                         "started_at": None, "model_context_window": None, "collaboration_mode_kind": None},
        "task_complete": {"type": None, "turn_id": None, "root_turn_id": None, "last_agent_message": None,
                          "started_at": None, "completed_at": None, "duration_ms": None, "time_to_first_token_ms": None,
                          "error": {"message": None, "codex_error_info": None}},  # a failed turn (0.169)
        "token_count": {"type": None, "info": {"total_token_usage": tokens, "last_token_usage": tokens,
                                               "last_usage_includes_reasoning": None, "model_context_window": None},
                        "rate_limits": None},
        "item_completed": {"type": None, "thread_id": None, "turn_id": None, "item": ui_item, "started_at_ms": None,
                           "completed_at_ms": None},
        "thread_settings_applied": {"type": None, "thread_id": None, "thread_settings": settings},
        **dict.fromkeys(("turn_started", "turn_complete", "turn_aborted", "error", "stream_error",
                         *sorted(_MIRRORS - {"item_completed"}), *sorted(_NOTES - {"thread_settings_applied"}))),
    })
    line = {"timestamp": None, "ordinal": None, "type": None}
    lines = Union("type", {
        "session_meta": {**line, "payload": {
            "id": None, "session_id": None, "timestamp": None, "account_scoped": None, "cwd": None,
            "runtime_workspace_roots": None, "originator": None, "cli_version": None, "source": None,
            "thread_source": None, "model_provider": None, "base_instructions": OPEN, "history_mode": None,
            "context_window": None, "git": None}},
        "turn_context": {**line, "payload": {
            "turn_id": None, "root_turn_id": None, "disabled_plugin_ids": None, "cwd": None, "approval_policy": None,
            "approvals_reviewer": None, "permission_profile": None, "active_permission_profile": None, "model": None,
            "comp_hash": None, "collaboration_mode": None, "multi_agent_version": None, "realtime_active": None,
            "summary": None, "sandbox_policy": None}},
        "world_state": {**line, "payload": {"full": None, "state": OPEN}},
        "response_item": {**line, "payload": items, "metadata": {
            "history_sequence": None, "sampled_through_sequence": None, "client_authored": None,
            "mcp_attribution": None, "retained_source": None, "user_input_order": None,
            "fallback_token_limit_override": None}},
        "event_msg": {**line, "payload": events},
        "token_usage_record": {**line, "payload": {
            "thread_id": None, "turn_id": None, "session_id": None, "root_turn_id": None, "response_id": None,
            "usage": tokens, "turn_token_usage": tokens, "thread_token_usage": tokens}},
        "compacted": None,
    })
    return Known(s2c=lines, c2s=lines)


DIALECT = Dialect(
    name="codex-rollout",
    transport="pipe",
    decoder=CodexRolloutDecoder,
    known=_known(),
    summary="Codex CLI rollout file (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl), imported",
    volatile=("timestamp", "payload.id", "payload.session_id", "payload.thread_id", "payload.turn_id",
              "payload.root_turn_id", "payload.call_id", "payload.response_id", "payload.timestamp", "**.turn_id",
              "**.create_time", "**.started_at", "**.completed_at", "**.started_at_ms", "**.completed_at_ms"),
    rules=RULES,
    sniff=sniff,
    priority=20,
    session_file=True,
)

__all__ = ["DIALECT", "CodexRolloutDecoder", "LINE_TYPES", "sniff"]
