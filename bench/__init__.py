"""wirecap benchmarks: `python -m bench` runs every `bench/bench_*.py` and prints one table.

Each module exposes `run(quick: bool = False) -> list[dict]`, one dict per figure (see
`bench.common.figure`). Baselines are measured in the same run, on the same machine.
"""
