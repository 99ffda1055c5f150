"""Stats right per call, on real traffic: captures made with `wirecap record -- CLIENT` against the lab's
fakes (tests/fixtures/lab), each holding the client's stdout and the HTTP / WebSocket traffic it caused.

Fixtures (tests/fixtures/stats/, zstd): Codex 0.169 `exec --json` and `exec resume --last` in the same
HOME (a hello pair, and a tool pair with fake_openai `--mode tool`), runs against `http_error` (400; and
500 with Codex's retries at 2);
Claude Code 2.1.197 against fake_anthropic `http_error` (529, CLAUDE_CODE_MAX_RETRIES=1),
`sse_error` (an error event mid-stream) and a refused connection; CodeBuddy 2.117 and opencode 1.18.33
against fake_openai `http_error`; Codebuff SDK 0.3.13 and CLI 1.0.115
tool runs (WebSocket); Codebuff SDK 0.10.7 tool run and fake_openai `http_error` (REST + chat SSE).
The numbers asserted are read by hand from the captures (see the comments).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import lab_dir, run_wirecap
from record_util import ROOT, record_home  # noqa: F401

from wirecap.analysis.stats import capture_totals, stats_capture, stats_records
from wirecap.analysis.validate import validate_capture
from wirecap.dialects import decode_capture, detect_channel

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "stats"
FAKES = ROOT / "tests" / "fixtures" / "lab" / "fake"


def _cap(name: str) -> str:
    return str(FIX / f"{name}.jsonl.zst")


def _by_ch(name: str) -> dict[str, dict]:
    return {s["ch"]: s for s in stats_capture(_cap(name)) if s["dialect"]}


def _tokens(s: dict) -> tuple[int, int]:
    return (sum(m["prompt_tokens"] for m in s["models_usage"].values()),
            sum(m["completion_tokens"] for m in s["models_usage"].values()))


# --- Codex: turn.completed.usage is the thread's running total ------------------------------------------
def test_codex_new_thread_counts_its_turn_once() -> None:
    # stdout turn.completed: input 9629, output 12; the one /v1/responses call: the same 9629 / 12
    s = _by_ch("codex_hello")
    assert _tokens(s["proc"]) == (9629, 12) and s["proc"]["resumed"] is False
    assert _tokens(s["http-1"]) == (9629, 12) and s["http-1"]["part_of"] == "proc"
    t = capture_totals(list(s.values()))
    assert (t["prompt_tokens"], t["completion_tokens"], t["llm_calls"]) == (9629, 12, 1)  # not 19258 / 24 / 2


def test_codex_resumed_run_reports_the_call_not_the_thread() -> None:
    # `exec resume --last "say more"`: stdout turn.completed says input 19355, output 24 (the thread:
    # 9629 + 9726, 12 + 12); the run's one call (response.completed on http-1) used 9726 / 12.
    s = _by_ch("codex_resume")
    proc, http = s["proc"], s["http-1"]
    assert proc["resumed"] is True
    assert proc["models_usage"] == {}  # before: 19355 / 24 reported as this run's usage
    assert proc["thread_usage"]["unknown"]["prompt_tokens"] == 19355
    assert proc["thread_usage"]["unknown"]["completion_tokens"] == 24
    assert proc["llm_calls"] == 1
    assert _tokens(http) == (9726, 12) and http["llm_calls"] == 1
    t = capture_totals(list(s.values()))
    assert (t["prompt_tokens"], t["completion_tokens"], t["llm_calls"]) == (9726, 12, 1)


def test_codex_tool_round_trip_turn_is_the_sum_of_its_calls() -> None:
    # `exec "run echo hi"` (fake_openai --mode tool): two /v1/responses calls, 9620 / 12 and 9732 / 12;
    # stdout turn.completed: 19352 / 24, their sum. Then `exec resume --last`: two calls, 10094 / 12 and
    # 10206 / 12; stdout turn.completed: 39652 / 48, the whole thread.
    s = _by_ch("codex_tool")
    assert _tokens(s["proc"]) == (19352, 24) == (_tokens(s["http-1"])[0] + _tokens(s["http-2"])[0], 24)
    t = capture_totals(list(s.values()))
    assert (t["prompt_tokens"], t["completion_tokens"], t["llm_calls"], t["tool_calls"]) == (19352, 24, 2, 1)
    r = _by_ch("codex_tool_resume")
    assert r["proc"]["models_usage"] == {} and r["proc"]["thread_usage"]["unknown"]["prompt_tokens"] == 39652
    t = capture_totals(list(r.values()))
    assert (t["prompt_tokens"], t["completion_tokens"], t["llm_calls"]) == (10094 + 10206, 24, 2)


def test_codex_failed_turn_is_a_failed_call() -> None:
    # fake_openai http_error: the one /v1/responses answers 400; stdout `error` + `turn.failed`
    s = _by_ch("codex_http_error")
    assert (s["proc"]["llm_calls"], s["proc"]["failed_calls"], s["proc"]["ttft"]) == (0, 1, None)
    assert (s["http-1"]["llm_calls"], s["http-1"]["failed_calls"]) == (0, 1)


def test_codex_reconnects_are_retries() -> None:
    # stream_max_retries = request_max_retries = 2 against a 500: stdout "Reconnecting... 1/2", "2/2", an
    # error and turn.failed (3 failed attempts, 2 retried); the wire: 9 POST /v1/responses, all 500
    s = _by_ch("codex_retries")
    proc = s["proc"]
    assert (proc["llm_calls"], proc["failed_calls"], proc["retries"]) == (0, 3, 2)
    wire = [x for x in s.values() if x["dialect"] == "openai-responses-sse"]
    assert len(wire) == 9 and all((x["llm_calls"], x["failed_calls"]) == (0, 1) for x in wire)
    t = capture_totals(list(s.values()))
    assert (t["llm_calls"], t["failed_calls"], t["retries"]) == (0, 9, 2)


def _codex_records(argv: list[str] | None, totals: list[tuple[int, int]]) -> list[dict]:
    recs: list[dict] = []
    if argv is not None:
        recs.append({"seq": 1, "t": 0.0, "type": "open", "ch": "proc", "kind": "process", "argv": argv})
        recs.append({"seq": 2, "t": 0.0, "type": "open", "ch": "stdout", "kind": "pipe", "proc": "proc"})
    lines = [{"type": "thread.started", "thread_id": "t-1"}]
    for inp, out in totals:
        lines += [{"type": "turn.started"},
                  {"type": "turn.completed", "usage": {"input_tokens": inp, "cached_input_tokens": 0,
                                                       "output_tokens": out}}]
    for line in lines:
        recs.append({"seq": len(recs) + 1, "t": 0.1 * len(recs), "type": "msg", "ch": "stdout", "dir": "s2c",
                     "json": line})
    return recs


@pytest.mark.parametrize(("argv", "want"), [
    (["codex", "exec", "--json", "hi"], (300, 30)),  # a new thread: every total is this run's
    (["codex", "exec", "--json", "resume", "--last", "hi"], (200, 20)),  # resumed: only the growth
    (["codex", "e", "resume", "--last", "hi"], (200, 20)),  # `e` is exec's alias
    (None, (300, 30)),  # stdout alone (no argv): taken as a new thread
])
def test_codex_thread_totals_become_per_turn_differences(argv, want) -> None:
    s = [x for x in stats_records(_codex_records(argv, [(100, 10), (300, 30)]), dialect="codex-exec")][0]
    assert _tokens(s) == want
    assert s["thread_usage"]["unknown"]["prompt_tokens"] == 300
    assert s["llm_calls"] == 2


# --- Claude: failed calls are not answered calls; ttft only from real output ------------------------------
def test_claude_every_call_failed_http_529() -> None:
    # stdout: system/api_retry (attempt 1/1, 529), a <synthetic> assistant message "API Error: 529 ...",
    # result is_error; the wire: two POST /v1/messages answered 529. Before: 1 LLM call, ttft 1.2 s.
    s = _by_ch("claude_http_error")
    proc = s["proc"]
    assert (proc["llm_calls"], proc["failed_calls"], proc["retries"], proc["ttft"]) == (0, 2, 1, None)
    for ch in ("http-2", "http-3"):
        assert (s[ch]["llm_calls"], s[ch]["failed_calls"], s[ch]["ttft"]) == (0, 1, None)
    t = capture_totals(list(s.values()))
    assert (t["llm_calls"], t["failed_calls"], t["retries"], t["ttft"]) == (0, 2, 1, None)


def test_claude_connection_refused_is_no_call() -> None:
    # the same synthetic answer after "Unable to connect to API (ConnectionRefused)": no exchange recorded
    proc = _by_ch("claude_conn_refused")["proc"]
    assert (proc["llm_calls"], proc["failed_calls"], proc["retries"], proc["ttft"]) == (0, 2, 1, None)
    synthetic = [e for e in decode_capture(_cap("claude_conn_refused"))
                 if e.kind == "item.completed" and e.data.get("synthetic")]
    assert len(synthetic) == 1 and "API Error" in synthetic[0].data["text"]


def test_claude_stream_abandoned_on_stdout_is_a_failed_call() -> None:
    # fake_anthropic sse_drop, stdout only (tests/fixtures/captures/claude_code_drop): message_start of
    # msg_255a..., then the retry's msg_23de...: before 2 LLM calls, now 1 answered and 1 failed (the same
    # on the shipped captures/claude-code-2.1.197-stream-error.jsonl, whose wire agrees: http-2 failed)
    caps = Path(__file__).resolve().parents[1] / "fixtures" / "captures"
    s = [x for x in stats_capture(str(caps / "claude_code_drop.jsonl")) if x["dialect"]][0]
    assert (s["llm_calls"], s["failed_calls"]) == (1, 1)
    shipped = {x["ch"]: x for x in stats_capture(str(ROOT / "captures" / "claude-code-2.1.197-stream-error.jsonl"))
               if x["dialect"]}
    assert (shipped["proc"]["llm_calls"], shipped["proc"]["failed_calls"]) == (1, 1)
    assert (shipped["http-2"]["llm_calls"], shipped["http-2"]["failed_calls"]) == (0, 1)


def test_stream_that_died_without_its_end_is_a_failed_call() -> None:
    # an Anthropic stream cut after a text delta (no message_stop, no error event): the call failed
    ch = "http-1"
    recs = [{"seq": 1, "t": 0.0, "type": "open", "ch": ch, "kind": "http", "method": "POST",
             "url": "http://127.0.0.1:9/v1/messages"},
            {"seq": 2, "t": 0.01, "type": "msg", "ch": ch, "dir": "c2s", "json": {"model": "claude-x", "messages": []}},
            {"seq": 3, "t": 0.02, "type": "response", "ch": ch, "status": 200, "sse": True},
            {"seq": 4, "t": 0.03, "type": "msg", "ch": ch, "dir": "s2c", "sse": {"event": "message_start"},
             "json": {"type": "message_start", "message": {"id": "msg_1", "model": "claude-x",
                                                           "usage": {"input_tokens": 75, "output_tokens": 1}}}},
            {"seq": 5, "t": 0.04, "type": "msg", "ch": ch, "dir": "s2c", "sse": {"event": "content_block_start"},
             "json": {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}},
            {"seq": 6, "t": 0.05, "type": "msg", "ch": ch, "dir": "s2c", "sse": {"event": "content_block_delta"},
             "json": {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}},
            {"seq": 7, "t": 0.06, "type": "close", "ch": ch, "status": 200}]
    s = stats_records(recs)[0]
    assert (s["llm_calls"], s["failed_calls"], s["models_usage"]) == (0, 1, {})
    assert s["failed_usage"]["claude-x"]["prompt_tokens"] == 75
    assert s["ttft"] is not None  # its first token did come


def test_claude_made_up_message_that_is_no_error() -> None:
    # Claude Code also makes up messages that report no failure ("No response requested."): no call, no
    # token, and no failed call either
    line = {"type": "assistant", "message": {"id": "m-1", "model": "<synthetic>", "role": "assistant",
            "content": [{"type": "text", "text": "No response requested."}],
            "usage": {"input_tokens": 0, "output_tokens": 0}}, "session_id": "s"}
    recs = [{"seq": 1, "t": 0.0, "type": "open", "ch": "proc", "kind": "process", "argv": ["claude"]},
            {"seq": 2, "t": 0.0, "type": "open", "ch": "stdout", "kind": "pipe", "proc": "proc"},
            {"seq": 3, "t": 0.1, "type": "msg", "ch": "stdout", "dir": "s2c",
             "json": {"type": "system", "subtype": "init", "session_id": "s", "model": "claude-x"}},
            {"seq": 4, "t": 0.5, "type": "msg", "ch": "stdout", "dir": "s2c", "json": line}]
    s = stats_records(recs)[0]
    assert (s["llm_calls"], s["failed_calls"], s["ttft"], s["errors"]) == (None, 0, None, 0)
    line["error"] = "server_error"  # the API-error form: a failed call
    s = stats_records(recs)[0]
    assert (s["llm_calls"], s["failed_calls"], s["ttft"], s["errors"]) == (0, 1, None, 1)


def test_codebuddy_api_error_message_is_no_call() -> None:
    # CodeBuddy 2.117 against fake_openai http_error: one 400 exchange; stdout prints the error as an
    # assistant message (zero usage, no _requestId) and a result error_during_execution. Before: 1 LLM
    # call and a 9.6 s ttft.
    s = _by_ch("codebuddy_http_error")
    proc = s["proc"]
    assert (proc["llm_calls"], proc["failed_calls"], proc["ttft"]) == (0, 1, None)
    assert (s["http-1"]["llm_calls"], s["http-1"]["failed_calls"]) == (0, 1)
    assert capture_totals(list(s.values()))["failed_calls"] == 1


def test_opencode_api_error_is_a_failed_call() -> None:
    # opencode 1.18.33 against fake_openai http_error: title and main request both answer 400; stdout has
    # one `error` event (APIError, statusCode 400). (Decoded as opencode by --dialect: its argv starts with
    # `env -i HOME=...`, which detection does not look through.)
    s = {x["ch"]: x for x in stats_capture(_cap("opencode_http_error"), dialect="opencode") if x["dialect"]}
    assert (s["proc"]["llm_calls"], s["proc"]["failed_calls"], s["proc"]["ttft"]) == (0, 1, None)
    wire = [x for x in stats_capture(_cap("opencode_http_error")) if x["dialect"] == "openai-chat-sse"]
    assert [(x["llm_calls"], x["failed_calls"]) for x in wire] == [(0, 1), (0, 1)]


def test_claude_stream_cut_by_error_event_then_retried() -> None:
    # http-2: message_start (19449 in, 1 out), a text delta, then `event: error`: a failed call whose
    # first token did come (its ttft stands); Claude retried without streaming (http-3: 19445 / 10),
    # and its result reports 19445 / 10 at $0.097475.
    s = _by_ch("claude_sse_error")
    cut, retry, proc = s["http-2"], s["http-3"], s["proc"]
    assert (cut["llm_calls"], cut["failed_calls"], cut["models_usage"]) == (0, 1, {})
    assert cut["failed_usage"]["claude-opus-4-8"]["prompt_tokens"] == 19449
    assert cut["ttft"] is not None
    assert (retry["llm_calls"], _tokens(retry)) == (1, (19445, 10))
    assert (proc["llm_calls"], _tokens(proc)) == (1, (19445, 10))
    t = capture_totals(list(s.values()))
    assert (t["prompt_tokens"], t["completion_tokens"], t["llm_calls"], t["failed_calls"]) == (19445, 10, 1, 1)
    assert t["cost_usd"] == 0.097475


def test_diff_stats_level_counts_calls_once() -> None:
    # every call failed (A) against a retried stream (B): answered, failed and retried calls side by side
    from wirecap.analysis.diff import diff_captures

    rows = {r["metric"]: r for r in diff_captures(_cap("claude_http_error"), _cap("claude_sse_error"),
                                                   level="stats").stats}
    assert (rows["llm_calls"]["a"], rows["llm_calls"]["b"]) == (0, 1)
    assert (rows["failed_calls"]["a"], rows["failed_calls"]["b"]) == (2, 1)
    assert (rows["retries"]["a"], rows["retries"]["b"]) == (1, 0)
    assert rows["prompt_tokens"]["b"] == 19445  # not 58339: stdout and wire count once, the failed call not


# --- Codebuff WebSocket: a tool call seen as a chunk and as a request counts once -----------------------
@pytest.mark.parametrize("name", ["cbsdk0313_tool_ws", "cb115_tool_ws"])
def test_codebuff_ws_tool_call_counted_once(name: str) -> None:
    s = _by_ch(name)
    assert s["ws-1"]["tool_calls"] == {"run_terminal_command": 1}  # SDK 0.3.13 before: 2
    events = [e for e in decode_capture(_cap(name)) if e.ch == "ws-1"]
    calls = [e for e in events if e.kind == "item.completed" and e.item == "tool_call"]
    results = [e for e in events if e.kind == "item.completed" and e.item == "tool_result"]
    assert len(calls) == 1 and len(results) == 1
    assert results[0].data["call_id"] == calls[0].id
    assert capture_totals(list(s.values()))["tool_calls"] == 1  # stdout and wire: once


def test_codebuff_sdk03_echo_keeps_the_request_id() -> None:
    events = [e for e in decode_capture(_cap("cbsdk0313_tool_ws")) if e.ch == "ws-1"]
    echo = [e for e in events if e.item == "status" and e.data.get("subtype") == "tool-call-echo"]
    assert len(echo) == 1 and echo[0].data["echo_id"].startswith("req_")
    assert [e for e in events if e.kind == "unparsed"] == []


# --- Codebuff REST (SDK 0.10.7) ---------------------------------------------------------------------------
def _rest_events(name: str) -> list:
    return [e for e in decode_capture(_cap(name)) if e.dialect == "codebuff-rest"]


def test_codebuff_rest_run_decoded() -> None:
    events = _rest_events("cbsdk0107_tool")
    assert [e for e in events if e.kind == "unparsed"] == []
    started = [e for e in events if e.kind == "session.started"]
    assert len(started) == 1 and started[0].data["session_id"].startswith("run_")
    assert started[0].data["agent_id"] == "fake-helper"
    steps = [e for e in events if e.item == "status" and e.data.get("subtype") == "agent-step"]
    assert [(e.data["step_number"], e.data["status"]) for e in steps] == [(1, "completed"), (2, "completed")]
    assert all(e.data["run_id"] == started[0].data["session_id"] for e in steps)
    ended = [e for e in events if e.kind == "session.ended" and "run_id" in e.data]
    assert [(e.data["status"], e.data["is_error"], e.data["total_steps"]) for e in ended] == [("completed", False, 3)]
    me = [e for e in events if e.item == "status" and e.data.get("subtype") == "me"]
    assert me[0].data["user_id"] == "user_fake_0001"
    assert not [f for f in validate_capture(_cap("cbsdk0107_tool")) if f.severity != "info"]


def test_codebuff_failed_agent_run_is_a_finding() -> None:
    # fake_openai --mode http_error: chat/completions answers 400; the SDK FINISHes the run with status failed
    found = validate_capture(_cap("cbsdk0107_http_error"))
    failed = [f for f in found if f.rule == "cb-run-failed"]
    assert len(failed) == 1 and failed[0].severity == "error" and "failed" in failed[0].message
    ended = [e for e in _rest_events("cbsdk0107_http_error") if e.kind == "session.ended" and "run_id" in e.data]
    assert [(e.data["status"], e.data["is_error"]) for e in ended] == [("failed", True)]
    chat = _by_ch("cbsdk0107_http_error")["http-4"]
    assert (chat["dialect"], chat["llm_calls"], chat["failed_calls"]) == ("openai-chat-sse", 0, 1)


def test_codebuff_rest_sniff() -> None:
    def o(path: str) -> dict:
        return {"kind": "http", "method": "POST", "url": f"http://127.0.0.1:9/{path}"}

    assert detect_channel(o("api/v1/agent-runs"), [])[0] == "codebuff-rest"
    assert detect_channel(o("api/v1/agent-runs/run_1/steps"), [])[0] == "codebuff-rest"
    assert detect_channel({**o("api/v1/me?fields=id"), "method": "GET"}, [])[0] == "codebuff-rest"
    assert detect_channel(o("api/v1/chat/completions"), [])[0] == "openai-chat-sse"
    assert detect_channel(o("api/v1/agent-runs/run_1/steps/x"), [])[0] != "codebuff-rest"


def test_rest_http_error_on_finish_is_a_failed_run() -> None:
    recs = [
        {"seq": 1, "t": 0.0, "type": "open", "ch": "http-1", "kind": "http", "method": "POST",
         "url": "http://127.0.0.1:9/api/v1/agent-runs"},
        {"seq": 2, "t": 0.1, "type": "msg", "ch": "http-1", "dir": "c2s",
         "json": {"action": "FINISH", "runId": "run_1", "status": "completed", "totalSteps": 1}},
        {"seq": 3, "t": 0.2, "type": "response", "ch": "http-1", "status": 503, "reason": "Service Unavailable"},
        {"seq": 4, "t": 0.3, "type": "msg", "ch": "http-1", "dir": "s2c", "json": {"error": "down"}},
        {"seq": 5, "t": 0.4, "type": "close", "ch": "http-1", "status": 503},
    ]
    from wirecap.analysis.validate import validate_records

    rules = sorted(f.rule for f in validate_records(recs))
    assert rules == ["cb-run-failed", "http-status"]


# --- real clients ----------------------------------------------------------------------------------------


def _lab() -> Path | None:
    return lab_dir("codex")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fake(tmp: Path, script: str, *args: str) -> tuple[subprocess.Popen, int]:
    pf = tmp / f"{script}.port"
    proc = subprocess.Popen([sys.executable, str(FAKES / script), "--log", str(tmp / f"{script}.log"),
                             "--portfile", str(pf), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while not (pf.exists() and pf.read_text().strip()):
        assert time.monotonic() < deadline and proc.poll() is None, "fake server did not start"
        time.sleep(0.05)
    return proc, int(pf.read_text())


_CODEX_TOML = """model = "gpt-5.5"
model_provider = "fake"
check_for_update_on_startup = false

[features]
plugins = false
apps = false

[analytics]
enabled = false

[model_providers.fake]
name = "Fake local"
base_url = "http://127.0.0.1:{port}/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0
"""


@pytest.mark.realclient
@pytest.mark.usefixtures("record_home")
@pytest.mark.skipif(_lab() is None, reason="lab not installed (no node_modules/.bin/codex)")
def test_real_codex_resume_stats_per_call(tmp_path) -> None:
    lab = _lab()
    assert lab is not None
    fake, port = _fake(tmp_path, "fake_openai.py", "--mode", "text")
    try:
        home = tmp_path / "home"
        (home / ".codex").mkdir(parents=True)
        listen = _free_port()
        (home / ".codex" / "config.toml").write_text(_CODEX_TOML.format(port=listen))
        env = {"HOME": str(home), "TMPDIR": str(tmp_path), "PATH": "/usr/local/bin:/usr/bin:/bin", "TERM": "dumb",
               "OPENAI_API_KEY": "sk-fake-000000"}
        caps = []
        for name, args in (("first", ["say hello"]), ("resumed", ["resume", "--last", "say more"])):
            cap = tmp_path / f"{name}.jsonl"
            res = run_wirecap("record", "-q", "-o", str(cap), "--reverse", f"http://127.0.0.1:{port}",
                              "--listen", f"127.0.0.1:{listen}", "--", str(lab / "node_modules" / ".bin" / "codex"),
                              "exec", "--json", "--skip-git-repo-check", *args, timeout=120, cwd=str(tmp_path), env=env)
            assert res.returncode == 0, res.stderr.decode()[-2000:]
            caps.append(str(cap))
    finally:
        fake.terminate()
        fake.wait(10)
    first = {s["ch"]: s for s in stats_capture(caps[0]) if s["dialect"]}
    second = {s["ch"]: s for s in stats_capture(caps[1]) if s["dialect"]}
    http1 = [s for s in first.values() if s["dialect"] == "openai-responses-sse"]
    http2 = [s for s in second.values() if s["dialect"] == "openai-responses-sse"]
    assert len(http1) == len(http2) == 1
    assert _tokens(first["proc"]) == _tokens(http1[0])  # a new thread: the turn is the call
    assert second["proc"]["resumed"] is True and second["proc"]["models_usage"] == {}
    thread = second["proc"]["thread_usage"]["unknown"]
    assert thread["prompt_tokens"] == _tokens(http1[0])[0] + _tokens(http2[0])[0]  # the thread, both runs
    t = capture_totals(list(second.values()))
    assert (t["prompt_tokens"], t["completion_tokens"]) == _tokens(http2[0])


@pytest.mark.realclient
@pytest.mark.usefixtures("record_home")
@pytest.mark.skipif(_lab() is None or shutil.which("node") is None, reason="lab not installed")
def test_real_claude_all_calls_failed(tmp_path) -> None:
    lab = _lab()
    assert lab is not None
    fake, port = _fake(tmp_path, "fake_anthropic.py", "--mode", "http_error")
    try:
        listen = _free_port()
        home = tmp_path / "home"
        home.mkdir()
        env = {"HOME": str(home), "TMPDIR": str(tmp_path), "PATH": "/usr/local/bin:/usr/bin:/bin", "TERM": "dumb",
               "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{listen}", "ANTHROPIC_API_KEY": "sk-ant-fake-0000000000000000",
               "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "CLAUDE_CODE_MAX_RETRIES": "1"}
        cap = tmp_path / "claude.jsonl"
        res = run_wirecap("record", "-q", "-o", str(cap), "--reverse", f"http://127.0.0.1:{port}",
                          "--listen", f"127.0.0.1:{listen}", "--", str(lab / "node_modules" / ".bin" / "claude"),
                          "-p", "say hello", "--output-format", "stream-json", "--verbose",
                          timeout=180, cwd=str(tmp_path), env=env)
    finally:
        fake.terminate()
        fake.wait(10)
    assert res.returncode == 1, res.stderr.decode()[-2000:]
    sessions = [s for s in stats_capture(str(cap)) if s["dialect"]]
    proc = next(s for s in sessions if s["ch"] == "proc")
    wire = [s for s in sessions if s["dialect"] == "anthropic-sse"]
    assert (proc["llm_calls"], proc["ttft"], proc["retries"]) == (0, None, 1)
    assert proc["failed_calls"] == len(wire) == 2
    assert all((s["llm_calls"], s["failed_calls"]) == (0, 1) for s in wire)


@pytest.mark.realclient
@pytest.mark.usefixtures("record_home")
@pytest.mark.skipif(_lab() is None or shutil.which("node") is None, reason="lab not installed")
def test_real_codebuff_sdk_failed_run_flagged(tmp_path) -> None:
    lab = _lab()
    assert lab is not None
    sdk = lab / "node_modules" / "@codebuff" / "sdk"
    if not sdk.exists():
        pytest.skip("no @codebuff/sdk in the lab")
    fake, port = _fake(tmp_path, "fake_openai.py", "--mode", "http_error", "--error-status", "400")  # not retried
    try:
        listen = _free_port()
        home = tmp_path / "home"
        home.mkdir()
        env = {"HOME": str(home), "TMPDIR": str(tmp_path), "PATH": "/usr/local/bin:/usr/bin:/bin",
               "CB_SDK_DIR": str(sdk), "FAKE_BACKEND": f"http://127.0.0.1:{listen}"}
        cap = tmp_path / "cbsdk.jsonl"
        res = run_wirecap("record", "-q", "-o", str(cap), "--reverse", f"http://127.0.0.1:{port}",
                          "--listen", f"127.0.0.1:{listen}", "--", "node",
                          str(ROOT / "tests" / "fixtures" / "lab" / "cb_sdk_run.mjs"), "say hello",
                          timeout=120, cwd=str(tmp_path), env=env)
    finally:
        fake.terminate()
        fake.wait(10)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    found = validate_capture(str(cap))
    assert [f.severity for f in found if f.rule == "cb-run-failed"] == ["error"]

