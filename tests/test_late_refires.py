"""Where the driver cuts a batch for allowed lateness (``engine/late_refires.py``).

- Property: ``refire_cuts`` lists, for random tumbling, sliding and cumulative windows (offsets
  too), lateness, watermark and event times (int64 and timestamps of other units), exactly the
  rows whose event time has a window of the geometry's ``windows_of`` that fired and is kept
  (``end - 1 <= watermark < end - 1 + lateness``), each + 1; none without lateness.
- ``slices`` covers the rows in order, each slice ending at a cut or at the end.
"""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import aligned_windows

import grizzly_py as gz
from grizzly_py import Time, agg
from grizzly_py.engine.late_refires import refire_cuts, slices
from grizzly_py.physical.pipelines import build_physical_plan
from grizzly_py.plan import Query

UNITS = {"ms": 1, "us": 1000, "ns": 1_000_000}


def _window_pipeline(times: pa.Array, assigner, lateness: int):
    env = gz.StreamEnvironment()
    s = env.from_arrow(pa.table({"ts": times}), timestamp="ts")
    q = s.window_all(assigner).allowed_lateness(Time.milliseconds(lateness)).aggregate(n=agg.count())
    (pipeline,) = build_physical_plan(Query(q.node)).pipelines
    return pipeline


@settings(max_examples=200)  # (cheap; the boundaries are single milliseconds)
@given(assigner=aligned_windows(max_size=12), lateness=st.integers(0, 15), watermark=st.integers(-20, 20),
       times=st.lists(st.integers(-40, 40), max_size=40), unit=st.sampled_from(sorted(UNITS)))
def test_cuts_are_the_records_reaching_a_fired_kept_window(assigner, lateness, watermark, times, unit):
    array = pa.array([t * UNITS[unit] for t in times], pa.int64())
    if unit != "ms":
        array = array.cast(pa.timestamp(unit))
    pipeline = _window_pipeline(array, assigner, lateness)
    geometry = assigner.geometry
    expected = [i + 1 for i, t in enumerate(times)
                if lateness and any(e - 1 <= watermark < e - 1 + lateness for _, e in geometry.windows_of(t))]
    batch = pa.record_batch({"ts": array})
    assert refire_cuts(pipeline, batch, watermark) == expected


@given(rows=st.integers(1, 40), data=st.data())
def test_slices_cover_the_rows_and_end_at_the_cuts(rows, data):
    cuts = sorted(data.draw(st.sets(st.integers(1, rows))))
    parts = slices(cuts, rows)
    assert parts[0][0] == 0 and parts[-1][1] == rows
    assert all(a < b for a, b in parts) and all(p[1] == q[0] for p, q in zip(parts, parts[1:]))
    assert [stop for _, stop in parts if stop != rows] == [c for c in cuts if c != rows]
