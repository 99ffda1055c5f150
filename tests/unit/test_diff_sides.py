"""Building the two sides of a diff at once (a forked child builds B): same results, same errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import SAMPLES, run_wirecap

from wirecap.analysis import sides
from wirecap.analysis.diff import diff_captures, pack_streams, unpack_streams
from wirecap.errors import CaptureFormatError, WirecapError


@pytest.fixture
def _fork_possible():
    if not sides.can_fork():  # checked when the test runs: a thread an earlier test left running rules it out
        pytest.skip("no fork here (one CPU, threads alive or no os.fork)")


needs_fork = pytest.mark.usefixtures("_fork_possible")


@needs_fork
def test_child_builds_b_and_its_result_comes_back():
    got = sides.build_both(lambda: ("a", os.getpid()), lambda: ("b", os.getpid()), list, tuple)
    assert got[0] == ("a", os.getpid())
    assert got[1][0] == "b" and got[1][1] != os.getpid()  # built in another process


@needs_fork
@pytest.mark.parametrize("cls", [WirecapError, CaptureFormatError])
def test_a_user_facing_error_in_b_keeps_its_class_and_message(cls):
    def fail():
        raise cls("b.jsonl:7: not a record")

    with pytest.raises(cls, match=r"^b\.jsonl:7: not a record$"):
        sides.build_both(lambda: 1, fail, int, int)


@needs_fork
def test_an_error_in_a_wins_and_the_child_is_reaped():
    def fail():
        raise WirecapError("a.jsonl: no such file")

    with pytest.raises(WirecapError, match="a.jsonl"):
        sides.build_both(fail, lambda: __import__("time").sleep(30), int, int)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # no child left behind


@needs_fork
def test_what_marshal_cannot_carry_is_built_here_instead():
    class Opaque:
        pass

    a, b = sides.build_both(lambda: 1, lambda: [Opaque()], lambda x: x, lambda x: x)
    assert a == 1 and isinstance(b[0], Opaque)


def test_streams_survive_packing():
    from wirecap.analysis.diff.shell import _event_streams

    cap = str(SAMPLES.parent / "captures" / "claude_code_tool_bash.jsonl")
    streams = _event_streams(cap, "capture", None, (), (), False)
    again = unpack_streams(pack_streams(streams))
    assert again == streams and sum(len(u.items) for u in again) > 5


def test_packing_lets_go_of_every_item():
    """The child packs side B with the collector paused: nothing may keep the items once they are packed
    (a list kept by the builder once held all 100k of them beside their tuples: +50 MB in the child)."""
    import gc

    from wirecap.analysis.diff import Item
    from wirecap.analysis.diff.shell import _event_streams

    cap = str(SAMPLES.parent / "captures" / "claude_code_tool_bash.jsonl")
    was = gc.isenabled()
    gc.disable()
    try:
        packed = pack_streams(_event_streams(cap, "capture", None, (), (), False), consume=True)
        assert packed and not any(type(o) is Item for o in gc.get_objects())
    finally:
        if was:
            gc.enable()


@pytest.mark.parametrize("level", ["events", "wire"])
def test_forked_and_in_process_diffs_print_the_same(level):
    a = str(SAMPLES.parent / "captures" / "claude_code_hello.jsonl")
    b = str(SAMPLES.parent / "captures" / "claude_code_tool_bash.jsonl")
    forked = run_wirecap("diff", "--level", level, a, b, env={"WIRECAP_DIFF_FORK": "1"})
    here = run_wirecap("diff", "--level", level, a, b, env={"WIRECAP_DIFF_FORK": "0"})
    assert forked.returncode == here.returncode == 1, forked.stderr
    assert forked.stdout == here.stdout and len(forked.stdout.splitlines()) > 3
    assert diff_captures(a, b, level=level).pairs  # and in this process (pytest: fork when it can)


def test_an_error_of_side_b_is_one_line_either_way(tmp_path):
    # (the header passes the up-front check; the reader refuses the future version while building B)
    a = str(SAMPLES.parent / "captures" / "claude_code_hello.jsonl")
    bad = tmp_path / "b.jsonl"
    head, rest = Path(a).read_bytes().split(b"\n", 1)
    bad.write_bytes(head.replace(b'"wirecap":1', b'"wirecap":99') + b"\n" + rest)
    outs = [run_wirecap("diff", a, str(bad), env={"WIRECAP_DIFF_FORK": f}) for f in "10"]
    assert [r.returncode for r in outs] == [2, 2]
    assert outs[0].stderr == outs[1].stderr and str(bad).encode() in outs[0].stderr
    assert len(outs[0].stderr.splitlines()) == 1 and not outs[0].stdout


@pytest.mark.skipif(bool(os.environ.get("WIRECAP_SIDES_INNER")), reason="already the fresh process")
def test_the_fork_tests_run_in_a_fresh_process_when_this_one_cannot_fork():
    """Under xdist, a thread an earlier test left alive rules fork out in this worker and the tests
    above skip; so this file also runs on its own, in a fresh interpreter, where none may skip."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-o", "addopts=", "-p", "no:cacheprovider", "-rs",
                        __file__, "-k", "not fresh_process"], capture_output=True, text=True, timeout=120,
                       cwd=Path(__file__).resolve().parents[2], env={**os.environ, "WIRECAP_SIDES_INNER": "1"})
    tail = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr[-500:]
    assert r.returncode == 0 and "skipped" not in tail and "passed" in tail, r.stdout[-2000:] + r.stderr[-1000:]
