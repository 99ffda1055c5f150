"""What the figures were measured on: the interpreter's build and a fixed pure-Python reference workload.

Most of wirecap's hot loops are interpreted Python, so the same code runs at very different speeds
on different CPython builds: a pyenv build (no PGO, no LTO, libpython shared) runs pure-Python code
up to twice as slowly as a distribution's PGO + LTO build on the same machine, while orjson (C) runs
the same. A records/s figure means little without this; the reference workload lets two runs, or two
machines, be compared: a figure that moved with the reference is the machine, not the change.
"""

from __future__ import annotations

import platform
import sys
import sysconfig
import time
from dataclasses import dataclass, field


def _libpython_loaded() -> str | None:
    """The shared libpython this process runs on, or None for a static interpreter (Linux only)."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                if "libpython" in line:
                    return line.split()[-1]
    except OSError:
        pass
    return None


def interpreter_build() -> dict[str, object]:
    """The CPython build options that change interpreted speed.

    `configured_pgo` / `configured_lto` read the configure options, which a distribution may bypass
    (Debian builds with PGO and LTO from its own rules and says neither there), so they prove
    presence, not absence; the reference workload is the figure to compare.
    """
    args = str(sysconfig.get_config_var("CONFIG_ARGS") or "")
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "configured_pgo": "--enable-optimizations" in args,
        "configured_lto": "--with-lto" in args,
        "libpython": _libpython_loaded(),
    }


def describe_build(build: dict[str, object]) -> str:
    flags = [name for name, on in (("PGO", build["configured_pgo"]), ("LTO", build["configured_lto"])) if on]
    configured = f"configured with {' and '.join(flags)}" if flags else "neither PGO nor LTO among its configure options"
    lib = f"libpython shared ({build['libpython']})" if build["libpython"] else "libpython linked in"
    return f"{build['implementation']} {build['python']} at {build['executable']}: {configured}; {lib}"


@dataclass(slots=True)
class _Item:
    kind: str
    seq: tuple[int, ...]
    t: float
    data: dict[str, object] = field(default_factory=dict)


def _reference_workload(n: int) -> int:
    """Object creation, attribute and dict access, string work: what a decoder does per record."""
    kept = 0
    for i in range(n):
        rec = {"seq": i, "t": i * 0.001, "type": "msg", "json": {"type": "delta", "text": "abc"}}
        obj = rec["json"]
        item = _Item(obj["type"], (rec["seq"],), rec["t"], {"text": obj["text"]})
        line = {"kind": item.kind, "seq": item.seq, "t": item.t, "data": item.data}
        if line.get("kind") == "delta" and not i % 3:
            kept += len(f"{item.kind}:{i}")
    return kept


def reference_seconds(n: int = 300_000, repeat: int = 3) -> float:
    """Best CPU seconds of the reference workload (lower is a faster interpreter or machine)."""
    best = float("inf")
    for _ in range(repeat):
        c0 = time.process_time()
        _reference_workload(n)
        best = min(best, time.process_time() - c0)
    return best
