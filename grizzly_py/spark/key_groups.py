"""Key groups of a streaming query whose state is per key of input columns.

Rows of different keys never meet in such a query (``key_group_columns``: a keyed running
aggregate, deduplication, unbounded Top-N, count or session window, with only stateless
operators after it), so Spark can keep its state per key group and run the groups in parallel
(``streaming.stateful_dataframe``, strategy ``keyed+stream``). A row's key group is a hash of its
key columns modulo the number of groups, computed by Spark before the rows reach Python
(``key_group``); ``by_group`` cuts a task's batch into its groups' rows.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..expressions import Column, strip_alias
from ..physical.pipelines import PhysicalPlan, ProjectTerminal, SourceInput, TopNTerminal, WindowTerminal
from ..windows import COUNT, RUNNING, SESSION
from .schema import hashed_key

GROUP = "__gz_group"  # the column of a row's key group


def key_group_columns(physical: PhysicalPlan) -> list[str] | None:
    """The input columns whose values decide which part of the query's state a record touches,
    if its state is per key of input columns: the first pipeline a running aggregate (or
    deduplication), a count window or a session window keyed by input columns, or a projection
    to an unbounded Top-N keyed by columns it passes through; every later pipeline stateless and
    reading only the one before it. None otherwise."""
    pipelines = physical.pipelines
    first, rest = pipelines[0], pipelines[1:]
    if not _in_line(pipelines):
        return None
    if isinstance(first.terminal, WindowTerminal) and first.terminal.assigner.kind in (RUNNING, COUNT, SESSION):
        keys = _input_columns([e for _f, e in first.terminal.keys])
    elif isinstance(first.terminal, ProjectTerminal) and rest and isinstance(rest[0].terminal, TopNTerminal):
        passed = {f.name: e for f, e in first.terminal.outputs}
        keys = _input_columns([passed[k] for k in rest[0].terminal.keys])
        rest = rest[1:]
    else:
        return None
    return keys if keys and all(isinstance(p.terminal, ProjectTerminal) for p in rest) else None


def _input_columns(exprs) -> list[str] | None:
    """The input columns ``exprs`` read, if each is one (else None)."""
    exprs = [strip_alias(e) for e in exprs]
    return [e.name for e in exprs] if all(isinstance(e, Column) for e in exprs) else None


def _in_line(pipelines) -> bool:
    """The first pipeline reads the source, each later one only the one before it."""
    for i, p in enumerate(pipelines[1:]):
        ids = getattr(p.input, "pipeline_ids", None) or (getattr(p.input, "pipeline_id", None),)
        if tuple(ids) != (i,):
            return False
    return isinstance(pipelines[0].input, SourceInput)


def key_groups(spark) -> int:
    """How many key groups a keyed streaming query keeps its state in: the session's
    ``spark.sql.shuffle.partitions``, the partitions of Spark's state (which a checkpoint fixes)."""
    return int(spark.conf.get("spark.sql.shuffle.partitions"))


def key_group(keys: list[str], schema, groups: int):
    """The Spark column of a row's key group: ``pmod(hash(keys), groups)``, the keys hashed as
    ``schema.hashed_key`` normalizes them, so equal keys share a group."""
    from pyspark.sql import functions as F
    return F.pmod(F.hash(*[hashed_key(k, schema.field(k).dtype) for k in keys]), F.lit(groups)).cast("int")


def by_group(batch: pa.RecordBatch) -> Iterator[tuple[int, pa.RecordBatch]]:
    """``batch``'s rows by key group (``GROUP``), each group's in their order, without the group
    column."""
    groups = batch.column(GROUP)
    order = pc.sort_indices(groups)  # a stable sort: a group's rows keep their order
    sorted_groups = groups.take(order).to_numpy(zero_copy_only=False)
    data = batch.drop_columns([GROUP]).take(order)
    cuts = np.flatnonzero(np.diff(sorted_groups)) + 1
    for lo, hi in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [len(sorted_groups)]])):
        yield int(sorted_groups[lo]), data.slice(int(lo), int(hi - lo))
