"""What one measured task yields: :class:`CounterSample`, its per-record figures, and the names of
the figures a controller watches."""

from __future__ import annotations

from typing import Mapping

# figure -> the event it divides by the records
FIGURE_EVENTS = {
    "branch_misses_per_record": "branch_misses",
    "cache_misses_per_record": "cache_misses",
    "instructions_per_record": "instructions",
    "cycles_per_record": "cycles",
    "ns_per_record": "task_clock",  # perf software / PAPI: task clock; clock source: thread CPU time
}
HARDWARE_FIGURES = ("branch_misses_per_record", "cache_misses_per_record")
TIME_FIGURES = ("ns_per_record",)


class CounterSample:
    """The counts of one task: ``deltas`` holds each event's raw difference over the task (scaled
    up where the kernel multiplexed the counters), ``figures`` the watched per-record figures in
    the source's priority order (empty where no record was measured or the thread's counters
    could not be read), ``per_record`` every event divided by the records, ``wall_ns`` the task's
    wall time. Built on every task, so it is a plain slotted object."""

    __slots__ = ("records", "deltas", "figures", "wall_ns", "source")

    def __init__(self, records: int, deltas: Mapping[str, float], figures: Mapping[str, float],
                 wall_ns: int = 0, source: str = ""):
        self.records, self.deltas, self.figures = records, deltas, figures
        self.wall_ns, self.source = wall_ns, source

    @classmethod
    def of(cls, records: int, deltas: Mapping[str, float], figure_events: Mapping[str, str],
           wall_ns: int = 0, source: str = "") -> "CounterSample":
        """The sample of ``records`` records; ``figure_events`` maps each watched figure to the
        event it divides (in the source's priority order)."""
        figures = {}
        if records > 0:
            try:
                figures = {figure: deltas[event] / records for figure, event in figure_events.items()}
            except KeyError:  # an event missing: no figures rather than some
                figures = {}
        return cls(records, deltas, figures, wall_ns, source)

    @property
    def per_record(self) -> dict[str, float]:
        return {name: value / self.records for name, value in self.deltas.items()} if self.records > 0 else {}

    def __eq__(self, other) -> bool:
        return isinstance(other, CounterSample) and all(
            getattr(self, a) == getattr(other, a) for a in self.__slots__)

    def __repr__(self) -> str:
        return (f"CounterSample(records={self.records}, figures={self.figures}, deltas={self.deltas}, "
                f"wall_ns={self.wall_ns}, source={self.source!r})")
