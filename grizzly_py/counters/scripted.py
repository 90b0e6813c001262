"""A counter source that replays per-record figures instead of reading counters, so that the
adaptive controller can be tested, with software or hardware figures, on any host."""

from __future__ import annotations

from time import perf_counter_ns
from typing import Callable, Mapping, Sequence

from .sample import FIGURE_EVENTS, HARDWARE_FIGURES, CounterSample
from .sources import CounterSource


class ScriptedCounterSource(CounterSource):
    """Replays per-record figures instead of reading counters, so that a controller can be tested
    on any host. ``script(records_so_far) -> figures`` gives the figures in force after
    ``records_so_far`` records were measured (all threads together); ``steps`` is the same as a
    list ``[(from_record, figures), ...]``. A task gets the figures in force at its first record;
    its deltas are those figures times its records."""

    name = "scripted"

    def __init__(self, steps: Sequence[tuple[int, Mapping[str, float]]] | None = None,
                 script: Callable[[int], Mapping[str, float]] | None = None):
        super().__init__()
        if (steps is None) == (script is None):
            raise ValueError("ScriptedCounterSource needs steps or script (one of them)")
        if steps is not None:
            steps = sorted(((int(at), dict(figs)) for at, figs in steps), key=lambda s: s[0])
            if not steps or steps[0][0] > 0:
                raise ValueError("scripted steps must start at record 0")
            unknown = {f for _, figs in steps for f in figs} - set(FIGURE_EVENTS)
            if unknown:
                raise ValueError(f"unknown figures {sorted(unknown)}; known: {sorted(FIGURE_EVENTS)}")
            script = _step_script(steps)
            self.figures = tuple(steps[0][1])
        else:
            self.figures = tuple(script(0))
        self.script = script
        self.events = tuple(FIGURE_EVENTS[f] for f in self.figures)
        self.hardware = any(f in HARDWARE_FIGURES for f in self.figures)
        self.records_seen = 0

    def start(self):
        return None, None, perf_counter_ns()

    def stop(self, token, records: int) -> CounterSample:
        with self._lock:
            at, self.records_seen = self.records_seen, self.records_seen + int(records)
        figures = self.script(at)
        deltas = {FIGURE_EVENTS[f]: v * records for f, v in figures.items()}
        return CounterSample.of(records, deltas, self._figure_events(), perf_counter_ns() - token[2],
                                self.name)


def _step_script(steps: list[tuple[int, dict[str, float]]]) -> Callable[[int], dict[str, float]]:
    def script(records_so_far: int) -> dict[str, float]:
        current = steps[0][1]
        for at, figures in steps:
            if at > records_so_far:
                break
            current = figures
        return current
    return script
