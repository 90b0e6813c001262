"""Mini-batch emission of running aggregates: one change per key and input batch.

A running aggregate's kernel writes its key's row before (``-U``) and after (``+U``) every
record (``codegen/running_aggregate.py``). Where nothing observes the changelog between batches,
only the final table (``upsert.LastRowPerKey``) or a running aggregate downstream whose state
depends only on the rows added and taken out (``AggregateSpec.retracts_exactly``) and which
filters none of them, the kernel emits per batch and key only the key's row before the batch and after it, as Flink's mini-batch
aggregation does: ``-U`` (the row before) then ``+U`` (the row after), ``+I`` for a key the
batch puts in, ``-D`` for one it empties, nothing for one it leaves as it was. The final table,
and the state of the aggregate downstream, are the same: a key's rows telescope, so each gets
the same rows in and out in the end (a deterministic map in between keeps that).

``mini_batch_pipelines`` decides which running aggregates of a physical plan may do so;
``changed_rows`` picks, from the rows a batch wrote, each key's first and last one.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from ..physical.pipelines import Pipeline, WindowTerminal
from ..windows import RunningWindow


def _is_running(pipeline: Pipeline) -> bool:
    t = pipeline.terminal
    return isinstance(t, WindowTerminal) and isinstance(t.assigner, RunningWindow)


def _retracts_exactly(pipeline: Pipeline) -> bool:
    """Whether every aggregate of running-aggregate ``pipeline`` ends in the same state whatever
    the order and grouping of the rows its updating input adds and takes out."""
    for a in pipeline.terminal.aggregates:
        kind = None if a.arg_type is None else "str" if a.arg_type.is_string else \
            "float" if a.arg_type.is_float else "int"
        if not a.spec.retracts_exactly(kind):
            return False
    return True


def mini_batch_pipelines(pipelines: list[Pipeline], consumer: dict[int, int | None], final_table: bool) -> set[int]:
    """The ids of the running-aggregate pipelines that may emit one change per key and batch:
    their rows carry no event time (nothing downstream reads it), and they feed the sink, which
    keeps the final table (``final_table``), or a running aggregate that may itself do so,
    retracts exactly and filters nothing first (its ``filtered_records`` count the rows it
    reads). ``consumer``: each pipeline's consumer (None: the sink)."""
    by_id = {p.id: p for p in pipelines}
    chosen: set[int] = set()
    for p in reversed(pipelines):  # consumers come after their producers
        if not _is_running(p) or p.terminal.event_time_column is not None:
            continue
        c = consumer[p.id]
        if c is None:
            if final_table:
                chosen.add(p.id)
        elif c in chosen and not by_id[c].filters and _retracts_exactly(by_id[c]):
            chosen.add(p.id)
    return chosen


def changed_rows(kinds: np.ndarray, keys: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """From the changelog rows of one batch (each row's kind, and per key column its words and
    validity), each changed key's rows: the indices of the rows to emit, a key's ``-U``/``-D``
    directly before its ``+U``/``+I``, and the kind each of them takes. A key's first row in the
    batch holds its row before the batch (a ``-U`` or ``-D``; a ``+I``: it had none), its last
    row the one after it (a ``+I`` or ``+U``; a ``-D``: it has none)."""
    n = len(kinds)
    if not n:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=kinds.dtype)
    columns = []
    for words, valid in keys:
        present = valid[:n].astype(bool)
        columns.append(np.where(present, words[:n], 0))
        if not present.all():
            columns.append(~present)
    ids, groups = _key_ids(columns)
    rows = np.arange(n)
    first, last = np.full(groups, n), np.full(groups, -1)
    np.minimum.at(first, ids, rows)
    np.maximum.at(last, ids, rows)
    is_last = np.zeros(n, dtype=bool)
    is_last[last] = True
    last = np.flatnonzero(is_last)  # keys in the order of their last change
    first = first[ids[last]]
    before = (kinds[first] == UPDATE_BEFORE) | (kinds[first] == DELETE)
    after = (kinds[last] == INSERT) | (kinds[last] == UPDATE_AFTER)
    rows = np.stack([np.where(before, first, -1), np.where(after, last, -1)], axis=1).ravel()
    row_kinds = np.stack([np.where(after, UPDATE_BEFORE, DELETE),
                          np.where(before, UPDATE_AFTER, INSERT)], axis=1).ravel().astype(kinds.dtype)
    keep = rows >= 0
    return rows[keep], row_kinds[keep]


def _key_ids(columns: list[np.ndarray]) -> tuple[np.ndarray, int]:
    """Each row's key as a number from 0 (in the order keys first appear), and how many keys.
    Several columns number one hash of them (a hash table, no sort); a collision (a hash shared
    by two keys) falls back to sorting by the columns."""
    by = columns[0] if len(columns) == 1 else _hashed(columns)
    encoded = pc.dictionary_encode(pa.array(by))
    ids, groups = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), len(encoded.dictionary)
    if len(columns) == 1:
        return ids, groups
    first = np.full(groups, len(ids))
    np.minimum.at(first, ids, np.arange(len(ids)))
    at_first = first[ids]
    if all(np.array_equal(c, c[at_first]) for c in columns):
        return ids, groups
    order = np.lexsort(columns[::-1])
    new_key = np.zeros(len(order), dtype=bool)
    new_key[0] = True
    for c in columns:
        ordered = c[order]
        new_key[1:] |= ordered[1:] != ordered[:-1]
    ids = np.empty(len(order), dtype=np.int64)
    ids[order] = np.cumsum(new_key) - 1
    return ids, int(new_key.sum())


_MIX = np.uint64(0x9E3779B97F4A7C15)


def _hashed(columns: list[np.ndarray]) -> np.ndarray:
    """One 64-bit hash per row of the int64 (or bool) ``columns``."""
    h = np.zeros(len(columns[0]), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for c in columns:
            h ^= c.astype(np.int64, copy=False).view(np.uint64)
            h *= _MIX
            h ^= h >> np.uint64(29)
    return h
