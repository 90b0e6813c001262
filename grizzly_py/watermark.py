"""Watermark strategies (Flink's ``WatermarkStrategy``).

The watermark after a batch is ``max event time seen - bound - 1`` (Flink's bounded
out-of-orderness generator); it never goes backwards. Monotonous timestamps are bound 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from .time import to_millis


@dataclass(frozen=True)
class WatermarkStrategy:
    """How far a source's watermark trails its largest event time: records up to
    ``out_of_orderness_ms`` behind it are on time. Build one with the static methods."""

    out_of_orderness_ms: int = 0

    def __post_init__(self):
        if self.out_of_orderness_ms < 0:
            raise ValueError("the out-of-orderness bound must not be negative")

    @staticmethod
    def for_monotonous_timestamps() -> "WatermarkStrategy":
        """Event times never decrease (bound 0): the default of every source."""
        return WatermarkStrategy(0)

    @staticmethod
    def for_bounded_out_of_orderness(bound) -> "WatermarkStrategy":
        """Records may arrive up to ``bound`` (a duration: ``Time.seconds(5)``, ``"5 seconds"``, a
        ``timedelta``) behind the largest event time seen. ``TypeError`` for a bare number,
        ``ValueError`` for a negative bound."""
        return WatermarkStrategy(to_millis(bound, what="for_bounded_out_of_orderness"))

    def watermark_for(self, max_timestamp: int) -> int:
        """The watermark after a batch whose largest event time so far is ``max_timestamp`` (ms)."""
        return max_timestamp - self.out_of_orderness_ms - 1
