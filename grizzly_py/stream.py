"""The user-facing DSL: ``DataStream``, ``KeyedStream`` and windowed streams.

Each call builds a new logical plan node (validated at once) and wraps it in a new stream object;
nothing runs until ``execute``. The streams only hold the plan and the environment that runs it.
"""

from __future__ import annotations

from typing import Protocol

import pyarrow as pa

from .aggregates import AggCall
from .expressions import Column, Expr, as_expr, strip_alias
from .lambdas import translate
from .over import OverAggregateNode, OverFrame
from .plan import (ChangelogNode, DeduplicateNode, FilterNode, IntervalJoinNode, LateDataNode, LookupJoinNode, MapNode,
                   PlanNode, ProjectNode, RegularJoinNode, RunningAggregateNode, SinkSpec, UnionNode,
                   WindowAggregateNode, WindowJoinNode)
from .sources import BadInputError
from .time import to_millis
from .types import SchemaError
from .top_n import TopNNode
from .window_rank import RowOrder, WindowRankNode, deduplicate_order, top_n_order
from .windows import MAX_WINDOW_MS, CountWindows, WindowAssigner


class StreamHost(Protocol):
    """What a stream needs of the environment that defined it (``environment.StreamEnvironment``,
    which builds the streams: the DSL does not depend on what runs it). It registers sinks and
    runs jobs."""

    _sinks: list  # the queries registered so far

    def _register_sink(self, node: PlanNode, spec: SinkSpec, printed: bool = False): ...

    def _run_single(self, node: PlanNode) -> "pa.Table": ...

    def _to_spark(self, node: PlanNode): ...


def _expr(value, what: str) -> Expr:
    """An expression from an expression, a lambda, a column name (str), or another Python value
    (a literal; use ``lit("text")`` for a string literal)."""
    if isinstance(value, str):
        return Column(value)
    if callable(value) and not isinstance(value, Expr):
        return translate(value, what=what)
    return as_expr(value)


class DataStream:
    """A stream of records with a known schema."""

    def __init__(self, env: StreamHost, node: PlanNode):
        self.env = env
        self.node = node

    @property
    def schema(self):
        """The stream's columns and their types (a ``Schema``)."""
        return self.node.schema

    def explain(self) -> str:
        """The logical plan that ends in this stream, as indented text (``grizzly explain --plan``)."""
        return self.node.explain()

    def __repr__(self):
        return f"DataStream{self.node.schema}"

    # --- stateless operators ---------------------------------------------------------------
    def filter(self, predicate) -> "DataStream":
        """The records for which ``predicate`` (a boolean expression or a restricted lambda) is true;
        false and null drop the record. ``SchemaError`` for an unknown column or a predicate that
        is not boolean."""
        return DataStream(self.env, FilterNode(self.node, _expr(predicate, "filter")))

    def with_columns(self, **columns) -> "DataStream":
        """Add or replace columns: ``with_columns(total=col("price") * col("qty"))``; each value is an
        expression, a restricted lambda, a column name (a string) or a literal. The event time
        stays the one fixed at the source."""
        if not columns:
            raise SchemaError("with_columns() needs at least one name=expression")
        return DataStream(self.env, MapNode(self.node, tuple(
            (name, _expr(e, f"with_columns({name}=...)")) for name, e in columns.items())))

    def select(self, *columns, **named) -> "DataStream":
        """Keep and compute columns, in order: column names, named expressions (``.alias``) and
        ``name=expression`` (a string there is a column name: ``select(cost="price")`` renames).
        ``SchemaError`` for an expression without a name."""
        out: list[tuple[str, Expr]] = []
        for c in columns:
            e = Column(c) if isinstance(c, str) else _expr(c, "select")
            name = e.output_name()
            if name is None:
                raise SchemaError(f"select: give the expression {e!r} a name, with .alias('name') or name=expr")
            out.append((name, strip_alias(e)))
        for name, e in named.items():
            out.append((name, strip_alias(_expr(e, f"select({name}=...)"))))
        return DataStream(self.env, ProjectNode(self.node, tuple(out)))

    def union(self, *others: "DataStream") -> "DataStream":
        """The records of this stream and of ``others`` (same column names, order and types).

        Each record keeps its own event time; the watermark is the minimum over the inputs. The
        engine reads the sources round-robin, one batch at a time (docs/semantics.md, "Union").
        Nested unions are flattened: ``a.union(b).union(c)`` is ``a.union(b, c)``.
        """
        if not others:
            raise TypeError("union() needs at least one other stream, e.g. a.union(b)")
        streams = (self, *others)
        for i, s in enumerate(streams[1:], start=2):
            if not isinstance(s, DataStream):
                raise TypeError(f"union: input {i} is a {type(s).__name__}, expected a DataStream "
                                f"(keyed and windowed streams cannot be united)")
            if s.env is not self.env:
                raise ValueError(f"union: input {i} belongs to another StreamEnvironment")
        nodes = []
        for s in streams:
            nodes.extend(s.node.inputs if isinstance(s.node, UnionNode) else (s.node,))
        return DataStream(self.env, UnionNode(tuple(nodes)))

    def join(self, other: "DataStream") -> "JoinBuilder":
        """Flink's joins (docs/semantics.md, "Joins"): ``a.join(b).where("k").equal_to("k")`` is the
        regular join of both whole inputs (a stream: each record pairs with the other side's
        records of its key so far), ``.window(assigner)`` after it the window join (each pair of a
        left and a right record per window and key)."""
        return JoinBuilder(self.env, self.node, _join_other(self, other, "join"))

    def lookup_join(self, table, left_on, right_on=None) -> "DataStream":
        """Join each record with the rows of the static ``table`` (a ``pyarrow.Table``, built once
        into a hash table) whose ``right_on`` columns (default: ``left_on``) equal its
        ``left_on`` columns (an inner join, pairs in table order; a null key matches nothing).
        Columns: this stream's, then the table's other columns (``_right`` on a clash)."""
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        if not isinstance(table, pa.Table):
            raise TypeError(f"lookup_join: the side input is a {type(table).__name__}, expected a pyarrow.Table")
        try:  # read once into the join's table: check it whole here (a dictionary index out of range...)
            table.validate(full=True)
        except pa.ArrowInvalid as e:
            raise BadInputError(f"lookup_join: the table is not valid Arrow data: {e}") from None
        left = _key_names(left_on if isinstance(left_on, (list, tuple)) else (left_on,), "lookup_join(left_on=...)")
        right = left if right_on is None else _key_names(
            right_on if isinstance(right_on, (list, tuple)) else (right_on,), "lookup_join(right_on=...)")
        return DataStream(self.env, LookupJoinNode(self.node, table.combine_chunks(), left, right))

    def interval_join(self, other: "DataStream") -> "IntervalJoinBuilder":
        """Flink's interval join: ``a.interval_join(b).where("k").equal_to("k").between(lo, hi)``
        pairs records with ``a.ts + lo <= b.ts <= a.ts + hi`` (without where/equal_to: any key)."""
        return IntervalJoinBuilder(self.env, self.node, _join_other(self, other, "interval_join"))

    def key_by(self, *columns) -> "KeyedStream":
        """Partition the stream by one or more key columns (names or ``col(...)``), for ``window``,
        ``count_window`` and ``interval_join``. ``SchemaError`` for an unknown or repeated column."""
        if not columns:
            raise SchemaError("key_by() needs at least one column")
        names = []
        for c in columns:
            if isinstance(c, Column):
                c = c.name
            if not isinstance(c, str):
                raise SchemaError(f"key_by takes column names, got {c!r}; add the column with with_columns first")
            self.node.schema.field(c)  # unknown column -> SchemaError naming it
            names.append(c)
        if len(set(names)) != len(names):
            raise SchemaError(f"key_by: duplicate key columns {names}")
        return KeyedStream(self.env, self.node, tuple(names))

    def window_all(self, assigner: WindowAssigner) -> "WindowedStream":
        """Window the whole stream without keys (one group per window), e.g.
        ``window_all(TumblingEventTimeWindows.of(Time.seconds(10))).aggregate(n=agg.count())``."""
        return WindowedStream(self.env, self.node, (), _check_assigner(assigner))

    def late_data(self, tag: str) -> "DataStream":
        """The records too late for the window aggregation that made this stream, even with its
        allowed lateness (``window(...).side_output_late_data(tag)``): a stream of the window's
        input records (Flink's ``getSideOutput``; docs/semantics.md, "Allowed lateness")."""
        node = self.node
        if not isinstance(node, WindowAggregateNode) or node.late_tag is None:
            raise ValueError("late_data: this stream is not the result of a window with "
                             "side_output_late_data(tag): keyed.window(w).side_output_late_data('late')"
                             ".aggregate(...).late_data('late')")
        if tag != node.late_tag:
            raise ValueError(f"late_data: the window sends its late records to {node.late_tag!r}, not {tag!r}")
        return DataStream(self.env, LateDataNode(node))

    @property
    def is_updating(self) -> bool:
        """Whether this is an updating stream (row kinds ``+I``/``-U``/``+U``/``-D``: a running
        aggregate, or an operator applied to one; docs/semantics.md, "Updating streams")."""
        return self.node.updating

    def changelog(self) -> "DataStream":
        """The rows of this updating stream as an append-only stream, each with its row kind in the
        leading string column ``op`` (``"+I"``, ``"-U"``, ``"+U"``, ``"-D"``); ``ValueError`` for an
        append-only stream."""
        return DataStream(self.env, ChangelogNode(self.node))

    # --- sinks -------------------------------------------------------------------------------
    def collect(self, name: str | None = None):
        """Register a sink that collects this stream into a ``pyarrow.Table``, under ``name`` in the
        ``JobResult`` of the next ``env.execute()``; returns its ``SinkHandle``. ``ValueError`` if a
        collecting sink of that name exists."""
        return self.env._register_sink(self.node, SinkSpec("collect", name or f"sink{len(self.env._sinks)}"))

    def sink_to_parquet(self, path: str):
        """Register a sink that writes this stream to the Parquet file ``path`` when the job runs
        (exactly once with checkpoints: docs/fault_tolerance.md); returns its ``SinkHandle``."""
        return self.env._register_sink(self.node, SinkSpec("parquet", str(path), str(path)))

    def sink_to_csv(self, path: str):
        """Register a sink that writes this stream to the CSV file ``path`` when the job runs; returns
        its ``SinkHandle``. ``SchemaError`` for list columns (``agg.top_k`` results), which CSV
        cannot hold."""
        lists = [f.name for f in self.node.schema if f.dtype.is_list]
        if lists:
            raise SchemaError(f"sink_to_csv: column(s) {lists} are lists (top_k results), which CSV cannot hold; "
                              "write Parquet, or select the other columns")
        return self.env._register_sink(self.node, SinkSpec("csv", str(path), str(path)))

    def print(self):
        """Print this stream's records to standard output when the job runs (``env.execute()``),
        one line per record (PyFlink's ``DataStream.print()``)."""
        return self.env._register_sink(self.node, SinkSpec("collect", f"print#{len(self.env._sinks)}"),
                                       printed=True)

    def execute_and_collect(self) -> "pa.Table":
        """Run this query alone and return its result; the job's metrics travel in the table's
        schema metadata (``grizzly_py.job_metrics(table)``)."""
        return self.env._run_single(self.node)

    def to_spark(self):
        """This query as a Spark DataFrame (streaming if its source is), run by compiled code in
        Spark's Python workers (docs/spark.md); ``df.grizzly`` holds the job and its metrics."""
        return self.env._to_spark(self.node)


class KeyedStream:
    """A stream partitioned by key columns (``DataStream.key_by``): windows and joins per key."""

    def __init__(self, env, node: PlanNode, keys: tuple[str, ...]):
        self.env, self.node, self.keys = env, node, keys

    def window(self, assigner: WindowAssigner) -> "WindowedStream":
        """Window each key's records with ``assigner`` (``TumblingEventTimeWindows.of(...)``, ...);
        ``TypeError`` for anything that is not a window assigner."""
        return WindowedStream(self.env, self.node, self.keys, _check_assigner(assigner))

    def interval_join(self, other: "KeyedStream") -> "IntervalJoinBuilder":
        """Flink's form: ``a.key_by("k").interval_join(b.key_by("k")).between(lo, hi)``."""
        if not isinstance(other, KeyedStream):
            raise TypeError(f"interval_join: a keyed stream joins a keyed stream (b.key_by(...)), got {other!r}")
        if other.env is not self.env:
            raise ValueError("interval_join: the other stream belongs to another StreamEnvironment")
        return IntervalJoinBuilder(self.env, self.node, other.node, self.keys, other.keys)

    def aggregate(self, *unnamed, **aggregates) -> DataStream:
        """A running aggregate per key, no window (Flink's ``GROUP BY`` on a dynamic table): an
        updating stream of the key columns, then one column per ``name=agg.<func>(...)``. Each
        record that changes its key's row retracts the old row (``-U``) and emits the new one
        (``+U``); ``collect``/``execute_and_collect`` return the final table, one row per key."""
        if unnamed:
            raise TypeError(f"aggregate() takes its aggregates by name, as the result columns they make: "
                            f"{_named_suggestion(unnamed)}")
        return DataStream(self.env, RunningAggregateNode(self.node, self.keys, tuple(aggregates.items())))

    def deduplicate(self, keep: str = "first") -> DataStream:
        """One row per key (Flink's deduplication): ``keep="first"``, the first row of each key to
        arrive (an append-only stream); ``keep="last"``, the row with the latest event time, ties
        to the later arrival (an updating stream: a newer row replaces the kept one, ``-U``/``+U``).
        The output has the input's columns."""
        return DataStream(self.env, DeduplicateNode(self.node, self.keys, keep))

    def top_n(self, n: int, by, descending=True) -> DataStream:
        """Per key, the ``n`` rows first in the order of ``by`` (a column name or a list of them;
        ``descending`` a bool or one per column, default True) among every row of the key so far
        (Flink's unbounded Top-N): an updating stream of the input columns, then ``rank`` (int64,
        1..n). Ties go to the earlier arrival; a null ranks as the smallest value, NaN as the
        largest number. A row that enters the top n re-ranks the rows behind it (``-U``/``+U``
        per rank, ``+I`` for a new rank: docs/semantics.md, "Updating streams")."""
        return DataStream(self.env, TopNNode(self.node, self.keys, top_n_order(n, by, descending)))

    def count_window(self, size: int, slide: int | None = None) -> "WindowedStream":
        """Per key: fire every ``slide`` records (default ``size``) over the key's last ``size``
        records, in stream order; incomplete windows do not fire at the end of the input."""
        return WindowedStream(self.env, self.node, self.keys, CountWindows(size, size if slide is None else slide))

    def over(self, rows_preceding: int | None = None, range_preceding=None) -> "OverWindowedStream":
        """Flink's OVER window per key, ordered by event time: ``rows_preceding=n`` (the row and the
        n rows before it; ties by arrival) or ``range_preceding=duration`` (the rows at most that
        much earlier, rows with the same timestamp included); exactly one of them."""
        range_ms = None if range_preceding is None else to_millis(range_preceding, what="over(range_preceding=...)")
        return OverWindowedStream(self.env, self.node, self.keys, OverFrame.of(rows_preceding, range_ms))


class WindowedStream:
    """A keyed or global stream cut into windows; ``aggregate`` computes one row per window (and key)."""

    def __init__(self, env, node: PlanNode, keys: tuple[str, ...], assigner: WindowAssigner,
                 allowed_lateness_ms: int = 0, late_tag: str | None = None):
        self.env, self.node, self.keys, self.assigner = env, node, keys, assigner
        self.allowed_lateness_ms, self.late_tag = allowed_lateness_ms, late_tag

    def _lateness_kind(self, what: str) -> None:
        if not self.assigner.kind.allowed_lateness:
            raise ValueError(f"{what}: {self.assigner!r} takes none; tumbling, sliding and cumulative "
                             "event-time windows do")

    def allowed_lateness(self, lateness) -> "WindowedStream":
        """Keep each window ``lateness`` past its firing (Flink's ``allowedLateness``): a record
        that arrives for a fired window within it updates the window, which fires again (a new
        row for its key, per such record); later records are late (dropped, or ``side_output_late_data``)."""
        self._lateness_kind("allowed_lateness")
        ms = to_millis(lateness, what="allowed_lateness")
        if not 0 <= ms <= MAX_WINDOW_MS:
            raise ValueError(f"allowed_lateness must be between 0 and {MAX_WINDOW_MS} ms, got {ms} ms")
        return WindowedStream(self.env, self.node, self.keys, self.assigner, ms, self.late_tag)

    def side_output_late_data(self, tag: str) -> "WindowedStream":
        """Send the records too late even for the allowed lateness to the stream
        ``result.late_data(tag)`` instead of only counting them (Flink's ``sideOutputLateData``)."""
        self._lateness_kind("side_output_late_data")
        if not isinstance(tag, str) or not tag:
            raise TypeError(f"side_output_late_data takes a non-empty tag name, got {tag!r}")
        return WindowedStream(self.env, self.node, self.keys, self.assigner, self.allowed_lateness_ms, tag)

    def aggregate(self, *unnamed, **aggregates) -> DataStream:
        """One output column per ``name=agg.<func>(...)``, per window (and key): the key columns,
        ``window_start``, ``window_end`` (none for count windows), then the aggregates in the order
        given. ``TypeError`` for an aggregate given without a name (the message suggests one)."""
        if unnamed:
            raise TypeError(f"aggregate() takes its aggregates by name, as the result columns they make: "
                            f"{_named_suggestion(unnamed)}")
        return DataStream(self.env, WindowAggregateNode(self.node, self.keys, self.assigner,
                                                        tuple(aggregates.items()), self.allowed_lateness_ms,
                                                        self.late_tag))

    def top_n(self, n: int, by, descending=True) -> DataStream:
        """Per window (and key), the ``n`` rows first in the order of ``by`` (a column name or a
        list of them; ``descending`` a bool or one per column, default True), emitted when the
        window fires (Flink's window Top-N): ``window_start``, ``window_end``, the input columns,
        then ``rank`` (int64, 1..n). Ties go to the earlier arrival; a null ranks as the smallest
        value, NaN as the largest number (docs/semantics.md, "Window Top-N")."""
        return self._ranked(top_n_order(n, by, descending))

    def deduplicate(self, keep: str = "first") -> DataStream:
        """One row per window (and key), emitted when the window fires (Flink's window
        deduplication): ``keep="first"`` the first row to arrive,
        ``keep="last"`` the row with the latest event time (ties to the later arrival). Columns:
        ``window_start``, ``window_end``, the input columns."""
        return self._ranked(deduplicate_order(keep))

    def _ranked(self, order: RowOrder) -> DataStream:
        if self.late_tag is not None:
            raise ValueError(f"{order!r}: side_output_late_data is supported on aggregate() only; "
                             "late records of a ranked window are counted in metrics['late_records']")
        return DataStream(self.env, WindowRankNode(self.node, self.keys, self.assigner, order,
                                                   self.allowed_lateness_ms))


class OverWindowedStream:
    """A keyed stream with an OVER frame (``KeyedStream.over``); ``aggregate`` adds the aggregates
    over each row's frame to the row."""

    def __init__(self, env, node: PlanNode, keys: tuple[str, ...], frame: OverFrame):
        self.env, self.node, self.keys, self.frame = env, node, keys, frame

    def aggregate(self, *unnamed, **aggregates) -> DataStream:
        """Every input row, in event-time order as the watermark passes it, with one more column
        per ``name=agg.<func>(...)`` (count, sum, min, max, avg) over the row's frame."""
        if unnamed:
            raise TypeError(f"aggregate() takes its aggregates by name, as the result columns they make: "
                            f"{_named_suggestion(unnamed)}")
        return DataStream(self.env, OverAggregateNode(self.node, self.keys, self.frame, tuple(aggregates.items())))


def _named_suggestion(unnamed) -> str:
    """``.aggregate(n=agg.count(), sum_v=agg.sum(col("v")))`` for aggregates given unnamed."""
    parts = []
    for i, a in enumerate(unnamed):
        if isinstance(a, AggCall):
            arg = a.arg.output_name() if a.arg is not None else None
            name = {"count": "n"}.get(a.func, a.func) if arg is None else f"{a.func}_{arg}"
            parts.append(f"{name if name.isidentifier() else f'a{i}'}={a!r}")
        else:
            parts.append(f"name={a!r}")
    return f".aggregate({', '.join(parts)})"


def _join_other(stream: DataStream, other, what: str) -> PlanNode:
    if not isinstance(other, DataStream):
        raise TypeError(f"{what}: the other input is a {type(other).__name__}, expected a DataStream")
    if other.env is not stream.env:
        raise ValueError(f"{what}: the other stream belongs to another StreamEnvironment")
    return other.node


def _key_names(columns, what: str) -> tuple[str, ...]:
    if not columns:
        raise SchemaError(f"{what}() needs at least one key column")
    names = []
    for c in columns:
        if isinstance(c, Column):
            c = c.name
        if not isinstance(c, str):
            raise SchemaError(f"{what} takes column names, got {c!r}; add the column with with_columns first")
        names.append(c)
    return tuple(names)


class JoinBuilder:
    """``a.join(b)``: name the keys with ``where`` (left) and ``equal_to`` (right), then ``window``."""

    def __init__(self, env, left: PlanNode, right: PlanNode, left_keys: tuple[str, ...] = (),
                 right_keys: tuple[str, ...] = ()):
        self.env, self.left, self.right = env, left, right
        self.left_keys, self.right_keys = left_keys, right_keys

    def where(self, *columns) -> "JoinBuilder":
        """The left input's key columns. ``SchemaError`` for an unknown column."""
        keys = _key_names(columns, "where")
        for k in keys:
            self.left.schema.field(k)  # unknown column -> SchemaError naming it
        return type(self)(self.env, self.left, self.right, keys, self.right_keys)

    def _right_keys(self, columns) -> tuple[str, ...]:
        if not self.left_keys:
            raise SchemaError("equal_to() comes after where(): a.join(b).where('k').equal_to('k')")
        keys = _key_names(columns, "equal_to")
        for k in keys:
            self.right.schema.field(k)
        return keys

    def equal_to(self, *columns) -> "RegularJoinStream":
        """The right input's key columns, as many as ``where`` named: the regular join of both
        inputs, or ``.window(...)`` on it the window join. ``SchemaError`` for an unknown column
        or when ``where`` was not called first."""
        return RegularJoinStream(self.env, self.left, self.right, self.left_keys, self._right_keys(columns))

    def window(self, assigner: WindowAssigner) -> DataStream:
        """Refused before ``equal_to`` (``SchemaError``): a window join needs its keys."""
        raise SchemaError("a window join needs its keys: a.join(b).where('k').equal_to('k').window(...)")


class RegularJoinStream(DataStream):
    """``a.join(b).where(k).equal_to(k)``: the regular join (a stream, Flink's regular join of
    both whole inputs), which ``window`` turns into the window join and ``state_ttl`` bounds."""

    def __init__(self, env, left: PlanNode, right: PlanNode, left_keys: tuple[str, ...],
                 right_keys: tuple[str, ...], ttl_ms: int | None = None):
        super().__init__(env, RegularJoinNode(left, right, left_keys, right_keys, ttl_ms))

    def window(self, assigner: WindowAssigner) -> DataStream:
        """The window join: per window and key, every pair of a left and a right record; columns
        ``window_start``, ``window_end``, every left column, then every right column (``_right`` on
        a clash). Tumbling, sliding and session event-time windows."""
        n = self.node
        if n.ttl_ms is not None:
            raise SchemaError("state_ttl is for the regular join; a window join's state ends with its windows")
        return DataStream(self.env, WindowJoinNode(n.left, n.right, n.left_keys, n.right_keys,
                                                   _check_assigner(assigner)))

    def state_ttl(self, ttl) -> "RegularJoinStream":
        """Let a record leave the join's state once its event time is below ``watermark - ttl``
        (event time; Flink's state TTL counts processing time): it pairs with no later record."""
        n = self.node
        ms = to_millis(ttl, what="join(...).state_ttl")
        return RegularJoinStream(self.env, n.left, n.right, n.left_keys, n.right_keys, ms)


class IntervalJoinBuilder(JoinBuilder):
    """``a.interval_join(b)``: optional keys (``where``/``equal_to``), then ``between(lower, upper)``."""

    def equal_to(self, *columns) -> "IntervalJoinBuilder":
        """The right input's key columns, as many as ``where`` named."""
        return IntervalJoinBuilder(self.env, self.left, self.right, self.left_keys, self._right_keys(columns))

    def window(self, assigner):
        """Refused: an interval join takes ``between(lower, upper)`` (``TypeError``)."""
        raise TypeError("an interval join takes between(lower, upper), not a window")

    def between(self, lower, upper) -> DataStream:
        """The joined stream: every pair with equal keys and ``left.ts + lower <= right.ts <= left.ts
        + upper`` (durations, either may be negative); every left column, then every right column."""
        if self.left_keys and not self.right_keys:
            raise SchemaError("interval_join: where() needs its equal_to()")
        lo = to_millis(lower, what="interval_join(...).between")
        hi = to_millis(upper, what="interval_join(...).between")
        return DataStream(self.env, IntervalJoinNode(self.left, self.right, self.left_keys, self.right_keys, lo, hi))


def _check_assigner(assigner) -> WindowAssigner:
    if not isinstance(assigner, WindowAssigner):
        raise TypeError(f"expected a window assigner such as TumblingEventTimeWindows.of(Time.seconds(10)), "
                        f"got {assigner!r}")
    return assigner
