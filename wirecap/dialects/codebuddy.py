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

from wirecap.dialects.base import Dialect
from wirecap.dialects.claude_code import _VOLATILE, RULES, ClaudeCodeDecoder
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
            snap = obj.get("snapshot") if isinstance(obj.get("snapshot"), dict) else {}
            files = snap.get("trackedFileBackups")
            return [self.status(rec, "file-history-snapshot", subtype="file-history-snapshot",
                                tracked_files=len(files) if isinstance(files, dict) else None)]
        return super().other(rec, obj)


DIALECT = Dialect(
    name="codebuddy",
    transport="pipe",
    decoder=CodeBuddyDecoder,
    summary="CodeBuddy Code stream-json (Claude-compatible; real per-message usage)",
    volatile=(*_VOLATILE, "__timestamp", "_requestId", "id", "snapshot.messageId"),
    rules=RULES,
)
