"""The golden snapshot: what every read-side command prints on every shipped capture and fixture.

A refactoring must not change wirecap's output. This tool runs `cat`, `info`, `convert`, `validate`,
`stats`, `diff`, `report` (every format, one capture and two) and `export` in-process on every capture
under `captures/` and `tests/fixtures/` (including the files that are not captures: their error lines
are output too), and records each run's exit status and the SHA-256 of its stdout and stderr.

    python tools/golden.py check            # compare with tests/golden/manifest.json (exit 1 on a change)
    python tools/golden.py update           # rewrite the manifest (only for a change you mean; say why)
    python tools/golden.py dump DIR         # write every run's full output under DIR, to diff two trees

`tests/unit/test_golden.py` runs `check`. To see what a change did, dump on both commits and `diff -r`.
"""

from __future__ import annotations

import fcntl
import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "tests" / "golden" / "manifest.json"
ENV = {"COLUMNS": "120", "LINES": "50", "NO_COLOR": "1", "TZ": "UTC", "LC_ALL": "C.UTF-8"}
EVENTS_DIR = "/tmp/wirecap-golden-events"  # a fixed path: it appears in diff's output
SUFFIXES = (".jsonl", ".ndjson", ".jsonl.gz", ".jsonl.zst")


def inputs() -> list[str]:
    """Every capture-like file under captures/ and tests/fixtures/, as a path relative to the root."""
    found = []
    for top in ("captures", "tests/fixtures"):
        for p in sorted((ROOT / top).rglob("*")):
            if p.is_file() and p.name.endswith(SUFFIXES) and ".notes." not in p.name:
                found.append(p.relative_to(ROOT).as_posix())
    return found


def runs(paths: list[str]) -> Iterator[tuple[str, list[str]]]:
    """(id, argv) for every run of the snapshot, in a fixed order."""
    single = [
        ("info", ["info"]), ("info-json", ["info", "--json"]),
        ("cat", ["cat", "--width", "160"]), ("cat-json", ["cat", "--json"]),
        ("convert", ["convert"]),
        ("validate", ["validate"]), ("validate-json", ["validate", "--json"]),
        ("stats", ["stats"]), ("stats-json", ["stats", "--json"]), ("stats-all", ["stats", "--all"]),
        ("report-term", ["report", "-f", "term", "--width", "120"]), ("report-md", ["report", "-f", "md"]),
        ("report-html", ["report", "-f", "html", "-o", "-"]), ("report-json", ["report", "-f", "json"]),
        ("export", ["export", "-q", "-o", "-"]),
    ]
    for path in paths:
        for name, argv in single:
            yield f"{path} {name}", [*argv, path]
    pairs = list(zip(paths, paths[1:], strict=False))
    runs_a = [p for p in paths if p.startswith("tests/fixtures/captures/runs/") and p.endswith("-a.jsonl")]
    same = [(a, a.replace("-a.jsonl", "-b.jsonl")) for a in runs_a]
    for a, b in pairs + same:
        for name, argv in (
            ("diff-events", ["diff", "--no-color"]), ("diff-wire", ["diff", "--no-color", "--level", "wire"]),
            ("diff-stats", ["diff", "--no-color", "--level", "stats"]), ("diff-json", ["diff", "--json"]),
            ("diff-summary", ["diff", "--no-color", "--summary"]),
        ):
            yield f"{a} {b} {name}", [*argv, a, b]
    for a, b in pairs[::3] + same:
        for fmt in ("term", "md", "html", "json"):
            yield f"{a} {b} report2-{fmt}", ["report", "-f", fmt, "--width", "120", "-o", "-", a, b]
    # Universal-event files (what `convert` writes) diffed against each other.
    for a, b in same:
        ea, eb = (f"{EVENTS_DIR}/{Path(p).stem}.events.jsonl" for p in (a, b))
        yield f"{a} convert-to-events", ["convert", "--force", "-o", ea, a]
        yield f"{b} convert-to-events", ["convert", "--force", "-o", eb, b]
        yield f"{a} {b} diff-event-files", ["diff", "--no-color", ea, eb]
        yield f"{a} {b} diff-event-files-json", ["diff", "--json", ea, eb]


def run(argv: list[str]) -> tuple[int, bytes, bytes]:
    """Run `wirecap ARGV` in this process from the repository root: (exit status, stdout, stderr)."""
    from wirecap.cli.inprocess import run as run_in_process

    return run_in_process(argv)


def snapshot(dump: Path | None = None) -> dict[str, list]:
    """Every run's [exit status, stdout hash, stderr hash]; with `dump`, the outputs too. Holds a lock
    on EVENTS_DIR for the whole run, so snapshots running at once (several checkouts) never share it."""
    from wirecap.cli.inprocess import environment

    Path(EVENTS_DIR).mkdir(exist_ok=True)
    # (tests run it in-process: COLUMNS=120 left behind would fit every later test's tables)
    with environment(ENV, str(ROOT)), open(f"{EVENTS_DIR}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _snapshot(dump)


def _snapshot(dump: Path | None) -> dict[str, list]:
    result: dict[str, list] = {}
    for rid, argv in runs(inputs()):
        code, out, err = run(argv)
        result[rid] = [code, hashlib.sha256(out).hexdigest()[:20], hashlib.sha256(err).hexdigest()[:20]]
        if dump is not None:
            name = rid.replace("/", "_").replace(" ", "__")
            (dump / f"{name}.out").write_bytes(out)
            (dump / f"{name}.err").write_bytes(err + f"\n[exit {code}]\n".encode())
    return result


def compare(expected: dict[str, list], got: dict[str, list]) -> list[str]:
    """One line per run whose status or output differs, or that is new or gone."""
    lines = []
    for rid in sorted(set(expected) | set(got)):
        e, g = expected.get(rid), got.get(rid)
        if e != g:
            what = ("gone" if g is None else "new" if e is None else
                    ", ".join(k for k, x, y in zip(("exit", "stdout", "stderr"), e, g, strict=True) if x != y))
            lines.append(f"{rid}: {what}")
    return lines


def main(argv: list[str]) -> int:
    cmd = argv[0] if argv else "check"
    if cmd == "dump":
        target = Path(argv[1]).resolve()
        target.mkdir(parents=True, exist_ok=True)
        snapshot(target)
        return 0
    got = snapshot()
    if cmd == "update":
        MANIFEST.parent.mkdir(parents=True, exist_ok=True)
        MANIFEST.write_bytes(orjson.dumps(got, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
        print(f"golden: {len(got)} runs written to {MANIFEST.relative_to(ROOT)}")
        return 0
    changed = compare(orjson.loads(MANIFEST.read_bytes()), got)
    for line in changed:
        print(line)
    print(f"golden: {len(got)} runs, {len(changed)} changed", file=sys.stderr)
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
