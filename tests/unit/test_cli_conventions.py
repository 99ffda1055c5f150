"""One set of conventions across commands: -f is --format (cat's follow is -F), every -o refuses to
overwrite without --force, file arguments complete as files in the shell (click's completion), --json
is documented on every command page that has it."""

from __future__ import annotations

import os
import re

import click
import pytest
from click.shell_completion import ShellComplete
from conftest import ROOT, run_wirecap

from wirecap.cli import COMMANDS, cli

HELLO = ROOT / "captures" / "claude-code-2.1.197-hello.jsonl"


# --- -f is --format ------------------------------------------------------------------------------------

def test_cat_f_is_format():
    text = run_wirecap("cat", "-f", "text", "--width", "0", str(HELLO))
    raw = run_wirecap("cat", "-f", "json", str(HELLO))
    assert text.returncode == raw.returncode == 0
    assert raw.stdout == run_wirecap("cat", "--json", str(HELLO)).stdout
    assert raw.stdout.startswith(b'{"wirecap":1') and b"+ open" in text.stdout


def test_cat_f_with_a_capture_says_where_follow_went():
    p = run_wirecap("cat", "-f", str(HELLO))
    assert p.returncode == 2
    err = p.stderr.decode()
    assert err.count("\n") == 1 and "-f is --format (text or json); to follow a growing capture use -F" in err


def test_cat_capital_f_follows_to_the_end_record():
    p = run_wirecap("cat", "-F", "--width", "0", str(HELLO), timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.decode().rstrip().splitlines()[-1].split()[3] == "="  # the end record closes it


def test_every_f_means_format():
    for name in COMMANDS:
        cmd = cli.get_command(click.Context(cli), name)
        for param in getattr(cmd, "params", []):
            if "-f" in getattr(param, "opts", []):
                assert "--format" in param.opts, (name, param.opts)


# --- -o and --force ----------------------------------------------------------------------------------

WRITERS = [
    ("convert", ["convert", "-o", "{out}", str(HELLO)]),
    ("report md", ["report", "-f", "md", "-o", "{out}", str(HELLO)]),
    ("report html", ["report", "-f", "html", "-o", "{out}", str(HELLO)]),
    ("export", ["export", "-q", "-o", "{out}", str(HELLO)]),
    ("import", ["import", "-q", "--kind", "stdout", "-o", "{out}",
                str(ROOT / "tests" / "fixtures" / "samples" / "claude_code_hello.jsonl")]),
]


@pytest.mark.parametrize(("name", "argv"), WRITERS, ids=[w[0] for w in WRITERS])
def test_every_o_refuses_to_overwrite_without_force(tmp_path, name, argv):
    out = tmp_path / "out.file"
    out.write_text("precious\n")
    args = [a.replace("{out}", str(out)) for a in argv]
    p = run_wirecap(*args)
    assert p.returncode == 2, p.stderr
    assert p.stderr.decode() == f"wirecap: {out}: exists; refusing to overwrite it (use --force)\n" or \
        "refusing to overwrite it (use --force)" in p.stderr.decode()
    assert out.read_text() == "precious\n"
    forced = run_wirecap(*args[:1], "--force", *args[1:])
    assert forced.returncode == 0, forced.stderr
    assert out.read_text() != "precious\n"


def test_every_o_option_has_force():
    for name in COMMANDS:
        cmd = cli.get_command(click.Context(cli), name)
        for sub in getattr(cmd, "commands", {}).values() or [cmd]:
            opts = {o for p in getattr(sub, "params", []) for o in getattr(p, "opts", [])}
            if "-o" in opts:
                assert "--force" in opts, (name, sub.name)


def test_report_html_beside_the_capture_is_replaced(tmp_path):
    cap = tmp_path / "run.jsonl"
    cap.write_bytes(HELLO.read_bytes())
    for _ in range(2):
        p = run_wirecap("report", "-f", "html", str(cap))
        assert p.returncode == 0, p.stderr
    assert (tmp_path / "run.report.html").exists()


# --- shell completion ----------------------------------------------------------------------------------

def complete(words: list[str], incomplete: str) -> list[tuple[str, str]]:
    comp = ShellComplete(cli, {}, "wirecap", "_WIRECAP_COMPLETE")
    return [(c.type, c.value) for c in comp.get_completions(words, incomplete)]


@pytest.mark.parametrize("words", [["info"], ["cat"], ["validate"], ["stats"], ["stats", "a.jsonl"], ["diff"],
                                   ["diff", "a.jsonl"], ["report"], ["report", "-o"], ["convert", "-o"],
                                   ["export"], ["annotate"], ["replay", "serve"], ["replay", "exec"],
                                   ["record", "-o"], ["tee", "-o"], ["import", "-o"], ["import"]])
def test_a_file_argument_completes_as_files(words):
    assert complete(words, "cap") == [("file", "cap")]


def test_subcommands_and_options_still_complete():
    assert ("plain", "stats") in complete([], "sta")
    assert ("plain", "--json") in complete(["info"], "--j")


def test_completion_of_a_mistyped_command_does_not_fail():
    assert complete(["stat"], "x") == []


# --- --json is documented per command --------------------------------------------------------------------

def test_every_json_option_is_documented_on_its_page():
    pages = ROOT / "docs" / "commands"
    for name in COMMANDS:
        cmd = cli.get_command(click.Context(cli), name)
        opts = {o for p in getattr(cmd, "params", []) for o in getattr(p, "opts", [])}
        if "--json" not in opts:
            continue
        page = pages / f"{name}.md"
        assert page.exists(), name
        text = page.read_text()
        assert re.search(r"^#+ .*--json", text, re.M), f"{page.name}: no section on --json output"


def test_completion_is_documented():
    text = (ROOT / "docs" / "howto" / "shell-completion.md").read_text()
    for shell in ("bash", "zsh", "fish"):
        assert f"_WIRECAP_COMPLETE={shell}_source" in text
    assert os.path.exists(ROOT / "docs" / "howto" / "shell-completion.md")
