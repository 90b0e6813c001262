"""Window Top-N and window deduplication (Flink's window Top-N and window deduplication): the
plan node, its row order, and the window aggregation it runs on.

``keyed.window(w).top_n(n, by=..., descending=...)`` keeps, per (key, window), the rows ranked
1..n; ``keyed.window(w).deduplicate(keep=...)`` one row per (key, window). Both are a
``WindowRankNode``: an ordering of a window's rows (``RowOrder``) and how many to keep.

How it runs (compiled, like every window): the node's ``aggregation`` is a window aggregation
of hidden aggregates, fired by the window kernel as any window aggregate. For Top-N they
(``agg._row_values``, ``aggregates/functions/row_values.py``) keep, per (key, window), every
row's column values, null flags and arrival position in value vectors, and the fired groups are
ranked in Arrow (``engine/window_rows.py``); for the rows at an extreme the same vectors hold only
the rows at the running extreme (``agg._extreme_rows``, ``aggregates/functions/rows_at_extreme.py``); for deduplication (``agg._row_pick``,
``aggregates/functions/row_pick.py``) each column keeps the value of the one row it picks, so
a (key, window) costs a few words per column whatever its rows. The reference evaluator ranks
the rows itself (``reference.WindowRank``). A third kind of order, internal (no DSL method), keeps
the rows at a column's ``agg.max``/``agg.min`` (``extreme_order``): the plan rewrite of a join
with a window maximum runs it (``rewrites/extreme_join.py``).

Ordering (docs/semantics.md, "Window Top-N and deduplication"): by the ``by`` columns, each ascending or
descending; a null ranks as the smallest value (Flink's default: first ascending, last
descending), NaN as the largest number, ``-0.0`` equals ``0.0``; ties go to the earlier arrival.
A row keeps its values, except that timestamps come out at the engine's millisecond precision.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from functools import cached_property

import pyarrow as pa

from .aggregates import AggCall, agg
from .expressions import Column, Expr, if_else, lit
from .plan import WINDOW_END, WINDOW_START, PlanNode, WindowAggregateNode
from .types import INT64, TIMESTAMP, Field, Schema, SchemaError
from .windows import WindowAssigner

RANK = "rank"
ARRIVAL = "__gz_arrival"           # hidden aggregates of the window aggregation
NULL_BITS = 62                     # null flags per word of a null-mask aggregate
TOP_N = "top_n"       # RowOrder.keep of top_n
KEEP_FIRST = "first"  # deduplicate(keep=...): the first row to arrive
KEEP_LAST = "last"    # or the latest event time
AT_MAX = "max"        # the rows at the largest value of one column (ties: all of them)
AT_MIN = "min"        # or at the smallest (plan rewrites only: ``rewrites/extreme_join.py``)


def row_column(i: int) -> str:
    """The hidden aggregate holding the values of the ``i``-th input column."""
    return f"__gz_row_{i}"


def null_column(j: int) -> str:
    """The hidden aggregate holding the null flags of input columns ``62*j ..``."""
    return f"__gz_nulls_{j}"


@dataclass(frozen=True)
class RowOrder:
    """Which rows of a (key, window) are kept: ``keep`` ``"top_n"`` (the first ``n`` by the
    ``by`` columns, each ``(column, descending)``, ties by arrival), ``"first"`` (the first row to
    arrive), ``"last"`` (the latest event time, ties to the later arrival), or ``AT_MAX``/``AT_MIN``
    (every row whose ``by`` column equals the group's ``agg.max``/``agg.min`` of it, in arrival
    order: nulls never, NaN only when every non-null value is NaN, ``-0.0`` equal to ``0.0``)."""

    keep: str
    n: int
    by: tuple[tuple[str, bool], ...] = ()

    @property
    def ranked(self) -> bool:
        """Whether the output has a ``rank`` column (top_n; deduplication has none)."""
        return self.keep == TOP_N

    @property
    def at_extreme(self) -> bool:
        """Whether it keeps the rows at a column's extreme (``AT_MAX``/``AT_MIN``)."""
        return self.keep in (AT_MAX, AT_MIN)

    @property
    def keeps_rows(self) -> bool:
        """Whether the window keeps every row until it fires (deduplication keeps one per group)."""
        return self.ranked or self.at_extreme

    def __repr__(self):
        if self.at_extreme:
            return f"rows_at_{self.keep}({self.by[0][0]})"
        if self.keep != TOP_N:
            return f"deduplicate(keep={self.keep!r})"
        by = ", ".join(f"{c} {'desc' if d else 'asc'}" for c, d in self.by)
        return f"top_n({self.n}, by=[{by}])"


def top_n_order(n, by, descending) -> RowOrder:
    """The ``RowOrder`` of ``top_n(n, by=..., descending=...)``, checked."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"top_n: n must be a positive int, got {n!r}")
    columns = [by] if isinstance(by, str) else list(by) if isinstance(by, (list, tuple)) else None
    if not columns or not all(isinstance(c, str) for c in columns):
        raise TypeError(f"top_n: by= takes a column name or a list of them, got {by!r}")
    if isinstance(descending, bool):
        directions = [descending] * len(columns)
    elif isinstance(descending, (list, tuple)) and all(isinstance(d, bool) for d in descending):
        directions = list(descending)
        if len(directions) != len(columns):
            raise ValueError(f"top_n: descending= has {len(directions)} entries for {len(columns)} by= columns")
    else:
        raise TypeError(f"top_n: descending= takes a bool or a list of bools, got {descending!r}")
    return RowOrder(TOP_N, n, tuple(zip(columns, directions)))


def extreme_order(column: str, keep: str) -> RowOrder:
    """The ``RowOrder`` keeping the rows at ``agg.<keep>(column)`` (``keep``: ``AT_MAX``/``AT_MIN``)."""
    if keep not in (AT_MAX, AT_MIN):
        raise ValueError(f"extreme_order: keep= is {AT_MAX!r} or {AT_MIN!r}, got {keep!r}")
    return RowOrder(keep, 0, ((column, keep == AT_MAX),))


def deduplicate_order(keep) -> RowOrder:
    if keep not in (KEEP_FIRST, KEEP_LAST):
        raise ValueError(f"deduplicate: keep= is {KEEP_FIRST!r} or {KEEP_LAST!r}, got {keep!r}")
    return RowOrder(keep, 1)


@dataclass(frozen=True)
class RankedRows:
    """What the window pipeline of a ``WindowRankNode`` emits when a window fires: the rows its
    kernel fired (Top-N: every row of each group, as lists; deduplication: each group's row)
    kept by ``order`` as ``schema``; ``columns``: the input columns they hold, in order;
    ``keys``: the window's key columns among them."""

    order: RowOrder
    columns: tuple[str, ...]
    keys: tuple[str, ...]
    schema: Schema


@dataclass(frozen=True, eq=False)
class WindowRankNode(PlanNode):
    """Per (key, window), the input rows that ``order`` keeps, emitted when the window fires.

    Output: ``window_start``, ``window_end``, the input columns, then ``rank`` (int64, 1-based;
    top_n only)."""

    input: PlanNode
    keys: tuple[str, ...]
    assigner: WindowAssigner
    order: RowOrder
    allowed_lateness_ms: int = 0

    def __post_init__(self):
        if not self.assigner.kind.window_columns:
            raise SchemaError(f"{self.order!r} over {self.assigner!r}: count windows are not supported "
                              "(time and session windows are)")
        schema = self.input.schema
        for f in schema:
            if f.dtype.is_list:
                raise SchemaError(f"{self.order!r}: column {f.name!r} is a list (a top_k result); "
                                  "window rows cannot hold lists")
        for c, _ in self.order.by:
            if schema.field(c).dtype.is_list:  # an unknown column raises SchemaError naming it
                raise SchemaError(f"top_n: cannot order by the list column {c!r}")
        self.schema
        self.aggregation  # the hidden aggregation validates the keys and the window

    @property
    def inputs(self):
        return (self.input,)

    @cached_property
    def ranked_rows(self) -> RankedRows:
        """What the compiled window pipeline does with its fired groups (``WindowTerminal.rows``)."""
        return RankedRows(self.order, tuple(self.input.schema.names), self.keys, self.schema)

    @cached_property
    def aggregation(self) -> WindowAggregateNode:
        """The window aggregation the compiled path runs. Top-N: per (key, window), every row's
        values; the rows at an extreme: the values of the rows at the running extreme
        (``agg._extreme_rows`` decides, the ``_extreme_row_values`` follow it); deduplication:
        the values of the one row it keeps."""
        schema = self.input.schema
        if not self.order.keeps_rows:
            aggs = tuple((row_column(i), agg._row_pick(Column(f.name), keep=self.order.keep))
                         for i, f in enumerate(schema))
            return WindowAggregateNode(self.input, self.keys, self.assigner, aggs, self.allowed_lateness_ms)
        if self.order.at_extreme:  # only the rows at the running extreme: the decider comes first
            (by, _), = self.order.by
            values = functools.partial(agg._extreme_row_values, decider=0)
            rows: list[tuple[str, AggCall]] = [(ARRIVAL, agg._extreme_rows(Column(by), keep=self.order.keep))]
        else:
            values = agg._row_values
            rows = [(ARRIVAL, agg._row_values(lit(0), what="arrival"))]
        for i, f in enumerate(schema):
            rows.append((row_column(i), values(Column(f.name))))
        for j in range(0, len(schema), NULL_BITS):
            rows.append((null_column(j // NULL_BITS), values(_null_mask(schema.names[j:j + NULL_BITS]))))
        return WindowAggregateNode(self.input, self.keys, self.assigner, tuple(rows), self.allowed_lateness_ms)

    def _derive_schema(self):
        schema = self.input.schema
        for name in (WINDOW_START, WINDOW_END) + ((RANK,) if self.order.ranked else ()):
            if name in schema:
                raise SchemaError(f"{self.order!r}: input column {name!r} clashes with the output column of "
                                  "that name (rename it first)")
        time_type = self.aggregation.time_arrow_type
        fields = [Field(WINDOW_START, TIMESTAMP, time_type), Field(WINDOW_END, TIMESTAMP, time_type), *schema]
        if self.order.ranked:
            fields.append(Field(RANK, INT64, pa.int64()))
        return Schema(tuple(fields))

    def label(self):
        keys = f"keys=[{', '.join(self.keys)}], " if self.keys else ""
        late = f", allowed lateness {self.allowed_lateness_ms} ms" if self.allowed_lateness_ms else ""
        return f"WindowRank[{keys}{self.assigner!r}{late}, {self.order!r}]"


def _null_mask(names: list[str]) -> Expr:
    """An int64 with bit ``i`` set where column ``names[i]`` is null."""
    mask: Expr = lit(0)
    for i, name in enumerate(names):
        mask = mask + if_else(Column(name).is_null(), lit(1 << i), lit(0))
    return mask


__all__ = ["ARRIVAL", "AT_MAX", "AT_MIN", "KEEP_FIRST", "KEEP_LAST", "NULL_BITS", "RANK", "RankedRows", "RowOrder",
           "WindowRankNode", "deduplicate_order", "extreme_order", "null_column", "row_column", "top_n_order"]
