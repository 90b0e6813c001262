"""Files read by the Spark tasks themselves (local[2]): ``from_parquet`` of a directory, a glob
and a hive-partitioned dataset gives the embedded engine's results; ``from_spark`` of a plain
Parquet or ORC scan (with filters and a projection Spark wrote into its plan) reads the files in
the tasks -- the job says so -- with the same rows as ``mapInArrow``; a DataFrame that is not a
plain scan, a CSV scan, or a filter without an exact pyarrow equivalent, stays on ``mapInArrow``."""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow as pa
import pyarrow.csv  # noqa: F401 (pa.csv)
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark", reason="PySpark is not installed: pip install 'grizzly-py[spark]'")
if shutil.which("java") is None:  # pragma: no cover - depends on the host
    pytest.skip("no Java runtime (Spark needs Java 17)", allow_module_level=True)

import grizzly_py as gz
from grizzly_py import Time, agg, col
from grizzly_py.spark.planner import collect, pipeline_arrow_schema, to_spark
from grizzly_py.physical import build_physical_plan
from grizzly_py.plan import Query
from grizzly_py.windows import TumblingEventTimeWindows

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def spark():
    from grizzly_py.spark import local_session
    session = local_session(2, app="grizzly-file-tests")
    yield session
    session.stop()


def _part(i: int, n: int = 200) -> pa.Table:
    rng = np.random.default_rng(i)
    return pa.table({"ts": pa.array(1000 * i + np.sort(rng.integers(0, 1000, n)), pa.int64()),
                     "k": pa.array(rng.choice(["a", "b", "c"], n).tolist()),
                     "v": pa.array(rng.integers(0, 100, n))})


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("files")
    for i in range(4):
        for d in ("flat", f"hive/day={i % 2}"):
            (root / d).mkdir(parents=True, exist_ok=True)
            pq.write_table(_part(i), root / d / f"part-{i}.parquet", row_group_size=50)
    (root / "flat" / "_SUCCESS").write_text("")
    import pyarrow.orc as orc
    (root / "orc").mkdir()
    for i in range(4):  # the ORC writer's smallest stripes: several per file
        orc.write_table(_part(i, 3000), root / "orc" / f"part-{i}.orc", stripe_size=4096, batch_size=256)
    (root / "csv").mkdir()
    pa.csv.write_csv(pa.concat_tables(_part(i) for i in range(4)), root / "csv" / "part-0.csv")
    return root


def _windows(stream, key="k"):
    return (stream.filter(col("v") > 10).key_by(key)
            .window(TumblingEventTimeWindows.of(Time.milliseconds(500))).aggregate(n=agg.count(), s=agg.sum("v")))


def _result(env, build):
    build(env).collect("out")
    result = env.execute()
    return result["out"], result.metrics


@pytest.mark.filterwarnings("ignore::grizzly_py.LateRecordsWarning")  # hive: day=0's files, then day=1's
@pytest.mark.parametrize("kind", ["directory", "glob", "hive"])
def test_datasets_pushed_down_match_the_embedded_engine(spark, data, kind):
    path, key = {"directory": (data / "flat", "k"), "glob": (str(data / "flat" / "part-[13].parquet"), "k"),
                 "hive": (data / "hive", "day")}[kind]

    def build(env):
        return _windows(env.from_parquet(path, timestamp="ts"), key)
    expected, engine_metrics = _result(gz.StreamEnvironment(), build)
    actual, metrics = _result(gz.StreamEnvironment.for_spark(spark), build)
    assert actual.equals(expected.cast(actual.schema))
    assert metrics["late_records"] == engine_metrics["late_records"]
    assert expected.num_rows > 0
    query = metrics["queries"][0]
    assert query["input"] == "pushdown" and query["strategy"] == "partial"
    assert len([t for t in query["task_reports"] if t["stage"] == "partial"]) == 6  # 3 splits per core


def _on_spark(root, spark, **options):
    df = to_spark(root, spark, **options)
    table = collect(df, pipeline_arrow_schema(build_physical_plan(Query(root)).pipelines[-1]))
    return table, df.grizzly.metrics()


def _one_batch(table: pa.Table) -> list[pa.RecordBatch]:
    return table.combine_chunks().to_batches()[:1]  # a DataFrame is one batch of the stream


def test_from_spark_of_a_parquet_scan_reads_its_files(spark, data):
    env = gz.StreamEnvironment.for_spark(spark)
    root = _windows(env.from_spark(spark.read.parquet(str(data / "flat")), timestamp="ts")).node
    files, metrics = _on_spark(root, spark)
    assert metrics["input"] == "files"
    assert any("Parquet file scan" in n for n in metrics["notes"])
    through_arrow, arrow_metrics = _on_spark(root, spark, read_files=False)
    assert arrow_metrics["input"] == "dataframe"
    expected = _windows(gz.StreamEnvironment().from_arrow(
        _one_batch(pa.concat_tables(_part(i) for i in range(4))), timestamp="ts")).execute_and_collect()
    assert files.equals(through_arrow)
    assert files.equals(expected.cast(files.schema))
    # the query's filter runs in compiled code over the files' rows, in Spark before mapInArrow
    assert metrics["records_in"] == 800
    assert metrics["records_in"] - metrics["filtered_records"] == \
        arrow_metrics["records_in"] - arrow_metrics["filtered_records"] < 800


def test_from_spark_filters_and_projection_of_a_scan_run_in_the_tasks(spark, data):
    from pyspark.sql import functions as F
    df = spark.read.parquet(str(data / "hive")) \
        .filter(((F.col("k") == "a") | (F.col("day") == 1)) & ~F.col("v").isin(3, 5, 7)).select("ts", "v", "day")
    env = gz.StreamEnvironment.for_spark(spark)
    root = env.from_spark(df, timestamp="ts").filter(col("v") >= 0).node  # stateless: rows in file order
    files, metrics = _on_spark(root, spark)
    assert metrics["input"] == "files"
    through_arrow, _ = _on_spark(root, spark, read_files=False)
    order = [("ts", "ascending"), ("v", "ascending"), ("day", "ascending")]
    assert files.sort_by(order).equals(through_arrow.sort_by(order))
    assert 0 < files.num_rows < 800


def test_from_spark_of_an_orc_scan_reads_its_stripes(spark, data):
    from pyspark.sql import functions as F
    df = spark.read.orc(str(data / "orc")).filter(F.col("k") != "b").select("ts", "v")
    env = gz.StreamEnvironment.for_spark(spark)
    root = env.from_spark(df, timestamp="ts").key_by("v").window(
        TumblingEventTimeWindows.of(Time.milliseconds(500))).aggregate(n=agg.count(), s=agg.sum("v")).node
    files, metrics = _on_spark(root, spark)
    assert metrics["input"] == "files"
    assert any("ORC file scan" in n for n in metrics["notes"])
    assert sum(1 for t in metrics["task_reports"] if t["stage"] == metrics["task_reports"][0]["stage"]) > 1
    through_arrow, arrow_metrics = _on_spark(root, spark, read_files=False)
    assert arrow_metrics["input"] == "dataframe"
    rows = pa.concat_tables(_part(i, 3000) for i in range(4))
    rows = rows.filter(pa.compute.not_equal(rows.column("k"), "b")).select(["ts", "v"])
    expected = gz.StreamEnvironment().from_arrow(_one_batch(rows), timestamp="ts").key_by("v").window(
        TumblingEventTimeWindows.of(Time.milliseconds(500))).aggregate(n=agg.count(), s=agg.sum("v")).execute_and_collect()
    assert files.equals(through_arrow)
    assert files.equals(expected.cast(files.schema))
    assert metrics["records_in"] == rows.num_rows


@pytest.mark.parametrize("how", ["aggregate", "float filter", "csv"])
def test_from_spark_of_other_dataframes_stays_on_map_in_arrow(spark, data, how):
    from pyspark.sql import functions as F
    df = spark.read.parquet(str(data / "flat"))
    if how == "csv":  # Spark's parse of text is not pyarrow's
        df = spark.read.csv(str(data / "csv"), header=True, schema="ts BIGINT, k STRING, v BIGINT")
    df = df.groupBy("ts", "k").agg(F.sum("v").alias("v")) if how == "aggregate" else \
        df.filter(F.col("v").cast("double") > 10.5) if how == "float filter" else df
    env = gz.StreamEnvironment.for_spark(spark)
    root = _windows(env.from_spark(df, timestamp="ts")).node
    table, metrics = _on_spark(root, spark)
    assert metrics["input"] == "dataframe"
    assert any("read through mapInArrow" in n for n in metrics["notes"])
    assert table.num_rows > 0
    if how == "csv":
        assert any("CSVFileFormat files" in n and "no exact pyarrow equivalent" in n for n in metrics["notes"])


@pytest.mark.parametrize("window", ["session", "cumulative"])
@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_from_spark_scan_under_keyed_sessions_and_cumulative_windows_is_read_by_key(spark, data, window, fmt):
    # keyed sessions and cumulative windows over a plain scan: each key-partition task reads the
    # files and keeps its keys' rows (no mapInArrow, no shuffle), with the embedded engine's results
    from grizzly_py.windows import CumulativeEventTimeWindows, EventTimeSessionWindows
    assigner = (EventTimeSessionWindows.with_gap(Time.milliseconds(40)) if window == "session"
                else CumulativeEventTimeWindows.of(Time.milliseconds(1000), Time.milliseconds(250)))

    def query(stream):
        return stream.filter(col("v") > 10).key_by("k").window(assigner).aggregate(n=agg.count(), s=agg.sum("v"))
    read = spark.read.parquet if fmt == "parquet" else spark.read.orc
    path, n = (data / "flat", 200) if fmt == "parquet" else (data / "orc", 3000)
    env = gz.StreamEnvironment.for_spark(spark)
    root = query(env.from_spark(read(str(path)), timestamp="ts")).node
    files, metrics = _on_spark(root, spark)
    assert metrics["input"] == "files" and metrics["strategy"] == "keyed"
    assert any("without a shuffle" in note for note in metrics["notes"])
    assert len({t["partition"] for t in metrics["task_reports"] if t["stage"] == "keyed"}) > 1
    expected = query(gz.StreamEnvironment().from_arrow(
        _one_batch(pa.concat_tables(_part(i, n) for i in range(4))), timestamp="ts")).execute_and_collect()
    order = [(c, "ascending") for c in files.schema.names]
    assert expected.num_rows > 0
    assert files.sort_by(order).equals(expected.cast(files.schema).sort_by(order))
    assert metrics["records_in"] == 4 * n
