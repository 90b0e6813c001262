"""The ``keyed-join`` strategy in a task: the query over the rows of some join keys (``joins.py``);
and a stateless query with lookup joins over a task's batches (``lookup_task``).

The task gets the tagged rows of its keys (both sources, each row with its source batch number
and position), rebuilds each source's batches in stream order (every batch of the source, empty
where the task holds none of its rows) and runs the query on the embedded engine's ``QueryRun``
in rounds as the engine reads its sources (one batch of each source per round, in the query's
order of sources). Each source's clock moves by the batch's largest event time over the whole
source, not over the task's rows: every task's watermarks are the embedded engine's, so what is
late, when windows fire and when a regular join's TTL drops a record are the engine's too.
The ``keyed`` strategy's queries by key (``keyed.py``) run in the same task with one source.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..engine.adaptive import Adaptivity
from ..engine.local import QueryRun
from .joins import BATCH, ROW, TAG, SourceLayout, source_column
from .schema import to_spark_batches
from .shipping import ShippedPlan
from .worker import TaskReport, run_embedded

STAGE = "join"


def keyed_join_task(shipped: ShippedPlan, batches: Iterable[pa.RecordBatch], layouts: list[SourceLayout],
                    out_schema: pa.Schema, accumulator=None, stage: str = STAGE) -> Iterator[pa.RecordBatch]:
    """Run the query over this task's tagged rows; yields the query's output rows. ``stage``
    names the task in its report (``keyed``: one source partitioned by key, ``keyed.py``)."""
    parts = [b for b in batches if b.num_rows]
    table = pa.Table.from_batches(parts) if parts else None
    feeds = {layout.name: _source_batches(table, i, layout) for i, layout in enumerate(layouts)}
    del parts, table  # the sources' batches hold the rows now: keep them once while the query runs
    yield from run_sources(shipped, feeds, layouts, out_schema, accumulator, stage)


def run_sources(shipped: ShippedPlan, feeds: dict[str, list[pa.RecordBatch]], layouts: list[SourceLayout],
                out_schema: pa.Schema, accumulator=None, stage: str = STAGE) -> Iterator[pa.RecordBatch]:
    """Run the query over a task's share of every source (``feeds``: per source name, all its
    batches in order, each holding the task's rows of it) under the whole sources' clocks;
    yields the query's output rows and reports the task as ``stage``."""
    report = TaskReport(stage, None, False, accumulator)
    maxima = {layout.name: layout.maxima for layout in layouts}
    adaptivity = Adaptivity.open(shipped.adaptive)
    qr = QueryRun(shipped.load(), None, None, "thread_local", adaptivity, "hash")
    try:
        out = _run(qr, feeds, maxima)
        m = qr.metrics()
    finally:
        qr.close()
        if adaptivity is not None:
            adaptivity.close()
    report.data.update(records_in=m["records_in"], records_out=out.num_rows, filtered=m["filtered_records"],
                       late=m["late_records"])
    for p in m["pipelines"]:
        report.data["codegen_ms"] = round(report.data["codegen_ms"] + p["codegen_ms"], 3)
        report.data["compile_ms"] = round(report.data["compile_ms"] + p["compile_ms"], 3)
        report.data["pipelines"].append({k: p[k] for k in ("id", "kind", "rows_in", "rows_out", "filtered", "late",
                                                            "compile_ms", "variant_history")})
    yield from to_spark_batches(out, out_schema)
    report.send()


def _source_batches(table: pa.Table | None, index: int, layout: SourceLayout) -> list[pa.RecordBatch]:
    """Source ``index``'s batches (all of them, in order) holding this task's rows of each."""
    schema = layout.schema
    count = len(layout.maxima)
    empty = pa.RecordBatch.from_pylist([], schema=schema)
    out = [empty] * count
    if table is None:
        return out
    rows = table.filter(pc.equal(table.column(TAG), index))
    if not rows.num_rows:
        return out
    rows = rows.take(pc.sort_indices(rows, [(BATCH, "ascending"), (ROW, "ascending")]))
    numbers = rows.column(BATCH).to_numpy()
    data = layout.rebuilt(lambda name: rows.column(source_column(index, name)).combine_chunks(), rows.num_rows)
    cuts = np.flatnonzero(np.diff(numbers)) + 1
    for lo, hi in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [len(numbers)]])):
        number = int(numbers[lo])
        if not 0 <= number < count:
            raise RuntimeError(f"{layout.name}: a row of batch {number}, but the source has {count} batches")
        out[number] = data.slice(int(lo), int(hi - lo))
    return out


def _run(qr: QueryRun, feeds: dict[str, list[pa.RecordBatch]], maxima: dict[str, tuple]) -> pa.Table:
    """The embedded engine's rounds (``engine/source_loop.py``) over ``feeds``, each source's
    clock moved by the whole source's batch maxima."""
    checked = {}
    for s in qr.sources:
        s.data = feeds[s.name]
        checked[id(s)] = iter(s.batches())  # the source's own checks (types, event time)
    rounds = max(len(feeds[s.name]) for s in qr.sources)
    for r in range(rounds + 1):
        for s in qr.sources:
            n = len(feeds[s.name])
            if r == n:
                qr.end(s)
            elif r < n:
                qr.feed_part(next(checked[id(s)]), s, maxima[s.name][r])
    return qr.finish()


def lookup_task(shipped: ShippedPlan, batches: Iterable[pa.RecordBatch], source: str, out_schema: pa.Schema,
                accumulator=None) -> Iterator[pa.RecordBatch]:
    """A stateless query with lookup joins (``joins.stateless_lookup``) over this task's batches,
    in order, on the embedded engine (the static table is in the plan)."""
    out = run_embedded(shipped, {source: batches}, "stateless", accumulator)
    yield from to_spark_batches(out, out_schema)


__all__ = ["keyed_join_task", "lookup_task", "run_sources"]
