"""When have the per-record figures changed for good? :class:`ChangeDetector` holds a baseline (the
median of the first samples after a reset) and reports a sustained move away from it.

A figure has moved when ``value / baseline`` leaves ``[1 / (1 + threshold), 1 + threshold]``:
up by the factor ``1 + threshold`` or down by the same factor, so that rises and falls are judged
alike. It has changed when it moved in the same direction for ``sustain`` consecutive samples.
Samples from small tasks are noisy: with ``records`` given (or a :class:`CounterSample` passed),
consecutive observations are pooled, weighted by their records, until they hold at least
``min_records`` records, and each pool counts as one sample.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Mapping

from .sample import CounterSample


@dataclass(frozen=True)
class Change:
    """What the detector saw: ``figure`` went from ``baseline`` to ``value`` (the median of the
    sustained samples), ``samples`` samples after the reset."""

    figure: str
    baseline: float
    value: float
    ratio: float
    samples: int

    def __str__(self) -> str:
        return (f"{self.figure} {self.baseline:.4g} -> {self.value:.4g} ({self.ratio:.2f}x, "
                f"sustained, {self.samples} samples after the baseline was reset)")


class ChangeDetector:
    """Watch per-record figures; :meth:`observe` returns True on the sample where a sustained
    change is confirmed (once; :attr:`changed` and :attr:`change` keep it until :meth:`reset`).

    ``warmup``: samples whose median becomes the baseline; ``sustain``: consecutive samples a move
    must last; ``threshold``: the relative move (0.5: 1.5x up or down); ``min_records``: the
    records one pooled sample needs (only where records are known); ``floor``: added to value
    and baseline before dividing, so that figures near zero (0 vs 0.0001 branch misses per
    record) do not count as large ratios; ``figures``: which figures to watch, in priority order
    (default: those of the first observation)."""

    def __init__(self, warmup: int = 8, sustain: int = 4, threshold: float = 0.5,
                 min_records: int = 16_384, floor: float = 1e-3, figures: tuple[str, ...] | None = None):
        if warmup < 1 or sustain < 1:
            raise ValueError(f"warmup and sustain must be >= 1 (got {warmup}, {sustain})")
        if not threshold > 0:
            raise ValueError(f"threshold must be > 0 (got {threshold})")
        if min_records < 0 or floor < 0:
            raise ValueError("min_records and floor must be >= 0")
        self.warmup, self.sustain, self.threshold = warmup, sustain, threshold
        self.min_records, self.floor = min_records, floor
        self._fixed_figures = tuple(figures) if figures else None
        self.reset()

    def reset(self) -> None:
        """Forget the baseline and any change: the next ``warmup`` samples set a new one."""
        self.figures = self._fixed_figures
        self.baseline: dict[str, float] | None = None
        self.changed = False
        self.change: Change | None = None
        self.samples = 0  # samples (pools) judged or collected since the reset
        self._warm: list[Mapping[str, float]] = []
        self._streaks: dict[str, tuple[int, list[float]]] = {}
        self._pool: dict[str, float] = {}
        self._pool_records = 0

    def observe(self, figures: Mapping[str, float] | CounterSample, records: int | None = None) -> bool:
        """Take one observation; True exactly when it confirms a change. Empty figures (a sample
        of no records, a thread without counters) are skipped."""
        if isinstance(figures, CounterSample):
            figures, records = figures.figures, figures.records
        if self.changed or not figures:
            return False
        if self.figures is None:
            self.figures = tuple(figures)
        if any(f not in figures for f in self.figures):
            return False
        if records is not None and records < self.min_records or self._pool_records:
            pooled = self._add_to_pool(figures, records or 0)
            if pooled is None:
                return False
            figures = pooled
        return self._judge(figures)

    def _add_to_pool(self, figures: Mapping[str, float], records: int) -> dict[str, float] | None:
        if records <= 0:
            return None
        for f in self.figures:
            self._pool[f] = self._pool.get(f, 0.0) + figures[f] * records
        self._pool_records += records
        if self._pool_records < self.min_records:
            return None
        pooled = {f: total / self._pool_records for f, total in self._pool.items()}
        self._pool, self._pool_records = {}, 0
        return pooled

    def _judge(self, figures: Mapping[str, float]) -> bool:
        self.samples += 1
        if self.baseline is None:
            self._warm.append({f: figures[f] for f in self.figures})
            if len(self._warm) >= self.warmup:
                self.baseline = {f: statistics.median(s[f] for s in self._warm) for f in self.figures}
                self._warm = []
            return False
        for f in self.figures:
            value, base = figures[f], self.baseline[f]
            ratio = (value + self.floor) / (base + self.floor) if base + self.floor > 0 else 1.0
            direction = 1 if ratio > 1 + self.threshold else -1 if ratio * (1 + self.threshold) < 1 else 0
            previous, values = self._streaks.get(f, (0, []))
            if direction == 0:
                self._streaks[f] = (0, [])
                continue
            values = values + [value] if direction == previous else [value]
            self._streaks[f] = (direction, values)
        for f in self.figures:  # priority order: the first figure whose move lasted wins
            direction, values = self._streaks.get(f, (0, []))
            if direction and len(values) >= self.sustain:
                value = statistics.median(values)
                base = self.baseline[f]
                self.change = Change(f, base, value, (value + self.floor) / (base + self.floor),
                                     self.samples)
                self.changed = True
                return True
        return False
