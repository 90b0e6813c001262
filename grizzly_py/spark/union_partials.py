"""Unions of several sources under a tumbling or sliding event-time window as partial states
(the ``partial`` strategy with several inputs; driver side).

A window over a union aggregates the records of every input into the same windows, so each
input can pre-aggregate alone: input ``i``'s tasks run the query with the union replaced by
input ``i`` (its own filters and projections, then the window: ``UnionWindow.inputs``), emit
partial states, and Spark shuffles the partial states of all inputs together by (keys, window
start) into the one compiled merge (``partials.py``).

Lateness is the embedded engine's: the engine reads the sources round-robin (one batch of each
per round, in the plan's order of sources) and the union's window runs under the minimum of its
inputs' watermarks, moved after every batch. The driver knows every batch's largest event time
(Parquet statistics, the Arrow batches, one aggregate over a DataFrame, which is one batch), so
it replays those rounds (``union_rounds``) and gives each batch the watermark in force when the
engine processes it; a task processes its batches under those, emits a window's partial states
when they complete it and never the windows complete before its first batch (``worker.partial_task``).
Late records, and which windows a late record still counts in, are then the engine's.

Aggregates that break event-time ties by arrival (``first``, ``last``) number each batch by its
place in those rounds; a DataFrame's rows have no such place across its partitions, so with a
DataFrame input such a query keeps the other strategies.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..codegen import abi
from ..plan import FilterNode, MapNode, PlanNode, ProjectNode, SourceNode, UnionNode, WindowAggregateNode, \
    distinct_sources, replace_inputs
from .joins import keyed_input


@dataclass(frozen=True)
class UnionWindow:
    """A query whose first window reads a union of different sources: each source, and the query
    with the union replaced by that source's input stream (its filters and projections)."""

    union: UnionNode
    window: WindowAggregateNode
    sources: tuple
    inputs: tuple[PlanNode, ...]


def union_window(root: PlanNode) -> UnionWindow | None:
    """The query's union, if it qualifies: above it only filters, projections and windows (the
    first of them tumbling or sliding in event time), below it per input only filters and
    projections over one source, a different source per input (DataFrames or Parquet and Arrow
    sources, whose batches the driver knows)."""
    node, windows = root, []
    while not isinstance(node, UnionNode):
        if isinstance(node, WindowAggregateNode):
            windows.append(node)
        elif not isinstance(node, (FilterNode, MapNode, ProjectNode)):
            return None
        node = node.input
    if not windows:
        return None
    union, first = node, windows[-1]
    kind = first.assigner.kind
    if kind.spark != "partials" or kind.clock != "event" or first.allowed_lateness_ms or first.late_tag is not None:
        return None
    sources = tuple(_only_source(stream) for stream in union.streams)
    if any(s is None or not keyed_input(s) or s.timestamp is None for s in sources) \
            or len({id(s) for s in sources}) != len(sources) or len(distinct_sources(root)) != len(sources):
        return None
    if any(call.spec.ordered for _name, call in first.aggregates) and any(_one_batch(s) for s in sources):
        return None  # a DataFrame's rows have no arrival place among the other inputs' batches
    return UnionWindow(union, first, sources, tuple(_with_input(root, union, s) for s in union.streams))


def _only_source(stream: PlanNode):
    """The source under only filters and projections, else None."""
    while isinstance(stream, (FilterNode, MapNode, ProjectNode)):
        stream = stream.input
    return stream.source if isinstance(stream, SourceNode) else None


def _one_batch(source) -> bool:
    from .sources import SparkSource
    return isinstance(source, SparkSource)


def _with_input(root: PlanNode, union: UnionNode, stream: PlanNode) -> PlanNode:
    """``root`` with ``union`` replaced by one of its inputs."""
    def walk(node):
        if node is union:
            return stream
        return replace_inputs(node, walk)
    return walk(root)


def union_rounds(maxima: list[list[int | None]], bounds: list[int]) -> tuple[list[list[int]], list[list[int]]]:
    """The embedded engine's rounds over the union's sources (in the plan's order), given each
    source's batches' largest event times (None: no rows) and out-of-orderness bounds: per source
    and batch, the union window's watermark in force while the engine processes the batch, and
    the batch's place in the rounds (its arrival order among every input's batches)."""
    n = len(maxima)
    clocks, seen = [abi.INT64_MIN] * n, [None] * n
    marks, places = [[] for _ in range(n)], [[] for _ in range(n)]
    window, live, r = abi.INT64_MIN, list(range(n)), 0
    while live:
        for s in live:
            if r < len(maxima[s]):
                marks[s].append(window)
                places[s].append(r * n + s)
                latest = maxima[s][r]
                if latest is not None:
                    seen[s] = latest if seen[s] is None else max(seen[s], latest)
                    clocks[s] = max(clocks[s], max(abi.INT64_MIN, seen[s] - bounds[s] - 1))
            else:  # the source's end: its watermark jumps to +infinity
                clocks[s] = abi.INT64_MAX
            window = max(window, min(clocks))
        live = [s for s in live if r < len(maxima[s])]
        r += 1
    return marks, places


__all__ = ["UnionWindow", "union_rounds", "union_window"]
