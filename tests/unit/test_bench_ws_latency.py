"""bench/bench_ws_latency.py's figures from measured rounds: best of rounds per path, the light-load p50
target against plain mitmdump, and the check that the captures held every message."""

from __future__ import annotations

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT))  # the bench package lives at the repo root, outside the installed wirecap
from bench.bench_ws_latency import PATHS, figures  # noqa: E402

LOADS = {"light": (300, 100.0), "heavy": (3000, 0.0)}


def _res(wirecap_p50: float, recorded: tuple[int, int]) -> dict:
    base = {"direct": 0.0001, "mitmdump": 0.0005, "addon": 0.0006, "wirecap": wirecap_p50}
    res: dict = {}
    for load in LOADS:
        res[load] = {p: {"p50": [base[p] * 2, base[p]], "p99": [base[p] * 3, base[p] * 4],
                         "rate": [1000.0, 2000.0]} for p in PATHS}
    res["_recorded"] = recorded
    return res


def test_best_of_rounds_and_the_light_p50_target():
    rows = {r["name"]: r for r in figures(_res(0.00055, (10, 10)), LOADS, 2)}
    light = rows["record.ws_latency_light_p50"]
    assert abs(light["value"] - 0.55) < 1e-9 and abs(light["baseline_value"] - 0.5) < 1e-9  # ms, best round
    assert light["ok"] is True and "direct 0.100 ms" in light["note"]
    assert abs(rows["record.ws_latency_light_p99"]["value"] - 0.55 * 3) < 1e-9  # the lower of 3x and 4x
    assert rows["record.ws_rate_heavy"]["value"] == 2000.0 and "record.ws_rate_light" not in rows
    assert rows["record.ws_latency_recorded"]["ok"] is True


def test_a_slow_recording_or_a_lost_message_is_reported():
    rows = {r["name"]: r for r in figures(_res(0.0007, (9, 10)), LOADS, 2)}
    assert rows["record.ws_latency_light_p50"]["ok"] is False  # 0.2 ms over plain mitmdump
    assert rows["record.ws_latency_recorded"]["ok"] is False
