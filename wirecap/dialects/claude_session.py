"""Claude Code session files (`~/.claude/projects/<project>/<session>.jsonl`), imported as a pipe.

Claude Code appends one JSON line per conversation entry to its session file: the prompt (`user`),
each content block of a response (`assistant`, one line per block, all with the same `message.id`),
tool results (`user` with `tool_result` blocks), and bookkeeping lines (`queue-operation`,
`attachment`, `last-prompt`, `mode`, `summary`, `file-history-snapshot`, `system` notes). Every line
carries its own `timestamp`, which `wirecap import` turns into the record times.

What differs from the stream-json dialect (`claude_code.py`) and is handled here:
- there is no `system/init` nor `result` line: the session starts at the first line naming a
  `sessionId`, a turn starts at each prompt (a `user` line with text that is not `isMeta`) and ends at
  the next prompt or the end of the file;
- `usage` is repeated on every block line of a response (same `message.id`); the lines of one
  response need not be adjacent (progress and tool_result lines come between) and an early block's
  line can carry a partial output count: a `usage` event at the response's first line, and another for
  that message id only when a later line has larger counts (stats keeps the largest value per field);
- a failed API call is a synthetic assistant line (`isApiErrorMessage`, model `<synthetic>`, zero
  usage): it is an `error`, not an answer nor an LLM call.
"""

from __future__ import annotations

from typing import Any

from wirecap.dialects.anthropic_stream import usage_fields
from wirecap.dialects.base import ERROR_SEV, WARNING, Dialect, json_objects, str_or_none
from wirecap.dialects.claude_code import assistant_block, result_text, user_content
from wirecap.dialects.stream import StreamDecoder
from wirecap.events import (
    ERROR,
    ITEM_COMPLETED,
    MESSAGE,
    SESSION_STARTED,
    TURN_ENDED,
    TURN_STARTED,
    USAGE,
    Event,
)

# Bookkeeping lines: kept as status items (what they say is in `data`), never a reason for a finding.
_NOTE_TYPES = frozenset(("queue-operation", "attachment", "last-prompt", "mode", "summary",
                         "file-history-snapshot", "custom-title", "progress"))
_UNTIMED = frozenset(("last-prompt", "mode", "custom-title"))  # session lines written without a timestamp
_INTERRUPTED = "[Request interrupted by user"  # "...]" or "... for tool use]"
_TOOL_BLOCKS = frozenset(("tool_use", "server_tool_use", "mcp_tool_use"))
_SESSION_KEYS = ("sessionId", "timestamp")


def sniff(open_record: dict[str, Any] | None, first: list[dict[str, Any]]) -> str | None:
    """A session-file line: `sessionId` (camelCase) with a `timestamp` (or on a bookkeeping line such as
    `last-prompt`, `mode`), a `summary` / `last-prompt` with a `leafUuid`, or a `file-history-snapshot`
    with a `messageId` (the first line of an interactive session).

    Stream-json lines say `session_id` and carry no `timestamp`; opencode says `sessionID`; so these
    keys are the session file's own.
    """
    for obj in json_objects(first):
        t = obj.get("type")
        if not isinstance(t, str) or "__timestamp" in obj or "session_id" in obj:  # CodeBuddy / stream-json
            continue
        if isinstance(obj.get("sessionId"), str) and (isinstance(obj.get("timestamp"), str) or t in _UNTIMED):
            return f"a {t!r} line with sessionId (Claude Code session file)"
        if t in ("summary", "last-prompt") and isinstance(obj.get("leafUuid"), str):
            return f"a {t!r} line with leafUuid (Claude Code session file)"
        if t == "file-history-snapshot" and isinstance(obj.get("messageId"), str):  # (CodeBuddy's has `id`)
            return "a 'file-history-snapshot' line with messageId (Claude Code session file)"
    return None


class ClaudeSessionDecoder(StreamDecoder):
    dialect = "claude-session"

    def __init__(self, unit: str, options: dict[str, Any] | None = None) -> None:
        super().__init__(unit, options)
        self.session_id: str | None = None
        self.model: str | None = None
        self.in_turn = False
        self.stop_reason: Any = None
        self.turn_error = False
        self.tool_uses: dict[str, tuple[str, int | None, str | None]] = {}
        self.usage: dict[str, dict[str, int | float]] = {}  # message id -> largest counts emitted so far
        self.last_line: dict[str, Any] | None = None  # where the end-of-file turn.ended points
        # isSidechain of the file's first user/assistant line: a subagent's own transcript
        # (`<session>/subagents/agent-*.jsonl`) is all sidechain, and there that is the main flow
        self.main_sidechain: bool | None = None

    def msg_type(self, rec: dict[str, Any]) -> str:
        obj = rec.get("json")
        if isinstance(obj, dict):
            t = obj.get("type")
            sub = obj.get("subtype", obj.get("operation"))
            if t == "attachment" and isinstance(obj.get("attachment"), dict):
                sub = obj["attachment"].get("type")
            if isinstance(t, str) and isinstance(sub, str):
                return f"{t}/{sub}"
        return super().msg_type(rec)

    # --- dispatch -----------------------------------------------------------------------------------
    def on_object(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        t = obj.get("type")
        self.last_line = rec
        out: list[Event] = []
        # session.started at the first line that says where and which version (a `-p` file starts with
        # queue-operation lines that name only the session), else at the first conversation line
        if self.session_id is None and isinstance(obj.get("sessionId"), str) and (
                "cwd" in obj or "version" in obj or t in ("user", "assistant")):
            self.session_id = obj["sessionId"]
            out.append(self.ev(SESSION_STARTED, rec, data={
                "session_id": self.session_id, "model": None, "cwd": obj.get("cwd"), "version": obj.get("version"),
                "git_branch": obj.get("gitBranch"), "entrypoint": obj.get("entrypoint")}))
        if t == "assistant":
            out.extend(self._assistant(rec, obj))
        elif t == "user":
            out.extend(self._user(rec, obj))
        elif t == "system":
            out.extend(self._system(rec, obj))
        elif isinstance(t, str) and t in _NOTE_TYPES:
            out.append(self._note(rec, obj, t))
        else:
            out.append(self.unparsed(rec, f"unknown session line type {t!r}"))
        return out

    def _note(self, rec: dict[str, Any], obj: dict[str, Any], t: str) -> Event:
        data: dict[str, Any] = {"subtype": t}
        if t == "queue-operation":
            data["operation"] = obj.get("operation")
            text = f"queue {obj.get('operation')}"
            if isinstance(obj.get("content"), str):
                data["content"] = obj["content"]
        elif t == "attachment":
            att = obj.get("attachment")
            kind = att.get("type") if isinstance(att, dict) else None
            data["attachment"] = kind
            text = f"attachment {kind}"
        elif t == "summary":
            data["summary"] = obj.get("summary")
            text = f"summary: {obj.get('summary')}"
        elif t == "last-prompt":
            data["prompt"] = obj.get("lastPrompt")
            text = "last prompt"
        elif t == "mode":
            data["mode"] = obj.get("mode")
            text = f"mode {obj.get('mode')}"
        else:
            text = t
        return self.status(rec, text, **data)

    # --- turns ----------------------------------------------------------------------------------------
    def _side(self, obj: dict[str, Any]) -> bool:
        """True for a subagent's line inside another agent's session file."""
        side = obj.get("isSidechain") is True
        if self.main_sidechain is None:
            self.main_sidechain = side
        return side != self.main_sidechain

    def _end_turn(self, rec: dict[str, Any]) -> list[Event]:
        if not self.in_turn:
            return []
        self.in_turn = False
        data = {"stop_reason": self.stop_reason, "is_error": self.turn_error}
        self.stop_reason, self.turn_error = None, False
        return [self.ev(TURN_ENDED, rec, data=data)]

    def _start_turn(self, rec: dict[str, Any], prompt: str | None) -> list[Event]:
        out = self._end_turn(rec)
        self.in_turn = True
        out.append(self.ev(TURN_STARTED, rec, data={"prompt": prompt}))
        return out

    # --- assistant ------------------------------------------------------------------------------------
    def _usage(self, rec: dict[str, Any], mid: str | None, model: str | None, usage: dict[str, Any]) -> list[Event]:
        """A usage event at a response's first line, and again only when a later line of the same
        message id (not always adjacent: progress and tool_result lines come between) has larger counts."""
        counts = usage_fields(usage)
        if mid is not None:
            prev = self.usage.get(mid)
            if prev is not None:
                if all(counts[k] <= prev[k] for k in counts):
                    return []  # the same usage repeated on another block line: counted already
                counts = {k: max(v, prev[k]) for k, v in counts.items()}
            self.usage[mid] = counts
        return [self.ev(USAGE, rec, data={"model": model, "message_id": mid, **counts, "scope": "message"})]

    def _assistant(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        msg = obj.get("message")
        if not isinstance(msg, dict):
            return [self.unparsed(rec, "assistant line without a message object")]
        out: list[Event] = []
        if not self.in_turn:  # a response without a prompt line before it (a file cut at the start)
            out.extend(self._start_turn(rec, None))
        mid = str_or_none(msg.get("id"))
        if obj.get("isApiErrorMessage") is True:
            text = result_text(msg.get("content"))
            if not isinstance(text, str):
                text = str(obj.get("error") or "API error")
            code = obj.get("apiErrorStatus", obj.get("error"))
            self.turn_error = True
            self.find(ERROR_SEV, "cs-api-error", f"API error {code}: {text}"[:160], rec)
            out.append(self.ev(ERROR, rec, data={"message": text, "code": code, "fatal": True}))
            return out
        model = str_or_none(msg.get("model"))
        if model:
            self.model = model
        content = msg.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            out.append(self.unparsed(rec, "assistant message content is not a list"))
            content = []
        role = "subagent" if self._side(obj) else "assistant"
        for block in content:
            out.append(assistant_block(self, rec, block, mid, role, self.tool_uses))
        if msg.get("stop_reason") is not None and role == "assistant":
            self.stop_reason = msg.get("stop_reason")
        usage = msg.get("usage")
        if isinstance(usage, dict):
            out.extend(self._usage(rec, mid, model or self.model, usage))
        return out

    # --- user ------------------------------------------------------------------------------------------
    def _user(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        msg = obj.get("message")
        if not isinstance(msg, dict):
            return [self.unparsed(rec, "user line without a message object")]
        got = user_content(self, rec, msg.get("content"), self.tool_uses)
        if got is None:
            return [self.unparsed(rec, "user message content is neither text nor a list")]
        texts, results = got
        out: list[Event] = []
        meta = obj.get("isMeta") is True or obj.get("isCompactSummary") is True
        sidechain = self._side(obj)
        if texts and texts[0].startswith(_INTERRUPTED) and not results:
            # Claude Code's marker when the user pressed Esc: the turn ends there, no new prompt
            if self.in_turn and not sidechain:
                self.stop_reason = "interrupted"
                out.extend(self._end_turn(rec))
            out.append(self.status(rec, texts[0], subtype="interrupted"))
            return out
        if texts:
            text = "\n".join(texts)
            if not meta and not results and not sidechain:  # a prompt: a new turn
                out.extend(self._start_turn(rec, text))
            data: dict[str, Any] = {"text": text}
            if meta:
                data["meta"] = True
            if sidechain:  # a subagent's task prompt (Task tool), not the user's
                data["sidechain"] = True
            out.append(self.ev(ITEM_COMPLETED, rec, MESSAGE, str_or_none(obj.get("uuid")), "user", data))
        out.extend(results)
        return out

    # --- system notes ------------------------------------------------------------------------------------
    def _system(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        sub = obj.get("subtype")
        text = obj.get("content")
        if not isinstance(text, str):
            text = str(sub)
        out = [self.status(rec, text, subtype=sub, level=obj.get("level"))]
        if sub == "api_error":  # a failed attempt Claude Code retries (the final failure is an assistant line)
            err = obj.get("error")
            out.append(self.ev(ERROR, rec, data={"message": str(err.get("message") if isinstance(err, dict) else err),
                                                 "code": obj.get("retryAttempt"), "fatal": False}))
        return out

    # --- end ----------------------------------------------------------------------------------------------
    def on_finish(self) -> list[Event]:
        out: list[Event] = []
        if self.last_line is not None:
            out.extend(self._end_turn(self.last_line))
        for cid, (name, seq, ch) in self.tool_uses.items():
            self.find(WARNING, "cs-tool-use-without-result",
                      f"tool_use {name} ({cid}) has no tool_result in the session file", seq=seq, ch=ch)
        out.extend(super().on_finish())
        return out


RULES = (
    ("cs-api-error", ERROR_SEV, "an API call failed (a synthetic assistant line with isApiErrorMessage)"),
    ("cs-tool-use-without-result", WARNING,
     "a tool_use that no tool_result answered by the end of the file (an interrupted or running session)"),
    ("invalid-json", ERROR_SEV, "a line that is not JSON"),
)

# --- drift (rule `drift`, wirecap/dialects/drift.py): the lines and fields this dialect knows -------------
# From the session files the project ships (tests/fixtures/samples/claude_session_*.jsonl, Claude Code
# 2.1.197 in the lab: hello, think, tool_bash continued, api_error; the public 2.1.38 tool-heavy file)
# and the session files of lab runs (http_error, sse_error, tool_read, replay mismatch). A type the
# decoder names but no such file shows (`summary`, `custom-title`, `system/api_error`) is known by its
# type only: its fields are not looked into until a real file shows them.
def _known() -> Any:
    from wirecap.dialects.anthropic_known import MESSAGE, user_blocks
    from wirecap.dialects.drift import OPEN, Known, Union

    # the fields of every conversation line (who wrote it, where, in which version)
    line = {"type": None, "uuid": None, "parentUuid": None, "isSidechain": None, "userType": None, "entrypoint": None,
            "cwd": None, "sessionId": None, "version": None, "gitBranch": None, "slug": None, "timestamp": None}
    queued = {"type": None, "operation": None, "timestamp": None, "sessionId": None, "content": None}
    lines = Union("type", {
        "user": {**line, "message": {"role": None, "content": [user_blocks()]}, "isMeta": None, "promptId": None,
                 "permissionMode": None, "promptSource": None, "toolUseResult": OPEN, "sourceToolAssistantUUID": None,
                 "thinkingMetadata": None, "todos": OPEN},
        "assistant": {**line, "message": MESSAGE, "requestId": None, "error": None, "isApiErrorMessage": None,
                      "apiErrorStatus": None},
        "system": Union("subtype", {
            "local_command": {**line, "subtype": None, "content": None, "level": None, "isMeta": None},
            "api_error": None,
        }),
        "attachment": {**line, "attachment": Union("type", {
            "skill_listing": {"type": None, "content": None, "skillCount": None, "isInitial": None, "names": None},
            "agent_listing_delta": {"type": None, "addedTypes": None, "addedLines": None, "removedTypes": None,
                                    "isInitial": None, "showConcurrencyNote": None},
            "deferred_tools_delta": {"type": None, "addedNames": None, "addedLines": None, "removedNames": None,
                                     "readdedNames": None, "pendingMcpServers": None, "needsAuthMcpServers": None},
        })},
        "progress": {**line, "data": Union("type", {
            "hook_progress": {"type": None, "hookEvent": None, "hookName": None, "command": None},
        }, label=False), "parentToolUseID": None, "toolUseID": None},
        "queue-operation": Union("operation", dict.fromkeys(("enqueue", "dequeue", "remove"), queued)),
        "last-prompt": {"type": None, "lastPrompt": None, "leafUuid": None, "sessionId": None},
        "mode": {"type": None, "mode": None, "sessionId": None},
        "file-history-snapshot": {"type": None, "messageId": None, "isSnapshotUpdate": None,
                                  "snapshot": {"messageId": None, "trackedFileBackups": OPEN, "timestamp": None}},
        "summary": None,
        "custom-title": None,
    })
    return Known(s2c=lines, c2s=lines)


DIALECT = Dialect(
    name="claude-session",
    transport="pipe",
    decoder=ClaudeSessionDecoder,
    known=_known(),
    summary="Claude Code session file (~/.claude/projects/<project>/<session>.jsonl), imported",
    volatile=("sessionId", "uuid", "parentUuid", "leafUuid", "promptId", "requestId", "message.id",
              "message.content[*].id", "**.tool_use_id", "sourceToolAssistantUUID", "timestamp", "cwd"),
    rules=RULES,
    sniff=sniff,
    priority=20,
    session_file=True,
)

__all__ = ["DIALECT", "ClaudeSessionDecoder", "sniff"]
