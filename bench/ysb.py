"""YSB benchmark runner: grizzly-py against its peers on the same in-memory data.

    python -m bench.ysb --rows 60000000 --repeat 5 --peers c,c_dense,numpy,polars,duckdb,spark,grizzly

Scaling from one to two threads, against hand-written C with OpenMP:

    python -m bench.ysb --peers grizzly_p1,grizzly,c,c_omp,c_dense,c_dense_omp --parallelism 2 --threads 2

Against the memory-bandwidth ceiling (C loops that only stream the three columns, 1 and 2 threads):

    python -m bench.ysb --peers grizzly_p1,grizzly,c_stream,c_stream_omp --parallelism 2 --threads 2

Generates the YSB data once (``bench/ysb_data.py``), runs each peer ``--repeat`` times on it
(interleaved: one run of every peer per round, each peer in a forked child of its own),
cross-checks their results (total count, number of (window, key) groups, and an
order-independent fingerprint of the rows), prints a table and writes Markdown + JSON to
``bench/results/ysb-<date>-<time>.{md,json}``. Exit status 2 if peers disagree.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time

from . import report
from .harness import add_common_arguments, check_common_arguments, cross_check, run_interleaved
from .host import describe_host, load_average
from .peers.ysb_c import CPeer
from .peers.ysb_duckdb import DuckDBPeer
from .peers.ysb_grizzly import GrizzlyPeer
from .peers.ysb_numpy import NumpyPeer
from .peers.ysb_omp import OmpPeer
from .peers.ysb_polars import PolarsPeer
from .peers.ysb_spark import SparkPeer
from .peers.ysb_stream import StreamCeilingPeer
from .ysb_data import WINDOW_MS, YsbData, generate_ysb

PEERS = {
    "c": lambda args: CPeer("hash"),
    "c_dense": lambda args: CPeer("dense"),
    "numpy": lambda args: NumpyPeer(),
    "polars": lambda args: PolarsPeer(args.threads),
    "duckdb": lambda args: DuckDBPeer(args.threads),
    "spark": lambda args: SparkPeer(args.threads),
    "grizzly": lambda args: GrizzlyPeer(args.parallelism),
    # scaling (issue 4): one thread against --parallelism / --threads threads
    "grizzly_p1": lambda args: GrizzlyPeer(1, name="grizzly_p1"),
    # adaptive compilation (issue 5): the generic variant alone
    "grizzly_generic": lambda args: GrizzlyPeer(args.parallelism, name="grizzly_generic", adaptive=False),
    "grizzly_generic_p1": lambda args: GrizzlyPeer(1, name="grizzly_generic_p1", adaptive=False),
    "c_omp": lambda args: OmpPeer("hash", args.threads),
    "c_dense_omp": lambda args: OmpPeer("dense", args.threads),
    # the bandwidth ceiling (issue 31): stream the three columns, compute nothing
    "c_stream": lambda args: StreamCeilingPeer(1),
    "c_stream_omp": lambda args: StreamCeilingPeer(args.threads),
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="YSB: grizzly-py vs peers (records/s, ratios).")
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--repeat", type=int, default=5)
    add_common_arguments(p, PEERS, os.cpu_count() or 1)
    args = p.parse_args(argv)
    check_common_arguments(p, args, PEERS)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    load_at_start = load_average()
    print(f"generating {args.rows:,} YSB rows (seed {args.seed}, {args.campaigns:,} campaigns, "
          f"{'int-coded' if args.int_coded else 'dictionary'} event_type) ...")
    start = time.perf_counter()
    table = generate_ysb(args.rows, args.seed, args.campaigns, args.batch_rows, args.int_coded)
    data = YsbData(table, args.campaigns, args.int_coded)
    gen_s = time.perf_counter() - start
    print(f"  {gen_s:.1f} s, {table.nbytes / 2**30:.2f} GiB in {table.column(0).num_chunks} batches")

    peers = [PEERS[name](args) for name in args.peers]
    results = []
    try:
        if any(peer.needs_parquet for peer in peers):
            print(f"writing Parquet: {data.parquet_path()} ({data.parquet_write_s:.1f} s)")
        # round by round: every peer runs once per round, so the host's drift reaches all alike
        results = run_interleaved(peers, data, args.rows, args.repeat, in_process=args.in_process)
        for result in results:
            if not result.ok:
                print(f"  {result.name}: {result.status}: {result.error}")
    finally:
        data.cleanup()

    check = cross_check(results)
    title = f"YSB, {args.rows:,} rows, median of {args.repeat}"
    print()
    report.print_table(title, results, check)
    if not args.no_save:
        config = {
            "workload": "ysb: filter event_type == view, key campaign_id, "
                        f"{WINDOW_MS // 1000} s tumbling event-time window, count",
            "rows": args.rows, "repeat": args.repeat, "seed": args.seed,
            "campaigns": args.campaigns, "batch_rows": args.batch_rows,
            "event_type": "int32 codes" if args.int_coded else "dictionary<int32, string>",
            "threads (polars, duckdb, spark)": args.threads,
            "grizzly parallelism": args.parallelism,
            "isolation": ("in process" if args.in_process else "one forked child process per peer")
                         + ", runs interleaved: one run of every peer per round",
            "data": f"{table.nbytes / 2**30:.2f} GiB in memory, generated in {gen_s:.1f} s",
            "parquet write s (spark input)": (round(data.parquet_write_s, 2)
                                              if data.parquet_write_s else None),
            "load average at start (1/5/15 min)": load_at_start,
            "date": dt.datetime.now().isoformat(timespec="seconds"),
        }
        stem = "ysb-" + dt.datetime.now().strftime("%Y-%m-%d-%H%M%S")
        paths = report.write(args.out, stem, title, config, describe_host(), results, check)
        print("wrote " + ", ".join(str(p) for p in paths))
    return 0 if check.ok else 2


if __name__ == "__main__":
    sys.exit(main())
