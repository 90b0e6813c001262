"""The Spark dataflow without Spark: partial window states, compiled merges and per-split
watermarks (``grizzly_py.spark.planner.run_in_process`` runs the same task functions as the Spark
stages, in this process). Random queries must give the embedded engine's results: the same rows in
the same order (floats within 1e-9 relative) and the same number of late records, for any cut of
the source into tasks."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies import assert_tables_equal, query_cases

import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, agg, col
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.physical import build_physical_plan
from grizzly_py.physical.pipelines import WindowTerminal
from grizzly_py.plan import Query
from grizzly_py.spark.partials import EntryLayout, partial_schema, window_starts
from grizzly_py.window_geometry import PaneGeometry
from grizzly_py.spark.planner import run_in_process
from grizzly_py.spark.schema import spark_arrow_schema
from grizzly_py.windows import (
    COUNT,
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from marks import slow

INPUT_STAGES = ("partial", "stateless", "keyed")


def embedded(build):
    env = gz.StreamEnvironment()
    build(env).collect("out")
    result = env.execute()
    return result["out"], result.metrics["late_records"]


def as_spark(table: pa.Table) -> pa.Table:
    return table.cast(spark_arrow_schema(table.schema))


def check(build, tasks: int) -> None:
    try:
        expected, late = embedded(build)
    except AggregateOverflowError:
        with pytest.raises(AggregateOverflowError):
            run_in_process(build(gz.StreamEnvironment()).node, tasks)
        return
    actual, reports = run_in_process(build(gz.StreamEnvironment()).node, tasks)
    assert_tables_equal(actual, as_spark(expected))
    assert sum(r["late"] for r in reports if r["stage"] in INPUT_STAGES) == late, "late record counts differ"


def _kind(case) -> str | None:
    for s in case.steps:
        if s.method in ("window", "window_all"):
            return s.args[0].kind
        if s.method == "count_window":
            return COUNT
    return None


@given(query_cases(windowed=True, max_rows=40), st.integers(1, 4))
@pytest.mark.slow
def test_window_queries_split_into_tasks_match_the_embedded_engine(case, tasks):
    assume(_kind(case) is not None and _kind(case).spark == "partials")
    # kept windows need the watermark batch by batch: one task (docs/spark.md)
    assume(not any(s.method == "allowed_lateness" for s in case.steps))
    # a window over a computed string key reads a materializing pipeline: one task (docs/spark.md)
    assume(isinstance(build_physical_plan(Query(case.build(gz.StreamEnvironment()).node)).pipelines[0].terminal,
                      WindowTerminal))
    check(case.build, tasks)


@settings(max_examples=15)
@given(query_cases(windowed=False), st.integers(1, 3))
def test_stateless_queries_split_into_tasks_match_the_embedded_engine(case, tasks):
    check(case.build, tasks)


def _events(env, bound=5):
    data = pa.table({"ts": [1, 3, 12, 2, 25, 4, 31, 9, 40, 55, 21, 60, 5, 44],
                     "k": ["a", "b", "a", None, "b", "a", "a", "b", None, "a", "b", "a", "b", "a"],
                     "x": [1.5, 2.0, -1.0, 4.0, 0.5, 3.0, 2.5, 1.0, 7.0, 0.0, 9.0, 1.0, 2.0, 3.5]})
    batches = data.to_batches(max_chunksize=3)  # five batches: records of later ones can be late
    return env.from_arrow(batches, timestamp="ts",
                          watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(bound)))


@pytest.mark.parametrize("assigner", [TumblingEventTimeWindows.of(Time.milliseconds(10)),
                                      SlidingEventTimeWindows.of(Time.milliseconds(20), Time.milliseconds(5))])
@pytest.mark.parametrize("tasks", [slow(1), 2, slow(4)])
def test_every_aggregate_with_late_records_in_later_tasks(assigner, tasks):
    def build(env):
        return (_events(env).key_by("k").window(assigner)
                .aggregate(n=agg.count(), c=agg.count("x"), s=agg.sum("x"), lo=agg.min("x"), hi=agg.max("x"),
                           a=agg.avg("x"), vp=agg.var_pop("x"), vs=agg.var_samp("x"), sp=agg.stddev_pop("x"),
                           ss=agg.stddev_samp("x"), med=agg.median("x"), mo=agg.mode("x"),
                           cd=agg.count_distinct("x"), tk=agg.top_k("x", 3), t1=agg.top_k("x", 1)))
    _, late = embedded(build)
    assert late > 0  # the hand-made input has late records
    check(build, tasks)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.sampled_from(["a", "b", None]),
                          st.sampled_from([0.5, -0.0, 0.0, float("nan"), None, 2.5, -1.0])), min_size=1, max_size=60),
       st.integers(1, 3), st.integers(1, 4), st.booleans(), st.integers(1, 10))
def test_window_top_n_tasks_ship_only_each_groups_first_n_rows(rows, n, tasks, sliding, chunk):
    """A window Top-N's partial states hold each group's first ``n`` rows of the task (floats
    with NaN, -0.0 and nulls, strings with nulls, ties by arrival); merged and ranked again they
    are the engine's rows."""
    from grizzly_py.spark.shipping import ShippedPlan, detach
    from grizzly_py.spark.worker import partial_task
    data = pa.table({"ts": pa.array([r[0] for r in rows], pa.int64()), "k": pa.array([r[1] for r in rows], pa.string()),
                     "x": pa.array([r[2] for r in rows], pa.float64())})
    batches = data.to_batches(max_chunksize=chunk)
    window = SlidingEventTimeWindows.of(Time.milliseconds(20), Time.milliseconds(5)) if sliding else \
        TumblingEventTimeWindows.of(Time.milliseconds(20))

    def build(env):
        return env.from_arrow(batches, timestamp="ts", watermark=WatermarkStrategy.for_bounded_out_of_orderness(
            Time.milliseconds(5))).window_all(window).top_n(n, by=["x", "k"], descending=[True, False])
    check(build, tasks)
    shipped = ShippedPlan.of(Query(detach(build(gz.StreamEnvironment()).node)), True)
    for part in partial_task(shipped, batches):  # one task, all the rows
        for column in part.columns:
            if pa.types.is_list(column.type):
                assert max(len(v) for v in column.to_pylist()) <= n


@given(st.lists(st.tuples(st.integers(0, 80), st.sampled_from(["a", "b", None]), st.integers(-5, 5)), max_size=40),
       st.integers(1, 12), st.integers(0, 15), st.integers(1, 6), st.integers(1, 4))
def test_keyed_session_windows_split_by_key_match_the_embedded_engine(rows, gap, bound, batch_rows, tasks):
    data = pa.table({"ts": pa.array([r[0] for r in rows], pa.int64()), "k": pa.array([r[1] for r in rows], pa.string()),
                     "v": pa.array([r[2] for r in rows], pa.int64())})

    def build(env):
        batches = data.to_batches(max_chunksize=batch_rows) if rows else [pa.RecordBatch.from_pylist([], data.schema)]
        return (env.from_arrow(batches, timestamp="ts",
                               watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(bound)))
                .key_by("k").window(EventTimeSessionWindows.with_gap(Time.milliseconds(gap)))
                .aggregate(n=agg.count(), s=agg.sum("v"), m=agg.median("v"), lo=agg.min("v")))
    check(build, tasks)


def test_a_chained_window_and_a_filter_run_after_the_merge():
    def build(env):
        per_key = (_events(env, bound=100).key_by("k").window(TumblingEventTimeWindows.of(Time.milliseconds(10)))
                   .aggregate(s=agg.sum("x"), n=agg.count()))
        return (per_key.filter(col("n") > 0).window_all(TumblingEventTimeWindows.of(Time.milliseconds(30)))
                .aggregate(total=agg.sum("s"), windows=agg.count()))
    check(build, 3)


def test_window_starts_of_panes():
    # sliding 10 / 5: pane 5 belongs to windows 0 and 5
    sliding = PaneGeometry(10, 5, 5)
    assert list(window_starts(sliding, [5], None, None)) == [0, 5]
    assert list(window_starts(sliding, [5], 9, None)) == [5]       # window 0 completed at watermark 9
    assert list(window_starts(sliding, [5, 10], None, 14)) == [0, 5]
    assert list(window_starts(PaneGeometry(4, 4, 4), [-4], None, None)) == [-4]
    # offset 2: pane 7 belongs to windows 2 (complete at watermark 11) and 7
    offset = PaneGeometry(10, 5, 5, offset=2)
    assert list(window_starts(offset, [7], None, None)) == [2, 7]
    assert list(window_starts(offset, [7], None, 11)) == [2]
    assert list(window_starts(offset, [7], None, 10)) == []


def test_partial_schema_has_state_words_and_value_vectors():
    env = gz.StreamEnvironment()
    q = (_events(env).key_by("k").window(TumblingEventTimeWindows.of(Time.milliseconds(10)))
         .aggregate(s=agg.sum("x"), m=agg.median("x")))
    from grizzly_py.codegen.module import generate_pipeline
    from grizzly_py.physical import build_physical_plan
    from grizzly_py.plan import Query
    gen = generate_pipeline(build_physical_plan(Query(q.node)).pipelines[0])
    schema = partial_schema(gen)
    # a float sum's words: sum, count, compensation
    assert schema.names == ["k", "__gz_ws", "__gz_a0_w0", "__gz_a0_w1", "__gz_a0_w2", "__gz_a1_values"]
    assert schema.field("__gz_a1_values").type == pa.list_(pa.int64())
    assert EntryLayout.of(gen).key_words == 1


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(0, 60), min_size=2, max_size=3), chunks=st.lists(st.integers(1, 25), min_size=3,
                                                                               max_size=3),
       bounds=st.lists(st.sampled_from([0, 7, 40, 300]), min_size=3, max_size=3), seed=st.integers(0, 2**16),
       tasks=st.integers(1, 4), keyed=st.booleans())
def test_unions_as_partial_states_decide_lateness_as_the_engine(sizes, chunks, bounds, seed, tasks, keyed):
    """A union of Arrow sources under a sliding window, each input pre-aggregating in its own
    tasks (``planner._union_in_process``, the Spark stages' task functions) under the watermarks
    the driver replays from the engine's rounds (each source with its own bound, any batch sizes,
    empty sources, disorder): the engine's rows in its order and its late records."""
    import numpy as np
    rng = np.random.default_rng(seed)
    tables = []
    for n in sizes:
        ts = np.sort(rng.integers(0, 40 * max(n, 1), n)) + rng.integers(-80, 81, n)
        tables.append(pa.table({"ts": pa.array(ts, pa.int64()), "k": pa.array(rng.integers(0, 3, n)),
                                "v": pa.array(rng.integers(-9, 10, n))}))

    def build(env):
        streams = [env.from_arrow(t.to_batches(max_chunksize=c) or t, timestamp="ts",
                                  watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(b)))
                   for t, c, b in zip(tables, chunks, bounds)]
        union = streams[0].filter(col("v") > -8).union(*streams[1:]).with_columns(m=col("k") * 2)
        window = SlidingEventTimeWindows.of(Time.milliseconds(120), Time.milliseconds(40))
        return (union.key_by("m").window(window) if keyed else union.window_all(window)) \
            .aggregate(n=agg.count(), s=agg.sum("v"), f=agg.first("v"))
    check(build, tasks)
