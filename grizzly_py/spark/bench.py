"""YSB from Parquet on Spark local[N]: Spark's own plan vs grizzly-py over
``from_spark(spark.read.parquet(...))`` (the tasks reading the files, and forced through
``mapInArrow``) vs grizzly-py with source pushdown (``from_parquet``).

    python -m grizzly_py.spark.bench --rows 30000000 --threads 2

Writes the seeded YSB data (``grizzly_py.workloads.ysb``) to Parquet once (1M-row row groups), starts
one session, then runs each contender's query once to warm up (Python workers, compilation)
and times ``--runs`` rounds of every contender, interleaved (medians reported): read the file,
filter views, count per campaign in 10-second tumbling windows, collect the result to the driver
as Arrow. The results are cross-checked.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

import pyarrow as pa


def spark_native(spark, path: str, view: str, window_ms: int) -> pa.Table:
    from pyspark.sql import functions as F
    events = spark.read.parquet(path)
    out = (events.filter(F.col("event_type") == F.lit(view))
           .groupBy(F.window(F.timestamp_millis(F.col("event_time")), f"{window_ms} milliseconds"),
                    F.col("campaign_id"))
           .count()
           .select(F.col("campaign_id"), F.unix_millis(F.col("window.start")).alias("window_start"),
                   F.col("count").alias("views"))
           .toArrow())
    return out


def ysb(source, window_ms: int):
    from grizzly_py import Time, agg, col
    from grizzly_py.windows import TumblingEventTimeWindows
    return (source.filter(col("event_type") == "view").key_by("campaign_id")
            .window(TumblingEventTimeWindows.of(Time.milliseconds(window_ms))).aggregate(views=agg.count()))


def grizzly_from_spark(spark, path: str, window_ms: int, push_filters: bool = True,
                       read_files: bool = True) -> tuple[pa.Table, dict]:
    import grizzly_py as gz
    from grizzly_py.physical import build_physical_plan
    from grizzly_py.plan import Query
    from grizzly_py.spark.planner import collect, pipeline_arrow_schema, to_spark
    env = gz.StreamEnvironment.for_spark(spark)
    q = ysb(env.from_spark(spark.read.parquet(path), timestamp="event_time"), window_ms)
    df = to_spark(q.node, spark, push_filters=push_filters, read_files=read_files)
    table = collect(df, pipeline_arrow_schema(build_physical_plan(Query(q.node)).pipelines[-1]))
    return table, {"queries": [df.grizzly.metrics()]}


def grizzly_pushdown(spark, path: str, window_ms: int) -> tuple[pa.Table, dict]:
    import grizzly_py as gz
    env = gz.StreamEnvironment.for_spark(spark)
    ysb(env.from_parquet(path, timestamp="event_time"), window_ms).collect("out")
    result = env.execute()
    return result["out"], result.metrics


def canonical(table: pa.Table) -> list[tuple]:
    ws = table.column("window_start")
    if pa.types.is_timestamp(ws.type):
        ws = ws.cast(pa.int64())
    t = pa.table({"c": table.column("campaign_id"), "w": ws, "v": table.column("views")})
    t = t.sort_by([("w", "ascending"), ("c", "ascending")])
    return list(zip(t.column("c").to_pylist(), t.column("w").to_pylist(), t.column("v").to_pylist()))


def main(argv=None) -> dict:
    from grizzly_py.spark.session import local_session
    from grizzly_py.workloads.ysb import VIEW, WINDOW_MS, generate_ysb, write_parquet

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=30_000_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=1, help="timed runs per contender (after one warm-up)")
    ap.add_argument("--campaigns", type=int, default=10_000)
    ap.add_argument("--dir", default=None, help="where to write the Parquet file (default: a temp dir)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    directory = args.dir or tempfile.mkdtemp(prefix="grizzly-ysb-")
    path = os.path.join(directory, f"ysb-{args.rows}.parquet")
    if not os.path.exists(path):
        start = time.perf_counter()
        write_parquet(generate_ysb(args.rows, seed=42, n_campaigns=args.campaigns), path, row_group_rows=1 << 20)
        print(f"wrote {path} in {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    spark = local_session(args.threads, app="grizzly-ysb-bench", **{"spark.driver.memory": "4g"})
    print(f"Spark {spark.version} local[{args.threads}] session in {time.perf_counter() - start:.1f} s")

    contenders = {
        "spark": lambda: (spark_native(spark, path, VIEW, WINDOW_MS), {}),
        "grizzly from_spark, files": lambda: grizzly_from_spark(spark, path, WINDOW_MS),
        "grizzly mapInArrow": lambda: grizzly_from_spark(spark, path, WINDOW_MS, read_files=False),
        "grizzly mapInArrow, no filter pushdown": lambda: grizzly_from_spark(spark, path, WINDOW_MS, False, False),
        "grizzly pushdown": lambda: grizzly_pushdown(spark, path, WINDOW_MS),
    }
    report = {"rows": args.rows, "threads": args.threads, "spark": spark.version, "runs": {}}
    results = {}
    cold, times, tables, tasks = {}, {name: [] for name in contenders}, {}, {}
    for name, run in contenders.items():  # warm-up: JVM code, Python workers, compiled plans
        start = time.perf_counter()
        run()
        cold[name] = time.perf_counter() - start
    for _ in range(args.runs):  # interleaved: a slow spell of the machine hits every contender
        for name, run in contenders.items():
            start = time.perf_counter()
            tables[name], metrics = run()
            times[name].append(time.perf_counter() - start)
            tasks[name] = metrics.get("queries", [{}])[0].get("tasks")
    for name in contenders:
        median = statistics.median(times[name])
        results[name] = canonical(tables[name])
        report["runs"][name] = {"first_run_s": round(cold[name], 3), "seconds": [round(t, 3) for t in times[name]],
                                "median_s": round(median, 3), "records_per_s": round(args.rows / median),
                                "result_rows": tables[name].num_rows, "tasks": tasks[name]}
        print(f"{name:40} first run {cold[name]:7.3f} s, timed {', '.join(f'{t:.3f}' for t in times[name])} s, "
              f"median {args.rows / median / 1e6:7.2f} M records/s ({tables[name].num_rows} result rows)")
    reference = results["spark"]
    for name, rows in results.items():
        if rows != reference:
            raise SystemExit(f"{name}: result differs from Spark's ({len(rows)} vs {len(reference)} rows)")
    base = report["runs"]["spark"]["median_s"]
    for name in [n for n in contenders if n != "spark"]:
        ratio = base / report["runs"][name]["median_s"]
        report["runs"][name]["speedup_vs_spark"] = round(ratio, 2)
        print(f"{name}: {ratio:.2f}x Spark's own plan")
    print("results agree")
    spark.stop()
    if args.json:
        print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
