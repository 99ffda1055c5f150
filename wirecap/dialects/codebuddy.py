"""CodeBuddy Code stream-json (`codebuddy -p --output-format stream-json`): Claude Code's dialect with
differences (see docs/dialects/codebuddy.md):

- per-message `usage` is the real count of that call (not a message_start snapshot), and the
  `result` has no `modelUsage`: its `usage` is the session total, priced at `total_cost_usd`;
- extra line type `file-history-snapshot`; extra fields `__timestamp`, `_requestId`;
- `system/status` may carry `status: null`; message ids are OpenAI-style `chatcmpl-...`;
- an API error is printed as an `assistant` message whose text is the error (`400 …`), with zero usage and
  no `_requestId` (every answer of the model has one): made up by the client, not an LLM call.
"""

from __future__ import annotations

from typing import Any

from wirecap.dialects.base import Dialect, as_dict, by_argv, json_objects
from wirecap.dialects.claude_code import _VOLATILE, RULES, ClaudeCodeDecoder, claude_lines
from wirecap.events import Event


class CodeBuddyDecoder(ClaudeCodeDecoder):
    dialect = "codebuddy"
    usage_is_snapshot = False

    def made_up(self, obj: dict[str, Any], msg: dict[str, Any]) -> bool:
        usage = msg.get("usage")
        return ("_requestId" not in obj and isinstance(usage, dict)  # every count zero (nested details aside)
                and not any(v for v in usage.values() if isinstance(v, (int, float))))

    def made_up_error(self, obj: dict[str, Any], text: str | None) -> bool:
        return True  # the only message CodeBuddy makes up is the API error's

    def other(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        if obj.get("type") == "file-history-snapshot":
            snap = as_dict(obj.get("snapshot"))
            files = snap.get("trackedFileBackups")
            return [self.status(rec, "file-history-snapshot", subtype="file-history-snapshot",
                                tracked_files=len(files) if isinstance(files, dict) else None)]
        return super().other(rec, obj)


def _marker(obj: dict[str, Any]) -> str | None:
    for key in ("__timestamp", "_requestId"):
        if key in obj:
            return f"field {key}"
    src = obj.get("apiKeySource")
    if isinstance(src, str) and "codebuddy" in src.lower():
        return f"apiKeySource {src!r}"
    return None


def sniff(open_record: dict[str, Any] | None, msgs: list[dict[str, Any]]) -> str | None:
    """CodeBuddy: Claude-Code-shaped lines of which one carries a CodeBuddy field (`__timestamp`,
    `_requestId`, an `apiKeySource` naming codebuddy) anywhere in the first messages (an SDK-driven
    run starts with a `control_response` that has none), else argv running `codebuddy`. Asked
    before Claude Code's sniff."""
    objs = json_objects(msgs)
    marks = [m for m in map(_marker, objs) if m]
    if marks and claude_lines(msgs):
        return f"Claude-style stream-json with CodeBuddy {marks[0]}"
    return by_argv(open_record, msgs, ("codebuddy", "codebuddy-code"), "CodeBuddy Code")
# --- drift (rule `drift`): Claude Code's lines plus CodeBuddy's own (seen in CodeBuddy 2.117.0, text and
# tool runs, with and without --include-partial-messages).
def _known() -> Any:
    from wirecap.dialects.claude_code import known_lines
    from wirecap.dialects.drift import OPEN, Known

    every = {"__timestamp": None, "_requestId": None}
    lines = known_lines(every, {"_meta": OPEN}, {
        "file-history-snapshot": {"type": None, "id": None, "timestamp": None, "isSnapshotUpdate": None,
                                  "snapshot": {"messageId": None, "trackedFileBackups": OPEN, "timestamp": None}},
    })
    return Known(s2c=lines, c2s=lines)


DIALECT = Dialect(
    name="codebuddy",
    transport="pipe",
    decoder=CodeBuddyDecoder,
    known=_known(),
    summary="CodeBuddy Code stream-json (Claude-compatible; real per-message usage)",
    volatile=(*_VOLATILE, "__timestamp", "_requestId", "id", "snapshot.messageId"),
    rules=RULES,
    sniff=sniff,
    priority=40,
)
