"""`wirecap diff` holds bounded memory: long item bodies are kept aside (`wirecap.analysis.spill`), and
differences past `SHOWN_MAX` are counted, not detailed. The results are the same as when everything
is held in memory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wirecap.analysis import spill
from wirecap.analysis.diff import diff_captures
from wirecap.analysis.diff import result as result_mod
from wirecap.analysis.diff.render import render_unified
from wirecap.analysis.spill import INLINE_MAX, BodyStore, body_key

ARGV = ["claude", "-p", "fix it", "--output-format", "stream-json", "--verbose"]
WORDS = ("the", "agent", "reads", "file", "config", "patch", "test", "passes", "error", "retry", "build", "ok")


def session(n: int, *, out_kb: int = 1, change: dict[int, str] | None = None) -> list[dict]:
    """A Claude Code stream-json session of `n` tool rounds (text, tool call, tool result of `out_kb` KB);
    `change` replaces the command of some rounds."""
    out = [{"type": "system", "subtype": "init", "session_id": "s-1", "model": "claude-x", "cwd": "/w",
            "tools": ["Bash"]}]
    for k in range(n):
        text = " ".join(WORDS[(k * 7 + i) % len(WORDS)] for i in range(30))
        cmd = (change or {}).get(k, f"make test-{k}")
        result = (f"{k}: " + " ".join(WORDS[(k + i) % len(WORDS)] for i in range(200)) + "\n") * max(1, out_kb)
        out.append({"type": "assistant", "message": {"id": f"msg_{k:020d}", "role": "assistant", "model": "claude-x",
                    "content": [{"type": "text", "text": f"Step {k}: {text}"}]}, "session_id": "s-1"})
        out.append({"type": "assistant", "message": {"id": f"msg_{k:020d}", "role": "assistant", "model": "claude-x",
                    "content": [{"type": "tool_use", "id": f"toolu_{k:020d}", "name": "Bash",
                                 "input": {"command": cmd}}]}, "session_id": "s-1"})
        out.append({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{k:020d}", "content": result}]}, "session_id": "s-1"})
    out.append({"type": "result", "subtype": "success", "is_error": False, "session_id": "s-1",
                "usage": {"input_tokens": 1, "output_tokens": 1}})
    return out


def write_capture(path: Path, lines: list[dict]) -> str:
    """A tee-style capture (format v1) of stdout lines."""
    recs = [{"wirecap": 1, "type": "header", "id": "t", "created": "2026-01-01T00:00:00.000000Z",
             "origin": {"tool": "wirecap", "version": "test", "source": "tee", "argv": ARGV},
             "redaction": {"enabled": False}},
            {"seq": 1, "t": 0.0, "type": "open", "ch": "proc", "kind": "process", "argv": ARGV, "cwd": "/w", "pid": 1},
            {"seq": 2, "t": 0.0, "type": "open", "ch": "stdout", "kind": "pipe", "proc": "proc", "stream": "stdout"}]
    seq = 2
    for obj in lines:
        seq += 1
        recs.append({"seq": seq, "t": seq / 1000, "type": "msg", "ch": "stdout", "dir": "s2c", "json": obj})
    recs.append({"seq": seq + 1, "t": seq / 1000, "type": "close", "ch": "stdout"})
    recs.append({"seq": seq + 2, "t": seq / 1000, "type": "close", "ch": "proc", "exit_code": 0})
    recs.append({"seq": seq + 3, "t": seq / 1000, "type": "end", "records": seq + 3})
    with open(path, "wb") as f:
        for r in recs:
            f.write(orjson.dumps(r) + b"\n")
    return str(path)


# --- the store --------------------------------------------------------------------------------------------
@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=60), st.integers(min_value=0, max_value=500))
def test_store_returns_what_it_was_given_in_memory_and_on_file(bodies, budget):
    store = BodyStore(budget)
    try:
        refs = [store.put(b) for b in bodies]
        assert [store.get(r) for r in refs] == bodies
        store.seal()  # everything on file now
        assert [store.get(r) for r in refs] == bodies
    finally:
        store.close()


def test_a_sealed_store_is_readable_through_a_shared_file_in_another_process():
    store = BodyStore(0)
    store.open_file()  # before the fork, as diff_captures does for side B
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child fills the store and reports its state
        os.close(r)
        refs = [store.put(b"x" * n) for n in (1, 100, 5000)]
        store.seal()
        os.write(w, orjson.dumps([refs, store.state()]))
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        refs, state = orjson.loads(f.read())
    os.waitpid(pid, 0)
    store.adopt(state)
    assert [store.get(x) for x in refs] == [b"x" * n for n in (1, 100, 5000)]
    store.close()


def test_keys_are_the_body_when_short_and_a_digest_that_never_equals_one_when_long():
    short = b'{"a":1}'
    assert body_key(short) == short
    long_ = b'{"text":"' + b"y" * 100 + b'"}'
    key = body_key(long_)
    assert key[:1] == b"\0" and len(key) == 17 and key == body_key(bytes(long_))
    assert key != body_key(long_.replace(b"y", b"z", 1))
    assert len(body_key(b"x" * INLINE_MAX)) == INLINE_MAX  # (the edge: still inline)


# --- the same results, whatever is kept aside ----------------------------------------------------------
@pytest.mark.parametrize("level", ["events", "wire"])
@pytest.mark.parametrize("fork", ["0", "1"])
def test_bodies_on_file_give_the_same_view_and_json(tmp_path, monkeypatch, level, fork):
    monkeypatch.setenv("WIRECAP_DIFF_FORK", fork)
    a = write_capture(tmp_path / "a.jsonl", session(60))
    b = write_capture(tmp_path / "b.jsonl", session(60, change={10: "make test-10 -v", 40: "rm -rf build"}))

    def run() -> tuple[str, bytes]:
        r = diff_captures(a, b, level=level)
        return render_unified(r, context=2), orjson.dumps(r.to_json())

    in_memory = run()
    monkeypatch.setattr(spill, "MEMORY_BUDGET", 0)  # every long body goes to the file at once
    on_file = run()
    assert on_file == in_memory
    assert '"make test-10" -> "make test-10 -v"' in on_file[0]
    assert "rm -rf build" in on_file[0]


def test_differences_past_the_limit_are_counted_not_detailed(tmp_path, monkeypatch):
    a = write_capture(tmp_path / "a.jsonl", session(30))
    b = write_capture(tmp_path / "b.jsonl", session(30, change={k: f"other {k}" for k in range(30)}))
    full = diff_captures(a, b)
    assert full.counts()["changed"] == 30 and full.not_shown == 0
    monkeypatch.setattr(result_mod, "SHOWN_MAX", 4)
    r = diff_captures(a, b)
    assert r.counts() == full.counts() and r.summary_line() == full.summary_line()  # all still counted
    assert r.not_shown == 26
    shown = [c for p in r.pairs for c in p.changes if c.shown]
    assert len(shown) == 4 and all(c.fields for c in shown)
    assert all(not c.fields for p in r.pairs for c in p.changes if not c.shown)  # no values held for them
    view = render_unified(r, context=0)
    assert view.count("\n~ tool_call[") == 4
    assert "… 26 more differences not shown" in view
    assert view.rstrip().endswith(full.summary_line())
    js = r.to_json()
    assert js["not_shown"] == 26 and sum(len(c["changes"]) for c in js["channels"]) == 4
    assert "not_shown" not in full.to_json()


# --- memory, as a hard limit -------------------------------------------------------------------------------
_CHILD = r"""
import resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from wirecap.cli import main
main(sys.argv[2:])
"""

AS_LIMIT = 110 << 20


@pytest.mark.skipif(sys.platform != "linux", reason="address-space limits as on Linux")
@pytest.mark.parametrize("level", ["events", "wire"])
def test_a_diff_of_two_60_mb_captures_fits_in_a_110_mb_address_space(tmp_path, level):
    """Two 60 MB captures that differ in two commands, in one process. Measured (smallest RLIMIT_AS
    that works, 4 MB steps): with the bodies of both sides held in memory (0.1) 150 MB (events level)
    and 168 MB (wire level); kept aside, 55 and 67 MB; `wirecap --help` alone needs about 40 MB. So
    110 MB is far from both: the old way fails here, the new way has room to spare."""
    lines = session(6000, out_kb=8)
    a = write_capture(tmp_path / "a.jsonl", lines)
    lines[3 * 1000 + 2]["message"]["content"][0]["input"]["command"] = "make test-1000 -v"
    lines[3 * 5000 + 2]["message"]["content"][0]["input"]["command"] = "rm -rf build"
    b = write_capture(tmp_path / "b.jsonl", lines)
    assert os.path.getsize(a) > 50 << 20
    env = {**os.environ, "WIRECAP_DIFF_FORK": "0"}  # (one process holds both sides)
    p = subprocess.run([sys.executable, "-c", _CHILD, str(AS_LIMIT), "diff", "--level", level, a, b],
                       capture_output=True, env=env, timeout=120)
    err = p.stderr.decode()
    assert p.returncode == 1, err[-2000:]
    out = p.stdout.decode()
    assert "make test-1000 -v" in out and "rm -rf build" in out
    assert out.rstrip().splitlines()[-1].startswith("2 differences: 0 added, 0 removed, 2 changed")


def test_a_full_disk_under_the_store_is_one_clear_error(tmp_path, monkeypatch):
    import errno

    from wirecap.errors import WirecapError

    a = write_capture(tmp_path / "a.jsonl", session(20))
    b = write_capture(tmp_path / "b.jsonl", session(20, change={3: "ls"}))
    monkeypatch.setenv("WIRECAP_DIFF_FORK", "0")
    monkeypatch.setattr(spill, "MEMORY_BUDGET", 0)

    def full(*_a):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(spill.os, "pwrite", full)
    with pytest.raises(WirecapError, match=r"temporary file in .*No space left on device \(set TMPDIR"):
        diff_captures(a, b)
