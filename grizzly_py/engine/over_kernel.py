"""The kernel of an OVER pipeline (``physical.pipelines.OverTerminal``): rows wait per key until the
watermark passes them, then leave with the aggregates over their frames.

The pipeline before it (compiled, fused: filters, maps, the aggregates' arguments and the event
time as int64 ms) hands it Arrow batches; its state is Arrow data:
- ``waiting``: the rows not yet emitted (event time above the watermark), each numbered in
  arrival order (``__gz_arrival``: the order of the source, whatever the batching);
- ``history``: per key, the emitted rows that later frames can still need: the last ``n`` rows
  (``rows_preceding``) or those less than ``d`` behind the watermark (``range_preceding``); of
  each, only the columns frames read (keys, event time, the aggregates' arguments, arrival).

A row at or behind the watermark in force is late (counted, dropped). When the watermark moves,
the rows it passed and the history of their keys are sorted by (key, event time, arrival) with
Arrow, the frames are computed over that run (``over_frames.py``: numpy and a compiled loop, no
Python per row), and the rows leave ordered by (event time, key, arrival): the order does not
depend on when the watermark moved, so it is the same for every batching and parallelism.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..aggregates import AggregateOverflowError, spec_of
from ..codegen import abi
from ..physical.pipelines import OverAggregate, OverTerminal, Pipeline
from ..types import to_arrow_type
from . import over_frames
from .kernel_protocol import PipelineKernel

ARRIVAL = "__gz_arrival"
READY_ROW = "__gz_ready_row"  # while firing: a row's position among the rows the watermark passed


def table_bytes(table: pa.Table) -> bytes:
    """``table`` as Arrow IPC stream bytes: how Arrow-state kernels keep a table in a snapshot."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def table_from(data: np.ndarray) -> pa.Table:
    """The table ``table_bytes`` wrote (as a snapshot's uint8 array)."""
    return pa.ipc.open_stream(pa.py_buffer(data.tobytes())).read_all()


class OverKernel(PipelineKernel):
    """An OVER pipeline's kernel (see the module docstring); one worker, in stream order."""

    workers = 1
    contributing_means = "rows kept for OVER frames"
    gen = None
    compile_ms = 0.0

    def __init__(self, pipeline: Pipeline, input_name: str):
        t: OverTerminal = pipeline.terminal
        self.pipeline, self.terminal, self.input_name = pipeline, t, input_name
        # dictionary columns are kept decoded: Arrow sorts and concatenates them as plain strings
        self.input_schema = pa.schema([pa.field(f.name, plain_type(f.arrow_type if f.arrow_type is not None
                                                               else to_arrow_type(f.dtype)))
                                       for f in pipeline.input_schema])
        self.state_schema = self.input_schema.append(pa.field(ARRIVAL, pa.int64()))
        # what frames read: the history keeps only these columns of the rows it holds
        read = list(t.keys) + [t.event_time_column] + [c for a in t.aggregates for c in (a.arg, a.where) if c]
        self.frame_columns = list(dict.fromkeys(read)) + [ARRIVAL]
        self.history_schema = pa.schema([self.state_schema.field(c) for c in self.frame_columns])
        self.schema = pa.schema([pa.field(f.name, f.arrow_type if f.arrow_type is not None
                                          else to_arrow_type(f.dtype)) for f in t.output_schema])
        self.waiting: list[pa.Table] = []
        self.history = self.history_schema.empty_table()
        self.arrivals = 0
        self.rows_in = self.late = 0
        self.max_ts = abi.INT64_MIN
        self.batches_processed = 0

    # --- the protocol the driver uses -------------------------------------------------------
    def counter(self, index: int) -> int:
        return {abi.STATE_ROWS_IN: self.rows_in, abi.STATE_LATE: self.late,
                abi.STATE_MAX_EVENT_TIME: self.max_ts}.get(index, 0)

    def process(self, batch: pa.RecordBatch, watermark: int, worker: int = 0, where=None) -> None:
        """Keep the rows of ``batch`` that are not late under ``watermark``, numbered in arrival order."""
        self.batches_processed += 1
        n = batch.num_rows
        self.rows_in += n
        if not n:
            return None
        ts = self._times(batch)
        self.max_ts = max(self.max_ts, int(ts.max()))
        on_time = ts > watermark if watermark != abi.INT64_MIN else np.ones(n, dtype=bool)  # (none yet)
        kept = int(on_time.sum())
        self.late += n - kept
        if kept:
            table = pa.Table.from_batches([batch]).cast(self.input_schema)
            if kept < n:
                table = table.filter(pa.array(on_time))
            numbers = pa.array(np.arange(self.arrivals, self.arrivals + kept, dtype=np.int64))
            self.waiting.append(table.append_column(ARRIVAL, numbers))
            self.arrivals += kept
        return None

    def _times(self, data) -> np.ndarray:
        return data.column(self.terminal.event_time_column).to_numpy(zero_copy_only=False).astype(np.int64)

    def fire(self, watermark: int) -> pa.RecordBatch | None:
        """Emit the rows the watermark passed, each with the aggregates over its frame."""
        if not self.waiting:
            self.history = self._expire(self.history, watermark)
            return None
        waiting = pa.concat_tables(self.waiting).combine_chunks()
        due = self._times(waiting) <= watermark
        self.waiting = [waiting.filter(pa.array(~due))] if not due.all() else []
        ready = waiting.filter(pa.array(due)) if not due.all() else waiting
        if not ready.num_rows:
            self.history = self._expire(self.history, watermark)
            return None
        # only the history of the keys that have ready rows takes part (a superset of them:
        # each key column is matched on its own); the rest waits for its keys' next rows
        shares = rows_sharing_keys(self.history, ready, self.terminal.keys)
        aside = self.history.filter(pa.array(~shares)) if not shares.all() else self.history.slice(0, 0)
        history = self.history.filter(pa.array(shares)) if not shares.all() else self.history
        # the run: the history and the ready rows (their frame columns, and where each ready row is)
        t = self.terminal
        history = history.append_column(READY_ROW, pa.array(np.full(history.num_rows, -1, np.int64)))
        fresh = ready.select(self.frame_columns).append_column(
            READY_ROW, pa.array(np.arange(ready.num_rows, dtype=np.int64)))
        run = pa.concat_tables([history, fresh])
        order = pc.sort_indices(run, sort_keys=[(k, "ascending", "at_end") for k in t.keys]
                                + [(t.event_time_column, "ascending"), (ARRIVAL, "ascending")])
        run = run.take(order)
        rows = run.column(READY_ROW).to_numpy()
        emitted = rows >= 0
        new = over_frames.group_starts([run.column(k).combine_chunks() for k in t.keys])
        lo, hi = self._frames(run, new)
        results = [self._aggregate(a, run, lo[emitted], hi[emitted]) for a in t.aggregates]
        self.history = pa.concat_tables([self._expire(aside, watermark),
                                         self._kept(run.drop_columns([READY_ROW]), new, watermark)])
        out = ready.take(pa.array(rows[emitted]))
        # the emitted order: event time, then key, then arrival
        order = pc.sort_indices(out, sort_keys=[(t.event_time_column, "ascending")]
                                + [(k, "ascending", "at_end") for k in t.keys] + [(ARRIVAL, "ascending")])
        columns = [out.column(c) for c in t.columns] + [pa.chunked_array([r]) for r in results]
        if len(self.schema) > len(columns):  # the hidden event time, for a window downstream
            columns.append(out.column(t.event_time_column))
        table = pa.Table.from_arrays(columns, names=self.schema.names).take(order)
        arrays = [c.combine_chunks() if c.type == f.type else c.combine_chunks().cast(f.type)
                  for c, f in zip(table.columns, self.schema)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _frames(self, run: pa.Table, new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each row's frame ``[lo, hi]`` in ``run`` (``new``: where a key starts)."""
        frame = self.terminal.frame
        if frame.rows is not None:
            return over_frames.rows_frames(new, frame.rows)
        return over_frames.range_frames(new, self._times(run), frame.range_ms)

    def _aggregate(self, a: OverAggregate, run: pa.Table, lo: np.ndarray, hi: np.ndarray) -> pa.Array:
        """Aggregate ``a`` over the frames ``[lo, hi]`` of ``run``, as its spec's ``frame`` says."""
        method = spec_of(a.func).frame
        valid = np.ones(run.num_rows, dtype=bool)
        values = None
        if a.arg is not None:
            column = run.column(a.arg).combine_chunks()
            valid &= column.is_valid().to_numpy(zero_copy_only=False)
            if method.reads_numbers:
                values = _numbers(column)
        if a.where is not None:
            valid &= pc.fill_null(run.column(a.where), False).to_numpy(zero_copy_only=False)
        count = over_frames.counts(valid, lo, hi)
        if method.counts:
            return pa.array(count, pa.int64())
        out_type = to_arrow_type(a.field.dtype)
        none = count == 0
        if method.sums:
            if values.dtype.kind == "f":
                total = over_frames.float_sums(values, valid, lo, hi)
            else:
                total, overflow = over_frames.int_sums(values, valid, lo, hi)
                if overflow.any():
                    raise AggregateOverflowError(f"pipeline {self.pipeline.id}: aggregate {a.field.name!r} "
                                                 f"(agg.{a.func}) over an OVER frame: the sum does not fit in int64")
            if method.mean:
                total = total.astype(np.float64) / np.maximum(count, 1)
            return pa.array(total, out_type, mask=none)
        result = over_frames.extremes(values, valid, lo, hi, method.extreme == "high")
        return pa.array(result.astype(bool) if pa.types.is_boolean(out_type) else result, out_type, mask=none)

    def _kept(self, run: pa.Table, new: np.ndarray, watermark: int) -> pa.Table:
        """The rows of ``run`` (sorted by key, event time, arrival; ``new``: where a key starts)
        that frames of rows after ``watermark`` can still need: each key's last ``n``, or those
        less than ``d`` behind."""
        frame = self.terminal.frame
        if frame.rows is None or watermark == abi.INT64_MAX or not run.num_rows:
            return self._expire(run, watermark)
        group = np.cumsum(new) - 1
        ends = np.append(np.flatnonzero(new)[1:], run.num_rows)  # each group's end
        keep = np.arange(run.num_rows) >= ends[group] - frame.rows
        return run.filter(pa.array(keep)) if not keep.all() else run

    def _expire(self, table: pa.Table, watermark: int) -> pa.Table:
        """``table`` without the rows no later frame can reach: at the end of the input all of them;
        for a RANGE frame those at least ``d`` behind the watermark."""
        frame = self.terminal.frame
        if watermark == abi.INT64_MAX or frame.rows == 0:
            return table.slice(0, 0)
        if frame.rows is not None or not table.num_rows:
            return table
        keep = self._times(table) > watermark - frame.range_ms
        return table.filter(pa.array(keep)) if not keep.all() else table

    # --- state ---------------------------------------------------------------------------
    def export_state(self) -> dict:
        waiting = pa.concat_tables([self.state_schema.empty_table(), *self.waiting])
        return {"waiting": np.frombuffer(table_bytes(waiting), dtype=np.uint8).copy(),
                "history": np.frombuffer(table_bytes(self.history), dtype=np.uint8).copy(),
                "arrivals": self.arrivals, "rows_in": self.rows_in, "late": self.late, "max_ts": self.max_ts,
                "batches": self.batches_processed}

    def restore_state(self, saved: dict) -> None:
        waiting = table_from(saved["waiting"])
        self.waiting = [waiting] if waiting.num_rows else []
        self.history = table_from(saved["history"])
        self.arrivals, self.rows_in, self.late = int(saved["arrivals"]), int(saved["rows_in"]), int(saved["late"])
        self.max_ts, self.batches_processed = int(saved["max_ts"]), int(saved["batches"])

    def structure_bytes(self) -> int:
        return sum(t.nbytes for t in self.waiting) + self.history.nbytes


def rows_sharing_keys(table: pa.Table, rows: pa.Table, keys: tuple[str, ...]) -> np.ndarray:
    """Per row of ``table``: whether each of its key values occurs among ``rows``' (keys compared
    as they group: -0.0 as 0.0, NaN as NaN, null as null). A superset of the rows of the keys
    ``rows`` has, each key column matched on its own; kernels keep the rest aside."""
    shares = np.ones(table.num_rows, dtype=bool)
    if not table.num_rows:
        return shares
    for k in keys:
        mine, theirs = table.column(k).combine_chunks(), rows.column(k).combine_chunks()
        if pa.types.is_floating(mine.type):
            mine, theirs = _as_grouped(mine), _as_grouped(theirs)
        shares &= pc.is_in(mine, value_set=pc.unique(theirs), skip_nulls=False).to_numpy(zero_copy_only=False)
    return shares


def _as_grouped(column: pa.Array) -> pa.Array:
    """A float key column as keys group: ``-0.0`` as ``0.0`` and every NaN as one NaN (``is_in``
    compares bits, and a NaN's sign and payload vary: ``-nan`` is not ``nan`` there)."""
    column = pc.add(column, 0.0)
    return pc.if_else(pc.is_nan(column), pa.scalar(float("nan"), column.type), column)


def plain_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def _numbers(column: pa.Array) -> np.ndarray:
    """An argument's values as int64 or float64 (nulls as 0: the validity says which count)."""
    if pa.types.is_floating(column.type):
        return pc.fill_null(column, 0.0).to_numpy(zero_copy_only=False).astype(np.float64)
    if pa.types.is_boolean(column.type):
        return pc.fill_null(column, False).to_numpy(zero_copy_only=False).astype(np.int64)
    return pc.fill_null(column, 0).to_numpy(zero_copy_only=False).astype(np.int64)


__all__ = ["OverKernel", "plain_type", "rows_sharing_keys", "table_bytes", "table_from"]
