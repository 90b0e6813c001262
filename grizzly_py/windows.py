"""Window assigners (Flink names) and the kinds of window they make.

An assigner is a frozen description of one query's windows (``TumblingEventTimeWindows.of(...)``);
its ``kind`` (a ``WindowKind``) says, once for every layer, what that kind of window is and which
of the engine's paths can run it: the DSL and the plan read the output columns and the join
support, the code generator its lowering rule (``codegen/rules.py``, keyed by kind) and
variants, the engine whether its records may be cut into morsels, Spark how it distributes.

Windows are aligned to the epoch; a window ``[start, end)`` holds ``start <= ts < end``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .time import to_millis


@dataclass(frozen=True, eq=False)
class WindowKind:
    """One kind of window, described for every layer (as Flink's ``WindowAssigner`` describes its
    windows, trigger and serializer).

    - ``clock``: what opens and fires its windows: ``"event"`` time (the watermark), the
      ``"processing"`` time (the wall clock at the batch), or a ``"count"`` of a key's records;
    - ``merging``: a key's windows merge as records arrive (sessions);
    - ``parallel``: its records may be cut into morsels for several workers, each with a state of
      its own merged when a window fires (otherwise one worker takes the records in stream order);
    - ``shared_state``: may keep one state that every worker updates atomically;
    - ``sort_grouping``: may group by sorting key/pointer arrays instead of hash tables;
    - ``regrouping``: ``grouping="auto"`` may switch it between the two at window boundaries;
    - ``adaptive``: has code variants beyond the generic one (instrumented, optimized);
    - ``joins``: window joins take it;
    - ``spark``: how Spark distributes it: ``"partials"`` (each task pre-aggregates, partial states
      merge by window and key), ``"keyed"`` (a key's records in one task, in stream order), or
      ``"one_task"``.
    """

    name: str
    clock: str
    merging: bool = False
    parallel: bool = False
    shared_state: bool = False
    sort_grouping: bool = False
    regrouping: bool = False
    adaptive: bool = False
    joins: bool = False
    spark: str = "one_task"

    @property
    def window_columns(self) -> bool:
        """Whether results carry ``window_start``/``window_end`` (count windows have no time bounds)."""
        return self.clock != "count"

    @property
    def label(self) -> str:
        """The kind's name for messages (``tumbling processing``)."""
        return self.name.replace("_", " ")

    def __str__(self):
        return self.name

    def __eq__(self, other):
        if isinstance(other, str):  # (a kind is asked for what it can do, not compared with a name)
            raise TypeError(f"a WindowKind compared with the string {other!r}: ask its capabilities "
                            f"(kind.clock, kind.shared_state, ...) or compare it with a WindowKind")
        return isinstance(other, WindowKind) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


TUMBLING = WindowKind("tumbling", "event", parallel=True, shared_state=True, sort_grouping=True, regrouping=True,
                      adaptive=True, joins=True, spark="partials")
SLIDING = WindowKind("sliding", "event", parallel=True, shared_state=True, sort_grouping=True, adaptive=True,
                     joins=True, spark="partials")
SESSION = WindowKind("session", "event", merging=True, joins=True, spark="keyed")
TUMBLING_PROCESSING = WindowKind("tumbling_processing", "processing", parallel=True, sort_grouping=True,
                                 adaptive=True, spark="partials")
SLIDING_PROCESSING = WindowKind("sliding_processing", "processing", parallel=True, sort_grouping=True,
                                adaptive=True, spark="partials")
COUNT = WindowKind("count", "count")
WINDOW_KINDS = (TUMBLING, SLIDING, SESSION, TUMBLING_PROCESSING, SLIDING_PROCESSING, COUNT)


class WindowAssigner:
    """Base of all assigners: what ``KeyedStream.window`` and ``DataStream.window_all`` take."""

    kind: WindowKind

    @property
    def is_event_time(self) -> bool:
        """Whether the watermark (event time) opens and fires its windows."""
        return self.kind.clock == "event"

    @property
    def description(self) -> str:
        """The assigner as it would be written in a query, for plans and messages."""
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
    """Fixed, non-overlapping event-time windows ``[k*size, (k+1)*size)``, aligned to the epoch;
    each record is in exactly one. Build with ``of``."""

    size_ms: int
    kind = TUMBLING

    def __post_init__(self):
        _positive(self.size_ms, "window size")

    @staticmethod
    def of(size) -> "TumblingEventTimeWindows":
        """Windows of ``size`` (``Time.seconds(10)``, ``"10 seconds"`` or a ``timedelta``).
        ``TypeError`` for a bare number, ``ValueError`` for a size that is not positive."""
        return TumblingEventTimeWindows(to_millis(size, what="TumblingEventTimeWindows.of"))

    def window_start(self, ts: int) -> int:
        """The start of the window that holds event time ``ts`` (ms)."""
        return ts - ts % self.size_ms  # Python's % floors, also for negative ts

    def windows_of(self, ts: int) -> list[tuple[int, int]]:
        """The ``(start, end)`` of the one window that holds event time ``ts`` (ms)."""
        s = self.window_start(ts)
        return [(s, s + self.size_ms)]

    def __repr__(self):
        return f"TumblingEventTimeWindows.of(Time.milliseconds({self.size_ms}))"


@dataclass(frozen=True)
class SlidingEventTimeWindows(WindowAssigner):
    """Event-time windows of ``size`` that start every ``slide`` (``[k*slide, k*slide + size)``),
    aligned to the epoch; a record is in every window that holds its event time. Build with ``of``."""

    size_ms: int
    slide_ms: int
    kind = SLIDING

    def __post_init__(self):
        _positive(self.size_ms, "window size")
        _positive(self.slide_ms, "window slide")

    @staticmethod
    def of(size, slide) -> "SlidingEventTimeWindows":
        """Windows of ``size`` every ``slide`` (durations, as for ``TumblingEventTimeWindows.of``);
        ``ValueError`` for a size or slide that is not positive."""
        return SlidingEventTimeWindows(to_millis(size, what="SlidingEventTimeWindows.of"),
                                       to_millis(slide, what="SlidingEventTimeWindows.of"))

    def windows_of(self, ts: int) -> list[tuple[int, int]]:
        """The ``(start, end)`` of every window that holds event time ``ts`` (ms), oldest first."""
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
    """Keyed session windows: each record opens ``[ts, ts + gap)`` and a key's overlapping
    windows merge, so a session ends after ``gap`` without records of its key. Build with
    ``with_gap``."""

    gap_ms: int
    kind = SESSION

    def __post_init__(self):
        _positive(self.gap_ms, "session gap")

    @staticmethod
    def with_gap(gap) -> "EventTimeSessionWindows":
        """Sessions that close after ``gap`` (a duration) without a record of their key."""
        return EventTimeSessionWindows(to_millis(gap, what="EventTimeSessionWindows.with_gap"))

    def __repr__(self):
        return f"EventTimeSessionWindows.with_gap(Time.milliseconds({self.gap_ms}))"


@dataclass(frozen=True)
class TumblingProcessingTimeWindows(WindowAssigner):
    """Tumbling windows over the wall clock at which records are processed (read once per
    batch), not their event time. Build with ``of``."""

    size_ms: int
    kind = TUMBLING_PROCESSING

    def __post_init__(self):
        _positive(self.size_ms, "window size")

    @staticmethod
    def of(size) -> "TumblingProcessingTimeWindows":
        """Windows of ``size`` (a duration) of processing time."""
        return TumblingProcessingTimeWindows(to_millis(size, what="TumblingProcessingTimeWindows.of"))

    def __repr__(self):
        return f"TumblingProcessingTimeWindows.of(Time.milliseconds({self.size_ms}))"


@dataclass(frozen=True)
class SlidingProcessingTimeWindows(WindowAssigner):
    """Sliding windows over the wall clock at which records are processed. Build with ``of``."""

    size_ms: int
    slide_ms: int
    kind = SLIDING_PROCESSING

    def __post_init__(self):
        _positive(self.size_ms, "window size")
        _positive(self.slide_ms, "window slide")

    @staticmethod
    def of(size, slide) -> "SlidingProcessingTimeWindows":
        """Windows of ``size`` every ``slide`` (durations) of processing time."""
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
    kind = COUNT

    def __post_init__(self):
        for what, n in (("count window size", self.size), ("count window slide", self.slide)):
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise ValueError(f"{what} must be a positive number of records, got {n!r}")

    @property
    def tumbling(self) -> bool:
        """Whether the windows do not overlap (``slide == size``)."""
        return self.size == self.slide

    def __repr__(self):
        return f"CountWindows(size={self.size}, slide={self.slide})"
