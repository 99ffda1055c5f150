"""Codebuff backend REST calls of @codebuff/sdk 0.10.x: the agent-run bookkeeping around its LLM calls.

One unit is one HTTP exchange (as for the other HTTP dialects); the LLM calls themselves go to
`/api/v1/chat/completions` (openai-chat-sse). Routes (what the SDK sends, see docs/dialects/codebuff-rest.md):

- `GET /api/v1/me` → `{"id": ...}`: who the API key belongs to; a status item (`subtype: "me"`).
- `POST /api/v1/agent-runs {"action": "START", "agentId", "ancestorRunIds"}` → `{"runId"}`: the run
  starts: `session.started` with `session_id` = the run id (from the answer) and `agent_id`.
- `POST /api/v1/agent-runs/<runId>/steps {"stepNumber", "credits", "childRunIds", "messageId",
  "status", "startTime", "errorMessage"?}` → `{"stepId"}`: one agent step, a status item
  (`subtype: "agent-step"`; `message_id` is the chat completion it came from).
- `POST /api/v1/agent-runs {"action": "FINISH", "runId", "status", "totalSteps", "directCredits",
  "totalCredits"}` → `{"success": true}`: the run ends: `session.ended` with the run's `status`
  (`completed`, `failed`, `cancelled`), steps and credits. The SDK sends `failed` when the run
  threw (an LLM call that failed, a tool that crashed): rule `cb-run-failed`, with an error event.

An HTTP error answer to START or FINISH also fails the run's bookkeeping (`cb-run-failed`); any error
status is `http-status` too, as for every HTTP dialect.
"""

from __future__ import annotations

from typing import Any

from wirecap.dialects.base import ERROR_SEV, INFO, WARNING, Decoder, Dialect, str_or_none, text_of, url_path
from wirecap.dialects.http_base import http_path
from wirecap.events import ERROR, SESSION_STARTED, Event

_ME = "/api/v1/me"
_RUNS = "/api/v1/agent-runs"


def _route(path: str) -> str | None:
    """`me`, `runs` or `steps` for a Codebuff REST path (any prefix before /api/v1), else None."""
    if path.endswith(_ME):
        return "me"
    if path.endswith(_RUNS):
        return "runs"
    head, sep, tail = path.rpartition(_RUNS + "/")
    if sep and tail.endswith("/steps") and tail.count("/") == 1 and len(tail) > len("/steps"):
        return "steps"
    return None


def sniff(open_record: dict[str, Any] | None, msgs: list[dict[str, Any]]) -> str | None:
    """The open record's URL path is one of the Codebuff REST routes above (an HTTP exchange)."""
    path = http_path(open_record)
    route = _route(path) if path is not None else None
    if route is None:
        return None
    method = (open_record or {}).get("method", "")  # (http_path answered: an http open record)
    return f"HTTP {method} {path} (Codebuff REST: {route})".replace("  ", " ")


class CodebuffRestDecoder(Decoder):
    dialect = "codebuff-rest"

    def __init__(self, unit: str, options: dict[str, Any] | None = None) -> None:
        super().__init__(unit, options)
        self.route: str | None = None
        self.run_id: str | None = None  # from the steps URL, the FINISH body or the START answer
        self.action: str | None = None
        self.request: dict[str, Any] | None = None
        self.status_code: int | None = None
        self.ended: dict[str, Any] = {}

    def msg_type(self, rec: dict[str, Any]) -> str:
        obj = rec.get("json")
        if rec.get("dir") == "c2s":
            if isinstance(obj, dict) and isinstance(obj.get("action"), str):
                return obj["action"]
            return "step" if self.route == "steps" else "request"
        return "response"

    def on_open(self, rec: dict[str, Any]) -> list[Event]:
        path = url_path(rec)
        self.route = _route(path)
        if self.route == "steps":
            self.run_id = path.rsplit("/", 2)[-2] or None
        return []

    def on_msg(self, rec: dict[str, Any]) -> list[Event]:
        obj = rec.get("json")
        if not isinstance(obj, dict):
            if "json" not in rec and text_of(rec) not in (None, ""):
                self.find(ERROR_SEV, "invalid-json", f"a {'request' if rec.get('dir') == 'c2s' else 'response'} "
                          "body that is not JSON", rec)
            return [self.unparsed(rec, "body is not a JSON object")]
        if rec.get("dir") == "c2s":
            return self._request(rec, obj)
        return self._answer(rec, obj)

    # --- request ---------------------------------------------------------------------------------------
    def _request(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        self.request = rec
        if self.route == "steps":
            status = obj.get("status")
            n = obj.get("stepNumber")
            data = {"subtype": "agent-step", "run_id": self.run_id, "step_number": n, "status": status,
                    "message_id": obj.get("messageId"), "credits": obj.get("credits"),
                    "child_run_ids": obj.get("childRunIds"), "error_message": obj.get("errorMessage")}
            if status not in (None, "completed"):
                self.find(WARNING, "cb-step-failed", f"agent run {self.run_id} step {n} reported status {status!r}"
                          + (f": {obj.get('errorMessage')}" if obj.get("errorMessage") else "")[:160], rec)
            return [self.status(rec, f"agent step {n} {status or ''}".rstrip(), **data)]
        if self.route == "runs":
            action = obj.get("action")
            self.action = action if isinstance(action, str) else None
            if action == "START":
                return []  # session.started comes with the answer (it carries the run id)
            if action == "FINISH":
                self.run_id = str_or_none(obj.get("runId")) or self.run_id
                status = obj.get("status")
                self.ended = {"run_id": self.run_id, "status": status, "total_steps": obj.get("totalSteps"),
                              "direct_credits": obj.get("directCredits"), "credits": obj.get("totalCredits"),
                              "is_error": status != "completed"}
                if status == "failed":
                    self.find(ERROR_SEV, "cb-run-failed", f"agent run {self.run_id} finished with status failed "
                              f"after {obj.get('totalSteps')} step(s)", rec)
                    return [self.ev(ERROR, rec, data={"message": f"agent run {self.run_id} failed", "code": "failed",
                                                      "fatal": True})]
                if status == "cancelled":
                    self.find(WARNING, "cb-run-cancelled", f"agent run {self.run_id} was cancelled", rec)
                elif status != "completed":
                    self.find(INFO, "cb-run-status", f"agent run {self.run_id} finished with status {status!r}", rec)
                return [self.status(rec, f"agent run finish: {status}", subtype="agent-run-finish", **self.ended)]
            return [self.unparsed(rec, f"unknown agent-runs action {action!r}")]
        return [self.unparsed(rec, f"a request body on {self.route}")]

    # --- answer ----------------------------------------------------------------------------------------
    def on_response(self, rec: dict[str, Any]) -> list[Event]:
        status = rec.get("status")
        self.status_code = status if isinstance(status, int) else None
        if self.status_code is not None and self.status_code >= 400:
            self.find(ERROR_SEV, "http-status", f"HTTP status {self.status_code} {rec.get('reason', '')}".rstrip(), rec)
            if self.route == "runs" and self.action in ("START", "FINISH"):
                self.find(ERROR_SEV, "cb-run-failed", f"agent run {self.action} answered HTTP {self.status_code}", rec)
            return [self.ev(ERROR, rec, data={"message": f"{self.route} answered HTTP {self.status_code}",
                                              "code": self.status_code, "fatal": True, "status": self.status_code})]
        return []

    def _answer(self, rec: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        if self.status_code is not None and self.status_code >= 400:
            err = obj.get("error")
            msg = err.get("message") if isinstance(err, dict) else (err or obj.get("message"))
            return [self.status(rec, f"error answer: {msg}", subtype="error-body", body=obj)]
        if self.route == "me":
            return [self.status(rec, f"me: {obj.get('id')}", subtype="me", user_id=obj.get("id"))]
        if self.route == "runs" and self.action == "START":
            self.run_id = str_or_none(obj.get("runId"))
            if self.run_id is None:
                self.find(ERROR_SEV, "cb-run-failed", "agent run START answered without a runId", rec)
            req = (self.request or {}).get("json") or {}
            return [self.ev(SESSION_STARTED, rec, data={"session_id": self.run_id, "model": None,
                                                        "agent_id": req.get("agentId"),
                                                        "ancestor_run_ids": req.get("ancestorRunIds")})]
        if self.route == "runs" and self.action == "FINISH":
            if obj.get("success") is False:
                self.find(ERROR_SEV, "cb-run-failed", f"agent run FINISH answered success false: {obj}"[:160], rec)
            return []
        if self.route == "steps":
            return []  # {"stepId"}: the step was stored
        return [self.unparsed(rec, f"an answer on {self.route} of an unknown request")]

    # --- end -------------------------------------------------------------------------------------------
    def on_close(self, rec: dict[str, Any]) -> list[Event]:
        if isinstance(rec.get("status"), int) and self.status_code is None:
            self.status_code = rec["status"]
        if self.route == "runs" and self.action == "FINISH":
            return self.end_session(rec, **self.ended, http_status=self.status_code)
        return []


# --- drift (rule `drift`): the bodies of @codebuff/sdk 0.10.7 (cb_sdk_run.mjs against fake_openai) and of the
# SDK's source (startAgentRun, addAgentStep, finishAgentRun); answers: one flat object of every answer field.
def _known() -> Any:
    from wirecap.dialects.drift import OPEN, Known, Union

    step = dict.fromkeys(("stepNumber", "credits", "childRunIds", "messageId", "status", "startTime", "errorMessage"))
    start = dict.fromkeys(("action", "agentId", "ancestorRunIds"))
    finish = dict.fromkeys(("action", "runId", "status", "totalSteps", "directCredits", "totalCredits", "errorMessage"))
    answer = {**dict.fromkeys(("id", "email", "name", "runId", "stepId", "success", "message")), "error": OPEN}
    return Known(c2s=Union("action", {"START": start, "FINISH": finish}, missing=step), c2s_name="request", s2c=answer)


DIALECT = Dialect(
    name="codebuff-rest",
    transport="http",
    decoder=CodebuffRestDecoder,
    known=_known(),
    summary="Codebuff backend REST of @codebuff/sdk 0.10 (/api/v1/me, agent-runs START/FINISH, steps)",
    volatile=("runId", "stepId", "messageId", "startTime", "childRunIds", "ancestorRunIds"),
    rules=(
        ("cb-run-failed", ERROR_SEV, "an agent run FINISHed with status failed, or START/FINISH answered an HTTP error "
                                     "(or no runId / success false)"),
        ("cb-run-cancelled", WARNING, "an agent run FINISHed with status cancelled"),
        ("cb-run-status", INFO, "an agent run FINISHed with a status other than completed, failed or cancelled"),
        ("cb-step-failed", WARNING, "an agent step reported with a status other than completed"),
        ("http-status", ERROR_SEV, "the response status is 400 or more"),
        ("invalid-json", ERROR_SEV, "a request or response body that is not JSON"),
    ),
    sniff=sniff,
    priority=50,
)
