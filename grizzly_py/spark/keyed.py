"""Which single-source queries run by key on Spark: the ``keyed`` strategy's whole-query form.

A query whose state is kept per key of input columns (keyed count windows, running aggregates,
keyed deduplication and unbounded Top-N, keyed windows with allowed lateness or a late side
output, keyed window Top-N and deduplication) never combines records of different keys, so
Spark can partition the source's rows by those columns and each task can run the whole query on
the embedded engine over its keys' rows. The tasks are the ``keyed-join`` strategy's
(``joins.tagged_rows``, ``join_task.keyed_join_task``) with one source: each row carries its
source batch and its position (a DataFrame's rows: their order in it), a task rebuilds the
source's batches of its keys in stream order and moves the source clock by every batch's largest
event time, so each key sees its records in the embedded engine's order under the embedded
engine's watermarks.

``keyed_query(root)`` says whether a query qualifies (``KeyedQuery``: the source and the key
columns to partition by) or not (None): one DataFrame or file/Arrow source (not CSV: its blocks
are not known in advance) under filters and projections; a first keyed operator (the closest to
the source) whose keys are source columns passed through unchanged, not a processing-time window
(its clock is each task's); above it only filters, projections, changelogs and running
aggregates, deduplications or Top-Ns (no watermark of their own). The rows are partitioned by the
source columns that every keyed operator groups by (Nexmark Q4's shape, an aggregate by
``(auction, category)`` of which an aggregate by ``category``: by ``category``), so every group
of every operator is whole in one task; a query with no such column runs whole.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..plan import (
    ChangelogNode,
    DeduplicateNode,
    FilterNode,
    LateDataNode,
    MapNode,
    PlanNode,
    ProjectNode,
    RunningAggregateNode,
    SourceNode,
    WindowAggregateNode,
)
from ..top_n import TopNNode
from ..window_rank import WindowRankNode
from .joins import keyed_input, trace_column

_ROW_WISE = (FilterNode, MapNode, ProjectNode, ChangelogNode)
_BY_KEY = (WindowAggregateNode, RunningAggregateNode, DeduplicateNode, TopNNode, WindowRankNode, LateDataNode)
_BY_KEY_ABOVE = (RunningAggregateNode, DeduplicateNode, TopNNode)  # no watermark of their own


@dataclass(frozen=True)
class KeyedQuery:
    """A single-source query that runs by key: the operator that keys it, its source (as a
    one-element ``sources``) and the source columns to partition by (``keys[0]``), the shape
    ``joins.tagged_rows`` takes."""

    first: PlanNode
    sources: tuple
    keys: tuple


def keyed_query(root: PlanNode) -> KeyedQuery | None:
    """The query's source and partition columns, if it can run by key (module docstring)."""
    chain, node = [], root
    while not isinstance(node, SourceNode):
        if not isinstance(node, _ROW_WISE + _BY_KEY):
            return None
        chain.append(node)
        node = node.input
    source = node.source
    keyed = [n for n in chain if isinstance(n, _BY_KEY)]
    if not keyed or not keyed_input(source):
        return None
    first = keyed[-1]
    assigner = getattr(first.window if isinstance(first, LateDataNode) else first, "assigner", None)
    if assigner is not None and assigner.kind.clock == "processing":
        return None
    if any(not isinstance(above, _BY_KEY_ABOVE) for above in keyed[:-1]):
        return None
    # partition by the source columns every keyed operator groups by: each group is then whole in one task
    common = None
    for node in keyed:
        traced = {_trace(node.input, k) for k in _keys(node)} - {None}
        common = traced if common is None else common & traced
    columns = [c for c in (_trace(first.input, k) for k in _keys(first)) if c in common]
    if not columns:
        return None
    return KeyedQuery(first, (source,), (tuple(columns),))


def _keys(node: PlanNode) -> tuple[str, ...]:
    return node.window.keys if isinstance(node, LateDataNode) else node.keys


def _trace(node: PlanNode, name: str) -> str | None:
    """The source column that column ``name`` of ``node``'s output is, unchanged (through
    filters, changelogs, projections and the keys of keyed operators); None if an expression
    computes it on the way."""
    traced = trace_column(node, name, keys_of=lambda n: _keys(n) if isinstance(n, _BY_KEY) else None,
                          passes=(FilterNode, ChangelogNode))
    return None if traced is None else traced[1]


__all__ = ["KeyedQuery", "keyed_query"]
