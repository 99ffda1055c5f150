"""Shared shell for the JSONL-on-a-pipe dialects (Claude Code, CodeBuddy, Codex, opencode, Codebuff CLI).

One unit is a process with its pipes: stdout lines (s2c), stdin lines (c2s, e.g. Claude Code's
`--input-format stream-json`), stderr lines (kept as status items: a CLI's diagnostics are text by
nature, not a protocol violation). The process's `close` gives the exit code the rules need.
"""

from __future__ import annotations

from typing import Any

from wirecap.dialects.base import ERROR_SEV, Decoder, is_stderr, text_of
from wirecap.events import Event


class StreamDecoder(Decoder):
    """Dispatches each JSON line to `on_object(rec, obj)`; non-JSON stdout lines are `unparsed`."""

    def on_open(self, rec: dict[str, Any]) -> list[Event]:
        return []

    def __init__(self, unit: str, options: dict[str, Any] | None = None) -> None:
        super().__init__(unit, options)
        self.is_out: dict[Any, bool] = {}  # channel -> not a stderr pipe (cached: the hot path asks per line)

    def on_msg(self, rec: dict[str, Any]) -> list[Event]:
        obj = rec.get("json")
        if obj.__class__ is dict and self.is_out.get(rec.get("ch")):
            return self.on_object(rec, obj)
        ch = rec.get("ch") or ""
        if not isinstance(ch, str):
            ch = str(ch)
        self.is_out[ch] = not is_stderr(ch)
        if is_stderr(ch):
            text = text_of(rec)
            if text is None:
                text = rec.get("raw") or (str(obj) if "json" in rec else "")
            return [self.status(rec, text, stream="stderr")]
        if obj.__class__ is dict:
            return self.on_object(rec, obj)
        if obj.__class__ is list:
            return self.on_array(rec, obj)
        if "json" in rec:
            return [self.unparsed(rec, f"a JSON {type(obj).__name__} where a JSON object was expected")]
        text = text_of(rec)
        if text is not None and not text.strip():
            return [self.unparsed(rec, "empty line")]
        self.find(ERROR_SEV, "invalid-json", "a line that is not JSON in a JSON-lines stream", rec)
        return [self.unparsed(rec, "not JSON")]

    def on_object(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        return [self.unparsed(rec, "not decoded")]

    def on_array(self, rec: dict[str, Any], items: list[Any]) -> list[Event]:
        """A line that is a JSON array (a dialect whose CLI prints a whole run as one array overrides this)."""
        return [self.unparsed(rec, "a JSON list where a JSON object was expected")]

    def on_finish(self) -> list[Event]:
        if self.closed_session or self.last_seq is None:
            return []
        return self.end_session({"seq": self.last_seq, "t": self.last_t, "ch": self.unit})
