"""The benchmark runner: discovers modules, survives a broken one, prints one table, writes JSON."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the bench package lives at the repo root, outside the installed wirecap

from bench.common import figure, ratio, run_measured  # noqa: E402

GOOD = '''
from bench.common import figure

def run(quick=False):
    n = 10 if quick else 1000
    return [
        figure("good: widgets per second", 250.0, "op/s", baseline="cat", baseline_value=500.0,
               target=">= 0.4x cat", ok=True, note=f"n={n}"),
        figure("good: peak memory", 12.5, "MB", target="< 100 MB", ok=True),
    ]
'''
MISSES = '''
def run(quick=False):
    return [{"name": "misses: latency", "value": 9.0, "unit": "ms", "baseline": "", "baseline_value": None,
             "ratio": None, "target": "< 1 ms", "ok": False, "note": ""}]
'''
BROKEN = '''
def run(quick=False):
    raise RuntimeError("the server under test did not start")
'''
MALFORMED = '''
def run(quick=False):
    return [{"value": 1.0}]
'''


def make_dir(tmp_path: Path, **modules: str) -> Path:
    d = tmp_path / "benches"
    d.mkdir()
    for name, src in modules.items():
        (d / f"bench_{name}.py").write_text(textwrap.dedent(src))
    return d


def run_bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_runner_prints_one_table_and_json_and_survives_a_failing_module(tmp_path):
    d = make_dir(tmp_path, good=GOOD, broken=BROKEN, malformed=MALFORMED, misses=MISSES)
    out = tmp_path / "res.json"
    p = run_bench("--quick", "--dir", str(d), "--json", str(out))
    assert p.returncode == 1, p.stdout + p.stderr  # a module failed
    table = p.stdout
    header = next(line for line in table.splitlines() if line.startswith("| figure"))
    for col in ("value", "baseline (same run)", "ratio", "target", "ok"):
        assert col in header
    assert "good: widgets per second" in table and "0.50x" in table and "cat = 500" in table
    assert "the server under test did not start" in table
    assert "bench_malformed" in table and "ERROR" in table
    assert "n=10" in table  # quick mode reached the module
    assert "2 module(s) failed, 1 target(s) missed" in table

    doc = json.loads(out.read_text())
    assert doc["quick"] is True
    by_name = {r["name"]: r for r in doc["figures"]}
    good = by_name["good: widgets per second"]
    assert good["ratio"] == 0.5 and good["baseline_value"] == 500.0 and good["module"] == "bench_good"
    errors = [r for r in doc["figures"] if r.get("error")]
    assert {r["module"] for r in errors} == {"bench_broken", "bench_malformed"}
    assert all(r["ok"] is False for r in errors)
    assert [m["module"] for m in doc["modules"]] == ["bench_broken", "bench_good", "bench_malformed", "bench_misses"]
    # What it ran on: the interpreter's build and the reference workload, before and after.
    assert "machine: " in table and "pure-Python reference workload" in table
    machine = doc["machine"]
    assert machine["interpreter"]["python"] == platform.python_version()
    assert 0 < machine["reference_seconds"]["before"] < 60 and 0 < machine["reference_seconds"]["after"] < 60


def test_only_selects_one_module_and_exits_zero(tmp_path):
    d = make_dir(tmp_path, good=GOOD, broken=BROKEN)
    out = tmp_path / "res.json"
    p = run_bench("--quick", "--only", "good", "--dir", str(d), "--json", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "the server under test" not in p.stdout
    assert [r["module"] for r in json.loads(out.read_text())["figures"]] == ["bench_good", "bench_good"]


def test_strict_fails_on_a_missed_target_and_timeout_kills_a_hang(tmp_path):
    d = make_dir(tmp_path, misses=MISSES, hang="import time\ndef run(quick=False):\n    time.sleep(60)\n")
    out = tmp_path / "res.json"
    p = run_bench("--quick", "--strict", "--only", "misses", "--dir", str(d), "--json", str(out))
    assert p.returncode == 1
    p = run_bench("--quick", "--only", "hang", "--timeout", "2", "--dir", str(d), "--json", str(out))
    assert p.returncode == 1 and "timed out after 2 s" in p.stdout


def test_helpers_ratio_and_peak_rss_of_a_subprocess():
    assert ratio(3.0, 2.0) == 1.5 and ratio(1.0, 0) is None and ratio(None, 1.0) is None
    row = figure("x", 2, "s", baseline="y", baseline_value=4)
    assert row["ratio"] == 0.5 and set(row) >= {"name", "value", "unit", "target", "ok", "note"}
    small = run_measured([sys.executable, "-c", "pass"])
    big = run_measured([sys.executable, "-c", "b = b'x' * 80_000_000"])
    assert big.peak_rss - small.peak_rss > 60_000_000
    echoed = run_measured(["cat"], stdin=b"hello")
    assert echoed.stdout == b"hello" and echoed.returncode == 0
