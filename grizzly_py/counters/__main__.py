"""``python -m grizzly_py.counters``: which counter source this host gives, why the others were
passed over, and what measuring one task costs with each source that works (median of 7 runs of
20,000 empty tasks, per task: ``start()`` + ``stop()``, and the ``with measure()`` form)."""

from __future__ import annotations

import statistics
import sys
import time

from . import KINDS, CounterUnavailable, open_counter_source

TASKS, RUNS = 20_000, 7


def overhead_ns(source) -> tuple[float, float]:
    """Median ns per empty task: (start/stop, with measure())."""
    def start_stop() -> float:
        t = time.perf_counter_ns()
        for _ in range(TASKS):
            source.stop(source.start(), 1)
        return (time.perf_counter_ns() - t) / TASKS

    def with_measure() -> float:
        t = time.perf_counter_ns()
        for _ in range(TASKS):
            with source.measure(1):
                pass
        return (time.perf_counter_ns() - t) / TASKS

    return (statistics.median(start_stop() for _ in range(RUNS)),
            statistics.median(with_measure() for _ in range(RUNS)))


def main() -> int:
    auto = open_counter_source("auto")
    print(auto.describe())
    auto.close()
    for kind in KINDS[1:]:
        try:
            source = open_counter_source(kind)
        except CounterUnavailable as e:
            print(f"{kind:>8}: unavailable: {e}")
            continue
        with source:
            bare, managed = overhead_ns(source)
            print(f"{kind:>8}: {source.name}: {bare:,.0f} ns per task (start/stop), "
                  f"{managed:,.0f} ns (with measure())")
    return 0


if __name__ == "__main__":
    sys.exit(main())
