"""Window offsets (Flink's ``of(size, offset)``) and cumulative windows (Flink's CUMULATE).

- The geometry (``window_geometry.PaneGeometry``) against its definition, by brute force: a
  window holds ``ts`` when ``start <= ts < end``, starts lie on ``offset + k * slide``; a
  cumulative window is ``[s, s + k * step)`` with ``s`` a multiple of ``max_size``.
- Bad arguments fail at definition time with Flink's rules.
- Differential: random queries over offset or cumulative windows, at parallelism 1-3, random
  batch sizes, hash or sort grouping, thread-local or shared state, equal the reference
  evaluator (results and late counts); every batch is cut into a morsel per worker.
- Checkpoints: jobs crashed and resumed (at other parallelisms too) equal the reference.
- Spark: offsets ship as partial states, cumulative windows by key (``WindowKind.spark``).
"""

from __future__ import annotations

import warnings

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import aligned_windows, aggregate_calls, assert_tables_equal, can_be_key, stateless_cases

import grizzly_py as gz
from grizzly_py import Time, agg, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.windows import CumulativeEventTimeWindows, SlidingEventTimeWindows, TumblingEventTimeWindows

ms = Time.milliseconds


# ----------------------------------------------------------------------------------------------
# the geometry, against its definition
# ----------------------------------------------------------------------------------------------
def _brute_force(starts_and_ends, ts):
    return sorted((s, e) for s, e in starts_and_ends if s <= ts < e)


@given(st.integers(1, 20), st.integers(1, 20), st.integers(-19, 19), st.integers(-100, 100))
def test_tumbling_and_sliding_windows_with_offsets_follow_flink(size, slide, offset, ts):
    if abs(offset) >= slide:
        with pytest.raises(ValueError, match="abs\\(offset\\) < slide"):
            SlidingEventTimeWindows.of(ms(size), ms(slide), ms(offset))
        return
    sliding = SlidingEventTimeWindows.of(ms(size), ms(slide), ms(offset))
    every = [(offset + k * slide, offset + k * slide + size) for k in range(-200, 200)]
    assert sliding.windows_of(ts) == _brute_force(every, ts)
    if abs(offset) < size:
        # Flink: start = ts - (ts - offset + size) % size (Java's %, on ts - offset + size >= 0)
        tumbling = TumblingEventTimeWindows.of(ms(size), ms(offset))
        start = ts - (ts - offset + size) % size
        assert tumbling.windows_of(ts) == [(start, start + size)]


@given(st.integers(1, 10), st.integers(1, 6), st.integers(-100, 100))
def test_cumulative_windows_follow_flink_cumulate(step, steps, ts):
    max_size = step * steps
    assigner = CumulativeEventTimeWindows.of(ms(max_size), ms(step))
    every = [(p * max_size, p * max_size + k * step) for p in range(-110, 110) for k in range(1, steps + 1)]
    assert assigner.windows_of(ts) == _brute_force(every, ts)


def _geometry(size: int, slide: int, offset: int, cumulative: bool):
    """A cumulative window of ``size`` steps of ``slide``, or a sliding one; None where the
    drawn numbers make no sliding window."""
    if cumulative:
        return CumulativeEventTimeWindows.of(ms(size * slide), ms(slide)).geometry
    if abs(offset) < slide <= size:
        return SlidingEventTimeWindows.of(ms(size), ms(slide), ms(offset)).geometry
    return None


@given(st.integers(1, 20), st.integers(1, 20), st.integers(-19, 19), st.booleans(), st.integers(-100, 100))
def test_a_panes_first_and_last_window_ends(size, slide, offset, cumulative, ts):
    g = _geometry(size, slide, offset, cumulative)
    if g is None:
        return
    p = g.pane_start(ts)
    ends = [e for _, e in g.windows_of(p)]
    assert g.windows_of(p) == g.windows_of(ts)  # a pane lies in its windows whole
    assert g.first_end(p) == min(ends) and g.last_end(p) == max(ends)


@given(st.integers(1, 20), st.integers(1, 20), st.integers(-19, 19), st.booleans(), st.integers(-100, 100))
def test_the_next_window_end_above_a_time(size, slide, offset, cumulative, t):
    """``next_end(t)``: the end of some window, above ``t``, and no window ends in between (the
    engine's lower bound on the ends of the windows not fired yet, after a firing at ``t - 1``)."""
    g = _geometry(size, slide, offset, cumulative)
    if g is None:
        return
    ends = {e for ts in range(t - g.size - 1, t + g.size + 1) for _, e in g.windows_of(ts)}
    assert g.next_end(t) == min(e for e in ends if e > t)


def test_ready_windows_of_cumulative_panes():
    g = CumulativeEventTimeWindows.of(ms(6), ms(2)).geometry
    assert g.ready_windows([2], None, None) == [(0, 4), (0, 6)]   # no window [0, 2): it holds no pane
    assert g.ready_windows([0, 2, 6], None, 5) == [(0, 2), (0, 4), (0, 6)]
    assert g.ready_windows([0, 2, 6], 3, 7) == [(0, 6), (6, 8)]   # (0, 2) and (0, 4) fired at 3


def test_bad_arguments_fail_at_definition():
    with pytest.raises(ValueError, match="abs\\(offset\\) < size"):
        TumblingEventTimeWindows.of(ms(10), ms(10))
    with pytest.raises(ValueError, match="abs\\(offset\\) < size"):
        TumblingEventTimeWindows.of(ms(10), ms(-12))
    with pytest.raises(ValueError, match="abs\\(offset\\) < slide"):
        SlidingEventTimeWindows.of(ms(10), ms(5), ms(5))
    with pytest.raises(TypeError, match="bare number"):
        TumblingEventTimeWindows.of(ms(10), 3)
    with pytest.raises(ValueError, match="multiple of step"):
        CumulativeEventTimeWindows.of(ms(10), ms(4))
    with pytest.raises(ValueError, match="step must be positive"):
        CumulativeEventTimeWindows.of(ms(10), ms(0))
    env = gz.StreamEnvironment()
    s = env.from_arrow(pa.table({"ts": [1], "k": [1]}), timestamp="ts")
    with pytest.raises(gz.SchemaError, match="CumulativeEventTimeWindows.* is not supported"):
        s.join(s).where("k").equal_to("k").window(CumulativeEventTimeWindows.of(ms(10), ms(5)))


def test_offsets_and_cumulative_windows_print_as_code():
    for a in (TumblingEventTimeWindows.of(ms(10), ms(-3)), SlidingEventTimeWindows.of(ms(10), ms(4), ms(1)),
              CumulativeEventTimeWindows.of(ms(12), ms(4))):
        assert eval(repr(a)) == a


# ----------------------------------------------------------------------------------------------
# differential: compiled = reference, any parallelism, grouping and state
# ----------------------------------------------------------------------------------------------
@st.composite
def offset_or_cumulative_cases(draw):
    """A random query (up to one stateless step) ending in a keyed or global window with an
    offset or a cumulative window."""
    case, stream = draw(stateless_cases(max_rows=25, max_repeat=8, max_steps=1))
    assigner = draw(aligned_windows().filter(lambda a: a.geometry.offset or a.geometry.cumulative))
    keys = draw(st.lists(st.sampled_from([f.name for f in stream.schema if can_be_key(f)] or [None]),
                         unique=True, max_size=2).map(lambda ks: [k for k in ks if k is not None]))
    calls = draw(st.lists(aggregate_calls(stream.schema), min_size=1, max_size=3))
    from strategies import Step
    head = [Step("key_by", tuple(keys)), Step("window", (assigner,))] if keys else [Step("window_all", (assigner,))]
    case.steps.extend(head + [Step("aggregate", kwargs={f"agg{i}": c for i, c in enumerate(calls)})])
    return case


def _run(case, parallelism, **options):
    env = gz.StreamEnvironment(parallelism=parallelism, **options)
    case.build(env).collect("out")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = env.execute()
    return result["out"], result.metrics


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=offset_or_cumulative_cases(), parallelism=st.integers(1, 3),
       options=st.sampled_from([{}, {"grouping": "sort"}, {"window_state": "shared"}, {"adaptive": True}]))
def test_offset_and_cumulative_windows_match_reference(every_row_a_morsel, case, parallelism, options):
    try:
        expected, expected_metrics = reference.run(case.build(gz.StreamEnvironment()).node)
    except AggregateOverflowError:
        with pytest.raises(AggregateOverflowError):
            _run(case, parallelism, **options)
        return
    actual, metrics = _run(case, parallelism, **options)
    assert_tables_equal(actual, expected)
    assert metrics["late_records"] == expected_metrics["late_records"]
    assert metrics["accounting"]["ok"]


# ----------------------------------------------------------------------------------------------
# checkpoints
# ----------------------------------------------------------------------------------------------
def _offset_and_cumulative(env, data):
    from test_checkpoint import _bounded
    offset = (_bounded(env, data).key_by("k").window(TumblingEventTimeWindows.of(Time.seconds(2), ms(-700)))
              .aggregate(c=agg.count(), s=agg.sum("v")))
    return offset.key_by("k").window(CumulativeEventTimeWindows.of(Time.seconds(6), Time.seconds(2))).aggregate(
        c=agg.sum("c"), m=agg.max("s"))


def _cumulative(env, data):
    from test_checkpoint import _bounded
    return (_bounded(env, data).key_by("name").window(CumulativeEventTimeWindows.of(Time.seconds(3), ms(500)))
            .aggregate(c=agg.count(), s=agg.sum("v"), lo=agg.min("n")))


@pytest.mark.parametrize("options", [{}, {"grouping": "sort"}, {"window_state": "shared"}],
                         ids=["hash", "sort", "shared"])
@pytest.mark.parametrize("build", [_cumulative, _offset_and_cumulative], ids=["cumulative", "offset_chained"])
def test_offset_and_cumulative_windows_resume_at_other_parallelisms(build, options, tmp_path, every_row_a_morsel):
    from test_checkpoint import _data, run_with_crashes
    batches = _data(rows=2000).to_batches(max_chunksize=100)
    expected, expected_metrics = reference.run(build(gz.StreamEnvironment(), batches).node)
    result = run_with_crashes(build, batches, [3, 11], tmp_path / "chk", parallelisms=[2, 1, 3], **options)
    assert_tables_equal(result["out"], expected)
    assert result.metrics["late_records"] == expected_metrics["late_records"]
    assert result.metrics["checkpoints"]["restored_from"] == 11


# ----------------------------------------------------------------------------------------------
# Spark's dataflow, in this process (``spark.planner.run_in_process``: the same task functions)
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("assigner", [TumblingEventTimeWindows.of(ms(10), ms(-4)),
                                      SlidingEventTimeWindows.of(ms(20), ms(5), ms(3)),
                                      CumulativeEventTimeWindows.of(ms(20), ms(5))], ids=repr)
@pytest.mark.parametrize("tasks", [1, 3])
def test_spark_tasks_match_the_embedded_engine(assigner, tasks):
    from test_spark_partials import INPUT_STAGES, _events, as_spark, embedded

    from grizzly_py.spark.planner import run_in_process

    def build(env):
        return _events(env).key_by("k").window(assigner).aggregate(n=agg.count(), s=agg.sum("x"), m=agg.median("x"))
    expected, late = embedded(build)
    actual, reports = run_in_process(build(gz.StreamEnvironment()).node, tasks)
    assert_tables_equal(actual, as_spark(expected))
    assert sum(r["late"] for r in reports if r["stage"] in INPUT_STAGES) == late
    stages = {r["stage"] for r in reports}
    assert ("keyed" if assigner.geometry.cumulative else "partial") in stages
