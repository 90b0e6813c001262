"""The gather of a join's output columns: each pair's values, read from the batches a side keeps
(``join_kernel.SideStore``) by compiled code (``codegen_templates/join_gather.ll.j2``), in row
ranges on the job's worker pool where it has one.

A window join's pairs, in key order, jump across all of the window's batches: Arrow's ``take``
needs those batches concatenated first (a copy of every column of the span) and runs on one
thread. Here a fixed-width column without nulls is read from the batches in place (the batches
of a span hold the same power-of-two number of rows, the last one fewer: a row's batch is the
high bits of its offset) into one buffer that Arrow takes over; the refs are cut into ranges,
one native call per range and column, each releasing the GIL, so that the driver and the pool's
workers share them. Anything else (strings, booleans, dictionaries, nulls, batches of other
sizes) returns None: the caller keeps Arrow's ``take``. The join asks for it only where it has a
pool: on one thread it saves the concatenation but not its cost, as its fresh output buffers
fault in more pages than Arrow's take, whose outputs reuse the memory the concatenations free
(docs/benchmarks.md, "StreamBox temporal join and windowed filter").
"""

from __future__ import annotations

import ctypes
from typing import Callable

import numpy as np
import pyarrow as pa

from .parallel import run_shared
from .project_output import _byte_width

_P, _I64 = ctypes.c_void_p, ctypes.c_int64
WIDTHS = (1, 2, 4, 8)  # value bytes the compiled gather has a function for
MIN_RANGE_ROWS = 1 << 16  # refs per range at least: a task hand-off costs more below


class NativeGather:
    """The compiled gather of one join (``function(name)``: a function of its trigger unit) and
    the pool whose workers take ranges of it (None: the driver gathers alone)."""

    def __init__(self, function: Callable[..., Callable], pool=None):
        self._function = function
        self.pool = pool

    def columns(self, batches: list[tuple[int, pa.RecordBatch]], refs: np.ndarray, columns: list[str],
                ref_range: tuple[int, int] | None = None) -> list[pa.Array | None]:
        """The values of ``columns`` at ``refs`` from ``batches`` ((first ref, batch) each,
        contiguous in refs); None for a column left to Arrow. ``ref_range``: the smallest and
        largest ref, when the caller has them; a ref outside the batches raises (native code
        reads where the refs point)."""
        lo, hi = ref_range if ref_range is not None else (int(refs.min()), int(refs.max())) if len(refs) else (0, -1)
        end = batches[-1][0] + batches[-1][1].num_rows
        if len(refs) and (lo < batches[0][0] or hi >= end):
            raise IndexError(f"join refs [{lo}, {hi}] outside the kept batches' [{batches[0][0]}, {end})")
        rows = batches[0][1].num_rows
        if len(batches) == 1:
            rows = 1 << max(rows - 1, 0).bit_length()  # one batch: any chunk size that holds it
        if not rows or rows & (rows - 1) or any(b.num_rows != rows for _, b in batches[:-1]) \
                or batches[-1][1].num_rows > rows:
            return [None] * len(columns)
        shift = rows.bit_length() - 1
        refs = np.ascontiguousarray(refs, dtype=np.int64)
        n, base = len(refs), batches[0][0]
        ranges = self._ranges(n)
        jobs, out = [], []
        for name in columns:
            chunks = [b.column(name) for _, b in batches]
            width = _byte_width(chunks[0].type)
            if width not in WIDTHS or any(c.null_count for c in chunks):
                out.append(None)
                continue
            table = np.array([c.buffers()[1].address + c.offset * width for c in chunks], dtype=np.uint64)
            values = pa.allocate_buffer(n * width)  # (Arrow's pool, as its take would allocate)
            gather = self._function(f"gather{width}", None, _P, _I64, _I64, _P, _I64, _P)
            for lo, hi in ranges:
                jobs.append((gather, table, shift, base, refs, values, width, lo, hi))
            out.append((chunks[0].type, values, table))
        self._run(jobs)
        return [None if o is None else pa.Array.from_buffers(o[0], n, [None, o[1]]) for o in out]

    def _ranges(self, n: int) -> list[tuple[int, int]]:
        threads = self.pool.workers if self.pool is not None else 1
        k = max(1, min(threads, n // MIN_RANGE_ROWS))
        return [(i * n // k, (i + 1) * n // k) for i in range(k)]

    def _run(self, jobs: list[tuple]) -> None:
        """Every job's native call, on the pool's workers and this thread (``run_shared``)."""
        def call(job) -> None:
            gather, table, shift, base, refs, values, width, lo, hi = job
            gather(table.ctypes.data, shift, base, refs.ctypes.data + 8 * lo, hi - lo, values.address + width * lo)

        run_shared(self.pool, [lambda job=job: call(job) for job in jobs])


__all__ = ["NativeGather"]
