"""Segment a logical plan into physical pipelines (produce/consume, Grizzly section 3.3.2).

Non-blocking operators (filter, with_columns, select) are fused: their expressions are
substituted into one another so that every predicate and output of a pipeline is an expression
over the pipeline's *input* columns. A pipeline ends at a window (its results feed the next
pipeline) or at the sink. The result is plain, immutable data: it can be printed, hashed,
compiled into several variants, and shipped to another process.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..expressions import Column, Expr, ProcessingTime, lit
from ..plan import (WINDOW_END, FilterNode, MapNode, PlanNode, ProjectNode, Query, SourceNode,
                    WindowAggregateNode)
from ..types import Field, Schema
from ..windows import WindowAssigner


@dataclass(frozen=True, eq=False)
class SourceInput:
    """The pipeline reads the batches of a source."""

    node: SourceNode

    @property
    def source(self):
        return self.node.source

    def describe(self) -> str:
        return f"source {self.node.source.name}"


@dataclass(frozen=True, eq=False)
class WindowInput:
    """The pipeline reads the results fired by the window of another pipeline."""

    pipeline_id: int

    def describe(self) -> str:
        return f"results of pipeline {self.pipeline_id}"


@dataclass(frozen=True, eq=False)
class ProjectTerminal:
    """The pipeline emits rows: each output column is an expression over the input columns."""

    outputs: tuple[tuple[Field, Expr], ...]

    kind = "project"

    def is_identity(self, input_schema: Schema) -> bool:
        return len(self.outputs) == len(input_schema) and all(
            isinstance(e, Column) and e.name == f.name == inf.name
            for (f, e), inf in zip(self.outputs, input_schema))


@dataclass(frozen=True, eq=False)
class AggregateSpec:
    field: Field          # output column
    func: str
    arg: Expr | None      # over the pipeline input; None for count(*)


@dataclass(frozen=True, eq=False)
class WindowTerminal:
    """The pipeline ends in a window aggregation (assign, aggregate, trigger)."""

    keys: tuple[tuple[Field, Expr], ...]
    assigner: WindowAssigner
    aggregates: tuple[AggregateSpec, ...]
    output_schema: Schema

    kind = "window"


@dataclass(frozen=True, eq=False)
class Pipeline:
    id: int
    input: SourceInput | WindowInput
    input_schema: Schema
    event_time: Expr | None          # over the input columns (None: no event time)
    out_of_orderness_ms: int
    filters: tuple[Expr, ...]
    terminal: ProjectTerminal | WindowTerminal

    @property
    def output_schema(self) -> Schema:
        if isinstance(self.terminal, WindowTerminal):
            return self.terminal.output_schema
        return Schema(tuple(f for f, _ in self.terminal.outputs))

    def used_columns(self) -> list[str]:
        """Input columns that generated code reads, in input-schema order."""
        exprs: list[Expr] = list(self.filters)
        if self.event_time is not None and isinstance(self.terminal, WindowTerminal):
            exprs.append(self.event_time)
        if isinstance(self.terminal, WindowTerminal):
            exprs += [e for _, e in self.terminal.keys]
            exprs += [a.arg for a in self.terminal.aggregates if a.arg is not None]
        else:
            exprs += [e for f, e in self.terminal.outputs if not isinstance(e, Column)]
        used = set().union(*(e.columns() for e in exprs)) if exprs else set()
        return [f.name for f in self.input_schema if f.name in used]

    def explain(self) -> str:
        lines = [f"Pipeline {self.id}: reads {self.input.describe()} {self.input_schema}"]
        if self.event_time is not None:
            lines.append(f"  event time: {self.event_time!r}, out-of-orderness {self.out_of_orderness_ms} ms")
        for f in self.filters:
            lines.append(f"  filter   {f!r}")
        t = self.terminal
        if isinstance(t, WindowTerminal):
            lines.append(f"  window   {t.assigner!r}")
            if t.keys:
                lines.append("  keys     " + ", ".join(f"{f.name}={e!r}" for f, e in t.keys))
            for a in t.aggregates:
                lines.append(f"  agg      {a.field.name} = {a.func}({'' if a.arg is None else repr(a.arg)})")
            lines.append(f"  emits    {t.output_schema}")
        else:
            lines.append("  emit     " + ", ".join(
                f.name if isinstance(e, Column) and e.name == f.name else f"{f.name}={e!r}" for f, e in t.outputs))
        return "\n".join(lines)


@dataclass(frozen=True, eq=False)
class PhysicalPlan:
    """Pipelines in execution order (producers before consumers); the last one feeds the sink."""

    pipelines: tuple[Pipeline, ...]
    query: Query = field(repr=False)

    def explain(self) -> str:
        return "\n".join(p.explain() for p in self.pipelines) + f"\nSink: {self.query.sink.kind} {self.query.sink.name}"


# ----------------------------------------------------------------------------------------------
@dataclass
class _Open:
    """A pipeline being built: its input and the fused operators so far."""

    input: SourceInput | WindowInput
    input_schema: Schema
    event_time: Expr | None
    out_of_orderness_ms: int
    filters: list[Expr]
    columns: dict[str, Expr]  # current schema's column -> expression over the input


def build_physical_plan(query: Query) -> PhysicalPlan:
    pipelines: list[Pipeline] = []
    open_ = _lower(query.root, pipelines)
    if open_ is not None:  # the root is a stateless chain: close it with a projection
        outputs = tuple((f, open_.columns[f.name]) for f in query.root.schema)
        pipelines.append(_close(open_, ProjectTerminal(outputs), len(pipelines)))
    return PhysicalPlan(tuple(pipelines), query)


def _close(o: _Open, terminal, pid: int) -> Pipeline:
    return Pipeline(pid, o.input, o.input_schema, o.event_time, o.out_of_orderness_ms,
                    tuple(o.filters), terminal)


def _identity(schema: Schema) -> dict[str, Expr]:
    return {f.name: Column(f.name) for f in schema}


def _lower(node: PlanNode, done: list[Pipeline]) -> _Open | None:
    """Lower ``node``; returns the still-open pipeline, or None if ``node`` closed one."""
    if isinstance(node, SourceNode):
        src = node.source
        return _Open(SourceInput(node), node.schema,
                     Column(src.timestamp) if src.timestamp is not None else None,
                     src.watermark.out_of_orderness_ms, [], _identity(node.schema))
    if isinstance(node, WindowAggregateNode):
        o = _open_after(node.input, done)
        if node.assigner.kind.endswith("_processing"):  # the window's time is the clock at processing
            o.event_time, o.out_of_orderness_ms = ProcessingTime(), 0
        keys = tuple((node.schema.field(k), o.columns[k]) for k in node.keys)
        aggs = tuple(AggregateSpec(node.schema.field(name), call.func,
                                   None if call.arg is None else call.arg.substitute(o.columns))
                     for name, call in node.aggregates)
        done.append(_close(o, WindowTerminal(keys, node.assigner, aggs, node.schema), len(done)))
        return None
    o = _open_after(node.inputs[0], done)
    if isinstance(node, FilterNode):
        o.filters.append(node.predicate.substitute(o.columns))
    elif isinstance(node, MapNode):
        o.columns = {**o.columns, **{name: e.substitute(o.columns) for name, e in node.columns}}
    elif isinstance(node, ProjectNode):
        o.columns = {name: e.substitute(o.columns) for name, e in node.columns}
    else:
        raise NotImplementedError(f"no physical lowering for {type(node).__name__}")
    return o


def _open_after(node: PlanNode, done: list[Pipeline]) -> _Open:
    """The open pipeline that continues after ``node`` (a new one if ``node`` is a window)."""
    o = _lower(node, done)
    if o is not None:
        return o
    producer = done[-1]
    schema = producer.output_schema
    # a window result's event time is window_end - 1 (Flink); the watermark comes from upstream.
    # Count window results have no window columns, so no event time.
    event_time = Column(WINDOW_END) - lit(1) if WINDOW_END in schema else None
    return _Open(WindowInput(producer.id), schema, event_time, producer.out_of_orderness_ms, [], _identity(schema))


__all__ = ["Pipeline", "PhysicalPlan", "ProjectTerminal", "WindowTerminal", "AggregateSpec",
           "SourceInput", "WindowInput", "build_physical_plan"]
