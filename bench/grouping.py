"""Hash vs sort grouping (StreamBox-HBM figure 2 setting): window aggregation throughput of
grizzly-py's two groupings over 100 to 10M distinct keys, and the crossing point.

    python -m bench.grouping                       # 10M records, keys 100 .. 10M, 3 runs each
    python -m bench.grouping --rows 2000000 --keys 100,10000,1000000 --repeat 5

Records are YSB-like (event time, event type, campaign id, ad id, price); the query keeps the
views (a fused filter, a third of the records), groups them by campaign id with ``D`` distinct
values in one 10 s tumbling window (the state holds every key until the window fires), and
computes ``count()`` (decomposable) or ``count()`` plus ``median(price)`` (holistic). Each
(keys, query, grouping) runs once untimed (JIT compile; compiled modules are cached in-process)
and then ``--repeat`` times; the median end-to-end time (ingest, fire, output table) counts.
Results (both groupings must give equal tables) go to ``grouping-<date>-<time>.{md,json}`` in
``--out`` (default: ``output.default_results_dir()``) and the plot to
``docs/img/grouping-hash-vs-sort.png``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import grizzly_py as gz
from grizzly_py import Time, agg, col
from grizzly_py.windows import TumblingEventTimeWindows

from .output import default_results_dir
from .host import describe_host, load_average

ROOT = Path(__file__).resolve().parent.parent
QUERIES = {"count": lambda: dict(n=agg.count()),
           "count+median": lambda: dict(n=agg.count(), m=agg.median(col("price")))}


def records(rows: int, keys: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    types = pa.array(["view", "click", "purchase"]).dictionary_encode()
    return pa.table({
        "event_time": np.sort(rng.integers(0, 10_000, rows)),
        "event_type": pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, 3, rows).astype(np.int32)),
                                                     types.dictionary),
        "campaign_id": rng.integers(0, keys, rows),
        "ad_id": rng.integers(0, 1 << 40, rows),
        "price": rng.integers(0, 10_000, rows),
    })


def run_query(batches, query: str, grouping: str) -> tuple[float, pa.Table]:
    env = gz.StreamEnvironment(grouping=grouping)
    (env.from_arrow(batches, timestamp="event_time").filter(col("event_type") == "view")
     .key_by("campaign_id").window(TumblingEventTimeWindows.of(Time.seconds(10)))
     .aggregate(**QUERIES[query]()).collect("out"))
    start = time.perf_counter()
    result = env.execute()
    return time.perf_counter() - start, result["out"]


def crossing(points: list[dict]) -> float | None:
    """The distinct-key count where sort becomes faster than hash (log-linear interpolation of
    the time ratio between the last point where hash wins and the first where sort wins)."""
    for a, b in zip(points, points[1:]):
        ra, rb = a["sort_s"] / a["hash_s"], b["sort_s"] / b["hash_s"]
        if ra >= 1 > rb:
            fa, fb = math.log(a["distinct"]), math.log(b["distinct"])
            return round(math.exp(fa + (fb - fa) * (math.log(ra) / (math.log(ra) - math.log(rb)))))
    if points and points[0]["sort_s"] < points[0]["hash_s"]:
        return points[0]["distinct"]
    return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--keys", default="100,1000,10000,100000,1000000,10000000")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--batch-rows", type=int, default=1 << 16)
    p.add_argument("--out", default=str(default_results_dir()))
    p.add_argument("--plot", default=str(ROOT / "docs" / "img" / "grouping-hash-vs-sort.png"))
    args = p.parse_args(argv)
    key_counts = [int(k) for k in args.keys.split(",")]
    results = {q: [] for q in QUERIES}
    for keys in key_counts:
        table = records(args.rows, keys)
        batches = table.to_batches(max_chunksize=args.batch_rows)
        views = int(pa.compute.sum(pa.compute.equal(table["event_type"].cast(pa.string()), "view")).as_py())
        for query in QUERIES:
            point = {"keys": keys, "records": args.rows, "views": views}
            tables = {}
            for grouping in ("hash", "sort"):
                run_query(batches[:2], query, grouping)  # compile (cached for the timed runs)
                times = []
                for _ in range(args.repeat):
                    seconds, out = run_query(batches, query, grouping)
                    times.append(seconds)
                tables[grouping] = out
                point[f"{grouping}_s"] = statistics.median(times)
                point[f"{grouping}_runs_s"] = [round(t, 4) for t in times]
                point[f"{grouping}_mrec_s"] = round(args.rows / point[f"{grouping}_s"] / 1e6, 2)
            point["distinct"] = tables["hash"].num_rows
            point["equal"] = tables["hash"].equals(tables["sort"])
            point["sort_over_hash"] = round(point["hash_s"] / point["sort_s"], 3)
            results[query].append(point)
            print(f"{keys:>10,} keys ({point['distinct']:,} distinct) {query:>13}: hash {point['hash_mrec_s']:7.2f} "
                  f"sort {point['sort_mrec_s']:7.2f} Mrec/s  sort/hash speed {point['sort_over_hash']:.2f}x"
                  f"{'' if point['equal'] else '  RESULTS DIFFER'}", flush=True)
    summary = {q: crossing(points) for q, points in results.items()}
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d-%H%M%S")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    doc = {"benchmark": "grouping", "args": vars(args), "host": describe_host(), "load_average": load_average(),
           "crossing_distinct_keys": summary, "results": results}
    (out / f"grouping-{stamp}.json").write_text(json.dumps(doc, indent=2))
    (out / f"grouping-{stamp}.md").write_text(markdown(doc))
    plot(results, summary, args.plot)
    print(f"crossing point (distinct keys): {summary}")
    print(f"wrote {out / f'grouping-{stamp}.md'} and {args.plot}")
    return 0 if all(pt["equal"] for pts in results.values() for pt in pts) else 2


def markdown(doc: dict) -> str:
    args = doc["args"]
    lines = [f"# Hash vs sort grouping ({args['rows']:,} records, median of {args['repeat']} runs)", "",
             f"Load average at the end: {doc['load_average']} (the machine was shared: medians, ratios).", "",
             "| query | keys | distinct | hash Mrec/s | sort Mrec/s | sort speed / hash | equal |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for query, points in doc["results"].items():
        for pt in points:
            lines.append(f"| {query} | {pt['keys']:,} | {pt['distinct']:,} | {pt['hash_mrec_s']} | {pt['sort_mrec_s']} "
                         f"| {pt['sort_over_hash']}x | {'yes' if pt['equal'] else 'NO'} |")
    lines += ["", "Crossing point (distinct keys per window where sort becomes faster):"]
    lines += [f"- {q}: {c:,}" if c else f"- {q}: none in the range" for q, c in doc["crossing_distinct_keys"].items()]
    return "\n".join(lines) + "\n"


def plot(results: dict, summary: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    for (query, points), color in zip(results.items(), ("tab:blue", "tab:red")):
        x = [pt["distinct"] for pt in points]
        ax.plot(x, [pt["hash_mrec_s"] for pt in points], "o-", color=color, label=f"hash, {query}")
        ax.plot(x, [pt["sort_mrec_s"] for pt in points], "s--", color=color, label=f"sort (KPA), {query}")
        if summary[query]:
            ax.axvline(summary[query], color=color, alpha=0.3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("distinct keys in the window")
    ax.set_ylabel("Mrec/s (end to end, median)")
    ax.set_title("grizzly-py: hash vs sort grouping (vertical lines: crossing points)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
