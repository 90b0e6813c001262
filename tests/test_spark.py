"""grizzly-py on Spark (local[2]; one session for the module): the same results as the embedded
engine for batch DataFrames (mapInArrow), source pushdown and streaming DataFrames; a streaming
restart from its checkpoint; a job's file sinks committed together; a Python worker that dies
mid-task, retried by Spark without duplicated output; plans compiled once per worker; ``grizzly
run --engine spark``.

Skipped, with the reason, where PySpark (``pip install 'grizzly-py[spark]'``) or Java is missing.
Spark jobs cost about a second each here, so the property tests draw few examples; the partial
state logic itself is tested without Spark, on many, in test_spark_partials.py.
"""

from __future__ import annotations

import os
import shutil
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, assume, given, settings
from strategies import assert_tables_equal, query_cases

pytest.importorskip("pyspark", reason="PySpark is not installed: pip install 'grizzly-py[spark]'")
if shutil.which("java") is None:  # pragma: no cover - depends on the host
    pytest.skip("no Java runtime (Spark needs Java 17)", allow_module_level=True)

import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, agg, col, reference
from grizzly_py.physical import build_physical_plan
from grizzly_py.plan import Query
from grizzly_py.spark.planner import collect, pipeline_arrow_schema, to_spark
from grizzly_py.spark.schema import spark_arrow_schema
from grizzly_py.windows import (
    CumulativeEventTimeWindows,
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)

pytestmark = pytest.mark.slow  # a Spark session per module, Spark jobs per test

FEW = settings(max_examples=int(os.environ.get("GRIZZLY_SPARK_EXAMPLES", "6")), deadline=None,
               suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def spark():
    from grizzly_py.spark import local_session
    session = local_session(2, master="local[2,2]", app="grizzly-tests")  # 2 threads, 2 attempts per task
    yield session
    session.stop()


def embedded(build):
    env = gz.StreamEnvironment()
    build(env).collect("out")
    result = env.execute()
    return result["out"], result.metrics


def on_spark(spark, build):
    env = gz.StreamEnvironment.for_spark(spark)
    build(env).collect("out")
    result = env.execute()
    return result["out"], result.metrics


def as_types_of(table: pa.Table, like: pa.Table) -> pa.Table:
    return table.cast(like.schema) if table.schema != like.schema else table


# ----------------------------------------------------------------------------------------------
# batch: source pushdown (from_arrow / from_parquet under Spark) keeps the watermarks of the batches
@FEW
@given(query_cases(max_rows=30))
def test_pushdown_matches_the_embedded_engine(spark, case):
    from grizzly_py.aggregates import AggregateOverflowError
    try:
        expected, metrics = embedded(case.build)
    except AggregateOverflowError:
        with pytest.raises(AggregateOverflowError):
            on_spark(spark, case.build)
        return
    actual, spark_metrics = on_spark(spark, case.build)
    assert_tables_equal(*comparable(actual, expected, spark_metrics))
    assert spark_metrics["late_records"] == metrics["late_records"]


def comparable(actual: pa.Table, expected: pa.Table, spark_metrics: dict) -> tuple[pa.Table, pa.Table]:
    """The Spark and embedded results in an order both keep: the engine's, except where rows by
    key came out per task, sorted by value (docs/spark.md), not in emission order."""
    if spark_metrics["queries"][0]["strategy"] in ("keyed", "keyed-join"):
        return sorted_rows(actual), sorted_rows(expected)
    return actual, expected


# batch: a Spark DataFrame is one batch of the stream (no order between partitions: nothing is late)
@FEW
@given(query_cases(max_rows=30))
def test_batch_dataframe_matches_the_embedded_engine(spark, case):
    from grizzly_py.aggregates import AggregateOverflowError
    table = pa.Table.from_batches(case.batches(), schema=case.arrow_schema).combine_chunks()
    bound = WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(case.bound_ms))

    def build_on(source):
        def build(env):
            stream = source(env)
            for step in case.steps:
                stream = step.apply(stream)
            return stream
        return build
    try:
        expected, _ = embedded(build_on(lambda env: env.from_arrow(table, timestamp="ts", watermark=bound)))
    except AggregateOverflowError:
        assume(False)
    df = spark.createDataFrame(table, schema=None) if table.num_rows else None
    assume(df is not None)
    try:
        actual, metrics = on_spark(spark, build_on(lambda env: env.from_spark(df, timestamp="ts", watermark=bound)))
    except NotImplementedError as e:  # Spark's timestamps are microseconds; a timestamp key must be
        assert "timestamp keys must have millisecond unit" in str(e)  # ms (semantics.md, "Keys")
        assume(False)
    assert_tables_equal(*comparable(actual, as_types_of(expected, actual), metrics))
    assert metrics["late_records"] == 0


def _events(n=400, seed=7, start=1_000_000, disorder=40):
    rng = np.random.default_rng(seed)
    ts = start + np.sort(rng.integers(0, 20 * n, n)) + rng.integers(-disorder, disorder + 1, n)
    return pa.table({"ts": pa.array(ts, pa.int64()),
                     "k": pa.array(rng.choice(["a", "b", "c", None], n).tolist(), pa.string()),
                     "g": pa.array(rng.integers(0, 3, n), pa.int32()),
                     "x": pa.array(np.round(rng.normal(0, 10, n), 2)),
                     "i": pa.array(rng.integers(-50, 50, n))})


def _every_aggregate(windowed):
    return windowed.aggregate(n=agg.count(), c=agg.count("x"), s=agg.sum("i"), fs=agg.sum("x"), lo=agg.min("x"),
                              hi=agg.max("i"), a=agg.avg("x"), vp=agg.var_pop("x"), vs=agg.var_samp("x"),
                              sp=agg.stddev_pop("x"), ss=agg.stddev_samp("i"), med=agg.median("x"), mo=agg.mode("i"),
                              cd=agg.count_distinct("g"), tk=agg.top_k("x", 3), ti=agg.top_k("i", 2))


ASSIGNERS = {
    "tumbling": TumblingEventTimeWindows.of(Time.milliseconds(500)),
    "sliding": SlidingEventTimeWindows.of(Time.milliseconds(900), Time.milliseconds(300)),
    "session": EventTimeSessionWindows.with_gap(Time.milliseconds(35)),
    "tumbling_offset": TumblingEventTimeWindows.of(Time.milliseconds(500), Time.milliseconds(-120)),
    "cumulative": CumulativeEventTimeWindows.of(Time.milliseconds(900), Time.milliseconds(300)),
}


@pytest.mark.parametrize("kind", sorted(ASSIGNERS))
def test_every_window_type_and_aggregate_from_parquet(spark, tmp_path, kind):
    path = tmp_path / "events.parquet"
    pq.write_table(_events(disorder=300), path, row_group_size=50)  # 8 row groups: watermark steps, late records
    bound = WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(10))

    def build(env):
        return _every_aggregate(env.from_parquet(path, timestamp="ts", watermark=bound).filter(col("i") > -45)
                                .key_by("k", "g").window(ASSIGNERS[kind]))
    expected, metrics = embedded(build)
    assert metrics["late_records"] > 0 or kind != "tumbling"
    actual, spark_metrics = on_spark(spark, build)
    assert_tables_equal(actual, expected)
    assert spark_metrics["late_records"] == metrics["late_records"]
    assert spark_metrics["queries"][0]["input"] == "pushdown"
    assert spark_metrics["queries"][0]["strategy"] == ("keyed" if kind in ("session", "cumulative") else "partial")


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_bad_rows_dropped_and_counted_as_the_source_does(spark, tmp_path, fmt):
    table = _events(300)
    ts = table.column("ts").to_pylist()
    ts[7] = ts[150] = ts[290] = None  # null event times: bad rows
    table = table.set_column(0, "ts", pa.array(ts, pa.int64()))
    path = tmp_path / f"events.{fmt}"
    if fmt == "parquet":
        pq.write_table(table, path, row_group_size=60)
    else:
        import pyarrow.csv as pcsv
        pcsv.write_csv(table, path)

    def build(env):
        read = env.from_parquet if fmt == "parquet" else env.from_csv
        return read(path, timestamp="ts", on_bad_rows="drop").key_by("k") \
            .window(ASSIGNERS["tumbling"]).aggregate(n=agg.count(), s=agg.sum("x"))
    expected, metrics = embedded(build)
    actual, spark_metrics = on_spark(spark, build)
    assert_tables_equal(actual, expected)
    assert spark_metrics["rejected_records"] == metrics["rejected_records"] == 3

    def strict(env):
        read = env.from_parquet if fmt == "parquet" else env.from_csv
        return read(path, timestamp="ts").key_by("k").window(ASSIGNERS["tumbling"]).aggregate(n=agg.count())
    from grizzly_py.sources import BadInputError
    with pytest.raises(BadInputError, match="null event timestamp in batch"):
        on_spark(spark, strict)


def test_file_sinks_appear_together_or_not_at_all(spark, tmp_path, monkeypatch):
    """A job's Parquet and CSV sinks on Spark: written as the embedded engine writes them, and
    neither appears when the second one fails as it finishes (engine/commit.py)."""
    import pyarrow.csv as pcsv

    from grizzly_py.engine.sinks import CsvSink

    def register(env, stem):
        events = env.from_arrow(_events(), timestamp="ts")
        events.key_by("k").window(ASSIGNERS["tumbling"]).aggregate(n=agg.count()).sink_to_parquet(
            str(tmp_path / f"{stem}.parquet"))
        events.filter(col("i") > 0).select("ts", "i").sink_to_csv(str(tmp_path / f"{stem}.csv"))
        return env
    register(gz.StreamEnvironment(), "embedded").execute()

    def full_disk(self):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(CsvSink, "finish", full_disk)
    with pytest.raises(OSError, match="No space left"):
        register(gz.StreamEnvironment.for_spark(spark), "spark").execute()
    assert not list(tmp_path.glob("spark.*"))
    monkeypatch.undo()
    register(gz.StreamEnvironment.for_spark(spark), "spark").execute()
    assert_tables_equal(pq.read_table(tmp_path / "spark.parquet"), pq.read_table(tmp_path / "embedded.parquet"))
    assert pcsv.read_csv(tmp_path / "spark.csv").equals(pcsv.read_csv(tmp_path / "embedded.csv"))


def test_int64_sum_overflow_across_tasks_is_reported(spark):
    from grizzly_py.aggregates import AggregateOverflowError
    big = 2**62
    table = pa.table({"ts": pa.array([1, 2, 3, 4], pa.int64()), "v": pa.array([big, big, big, -big], pa.int64())})
    def build(env):  # each task's partial sum fits; the merged one does not
        return env.from_arrow(table.to_batches(max_chunksize=1), timestamp="ts") \
            .window_all(TumblingEventTimeWindows.of(Time.milliseconds(10))).aggregate(s=agg.sum("v"))
    with pytest.raises(AggregateOverflowError):
        embedded(build)
    with pytest.raises(AggregateOverflowError, match="int64 sum overflow"):
        on_spark(spark, build)


def test_dataframe_input_and_count_windows_split_by_key(spark):
    """Each key's records in the DataFrame's order, in its key's task (test_spark_keyed.py)."""
    table = _events(300)
    df = spark.createDataFrame(table)

    def count_windows(source):
        return lambda env: (source(env).key_by("g").count_window(7, 3)
                            .aggregate(n=agg.count(), s=agg.sum("i"), m=agg.median("x")))
    expected, _ = embedded(count_windows(lambda env: env.from_arrow(table, timestamp="ts")))
    actual, metrics = on_spark(spark, count_windows(lambda env: env.from_spark(df, timestamp="ts")))
    assert_tables_equal(sorted_rows(actual), sorted_rows(expected))
    assert metrics["queries"][0]["strategy"] == "keyed"


@pytest.mark.parametrize("output", ["windows", "late"])
def test_allowed_lateness_and_late_data_run_by_key(spark, tmp_path, output):
    """Kept windows and the late side output need the watermark batch by batch, which each key's
    task has (the source batches' watermarks)."""
    path = tmp_path / "events.parquet"
    pq.write_table(_events(disorder=300), path, row_group_size=50)
    bound = WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(10))

    def build(env):
        out = (env.from_parquet(path, timestamp="ts", watermark=bound).key_by("k")
               .window(TumblingEventTimeWindows.of(Time.milliseconds(500))).allowed_lateness(Time.milliseconds(60))
               .side_output_late_data("late").aggregate(n=agg.count(), s=agg.sum("i")))
        return out if output == "windows" else out.late_data("late")
    expected, metrics = reference.run(build(gz.StreamEnvironment()).node)
    assert expected.num_rows > 0
    actual, spark_metrics = on_spark(spark, build)
    assert_tables_equal(sorted_rows(actual), sorted_rows(as_types_of(expected, actual)))
    assert spark_metrics["queries"][0]["strategy"] == "keyed"


def test_windows_over_computed_strings_run_in_one_task(spark):
    """A string key or aggregate argument computed by a string function is materialized before the
    window (the engine interns what a pipeline reads); on Spark the query runs in one task."""
    table = pa.table({"ts": list(range(0, 3000, 10)), "url": [f"/Shop/{i % 7}/item{i % 5}" for i in range(300)]})

    def build(env):
        s = env.from_arrow(table, timestamp="ts").with_columns(shop=col("url").str.split_part("/", 2))
        return s.key_by("shop").window(TumblingEventTimeWindows.of(Time.milliseconds(500))).aggregate(
            items=agg.count_distinct(col("url").str.to_lowercase()), top=agg.max(col("url").str.slice(-5)))
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    actual, metrics = on_spark(spark, build)
    assert_tables_equal(actual, as_types_of(expected, actual))
    assert metrics["queries"][0]["strategy"] == "whole"


def test_window_top_n_by_key_and_deduplication_of_window_all(spark):
    """A ranked window over tumbling or sliding windows ranks its rows as the embedded engine
    fires it: each task's rows of a group as partial states, ranked again in the merge stage, by
    key or without keys (``window_all``; test_spark_ranked.py)."""
    table = _events(400)

    def top_n(env):
        return env.from_arrow(table, timestamp="ts").key_by("k").window(ASSIGNERS["sliding"]).top_n(
            2, by=["x", "i"], descending=[True, False])

    def deduplicate(env):
        return env.from_arrow(table, timestamp="ts").window_all(ASSIGNERS["tumbling"]).deduplicate(keep="last")
    for build, strategy in ((top_n, "partial"), (deduplicate, "partial")):
        expected, _ = reference.run(build(gz.StreamEnvironment()).node)
        actual, metrics = on_spark(spark, build)
        assert_tables_equal(sorted_rows(actual), sorted_rows(as_types_of(expected, actual)))
        assert metrics["queries"][0]["strategy"] == strategy and expected.num_rows > 0
    frame = top_n(gz.StreamEnvironment.for_spark(spark)).to_spark()  # a DataFrame of the same rows
    assert frame.count() == reference.run(top_n(gz.StreamEnvironment()).node)[0].num_rows


def test_joins_and_unions_of_dataframes_run_by_key(spark):
    """Several DataFrames (and a DataFrame with a pushdown source) reach the tasks as one tagged
    DataFrame partitioned by key; each is still one batch of its stream, as the embedded engine
    sees them here."""
    left, right = _events(200, seed=1).combine_chunks(), _events(150, seed=2).combine_chunks()
    third = _events(90, seed=3).combine_chunks()
    dfs = {id(t): spark.createDataFrame(t) for t in (left, right, third)}

    def join(source):
        return lambda env: (source(env, left).join(source(env, right)).where("k").equal_to("k")
                            .window(ASSIGNERS["tumbling"]))

    def union(source):
        return lambda env: (source(env, left).union(source(env, right), source(env, third))
                            .key_by("g").window(ASSIGNERS["sliding"]).aggregate(n=agg.count(), s=agg.sum("i")))

    def arrow(env, t):
        return env.from_arrow(t, timestamp="ts")

    def frame(env, t):
        return env.from_spark(dfs[id(t)], timestamp="ts")
    for build, strategy in ((join, "keyed-join"), (union, "partial")):
        expected, _ = embedded(build(arrow))
        actual, metrics = on_spark(spark, build(frame))
        assert_tables_equal(sorted_rows(actual), sorted_rows(as_types_of(expected, actual)))
        assert metrics["queries"][0]["strategy"] == strategy and expected.num_rows > 0

    def mixed(env):  # a DataFrame joined with an in-memory (pushdown) source
        return frame(env, left).join(arrow(env, right)).where("k").equal_to("k").window(ASSIGNERS["tumbling"])
    expected, _ = embedded(join(arrow))
    actual, _ = on_spark(spark, mixed)
    assert_tables_equal(sorted_rows(actual), sorted_rows(as_types_of(expected, actual)))


JOINS = {  # a join of two streams keyed by "k" (strings, nulls among them)
    "window": lambda a, b: a.join(b).where("k").equal_to("k").window(ASSIGNERS["sliding"]),
    "session": lambda a, b: a.join(b).where("k").equal_to("k").window(ASSIGNERS["session"]),
    "interval": lambda a, b: a.interval_join(b).where("k").equal_to("k").between(Time.milliseconds(-30),
                                                                               Time.milliseconds(20)),
    "regular": lambda a, b: a.join(b).where("k").equal_to("k"),
    "regular_ttl": lambda a, b: a.join(b).where("k").equal_to("k").state_ttl(Time.milliseconds(60)),
}


def _join_stage(metrics: dict) -> list[dict]:
    return [t for t in metrics["queries"][0]["task_reports"] if t["stage"] == "join"]


def _assert_ran_by_join_key(actual, spark_metrics, expected, metrics, strategy="keyed-join"):
    """The embedded engine's rows and record counts, from the heavy stage of ``strategy`` (the
    keyed-join strategy's tasks, or the partial strategy's input tasks: at least two of them)."""
    assert_tables_equal(sorted_rows(actual), sorted_rows(as_types_of(expected, actual)))
    assert spark_metrics["queries"][0]["strategy"] == strategy and expected.num_rows > 0
    stage = "join" if strategy == "keyed-join" else strategy
    assert len([t for t in spark_metrics["queries"][0]["task_reports"] if t["stage"] == stage]) >= 2
    for name in ("records_in", "records_out", "late_records", "filtered_records"):
        assert spark_metrics[name] == metrics[name], name


@pytest.mark.parametrize("kind", sorted(JOINS))
def test_joins_run_by_key_with_the_engines_watermarks(spark, kind):
    """Both sides partitioned by the join key, each task under the whole sources' watermarks:
    pushdown sources of many batches with disorder (late records, TTL, windows firing batch by
    batch) and DataFrames (one batch each) give the embedded engine's rows and counts."""
    left, right = _events(300, seed=11, disorder=200), _events(240, seed=12, disorder=200)
    bound = WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(40))
    dfs = {id(t): spark.createDataFrame(t.combine_chunks()) for t in (left, right)}

    def arrow(env, t):
        return env.from_arrow(t.to_batches(max_chunksize=30), timestamp="ts", watermark=bound)

    def frame(env, t):
        return env.from_spark(dfs[id(t)], timestamp="ts", watermark=bound)

    def one_batch(env, t):
        return env.from_arrow(t.combine_chunks(), timestamp="ts", watermark=bound)
    for source, reference_source in ((arrow, arrow), (frame, one_batch)):
        def build(env, source=source):
            return JOINS[kind](source(env, left), source(env, right))
        expected, metrics = embedded(lambda env: JOINS[kind](reference_source(env, left), reference_source(env, right)))
        actual, spark_metrics = on_spark(spark, build)
        _assert_ran_by_join_key(actual, spark_metrics, expected, metrics)
    assert metrics["filtered_records"] > 0  # the null keys, as the engine counts them


UNIONS = {  # a union of three streams, then a window keyed by what every input passes through
    # (tumbling and sliding windows take the partial strategy: test_spark_unions.py)
    "tumbling": lambda w: w.key_by("k").window(ASSIGNERS["tumbling"]).aggregate(n=agg.count(), s=agg.sum("i")),
    "session": lambda w: w.key_by("g", "k").window(ASSIGNERS["session"]).aggregate(n=agg.count(), x=agg.max("x")),
    "count": lambda w: w.key_by("k").count_window(4, 3).aggregate(n=agg.count(), f=agg.first("i"), s=agg.sum("i")),
    "renamed_key": lambda w: (w.with_columns(key=col("g")).key_by("key").window(ASSIGNERS["sliding"])
                              .aggregate(n=agg.count()).filter(col("n") > 1)),
}


@pytest.mark.parametrize("kind", sorted(UNIONS))
def test_unions_run_by_key_with_the_engines_watermarks(spark, kind):
    """A union of different sources under a session or count window keyed by columns every input
    passes through: every source's rows partitioned by the key, each task running the union (the
    sources' batches in the embedded engine's order: count windows see the same sequence) and the
    window under the whole sources' watermarks. Pushdown sources of many batches with disorder
    give the embedded engine's rows and counts. Tumbling and sliding windows over the union take
    the partial strategy, under a global window and keyed by a computed column too."""
    tables = [_events(300, seed=51, disorder=200), _events(200, seed=52, disorder=200),
              _events(120, seed=53, disorder=200)]
    bound = WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(40))

    def sources(env):
        streams = [env.from_arrow(t.to_batches(max_chunksize=size), timestamp="ts", watermark=bound)
                   for t, size in zip(tables, (30, 45, 16))]
        return streams[0].union(*streams[1:])
    expected, metrics = embedded(lambda env: UNIONS[kind](sources(env)))
    actual, spark_metrics = on_spark(spark, lambda env: UNIONS[kind](sources(env)))
    strategy = "partial" if kind in ("tumbling", "renamed_key") else "keyed-join"
    _assert_ran_by_join_key(actual, spark_metrics, expected, metrics, strategy)
    env = gz.StreamEnvironment.for_spark(spark)
    global_window = sources(env).window_all(ASSIGNERS["tumbling"]).aggregate(n=agg.count())
    computed_key = sources(env).with_columns(m=col("i") % 3).key_by("m").window(ASSIGNERS["tumbling"]).aggregate(n=agg.count())
    assert global_window.to_spark().grizzly.strategy == computed_key.to_spark().grizzly.strategy == "partial"


def test_executors_on_this_machine_map_large_arrow_sources_from_a_file():
    """A large Arrow source goes to a temporary IPC file that the tasks map, in local mode and on a
    standalone cluster on the loopback; on another host's master its batches travel in the task
    closures (Spark broadcasts those from the driver's heap)."""
    from grizzly_py.spark.inputs import INLINE_BYTES, plan_splits
    from grizzly_py.spark.session import executors_here
    assert executors_here("local[2]") and executors_here("spark://127.0.0.1:7077")
    assert executors_here("spark://localhost:7077") and not executors_here("spark://10.1.2.3:7077")
    n = INLINE_BYTES // 8 + 1000
    table = pa.table({"ts": pa.array(np.arange(n, dtype=np.int64))})
    source = gz.StreamEnvironment().from_arrow(table.to_batches(max_chunksize=n // 4), timestamp="ts").node.source
    kinds = {here: {s.kind for s in plan_splits(source, 4, None, executors_here=here)} for here in (True, False)}
    assert kinds == {True: {"ipc"}, False: {"inline"}}


def test_a_join_by_key_ships_only_the_columns_the_query_reads():
    """The tagged rows of a join by key carry each source's columns that the query reads (its
    projections, keys, filters and event time), not the whole source: Nexmark Q8 of 8M rows ran
    out of a 1 GiB Python worker with every column of persons and auctions."""
    from grizzly_py.physical import build_physical_plan
    from grizzly_py.plan import Query, distinct_sources
    from grizzly_py.spark.inputs import read_columns
    from grizzly_py.workloads import nexmark
    persons, auctions = nexmark.generate_persons(20_000), nexmark.generate_auctions(20_000)
    for query, expected in ((nexmark.q8, [("id", "name", "dateTime"), ("dateTime", "seller")]),
                            (nexmark.q3, [("id", "dateTime", "seller", "category"),
                                          ("id", "name", "city", "state", "dateTime")])):
        q = query(gz.StreamEnvironment(), persons, auctions)
        physical = build_physical_plan(Query(q.node))
        assert [read_columns(physical, s) for s in distinct_sources(q.node)] == expected


def test_a_null_event_time_in_a_join_by_key_fails_naming_the_source(spark):
    from grizzly_py.sources import BadInputError
    left = _events(50, seed=41)
    bad = left.set_column(0, "ts", pa.array([None] + left.column("ts").to_pylist()[1:], pa.int64()))
    env = gz.StreamEnvironment.for_spark(spark)
    joined = env.from_spark(spark.createDataFrame(bad), timestamp="ts").join(
        env.from_arrow(left, timestamp="ts")).where("k").equal_to("k")
    assert joined.to_spark().grizzly.strategy == "keyed-join"
    joined.collect("out")
    with pytest.raises(BadInputError, match="null event timestamp"):
        env.execute()


def test_lookup_joins_run_in_every_task_of_a_stateless_stage(spark):
    """The static table travels with the plan; each task probes it with its own batches (null
    keys match nothing), in the input's order."""
    events = _events(300, seed=31)
    table = pa.table({"k": ["a", "b", "x"], "weight": [1.5, -2.0, 9.0]})
    df = spark.createDataFrame(events)

    def build(source):
        return lambda env: (source(env).lookup_join(table, "k").filter(col("i") > -20)
                            .with_columns(w=col("weight") * col("x")))
    for source in (lambda env: env.from_arrow(events.to_batches(max_chunksize=40), timestamp="ts"),
                   lambda env: env.from_spark(df, timestamp="ts")):
        expected, metrics = embedded(build(lambda env: env.from_arrow(events, timestamp="ts")))
        actual, spark_metrics = on_spark(spark, build(source))
        assert_tables_equal(actual, as_types_of(expected, actual))
        q = spark_metrics["queries"][0]
        assert q["strategy"] == "stateless" and expected.num_rows > 0
        assert len([t for t in q["task_reports"] if t["stage"] == "stateless"]) >= 2
        for name in ("records_in", "records_out", "filtered_records"):
            assert spark_metrics[name] == metrics[name], name


def test_a_window_after_a_join_stays_in_the_join_tasks_when_keyed_by_the_join_key(spark, tmp_path):
    left, right = _events(300, seed=21, disorder=150), _events(200, seed=22, disorder=150)
    pq.write_table(left, tmp_path / "left.parquet", row_group_size=40)
    pq.write_table(right, tmp_path / "right.parquet", row_group_size=25)

    def joined(env):
        return (env.from_parquet(str(tmp_path / "left.parquet"), timestamp="ts")
                .interval_join(env.from_parquet(str(tmp_path / "right.parquet"), timestamp="ts"))
                .where("k").equal_to("k").between(Time.milliseconds(-50), Time.milliseconds(50)))

    def by_key(env):
        return joined(env).key_by("k").window(ASSIGNERS["tumbling"]).aggregate(n=agg.count(), s=agg.sum("i_right"))

    def by_other(env):
        return joined(env).key_by("g").window(ASSIGNERS["tumbling"]).aggregate(n=agg.count(), s=agg.sum("i_right"))

    def by_part_of_the_key(env):  # joined by (k, g), grouped by k: a group spans partitions of (k, g)
        return (env.from_parquet(str(tmp_path / "left.parquet"), timestamp="ts")
                .interval_join(env.from_parquet(str(tmp_path / "right.parquet"), timestamp="ts"))
                .where("k", "g").equal_to("k", "g").between(Time.milliseconds(-50), Time.milliseconds(50))
                .key_by("k").window(ASSIGNERS["tumbling"]).aggregate(n=agg.count()))
    for build, strategy in ((by_key, "keyed-join"), (by_other, "whole"), (by_part_of_the_key, "whole")):
        expected, metrics = embedded(build)
        actual, spark_metrics = on_spark(spark, build)
        assert_tables_equal(sorted_rows(actual), sorted_rows(as_types_of(expected, actual)))
        assert spark_metrics["queries"][0]["strategy"] == strategy and expected.num_rows > 0
        assert spark_metrics["late_records"] == metrics["late_records"]


def test_a_count_of_window_join_pairs_runs_counted_in_the_join_tasks(spark):
    """Nexmark Q8's shape on Spark: the join tasks run it as the embedded engine does, the join
    counting its pairs (physical/pair_counts.py); the same rows and counts as the embedded job."""
    from grizzly_py.physical import pair_counts
    from grizzly_py.workloads import nexmark
    persons, auctions = nexmark.generate_persons(40_000, 5), nexmark.generate_auctions(40_000, 5)

    def build(env):
        return nexmark.q8(env, persons, auctions)
    expected, metrics = embedded(build)
    with pair_counts.disabled():
        plain, _ = embedded(build)
    assert_tables_equal(expected, plain)
    actual, spark_metrics = on_spark(spark, build)
    assert_tables_equal(sorted_rows(actual), sorted_rows(as_types_of(expected, actual)))
    assert expected.num_rows > 0 and spark_metrics["queries"][0]["strategy"] == "keyed-join"
    for name in ("records_in", "late_records", "filtered_records", "records_out"):
        assert spark_metrics[name] == metrics[name], name


def test_dataframe_input_and_session_windows_split_by_key(spark):
    table = _events(400, disorder=300)
    df = spark.createDataFrame(table)

    def sessions(source):
        return lambda env: _every_aggregate(source(env).key_by("k").window(ASSIGNERS["session"]))
    expected, _ = embedded(sessions(lambda env: env.from_arrow(table, timestamp="ts")))
    actual, metrics = on_spark(spark, sessions(lambda env: env.from_spark(df, timestamp="ts")))
    assert_tables_equal(actual, as_types_of(expected, actual))
    assert metrics["queries"][0]["strategy"] == "keyed"


def test_session_keys_minus_zero_and_nan_meet_in_one_task(spark):
    n = 64
    table = pa.table({"ts": pa.array(range(0, 3 * n, 3), pa.int64()),
                      "f": pa.array([[0.0, -0.0, float("nan"), 1.5][i % 4] for i in range(n)]),
                      "i": pa.array(range(n), pa.int64())})

    def sessions(env):
        return env.from_arrow(table.to_batches(max_chunksize=8), timestamp="ts").key_by("f") \
            .window(EventTimeSessionWindows.with_gap(Time.milliseconds(20))).aggregate(n=agg.count(), s=agg.sum("i"))
    expected, _ = embedded(sessions)
    actual, metrics = on_spark(spark, sessions)
    assert metrics["queries"][0]["strategy"] == "keyed"
    assert_tables_equal(actual, expected)
    assert actual.num_rows == 2 * 1 + 1  # keys 0.0 (with -0.0), NaN, 1.5: one session each


def test_stateless_query_keeps_the_input_order(spark):
    table = _events(500)
    df = spark.createDataFrame(table).repartition(3).localCheckpoint()  # one fixed order
    rows = collect(df, spark_arrow_schema(table.schema))

    def build(source):
        return lambda env: source(env).filter(col("x") > 0).with_columns(y=col("i") * 2).select("ts", "k", "y")
    expected, _ = embedded(build(lambda env: env.from_arrow(rows, timestamp="ts")))
    actual, metrics = on_spark(spark, build(lambda env: env.from_spark(df, timestamp="ts")))
    assert_tables_equal(actual, expected)
    assert metrics["queries"][0]["strategy"] == "stateless"
    assert metrics["filtered_records"] == table.num_rows - expected.num_rows


def test_filters_spark_can_evaluate_run_before_the_transfer(spark):
    from grizzly_py.spark.filters import push_filters
    table = _events(400)
    df = spark.createDataFrame(table)
    bound = WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(5))

    def build(source):
        return lambda env: (source(env).filter((col("k") == "a") & (col("x") > 0.5) & col("g").isin([0, 2]))
                            .filter(col("i") >= -10).key_by("g").window(ASSIGNERS["tumbling"])
                            .aggregate(n=agg.count(), s=agg.sum("x")))
    env = gz.StreamEnvironment.for_spark(spark)
    q = build(lambda e: e.from_spark(df, timestamp="ts", watermark=bound))(env)
    from grizzly_py.plan import distinct_sources
    root, pushed = push_filters(q.node, distinct_sources(q.node)[0])
    assert len(pushed) == 3  # k == "a", g in (0, 2), i >= -10; the float comparison stays compiled
    remaining = repr(root.input.predicate)  # the window's input: one filter left, on x
    assert "x" in remaining and "k" not in remaining and isinstance(root.input.input.source, object)
    expected, _ = embedded(build(lambda e: e.from_arrow(table, timestamp="ts", watermark=bound)))
    actual, metrics = on_spark(spark, build(lambda e: e.from_spark(df, timestamp="ts", watermark=bound)))
    assert_tables_equal(actual, as_types_of(expected, actual))
    assert any("filter" in n for n in metrics["queries"][0]["notes"])


def test_a_dataframe_read_twice_keeps_each_branchs_filters(spark):
    """A union of a DataFrame with a filtered branch of itself: the branch's filter is not pushed
    into Spark, where it would drop the other branch's rows too."""
    table = _events(300)
    df = spark.createDataFrame(table)

    def build(source):
        def query(env):
            s = source(env)
            return s.union(s.filter(col("i") > 20))
        return query
    expected, _ = embedded(build(lambda env: env.from_arrow(table, timestamp="ts")))
    actual, metrics = on_spark(spark, build(lambda env: env.from_spark(df, timestamp="ts")))
    assert actual.num_rows == expected.num_rows > table.num_rows
    assert_tables_equal(actual.sort_by([("ts", "ascending"), ("i", "ascending")]),
                        as_types_of(expected, actual).sort_by([("ts", "ascending"), ("i", "ascending")]))


def test_to_spark_actions_raise_grizzly_errors(spark, tmp_path):
    """A task's grizzly-py error is raised as itself by the DataFrame's actions, writes included."""
    from grizzly_py.aggregates import AggregateOverflowError
    big = 2**62
    table = pa.table({"ts": pa.array([1, 2, 3, 4], pa.int64()), "v": pa.array([big, big, big, -big], pa.int64())})
    df = gz.StreamEnvironment.for_spark(spark).from_arrow(table.to_batches(max_chunksize=1), timestamp="ts") \
        .window_all(TumblingEventTimeWindows.of(Time.milliseconds(10))).aggregate(s=agg.sum("v")).to_spark()
    with pytest.raises(AggregateOverflowError, match="int64 sum overflow"):
        df.show()
    with pytest.raises(AggregateOverflowError, match="int64 sum overflow"):
        df.write.mode("overwrite").parquet(str(tmp_path / "out"))


def test_metrics_are_the_last_actions_and_say_when_it_read_part(spark):
    """show(3) stops the output tasks early (they send no report): records_out is unknown, not 0;
    each action's metrics are its own, not a sum over every action run so far."""
    table = _events(400)
    q = gz.StreamEnvironment.for_spark(spark).from_arrow(table.to_batches(max_chunksize=50), timestamp="ts") \
        .key_by("g").window(ASSIGNERS["tumbling"]).aggregate(n=agg.count())
    expected = q.execute_and_collect()
    df = q.to_spark()
    df.show(3)
    m = df.grizzly.metrics()
    assert m["records_out"] is None and m["records_in"] == table.num_rows and m.get("action") == "show"
    assert any("show() may read only part of the output" in n for n in m["notes"]), m["notes"]
    for action in (df.collect, df.count, df.collect):
        action()
        m = df.grizzly.metrics()
        assert m["records_in"] == table.num_rows and m["records_out"] == expected.num_rows, (action, m)


def test_workers_that_cannot_import_grizzly_py_are_found_before_any_job(spark, tmp_path, monkeypatch):
    """A session whose Python workers run another interpreter (a bare virtualenv): for_spark's
    probe finds it before any job; a local session is switched to this interpreter with a
    one-line warning, and its jobs run. A worker at another grizzly-py version than the driver
    (the driver's version changed here) is refused in one line that says how to fix it."""
    import subprocess
    import sys

    from grizzly_py.spark import probe
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True, timeout=120)
    bare = str(tmp_path / "bare" / "bin" / "python")
    sc = spark.sparkContext
    monkeypatch.setattr(probe, "_CHECKED", set())
    monkeypatch.setattr(sc, "pythonExec", bare)  # as a session built without PYSPARK_PYTHON would
    with pytest.warns(probe.SparkWorkersWarning) as caught:
        env = gz.StreamEnvironment.for_spark(spark)
    message = str(caught[0].message)
    assert len(caught) == 1 and "\n" not in message
    assert f"workers ran {bare}, which cannot import grizzly-py: ModuleNotFoundError: No module named" in message
    assert f"now run the driver's interpreter {sys.executable}" in message and sc.pythonExec == sys.executable
    table = _events(100)
    q = env.from_arrow(table, timestamp="ts").filter(col("i") > 0)
    assert q.execute_and_collect().num_rows == sum(1 for i in table.column("i").to_pylist() if i > 0)

    monkeypatch.setattr(probe, "_CHECKED", set())
    monkeypatch.setattr(gz.version, "__version__", "0.0.1")  # the workers now have another version than the driver
    with pytest.raises(probe.SparkWorkersError) as refused:
        gz.StreamEnvironment.for_spark(spark)
    message = str(refused.value)
    assert "\n" not in message
    assert f"Spark's Python workers ({sys.executable}) cannot run the driver's plans: grizzly-py 0.1.0" in message
    assert "0.0.1 (codegen" in message and "PYSPARK_PYTHON=" in message and "spark.pyspark.python" in message
    assert "spark.archives" in message and "spark.submit.pyFiles" in message


def test_to_spark_gives_a_dataframe_with_the_job(spark):
    df = spark.createDataFrame(_events(200))
    env = gz.StreamEnvironment.for_spark(spark)
    q = env.from_spark(df, timestamp="ts").key_by("k").window(ASSIGNERS["tumbling"]).aggregate(n=agg.count())
    out = q.to_spark()
    assert out.columns == ["k", "window_start", "window_end", "n"]
    assert out.filter("n > 0").count() == out.count() > 0
    m = out.grizzly.metrics()
    assert m["strategy"] == "partial" and m["input"] == "dataframe" and m["records_in"] >= 200
    assert all(p["variant_history"] for p in m["pipelines"])


def test_tasks_run_code_variants_and_report_their_history(spark):
    """Adaptive execution inside Spark tasks: each task's kernel profiles and optimizes (stages a
    few hundred records long here), the results equal the embedded engine's, and the variant
    histories come back to the driver; a second job of the plan starts from what the workers
    learned."""
    from grizzly_py.engine.adaptive import AdaptiveSettings
    rng = np.random.default_rng(5)
    n = 20_000
    table = pa.table({"ts": pa.array(np.arange(n), pa.int64()), "k": pa.array(rng.integers(0, 50, n)),
                      "x": pa.array(rng.integers(0, 10, n))})
    quick = AdaptiveSettings(generic_records=500, profile_records=500, wait_for_compile=True, counters="none")

    def build(env):
        return env.from_arrow(table.to_batches(max_chunksize=250), timestamp="ts").filter(col("x") < 7) \
            .key_by("k").window(ASSIGNERS["tumbling"]).aggregate(n=agg.count())
    expected, _ = embedded(build)
    env = gz.StreamEnvironment.for_spark(spark, adaptive=quick)
    q = build(env)
    for _ in range(2):
        out = q.to_spark()
        actual = collect(out, pipeline_arrow_schema(build_physical_plan(Query(q.node)).pipelines[-1]))
        assert_tables_equal(actual, as_types_of(expected, actual))
        histories = [p["variant_history"] for p in out.grizzly.metrics()["pipelines"] if p["stage"] == "partial"]
        assert histories and all(h[-1]["stage"] == "optimized" for h in histories), histories
    assert any("in this process" in h["reason"] for hs in histories for h in hs), histories


def test_plans_are_compiled_once_per_worker(spark):
    table = _events(2000)
    env = gz.StreamEnvironment.for_spark(spark)
    q = env.from_arrow(table.to_batches(max_chunksize=100), timestamp="ts") \
        .key_by("g").window(ASSIGNERS["sliding"]).aggregate(s=agg.sum("x"))
    first, again = q.to_spark(), q.to_spark()  # one plan (same id): the second job's workers have it
    assert first.grizzly.plan_id == again.grizzly.plan_id
    first.collect()
    again.collect()
    reports = again.grizzly.task_reports()
    assert reports and all(t["plan_cached"] for t in reports if t["stage"] in ("partial", "merge")), reports
    assert again.grizzly.metrics()["worker_processes"] < len(reports)  # Python workers run several tasks


def test_a_worker_that_dies_mid_task_is_retried_without_duplicates(spark, tmp_path):
    table = _events(600)
    marker = str(tmp_path / "died")
    def build(env):
        return env.from_arrow(table.to_batches(max_chunksize=50), timestamp="ts",
                              watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(50))) \
            .key_by("k").window(ASSIGNERS["tumbling"]).aggregate(n=agg.count(), s=agg.sum("i"))
    expected, _ = embedded(build)
    root = build(gz.StreamEnvironment()).node
    df = to_spark(root, spark, fault=(marker, 1))  # the first task to finish its second batch dies
    actual = collect(df, pipeline_arrow_schema(build_physical_plan(Query(root)).pipelines[-1]))
    assert os.path.exists(marker)
    assert_tables_equal(actual, expected)
    attempts = [t.get("attempt") for t in df.grizzly.task_reports() if t["stage"] == "partial"]
    assert 1 in attempts, attempts  # the retried attempt reported; the dead one never did
    assert df.grizzly.metrics()["records_in"] == table.num_rows


def test_unsupported_streaming_query_is_rejected_with_the_reason(spark, tmp_path):
    pq.write_table(_events(10), tmp_path / "a.parquet")
    stream = spark.readStream.schema(spark.read.parquet(str(tmp_path)).schema).parquet(str(tmp_path))
    env = gz.StreamEnvironment.for_spark(spark)
    q = env.from_spark(stream, timestamp="ts").union(env.from_parquet(tmp_path / "a.parquet", timestamp="ts")) \
        .key_by("k").window(ASSIGNERS["session"]).aggregate(n=agg.count())
    with pytest.raises(NotImplementedError, match="streaming DataFrames only"):
        q.to_spark()


# ----------------------------------------------------------------------------------------------
# Structured Streaming
def _write_files(directory, table: pa.Table, rows_per_file: int, first: int = 0):
    os.makedirs(directory, exist_ok=True)
    for i, b in enumerate(table.to_batches(max_chunksize=rows_per_file)):
        path = os.path.join(directory, f"part-{first + i:04d}.parquet")
        pq.write_table(pa.Table.from_batches([b]), path)
        os.utime(path, (1_000_000 + first + i,) * 2)  # the file source reads in modification order


def _stream_query(directory, spark):
    """The streaming DataFrame of ``_query`` over the Parquet files of ``directory``, one file per
    micro-batch."""
    schema = spark.read.parquet(directory).schema
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(directory)
    env = gz.StreamEnvironment.for_spark(spark)
    return _query(env.from_spark(stream, timestamp="ts",
                                 watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(60)))).to_spark()


def _query(source):
    window = SlidingEventTimeWindows.of(Time.milliseconds(300), Time.milliseconds(150))
    return _every_aggregate(source.filter(col("i") > -45).key_by("k").window(window)).filter(col("n") > 1)


def _run_stream(df, out, checkpoint):
    q = df.writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint) \
        .outputMode("append").trigger(availableNow=True).start()
    q.awaitTermination()
    return q


def _read(spark, out, like: pa.Table) -> pa.Table:
    table = spark.read.parquet(out).toArrow().select(like.schema.names)
    table = table.cast(pa.schema([like.schema.field(n) for n in table.schema.names]))
    from grizzly_py.engine.kernels import sort_indices_nulls_last
    return table.take(sort_indices_nulls_last(table, ["window_end", "k"]))


def test_streaming_matches_the_embedded_engine_with_a_micro_batch_per_batch(spark, tmp_path):
    table = _events(480, seed=11, disorder=400)  # disorder beyond the bound: late records
    table = table.set_column(0, "ts", table.column("ts").cast(pa.timestamp("ms", "UTC")))
    _write_files(tmp_path / "in", table, 60)
    df = _stream_query(str(tmp_path / "in"), spark)
    assert df.isStreaming
    q = _run_stream(df, str(tmp_path / "out"), str(tmp_path / "ck"))
    bound = WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(60))
    env = gz.StreamEnvironment()
    expected = _query(env.from_arrow(table.to_batches(max_chunksize=60), timestamp="ts", watermark=bound))
    expected.collect("out")
    result = env.execute()
    assert result.metrics["late_records"] > 0
    expected = result["out"]
    # a stream has no end: the windows after Spark's last watermark are still open
    import datetime
    last = datetime.datetime.fromisoformat(q.lastProgress["eventTime"]["watermark"])
    ends = expected.column("window_end").cast(pa.int64()).to_numpy()
    expected = expected.filter(pa.array(ends <= int(last.timestamp() * 1000)))
    actual = _read(spark, str(tmp_path / "out"), spark_typed(expected))
    assert expected.num_rows > 0
    assert_tables_equal(actual, spark_typed(expected))
    assert df.grizzly.metrics()["records_in"] == table.num_rows


@pytest.mark.parametrize("kind", ["session", "count", "window-after-window"])
def test_streaming_queries_in_stream_order_run_micro_batch_after_micro_batch(spark, tmp_path, kind):
    """Sessions, count windows and a window after a window on a streaming DataFrame: the query's
    state in Spark's state store, by key group for sessions and count windows (keyed by input
    columns: more than one group holds state), in one group for a window after a window; equal
    to the embedded engine fed one batch per micro-batch, before the end of the input; then a
    restart from the checkpoint with more files gives the uninterrupted run's rows."""
    from grizzly_py.engine.incremental import IncrementalQuery
    table = _events(400, seed=13, disorder=150)
    first, rest = table.slice(0, 200), table.slice(200)
    bound = WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(60))

    def query(stream):
        if kind == "session":
            return stream.key_by("k").window(ASSIGNERS["session"]).aggregate(n=agg.count(), s=agg.sum("i"),
                                                                            m=agg.median("x"))
        if kind == "count":
            return stream.key_by("g").count_window(5, 2).aggregate(n=agg.count(), s=agg.sum("i"))
        return stream.key_by("k").window(ASSIGNERS["tumbling"]).aggregate(n=agg.count()) \
            .key_by("n").window(TumblingEventTimeWindows.of(Time.milliseconds(2000))).aggregate(c=agg.count())

    def expected_rows(batches) -> pa.Table:
        node = query(gz.StreamEnvironment().from_arrow(batches, timestamp="ts", watermark=bound)).node
        job = IncrementalQuery(Query(node))
        try:
            return pa.concat_tables([job.feed(b) for b in batches])
        finally:
            job.close()

    def run(files_from: int, part: pa.Table):
        _write_files(tmp_path / "in", part, 50, first=files_from)
        schema = spark.read.parquet(str(tmp_path / "in")).schema
        stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(tmp_path / "in"))
        env = gz.StreamEnvironment.for_spark(spark)
        df = query(env.from_spark(stream, timestamp="ts", watermark=bound)).to_spark()
        assert df.grizzly.strategy == ("sequential+stream" if kind == "window-after-window" else "keyed+stream")
        _run_stream(df, str(tmp_path / "out"), str(tmp_path / "ck"))
        return df
    run(0, first)
    df = run(4, rest)  # a restart: the state comes back from the checkpoint
    if kind != "window-after-window":
        assert len(_groups_with_rows(df)) > 1
    expected = expected_rows(table.to_batches(max_chunksize=50))
    actual = spark.read.parquet(str(tmp_path / "out")).toArrow().select(expected.schema.names)
    assert expected.num_rows > 0
    assert_tables_equal(sorted_rows(actual), sorted_rows(as_types_of(expected, actual)))
    assert df.grizzly.metrics()["records_in"] == rest.num_rows


TWO_STREAMS = {  # over two streams, by key "k" (strings with nulls) of each
    "union-session": lambda a, b: a.union(b).key_by("k").window(ASSIGNERS["session"])
    .aggregate(n=agg.count(), s=agg.sum("i")),
    "union-aggregate": lambda a, b: a.union(b.with_columns(i=col("i") * 2)).filter(col("i") > -40).key_by("k")
    .window(ASSIGNERS["tumbling"]).aggregate(n=agg.count(), s=agg.sum("i"), hi=agg.max("x")),
    "window-join": lambda a, b: a.join(b.select(col("k").alias("k2"), col("i").alias("i2"), col("ts").alias("ts2")))
    .where("k").equal_to("k2").window(ASSIGNERS["tumbling"]).select("k", "i", "i2"),
    "interval-join": lambda a, b: a.interval_join(b.select(col("k").alias("k2"), col("i").alias("i2"),
                                                           col("ts").alias("ts2")))
    .where("k").equal_to("k2").between(Time.milliseconds(-30), Time.milliseconds(20)).select("k", "ts", "i", "i2"),
}
_BOUND = WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(60))


def _two_streams(spark, tmp_path, kind: str):
    """``TWO_STREAMS[kind]`` over the Parquet files of ``tmp_path``/a and /b, one file of each per
    micro-batch."""
    env = gz.StreamEnvironment.for_spark(spark)
    streams = [env.from_spark(spark.readStream.schema(spark.read.parquet(str(tmp_path / d)).schema)
                              .option("maxFilesPerTrigger", 1).parquet(str(tmp_path / d)), timestamp="ts",
                              watermark=_BOUND) for d in ("a", "b")]
    return TWO_STREAMS[kind](*streams).to_spark()


def _two_streams_embedded(kind: str, left: pa.Table, right: pa.Table, rows: int) -> tuple[pa.Table, dict]:
    """The embedded engine fed the rounds Spark's micro-batches make (``rows`` of each stream per
    round), before the end of the input: its rows and metrics."""
    from grizzly_py.engine.incremental import IncrementalQuery
    rounds = list(zip(left.to_batches(max_chunksize=rows), right.to_batches(max_chunksize=rows)))
    plain = gz.StreamEnvironment()
    node = TWO_STREAMS[kind](*(plain.from_arrow([r[i] for r in rounds], timestamp="ts", watermark=_BOUND)
                               for i in (0, 1))).node
    job = IncrementalQuery(Query(node))
    try:
        return pa.concat_tables([job.feed_round(list(r)) for r in rounds]), job.metrics()
    finally:
        job.close()


@pytest.mark.parametrize("kind", sorted(TWO_STREAMS))
def test_two_streams_run_by_key_group_micro_batch_after_micro_batch(spark, tmp_path, kind):
    """A union under a keyed session or tumbling window, a window join and an interval join of two
    streaming DataFrames run by key group (``keyed+stream``: more than one group gets rows), each
    micro-batch (one file of each stream) one round of the embedded engine's job, each group under
    the whole streams' watermarks: equal to ``IncrementalQuery`` fed the same rounds, before the end
    of the input, with the same records in, filtered and late."""
    left, right = _events(300, seed=21, disorder=400), _events(300, seed=22, disorder=400)
    _write_files(tmp_path / "a", left, 50)
    _write_files(tmp_path / "b", right, 50)
    df = _two_streams(spark, tmp_path, kind)
    assert df.isStreaming and df.grizzly.strategy == "keyed+stream"
    _run_stream(df, str(tmp_path / "out"), str(tmp_path / "ck"))
    expected, metrics = _two_streams_embedded(kind, left, right, 50)
    actual = spark.read.parquet(str(tmp_path / "out")).toArrow().select(expected.schema.names)
    assert expected.num_rows > 0
    assert_tables_equal(sorted_rows(actual), sorted_rows(as_types_of(expected, actual)))
    assert len(_groups_with_rows(df)) > 1
    ran = df.grizzly.metrics()
    assert ran["records_in"] == left.num_rows + right.num_rows == metrics["records_in"]
    for counted in ("filtered_records", "late_records"):
        assert ran[counted] == metrics[counted], counted
    assert metrics["late_records"] > 0


def test_two_streams_by_key_group_restart_from_the_checkpoint(spark, tmp_path):
    """A window join of two streams by key group, stopped after half its files and restarted from
    the checkpoint once the rest arrived, gives the uninterrupted run's rows, each input row
    counted once; a restart under another number of key groups is refused."""
    left, right = _events(300, seed=23, disorder=120), _events(300, seed=24, disorder=120)
    _write_files(tmp_path / "a", left.slice(0, 150), 50)
    _write_files(tmp_path / "b", right.slice(0, 150), 50)
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "ck")
    _run_stream(_two_streams(spark, tmp_path, "window-join"), out, checkpoint)
    _write_files(tmp_path / "a", left.slice(150), 50, first=3)
    _write_files(tmp_path / "b", right.slice(150), 50, first=3)
    groups = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(int(groups) + 1))
    try:
        with pytest.raises(Exception, match=f"keeps its state in {groups} key groups, the session makes"):
            _run_stream(_two_streams(spark, tmp_path, "window-join"), out, checkpoint)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", groups)
    df = _two_streams(spark, tmp_path, "window-join")
    _run_stream(df, out, checkpoint)
    expected, _ = _two_streams_embedded("window-join", left, right, 50)
    actual = spark.read.parquet(out).toArrow().select(expected.schema.names)
    assert expected.num_rows > 0
    assert_tables_equal(sorted_rows(actual), sorted_rows(as_types_of(expected, actual)))
    assert df.grizzly.metrics()["records_in"] == 150 + 150


def test_streams_by_key_group_only_where_the_batch_planner_runs_by_key():
    """Which queries over several streams run by key group, and by which columns of each stream:
    joins by columns each side passes through, unions under windows keyed by columns every input
    passes through; not computed keys, processing-time windows, windows with allowed lateness."""
    from grizzly_py.spark.key_groups import stream_key_columns
    from grizzly_py.spark.planner import _lateness_free
    from grizzly_py.windows import TumblingProcessingTimeWindows
    env = gz.StreamEnvironment()
    a, b = env.from_arrow(_events(10), timestamp="ts"), env.from_arrow(_events(10, seed=8), timestamp="ts")
    cases = [
        (TWO_STREAMS["window-join"](a, b), {a.node.source.name: ["k"], b.node.source.name: ["k"]}),
        (TWO_STREAMS["union-aggregate"](a, b), {a.node.source.name: ["k"], b.node.source.name: ["k"]}),
        (a.union(b).with_columns(m=col("i") % 3).key_by("m").window(ASSIGNERS["tumbling"])
         .aggregate(n=agg.count()), None),
        (a.union(b).key_by("k").window(TumblingProcessingTimeWindows.of(Time.milliseconds(50)))
         .aggregate(n=agg.count()), None),
        (a.union(b).key_by("k").window(ASSIGNERS["tumbling"]).allowed_lateness(Time.milliseconds(5))
         .aggregate(n=agg.count()), False),
    ]
    for stream, keys in cases:
        physical = build_physical_plan(Query(stream.node))
        runs = stream_key_columns(stream.node, physical) if _lateness_free(physical) else False
        assert runs == keys, stream


def _groups_with_rows(df) -> set[int]:
    """The key groups of a ``keyed+stream`` job whose steps were fed rows."""
    return {t["key_group"] for t in df.grizzly.task_reports() if t.get("key_group") is not None and t["records_in"]}


def _run_changelog(df, checkpoint, batches: dict):
    """Run a streaming DataFrame of an updating stream (update output mode) until its input is
    read; each micro-batch's rows go to ``batches`` by batch id (a replayed micro-batch replaces
    its rows, as an idempotent sink does)."""
    assert df.grizzly.output_mode == "update"

    def keep(frame, batch_id):
        batches[batch_id] = frame.toArrow()
    q = df.writeStream.foreachBatch(keep).outputMode("update").option("checkpointLocation", checkpoint) \
        .trigger(availableNow=True).start()
    q.awaitTermination()


UPDATING = {  # updating streams keyed by input columns (strings with nulls, ints)
    "running": lambda s: s.filter(col("i") > -40).key_by("k", "g").aggregate(n=agg.count(), s=agg.sum("i"),
                                                                              hi=agg.max("x"), f=agg.first("x")),
    "deduplicate": lambda s: s.key_by("k").deduplicate(keep="last"),
    "top_n": lambda s: s.key_by("g").top_n(2, by="x"),
    "aggregate-of-aggregate": lambda s: s.key_by("k", "g").aggregate(n=agg.count(), hi=agg.max("x"))
    .key_by("k").aggregate(c=agg.count(), m=agg.sum("n"), t=agg.max("hi")),
}


def test_key_groups_come_from_the_keyed_operators_input_columns():
    """Which streaming queries run by key group, and by which input columns: a keyed running
    aggregate, deduplication, Top-N (through a renaming projection), count or session window with
    only stateless operators or running aggregates by keys it shares after it (by the shared
    ones); not computed keys, no shared key, a window after it, a window that fires by the
    watermark."""
    from grizzly_py.spark.key_groups import key_group_columns
    s = gz.StreamEnvironment().from_arrow(_events(10), timestamp="ts")
    session = s.key_by("k").window(ASSIGNERS["session"]).aggregate(n=agg.count())
    cases = [
        (s.key_by("k", "g").aggregate(n=agg.count()).filter(col("n") > 1), ["k", "g"]),
        (s.key_by("k").deduplicate(keep="first"), ["k"]),
        (s.with_columns(h=col("g")).key_by("h").top_n(2, by="x"), ["g"]),
        (s.key_by("g").count_window(3).aggregate(n=agg.count()), ["g"]),
        (session, ["k"]),
        (s.with_columns(h=col("g") % 2).key_by("h").aggregate(n=agg.count()), None),
        (s.key_by("k", "g").aggregate(n=agg.count()).key_by("k").aggregate(m=agg.sum("n")), ["k"]),
        (s.key_by("k", "g").aggregate(n=agg.count()).key_by("n").aggregate(m=agg.count()), None),
        (s.key_by("k").deduplicate(keep="last").key_by("k", "g").aggregate(m=agg.max("x")), ["k"]),
        (s.key_by("k").window(ASSIGNERS["tumbling"]).allowed_lateness(Time.milliseconds(5))
         .aggregate(n=agg.count()), None),
        (session.key_by("k").window(ASSIGNERS["tumbling"]).aggregate(c=agg.count()), None),
        (s.key_by("k").window(ASSIGNERS["tumbling"]).aggregate(n=agg.count()), None),
    ]
    for stream, keys in cases:
        assert key_group_columns(build_physical_plan(Query(stream.node))) == keys, stream


@pytest.mark.parametrize("kind", sorted(UPDATING))
def test_updating_streams_run_by_key_group_in_update_mode(spark, tmp_path, kind):
    """A running aggregate, a deduplication, an unbounded Top-N and an aggregate of an aggregate
    (by the key they share) on a streaming DataFrame run by key group (more than one holds state) in Spark's update output mode: each micro-batch's
    changes, per key in the order of the embedded engine fed one batch per micro-batch (hence
    the same final table); a restart from the checkpoint with more files gives the
    uninterrupted run's changes."""
    from grizzly_py.changelog import changelog_table, final_table, with_kind_column
    from grizzly_py.engine.incremental import IncrementalQuery
    table = _events(400, seed=19, disorder=300)
    first, rest = table.slice(0, 200), table.slice(200)
    bound = WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(60))
    query = UPDATING[kind]
    keys = {"running": ["k", "g"], "deduplicate": ["k"], "top_n": ["g"], "aggregate-of-aggregate": ["k"]}[kind]
    batches: dict = {}

    def run(files_from: int, part: pa.Table):
        _write_files(tmp_path / "in", part, 50, first=files_from)
        schema = spark.read.parquet(str(tmp_path / "in")).schema
        stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(tmp_path / "in"))
        df = query(gz.StreamEnvironment.for_spark(spark).from_spark(stream, timestamp="ts", watermark=bound)).to_spark()
        assert df.grizzly.strategy == "keyed+stream"
        _run_changelog(df, str(tmp_path / "ck"), batches)
        return df
    run(0, first)
    df = run(4, rest)  # a restart: the state comes back from the checkpoint
    assert sorted(batches) == list(range(8))
    assert len(_groups_with_rows(df)) > 1
    node = query(gz.StreamEnvironment().from_arrow(table, timestamp="ts", watermark=bound)).node
    job = IncrementalQuery(Query(node))
    try:
        expected = changelog_table(pa.concat_tables([job.feed(b) for b in table.to_batches(max_chunksize=50)]))
    finally:
        job.close()
    actual = as_types_of(pa.concat_tables([batches[i] for i in sorted(batches)]), expected)

    def per_key(changes: pa.Table) -> pa.Table:  # (a stable sort: each key's changes stay in order)
        return changes.take(pa.compute.sort_indices(changes, [(k, "ascending") for k in keys]))
    assert expected.num_rows > 0
    assert per_key(actual).to_pylist() == per_key(expected).to_pylist()
    assert_tables_equal(final_table(with_kind_column(actual)), final_table(with_kind_column(expected)))


def test_a_restart_under_another_number_of_key_groups_is_refused(spark, tmp_path):
    """The key groups are part of the checkpoint: a restart in a session that makes another
    number of them fails naming both, rather than reading a key's state from the wrong group."""
    _write_files(tmp_path / "in", _events(50, seed=3), 50)
    bound = WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(60))

    def run():
        schema = spark.read.parquet(str(tmp_path / "in")).schema
        stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(tmp_path / "in"))
        df = UPDATING["running"](gz.StreamEnvironment.for_spark(spark).from_spark(stream, timestamp="ts",
                                                                                   watermark=bound)).to_spark()
        _run_changelog(df, str(tmp_path / "ck"), {})
    run()
    _write_files(tmp_path / "in", _events(50, seed=4), 50, first=1)
    groups = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(int(groups) + 1))
    try:
        with pytest.raises(Exception, match=f"keeps its state in {groups} key groups, the session makes {int(groups) + 1}"):
            run()
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", groups)


def test_rate_source_stream_matches_the_embedded_engine(spark, tmp_path):
    """Spark's deterministic rate source (``rate-micro-batch``: 100 rows a micro-batch, the rows
    of micro-batch ``b`` all at ``start + b`` seconds) through a tumbling window: the windows Spark's watermark closed equal the embedded
    engine's over the same rows, one batch per micro-batch."""
    import datetime
    import time as clock
    start_ms = 1_700_000_000_000
    stream = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 100) \
        .option("startTimestamp", start_ms).option("advanceMillisPerBatch", 1000).load()

    def query(source):
        return source.with_columns(k=col("value") % 3).key_by("k") \
            .window(TumblingEventTimeWindows.of(Time.milliseconds(2500))).aggregate(n=agg.count(), s=agg.sum("value"))
    env = gz.StreamEnvironment.for_spark(spark)
    df = query(env.from_spark(stream, timestamp="timestamp")).to_spark()
    q = df.writeStream.format("parquet").option("path", str(tmp_path / "out")) \
        .option("checkpointLocation", str(tmp_path / "ck")).outputMode("append") \
        .trigger(processingTime="100 milliseconds").start()
    deadline = clock.time() + 120
    while (q.lastProgress is None or q.lastProgress["batchId"] < 4) and clock.time() < deadline:
        clock.sleep(0.2)
    q.stop()
    rows = sum(p["numInputRows"] for p in q.recentProgress)
    watermark = datetime.datetime.fromisoformat(q.lastProgress["eventTime"]["watermark"])
    assert rows >= 400
    values = np.arange(rows)
    generated = pa.table({"timestamp": pa.array((start_ms + values // 100 * 1000) * 1000, pa.timestamp("us", "UTC")),
                          "value": pa.array(values, pa.int64())})
    local = gz.StreamEnvironment()
    expected = query(local.from_arrow(generated.to_batches(max_chunksize=100), timestamp="timestamp"))
    expected.collect("out")
    expected = local.execute()["out"]
    ends = expected.column("window_end").cast(pa.int64()).to_numpy() // 1000  # microseconds -> ms
    expected = expected.filter(pa.array(ends <= int(watermark.timestamp() * 1000)))
    actual = _read(spark, str(tmp_path / "out"), spark_typed(expected))
    assert expected.num_rows >= 3
    assert_tables_equal(actual, spark_typed(expected))


@settings(FEW, max_examples=max(2, FEW.max_examples // 2))  # a streaming job costs several seconds
@given(query_cases(max_rows=30))
def test_streaming_dataframe_matches_the_embedded_engine(spark, tmp_path_factory, case):
    """Random queries over a streaming DataFrame (one Parquet file per non-empty batch, one file
    per micro-batch), whatever strategy they take: stateless (all rows), partial (the windows
    Spark's last watermark closed) or sequential (every row emitted before the end of the input)."""
    import datetime

    from grizzly_py.aggregates import AggregateOverflowError
    from grizzly_py.engine.incremental import IncrementalQuery
    shift = 1_000_000  # after the epoch: Spark's watermark starts there
    def shifted(b):
        ts = b.column("ts")
        moved = pa.compute.add(ts.cast(pa.int64()), shift * (1 if pa.types.is_integer(ts.type) else
                                                              {"s": 0, "ms": 1, "us": 1000, "ns": 10**6}[ts.type.unit]))
        return b.set_column(b.schema.get_field_index("ts"), "ts", moved.cast(ts.type))
    batches = [shifted(b) for b in case.batches() if b.num_rows]
    assume(batches)
    bound = WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(case.bound_ms))

    def build(source):
        stream = source
        for step in case.steps:
            stream = step.apply(stream)
        return stream
    node = build(gz.StreamEnvironment().from_arrow(batches, timestamp="ts", watermark=bound)).node
    try:
        job = IncrementalQuery(Query(node))
        try:
            before_end = pa.concat_tables([job.feed(b) for b in batches])
            everything = pa.concat_tables([before_end, job.finish()])
        finally:
            job.close()
    except AggregateOverflowError:
        assume(False)
    directory = tmp_path_factory.mktemp("stream")
    for i, b in enumerate(batches):
        path = directory / "in" / f"part-{i:04d}.parquet"
        path.parent.mkdir(exist_ok=True)
        pq.write_table(pa.Table.from_batches([b]), path)
        os.utime(path, (1_000_000 + i,) * 2)
    stream = spark.readStream.schema(spark.read.parquet(str(directory / "in")).schema) \
        .option("maxFilesPerTrigger", 1).parquet(str(directory / "in"))
    try:
        df = build(gz.StreamEnvironment.for_spark(spark).from_spark(stream, timestamp="ts", watermark=bound)).to_spark()
        q = _run_stream(df, str(directory / "out"), str(directory / "ck"))
    except NotImplementedError as e:  # Spark's timestamps are microseconds; a timestamp key must be
        assert "timestamp keys must have millisecond unit" in str(e)  # ms (semantics.md, "Keys")
        assume(False)
    out = directory / "out"
    actual = spark.read.parquet(str(out)).toArrow() if any(out.glob("*.parquet")) else None
    strategy = df.grizzly.strategy
    if strategy == "stateless+stream":
        expected = everything
    elif strategy in ("sequential+stream", "keyed+stream"):
        expected = before_end
    else:
        assert strategy == "partial+stream", strategy
        assume("window_end" in everything.schema.names)
        watermark = datetime.datetime.fromisoformat(q.lastProgress["eventTime"]["watermark"])
        end = everything.column("window_end")
        per_ms = {"s": 1 / 1000, "ms": 1, "us": 1000, "ns": 10**6}[end.type.unit] if pa.types.is_timestamp(end.type) else 1
        ends = end.cast(pa.int64()).to_numpy() / per_ms
        expected = everything.filter(pa.array(ends <= int(watermark.timestamp() * 1000)))
        # Spark hands applyInPandasWithState's rows through pandas, where NaN is null: a NaN in
        # a streaming window's result comes back null (docs/spark.md, "Not supported yet")
        assume(not any(pa.types.is_floating(c.type) and pa.compute.any(pa.compute.is_nan(c)).as_py()
                       for c in expected.columns))
    if actual is None:
        assert expected.num_rows == 0
        return
    actual = actual.select(expected.schema.names)
    assert_tables_equal(sorted_rows(actual), sorted_rows(as_types_of(spark_typed(expected), actual)))


def _kafka_rows(table: pa.Table, partitions: int = 2) -> pa.Table:
    """``table``'s rows as Spark's Kafka source gives them: JSON values, partitions, offsets."""
    import json
    records = table.to_pylist()
    n = len(records)
    return pa.table({
        "key": pa.array([None] * n, pa.binary()),
        "value": pa.array([json.dumps(r).encode() for r in records], pa.binary()),
        "topic": pa.array(["events"] * n), "partition": pa.array([i % partitions for i in range(n)], pa.int32()),
        "offset": pa.array([i // partitions for i in range(n)], pa.int64()),
        "timestamp": pa.array([1_700_000_000_000_000 + i for i in range(n)], pa.timestamp("us", "UTC")),
        "timestampType": pa.array([0] * n, pa.int32())})


def test_kafka_records_parse_into_columns_batch_and_streaming(spark, tmp_path):
    """Values of Kafka's shape (JSON) parsed into the query's columns give the embedded engine's
    results over the same rows, batch and streaming; a malformed value's null event time is a
    clear error."""
    from grizzly_py.spark.kafka import parse_kafka
    table = _events(240, seed=17).select(["ts", "k", "g", "i"])
    schema = table.schema
    rows = _kafka_rows(table)
    bad = pa.table({**{c: rows.column(c).slice(0, 1) for c in rows.column_names},
                    "value": pa.array([b"{not json"], pa.binary())}).select(rows.column_names)
    kafka = pa.concat_tables([rows, bad.cast(rows.schema)])

    def query(stream):
        return stream.filter(col("i").is_not_null()).key_by("k").window(ASSIGNERS["tumbling"]) \
            .aggregate(n=agg.count(), s=agg.sum("i"))
    parsed = parse_kafka(spark.createDataFrame(rows), schema)
    assert parsed.columns == ["ts", "k", "g", "i", "kafka_timestamp", "kafka_partition", "kafka_offset"]
    env = gz.StreamEnvironment.for_spark(spark)
    actual = query(env.from_spark(parsed, timestamp="ts")).execute_and_collect()
    expected, _ = embedded(lambda e: query(e.from_arrow(table, timestamp="ts")))
    assert_tables_equal(actual, as_types_of(expected, actual))
    # a value that does not parse has null columns: here a null event time, a clear error
    with pytest.raises(gz.BadInputError, match="null event timestamp"):
        query(env.from_spark(parse_kafka(spark.createDataFrame(kafka), schema), timestamp="ts")).execute_and_collect()

    _write_files(tmp_path / "in", rows, 60)
    stream = spark.readStream.schema(spark.read.parquet(str(tmp_path / "in")).schema) \
        .option("maxFilesPerTrigger", 1).parquet(str(tmp_path / "in"))
    df = query(env.from_spark(parse_kafka(stream, schema), timestamp="ts")).to_spark()
    _run_stream(df, str(tmp_path / "out"), str(tmp_path / "ck"))
    assert df.grizzly.metrics()["records_in"] == rows.num_rows
    with pytest.raises(ValueError, match="not a Kafka DataFrame"):
        parse_kafka(spark.createDataFrame(table), schema)
    csv = rows.slice(0, 2).set_column(1, "value", pa.array([b"5,a,1,-3", b"6,,2,"], pa.binary()))
    got = parse_kafka(spark.createDataFrame(csv), schema, value_format="csv").select("ts", "k", "g", "i").collect()
    assert [tuple(r) for r in got] == [(5, "a", 1, -3), (6, None, 2, None)]


def test_from_kafka_without_the_kafka_package_says_how_to_load_it(spark):
    env = gz.StreamEnvironment.for_spark(spark)
    with pytest.raises(RuntimeError, match="spark-sql-kafka"):
        env.from_kafka("localhost:9092", "events", "ts long, k string", timestamp="ts")
    with pytest.raises(ValueError, match="for_spark"):
        gz.StreamEnvironment().from_kafka("localhost:9092", "events", "ts long", timestamp="ts")


def sorted_rows(table: pa.Table) -> pa.Table:
    """The rows in a canonical order. Arrow cannot sort by a list column (top_k results):
    such a column is ordered by its values' text instead."""
    from grizzly_py.engine.kernels import sort_indices_nulls_last
    keys = table
    for i, f in enumerate(table.schema):
        if pa.types.is_list(f.type) or pa.types.is_large_list(f.type):
            keys = keys.set_column(i, f.name, pa.array([None if v is None else repr(v)
                                                        for v in table.column(i).to_pylist()], pa.string()))
    return table.take(sort_indices_nulls_last(keys, keys.schema.names))


def spark_typed(table: pa.Table) -> pa.Table:
    return table.cast(spark_arrow_schema(table.schema))


def test_streaming_restart_from_checkpoint_gives_the_uninterrupted_results(spark, tmp_path):
    table = _events(360, seed=5, disorder=300)
    table = table.set_column(0, "ts", table.column("ts").cast(pa.timestamp("ms", "UTC")))
    first, rest = table.slice(0, 180), table.slice(180)
    # uninterrupted
    _write_files(tmp_path / "all", table, 60)
    _run_stream(_stream_query(str(tmp_path / "all"), spark), str(tmp_path / "out1"), str(tmp_path / "ck1"))
    # stopped after half the files, restarted from the checkpoint once the rest arrived
    _write_files(tmp_path / "half", first, 60)
    _run_stream(_stream_query(str(tmp_path / "half"), spark), str(tmp_path / "out2"), str(tmp_path / "ck2"))
    partial = spark.read.parquet(str(tmp_path / "out2")).count()
    _write_files(tmp_path / "half", rest, 60, first=3)
    _run_stream(_stream_query(str(tmp_path / "half"), spark), str(tmp_path / "out2"), str(tmp_path / "ck2"))
    like = spark.read.parquet(str(tmp_path / "out1")).toArrow()
    uninterrupted, restarted = _read(spark, str(tmp_path / "out1"), like), _read(spark, str(tmp_path / "out2"), like)
    assert 0 < partial < restarted.num_rows
    assert_tables_equal(restarted, uninterrupted)


# ----------------------------------------------------------------------------------------------
def test_cli_run_engine_spark(spark, tmp_path):
    from click.testing import CliRunner

    from grizzly_py.cli import main
    path = tmp_path / "events.parquet"
    pq.write_table(_events(300), path, row_group_size=100)
    script = tmp_path / "q.py"
    script.write_text(textwrap.dedent(f"""
        from grizzly_py import agg, Time
        from grizzly_py.windows import TumblingEventTimeWindows
        def query(env):
            return (env.from_parquet({str(path)!r}, timestamp="ts").key_by("k")
                    .window(TumblingEventTimeWindows.of(Time.seconds(1))).aggregate(n=agg.count()))
    """))
    result = CliRunner().invoke(main, ["run", str(script), "--engine", "spark", "--parallelism", "2"])
    assert result.exit_code == 0, result.output
    assert "on Spark" in result.output and "partial strategy, pushdown input" in result.output


# ----------------------------------------------------------------------------------------------
# updating streams: Spark gets the changelog
# ----------------------------------------------------------------------------------------------
def by_key(changelog: pa.Table, key: str) -> list[dict]:
    """A changelog's rows grouped by key, each key's rows in their order (a stable sort): the
    order across keys is unspecified (semantics.md, "Updating streams")."""
    import pyarrow.compute as pc
    return changelog.take(pc.sort_indices(changelog, [(key, "ascending")])).to_pylist()


def test_running_aggregate_on_spark_is_its_changelog(spark):
    def build(env):
        data = pa.table({"ts": list(range(8)), "k": [1, 2, 1, 1, None, 2, 1, None], "v": [5, 2, 3, 9, 4, None, 9, 4]})
        return env.from_arrow(data.to_batches(max_chunksize=3), timestamp="ts").key_by("k").aggregate(
            hi=agg.max("v"), n=agg.count())
    env = gz.StreamEnvironment()
    changes = build(env).changelog().execute_and_collect()
    df = build(gz.StreamEnvironment.for_spark(spark)).to_spark()
    assert df.columns == ["op", "k", "hi", "n"]
    assert by_key(as_types_of(df.toArrow(), changes), "k") == by_key(changes, "k")
    final, _ = on_spark(spark, build)
    assert final.to_pylist() == embedded(build)[0].to_pylist()


def test_deduplicate_on_spark(spark):
    def build(keep):
        def query(env):
            data = pa.table({"ts": [5, 2, 3, 6, 5, 2], "k": [1, 2, 1, 1, None, 2], "s": ["a", "b", None, "d", "e", "f"]})
            return env.from_arrow(data.to_batches(max_chunksize=4), timestamp="ts").key_by("k").deduplicate(keep=keep)
        return query
    for keep in ("first", "last"):  # "last" is updating: its final table is sorted
        assert sorted_rows(on_spark(spark, build(keep))[0]).to_pylist() == \
            sorted_rows(embedded(build(keep))[0]).to_pylist()


def test_top_n_on_spark(spark):
    def build(env):
        data = pa.table({"ts": list(range(8)), "k": [1, 1, 1, 2, 1, 1, 1, None], "p": [5, 7, 5, 1, None, 9, 8, 3]})
        return env.from_arrow(data.to_batches(max_chunksize=3), timestamp="ts").key_by("k").top_n(2, by="p")
    env = gz.StreamEnvironment()
    changes = build(env).changelog().execute_and_collect()
    df = build(gz.StreamEnvironment.for_spark(spark)).to_spark()
    assert df.columns == ["op", "ts", "k", "p", "rank"]
    assert by_key(as_types_of(df.toArrow(), changes), "k") == by_key(changes, "k")
    assert on_spark(spark, build)[0].to_pylist() == embedded(build)[0].to_pylist()


def test_aggregate_of_an_aggregate_on_spark(spark):
    def build(env):
        data = pa.table({"ts": [1, 2, 3, 4, 5], "c": [1, 1, 2, 1, 2], "a": [10, 11, 20, 10, 20], "p": [5, 7, 1, 9, 3]})
        return (env.from_arrow(data.to_batches(max_chunksize=2), timestamp="ts").key_by("a", "c")
                .aggregate(hi=agg.max("p")).key_by("c").aggregate(avg_hi=agg.avg("hi"), n=agg.count()))
    assert on_spark(spark, build)[0].to_pylist() == embedded(build)[0].to_pylist()


def test_spark_runs_the_rewritten_plan_as_the_engine_does(spark):
    """Nexmark Q7 (a window join of the bids with their own window maximum) is rewritten on Spark
    as on the embedded engine (rewrites/): the job says so, and the results and the counts of
    late and filtered records are the engine's (the bids are read once, not once per side)."""
    from grizzly_py.workloads import nexmark
    bids = nexmark.generate_bids(30_000, seed=3, events_per_second=1000)  # three 10 s windows
    late = pa.table({n: bids.column(n)[:200] for n in bids.column_names})  # old bids at the end: late
    bids = pa.concat_tables([bids.combine_chunks(), late])  # two batches: the late ones after

    def build(env):
        return nexmark.q7(env, bids)
    expected, metrics = embedded(build)
    actual, spark_metrics = on_spark(spark, build)
    query = spark_metrics["queries"][0]
    assert any(n.startswith("plan rewrite: WindowJoin") for n in query["notes"])
    assert actual.equals(as_types_of(expected, actual))
    assert expected.num_rows > 0
    assert spark_metrics["late_records"] == metrics["late_records"] == 200
