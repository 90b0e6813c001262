"""Does branch-free predicate code pay? Kernel time per record for each filter mode.

For a window pipeline (YSB-shaped: filter, key, 10 s tumbling count) and a projection pipeline
(filter, one computed column), at several selectivities, this times the compiled kernel alone
(median of --repeat runs) under the three code generation modes of ``CodegenOptions.filter_mode``:

- ``branch``: one conditional branch per predicate (the row leaves at the first false one);
- ``combined``: every predicate evaluated, one branch for their conjunction;
- ``predicated``: no branch on the predicate. Projections write every row and advance the output
  position by the keep flag; windows build a selection vector per block of rows and aggregate
  the selected rows in a second loop.

    python -m bench.filter_modes --rows 10000000 --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyarrow as pa

import grizzly_py as gz
from grizzly_py import Time, agg, col
from grizzly_py.codegen.module import generate_pipeline
from grizzly_py.codegen.options import FILTER_MODES, CodegenOptions
from grizzly_py.engine.kernels import ProjectKernel, WindowKernel
from grizzly_py.physical import build_physical_plan
from grizzly_py.plan import Query
from grizzly_py.windows import TumblingEventTimeWindows

SELECTIVITIES = (0.0, 0.1, 0.33, 0.5, 0.9, 1.0)


def make_batches(rows: int, batch_rows: int = 1 << 16, seed: int = 7) -> list[pa.RecordBatch]:
    rng = np.random.default_rng(seed)
    table = pa.table({
        "ts": 1_700_000_000_000 + np.arange(rows, dtype=np.int64) // 1000,
        "u": rng.random(rows),                      # uniform in [0, 1): `u < s` keeps a share s
        "key": rng.integers(0, 10_000, rows, dtype=np.int64),
        "x": rng.integers(0, 1000, rows, dtype=np.int64),
    })
    return table.to_batches(max_chunksize=batch_rows)


def pipeline_for(kind: str, batches, selectivity: float):
    s = gz.StreamEnvironment().from_arrow(batches, timestamp="ts").filter(col("u") < selectivity)
    if kind == "window":
        s = s.key_by("key").window(TumblingEventTimeWindows.of(Time.seconds(10))).aggregate(n=agg.count())
    else:
        s = s.with_columns(y=col("x") * 3 + 1)
    return build_physical_plan(Query(s.node)).pipelines[0]


def time_kernel(kind: str, pipeline, mode: str, batches) -> float:
    gen = generate_pipeline(pipeline, CodegenOptions(filter_mode=mode))
    if kind == "window":
        kernel = WindowKernel(gen, "bench")
        start = time.perf_counter()
        wm = -(1 << 63)
        for b in batches:
            kernel.process(b, wm)
            wm = max(wm, kernel.max_event_time - 1)
            kernel.fire(wm)
        elapsed = time.perf_counter() - start
        kernel.close()
        return elapsed
    kernel = ProjectKernel(gen, "bench")
    kernel.process(batches[0])  # compile outside the timing
    start = time.perf_counter()
    for b in batches:
        kernel.process(b)
    return time.perf_counter() - start


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    batches = make_batches(args.rows)
    print(f"kernel ns/record, median of {args.repeat}, {args.rows:,} rows; best mode marked *")
    print(f"{'pipeline':<10} {'select':>6} " + " ".join(f"{m:>11}" for m in FILTER_MODES))
    for kind in ("window", "project"):
        for sel in SELECTIVITIES:
            p = pipeline_for(kind, batches, sel)
            ns = {}
            for mode in FILTER_MODES:
                time_kernel(kind, p, mode, batches[:2])  # warm: compile
                runs = [time_kernel(kind, p, mode, batches) for _ in range(args.repeat)]
                ns[mode] = statistics.median(runs) * 1e9 / args.rows
            best = min(ns, key=ns.get)
            cells = " ".join(f"{ns[m]:>10.2f}{'*' if m == best else ' '}" for m in FILTER_MODES)
            print(f"{kind:<10} {sel:>6.0%} {cells}")


if __name__ == "__main__":
    main()
