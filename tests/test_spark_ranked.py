"""Ranked windows (window Top-N, deduplication, the rows at a column's extreme that Nexmark Q7
becomes after its plan rewrite) on Spark (local[2]) as partial states: each input task runs the
ranked window over its split and ships each group's kept rows (the hidden aggregates' vectors,
``window_rank.py``), Spark shuffles them by (keys, window), the merge ranks them again.
Differential: the rows, in order, and the counters (records in and out, filtered and late
records) equal the embedded engine's, for any N, ties, tumbling and sliding windows, with or
without keys, over Arrow batches, a Parquet file of many row groups (records late across them)
and DataFrames; the input stage runs in several tasks. The cluster run is in
test_spark_cluster.py; the task functions without Spark on many random queries in
test_spark_partials.py.

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
from spark_partial_checks import assert_the_engines_from_partial_tasks, local_spark, run_collected

pytest.importorskip("pyspark", reason="PySpark is not installed: pip install 'grizzly-py[spark]'")
if shutil.which("java") is None:  # pragma: no cover - depends on the host
    pytest.skip("no Java runtime (Spark needs Java 17)", allow_module_level=True)

import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, col
from grizzly_py.windows import SlidingEventTimeWindows, TumblingEventTimeWindows
from grizzly_py.workloads import nexmark

pytestmark = pytest.mark.slow

TUMBLING = TumblingEventTimeWindows.of(Time.milliseconds(150))
SLIDING = SlidingEventTimeWindows.of(Time.milliseconds(250), Time.milliseconds(50))
spark = local_spark("grizzly-ranked-tests")


def _events(n: int, seed: int, disorder: int = 120) -> pa.Table:
    """Few distinct values (ties in every ranking), null keys and values, disorder beyond the
    bounds used below (late records)."""
    rng = np.random.default_rng(seed)
    ts = 1_000_000 + np.sort(rng.integers(0, 10 * n, n)) + rng.integers(-disorder, disorder + 1, n)
    v = rng.integers(0, 5, n)
    return pa.table({"ts": pa.array(ts, pa.int64()),
                     "k": pa.array(rng.choice(["a", "b", None], n).tolist(), pa.string()),
                     "v": pa.array(v, pa.int64(), mask=rng.random(n) < 0.1),
                     "x": pa.array(rng.integers(0, 4, n) / 2.0)})


RANKED = {
    "top_n_all": lambda s, n, w: s.window_all(w).top_n(n, by="v", descending=True),
    "top_n_all_two_columns": lambda s, n, w: s.window_all(w).top_n(n, by=["x", "k"], descending=[False, True]),
    "top_n_by_key": lambda s, n, w: s.key_by("k").window(w).top_n(n, by="x"),
    "deduplicate_first": lambda s, n, w: s.window_all(w).deduplicate(keep="first"),
    "deduplicate_last": lambda s, n, w: s.key_by("k").window(w).deduplicate(keep="last"),
    "top_n_then_filter": lambda s, n, w: s.filter(col("x") > 0).window_all(w).top_n(n, by="v").filter(
        col("rank") > 1),
}


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=st.sampled_from(sorted(RANKED)), n=st.integers(1, 4), sliding=st.booleans(),
       rows=st.integers(40, 300), chunk=st.integers(1, 20), bound_ms=st.sampled_from([0, 30, 500]),
       seed=st.integers(0, 2**16))
def test_ranked_windows_over_arrow_batches_rank_as_the_engine(spark, name, n, sliding, rows, chunk, bound_ms,
                                                                seed):
    table = _events(rows, seed)
    bound = WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(bound_ms))

    def query(env):
        source = env.from_arrow(table.to_batches(max_chunksize=chunk) or table, timestamp="ts", watermark=bound)
        return RANKED[name](source, n, SLIDING if sliding else TUMBLING)
    expected, metrics = run_collected(env := gz.StreamEnvironment(), query(env))
    actual, spark_metrics = run_collected(env := gz.StreamEnvironment.for_spark(spark), query(env))
    assert_the_engines_from_partial_tasks(actual, spark_metrics, expected, metrics)


def _bids_with_late_ones(n: int) -> pa.Table:
    bids = nexmark.generate_bids(n, seed=5, events_per_second=1000).combine_chunks()
    late = bids.slice(0, 300)  # old bids at the end: late when their row group is read
    return pa.concat_tables([bids, late])


@pytest.mark.parametrize("kind", ["pushdown", "files", "dataframe"])
def test_nexmark_q7_runs_as_partial_ranked_windows(spark, tmp_path, kind):
    """Q7 (rewritten to the rows at each window's maximum price) over a Parquet file of many row
    groups: read by the tasks (``from_parquet``, or ``from_spark`` of a plain scan, one batch),
    or through ``mapInArrow`` (a DataFrame that is no plain scan)."""
    bids = _bids_with_late_ones(30_000)  # three 10 s windows
    path = tmp_path / "bids.parquet"
    pq.write_table(bids, path, row_group_size=2_000)
    if kind == "pushdown":
        expected, metrics = run_collected(env := gz.StreamEnvironment(), nexmark.highest_bids(env.from_parquet(
            str(path), timestamp="dateTime")))
        assert metrics["late_records"] == 300
        actual, spark_metrics = run_collected(env := gz.StreamEnvironment.for_spark(spark), nexmark.highest_bids(
            env.from_parquet(str(path), timestamp="dateTime")))
    else:
        expected, metrics = run_collected(env := gz.StreamEnvironment(), nexmark.q7(env, bids.combine_chunks()))  # one batch
        df = spark.read.parquet(str(path))
        if kind == "dataframe":
            df = df.repartition(3)
        actual, spark_metrics = run_collected(env := gz.StreamEnvironment.for_spark(spark), nexmark.highest_bids(
            env.from_spark(df, timestamp="dateTime")))
        assert spark_metrics["queries"][0]["input"] == kind
    assert_the_engines_from_partial_tasks(actual, spark_metrics, expected, metrics)
    assert expected.num_rows >= 3
    assert any(n.startswith("plan rewrite: WindowJoin") for n in spark_metrics["queries"][0]["notes"])
