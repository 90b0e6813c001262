"""Window assigners (Flink names). Each one is a frozen description; the code generator and the
reference evaluator decide what it means for a record.

Windows are aligned to the epoch; a window ``[start, end)`` holds ``start <= ts < end``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .time import to_millis


class WindowAssigner:
    """Base of all assigners."""

    kind: str = ""
    is_event_time = True

    @property
    def description(self) -> str:
        return repr(self)


MAX_WINDOW_MS = 1 << 53  # about 285,000 years; window arithmetic stays far from int64 limits


def _positive(ms: int, what: str) -> int:
    if ms <= 0:
        raise ValueError(f"{what} must be positive, got {ms} ms")
    if ms > MAX_WINDOW_MS:
        raise ValueError(f"{what} must be at most {MAX_WINDOW_MS} ms, got {ms} ms")
    return ms


@dataclass(frozen=True)
class TumblingEventTimeWindows(WindowAssigner):
    size_ms: int
    kind = "tumbling"

    def __post_init__(self):
        _positive(self.size_ms, "window size")

    @staticmethod
    def of(size) -> "TumblingEventTimeWindows":
        return TumblingEventTimeWindows(to_millis(size, what="TumblingEventTimeWindows.of"))

    def window_start(self, ts: int) -> int:
        return ts - ts % self.size_ms  # Python's % floors, also for negative ts

    def windows_of(self, ts: int) -> list[tuple[int, int]]:
        s = self.window_start(ts)
        return [(s, s + self.size_ms)]

    def __repr__(self):
        return f"TumblingEventTimeWindows.of(Time.milliseconds({self.size_ms}))"


@dataclass(frozen=True)
class SlidingEventTimeWindows(WindowAssigner):
    size_ms: int
    slide_ms: int
    kind = "sliding"

    def __post_init__(self):
        _positive(self.size_ms, "window size")
        _positive(self.slide_ms, "window slide")

    @staticmethod
    def of(size, slide) -> "SlidingEventTimeWindows":
        return SlidingEventTimeWindows(to_millis(size, what="SlidingEventTimeWindows.of"),
                                       to_millis(slide, what="SlidingEventTimeWindows.of"))

    def windows_of(self, ts: int) -> list[tuple[int, int]]:
        last = ts - ts % self.slide_ms
        out = []
        s = last
        while s > ts - self.size_ms:
            out.append((s, s + self.size_ms))
            s -= self.slide_ms
        return out[::-1]

    def __repr__(self):
        return f"SlidingEventTimeWindows.of(Time.milliseconds({self.size_ms}), Time.milliseconds({self.slide_ms}))"


@dataclass(frozen=True)
class EventTimeSessionWindows(WindowAssigner):
    gap_ms: int
    kind = "session"

    def __post_init__(self):
        _positive(self.gap_ms, "session gap")

    @staticmethod
    def with_gap(gap) -> "EventTimeSessionWindows":
        return EventTimeSessionWindows(to_millis(gap, what="EventTimeSessionWindows.with_gap"))

    def __repr__(self):
        return f"EventTimeSessionWindows.with_gap(Time.milliseconds({self.gap_ms}))"


@dataclass(frozen=True)
class TumblingProcessingTimeWindows(WindowAssigner):
    size_ms: int
    kind = "tumbling_processing"
    is_event_time = False

    def __post_init__(self):
        _positive(self.size_ms, "window size")

    @staticmethod
    def of(size) -> "TumblingProcessingTimeWindows":
        return TumblingProcessingTimeWindows(to_millis(size, what="TumblingProcessingTimeWindows.of"))

    def __repr__(self):
        return f"TumblingProcessingTimeWindows.of(Time.milliseconds({self.size_ms}))"


@dataclass(frozen=True)
class SlidingProcessingTimeWindows(WindowAssigner):
    size_ms: int
    slide_ms: int
    kind = "sliding_processing"
    is_event_time = False

    def __post_init__(self):
        _positive(self.size_ms, "window size")
        _positive(self.slide_ms, "window slide")

    @staticmethod
    def of(size, slide) -> "SlidingProcessingTimeWindows":
        return SlidingProcessingTimeWindows(to_millis(size, what="SlidingProcessingTimeWindows.of"),
                                            to_millis(slide, what="SlidingProcessingTimeWindows.of"))

    def __repr__(self):
        return (f"SlidingProcessingTimeWindows.of(Time.milliseconds({self.size_ms}), "
                f"Time.milliseconds({self.slide_ms}))")




@dataclass(frozen=True)
class CountWindows(WindowAssigner):
    """Keyed count windows: fire every ``slide`` records of a key over its last ``size`` records
    (``slide == size``: tumbling). Built by ``KeyedStream.count_window``."""

    size: int
    slide: int
    kind = "count"
    is_event_time = False

    def __post_init__(self):
        for what, n in (("count window size", self.size), ("count window slide", self.slide)):
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise ValueError(f"{what} must be a positive number of records, got {n!r}")

    @property
    def tumbling(self) -> bool:
        return self.size == self.slide

    def __repr__(self):
        return f"CountWindows(size={self.size}, slide={self.slide})"
