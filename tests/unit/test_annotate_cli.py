"""`wirecap annotate` (the CLI, run in-process): add, list, remove, --from-validate, and bad input."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import orjson
import pytest
from conftest import run_wirecap

from wirecap.capture.writer import CaptureWriter


def ws_capture(path: Path, n: int = 6, unacked: int | None = 3) -> Path:
    """A Codebuff WebSocket conversation whose txid `unacked` never gets an ack (a validation error)."""
    with CaptureWriter(path) as w:
        w.open("ws-1", "ws", url="ws://127.0.0.1:4242/ws", headers={})
        for i in range(n):
            w.msg("ws-1", "c2s", json.dumps({"type": "action", "txid": i, "data": {"type": "user-input", "messages": [
                {"role": "user", "content": "hi"}]}}))
            if i != unacked:
                w.msg("ws-1", "s2c", json.dumps({"type": "ack", "txid": i, "success": True}))
        w.close_channel("ws-1", code=1000, reason="", by="client")
    return path


def ok(*args: str, env: dict[str, str] | None = None) -> str:
    r = run_wirecap("annotate", *args, env=env)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode()


def fail(*args: str) -> str:
    r = run_wirecap("annotate", *args)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    err = r.stderr.decode()
    assert err.startswith("wirecap: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.fixture
def cap(tmp_path: Path) -> Path:
    return ws_capture(tmp_path / "run.jsonl")


def test_add_list_json_and_remove(cap: Path):
    before = hashlib.sha256(cap.read_bytes()).hexdigest()
    out = ok(str(cap), "--seq", "4", "--tag", "bug", "no ack for txid 1", "--author", "Ann")
    nid = out.split()[0]
    ok(str(cap), "--seq", "2", "--to", "5", "--ch", "ws-1", "--tag", "question", "why?", env={"WIRECAP_AUTHOR": "Env Author"})
    ok(str(cap), "--ch", "ws-1", "--tag", "expected", "whole channel")
    table = ok(str(cap), "--list")
    assert "no ack for txid 1" in table and "seq 2-5, ch ws-1" in table and "Env Author" in table and "Ann" in table
    rows = [orjson.loads(x) for x in ok(str(cap), "--list", "--json").splitlines()]
    assert [r["tag"] for r in rows] == ["bug", "question", "expected"]
    assert rows[0]["id"] == nid and rows[0]["seq"] == 4 and rows[0]["author"] == "Ann"
    assert "removed note " + nid in ok(str(cap), "--rm", nid)
    rows = [orjson.loads(x) for x in ok(str(cap), "--list", "--json").splitlines()]
    assert [r["tag"] for r in rows] == ["question", "expected"]
    assert hashlib.sha256(cap.read_bytes()).hexdigest() == before
    assert (cap.parent / "run.notes.jsonl").read_bytes().count(b"\n") == 4


def test_from_validate_is_idempotent(cap: Path):
    first = ok(str(cap), "--from-validate")
    assert first.startswith("1 note(s) added"), first
    rows = [orjson.loads(x) for x in ok(str(cap), "--list", "--json").splitlines()]
    assert len(rows) == 1 and rows[0]["tag"] == "error" and rows[0]["text"].startswith("cb-ack-missing:")
    assert rows[0]["seq"] == 8  # the c2s frame with txid 3: open, (c2s, ack) x 3, then it
    again = ok(str(cap), "--from-validate")
    assert again.startswith("0 note(s) added"), again
    assert len(ok(str(cap), "--list", "--json").splitlines()) == 1


def test_bad_input_is_one_line_and_exit_2(cap: Path, tmp_path: Path):
    assert "no such file" in fail(str(tmp_path / "nope.jsonl"), "--seq", "1", "x")
    assert "seq 99 is past the end of the capture (last seq 14)" in fail(str(cap), "--seq", "99", "--tag", "bug", "x")
    assert "unknown channel 'ws-7'" in fail(str(cap), "--ch", "ws-7", "x")
    assert "no note with id" in fail(str(cap), "--rm", "deadbeef")
    assert "say what the note is about" in fail(str(cap), "hello")
    assert "give one of" in fail(str(cap), "--list", "--rm", "x")
    notcap = tmp_path / "plain.jsonl"
    notcap.write_text('{"hello": 1}\n')
    assert "not a wirecap capture" in fail(str(notcap), "--seq", "1", "x")
    assert not (cap.parent / "run.notes.jsonl").exists()


def test_list_warns_about_notes_past_the_end(cap: Path):
    side = cap.parent / "run.notes.jsonl"
    side.write_text(json.dumps({"op": "add", "id": "abcd1234", "seq": 900, "tag": "bug", "text": "far",
                                "author": "a", "time": "2026-01-01T00:00:00Z"}) + "\n")
    r = run_wirecap("annotate", str(cap), "--list")
    assert r.returncode == 0
    assert "note abcd1234: seq 900 is past the end of the capture (last seq 14)" in r.stderr.decode()
    assert "far" in r.stdout.decode()


def test_list_fits_the_terminal_width(cap: Path):
    """`--list` is laid out by the one table layout (`tables.fit_table`): fitted to COLUMNS (the text wraps,
    the least needed columns go, a line says which), whole lines in a pipe."""
    long = "a long note " + " ".join(f"word{i}" for i in range(40))
    ok(str(cap), "--seq", "4", "--tag", "bug", long, "--author", "Ann Author-With-A-Long-Name")
    ok(str(cap), "--ch", "ws-1", "short one", "--author", "Bo")
    for width in (60, 80):
        table = ok(str(cap), "--list", env={"COLUMNS": str(width)})
        lines = table.splitlines()
        assert max(len(line) for line in lines) <= width, table
        head = table.split("\n--", 1)[0].split()  # (a header may wrap onto two lines)
        assert {"id", "points", "at", "tag", "text"} <= set(head), table
        assert " ".join(table.split()).count("word39") == 1 and len(lines) > 4  # the text wrapped, not cut
        assert "seq 4" in table and "ch ws-1" in table and "short one" in table
    assert "(not shown to fit 60 columns: time (UTC); see --json)" in ok(str(cap), "--list", env={"COLUMNS": "60"})
    whole = ok(str(cap), "--list").splitlines()  # a pipe: one line per note, every column
    assert len(whole) == 4 and long in whole[2] and "Ann Author-With-A-Long-Name" in whole[2]
