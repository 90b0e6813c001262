"""The kernel object of a window pipeline with sort-based grouping (``codegen/sort_grouping.py``).

Records go to key/pointer arrays per pane; the kernel sorts each batch's rows into a run before
it returns. Windows fire as sliding windows do (``SlidingWindowKernel``: ``merge_emit`` per
complete window over every worker's state block, then ``drop_panes``), so tumbling windows take
the same path (a window is its own pane). The only addition: sorting a run may run out of
memory after the batch's rows are in, which the kernel reports in the state's error word.
"""

from __future__ import annotations

import pyarrow as pa

from ..codegen import abi
from .kernels import SlidingWindowKernel


class SortWindowKernel(SlidingWindowKernel):
    """Tumbling and sliding windows grouped by sorting (thread-local state per worker)."""

    grouping = "sort"

    def process(self, batch: pa.RecordBatch, watermark: int, worker: int = 0,
                where: tuple[int, int] | None = None) -> None:
        super().process(batch, watermark, worker, where)
        state = self.states[worker]
        if state[abi.STATE_ERROR_CODE] == abi.ERROR_OUT_OF_MEMORY:  # the epilogue's sort failed
            self._raise(abi.ERROR_OUT_OF_MEMORY, batch, state, where)
