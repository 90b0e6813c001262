"""The ``keyed`` strategy on Spark (local[2]) for queries whose state is per key of source
columns (``spark/keyed.py``): keyed count windows, running aggregates, deduplication, unbounded
Top-N, windows with allowed lateness or a late side output, window Top-N and deduplication.
Each is checked against the embedded engine over random data (pushdown sources in random
batches, with late records; DataFrames of several partitions, one batch in their order): the same
rows (the final table of an updating stream; each key's changelog in the same order), the same
records in, filtered and late, more than one task in the keyed stage. Queries keyed by computed
columns, or whose operators share no key column, keep the ``whole`` strategy.

Skipped, with the reason, where PySpark or Java is missing.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from strategies import assert_tables_equal

pytest.importorskip("pyspark", reason="PySpark is not installed: pip install 'grizzly-py[spark]'")
if shutil.which("java") is None:  # pragma: no cover - depends on the host
    pytest.skip("no Java runtime (Spark needs Java 17)", allow_module_level=True)

import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, agg, col
from grizzly_py.windows import EventTimeSessionWindows, TumblingEventTimeWindows

pytestmark = pytest.mark.slow  # a Spark session for the module, Spark jobs per example

# a Spark job costs about a second: few examples, and a failure is reported unshrunk (shrinking
# would run dozens more jobs)
EXAMPLES = settings(max_examples=int(os.environ.get("GRIZZLY_SPARK_KEYED_EXAMPLES", "2")), deadline=None,
                    suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.reuse, Phase.generate])
BOUND = WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(20))
TUMBLING = TumblingEventTimeWindows.of(Time.milliseconds(200))


@pytest.fixture(scope="module")
def spark():
    from grizzly_py.spark import local_session
    session = local_session(2, master="local[2,2]", app="grizzly-keyed-tests")
    yield session
    session.stop()


def _late_aggregate(s, side_output: bool = False):
    windows = s.key_by("k").window(TUMBLING).allowed_lateness(Time.milliseconds(150))
    windows = windows.side_output_late_data("late") if side_output else windows
    return windows.aggregate(n=agg.count(), s=agg.sum("v"), f=agg.first("x"))


# name: (the query over a source, whether its output is an updating stream); filters compare floats,
# which Spark does not evaluate before the transfer (filters.py), so filtered_records stays exact
QUERIES = {
    "count_tumbling": (lambda s: s.key_by("k").count_window(3).aggregate(
        n=agg.count(), s=agg.sum("v"), f=agg.first("x"), l=agg.last("x")), False),
    "count_sliding": (lambda s: s.filter(col("x") > 0.2).key_by("k", "g").count_window(4, 2).aggregate(
        s=agg.sum("v"), m=agg.median("x"), l=agg.last("v")), False),
    "running": (lambda s: s.filter(col("x") < 2.1).key_by("k").aggregate(
        n=agg.count(), s=agg.sum("v"), hi=agg.max("x"), l=agg.last("v")), True),
    "running_of_running": (lambda s: s.key_by("k", "g").aggregate(hi=agg.max("v")).key_by("k").aggregate(
        total=agg.sum("hi"), n=agg.count(), f=agg.first("hi"), l=agg.last("hi"), sd=agg.stddev_pop("hi")), True),
    "running_bags": (lambda s: s.key_by("g").aggregate(
        m=agg.median("x"), mo=agg.mode("k"), t=agg.top_k("v", 3)), True),
    "running_bags_of_running": (lambda s: s.key_by("k", "g").aggregate(hi=agg.max("v")).key_by("k").aggregate(
        m=agg.median("hi"), mo=agg.mode("hi"), t=agg.top_k("hi", 2)), True),
    "deduplicate_first": (lambda s: s.key_by("k", "g").deduplicate(keep="first"), False),
    "deduplicate_last": (lambda s: s.key_by("k").deduplicate(keep="last"), True),
    "top_n": (lambda s: s.key_by("k").top_n(2, by=["v", "x"], descending=[True, False]), True),
    "allowed_lateness": (_late_aggregate, False),
    "late_side_output": (lambda s: _late_aggregate(s, side_output=True).late_data("late"), False),
    "session_top_n": (lambda s: s.key_by("k").window(EventTimeSessionWindows.with_gap(
        Time.milliseconds(30))).top_n(2, by="x"), False),
    "session_deduplicate": (lambda s: s.key_by("g").window(EventTimeSessionWindows.with_gap(
        Time.milliseconds(30))).deduplicate(keep="last"), False),
}


@st.composite
def inputs(draw):
    """Random events: ordered timestamps with disorder beyond the bound (late records across
    batches), equal timestamps, string keys with nulls, few values (ties for first/last and
    Top-N), and the cut into source batches."""
    n = draw(st.integers(20, 160))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.integers(0, 15 * n, n)) + rng.integers(-60, 61, n)
    table = pa.table({"ts": pa.array(ts, pa.int64()),
                      "k": pa.array(rng.choice(["a", "b", "c", "d", "e", None], n).tolist(), pa.string()),
                      "g": pa.array(rng.integers(0, 3, n), pa.int32()),
                      "v": pa.array(rng.integers(-10, 10, n)),
                      "x": pa.array(rng.integers(0, 6, n).astype(float) / 2)})
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=6)))
    batches = [table.slice(a, b - a).to_batches()[0] for a, b in zip([0] + cuts, cuts + [n])]
    return table, batches, draw(st.integers(1, 4))


def _run(env, query, source):
    query(source(env)).collect("out")
    result = env.execute()
    return result["out"], result.metrics


def _sorted(table: pa.Table) -> pa.Table:
    return table.take(pc.sort_indices(table, [(c, "ascending") for c in table.column_names]))


def _check(spark, name, source_embedded, source_spark, expected_input):
    query, updating = QUERIES[name]
    expected, metrics = _run(gz.StreamEnvironment(), query, source_embedded)
    actual, spark_metrics = _run(gz.StreamEnvironment.for_spark(spark), query, source_spark)
    expected = expected.cast(actual.schema) if expected.schema != actual.schema else expected
    if updating:  # the final table: one row per key, sorted
        assert_tables_equal(actual, expected)
    else:  # rows of different keys leave in no order across tasks
        assert_tables_equal(_sorted(actual), _sorted(expected))
    q = spark_metrics["queries"][0]
    assert q["strategy"] == "keyed" and q["input"] == expected_input
    assert len([t for t in q["task_reports"] if t["stage"] == "keyed"]) > 1
    assert_same_counts(spark_metrics, metrics, expected.num_rows)
    return expected, metrics


def assert_same_counts(spark_metrics: dict, metrics: dict, final_rows: int) -> None:
    """Spark's job counts what the embedded engine's does. ``records_out`` differs where the
    embedded engine's running aggregate emitted one change per key and batch into a sink that
    keeps the final table (a pipeline's ``mini_batch``, docs/semantics.md): its sink got fewer
    rows than the per-record changelog Spark's tasks write, and at least one per final row."""
    mini_batch = any(p.get("mini_batch") for q in metrics["queries"] for p in q.get("pipelines", []))
    for m in ("records_in", "records_out", "filtered_records", "late_records"):
        if m == "records_out" and mini_batch:
            assert final_rows <= metrics[m] <= spark_metrics[m], (m, final_rows, metrics[m], spark_metrics[m])
        else:
            assert spark_metrics[m] == metrics[m], m


@pytest.mark.parametrize("name", sorted(QUERIES))
@EXAMPLES
@given(data=inputs())
def test_pushdown_by_key_matches_the_embedded_engine(spark, name, data):
    _table, batches, _parts = data
    _check(spark, name, lambda env: env.from_arrow(batches, timestamp="ts", watermark=BOUND),
           lambda env: env.from_arrow(batches, timestamp="ts", watermark=BOUND), "pushdown")


@pytest.mark.parametrize("name", sorted(QUERIES))
@EXAMPLES
@given(data=inputs())
def test_dataframe_by_key_matches_the_embedded_engine(spark, name, data):
    """A DataFrame of several partitions is one batch in its order (partitions in order)."""
    table, _batches, parts = data
    df = spark.createDataFrame(table).repartition(parts).localCheckpoint()  # one fixed order
    ordered = df.toArrow().combine_chunks()
    _check(spark, name, lambda env: env.from_arrow(ordered, timestamp="ts", watermark=BOUND),
           lambda env: env.from_spark(df, timestamp="ts", watermark=BOUND), "dataframe")


SCANNED = "by key without a shuffle"


@pytest.mark.parametrize("name", ["count_sliding", "running_of_running", "allowed_lateness"])
@pytest.mark.parametrize("scan", [True, False], ids=["scan", "shuffle"])
def test_pushdown_by_key_scans_or_shuffles_alike(spark, monkeypatch, name, scan):
    """Sources the tasks read go by key without a shuffle (each task scans every batch and keeps
    its keys' rows, ``key_scan.py``) while the partitions are few, through Spark's shuffle
    otherwise; both equal the embedded engine."""
    from grizzly_py.spark import planner
    if not scan:
        monkeypatch.setattr(planner, "SCAN_TASKS", 0)
    rng = np.random.default_rng(11)
    n = 300
    ts = np.sort(rng.integers(0, 6000, n)) + rng.integers(-200, 201, n)
    table = pa.table({"ts": pa.array(ts, pa.int64()), "k": pa.array(rng.choice(["a", "b", "c", None], n).tolist()),
                      "g": pa.array(rng.integers(0, 3, n), pa.int32()), "v": pa.array(rng.integers(-10, 10, n)),
                      "x": pa.array(rng.integers(0, 6, n).astype(float) / 2)})
    batches = table.to_batches(max_chunksize=37)
    env = gz.StreamEnvironment.for_spark(spark)
    _check(spark, name, lambda env: env.from_arrow(batches, timestamp="ts", watermark=BOUND),
           lambda env: env.from_arrow(batches, timestamp="ts", watermark=BOUND), "pushdown")
    QUERIES[name][0](env.from_arrow(batches, timestamp="ts", watermark=BOUND)).collect("out")
    notes = env.execute().metrics["queries"][0]["notes"]
    assert any(SCANNED in note for note in notes) == scan, notes


@pytest.mark.parametrize("name", ["count_tumbling", "running_of_running", "deduplicate_first", "top_n"])
def test_a_dataframe_of_parquet_files_is_read_by_key_in_the_tasks(spark, tmp_path, name):
    """``from_spark(spark.read.parquet(dir))`` by key: the tasks read the files (its rows one
    batch, in the files' order) and keep their keys' rows, no shuffle; equal to the embedded
    engine over the same rows as one batch, with the same records in."""
    import pyarrow.parquet as pq
    rng = np.random.default_rng(17)
    for i in range(3):
        n = 120
        pq.write_table(pa.table({"ts": pa.array(np.sort(rng.integers(0, 900, n)) + 900 * i, pa.int64()),
                                 "k": pa.array(rng.choice(["a", "b", "c", None], n).tolist()),
                                 "g": pa.array(rng.integers(0, 3, n), pa.int32()),
                                 "v": pa.array(rng.integers(-10, 10, n)),
                                 "x": pa.array(rng.integers(0, 6, n).astype(float) / 2)}),
                       tmp_path / f"part-{i}.parquet", row_group_size=50)
    files = pq.read_table(tmp_path).combine_chunks()  # the files' order (pyarrow reads them by name)
    expected, metrics = _run(gz.StreamEnvironment(), QUERIES[name][0],
                             lambda env: env.from_arrow(files, timestamp="ts", watermark=BOUND))
    df = spark.read.parquet(str(tmp_path))
    actual, spark_metrics = _run(gz.StreamEnvironment.for_spark(spark), QUERIES[name][0],
                                 lambda env: env.from_spark(df, timestamp="ts", watermark=BOUND))
    expected = expected.cast(actual.schema) if expected.schema != actual.schema else expected
    assert_tables_equal(_sorted(actual), _sorted(expected))
    q = spark_metrics["queries"][0]
    assert q["strategy"] == "keyed" and q["input"] == "files", q["notes"]
    assert any(SCANNED in note for note in q["notes"])
    assert_same_counts(spark_metrics, metrics, expected.num_rows)


def test_a_join_of_two_dataframes_of_parquet_files_reads_them_by_key(spark, tmp_path):
    """A window join of two ``spark.read.parquet`` DataFrames: every task reads both sides' files
    and keeps its keys' rows (``keyed-join`` from files), equal to the embedded engine."""
    import pyarrow.parquet as pq
    rng = np.random.default_rng(23)
    sides = {}
    for side in ("left", "right"):
        n = 300
        table = pa.table({"ts": pa.array(np.sort(rng.integers(0, 3000, n)), pa.int64()),
                          "k": pa.array(rng.integers(0, 12, n), pa.int32() if side == "left" else pa.int64()),
                          side[0]: pa.array(rng.integers(0, 100, n))})
        (tmp_path / side).mkdir()
        pq.write_table(table, tmp_path / side / "part-0.parquet", row_group_size=64)
        sides[side] = table

    def query(left, right):
        return left.join(right).where("k").equal_to("k").window(TUMBLING)
    embedded = gz.StreamEnvironment()
    expected = query(*(embedded.from_arrow(t.combine_chunks(), timestamp="ts")
                       for side, t in sides.items())).execute_and_collect()
    env = gz.StreamEnvironment.for_spark(spark)
    frames = [env.from_spark(spark.read.parquet(str(tmp_path / side)), timestamp="ts") for side in sides]
    query(*frames).collect("out")
    result = env.execute()
    q = result.metrics["queries"][0]
    assert q["strategy"] == "keyed-join" and q["input"] == "files", q["notes"]
    actual = result["out"]
    assert expected.num_rows > 0
    assert_tables_equal(_sorted(actual), _sorted(expected.cast(actual.schema)))


def test_small_inputs_scan_into_one_partition_per_core(monkeypatch):
    """One key partition per core reads the input least often; a core's share above
    ``SCAN_SHARE_BYTES``, or above a 32nd of the Python workers' memory cap, takes the finer
    partitioning."""
    from grizzly_py.spark import key_scan
    from grizzly_py.spark.inputs import plan_splits
    batches = pa.table({"k": pa.array(np.arange(10_000)), "v": pa.array(np.arange(10_000))}).to_batches(2_500)
    source = gz.StreamEnvironment().from_arrow(batches).node.source
    scanned = [key_scan.ScannedSource(tuple(plan_splits(source, 6, ("k",))), ("k",))]
    assert key_scan.scan_parts(scanned, 2, 6) == 2
    share = 10_000 * 8 // 2  # a core's share of k: 40,000 bytes
    assert key_scan.scan_parts(scanned, 2, 6, f"{share * 32 // 1024}k") == 2
    assert key_scan.scan_parts(scanned, 2, 6, f"{share * 32 // 1024 - 1}k") == 6
    monkeypatch.setattr(key_scan, "SCAN_SHARE_BYTES", share - 1)
    assert key_scan.scan_parts(scanned, 2, 6) == 6


@pytest.mark.parametrize("setting, share", [("1g", 32 << 20), ("700m", 700 << 15), ("700", 700 << 15),
                                            ("2 GiB", 64 << 20), ("64k", 2 << 10), (None, 256 << 20),
                                            ("64g", 256 << 20)])
def test_a_worker_memory_cap_sizes_the_scan_share(setting, share):
    from grizzly_py.spark.key_scan import share_bytes
    assert share_bytes(setting) == share


def test_a_worker_memory_cap_that_is_not_a_size_is_an_error():
    from grizzly_py.spark.key_scan import share_bytes
    with pytest.raises(ValueError, match="not a size"):
        share_bytes("lots")


def _as(values: list, kind: pa.DataType) -> pa.RecordBatch:
    return pa.record_batch({"key": pa.array(values, kind)})


@settings(max_examples=60, deadline=None)
@given(ints=st.lists(st.one_of(st.none(), st.integers(-2**31, 2**31 - 1)), min_size=1, max_size=40),
       parts=st.integers(1, 9))
def test_keys_that_group_as_one_share_a_key_partition(ints, parts):
    """``key_partition`` (the scan's split by key) puts keys that group as one in one partition,
    across integer widths, float widths, -0.0 and 0.0, NaNs of any bits, string encodings and
    timestamp units; nulls together."""
    from grizzly_py.spark.key_scan import key_partition

    def same(*batches):
        first = key_partition(batches[0], ["key"], parts)
        assert ((first >= 0) & (first < parts)).all()
        for b in batches[1:]:
            assert (key_partition(b, ["key"], parts) == first).all(), b
    same(_as(ints, pa.int32()), _as(ints, pa.int64()))
    halves = [None if i is None else (i % 2**22) / 2 for i in ints]  # exact in float32
    same(_as(halves, pa.float32()), _as(halves, pa.float64()))
    same(_as([None if i is None else f"s{i}" for i in ints], pa.string()),
         _as([None if i is None else f"s{i}" for i in ints], pa.large_string()),
         pa.record_batch({"key": pa.array([None if i is None else f"s{i}" for i in ints], pa.string())
                          .dictionary_encode()}))
    same(_as([None if i is None else i * 1000 for i in ints], pa.timestamp("ms")),
         _as([None if i is None else i * 1_000_000 for i in ints], pa.timestamp("us")))
    other_nan = np.frombuffer(np.uint64(0x7FF8000000000001).tobytes(), np.float64)[0]
    same(_as([0.0, float("nan"), None], pa.float64()), pa.record_batch({"key": pa.array([-0.0, other_nan, None])}))


@pytest.mark.parametrize("parts", [2, 3, 6, 16])
def test_key_partitions_share_the_keys_evenly(parts):
    """Dense integer keys, strided ones, floats and strings spread over the scan's partitions
    about evenly (each within 20% of its share): a partition is one task's work."""
    from grizzly_py.spark.key_scan import key_partition
    n = 20_000
    for values in (np.arange(n), np.arange(n) * 1024, np.arange(n) << 32, np.arange(n) / 8,
                   [f"key-{i}" for i in range(n)]):
        counts = np.bincount(key_partition(pa.record_batch({"key": pa.array(values)}), ["key"], parts),
                             minlength=parts)
        assert len(counts) == parts and (np.abs(counts - n / parts) < 0.2 * n / parts).all(), counts


def test_late_records_are_counted_by_key_as_the_engine_counts_them(spark):
    """A record behind the watermark that other keys' records of earlier batches moved is late in
    its key's task too: dropped and counted, or sent to the late side output."""
    rng = np.random.default_rng(3)
    n = 400
    ts = np.sort(rng.integers(0, 8000, n)) + rng.integers(-300, 301, n)
    table = pa.table({"ts": pa.array(ts, pa.int64()), "k": pa.array(rng.choice(list("abcdef"), n).tolist()),
                      "g": pa.array(rng.integers(0, 3, n), pa.int32()), "v": pa.array(rng.integers(-10, 10, n)),
                      "x": pa.array(rng.integers(0, 6, n).astype(float))})
    batches = table.to_batches(max_chunksize=40)
    def check(name):
        return _check(spark, name, lambda env: env.from_arrow(batches, timestamp="ts", watermark=BOUND),
                      lambda env: env.from_arrow(batches, timestamp="ts", watermark=BOUND), "pushdown")
    assert check("allowed_lateness")[1]["late_records"] > 0
    assert check("late_side_output")[0].num_rows > 0


def test_each_keys_changelog_keeps_its_order(spark):
    """``to_spark()`` of an updating stream is its changelog: each key's rows in the embedded
    engine's order (keys interleave in no order across tasks)."""
    rng = np.random.default_rng(5)
    n = 300
    table = pa.table({"ts": pa.array(np.arange(n), pa.int64()), "k": pa.array(rng.integers(0, 9, n)),
                      "v": pa.array(rng.integers(0, 50, n))})
    batches = table.to_batches(max_chunksize=64)

    def build(env):
        return env.from_arrow(batches, timestamp="ts").key_by("k").top_n(3, by="v")
    changes = build(gz.StreamEnvironment()).changelog().execute_and_collect()
    df = build(gz.StreamEnvironment.for_spark(spark)).to_spark()
    actual = df.toArrow()
    assert df.grizzly.strategy == "keyed"
    actual = actual.cast(changes.schema) if actual.schema != changes.schema else actual
    by_key = [("k", "ascending")]  # a stable sort: each key's rows stay in their order
    assert actual.take(pc.sort_indices(actual, by_key)).to_pylist() == \
        changes.take(pc.sort_indices(changes, by_key)).to_pylist()


@pytest.mark.parametrize("query", [
    lambda s: s.with_columns(k2=col("g") + 1).key_by("k2").aggregate(n=agg.count()),  # a computed key
    lambda s: s.key_by("k").aggregate(n=agg.count()).key_by("n").aggregate(c=agg.count()),  # no common key
    lambda s: s.window_all(EventTimeSessionWindows.with_gap(Time.milliseconds(20))).top_n(2, by="v"),  # no key
], ids=["computed", "regrouped", "window_all"])
def test_queries_without_a_key_column_in_common_run_whole(spark, query):
    table = pa.table({"ts": pa.array(range(0, 600, 3), pa.int64()), "k": [str(i % 5) for i in range(200)],
                      "g": pa.array([i % 4 for i in range(200)], pa.int32()), "v": list(range(200))})

    def build(env):
        return query(env.from_arrow(table, timestamp="ts"))
    expected = build(gz.StreamEnvironment()).execute_and_collect()
    env = gz.StreamEnvironment.for_spark(spark)
    build(env).collect("out")
    result = env.execute()
    assert result.metrics["queries"][0]["strategy"] == "whole"
    actual = result["out"]
    assert_tables_equal(actual, expected.cast(actual.schema) if expected.schema != actual.schema else expected)


def test_session_windows_by_key_keep_each_keys_stream_order(spark):
    """Sessions (the compiled form of the strategy) see a key's records in stream order:
    ``first``/``last`` of records with equal event times go to the earlier/later arrival, from
    batches of a pushdown source and from a DataFrame of several partitions."""
    n = 2000
    rng = np.random.default_rng(2)
    table = pa.table({"ts": pa.array(np.repeat(np.arange(n // 50), 50) * 1000, pa.int64()),
                      "k": pa.array(rng.integers(0, 4, n)), "x": pa.array(np.arange(n))})
    df = spark.createDataFrame(table).repartition(8).localCheckpoint()  # one fixed order
    ordered = df.toArrow().combine_chunks()

    def sessions(s):
        return s.key_by("k").window(EventTimeSessionWindows.with_gap(Time.milliseconds(10))).aggregate(
            f=agg.first("x"), l=agg.last("x"), n=agg.count())
    for embedded_source, spark_source in (
            (lambda env: env.from_arrow(table.to_batches(max_chunksize=25), timestamp="ts"),
             lambda env: env.from_arrow(table.to_batches(max_chunksize=25), timestamp="ts")),
            (lambda env: env.from_arrow(ordered, timestamp="ts"), lambda env: env.from_spark(df, timestamp="ts"))):
        expected, _ = _run(gz.StreamEnvironment(), sessions, embedded_source)
        actual, metrics = _run(gz.StreamEnvironment.for_spark(spark), sessions, spark_source)
        assert metrics["queries"][0]["strategy"] == "keyed"
        assert_tables_equal(actual, expected.cast(actual.schema))
