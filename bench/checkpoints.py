"""What do checkpoints cost? Snapshot pause, background write and restore time by state size, and
a job's time with and without checkpoints.

1. State size: a tumbling window (count + sum keyed by int64) with ``K`` keys all in one open
   window; the job checkpoints after every batch and "crashes" before its last batch, then resumes.
   Reported: the snapshot file's size, the pipeline's pause per snapshot (the state copied out),
   the background write (encode, checksum, write, fsync) and the restore on resume.
2. Overhead: ``--rows`` records, 100,000 keys, 10 s tumbling windows, with no checkpoints and with
   a snapshot every second and every 200 ms (median of ``--repeat`` runs).

    python -m bench.checkpoints --keys 10000 100000 1000000 --rows 10000000 --repeat 3
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa

import grizzly_py as gz
from grizzly_py import Time, agg
from grizzly_py.engine import checkpoint as checkpoint_module
from grizzly_py.windows import TumblingEventTimeWindows


class _Crash(Exception):
    pass


def _job(env, source):
    (env.from_arrow(source, timestamp="ts").key_by("k").window(TumblingEventTimeWindows.of(Time.seconds(10)))
        .aggregate(c=agg.count(), s=agg.sum("v"))).collect("out")


def state_size(keys: int, directory: str) -> dict:
    n = 4 * keys
    rng = np.random.default_rng(0)
    table = pa.table({"ts": np.zeros(n, dtype=np.int64), "k": rng.permutation(np.arange(n) % keys),
                      "v": rng.integers(0, 100, n)})
    batches = table.to_batches(max_chunksize=keys)

    def source(crash: bool):
        for i, b in enumerate(batches):
            if crash and i == len(batches) - 1:
                raise _Crash()
            yield b
    shutil.rmtree(directory, ignore_errors=True)
    env = gz.StreamEnvironment()
    env.enable_checkpointing(directory, interval_batches=1)
    _job(env, source(True))
    try:
        env.execute()
    except _Crash:
        pass
    size = os.path.getsize(sorted(glob.glob(os.path.join(directory, "chk-*.snap")))[-1])
    restore = checkpoint_module.restore_kernel
    took = []

    def timed(*args):
        t0 = time.perf_counter()
        restore(*args)
        took.append(time.perf_counter() - t0)
    checkpoint_module.restore_kernel = timed
    try:
        env = gz.StreamEnvironment()
        env.enable_checkpointing(directory, interval_batches=1)
        _job(env, source(False))
        m = env.execute().metrics["checkpoints"]
    finally:
        checkpoint_module.restore_kernel = restore
    return {"keys": keys, "snapshot_mb": round(size / 1e6, 1), "pause_ms": m["pause_ms_max"],
            "write_ms": m["write_ms_median"], "restore_s": round(sum(took), 3)}


def overhead(rows: int, repeat: int, directory: str) -> list[dict]:
    rng = np.random.default_rng(1)
    batches = pa.table({"ts": np.arange(rows) // 100, "k": rng.integers(0, 100_000, rows),
                        "v": rng.integers(0, 100, rows)}).to_batches(max_chunksize=65536)
    out = []
    for interval in (None, 1000, 200):
        times = []
        for _ in range(repeat):
            env = gz.StreamEnvironment()
            if interval is not None:
                shutil.rmtree(directory, ignore_errors=True)
                env.enable_checkpointing(directory, interval=Time.milliseconds(interval))
            _job(env, batches)
            t0 = time.perf_counter()
            env.execute()
            times.append(time.perf_counter() - t0)
        median = statistics.median(times)
        out.append({"interval_ms": interval, "median_s": round(median, 3), "mrec_s": round(rows / median / 1e6, 1)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    directory = tempfile.mkdtemp(prefix="gz-bench-ckpt-")
    try:
        for keys in args.keys:
            print(state_size(keys, directory))
        for row in overhead(args.rows, args.repeat, directory):
            print(row)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
