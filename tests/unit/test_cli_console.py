"""The terminal as a good citizen, in process: tables fitted to a width (columns wrap or go by priority,
numbers are never cut), color decided by --color / NO_COLOR / FORCE_COLOR, the pager's command, "did you
mean" for a mistyped subcommand. What needs a real terminal (the pager running, color auto, progress) is in
tests/integration/test_cli_terminal.py."""

from __future__ import annotations

import io
import re
from pathlib import Path

import orjson
import pytest
from conftest import ROOT, run_wirecap

from wirecap.analysis.tables import Col, fit_table
from wirecap.cli import console

CAPTURES = sorted(p for p in (ROOT / "captures").glob("*.jsonl"))
TOOL = ROOT / "captures" / "claude-code-2.1.197-tool-bash.jsonl"
FALLBACK = ROOT / "captures" / "codex-0.169.0-ws-fallback.jsonl"


def widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


# --- fit_table ----------------------------------------------------------------------------------------

COLS = [Col("name"), Col("count"), Col("note", 1, floor=10), Col("extra", 5), Col("cost $", 2)]
ROWS = [["alpha", 123456789, "a rather long note that has to wrap somewhere", "x" * 30, "0.19767"],
        ["beta", 7, "short", "y", "-"]]


@pytest.mark.parametrize("width", [30, 40, 50, 60, 80, 100, 200])
def test_a_table_fits_and_keeps_every_number_whole(width):
    text = fit_table(COLS, ROWS, width)
    assert widest(text) <= width, text
    assert "123456789" in text  # a number is never cut nor wrapped
    assert "…" not in text


def test_least_important_columns_go_first_and_are_named():
    text = fit_table(COLS, ROWS, 60)
    assert "extra" not in text.splitlines()[0]
    assert "not shown to fit 60 columns: extra" in text
    assert "cost $" in text and "0.19767" in text  # drop 2: kept while text can still wrap


def test_text_wraps_onto_more_lines_when_the_column_is_squeezed():
    text = fit_table(COLS, ROWS, 50)
    assert "a rather long note that has to wrap somewhere" not in text
    words = " ".join(line[text.splitlines()[0].index("note"):].strip() for line in text.splitlines())
    assert "wrap somewhere" in words or "somewhere" in text  # every word still there


def test_without_a_width_every_column_is_whole():
    text = fit_table(COLS, ROWS, None)
    assert "x" * 30 in text and "a rather long note that has to wrap somewhere" in text
    assert "not shown" not in text


def test_numbers_are_right_aligned_and_text_left():
    lines = fit_table([Col("name"), Col("n")], [["a", 5], ["bb", 12345]], None).splitlines()
    assert lines[2] == "a         5"
    assert lines[3] == "bb    12345"


def test_cut_columns_end_with_an_ellipsis():
    text = fit_table([Col("ch"), Col("endpoint", 0, "cut", floor=8), Col("n")],
                     [["http-1", "POST http://127.0.0.1:43153/v1/messages?beta=true", 1]], 30)
    assert "…" in text and widest(text) <= 30


# --- the commands at 80 columns (today 151-318 wide) ---------------------------------------------------

@pytest.mark.parametrize("cap", CAPTURES, ids=lambda p: p.name)
@pytest.mark.parametrize("command", [["info"], ["stats"], ["validate"], ["stats", "--calls"]])
def test_commands_fit_80_columns(cap: Path, command):
    p = run_wirecap(*command, str(cap), env={"COLUMNS": "80"})
    assert p.returncode in (0, 1), p.stderr
    assert widest(p.stdout.decode()) <= 80, p.stdout.decode()


@pytest.mark.parametrize("cap", [TOOL, FALLBACK], ids=lambda p: p.name)
def test_report_term_fits_80_columns(cap: Path):
    p = run_wirecap("report", str(cap), env={"COLUMNS": "80"})
    assert p.returncode == 0, p.stderr
    # the tables and the words (a conversation line may hold one long unbreakable word, e.g. a URL)
    lines = p.stdout.decode().split("-- conversation --")[0].splitlines()
    assert max(len(line) for line in lines) <= 80


def test_stats_at_80_columns_keeps_the_tokens_whole():
    p = run_wirecap("stats", str(TOOL), env={"COLUMNS": "80"})
    sessions = orjson.loads(run_wirecap("stats", "--json", str(TOOL)).stdout)
    text = p.stdout.decode()
    for s in sessions:
        for usage in s["models_usage"].values():
            assert re.search(rf"\b{usage['prompt_tokens']}\b", text), text


def test_piped_output_without_columns_is_not_cut():
    p = run_wirecap("validate", str(FALLBACK), env={"COLUMNS": ""})
    line = [x for x in p.stdout.decode().splitlines() if x.startswith("warning")][0]
    assert "simulated server_error (the wire: call 2 on ws-1 failed" in line


# --- color -------------------------------------------------------------------------------------------

class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("when", "env", "tty", "expected"), [
    ("always", {"NO_COLOR": "1"}, False, True),
    ("never", {"FORCE_COLOR": "1"}, True, False),
    (None, {"NO_COLOR": "1"}, True, False),
    (None, {"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False),
    (None, {"FORCE_COLOR": "1"}, False, True),
    (None, {"FORCE_COLOR": "0"}, True, False),
    (None, {"NO_COLOR": ""}, True, True),  # empty: unset (no-color.org)
    (None, {}, True, True),
    (None, {}, False, False),
    (None, {"TERM": "dumb"}, True, False),
])
def test_color_wanted(monkeypatch, when, env, tty, expected):
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    stream = _Tty() if tty else io.StringIO()
    assert console.color_wanted(when, stream) is expected


def test_validate_colors_by_severity_only_when_asked():
    plain = run_wirecap("validate", str(FALLBACK), env={"NO_COLOR": ""})
    assert b"\x1b[" not in plain.stdout
    forced = run_wirecap("validate", str(FALLBACK), env={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert b"\x1b[1;31merror" in forced.stdout
    never = run_wirecap("--color", "never", "validate", str(FALLBACK), env={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert b"\x1b[" not in never.stdout
    asked = run_wirecap("validate", "--color", "always", str(FALLBACK), env={"NO_COLOR": "1"})
    assert b"\x1b[33mwarning" in asked.stdout


def test_no_color_environment_turns_diff_colors_off():
    a, b = str(TOOL), str(ROOT / "captures" / "claude-code-2.1.197-hello.jsonl")
    assert b"\x1b[" in run_wirecap("diff", a, b, env={"FORCE_COLOR": "1", "NO_COLOR": ""}).stdout
    assert b"\x1b[" not in run_wirecap("diff", a, b, env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout
    assert b"\x1b[" not in run_wirecap("diff", "--no-color", a, b, env={"FORCE_COLOR": "1"}).stdout


@pytest.mark.parametrize(("args", "expected"), [
    (["diff", "--color", "a", "b"], ["diff", "--color=always", "a", "b"]),
    (["diff", "--color", "never", "a"], ["diff", "--color", "never", "a"]),
    (["diff", "a", "--color"], ["diff", "a", "--color=always"]),
    (["record", "--", "x", "--color", "y"], ["record", "--", "x", "--color", "y"]),
])
def test_color_alone_is_always(args, expected):
    assert console.normalize_color_argument(args) == expected


# --- pager and columns ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("env", "expected"), [
    ({}, "less"), ({"PAGER": "more"}, "more"), ({"PAGER": ""}, None), ({"PAGER": "cat"}, None),
    ({"WIRECAP_PAGER": "most", "PAGER": "more"}, "most"), ({"WIRECAP_PAGER": ""}, None),
])
def test_pager_command(monkeypatch, env, expected):
    for name in ("WIRECAP_PAGER", "PAGER"):
        monkeypatch.delenv(name, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert console.pager_command() == expected


def test_columns_from_the_environment_else_none_for_a_pipe(monkeypatch):
    monkeypatch.setenv("COLUMNS", "93")
    assert console.columns(io.StringIO()) == 93
    monkeypatch.setenv("COLUMNS", "")
    assert console.columns(io.StringIO()) is None


# --- did you mean ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("typed", "meant"), [("stat", "stats"), ("valdate", "validate"), ("reprot", "report"),
                                              ("inf", "info")])
def test_a_mistyped_subcommand_gets_did_you_mean(typed, meant):
    p = run_wirecap(typed, str(TOOL))
    assert p.returncode == 2
    err = p.stderr.decode()
    assert err.count("\n") == 1 and err.startswith(f"wirecap: No such command '{typed}'. Did you mean ")
    assert f"'{meant}'" in err.split("Did you mean", 1)[1]


def test_an_unknown_subcommand_without_a_neighbour_says_so():
    p = run_wirecap("zzzz")
    assert p.returncode == 2
    assert p.stderr.decode() == "wirecap: No such command 'zzzz' (see 'wirecap --help')\n"


@pytest.mark.parametrize("cols", [50, 80])
def test_diff_stats_table_fits_and_keeps_metric_names_whole(cols):
    a, b = str(TOOL), str(ROOT / "captures" / "claude-code-2.1.197-hello.jsonl")
    text = run_wirecap("diff", "--level", "stats", a, b, env={"COLUMNS": str(cols)}).stdout.decode()
    assert widest(text) <= cols, text
    assert "*prompt_tokens" in text and "39464" in text and "19683" in text


def test_several_captures_name_each_once_by_its_end_on_a_terminal():
    other = ROOT / "captures" / "codex-0.169.0-ws-fallback.jsonl"
    text = run_wirecap("stats", str(TOOL), str(other), env={"COLUMNS": "80"}).stdout.decode()
    assert widest(text) <= 80, text
    firsts = [line.split()[0] for line in text.splitlines()[3:] if line and not line.startswith(" ")]
    assert [f for f in firsts if f.endswith(".jsonl")] == [f for f in firsts if f.startswith("…")]
    assert sum(1 for f in firsts if f.startswith("…")) == 2  # one name per capture
    piped = run_wirecap("stats", str(TOOL), str(other), env={"COLUMNS": ""}).stdout.decode()
    assert sum(1 for line in piped.splitlines() if line.startswith(str(TOOL))) == 4  # every row, whole


def test_report_of_two_captures_fits_80_columns():
    other = ROOT / "captures" / "claude-code-2.1.197-hello.jsonl"
    text = run_wirecap("report", str(TOOL), str(other), env={"COLUMNS": "80"}).stdout.decode()
    assert widest(text) <= 80, text
    assert "(first difference at character 303)" in text  # wrapped, not cut


# --- progress ------------------------------------------------------------------------------------------------

def test_reading_progress_draws_from_a_timer_not_a_thread(monkeypatch):
    """diff forks its side B only while the process has one thread (analysis.sides.can_fork): the progress
    line must not add one. The timer's tick draws the line; the end erases it and puts SIGALRM back."""
    import signal
    import threading

    monkeypatch.setenv("WIRECAP_PROGRESS_DELAY", "0")
    monkeypatch.delenv("WIRECAP_PROGRESS", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    err = _Tty()
    monkeypatch.setattr("sys.stderr", err)
    before = signal.getsignal(signal.SIGALRM)
    threads = threading.active_count()
    with console.reading("stats", [str(TOOL)]) as watching:
        assert watching.progress.enabled
        assert threading.active_count() == threads
        assert signal.getsignal(signal.SIGALRM) == watching.progress._tick
        watching.progress._tick(signal.SIGALRM, None)  # what the interval timer does every 0.2 s
    text = err.getvalue()
    assert text.startswith("\r\x1b[Kwirecap stats: reading claude-code-2.1.197-tool-bash.jsonl")
    assert text.endswith("\r\x1b[K")
    assert signal.getsignal(signal.SIGALRM) == before


def test_reading_progress_counts_the_bytes_read_from_the_open_file(monkeypatch):
    monkeypatch.setenv("WIRECAP_PROGRESS_DELAY", "9")
    with console.ReadingProgress("stats", [str(TOOL)], enabled=False) as watching, open(TOOL, "rb", buffering=0) as f:
        f.read(1000)
        line = watching.progress.line()
    assert watching.progress.done == 1000
    assert f"of {TOOL.stat().st_size / 1024:.1f} KB" in line


def test_wide_characters_take_two_cells():
    from wirecap.analysis.tables import FINDING_COLUMNS, cells_of

    rows = [["error", "rule-x", 12, "ws-1", "模型返回了一个错误：服务器过载，请稍后再试。这是一个很长的中文消息。"],
            ["warning", "r", 3, "http-1", "emoji 🎉🎉🎉 party and some words to wrap around the column nicely"]]
    text = fit_table(FINDING_COLUMNS, rows, 60)
    assert max(cells_of(line) for line in text.splitlines()) <= 60, text
    assert "words to wrap" in text  # words stay whole beside wide characters
    assert "".join(line[31:] for line in text.splitlines()[2:6]).startswith("模型返回了一个错误")
