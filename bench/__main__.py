"""`python -m bench [--quick] [--only NAME] [--json OUT]`: every benchmark, one table, the same as JSON.

Each `bench_*.py` module runs in its own child process (so a crash, a hang or a leaked server in one
module cannot take the others down) under a per-module timeout and an overall time budget. A module
that fails becomes an ERROR row; the run then exits 1 after printing everything else.
Exit status: 0 all modules ran, 1 a module failed (or, with --strict, a figure missed its target).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import FIELDS, ROOT, format_table
from bench.machine import describe_build, interpreter_build, reference_seconds

DEFAULT_DIR = Path(__file__).resolve().parent
DEFAULT_JSON = DEFAULT_DIR / "out" / "results.json"


def discover(bench_dir: Path, only: list[str]) -> list[Path]:
    """`bench_*.py` files in name order; `--only tee` matches bench_tee.py (or a name containing it)."""
    mods = sorted(bench_dir.glob("bench_*.py"))
    if not only:
        return mods
    want = [o.removeprefix("bench_").removesuffix(".py") for o in only]
    exact = [m for m in mods if m.stem.removeprefix("bench_") in want]
    return exact or [m for m in mods if any(w in m.stem for w in want)]


def _clean(v):
    """JSON cannot hold NaN/inf; they become None (shown as '-')."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def check_rows(module: str, rows: object) -> list[dict]:
    """The rows a module returned, completed with defaults; a malformed result raises ValueError."""
    if not isinstance(rows, list):
        raise ValueError(f"run() returned {type(rows).__name__}, expected a list of dicts")
    out = []
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or "name" not in r or not isinstance(r.get("value"), (int, float)):
            raise ValueError(f"figure {i} is not a dict with a 'name' and a numeric 'value': {r!r:.120}")
        row = {k: _clean(r.get(k)) for k in FIELDS}
        row.update({k: _clean(v) for k, v in r.items() if k not in FIELDS})
        for k in ("unit", "baseline", "target", "note"):
            row[k] = row[k] or ""
        row["module"] = module
        out.append(row)
    return out


def error_row(module: str, message: str) -> dict:
    row = {k: None for k in FIELDS}
    row.update(name=f"{module}: {message.splitlines()[0][:160] if message else 'failed'}", unit="",
               baseline="", target="", note=message, ok=False, module=module, error=message)
    return row


def child_main(path: str, quick: bool, result: str) -> int:
    """Inside the child: import one module by path, call run(quick), write its rows as JSON."""
    sys.path.insert(0, str(ROOT))
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if not hasattr(mod, "run"):
        raise SystemExit(f"{path} has no run(quick) function")
    rows = mod.run(quick=quick)
    Path(result).write_text(json.dumps(rows, default=str))
    return 0


def run_module(path: Path, quick: bool, timeout: float) -> tuple[list[dict], float]:
    """Run one module in a child process; rows (or one error row) and its wall time."""
    module = path.stem
    with tempfile.TemporaryDirectory(prefix="wirecap-bench-run-") as td:
        result = Path(td) / "rows.json"
        argv = [sys.executable, "-m", "bench", "--child", str(path), "--result", str(result)]
        if quick:
            argv.append("--quick")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        t0 = time.perf_counter()
        # Own process group: on timeout the module's servers and children go down with it.
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=sys.stderr, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return [error_row(module, f"timed out after {timeout:.0f} s")], time.perf_counter() - t0
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # anything the module left running
        wall = time.perf_counter() - t0
        text = err.decode("utf-8", "replace")
        sys.stderr.write(text)
        if proc.returncode != 0 or not result.exists():
            lines = [ln for ln in text.strip().splitlines() if ln.strip()]
            return [error_row(module, lines[-1] if lines else f"exited {proc.returncode}")], wall
        try:
            return check_rows(module, json.loads(result.read_text())), wall
        except ValueError as e:
            return [error_row(module, str(e))], wall


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small inputs, a few seconds per module (smoke run)")
    ap.add_argument("--only", action="append", default=[], metavar="NAME",
                    help="run only bench_NAME.py (repeatable; a substring also matches)")
    ap.add_argument("--json", dest="json_out", default=str(DEFAULT_JSON), metavar="OUT",
                    help="write the results here (default bench/out/results.json)")
    ap.add_argument("--dir", default=os.environ.get("WIRECAP_BENCH_DIR", str(DEFAULT_DIR)),
                    help="folder holding the bench_*.py modules (default: this package; env WIRECAP_BENCH_DIR)")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds per module before it is killed (default 200, 120 with --quick)")
    ap.add_argument("--budget", type=float, default=570,
                    help="overall seconds; modules not started by then are reported as skipped (default 570)")
    ap.add_argument("--strict", action="store_true", help="also exit 1 when a figure misses its target")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        return child_main(args.child, args.quick, args.result)

    bench_dir = Path(args.dir)
    mods = discover(bench_dir, args.only)
    if not mods:
        print(f"bench: no bench_*.py module in {bench_dir}" + (f" matching {args.only}" if args.only else ""),
              file=sys.stderr)
        return 1
    timeout = args.timeout or (120 if args.quick else 200)
    build = interpreter_build()
    ref_n = 100_000 if args.quick else 300_000
    ref_before = reference_seconds(ref_n)
    started = time.time()
    t_start = time.perf_counter()
    rows: list[dict] = []
    modules: list[dict] = []
    for path in mods:
        elapsed = time.perf_counter() - t_start
        if elapsed > args.budget:
            rows.append(error_row(path.stem, f"skipped: overall budget of {args.budget:.0f} s used up"))
            modules.append({"module": path.stem, "seconds": 0.0, "error": "skipped"})
            continue
        print(f"bench: {path.stem} ...", file=sys.stderr, flush=True)
        mod_rows, wall = run_module(path, args.quick, min(timeout, max(10.0, args.budget - elapsed + 30)))
        rows.extend(mod_rows)
        err = next((r["error"] for r in mod_rows if r.get("error")), None)
        modules.append({"module": path.stem, "seconds": round(wall, 3), "error": err})
        print(f"bench: {path.stem} done in {wall:.1f} s" + (f" (ERROR: {err})" if err else ""),
              file=sys.stderr, flush=True)
    total = time.perf_counter() - t_start
    ref_after = reference_seconds(ref_n)

    print(format_table(rows))
    notes = [(r["name"], r["note"]) for r in rows if r.get("note") and not r.get("error")]
    if notes:
        print()
        for name, note in notes:
            print(f"- {name}: {note}")
    failed = [m for m in modules if m["error"]]
    missed = [r for r in rows if r.get("ok") is False and not r.get("error")]
    print(f"\nmachine: {os.cpu_count()} CPUs; {describe_build(build)}; pure-Python reference workload "
          f"{ref_before:.3f} s before the run, {ref_after:.3f} s after (bench/machine.py; a figure that moved "
          f"with it is the machine, not the code)")
    print(f"{len(rows)} figures from {len(modules)} modules in {total:.1f} s"
          f"{' (quick)' if args.quick else ''}; {len(failed)} module(s) failed, {len(missed)} target(s) missed.")

    doc = {"quick": args.quick, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
           "seconds": round(total, 3),
           "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                       "interpreter": build,
                       "reference_seconds": {"before": round(ref_before, 4), "after": round(ref_after, 4)}},
           "modules": modules, "figures": rows}
    out = Path(args.json_out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"results: {out}")
    if failed:
        return 1
    if args.strict and missed:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
