"""Unbounded Top-N per key (Flink's ``ROW_NUMBER() OVER (PARTITION BY keys ORDER BY ...) <= n``
over a dynamic table, with the row number in the output): the plan node.

``keyed.top_n(n, by=..., descending=True)`` keeps, per key, the ``n`` rows first in the order of
``by`` among every row of the key so far (the same order as window Top-N, ``window_rank.py``:
a null is the smallest value, NaN the largest number, ``-0.0`` equals ``0.0``, ties to the
earlier arrival). An updating stream; its emission is Flink's ``AppendOnlyTopNFunction`` with a
rank column (docs/semantics.md, "Updating streams"): a record that enters a key's top ``n`` at
rank ``r`` emits, for each rank ``k`` from ``r`` to the last one held before it, ``-U`` (the row
that held rank ``k``) then ``+U`` (the row that holds it now); where the key held fewer than
``n`` rows, ``+I`` for the rank that is new. A record outside the top ``n`` emits nothing.

How it runs (compiled path): ``physical.pipelines._lower_top_n`` ends the input's pipeline in a
projection and hands its batches to ``engine.top_n_kernel.TopNKernel`` (one worker, stream
order), which ranks them in Arrow and runs the per-record insertions in a compiled loop. The
reference evaluator keeps each key's rows in Python (``reference.TopN``).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from .plan import PlanNode, require_append_only
from .types import INT64, Field, Schema, SchemaError
from .window_rank import RANK, RowOrder


@dataclass(frozen=True, eq=False)
class TopNNode(PlanNode):
    """Per key, the rows ranked 1..n by ``order`` among every row of the key so far.

    Output: the input columns, then ``rank`` (int64, 1-based), each row with its row kind."""

    input: PlanNode
    keys: tuple[str, ...]
    order: RowOrder

    def __post_init__(self):
        require_append_only(f"{self.order!r}", self.input)
        schema = self.input.schema
        for k in self.keys:
            schema.field(k)  # an unknown key raises SchemaError naming it
        for f in schema:
            if f.dtype.is_list:
                raise SchemaError(f"{self.order!r}: column {f.name!r} is a list (a top_k result), which a "
                                  "Top-N cannot keep; select the other columns first")
            if f.arrow_type is not None and pa.types.is_timestamp(f.arrow_type) and f.arrow_type.unit != "ms":
                raise SchemaError(f"{self.order!r}: column {f.name!r} is a timestamp in {f.arrow_type.unit}, "
                                  "which compiled code keeps in milliseconds; cast it to int64 first, e.g. "
                                  f"with_columns({f.name}=col({f.name!r}).cast('int64'))")
        for c, _ in self.order.by:
            schema.field(c)
        self.schema

    @property
    def inputs(self):
        return (self.input,)

    @property
    def updating(self) -> bool:
        return True

    def _derive_schema(self):
        schema = self.input.schema
        if RANK in schema:
            raise SchemaError(f"{self.order!r}: input column {RANK!r} clashes with the output column of that "
                              "name (rename it first)")
        return Schema(tuple(schema) + (Field(RANK, INT64, pa.int64()),))

    def label(self):
        return f"TopN[keys=[{', '.join(self.keys)}], {self.order!r}]"


__all__ = ["TopNNode"]
