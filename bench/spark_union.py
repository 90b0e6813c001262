"""A union of two Parquet sources, then a tumbling count (by a column, and ``window_all``), on Spark:
Spark's own plan against grizzly-py's partial strategy (each input pre-aggregates, one merge)
and against the strategy the query took before unions ran as partial states (``keyed-join`` by
the key, ``whole`` for the global window), with the embedded engine as the baseline.

    python -m bench.spark_union --rows 5000000 --runs 3 [--cluster]

``--cluster``: a standalone cluster of 2 workers of 1 core on this machine (as ``grizzly bench
--engine spark-cluster``); else local[2]. One untimed warm-up run per contender, then the runs
interleaved; every contender's row count is checked against the embedded engine's.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import grizzly_py as gz
import grizzly_py.spark.planner as planner
from grizzly_py import Time, agg
from grizzly_py.windows import TumblingEventTimeWindows

WINDOW_MS = 10_000


def write_inputs(directory: str, rows: int) -> list[str]:
    """Two Parquet files of ``rows`` events each (ts in ms, 100 keys, 250K-row row groups)."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for i in range(2):
        path = os.path.join(directory, f"union{i}_{rows}.parquet")
        if not os.path.exists(path):
            rng = np.random.default_rng(i)
            ts = np.sort(rng.integers(0, rows, rows)) + 1_600_000_000_000
            pq.write_table(pa.table({"ts": pa.array(ts, pa.int64()), "k": pa.array(rng.integers(0, 100, rows)),
                                     "v": pa.array(rng.integers(0, 1000, rows))}), path, row_group_size=250_000)
        paths.append(path)
    return paths


def query(env, paths: list[str], keyed: bool):
    u = env.from_parquet(paths[0], timestamp="ts").union(env.from_parquet(paths[1], timestamp="ts"))
    window = TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS))
    return (u.key_by("k").window(window) if keyed else u.window_all(window)).aggregate(n=agg.count())


def spark_plan(spark, paths: list[str], keyed: bool) -> tuple[int, str]:
    from pyspark.sql import functions as F
    df = spark.read.parquet(paths[0]).union(spark.read.parquet(paths[1]))
    by = [F.window(F.timestamp_millis(F.col("ts")), f"{WINDOW_MS // 1000} seconds")] + ([F.col("k")] if keyed else [])
    return df.groupBy(*by).count().toArrow().num_rows, "spark"


def grizzly(spark, paths: list[str], keyed: bool, union_partials: bool = True) -> tuple[int, str]:
    saved = planner.union_window
    if not union_partials:  # the strategies the query took before
        planner.union_window = lambda root: None
    try:
        env = gz.StreamEnvironment.for_spark(spark)
        query(env, paths, keyed).collect("out")
        result = env.execute()
        return result["out"].num_rows, result.metrics["queries"][0]["strategy"]
    finally:
        planner.union_window = saved


def embedded(paths: list[str], keyed: bool) -> tuple[int, str]:
    env = gz.StreamEnvironment()
    query(env, paths, keyed).collect("out")
    return env.execute()["out"].num_rows, "embedded"


def bench_arguments(doc: str, rows: int, rows_help: str, runs: int, data: str) -> argparse.ArgumentParser:
    """The options of a Spark bench: ``--rows``, ``--runs``, ``--cluster`` (``bench_session``), ``--data``."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--rows", type=int, default=rows, help=rows_help)
    ap.add_argument("--runs", type=int, default=runs)
    ap.add_argument("--cluster", action="store_true", help="a standalone cluster of 2 one-core workers")
    ap.add_argument("--data", default=data, help="where the input files are written (kept for later runs)")
    return ap


def bench_session(stack: contextlib.ExitStack, cluster: bool, app: str, **conf):
    """A Spark session for a bench, stopped with ``stack``: on a standalone cluster of 2 workers of
    1 core started here (``cluster``), as ``grizzly bench --engine spark-cluster`` runs, else on
    local[2]; ``conf``: more settings."""
    from grizzly_py.spark import local_session
    from grizzly_py.spark.cluster import StandaloneCluster
    master = None
    if cluster:
        master = stack.enter_context(StandaloneCluster(workers=2, cores=1, memory="2g")).url
        conf = {"spark.executor.cores": "1", "spark.executor.memory": "1g", **conf}
    spark = local_session(2, master=master, app=app, **conf) if master else local_session(2, app=app, **conf)
    stack.callback(spark.stop)
    return spark


def main(argv=None) -> None:
    args = bench_arguments(__doc__, 5_000_000, "rows per source", 3, "/tmp/grizzly-bench-union").parse_args(argv)
    paths = write_inputs(args.data, args.rows)
    with contextlib.ExitStack() as stack:
        spark = bench_session(stack, args.cluster, "bench-union")
        contenders = {}
        for keyed in (True, False):
            tag = "by key" if keyed else "window_all"
            contenders[f"{tag}: Spark's plan"] = lambda keyed=keyed: spark_plan(spark, paths, keyed)
            contenders[f"{tag}: grizzly-py partial"] = lambda keyed=keyed: grizzly(spark, paths, keyed)
            contenders[f"{tag}: grizzly-py before"] = lambda keyed=keyed: grizzly(spark, paths, keyed, False)
            contenders[f"{tag}: embedded engine"] = lambda keyed=keyed: embedded(paths, keyed)
        load = [os.getloadavg()[0]]
        first = {name: run() for name, run in contenders.items()}  # warm-up (workers, compilation)
        for name, (rows, _strategy) in first.items():
            baseline = first[name.split(":")[0] + ": embedded engine"][0]
            assert rows == baseline, (name, rows, baseline)
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.runs):
            for name, run in contenders.items():
                start = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - start)
        load.append(os.getloadavg()[0])
    print(f"{2 * args.rows:,} rows ({args.rows:,} per source), {'2-worker cluster' if args.cluster else 'local[2]'}, "
          f"medians of {args.runs}, load average {load[0]:.1f} -> {load[1]:.1f}")
    print("| contender | strategy | median (s) | runs (s) | ÷ Spark's plan |\n|---|---|---:|---|---:|")
    for name in contenders:
        spark_median = statistics.median(times[name.split(":")[0] + ": Spark's plan"])
        median = statistics.median(times[name])
        print(f"| {name} | {first[name][1]} | {median:.2f} | {', '.join(f'{t:.2f}' for t in times[name])} "
              f"| {spark_median / median:.2f} |")


if __name__ == "__main__":
    main()
