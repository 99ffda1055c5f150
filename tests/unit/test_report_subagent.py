"""A subagent nests under the call that started it, on real traffic: captures/claude-code-2.1.197-subagent.jsonl
(Claude Code 2.1.197 against the lab's fake in `task` mode: the main agent's Agent tool call starts a
subagent, which runs Bash once and answers). Over HTTP (the requests), and on Claude Code's stdout alone
(its `parent_tool_use_id`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wirecap.analysis.report.build import build_capture_report
from wirecap.analysis.report.thread import Aside, Thread
from wirecap.analysis.report.thread_view import steps, thread_html, thread_markdown, thread_term
from wirecap.analysis.validate import validate_capture
from wirecap.cli.inprocess import run
from wirecap.dialects import decode_capture

CAP = Path(__file__).resolve().parents[2] / "captures" / "claude-code-2.1.197-subagent.jsonl"
PROMPT = "Subagent task: run `echo from-subagent` with Bash and report what it printed."


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _agent_call_id() -> str:
    for rec in _records(CAP):
        value = rec.get("json")
        if rec.get("ch") == "stdout" and isinstance(value, dict) and value.get("type") == "assistant":
            for block in value["message"]["content"]:
                if block.get("type") == "tool_use" and block.get("name") == "Agent":
                    return str(block["id"])
    raise AssertionError("no Agent tool call on stdout")


def _only(tmp: Path, name: str, keep: Any) -> Path:
    """The capture with only the channels `keep(ch)` says, seqs renumbered, the end record kept."""
    out: list[dict[str, Any]] = []
    for rec in _records(CAP):
        if "ch" in rec and not keep(str(rec["ch"])):
            continue
        if rec.get("type") != "header":
            rec["seq"] = len(out)
        if rec.get("type") == "end":
            rec["records"] = len(out)
        out.append(rec)
    path = tmp / name
    path.write_text("".join(json.dumps(r) + "\n" for r in out))
    return path


@pytest.fixture(scope="module")
def stdout_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same run as a capture of the process alone (`wirecap tee`)."""
    return _only(tmp_path_factory.mktemp("subagent"), "stdout-only.jsonl", lambda ch: not ch.startswith("http-"))


def test_over_http_alone_the_subagent_calls_nest_by_their_prompt(tmp_path: Path) -> None:
    """A network-only capture (a standalone `wirecap record --reverse`): the subagent is found by its first
    prompt, the Agent tool call's `prompt`."""
    th = _thread(_only(tmp_path, "http-only.jsonl", lambda ch: ch.startswith("http-")))
    assert [c.parent[0] if c.parent else None for c in th.calls] == [None, 1, 1, None]
    assert not any(c.retry or c.side for c in th.calls) and th.asides == []


def _thread(path: Path) -> Thread:
    report = build_capture_report(str(path), relevant=False)
    assert len(report.threads) == 1
    return report.threads[0]


def test_the_decoder_carries_parent_tool_use_id() -> None:
    parent = _agent_call_id()
    items = [ev for ev in decode_capture(str(CAP)) if ev.ch == "stdout" and ev.kind == "item.completed"]
    of_sub = [ev for ev in items if ev.data.get("parent_tool_use_id") == parent]
    # the subagent's prompt, its Bash call and result, and the four task lines about it
    assert [ev.item for ev in of_sub if ev.item != "status"] == ["message", "tool_call", "tool_result"]
    assert any(ev.role == "user" and ev.data.get("text") == PROMPT for ev in of_sub)
    tasks = [ev.data for ev in of_sub if ev.item == "status"]
    assert [t["subtype"] for t in tasks] == ["task_started", "task_progress", "task_updated", "task_notification"]
    assert tasks[0]["text"] == "task started: Echo from a subagent"
    assert tasks[2]["text"] == "task updated: completed"  # (that line names only the task: its call is remembered)
    # the main agent's items have none
    main = [ev for ev in items if "parent_tool_use_id" not in ev.data and ev.item in ("message", "tool_call")]
    assert {ev.data.get("name") for ev in main if ev.item == "tool_call"} == {"Agent"}


def test_validate_knows_every_line_of_the_run() -> None:
    assert validate_capture(str(CAP)) == []  # (no drift: the task lines and subagent fields are known)


def test_over_http_the_subagent_calls_nest_under_the_agent_call() -> None:
    th = _thread(CAP)
    parent = _agent_call_id()
    one, two, three, four = th.calls
    assert [p.name for p in one.reply if p.kind == "tool_call"] == ["Agent"]
    assert two.parent == (1, parent) and three.parent == (1, parent)
    assert one.parent is None and four.parent is None
    # neither retries nor side calls nor another conversation taking the main one's place
    assert not any(c.retry or c.side for c in th.calls)
    assert th.main_lineage == one.lineage == four.lineage != two.lineage == three.lineage
    # the subagent's prompt is shown once: its first call's user text, linked to the stdout line too
    prompt = [p for m in two.new for p in m.parts if p.text == PROMPT]
    assert len(prompt) == 1 and len(prompt[0].at) == 2
    assert not any(a.kind == "user" for a in th.asides)
    # reading order: the Agent call, then (one level deeper) the task lines and the subagent's calls
    order = [(kind, getattr(item, "n", getattr(item, "text", "")), depth) for kind, item, depth in steps(th)]
    calls = [(n, depth) for kind, n, depth in order if kind == "call"]
    assert calls == [(1, 0), (2, 1), (3, 1), (4, 0)]
    nested = [text for kind, text, depth in order if kind == "aside" and depth == 1]
    assert nested[0] == "task started: Echo from a subagent" and len(nested) == 4
    # the Bash run belongs to the subagent's call, the Agent run to the main one
    runs = {r.name: r for r in th.tool_runs}
    assert runs["Bash"].issued_by == 2 and runs["Bash"].returned_in == 3
    assert runs["Agent"].issued_by == 1 and runs["Agent"].returned_in == 4


def test_on_stdout_alone_the_subagent_lines_nest_under_the_agent_tool_call(stdout_only: Path) -> None:
    th = _thread(stdout_only)
    assert th.calls == []
    parent = _agent_call_id()
    walked = list(steps(th))
    at = next(i for i, (_, a, _) in enumerate(walked) if a.kind == "tool_call" and a.name == "Agent")
    assert walked[at][2] == 0
    nested = []
    for kind, a, depth in walked[at + 1:]:
        if depth == 0:
            break
        assert kind == "aside" and isinstance(a, Aside) and a.parent == parent and depth == 1
        nested.append((a.kind, a.name))
    assert nested == [("status", None), ("user", None), ("status", None), ("tool_call", "Bash"),
                      ("tool_result", None), ("status", None), ("status", None)]
    # after the subagent, the main agent again: the Agent call's result and the final answer, at the top
    rest = [(a.kind, depth) for _, a, depth in walked[at + 1 + len(nested):]]
    assert rest[:2] == [("tool_result", 0), ("assistant", 0)]


def test_every_format_shows_the_nesting(stdout_only: Path) -> None:
    report = build_capture_report(str(CAP), relevant=False)
    term = thread_term(report, 120)
    sub = next(line for line in term if "call 2" in line)
    assert sub.startswith("    ── call 2 · http-3 · subagent of call 1")
    assert any(line.startswith("    · status: task started") for line in term)
    md = "\n".join(thread_markdown(report))
    assert "#### call 2 · http-3 · subagent of call 1" in md
    html = thread_html(report, 0)
    assert html.count('class="sub" style="margin-left:24px"') == 7  # 2 calls, 4 task lines, the Bash run
    alone = build_capture_report(str(stdout_only), relevant=False)
    md = "\n".join(thread_markdown(alone))
    assert "> · **tool call Bash**" in md and "> ```" in md
    assert any(line.startswith("    · tool call Bash") for line in thread_term(alone, 120))
    js = alone.to_json()["threads"][0]["asides"]
    assert sum(1 for a in js if a.get("parent") == _agent_call_id()) == 7


def test_stats_see_one_session_and_each_call_once() -> None:
    code, out, _ = run(["stats", "--json", str(CAP)])
    assert code == 0
    rows = json.loads(out)
    procs = [r for r in rows if r["ch"] == "proc"]
    # the subagent is no second session: one Claude Code session, its tools the Agent and the subagent's Bash
    assert len(procs) == 1 and procs[0]["tool_calls"] == {"Agent": 1, "Bash": 1}
    # stdout prints 3 of the 4 answers (not the subagent's last, a text): each counted once
    assert procs[0]["llm_calls"] == 3
    http = [r for r in rows if r["ch"].startswith("http-") and r.get("dialect") == "anthropic-sse"]
    assert len(http) == 4 and sum(r["llm_calls"] for r in http) == 4


def test_codebuddy_names_the_answered_call_there_and_that_is_no_subagent() -> None:
    path = Path(__file__).resolve().parents[1] / "fixtures" / "captures" / "codebuddy_tool_bash.jsonl"
    assert '"parent_tool_use_id":"call_' in path.read_text()  # (on its tool result line: that result's own call)
    assert not any("parent_tool_use_id" in ev.data for ev in decode_capture(str(path)))


def test_two_subagents_at_once_and_one_inside_another_each_nest_under_their_own_tool_call() -> None:
    """stdout alone: two Agent calls of one answer whose subagents' lines interleave, the second subagent
    starting one of its own: each line under the tool call that started its subagent."""
    def line(kind: str, t: float, text: str, call_id: str | None = None, parent: str | None = None) -> Aside:
        return Aside(kind, t, text, int(t * 10), name="Agent" if kind == "tool_call" else None, call_id=call_id,
                     parent=parent)

    th = Thread("s", asides=[
        line("tool_call", 1.0, "A", "a"), line("tool_call", 1.1, "B", "b"),
        line("user", 1.2, "prompt A", parent="a"), line("user", 1.3, "prompt B", parent="b"),
        line("tool_call", 1.4, "C", "c", parent="b"), line("tool_result", 1.5, "A done", "x", parent="a"),
        line("user", 1.6, "prompt C", parent="c"), line("tool_result", 1.7, "C's answer", "c", parent="b"),
        line("assistant", 2.0, "both done"),
    ])
    got = [(a.text, depth) for _, a, depth in steps(th)]
    assert got == [("A", 0), ("prompt A", 1), ("A done", 1), ("B", 0), ("prompt B", 1), ("C", 1), ("prompt C", 2),
                   ("C's answer", 1), ("both done", 0)]
