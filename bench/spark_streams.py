"""A window join of two streaming DataFrames (Parquet file sources, one file of each per
micro-batch) on Spark Structured Streaming: by key group (``keyed+stream``: each group's state
in Spark's state store, the groups in parallel tasks) against one group (``sequential+stream``,
the strategy such a query took before: one task per micro-batch).

    python -m bench.spark_streams --rows 200000 --files 8 --runs 3

On local[2] (``--cluster``: a standalone cluster of 2 one-core workers). Each run writes to a
fresh checkpoint and output (``trigger(availableNow=True)``); one untimed warm-up run per
contender, then the runs interleaved; every contender's rows are checked against the first's.
Reported: the run's wall time, the median of its micro-batches' ``triggerExecution`` times
(Spark's progress), and the CPU seconds of this process and every process under it (driver JVM,
Python workers: ``/proc``), with the load average before and after.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import grizzly_py as gz
import grizzly_py.spark.planner as planner
from grizzly_py import Time, WatermarkStrategy, col
from grizzly_py.windows import TumblingEventTimeWindows

from .spark_ranked import tree_cpu_seconds
from .spark_union import bench_arguments, bench_session

BOUND = WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(500))
KEYS = 10_000


def write_streams(directory: str, rows: int, files: int) -> list[str]:
    """Two streams of ``rows`` rows each (``KEYS`` keys, event times about 1 ms apart with 200 ms
    of disorder) as ``files`` Parquet files each, in modification order."""
    paths = []
    for side in (0, 1):
        path = os.path.join(directory, f"{rows}_{files}", "ab"[side])
        paths.append(path)
        if os.path.isdir(path):
            continue
        os.makedirs(path)
        rng = np.random.default_rng(side)
        ts = 1_000_000 + np.arange(rows) + rng.integers(-200, 201, rows)
        table = pa.table({"ts": pa.array(ts, pa.int64()), "k": pa.array(rng.integers(0, KEYS, rows), pa.int64()),
                          "v": pa.array(rng.integers(0, 1000, rows), pa.int64())})
        for i, batch in enumerate(table.to_batches(max_chunksize=-(-rows // files))):
            name = os.path.join(path, f"part-{i:04d}.parquet")
            pq.write_table(pa.Table.from_batches([batch]), name)
            os.utime(name, (1_000_000 + i,) * 2)
    return paths


def window_join(spark, paths: list[str]):
    env = gz.StreamEnvironment.for_spark(spark)
    a, b = (env.from_spark(spark.readStream.schema(spark.read.parquet(p).schema).option("maxFilesPerTrigger", 1)
                           .parquet(p), timestamp="ts", watermark=BOUND) for p in paths)
    return a.join(b.select(col("k").alias("k2"), col("v").alias("v2"), col("ts").alias("ts2"))) \
        .where("k").equal_to("k2").window(TumblingEventTimeWindows.of(Time.seconds(1))).select("k", "v", "v2")


def run(spark, paths: list[str], work: str, by_key: bool) -> tuple[list, str, list[float]]:
    """One run from a fresh checkpoint: the output rows (sorted), the strategy and each
    micro-batch's trigger time (s)."""
    saved = planner.stream_key_columns
    if not by_key:  # the strategy the query took before
        planner.stream_key_columns = lambda root, physical: None
    try:
        df = window_join(spark, paths).to_spark()
    finally:
        planner.stream_key_columns = saved
    shutil.rmtree(work, ignore_errors=True)
    q = df.writeStream.format("parquet").option("path", f"{work}/out").option("checkpointLocation", f"{work}/ck") \
        .outputMode("append").trigger(availableNow=True).start()
    q.awaitTermination()
    batches = [p["durationMs"]["triggerExecution"] / 1000 for p in q.recentProgress if p["numInputRows"]]
    rows = sorted(tuple(r.values()) for r in spark.read.parquet(f"{work}/out").toArrow().to_pylist())
    return rows, df.grizzly.strategy, batches


def main(argv=None) -> None:
    ap = bench_arguments(__doc__, 200_000, "rows per stream", 3, "/tmp/grizzly-bench-streams")
    ap.add_argument("--files", type=int, default=8, help="files per stream: micro-batches")
    args = ap.parse_args(argv)
    paths = write_streams(args.data, args.rows, args.files)
    with contextlib.ExitStack() as stack:
        spark = bench_session(stack, args.cluster, "bench-streams")
        contenders = {"by key group": True, "one group (before)": False}
        load = [os.getloadavg()]
        first = {name: run(spark, paths, f"{args.data}/run", by_key) for name, by_key in contenders.items()}
        expected = first["one group (before)"][0]
        for name, (rows, _strategy, _batches) in first.items():
            assert rows == expected, name
        wall = {name: [] for name in contenders}
        cpu = {name: [] for name in contenders}
        per_batch = {name: [] for name in contenders}
        for _ in range(args.runs):
            for name, by_key in contenders.items():
                c0, t0 = tree_cpu_seconds(), time.perf_counter()
                _rows, _strategy, batches = run(spark, paths, f"{args.data}/run", by_key)
                wall[name].append(time.perf_counter() - t0)
                cpu[name].append(tree_cpu_seconds() - c0)
                per_batch[name].extend(batches)
        load.append(os.getloadavg())
        groups = spark.conf.get("spark.sql.shuffle.partitions")
    print(f"window join of two streams, {args.rows:,} rows each in {args.files} micro-batches, {KEYS:,} keys, "
          f"{'2-worker cluster' if args.cluster else 'local[2]'}, {groups} key groups, medians of {args.runs} "
          f"interleaved after a warm-up, {len(expected):,} result rows; load average "
          f"{' '.join(f'{x:.1f}' for x in load[0])} -> {' '.join(f'{x:.1f}' for x in load[1])}")
    print("| contender | strategy | run wall median (s) | runs (s) | micro-batch median (s) | CPU median (s) |\n"
          "|---|---|---:|---|---:|---:|")
    for name in contenders:
        print(f"| {name} | {first[name][1]} | {statistics.median(wall[name]):.2f} | "
              f"{', '.join(f'{t:.2f}' for t in wall[name])} | {statistics.median(per_batch[name]):.2f} | "
              f"{statistics.median(cpu[name]):.2f} |")


if __name__ == "__main__":
    main()
