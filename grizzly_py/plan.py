"""The logical plan: immutable, validated operator nodes with derived schemas.

Every node validates itself when it is built, so that unknown columns and type errors are reported
at definition time, naming the column. Nodes hold no execution state; they are plain data (and
picklable where their source is), so a plan can be shown, hashed, compiled several times
(variants) and shipped elsewhere.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property

import pyarrow as pa

from .aggregates import AggCall
from .aggregates.functions.row_value import ROW_FIRST, ROW_LAST
from .changelog import OP_NAME
from .expressions import Column, Expr, strip_alias
from .types import BOOL, STRING, TIMESTAMP, Field, Schema, SchemaError, schema_from_arrow, to_arrow_type
from .windows import WindowAssigner

WINDOW_START, WINDOW_END = "window_start", "window_end"


class PlanNode:
    """Base of logical operators. ``schema`` is derived from the inputs and the node's arguments."""

    @property
    def inputs(self) -> tuple["PlanNode", ...]:
        return ()

    @cached_property
    def schema(self) -> Schema:
        return self._derive_schema()

    def _derive_schema(self) -> Schema:
        raise NotImplementedError

    def label(self) -> str:
        raise NotImplementedError

    @property
    def updating(self) -> bool:
        """Whether the stream carries row kinds (``+I``/``-U``/``+U``/``-D``, ``changelog.py``):
        Flink's updating table. A node produces one when it retracts rows it emitted (a running
        aggregate) or passes on an updating input's rows (filter, with_columns, select)."""
        return any(i.updating for i in self.inputs)

    def explain(self, indent: int = 0) -> str:
        """The plan as an indented tree, root first."""
        kinds = " (updating)" if self.updating else ""
        lines = [" " * indent + f"{self.label()}{kinds}  -> {self.schema}"]
        for i in self.inputs:
            lines.append(i.explain(indent + 2))
        return "\n".join(lines)


def require_append_only(what: str, *inputs: PlanNode) -> None:
    """The one definition-time check of operators that need an append-only input (windows, window,
    interval, regular and lookup joins, count windows, sessions, unions, OVER aggregates):
    ``ValueError`` naming ``what`` when an
    input is an updating stream, whose rows a later record may retract."""
    for i in inputs:
        if i.updating:
            raise ValueError(
                f"{what} needs an append-only input, but its input is an updating stream ({i.label()}), "
                f"whose rows later records retract (-U/-D); it cannot undo what it emitted for them. "
                f"Use .changelog() to process the changes as append-only records")


@dataclass(frozen=True, eq=False)
class SourceNode(PlanNode):
    source: "object"  # grizzly_py.sources.Source

    def _derive_schema(self):
        return self.source.schema

    def label(self):
        return f"Source[{self.source.name}, timestamp={self.source.timestamp}, {self.source.watermark_description}]"


@dataclass(frozen=True, eq=False)
class FilterNode(PlanNode):
    input: PlanNode
    predicate: Expr

    def __post_init__(self):
        t = self.predicate.dtype(self.input.schema)
        if t != BOOL:
            raise SchemaError(f"filter predicate {self.predicate!r} has type {t.name}, expected bool")

    @property
    def inputs(self):
        return (self.input,)

    def _derive_schema(self):
        return self.input.schema

    def label(self):
        return f"Filter[{self.predicate!r}]"


def _typed_field(name: str, expr: Expr, schema: Schema) -> Field:
    dtype = expr.dtype(schema)
    inner = strip_alias(expr)
    if isinstance(inner, Column):  # a pass-through column keeps its physical Arrow type
        return Field(name, dtype, schema.field(inner.name).arrow_type)
    return Field(name, dtype, to_arrow_type(dtype))


@dataclass(frozen=True, eq=False)
class MapNode(PlanNode):
    """``with_columns``: add or replace columns; the others pass through in place."""

    input: PlanNode
    columns: tuple[tuple[str, Expr], ...]

    def __post_init__(self):
        self.schema  # validate now

    @property
    def inputs(self):
        return (self.input,)

    def _derive_schema(self):
        in_schema = self.input.schema
        new = {name: _typed_field(name, e, in_schema) for name, e in self.columns}
        fields = [new.pop(f.name, f) for f in in_schema]
        return Schema(tuple(fields) + tuple(new.values()))

    def label(self):
        return "Map[" + ", ".join(f"{n}={e!r}" for n, e in self.columns) + "]"


@dataclass(frozen=True, eq=False)
class ProjectNode(PlanNode):
    """``select``: exactly these columns, in this order."""

    input: PlanNode
    columns: tuple[tuple[str, Expr], ...]

    def __post_init__(self):
        if not self.columns:
            raise SchemaError("select() needs at least one column")
        self.schema

    @property
    def inputs(self):
        return (self.input,)

    def _derive_schema(self):
        in_schema = self.input.schema
        return Schema(tuple(_typed_field(name, e, in_schema) for name, e in self.columns))

    def label(self):
        return "Project[" + ", ".join(n if isinstance(e, Column) and e.name == n else f"{n}={e!r}"
                                      for n, e in self.columns) + "]"


@dataclass(frozen=True, eq=False)
class WindowAggregateNode(PlanNode):
    """Keyed (``keys`` non-empty) or global window aggregation.

    Output: the key columns, ``window_start``, ``window_end``, then the aggregates in order.
    """

    input: PlanNode
    keys: tuple[str, ...]
    assigner: WindowAssigner
    aggregates: tuple[tuple[str, AggCall], ...]
    allowed_lateness_ms: int = 0   # Flink's allowedLateness: a window is kept (and fires again) this long
    late_tag: str | None = None    # side_output_late_data: the tag of the stream of records too late even so

    def __post_init__(self):
        require_append_only(f"a {self.assigner.kind.label} window ({self.assigner!r})", self.input)
        if not self.aggregates:
            raise SchemaError("aggregate() needs at least one aggregate, e.g. count=agg.count()")
        if (self.allowed_lateness_ms or self.late_tag is not None) and not self.assigner.kind.allowed_lateness:
            raise SchemaError(f"{self.assigner!r} takes no allowed lateness or late side output (tumbling, "
                              "sliding and cumulative event-time windows do)")
        for k in self.keys:
            if self.input.schema.field(k).dtype.is_list:  # an unknown key raises SchemaError naming it
                raise SchemaError(f"key {k!r} is a list (a top_k result): lists cannot be keys")
        self.schema

    @property
    def inputs(self):
        return (self.input,)

    @property
    def window_columns(self) -> tuple[str, ...]:
        """``window_start``, ``window_end``; none for count windows (api.md)."""
        return (WINDOW_START, WINDOW_END) if self.assigner.kind.window_columns else ()

    @cached_property
    def time_arrow_type(self):
        """``window_start``/``window_end`` come out as int64 ms, or as the sources' timestamp type
        (when the sources of a union disagree on it, as int64 ms)."""
        types = []
        for s in distinct_sources(self):
            t = s.timestamp_arrow_type
            if t not in types:
                types.append(t)
        return types[0] if len(types) == 1 else pa.int64()

    def _derive_schema(self):
        in_schema = self.input.schema
        fields = [in_schema.field(k) for k in self.keys]
        for name in self.window_columns:
            if name in self.keys:
                raise SchemaError(f"key column {name!r} clashes with the window output column of that name")
            fields.append(Field(name, TIMESTAMP, self.time_arrow_type))
        for name, call in self.aggregates:
            if not isinstance(call, AggCall):
                raise SchemaError(f"aggregate {name!r}: expected agg.<function>(...), got {call!r}")
            if name in self.keys or name in self.window_columns:
                raise SchemaError(f"aggregate name {name!r} clashes with an output column of the same name")
            dtype = call.output_type(in_schema)
            fields.append(Field(name, dtype, to_arrow_type(dtype)))
        return Schema(tuple(fields))

    def label(self):
        keys = f"keys=[{', '.join(self.keys)}], " if self.keys else ""
        aggs = ", ".join(f"{n}={c!r}" for n, c in self.aggregates)
        late = f", allowed lateness {self.allowed_lateness_ms} ms" if self.allowed_lateness_ms else ""
        late += f", late data to {self.late_tag!r}" if self.late_tag is not None else ""
        return f"WindowAggregate[{keys}{self.assigner!r}{late}, {aggs}]"


@dataclass(frozen=True, eq=False)
class LateDataNode(PlanNode):
    """``out.late_data(tag)`` (Flink's ``getSideOutput`` of ``sideOutputLateData``): the input
    records of ``window`` that are too late even for its allowed lateness, the ones the window
    drops (every window holding the record was cleaned: ``end - 1 + allowed_lateness <=
    watermark``, with the watermark in force when the record arrives). Its schema and input are
    the window's input; the window itself does not run for it."""

    window: WindowAggregateNode

    def __post_init__(self):
        if self.window.late_tag is None:
            raise SchemaError("late_data: the window has no side_output_late_data(tag)")

    @property
    def input(self) -> PlanNode:
        return self.window.input

    @property
    def inputs(self):
        return (self.window.input,)

    def _derive_schema(self):
        return self.window.input.schema

    def label(self):
        w = self.window
        return (f"LateData[{w.late_tag!r} of {w.assigner!r}, allowed lateness {w.allowed_lateness_ms} ms]")


@dataclass(frozen=True, eq=False)
class RunningAggregateNode(PlanNode):
    """``keyed.aggregate(**named_aggs)`` without a window: per key, the aggregates over every record
    of the key so far (Flink's ``GROUP BY`` on a dynamic table). An updating stream: a key's first
    record inserts its row (``+I``), a record that changes the row retracts it (``-U``) and puts
    the new one in its place (``+U``); a record that leaves it unchanged emits nothing.

    Output: the key columns, then the aggregates in order. The aggregates that
    ``AggregateSpec.running`` runs: the decomposable ones (a few words per key: ``count``,
    ``sum``, ``min``, ``max``, ``avg``, the variances and standard deviations, ``first``,
    ``last``); ``count_distinct``, ``median``, ``mode``, ``top_k`` and ``min``/``max`` of
    strings over a value bag per key (each distinct value with its count:
    ``aggregates/functions/value_bag.py``).

    Over an updating input (an aggregate of an aggregate, Nexmark Q4's shape) a ``-U``/``-D`` row
    retracts its input: only the aggregates that can undo it (``count``, ``sum``, ``avg`` and
    the variances subtract it; ``min``, ``max``, ``count_distinct``, ``median``, ``mode`` and
    ``top_k`` take it out of their value bag, ``first`` and ``last`` out of their sequence of
    values); a key left with no rows emits ``-D`` (and ``+I`` if it fills again).
    """

    input: PlanNode
    keys: tuple[str, ...]
    aggregates: tuple[tuple[str, AggCall], ...]

    def __post_init__(self):
        if not self.aggregates:
            raise SchemaError("aggregate() needs at least one aggregate, e.g. count=agg.count()")
        in_schema = self.input.schema
        for k in self.keys:
            if in_schema.field(k).dtype.is_list:  # an unknown key raises SchemaError naming it
                raise SchemaError(f"key {k!r} is a list (a top_k result): lists cannot be keys")
        for name, call in self.aggregates:
            if isinstance(call, AggCall):
                spec = call.spec.for_argument(None if call.arg is None else call.arg.dtype(in_schema))
                if spec.running(self.input.updating) is not None:
                    continue
                if spec.holistic:
                    raise SchemaError(f"aggregate {name!r}: {call!r} keeps every value of its group and does "
                                      f"not run in a running aggregate (no window)")
                raise ValueError(f"aggregate {name!r}: over an updating stream ({self.input.label()}) a running "
                                 f"aggregate takes the aggregates that can undo a retracted row; "
                                 f"{call!r} cannot (not supported yet)")
        self.schema

    @property
    def inputs(self):
        return (self.input,)

    @property
    def updating(self) -> bool:
        return True

    def _derive_schema(self):
        in_schema = self.input.schema
        fields = [in_schema.field(k) for k in self.keys]
        for name, call in self.aggregates:
            if not isinstance(call, AggCall):
                raise SchemaError(f"aggregate {name!r}: expected agg.<function>(...), got {call!r}")
            if name in self.keys:
                raise SchemaError(f"aggregate name {name!r} clashes with the key column of the same name")
            dtype = call.output_type(in_schema)
            fields.append(Field(name, dtype, to_arrow_type(dtype)))
        return Schema(tuple(fields))

    def label(self):
        aggs = ", ".join(f"{n}={c!r}" for n, c in self.aggregates)
        return f"RunningAggregate[keys=[{', '.join(self.keys)}], {aggs}]"


KEEP_FIRST = "first"  # deduplicate(keep=...): the first row of a key to arrive
KEEP_LAST = "last"    # the row with the latest event time


@dataclass(frozen=True, eq=False)
class DeduplicateNode(PlanNode):
    """``keyed.deduplicate(keep)``: one row per key, as Flink's deduplication (``ROW_NUMBER() OVER
    (PARTITION BY keys ORDER BY time) = 1``).

    - ``keep="first"``: the first row of each key to arrive, emitted when it arrives; later rows
      of the key are dropped. Append-only.
    - ``keep="last"``: the row with the latest event time of each key, ties to the later arrival
      (arrival order alone without event time). An updating stream: a key's first row is
      inserted (``+I``); a row that takes its place retracts the kept one (``-U``) and is put in
      its place (``+U``), unless the two are equal; an older row changes nothing.

    Output: the input's columns. It runs as a running aggregate of each column's value in the
    chosen row (``row_values``)."""

    input: PlanNode
    keys: tuple[str, ...]
    keep: str

    def __post_init__(self):
        if self.keep not in (KEEP_FIRST, KEEP_LAST):
            raise ValueError(f"deduplicate(keep=...) takes {KEEP_FIRST!r} or {KEEP_LAST!r}, got {self.keep!r}")
        if self.input.updating:
            raise ValueError(f"deduplicate over an updating stream ({self.input.label()}) is not supported; "
                             "deduplicate its .changelog() instead")
        for f in self.input.schema:
            if f.dtype.is_list:
                raise SchemaError(f"deduplicate: column {f.name!r} is a list (a top_k result), which a "
                                  "deduplication cannot keep; select the other columns first")
            if f.name not in self.keys and f.arrow_type is not None and pa.types.is_timestamp(f.arrow_type) \
                    and f.arrow_type.unit != "ms":
                raise SchemaError(f"deduplicate: column {f.name!r} is a timestamp in {f.arrow_type.unit}, which "
                                  "compiled code keeps in milliseconds; cast it to int64 first, e.g. "
                                  f"with_columns({f.name}=col({f.name!r}).cast('int64'))")
        for k in self.keys:
            self.input.schema.field(k)  # an unknown key raises SchemaError naming it

    @property
    def inputs(self):
        return (self.input,)

    @property
    def updating(self) -> bool:
        return self.keep == KEEP_LAST

    def _derive_schema(self):
        return self.input.schema

    def row_values(self) -> RunningAggregateNode:
        """The running aggregate that keeps the chosen row of each key: the keys, then each
        other column's value in that row (nulls included)."""
        spec = ROW_LAST if self.keep == KEEP_LAST else ROW_FIRST
        values = [f.name for f in self.input.schema if f.name not in self.keys]
        if not values:  # every column is a key: an aggregate that never changes, left out later
            return RunningAggregateNode(self.input, self.keys, (("__gz_row", AggCall(spec.name, Column(self.keys[0]))),))
        return RunningAggregateNode(self.input, self.keys, tuple((n, AggCall(spec.name, Column(n))) for n in values))

    def label(self):
        return f"Deduplicate[keys=[{', '.join(self.keys)}], keep={self.keep}]"


@dataclass(frozen=True, eq=False)
class ChangelogNode(PlanNode):
    """``s.changelog()``: the rows of updating stream ``s`` as an append-only stream, each with its
    row kind in the leading string column ``op`` (``+I``, ``-U``, ``+U``, ``-D``)."""

    input: PlanNode

    def __post_init__(self):
        if not self.input.updating:
            raise ValueError(f"changelog(): the stream ({self.input.label()}) is append-only, not an "
                             "updating stream; it has no row kinds")
        if OP_NAME in self.input.schema:
            raise SchemaError(f"changelog(): the stream has a column {OP_NAME!r}, the name of the row-kind "
                              "column; rename it with select() first")

    @property
    def inputs(self):
        return (self.input,)

    @property
    def updating(self) -> bool:
        return False

    def _derive_schema(self):
        return Schema((Field(OP_NAME, STRING, pa.string()), *self.input.schema))

    def label(self):
        return "Changelog"


@dataclass(frozen=True, eq=False)
class UnionNode(PlanNode):
    """``s.union(t, ...)``: the records of every input, each with its own event time.

    The inputs must have the same column names in the same order and the same grizzly types (a
    mismatch is a ``SchemaError`` naming the column). Their physical Arrow types may differ where
    one Arrow type can hold them all: dictionary and plain strings come out as plain strings (large
    ones if any input has large strings), narrower integers as int64, float32 as float64.
    Timestamp columns must agree on their Arrow type (unit and time zone).
    """

    streams: tuple[PlanNode, ...]

    def __post_init__(self):
        if len(self.streams) < 2:
            raise SchemaError("union needs at least two streams")
        require_append_only("union", *self.streams)
        self.schema  # validate now

    @property
    def inputs(self):
        return self.streams

    def _derive_schema(self):
        first = self.streams[0].schema
        for i, node in enumerate(self.streams[1:], start=2):
            _check_union_columns(first, node.schema, i)
        return Schema(tuple(_union_field(f, [n.schema.field(f.name) for n in self.streams])
                            for f in first))

    def label(self):
        return f"Union[{len(self.streams)} inputs]"


def _check_union_columns(first: Schema, other: Schema, i: int) -> None:
    """``other`` (input ``i``, counting from 1) has the names and types of ``first`` (input 1)."""
    for f in first:
        if f.name not in other:
            raise SchemaError(f"union: input {i} has no column {f.name!r} (input 1 has: "
                              f"{', '.join(first.names)}; input {i} has: {', '.join(other.names)})")
    for f in other:
        if f.name not in first:
            raise SchemaError(f"union: input {i} has column {f.name!r}, which input 1 has not (input 1 has: "
                              f"{', '.join(first.names)})")
    if first.names != other.names:
        raise SchemaError(f"union: input {i} has its columns in another order ({', '.join(other.names)}) "
                          f"than input 1 ({', '.join(first.names)}); select them in the same order")
    for f in first:
        g = other.field(f.name)
        if g.dtype != f.dtype:
            raise SchemaError(f"union: column {f.name!r} has type {f.dtype.name} in input 1 but "
                              f"{g.dtype.name} in input {i}; cast one of them")


def _physical(f: Field) -> pa.DataType:
    return f.arrow_type if f.arrow_type is not None else to_arrow_type(f.dtype)


def _union_field(f: Field, fields: list[Field]) -> Field:
    """The union's column ``f.name``: its inputs' Arrow type if they agree, else one that holds
    them all (see ``UnionNode``)."""
    types = [_physical(g) for g in fields]
    if all(t == types[0] for t in types):
        return Field(f.name, f.dtype, types[0])
    if f.dtype.is_string:
        values = [t.value_type if pa.types.is_dictionary(t) else t for t in types]
        large = any(pa.types.is_large_string(t) for t in values)
        return Field(f.name, f.dtype, pa.large_string() if large else pa.string())
    if f.dtype.is_timestamp:
        i = next(n for n, t in enumerate(types) if t != types[0])
        raise SchemaError(f"union: column {f.name!r} is {types[0]} in input 1 but {types[i]} in input {i + 1}; "
                          f"timestamp columns of a union need the same Arrow type "
                          f"(cast both to int64 epoch milliseconds with .cast('int64'))")
    return Field(f.name, f.dtype, to_arrow_type(f.dtype))  # int64 / float64 widened from narrower types


# ----------------------------------------------------------------------------------------------
# Joins
# ----------------------------------------------------------------------------------------------
RIGHT_SUFFIX = "_right"


def _key_class(dtype) -> str:
    """Join keys compare within a class: integers (int32/int64), timestamps, floats, bools,
    strings. Keys of different classes are a definition-time error (cast one side)."""
    if dtype.is_timestamp:
        return "timestamp"
    if dtype.is_integer:
        return "integer"
    if dtype.is_float:
        return "float"
    if dtype.is_bool:
        return "bool"
    return "string"


def _check_join_keys(left: Schema, right: Schema, left_keys: tuple[str, ...],
                     right_keys: tuple[str, ...], what: str, names: tuple[str, str] = ("where()", "equal_to()")
                     ) -> None:
    if len(left_keys) != len(right_keys):
        raise SchemaError(f"{what}: {names[0]} names {len(left_keys)} key column(s) but {names[1]} "
                          f"{len(right_keys)}; give one right key per left key")
    for lk, rk in zip(left_keys, right_keys):
        lf, rf = left.field(lk), right.field(rk)  # unknown columns raise, naming them
        if lf.dtype.is_list or rf.dtype.is_list:
            raise SchemaError(f"{what}: key {lk if lf.dtype.is_list else rk!r} is a list (a top_k result): "
                              "lists cannot be keys")
        if _key_class(lf.dtype) != _key_class(rf.dtype):
            raise SchemaError(f"{what}: key {lk!r} ({lf.dtype.name}) of the left input cannot equal key "
                              f"{rk!r} ({rf.dtype.name}) of the right input; cast one of them")


def _join_fields(left: Schema, right: Schema, leading: tuple[Field, ...], what: str
                 ) -> tuple[tuple[Field, ...], tuple[tuple[str, str], ...]]:
    """The output fields of a join (``leading`` window columns, every left column, then every
    right column, a right column whose name is taken getting ``RIGHT_SUFFIX``) and the
    (right column, output name) pairs."""
    taken = {f.name for f in leading}
    for f in left:
        if f.name in taken:
            raise SchemaError(f"{what}: left column {f.name!r} clashes with the join's output column of "
                              f"that name; rename it with select() before the join")
        taken.add(f.name)
    fields, renames = list(leading) + list(left), []
    left_names = set(taken)
    for f in right:
        name = f.name if f.name not in left_names else f.name + RIGHT_SUFFIX
        if name in taken:
            raise SchemaError(f"{what}: right column {f.name!r} would be named {name!r}, which is taken; "
                              f"rename it with select() before the join")
        taken.add(name)
        renames.append((f.name, name))
        fields.append(Field(name, f.dtype, f.arrow_type))
    return tuple(fields), tuple(renames)


def _check_join_time(node: PlanNode, what: str) -> None:
    for side, n in (("left", node.left), ("right", node.right)):
        for s in distinct_sources(n):
            if s.timestamp is None:
                raise SchemaError(f"{what}: the {side} input reads source {s.name}, which has no event time; "
                                  f"give it one with from_arrow(..., timestamp='ts')")


def event_time_arrow_type(node: PlanNode):
    """``window_start``/``window_end`` of a window over ``node``'s sources: int64 ms, or the
    sources' timestamp type when they all agree on it."""
    types = []
    for s in distinct_sources(node):
        t = s.timestamp_arrow_type
        if t not in types:
            types.append(t)
    return types[0] if len(types) == 1 else pa.int64()


class _TwoInputJoin(PlanNode):
    """What both joins share: two inputs and an output of their columns (``_fields``: the output
    fields, and each right column's output name)."""

    @property
    def inputs(self):
        return (self.left, self.right)

    @property
    def right_names(self) -> tuple[tuple[str, str], ...]:
        """(right column, its output name)."""
        return self._fields[1]

    def _derive_schema(self):
        return Schema(self._fields[0])


@dataclass(frozen=True, eq=False)
class WindowJoinNode(_TwoInputJoin):
    """``a.join(b).where(*left_keys).equal_to(*right_keys).window(assigner)`` (Flink's window join).

    For every window and key: the cross product of the left and right records with that key in
    that window, emitted when the window fires. Output: ``window_start``, ``window_end``, every
    left column, then every right column (``_right`` appended to a name the left side has).
    """

    left: PlanNode
    right: PlanNode
    left_keys: tuple[str, ...]
    right_keys: tuple[str, ...]
    assigner: WindowAssigner

    def __post_init__(self):
        what = "join"
        require_append_only(f"a window join ({self.assigner!r})", self.left, self.right)
        if not self.left_keys:
            raise SchemaError("join: where() needs at least one key column")
        if not self.assigner.kind.joins:
            raise SchemaError(f"join: {self.assigner!r} is not supported; a window join takes an event-time "
                              f"tumbling, sliding or session window")
        _check_join_keys(self.left.schema, self.right.schema, self.left_keys, self.right_keys, what)
        _check_join_time(self, what)
        self.schema

    @cached_property
    def time_arrow_type(self):
        return event_time_arrow_type(self)

    @cached_property
    def _fields(self):
        leading = (Field(WINDOW_START, TIMESTAMP, self.time_arrow_type),
                   Field(WINDOW_END, TIMESTAMP, self.time_arrow_type))
        return _join_fields(self.left.schema, self.right.schema, leading, "join")

    def label(self):
        keys = ", ".join(f"{a}={b}" for a, b in zip(self.left_keys, self.right_keys))
        return f"WindowJoin[{keys}, {self.assigner!r}]"


@dataclass(frozen=True, eq=False)
class IntervalJoinNode(_TwoInputJoin):
    """``a.interval_join(b).between(lower, upper)`` (Flink's interval join): every pair of a left
    and a right record with equal keys (no keys: every pair) and
    ``left.ts + lower <= right.ts <= left.ts + upper``, emitted as soon as its second record
    arrives. Output: every left column, then every right column (``_right`` on a clash)."""

    left: PlanNode
    right: PlanNode
    left_keys: tuple[str, ...]
    right_keys: tuple[str, ...]
    lower_ms: int
    upper_ms: int

    def __post_init__(self):
        what = "interval_join"
        require_append_only("an interval join", self.left, self.right)
        for name, v in (("lower", self.lower_ms), ("upper", self.upper_ms)):
            if abs(v) > MAX_INTERVAL_MS:
                raise SchemaError(f"{what}: the {name} bound {v} ms is beyond +-{MAX_INTERVAL_MS} ms")
        if self.lower_ms > self.upper_ms:
            raise SchemaError(f"{what}: between({self.lower_ms} ms, {self.upper_ms} ms): the lower bound "
                              f"is above the upper bound")
        _check_join_keys(self.left.schema, self.right.schema, self.left_keys, self.right_keys, what)
        _check_join_time(self, what)
        self.schema

    @cached_property
    def _fields(self):
        return _join_fields(self.left.schema, self.right.schema, (), "interval_join")

    def label(self):
        keys = ", ".join(f"{a}={b}" for a, b in zip(self.left_keys, self.right_keys)) or "no keys"
        return f"IntervalJoin[{keys}, between {self.lower_ms} ms and {self.upper_ms} ms]"


MAX_INTERVAL_MS = 1 << 53


@dataclass(frozen=True, eq=False)
class RegularJoinNode(_TwoInputJoin):
    """``a.join(b).where(*left_keys).equal_to(*right_keys)`` without a window (Flink's regular
    join): each record pairs with every record of the other side with an equal key that arrived
    before it and is still held, as soon as it arrives (the pairs over the whole input are the
    inner join of both inputs). ``ttl_ms``: a record leaves the state once its event time is
    below ``watermark - ttl`` (None: records are held for ever). Output: every left column, then
    every right column (``_right`` on a clash)."""

    left: PlanNode
    right: PlanNode
    left_keys: tuple[str, ...]
    right_keys: tuple[str, ...]
    ttl_ms: int | None = None

    def __post_init__(self):
        what = "join"
        # a join over an updating input would have to retract the pairs of a retracted row; checked
        # here, where equal_to() builds the regular join that .window() may turn into a window join
        require_append_only("a join (a regular join, or a window join with .window())", self.left, self.right)
        if not self.left_keys:
            raise SchemaError("join: where() needs at least one key column")
        if self.ttl_ms is not None and not 0 <= self.ttl_ms <= MAX_INTERVAL_MS:
            raise SchemaError(f"join(...).state_ttl: the TTL must be between 0 and {MAX_INTERVAL_MS} ms, "
                              f"got {self.ttl_ms} ms")
        _check_join_keys(self.left.schema, self.right.schema, self.left_keys, self.right_keys, what)
        _check_join_time(self, what)
        self.schema

    @cached_property
    def _fields(self):
        return _join_fields(self.left.schema, self.right.schema, (), "join")

    def label(self):
        keys = ", ".join(f"{a}={b}" for a, b in zip(self.left_keys, self.right_keys))
        ttl = "" if self.ttl_ms is None else f", state TTL {self.ttl_ms} ms"
        return f"RegularJoin[{keys}{ttl}]"


@dataclass(frozen=True, eq=False)
class LookupJoinNode(PlanNode):
    """``s.lookup_join(table, left_on, right_on)``: every record of ``input`` paired with each row
    of the static ``table`` whose ``right_on`` columns equal its ``left_on`` columns, in table
    order (an inner join; a null key matches nothing). The pairs keep the record's event time.
    Output: the input's columns, then the table's columns other than ``right_on`` (``_right``
    on a clash)."""

    input: PlanNode
    table: pa.Table
    left_on: tuple[str, ...]
    right_on: tuple[str, ...]

    def __post_init__(self):
        require_append_only("a lookup join", self.input)
        if len(set(self.right_on)) != len(self.right_on):
            raise SchemaError(f"lookup_join: right_on names a column twice: {list(self.right_on)}")
        _check_join_keys(self.input.schema, self.table_schema, self.left_on, self.right_on, "lookup_join",
                         ("left_on", "right_on"))
        self.schema

    @property
    def inputs(self):
        return (self.input,)

    @cached_property
    def table_schema(self) -> Schema:
        return schema_from_arrow(self.table.schema, source="lookup_join table")

    @cached_property
    def _fields(self):
        payload = Schema(tuple(f for f in self.table_schema if f.name not in self.right_on))
        return _join_fields(self.input.schema, payload, (), "lookup_join")

    @property
    def right_names(self) -> tuple[tuple[str, str], ...]:
        """(table column, its output name), for the table's columns other than the keys."""
        return self._fields[1]

    def _derive_schema(self):
        return Schema(self._fields[0])

    def label(self):
        keys = ", ".join(f"{a}={b}" for a, b in zip(self.left_on, self.right_on))
        return f"LookupJoin[{keys}, table of {self.table.num_rows} rows]"


JOIN_NODES = (WindowJoinNode, IntervalJoinNode, RegularJoinNode)


@dataclass(frozen=True, eq=False)
class SinkSpec:
    """Where a query's output goes: ``collect`` (name), parquet or csv (path)."""

    kind: str
    name: str
    path: str | None = None


@dataclass(frozen=True, eq=False)
class Query:
    """A plan root with its sink: one unit of compilation and execution."""

    root: PlanNode
    sink: SinkSpec = field(default_factory=lambda: SinkSpec("collect", "result"))


def distinct_sources(node: PlanNode) -> list["object"]:
    """The sources (``grizzly_py.sources.Source``) the plan reads, each once, in order of first
    appearance (depth-first, inputs left to right): the order in which the engine and the
    reference evaluator read them round-robin."""
    out: list = []
    for s in sources_of(node):
        if not any(s.source is o for o in out):
            out.append(s.source)
    return out


def replace_inputs(node: PlanNode, replace) -> PlanNode:
    """A copy of ``node`` with each input ``i`` replaced by ``replace(i)`` (nodes are frozen
    dataclasses whose inputs are fields holding a node or a tuple of nodes)."""
    changes = {}
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        if isinstance(value, PlanNode):
            changes[f.name] = replace(value)
        elif isinstance(value, tuple) and value and all(isinstance(v, PlanNode) for v in value):
            changes[f.name] = tuple(replace(v) for v in value)
    return dataclasses.replace(node, **changes) if changes else node


def plan_nodes(roots) -> list[PlanNode]:
    """Every node of the plans under ``roots``, each once (depth-first, inputs left to right)."""
    out: list[PlanNode] = []
    seen: set[int] = set()
    stack = list(reversed(list(roots)))
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        out.append(node)
        stack.extend(reversed(node.inputs))
    return out


def late_records_all_captured(roots) -> bool:
    """True when every operator under ``roots`` that can drop late records is a window whose late
    records the job reads as a ``late_data`` stream: then no late record is lost, and the job need
    not warn about them."""
    nodes = plan_nodes(roots)
    captured = {id(n.window) for n in nodes if isinstance(n, LateDataNode)}
    droppers = [n for n in nodes if isinstance(n, (WindowAggregateNode, WindowJoinNode, IntervalJoinNode))]
    return bool(captured) and all(id(n) in captured for n in droppers)


def sources_of(node: PlanNode) -> list[SourceNode]:
    if isinstance(node, SourceNode):
        return [node]
    out = []
    for i in node.inputs:
        out.extend(s for s in sources_of(i) if s not in out)
    return out

