"""Window Top-N and window deduplication at firing: what the kernel fired, as the window's rows.

A Top-N window (``window_rank.WindowRankNode``) runs as a window aggregation whose hidden
``_row_values`` aggregates hold, per (key, window), one list entry per record: its arrival
position, each input column's value and the columns' null flags, the i-th entries of every list
belonging to one record. When the window fires, the kernel emits one row per group (ordered by
window_end, then key); ``rank_rows`` turns them into the kept rows with one vectorized sort
(group, the order's criteria, arrival) and a cut at ``n``. A deduplication's kernel has picked
each group's row already (``_row_pick``): its values only take the output's names and types.
The rows at a column's extreme (``RowOrder`` ``AT_MAX``/``AT_MIN``, what the rewrite of a join with
a window maximum runs: ``rewrites/extreme_join.py``) were kept by the kernel already
(``agg._extreme_rows``): they only take the order of window results, then arrival.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..physical.pipelines import Pipeline, WindowTerminal
from ..plan import WINDOW_END, WINDOW_START
from ..window_rank import ARRIVAL, NULL_BITS, RankedRows, RowOrder, null_column, row_column
from .kernels import sort_indices_nulls_last


def ranked_output(pipeline: Pipeline, fired: pa.RecordBatch | None, schema: pa.Schema) -> pa.RecordBatch | None:
    """What ``pipeline`` emits for the batch its kernel fired: the batch itself, or, for a ranked
    window, its kept rows as ``schema`` (None when there are none)."""
    t = pipeline.terminal
    if fired is None or not isinstance(t, WindowTerminal) or t.rows is None:
        return fired
    return rank_rows(t.rows, fired, schema)


def rank_rows(rows: RankedRows, fired: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch | None:
    if not rows.order.keeps_rows:  # deduplication: each group's row, picked by the kernel
        out = [fired.column(WINDOW_START), fired.column(WINDOW_END)]
        out += [fired.column(row_column(i)) for i in range(len(rows.columns))]
        return pa.RecordBatch.from_arrays([_as_type(c, f.type) for c, f in zip(out, schema)], schema=schema)
    arrivals = fired.column(ARRIVAL)
    group = pc.list_parent_indices(arrivals).to_numpy()
    if not len(group):
        return None
    masks = [pc.list_flatten(fired.column(null_column(j))).to_numpy()
             for j in range((len(rows.columns) + NULL_BITS - 1) // NULL_BITS)]
    values = {}
    for i, name in enumerate(rows.columns):
        column = pc.list_flatten(fired.column(row_column(i)))
        null = ((masks[i // NULL_BITS] >> (i % NULL_BITS)) & 1).astype(bool)
        if null.any():
            column = pc.if_else(pa.array(~null), column, pa.scalar(None, column.type))
        values[name] = column
    # the kernel fires the groups unordered (WindowKernel._sorted): each group's place in the
    # order window results leave in (window_end, then keys) leads the rows' order
    places = sort_indices_nulls_last(pa.Table.from_batches([fired]), [WINDOW_END, *rows.keys]).to_numpy()
    place = np.empty(len(places), dtype=np.int64)
    place[places] = np.arange(len(places))
    order = rows.order
    if order.at_extreme:
        return _rows_at_extreme(rows, fired, schema, values, group, place, pc.list_flatten(arrivals))
    ranked, rank = ranks(order, values, place[group], pc.list_flatten(arrivals))
    sorted_group = group[ranked]  # (in order of place: a group's rows are contiguous)
    kept = rank <= order.n
    take, of_group = pa.array(ranked[kept]), pa.array(sorted_group[kept])
    out = [fired.column(WINDOW_START).take(of_group), fired.column(WINDOW_END).take(of_group)]
    out += [values[name].take(take) for name in rows.columns]
    out.append(pa.array(rank[kept], pa.int64()))
    return pa.RecordBatch.from_arrays([_as_type(c, f.type) for c, f in zip(out, schema)], schema=schema)


def ranks(order: RowOrder, values: dict, group: np.ndarray, arrivals: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The rows (the i-th entries of ``values``' columns, of ``group`` and ``arrivals``) sorted
    by group, then by ``order`` (``top_n``), then arrival; and each sorted row's rank in its group
    (1-based)."""
    keys = {"group": group, "arrival": arrivals}
    sort_keys = [("group", "ascending")]
    for n, (name, descending) in enumerate(order.by):
        direction = "descending" if descending else "ascending"
        for part, key in enumerate(_order_keys(values[name])):
            keys[f"by{n}_{part}"] = key
            sort_keys.append((f"by{n}_{part}", direction))
    sort_keys.append(("arrival", "ascending"))
    ranked = pc.sort_indices(pa.table(keys), sort_keys=sort_keys).to_numpy()
    sorted_group = group[ranked]
    first = np.flatnonzero(np.r_[True, sorted_group[1:] != sorted_group[:-1]])
    return ranked, np.arange(len(ranked)) - np.repeat(first, np.diff(np.r_[first, len(ranked)])) + 1


def _rows_at_extreme(rows: RankedRows, fired: pa.RecordBatch, schema: pa.Schema, values: dict, group: np.ndarray,
                     place: np.ndarray, arrivals: pa.Array) -> pa.RecordBatch | None:
    """The rows whose ``by`` column equals their group's ``agg.max`` (``min``) of it, ordered by
    group, then arrival: what a window join of the rows with their window's extreme on that
    column pairs (``rewrites/extreme_join.py``). The kernel kept only those rows
    (``agg._extreme_rows``); merged worker states hold them in no set order, hence the sort by
    arrival position (its input batch's number above bit 32, its row below: the same numbering
    on every worker, ``task_parts.row_positions``)."""
    kept = np.lexsort((arrivals.to_numpy(zero_copy_only=False), place[group]))
    take, of_group = pa.array(kept), pa.array(group[kept])
    out = [fired.column(WINDOW_START).take(of_group), fired.column(WINDOW_END).take(of_group)]
    out += [values[name].take(take) for name in rows.columns]
    return pa.RecordBatch.from_arrays([_as_type(c, f.type) for c, f in zip(out, schema)], schema=schema)


def _as_type(column: pa.Array, arrow_type: pa.DataType) -> pa.Array:
    """``column`` as the output column's type; a timestamp's values are epoch milliseconds."""
    if pa.types.is_timestamp(arrow_type) and not pa.types.is_timestamp(column.type):
        column = column.cast(pa.timestamp("ms", arrow_type.tz))
    return column.cast(arrow_type)


def _order_keys(values: pa.Array) -> list[pa.Array]:
    """Sort keys, all without nulls, that order ``values`` as a Top-N ranks them: whether the
    value is there (a null is the smallest value), for floats whether it is NaN (the largest
    number), then the value (``-0.0`` as ``0.0``)."""
    keys = [pc.cast(values.is_valid(), pa.int8())]
    if pa.types.is_timestamp(values.type):
        values = values.cast(pa.int64())
    if pa.types.is_floating(values.type):
        nan = pc.fill_null(pc.is_nan(values), False)
        keys.append(pc.cast(nan, pa.int8()))
        values = pc.if_else(nan, pa.scalar(0.0, values.type), pc.add(values, pa.scalar(0.0, values.type)))
    default = "" if pa.types.is_string(values.type) or pa.types.is_large_string(values.type) else \
        False if pa.types.is_boolean(values.type) else 0
    keys.append(pc.fill_null(values, pa.scalar(default, values.type)))
    return keys


__all__ = ["rank_rows", "ranked_output", "ranks"]
