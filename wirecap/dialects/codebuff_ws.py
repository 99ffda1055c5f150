"""Codebuff WebSocket protocol (`/ws`): legacy CLI 1.0.x, SDK 0.3.x, LLM Interactive Proxy backend.

Envelopes: client `identify` / `subscribe` / `unsubscribe` / `ping` / `action` (with `txid`), server
`ack` (with the txid) and `action`. Traps (docs/dialects/codebuff-ws.md):
- `response-chunk.chunk` is either a text piece or a structured event object (start, finish, ...);
- CLI 1.0.x sends `user-input` (not `prompt`), gets tool calls as `tool-call` actions and answers
  them with a new `user-input` whose last message starts with `[TOOL_RESULT]`; it ends a prompt with
  `response-complete`;
- SDK 0.3.x sends `prompt` with the whole `sessionState` and the API key in `authToken`;
- one tool call can show twice: as a structured `tool_call` chunk (for the client's display, id
  `toolCallId`) and as the `tool-call-request` (or 1.0.x `tool-call`) that asks the client to run it
  (id `requestId`), and its result as a `tool_result` chunk and the `tool-call-response`. The two
  are paired by tool name and input (in order): the first keeps the tool_call / tool_result item,
  the second becomes a status item (`subtype: "tool-call-echo"` / `"tool-result-echo"`) under the
  first one's call id, so a call is counted and shown once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from wirecap.dialects import request_view as rv
from wirecap.dialects.base import (
    ERROR_SEV,
    WARNING,
    Decoder,
    Dialect,
    hkey,
    json_objects,
    str_or_none,
    text_of,
    url_path,
)
from wirecap.dialects.codebuff_events import print_mode_event
from wirecap.events import (
    ERROR,
    ITEM_COMPLETED,
    ITEM_DELTA,
    MESSAGE,
    SESSION_STARTED,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_ENDED,
    TURN_STARTED,
    USAGE,
    Event,
)

TOOL_RESULT_PREFIX = "[TOOL_RESULT]"


def _last_user_text(messages: Any) -> str | None:
    if not isinstance(messages, list):
        return None
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, str):
                return c
            if isinstance(c, list):
                return "\n".join(str(b.get("text", "")) for b in c if isinstance(b, dict) and b.get("type") == "text")
    return None


class CodebuffWsDecoder(Decoder):
    dialect = "codebuff-ws"

    def __init__(self, unit: str, options: dict[str, Any] | None = None) -> None:
        super().__init__(unit, options)
        self.open_t: float | None = None
        self.started = False
        self.in_turn = False
        self.pending_acks: dict[Any, dict[str, Any]] = {}
        self.acked: set[Any] = set()
        self.prompts: dict[str, dict[str, Any]] = {}
        self.known_prompts: set[str] = set()
        self.tool_requests: dict[str, dict[str, Any]] = {}
        self.legacy_calls: list[str | None] = []  # CLI 1.0.x `tool-call` ids, answered in order by user-input
        self.read_requests: dict[str, dict[str, Any]] = {}
        self.pings: list[float] = []
        self.first_t: float | None = None
        # the twin pairing of tool calls (module docstring): (side, name, input) -> call ids waiting for
        # their twin from the other side ("chunk" or "request"); a twin's id -> the first one's id
        self.unpaired: dict[tuple[str, str, str], list[str]] = {}
        self.alias: dict[str, str] = {}
        self.results_done: set[str] = set()
        Handler = Callable[[dict[str, Any], dict[str, Any]], list[Event]]
        self._client_actions: dict[str, Handler] = {
            "init": self._c_init,
            "prompt": self._c_prompt,
            "user-input": self._c_user_input,
            "read-files-response": self._c_read_files_response,
            "tool-call-response": self._c_tool_call_response,
            "cancel-user-input": self._c_cancel,
            "mcp-tool-data": self._c_mcp_tool_data,
        }
        self._server_actions: dict[str, Handler] = {
            "response-chunk": self._s_chunk,
            "subagent-response-chunk": self._s_subagent_chunk,
            "handlesteps-log-chunk": self._s_log_chunk,
            "prompt-response": self._s_response,
            "response-complete": self._s_response,
            "prompt-error": self._s_prompt_error,
            "read-files": self._s_read_files,
            "tool-call-request": self._s_tool_call_request,
            "tool-call": self._s_tool_call,
            "init-response": self._s_usage,
            "usage-response": self._s_usage,
            "message-cost-response": self._s_cost,
            "action-error": self._s_action_error,
            "request-reconnect": self._s_note,
            "request-mcp-tool-data": self._s_note,
        }

    def msg_type(self, rec: dict[str, Any]) -> str:
        obj = rec.get("json")
        if isinstance(obj, dict):
            data = obj.get("data")
            if obj.get("type") == "action" and isinstance(data, dict) and isinstance(data.get("type"), str):
                return data["type"]
        return super().msg_type(rec)

    def _session(self, rec: dict[str, Any], out: list[Event], **data: Any) -> None:
        if not self.started:
            self.started = True
            out.append(self.ev(SESSION_STARTED, rec, data={"session_id": None, "model": None, **data}))

    def on_open(self, rec: dict[str, Any]) -> list[Event]:
        self.open_t = rec.get("t")
        return []

    def on_msg(self, rec: dict[str, Any]) -> list[Event]:
        if self.first_t is None:
            self.first_t = rec.get("t", 0.0)
        obj = rec.get("json")
        if not isinstance(obj, dict):
            if "json" in rec:
                return [self.unparsed(rec, f"a JSON {type(obj).__name__} where an envelope object was expected")]
            self.find(ERROR_SEV, "invalid-json", "a WebSocket frame that is not JSON", rec)
            return [self.unparsed(rec, "not JSON" if text_of(rec) is not None else "binary frame")]
        et = obj.get("type")
        c2s = rec.get("dir") == "c2s"
        if c2s:
            txid = hkey(obj.get("txid"))
            if txid is not None:
                if txid in self.pending_acks or txid in self.acked:
                    self.find(WARNING, "cb-txid-reused", f"txid {txid} used again by the client", rec)
                self.pending_acks[txid] = rec
            if et == "action":
                return self._client_action(rec, obj)
            if et == "ping":
                self.pings.append(rec.get("t", 0.0))
                return []
            if et in ("identify", "subscribe", "unsubscribe"):
                out: list[Event] = []
                if et == "identify":
                    self._session(rec, out, client_session_id=obj.get("clientSessionId"))
                out.append(self.status(rec, et, subtype=et, topics=obj.get("topics")))
                return out
            return [self.unparsed(rec, f"unknown client envelope type {et!r}")]
        if et == "ack":
            return self._ack(rec, obj)
        if et == "action":
            return self._server_action(rec, obj)
        if et == "pong":
            return []
        return [self.unparsed(rec, f"unknown server envelope type {et!r}")]

    # --- acks -------------------------------------------------------------------------------------------
    def _ack(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        txid = hkey(obj.get("txid"))
        req = self.pending_acks.pop(txid, None)
        if req is None:
            if txid in self.acked:
                self.find(ERROR_SEV, "cb-ack-duplicate", f"txid {txid} acked more than once", rec)
            else:
                self.find(WARNING, "cb-ack-unknown", f"ack for txid {txid} that no client frame carried", rec)
        else:
            self.acked.add(txid)
            latency = rec.get("t", 0.0) - req.get("t", 0.0)
            if latency > self.options["ack_latency"]:
                self.find(WARNING, "cb-ack-latency", f"txid {txid} acked after {latency:.3f} s "
                          f"(limit {self.options['ack_latency']:g} s)", rec)
        if obj.get("success") is False:
            msg = obj.get("error") or obj.get("message") or "ack success false"
            self.find(ERROR_SEV, "cb-ack-failed", f"txid {txid} acked with success false: {msg}"[:160], rec)
            return [self.ev(ERROR, rec, data={"message": str(msg), "code": "ack", "fatal": False, "txid": txid})]
        return []

    # --- client actions: one handler per action type ------------------------------------------------------
    def _client_action(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        data = obj.get("data")
        if not isinstance(data, dict):
            return [self.unparsed(rec, "action without a data object")]
        at = data.get("type")
        handler = self._client_actions.get(at) if isinstance(at, str) else None
        if handler is None:
            return [self.unparsed(rec, f"unknown client action {at!r}")]
        return handler(rec, data)

    def _c_init(self, rec: dict[str, Any], data: dict[str, Any]) -> list[Event]:
        out: list[Event] = []
        fc = data.get("fileContext")
        if not isinstance(fc, dict):
            fc = {}
        self._session(rec, out, fingerprint_id=data.get("fingerprintId"),
                      cwd=fc.get("currentWorkingDirectory") or fc.get("cwd"))
        out.append(self.status(rec, "init", subtype="init"))
        return out

    def _c_prompt(self, rec: dict[str, Any], data: dict[str, Any]) -> list[Event]:
        out: list[Event] = []
        pid = str_or_none(data.get("promptId"))
        state = data.get("sessionState")
        fc = state.get("fileContext") if isinstance(state, dict) else None
        if not isinstance(fc, dict):
            fc = {}
        self._session(rec, out, fingerprint_id=data.get("fingerprintId"), cwd=fc.get("cwd"))
        self._open_prompt(pid, rec)
        results = data.get("toolResults")
        out.append(self.ev(TURN_STARTED, rec, id=pid, data={
            "prompt": data.get("prompt"), "prompt_id": pid, "agent_id": data.get("agentId"),
            "cost_mode": data.get("costMode"), "session_state": isinstance(state, dict),
            "tool_results": len(results) if isinstance(results, list) else None}))
        return out

    def _c_user_input(self, rec: dict[str, Any], data: dict[str, Any]) -> list[Event]:
        out: list[Event] = []
        uid = str_or_none(data.get("userInputId"))
        text = _last_user_text(data.get("messages"))
        self._session(rec, out, fingerprint_id=data.get("fingerprintId"))
        self._open_prompt(uid, rec)
        if isinstance(text, str) and text.startswith(TOOL_RESULT_PREFIX):
            out.append(self._legacy_result(rec, uid, text[len(TOOL_RESULT_PREFIX):].lstrip()))
        else:
            out.append(self.ev(TURN_STARTED, rec, id=uid, data={"prompt": text, "prompt_id": uid}))
        return out

    def _legacy_result(self, rec: dict[str, Any], uid: str | None, output: str) -> Event:
        """CLI 1.0.x answers its `tool-call`s in order with a `[TOOL_RESULT]` user-input."""
        call_id = self.legacy_calls.pop(0) if self.legacy_calls else None
        if call_id is not None and self.alias.get(call_id, call_id) in self.results_done:
            return self._tool_result(rec, call_id, {"output": output, "is_error": False})
        if call_id is not None:
            call_id = self.alias.get(call_id, call_id)
            self.results_done.add(call_id)
        return self.ev(ITEM_COMPLETED, rec, TOOL_RESULT, uid, "user", {"call_id": call_id, "output": output,
                                                                       "is_error": False})

    def _c_read_files_response(self, rec: dict[str, Any], data: dict[str, Any]) -> list[Event]:
        rid = str_or_none(data.get("requestId"))
        self.read_requests.pop(rid or "", None)
        files = data.get("files")
        return [self.ev(ITEM_COMPLETED, rec, TOOL_RESULT, rid, "user", {
            "call_id": rid, "output": sorted(files) if isinstance(files, dict) else files, "is_error": False,
            "name": "read_files"})]

    def _c_tool_call_response(self, rec: dict[str, Any], data: dict[str, Any]) -> list[Event]:
        rid = str_or_none(data.get("requestId"))
        req = self.tool_requests.pop(rid or "", None)
        if req is not None:
            limit = self._tool_timeout(req)
            waited = rec.get("t", 0.0) - req.get("t", 0.0)
            if waited > limit:
                self.find(WARNING, "cb-tool-call-late", f"tool-call-response {rid} after {waited:.1f} s "
                          f"(timeout {limit:g} s)", rec)
        return [self._tool_result(rec, rid, {
            "call_id": rid, "output": data.get("output", data.get("result", data.get("error"))),
            "is_error": data.get("success") is False})]

    def _c_cancel(self, rec: dict[str, Any], data: dict[str, Any]) -> list[Event]:
        pid = str_or_none(data.get("promptId") or data.get("userInputId"))
        self.prompts.pop(pid or "", None)
        return [self.ev(TURN_ENDED, rec, id=pid, data={"stop_reason": "cancelled", "is_error": False,
                                                       "prompt_id": pid})]

    def _c_mcp_tool_data(self, rec: dict[str, Any], data: dict[str, Any]) -> list[Event]:
        return [self.status(rec, "mcp-tool-data", subtype="mcp-tool-data", request_id=data.get("requestId"))]

    def _open_prompt(self, pid: str | None, rec: dict[str, Any]) -> None:
        if pid is not None:
            self.prompts[pid] = rec
            self.known_prompts.add(pid)
        self.in_turn = True

    def _close_prompt(self, pid: str | None) -> None:
        if pid is not None:
            self.prompts.pop(pid, None)
        self.in_turn = bool(self.prompts)

    # --- one tool call seen twice (a display chunk and an execution request) ------------------------------
    def _twin(self, side: str, name: Any, inp: Any, cid: str | None) -> str | None:
        """The id of this call's twin from the other side when one is waiting, else None (and this call waits)."""
        if cid is None:
            return None
        try:
            key_in = json.dumps(inp, sort_keys=True, default=repr)
        except (TypeError, ValueError):  # keys of mixed types, a circular value: compare as text
            key_in = repr(inp)
        other = "request" if side == "chunk" else "chunk"
        waiting = self.unpaired.get((other, str(name), key_in))
        if waiting:
            first = waiting.pop(0)
            self.alias[cid] = first
            return first
        self.unpaired.setdefault((side, str(name), key_in), []).append(cid)
        return None

    def _tool_call(self, rec: dict[str, Any], side: str, cid: str | None, data: dict[str, Any]) -> Event:
        first = self._twin(side, data.get("name"), data.get("input"), cid)
        if first is None:
            return self.ev(ITEM_COMPLETED, rec, TOOL_CALL, cid, "assistant", data)
        return self.status(rec, f"{data.get('name')} (the same call as {first})", subtype="tool-call-echo",
                           call_id=first, echo_id=cid)

    def _tool_result(self, rec: dict[str, Any], cid: str | None, data: dict[str, Any]) -> Event:
        call = self.alias.get(cid, cid) if cid is not None else None
        if call is not None and call in self.results_done:
            return self.status(rec, f"result of {call} (again)", subtype="tool-result-echo", call_id=call, echo_id=cid,
                               is_error=data.get("is_error"))
        if call is not None:
            self.results_done.add(call)
        return self.ev(ITEM_COMPLETED, rec, TOOL_RESULT, call, data.pop("role", "user"), {**data, "call_id": call})

    # --- server actions ---------------------------------------------------------------------------------
    def _chunk_prompt(self, rec: dict[str, Any], pid: str | None) -> None:
        if pid is not None and pid not in self.known_prompts:
            self.known_prompts.add(pid)
            self.find(WARNING, "cb-chunk-unknown-prompt", f"chunk for prompt id {pid} that no prompt opened", rec)

    def _chunk_tool(self, rec: dict[str, Any], e: Event) -> Event:
        """A structured chunk's tool_call / tool_result, paired with its execution twin."""
        if e.kind != ITEM_COMPLETED:
            return e
        if e.item == TOOL_CALL:
            return self._tool_call(rec, "chunk", e.id, e.data)
        if e.item == TOOL_RESULT:
            return self._tool_result(rec, e.id, {**e.data, "role": e.role})
        return e

    def _server_action(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        data = obj.get("data")
        if not isinstance(data, dict):
            return [self.unparsed(rec, "action without a data object")]
        at = data.get("type")
        handler = self._server_actions.get(at) if isinstance(at, str) else None
        if handler is None:
            return [self.unparsed(rec, f"unknown server action {at!r}")]
        return handler(rec, data)

    def _s_chunk(self, rec: dict[str, Any], data: dict[str, Any]) -> list[Event]:
        pid = str_or_none(data.get("userInputId") or data.get("promptId"))
        self._chunk_prompt(rec, pid)
        chunk = data.get("chunk")
        if isinstance(chunk, str):
            return [self.ev(ITEM_DELTA, rec, MESSAGE, pid, "assistant", {"text": chunk})]
        if isinstance(chunk, dict):
            mapped = print_mode_event(self, rec, chunk, in_chunk=True)
            if mapped is None:
                return [self.unparsed(rec, f"unknown structured chunk type {chunk.get('type')!r}")]
            return [self._chunk_tool(rec, e) for e in mapped]
        return [self.unparsed(rec, "response-chunk whose chunk is neither text nor an object")]

    def _s_subagent_chunk(self, rec: dict[str, Any], data: dict[str, Any]) -> list[Event]:
        pid = str_or_none(data.get("userInputId") or data.get("promptId"))
        self._chunk_prompt(rec, pid)
        chunk = data.get("chunk")
        text = chunk if isinstance(chunk, str) else None
        return [self.ev(ITEM_DELTA, rec, MESSAGE, str_or_none(data.get("agentId")) or pid, "subagent",
                        {"text": text, "chunk": None if text is not None else chunk,
                         "agent_id": data.get("agentId"), "agent_type": data.get("agentType")})]

    def _s_log_chunk(self, rec: dict[str, Any], data: dict[str, Any]) -> list[Event]:
        return [self.status(rec, str(data.get("chunk", "")), subtype=data["type"], agent_id=data.get("agentId"))]

    def _s_response(self, rec: dict[str, Any], data: dict[str, Any]) -> list[Event]:
        """prompt-response / response-complete: the prompt's turn ends (with its text, when given)."""
        at = data["type"]
        pid = str_or_none(data.get("promptId") or data.get("userInputId"))
        if pid not in self.prompts:
            self._chunk_prompt(rec, pid)
        self._close_prompt(pid)
        out: list[Event] = []
        if at == "response-complete" and isinstance(data.get("response"), str):
            out.append(self.ev(ITEM_COMPLETED, rec, MESSAGE, pid, "assistant", {"text": data["response"]}))
        output = data.get("output")
        failed = isinstance(output, dict) and output.get("type") == "error"
        result = output.get("value") if isinstance(output, dict) else data.get("response")
        out.append(self.ev(TURN_ENDED, rec, id=pid, data={"stop_reason": at, "is_error": failed, "prompt_id": pid,
                                                          "result": result}))
        return out

    def _s_prompt_error(self, rec: dict[str, Any], data: dict[str, Any]) -> list[Event]:
        pid = str_or_none(data.get("promptId") or data.get("userInputId"))
        self._close_prompt(pid)
        msg = data.get("message") or data.get("error")
        self.find(ERROR_SEV, "cb-prompt-error", f"prompt {pid} failed: {msg}"[:160], rec)
        return [self.ev(ERROR, rec, data={"message": msg, "code": data.get("error"), "fatal": True}),
                self.ev(TURN_ENDED, rec, id=pid, data={"stop_reason": "prompt-error", "is_error": True,
                                                      "prompt_id": pid})]

    def _s_read_files(self, rec: dict[str, Any], data: dict[str, Any]) -> list[Event]:
        rid = str_or_none(data.get("requestId"))
        self.read_requests[rid or ""] = rec
        return [self.ev(ITEM_COMPLETED, rec, TOOL_CALL, rid, "assistant", {
            "name": "read_files", "input": {"filePaths": data.get("filePaths")}, "call_id": rid})]

    def _s_tool_call_request(self, rec: dict[str, Any], data: dict[str, Any]) -> list[Event]:
        rid = str_or_none(data.get("requestId"))
        self.tool_requests[rid or ""] = rec
        return [self._tool_call(rec, "request", rid, {
            "name": data.get("toolName"), "input": data.get("input"), "call_id": rid,
            "timeout_ms": data.get("timeout")})]

    def _s_tool_call(self, rec: dict[str, Any], data: dict[str, Any]) -> list[Event]:
        """CLI 1.0.x: run this tool; the result comes back as a [TOOL_RESULT] user-input."""
        pid = str_or_none(data.get("userInputId"))
        self._chunk_prompt(rec, pid)
        call = data.get("data")
        if not isinstance(call, dict):
            call = {}
        cid = str_or_none(call.get("id"))
        self.legacy_calls.append(cid)
        return [self._tool_call(rec, "request", cid, {
            "name": call.get("name"), "input": call.get("input"), "call_id": cid, "prompt_id": pid})]

    def _s_usage(self, rec: dict[str, Any], data: dict[str, Any]) -> list[Event]:
        at = data["type"]
        return [self.status(rec, at, subtype=at, usage=data.get("usage"), limit=data.get("limit"))]

    def _s_cost(self, rec: dict[str, Any], data: dict[str, Any]) -> list[Event]:
        return [self.ev(USAGE, rec, data={"model": None, "message_id": data.get("promptId"),
                                          "credits": data.get("credits"), "scope": "prompt"})]

    def _s_action_error(self, rec: dict[str, Any], data: dict[str, Any]) -> list[Event]:
        msg = data.get("message") or data.get("error")
        self.find(ERROR_SEV, "cb-action-error", f"action-error: {msg}"[:160], rec)
        return [self.ev(ERROR, rec, data={"message": msg, "code": data.get("error"), "fatal": False})]

    def _s_note(self, rec: dict[str, Any], data: dict[str, Any]) -> list[Event]:
        """request-reconnect / request-mcp-tool-data: a status item."""
        at = data["type"]
        if at == "request-mcp-tool-data":
            return [self.status(rec, at, subtype=at, request_id=data.get("requestId"))]
        return [self.status(rec, at, subtype=at)]

    # --- end ----------------------------------------------------------------------------------------------
    def on_close(self, rec: dict[str, Any]) -> list[Event]:
        self._end_checks(rec.get("t", self.last_t))
        return self.end_session(rec, code=rec.get("code"), reason=rec.get("reason"), by=rec.get("by"))

    def _tool_timeout(self, req: dict[str, Any]) -> float:
        """Seconds a tool-call-request may wait: its own `timeout` (ms) or the option."""
        timeout = req.get("json", {}).get("data", {}).get("timeout")
        if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
            return timeout / 1000
        return self.options["tool_call_timeout"]

    def _end_checks(self, end_t: float) -> None:
        if getattr(self, "_checked", False):
            return
        self._checked = True
        for txid, req in self.pending_acks.items():
            self.find(ERROR_SEV, "cb-ack-missing", f"client frame with txid {txid} was never acked", req)
        for pid, req in self.prompts.items():
            self.find(ERROR_SEV, "cb-prompt-unanswered", f"prompt {pid} got neither prompt-response nor prompt-error", req)
        for rid, req in self.tool_requests.items():
            limit = self._tool_timeout(req)
            waited = end_t - req.get("t", 0.0)
            self.find(ERROR_SEV, "cb-tool-call-unanswered",
                      f"tool-call-request {rid} unanswered ({'timed out' if waited > limit else 'stream ended'} after "
                      f"{waited:.1f} s, timeout {limit:g} s)", req)
        for rid, req in self.read_requests.items():
            self.find(ERROR_SEV, "cb-read-files-unanswered", f"read-files {rid} got no read-files-response", req)
        start = self.open_t if self.open_t is not None else self.first_t
        if start is None:
            return
        timeout = self.options["heartbeat_timeout"]
        marks = [start, *self.pings, end_t]
        if end_t - start <= timeout:
            return
        for a, b in zip(marks, marks[1:], strict=False):
            if b - a > timeout:
                self.find(WARNING, "cb-heartbeat-gap",
                          f"no client ping for {b - a:.1f} s (timeout {timeout:g} s, interval "
                          f"{self.options['heartbeat_interval']:g} s) between t={a:.3f} and t={b:.3f}", seq=self.last_seq)

    def on_finish(self) -> list[Event]:
        self._end_checks(self.last_t)
        return []


_ENVELOPES = frozenset(("action", "ack", "identify", "subscribe", "unsubscribe", "ping", "pong"))


def sniff(open_record: dict[str, Any] | None, msgs: list[dict[str, Any]]) -> str | None:
    """Codebuff WebSocket: a connection to a path ending in `/ws`, or frames in its envelope
    (`{type: action|ack|ping|..., txid | data}`)."""
    if isinstance(open_record, dict) and open_record.get("kind") == "ws":
        path = url_path(open_record)
        if path.endswith("/ws"):
            return f"WebSocket at {path}"
    for obj in json_objects(msgs):
        if isinstance(obj.get("type"), str) and obj["type"] in _ENVELOPES and ("txid" in obj or "data" in obj):
            return f"Codebuff WebSocket envelope {obj['type']!r}"
    return None
# --- drift (rule `drift`): the envelopes and actions this dialect knows (codebuff CLI 1.0.115 and SDK 0.3.13,
# text and tool runs, plus the actions the decoder handles by name). Session state, file context, messages
# and tool data are the client's own and open.
def _known() -> Any:
    from wirecap.dialects.codebuff_events import known_events
    from wirecap.dialects.drift import OPEN, Known, Union

    auth = {"type": None, "fingerprintId": None, "authToken": None}
    quota = {"usage": None, "limit": None, "subscription_active": None, "next_quota_reset": None,
             "session_credits_used": None, "referralLink": None, "message": None}
    files = {"changes": OPEN, "changesAlreadyApplied": OPEN, "addedFileVersions": OPEN, "resetFileVersions": None}
    client = Union("type", {
        "init": {**auth, "fileContext": OPEN, "repoUrl": None},
        "prompt": {**auth, "promptId": None, "prompt": None, "promptParams": OPEN, "sessionState": OPEN,
                   "toolResults": OPEN, "costMode": None, "agentId": None, "model": None, "repoUrl": None},
        "user-input": {**auth, "userInputId": None, "messages": OPEN, "fileContext": OPEN,
                       "changesAlreadyApplied": OPEN, "costMode": None, "model": None, "repoName": None},
        "read-files-response": {"type": None, "requestId": None, "files": OPEN},
        "tool-call-response": {"type": None, "requestId": None, "success": None, "output": OPEN, "result": OPEN,
                               "error": OPEN},
        "cancel-user-input": {"type": None, "authToken": None, "promptId": None, "userInputId": None},
        "mcp-tool-data": {"type": None, "requestId": None, "tools": OPEN},
    })
    chunk = {"type": None, "userInputId": None, "promptId": None, "chunk": known_events()}
    server = Union("type", {
        "response-chunk": chunk,
        "subagent-response-chunk": {**chunk, "agentId": None, "agentType": None, "chunk": OPEN, "prompt": OPEN},
        "handlesteps-log-chunk": {"type": None, "userInputId": None, "promptId": None, "agentId": None,
                                  "level": None, "chunk": OPEN, "data": OPEN, "message": None},
        "prompt-response": {"type": None, "promptId": None, "sessionState": OPEN, "toolCalls": OPEN,
                            "toolResults": OPEN, "output": OPEN},
        "response-complete": {"type": None, "userInputId": None, "promptId": None, "response": None, **files, **quota},
        "prompt-error": {"type": None, "promptId": None, "userInputId": None, "message": None, "error": None,
                         "remainingBalance": None},
        "read-files": {"type": None, "requestId": None, "filePaths": OPEN},
        "tool-call-request": {"type": None, "userInputId": None, "requestId": None, "toolName": None, "input": OPEN,
                              "timeout": None, "mcpConfig": OPEN},
        "tool-call": {"type": None, "userInputId": None, "response": None, "data": {"id": None, "name": None,
                                                                                    "input": OPEN}, **files},
        "init-response": {"type": None, **quota},
        "usage-response": {"type": None, **quota},
        "message-cost-response": {"type": None, "promptId": None, "credits": None, "agentId": None},
        "action-error": {"type": None, "message": None, "error": None, "remainingBalance": None},
        "request-reconnect": {"type": None},
        "request-mcp-tool-data": {"type": None, "requestId": None, "mcpConfig": OPEN, "toolNames": OPEN},
    })
    return Known(
        c2s=Union("type", {
            "action": {"type": None, "txid": None, "data": client},
            "identify": {"type": None, "txid": None, "clientSessionId": None},
            "subscribe": {"type": None, "txid": None, "topics": None},
            "unsubscribe": {"type": None, "txid": None, "topics": None},
            "ping": {"type": None, "txid": None},
        }),
        s2c=Union("type", {
            "ack": {"type": None, "txid": None, "success": None, "error": None, "message": None},
            "action": {"type": None, "data": server},
            "pong": {"type": None, "txid": None},
        }),
    )


def mismatch_messages(live: Any, text: str) -> list[str]:
    """Replay's answer to a live message that matched nothing (`Dialect.mismatch_messages`): a `prompt`
    (SDK 0.3.x) gets `prompt-error` for its promptId (the run resolves with that error); anything else
    (CLI 1.0.x `user-input`, `init`) gets `action-error`, which the CLI prints as `Error: TEXT`."""
    data = live.get("data") if isinstance(live, dict) else None
    if isinstance(data, dict) and data.get("type") == "prompt" and isinstance(data.get("promptId"), str):
        action = {"type": "prompt-error", "userInputId": data["promptId"], "message": text}
    else:
        action = {"type": "action-error", "message": text}
    return [json.dumps({"type": "action", "data": action}, ensure_ascii=False, separators=(",", ":"))]

# --- what a prompt told the model (the report's thread) ---------------------------------------------------


def _cb_block(b: Any) -> rv.ViewPart:
    """A content block of a Codebuff message (AI SDK style: text, tool-call, tool-result, image)."""
    if not isinstance(b, dict):
        return rv.ViewPart(rv.TEXT, rv.as_json_text(b))
    kind = b.get("type")
    if kind == "text":
        return rv.ViewPart(rv.TEXT, rv.as_json_text(b.get("text")))
    if kind in ("tool-call", "tool_use", "tool_call"):
        return rv.ViewPart(rv.TOOL_CALL, rv.as_json_text(b.get("input", b.get("args"))),
                           name=str_or_none(b.get("toolName", b.get("name"))),
                           call_id=str_or_none(b.get("toolCallId", b.get("id"))))
    if kind in ("tool-result", "tool_result"):
        return rv.ViewPart(rv.TOOL_RESULT, rv.text_of_content(b.get("output", b.get("content"))),
                           call_id=str_or_none(b.get("toolCallId", b.get("tool_use_id"))))
    if kind in ("image", "file"):
        return rv.ViewPart(rv.IMAGE, f"[{kind}]")
    return rv.ViewPart(rv.OTHER, rv.as_json_text(b))


def _cb_message(m: Any) -> rv.ViewMessage:
    if not isinstance(m, dict):
        return rv.ViewMessage("user", [rv.ViewPart(rv.TEXT, rv.as_json_text(m))])
    content = m.get("content")
    if isinstance(content, str) and content.startswith(TOOL_RESULT_PREFIX):  # CLI 1.0.x's tool results
        return rv.ViewMessage("tool", [rv.ViewPart(rv.TOOL_RESULT, content[len(TOOL_RESULT_PREFIX):].lstrip("\n"))])
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    return rv.ViewMessage(str(m.get("role")), [_cb_block(b) for b in blocks])


def request_view(body: Any) -> rv.RequestView | None:
    """A `user-input` action (CLI 1.0.x: the whole history in `messages`) or a `prompt` (SDK 0.3.x: the
    history in `sessionState.mainAgentState.messageHistory`, then the prompt and its tool results).
    The server keeps the system prompt and the tools: the wire carries none."""
    data = body.get("data") if isinstance(body, dict) and body.get("type") == "action" else None
    if not isinstance(data, dict):
        return None
    if data.get("type") == "user-input" and isinstance(data.get("messages"), list):
        return rv.RequestView(None, messages=rv.LazyMessages(data["messages"], _cb_message))
    if data.get("type", "prompt") != "prompt" or "prompt" not in data:
        return None
    history = rv.arr(rv.obj(rv.obj(data, "sessionState"), "mainAgentState"), "messageHistory")
    messages = [_cb_message(m) for m in history]
    for r in rv.arr(data, "toolResults"):
        messages.append(rv.ViewMessage("tool", [_cb_block({"type": "tool-result", **r}) if isinstance(r, dict)
                                                else _cb_block(r)]))
    if data.get("prompt") is not None:
        messages.append(rv.ViewMessage("user", [rv.ViewPart(rv.TEXT, rv.as_json_text(data["prompt"]))]))
    return rv.RequestView(None, messages=messages)


DIALECT = Dialect(
    name="codebuff-ws",
    transport="ws",
    decoder=CodebuffWsDecoder,
    known=_known(),
    summary="Codebuff WebSocket protocol at /ws (CLI 1.0.x, SDK 0.3.x)",
    volatile=("txid", "data.txid", "data.promptId", "data.userInputId", "data.fingerprintId", "data.requestId",
              "data.authToken", "data.sessionState", "data.fileContext", "**.lastReadTime", "data.next_quota_reset",
              "data.chunk.messageHistoryLength", "**.sentAt", "data.clientSessionId", "**.toolCallId", "**.timestamp"),
    rules=(
        ("cb-ack-missing", ERROR_SEV, "a client frame with a txid that no ack answered"),
        ("cb-ack-duplicate", ERROR_SEV, "a txid acked more than once"),
        ("cb-ack-unknown", WARNING, "an ack for a txid no client frame carried"),
        ("cb-ack-failed", ERROR_SEV, "an ack with success false"),
        ("cb-ack-latency", WARNING, "an ack later than `ack_latency` seconds"),
        ("cb-txid-reused", WARNING, "the client reused a txid"),
        ("cb-heartbeat-gap", WARNING, "no client ping for longer than `heartbeat_timeout` on a connection that lasted longer"),
        ("cb-prompt-unanswered", ERROR_SEV, "a prompt / user-input with neither prompt-response (response-complete) nor prompt-error"),
        ("cb-prompt-error", ERROR_SEV, "a prompt-error from the server"),
        ("cb-chunk-unknown-prompt", WARNING, "a chunk or response for a prompt id no prompt opened"),
        ("cb-tool-call-unanswered", ERROR_SEV, "a tool-call-request without tool-call-response (timed out or stream ended)"),
        ("cb-tool-call-late", WARNING, "a tool-call-response later than the request's timeout"),
        ("cb-read-files-unanswered", ERROR_SEV, "a read-files without read-files-response"),
        ("cb-action-error", ERROR_SEV, "an action-error from the server"),
        ("invalid-json", ERROR_SEV, "a frame that is not JSON"),
    ),
    sniff=sniff,
    priority=80,
    mismatch_messages=mismatch_messages,
    request_view=request_view,
)
