"""Allowed lateness: where the driver cuts a batch so that kept windows fire once per late record.

Flink fires a window kept for its allowed lateness again for each record that reaches it after
it fired, at once (docs/semantics.md, "allowed lateness"). The fused loop notes the ``{pane,
key}`` of such records and the trigger fires their kept windows again for those keys
(``SlidingWindowKernel.refires_pending``). So the driver (``local.py``) runs a batch as slices
that each end right after one such record, and fires the noted windows after each slice under
the watermark in force before the batch, which does not move inside it. ``refire_cuts`` finds
those records from their event times, that watermark and the window geometry
(``window_geometry.PaneGeometry``), before anything runs; a batch without any runs whole, in
one call, as without lateness. A cut where none was needed costs time, never rows: a record
that a filter then drops, or whose noted pane holds no fired window, makes no firing.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..codegen import abi
from ..expressions import BinaryOp, Column, Expr, Literal
from ..physical.pipelines import Pipeline, WindowTerminal
from ..sources import TIMESTAMP_UNIT_DIVISOR

# beyond this, event-time arithmetic could leave int64: it runs on Python ints instead
_SAFE = 1 << 61


def fires_per_late_record(pipeline: Pipeline) -> bool:
    """``pipeline`` ends in a window with allowed lateness (its batches may need cuts)."""
    terminal = pipeline.terminal
    return isinstance(terminal, WindowTerminal) and terminal.allowed_lateness_ms > 0 \
        and getattr(terminal.assigner, "geometry", None) is not None


def refire_cuts(pipeline: Pipeline, batch: pa.RecordBatch, watermark: int) -> list[int]:
    """The row numbers of ``batch`` right after each record that reaches a window of
    ``pipeline`` that has fired under ``watermark`` and is still kept for its allowed lateness
    (``end - 1 <= watermark < end - 1 + lateness``), in order; empty when there is none."""
    if watermark == abi.INT64_MIN or not batch.num_rows or not fires_per_late_record(pipeline):
        return []
    terminal = pipeline.terminal
    geometry, lateness = terminal.assigner.geometry, terminal.allowed_lateness_ms
    times = _event_times_ms(batch, pipeline.event_time)
    if times is None:  # an event time this module does not read: every record may be one
        return list(range(1, batch.num_rows + 1))
    ms, valid = times
    # a window holding ts ends after ts, and the last one by ts + size: only these can be fired
    # and kept (a record before them is late, one after them reaches open windows only)
    low, high = watermark - geometry.size - lateness, watermark
    candidates = np.flatnonzero(valid & (ms > max(low, abi.INT64_MIN)) & (ms <= high))
    if not len(candidates):
        return []
    ts = ms[candidates]
    if not (-_SAFE < low and high + geometry.size < _SAFE):
        ts = ts.astype(object)
    return [int(i) + 1 for i in candidates[_reaches_fired_kept(ts, geometry, lateness, watermark)]]


def _reaches_fired_kept(ts, geometry, lateness: int, watermark: int):
    """Per event time: whether one of its windows has ``end - 1 <= watermark < end - 1 +
    lateness``. Its windows' ends run from the first window's to the last one's in steps of the
    slide (cumulative windows: of the pane); the latest of them at or below ``watermark + 1``
    decides."""
    panes = geometry.floor(ts, geometry.pane)
    first, last = geometry.first_end(panes), geometry.last_end(panes)
    step = geometry.pane if geometry.cumulative else geometry.slide
    bound = watermark + 1
    fired = first <= bound
    latest = np.minimum(last, first + (bound - first) // step * step)
    return (fired & (latest - 1 + lateness > watermark)).astype(bool)


def _event_times_ms(batch: pa.RecordBatch, event_time: Expr) -> tuple[np.ndarray, np.ndarray] | None:
    """The event times of ``batch``'s rows in epoch ms (timestamps floored) and where they are
    not null, for the forms a window pipeline's event time takes (a column; a window result's
    ``window_end - 1``); None for any other expression."""
    shift = 0
    if isinstance(event_time, BinaryOp) and event_time.op == "-" and isinstance(event_time.right, Literal) \
            and isinstance(event_time.right.value, int):
        event_time, shift = event_time.left, event_time.right.value
    if not isinstance(event_time, Column) or event_time.name not in batch.schema.names:
        return None
    array = batch.column(event_time.name)
    unit = array.type.unit if pa.types.is_timestamp(array.type) else None
    if not (unit is not None or pa.types.is_integer(array.type)):
        return None
    valid = np.ones(len(array), dtype=bool) if not array.null_count else \
        array.is_valid().to_numpy(zero_copy_only=False)
    raw = array.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    if unit is not None:
        mul, div = TIMESTAMP_UNIT_DIVISOR[unit]
        raw = raw * mul // div
    return raw - shift, valid


def slices(cuts: list[int], rows: int) -> list[tuple[int, int]]:
    """The ``(start, stop)`` row ranges that ``cuts`` (ascending, within ``rows``) make of
    ``rows`` rows: each ends at a cut or at the end, none is empty."""
    bounds = [0] + cuts + ([rows] if not cuts or cuts[-1] != rows else [])
    return list(zip(bounds, bounds[1:]))


__all__ = ["fires_per_late_record", "refire_cuts", "slices"]
