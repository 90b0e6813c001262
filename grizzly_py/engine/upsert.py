"""The final table of an updating stream whose rows a unique key identifies, kept per key.

A running aggregate, and a deduplication that keeps the last row, hold at most one row per key
value at any time: each key's changelog alternates a row put in (``+I``/``+U``) and the same row
taken out again (``-U``/``-D``). So does an unbounded Top-N (``top_n.TopNNode``) per (keys,
``rank``): a rank enters once (``+I``, when the key held fewer rows) and is never deleted; every
later change of it is ``-U`` of the row that held it, then ``+U`` of the row that holds it now,
both with that rank. With ``n == 1`` the rank is always 1, so the keys alone identify the row
(which lets a ``select`` drop the rank, as Nexmark Q9 does). Filters, ``with_columns`` and ``select`` that keep the key
columns as they are keep that: a deterministic row-wise operator drops, or maps alike, a row and
its later retraction. For such a stream the table the changelog leaves
(``changelog.final_table``, the semantics) is each key's last row where that row was put in, and
none where it was taken out, so the collecting sink (``sinks.CollectSink``) keeps only the last
row per key (``LastRowPerKey``) instead of every row of the changelog. ``unique_key`` finds those
key columns in a plan, or says there are none (then the sink keeps the changelog).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..changelog import INSERT, OP_COLUMN, UPDATE_AFTER, decoded, sorted_rows
from ..expressions import Column, strip_alias
from ..plan import KEEP_LAST, DeduplicateNode, FilterNode, MapNode, PlanNode, ProjectNode, RunningAggregateNode
from ..top_n import TopNNode
from ..window_rank import RANK

# The sink compacts the rows it holds once they have doubled since the last compaction (so each
# row is grouped O(1) times amortized), and not below this many.
COMPACT_MIN_ROWS = 1 << 16
_ROW = "__gz_row"


def unique_key(node: PlanNode) -> tuple[str, ...] | None:
    """The output columns of updating stream ``node`` that identify its rows (at most one row per
    value at a time), where the plan shows them: a running aggregate's or a last-row
    deduplication's keys, a Top-N's keys and ``rank`` (its keys alone when ``n == 1``), through filters, ``with_columns`` that leave them and ``select``s that
    pass them on (renamed or not). None: the plan shows none (nor for an append-only stream)."""
    if isinstance(node, RunningAggregateNode) or (isinstance(node, DeduplicateNode) and node.keep == KEEP_LAST):
        return tuple(node.keys)
    if isinstance(node, TopNNode):
        return tuple(node.keys) + ((RANK,) if node.order.n > 1 else ())
    if isinstance(node, FilterNode):
        return unique_key(node.input)
    if isinstance(node, MapNode):
        key = unique_key(node.input)
        replaced = {name for name, _ in node.columns}
        return key if key is not None and not replaced.intersection(key) else None
    if isinstance(node, ProjectNode):
        key = unique_key(node.input)
        if key is None:
            return None
        passed = {}  # input column -> the first output column that passes it on
        for name, expr in node.columns:
            inner = strip_alias(expr)
            if isinstance(inner, Column):
                passed.setdefault(inner.name, name)
        return tuple(passed[k] for k in key) if all(k in passed for k in key) else None
    return None


class LastRowPerKey:
    """The rows an updating stream with unique key ``key`` leaves: batches go in (``add``, with
    ``OP_COLUMN``), each key's last row is kept while it is a ``+I``/``+U``, and ``table`` is
    ``changelog.final_table`` of every row added."""

    def __init__(self, schema: pa.Schema, key: tuple[str, ...], compact_min_rows: int = COMPACT_MIN_ROWS):
        self.schema, self.key, self.compact_min_rows = schema, list(key), compact_min_rows
        self._kept: pa.Table = schema.empty_table()   # one row per key, put in (compacted)
        self._pending: list[pa.RecordBatch] = []      # rows added since, in stream order
        self._pending_rows = 0

    def add(self, batch: pa.RecordBatch) -> None:
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        if self._pending_rows >= max(self.compact_min_rows, self._kept.num_rows):
            self._compact()

    def table(self) -> pa.Table:
        """The final table: the kept rows without their kinds, sorted as ``final_table`` sorts."""
        self._compact()
        return sorted_rows(self._kept.drop_columns([OP_COLUMN]))

    def _compact(self) -> None:
        if not self._pending:
            return
        rows = pa.concat_tables([self._kept, pa.Table.from_batches(self._pending, schema=self.schema)])
        self._pending, self._pending_rows = [], 0
        keys = decoded(rows.select(self.key)).append_column(_ROW, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
        last = keys.group_by(self.key, use_threads=False).aggregate([(_ROW, "max")]).column(f"{_ROW}_max")
        last = np.sort(last.to_numpy())  # (stream order kept: the next compaction's "last" is by position)
        kinds = rows.column(OP_COLUMN).take(last).to_numpy()
        put_in = last[(kinds == INSERT) | (kinds == UPDATE_AFTER)]
        self._kept = rows.take(pa.array(put_in)).combine_chunks()
