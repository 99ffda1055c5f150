"""QA of the whole CLI as a user meets it: every command on bad input fails with exit 2 and one
`wirecap: ...` line (never a traceback), and regressions for the problems found by using it."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest
from conftest import ROOT, run_wirecap

from wirecap.capture.reader import CaptureReader

CAPTURES = ROOT / "captures"
HELLO = CAPTURES / "claude-code-2.1.197-hello.jsonl"
TOOL = CAPTURES / "claude-code-2.1.197-tool-bash.jsonl"
CODEX = CAPTURES / "codex-0.169.0-hello.jsonl"


def one_error_line(r, *, code: int = 2) -> str:
    """The run failed with `code` and said so in exactly one `wirecap: ` line; returns that line."""
    err = r.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    assert r.returncode == code, (r.returncode, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("wirecap: "), err
    return lines[0]


def _bad_inputs(tmp: Path) -> dict[str, str]:
    (tmp / "empty.jsonl").write_bytes(b"")
    (tmp / "junk.bin").write_bytes(bytes(range(256)) * 8)
    (tmp / "text.txt").write_text("hello world\n")
    (tmp / "notcap.jsonl").write_text('{"a": 1}\n')
    (tmp / "future.jsonl").write_text('{"wirecap": 99, "type": "header"}\n')
    (tmp / "adir").mkdir()
    return {
        "missing": str(tmp / "missing.jsonl"),
        "directory": str(tmp / "adir"),
        "empty": str(tmp / "empty.jsonl"),
        "binary": str(tmp / "junk.bin"),
        "text": str(tmp / "text.txt"),
        "not-a-capture": str(tmp / "notcap.jsonl"),
        "future-version": str(tmp / "future.jsonl"),
    }


# Every command that reads a capture; CAP is replaced by the bad input.
READERS = [
    ("info", "CAP"),
    ("cat", "CAP"),
    ("convert", "CAP"),
    ("validate", "CAP"),
    ("stats", "CAP"),
    ("diff", "CAP", str(HELLO)),
    ("annotate", "CAP", "--list"),
    ("report", "CAP"),
    ("export", "CAP", "--har", "-"),
    ("replay", "exec", "CAP"),
    ("replay", "shim", "CAP", "-o", "OUT"),
    ("replay", "serve", "CAP"),
    ("replay", "client", "CAP", "--url", "http://127.0.0.1:9"),
    ("import", "-o", "OUT", "CAP"),
]


@pytest.mark.parametrize("bad", ["missing", "directory", "empty", "binary", "text", "not-a-capture",
                                 "future-version"])
def test_every_reader_fails_on_bad_input_with_one_line(tmp_path: Path, bad: str):
    path = _bad_inputs(tmp_path)[bad]
    for args in READERS:
        if args[0] == "import" and bad not in ("missing", "directory"):
            continue  # import takes any text as a transcript
        argv = [path if a == "CAP" else str(tmp_path / "out") if a == "OUT" else a for a in args]
        r = run_wirecap(*argv, timeout=30)
        line = one_error_line(r)
        assert Path(path).name in line, (argv, line)
        if bad == "directory":  # the same words whichever command reads it
            assert "is a directory" in line and "--help" not in line, (argv, line)
        assert not (tmp_path / "out").exists(), argv


USAGE_ERRORS = [
    ("info",),
    ("cat", "--bogus", str(HELLO)),
    ("nosuch",),
    ("replay", "bogus"),
    ("replay", "serve"),
    ("report", str(HELLO), "-f", "pdf"),
    ("diff", str(HELLO)),
    ("diff", str(HELLO), str(HELLO), "--context", "-1"),
    ("import", str(HELLO)),
    ("tee", "--", "true"),
    ("addon-path", "extra"),
    ("ca", "--bogus"),
    ("validate", str(HELLO), "--min-severity", "loud"),
    ("stats",),
    ("cat", str(HELLO), "--width", "-5"),  # was taken as 0 (never cut)
    ("report", str(HELLO), "--width", "-5"),  # was taken as 40
]


@pytest.mark.parametrize("args", USAGE_ERRORS, ids=lambda a: " ".join(a)[:40])
def test_usage_errors_are_one_line_naming_the_help(args):
    line = one_error_line(run_wirecap(*args))
    assert "--help" in line and "Usage:" not in line


def test_help_metavars_say_what_to_give():
    """Every option that takes a value names it (CAP, CH, NAME, N, SECONDS ...), never click's TEXT/INTEGER/FLOAT."""
    import re

    ref = (ROOT / "docs" / "commands" / "reference.md").read_text()
    assert not re.findall(r"--[\w-]+ (?:TEXT|INTEGER|FLOAT|FILENAME)\b", ref)
    assert "CAPTURE" not in ref and "[x>=" not in ref


def test_bare_group_prints_its_help():
    for args in [(), ("replay",)]:
        r = run_wirecap(*args)
        assert r.returncode == 0 and r.stdout.startswith(b"Usage: wirecap") and b"Commands:" in r.stdout


@pytest.mark.parametrize("args", [("--listen", "127.0.0.1:99999"), ("--port", "70000"), ("--listen", "x:y"),
                                  ("--ignore", "[")], ids=str)
def test_replay_serve_refuses_bad_listen_and_ignore_before_serving(args):
    # 127.0.0.1:99999 used to end in an OverflowError traceback; a bad --ignore served anyway.
    one_error_line(run_wirecap("replay", "serve", str(HELLO), *args, timeout=20))


def test_replay_serve_on_a_busy_port_says_so():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        line = one_error_line(run_wirecap("replay", "serve", str(HELLO), "--port", str(port), timeout=20))
    assert f"cannot listen on 127.0.0.1:{port}" in line


@pytest.mark.parametrize("url", ["nonsense", "http://", "ftp://127.0.0.1:9", "http://127.0.0.1:99999", "ws://[::1"])
def test_replay_client_refuses_a_url_it_cannot_use(url):
    # `--url nonsense` used to be taken as a path and sent to 127.0.0.1:80.
    line = one_error_line(run_wirecap("replay", "client", str(HELLO), "--url", url, timeout=20))
    assert line.startswith(f"wirecap: --url {url!r}")


@pytest.mark.parametrize("args", [("cat", "--ch", "nosuch"), ("cat", "--json", "--ch", "stdout", "--ch", "nosuch"),
                                  ("convert", "--ch", "nosuch"), ("replay", "exec", "--ch", "nosuch"),
                                  ("replay", "shim", "-o", "OUT", "--ch", "nosuch")], ids=" ".join)
def test_a_channel_the_capture_does_not_have_is_an_error(tmp_path: Path, args):
    # These printed nothing and exited 0: a typo in --ch looked like a quiet channel.
    argv = [str(tmp_path / "shim") if a == "OUT" else a for a in args]
    line = one_error_line(run_wirecap(*argv[:2], str(HELLO), *argv[2:]) if args[0] == "replay"
                          else run_wirecap(args[0], str(HELLO), *argv[1:]))
    assert "'nosuch'" in line and "stdout" in line
    assert not (tmp_path / "shim").exists()


def test_a_channel_filter_that_matches_still_works():
    r = run_wirecap("cat", str(HELLO), "--ch", "stdout", "--type", "msg")
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 3 and r.stderr == b""
    r = run_wirecap("convert", str(HELLO), "--ch", "proc")
    assert r.returncode == 0 and b'"kind":"session.started"' in r.stdout
    r = run_wirecap("replay", "exec", str(HELLO), "--ch", "stdout", "--speed", "0")
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 3


@pytest.mark.parametrize("args", [("convert", "CAP", "-o", "CAP"), ("report", "CAP", "-f", "md", "-o", "CAP"),
                                  ("report", "CAP", "-f", "html", "-o", "CAP"),
                                  ("export", "CAP", "--har", "CAP", "--force"),
                                  ("replay", "shim", "CAP", "-o", "CAP", "--force"),
                                  ("replay", "client", "CAP", "--url", "http://127.0.0.1:9", "-o", "CAP", "--force"),
                                  ("import", "CAP", "-o", "CAP", "--force")], ids=" ".join)
def test_output_over_the_input_capture_is_refused(tmp_path: Path, args):
    # `wirecap convert run.jsonl -o run.jsonl` emptied the capture; report/export/shim replaced it.
    cap = tmp_path / "run.jsonl"
    cap.write_bytes(CODEX.read_bytes())
    line = one_error_line(run_wirecap(*[str(cap) if a == "CAP" else a for a in args]))
    assert "refusing to overwrite" in line
    assert cap.read_bytes() == CODEX.read_bytes()


def test_convert_to_a_file_leaves_nothing_behind_on_bad_input(tmp_path: Path):
    out = tmp_path / "events.jsonl"
    one_error_line(run_wirecap("convert", str(tmp_path / "missing.jsonl"), "-o", str(out)))
    one_error_line(run_wirecap("convert", str(CODEX), "--ch", "nosuch", "-o", str(out)))
    assert list(tmp_path.iterdir()) == []
    r = run_wirecap("convert", str(CODEX), "-o", str(out))
    assert r.returncode == 0 and out.read_bytes() == run_wirecap("convert", str(CODEX)).stdout


@pytest.mark.parametrize("args", [("import", "-o", "-", str(CODEX)), ("tee", "-o", "-", "--", "true"),
                                  ("record", "-o", "-", "--", "true"),
                                  ("replay", "client", str(CODEX), "--url", "http://127.0.0.1:9", "-o", "-")],
                         ids=lambda a: " ".join(a[:2]))
def test_a_capture_cannot_go_to_stdout(tmp_path: Path, args):
    # `import -o -` wrote a file named "-" in the current folder.
    line = one_error_line(run_wirecap(*args, cwd=str(tmp_path)))
    assert line.startswith("wirecap: -o -:")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [("tee", "-o", "OUT", "--dialect", "nosuch", "--", "true"),
                                  ("record", "-o", "OUT", "--dialect", "nosuch", "--", "true"),
                                  ("import", "-o", "OUT", "--dialect", "nosuch", str(CODEX)),
                                  ("report", str(CODEX), "--dialect", "nosuch"),
                                  ("convert", str(CODEX), "--dialect", "nosuch"),
                                  ("validate", str(CODEX), "--dialect", "nosuch"),
                                  ("stats", str(CODEX), "--dialect", "nosuch"),
                                  ("annotate", str(CODEX), "--from-validate", "--dialect", "nosuch")],
                         ids=lambda a: a[0])
def test_an_unknown_dialect_is_refused_by_every_command(tmp_path: Path, args):
    # import, record and report took any name (import stored it as the hint; nothing decoded).
    out = tmp_path / "out.jsonl"
    line = one_error_line(run_wirecap(*[str(out) if a == "OUT" else a for a in args]))
    assert "unknown dialect 'nosuch'" in line and "claude-code" in line
    assert not out.exists()


def test_diff_reads_a_capture_from_stdin_or_a_pipe():
    # `wirecap diff - B` said "-: no such file"; a pipe (`<(...)`) was read twice and came out empty.
    r = run_wirecap("diff", "-", str(HELLO), input=HELLO.read_bytes())
    assert r.returncode == 0 and r.stdout.startswith(b"equal:"), r.stderr
    r = run_wirecap("diff", str(HELLO), "-", "--summary", input=TOOL.read_bytes())
    assert r.returncode == 1 and b"differences" in r.stdout, r.stderr
    import subprocess
    import sys

    script = '"$0" -m wirecap diff <("$0" -m wirecap convert "$1") <(cat "$1")'
    r = subprocess.run(["bash", "-c", script, sys.executable, str(HELLO)], capture_output=True, timeout=60)
    assert r.returncode == 2 and b"cannot compare" in r.stderr  # both pipes read: an event file vs a capture
    script = '"$0" -m wirecap diff <(cat "$1") <(cat "$1")'
    r = subprocess.run(["bash", "-c", script, sys.executable, str(HELLO)], capture_output=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith(b"equal:"), r.stderr
    r = run_wirecap("diff", "-", "-", input=HELLO.read_bytes())
    assert "only one input can be standard input" in one_error_line(r)
    line = one_error_line(run_wirecap("diff", "-", str(HELLO), input=b""))
    assert line == "wirecap: -: empty file, not a wirecap capture"


def test_record_refuses_a_listen_address_it_cannot_use(tmp_path: Path):
    # mitmproxy's own failure came out as two long lines suggesting `--mode regular@PORT` (not a wirecap option).
    import socket

    cap = tmp_path / "r.jsonl"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        line = one_error_line(run_wirecap("record", "-o", str(cap), "--listen", f"127.0.0.1:{port}", "--", "true"))
    assert line == f"wirecap: --listen 127.0.0.1:{port}: cannot listen there: Address already in use"
    line = one_error_line(run_wirecap("record", "-o", str(cap), "--listen", "no-such-host.invalid:0", "--", "true"))
    assert line.startswith("wirecap: --listen no-such-host.invalid:0: cannot listen there")
    line = one_error_line(run_wirecap("record", "-o", str(cap), "--upstream", "junk", "--", "true"))
    assert line.startswith("wirecap: --upstream 'junk'")
    assert not cap.exists()


def test_import_refuses_a_wirecap_capture_as_a_transcript(tmp_path: Path):
    # It was imported as the "stdout" of an unknown CLI: a capture of a capture, no error.
    out = tmp_path / "i.jsonl"
    line = one_error_line(run_wirecap("import", "-o", str(out), str(CODEX)))
    assert "already a wirecap capture" in line and not out.exists()
    r = run_wirecap("import", "-o", str(out), "--kind", "stdout", str(CODEX))
    assert r.returncode == 0 and out.exists()


def test_export_takes_dash_o_like_every_command_that_writes(tmp_path: Path):
    # export alone spelled its output --har; -o/--output now works there too (--har stays an alias).
    a, b = tmp_path / "a.har", tmp_path / "b.har"
    assert run_wirecap("export", str(HELLO), "-o", str(a)).returncode == 0
    assert run_wirecap("export", str(HELLO), "--har", str(b)).returncode == 0
    assert a.read_bytes() == b.read_bytes() and b'"version": "1.2"' in a.read_bytes()


def test_report_has_json_like_the_other_reading_commands():
    r = run_wirecap("report", str(CODEX), "--json")
    assert r.returncode == 0 and r.stdout == run_wirecap("report", str(CODEX), "-f", "json").stdout
    assert "two formats" in one_error_line(run_wirecap("report", str(CODEX), "--json", "-f", "md"))


def test_quiet_silences_the_summary_lines(tmp_path: Path):
    """-q/--quiet means the same on every command that prints progress: nothing on stderr when all is well."""
    stdout_sample = ROOT / "tests" / "fixtures" / "samples" / "codex_hello.jsonl"
    runs = {
        "import": ("import", "-q", "-o", str(tmp_path / "i.jsonl"), str(stdout_sample)),
        "export": ("export", "-q", str(HELLO), "-o", str(tmp_path / "x.har")),
        "shim": ("replay", "shim", "-q", str(HELLO), "-o", str(tmp_path / "bin" / "claude")),
    }
    for name, args in runs.items():
        loud = run_wirecap(*[a for a in args if a != "-q"], "--force")
        assert loud.returncode == 0 and loud.stderr.startswith(b"wirecap"), (name, loud.stderr)
        r = run_wirecap(*args, "--force")
        assert r.returncode == 0 and r.stderr == b"", (name, r.stderr)


def test_import_summary_says_one_message_not_one_messages(tmp_path: Path):
    src = tmp_path / "one.txt"
    src.write_text("hello\n")
    r = run_wirecap("import", "-o", str(tmp_path / "c.jsonl"), str(src))
    assert r.returncode == 0 and b", 1 message from 1 source(s)" in r.stderr, r.stderr


def test_report_from_stdin_is_as_complete_as_from_a_file(tmp_path: Path):
    # `report - -` was a ValueError traceback; `report -` had no message list in html and no diff with a 2nd CAP.
    assert "only one input" in one_error_line(run_wirecap("report", "-", "-", input=CODEX.read_bytes()))
    from_file, from_stdin = tmp_path / "f.html", tmp_path / "s.html"
    assert run_wirecap("report", str(CODEX), "-f", "html", "-o", str(from_file)).returncode == 0
    r = run_wirecap("report", "-", "-f", "html", "-o", str(from_stdin), input=CODEX.read_bytes())
    assert r.returncode == 0, r.stderr
    assert len(from_stdin.read_bytes()) > 0.9 * len(from_file.read_bytes())
    r = run_wirecap("report", "-", str(CODEX), "-f", "md", input=CODEX.read_bytes())
    md = r.stdout.decode()
    assert r.returncode == 0 and "**A and B are equal: equal: no differences" in md
    assert md.startswith("# wirecap report: A `-` vs B")  # (report A B's headline since h-compare)
    assert "wirecap-" not in md and "input1" not in md  # the temporary copy is never named


def test_validate_min_severity_does_not_claim_there_are_no_findings():
    # With every finding below --min-severity it printed "CAP: no findings".
    import json

    cap = CAPTURES / "codebuff-sdk-0.10.7-http.jsonl"  # info findings only
    found = json.loads(run_wirecap("validate", str(cap), "--json").stdout)
    assert found and all(f["severity"] != "error" for f in found)
    r = run_wirecap("validate", str(cap), "--min-severity", "error")
    out = r.stdout.decode()
    assert r.returncode == 0 and f"no findings of severity error or above ({len(found)} below it hidden" in out, out


@pytest.mark.parametrize("args", [("replay", "exec", str(HELLO), "--speed", "nan"),
                                  ("replay", "exec", str(HELLO), "--max-wait", "nan"),
                                  ("validate", "CAP", "--gap", "nan"),
                                  ("annotate", "CAP", "--seq", "99999999999999999999", "x"),
                                  ("annotate", "CAP", "--seq", "1", "--to", "99999999999999999999", "x")],
                         ids=lambda a: " ".join(a[-3:]))
def test_out_of_range_numbers_are_one_line_errors(tmp_path: Path, args):
    # --speed nan: ValueError traceback from time.sleep; --seq beyond 64 bits: TypeError from orjson;
    # validate --gap nan silently turned the rule off.
    cap = tmp_path / "run.jsonl"
    cap.write_bytes(HELLO.read_bytes())
    line = one_error_line(run_wirecap(*[str(cap) if a == "CAP" else a for a in args]))
    assert ("nan" in line) or ("past the end" in line)
    assert not (tmp_path / "run.notes.jsonl").exists()


def test_record_quiet_prints_nothing_when_all_is_well(tmp_path: Path):
    cmd = ("--", sys.executable, "-c", "print('hi')")
    loud = run_wirecap("record", "-o", str(tmp_path / "a.jsonl"), *cmd, timeout=90)
    assert loud.returncode == 0 and b"wirecap: set HTTPS_PROXY=" in loud.stderr, loud.stderr
    quiet = run_wirecap("record", "-q", "-o", str(tmp_path / "b.jsonl"), *cmd, timeout=90)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, b"hi\n", b"")
    with CaptureReader(tmp_path / "b.jsonl") as r:
        assert [rec["text"] for rec in r if rec.get("type") == "msg"] == ["hi"]


def test_stats_ch_selects_sessions_and_refuses_unknown_channels():
    cap = ROOT / "captures" / "claude-code-2.1.197-tool-bash.jsonl"
    r = run_wirecap("stats", "--json", "--ch", "stdout", "--ch", "http-3", str(cap))
    assert r.returncode == 0, r.stderr
    assert [(s["ch"], s["dialect"]) for s in orjson.loads(r.stdout)] == [("proc", "claude-code"),
                                                                          ("http-3", "anthropic-sse")]
    r = run_wirecap("stats", "--ch", "nope", str(cap))
    assert (r.returncode, r.stdout) == (2, b"")
    assert r.stderr.decode() == (f"wirecap: {cap}: no channel 'nope' "
                                 "(channels: http-1, http-2, http-3, proc, stderr, stdout)\n")
