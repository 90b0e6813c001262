"""Row kinds of updating streams (Flink's dynamic tables) and the tables a changelog leaves.

An updating stream (a running aggregate, ``plan.PlanNode.updating``) carries, with every row, its
row kind: ``+I`` (insert), ``-U`` (the row an update retracts), ``+U`` (the row it puts in its
place), ``-D`` (delete). Between pipelines, and in the reference evaluator, the kind travels as
the hidden int64 column ``OP_COLUMN`` (codes ``OPS``); ``stream.changelog()`` turns it into the
leading string column ``op``, and the sinks of an updating stream write the changelog (files) or
apply it (``final_table``: what ``collect`` and ``execute_and_collect`` return).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .list_order import order_bytes

OP_COLUMN = "__gz_op"      # the hidden row-kind column of an updating stream between operators
OP_NAME = "op"             # the leading string column of ``changelog()`` and of file sinks
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
OPS = ("+I", "-U", "+U", "-D")   # indexed by code
RETRACTING = (UPDATE_BEFORE, DELETE)


def op_names(codes: pa.Array) -> pa.Array:
    """The ``op`` strings of row-kind codes."""
    return pc.take(pa.array(OPS, pa.string()), pc.cast(codes, pa.int64()))


def changelog_table(table: pa.Table) -> pa.Table:
    """``table`` (with ``OP_COLUMN``) as a changelog: ``op`` first, then the other columns."""
    ops = op_names(table.column(OP_COLUMN).combine_chunks() if table.num_rows else pa.array([], pa.int64()))
    rest = table.drop_columns([OP_COLUMN])
    return pa.Table.from_arrays([ops, *rest.columns], names=[OP_NAME, *rest.column_names])


def with_kind_column(changelog: pa.Table) -> pa.Table:
    """The inverse of ``changelog_table``: the ``op`` strings back as codes in ``OP_COLUMN``, last."""
    ops = changelog.column(OP_NAME)
    codes = pc.index_in(ops, value_set=pa.array(OPS, pa.string()))
    if codes.null_count:
        raise ValueError(f"a changelog's {OP_NAME!r} column holds kinds other than {', '.join(OPS)}")
    return changelog.drop_columns([OP_NAME]).append_column(OP_COLUMN, pc.cast(codes, pa.int64()))


def changelog_schema(schema: pa.Schema) -> pa.Schema:
    """The schema of ``changelog_table`` for a schema with ``OP_COLUMN``."""
    fields = [f for f in schema if f.name != OP_COLUMN]
    return pa.schema([pa.field(OP_NAME, pa.string()), *fields])


def final_table(table: pa.Table) -> pa.Table:
    """The table a changelog (``table``, with ``OP_COLUMN``) leaves: every row inserted
    (``+I``/``+U``) and not retracted since (``-U``/``-D`` remove one equal row), sorted by its
    columns (the key columns come first), nulls last. A table without ``OP_COLUMN`` is returned
    as it is."""
    if OP_COLUMN not in table.column_names:
        return table
    rows = table.drop_columns([OP_COLUMN])
    if table.num_rows == 0 or not rows.column_names:
        return rows
    plain = decoded(rows)
    codes = table.column(OP_COLUMN).to_numpy()
    sign = np.where(np.isin(codes, RETRACTING), -1, 1).astype(np.int64)
    # a retraction cancels one equal row: group identical rows, keep those with a positive net
    grouped = plain.append_column("__gz_sign", pa.array(sign)).append_column(
        "__gz_first", pa.array(np.arange(table.num_rows, dtype=np.int64)))
    net = grouped.group_by(plain.column_names, use_threads=False).aggregate([
        ("__gz_sign", "sum"),
        ("__gz_first", "min")])
    counts = net.column("__gz_sign_sum").to_numpy()
    kept = np.repeat(net.column("__gz_first_min").to_numpy(), np.maximum(counts, 0))
    return sorted_rows(rows.take(kept))


def sorted_rows(rows: pa.Table) -> pa.Table:
    """``rows`` in the order of a final table: by its columns in order, ascending, nulls last
    (Arrow's default)."""
    order = pc.sort_indices(decoded(rows), sort_keys=[(n, "ascending") for n in rows.column_names])
    return rows.take(order)


def decoded(table: pa.Table) -> pa.Table:
    """``table`` with dictionary columns as their values and list columns (``top_k``) as binary
    values that group and sort as the lists do (``list_order``), to group and sort by."""
    def plain(c):
        if pa.types.is_dictionary(c.type):
            return c.cast(c.type.value_type)
        return order_bytes(c) if pa.types.is_list(c.type) else c
    return pa.Table.from_arrays([plain(c) for c in table.columns], names=table.column_names)
