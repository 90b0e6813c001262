"""grizzly-py on a real Spark standalone cluster: a master and two worker daemons (1 core each,
two executor JVMs) started from the pip package's ``spark-class`` (``grizzly_py.spark.cluster``),
bound to 127.0.0.1, stopped by PID at the end of the module.

- Every Spark strategy (stateless, partial windows (of a union too), keyed sessions and count
  windows, joins by key, ranked windows as partial states, one task for a Top-N of
  sessions without keys) gives the embedded engine's result across executor processes, and the
  distributed ones run their heavy stage in more than one task.
- A window join of two streaming DataFrames runs by key group (``keyed+stream``) on the
  executors and equals the embedded engine fed the same rounds.
- An executor killed after the map stage wrote its shuffle output: Spark re-runs the lost map
  tasks in a new stage attempt; the result stays exact and ``records_in`` counts every row once.
- ``grizzly run --engine spark --master URL --conf k=v`` runs on the cluster, and so do the
  Spark peers of ``grizzly bench --engine spark-cluster``.

Skipped where PySpark or Java is missing, like test_spark.py.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from strategies import assert_tables_equal

pytest.importorskip("pyspark", reason="PySpark is not installed: pip install 'grizzly-py[spark]'")
if shutil.which("java") is None:  # pragma: no cover - depends on the host
    pytest.skip("no Java runtime (Spark needs Java 17)", allow_module_level=True)

import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, agg, col
from grizzly_py.spark.cluster import StandaloneCluster
from grizzly_py.windows import EventTimeSessionWindows, TumblingEventTimeWindows

pytestmark = pytest.mark.slow

SESSION_CONF = {"spark.executor.cores": "1", "spark.executor.memory": "1g",
                "spark.sql.adaptive.enabled": "false",  # keep the shuffle's 2 partitions (facts.md)
                "spark.task.maxFailures": "4",
                # as on separate hosts: a reducer fetches map output from the executor that wrote it,
                # not from the files on this disk, so a dead executor's output is lost
                "spark.shuffle.readHostLocalDisk": "false"}


@pytest.fixture(scope="module")
def cluster():
    with StandaloneCluster(workers=2, cores=1, memory="1g") as c:
        yield c


@pytest.fixture(scope="module")
def spark(cluster):
    from grizzly_py.spark import local_session
    session = local_session(2, master=cluster.url, app="grizzly-cluster-tests", **SESSION_CONF)
    yield session
    session.stop()


def test_grizzly_run_takes_a_master_and_spark_settings(cluster, tmp_path):
    """First in the module: the other tests' session holds both workers' cores while it lives,
    and a second application would wait for them."""
    query = tmp_path / "q.py"
    table = _events(500)
    pq.write_table(table, tmp_path / "events.parquet")
    query.write_text(textwrap.dedent(f"""
        import grizzly_py as gz
        from grizzly_py import Time, agg
        from grizzly_py.windows import TumblingEventTimeWindows

        def query(env):
            return (env.from_parquet({str(tmp_path / "events.parquet")!r}, timestamp="ts").key_by("k")
                    .window(TumblingEventTimeWindows.of(Time.seconds(2))).aggregate(n=agg.count()))
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p))
    run = subprocess.run([sys.executable, "-m", "grizzly_py.cli", "run", f"{query}:query", "--engine", "spark",
                          "--master", cluster.url, "--conf", "spark.executor.cores=1",
                          "--conf", "spark.app.name=grizzly-cli-on-cluster", "--json"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    import json
    metrics = json.loads(run.stdout[run.stdout.index("{"):])
    assert metrics["records_in"] == table.num_rows
    assert metrics["queries"][0]["tasks"] >= 2
    bad = subprocess.run([sys.executable, "-m", "grizzly_py.cli", "run", f"{query}:query", "--master", cluster.url],
                         capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode != 0 and "--engine spark" in bad.stderr


def test_bench_runs_sparks_plans_and_grizzly_py_on_the_cluster(cluster, tmp_path):
    """``grizzly bench --engine spark-cluster``'s peers on this cluster (before the module's
    session takes the cores): Spark's own plan, grizzly-py through ``for_spark`` over Arrow
    tables and over the Parquet copy Spark reads (``from_spark`` of a file scan: the tasks read
    the files) run YSB on the executors and agree with each other and the embedded engine."""
    sys.path.insert(0, os.getcwd())
    from bench import suite

    opts = suite.Options(workloads=["ysb"], peers=["spark", "grizzly_spark", "grizzly_spark_files"], quick=True, repeat=1,
                         out=tmp_path, save=False, plots=False, counters=False, latency=False, progress=False,
                         install=False, log=lambda line: None, spark_master=cluster.url, threads=2,
                         spark_conf={"spark.driver.memory": "2g"})
    result = suite.run_suite(opts)
    [case] = result.workloads[0].cases
    by = case.by_peer()
    assert by["grizzly_spark"].ok and by["spark"].ok, (by["grizzly_spark"].error, by["spark"].error)
    assert by["grizzly_spark_files"].ok, by["grizzly_spark_files"].error
    assert by["grizzly_spark"].info["master"] == cluster.url
    assert by["grizzly_spark"].info["spark_input_by_case"]["-"].endswith("input pushdown")
    assert by["grizzly_spark_files"].info["spark_input_by_case"]["-"].endswith("input files")
    assert case.check.ok and {"spark", "grizzly_spark", "grizzly_spark_files", "grizzly"} <= set(case.check.agreeing), \
        case.check
    assert case.check.reference.groups > 0


def test_a_join_by_key_runs_under_a_python_worker_memory_cap(cluster, tmp_path):
    """Nexmark Q8 (a window join by key, then a window) on the cluster with
    ``spark.executor.pyspark.memory`` (an address-space cap on each Python worker) gives the
    embedded engine's rows. Its own application, in a subprocess, before the module's session
    takes the cores. Without ``worker.fit_to_the_address_space_limit`` glibc's per-thread malloc
    arenas used up the cap and the loader aborted the worker ("cannot allocate memory for
    thread-local data")."""
    script = tmp_path / "q8.py"
    script.write_text(textwrap.dedent(f"""
        import grizzly_py as gz
        from grizzly_py.spark import local_session
        from grizzly_py.workloads import nexmark

        persons, auctions = nexmark.generate_persons(1_000_000), nexmark.generate_auctions(1_000_000)
        expected = nexmark.q8(gz.StreamEnvironment(parallelism=1), persons, auctions).execute_and_collect()
        spark = local_session(2, master={cluster.url!r}, app="grizzly-q8-memory-cap",
                              **{{"spark.executor.cores": "1", "spark.executor.memory": "1g",
                                  "spark.executor.pyspark.memory": "700m", "spark.task.maxFailures": "2"}})
        env = gz.StreamEnvironment.for_spark(spark)
        q = nexmark.q8(env, persons, auctions)
        q.collect("out")
        result = env.execute()
        order = [(c, "ascending") for c in expected.column_names]
        assert result["out"].sort_by(order).equals(expected.sort_by(order)), "Q8 on Spark differs"
        m = result.metrics["queries"][0]
        print("strategy", m["strategy"], "tasks", m["tasks"], "rows", expected.num_rows)
        spark.stop()
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=400)
    assert run.returncode == 0, run.stderr[-3000:]
    words = run.stdout.split()
    assert words[words.index("strategy") + 1] == "keyed-join" and int(words[words.index("rows") + 1]) > 0
    assert int(words[words.index("tasks") + 1]) >= 2


def _events(n=4000, seed=11):
    rng = np.random.default_rng(seed)
    ts = 1_000_000 + np.sort(rng.integers(0, 20 * n, n))
    return pa.table({"ts": pa.array(ts, pa.int64()),
                     "k": pa.array(rng.choice(["a", "b", "c", "d"], n).tolist(), pa.string()),
                     "i": pa.array(rng.integers(-50, 50, n))})


def _embedded(build, table):
    return build(gz.StreamEnvironment().from_arrow(table, timestamp="ts")).execute_and_collect()


def _on_cluster(spark, build, df):
    env = gz.StreamEnvironment.for_spark(spark)
    build(env.from_spark(df, timestamp="ts")).collect("out")
    result = env.execute()
    return result["out"], result.metrics["queries"][0]


STRATEGIES = {
    "stateless": (lambda s: s.with_columns(j=col("i") * 2).select("ts", "k", "j"), "stateless"),
    "partial": (lambda s: s.key_by("k").window(TumblingEventTimeWindows.of(Time.seconds(2)))
                .aggregate(n=agg.count(), total=agg.sum("i"), hi=agg.max("i")), "partial"),
    "keyed": (lambda s: s.key_by("k").window(EventTimeSessionWindows.with_gap(Time.milliseconds(40)))
              .aggregate(n=agg.count(), total=agg.sum("i")), "keyed"),
    "keyed-count": (lambda s: s.key_by("k").count_window(50).aggregate(n=agg.count(), total=agg.sum("i")), "keyed"),
    "whole": (lambda s: s.window_all(EventTimeSessionWindows.with_gap(Time.milliseconds(40))).top_n(3, by="i"),
              "whole"),
    # each task's top rows of a window as partial states, ranked again after the shuffle
    "ranked-partial": (lambda s: s.window_all(TumblingEventTimeWindows.of(Time.seconds(2))).top_n(3, by="i"),
                       "partial"),
    # the DataFrame joined with an Arrow source (read by the tasks), both partitioned by key
    "keyed-join": (lambda s: s.interval_join(s.env.from_arrow(RIGHT, timestamp="ts")).where("k").equal_to("k")
                   .between(Time.milliseconds(-20), Time.milliseconds(20)), "keyed-join"),
    # the DataFrame's and an Arrow source's partial states, by a computed key, in one merge
    "union-partial": (lambda s: s.union(s.env.from_arrow(RIGHT, timestamp="ts")).with_columns(m=col("i") % 3)
                      .key_by("m").window(TumblingEventTimeWindows.of(Time.seconds(2)))
                      .aggregate(n=agg.count(), total=agg.sum("i")), "partial"),
}
STAGES = {"keyed-join": "join"}  # the heavy stage, where it is not named as its strategy
RIGHT = _events(1500, seed=12)


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_strategy_matches_the_embedded_engine_on_a_cluster(spark, tmp_path, name):
    table = _events()
    path = tmp_path / "events.parquet"
    pq.write_table(table, path, row_group_size=500)
    build, strategy = STRATEGIES[name]
    df = spark.read.parquet(str(path))  # count windows count in the file's order, Top-N ties by it
    if name not in ("whole", "keyed-count", "ranked-partial"):
        df = df.repartition(4)  # rows in no order, over more partitions than executors
    actual, q = _on_cluster(spark, build, df)
    expected = _embedded(build, table)
    if name in ("stateless", "keyed-join", "keyed-count"):  # no order across partitions or tasks: as multisets
        actual, expected = (t.sort_by([(c, "ascending") for c in t.column_names]) for t in (actual, expected))
    assert_tables_equal(actual, expected.cast(actual.schema) if expected.schema != actual.schema else expected)
    assert q["strategy"] == strategy
    assert q["records_in"] == table.num_rows + (RIGHT.num_rows if name in ("keyed-join", "union-partial") else 0)
    heavy = [t for t in q["task_reports"] if t["stage"] == STAGES.get(strategy, strategy)]
    assert len(heavy) >= (1 if strategy == "whole" else 2), [t["stage"] for t in q["task_reports"]]
    if strategy != "whole":  # two executors, each with its own Python workers
        assert q["worker_processes"] >= 2


def test_a_window_join_of_two_streams_runs_by_key_group_on_a_cluster(spark, tmp_path):
    """A window join of two streaming DataFrames (one file of each per micro-batch) runs by key
    group on the executors (``keyed+stream``: more than one group gets rows), each group's state
    in Spark's state store; equal to the embedded engine fed the same rounds, with the same late
    records, each input row counted once."""
    from test_spark import (_events as stream_events, _groups_with_rows, _run_stream, _two_streams,
                            _two_streams_embedded, _write_files)

    from grizzly_py.changelog import sorted_rows
    left, right = stream_events(200, seed=31, disorder=400), stream_events(200, seed=32, disorder=400)
    _write_files(tmp_path / "a", left, 50)
    _write_files(tmp_path / "b", right, 50)
    df = _two_streams(spark, tmp_path, "window-join")
    assert df.grizzly.strategy == "keyed+stream"
    _run_stream(df, str(tmp_path / "out"), str(tmp_path / "ck"))
    expected, metrics = _two_streams_embedded("window-join", left, right, 50)
    actual = spark.read.parquet(str(tmp_path / "out")).toArrow().select(expected.schema.names)
    assert expected.num_rows > 0
    assert_tables_equal(sorted_rows(actual), sorted_rows(expected.cast(actual.schema)))
    assert len(_groups_with_rows(df)) > 1
    ran = df.grizzly.metrics()
    assert ran["records_in"] == left.num_rows + right.num_rows
    assert ran["late_records"] == metrics["late_records"] > 0


def _executor_jvm_of(pid: int) -> int | None:
    """The executor JVM (CoarseGrainedExecutorBackend) that is an ancestor of Python worker ``pid``."""
    while pid > 1:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().replace(b"\0", b" ")
            with open(f"/proc/{pid}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            return None
        if b"CoarseGrainedExecutorBackend" in args:
            return pid
        pid = parent
    return None


def test_a_killed_executor_leaves_the_result_and_records_in_exact(spark, cluster, tmp_path):
    table = _events(6000, seed=3)
    path = tmp_path / "events.parquet"
    pq.write_table(table, path, row_group_size=500)
    df_in = spark.read.parquet(str(path)).repartition(4)
    env = gz.StreamEnvironment.for_spark(spark)
    build, _ = STRATEGIES["partial"]
    out = build(env.from_spark(df_in, timestamp="ts",
                               watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.seconds(1)))).to_spark()
    first = pa.Table.from_pylist([r.asDict() for r in out.collect()])
    assert out.grizzly.metrics()["records_in"] == table.num_rows
    mappers = {t["pid"] for t in out.grizzly.task_reports() if t["stage"] == "partial"}
    victim = next(j for j in map(_executor_jvm_of, sorted(mappers)) if j is not None)
    os.kill(victim, signal.SIGKILL)  # its shuffle files die with it (no external shuffle service)
    deadline = time.monotonic() + 60  # the master sees the executor go and the worker starts another
    while time.monotonic() < deadline and cluster.status().get("aliveworkers", 0) < 2:
        time.sleep(0.5)
    second = pa.Table.from_pylist([r.asDict() for r in out.collect()])  # the map outputs it held run again
    order = [("k", "ascending"), ("window_start", "ascending")]
    assert second.sort_by(order).equals(first.sort_by(order))
    reports = [t for t in out.grizzly.task_reports() if t["stage"] == "partial"]
    partitions = [t["partition"] for t in reports]
    assert len(partitions) > len(set(partitions)), \
        "Spark did not re-run a map task: the test did not lose shuffle output"
    assert sum(t["records_in"] for t in reports) > table.num_rows  # the raw reports do double-count
    assert out.grizzly.metrics()["records_in"] == table.num_rows
