"""Window assigners (Flink names) and the kinds of window they make.

An assigner is a frozen description of one query's windows (``TumblingEventTimeWindows.of(...)``);
its ``kind`` (a ``WindowKind``) says, once for every layer, what that kind of window is and which
of the engine's paths can run it: the DSL and the plan read the output columns and the join
support, the code generator its lowering rule (``codegen/rules.py``, keyed by kind) and
variants, the engine whether its records may be cut into morsels, Spark how it distributes.

Windows are aligned to the epoch plus an optional offset (Flink's ``of(size, offset)``); a window
``[start, end)`` holds ``start <= ts < end``. Where the windows of an aligned kind lie is its
assigner's ``geometry`` (``window_geometry.PaneGeometry``), which every layer asks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .time import to_millis
from .window_geometry import PaneGeometry


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
    - ``allowed_lateness``: takes ``allowed_lateness`` and ``side_output_late_data`` (Flink's
      DataStream API: a window is kept past its firing, late records update it and it fires again);
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
    allowed_lateness: bool = False
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
                      adaptive=True, joins=True, allowed_lateness=True, spark="partials")
SLIDING = WindowKind("sliding", "event", parallel=True, shared_state=True, sort_grouping=True, adaptive=True,
                     joins=True, allowed_lateness=True, spark="partials")
SESSION = WindowKind("session", "event", merging=True, joins=True, spark="keyed")
TUMBLING_PROCESSING = WindowKind("tumbling_processing", "processing", parallel=True, sort_grouping=True,
                                 adaptive=True, spark="partials")
SLIDING_PROCESSING = WindowKind("sliding_processing", "processing", parallel=True, sort_grouping=True,
                                adaptive=True, spark="partials")
COUNT = WindowKind("count", "count")
# (Spark: a partial state names its window by its start, which a period's windows share)
CUMULATIVE = WindowKind("cumulative", "event", parallel=True, shared_state=True, sort_grouping=True, adaptive=True,
                        allowed_lateness=True, spark="keyed")
# a running aggregate (no window): one global window per key that fires on every record
RUNNING = WindowKind("running", "count")
WINDOW_KINDS = (TUMBLING, SLIDING, SESSION, TUMBLING_PROCESSING, SLIDING_PROCESSING, COUNT, CUMULATIVE, RUNNING)


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


def _offset(offset, what: str) -> int:
    """Milliseconds of an ``offset=`` argument (None: 0)."""
    return 0 if offset is None else to_millis(offset, what=what)


def _check_offset(offset_ms: int, period_ms: int, assigner: str, period: str) -> None:
    """Flink's rule: ``abs(offset) < size`` (tumbling) or ``< slide`` (sliding)."""
    if not isinstance(offset_ms, int) or isinstance(offset_ms, bool):
        raise TypeError(f"{assigner}: the offset is a whole number of milliseconds, got {offset_ms!r}")
    if abs(offset_ms) >= period_ms:
        raise ValueError(f"{assigner}: the offset must satisfy abs(offset) < {period} (Flink's rule), got "
                         f"offset {offset_ms} ms with {period} {period_ms} ms")


def _offset_repr(offset_ms: int) -> str:
    return f", offset=Time.milliseconds({offset_ms})" if offset_ms else ""


class AlignedWindowAssigner(WindowAssigner):
    """Windows that are unions of panes on a fixed grid (tumbling, sliding, cumulative): their
    ``geometry`` says where, for every layer."""

    geometry: PaneGeometry

    def windows_of(self, ts: int) -> list[tuple[int, int]]:
        """The windows ``(start, end)`` holding event time ``ts`` (the reference's assignment)."""
        return self.geometry.windows_of(ts)


@dataclass(frozen=True)
class TumblingEventTimeWindows(AlignedWindowAssigner):
    """Fixed, non-overlapping event-time windows ``[offset + k*size, offset + (k+1)*size)``,
    aligned to the epoch plus ``offset`` (Flink's rule: ``abs(offset) < size``); each record is in
    exactly one. Build with ``of``."""

    size_ms: int
    offset_ms: int = 0
    kind = TUMBLING

    def __post_init__(self):
        _positive(self.size_ms, "window size")
        _check_offset(self.offset_ms, self.size_ms, "TumblingEventTimeWindows", "size")

    @staticmethod
    def of(size, offset=None) -> "TumblingEventTimeWindows":
        """Windows of ``size`` (``Time.seconds(10)``, ``"10 seconds"`` or a ``timedelta``), shifted
        by ``offset`` (a duration, may be negative). ``TypeError`` for a bare number,
        ``ValueError`` for a size that is not positive or an offset not smaller than it."""
        what = "TumblingEventTimeWindows.of"
        return TumblingEventTimeWindows(to_millis(size, what=what), _offset(offset, what))

    @property
    def geometry(self) -> PaneGeometry:
        """Where these windows and their panes lie (``window_geometry.PaneGeometry``)."""
        return PaneGeometry(self.size_ms, self.size_ms, self.size_ms, self.offset_ms % self.size_ms)

    def __repr__(self):
        return f"TumblingEventTimeWindows.of(Time.milliseconds({self.size_ms}){_offset_repr(self.offset_ms)})"


@dataclass(frozen=True)
class SlidingEventTimeWindows(AlignedWindowAssigner):
    """Event-time windows ``[s, s + size)`` starting at every ``s = offset + k*slide`` (Flink's
    rule: ``abs(offset) < slide``); a record is in every window that holds its event time. Build
    with ``of``."""

    size_ms: int
    slide_ms: int
    offset_ms: int = 0
    kind = SLIDING

    def __post_init__(self):
        _positive(self.size_ms, "window size")
        _positive(self.slide_ms, "window slide")
        _check_offset(self.offset_ms, self.slide_ms, "SlidingEventTimeWindows", "slide")

    @staticmethod
    def of(size, slide, offset=None) -> "SlidingEventTimeWindows":
        """Windows of ``size`` every ``slide``, shifted by ``offset`` (durations, as for
        ``TumblingEventTimeWindows.of``); ``ValueError`` for a size or slide that is not positive."""
        what = "SlidingEventTimeWindows.of"
        return SlidingEventTimeWindows(to_millis(size, what=what), to_millis(slide, what=what), _offset(offset, what))

    @property
    def geometry(self) -> PaneGeometry:
        """Where these windows and their panes lie (``window_geometry.PaneGeometry``)."""
        return PaneGeometry(self.size_ms, self.slide_ms, math.gcd(self.size_ms, self.slide_ms),
                            self.offset_ms % self.slide_ms)

    def __repr__(self):
        return (f"SlidingEventTimeWindows.of(Time.milliseconds({self.size_ms}), "
                f"Time.milliseconds({self.slide_ms}){_offset_repr(self.offset_ms)})")


@dataclass(frozen=True)
class CumulativeEventTimeWindows(AlignedWindowAssigner):
    """Flink's CUMULATE: per period ``[s, s + max_size)`` (``s`` a multiple of ``max_size``), the
    windows ``[s, s + step)``, ``[s, s + 2 * step)``, ..., ``[s, s + max_size)``; a record at
    ``ts`` is in each of them that ends after ``ts``. They share panes of ``step``."""

    max_size_ms: int
    step_ms: int
    kind = CUMULATIVE

    def __post_init__(self):
        _positive(self.max_size_ms, "cumulative window max_size")
        _positive(self.step_ms, "cumulative window step")
        if self.max_size_ms % self.step_ms:
            raise ValueError(f"CumulativeEventTimeWindows: max_size ({self.max_size_ms} ms) must be a multiple "
                             f"of step ({self.step_ms} ms)")

    @staticmethod
    def of(max_size, step) -> "CumulativeEventTimeWindows":
        """Cumulative windows growing by ``step`` up to ``max_size`` (a multiple of ``step``)."""
        what = "CumulativeEventTimeWindows.of"
        return CumulativeEventTimeWindows(to_millis(max_size, what=what), to_millis(step, what=what))

    @property
    def geometry(self) -> PaneGeometry:
        """Where these windows and their panes lie (``window_geometry.PaneGeometry``)."""
        return PaneGeometry(self.max_size_ms, self.max_size_ms, self.step_ms, cumulative=True)

    def __repr__(self):
        return (f"CumulativeEventTimeWindows.of(Time.milliseconds({self.max_size_ms}), "
                f"Time.milliseconds({self.step_ms}))")


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
class TumblingProcessingTimeWindows(AlignedWindowAssigner):
    """Tumbling windows over the wall clock at which records are processed (read once per
    batch), not their event time. Build with ``of``."""

    size_ms: int
    kind = TUMBLING_PROCESSING

    @property
    def geometry(self) -> PaneGeometry:
        """Where these windows and their panes lie (``window_geometry.PaneGeometry``)."""
        return PaneGeometry(self.size_ms, self.size_ms, self.size_ms)

    def __post_init__(self):
        _positive(self.size_ms, "window size")

    @staticmethod
    def of(size) -> "TumblingProcessingTimeWindows":
        """Windows of ``size`` (a duration) of processing time."""
        return TumblingProcessingTimeWindows(to_millis(size, what="TumblingProcessingTimeWindows.of"))

    def __repr__(self):
        return f"TumblingProcessingTimeWindows.of(Time.milliseconds({self.size_ms}))"


@dataclass(frozen=True)
class SlidingProcessingTimeWindows(AlignedWindowAssigner):
    """Sliding windows over the wall clock at which records are processed. Build with ``of``."""

    size_ms: int
    slide_ms: int
    kind = SLIDING_PROCESSING

    @property
    def geometry(self) -> PaneGeometry:
        """Where these windows and their panes lie (``window_geometry.PaneGeometry``)."""
        return PaneGeometry(self.size_ms, self.slide_ms, math.gcd(self.size_ms, self.slide_ms))

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


@dataclass(frozen=True)
class RunningWindow(WindowAssigner):
    """How a running aggregate (``keyed.aggregate`` without a window, ``plan.RunningAggregateNode``)
    runs: Flink's ``GlobalWindows`` with a trigger on every record, whose result retracts the
    previous one. One global window per key, fired by each of its records in stream order; it is
    never cleared. Not a user-facing assigner: the physical plan builds it."""

    kind = RUNNING

    def __repr__(self):
        return "RunningWindow()"

