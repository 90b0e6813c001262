"""The engine side of a window join that emits its pairs' counts (``physical/pair_counts.py``):
from a firing's pairs in the join's order (window end, join key, left arrival, right arrival),
the count's rows in the count's order (window end, keys; nulls last).

The sort-merge join's merge counts each left row's pairs itself (``merge_count`` in
``join_kpa_state.ll.j2``) where its key words compare as the keys do (the merge writes keys in
order), and writes the rows' key words: an int64 join key is not gathered. Otherwise a left
row's pairs are adjacent in the join's order and their number is a run length. Only the left
rows that pair are gathered, and only their key columns, never a right row. Where the count's
keys begin with the join's keys and no two adjacent left rows share window and join key (each
person once per window: Nexmark Q8), every left row is a group of its own and already in the
count's order: no grouping, no sort. Otherwise the rows are grouped (Arrow ``group_by``, the
sum of the numbers of pairs) and sorted as a window aggregate sorts its results
(``kernels.sort_indices_nulls_last``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..plan import WINDOW_END, WINDOW_START
from .kernels import sort_indices_nulls_last


def left_rows_of_pairs(starts: np.ndarray, ends: np.ndarray, lrefs: np.ndarray) -> tuple[np.ndarray, ...]:
    """(window starts, window ends, left refs, pairs) of the left rows that pair, from pairs in
    the join's order (window end, key, left ref, right ref): a left row's pairs are adjacent."""
    n = len(lrefs)
    first = np.empty(n, dtype=bool)
    first[:1] = True
    np.not_equal(lrefs[1:], lrefs[:-1], out=first[1:])
    first[1:] |= ends[1:] != ends[:-1]
    first = np.flatnonzero(first)
    return starts[first], ends[first], lrefs[first], np.diff(np.append(first, n))


def counted_rows(kernel, starts: np.ndarray, ends: np.ndarray, lrefs: np.ndarray, pairs: np.ndarray,
                 key_words: np.ndarray | None = None) -> pa.RecordBatch:
    """The count's rows of ``kernel`` (a ``JoinKernel`` whose terminal counts pairs) from the left
    rows that pair, in the join's order (window end, join key, arrival): their windows, refs and
    numbers of pairs; ``key_words``: their first key words, where the merge wrote them (an int64
    join key column's values: not gathered)."""
    t = kernel.terminal
    counts, schema = t.pair_counts, kernel.schema
    sources = dict(t.sides[0].columns)
    from_words = _key_from_words(kernel, key_words)
    gathered = kernel.stores[0].take(lrefs, [sources[k] for k in counts.keys if k != from_words])
    keys = [pa.array(key_words, pa.int64()) if k == from_words else gathered.pop(0) for k in counts.keys]
    keys = [_combined(a).cast(schema.field(k).type) if _combined(a).type != schema.field(k).type else _combined(a)
            for a, k in zip(keys, counts.keys)]
    if not _rows_are_groups(kernel, ends, keys):
        starts, ends, keys, pairs = _grouped(starts, ends, keys, pairs)
    values = {WINDOW_START: kernel._time_array(starts), WINDOW_END: kernel._time_array(ends),
              **dict(zip(counts.keys, keys))}
    counted = pa.array(pairs, pa.int64())
    values.update((c, counted) for c in counts.counts)
    return pa.RecordBatch.from_arrays([values[f.name] for f in schema], schema=schema)


def _key_from_words(kernel, key_words) -> str | None:
    """The count's key column that is the join's one key and int64 on both the side and the
    output, whose values the key words are (``codegen.lowering.key_word``); None: gather all."""
    t = kernel.terminal
    if key_words is None or len(t.sides[0].keys) != 1:
        return None
    column = t.sides[0].keys[0][1].name
    for out, source in t.sides[0].columns:
        if (source == column and out in t.pair_counts.keys and kernel.schema.field(out).type == pa.int64()
                and kernel.stores[0].schema.field(source).type == pa.int64()):
            return out
    return None


def _combined(a) -> pa.Array:
    return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a


def _rows_are_groups(kernel, ends: np.ndarray, keys: list[pa.Array]) -> bool:
    """Whether each left row is a group of its own, in the count's order: the count's keys begin
    with the join's left keys (rows come in their order) and no two adjacent rows share the
    window and the join keys (then they differ in the first keys, whatever follows)."""
    join_keys = tuple(e.name for _, e in kernel.terminal.sides[0].keys)
    sources = dict(kernel.terminal.sides[0].columns)
    leading = tuple(sources[k] for k in kernel.terminal.pair_counts.keys[:len(join_keys)])
    if leading != join_keys:
        return False
    if len(ends) < 2:
        return True
    same = ends[1:] == ends[:-1]
    for key in keys[:len(join_keys)]:
        if not same.any():
            break
        if pa.types.is_integer(key.type) and not key.null_count:
            values = key.to_numpy()
            same &= values[1:] == values[:-1]
        else:  # (join keys are never null: a null key joins nothing)
            equal = pc.equal(key.slice(1), key.slice(0, len(key) - 1))
            same &= equal.fill_null(False).to_numpy(zero_copy_only=False)
    return not same.any()


def _grouped(starts, ends, keys, pairs):
    """Rows grouped by (window, keys), pairs summed, in the count's order."""
    names = [f"k{i}" for i in range(len(keys))]
    table = pa.table([pa.array(starts, pa.int64()), pa.array(ends, pa.int64()), *keys,
                      pa.array(pairs, pa.int64())], names=["s", "e", *names, "n"])
    grouped = table.group_by(["e", "s", *names], use_threads=False).aggregate([("n", "sum")])
    grouped = grouped.take(sort_indices_nulls_last(grouped, ["e", *names]))
    return (grouped.column("s").to_numpy(), grouped.column("e").to_numpy(),
            [_combined(grouped.column(k)) for k in names], grouped.column("n_sum").to_numpy())


__all__ = ["counted_rows", "left_rows_of_pairs"]
