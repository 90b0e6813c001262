"""The kernel of an unbounded Top-N pipeline (``physical.pipelines.TopNTerminal``, ``top_n.TopNNode``):
per key the first ``n`` rows so far, and the changelog each record makes of them.

The pipeline before it (compiled, fused: filters and maps) hands it Arrow batches in stream
order; its state is Arrow data, ``kept``: each key's current top ``n`` rows (input columns and
``__gz_arrival``, the row's number in stream order), in arrival order, rows that left it marked
dead until a compaction. A batch becomes a *run*: the kept rows of the keys the batch has (a
superset of them: each key column matched on its own), then the batch's rows, so the run is in
arrival order. Only the run's ranking columns (keys, ``by``, arrival) are gathered for it; one
stable sort by (keys, the ``by`` criteria) numbers its keys (``group``) and ranks every row
(``ord``: its place in the order (key, ``by``, arrival), so within a key a smaller ``ord`` ranks
first): where every key and ``by`` part is an integer column without nulls (a descending one as
its bitwise complement) it is one machine word per row (``packed_sort.py``), else Arrow's
multi-column sort with the arrival last. A compiled loop (``gz_top_n``) then inserts the rows
one by one into per-key slot arrays of ``n`` rows, as Flink's ``AppendOnlyTopNFunction`` does
per record, and writes each batch row's changes (kind, the row, its rank): no Python per row.
The kept rows enter without emitting (they rebuild the keys' slots). Whole rows (strings
included) are gathered once: the changes' rows (``_run_rows``: the few kept rows a change moves
out, then one ``take`` over those and the batch) and the batch rows that entered, appended to
``kept``; a kept row still in its key's top ``n`` stays where it is.
When a reader of event time follows, each change also carries the event time of the record
that made it (``TopNTerminal.event_time_column``, ``_making_records``).
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..changelog import INSERT, UPDATE_AFTER, UPDATE_BEFORE
from ..codegen import abi
from ..jit import compile_ir
from ..physical.pipelines import Pipeline, TopNTerminal
from ..types import to_arrow_type
from .kernel_protocol import PipelineKernel
from .over_frames import group_starts
from .kernels import sort_indices_nulls_last
from .over_kernel import plain_type, rows_sharing_keys, table_bytes, table_from
from .window_rows import _as_type, _order_keys

ARRIVAL = "__gz_arrival"
KINDS = np.array([UPDATE_BEFORE, UPDATE_AFTER, INSERT], dtype=np.int64)  # the loop's kind codes 0, 1, 2

# gz_top_n(group, ord, start, rows, emit_from, n, stride, slots, counts, out_kind, out_row,
#          out_rank, capacity, used): insert rows start.. of the run (key g's slots, at g * stride,
# hold run row numbers in rank order, counts[g] of them; stride: min(n, the most rows a key has
# in the run), which bounds every count); rows from emit_from on write their changes to the out
# arrays. Returns the row it stopped at: rows, or the first row whose changes (at most
# 2 * stride + 1) might not fit in capacity (the caller grows the arrays and calls again there).
_TOP_N_IR = r"""
define i64 @gz_top_n(ptr %group, ptr %ord, i64 %start, i64 %rows, i64 %emit_from, i64 %n, i64 %stride, ptr %slots,
                     ptr %counts, ptr %out_kind, ptr %out_row, ptr %out_rank, i64 %capacity, ptr %used) {
entry:
  %i.a = alloca i64
  %r.a = alloca i64
  %k.a = alloca i64
  store i64 %start, ptr %i.a
  %n2 = shl i64 %stride, 1
  %most = add i64 %n2, 1
  br label %row
row:
  %i = load i64, ptr %i.a
  %more = icmp slt i64 %i, %rows
  br i1 %more, label %room, label %done
room:
  %u0 = load i64, ptr %used
  %u.need = add i64 %u0, %most
  %fits = icmp sle i64 %u.need, %capacity
  br i1 %fits, label %body, label %done
body:
  %g.p = getelementptr inbounds i64, ptr %group, i64 %i
  %g = load i64, ptr %g.p
  %o.p = getelementptr inbounds i64, ptr %ord, i64 %i
  %o = load i64, ptr %o.p
  %c.p = getelementptr inbounds i64, ptr %counts, i64 %g
  %c = load i64, ptr %c.p
  %base = mul i64 %g, %stride
  store i64 0, ptr %r.a
  br label %find
find:                                 ; r: how many held rows rank before row i
  %r = load i64, ptr %r.a
  %r.in = icmp slt i64 %r, %c
  br i1 %r.in, label %find.cmp, label %found
find.cmp:
  %s.i = add i64 %base, %r
  %s.p = getelementptr inbounds i64, ptr %slots, i64 %s.i
  %s = load i64, ptr %s.p
  %so.p = getelementptr inbounds i64, ptr %ord, i64 %s
  %so = load i64, ptr %so.p
  %ahead = icmp slt i64 %so, %o
  br i1 %ahead, label %find.next, label %found
find.next:
  %r.1 = add i64 %r, 1
  store i64 %r.1, ptr %r.a
  br label %find
found:
  %rank0 = load i64, ptr %r.a
  %outside = icmp sge i64 %rank0, %n
  br i1 %outside, label %next, label %enters
enters:
  %emit = icmp sge i64 %i, %emit_from
  store i64 %rank0, ptr %k.a
  br i1 %emit, label %upd, label %shift.start
upd:                                  ; ranks rank0 .. c-1: -U the holder, +U the new holder
  %k = load i64, ptr %k.a
  %k.in = icmp slt i64 %k, %c
  br i1 %k.in, label %upd.body, label %ins
upd.body:
  %h.i = add i64 %base, %k
  %h.p = getelementptr inbounds i64, ptr %slots, i64 %h.i
  %h = load i64, ptr %h.p
  %is.r = icmp eq i64 %k, %rank0
  %pv.i = sub i64 %h.i, 1
  %pv.p = getelementptr inbounds i64, ptr %slots, i64 %pv.i
  br i1 %is.r, label %upd.write, label %upd.prev
upd.prev:
  %pv = load i64, ptr %pv.p
  br label %upd.write
upd.write:
  %nw = phi i64 [ %i, %upd.body ], [ %pv, %upd.prev ]
  %rank1 = add i64 %k, 1
  %u1 = load i64, ptr %used
  call void @gz_top_n_out(ptr %out_kind, ptr %out_row, ptr %out_rank, i64 %u1, i64 0, i64 %h, i64 %rank1)
  %u2 = add i64 %u1, 1
  call void @gz_top_n_out(ptr %out_kind, ptr %out_row, ptr %out_rank, i64 %u2, i64 1, i64 %nw, i64 %rank1)
  %u3 = add i64 %u2, 1
  store i64 %u3, ptr %used
  %k.1 = add i64 %k, 1
  store i64 %k.1, ptr %k.a
  br label %upd
ins:                                  ; fewer than n held: +I for rank c + 1
  %full = icmp sge i64 %c, %n
  br i1 %full, label %shift.start, label %ins.body
ins.body:
  %last.is.i = icmp eq i64 %c, %rank0
  %l.i = add i64 %base, %c
  %l.i.1 = sub i64 %l.i, 1
  %l.p = getelementptr inbounds i64, ptr %slots, i64 %l.i.1
  br i1 %last.is.i, label %ins.write, label %ins.prev
ins.prev:
  %l = load i64, ptr %l.p
  br label %ins.write
ins.write:
  %iw = phi i64 [ %i, %ins.body ], [ %l, %ins.prev ]
  %c.rank = add i64 %c, 1
  %u4 = load i64, ptr %used
  call void @gz_top_n_out(ptr %out_kind, ptr %out_row, ptr %out_rank, i64 %u4, i64 2, i64 %iw, i64 %c.rank)
  %u5 = add i64 %u4, 1
  store i64 %u5, ptr %used
  br label %shift.start
shift.start:                          ; slots rank0+1 .. min(c, n-1) move down one; i takes rank0
  %n.1 = sub i64 %n, 1
  %c.lt = icmp slt i64 %c, %n.1
  %top = select i1 %c.lt, i64 %c, i64 %n.1
  store i64 %top, ptr %k.a
  br label %shift
shift:
  %j = load i64, ptr %k.a
  %j.more = icmp sgt i64 %j, %rank0
  br i1 %j.more, label %shift.body, label %place
shift.body:
  %d.i = add i64 %base, %j
  %d.p = getelementptr inbounds i64, ptr %slots, i64 %d.i
  %f.i = sub i64 %d.i, 1
  %f.p = getelementptr inbounds i64, ptr %slots, i64 %f.i
  %f = load i64, ptr %f.p
  store i64 %f, ptr %d.p
  %j.1 = sub i64 %j, 1
  store i64 %j.1, ptr %k.a
  br label %shift
place:
  %x.i = add i64 %base, %rank0
  %x.p = getelementptr inbounds i64, ptr %slots, i64 %x.i
  store i64 %i, ptr %x.p
  %c.full = icmp slt i64 %c, %n
  %c.1 = add i64 %c, 1
  %c.new = select i1 %c.full, i64 %c.1, i64 %n
  store i64 %c.new, ptr %c.p
  br label %next
next:
  %i.1 = add i64 %i, 1
  store i64 %i.1, ptr %i.a
  br label %row
done:
  %stop = load i64, ptr %i.a
  ret i64 %stop
}

define internal void @gz_top_n_out(ptr %kind, ptr %row, ptr %rank, i64 %at, i64 %kv, i64 %rv, i64 %nv) alwaysinline {
  %kp = getelementptr inbounds i64, ptr %kind, i64 %at
  store i64 %kv, ptr %kp
  %rp = getelementptr inbounds i64, ptr %row, i64 %at
  store i64 %rv, ptr %rp
  %np = getelementptr inbounds i64, ptr %rank, i64 %at
  store i64 %nv, ptr %np
  ret void
}
"""


@functools.lru_cache(maxsize=1)
def _top_n_loop():
    """(module, gz_top_n); the module is cached by ``jit`` and kept alive here."""
    module = compile_ir(_TOP_N_IR)
    p, i64 = ctypes.c_void_p, ctypes.c_int64
    return module, module.function("gz_top_n", i64, p, p, i64, i64, i64, i64, i64, p, p, p, p, p, i64, p)


def _making_records(kinds: np.ndarray, out_rows: np.ndarray) -> np.ndarray:
    """The run row of the record that made each change (``kinds``: the loop's codes, ``out_rows``:
    the changes' rows). A record's changes start with its own row: ``+I``, or ``+U`` at its rank
    right after that rank's ``-U``; the rows that move down after it arrived before it. So the
    record of a ``+U``/``+I`` is the latest row any of them so far has, that of a ``-U`` the
    record of the ``+U`` after it."""
    before = KINDS[kinds] == UPDATE_BEFORE
    record = np.maximum.accumulate(np.where(before, -1, out_rows))
    record[before] = record[np.flatnonzero(before) + 1]
    return record


class TopNKernel(PipelineKernel):
    """An unbounded Top-N pipeline's kernel (see the module docstring); one worker, stream order."""

    workers = 1
    emits_per_batch = True
    contributing_means = "rows ranked by Top-N"
    gen = None
    compile_ms = 0.0

    def __init__(self, pipeline: Pipeline, input_name: str):
        t: TopNTerminal = pipeline.terminal
        self.pipeline, self.terminal, self.input_name = pipeline, t, input_name
        # dictionary columns are kept decoded: Arrow sorts and concatenates them as plain strings
        self.input_schema = pa.schema([pa.field(f.name, plain_type(f.arrow_type if f.arrow_type is not None
                                                               else to_arrow_type(f.dtype)))
                                       for f in pipeline.input_schema])
        self.state_schema = self.input_schema.append(pa.field(ARRIVAL, pa.int64()))
        self.schema = pa.schema([pa.field(f.name, f.arrow_type if f.arrow_type is not None
                                          else to_arrow_type(f.dtype)) for f in t.output_schema])
        self.kept = self.state_schema.empty_table()
        self.alive = np.zeros(0, dtype=bool)  # per kept row: still in its key's top n
        order = [c for c, _ in t.order.by]
        self._ranking_columns = list(dict.fromkeys([*t.keys, *order, ARRIVAL]))
        self.arrivals = 0
        self.rows_in = 0
        self.batches_processed = 0

    # --- the protocol the driver uses -------------------------------------------------------
    def counter(self, index: int) -> int:
        return {abi.STATE_ROWS_IN: self.rows_in}.get(index, 0)

    def fire(self, watermark: int) -> None:
        return None  # every change leaves with the batch that made it

    def process(self, batch: pa.RecordBatch, watermark: int = abi.INT64_MIN, worker: int = 0,
                where=None) -> pa.RecordBatch:
        """The changes the rows of ``batch`` make to their keys' top ``n``, in stream order."""
        self.batches_processed += 1
        rows = batch.num_rows
        self.rows_in += rows
        if not rows:
            return pa.RecordBatch.from_pylist([], schema=self.schema)
        fresh = pa.Table.from_batches([batch]).cast(self.input_schema)
        fresh = fresh.append_column(ARRIVAL, pa.array(np.arange(self.arrivals, self.arrivals + rows, dtype=np.int64)))
        self.arrivals += rows
        # the kept rows of the batch's keys rank again with the batch: only their ranking columns
        # are gathered; whole rows (strings) are gathered once, for the changes and the rows that enter
        holds = rows_sharing_keys(self.kept, fresh, self.terminal.keys) & self.alive
        held = np.flatnonzero(holds)
        ranking = pa.concat_tables([self.kept.select(self._ranking_columns).filter(pa.array(holds)),
                                    fresh.select(self._ranking_columns)]).combine_chunks()
        group, groups, ord_ = self._ranked(ranking)
        kinds, out_rows, ranks, slots, counts = self._insert(group, ord_, groups, len(held))
        stride = len(slots) // groups
        slot_rows = slots.reshape(groups, stride)[np.arange(stride)[None, :] < counts[:, None]]
        out = self._run_rows(held, fresh, out_rows)
        # a held row still in its key's top n stays where it is; the batch's rows that entered are appended
        self.alive[held] = False
        self.alive[held[slot_rows[slot_rows < len(held)]]] = True
        self._keep(fresh.take(pa.array(np.sort(slot_rows[slot_rows >= len(held)]) - len(held))))
        columns = [_as_type(out.column(c).combine_chunks(), f.type)
                   for c, f in zip(self.terminal.columns, self.schema)]
        columns += [pa.array(ranks, pa.int64()), pa.array(KINDS[kinds], pa.int64())]
        if self.terminal.event_time_column is not None:
            making = self._run_rows(held, fresh, _making_records(kinds, out_rows))
            columns.append(making.column(self.terminal.event_time_column).combine_chunks())
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def _run_rows(self, held: np.ndarray, fresh: pa.Table, run_rows: np.ndarray) -> pa.Table:
        """The whole rows at ``run_rows`` of the run (the kept rows ``held``, then ``fresh``), in
        that order: the kept rows they name are gathered first (few: the rows a change moves
        out), then one ``take`` over those and ``fresh``."""
        from_kept = run_rows < len(held)
        needed = np.zeros(len(held), dtype=bool)
        needed[run_rows[from_kept]] = True  # (a mask, not np.unique: linear, no sort)
        at = np.cumsum(needed) - 1
        gathered = np.zeros(self.kept.num_rows, dtype=bool)
        gathered[held[needed]] = True  # (a filter, not a take: per chunk, and held is in kept order)
        rows = pa.concat_tables([self.kept.filter(pa.array(gathered)), fresh])
        at = np.where(from_kept, at[np.minimum(run_rows, len(held) - 1)], 0) if len(held) else 0
        return rows.take(pa.array(np.where(from_kept, at, run_rows - len(held) + int(needed.sum()))))

    def _keep(self, rows: pa.Table) -> None:
        """Add ``rows`` to the kept ones. Rows that left (``alive`` False) stay in ``kept``
        until they outnumber the live ones or the chunks grow many: copying the whole state
        for every batch would cost O(state) per batch, this O(1) per row amortized."""
        self.kept = pa.concat_tables([self.kept, rows])
        self.alive = np.concatenate([self.alive, np.ones(rows.num_rows, dtype=bool)])
        live = int(self.alive.sum())
        if len(self.alive) - live > max(live, 1024) or self.kept.column(0).num_chunks > 64:
            self.kept = self.kept.filter(pa.array(self.alive)).combine_chunks()
            self.alive = np.ones(live, dtype=bool)

    def _ranked(self, run: pa.Table) -> tuple[np.ndarray, int, np.ndarray]:
        """Each run row's key number (keys group as SQL's GROUP BY does), how many keys, and each
        row's place in the order (key, the ``by`` criteria, arrival): one stable sort by (keys,
        ``by``), since the run's rows are in arrival order (see ``process``)."""
        keys = list(self.terminal.keys)
        columns, directions = [run.column(k).combine_chunks() for k in keys], [False] * len(keys)
        for name, descending in self.terminal.order.by:
            parts = _order_keys(run.column(name).combine_chunks())
            columns += parts
            directions += [descending] * len(parts)
        names = [f"k{i}" for i in range(len(columns))]
        order = sort_indices_nulls_last(pa.table(columns, names=names), names, descending=directions).to_numpy()
        rows = len(order)
        if keys:
            new = group_starts([c.take(order) for c in columns[:len(keys)]])
        else:
            new = np.zeros(rows, dtype=bool)
            new[:1] = True
        group, places = np.empty(rows, dtype=np.int64), np.empty(rows, dtype=np.int64)
        group[order] = np.cumsum(new) - 1
        places[order] = np.arange(rows, dtype=np.int64)
        return group, int(new.sum()), places

    def _insert(self, group: np.ndarray, ord_: np.ndarray, groups: int, emit_from: int):
        """Run the compiled insertion loop over the run; its changes and the keys' slots."""
        n = self.terminal.order.n
        rows = len(group)
        stride = min(n, int(np.bincount(group, minlength=groups).max()))  # (a large n costs nothing)
        slots = np.zeros(groups * stride, dtype=np.int64)
        counts = np.zeros(groups, dtype=np.int64)
        group, ord_ = np.ascontiguousarray(group), np.ascontiguousarray(ord_)
        capacity = max(4 * (rows - emit_from), 2 * stride + 1)
        kinds, out_rows, ranks = (np.empty(capacity, dtype=np.int64) for _ in range(3))
        used = np.zeros(1, dtype=np.int64)
        loop = _top_n_loop()[1]
        at = 0
        while True:
            at = loop(group.ctypes.data, ord_.ctypes.data, at, rows, emit_from, n, stride, slots.ctypes.data,
                      counts.ctypes.data, kinds.ctypes.data, out_rows.ctypes.data, ranks.ctypes.data,
                      capacity, used.ctypes.data)
            if at >= rows:
                break
            capacity *= 2  # the rest may emit more: grow the arrays, go on from the row it stopped at
            kinds, out_rows, ranks = (np.resize(a, capacity) for a in (kinds, out_rows, ranks))
        k = int(used[0])
        return kinds[:k], out_rows[:k], ranks[:k], slots, counts

    # --- state ---------------------------------------------------------------------------
    def export_state(self) -> dict:
        kept = self.kept.filter(pa.array(self.alive))
        return {"kept": np.frombuffer(table_bytes(kept), dtype=np.uint8).copy(),
                "arrivals": self.arrivals, "rows_in": self.rows_in, "batches": self.batches_processed}

    def restore_state(self, saved: dict) -> None:
        kept = table_from(saved["kept"])
        # the kept rows are in arrival order, which ``_ranked`` relies on (sorted here too: cheap)
        self.kept = kept.take(pc.sort_indices(kept.column(ARRIVAL))) if kept.num_rows else kept
        self.alive = np.ones(self.kept.num_rows, dtype=bool)
        self.arrivals, self.rows_in = int(saved["arrivals"]), int(saved["rows_in"])
        self.batches_processed = int(saved["batches"])

    def structure_bytes(self) -> int:
        return self.kept.nbytes


__all__ = ["TopNKernel"]
