"""Watermark strategies (Flink's ``WatermarkStrategy``).

The watermark after a batch is ``max event time seen - bound - 1`` (Flink's bounded
out-of-orderness generator); it never goes backwards. Monotonous timestamps are bound 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from .time import to_millis


@dataclass(frozen=True)
class WatermarkStrategy:
    out_of_orderness_ms: int = 0

    def __post_init__(self):
        if self.out_of_orderness_ms < 0:
            raise ValueError("the out-of-orderness bound must not be negative")

    @staticmethod
    def for_monotonous_timestamps() -> "WatermarkStrategy":
        return WatermarkStrategy(0)

    @staticmethod
    def for_bounded_out_of_orderness(bound) -> "WatermarkStrategy":
        return WatermarkStrategy(to_millis(bound, what="for_bounded_out_of_orderness"))

    def watermark_for(self, max_timestamp: int) -> int:
        return max_timestamp - self.out_of_orderness_ms - 1
