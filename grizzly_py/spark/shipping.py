"""Plan shipping: what travels from the driver to Spark's Python workers.

A plan is plain data, except for its sources, which may hold a Spark DataFrame, an open file or
in-memory batches. ``detach`` copies a plan with every source replaced by a ``DetachedSource``
(its name, schema, event-time column and watermark, and no data); ``ShippedPlan`` is the
pickled, detached query and its hash. Executors never receive ctypes objects or compiled code:
each Python worker generates and compiles the pipelines itself (``worker.py``) and keeps them,
keyed by the plan hash, for the next task it runs.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from ..codegen.module import CODEGEN_VERSION
from ..plan import PlanNode, Query, SourceNode, replace_inputs
from ..sources import Source


@dataclass(eq=False)
class DetachedSource(Source):
    """A source as executors see it: schema, event time and watermark of the original. A worker
    may give it ``data`` (an iterable of RecordBatches) to run the embedded engine on it."""

    data: object = None
    reads_lists = True  # the last stage reads window results back, top_k lists included

    def raw_batches(self) -> Iterator[pa.RecordBatch]:
        if self.data is None:
            raise RuntimeError(f"{self.name}: a detached source has no data in this process")
        return iter(self.data)


def detach_source(src: Source, name: str | None = None) -> DetachedSource:
    return DetachedSource(name or src.name, src.arrow_schema, src.timestamp, src.watermark)


def detach(root: PlanNode, sources: dict[int, DetachedSource] | None = None) -> PlanNode:
    """``root`` with every source detached; a source read several times stays one object, and a
    subplan reached twice stays shared."""
    sources = {} if sources is None else sources
    done: dict[int, PlanNode] = {}

    def walk(node: PlanNode) -> PlanNode:
        if id(node) in done:
            return done[id(node)]
        if isinstance(node, SourceNode):
            src = node.source
            if id(src) not in sources:
                sources[id(src)] = detach_source(src)
            out = SourceNode(sources[id(src)])
        else:
            out = replace_inputs(node, walk)
        done[id(node)] = out
        return out

    return walk(root)


@dataclass(frozen=True)
class ShippedPlan:
    """A detached query, pickled once on the driver; ``plan_id`` (SHA-256 of the bytes and the
    code generator's version) keys the workers' compile caches."""

    plan_id: str
    payload: bytes
    adaptive: object = True  # the environment's ``adaptive``: False, True or AdaptiveSettings

    @staticmethod
    def of(query: Query, adaptive: object = True) -> ShippedPlan:
        payload = pickle.dumps(query, protocol=pickle.HIGHEST_PROTOCOL)
        digest = hashlib.sha256(payload + f"codegen v{CODEGEN_VERSION}".encode()).hexdigest()
        return ShippedPlan(digest, payload, adaptive)

    def load(self) -> Query:
        """A fresh copy of the query (its detached sources are this copy's own)."""
        return pickle.loads(self.payload)
