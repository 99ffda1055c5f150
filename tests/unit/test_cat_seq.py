"""`wirecap cat --seq N|A-B`: what an HTML report points to for a record it shows cut or leaves out."""

from __future__ import annotations

import orjson
from conftest import ROOT

from wirecap.cli.inprocess import run

CAP = str(ROOT / "captures/claude-code-2.1.197-tool-bash.jsonl")


def test_seq_prints_that_record_whole() -> None:
    code, out, err = run(["cat", CAP, "--seq", "5", "--json"])
    lines = out.splitlines()
    assert code == 0 and err == b""
    assert len(lines) == 2 and orjson.loads(lines[1])["seq"] == 5  # the header, then record 5 as in the file
    with open(CAP, "rb") as f:
        assert lines[1] == f.read().splitlines()[5]


def test_ranges_and_repeats() -> None:
    code, out, _ = run(["cat", CAP, "--seq", "3-4", "--seq", "9", "--json"])
    assert code == 0
    assert [orjson.loads(x)["seq"] for x in out.splitlines()[1:]] == [3, 4, 9]
    code, out, _ = run(["cat", CAP, "--seq", "4-3", "--width", "0"])
    assert code == 0 and len(out.splitlines()) == 2


def test_a_bad_seq_is_refused() -> None:
    code, _, err = run(["cat", CAP, "--seq", "x"])
    assert code == 2 and b"give a seq N or a range A-B" in err


def test_a_channel_opened_after_the_last_seq_still_exists_and_a_typo_is_still_an_error() -> None:
    # reading stops at the last --seq; http-2 opens after seq 2: it exists, nothing of it is in range
    code, out, err = run(["cat", CAP, "--seq", "2", "--ch", "http-2", "--json"])
    assert code == 0 and err == b"" and len(out.splitlines()) == 1  # the header only
    code, out, _ = run(["cat", CAP, "--seq", "9", "--ch", "http-2", "--json"])
    assert code == 0 and [orjson.loads(x)["seq"] for x in out.splitlines()[1:]] == [9]
    code, _, err = run(["cat", CAP, "--seq", "2", "--ch", "http-9"])
    assert code == 2 and b"no channel 'http-9'" in err and b"http-3" in err  # (every channel listed: read to the end)
