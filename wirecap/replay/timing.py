"""Pacing: recorded offsets scaled by `--speed` and capped by `--max-wait`. Sans-I/O (no clock here).

`speed` 1 is real time, 2.5 is 2.5x faster, 0 sends at once. `max_wait` caps every single pause
(the gap between two consecutive messages), so a long think time in a capture does not stall a test.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from wirecap.errors import WirecapError


@dataclass(frozen=True, slots=True)
class Pacer:
    speed: float = 1.0
    max_wait: float | None = None

    def __post_init__(self) -> None:
        if not self.speed >= 0:  # also refuses NaN, which compares false with everything
            raise WirecapError(f"--speed must be 0 or more, not {self.speed}")
        if self.max_wait is not None and not self.max_wait >= 0:
            raise WirecapError(f"--max-wait must be 0 or more, not {self.max_wait}")

    def pause(self, gap: float) -> float:
        """How long to wait for a recorded gap of `gap` seconds."""
        if self.speed == 0 or gap <= 0:
            return 0.0
        wait = gap / self.speed
        if self.max_wait is not None and wait > self.max_wait:
            return self.max_wait
        return wait

    def schedule(self, offsets: Iterable[float], start: float = 0.0) -> list[float]:
        """Due times (seconds after the anchor) for messages recorded at `offsets` after it.

        Gaps are scaled one by one so a cap on one pause does not shift the rest of the
        stream by more than it took out. `start` is the offset of the anchor itself.
        """
        out: list[float] = []
        prev = start
        due = 0.0
        for off in offsets:
            due += self.pause(off - prev)
            prev = max(prev, off)
            out.append(due)
        return out
