"""The one timing helper every benchmark uses: wall-clock runs, median, rates."""

from __future__ import annotations

import gc
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Run ``fn()`` once after a garbage collection; return (wall seconds, its result)."""
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


@dataclass
class Runs:
    """Wall-clock seconds of repeated runs of one peer on ``n_records`` input records."""

    n_records: int
    seconds: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def first(self) -> float:
        return self.seconds[0]

    @property
    def records_per_s(self) -> float:
        return self.n_records / self.median

    @property
    def ns_per_record(self) -> float:
        return self.median * 1e9 / self.n_records

    def as_dict(self) -> dict[str, Any]:
        if not self.seconds:
            return {"n_records": self.n_records, "seconds": []}
        return {
            "n_records": self.n_records,
            "seconds": self.seconds,
            "median_s": self.median,
            "first_s": self.first,
            "records_per_s": self.records_per_s,
            "ns_per_record": self.ns_per_record,
        }
