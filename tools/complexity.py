"""Cyclomatic complexity gate for `make lint` (radon): wirecap's functions stay as plain as our models'.

    python tools/complexity.py            # the check: exit 1 naming each function over the limits
    python tools/complexity.py --list N   # every function of complexity >= N, worst first

Limits (issue 15): no function above MAX (25), and at most DENSE_MAX functions of complexity >= DENSE
(21) per 1,000 blocks (functions, methods and classes). For scale, per 1,000 blocks: websockets 7,
h11 9, httpie 7, VCR.py 3, mitmproxy's addons 15.
"""

from __future__ import annotations

import sys
from pathlib import Path

from radon.complexity import cc_visit

ROOT = Path(__file__).resolve().parent.parent
MAX = 25
DENSE = 21
DENSE_MAX = 15  # per 1,000 blocks


def blocks(top: Path = ROOT / "wirecap") -> list[tuple[int, str]]:
    """(complexity, "path:line name") for every function, method and class under TOP."""
    out = []
    for path in sorted(top.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for b in cc_visit(path.read_text(encoding="utf-8")):
            name = f"{b.classname}.{b.name}" if getattr(b, "classname", None) else b.name
            out.append((b.complexity, f"{rel}:{b.lineno} {name}"))  # methods come as blocks of their own
    return out


def main(argv: list[str]) -> int:
    found = blocks()
    if argv[:1] == ["--list"]:
        floor = int(argv[1]) if len(argv) > 1 else DENSE
        for cc, where in sorted(found, reverse=True):
            if cc >= floor:
                print(f"{cc:3d} {where}")
        return 0
    over = sorted(((cc, w) for cc, w in found if cc > MAX), reverse=True)
    dense = sum(1 for cc, _ in found if cc >= DENSE)
    per_k = 1000 * dense / max(len(found), 1)
    for cc, where in over:
        print(f"complexity: {where} is {cc} (limit {MAX})")
    if per_k > DENSE_MAX:
        print(f"complexity: {dense} functions of complexity >= {DENSE} in {len(found)} blocks "
              f"({per_k:.1f} per 1,000; limit {DENSE_MAX}); see --list {DENSE}")
    print(f"complexity: {len(found)} blocks, {dense} >= {DENSE} ({per_k:.1f} per 1,000), "
          f"worst {max(found)[0] if found else 0}", file=sys.stderr)
    return 1 if over or per_k > DENSE_MAX else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
