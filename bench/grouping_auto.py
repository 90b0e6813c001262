"""``grouping="auto"`` against fixed hash and sort grouping on a stream of many windows: does the
adaptive controller end up on the faster grouping, and what does finding it cost?

    python -m bench.grouping_auto                  # 8 windows of 1.5M records, 10K and 1M keys
    python -m bench.grouping_auto --windows 4 --rows-per-window 200000 --keys 100,50000 --min-keys 1000

Each window (1 s tumbling, event time) holds ``--rows-per-window`` records whose key is uniform
over ``K`` values, for each ``K`` of ``--keys``; the query is ``count()`` + ``median(v)`` per key
(a holistic aggregate: the measured crossing point is ~210K distinct keys per window,
``docs/benchmarks.md``). Each grouping runs once untimed (compile) and ``--repeat`` times; the
median end-to-end time counts. ``auto`` starts with hash tables and switches after the first
fired windows when they say so (``engine/regrouping.py``); its switches are reported. Results
of the three must be equal. Output: ``grouping-auto-<date>-<time>.{md,json}`` in ``--out``
(default: ``output.default_results_dir()``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import grizzly_py as gz
from grizzly_py import Time, agg, col
from grizzly_py.engine.adaptive import AdaptiveSettings
from grizzly_py.windows import TumblingEventTimeWindows

from .output import default_results_dir
from .host import describe_host, load_average

GROUPINGS = ("hash", "sort", "auto")


def records(windows: int, per_window: int, keys: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = windows * per_window
    return pa.table({"ts": (np.arange(n) * 1000) // per_window,   # 1 s of event time per window
                     "k": rng.integers(0, keys, n), "v": rng.integers(0, 10_000, n)})


def run_query(batches, grouping: str, adaptive) -> tuple[float, pa.Table, list]:
    env = gz.StreamEnvironment(grouping=grouping, adaptive=adaptive)
    (env.from_arrow(batches, timestamp="ts").key_by("k").window(TumblingEventTimeWindows.of(Time.seconds(1)))
     .aggregate(n=agg.count(), m=agg.median(col("v"))).collect("out"))
    start = time.perf_counter()
    result = env.execute()
    seconds = time.perf_counter() - start
    history = result.metrics["queries"][0]["pipelines"][0].get("layout_history", [])
    return seconds, result["out"], history


def measure(windows: int, per_window: int, key_counts: list[int], repeat: int, batch_rows: int = 1 << 16,
            min_keys: int | None = None, background: bool = True) -> list[dict]:
    """One point per key count: the three groupings' median times and rates, auto's switches,
    auto's rate over the better fixed grouping's, and whether all three results were equal.
    ``background=False`` builds auto's other kernel on the driver's thread (deterministic switches
    for tests; the benchmark builds it in the background as jobs do)."""
    adaptive = AdaptiveSettings(sort_min_distinct_keys=min_keys, sort_min_distinct_keys_holistic=min_keys,
                                regroup_in_background=background)
    points = []
    for keys in key_counts:
        table = records(windows, per_window, keys)
        batches = table.to_batches(max_chunksize=batch_rows)
        point = {"keys": keys, "records": table.num_rows}
        outputs = {}
        for grouping in GROUPINGS:
            run_query(batches[:2], grouping, adaptive)  # compile (machine code is cached in-process)
            times, history = [], []
            for _ in range(repeat):
                seconds, outputs[grouping], history = run_query(batches, grouping, adaptive)
                times.append(seconds)
            point[f"{grouping}_s"] = statistics.median(times)
            point[f"{grouping}_mrec_s"] = round(table.num_rows / point[f"{grouping}_s"] / 1e6, 2)
            if grouping == "auto":
                point["auto_switches"] = [{k: h[k] for k in ("grouping", "boundary", "distinct_keys", "at_s")}
                                          for h in history[1:]]
        point["distinct_per_window"] = round(outputs["hash"].num_rows / windows)
        point["equal"] = outputs["hash"].equals(outputs["sort"]) and outputs["hash"].equals(outputs["auto"])
        point["auto_vs_best"] = round(min(point["hash_s"], point["sort_s"]) / point["auto_s"], 3)
        points.append(point)
        print(f"{keys:>10,} keys (~{point['distinct_per_window']:,} distinct/window): hash {point['hash_mrec_s']:6.2f} "
              f"sort {point['sort_mrec_s']:6.2f} auto {point['auto_mrec_s']:6.2f} Mrec/s (auto / best "
              f"{point['auto_vs_best']:.2f}x; switches {point['auto_switches']})"
              f"{'' if point['equal'] else '  RESULTS DIFFER'}", flush=True)
    return points


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--windows", type=int, default=8)
    p.add_argument("--rows-per-window", type=int, default=1_500_000)
    p.add_argument("--keys", default="10000,1000000")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--batch-rows", type=int, default=1 << 16)
    p.add_argument("--min-keys", type=int, default=None,
                   help="crossing point in distinct keys per window (default: the measured ones)")
    p.add_argument("--out", default=str(default_results_dir()))
    p.add_argument("--no-save", action="store_true")
    args = p.parse_args(argv)
    points = measure(args.windows, args.rows_per_window, [int(k) for k in args.keys.split(",")], args.repeat,
                     args.batch_rows, args.min_keys)
    doc = {"benchmark": "grouping-auto", "args": vars(args), "host": describe_host(),
           "load_average": load_average(), "results": points}
    if not args.no_save:
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d-%H%M%S")
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / f"grouping-auto-{stamp}.json").write_text(json.dumps(doc, indent=2))
        (out / f"grouping-auto-{stamp}.md").write_text(markdown(doc))
        print(f"wrote {out / f'grouping-auto-{stamp}.md'}")
    return 0 if all(pt["equal"] for pt in points) else 2


def markdown(doc: dict) -> str:
    a = doc["args"]
    lines = [f"# grouping='auto' vs fixed groupings ({a['windows']} windows x {a['rows_per_window']:,} records, "
             f"count + median, median of {a['repeat']} runs)", "",
             f"Load average at the end: {doc['load_average']} (shared machine: read the ratios).", "",
             "| keys | distinct / window | hash Mrec/s | sort Mrec/s | auto Mrec/s | auto / best | auto's switches | equal |",
             "|---:|---:|---:|---:|---:|---:|---|---|"]
    for pt in doc["results"]:
        switches = "; ".join(f"{s['grouping']} from {s['boundary']:,} ms ({s['distinct_keys']:,} keys)"
                             for s in pt["auto_switches"]) or "none"
        lines.append(f"| {pt['keys']:,} | {pt['distinct_per_window']:,} | {pt['hash_mrec_s']} | {pt['sort_mrec_s']} "
                     f"| {pt['auto_mrec_s']} | {pt['auto_vs_best']}x | {switches} | {'yes' if pt['equal'] else 'NO'} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
