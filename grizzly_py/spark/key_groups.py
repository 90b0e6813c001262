"""Key groups of a streaming query whose state is per key of input columns.

Rows of different keys never meet in such a query (``key_group_columns``: a keyed running
aggregate, deduplication, unbounded Top-N, count or session window, with only filters,
projections and running aggregates, deduplications or Top-Ns by a subset of its keys after it),
so Spark can keep its state per key group and run the groups in parallel
(``streaming.stateful_dataframe``, strategy ``keyed+stream``). A row's key group is a hash of its
key columns modulo the number of groups, computed by Spark before the rows reach Python
(``key_group``); ``by_group`` cuts a task's batch into its groups' rows.

A query over several streams runs by key group where the batch planner runs it by key
(``stream_key_columns``): each stream's rows go to the group of that stream's key columns (a
join's keys of each side, a union's window keys as each input names them), so a key's rows of
every stream meet in one group.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..physical.pipelines import PhysicalPlan
from ..expressions import ProcessingTime
from ..plan import DeduplicateNode, PlanNode, RunningAggregateNode, WindowAggregateNode
from ..top_n import TopNNode
from ..windows import COUNT, SESSION
from .joins import keyed_join, keyed_union
from .keyed import keyed_query
from .schema import hashed_key

GROUP = "__gz_group"  # the column of a row's key group


def key_group_columns(physical: PhysicalPlan) -> list[str] | None:
    """The input columns whose values decide which part of the query's state a record touches,
    if its state is per key of input columns: the query runs by key on a batch DataFrame
    (``keyed.keyed_query``: the columns every keyed operator groups by, so an aggregate of an
    aggregate partitions by the keys they share) and its first keyed operator keeps its state
    without a watermark of its own or fires by its key's records or sessions (a running
    aggregate, deduplication, unbounded Top-N, count or session window without lateness). None
    otherwise."""
    keyed = keyed_query(physical.query.root)
    if keyed is None or not _steps_by_key(keyed.first):
        return None
    return list(keyed.keys[0])


def stream_key_columns(root: PlanNode, physical: PhysicalPlan) -> dict[str, list[str]] | None:
    """Each stream's key columns (by source name) of a query over several streams that runs by
    key group, as the batch planner runs it by key (``joins.keyed_join``: a window, interval or
    regular join by the columns each side passes through; ``joins.keyed_union``: a union under
    windows keyed by columns every input passes through), with no window on processing time (its
    clock would be each group's own); None otherwise. The caller checks that no window keeps
    windows for an allowed lateness or its late records, as for the batch strategy."""
    joined = keyed_join(root) or keyed_union(root)
    if joined is None or any(isinstance(p.event_time, ProcessingTime) for p in physical.pipelines):
        return None
    return {source.name: list(keys) for source, keys in zip(joined.sources, joined.keys)}


def _steps_by_key(node) -> bool:
    """A first keyed operator whose state a key group can step on its own (sessions with the
    stream's watermark: ``IncrementalQuery.feed_round``'s ``latest``)."""
    if isinstance(node, (RunningAggregateNode, DeduplicateNode, TopNNode)):
        return True
    return isinstance(node, WindowAggregateNode) and node.assigner.kind in (COUNT, SESSION) \
        and not node.allowed_lateness_ms and node.late_tag is None


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
