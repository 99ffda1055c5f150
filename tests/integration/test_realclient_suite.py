"""The real-client suite: every lab client x case recorded through `wirecap record`, replayed strictly.

For each client (Claude Code, CodeBuddy, Codex, opencode, codebuff 1.0.115 over WebSocket, @codebuff/sdk
0.3.13 over WebSocket, @codebuff/sdk 0.10.7 over HTTP+SSE) and each case (a plain reply, a tool round
trip, every error mode of its fake), tests/realclient.py records a run through `wirecap record
--reverse`, then replays the capture with `wirecap replay serve` (strict, no `--ignore`) to the same
real client under another HOME, work dir and TMPDIR, inside a private network namespace (`unshare -n`).
A case passes when the client exits as recorded, its stdout and the whole capture diff equal (`wirecap
diff`, exit 0) and the replay server reports no mismatch. The `mismatch` case of each client replays
`hello` to the client asked something else, with the client's default retry settings: it passes when
the server reports the mismatch, the capture shows the mismatch answer, and the client exits by itself
(killed after 20 s, a bound, not a timing assertion) printing wirecap's message; the seconds from the
mismatch answer to its exit are printed in a second table. Cases run a few at a time
(WIRECAP_SUITE_JOBS, default CPUs + 1) in one session-scoped fixture, on one pytest-xdist worker (the
suite runs with `--dist loadfile`: a file's tests stay on one worker); the tables are printed at the end of the pytest run (from a worker, they
travel to the controller in `workeroutput`: tests/conftest.py prints them).

Skipped without the lab (`make lab`; WIRECAP_LAB or <repo>/.lab) or without root / `unshare -n`.
`make realclient` runs only this suite; the files of every case stay under pytest's temp folder (or
WIRECAP_SUITE_OUT) and their path is printed with the table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from labclients import can_unshare
from realclient import MATRIX, lab_dir

RUNNER = Path(__file__).resolve().parents[1] / "realclient.py"
CASE_TIMEOUT = 600  # seconds for one case; the runner bounds each of its steps itself (client runs 90 s each)
PAIRS = [(client, case) for client, cases in MATRIX.items() for case in cases]
# The slow ones first (codebuff 1.0.115 waits for its REPL, ~10 s a run), so the parallel run ends sooner.
SLOW_FIRST = {"codebuff-1.0.115": 0, "opencode": 1, "codebuddy": 2}

_LAB = lab_dir()
_WHY_SKIP = ("lab not installed (run `make lab` or set WIRECAP_LAB)" if _LAB is None
             else "needs root and `unshare -n` (a private network namespace)" if not can_unshare() else None)

pytestmark = [pytest.mark.realclient, pytest.mark.skipif(_WHY_SKIP is not None, reason=_WHY_SKIP or "")]
TITLE = "real-client suite: record, then strict replay to the same client"


class _Table:
    """Prints the client x case table at the end of the run (registered as a pytest plugin)."""

    def __init__(self, results: dict[tuple[str, str], dict], out: Path, wall: float) -> None:
        self.results, self.out, self.wall = results, out, wall

    def pytest_terminal_summary(self, terminalreporter) -> None:
        tr = terminalreporter
        tr.section(TITLE)
        for line in self.lines():
            tr.write_line(line)

    def lines(self) -> list[str]:
        out: list[str] = []
        order = ["hello", "tool", "tool_read", "think", "subagent", "http_error", "sse_error", "sse_drop", "error", "failed", "close",
                 "error_event", "refuse", "plain", "mismatch"]
        cases = sorted({c for _, c in self.results}, key=lambda c: (order.index(c) if c in order else len(order), c))
        clients = [c for c in MATRIX if any(k[0] == c for k in self.results)]
        w = max(len(c) for c in clients)
        out.append(f"{'client':<{w}}  " + "  ".join(f"{c:<16}" for c in cases))
        for client in clients:
            cells = []
            for case in cases:
                r = self.results.get((client, case))
                cells.append("-" if r is None else f"{'pass' if r['ok'] else 'FAIL'} {r['total_s']:5.1f}s")
            out.append(f"{client:<{w}}  " + "  ".join(f"{c:<16}" for c in cells))
        mm = [(c, self.results[(c, "mismatch")]) for c in clients if (c, "mismatch") in self.results]
        if mm:
            out.append("")
            out.append("mismatch (default retries): seconds from the mismatch answer to the client's exit "
                       "(recorder's clock), from its start; exit status; what it printed")
            for client, r in mm:
                def s(v):
                    return "   -  " if v is None else f"{v:5.2f}s"
                rc = r.get("replay_rc")
                out.append(f"{client:<{w}}  {s(r.get('mismatch_to_exit_s'))}  {s(r.get('mismatch_run_s'))}  "
                           f"exit {'-' if rc is None else rc:<3} {(r.get('client_said') or '')[:90]}")
        n_ok = sum(r["ok"] for r in self.results.values())
        out.append(f"{n_ok}/{len(self.results)} cases pass; suite wall time {self.wall:.0f} s; files in {self.out}")
        for (client, case), r in sorted(self.results.items()):
            for w_ in r["why"]:
                out.append(f"  {client} {case}: {w_.splitlines()[0] if w_ else w_}"[:300])
        return out


def _run_one(client: str, case: str, out: Path) -> dict:
    d = out / f"{client}-{case}"
    env = dict(os.environ, WIRECAP_LAB=str(_LAB), WIRECAP_HOME=str(out / "wirecap-home"))
    try:
        p = subprocess.run([sys.executable, str(RUNNER), client, case, str(d)], env=env, capture_output=True,
                           timeout=CASE_TIMEOUT, start_new_session=True)
        err = p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        err = f"the case did not finish within {CASE_TIMEOUT} s"
    f = d / "result.json"
    if f.exists():
        return json.loads(f.read_text())
    return {"client": client, "case": case, "ok": False, "total_s": 0.0,
            "why": [f"the runner wrote no result: {err.strip()[-800:]}"]}


@pytest.fixture(scope="session")
def suite_results(request, tmp_path_factory) -> dict[tuple[str, str], dict]:
    """Run every selected client x case (a few at a time) once per session; {(client, case): result}."""
    selected = [tuple(item.callspec.params[k] for k in ("client", "case")) for item in request.session.items
                if item.module is sys.modules[__name__] and hasattr(item, "callspec")]
    out = Path(os.environ["WIRECAP_SUITE_OUT"]) if os.environ.get("WIRECAP_SUITE_OUT") \
        else tmp_path_factory.mktemp("realclient")
    out.mkdir(parents=True, exist_ok=True)
    # wirecap's CA is made once here, not by every case at the same time
    subprocess.run([sys.executable, "-m", "wirecap", "ca", "--path"], env=dict(os.environ, WIRECAP_HOME=str(out / "wirecap-home")),
                   capture_output=True, timeout=60, check=True)
    jobs = int(os.environ.get("WIRECAP_SUITE_JOBS") or (os.cpu_count() or 1) + 1)
    order = sorted(selected, key=lambda p: SLOW_FIRST.get(p[0], 9))
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        results = dict(zip(order, ex.map(lambda p: _run_one(p[0], p[1], out), order), strict=True))
    table = _Table(results, out, time.monotonic() - t0)
    workeroutput = getattr(request.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: the controller prints it (tests/conftest.py)
        workeroutput.setdefault("wirecap_summaries", []).append([TITLE, table.lines()])
    else:
        request.config.pluginmanager.register(table, "realclient-table")
    return results


@pytest.mark.timeout(1800)
@pytest.mark.parametrize(("client", "case"), PAIRS, ids=[f"{c}-{k}" for c, k in PAIRS])
def test_strict_replay_to_the_real_client(suite_results, client, case):
    """Recorded, then replayed strictly to the same client: same exit, stdout and capture; no mismatch."""
    r = suite_results[(client, case)]
    assert r["ok"], f"{client} x {case}:\n  " + "\n  ".join(r["why"])
