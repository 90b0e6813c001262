"""Window joins and interval joins: hand-computed cases, definition-time errors, and differential
properties against the reference evaluator.

The semantics under test (docs/semantics.md, "Joins"): a window join gives, for every window and
key, each pair of a left and a right record with that key in that window, when the window fires
at the minimum of both inputs' watermarks, ordered by window_end, key, left arrival, right
arrival; an interval join pairs records with ``left.ts + lower <= right.ts <= left.ts + upper``
as soon as the second one arrives. Null keys join nothing; float keys follow the grouping rules
(-0.0 is 0.0, NaN equals NaN).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import arrow_type_code, assert_tables_equal, batch_slices, event_times

import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, agg, col, reference
from grizzly_py.engine.join_kernel import JoinKernel
from grizzly_py.engine.local import QueryRun
from grizzly_py.physical.pipelines import JoinInput, build_physical_plan
from grizzly_py.plan import Query
from grizzly_py.types import SchemaError
from grizzly_py.windows import (EventTimeSessionWindows, SlidingEventTimeWindows, TumblingEventTimeWindows,
                                TumblingProcessingTimeWindows)
from marks import slow

i64 = pa.int64()


def ms(n: int):
    return Time.milliseconds(n)


def tumbling(n: int):
    return TumblingEventTimeWindows.of(ms(n))


def batches(column_batches: list[dict]) -> list[pa.RecordBatch]:
    def array(values):
        return pa.array(values, i64) if all(isinstance(v, int) for v in values) else pa.array(values)
    return [pa.record_batch({name: array(values) for name, values in data.items()}) for data in column_batches]


def stream(env, column_batches, bound: int = 0):
    return env.from_arrow(batches(column_batches), timestamp="ts",
                          watermark=WatermarkStrategy.for_bounded_out_of_orderness(ms(bound)))


def run_both(build, parallelism: int = 1):
    """(compiled table, compiled metrics), after checking them against the reference."""
    expected, ref_metrics = reference.run(build(gz.StreamEnvironment()).node)
    env = gz.StreamEnvironment(parallelism=parallelism)
    build(env).collect("out")
    result = env.execute()
    assert_tables_equal(result["out"], expected)
    assert result.metrics["late_records"] == ref_metrics["late_records"], "late record counts differ"
    assert result.metrics["filtered_records"] == ref_metrics["filtered_records"], "filtered record counts differ"
    return result["out"], result.metrics


def rows(table: pa.Table, *names) -> list[tuple]:
    return [tuple(r[n] for n in names) for r in table.to_pylist()]


# ----------------------------------------------------------------------------------------------
# output schema
# ----------------------------------------------------------------------------------------------
def test_window_join_schema_suffixes_clashing_right_columns():
    env = gz.StreamEnvironment()
    a = env.from_arrow(pa.table({"ts": pa.array([1], pa.timestamp("ms")), "k": [1], "v": [1.5]}), timestamp="ts")
    b = env.from_arrow(pa.table({"ts": pa.array([1], pa.timestamp("ms")), "key": pa.array([1], pa.int32()),
                                 "v": ["x"], "w": [True]}), timestamp="ts")
    q = a.join(b).where("k").equal_to("key").window(tumbling(10))
    assert tuple(q.schema.names) == ("window_start", "window_end", "ts", "k", "v", "ts_right", "key", "v_right", "w")
    types = {f.name: f.dtype.name for f in q.schema}
    assert types == {"window_start": "timestamp", "window_end": "timestamp", "ts": "timestamp", "k": "int64",
                     "v": "float64", "ts_right": "timestamp", "key": "int32", "v_right": "string", "w": "bool"}
    table = q.execute_and_collect()
    assert table.schema.field("window_start").type == pa.timestamp("ms")  # the sources' timestamp type
    assert table.schema.field("key").type == pa.int32()
    assert rows(table, "k", "key", "v", "v_right") == [(1, 1, 1.5, "x")]


def test_interval_join_schema_has_no_window_columns():
    env = gz.StreamEnvironment()
    a = stream(env, [{"ts": [1], "k": [1]}])
    b = stream(env, [{"ts": [2], "k": [1], "window_start": [5]}])
    q = a.interval_join(b).where("k").equal_to("k").between(ms(0), ms(5))
    assert tuple(q.schema.names) == ("ts", "k", "ts_right", "k_right", "window_start")
    assert rows(q.execute_and_collect(), "ts", "ts_right", "window_start") == [(1, 2, 5)]


def test_window_join_right_window_columns_get_the_suffix():
    env = gz.StreamEnvironment()
    a = stream(env, [{"ts": [1], "k": [1]}])
    b = stream(env, [{"ts": [2], "k": [1], "window_end": [7]}])
    q = a.join(b).where("k").equal_to("k").window(tumbling(10))
    assert tuple(q.schema.names) == ("window_start", "window_end", "ts", "k", "ts_right", "k_right", "window_end_right")


@pytest.mark.parametrize("make, message", [
    (lambda a, b: a.join(b.select("ts", "k", k_right="k")).where("k").equal_to("k").window(tumbling(10)),
     "'k_right', which is taken"),
    (lambda a, b: a.with_columns(window_start=col("k")).join(b).where("k").equal_to("k").window(tumbling(10)),
     "left column 'window_start' clashes"),
    (lambda a, b: a.join(b).where("k").equal_to("s").window(tumbling(10)), "cannot equal key 's'"),
    (lambda a, b: a.join(b).where("nope").equal_to("k").window(tumbling(10)), "nope"),
    (lambda a, b: a.join(b).where("k").equal_to("nope").window(tumbling(10)), "nope"),
    (lambda a, b: a.join(b).where("k", "ts").equal_to("k").window(tumbling(10)), "2 key column(s)"),
    (lambda a, b: a.join(b).window(tumbling(10)), "needs its keys"),
    (lambda a, b: a.join(b).equal_to("k"), "comes after where"),
    (lambda a, b: a.join(b).where("k").equal_to("k").window(TumblingProcessingTimeWindows.of(ms(10))),
     "not supported"),
    (lambda a, b: a.interval_join(b).where("k").equal_to("k").between(ms(5), ms(1)), "lower bound is above"),
    (lambda a, b: a.interval_join(b).where("k").between(ms(0), ms(1)), "needs its equal_to"),
])
def test_join_definition_errors(make, message):
    env = gz.StreamEnvironment()
    a = stream(env, [{"ts": [1], "k": [1]}])
    b = env.from_arrow(pa.table({"ts": pa.array([1], i64), "k": [1], "s": ["x"]}), timestamp="ts")
    with pytest.raises(SchemaError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make(a, b)


def test_join_needs_event_time_on_both_inputs():
    env = gz.StreamEnvironment()
    a = stream(env, [{"ts": [1], "k": [1]}])
    b = env.from_arrow(pa.table({"ts": pa.array([1], i64), "k": [1]}))  # no timestamp=
    with pytest.raises(SchemaError, match="no event time"):
        a.join(b).where("k").equal_to("k").window(tumbling(10))
    with pytest.raises(SchemaError, match="no event time"):
        b.interval_join(a).between(ms(0), ms(1))


def test_join_inputs_of_other_environments_and_kinds_are_rejected():
    env, other = gz.StreamEnvironment(), gz.StreamEnvironment()
    a, b = stream(env, [{"ts": [1], "k": [1]}]), stream(other, [{"ts": [1], "k": [1]}])
    with pytest.raises(ValueError, match="another StreamEnvironment"):
        a.join(b)
    with pytest.raises(TypeError, match="KeyedStream"):
        a.join(a.key_by("k"))
    with pytest.raises(TypeError, match="keyed stream joins a keyed stream"):
        a.key_by("k").interval_join(a)


# ----------------------------------------------------------------------------------------------
# hand-computed cases
# ----------------------------------------------------------------------------------------------
def test_tumbling_join_pairs_duplicates_in_order():
    # window [0, 10): key 1 has left a, b and right x, y; key 2 has left c only
    def build(env):
        a = stream(env, [{"ts": [1, 2, 3], "k": [1, 2, 1], "v": [10, 11, 12]}])
        b = stream(env, [{"ts": [4, 5, 15], "k": [1, 1, 2], "v": [20, 21, 22]}])
        return a.join(b).where("k").equal_to("k").window(tumbling(10))

    table, metrics = run_both(build)
    assert rows(table, "window_start", "window_end", "k", "v", "v_right") == [
        (0, 10, 1, 10, 20), (0, 10, 1, 10, 21), (0, 10, 1, 12, 20), (0, 10, 1, 12, 21)]
    assert metrics["late_records"] == 0


def test_results_are_ordered_by_window_end_then_key_then_arrivals():
    # keys arrive as c, a, b, in two windows (nothing fires before the end: 20 ms of disorder)
    def build(env):
        a = stream(env, [{"ts": [12, 1, 2, 3], "k": ["c", "c", "a", "b"], "v": [0, 1, 2, 3]},
                         {"ts": [13, 4], "k": ["a", "a"], "v": [4, 5]}], bound=20)
        b = stream(env, [{"ts": [5, 6, 14, 7], "k": ["b", "a", "a", "c"], "v": [10, 11, 12, 13]},
                         {"ts": [8], "k": ["a"], "v": [14]}], bound=20)
        return a.join(b).where("k").equal_to("k").window(tumbling(10))

    table, _ = run_both(build)
    assert rows(table, "window_end", "k", "v", "v_right") == [
        (10, "a", 2, 11), (10, "a", 2, 14), (10, "a", 5, 11), (10, "a", 5, 14),
        (10, "b", 3, 10), (10, "c", 1, 13),
        (20, "a", 4, 12)]


def test_sliding_join_pairs_in_every_shared_window():
    # size 10, slide 5: ts 6 and 9 share [0, 10) and [5, 15); ts 1 and 12 share nothing
    def build(env):
        a = stream(env, [{"ts": [6, 1], "k": [1, 1]}])
        b = stream(env, [{"ts": [9, 12], "k": [1, 1]}])
        return a.join(b).where("k").equal_to("k").window(SlidingEventTimeWindows.of(ms(10), ms(5)))

    table, _ = run_both(build)
    # [0, 10): left 6 and 1 (in arrival order) with 9; [5, 15): left 6 with 9 and 12;
    # [-5, 5) (left 1) and [10, 20) (right 12) have one side only
    assert rows(table, "window_start", "window_end", "ts", "ts_right") == [
        (0, 10, 6, 9), (0, 10, 1, 9), (5, 15, 6, 9), (5, 15, 6, 12)]


def test_session_join_merges_sessions_across_both_inputs():
    # gap 5: left 1 and right 4 open one session, left 12 stays apart until right 8 bridges it
    def build(env):
        a = stream(env, [{"ts": [1, 12], "k": [1, 1], "v": [0, 1]}])
        b = stream(env, [{"ts": [4], "k": [1], "v": [10]}, {"ts": [8], "k": [1], "v": [11]}])
        return a.join(b).where("k").equal_to("k").window(EventTimeSessionWindows.with_gap(ms(5)))

    table, _ = run_both(build)
    assert rows(table, "window_start", "window_end", "v", "v_right") == [
        (1, 17, 0, 10), (1, 17, 0, 11), (1, 17, 1, 10), (1, 17, 1, 11)]


def test_lateness_at_window_boundaries_uses_the_minimum_watermark():
    # round 1: left [1, 20] -> wm L 19; right [2] -> wm R 1, min 1
    # round 2: left [9]: its window [0, 10) is open at 1; right [10] -> wm R 9, min 9: [0, 10) fires
    # round 3: left [9] (late: [0, 10) fired at 9), left [10] (on time); right [10, 20]
    def build(env):
        a = stream(env, [{"ts": [1, 20], "k": [0, 0]}, {"ts": [9], "k": [0]}, {"ts": [9, 10], "k": [0, 0]}])
        b = stream(env, [{"ts": [2], "k": [0]}, {"ts": [10], "k": [0]}, {"ts": [10, 20], "k": [0, 0]}])
        return a.join(b).where("k").equal_to("k").window(tumbling(10))

    table, metrics = run_both(build)
    assert rows(table, "window_start", "ts", "ts_right") == [
        (0, 1, 2), (0, 9, 2), (10, 10, 10), (10, 10, 10), (20, 20, 20)]
    assert metrics["late_records"] == 1


def test_null_keys_join_nothing_and_are_not_late():
    def build(env):
        a = stream(env, [{"ts": [1, 2], "k": [None, 1]}])
        b = stream(env, [{"ts": [3, 4], "k": [None, 1]}])
        return a.join(b).where("k").equal_to("k").window(tumbling(10))

    table, metrics = run_both(build)
    assert rows(table, "ts", "ts_right") == [(2, 4)]
    assert metrics["late_records"] == 0


def test_float_keys_follow_the_grouping_rules():
    # -0.0 joins 0.0, NaN joins NaN (as window keys group), 1.0 joins nothing
    def build(env):
        a = env.from_arrow(pa.table({"ts": pa.array([1, 2, 3], i64), "k": [0.0, math.nan, 1.0]}), timestamp="ts")
        b = env.from_arrow(pa.table({"ts": pa.array([4, 5, 6], i64), "k": [-0.0, math.nan, 2.0]}), timestamp="ts")
        return a.join(b).where("k").equal_to("k").window(tumbling(10))

    table, _ = run_both(build)
    assert rows(table, "ts", "ts_right") == [(1, 4), (2, 5)]


def test_an_empty_input_gives_no_pairs():
    def build(env):
        a = stream(env, [{"ts": [1, 2], "k": [1, 1]}])
        b = stream(env, [{"ts": [], "k": []}])
        return a.join(b).where("k").equal_to("k").window(tumbling(10))

    table, _ = run_both(build)
    assert table.num_rows == 0
    assert table.schema.names[:2] == ["window_start", "window_end"]


def test_interval_join_bounds_are_inclusive_and_pairs_leave_at_arrival():
    # between(-2, 3): right.ts - left.ts in [-2, 3]
    def build(env):
        a = stream(env, [{"ts": [10], "k": [1], "v": [0]}, {"ts": [20], "k": [1], "v": [1]}])
        b = stream(env, [{"ts": [7, 8, 13, 14], "k": [1, 1, 1, 1], "v": [10, 11, 12, 13]},
                         {"ts": [18], "k": [1], "v": [14]}])
        return a.interval_join(b).where("k").equal_to("k").between(ms(-2), ms(3))

    table, _ = run_both(build)
    # round 1: left 10 (nothing yet), right 7, 8, 13, 14 -> 8 and 13 pair with 10
    # round 2: left 20 (pairs with nothing: 18 comes after), right 18 pairs with 20
    assert rows(table, "v", "v_right") == [(0, 11), (0, 12), (1, 14)]


def test_interval_join_lateness_and_the_record_at_the_watermark():
    # Flink's isLate: ts < watermark. After round 1 the watermark is min(14, 9) = 9.
    # Round 2: left 8 is late; left 9 (at the watermark) is on time and pairs with right 10, which
    # is still held (a right record goes once ts - lower < watermark: 10 - 0 >= 9)
    def build(env):
        a = stream(env, [{"ts": [15], "k": [1]}, {"ts": [8, 9], "k": [1, 1]}])
        b = stream(env, [{"ts": [10], "k": [1]}, {"ts": [30], "k": [1]}])
        return a.interval_join(b).where("k").equal_to("k").between(ms(0), ms(1))

    table, metrics = run_both(build)
    assert rows(table, "ts", "ts_right") == [(9, 10)]
    assert metrics["late_records"] == 1


def test_interval_join_without_keys_and_in_flink_form():
    def build(env):
        a = stream(env, [{"ts": [0, 5], "k": [1, 2]}])
        b = stream(env, [{"ts": [1, 6], "k": [2, 2]}])
        return a.interval_join(b).between(ms(0), ms(1))

    table, _ = run_both(build)
    assert rows(table, "ts", "k", "ts_right", "k_right") == [(0, 1, 1, 2), (5, 2, 6, 2)]

    def keyed(env):
        a = stream(env, [{"ts": [0, 5], "k": [1, 2]}])
        b = stream(env, [{"ts": [1, 6], "k": [2, 2]}])
        return a.key_by("k").interval_join(b.key_by("k")).between(ms(0), ms(1))

    table, _ = run_both(keyed)
    assert rows(table, "ts", "ts_right") == [(5, 6)]


def test_a_window_after_a_join_reads_its_event_time():
    # window join results have event time window_end - 1; interval join pairs max(left, right)
    def window_join(env):
        a = stream(env, [{"ts": [1, 11], "k": [1, 1]}])
        b = stream(env, [{"ts": [2, 12], "k": [1, 1]}])
        return (a.join(b).where("k").equal_to("k").window(tumbling(10))
                .window_all(tumbling(20)).aggregate(n=agg.count(), last=agg.max("ts_right")))

    table, _ = run_both(window_join)
    assert rows(table, "window_start", "n", "last") == [(0, 2, 12)]

    def interval(env):
        a = stream(env, [{"ts": [1, 8], "k": [1, 1]}])
        b = stream(env, [{"ts": [3, 12], "k": [1, 1]}])
        return (a.interval_join(b).where("k").equal_to("k").between(ms(-5), ms(5))
                .select("ts", "ts_right").window_all(tumbling(10)).aggregate(n=agg.count()))

    table, _ = run_both(interval)
    # pairs (1, 3) at 3, (8, 3) at 8, (8, 12) at 12
    assert rows(table, "window_start", "n") == [(0, 2), (10, 1)]


def test_self_join_and_inputs_with_filters_and_computed_columns():
    def build(env):
        s = stream(env, [{"ts": [1, 2, 3], "k": [1, 1, 2], "v": [5, 6, 7]}])
        left = s.filter(col("v") > 5).with_columns(w=col("v") * 2)
        return left.join(s.select("k", "v", t="ts")).where("k").equal_to("k").window(tumbling(10))

    table, _ = run_both(build)
    assert rows(table, "v", "w", "v_right", "t") == [(6, 12, 5, 1), (6, 12, 6, 2), (7, 14, 7, 3)]


def test_join_of_window_results():
    def build(env):
        a = stream(env, [{"ts": [1, 2, 11], "k": [1, 1, 1]}])
        b = stream(env, [{"ts": [3, 14], "k": [1, 1]}])
        counts = a.key_by("k").window(tumbling(10)).aggregate(n=agg.count()).select("k", "n")
        return counts.join(b).where("k").equal_to("k").window(tumbling(10))

    table, _ = run_both(build)
    # a window result's event time is window_end - 1 (carried in a hidden column: the select
    # dropped window_end): (k=1, n=2) at 9, (k=1, n=1) at 19
    assert rows(table, "window_start", "n", "ts") == [(0, 2, 3), (10, 1, 14)]


@pytest.mark.parametrize("parallelism", [slow(1), 2])
def test_parallel_inputs_give_the_same_pairs(parallelism):
    n = 20_000

    def build(env):
        a = env.from_arrow(pa.table({"ts": pa.array(range(n), i64), "k": pa.array([i % 97 for i in range(n)], i64)}),
                           timestamp="ts")
        b = env.from_arrow(pa.table({"ts": pa.array(range(0, n, 3), i64),
                                     "k": pa.array([i % 89 for i in range(0, n, 3)], i64)}), timestamp="ts")
        return a.filter(col("k") != 5).join(b).where("k").equal_to("k").window(tumbling(1000))

    env = gz.StreamEnvironment(parallelism=parallelism)
    build(env).collect("out")
    table = env.execute()["out"]
    expected = reference.run(build(gz.StreamEnvironment()).node)[0]
    assert_tables_equal(table, expected)


def test_state_is_dropped_when_windows_fire():
    env = gz.StreamEnvironment()
    a = stream(env, [{"ts": [1, 2], "k": [1, 2]}, {"ts": [15], "k": [1]}, {"ts": [25], "k": [1]}])
    b = stream(env, [{"ts": [3], "k": [1]}, {"ts": [16], "k": [1]}, {"ts": [26], "k": [1]}])
    q = a.join(b).where("k").equal_to("k").window(tumbling(10))
    run = QueryRun(Query(q.node))
    try:
        join = next(r.kernel for r in run.runs if isinstance(r.kernel, JoinKernel))
        sources = run.sources
        its = [iter(s.batches()) for s in sources]
        held = []
        for _ in range(3):
            for s, it in zip(sources, its):
                run.feed(next(it), s)
            held.append(join.state_rows())
        # after round 2 the watermark is 15: [0, 10) fired, its batches are gone
        assert held == [(2, 1), (1, 1), (1, 1)]
        table = run.finish()
        assert join.state_rows() == (0, 0)
        assert rows(table, "ts", "ts_right") == [(1, 3), (15, 16), (25, 26)]
    finally:
        run.close()


def test_interval_state_is_dropped_by_the_watermark():
    n = 5000
    env = gz.StreamEnvironment()
    a = env.from_arrow([pa.record_batch({"ts": pa.array(range(i, i + 100), i64), "k": pa.array([1] * 100, i64)})
                        for i in range(0, n, 100)], timestamp="ts")
    b = env.from_arrow([pa.record_batch({"ts": pa.array(range(i, i + 100), i64), "k": pa.array([1] * 100, i64)})
                        for i in range(0, n, 100)], timestamp="ts")
    q = a.interval_join(b).where("k").equal_to("k").between(ms(-1), ms(1))
    run = QueryRun(Query(q.node))
    try:
        join = next(r.kernel for r in run.runs if isinstance(r.kernel, JoinKernel))
        its = [iter(s.batches()) for s in run.sources]
        peak = 0
        for _ in range(n // 100):
            for s, it in zip(run.sources, its):
                run.feed(next(it), s)
            peak = max(peak, sum(join.state_rows()))
        assert peak <= 1000  # a few batches, not the whole input
        table = run.finish()
        assert table.num_rows == 3 * n - 2
    finally:
        run.close()


def test_explain_shows_the_join_pipeline():
    env = gz.StreamEnvironment()
    a = stream(env, [{"ts": [1], "k": [1]}])
    b = stream(env, [{"ts": [1], "k": [1]}])
    plan = build_physical_plan(Query(a.join(b).where("k").equal_to("k").window(tumbling(10)).node))
    join = next(p for p in plan.pipelines if isinstance(p.input, JoinInput))
    text = plan.explain()
    assert f"Pipeline {join.id}: reads join of pipelines 0 (left) and 1 (right)" in text
    assert "join     TumblingEventTimeWindows.of(Time.milliseconds(10))" in text


# ----------------------------------------------------------------------------------------------
# differential properties
# ----------------------------------------------------------------------------------------------
# key kind -> (Arrow type, value strategy); a few values per kind, so keys repeat
JOIN_KEYS = {
    "int64": (pa.int64(), st.integers(-2, 2)),
    "int32": (pa.int32(), st.integers(-2, 2)),
    "float64": (pa.float64(), st.sampled_from([0.0, -0.0, math.nan, 1.5, -1.5, math.inf])),
    "bool": (pa.bool_(), st.booleans()),
    "string": (pa.string(), st.sampled_from(["", "a", "b", "é"])),
    "dictionary": (pa.dictionary(pa.int32(), pa.string()), st.sampled_from(["", "a", "b", "é"])),
    "timestamp_ms": (pa.timestamp("ms"), st.integers(-2, 2)),
    "timestamp_us": (pa.timestamp("us"), st.sampled_from([-1000, -999, 0, 1, 999, 1000, 2500])),
}
KEY_PARTNERS = {"int64": ["int64", "int32"], "int32": ["int32", "int64"], "string": ["string", "dictionary"],
                "dictionary": ["dictionary", "string"], "timestamp_ms": ["timestamp_ms", "timestamp_us"],
                "timestamp_us": ["timestamp_us", "timestamp_ms"], "float64": ["float64"], "bool": ["bool"]}
EVENT_TIME_TYPES = (pa.int64(), pa.int64(), pa.timestamp("ms"))


@dataclass
class Side:
    """One join input: its columns (``ts``, ``k``, ``v``), batching and watermark bound."""

    schema: pa.Schema
    columns: dict
    slices: list
    bound: int

    def source(self, env):
        whole = pa.RecordBatch.from_pydict(self.columns, schema=self.schema)
        return env.from_arrow([whole.slice(o, n) for o, n in self.slices], timestamp="ts",
                              watermark=WatermarkStrategy.for_bounded_out_of_orderness(ms(self.bound)))

    def code(self) -> str:
        schema = ", ".join(f"({f.name!r}, {arrow_type_code(f.type)})" for f in self.schema)
        return (f"env.from_arrow([pa.RecordBatch.from_pydict({self.columns!r}, schema=pa.schema("
                f"[{schema}])).slice(o, n) for o, n in {self.slices!r}], "
                f"timestamp='ts', watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds({self.bound})))")


@st.composite
def sides(draw, key_kind: str, start: int = 0) -> Side:
    n = draw(st.integers(0, 14))
    key_type, key_values = JOIN_KEYS[key_kind]
    times = draw(event_times(n))
    keys = draw(st.lists(st.none() | key_values, min_size=n, max_size=n))
    if pa.types.is_timestamp(key_type) and key_type.unit == "us":
        keys = [None if k is None else k for k in keys]
    schema = pa.schema([("ts", draw(st.sampled_from(EVENT_TIME_TYPES))), ("k", key_type), ("v", pa.int64())])
    return Side(schema, {"ts": times, "k": keys, "v": list(range(start, start + n))},
                draw(batch_slices(n)), draw(st.integers(0, 6)))


@dataclass
class JoinCase:
    left: Side
    right: Side
    kind: str                     # tumbling, sliding, session, interval
    size: int = 10
    slide: int = 10
    offset: int = 0               # tumbling, sliding: Flink's window offset (abs(offset) < slide)
    lower: int = 0
    upper: int = 0
    filter_left: bool = False     # a filter and a computed column before the join (a projection)
    filter_right: bool = False    # a filter and a rename before the join (run by the join's kernel)
    window_after: bool = False    # a global tumbling window count after the join
    parallelism: int = 1

    def build(self, env):
        a, b = self.left.source(env), self.right.source(env)
        if self.filter_left:
            a = a.filter(col("v") % 3 != 1).with_columns(w=col("v") * 2)
        if self.filter_right:
            b = b.filter((col("v") % 2 == 0) | col("k").is_null()).select("k", "v", time="ts")
        if self.kind == "interval":
            q = a.interval_join(b).where("k").equal_to("k").between(ms(self.lower), ms(self.upper))
        else:
            assigner = {"tumbling": lambda: TumblingEventTimeWindows.of(ms(self.size), ms(self.offset)),
                        "sliding": lambda: SlidingEventTimeWindows.of(ms(self.size), ms(self.slide), ms(self.offset)),
                        "session": lambda: EventTimeSessionWindows.with_gap(ms(self.size))}[self.kind]()
            q = a.join(b).where("k").equal_to("k").window(assigner)
        if self.window_after:
            q = q.window_all(tumbling(7)).aggregate(n=agg.count(), lo=agg.min("v"), hi=agg.max("v_right"))
        return q

    def __repr__(self):
        return (f"JoinCase(kind={self.kind!r}, size={self.size}, slide={self.slide}, offset={self.offset}, "
                f"lower={self.lower}, "
                f"upper={self.upper}, filter_left={self.filter_left}, filter_right={self.filter_right}, "
                f"window_after={self.window_after}, "
                f"parallelism={self.parallelism})\nleft  = {self.left.code()}\nright = {self.right.code()}")


@st.composite
def join_cases(draw, kinds=("tumbling", "sliding", "session", "interval")) -> JoinCase:
    key_kind = draw(st.sampled_from(sorted(JOIN_KEYS)))
    left = draw(sides(key_kind))
    right = draw(sides(draw(st.sampled_from(KEY_PARTNERS[key_kind])), start=100))
    kind = draw(st.sampled_from(kinds))
    case = JoinCase(left, right, kind, filter_left=draw(st.booleans()), filter_right=draw(st.booleans()),
                    window_after=draw(st.integers(0, 3)) == 0,
                    parallelism=draw(st.sampled_from([1, 2])))
    if kind == "sliding":
        case.slide = draw(st.integers(1, 6))
        case.size = case.slide * draw(st.integers(1, 4)) + draw(st.sampled_from([0, 0, 1, 2]))
        case.size = max(case.size, case.slide)
        case.offset = draw(st.integers(-(case.slide - 1), case.slide - 1))
    elif kind in ("tumbling", "session"):
        case.size = draw(st.integers(1, 12))
        if kind == "tumbling":
            case.offset = draw(st.integers(-(case.size - 1), case.size - 1))
    else:
        case.lower = draw(st.integers(-8, 8))
        case.upper = case.lower + draw(st.integers(0, 10))
    return case


def check(case: JoinCase) -> None:
    expected, ref_metrics = reference.run(case.build(gz.StreamEnvironment()).node)
    env = gz.StreamEnvironment(parallelism=case.parallelism)
    case.build(env).collect("out")
    result = env.execute()
    assert_tables_equal(result["out"], expected)
    assert result.metrics["late_records"] == ref_metrics["late_records"], "late record counts differ"
    assert result.metrics["filtered_records"] == ref_metrics["filtered_records"], "filtered record counts differ"


@given(join_cases(kinds=("tumbling", "sliding")))
@pytest.mark.slow
def test_aligned_window_joins_match_reference(case):
    check(case)


@given(join_cases(kinds=("session",)))
@pytest.mark.slow
def test_session_window_joins_match_reference(case):
    check(case)


@given(join_cases(kinds=("interval",)))
@pytest.mark.slow
def test_interval_joins_match_reference(case):
    check(case)


@settings(max_examples=10)
@given(st.data())
@pytest.mark.slow
def test_big_inputs_grow_the_join_tables(data):
    # many keys per window: tables grow past their first 1024 entries, vectors past 8 refs
    n = data.draw(st.integers(2000, 6000))
    keys = data.draw(st.integers(50, 3000))
    kind = data.draw(st.sampled_from(["tumbling", "sliding", "session", "interval"]))

    def build(env):
        def side(step, offset):
            ts = list(range(0, n, step))
            return env.from_arrow(pa.table({"ts": pa.array(ts, i64),
                                            "k": pa.array([(t * 7 + offset) % keys for t in ts], i64)}).to_batches(
                                                max_chunksize=700), timestamp="ts")
        a, b = side(1, 0), side(2, 3)
        if kind == "interval":
            return a.interval_join(b).where("k").equal_to("k").between(ms(-30), ms(30))
        assigner = {"tumbling": tumbling(500), "sliding": SlidingEventTimeWindows.of(ms(500), ms(250)),
                    "session": EventTimeSessionWindows.with_gap(ms(40))}[kind]
        return a.join(b).where("k").equal_to("k").window(assigner)

    run_both(build)


# ----------------------------------------------------------------------------------------------
# edges: hostile event times, what is not compiled, explain, the Nexmark example
# ----------------------------------------------------------------------------------------------
def test_event_times_at_the_int64_limits():
    from grizzly_py.sources import BadInputError
    big = (1 << 63) - 5

    def window_join(env):
        a = stream(env, [{"ts": [1, big], "k": [1, 1]}])
        b = stream(env, [{"ts": [2], "k": [1]}])
        return a.join(b).where("k").equal_to("k").window(tumbling(10))

    env = gz.StreamEnvironment()
    window_join(env).collect("out")
    with pytest.raises(BadInputError, match="too close to the int64 limits"):
        env.execute()

    def interval(env):  # no window arithmetic: the bounds compare in 128 bits
        a = stream(env, [{"ts": [-(1 << 63), 0, big], "k": [1, 1, 1]}])
        b = stream(env, [{"ts": [-(1 << 63) + 3, big + 2], "k": [1, 1]}])
        return a.interval_join(b).where("k").equal_to("k").between(ms(-5), ms(5))

    table, _ = run_both(interval)
    assert rows(table, "ts", "ts_right") == [(-(1 << 63), -(1 << 63) + 3), (big, big + 2)]


def test_sliding_join_with_gaps_is_not_compiled_yet():
    env = gz.StreamEnvironment()
    a, b = stream(env, [{"ts": [1], "k": [1]}]), stream(env, [{"ts": [1], "k": [1]}])
    with pytest.raises(NotImplementedError, match="slide longer than the window"):
        a.join(b).where("k").equal_to("k").window(SlidingEventTimeWindows.of(ms(5), ms(10))).execute_and_collect()


def test_generated_code_of_a_join_pipeline():
    from grizzly_py.codegen import generate_pipeline
    from grizzly_py.jit import compile_ir
    env = gz.StreamEnvironment()
    a = stream(env, [{"ts": [1], "k": [1]}])
    b = env.from_arrow(pa.table({"ts": pa.array([1], i64), "s": ["x"], "k": [1]}), timestamp="ts")
    for q in (a.join(b).where("k").equal_to("k").window(tumbling(10)),
              a.interval_join(b).where("k").equal_to("k").between(ms(-1), ms(1))):
        plan = build_physical_plan(Query(q.node))
        join = next(p for p in plan.pipelines if isinstance(p.input, JoinInput))
        gen = generate_pipeline(join)  # what grizzly explain --ir shows
        assert sorted(gen.units) == ["l_process", "l_process_nonnull", "r_process", "r_process_nonnull", "state"]
        left = gen.units["l_process"].ir
        assert "-- join key k" in left and "@gz_ht_upsert" in left
        for unit in gen.units.values():
            compile_ir(unit.ir, unit.opt_level)


@pytest.mark.slow
def test_nexmark_examples_match_the_reference():
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location(
        "nexmark_joins", Path(__file__).resolve().parent.parent / "examples" / "nexmark_joins.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    example.EVENTS = 60_000  # 0.6 s of events: one window, persons that sell at once
    for q in (example.q8, example.q7):
        table, _ = run_both(q)
        assert table.num_rows > 0


@pytest.mark.slow
def test_streambox_examples_match_the_reference():
    """examples/streambox.py: the temporal join and the windowed filter (a few windows)."""
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location(
        "streambox_example", Path(__file__).resolve().parent.parent / "examples" / "streambox.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    example.EVENTS = 30_000  # 30 ms of events at 1M events/s: one 1 s window
    for q in (example.temporal_join, example.windowed_filter, example.median_per_key):
        table, _ = run_both(q)
        assert table.num_rows > 0


def test_joins_compose_with_unions_windows_and_joins():
    def inputs(env):
        a = stream(env, [{"ts": [1, 4, 12], "k": [1, 2, 1], "v": [0, 1, 2]}, {"ts": [15, 23], "k": [2, 1], "v": [3, 4]}])
        b = stream(env, [{"ts": [2, 13], "k": [1, 1], "v": [10, 11]}, {"ts": [5, 24], "k": [2, 1], "v": [12, 13]}],
                   bound=10)
        c = stream(env, [{"ts": [3, 14, 25], "k": [1, 2, 1], "v": [20, 21, 22]}])
        return a, b, c

    def union_into_join(env):
        a, b, c = inputs(env)
        return a.union(b).join(c).where("k").equal_to("k").window(tumbling(10))

    def join_into_union(env):
        a, b, c = inputs(env)
        ab = a.join(b).where("k").equal_to("k").window(tumbling(10)).select("k", "v", "v_right")
        ac = a.interval_join(c).where("k").equal_to("k").between(ms(-3), ms(3)).select("k", "v", "v_right")
        return ab.union(ac).key_by("k").window(tumbling(10)).aggregate(n=agg.count(), s=agg.sum("v_right"))

    def chained(env):
        a, b, c = inputs(env)
        ab = a.join(b).where("k").equal_to("k").window(tumbling(10)).select("k", "v", w="v_right")
        return ab.join(c).where("k").equal_to("k").window(SlidingEventTimeWindows.of(ms(20), ms(10)))

    for build in (union_into_join, join_into_union, chained):
        for parallelism in (1, 2):
            table, _ = run_both(build, parallelism)
            assert table.num_rows > 0, build.__name__


def test_an_input_that_only_filters_runs_its_filters_in_the_join_kernel():
    def build(env):
        a = env.from_arrow(pa.table({"ts": pa.array([1, 2, 3, 4], i64), "k": pa.array([1, 1, 2, 2], i64),
                                     "d": pa.array(["x", "y", "x", "x"]).dictionary_encode(),
                                     "e": pa.array(["x", "x", "z", "x"]).dictionary_encode()}), timestamp="ts")
        b = stream(env, [{"ts": [5, 6], "k": [1, 2]}])
        left = a.filter((col("d") == "x") & (col("d") == col("e"))).select("k", "d", when="ts")
        return left.join(b).where("k").equal_to("k").window(tumbling(10))

    table, metrics = run_both(build)
    assert rows(table, "k", "d", "when", "ts") == [(1, "x", 1, 5), (2, "x", 4, 6)]
    plan = build_physical_plan(Query(build(gz.StreamEnvironment()).node))
    join = next(p for p in plan.pipelines if isinstance(p.input, JoinInput))
    left = plan.pipelines[join.input.left]
    assert not left.filters and left.terminal.is_identity(left.input_schema)  # no kernel runs there
    assert len(join.terminal.sides[0].filters) == 2  # the two conjuncts, each a filter
    assert metrics["queries"][0]["pipelines"][join.id]["filtered"] == 2
