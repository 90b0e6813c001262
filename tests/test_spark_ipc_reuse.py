"""A large Arrow source reaches local Spark tasks as a temporary IPC file (``spark/inputs.py``):
jobs over the same table reuse the file an earlier job wrote instead of writing it again, and
the file goes when the table does. No Spark session needed: ``plan_splits`` is driver code."""

from __future__ import annotations

import gc
import os

import numpy as np
import pyarrow as pa

import grizzly_py as gz
from grizzly_py.spark.inputs import INLINE_BYTES, plan_splits


def _table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ts = np.arange(rows, dtype=np.int64)
    return pa.Table.from_batches(
        pa.table({"ts": ts, "v": rng.integers(0, 1000, rows)}).to_batches(max_chunksize=rows // 4))


def _ipc_path(table: pa.Table) -> str:
    source = gz.StreamEnvironment().from_arrow(table, timestamp="ts").node.source
    splits = plan_splits(source, 4, None, executors_here=True)
    assert {s.kind for s in splits} == {"ipc"}
    [path] = {s.path for s in splits}
    return path


def test_jobs_over_one_table_share_its_ipc_file_until_the_table_goes():
    rows = INLINE_BYTES // 16 + 4096  # two int64 columns: just over the inline limit
    table, other = _table(rows, 1), _table(rows, 2)
    first = _ipc_path(table)
    mtime = os.stat(first).st_mtime_ns
    assert _ipc_path(table) == first and os.stat(first).st_mtime_ns == mtime  # not written again
    assert pa.ipc.open_file(first).read_all().equals(table)
    second = _ipc_path(other)
    assert second != first and pa.ipc.open_file(second).read_all().equals(other)
    # a table with the same values is another object: its own file, never a stale one
    copy = pa.Table.from_batches([pa.record_batch([b.column(0), b.column(1)], names=b.schema.names)
                                  for b in table.to_batches()])
    assert _ipc_path(copy) not in (first, second)
    del table
    gc.collect()
    assert not os.path.exists(first) and os.path.exists(second)
