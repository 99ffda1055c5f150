"""Recorder overhead counted in instructions: mitmdump with and without the wirecap addon under valgrind.

CPU seconds per message on two shared cores swing by 10-50% between rounds (bench_record reports
them); the instructions a process executes do not depend on what else runs. Each side runs twice
under `valgrind --tool=cachegrind --cache-sim=no`: after start-up and a warm-up only, and with N
echoed messages more; the difference over 2N messages is the cost of one message, start-up and
warm-up cancelled. The four runs go in parallel (the counts are per process). The figure leaves out
what instructions do not show (cache misses, the writer thread's wake-ups, write(2) in the kernel),
which is why bench_record's CPU figure stays beside it. Skipped where valgrind is not installed.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
from pathlib import Path

from bench.bench_record import mitmdump, ws_echo_rounds, ws_server
from bench.common import figure, wirecap_home

TARGET = 1.10


def _count(target_port: int, home: Path, addon: bool, n: int, out: dict, key: tuple[bool, int]) -> None:
    """Instructions mitmdump executed for start-up, 100 warm-up and n more echoed messages."""
    log = home / f"cg-{int(addon)}-{n}.log"
    valgrind = ("valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                f"--log-file={log}")
    with mitmdump(target_port, home, addon=addon, cap=home / f"ws-{n}.jsonl", wrapper=valgrind, start_timeout=150,
                  stop_timeout=150, env=dict(os.environ, PYTHONHASHSEED="0")) as (port, _pid):
        ws_echo_rounds(port, 100)
        if n:
            ws_echo_rounds(port, n)
    found = re.search(r"I\s+refs:\s+([\d,]+)", log.read_text())
    if not found:
        raise RuntimeError(f"no instruction count in {log.name}")
    out[key] = int(found.group(1).replace(",", ""))


def run(quick: bool = False) -> list[dict]:
    if shutil.which("valgrind") is None:
        return [figure("record.ws_instructions_per_message", 0, "", note="valgrind not installed: skipped", ok=None)]
    n = 200 if quick else 600
    with wirecap_home("wirecap-bench-record-instr-") as home:
        counts: dict[tuple[bool, int], int] = {}
        errors: list[BaseException] = []
        with ws_server(echo=True) as sport:
            def one(addon: bool, k: int) -> None:
                try:
                    _count(sport, home, addon, k, counts, (addon, k))
                except BaseException as e:  # noqa: BLE001 - reported below, the other runs go on
                    errors.append(e)

            threads = [threading.Thread(target=one, args=(a, k)) for a in (False, True) for k in (0, n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(400)
        if errors or len(counts) != 4:
            raise RuntimeError(f"instruction counting failed: {errors[0] if errors else 'a run did not finish'}")
    plain = (counts[(False, n)] - counts[(False, 0)]) / (2 * n)
    with_addon = (counts[(True, n)] - counts[(True, 0)]) / (2 * n)
    ratio = with_addon / plain
    return [figure("record.ws_instructions_per_message", with_addon / 1e6, "M instr/msg", baseline="plain mitmdump",
                   baseline_value=plain / 1e6, target=f"<= {TARGET:.2f}x plain mitmdump", ok=ratio <= TARGET,
                   note=f"{2 * n} messages (echoed) after 100 warm-up ones, instructions executed by the proxy "
                        f"process under valgrind (start-up cancelled out); start-up alone: "
                        f"{counts[(False, 0)] / 1e9:.2f} G plain, {counts[(True, 0)] / 1e9:.2f} G with the addon")]
