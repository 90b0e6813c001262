"""A query's watermarks and the windows they fire (docs/semantics.md, "Watermarks").

A source's watermark after one of its batches is ``max(previous, max event time -
out-of-orderness - 1)``; before its first row it is INT64_MIN (undefined), and it is INT64_MAX
once the source has ended (``SourceClock``). The largest event time comes from a window kernel
that reads every batch of the source with the source's event time (its fused loop tracks it), or
is read by the driver per batch when no such kernel exists. After every batch (and every end)
``Watermarks.advance`` moves the watermarks through the pipelines in order, producers first: a
pipeline's input watermark is its source's, its producer window's, or the minimum over a union's
inputs; a pipeline whose kernel fires and whose input watermark grew fires its complete windows
(a processing-time window by its own clock), and their results go downstream, processed under
the watermark that was in force there before the firing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..codegen import abi
from ..expressions import Column, ProcessingTime
from ..physical.pipelines import Pipeline, SourceInput, WindowInput
from ..sources import TIMESTAMP_UNIT_DIVISOR
from .kernel_protocol import WindowAggregateKernel
from .window_rows import ranked_output


def batch_max_event_time(batch: pa.RecordBatch, column: str) -> int | None:
    """The largest event time of ``batch`` in epoch ms (timestamps floored), None if it is empty."""
    if not batch.num_rows:
        return None
    array = batch.column(column)
    unit = array.type.unit if pa.types.is_timestamp(array.type) else None
    if not array.null_count and (unit is not None or pa.types.is_int64(array.type)):
        # the values buffer read in place (twice as fast as pc.max, which the driver feels)
        raw = int(np.frombuffer(array.buffers()[1], dtype=np.int64, count=len(array), offset=8 * array.offset).max())
    else:
        raw = pc.max(array.cast(pa.int64()) if unit is not None else array).as_py()
    if raw is None:
        return None
    if unit is None:
        return int(raw)
    mul, div = TIMESTAMP_UNIT_DIVISOR[unit]
    return raw * mul // div


@dataclass
class SourceClock:
    """A source's watermark in one query. ``tracker``: a window kernel that reads every batch of
    the source with the source's event time, whose fused loop already tracks the maximum (else the
    driver computes it per batch)."""

    source: object
    tracker: WindowAggregateKernel | None = None
    max_event_time: int | None = None
    watermark: int = abi.INT64_MIN
    ended: bool = False

    def observe(self, batch: pa.RecordBatch | None) -> None:
        """After ``batch`` (None: after the batches the tracker has read)."""
        src = self.source
        if src.timestamp is None:
            return
        if self.tracker is not None:
            seen = self.tracker.max_event_time
            latest = None if seen == abi.INT64_MIN and self.max_event_time is None else seen
        else:
            latest = batch_max_event_time(batch, src.timestamp)
        self.observe_max(latest)

    def batch_max(self, batch: pa.RecordBatch) -> int | None:
        """``batch``'s largest event time (ms), for ``observe_max`` later; None without event time."""
        return batch_max_event_time(batch, self.source.timestamp) if self.source.timestamp is not None else None

    def observe_max(self, latest: int | None) -> None:
        """After a batch whose largest event time is ``latest`` (None: it had none)."""
        if latest is not None and self.max_event_time is not None:
            latest = max(latest, self.max_event_time)
        if latest is None:
            return
        self.max_event_time = latest
        candidate = max(abi.INT64_MIN, latest - self.source.watermark.out_of_orderness_ms - 1)
        self.watermark = max(self.watermark, candidate)

    def end(self) -> None:
        self.ended, self.watermark = True, abi.INT64_MAX


class Watermarks:
    """The watermarks of one query's pipelines (``runs``, producers first): each source's clock,
    each pipeline's watermark, and the firings they cause. ``deliver(index, batch)`` takes a
    firing's results downstream; ``release_strings(index)`` lets a kernel that fired release the
    interned strings no window holds any more (when due)."""

    def __init__(self, runs: list, sources: list, readers: dict[int, list[int]],
                 deliver: Callable[[int, pa.RecordBatch], None], release_strings: Callable[[int], object]):
        self.runs = runs
        self.clocks = {id(s): SourceClock(s, self._tracker(s, readers[id(s)])) for s in sources}
        # watermarks matter only to windows (and to kernels that read them: late records); a
        # query without any skips them
        self.matter = any(r.kernel is not None and (r.kernel.fires or r.kernel.reads_watermark) for r in runs)
        self._deliver, self._release_strings = deliver, release_strings

    def _tracker(self, source, readers: list[int]) -> WindowAggregateKernel | None:
        """A window kernel that reads every batch of ``source`` with its event time (its fused
        loop tracks the largest), if any."""
        for pid in readers:
            run = self.runs[pid]
            event_time = run.pipeline.event_time
            if isinstance(run.kernel, WindowAggregateKernel) and isinstance(event_time, Column) \
                    and event_time.name == source.timestamp:
                return run.kernel
        return None

    def after_batch(self, source, batch: pa.RecordBatch) -> None:
        """``batch`` of ``source`` went through every pipeline that reads it."""
        if self.matter:
            self.clocks[id(source)].observe(batch)
            self.advance()

    def end(self, source) -> None:
        """``source`` has no more batches: its watermark jumps to +infinity."""
        clock = self.clocks[id(source)]
        if not clock.ended:
            clock.end()
            self.advance()

    def input_watermark(self, p: Pipeline) -> int:
        """Pipeline ``p``'s input watermark: its source's, its producer window's, or the minimum
        over a union's inputs."""
        if isinstance(p.input, SourceInput):
            return self.clocks[id(p.input.source)].watermark
        if isinstance(p.input, WindowInput):
            return self.runs[p.input.pipeline_id].watermark
        return min(self.runs[i].watermark for i in p.input.pipeline_ids)

    def advance(self) -> None:
        """Move the watermarks through the pipelines, producers first, firing complete windows."""
        for i, run in enumerate(self.runs):
            upstream = self.input_watermark(run.pipeline)
            if run.kernel is None or not run.kernel.fires:
                run.watermark = max(run.watermark, upstream)  # stateless: its input's watermark
                continue
            if isinstance(run.pipeline.event_time, ProcessingTime) and upstream != abi.INT64_MAX:
                # a processing-time window's own clock (until the end of the input)
                max_ts = run.kernel.max_event_time
                if max_ts == abi.INT64_MIN:
                    continue
                candidate = max(abi.INT64_MIN, max_ts - run.pipeline.out_of_orderness_ms - 1)
            else:
                candidate = upstream
            if candidate <= run.watermark:
                if not run.kernel.refires_pending:
                    continue
                candidate = run.watermark  # kept windows that a late record reached fire again now
            self._fire(i, candidate)

    def refire(self, i: int) -> None:
        """Pipeline ``i``'s kept windows that records reached since its last firing fire again,
        under its watermark in force (allowed lateness: after each slice of a batch that ends with
        such a record, ``late_refires.py``)."""
        run = self.runs[i]
        if run.kernel.refires_pending:
            self._fire(i, run.watermark)

    def _fire(self, i: int, watermark: int) -> None:
        """Pipeline ``i`` fires at ``watermark``; its results go downstream."""
        run = self.runs[i]
        start = time.perf_counter()
        fired = ranked_output(run.pipeline, run.kernel.fire(watermark), run.output_schema)
        self._release_strings(i)  # (when due) the fired windows' strings: their results are strings now
        run.seconds += time.perf_counter() - start
        if fired is not None:
            run.rows_out += fired.num_rows
            self._deliver(i, fired)  # processed downstream under the old downstream watermark
        run.watermark = watermark


__all__ = ["SourceClock", "Watermarks", "batch_max_event_time"]
