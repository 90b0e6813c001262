"""Segment a logical plan into physical pipelines (produce/consume, Grizzly section 3.3.2).

Non-blocking operators (filter, with_columns, select) are fused: their expressions are
substituted into one another so that every predicate and output of a pipeline is an expression
over the pipeline's *input* columns. A pipeline ends at a window (its results feed the next
pipeline) or at the sink. The result is plain, immutable data: it can be printed, hashed,
compiled into several variants, and shipped to another process.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pyarrow as pa

from ..aggregates import AggregateSpec, spec_of
from ..changelog import DELETE, OP_COLUMN, OPS, UPDATE_BEFORE
from ..expressions import (Alias, BinaryOp, Cast, Column, Expr, IfElse, IsIn, Literal, ProcessingTime, UnaryOp, if_else,
                           lit, strip_alias, structural_key, walk)
from ..late_records import LateRecord
from ..over import OverAggregateNode, OverFrame
from ..plan import (WINDOW_END, ChangelogNode, DeduplicateNode, FilterNode, IntervalJoinNode, LateDataNode,
                    LookupJoinNode, MapNode, PlanNode, ProjectNode, Query, RegularJoinNode, RunningAggregateNode,
                    SourceNode, UnionNode, WindowAggregateNode, WindowJoinNode)
from ..types import BOOL, FLOAT64, INT64, STRING, TIMESTAMP, DataType, Field, Schema, to_arrow_type
from ..top_n import TopNNode
from ..window_rank import RankedRows, RowOrder, WindowRankNode
from ..windows import RunningWindow, WindowAssigner
from .pair_counts import PairCounts, pair_counts


@dataclass(frozen=True, eq=False)
class SourceInput:
    """The pipeline reads the batches of a source. ``leaf`` numbers the plan's source reads
    depth-first, inputs left to right: a source batch passes through its reading pipelines in that
    order (the order of a union's inputs)."""

    node: SourceNode
    leaf: int = 0

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
class UnionInput:
    """The pipeline reads the output of several pipelines (the inputs of a union), each ending in
    a projection to the union's columns (plus the hidden event-time column, if there is one)."""

    pipeline_ids: tuple[int, ...]

    def describe(self) -> str:
        return "union of pipelines " + ", ".join(map(str, self.pipeline_ids))


@dataclass(frozen=True, eq=False)
class JoinInput:
    """The pipeline is a join: it reads the outputs of two pipelines, its left and right inputs,
    each ending in a projection to that side's columns (plus the hidden event-time column, if
    the side needs one)."""

    left: int
    right: int | None  # None: a lookup join, whose right side is its static table

    @property
    def pipeline_ids(self) -> tuple[int, ...]:
        return (self.left,) if self.right is None else (self.left, self.right)

    def describe(self) -> str:
        if self.right is None:
            return f"lookup join of pipeline {self.left} with a static table"
        return f"join of pipelines {self.left} (left) and {self.right} (right)"


def upstream_ids(input_: "SourceInput | WindowInput | UnionInput | JoinInput") -> tuple[int, ...]:
    """The pipelines whose output a pipeline with this input reads."""
    if isinstance(input_, WindowInput):
        return (input_.pipeline_id,)
    if isinstance(input_, (UnionInput, JoinInput)):
        return input_.pipeline_ids
    return ()


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
class BoundAggregate:
    """An aggregate of a window pipeline: its output column and its call over the pipeline's input."""

    field: Field          # output column
    func: str
    arg: Expr | None      # over the pipeline input; None for count(*)
    k: int | None = None  # top_k: how many values
    where: Expr | None = None  # over the pipeline input: only records for which it is true count
    arg_type: DataType | None = None  # the argument's type (None: count(*))
    variant: AggregateSpec | None = None  # the descriptor a running aggregate runs (``AggregateSpec.running``)

    @property
    def spec(self) -> AggregateSpec:
        """The function's descriptor for its argument's type (``AggregateSpec.for_argument``),
        or the ``variant`` a running aggregate chose."""
        return self.variant or spec_of(self.func).for_argument(self.arg_type)


@dataclass(frozen=True, eq=False)
class WindowTerminal:
    """The pipeline ends in a window aggregation (assign, aggregate, trigger)."""

    keys: tuple[tuple[Field, Expr], ...]
    assigner: WindowAssigner
    aggregates: tuple[BoundAggregate, ...]
    output_schema: Schema         # what the kernel writes per (key, window)
    allowed_lateness_ms: int = 0  # windows are kept this long past their firing (and fire again)
    rows: RankedRows | None = None  # window Top-N / deduplication: the fired groups' rows, ranked
    sign: Expr | None = None      # over an updating input (a running aggregate): 1 for a row that
                                  # adds its input, -1 for one that retracts it (-U, -D)
    event_time_column: str | None = None  # a running aggregate's hidden int64 input column of each
    # record's event time, which every changelog row the record makes carries in the column of that
    # name after the row kind (``RunningAggregateKernel``); None: its rows have no event time

    kind = "window"


@dataclass(frozen=True, eq=False)
class OverAggregate:
    """An aggregate of an OVER pipeline, over columns of the pipeline's input (which the pipeline
    before it computed): ``arg`` (None: ``count()``) and ``where`` (a bool column; None: every row)."""

    field: Field
    func: str
    arg: str | None
    where: str | None
    arg_type: DataType | None


@dataclass(frozen=True, eq=False)
class OverTerminal:
    """The pipeline is an OVER aggregate (``over.OverAggregateNode``): it reads the input columns,
    the aggregates' computed arguments and the int64 event time (``event_time_column``) from the
    pipeline before it, and emits each row with its aggregates as the watermark passes it.
    ``output_schema``: the input columns, the aggregates, and the event-time column when a window
    downstream needs it and no input column holds it."""

    keys: tuple[str, ...]
    frame: OverFrame
    event_time_column: str
    columns: tuple[str, ...]            # the input columns that pass through, in output order
    aggregates: tuple[OverAggregate, ...]
    output_schema: Schema

    kind = "over"


@dataclass(frozen=True, eq=False)
class TopNTerminal:
    """The pipeline is an unbounded Top-N (``top_n.TopNNode``): it reads the input columns from
    the pipeline before it and emits, per batch, the changes its rows make to their keys' first
    ``order.n`` rows (``engine/top_n_kernel.py``). ``output_schema``: the input columns, ``rank``
    and the hidden row kind."""

    keys: tuple[str, ...]
    order: RowOrder
    columns: tuple[str, ...]            # the input columns that pass through, in output order
    output_schema: Schema
    event_time_column: str | None = None  # the hidden int64 input column of each record's event
    # time, which every change the record makes carries in the column of that name after the row
    # kind (``TopNKernel``); None: the changes have no event time

    kind = "top_n"


@dataclass(frozen=True, eq=False)
class JoinSide:
    """One input of a join pipeline: the batches it delivers and what the join reads of them.
    When the input only filters and passes columns through (renamed or not), its pipeline is an
    identity and the join's kernel for this side runs its filters (``filters``) and reads its
    columns in place: the side's batches are the input pipeline's own input."""

    schema: Schema                         # the batches' columns (and a hidden event-time column)
    event_time: Expr                       # over ``schema``
    keys: tuple[tuple[Field, Expr], ...]   # key columns over ``schema``; the field has the key's
                                           # name and common type (int64 for int32/int64 keys)
    columns: tuple[tuple[str, str], ...]   # (output column, column of ``schema``), in output order
    filters: tuple[Expr, ...] = ()         # over ``schema``: records that fail them are not joined


@dataclass(frozen=True, eq=False)
class JoinTerminal:
    """The pipeline is a join of its two inputs: window joins (``assigner`` tumbling, sliding or
    session) or an interval join (``lower_ms``/``upper_ms``). Window joins emit ``window_start``,
    ``window_end``, the left columns and the right columns; interval joins the columns only.
    ``event_time_column``: the hidden int64 column after them that carries an interval join's
    event time (``max(left.ts, right.ts)``) to a pipeline downstream that needs it."""

    join_kind: str                          # "tumbling", "sliding", "session", "interval" or "regular"
    assigner: WindowAssigner | None
    lower_ms: int
    upper_ms: int
    sides: tuple[JoinSide, JoinSide]
    output_schema: Schema
    event_time_column: str | None = None
    ttl_ms: int | None = None               # a regular join's state TTL (None: records stay)
    table: pa.Table | None = None           # a lookup join's right side, inserted before any record
    # a regular or interval join's filter on the joined rows, evaluated in the probe (over output columns),
    # and per side the (output column, side column) values each held record keeps for it
    pair_filter: Expr | None = None
    pair_columns: tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]] = ((), ())
    # a window join that emits its pairs' counts per window and left columns instead of the
    # pairs (``pair_counts.py``); ``output_schema`` is then the count's
    pair_counts: PairCounts | None = None

    kind = "join"

    @property
    def is_window(self) -> bool:
        """Pairs leave when windows fire; else (interval and regular joins) as records arrive."""
        return self.join_kind not in PAIRS_ON_ARRIVAL

    def describe(self) -> str:
        if self.is_window:
            return repr(self.assigner)
        if self.join_kind == "interval":
            return f"interval between {self.lower_ms} ms and {self.upper_ms} ms"
        if self.table is not None:
            return f"lookup in a static table of {self.table.num_rows} rows"
        return "regular" + ("" if self.ttl_ms is None else f", state TTL {self.ttl_ms} ms")


PAIRS_ON_ARRIVAL = ("interval", "regular", "lookup")  # join kinds that pair records as they arrive


@dataclass(frozen=True, eq=False)
class JoinSideTerminal:
    """One side of a join pipeline, for code generation: the side's kernel inserts each record
    into the join state (and probes the other side)."""

    side: int  # 0 left, 1 right
    join: JoinTerminal

    kind = "join_side"
    aggregates = ()

    @property
    def keys(self) -> tuple[tuple[Field, Expr], ...]:
        return self.join.sides[self.side].keys


def join_side_pipeline(p: "Pipeline", side: int) -> "Pipeline":
    """The pipeline that one side of join pipeline ``p`` compiles to: it reads that side's batches."""
    t: JoinTerminal = p.terminal
    s = t.sides[side]
    return Pipeline(p.id, p.input, s.schema, s.event_time, 0, s.filters, JoinSideTerminal(side, t))


@dataclass(frozen=True, eq=False)
class Pipeline:
    id: int
    input: SourceInput | WindowInput | UnionInput | JoinInput
    input_schema: Schema             # a join's: its left side's (see JoinTerminal.sides)
    event_time: Expr | None          # over the input columns (None: no event time)
    out_of_orderness_ms: int
    filters: tuple[Expr, ...]
    terminal: ProjectTerminal | WindowTerminal | JoinTerminal | JoinSideTerminal | OverTerminal | TopNTerminal

    @property
    def output_schema(self) -> Schema:
        """The columns the pipeline emits."""
        if isinstance(self.terminal, WindowTerminal) and self.terminal.rows is not None:
            return self.terminal.rows.schema
        return self.kernel_schema

    @property
    def kernel_schema(self) -> Schema:
        """The columns the pipeline's kernel writes: a ranked window's are its groups' row
        vectors, which the engine ranks into ``output_schema`` (``engine/window_rows.py``)."""
        if isinstance(self.terminal, (WindowTerminal, JoinTerminal, OverTerminal, TopNTerminal)):
            return self.terminal.output_schema
        if isinstance(self.terminal, JoinSideTerminal):
            return self.terminal.join.output_schema
        return Schema(tuple(f for f, _ in self.terminal.outputs))

    @property
    def compiles(self) -> bool:
        """Whether the pipeline has generated code: an OVER pipeline has none (its kernel works on
        the Arrow columns that the compiled pipeline before it computes)."""
        return not isinstance(self.terminal, (OverTerminal, TopNTerminal))

    def used_columns(self) -> list[str]:
        """Input columns that generated code reads, in input-schema order."""
        exprs: list[Expr] = list(self.filters)
        if self.event_time is not None and isinstance(self.terminal, WindowTerminal):
            exprs.append(self.event_time)
        if isinstance(self.terminal, WindowTerminal):
            exprs += [e for _, e in self.terminal.keys] + [e for e in (self.terminal.sign,) if e is not None]
            exprs += [e for a in self.terminal.aggregates for e in (a.arg, a.where) if e is not None]
        elif isinstance(self.terminal, JoinSideTerminal):
            exprs += [self.event_time] + [e for _, e in self.terminal.keys]
            exprs += [Column(c) for _, c in self.terminal.join.pair_columns[self.terminal.side]]
        elif isinstance(self.terminal, (JoinTerminal, OverTerminal, TopNTerminal)):
            return []  # the kernels of its sides read them (join_side_pipeline); OVER compiles no loop
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
            lateness = f", allowed lateness {t.allowed_lateness_ms} ms" if t.allowed_lateness_ms else ""
            lines.append(f"  window   {t.assigner!r}{lateness}")
            if t.keys:
                lines.append("  keys     " + ", ".join(f"{f.name}={e!r}" for f, e in t.keys))
            for a in t.aggregates:
                args = ", ".join([repr(e) for e in (a.arg,) if e is not None] + [str(k) for k in (a.k,) if k is not None]
                                 + [f"where={e!r}" for e in (a.where,) if e is not None])
                lines.append(f"  agg      {a.field.name} = {a.func}({args})")
            if t.rows is not None:
                lines.append(f"  ranks    {t.rows.order!r}")
            lines.append(f"  emits    {self.output_schema}")
        elif isinstance(t, JoinTerminal):
            lines.append(f"  join     {t.describe()}")
            if t.pair_filter is not None:
                lines.append(f"  pairs    filter {t.pair_filter!r} (in the probe)")
            if t.pair_counts is not None:
                lines.append(f"  pairs    {t.pair_counts.describe()}")
            for name, side in zip(("left", "right"), t.sides):
                keys = ", ".join(repr(e) for _, e in side.keys) or "(none)"
                lines.append(f"  {name:<8} keys {keys}; event time {side.event_time!r}")
                for f in side.filters:
                    lines.append(f"  {name:<8} filter {f!r}")
            lines.append(f"  emits    {t.output_schema}")
        elif isinstance(t, TopNTerminal):
            lines.append(f"  top_n    {t.order!r}")
            lines.append("  keys     " + ", ".join(t.keys))
            lines.append(f"  emits    {t.output_schema}")
        elif isinstance(t, OverTerminal):
            lines.append(f"  over     {t.frame!r}, event time {t.event_time_column}")
            lines.append("  keys     " + ", ".join(t.keys))
            for a in t.aggregates:
                args = ", ".join([a.arg] if a.arg is not None else []) + (f", where={a.where}" if a.where else "")
                lines.append(f"  agg      {a.field.name} = {a.func}({args})")
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

    input: SourceInput | WindowInput | UnionInput
    input_schema: Schema
    event_time: Expr | None
    out_of_orderness_ms: int
    filters: list[Expr]
    columns: dict[str, Expr]  # current schema's column -> expression over the input


@dataclass
class _Lowering:
    """The state of one lowering: the closed pipelines so far and the next source-read number."""

    done: list[Pipeline] = field(default_factory=list)
    leaves: int = 0

    def close(self, o: _Open, terminal) -> Pipeline:
        p = Pipeline(len(self.done), o.input, o.input_schema, o.event_time, o.out_of_orderness_ms,
                     tuple(o.filters), terminal)
        self.done.append(p)
        return p


# The hidden column that carries the event time of a union's inputs to the pipeline after it,
# when no column of the union holds it (a select dropped the timestamp, inputs differ in it).
EVENT_TIME_COLUMN = "__gz_event_time"


def build_physical_plan(query: Query) -> PhysicalPlan:
    lowering = _Lowering()
    open_ = _lower(query.root, lowering, time_needed=False)
    if open_ is not None:  # the root is a stateless chain: close it with a projection
        outputs = tuple((f, open_.columns[f.name]) for f in query.root.schema)
        if OP_COLUMN in open_.columns:  # an updating stream: its rows' kinds go to the sink
            outputs += ((OP_FIELD, open_.columns[OP_COLUMN]),)
        lowering.close(open_, ProjectTerminal(outputs))
    return PhysicalPlan(tuple(lowering.done), query)


def _identity(schema: Schema) -> dict[str, Expr]:
    return {f.name: Column(f.name) for f in schema}


def _lower(node: PlanNode, lw: _Lowering, time_needed: bool) -> _Open | None:
    """Lower ``node``; returns the still-open pipeline, or None if ``node`` closed one.

    ``time_needed``: whether an operator downstream reads the event time (a window). Only then
    does a union carry its inputs' event times to the pipeline after it.
    """
    if isinstance(node, SourceNode):
        src = node.source
        lw.leaves += 1
        return _Open(SourceInput(node, lw.leaves - 1), node.schema,
                     Column(src.timestamp) if src.timestamp is not None else None,
                     src.watermark.out_of_orderness_ms, [], _identity(node.schema))
    if isinstance(node, WindowRankNode):  # a window aggregation of its rows, ranked when it fires
        return _lower_window(node.aggregation, lw, time_needed, node.ranked_rows)
    if isinstance(node, WindowAggregateNode):
        return _lower_window(node, lw, time_needed)
    if isinstance(node, RunningAggregateNode):
        return _lower_running_aggregate(node, lw, time_needed)
    if isinstance(node, DeduplicateNode):
        return _lower_deduplicate(node, lw, time_needed)
    if isinstance(node, TopNNode):
        return _lower_top_n(node, lw, time_needed)
    if isinstance(node, ChangelogNode):  # the row kind becomes the leading column "op"
        o = _open_after(node.input, lw, time_needed)
        kind = o.columns.pop(OP_COLUMN)
        op = lit(OPS[-1])
        for code in range(len(OPS) - 2, -1, -1):
            op = if_else(kind == lit(code), lit(OPS[code]), op)
        o.columns = {node.schema.names[0]: op, **o.columns}
        return o
    if isinstance(node, LateDataNode):  # the window's input, keeping the records the window drops
        o = _open_after(node.input, lw, True)
        if o.event_time is None:
            raise NotImplementedError("late_data: the window's input has no event time")
        window = node.window
        o.filters.append(LateRecord(o.event_time, window.assigner.geometry, window.allowed_lateness_ms))
        return o
    if isinstance(node, OverAggregateNode):
        return _lower_over(node, lw, time_needed)
    if isinstance(node, UnionNode):
        return _lower_union(node, lw, time_needed)
    if isinstance(node, FilterNode) and isinstance(node.input, (RegularJoinNode, IntervalJoinNode)):
        return _lower_join(node.input, lw, time_needed, node.predicate)
    if isinstance(node, (WindowJoinNode, IntervalJoinNode, RegularJoinNode)):
        return _lower_join(node, lw, time_needed)
    if isinstance(node, LookupJoinNode):
        return _lower_lookup(node, lw, time_needed)
    o = _open_after(node.inputs[0], lw, time_needed)
    if isinstance(node, FilterNode):  # each conjunct a filter of its own: code variants may reorder them
        o.filters.extend(conjuncts(node.predicate.substitute(o.columns)))
    elif isinstance(node, MapNode):
        o.columns = {**o.columns, **{name: e.substitute(o.columns) for name, e in node.columns}}
    elif isinstance(node, ProjectNode):
        kind = o.columns.get(OP_COLUMN)
        o.columns = {name: e.substitute(o.columns) for name, e in node.columns}
        if kind is not None:  # an updating stream's rows keep their kinds
            o.columns[OP_COLUMN] = kind
    else:
        raise NotImplementedError(f"no physical lowering for {type(node).__name__}")
    return o


def _lower_window(node: WindowAggregateNode, lw: _Lowering, time_needed: bool,
                  rows: RankedRows | None = None) -> None:
    """Close the open pipeline before ``node`` with its window terminal; ``rows``: the window is
    a ranked window's aggregation of its rows (``window_rank.py``)."""
    counted = pair_counts(node) if rows is None else None
    if counted is not None:  # the join below emits the counts itself
        _lower_join(node.input, lw, time_needed, counted=(counted, node.schema))
        return None
    processing = node.assigner.kind.clock == "processing"
    # count windows read event time for a window downstream or an ordered aggregate
    needs = time_needed or _reads_event_time(node) if node.assigner.kind.clock == "count" else not processing
    o, args = _with_interned_strings_read(node, _open_after(node.input, lw, needs), lw, needs)
    if processing:  # the window's time is the clock at processing
        o.event_time, o.out_of_orderness_ms = ProcessingTime(), 0
    keys = tuple((node.schema.field(k), o.columns[k]) for k in node.keys)
    lw.close(o, WindowTerminal(keys, node.assigner, _bound_aggregates(node, o, args), node.schema,
                               node.allowed_lateness_ms, rows))
# The hidden column of an updating stream's row kinds between pipelines (``changelog.py``).
OP_FIELD = Field(OP_COLUMN, INT64, pa.int64())


def _lower_running_aggregate(node: RunningAggregateNode, lw: _Lowering, time_needed: bool,
                             o: _Open | None = None, rows_keep_time: bool | None = None) -> None:
    """A running aggregate is a window pipeline with ``RunningWindow``, one global window per key
    fired by each record; its output carries each row's kind in ``OP_COLUMN``. ``o``: the open
    pipeline over its input, if the caller opened it. ``rows_keep_time`` (default
    ``time_needed``): each changelog row carries the event time of the record that made it, for a
    window downstream of ``changelog()`` (``_with_record_times``)."""
    rows_keep_time = time_needed if rows_keep_time is None else rows_keep_time
    # an ordered aggregate (first, last, a deduplication's row) reads each record's event time
    time_needed = time_needed or _reads_event_time(node)
    if o is None:
        o = _open_after(node.input, lw, time_needed)
    hidden = None
    if rows_keep_time and o.event_time is not None and not isinstance(o.event_time, ProcessingTime):
        o, hidden = _with_record_times(node, o, lw)
    o, args = _with_interned_strings_read(node, o, lw, time_needed)
    keys = tuple((node.schema.field(k), o.columns[k]) for k in node.keys)
    sign = None
    if OP_COLUMN in o.columns:  # over an updating input: -U and -D rows retract their input
        kind = o.columns[OP_COLUMN]
        sign = if_else((kind == lit(UPDATE_BEFORE)) | (kind == lit(DELETE)), lit(-1), lit(1))
    out = Schema(tuple(node.schema) + (OP_FIELD,) + ((Field(hidden, INT64, pa.int64()),) if hidden else ()))
    aggregates = tuple(replace(a, variant=a.spec.running(sign is not None)) for a in _bound_aggregates(node, o, args))
    lw.close(o, WindowTerminal(keys, RunningWindow(), aggregates, out, sign=sign, event_time_column=hidden))
    return None


def _with_record_times(node: RunningAggregateNode, o: _Open, lw: _Lowering) -> tuple[_Open, str]:
    """``o`` closed with a projection to the running aggregate's input columns (and row kinds)
    plus its event time as the hidden int64 column ``EVENT_TIME_COLUMN``, and the pipeline that
    reads them; and that column's name. The running aggregate's pipeline then has no filters:
    each record it reads makes its rows (``RunningAggregateKernel`` pairs them up)."""
    hidden = _fresh_name({*node.input.schema.names, *node.schema.names}, EVENT_TIME_COLUMN)
    o.columns[hidden] = _as_int64(o.event_time, o.input_schema)
    kinds = (OP_FIELD,) if OP_COLUMN in o.columns else ()
    read = Schema(tuple(node.input.schema) + (Field(hidden, INT64, pa.int64()),) + kinds)
    opened = _materialized(read, [read], [o], lw, False)
    opened.event_time = Column(hidden)
    opened.columns.pop(hidden)
    return opened, hidden


def _lower_deduplicate(node: DeduplicateNode, lw: _Lowering, time_needed: bool) -> _Open:
    """A deduplication is the running aggregate of each column's value in a key's chosen row
    (``DeduplicateNode.row_values``), its output put back in the input's column order. Keeping
    the first row emits only inserts: its output is append-only (no row kinds), and keeps its
    event time: through a column that holds it, or else (when a window downstream reads it)
    through the kept row's value of the hidden int64 column ``EVENT_TIME_COLUMN``."""
    running = node.row_values()
    o = _open_after(node.input, lw, time_needed or _reads_event_time(running))
    time = None
    if not node.updating and o.event_time is not None and not isinstance(o.event_time, ProcessingTime):
        time = _shared_time_column(node.input.schema, [o])
        if time is None and time_needed:
            running, time = _with_event_time_value(running, o)
    _lower_running_aggregate(running, lw, time_needed, o, rows_keep_time=time_needed and node.updating)
    out = _open_over(lw.done[-1])
    out.columns = {f.name: out.columns[f.name] for f in node.schema}
    if node.updating:
        out.columns[OP_COLUMN] = Column(OP_COLUMN)
    else:
        out.event_time = time
    return out


def _with_event_time_value(running: RunningAggregateNode, o: _Open) -> tuple[RunningAggregateNode, Column]:
    """``running`` (a deduplication's row values) with one more value, the kept row's event time,
    which ``o`` computes as the hidden int64 column ``EVENT_TIME_COLUMN``; and that column."""
    hidden = _fresh_name(running.input.schema, EVENT_TIME_COLUMN)
    o.columns[hidden] = _as_int64(o.event_time, o.input_schema)
    typed = MapNode(running.input, ((hidden, lit(0)),))  # the plan only types it: ``o`` computes it
    row_value = running.aggregates[0][1]
    values = running.aggregates + ((hidden, replace(row_value, arg=Column(hidden))),)
    return RunningAggregateNode(typed, running.keys, values), Column(hidden)


def _lower_top_n(node: TopNNode, lw: _Lowering, time_needed: bool) -> _Open:
    """The input's pipeline ends in a projection (filters and maps fused) to the input columns;
    the Top-N pipeline reads it (a one-input ``UnionInput``) and emits the changes with their
    row kinds in ``OP_COLUMN``. When something downstream reads the event time, the projection
    adds it as the hidden int64 column ``EVENT_TIME_COLUMN`` and each change carries the time
    of the record that made it in the column of that name after the row kind."""
    o = _open_after(node.input, lw, time_needed)
    in_schema = node.input.schema
    outputs = tuple((f, o.columns[f.name]) for f in in_schema)
    hidden, event_time = None, None
    if time_needed and o.event_time is not None and not isinstance(o.event_time, ProcessingTime):
        hidden = _fresh_name({*in_schema.names, *node.schema.names}, EVENT_TIME_COLUMN)
        outputs += ((Field(hidden, INT64, pa.int64()), _as_int64(o.event_time, o.input_schema)),)
        event_time = Column(hidden)
    ids = (lw.close(o, ProjectTerminal(outputs)).id,)
    out_schema = Schema(tuple(node.schema) + (OP_FIELD,) + tuple(f for f, _ in outputs[len(in_schema):]))
    terminal = TopNTerminal(node.keys, node.order, in_schema.names, out_schema, hidden)
    p = lw.close(_Open(UnionInput(ids), Schema(tuple(f for f, _ in outputs)), None, 0, [], {}), terminal)
    out = _Open(WindowInput(p.id), out_schema, event_time, 0, [], _identity(node.schema))
    out.columns[OP_COLUMN] = Column(OP_COLUMN)
    return out


def _reads_event_time(node: WindowAggregateNode | RunningAggregateNode) -> bool:
    """Whether an aggregate of ``node`` orders its records by event time."""
    return any(call.spec.ordered for _, call in node.aggregates)


def _bound_aggregates(node: WindowAggregateNode | RunningAggregateNode, o: _Open,
                      args: dict[str, Expr | None]) -> tuple[BoundAggregate, ...]:
    """The aggregates of ``node`` over the columns of the pipeline ``o`` that runs them (``args``:
    each aggregate's argument in those columns, ``_with_interned_strings_read``)."""
    return tuple(BoundAggregate(node.schema.field(name), call.func,
                                None if args[name] is None else args[name].substitute(o.columns), call.k,
                                None if call.where is None else call.where.substitute(o.columns),
                                None if call.arg is None else call.arg.dtype(node.input.schema))
                 for name, call in node.aggregates)


def _open_after(node: PlanNode, lw: _Lowering, time_needed: bool) -> _Open:
    """The open pipeline that continues after ``node`` (a new one if ``node`` is a window)."""
    o = _lower(node, lw, time_needed)
    if o is not None:
        return o
    return _open_over(lw.done[-1])


def _open_over(producer: Pipeline) -> _Open:
    """A new pipeline that reads the results of window pipeline ``producer``."""
    schema = producer.output_schema
    # a window result's event time is window_end - 1 (Flink); the watermark comes from upstream.
    # Count window results have no window columns, so no event time.
    event_time = Column(WINDOW_END) - lit(1) if WINDOW_END in schema else None
    if isinstance(producer.terminal, WindowTerminal) and producer.terminal.event_time_column is not None:
        event_time = Column(producer.terminal.event_time_column)  # a changelog row's record's time
        schema_columns = _identity(Schema(tuple(f for f in schema if f.name != event_time.name)))
    else:
        schema_columns = _identity(schema)
    return _Open(WindowInput(producer.id), schema, event_time, producer.out_of_orderness_ms, [], schema_columns)


def conjuncts(predicate: Expr) -> list[Expr]:
    """The terms of a conjunction (``a & b & c``), which keep exactly the rows the whole keeps: a
    row passes a filter only where its predicate is true, and a three-valued AND is true exactly
    where every term is."""
    e = strip_alias(predicate)
    if isinstance(e, BinaryOp) and e.op == "&":
        return conjuncts(e.left) + conjuncts(e.right)
    return [predicate]


def _lower_union(node: UnionNode, lw: _Lowering, time_needed: bool) -> _Open:
    """Each input's pipeline ends in a projection to the union's columns (in the input's own
    Arrow types; the engine casts them to the union's); the pipeline after the union reads them
    all. Each record keeps its input's event time: through a column of the union that holds it in
    every input (the source's timestamp column kept as it is, or ``window_end`` of window
    results), or else through the hidden int64 column ``EVENT_TIME_COLUMN``."""
    branches = [_open_after(i, lw, time_needed) for i in node.inputs]
    return _materialized(node.schema, [i.schema for i in node.inputs], branches, lw, time_needed)


def _materialized(schema: Schema, branch_schemas: list[Schema], branches: list[_Open], lw: _Lowering,
                  time_needed: bool) -> _Open:
    """Close each open branch with a projection to its columns (``branch_schemas``: in its own
    Arrow types) and open one pipeline that reads them all, as columns of ``schema``."""
    event_time, hidden = None, None
    if time_needed and all(b.event_time is not None for b in branches):
        event_time = _shared_time_column(schema, branches)
        if event_time is None:
            hidden = _fresh_name(schema, EVENT_TIME_COLUMN)
            event_time = Column(hidden)
    ids = []
    for branch_schema, b in zip(branch_schemas, branches):
        outputs = tuple((f, b.columns[f.name]) for f in branch_schema)
        if hidden is not None:
            outputs += ((Field(hidden, INT64, pa.int64()), _as_int64(b.event_time, b.input_schema)),)
        ids.append(lw.close(b, ProjectTerminal(outputs)).id)
    read_schema = schema
    if hidden is not None:
        read_schema = Schema(tuple(schema) + (Field(hidden, INT64, pa.int64()),))
    return _Open(UnionInput(tuple(ids)), read_schema, event_time, 0, [], _identity(schema))


def _with_interned_strings_read(node: WindowAggregateNode | RunningAggregateNode, o: _Open, lw: _Lowering,
                                time_needed: bool) -> tuple[_Open, dict[str, Expr | None]]:
    """The open pipeline the window reads and each aggregate's argument in its columns. The
    engine interns strings as it reads a pipeline's input, so a string key or interned string
    argument computed in ``o`` is materialized first: ``o`` closes with a projection to the
    window's input columns plus one hidden column per such argument (and the row kinds of an
    updating input)."""
    schema = node.input.schema

    def computed(e: Expr) -> bool:
        return not isinstance(strip_alias(e.substitute(o.columns)), Column)

    def interned(call) -> bool:
        return call.arg is not None and call.arg.dtype(schema).is_string \
            and spec_of(call.func).for_argument(call.arg.dtype(schema)).reads != "validity"

    args = {name: call.arg for name, call in node.aggregates}
    computed_args = [(name, call.arg) for name, call in node.aggregates if interned(call) and computed(call.arg)]
    if not computed_args and not any(schema.field(k).dtype.is_string and computed(Column(k)) for k in node.keys):
        return o, args
    hidden = []
    for name, arg in computed_args:
        column = _fresh_name(Schema(tuple(schema) + tuple(hidden)), f"__gz_arg_{len(hidden)}")
        o.columns[column] = arg.substitute(o.columns)
        hidden.append(Field(column, STRING, pa.string()))
        args[name] = Column(column)
    kinds = (OP_FIELD,) if OP_COLUMN in o.columns else ()
    read = Schema(tuple(schema) + tuple(hidden) + kinds)
    return _materialized(read, [read], [o], lw, time_needed), args


_BEFORE_ANY_TIME = -(1 << 63)  # a lookup table row's event time: a pair keeps the stream record's
_KEY_TYPES = {"integer": INT64, "timestamp": TIMESTAMP, "float": FLOAT64, "bool": BOOL, "string": STRING}


def _lower_join(node: WindowJoinNode | IntervalJoinNode | RegularJoinNode, lw: _Lowering, time_needed: bool,
                after: Expr | None = None, counted: tuple[PairCounts, Schema] | None = None) -> _Open:
    """Each input's pipeline ends in a projection to its side's columns, plus the hidden int64
    ``EVENT_TIME_COLUMN`` when no column holds the side's event time; the join pipeline reads
    both. An input that only filters and passes columns through ends in an identity instead
    (which runs no kernel): the join's kernel for that side runs its filters, computes its
    event time and reads its columns in place. The pipeline after
    the join reads its output: a window join's event time is ``window_end - 1``, an interval or
    regular join's ``max(left.ts, right.ts)`` in a hidden column (only when a window downstream
    needs it). ``after``: a filter directly after a regular or interval join; its terms over
    numeric and bool columns run in the join's probe (``_pair_filter``), the others after the
    join. ``counted``: the window join emits its pairs' counts (``pair_counts.py``) with that
    schema, reading only the left side's key columns."""
    sides, ids = [], []
    for name, n, keys in (("left", node.left, node.left_keys), ("right", node.right, node.right_keys)):
        side, sources, pid = _join_input(name, n, keys, lw)
        sides.append((side, sources))
        ids.append(pid)
    (left, left_sources), (right, right_sources) = sides
    join_sides = (replace(left, columns=tuple((f.name, left_sources[f.name]) for f in node.left.schema)),
                  replace(right, columns=tuple((out, right_sources[name]) for name, out in node.right_names)))
    out_schema, hidden_name, counts = node.schema, None, None
    if counted is not None:
        counts, out_schema = counted
        join_sides = (replace(join_sides[0], columns=tuple((k, left_sources[k]) for k in counts.keys)),
                      replace(join_sides[1], columns=()))
    if isinstance(node, WindowJoinNode):
        kind, assigner, lo, hi = node.assigner.kind.name, node.assigner, 0, 0
        event_time = Column(WINDOW_END) - lit(1)
    else:
        kind, assigner = ("interval", None) if isinstance(node, IntervalJoinNode) else ("regular", None)
        lo, hi = (node.lower_ms, node.upper_ms) if kind == "interval" else (0, 0)
        event_time = None
        if time_needed:
            hidden_name = _fresh_name(node.schema, EVENT_TIME_COLUMN)
            out_schema = Schema(tuple(node.schema) + (Field(hidden_name, INT64, pa.int64()),))
            event_time = Column(hidden_name)
    fused, rest, stored = _pair_filter(node, after, join_sides)
    terminal = JoinTerminal(kind, assigner, lo, hi, join_sides, out_schema, hidden_name,
                            node.ttl_ms if kind == "regular" else None, None, fused, stored, counts)
    j = lw.close(_Open(JoinInput(ids[0], ids[1]), join_sides[0].schema, None, 0, [], {}), terminal)
    return _Open(WindowInput(j.id), out_schema, event_time, 0, rest, _identity(node.schema))


_PAIR_FILTER_TYPES = ("int32", "int64", "timestamp", "float64", "bool")  # what a held record's word holds
_PAIR_FILTER_NODES = (Alias, BinaryOp, UnaryOp, Column, Literal, Cast, IfElse, IsIn)


def _pair_filter(node, after: Expr | None, sides) -> tuple[Expr | None, list[Expr], tuple]:
    """Split the filter ``after`` a regular or interval join into (the conjunction the probe evaluates, the
    terms left for the pipeline after the join, per side the (output column, side column) pairs
    its held records keep). The probe takes the terms built of arithmetic, comparisons, logic,
    casts and literals over numeric and bool columns; a term with a string, a function call or
    anything else stays after the join (the result is the same either way)."""
    if after is None:
        return None, [], ((), ())
    side_of = {}
    for s, side in enumerate(sides):
        side_of.update((out, (s, column)) for out, column in side.columns)
    fused, rest = [], []
    for term in conjuncts(after):
        nodes = list(walk(term))
        ok = all(isinstance(n, _PAIR_FILTER_NODES) for n in nodes) and all(
            n.type_name != "string" for n in nodes if isinstance(n, Literal)) and all(
            node.schema.field(c).dtype.name in _PAIR_FILTER_TYPES for c in term.columns())
        (fused if ok else rest).append(term)
    if not fused:
        return None, rest, ((), ())
    used = sorted(set().union(*(t.columns() for t in fused)), key=node.schema.names.index)
    stored = tuple(tuple((out, side_of[out][1]) for out in used if side_of[out][0] == s) for s in (0, 1))
    predicate = fused[0]
    for t in fused[1:]:
        predicate = predicate & t
    return predicate, rest, stored


def _join_input(name: str, n: PlanNode, keys: tuple[str, ...], lw: _Lowering, timeless: bool = False
                ) -> tuple[JoinSide, dict, int]:
    """One input of a join: (its side, the side's column for each input column, the id of the
    input's pipeline). ``timeless``: an input without event time is allowed (a lookup join's
    stream), and its records pair at ``_BEFORE_ANY_TIME``."""
    from ..plan import _key_class  # the join's key classes, shared with validation
    b = _open_after(n, lw, True)
    if b.event_time is None and timeless:
        b.event_time = lit(_BEFORE_ANY_TIME)
    if b.event_time is None or isinstance(b.event_time, ProcessingTime):
        raise NotImplementedError(f"join: the {name} input has no event time (results of count windows "
                                  f"have none)")
    key_type = {k: _KEY_TYPES[_key_class(n.schema.field(k).dtype)] for k in keys}
    if all(isinstance(strip_alias(b.columns[f.name]), Column) for f in n.schema):
        # filters and pass-through columns only: the join's kernel runs the filters and reads
        # the input's columns in place; the input's own pipeline is an identity (no kernel)
        sources = {f.name: strip_alias(b.columns[f.name]).name for f in n.schema}
        side = JoinSide(b.input_schema, b.event_time,
                        tuple((Field(k, key_type[k]), Column(sources[k])) for k in keys),
                        (), tuple(b.filters))
        b.filters = []
        pid = lw.close(b, ProjectTerminal(tuple((f, Column(f.name)) for f in b.input_schema))).id
        return side, sources, pid
    time = _shared_time_column(n.schema, [b])
    schema, outputs = n.schema, tuple((f, b.columns[f.name]) for f in n.schema)
    if time is None:
        hidden = Field(_fresh_name(n.schema, EVENT_TIME_COLUMN), INT64, pa.int64())
        outputs += ((hidden, _as_int64(b.event_time, b.input_schema)),)
        schema, time = Schema(tuple(schema) + (hidden,)), Column(hidden.name)
    pid = lw.close(b, ProjectTerminal(outputs)).id
    side = JoinSide(schema, time, tuple((Field(k, key_type[k]), Column(k)) for k in keys), ())
    return side, {f.name: f.name for f in n.schema}, pid


def _lower_lookup(node: LookupJoinNode, lw: _Lowering, time_needed: bool) -> _Open:
    """A lookup join is a join pipeline of kind ``lookup``: its left side is the stream (as a
    join's input), its right side the static table (event time INT64_MIN, so a pair keeps the
    record's), which the kernel inserts before the first record. A stream without event time
    gives pairs without one."""
    from ..plan import _key_class
    left, sources, pid = _join_input("stream", node.input, node.left_on, lw, timeless=True)
    left = replace(left, columns=tuple((f.name, sources[f.name]) for f in node.input.schema))
    table = node.table_schema
    keys = tuple((Field(k, _KEY_TYPES[_key_class(table.field(k).dtype)]), Column(k)) for k in node.right_on)
    right = JoinSide(table, lit(_BEFORE_ANY_TIME), keys, tuple((out, name) for name, out in node.right_names))
    out_schema, hidden_name, event_time = node.schema, None, None
    if time_needed and not isinstance(left.event_time, Literal):  # (a stream without event time: none)
        hidden_name = _fresh_name(node.schema, EVENT_TIME_COLUMN)
        out_schema = Schema(tuple(node.schema) + (Field(hidden_name, INT64, pa.int64()),))
        event_time = Column(hidden_name)
    terminal = JoinTerminal("lookup", None, 0, 0, (left, right), out_schema, hidden_name, None, node.table)
    j = lw.close(_Open(JoinInput(pid, None), left.schema, None, 0, [], {}), terminal)
    return _Open(WindowInput(j.id), out_schema, event_time, 0, [], _identity(node.schema))


def _lower_over(node: OverAggregateNode, lw: _Lowering, time_needed: bool) -> _Open:
    """The input's pipeline ends in a projection (filters and maps fused) to the input columns,
    each aggregate's argument and ``where=`` that is not an input column (``__gz_arg_<i>``,
    ``__gz_where_<i>``) and the event time as int64 ms (``EVENT_TIME_COLUMN``); the OVER pipeline
    reads it (a one-input ``UnionInput``). The pipeline after it reads its output: the event time is
    an input column that holds it, or else the hidden column, kept when a window needs it."""
    o = _open_after(node.input, lw, True)
    if o.event_time is None or isinstance(o.event_time, ProcessingTime):
        raise NotImplementedError("over(): the input has no event time (results of count windows have none)")
    in_schema = node.input.schema
    outputs = [(f, o.columns[f.name]) for f in in_schema]
    taken = Schema(tuple(in_schema))

    def hidden(prefix: str, expr: Expr, dtype: DataType) -> str:
        """A hidden output column computing ``expr`` (over the pipeline's input columns)."""
        nonlocal taken
        name = _fresh_name(taken, prefix)
        f = Field(name, dtype, to_arrow_type(dtype))
        taken = Schema(tuple(taken) + (f,))
        outputs.append((f, expr))
        return name

    aggregates = []
    for i, (name, call) in enumerate(node.aggregates):
        arg = where = None
        arg_type = None if call.arg is None else call.arg.dtype(in_schema)
        if call.arg is not None:
            plain = strip_alias(call.arg)
            arg = plain.name if isinstance(plain, Column) else \
                hidden(f"__gz_arg_{i}", call.arg.substitute(o.columns), arg_type)
        if call.where is not None:
            where = hidden(f"__gz_where_{i}", call.where.substitute(o.columns), BOOL)
        aggregates.append(OverAggregate(node.schema.field(name), call.func, arg, where, arg_type))
    time_column = hidden(EVENT_TIME_COLUMN, _as_int64(o.event_time, o.input_schema), INT64)
    ids = (lw.close(o, ProjectTerminal(tuple(outputs))).id,)
    shared = _shared_time_column(in_schema, [o])
    out_schema = node.schema
    if shared is None and time_needed:
        out_schema = Schema(tuple(node.schema) + (taken.field(time_column),))
    terminal = OverTerminal(node.keys, node.frame, time_column, in_schema.names, tuple(aggregates), out_schema)
    p = lw.close(_Open(UnionInput(ids), taken, Column(time_column), 0, [], {}), terminal)
    event_time = shared if shared is not None else (Column(time_column) if time_needed else None)
    return _Open(WindowInput(p.id), out_schema, event_time, 0, [], _identity(node.schema))


def _shared_time_column(schema: Schema, branches: list[_Open]) -> Expr | None:
    """An expression over the union's columns that equals every input's event time: ``col(c)``
    or ``col(c) - 1`` where column ``c`` of each input is exactly what its event time reads."""
    for name in schema.names:
        for template in (Column(name), Column(name) - lit(1)):
            if all(structural_key(_unaliased(template.substitute(b.columns))) == structural_key(_unaliased(b.event_time))
                   for b in branches):
                return template
    return None


def _unaliased(e: Expr) -> Expr:
    """``e`` without aliases anywhere in the tree (they do not change a value)."""
    e = strip_alias(e)
    if isinstance(e, BinaryOp):
        return BinaryOp(e.op, _unaliased(e.left), _unaliased(e.right))
    return e


def _as_int64(e: Expr, schema: Schema) -> Expr:
    """``e`` computed as an int64 value (a bare column would be passed through in its own type)."""
    if e.dtype(schema) == INT64 and not isinstance(strip_alias(e), Column):
        return e
    return Cast(e, "int64")


def _fresh_name(schema: Schema | set[str], name: str) -> str:
    while name in schema:
        name += "_"
    return name


__all__ = ["Pipeline", "PhysicalPlan", "ProjectTerminal", "WindowTerminal", "BoundAggregate",
           "SourceInput", "WindowInput", "UnionInput", "JoinInput", "JoinSide", "JoinTerminal",
           "JoinSideTerminal", "OverAggregate", "OverTerminal", "TopNTerminal", "join_side_pipeline", "upstream_ids", "build_physical_plan",
           "EVENT_TIME_COLUMN"]
