"""Unions of several sources under tumbling and sliding event-time windows on Spark (local[2]):
each input's tasks pre-aggregate into the window's partial states, which one merge combines
(``spark/union_partials.py``). Differential: the rows and the counters (records in and out,
filtered and late records) equal the embedded engine's, under a global window and under a
window keyed by a computed column, over inputs of different kinds (Arrow and Parquet sources
of many batches with disorder, so that records are late; a Spark DataFrame), and the input
stage runs in several tasks. The cluster run is in test_spark_cluster.py.

Skipped where PySpark or Java is missing, like test_spark.py.
"""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spark_partial_checks import COUNTERS, assert_the_engines_from_partial_tasks, local_spark, run_collected
from strategies import assert_tables_equal

pytest.importorskip("pyspark", reason="PySpark is not installed: pip install 'grizzly-py[spark]'")
if shutil.which("java") is None:  # pragma: no cover - depends on the host
    pytest.skip("no Java runtime (Spark needs Java 17)", allow_module_level=True)

import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, agg, col
from grizzly_py.windows import SlidingEventTimeWindows, TumblingEventTimeWindows

pytestmark = pytest.mark.slow

BOUND = WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(40))
TUMBLING = TumblingEventTimeWindows.of(Time.milliseconds(200))
SLIDING = SlidingEventTimeWindows.of(Time.milliseconds(300), Time.milliseconds(100))
spark = local_spark("grizzly-union-tests")


def _events(n: int, seed: int, disorder: int = 200) -> pa.Table:
    rng = np.random.default_rng(seed)
    ts = 1_000_000 + np.sort(rng.integers(0, 20 * n, n)) + rng.integers(-disorder, disorder + 1, n)
    return pa.table({"ts": pa.array(ts, pa.int64()),
                     "k": pa.array(rng.choice(["a", "b", "c", None], n).tolist(), pa.string()),
                     "x": pa.array(np.round(rng.normal(0, 10, n), 2)),
                     "i": pa.array(rng.integers(-50, 50, n))})


QUERIES = {  # over a union
    "window_all": lambda u: u.window_all(TUMBLING).aggregate(n=agg.count(), s=agg.sum("i"), hi=agg.max("x"),
                                                             v=agg.var_samp("x")),
    "computed_key": lambda u: (u.with_columns(m=col("i") % 3).key_by("m").window(SLIDING)
                               .aggregate(n=agg.count(), s=agg.sum("i"), med=agg.median("x"))),
    "then_filter": lambda u: u.key_by("k").window(TUMBLING).aggregate(n=agg.count()).filter(col("n") > 1),
}


def _inputs(env, tables, parquet, df=None):
    """Three inputs, each through its own operators before the union: Arrow batches, a Parquet file
    of many row groups, and a DataFrame (``df``; on the embedded engine: the same rows as one
    Arrow batch)."""
    a = env.from_arrow(tables[0].to_batches(max_chunksize=30), timestamp="ts", watermark=BOUND).filter(col("i") > -30)
    b = env.from_parquet(str(parquet), timestamp="ts", watermark=BOUND).with_columns(i=col("i") * 2)
    c = env.from_spark(df, timestamp="ts", watermark=BOUND) if df is not None else \
        env.from_arrow(tables[2], timestamp="ts", watermark=BOUND)
    return a.union(b, c.filter(col("k").is_not_null()))


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_a_union_of_three_kinds_of_inputs_runs_as_partial_states(spark, tmp_path, name):
    tables = [_events(300, 51), _events(200, 52), _events(120, 53)]
    parquet = tmp_path / "b.parquet"
    pq.write_table(tables[1], parquet, row_group_size=25)
    df = spark.createDataFrame(tables[2])
    expected, metrics = run_collected(env := gz.StreamEnvironment(), QUERIES[name](_inputs(env, tables, parquet)))
    actual, spark_metrics = run_collected(env := gz.StreamEnvironment.for_spark(spark),
                                 QUERIES[name](_inputs(env, tables, parquet, df)))
    assert_the_engines_from_partial_tasks(actual, spark_metrics, expected, metrics)
    assert metrics["late_records"] > 0 and metrics["filtered_records"] > 0 and expected.num_rows > 0
    assert spark_metrics["queries"][0]["input"] == "dataframe+pushdown"


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(sizes=st.lists(st.integers(0, 120), min_size=2, max_size=3), chunk=st.integers(1, 40),
       bound_ms=st.sampled_from([0, 15, 200]), seed=st.integers(0, 2**16), first_last=st.booleans())
def test_pushdown_unions_decide_lateness_as_the_engine(spark, sizes, chunk, bound_ms, seed, first_last):
    """Arrow inputs of any sizes (empty ones too) and batch sizes, any bound: the watermark of the
    engine's rounds (the minimum over the inputs, source by source) decides the late records;
    first/last break event-time ties by the batches' places in those rounds."""
    tables = [_events(n, seed + i, disorder=60) for i, n in enumerate(sizes)]
    bound = WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(bound_ms))
    aggregates = dict(n=agg.count(), s=agg.sum("i"))
    if first_last:
        aggregates.update(f=agg.first("i"), l=agg.last("x"))

    def query(env):
        streams = [env.from_arrow(t.to_batches(max_chunksize=chunk) or t, timestamp="ts", watermark=bound)
                   for t in tables]
        return streams[0].union(*streams[1:]).key_by("k").window(SLIDING).aggregate(**aggregates)
    expected, metrics = run_collected(env := gz.StreamEnvironment(), query(env))
    actual, spark_metrics = run_collected(env := gz.StreamEnvironment.for_spark(spark), query(env))
    assert_tables_equal(actual, expected.cast(actual.schema) if expected.schema != actual.schema else expected)
    assert spark_metrics["queries"][0]["strategy"] == "partial"
    for name in COUNTERS:
        assert spark_metrics[name] == metrics[name], name


def test_ordered_aggregates_over_a_dataframe_input_keep_the_other_strategies(spark):
    """first/last break ties by arrival, which a DataFrame's partitions do not give among the other
    inputs' batches: such a union does not take the partial strategy."""
    table = _events(100, 3)
    env = gz.StreamEnvironment.for_spark(spark)
    union = env.from_spark(spark.createDataFrame(table), timestamp="ts").union(env.from_arrow(table, timestamp="ts"))
    assert union.window_all(TUMBLING).aggregate(f=agg.first("i")).to_spark().grizzly.strategy == "whole"
    assert union.window_all(TUMBLING).aggregate(n=agg.count()).to_spark().grizzly.strategy == "partial"


def test_a_dataframe_read_as_files_is_one_batch_among_the_rounds(spark, tmp_path):
    """A DataFrame that is a plain Parquet scan (read by the tasks as files) unioned with Arrow
    batches: the DataFrame is one batch of the first round, whose largest event time (a Spark
    aggregate) holds the union's watermark down for the Arrow input's later batches."""
    a, b = _events(500, 61, disorder=300), _events(400, 62, disorder=300)
    path = tmp_path / "a.parquet"
    pq.write_table(a, path, row_group_size=100)

    def query(env, first):
        second = env.from_arrow(b.to_batches(max_chunksize=40), timestamp="ts", watermark=BOUND)
        return first.filter(col("i") > -5).union(second).window_all(TUMBLING).aggregate(n=agg.count(), s=agg.sum("i"))
    expected, metrics = run_collected(env := gz.StreamEnvironment(), query(env, env.from_arrow(a, timestamp="ts", watermark=BOUND)))
    actual, spark_metrics = run_collected(env := gz.StreamEnvironment.for_spark(spark), query(
        env, env.from_spark(spark.read.parquet(str(path)), timestamp="ts", watermark=BOUND)))
    assert_tables_equal(actual, expected.cast(actual.schema) if expected.schema != actual.schema else expected)
    assert spark_metrics["queries"][0]["strategy"] == "partial"
    assert spark_metrics["queries"][0]["input"] == "files+pushdown"
    assert metrics["late_records"] > 0
    for name in COUNTERS:
        assert spark_metrics[name] == metrics[name], name
