"""Regular joins (``a.join(b).where(k).equal_to(k)`` without a window, with ``state_ttl``) and
lookup joins (``s.lookup_join(table, left_on, right_on)``): hand-computed cases, definition-time
errors, differential properties against the reference evaluator, checkpoint restarts and the
state-memory limit.

The semantics under test (docs/semantics.md, "Regular joins" and "Lookup joins"): a record pairs
at once with every record of the other side with an equal key still held, then is held itself
(without a TTL the pairs over the whole input are the inner join of both inputs); with
``state_ttl(d)`` the state holds the records with ``ts >= watermark - d``. A lookup join pairs
each record with its key's rows of a static table, in table order. Null keys join nothing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import assert_tables_equal
from test_checkpoint import run_with_crashes
from test_join import JOIN_KEYS, KEY_PARTNERS, Side, ms, rows, run_both, sides, stream, tumbling

import grizzly_py as gz
from grizzly_py import Time, agg, col, reference
from grizzly_py.engine.state_memory import StateMemoryLimitError
from grizzly_py.physical.pipelines import JoinInput, build_physical_plan
from grizzly_py.plan import Query
from grizzly_py.types import SchemaError
from grizzly_py.value_order import normalize_key

i64 = pa.int64()


# ----------------------------------------------------------------------------------------------
# regular joins by hand
# ----------------------------------------------------------------------------------------------
def _two_streams(env):
    a = stream(env, [{"ts": [1, 2], "k": [1, 2], "v": [0, 1]}, {"ts": [3, 10], "k": [1, None], "v": [2, 3]},
                     {"ts": [20], "k": [1], "v": [4]}])
    b = stream(env, [{"ts": [2], "k": [1], "v": [10]}, {"ts": [5], "k": [1], "v": [11]},
                     {"ts": [15], "k": [2], "v": [12]}, {"ts": [30], "k": [1], "v": [13]}])
    return a, b


def test_regular_join_pairs_each_record_with_the_other_sides_history():
    def build(env):
        a, b = _two_streams(env)
        return a.join(b).where("k").equal_to("k")
    table, metrics = run_both(build)
    # pairs leave when their second record arrives (sources read round-robin by batch)
    assert rows(table, "v", "v_right") == [(0, 10), (2, 10), (0, 11), (2, 11), (4, 10), (4, 11), (1, 12),
                                           (0, 13), (2, 13), (4, 13)]
    assert table.column_names == ["ts", "k", "v", "ts_right", "k_right", "v_right"]
    assert metrics["filtered_records"] == 1  # the null key
    assert metrics["late_records"] == 0


def test_state_ttl_drops_records_behind_the_watermark():
    def build(env):
        a, b = _two_streams(env)
        return a.join(b).where("k").equal_to("k").state_ttl(ms(5))
    table, _ = run_both(build)
    # when ts=30 arrives the watermark is 19: only v=4 (ts 20) is held (20 + 5 >= 19; 3 + 5 < 19)
    assert rows(table, "v", "v_right") == [(0, 10), (2, 10), (0, 11), (2, 11), (4, 10), (4, 11), (1, 12), (4, 13)]


def test_the_pairs_event_time_feeds_a_window():
    def build(env):
        a, b = _two_streams(env)
        return (a.join(b).where("k").equal_to("k").window_all(tumbling(10))
                .aggregate(n=agg.count(), hi=agg.max("v_right")))
    table, _ = run_both(build)
    # event time max(ts, ts_right): [0,10) 5 pairs, [10,20) (1,12), [20,30) (4,10) (4,11), [30,40) 3
    assert rows(table, "window_start", "n") == [(0, 4), (10, 1), (20, 2), (30, 3)]


def test_the_join_builder_is_a_stream():
    def build(env):
        a, b = _two_streams(env)
        return (a.join(b).where("k").equal_to("k").filter(col("v_right") > 10)
                .with_columns(d=col("v_right") - col("v")).select("v", "d"))
    table, _ = run_both(build)
    assert rows(table, "v", "d") == [(0, 11), (2, 9), (4, 7), (1, 11), (0, 13), (2, 11), (4, 9)]
    env = gz.StreamEnvironment()
    a, b = _two_streams(env)
    joined = a.join(b).where("k").equal_to("k")
    assert joined.key_by("k").window(tumbling(100)).aggregate(n=agg.count()).execute_and_collect()["n"].to_pylist() \
        == [9, 1]
    window = joined.window(tumbling(10)).execute_and_collect()  # .window() still makes the window join
    assert window.column_names[:2] == ["window_start", "window_end"]


def test_definition_errors():
    env = gz.StreamEnvironment()
    a, b = _two_streams(env)
    with pytest.raises(SchemaError, match="needs its keys"):
        a.join(b).where("k").window(tumbling(10))
    with pytest.raises(SchemaError, match="between 0 and"):
        a.join(b).where("k").equal_to("k").state_ttl(ms(-1))
    with pytest.raises(SchemaError, match="state_ttl is for the regular join"):
        a.join(b).where("k").equal_to("k").state_ttl(ms(5)).window(tumbling(10))
    s = env.from_arrow(pa.table({"k": pa.array([1], i64)}))
    with pytest.raises(SchemaError, match="no event time"):
        a.join(s).where("k").equal_to("k")
    with pytest.raises(SchemaError, match="cannot equal key"):
        a.join(env.from_arrow(pa.table({"ts": pa.array([1], i64), "k": ["x"]}), timestamp="ts")).where("k").equal_to("k")


def test_a_filter_on_the_joined_rows_runs_in_the_probe():
    """Nexmark Q9's ``B.dateTime BETWEEN A.dateTime AND A.expires``: the terms over numeric and
    bool columns of both sides are evaluated in the probe loop (a rejected pair never leaves
    the kernel, and counts as filtered); a string term stays after the join."""
    def build(env):
        a = env.from_arrow(pa.table({"ts": pa.array([1, 2, 3, 4], i64), "k": [1, 1, 2, 1], "expires": [5, None, 9, 30],
                                     "f": [0.5, float("nan"), None, 2.0], "s": ["x", "y", "x", "x"]}),
                           timestamp="ts")
        b = env.from_arrow(pa.table({"ts": pa.array([2, 6, 8, 25], i64), "k": [1, 2, 1, 1], "ok": [True, None, True, False],
                                     "g": [1.0, 2.0, None, 3.0]}).to_batches(max_chunksize=1), timestamp="ts")
        return (a.join(b).where("k").equal_to("k")
                .filter(col("ts_right").between(col("ts"), col("expires")) & (col("ok") | (col("f") < col("g")))
                        & (col("s") == "x")))
    table, metrics = run_both(build)
    # (2, *): expires is null; (3, 6): ok is null and f < g null; (4, 25): ok false but 2.0 < 3.0
    assert rows(table, "ts", "ts_right") == [(1, 2), (4, 8), (4, 25)]
    assert metrics["filtered_records"] == 7  # 10 pairs of equal keys, 7 rejected
    plan = build_physical_plan(Query(build(gz.StreamEnvironment()).node))
    join = next(p for p in plan.pipelines if isinstance(p.input, JoinInput))
    assert "(in the probe)" in plan.explain() and "ok" in repr(join.terminal.pair_filter)
    after = plan.pipelines[-1]
    assert [repr(f) for f in after.filters] == ["(col('s') == lit('x'))"]
    assert [c for _, c in join.terminal.pair_columns[0]] == ["ts", "expires", "f"]
    assert [c for _, c in join.terminal.pair_columns[1]] == ["ts", "ok", "g"]


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("ttl", [None, 300])
def test_a_fused_filter_may_reject_more_pairs_than_the_join_had_records(ttl, parallelism):
    """Few keys, many pairs: the filter in the probe rejects more pairs than the join was given
    records. They are filtered results (as a filter pipeline after the join counts them), not
    records the join dropped: the record accounting holds and ``filtered_records`` equals the
    reference's."""
    n = 600
    left = [{"ts": list(range(i, i + 60)), "k": [j % 5 for j in range(i, i + 60)], "v": list(range(i, i + 60))}
            for i in range(0, n, 60)]
    right = [{"ts": list(range(i, i + 60)), "k": [j % 5 for j in range(i, i + 60)], "v": [j % 7 for j in range(i, i + 60)]}
             for i in range(0, n, 60)]

    def build(env):
        joined = stream(env, left).join(stream(env, right)).where("k").equal_to("k")
        if ttl is not None:
            joined = joined.state_ttl(ms(ttl))
        return joined.filter(col("v") % 3 == col("v_right") % 3)
    table, metrics = run_both(build, parallelism)
    assert metrics["filtered_records"] > 2 * n  # more rejected pairs than records in
    assert metrics["accounting"]["ok"]


def test_explain_names_the_regular_join():
    env = gz.StreamEnvironment()
    a, b = _two_streams(env)
    q = a.join(b).where("k").equal_to("k").state_ttl(Time.seconds(2))
    assert "RegularJoin[k=k, state TTL 2000 ms]" in q.explain()
    plan = build_physical_plan(Query(q.node))
    assert "join     regular, state TTL 2000 ms" in plan.explain()


# ----------------------------------------------------------------------------------------------
# regular joins against the reference
# ----------------------------------------------------------------------------------------------
@dataclass
class RegularCase:
    left: Side
    right: Side
    ttl: int | None
    filter_left: bool = False     # a filter and a computed column before the join (a projection)
    filter_right: bool = False    # a filter and a rename before the join (run by the join's kernel)
    filter_after: bool = False    # a filter over both sides' columns after the join
    window_after: bool = False    # a global tumbling window count after the join
    parallelism: int = 1
    interval: tuple | None = None  # (lower, upper): an interval join instead (its filter fuses too)

    def build(self, env):
        a, b = self.left.source(env), self.right.source(env)
        if self.filter_left:
            a = a.filter(col("v") % 3 != 1).with_columns(w=col("v") * 2)
        if self.filter_right:
            b = b.filter((col("v") % 2 == 0) | col("k").is_null()).select("k", "v", time="ts")
        if self.interval is not None:
            q = a.interval_join(b).where("k").equal_to("k").between(ms(self.interval[0]), ms(self.interval[1]))
        else:
            q = a.join(b).where("k").equal_to("k")
        if self.ttl is not None and self.interval is None:
            q = q.state_ttl(ms(self.ttl))
        if self.filter_after:
            q = q.filter((col("v_right") - col("v") > 97) | (col("k_right") == col("k")))  # (in the probe)
        if self.window_after:
            q = q.window_all(tumbling(7)).aggregate(n=agg.count(), lo=agg.min("v"), hi=agg.max("v_right"))
        return q

    def __repr__(self):
        return (f"RegularCase(ttl={self.ttl}, interval={self.interval}, filter_left={self.filter_left}, filter_right={self.filter_right}, "
                f"filter_after={self.filter_after}, window_after={self.window_after}, "
                f"parallelism={self.parallelism})\nleft  = {self.left.code()}\nright = {self.right.code()}")


@st.composite
def regular_cases(draw, ttl: bool = True) -> RegularCase:
    key_kind = draw(st.sampled_from(sorted(JOIN_KEYS)))
    left = draw(sides(key_kind))
    right = draw(sides(draw(st.sampled_from(KEY_PARTNERS[key_kind])), start=100))
    return RegularCase(left, right, draw(st.none() | st.integers(0, 12)) if ttl else None,
                       draw(st.booleans()), draw(st.booleans()), draw(st.booleans()),
                       draw(st.integers(0, 3)) == 0, draw(st.integers(1, 4)))


def check(case) -> None:
    expected, ref_metrics = reference.run(case.build(gz.StreamEnvironment()).node)
    env = gz.StreamEnvironment(parallelism=case.parallelism)
    case.build(env).collect("out")
    result = env.execute()
    assert_tables_equal(result["out"], expected)
    assert result.metrics["late_records"] == ref_metrics["late_records"], "late record counts differ (windows after)"
    assert result.metrics["filtered_records"] == ref_metrics["filtered_records"], "filtered record counts differ"


@settings(max_examples=25)
@given(regular_cases())
def test_regular_joins_match_reference(case):
    check(case)


@settings(max_examples=15)
@given(regular_cases(), st.integers(-6, 6), st.integers(0, 8))
def test_a_filter_after_an_interval_join_runs_in_its_probe_as_after_it(case, lower, width):
    case.interval, case.filter_after = (lower, lower + width), True
    check(case)
    plan = build_physical_plan(Query(case.build(gz.StreamEnvironment()).node))
    join = next(p for p in plan.pipelines if isinstance(p.input, JoinInput))
    assert (join.terminal.pair_filter is not None) == (case.left.schema.field("k").type != pa.string()
                                                       and not pa.types.is_dictionary(case.left.schema.field("k").type))


@settings(max_examples=15)
@given(regular_cases(ttl=False))
def test_without_ttl_the_pairs_are_the_inner_join_of_both_inputs(case):
    """Whatever the batches and the parallelism: the multiset of (left v, right v) pairs is the
    inner join of the whole inputs (computed here by a nested loop; null keys match nothing)."""
    case.filter_left = case.filter_right = case.filter_after = case.window_after = False
    env = gz.StreamEnvironment(parallelism=case.parallelism)
    case.build(env).collect("out")
    got = Counter(rows(env.execute()["out"], "v", "v_right"))

    def keyed(side):
        whole = pa.RecordBatch.from_pydict(side.columns, schema=side.schema)
        keys = whole.column("k")
        if pa.types.is_dictionary(keys.type):
            keys = keys.cast(keys.type.value_type)
        if pa.types.is_timestamp(keys.type):  # keys compare as epoch milliseconds
            keys = pa.array([None if k is None else k // (1000 if keys.type.unit == "us" else 1)
                             for k in keys.cast(i64).to_pylist()], i64)
        return [(None if k is None else _same(normalize_key(k)), v) for k, v in zip(keys.to_pylist(), side.columns["v"])]
    expected = Counter((lv, rv) for lk, lv in keyed(case.left) for rk, rv in keyed(case.right)
                       if lk is not None and lk == rk)
    assert got == expected


def _same(k):
    """A key as the join compares it: NaN equals NaN."""
    return "nan" if isinstance(k, float) and k != k else k


# ----------------------------------------------------------------------------------------------
# lookup joins
# ----------------------------------------------------------------------------------------------
AUCTIONS = pa.table({"id": pa.array([1, 2, 2, None, 5], i64), "name": ["a", "b", "b2", "n", "e"],
                     "v": [7, 8, 9, 10, 11]})


def test_lookup_join_pairs_records_with_the_table_rows_of_their_key():
    def build(env):
        s = stream(env, [{"ts": [1, 2], "k": [1, 2], "v": [0, 1]}, {"ts": [3, 10, 20], "k": [1, None, 3], "v": [2, 3, 4]}])
        return s.lookup_join(AUCTIONS, left_on="k", right_on="id")
    table, metrics = run_both(build)
    assert table.column_names == ["ts", "k", "v", "name", "v_right"]
    assert rows(table, "v", "name", "v_right") == [(0, "a", 7), (1, "b", 8), (1, "b2", 9), (2, "a", 7)]
    assert metrics["filtered_records"] == 1  # the stream's null key; the table's does not count


def test_lookup_join_keeps_the_records_event_time():
    def build(env):
        s = stream(env, [{"ts": [1, 2], "k": [1, 2], "v": [0, 1]}, {"ts": [13, 25], "k": [2, 1], "v": [2, 3]}])
        return s.lookup_join(AUCTIONS, "k", "id").window_all(tumbling(10)).aggregate(n=agg.count())
    table, _ = run_both(build)
    assert rows(table, "window_start", "n") == [(0, 3), (10, 2), (20, 1)]


def test_lookup_join_of_a_stream_without_event_time():
    def build(env):
        s = env.from_arrow(pa.table({"k": pa.array([2, 1, 7], i64), "v": [0, 1, 2]}).to_batches(max_chunksize=2))
        return s.lookup_join(AUCTIONS, "k", "id").filter(col("v_right") > 7)
    table, _ = run_both(build, parallelism=2)
    assert rows(table, "v", "name") == [(0, "b"), (0, "b2")]


def test_lookup_join_errors():
    env = gz.StreamEnvironment()
    s = stream(env, [{"ts": [1], "k": [1], "v": [0]}])
    with pytest.raises(TypeError, match="expected a pyarrow.Table"):
        s.lookup_join({"id": [1]}, "k", "id")
    with pytest.raises(SchemaError, match="nope"):
        s.lookup_join(AUCTIONS, "k", "nope")
    with pytest.raises(SchemaError, match="cannot equal key"):
        s.lookup_join(AUCTIONS, "k", "name")
    with pytest.raises(SchemaError, match="left_on names 2 key column.s. but right_on 1"):
        s.lookup_join(AUCTIONS, ["k", "v"], "id")
    with pytest.raises(SchemaError, match="lookup_join table: column 'l' has Arrow type list"):
        s.lookup_join(pa.table({"k": [1], "l": [[1, 2]]}), "k")
    bad = pa.DictionaryArray.from_arrays(pa.array([5], pa.int32()), pa.array(["a"]), safe=False)
    with pytest.raises(gz.BadInputError, match="lookup_join: the table is not valid Arrow data: Column 1.*out of bounds"):
        s.lookup_join(pa.table({"k": [1], "d": bad}), "k")


@st.composite
def lookup_cases(draw):
    key_kind = draw(st.sampled_from(sorted(JOIN_KEYS)))
    left = draw(sides(key_kind))
    key_type, values = JOIN_KEYS[draw(st.sampled_from(KEY_PARTNERS[key_kind]))]
    n = draw(st.integers(0, 12))
    table = pa.table({"k": pa.array(draw(st.lists(st.none() | values, min_size=n, max_size=n)), key_type),
                      "v": pa.array(range(100, 100 + n), i64), "label": pa.array([f"r{i}" for i in range(n)], pa.string())})
    return left, table, draw(st.booleans()), draw(st.integers(1, 4))


@settings(max_examples=25)
@given(lookup_cases())
def test_lookup_joins_match_reference(case):
    left, table, filtered, parallelism = case

    def build(env):
        s = left.source(env)
        if filtered:
            s = s.filter(col("v") % 3 != 1)
        return s.lookup_join(table, "k")
    expected, ref_metrics = reference.run(build(gz.StreamEnvironment()).node)
    env = gz.StreamEnvironment(parallelism=parallelism)
    build(env).collect("out")
    result = env.execute()
    assert_tables_equal(result["out"], expected)
    assert result.metrics["filtered_records"] == ref_metrics["filtered_records"]


def test_lookup_join_reads_a_join_pipeline_without_a_right_input():
    env = gz.StreamEnvironment()
    s = stream(env, [{"ts": [1], "k": [1], "v": [0]}])
    plan = build_physical_plan(Query(s.lookup_join(AUCTIONS, "k", "id").node))
    join = next(p for p in plan.pipelines if isinstance(p.input, JoinInput))
    assert join.input.pipeline_ids == (0,)
    assert "lookup in a static table of 5 rows" in plan.explain()


# ----------------------------------------------------------------------------------------------
# checkpoints and the state-memory limit
# ----------------------------------------------------------------------------------------------
def _data(rows=1200, keys=30, seed=5):
    import numpy as np
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.integers(0, 20_000, rows)) + rng.integers(-20, 21, rows)
    return pa.table({"ts": ts, "k": rng.integers(0, keys, rows), "name": rng.choice(["ann", "bo", "cy", ""], rows),
                     "n": rng.integers(-5, 100, rows)})


def _regular(env, data):
    other = env.from_arrow(_data(rows=600, seed=9).to_batches(max_chunksize=40), timestamp="ts",
                           watermark=gz.WatermarkStrategy.for_bounded_out_of_orderness(ms(20)))
    left = env.from_arrow(data, timestamp="ts", watermark=gz.WatermarkStrategy.for_bounded_out_of_orderness(ms(20)))
    return (left.filter(col("n") < 60).join(other).where("k", "name").equal_to("k", "name").state_ttl(ms(3000))
            .filter(col("ts_right") - col("ts") <= col("n") * 20))  # held records keep ts and n for the probe


def _lookup(env, data):
    table = pa.table({"name": ["ann", "bo", "bo", "zed"], "city": ["x", "y", "z", "w"]})
    left = env.from_arrow(data, timestamp="ts")
    return left.lookup_join(table, "name")


@pytest.mark.parametrize("build", [_regular, _lookup], ids=["regular", "lookup"])
def test_a_job_restarted_from_a_checkpoint_gives_the_same_result(build, tmp_path):
    batches = _data().to_batches(max_chunksize=100)
    expected = reference.evaluate(build(gz.StreamEnvironment(), batches).node)
    result = run_with_crashes(build, batches, [2, 7], tmp_path / "chk", parallelism=2)
    assert_tables_equal(result["out"], expected)
    assert result.metrics["checkpoints"]["restored_from"] == 7


def test_a_lookup_join_restored_before_its_first_record_still_inserts_its_table():
    from grizzly_py.engine.join_kernel import JoinKernel
    env = gz.StreamEnvironment()
    batch = pa.record_batch({"ts": pa.array([1, 2], i64), "k": pa.array([2, 9], i64), "v": pa.array([0, 1], i64)})
    plan = build_physical_plan(Query(env.from_arrow(batch, timestamp="ts").lookup_join(AUCTIONS, "k", "id").node))
    pipeline = next(p for p in plan.pipelines if isinstance(p.input, JoinInput))
    saved = JoinKernel(pipeline, "test").export_state()  # a snapshot before any record reached the join
    kernel = JoinKernel(pipeline, "test")
    kernel.restore_state(saved)
    try:
        out = kernel.process(0, batch, -(1 << 63))
        assert out.column("name").to_pylist() == ["b", "b2"]
    finally:
        kernel.close()


def test_the_state_counts_against_the_memory_limit_and_the_ttl_bounds_it():
    def build(env, ttl):
        data = _data(rows=20_000, keys=50, seed=1)
        a = env.from_arrow(data.to_batches(max_chunksize=500), timestamp="ts")
        b = env.from_arrow(data.select(["ts", "k"]).to_batches(max_chunksize=500), timestamp="ts")
        q = a.join(b).where("k").equal_to("k")
        return (q if ttl is None else q.state_ttl(ms(ttl))).window_all(tumbling(1000)).aggregate(n=agg.count())
    limit = 1 << 19
    env = gz.StreamEnvironment(state_memory_limit=limit)
    build(env, None).collect("out")
    with pytest.raises(StateMemoryLimitError, match=rf"the limit is {limit} bytes; pipeline \d+ \(join\)"):
        env.execute()
    env = gz.StreamEnvironment(state_memory_limit=limit)
    build(env, 50).collect("out")
    assert_tables_equal(env.execute()["out"], reference.evaluate(build(gz.StreamEnvironment(), 50).node))


# ----------------------------------------------------------------------------------------------
# Spark
# ----------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_to_spark_runs_regular_and_lookup_joins():
    """On Spark a regular join distributes by key (``keyed-join``) and a lookup join runs in
    every task of the stateless stage: the same rows as the reference (in no order across
    tasks)."""
    pytest.importorskip("pyspark", reason="PySpark is not installed")
    from grizzly_py.spark import local_session
    spark = local_session(2, master="local[2]", app="grizzly-regular-join-tests")
    try:
        env = gz.StreamEnvironment.for_spark(spark)
        a, b = _two_streams(env)
        regular = a.join(b).where("k").equal_to("k").state_ttl(ms(5)).filter(col("v_right") > col("v") + 9)
        s = stream(env, [{"ts": [1, 2], "k": [1, 2], "v": [0, 1]}])
        lookup = s.lookup_join(AUCTIONS, "k", "id")
        for q in (regular, lookup):
            expected = reference.evaluate(q.node)
            actual = pa.Table.from_pandas(q.to_spark().toPandas(), schema=expected.schema)
            order = [(c, "ascending") for c in expected.column_names]
            assert_tables_equal(actual.sort_by(order), expected.sort_by(order))
    finally:
        spark.stop()
