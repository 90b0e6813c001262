"""Performance counters for adaptive compilation (issue 5; Grizzly paper sections 3.3.4, 6.1.2,
6.2): per-task counts read through ``perf_event_open`` or PAPI where the host has a PMU, the task
clock where it has only software events, the thread's CPU time everywhere, and the detector that
tells the controller when the per-record figures have changed for good.

    source = open_counter_source("auto")
    with source.measure(records) as m:
        run_the_kernel()
    if detector.observe(m.sample):
        ...  # re-profile

``docs/counters.md`` describes the fallback chain, what each host offers, and the overhead.
Importing this package touches no counter.
"""

from .detector import Change, ChangeDetector
from .sample import CounterSample
from .scripted import ScriptedCounterSource
from .sources import (KINDS, ClockSource, CounterSource, CounterUnavailable, Measurement, NullSource,
                      PapiSource, PerfSource, open_counter_source)

__all__ = ["open_counter_source", "CounterSource", "CounterSample", "CounterUnavailable", "Measurement",
           "PerfSource", "PapiSource", "ClockSource", "NullSource", "ScriptedCounterSource",
           "ChangeDetector", "Change", "KINDS"]
