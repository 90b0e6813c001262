"""Processing-time windows: the clock at which a batch is processed is every record's time.

The clock is replaced by a scripted one, so that each batch's processing time is known; the
result must equal the same query in event time over a column holding those times.
"""

import itertools

import numpy as np
import pyarrow as pa
import pytest

import grizzly_py as gz
from grizzly_py import Time, agg
from grizzly_py.engine import kernels
from grizzly_py.windows import (SlidingEventTimeWindows, SlidingProcessingTimeWindows, TumblingEventTimeWindows,
                                TumblingProcessingTimeWindows)


@pytest.mark.parametrize("processing, event", [
    (TumblingProcessingTimeWindows.of(Time.milliseconds(100)), TumblingEventTimeWindows.of(Time.milliseconds(100))),
    (SlidingProcessingTimeWindows.of(Time.milliseconds(100), Time.milliseconds(40)),
     SlidingEventTimeWindows.of(Time.milliseconds(100), Time.milliseconds(40))),
])
def test_processing_time_windows_use_the_clock_per_batch(monkeypatch, processing, event):
    rng = np.random.default_rng(1)
    batches = [pa.record_batch({"k": rng.integers(0, 3, 20), "v": rng.integers(0, 10, 20)}) for _ in range(12)]
    times = [1_000 + 37 * i for i in range(len(batches))]           # the scripted clock, one read per batch
    clock = itertools.chain(times, itertools.repeat(times[-1]))
    monkeypatch.setattr(kernels, "wall_clock_ms", lambda: next(clock))
    out = (gz.StreamEnvironment().from_arrow(batches).key_by("k").window(processing)
           .aggregate(n=agg.count(), s=agg.sum("v")).execute_and_collect())
    stamped = [b.append_column("ts", pa.array([t] * b.num_rows, pa.int64())) for b, t in zip(batches, times)]
    expected = (gz.StreamEnvironment().from_arrow(stamped, timestamp="ts").key_by("k").window(event)
                .aggregate(n=agg.count(), s=agg.sum("v")).execute_and_collect())
    assert out.to_pylist() == expected.to_pylist()
    assert out.num_rows > 3


def test_processing_time_never_goes_backwards(monkeypatch):
    clock = iter([500, 100, 700])  # the wall clock stepping back must not reopen fired windows
    monkeypatch.setattr(kernels, "wall_clock_ms", lambda: next(clock))
    batches = [pa.record_batch({"k": [1]}) for _ in range(3)]
    out = (gz.StreamEnvironment().from_arrow(batches).key_by("k")
           .window(TumblingProcessingTimeWindows.of(Time.milliseconds(100))).aggregate(n=agg.count())
           .execute_and_collect())
    assert out.to_pylist() == [{"k": 1, "window_start": 500, "window_end": 600, "n": 2},
                               {"k": 1, "window_start": 700, "window_end": 800, "n": 1}]


def test_processing_time_window_after_an_event_time_window_uses_its_own_clock(monkeypatch):
    clock = itertools.count(1_000, 1)  # any reading: the downstream window must not drop records
    monkeypatch.setattr(kernels, "wall_clock_ms", lambda: next(clock))
    future = 10 ** 13  # event times far ahead of the clock
    batches = [pa.record_batch({"ts": pa.array(v, pa.int64())}) for v in ([future, future + 10], [future + 20], [future + 30])]
    env = gz.StreamEnvironment()
    (env.from_arrow(batches, timestamp="ts").window_all(TumblingEventTimeWindows.of(Time.milliseconds(5)))
     .aggregate(n=agg.count())
     .window_all(TumblingProcessingTimeWindows.of(Time.seconds(10))).aggregate(c=agg.sum("n")).collect("out"))
    result = env.execute()
    assert sum(result["out"]["c"].to_pylist()) == 4
    assert result.metrics["late_records"] == 0
