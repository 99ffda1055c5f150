"""Notes: the model, the append-only sidecar with tombstones, checks against the capture."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wirecap.analysis import notes as N
from wirecap.analysis.validate import Finding
from wirecap.capture.writer import CaptureWriter
from wirecap.errors import WirecapError


def small_capture(path: Path, n: int = 5) -> Path:
    with CaptureWriter(path) as w:
        w.open("ws-1", "ws", url="ws://127.0.0.1:1/ws", headers={})
        for i in range(n):
            w.msg("ws-1", "c2s" if i % 2 == 0 else "s2c", f'{{"i": {i}}}'.encode())
        w.close_channel("ws-1", code=1000, reason="", by="client")
    return path  # records: open, n msgs, close, end -> last seq n + 3


def digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_notes_path_sits_beside_the_capture():
    assert N.notes_path("/x/run.jsonl") == "/x/run.notes.jsonl"
    assert N.notes_path("/x/run.jsonl.gz") == "/x/run.notes.jsonl"
    assert N.notes_path("/x/run.jsonl.zst") == "/x/run.notes.jsonl"
    assert N.notes_path("/x/run") == "/x/run.notes.jsonl"
    with pytest.raises(WirecapError):
        N.notes_path("-")


def test_note_json_round_trip_and_coverage():
    n = N.make_note(tag="bug", text="no ack for txid 7", author="ann", seq=42, seq_end=50, ch="ws-1",
                    time="2026-01-01T00:00:00.000000Z")
    back = N.Note.from_json(orjson.loads(orjson.dumps(n.to_json())))
    assert back == n and back.id == n.id and len(n.id) == 8
    assert n.covers(42, "ws-1") and n.covers(50) and not n.covers(51) and not n.covers(45, "ws-2")
    assert n.target() == "seq 42-50, ch ws-1"
    whole = N.make_note(tag="expected", text="noisy", author="a", ch="stderr")
    assert whole.covers(3, "stderr") and not whole.covers(3, "stdout")
    assert N.make_note(tag="bug", text="x", author="a", seq=3, seq_end=3).seq_end is None


@pytest.mark.parametrize("kw, msg", [
    ({}, "must point at"),
    ({"seq": 0}, "start at 1"),
    ({"seq": 5, "seq_end": 4}, "before --seq"),
    ({"seq_end": 4, "ch": "x"}, "--to needs --seq"),
    ({"seq": 1, "tag": "two words"}, "one word"),
])
def test_make_note_refuses_bad_shapes(kw, msg):
    kw = {"tag": "bug", **kw}
    with pytest.raises(WirecapError, match=msg):
        N.make_note(text="t", author="a", **kw)


def test_add_list_remove_round_trip_keeps_capture_untouched(tmp_path):
    cap = small_capture(tmp_path / "run.jsonl")
    before = digest(cap)
    a = N.add_note(cap, tag="bug", text="first", seq=2, author="ann")
    b = N.add_note(cap, tag="question", text="range", seq=2, seq_end=4, ch="ws-1", author="bob")
    c = N.add_note(cap, tag="expected", text="channel", ch="ws-1", author="cy")
    side = Path(N.notes_path(cap))
    assert stat.S_IMODE(side.stat().st_mode) == 0o600
    assert [n.id for n in N.load_notes(cap)] == [a.id, b.id, c.id]
    removed = N.remove_note(cap, b.id[:5], author="ann")  # a unique prefix works
    assert removed.id == b.id
    assert [n.id for n in N.load_notes(cap)] == [a.id, c.id]
    lines = side.read_bytes().splitlines()
    assert len(lines) == 4 and orjson.loads(lines[-1])["op"] == "rm"  # append-only: tombstone added
    assert digest(cap) == before  # the capture is evidence: never rewritten
    with pytest.raises(WirecapError, match="no note with id"):
        N.remove_note(cap, b.id)


def test_add_note_checks_the_capture(tmp_path):
    cap = small_capture(tmp_path / "run.jsonl", n=3)  # last seq 6
    with pytest.raises(WirecapError, match="seq 7 is past the end .*last seq 6"):
        N.add_note(cap, tag="bug", text="x", seq=7, author="a")
    with pytest.raises(WirecapError, match="seq 9 is past the end"):
        N.add_note(cap, tag="bug", text="x", seq=2, seq_end=9, author="a")
    with pytest.raises(WirecapError, match="unknown channel 'ws-9'"):
        N.add_note(cap, tag="bug", text="x", ch="ws-9", author="a")
    with pytest.raises(WirecapError, match="no such file"):
        N.add_note(tmp_path / "missing.jsonl", tag="bug", text="x", seq=1, author="a")
    assert not Path(N.notes_path(cap)).exists()


def test_sidecar_pointing_past_the_end_is_warned_about(tmp_path):
    cap = small_capture(tmp_path / "run.jsonl", n=2)
    far = N.make_note(tag="bug", text="from a longer capture", author="a", seq=500)
    N.add_notes(cap, [far])
    notes = N.load_notes(cap)
    last, chans = N.capture_extent(cap)
    warns = N.check_notes(notes, last, chans, N.notes_path(cap))
    assert warns == [f"{N.notes_path(cap)}: note {far.id}: seq 500 is past the end of the capture (last seq 5)"]


def test_torn_and_corrupt_lines_are_reported_not_fatal(tmp_path):
    cap = small_capture(tmp_path / "run.jsonl")
    good = N.add_note(cap, tag="bug", text="ok", seq=1, author="a")
    side = Path(N.notes_path(cap))
    with open(side, "ab") as f:
        f.write(b'{"op":"rm","id":"nope"}\n{"op":"add","id":"x1"}\n{"op":"add","id":"tor')
    problems: list[str] = []
    notes = N.load_notes(cap, problems=problems)
    assert [n.id for n in notes] == [good.id]
    assert any("tombstone for unknown note nope" in p for p in problems)
    assert any("points at nothing" in p for p in problems)
    assert any(p.endswith("torn last line (ignored)") for p in problems)
    # The next append closes the torn line first, so the new note is readable.
    later = N.add_note(cap, tag="bug", text="after crash", seq=2, author="a")
    assert [n.id for n in N.load_notes(cap)] == [good.id, later.id]


def test_from_findings_is_idempotent():
    findings = [Finding("error", "cb-ack-missing", "txid 3 never acked", 7, "ws-1"),
                Finding("warning", "unparsed", "?", 9, "ws-1"),
                Finding("info", "capture-wide", "no seq", None, None)]
    first = N.notes_from_findings(findings, [], author="bot")
    assert [(n.tag, n.seq, n.text) for n in first] == [("error", 7, "cb-ack-missing: txid 3 never acked"),
                                                       ("warning", 9, "unparsed: ?")]
    assert N.notes_from_findings(findings, first, author="bot") == []


def test_default_author_prefers_the_environment(monkeypatch):
    monkeypatch.setenv("WIRECAP_AUTHOR", "Grace")
    assert N.default_author() == "Grace"
    monkeypatch.delenv("WIRECAP_AUTHOR")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", os.devnull)
    monkeypatch.setenv("USER", "hopper")
    monkeypatch.chdir("/")
    assert N.default_author() == "hopper"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "rm"]), st.integers(0, 6)), max_size=30))
def test_tombstones_match_a_simple_model(ops):
    """Any sequence of adds and removals replays to exactly the notes a plain dict would keep."""
    lines, model, made = [], {}, []
    for i, (op, k) in enumerate(ops):
        if op == "add":
            n = N.make_note(tag="t", text=f"n{i}", author="a", seq=k + 1, time=f"2026-01-01T00:00:{i:02d}.000000Z",
                            taken=[m.id for m in made])
            made.append(n)
            model[n.id] = n
            lines.append(n.to_json())
        elif made:
            victim = made[k % len(made)]
            lines.append(N.tombstone(victim.id, author="a"))
            model.pop(victim.id, None)
    data = b"".join(orjson.dumps(x) + b"\n" for x in lines)
    notes, _problems = N.parse_notes(data)
    assert [n.id for n in notes] == list(model)
