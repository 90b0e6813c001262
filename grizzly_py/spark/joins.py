"""The ``keyed-join`` strategy: a join of two sources, or a union of sources under a keyed
window, distributed by its key (driver side).

Window, interval and regular joins of two sources pair only records with equal keys, so Spark can
partition both inputs by the join key and each task can run the query on its keys' records, as
the ``keyed`` strategy does for sessions with one input:

- each source's rows (a DataFrame's, or a pushdown source's read by the input tasks) carry the
  number of their source batch and their position in it, and go into one tagged DataFrame
  (``TAG``: which source; each source's columns under its own prefix, nulls elsewhere; the key
  in common columns, integers as longs and floats normalized so equal keys hash alike);
- Spark partitions it by the key columns; a task rebuilds each source's batches of its keys in
  stream order and runs the whole query on them (``join_task.keyed_join_task``), every source
  under the watermarks the embedded engine has: the driver knows each batch's largest event time
  (Parquet statistics, the Arrow batches, one aggregate over a DataFrame), and a task's source
  clocks move by those, not by the rows it holds;
- what runs after the join stays in the task when every window there groups by the join key (a
  key's windows then see only that key's rows, all in the task); otherwise the query runs whole.

``keyed_join(root)`` says whether a query qualifies (``KeyedJoin``: the join and each source's
key columns) or not (None). ``keyed_union(root)`` does the same for a union of different sources
whose first window above groups by columns every input passes through: a key's records of every
source meet in one task, which runs the union in the embedded engine's order of source batches.

A lookup join needs no partitioning: its static table travels with the plan, so a query of only
filters, projections and lookup joins over one source (``stateless_lookup``) runs in every task
of the ``stateless`` strategy, each task probing the table with its own batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

import pyarrow as pa

from ..expressions import Column, strip_alias
from ..plan import (
    FilterNode,
    IntervalJoinNode,
    LookupJoinNode,
    MapNode,
    PlanNode,
    ProjectNode,
    RegularJoinNode,
    SourceNode,
    UnionNode,
    WindowAggregateNode,
    WindowJoinNode,
    distinct_sources,
)
from ..sources import CsvSource
from .inputs import batch_maxima, plan_splits, pushdown_source, read_split, split_target
from .schema import conform, hashed_key, spark_arrow_schema, spark_column, spark_struct
from .session import executors_here
from .sources import SparkSource
from .worker import BATCH, ROW, raw_task, report_rejected

TAG = "__gzj_source"   # which source a row is of (its index in ``KeyedJoin.sources``)
_JOINS = (WindowJoinNode, IntervalJoinNode, RegularJoinNode)


def key_column(j: int) -> str:
    return f"__gzj_key{j}"


def source_column(i: int, column: str) -> str:
    return f"__gzj{i}_{column}"


@dataclass(frozen=True)
class KeyedJoin:
    """A query whose join or union can run by key: its sources and each one's key columns (in
    the join's key order; for a union, in the order of the first window's keys)."""

    join: PlanNode          # the join or union node
    sources: tuple          # (left source, right source); a union's inputs' sources in its order
    keys: tuple             # each source's key columns


def keyed_join(root: PlanNode) -> KeyedJoin | None:
    """The query's join, if the query can run by join key: one window, interval or regular join
    with keys, each side a source read through filters and projections that pass its key columns
    through, two different sources that are DataFrames or file/Arrow sources (not CSV: its
    blocks are not known in advance), and above the join only filters, projections and windows
    grouped by (at least) every join key column."""
    join, above = _find_below(root, _JOINS)
    if join is None or not join.left_keys:
        return None
    sides = []
    for side, names in ((join.left, join.left_keys), (join.right, join.right_keys)):
        traced = [trace_column(side, n) for n in names]
        if any(t is None for t in traced) or len({id(s) for s, _ in traced}) != 1:
            return None
        sides.append((traced[0][0], tuple(c for _, c in traced)))
    (left, left_cols), (right, right_cols) = sides
    if left is right or not all(keyed_input(s) for s in (left, right)):
        return None
    if len(distinct_sources(root)) != 2:
        return None
    right_out = dict(join.right_names)
    # each join key column by the names it has in the join's output (left and right)
    key_names = [{lk, right_out.get(rk, rk)} for lk, rk in zip(join.left_keys, join.right_keys)]
    if not all(_covers(window, join, key_names) for window in above):
        return None
    return KeyedJoin(join, (left, right), (left_cols, right_cols))


def _covers(window: WindowAggregateNode, below: PlanNode, key_names: list[set]) -> bool:
    """Whether ``window`` groups by every partition key column (each a set of the names it goes
    by at ``below``'s output): then a window group's records share the whole partition key and
    meet in one task; grouping by only part of it would split a group across tasks."""
    traced = {trace_column(window.input, k, stop=below) for k in window.keys}
    return all(traced & names for names in key_names)


def keyed_union(root: PlanNode) -> KeyedJoin | None:
    """The query's union, if the query can run by key: a union of different sources (DataFrames
    or file/Arrow sources), each read through filters and projections, and above it only
    filters, projections and windows, the first of them grouped by columns every input passes
    through unchanged and each later one by all of those. A key's records then meet in
    one task, which runs the union (in the embedded engine's order of the sources' batches) and
    the windows over them."""
    union, above = _find_below(root, UnionNode)
    if union is None or not above or not above[-1].keys:
        return None
    names = [trace_column(above[-1].input, k, stop=union) for k in above[-1].keys]
    names = [n for n in names if n is not None]
    if not names:
        return None
    sources, keys = [], []
    for stream in union.streams:
        traced = [trace_column(stream, n) for n in names]
        if any(t is None for t in traced) or len({id(s) for s, _ in traced}) != 1:
            return None
        sources.append(traced[0][0])
        keys.append(tuple(c for _, c in traced))
    if len({id(s) for s in sources}) != len(sources) or not all(keyed_input(s) for s in sources) \
            or len(distinct_sources(root)) != len(sources):
        return None
    if not all(_covers(window, union, [{n} for n in names]) for window in above):
        return None
    return KeyedJoin(union, tuple(sources), tuple(keys))


def stateless_lookup(root: PlanNode) -> bool:
    """Whether the query is lookup joins, filters and projections over one source (no state:
    any cut of the stream into tasks gives the same rows)."""
    node, lookups = root, 0
    while not isinstance(node, SourceNode):
        if isinstance(node, LookupJoinNode):
            lookups += 1
        elif not isinstance(node, (FilterNode, MapNode, ProjectNode)):
            return False
        node = node.input
    return lookups > 0


def _find_below(root: PlanNode, kinds):
    """The node of ``kinds`` under ``root`` with only filters, projections and windows above it
    (and those windows), else (None, [])."""
    node, windows = root, []
    while not isinstance(node, kinds):
        if isinstance(node, WindowAggregateNode):
            windows.append(node)
        elif not isinstance(node, (FilterNode, MapNode, ProjectNode)):
            return None, []
        node = node.input
    return node, windows


def _window_keys(node: PlanNode):
    return node.keys if isinstance(node, WindowAggregateNode) else None


def trace_column(node: PlanNode, name: str, stop: PlanNode | None = None, keys_of=_window_keys,
                 passes=(FilterNode,)):
    """Where column ``name`` of ``node``'s output comes from unchanged: (source, column) at a
    source, or the column's name at ``stop``; None if an expression computes it on the way.
    ``keys_of(n)``: the key columns a stateful node passes through (None: not such a node);
    ``passes``: the nodes that pass every column."""
    while node is not stop:
        if isinstance(node, SourceNode):
            return (node.source, name) if name in node.source.arrow_schema.names else None
        if isinstance(node, (MapNode, ProjectNode)):
            expr = dict(node.columns).get(name)
            if expr is None and isinstance(node, ProjectNode):
                return None
            if expr is not None:
                expr = strip_alias(expr)
                if not isinstance(expr, Column):
                    return None
                name = expr.name
        elif (keys := keys_of(node)) is not None:
            if name not in keys:
                return None
        elif not isinstance(node, passes):
            return None
        node = node.input
    return name


def keyed_input(source) -> bool:
    """A DataFrame, or a source whose batches' watermarks the driver knows (not CSV blocks)."""
    return isinstance(source, SparkSource) or (pushdown_source(source) and not isinstance(source, CsvSource))


@dataclass(frozen=True)
class SourceLayout:
    """What a task needs to rebuild one source's batches: its schema, how many batches it has,
    each batch's largest event time (None: no rows, or no event time), and the columns that
    travel (the ones the query reads; the others are rebuilt as nulls, which no code reads)."""

    name: str
    schema: pa.Schema
    maxima: tuple
    carried: tuple

    def rebuilt(self, column, rows: int) -> pa.RecordBatch:
        """A batch of the source's schema from ``rows`` rows of its carried columns
        (``column(name)``: each one's values), the other columns as nulls."""
        carried = set(self.carried)
        columns = [column(f.name) if f.name in carried else pa.nulls(rows, f.type) for f in self.schema]
        return conform(pa.RecordBatch.from_arrays(columns, names=self.schema.names), self.schema)


def tagged_rows(spark, plan: KeyedJoin, tasks: int, acc, columns: dict | None = None,
                frames: dict | None = None):
    """The sources' rows as one tagged DataFrame (module docstring) and each source's layout.
    ``plan``: its ``sources`` and their ``keys`` (a ``KeyedJoin``, or one source keyed by
    columns: ``keyed.KeyedQuery``); ``columns``: per source name, the columns the query reads
    (default: all); ``frames``: a DataFrame source's rows after the filters Spark evaluates
    (``filters.py``), by source name."""
    from pyspark.sql import functions as F
    parts, layouts = [], []
    carried = [(columns or {}).get(s.name) or tuple(s.arrow_schema.names) for s in plan.sources]
    for i, (source, keys) in enumerate(zip(plan.sources, plan.keys)):
        rows, maxima = _rows(spark, source, tasks, acc, carried[i], (frames or {}).get(source.name))
        layouts.append(SourceLayout(source.name, source.arrow_schema, tuple(maxima), carried[i]))
        out = [F.lit(i).alias(TAG), spark_column(BATCH).alias(BATCH), spark_column(ROW).alias(ROW)]
        out += [hashed_key(k, source.schema.field(k).dtype).alias(key_column(j)) for j, k in enumerate(keys)]
        for j, other in enumerate(plan.sources):
            schema = pa.schema([other.arrow_schema.field(c) for c in carried[j]])
            for field in spark_struct(spark_arrow_schema(schema)).fields:
                value = spark_column(field.name) if i == j else F.lit(None).cast(field.dataType)
                out.append(value.alias(source_column(j, field.name)))
        parts.append(rows.select(*out))
    return reduce(lambda a, b: a.unionByName(b), parts), layouts


def _rows(spark, source, tasks: int, acc, columns: tuple, df=None):
    """A source's ``columns`` with ``BATCH`` and ``ROW``, and each source batch's largest event
    time (``df``: a DataFrame source's rows, if not its own DataFrame's)."""
    from pyspark.sql import functions as F
    if isinstance(source, SparkSource):
        df = (source.df if df is None else df).select(*[spark_column(c) for c in columns],
                              F.lit(0).cast("long").alias(BATCH), F.monotonically_increasing_id().alias(ROW))
        return df, dataframe_maxima(source)
    splits = plan_splits(source, split_target(tasks), columns,
                         executors_here=executors_here(spark.sparkContext.master))
    schema = spark_arrow_schema(pa.schema([source.arrow_schema.field(c) for c in columns])).append(
        pa.field(BATCH, pa.int64())).append(pa.field(ROW, pa.int64()))

    def by_split(it):
        for ids in it:
            for i in ids.column(0).to_pylist():
                rejected: dict = {}
                yield from raw_task(splits[i], read_split(splits[i], rejected))
                report_rejected(acc, rejected)
    rows = spark.range(0, len(splits), 1, len(splits)).mapInArrow(by_split, spark_struct(schema))
    return rows, batch_maxima(source)


def dataframe_maxima(source: SparkSource) -> list:
    """A DataFrame is one batch of its stream (none if it is empty): its largest event time in
    epoch ms (timestamps floored), from one Spark aggregate."""
    from pyspark.sql import functions as F
    ts = source.timestamp
    if ts is None:
        return [None] if source.df.limit(1).count() else []
    c = spark_column(ts)
    is_time = pa.types.is_timestamp(source.arrow_schema.field(ts).type)
    row = source.df.agg(F.count(F.lit(1)).alias("n"), F.max(F.unix_micros(c) if is_time else c).alias("m")).first()
    if not row["n"]:
        return []
    top = row["m"]
    return [None if top is None else (int(top) // 1000 if is_time else int(top))]


__all__ = ["KeyedJoin", "SourceLayout", "dataframe_maxima", "keyed_input", "keyed_join", "keyed_union",
           "stateless_lookup", "tagged_rows", "trace_column"]
