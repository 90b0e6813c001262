"""Where the windows of an aligned window kind lie: ``PaneGeometry``.

Tumbling, sliding and cumulative event-time windows (and the processing-time ones) are all
unions of *panes*, tumbling windows of ``pane`` ms that the code generator, the engine's
triggers and Spark's partial states keep records in. One geometry answers, for every layer,
which windows exist and which panes they hold, so that the layers never compute alignment
themselves:

- window starts lie on the grid ``offset + k * slide`` (Flink's window offset, normalized into
  ``[0, slide)``); panes on ``offset + j * pane`` (``pane`` divides ``slide``);
- a sliding window (tumbling: ``slide == size``) is ``[s, s + size)``;
- a cumulative window (Flink's CUMULATE) is ``[s, s + k * pane)`` for ``k = 1 .. size / pane``,
  ``s`` the start of its cumulation period (``slide == size``): the windows of one period share
  their start and end at every pane boundary.

Either way the last window that holds a pane ``p`` ends at ``period(p) + size``, where
``period(p) = p - (p - offset) mod slide``: once that window fired, the pane can go.
"""

from __future__ import annotations

from dataclasses import dataclass

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def _clamp(t: int) -> int:
    return max(INT64_MIN, min(INT64_MAX, t))


@dataclass(frozen=True)
class PaneGeometry:
    size: int                 # the longest window (ms)
    slide: int                # between window starts (cumulative windows: the period, == size)
    pane: int                 # what records are kept in; divides size and slide
    offset: int = 0           # window starts are offset + k * slide; 0 <= offset < slide
    cumulative: bool = False  # windows end at every pane boundary of their period

    def describe(self) -> str:
        """For IR comments and messages: ``pane 5 ms of sliding 10 ms / 5 ms, offset 2 ms``."""
        if self.cumulative:
            text = f"pane {self.pane} ms of cumulative {self.size} ms by {self.pane} ms"
        elif self.pane == self.size:
            text = f"tumbling {self.size} ms"
        else:
            text = f"pane {self.pane} ms of sliding {self.size} ms / {self.slide} ms"
        return text + (f", offset {self.offset} ms" if self.offset else "")

    def floor(self, t: int, unit: int) -> int:
        """The largest ``offset + k * unit`` at or below ``t`` (``unit`` divides ``slide``)."""
        return t - (t - self.offset) % unit  # Python's % floors, also for negative times

    def pane_start(self, ts: int) -> int:
        return self.floor(ts, self.pane)

    @property
    def pane_offset(self) -> int:
        """The panes' grid offset, in ``[0, pane)``."""
        return self.offset % self.pane

    def last_end(self, t: int) -> int:
        """The end of the last window that holds time (or pane start) ``t``."""
        return self.floor(t, self.slide) + self.size

    @property
    def end_offset(self) -> int:
        """Sliding windows: their ends lie on ``end_offset + k * slide``, in ``[0, slide)``."""
        return (self.offset + self.size) % self.slide

    def first_end(self, p: int) -> int:
        """The end of the first window that holds pane ``p`` (the earliest to fire; the fused
        loop computes it the same way for allowed lateness: ``window_assign.ll.j2``)."""
        if self.cumulative:
            return p + self.pane
        return p - (p - self.end_offset) % self.slide + self.slide  # the first end after p

    def next_end(self, t: int) -> int:
        """The smallest window end above ``t`` (clamped to int64)."""
        if self.cumulative:  # (every pane boundary ends a window)
            return _clamp(self.floor(t, self.pane) + self.pane)
        return _clamp(t - (t - self.end_offset) % self.slide + self.slide)

    def windows_of(self, ts: int) -> list[tuple[int, int]]:
        """The windows ``(start, end)`` that hold event time ``ts``, by start then end."""
        first = self.floor(ts, self.slide)
        if self.cumulative:
            k = (ts - first) // self.pane + 1
            return [(first, first + j * self.pane) for j in range(k, self.size // self.pane + 1)]
        out = []
        s = first
        while s > ts - self.size:
            out.append((s, s + self.size))
            s -= self.slide
        return out[::-1]

    def _last_complete_start(self, watermark: int) -> int:
        """Sliding: the largest window start with ``start + size - 1 <= watermark``."""
        return self.floor(watermark - self.size + 1, self.slide)

    def ready_windows(self, pane_starts, previous: int | None, watermark: int | None) -> list[tuple[int, int]]:
        """The windows ``(start, end)`` that hold one of ``pane_starts`` and are complete at
        ``watermark`` (``end - 1 <= watermark``; None: +infinity) but were not at ``previous``
        (None: -infinity), ordered by end. Empty windows are not listed."""
        if not len(pane_starts):
            return []
        hi = INT64_MAX if watermark is None else int(watermark)
        lo = None if previous is None else int(previous)
        if self.cumulative:
            return self._ready_cumulative(pane_starts, lo, hi)
        import numpy as np  # (the DSL does not load numpy until a kernel asks)
        p = np.unique(np.asarray(pane_starts, dtype=np.int64)) - self.offset  # on the epoch's grid
        size, slide = self.size, self.slide
        first = -((size - 1 - p) // slide) * slide   # ceil((p - size + 1) / slide) * slide
        last = p - p % slide                         # floor(p / slide) * slide
        if lo is not None:
            first = np.maximum(first, _clamp(self._last_complete_start(lo) - self.offset + slide))
        last = np.minimum(last, _clamp(self._last_complete_start(hi) - self.offset))
        counts = np.maximum((last - first) // slide + 1, 0)
        if not counts.sum():
            return []
        starts = np.repeat(first, counts) + slide * (np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts,
                                                                                        counts))
        return [(int(s) + self.offset, int(s) + self.offset + size) for s in np.unique(starts)]

    def _ready_cumulative(self, pane_starts, lo: int | None, hi: int) -> list[tuple[int, int]]:
        """Per cumulation period holding a pane: its windows from the one ending after its first
        pane up to the whole period, those with ``lo < end - 1 <= hi``."""
        first_pane: dict[int, int] = {}
        for p in (int(x) for x in pane_starts):
            s = self.floor(p, self.slide)
            first_pane[s] = min(first_pane.get(s, p), p)
        out = []
        for s in sorted(first_pane):
            end = first_pane[s] + self.pane
            if lo is not None:
                end = max(end, self.floor(lo + 1, self.pane) + self.pane)  # first end past lo + 1
            while end <= s + self.size and end - 1 <= hi:
                out.append((s, end))
                end += self.pane
        return out


__all__ = ["PaneGeometry"]
