"""Nexmark Q7 (the bids at each 10 s window's maximum price) from Parquet on Spark: Spark's own
plan against grizzly-py's partial ranked window (each task keeps its split's rows at the
window's running maximum, one shuffle, a merge that ranks again) and against the strategy the
query took before ranked windows ran as partial states (``whole``: one task), over source
pushdown (``from_parquet``) and over ``from_spark(spark.read.parquet(...))`` (read as files),
with the embedded engine as the baseline.

    python -m bench.spark_ranked --rows 10000000 --runs 5 [--cluster]

``--cluster``: a standalone cluster of 2 workers of 1 core on this machine (as ``grizzly bench
--engine spark-cluster``); else local[2]. One untimed warm-up run per contender, then the runs
interleaved; every contender's rows are checked against the embedded engine's. Besides wall
time, the CPU seconds of this process and every process under it (the driver JVM, the cluster's
daemons, executors and Python workers: ``/proc``), the load average before and after.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time

import pyarrow as pa
import pyarrow.parquet as pq

import grizzly_py as gz
import grizzly_py.spark.planner as planner
from grizzly_py.workloads import nexmark

from .spark_union import bench_arguments, bench_session


def write_bids(directory: str, rows: int) -> str:
    """The Nexmark bids of ``rows`` events as one Parquet file (1M-row row groups)."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"bids_{rows}.parquet")
    if not os.path.exists(path):
        pq.write_table(nexmark.generate_bids(rows, seed=7), path, row_group_size=1_000_000)
    return path


def spark_plan(spark, path: str) -> tuple[pa.Table, str]:
    """Q7 as Spark SQL plans it: the window maximum, joined back to the bids of its window."""
    from pyspark.sql import functions as F
    bids = spark.read.parquet(path).withColumn("w", F.floor(F.col("dateTime") / nexmark.Q7_WINDOW_MS))
    top = bids.groupBy(F.col("w").alias("tw")).agg(F.max("price").alias("maxprice"))
    out = (bids.join(top, (F.col("w") == F.col("tw")) & (F.col("price") == F.col("maxprice")))
           .select(((F.col("w") + 1) * nexmark.Q7_WINDOW_MS).alias("window_end"), "auction", "bidder", "price",
                   "dateTime"))
    return out.toArrow(), "spark"


def grizzly(spark, path: str, files: bool, partial: bool = True) -> tuple[pa.Table, str]:
    saved = planner._ranks_partially
    if not partial:  # the strategy the query took before
        planner._ranks_partially = lambda physical: False
    try:
        env = gz.StreamEnvironment.for_spark(spark)
        bids = env.from_spark(spark.read.parquet(path), timestamp="dateTime") if files else \
            env.from_parquet(path, timestamp="dateTime")
        nexmark.highest_bids(bids).collect("out")
        result = env.execute()
        return result["out"], result.metrics["queries"][0]["strategy"]
    finally:
        planner._ranks_partially = saved


def embedded(path: str) -> tuple[pa.Table, str]:
    env = gz.StreamEnvironment()
    nexmark.highest_bids(env.from_parquet(path, timestamp="dateTime")).collect("out")
    return env.execute()["out"], "embedded"


def tree_cpu_seconds() -> float:
    """User + system CPU seconds of this process and its descendants, live ones and reaped ones."""
    tick = os.sysconf("SC_CLK_TCK")
    stats = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            with contextlib.suppress(OSError):
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                stats[int(pid)] = (int(fields[1]), sum(int(x) for x in fields[11:15]))
    tree, total, todo = set(), 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        if pid in tree or pid not in stats:
            continue
        tree.add(pid)
        total += stats[pid][1]
        todo.extend(p for p, (parent, _) in stats.items() if parent == pid)
    return total / tick


def _rows(table: pa.Table) -> list:
    names = ["window_end", "auction", "bidder", "price", "dateTime"]
    return sorted(tuple(r.values()) for r in table.select(names).cast(
        pa.schema([(n, pa.int64()) for n in names])).to_pylist())


def main(argv=None) -> None:
    args = bench_arguments(__doc__, 10_000_000, "Nexmark events (bids are 92%%)", 5,
                           "/tmp/grizzly-bench-ranked").parse_args(argv)
    path = write_bids(args.data, args.rows)
    with contextlib.ExitStack() as stack:
        spark = bench_session(stack, args.cluster, "bench-ranked", **{"spark.sql.adaptive.enabled": "false"})
        contenders = {
            "Spark's plan": lambda: spark_plan(spark, path),
            "pushdown: partial": lambda: grizzly(spark, path, False),
            "pushdown: before": lambda: grizzly(spark, path, False, False),
            "files: partial": lambda: grizzly(spark, path, True),
            "files: before": lambda: grizzly(spark, path, True, False),
            "embedded engine": lambda: embedded(path),
        }
        load = [os.getloadavg()]
        first = {name: run() for name, run in contenders.items()}  # warm-up (workers, compilation)
        expected = _rows(first["embedded engine"][0])
        for name, (table, _strategy) in first.items():
            assert _rows(table) == expected, name
        wall: dict[str, list[float]] = {name: [] for name in contenders}
        cpu: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.runs):
            for name, run in contenders.items():
                c0, t0 = tree_cpu_seconds(), time.perf_counter()
                run()
                wall[name].append(time.perf_counter() - t0)
                cpu[name].append(tree_cpu_seconds() - c0)
        load.append(os.getloadavg())
    bids = pq.ParquetFile(path).metadata.num_rows
    print(f"Nexmark Q7, {bids:,} bids ({args.rows:,} events), {'2-worker cluster' if args.cluster else 'local[2]'}, "
          f"medians of {args.runs} interleaved after a warm-up, {len(expected)} result rows; load average "
          f"{' '.join(f'{x:.1f}' for x in load[0])} -> {' '.join(f'{x:.1f}' for x in load[1])}")
    spark_median = statistics.median(wall["Spark's plan"])
    print("| contender | strategy | wall median (s) | wall runs (s) | CPU median (s) | Spark's wall ÷ |\n"
          "|---|---|---:|---|---:|---:|")
    for name in contenders:
        median = statistics.median(wall[name])
        print(f"| {name} | {first[name][1]} | {median:.2f} | {', '.join(f'{t:.2f}' for t in wall[name])} "
              f"| {statistics.median(cpu[name]):.2f} | {spark_median / median:.2f} |")


if __name__ == "__main__":
    main()
