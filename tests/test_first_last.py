"""``agg.first(c)`` / ``agg.last(c)``: the value of the group's earliest (latest) record by event
time, ties broken by arrival order, nulls skipped (api.md, "Aggregates over strings").

Every case runs compiled and in the reference evaluator and must agree; the data is built so
that the event times tie often, within a batch, across batches, across the morsels of one batch
(``every_row_a_morsel``: each worker's state sees part of a group, so the merge decides), across
the panes of sliding windows and across Spark tasks. The random queries of the differential
tests draw these two aggregates too (``strategies.WINDOW_AGGREGATES``).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import grizzly_py as gz
from grizzly_py import Time, agg, col, reference
from grizzly_py.spark.planner import run_in_process
from grizzly_py.spark.schema import spark_arrow_schema
from grizzly_py.windows import EventTimeSessionWindows, SlidingEventTimeWindows, TumblingEventTimeWindows

from strategies import assert_tables_equal
from marks import slow

ms = Time.milliseconds
ROWS = 48
# event times 0..7 ms, each four to eight times (ties), out of order within a bound of 3 ms
TS = [((i * 5) % 11) // 2 + i // 8 for i in range(ROWS)]
DATA = {
    "ts": TS,
    "k": [i % 3 for i in range(ROWS)],
    "v": [None if i % 7 == 3 else i for i in range(ROWS)],
    "f": [None if i % 5 == 1 else i / 4 - 3 for i in range(ROWS)],
    "b": [i % 4 == 0 for i in range(ROWS)],
}


def _source(env, chunk: int = 5):
    return env.from_arrow(pa.table(DATA).to_batches(max_chunksize=chunk), timestamp="ts",
                          watermark=gz.WatermarkStrategy.for_bounded_out_of_orderness(ms(3)))


def _aggregates():
    return dict(fv=agg.first("v"), lv=agg.last("v"), ff=agg.first("f"), lf=agg.last("f"), fb=agg.first("b"),
                lb=agg.last("b"), lw=agg.last("v", where=col("f") > 0), n=agg.count())


WINDOWS = {
    "tumbling": lambda s: s.key_by("k").window(TumblingEventTimeWindows.of(ms(4))),
    "sliding": lambda s: s.key_by("k").window(SlidingEventTimeWindows.of(ms(6), ms(2))),
    "global": lambda s: s.window_all(TumblingEventTimeWindows.of(ms(5))),
    "session": lambda s: s.key_by("k").window(EventTimeSessionWindows.with_gap(ms(1))),
    "count": lambda s: s.key_by("k").count_window(5, 2),
    # a union of two branches, and a window over another window's results
    "union": lambda s: s.filter(col("k") != 1).union(s.filter(col("k") != 2)).key_by("k").window(
        TumblingEventTimeWindows.of(ms(4))),
    "chained": lambda s: s.key_by("k").window(TumblingEventTimeWindows.of(ms(2))).aggregate(
        v=agg.last("v"), f=agg.first("f"), b=agg.first("b")).key_by("k").window(TumblingEventTimeWindows.of(ms(4))),
}


def _check(window: str, chunk: int = 5, **options):
    def build(env):
        return WINDOWS[window](_source(env, chunk)).aggregate(**_aggregates())
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    env = gz.StreamEnvironment(**options)
    build(env).collect("out")
    actual = env.execute()["out"]
    assert_tables_equal(actual, expected)
    assert actual.num_rows > 0
    return actual


@pytest.mark.parametrize("window", sorted(WINDOWS))
@pytest.mark.parametrize("chunk", [slow(1), 5, slow(ROWS)])
def test_first_and_last_match_the_reference(window, chunk):
    _check(window, chunk)


@pytest.mark.parametrize("window", ["tumbling", "sliding", "global"])
@pytest.mark.parametrize("options", [dict(parallelism=2), dict(parallelism=3), dict(grouping="sort"),
                                     dict(parallelism=2, window_state="shared")], ids=str)
def test_worker_states_merge_by_event_time_then_arrival(every_row_a_morsel, window, options):
    _check(window, **options)


def test_ties_go_to_arrival_order():
    """Four records at one event time in one window: first takes the first to arrive, last the
    last, whatever the batches and workers."""
    table = pa.table({"ts": [5, 5, 5, 5, 1, 9], "v": [10, 20, 30, 40, 50, 60]})
    for chunk in (1, 2, 6):
        for parallelism in (1, 2):
            env = gz.StreamEnvironment(parallelism=parallelism)
            s = env.from_arrow(table.to_batches(max_chunksize=chunk), timestamp="ts",
                               watermark=gz.WatermarkStrategy.for_bounded_out_of_orderness(ms(10)))
            out = s.window_all(TumblingEventTimeWindows.of(ms(20))).aggregate(
                f=agg.first("v"), l=agg.last("v"), f5=agg.first("v", where=col("ts") == 5),
                l5=agg.last("v", where=col("ts") == 5)).execute_and_collect()
            assert out.select(["f", "l", "f5", "l5"]).to_pylist() == [{"f": 50, "l": 60, "f5": 10, "l5": 40}]


def test_result_types_are_the_input_types():
    out = _check("tumbling")
    assert out.schema.field("fv").type == pa.int64() and out.schema.field("ff").type == pa.float64()
    assert out.schema.field("fb").type == pa.bool_()


def test_spark_partial_states_merge_by_arrival_across_tasks():
    """Each task pre-aggregates its share; the merge of tasks' states keeps the earliest
    (latest) by event time and then by the batch's place in the source."""
    env = gz.StreamEnvironment()
    q = TumblingEventTimeWindows.of(ms(4))
    node = _source(env, 3).key_by("k").window(q).aggregate(**_aggregates()).node
    expected, _ = reference.run(node)
    for tasks in (1, 2, 4):
        actual, _reports = run_in_process(node, tasks)
        assert_tables_equal(actual, expected.cast(spark_arrow_schema(expected.schema)))
