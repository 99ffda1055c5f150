"""`wirecap diff` as a user runs it: exit codes like diff(1), one-line errors, the views."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import SAMPLES, run_wirecap
from test_diff import TOOLS, capture_of, rerun, sample_lines, session, write_events


def _out(p) -> str:
    return p.stdout.decode()


def test_equal_runs_print_one_line_and_exit_0(tmp_path):
    lines = sample_lines("claude_code_partial_text.jsonl")
    a = capture_of(tmp_path, "a.jsonl", lines)
    b = capture_of(tmp_path, "b.jsonl", rerun(lines, merge_deltas=True), step=0.05)
    p = run_wirecap("diff", a, b)
    assert p.returncode == 0, p.stderr
    assert _out(p).splitlines() == [_out(p).strip()]
    assert _out(p).startswith("equal: no differences")
    assert p.stderr == b""


def test_different_runs_exit_1_with_paths(tmp_path):
    a = capture_of(tmp_path, "a.jsonl", sample_lines("public/claude-agent-sdk-gleam_claude_tool_session_v2.1.3.jsonl"))
    b = capture_of(tmp_path, "b.jsonl", sample_lines("claude_code_tool_bash.jsonl"))
    p = run_wirecap("diff", a, b)
    assert p.returncode == 1, p.stderr
    out = _out(p)
    assert '~   tool_call[0].input.command: "ls -la" -> "echo hi"' in out
    assert "\x1b[" not in out  # not a terminal: no colors
    assert out.splitlines()[-1].startswith(tuple("0123456789"))  # the summary line closes the view
    colored = run_wirecap("diff", "--color", a, b)
    assert "\x1b[33m~ tool_call[0]" in _out(colored)


def test_summary_table_and_json(tmp_path):
    b_tools = [*TOOLS[:2], ("Bash", {"command": "ls -la"}, TOOLS[2][2])]
    a = write_events(tmp_path / "a.events.jsonl", session(TOOLS))
    b = write_events(tmp_path / "b.events.jsonl", session(b_tools, sid="x"))
    p = run_wirecap("diff", "--summary", a, b)
    assert p.returncode == 1
    lines = _out(p).splitlines()
    assert lines[0].split() == ["kind", "added", "removed", "changed"]
    assert lines[2].split() == ["tool_call", "0", "0", "1"]
    j = run_wirecap("diff", "--json", a, b)
    assert j.returncode == 1
    obj = orjson.loads(j.stdout)
    assert obj["channels"][0]["changes"][0]["fields"] == [{"path": "tool_call[2].input.command", "a": "ls", "b": "ls -la"}]
    ig = run_wirecap("diff", "--ignore", "tool_call[*].input.command", a, b)
    assert ig.returncode == 0 and _out(ig).startswith("equal")


def test_stats_level_and_timing(tmp_path):
    lines = sample_lines("claude_code_hello.jsonl")
    a = capture_of(tmp_path, "a.jsonl", lines, step=0.1)
    b = capture_of(tmp_path, "b.jsonl", rerun(lines), step=0.4)
    p = run_wirecap("diff", "--level", "stats", a, b)
    assert p.returncode == 0, _out(p)
    t = run_wirecap("diff", "--timing", "--threshold", "50%", a, b)
    assert t.returncode == 1
    assert "timing: ttft" in _out(t) and "over the +50% threshold" in _out(t)


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    a = capture_of(tmp_path, "a.jsonl", sample_lines("claude_code_hello.jsonl"))
    codex = capture_of(tmp_path, "codex.jsonl", sample_lines("codex_hello.jsonl"), argv=["codex", "exec", "--json", "hi"])
    cases = [
        ((a, str(tmp_path / "missing.jsonl")), "missing.jsonl: no such file"),
        ((str(SAMPLES / "claude_code_hello.jsonl"), a), "not a wirecap capture"),
        ((a, codex), "different dialects"),
        ((a, a, "--ignore", "a..b"), "bad path"),
        ((a, a, "--timing", "--threshold", "fast"), "bad timing threshold"),
    ]
    for args, msg in cases:
        p = run_wirecap("diff", *args)
        err = p.stderr.decode()
        assert p.returncode == 2, (args, err)
        assert err.count("\n") == 1 and err.startswith("wirecap: ") and msg in err, err
        assert "Traceback" not in err
        assert p.stdout == b""


def test_help():
    p = run_wirecap("diff", "--help")
    assert p.returncode == 0
    for opt in ("--level", "--ch", "--ignore", "--keep", "--chunks", "--summary", "--json", "--timing",
                "--threshold", "--context"):
        assert opt in _out(p)


def test_event_files_from_convert_match_the_capture_diff(tmp_path):
    a = capture_of(tmp_path, "a.jsonl", sample_lines("public/claude-agent-sdk-gleam_claude_tool_session_v2.1.3.jsonl"))
    b = capture_of(tmp_path, "b.jsonl", sample_lines("claude_code_tool_bash.jsonl"))
    run_wirecap("annotate", a, "look here", "--seq", "4", "--tag", "bug")  # convert interleaves note lines
    ea, eb = str(tmp_path / "a.events.jsonl"), str(tmp_path / "b.events.jsonl")
    for cap, out in ((a, ea), (b, eb)):
        c = run_wirecap("convert", cap, "-o", out)
        if c.returncode != 0:
            import pytest

            pytest.skip(f"wirecap convert unavailable: {c.stderr.decode()[:200]}")
    from_caps = run_wirecap("diff", "--json", a, b)
    from_events = run_wirecap("diff", "--json", ea, eb)
    assert from_events.returncode == from_caps.returncode == 1, from_events.stderr
    ja, jb = orjson.loads(from_caps.stdout), orjson.loads(from_events.stdout)
    assert ja["counts"] == jb["counts"]
    assert ja["by_kind"] == jb["by_kind"]


def test_lines_the_reader_skipped_are_warned_about(tmp_path):
    # A damaged capture compared "equal" in silence: the skipped line and the missing end were invisible.
    a = capture_of(tmp_path, "a.jsonl", sample_lines("claude_code_hello.jsonl"))
    lines = Path(a).read_bytes().splitlines(keepends=True)
    b = tmp_path / "b.jsonl"
    b.write_bytes(b"".join(lines[:3]) + b'{"seq": "x"}\n' + b"".join(lines[3:-1]) + lines[-1][:9])
    for fork in "10":
        for level in ("events", "wire"):
            r = run_wirecap("diff", "--level", level, a, str(b), env={"WIRECAP_DIFF_FORK": fork})
            err = r.stderr.decode()
            assert r.returncode == 0 and r.stdout.decode().startswith("equal"), (r.stdout, err)
            assert f"wirecap: warning: {b}:4: not a record (no integer seq)" in err
            assert f"wirecap: warning: {b}: interrupted capture" in err and a not in err
    r = run_wirecap("diff", "--json", str(b), a)
    assert r.returncode == 0 and any(":4: not a record" in w for w in orjson.loads(r.stdout)["warnings"])
    assert "warnings" not in orjson.loads(run_wirecap("diff", "--json", a, a).stdout)
