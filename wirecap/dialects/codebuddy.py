"""CodeBuddy Code stream-json (`codebuddy -p --output-format stream-json`): Claude Code's dialect with
differences (see docs/dialects/codebuddy.md):

- per-message `usage` is the real count of that call (not a message_start snapshot), and the
  `result` has no `modelUsage`: its `usage` is the session total, priced at `total_cost_usd`;
- extra line type `file-history-snapshot`; extra fields `__timestamp`, `_requestId`;
- `system/status` may carry `status: null`; message ids are OpenAI-style `chatcmpl-...`.
"""

from __future__ import annotations

from typing import Any

from wirecap.dialects.base import Dialect
from wirecap.dialects.claude_code import _VOLATILE, RULES, ClaudeCodeDecoder
from wirecap.events import Event


class CodeBuddyDecoder(ClaudeCodeDecoder):
    dialect = "codebuddy"
    usage_is_snapshot = False

    def other(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        if obj.get("type") == "file-history-snapshot":
            snap = obj.get("snapshot") if isinstance(obj.get("snapshot"), dict) else {}
            files = snap.get("trackedFileBackups")
            return [self.status(rec, "file-history-snapshot", subtype="file-history-snapshot",
                                tracked_files=len(files) if isinstance(files, dict) else None)]
        return super().other(rec, obj)


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
)
