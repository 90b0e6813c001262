"""Counter sources: where the counts of a task come from, and the fallback chain that picks one.

Every source measures the calling thread (worker threads measure their own tasks): its counters
are opened lazily, once per thread, and closed when the source closes or the thread ends. A task
costs one read at its start and one at its end, each a single syscall or clock call for all the
source's events (a perf group read, one ``PAPI_read``, one ``thread_time_ns``).

Sources, in the order ``open_counter_source("auto")`` tries them:

- ``perf``: hardware events through ``perf_event_open`` (``PerfSource(hardware=True)``);
- ``papi``: hardware events through libpapi, only where one is found and reads non-zero counts;
- ``software``: perf software events, task clock and page faults (``PerfSource(hardware=False)``);
- ``clock``: the thread's CPU time from ``time.thread_time_ns`` (always available).

``none`` measures nothing; ``scripted.ScriptedCounterSource`` replays given figures for tests.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
import weakref
from operator import sub
from time import perf_counter_ns
from typing import Mapping, Sequence

from . import papi as papi_module
from . import perf
from .sample import FIGURE_EVENTS, HARDWARE_FIGURES, TIME_FIGURES, CounterSample

KINDS = ("auto", "perf", "papi", "software", "clock", "none")


class CounterUnavailable(RuntimeError):
    """The asked-for counter source does not work on this host; ``str()`` says why."""


class _Failed:
    """A thread whose counters could not be opened: its samples carry no figures."""

    def __init__(self, why: str):
        self.why = why


_CLOSED = _Failed("the counter source is closed")


class CounterSource:
    """The interface the engine uses; subclasses say how a thread opens and reads its counters."""

    name = "none"
    events: tuple[str, ...] = ()
    hardware = False
    figures: tuple[str, ...] = ()

    def __init__(self, rejected: Sequence[str] = ()):
        self.rejected = list(rejected)  # why each source tried before this one was not used
        self.failures: dict[str, int] = {}  # why a thread could not open its counters -> threads
        self.closed = False
        self.own_cost: tuple[float, ...] | None = None  # per event, see calibrate()
        self._local = threading.local()
        # every thread's open counters, to close them with the source; weak, so that a thread's
        # counters close when the thread ends (threading.local drops them)
        self._readers: weakref.WeakSet = weakref.WeakSet()
        self._lock = threading.Lock()

    # -- what a subclass provides ---------------------------------------------------------------

    def _open_reader(self):
        """The calling thread's counters: an object with ``read() -> tuple`` (cumulative counts
        in ``events`` order) and ``close()``."""
        raise NotImplementedError

    def _figure_events(self) -> dict[str, str]:
        """Watched figure -> the event it divides by the records (cached after the first call)."""
        cached = self.__dict__.get("_figure_events_cache")
        if cached is None:
            cached = self._figure_events_cache = {f: self._event_of(f) for f in self.figures}
        return cached

    def _event_of(self, figure: str) -> str:
        return FIGURE_EVENTS[figure]

    # -- measuring ------------------------------------------------------------------------------

    def _reader(self):
        """The calling thread's counters, opened on its first task."""
        if self.closed:
            return _CLOSED
        reader = getattr(self._local, "reader", None)
        if reader is None:
            try:
                reader = self._open_reader()
            except (OSError, papi_module.PapiError) as e:
                reader = _Failed(f"{type(e).__name__}: {e}")
                with self._lock:
                    self.failures[reader.why] = self.failures.get(reader.why, 0) + 1
            else:
                with self._lock:
                    self._readers.add(reader)
            self._local.reader = reader
        return reader

    def start(self):
        """A token for :meth:`stop`: the calling thread's counts now."""
        reader = _CLOSED if self.closed else self._local.__dict__.get("reader") or self._reader()
        counts = None
        if reader.__class__ is not _Failed:
            try:
                counts = reader.read()
            except OSError:  # closed under us: this task gets no figures
                pass
        return reader, counts, perf_counter_ns()

    def stop(self, token, records: int) -> CounterSample:
        """The sample of the task started by ``token``, which processed ``records`` records."""
        reader, before, started = token
        deltas = {}
        if before is not None:
            try:
                after = reader.read()
            except OSError:
                pass
            else:
                if self.own_cost is None:
                    deltas = dict(zip(self.events, map(sub, after, before)))
                else:
                    deltas = dict(zip(self.events, map(_net, after, before, self.own_cost)))
        return CounterSample.of(records, deltas, self._figure_events(), perf_counter_ns() - started,
                                self.name)

    def calibrate(self, tasks: int = 200) -> tuple[float, ...]:
        """Measure ``tasks`` empty tasks in this thread and keep the median count of each event
        as :attr:`own_cost`: what reading the counters itself adds inside a task's window (half
        of each read lands inside it; ~2 us of task clock per task on the development machine).
        Every later sample's deltas are net of it, so that small tasks are not charged for it."""
        self.own_cost = None
        empty = [self.stop(self.start(), 1).deltas for _ in range(tasks)]
        if all(len(d) == len(self.events) for d in empty):
            self.own_cost = tuple(statistics.median(d[name] for d in empty) for name in self.events)
        return self.own_cost

    def measure(self, records: int = 0) -> "Measurement":
        """``with source.measure(n) as m: ...`` then ``m.sample``; ``m.records`` may be set inside
        the block when the count is known only afterwards."""
        return Measurement(self, records)

    # -- reporting and closing ------------------------------------------------------------------

    def describe(self, notes: bool = True) -> str:
        """One line for reports: the source, its events and figures, and (``notes``) the
        diagnostics of ``notes()``."""
        text = f"counters: {self.name}"
        if self.events:
            text += f" ({', '.join(self.events)}; watching {', '.join(self.figures)})"
        diagnostics = self.notes() if notes else []
        return text + (f"; {'; '.join(diagnostics)}" if diagnostics else "")

    def notes(self) -> list[str]:
        """Diagnostics: why the sources tried before this one were not used, and threads that
        could not open counters (``grizzly run --verbose`` shows them)."""
        return list(self.rejected) + [f"{n} thread(s) without counters: {why}" for why, n in self.failures.items()]

    def close(self) -> None:
        """Close every thread's counters (call it once the tasks are done); samples of tasks
        still running or started later carry no figures."""
        self.closed = True
        with self._lock:
            readers = list(self._readers)
            self._readers.clear()
        for reader in readers:
            reader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"


class Measurement:
    """The context manager of :meth:`CounterSource.measure`."""

    def __init__(self, source: CounterSource, records: int):
        self.source, self.records, self.sample = source, records, None

    def __enter__(self) -> "Measurement":
        self._token = self.source.start()
        return self

    def __exit__(self, *exc) -> None:
        self.sample = self.source.stop(self._token, self.records)


class _PerfReader:
    """One thread's perf group."""

    def __init__(self, events: dict[str, tuple[int, int]]):
        self.group = perf.PerfGroup(events)
        self.read = self.group.read
        self.close = self.group.close


# per process, by ``hardware``: the probe's failure, or (the calibrated own cost,): a job opens
# its source in ~0.2 ms instead of probing and calibrating again (~2-4 ms)
_PERF_PROBES: dict[bool, "CounterUnavailable | tuple"] = {}


def forget_probes() -> None:
    """Probe and calibrate the perf events again on the next open (the host changed: tests
    that fake one)."""
    _PERF_PROBES.clear()


class PerfSource(CounterSource):
    """``perf_event_open`` counters of the calling thread, one group per thread (``pid=0``,
    ``cpu=-1``, ``PERF_FORMAT_GROUP``). Hardware: cycles, instructions, branch and cache misses
    (and the task clock); software: task clock and page faults. Raises
    :class:`CounterUnavailable` when the probe in the constructing thread fails."""

    def __init__(self, hardware: bool, rejected: Sequence[str] = ()):
        super().__init__(rejected)
        self.hardware = hardware
        self._events = ({**perf.HARDWARE_EVENTS, "task_clock": perf.SOFTWARE_EVENTS["task_clock"]}
                        if hardware else dict(perf.SOFTWARE_EVENTS))
        self.events = tuple(self._events)
        self.figures = HARDWARE_FIGURES if hardware else TIME_FIGURES
        self.name = "perf_event hardware" if hardware else "perf_event software"
        known = _PERF_PROBES.get(hardware)
        if known is None:  # once per process: whether the events count, and what a read costs
            try:
                self._probe()
            except CounterUnavailable as e:
                _PERF_PROBES[hardware] = e
                raise
            known = _PERF_PROBES[hardware] = (self.calibrate(),)
        elif isinstance(known, CounterUnavailable):
            raise CounterUnavailable(str(known))
        else:
            self.own_cost = known[0]

    def _probe(self) -> None:
        first = next(iter(self._events))
        try:
            group = perf.PerfGroup(self._events)
        except OSError as e:
            failed = self._first_failing_event()
            raise CounterUnavailable(f"perf_event_open({failed or first}) failed with "
                                     f"{perf.describe_errno(e.errno or 0)}") from None
        try:
            before = group.read()
            _busy(20_000)
            after = group.read()
        finally:
            group.close()
        counted = {name: b - a for name, a, b in zip(self.events, before, after)}
        must_count = "instructions" if self.hardware else "task_clock"
        if counted[must_count] <= 0:
            raise CounterUnavailable(f"perf_event {self.name.split()[-1]} events open but count "
                                     f"nothing ({must_count} stayed 0: a virtual PMU, or the group "
                                     f"cannot be scheduled)")

    def _first_failing_event(self) -> str | None:
        """Which event the kernel refuses, opened alone (for describe())."""
        for name, kind in self._events.items():
            try:
                fd = perf.perf_event_open(perf.event_attr(kind))
            except OSError:
                return name
            os.close(fd)
        return None

    def _open_reader(self) -> _PerfReader:
        return _PerfReader(self._events)


class _PapiReader:
    def __init__(self, library: papi_module.PapiLibrary, events: dict[str, tuple[str, ...]]):
        self.event_set = library.event_set(events)
        self.read = self.event_set.read
        self.close = self.event_set.close


class PapiSource(CounterSource):
    """Counters through libpapi (the paper measured with PAPI 5.5): one event set per thread.
    By default the hardware events; ``events`` may name others (PAPI names to try, per event).
    Raises :class:`CounterUnavailable` when the library is missing, refuses an event, or the
    first event reads zero over a busy loop."""

    def __init__(self, library: str | None = None, events: Mapping[str, Sequence[str]] | None = None,
                 rejected: Sequence[str] = ()):
        super().__init__(rejected)
        path = library or papi_module.find_papi()
        if path is None:
            raise CounterUnavailable("no libpapi found ($LD_LIBRARY_PATH, /etc/ld.so.cache)")
        try:
            self.library = papi_module.PapiLibrary.load(path)
        except papi_module.PapiError as e:
            raise CounterUnavailable(f"libpapi {path}: {e}") from None
        self._events = {name: tuple(names) for name, names in (events or papi_module.HARDWARE_EVENTS).items()}
        self.events = tuple(self._events)
        self.hardware = events is None
        self.figures = HARDWARE_FIGURES if self.hardware else (
            TIME_FIGURES if "task_clock" in self._events else ())
        self.name = "papi"
        try:
            reader = _PapiReader(self.library, self._events)
        except papi_module.PapiError as e:
            raise CounterUnavailable(f"papi {self.library.version} ({path}): {e}") from None
        try:
            before = reader.read()
            _busy(20_000)
            after = reader.read()
        finally:
            reader.close()
        if after[0] - before[0] <= 0:
            raise CounterUnavailable(f"papi {self.library.version} ({path}): "
                                     f"{self.events[0]} reads zero")
        self.calibrate()

    def _open_reader(self) -> _PapiReader:
        return _PapiReader(self.library, self._events)


class _ClockReader:
    @staticmethod
    def read() -> tuple[int]:
        return (time.thread_time_ns(),)

    def close(self) -> None:
        pass


class ClockSource(CounterSource):
    """The thread's CPU time (``time.thread_time_ns``), with wall time in every sample: works
    everywhere, reads ns per record only."""

    name = "clock"
    events = ("thread_cpu_ns",)
    figures = TIME_FIGURES

    def __init__(self, rejected: Sequence[str] = ()):
        super().__init__(rejected)
        self.calibrate()

    def _event_of(self, figure: str) -> str:
        return "thread_cpu_ns"

    def _open_reader(self) -> _ClockReader:
        return _ClockReader()


class NullSource(CounterSource):
    """Counters turned off: samples carry records and wall time, no figures."""

    name = "none"

    def start(self):
        return None, None, perf_counter_ns()

    def stop(self, token, records: int) -> CounterSample:
        return CounterSample(records, {}, {}, perf_counter_ns() - token[2], self.name)


def _net(after: float, before: float, own_cost: float) -> float:
    return max(after - before - own_cost, 0)


def _busy(n: int) -> int:
    """A little CPU work for the probes."""
    total = 0
    for i in range(n):
        total += i & 7
    return total


def open_counter_source(kind: str = "auto", *, papi_library: str | None = None) -> CounterSource:
    """The counter source ``kind`` names. ``"auto"`` tries perf hardware, PAPI, perf software and
    the clock in that order and never fails (``describe()`` says why earlier ones were passed
    over); any other kind raises :class:`CounterUnavailable` where it does not work here."""
    if kind not in KINDS:
        raise ValueError(f"unknown counter source {kind!r}; choose one of {', '.join(KINDS)}")
    makers = {"perf": lambda rejected: PerfSource(True, rejected),
              "papi": lambda rejected: PapiSource(papi_library, rejected=rejected),
              "software": lambda rejected: PerfSource(False, rejected),
              "clock": lambda rejected: ClockSource(rejected),
              "none": lambda rejected: NullSource(rejected)}
    if kind != "auto":
        return makers[kind](())
    rejected: list[str] = []
    for candidate in ("perf", "papi", "software"):
        try:
            return makers[candidate](rejected)
        except CounterUnavailable as e:
            rejected.append(f"{candidate} rejected: {e}")
        except Exception as e:  # a broken library must not stop a job: fall back, and say why
            rejected.append(f"{candidate} rejected: {type(e).__name__}: {e}")
    return ClockSource(rejected)
