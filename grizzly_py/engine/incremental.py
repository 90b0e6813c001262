"""A query run one batch at a time, its state carried between calls as bytes.

``IncrementalQuery`` builds the query's pipelines (one worker, hash grouping, thread-local state:
every kernel kind that checkpoints can export), restores the state an earlier call left
(``snapshot``: the checkpoint format of ``checkpoint.export_query_state``, encoded and checked by
``snapshot.py``), feeds one batch, or one round of batches of a query over several sources (one
batch of each, in the query's order of sources, as the embedded engine's job reads them: a
union's or join's watermarks move and windows fire as there), and returns the rows the sink
received. Spark Structured Streaming's sequential strategy
(``spark/streaming.py``) keeps the bytes in Spark's state store between micro-batches, so queries
whose operators need the stream in order (sessions, count windows, processing-time windows, a
window after a window) run on a streaming DataFrame and restart exactly from Spark's checkpoint;
where it runs the query per key group, ``feed_round``'s ``latest`` moves each stream's clock of
a group by the whole stream's rows, the other groups' included.
"""

from __future__ import annotations

import pyarrow as pa

from ..plan import Query
from . import snapshot
from .adaptive import Adaptivity
from .checkpoint import (CheckpointError, export_query_state, restore_query_state, state_kind, state_layout,
                         unsupported_reason)
from .local import QueryRun
from .sinks import CollectSink

FORMAT = "grizzly-incremental"


class IncrementalQuery:
    """One query fed batch after batch (``feed``; over several sources, round after round:
    ``feed_round``), its state exported as bytes (``snapshot``) and restored into a fresh
    instance (``restore``)."""

    def __init__(self, query: Query, adaptive=True):
        self.adaptivity = Adaptivity.open(adaptive)
        # (the sink keeps every row it gets, the changelog of an updating stream: ``feed`` returns them)
        self.qr = QueryRun(query, None, None, "thread_local", self.adaptivity, "hash",
                           sink_factory=lambda spec, schema, key: CollectSink(spec, schema))
        for r in self.qr.runs:
            why = unsupported_reason(r.kernel)
            if why is not None:
                self.close()
                raise NotImplementedError(f"pipeline {r.pipeline.id}: its state cannot be carried between "
                                          f"batches: {why}")
        # what a saved state must match: the pipelines' kinds and their state layouts (words per
        # state block; key words, entry bytes and aggregate offsets per entry), so that state
        # saved by a grizzly-py whose layout differs (e.g. before float sums were compensated)
        # is refused rather than read with the wrong offsets
        self.shape = [[type(r.pipeline.terminal).__name__, state_kind(r.kernel),
                       getattr(r.gen, "state_words", None), state_layout(r.gen)] for r in self.qr.runs]

    @property
    def source(self):
        """The query's source, when it has only one."""
        return self.qr.source

    @property
    def sources(self) -> list:
        """The query's sources, in the order ``feed_round`` takes their batches."""
        return list(self.qr.sources)

    def restore(self, data: bytes | None) -> None:
        """Continue from the state ``snapshot`` returned (None: from the start)."""
        if data is None:
            return
        doc = snapshot.decode(data, "incremental state")
        if doc.get("format") != FORMAT or doc.get("shape") != self.shape:
            raise CheckpointError("the saved state is of another query (its pipelines differ), or was saved by "
                                  "a grizzly-py whose state layout differs")
        restore_query_state(self.qr, doc["query"])

    def feed(self, batch: pa.RecordBatch) -> pa.Table:
        """One batch of the only source; the rows the sink received (windows the batch completed)."""
        return self.feed_round([batch])

    def feed_round(self, batches: list[pa.RecordBatch | None], latest: list[int | None] | None = None) -> pa.Table:
        """One batch of each source (``sources``' order; None or an empty batch: the source had
        no records this round, so its watermark stays), as one round of the embedded engine's
        job; the rows the sink received. ``latest``: where the batches are one key group's part
        of the round (Spark's ``keyed+stream``), each source's largest event time over the whole
        round's batch (None: it had no records with one): right after each source's part, rows
        or not, its clock moves by the whole batch's (``QueryRun.feed_part``), so the group's
        watermarks move as the job's do, stream by stream, and fire, expire and mark late the
        same records of its keys."""
        sources = self.qr.sources
        if len(batches) != len(sources) or (latest is not None and len(latest) != len(sources)):
            raise ValueError(f"a round of this query has {len(sources)} batches, got {len(batches)}")
        fed = False
        for i, (source, batch) in enumerate(zip(sources, batches)):
            if latest is not None:
                self.qr.feed_part(batch, source, latest[i] if source.timestamp is not None else None)
            elif batch is not None and batch.num_rows:
                self.qr.feed(batch, source)
            fed = fed or (batch is not None and batch.num_rows > 0)
        if fed:
            self.qr.flush()  # (a tumbling window would otherwise keep it for a round of batches)
        return self._emitted()

    def finish(self) -> pa.Table:
        """The end of the input: every window fires; the rows the sink received."""
        self.qr.finish()
        return self._emitted()

    def snapshot(self) -> bytes:
        return snapshot.encode({"format": FORMAT, "shape": self.shape, "query": export_query_state(self.qr)})

    def metrics(self) -> dict:
        return self.qr.metrics()

    def _emitted(self) -> pa.Table:
        sink = self.qr.sink
        batches, sink.batches = sink.batches, []
        return pa.Table.from_batches(batches, schema=sink.schema)

    def close(self) -> None:
        self.qr.close()
        if self.adaptivity is not None:
            self.adaptivity.close()
