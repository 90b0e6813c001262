"""The reference evaluator: a plain-Python oracle for the compiled engine.

``run(node)`` interprets a logical plan (``grizzly_py.plan``) one record at a time, with Python
ints and floats, and returns the result table and the job metrics; ``evaluate(node)`` returns
only the table. It is written to be obviously right, not fast: the differential tests compare
every compiled query against it.

The semantics it implements (and the compiled engine must match exactly):

Values and expressions
- A record is a dict ``{column: value}`` of Python values (``None`` is null) plus its event time.
  Timestamps are int64 epoch milliseconds (an Arrow timestamp converts by floor division); a
  timestamp column passed through unchanged keeps its Arrow type and exact value.
- Integer ``+ - * neg abs`` wrap around like int64 two's complement; an int with a float, and
  ``/`` always, compute in float64 (IEEE: ``x/0.0`` is +-inf, ``0/0`` NaN); ``%`` takes the sign
  of the divisor; integer ``% 0`` is null, float ``% 0.0`` NaN.
- Comparisons convert both sides to float when either is a float; NaN compares as in IEEE.
- Nulls propagate, except in ``& | ~`` (SQL three-valued logic), ``is_null``/``is_not_null``
  and ``if_else`` (a null condition takes the else branch).
- Casts: float to int truncates toward zero, and NaN, +-inf or out-of-range give null; int64 to
  int32 wraps; bool to number is 0/1; number to bool is ``x != 0``.

Windows and watermarks (see ``run``)
- A source's watermark advances after each of its non-empty batches to
  ``max(wm, max event time of the batch - out_of_orderness - 1)`` and is +infinity at its end.
- ``union``: each record keeps its own event time; the union's watermark is the minimum over its
  inputs (-infinity until every input has data); the sources are read round-robin by batch.
- A window fires once, when ``window_end - 1 <= wm``; a record none of whose windows is still
  open is late: it is dropped and counted once in ``late_records``.
- Allowed lateness ``L`` (aligned windows): a window is kept until ``window_end - 1 + L <= wm``;
  a record goes into each of its windows still kept, and each kept window that had fired (or is
  complete) and gets a record of key ``k`` fires again for ``k`` at once, as in Flink: one row
  per such record (and window, ordered by window_end), with every record of ``k`` so far, before
  the batch's next record. A record with no window kept is late; ``late_data(tag)`` is the
  stream of those input records (``LateData``).
- Session windows (per key) merge when they overlap or touch (Flink's ``TimeWindow.intersects``);
  a new record first merges with the key's open sessions, and is late only if it merges with none
  and its own window ``[ts, ts + gap)`` has already fired.
- Results of one firing leave ordered by window_end, then key (nulls last, NaN after numbers),
  then window_start. A window's output record has event time ``window_end - 1``.
- Joins (``WindowJoin``, ``IntervalJoin``): two inputs, the watermark is their minimum. A window
  join emits, when a window fires, every (left, right) pair of one key in it, ordered by
  window_end, key, left arrival, right arrival (event time ``window_end - 1``); sessions form
  over both inputs' records. An interval join emits a pair when its second record arrives (event
  time ``max(left.ts, right.ts)``); a record below the watermark is late. A regular join
  (``RegularJoin``) pairs as an interval join without bounds and never drops a record as late;
  its TTL holds the records with ``ts >= watermark - ttl``. A lookup join (``LookupJoin``) pairs
  each record with the rows of its key in a static table, in table order, at the record's event
  time. Null keys join nothing: such a record is dropped and counted in ``filtered_records``, as
  a record a filter drops.
- Keys group like SQL: a null key is its own group; ``-0.0`` is ``0.0``; all NaNs are one group.
- OVER aggregates (``OverAggregate``): a record at or behind the watermark is late; the others
  wait until the watermark reaches them and then leave, each with the aggregates over its frame
  (the records of its key in (event time, arrival) order: the record and the ``n`` before it, or
  those with ``ts - d <= t <= ts``), ordered by event time, then key, then arrival.
- Window Top-N / deduplication (``WindowRank``): when a (key, window) fires, its records in rank
  order (top_n: by each ``by`` column, null smallest, NaN largest, ties by arrival; ``first``:
  arrival; ``last``: latest event time, ties to the later arrival), the first ``n`` (one) of
  them, each as ``window_start``, ``window_end``, the record's columns (and its 1-based ``rank``).

Updating streams (``changelog.py``)
- A row of an updating stream carries its row kind under ``OP_COLUMN``; filters and maps pass it on.
- A running aggregate (``RunningAggregate``) recomputes a key's aggregates over all its records
  at each record: the key's first record emits ``+I``; a record that changes the row emits ``-U``
  (the old row) and ``+U`` (the new one), each with the record's event time; an unchanged row
  (equal values, NaN equal to NaN) emits nothing. Over an updating input a ``-U``/``-D`` row
  takes one equal earlier row out of its key's records, and each aggregate takes out the
  earliest (event time, arrival) of its equal inputs (Flink's retracting ``FIRST_VALUE``); the
  aggregates are then recomputed over the rest; a key left with no records emits ``-D`` with
  its last row.
- ``deduplicate`` keeps per key the first row to arrive, or the row with the latest (event time,
  arrival): ``+I``, then ``-U``/``+U`` when a different row takes its place (``Deduplicate``).
- ``top_n`` keeps per key its first ``n`` rows in rank order; a record ranked ``r <= n`` emits
  ``-U``/``+U`` for each rank from ``r`` to the last held one, and ``+I`` for a new rank (``TopN``).
- ``changelog()`` turns the kind into the leading string column ``op``; the result of an
  updating plan is the table its changelog leaves (``changelog.final_table``).

Aggregates (``aggregate``) skip nulls; a group with no non-null input gets null (``count`` 0).
An aggregate with ``where=cond`` sees only the records for which ``cond`` is true (false and null
leave the record out; ``count(where=...)`` counts those records).
- ``sum``/``avg`` of ints are exact; a final sum outside int64 raises ``AggregateOverflowError``.
  Float sums add in arrival order, compensated (``aggregates/functions/sum.py``), as the compiled code does.
- ``min``/``max`` of floats ignore NaN unless every value is NaN (LLVM minnum/maxnum).
- ``var_*``/``stddev_*`` are computed exactly (over the values as float64) and rounded once; ``median`` is ``numpy.median`` (without its overflow: ``aggregates/functions/median.py``);
  ``mode`` breaks ties toward the smallest value; ``count_distinct`` counts distinct non-nulls;
  ``top_k`` lists the k largest values, largest first, duplicates kept (NaN above every number,
  ``-0.0`` as ``0.0``, as keys order); a group without values gets ``[]``, not null.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

import pyarrow as pa

from .aggregates import AggCall
from .expressions import Alias, BinaryOp, Call, Cast, Column, Expr, IfElse, IsIn, Literal, UnaryOp
from .functions import function_spec
from .changelog import DELETE, INSERT, OP_COLUMN, OP_NAME, OPS, UPDATE_AFTER, UPDATE_BEFORE, final_table
from .over import OverAggregateNode
from .plan import (WINDOW_END, WINDOW_START, ChangelogNode, DeduplicateNode, FilterNode, IntervalJoinNode, LateDataNode,
                   LookupJoinNode, MapNode, PlanNode, ProjectNode, RegularJoinNode, RunningAggregateNode, SourceNode,
                   UnionNode, WindowAggregateNode, WindowJoinNode, distinct_sources)
from .sources import TIMESTAMP_UNIT_DIVISOR
from .top_n import TopNNode
from .types import FLOAT64, DataType, Field, Schema, to_arrow_type
from .value_order import normalize_key, sort_key
from .window_rank import KEEP_FIRST, KEEP_LAST, RANK, WindowRankNode
from .windows import AlignedWindowAssigner, EventTimeSessionWindows

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
NAN = float("nan")

Row = dict  # column name -> Python value
Evaluator = Callable[[Row], object]


# ==============================================================================================
# Scalar helpers
# ==============================================================================================
def wrap_int64(x: int) -> int:
    """``x`` reduced to int64 two's complement."""
    return (x - INT64_MIN) % (1 << 64) + INT64_MIN


def wrap_int32(x: int) -> int:
    """``x`` reduced to int32 two's complement."""
    return (x - INT32_MIN) % (1 << 32) + INT32_MIN


def float_divide(x: float, y: float) -> float:
    """IEEE division: ``x/0.0`` is +-inf (sign of x times sign of the zero), ``0/0`` and NaN are NaN."""
    if y != 0.0:
        return x / y
    if x != x or x == 0.0:
        return NAN
    return math.copysign(math.inf, x) * math.copysign(1.0, y)


def float_mod(x: float, y: float) -> float:
    """Python-style float modulo (sign of the divisor) built on C ``fmod``; ``x % 0.0`` is NaN."""
    if y == 0.0 or math.isinf(x) or x != x or y != y:
        return NAN
    r = math.fmod(x, y)
    if r != 0 and (r < 0) != (y < 0):
        r += y
    return r


def float_to_int(x: float, lo: int, hi: int) -> int | None:
    """Truncate toward zero; NaN, +-inf and results outside ``[lo, hi]`` are null."""
    if math.isnan(x) or math.isinf(x):
        return None
    t = math.trunc(x)
    return t if lo <= t <= hi else None


# ==============================================================================================
# Expressions
# ==============================================================================================
def compile_expr(expr: Expr, schema: Schema) -> Evaluator:
    """A function that evaluates ``expr`` (typed against ``schema``) on one row."""
    if isinstance(expr, Column):
        name = expr.name
        return lambda row: row[name]
    if isinstance(expr, Literal):
        value = expr.value
        return lambda row: value
    if isinstance(expr, Alias):
        return compile_expr(expr.operand, schema)
    if isinstance(expr, BinaryOp):
        return _compile_binary(expr, schema)
    if isinstance(expr, UnaryOp):
        return _compile_unary(expr, schema)
    if isinstance(expr, IsIn):
        return _compile_isin(expr, schema)
    if isinstance(expr, Cast):
        return _compile_cast(expr, schema)
    if isinstance(expr, IfElse):
        return _compile_if_else(expr, schema)
    if isinstance(expr, Call):
        spec = function_spec(expr.func)
        return _null_propagating(lambda *values: spec.reference(expr, *values),
                                 *(compile_expr(a, schema) for a in expr.args))
    raise TypeError(f"reference: unknown expression node {expr!r}")


def _null_propagating(fn, *args: Evaluator) -> Evaluator:
    """Apply ``fn`` to the operands' values, or give null if any of them is null."""
    def evaluate(row):
        values = [a(row) for a in args]
        return None if any(v is None for v in values) else fn(*values)
    return evaluate


def _int_arith(op: str):
    return {
        "+": lambda a, b: wrap_int64(a + b),
        "-": lambda a, b: wrap_int64(a - b),
        "*": lambda a, b: wrap_int64(a * b),
        "%": lambda a, b: None if b == 0 else a % b,
    }[op]


def _float_arith(op: str):
    fn = {
        "+": lambda a, b: a + b,
        "-": lambda a, b: a - b,
        "*": lambda a, b: a * b,
        "/": float_divide,
        "%": float_mod,
    }[op]
    return lambda a, b: fn(float(a), float(b))


_COMPARE = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


def _and3(a, b):
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def _or3(a, b):
    if a is True or b is True:
        return True
    if a is None or b is None:
        return None
    return False


def _compile_binary(e: BinaryOp, schema: Schema) -> Evaluator:
    left, right = compile_expr(e.left, schema), compile_expr(e.right, schema)
    lt, rt = e.left.dtype(schema), e.right.dtype(schema)
    either_float = lt.is_float or rt.is_float
    if e.op == "&":
        return lambda row: _and3(left(row), right(row))
    if e.op == "|":
        return lambda row: _or3(left(row), right(row))
    if e.op in _COMPARE:
        compare = _COMPARE[e.op]
        if either_float:
            return _null_propagating(lambda a, b: compare(float(a), float(b)), left, right)
        return _null_propagating(compare, left, right)
    if e.op == "/" or either_float:
        return _null_propagating(_float_arith(e.op), left, right)
    return _null_propagating(_int_arith(e.op), left, right)


def _compile_unary(e: UnaryOp, schema: Schema) -> Evaluator:
    operand = compile_expr(e.operand, schema)
    if e.op == "is_null":
        return lambda row: operand(row) is None
    if e.op == "is_not_null":
        return lambda row: operand(row) is not None
    if e.op == "~":
        return _null_propagating(lambda a: not a, operand)
    is_float = e.operand.dtype(schema).is_float
    if e.op == "neg":
        return _null_propagating((lambda a: -a) if is_float else (lambda a: wrap_int64(-a)), operand)
    if e.op == "abs":
        return _null_propagating(abs if is_float else (lambda a: wrap_int64(abs(a))), operand)
    raise TypeError(f"reference: unknown unary operator {e.op!r}")


def _compile_isin(e: IsIn, schema: Schema) -> Evaluator:
    operand = compile_expr(e.operand, schema)
    values = [v for v in e.values if v is not None]
    has_null = len(values) != len(e.values)
    as_float = e.operand.dtype(schema).is_float or any(isinstance(v, float) for v in values)
    if as_float:
        values = [float(v) for v in values]

    def member(x):
        if as_float:
            x = float(x)
        if any(x == v for v in values):
            return True
        return None if has_null else False
    return _null_propagating(member, operand)


def _compile_cast(e: Cast, schema: Schema) -> Evaluator:
    operand = compile_expr(e.operand, schema)
    source = e.operand.dtype(schema)
    return _null_propagating(_cast_function(source, e.type_name), operand)


def _cast_function(source: DataType, target: str):
    if target == "bool":
        return lambda x: x != 0  # NaN != 0 is True; bool stays itself
    if target == "float64":
        return float
    lo, hi = (INT32_MIN, INT32_MAX) if target == "int32" else (INT64_MIN, INT64_MAX)
    if source.is_float:
        return lambda x: float_to_int(x, lo, hi)
    if target == "int32":
        return lambda x: wrap_int32(int(x))
    return int  # int32/int64/timestamp/bool -> int64


def _compile_if_else(e: IfElse, schema: Schema) -> Evaluator:
    cond = compile_expr(e.cond, schema)
    then, otherwise = compile_expr(e.then, schema), compile_expr(e.otherwise, schema)
    to_float = e.dtype(schema) == FLOAT64

    def evaluate(row):
        value = then(row) if cond(row) is True else otherwise(row)
        return float(value) if to_float and value is not None else value
    return evaluate


# ==============================================================================================
# Aggregates
# ==============================================================================================
def aggregate(call: AggCall, arg_type: DataType | None, values: list, rows: int):
    """The value of one aggregate over one group: the function's own reference implementation
    (``AggregateSpec.reference``, in its module under ``aggregates/functions/``).

    ``values`` holds the argument's non-null values in arrival order, ``rows`` the number of
    records of the group (for ``count()``).
    """
    return call.spec.reference(call, arg_type, values, rows)


# ==============================================================================================
# Operators: a push-based chain, source first. Each gets records (event time, row) and watermarks.
# ==============================================================================================
class Operator:
    downstream: "Operator"

    def push(self, ts: int, row: Row) -> None:
        raise NotImplementedError

    def watermark(self, wm: float) -> None:
        self.downstream.watermark(wm)


class Collect(Operator):
    """The end of the chain: keeps every row it gets, in order."""

    def __init__(self):
        self.rows: list[Row] = []

    def push(self, ts, row):
        self.rows.append(row)

    def watermark(self, wm):
        pass


class Filter(Operator):
    """Keeps the records whose predicate is true; the others (false or null) are counted in
    ``filtered_records``, once each (a later filter never sees them)."""

    def __init__(self, node: FilterNode, downstream: Operator, metrics: dict):
        self.predicate = compile_expr(node.predicate, node.input.schema)
        self.downstream = downstream
        self.metrics = metrics

    def push(self, ts, row):
        if self.predicate(row) is True:
            self.downstream.push(ts, row)
        else:
            self.metrics["filtered_records"] += 1


class Map(Operator):
    """``with_columns`` and ``select``: every output column is computed from the input row."""

    def __init__(self, node: MapNode | ProjectNode, downstream: Operator):
        in_schema = node.input.schema
        computed = {name: compile_expr(e, in_schema) for name, e in node.columns}
        self.columns = [(f.name, computed.get(f.name, _column_getter(f.name))) for f in node.schema]
        self.downstream = downstream

    def push(self, ts, row):
        out = {name: fn(row) for name, fn in self.columns}
        if OP_COLUMN in row:  # a row of an updating stream keeps its kind
            out[OP_COLUMN] = row[OP_COLUMN]
        self.downstream.push(ts, out)


def _column_getter(name: str) -> Evaluator:
    return lambda row: row[name]


@dataclass
class Pane:
    """The records of one key in one window: argument values per aggregate, in arrival order."""

    key: tuple
    start: int
    end: int
    records: list = field(default_factory=list)  # (arrival number, event time, aggregate inputs)
    fired: bool = False   # (allowed lateness) it fired and is kept


def kept_windows(assigner, ts: int, wm: float, lateness: int) -> list[tuple[int, int]]:
    """The windows of a record at ``ts`` that still take it under watermark ``wm``: open, or
    fired but kept for the allowed lateness (``end - 1 + lateness > wm``)."""
    return [(s, e) for s, e in assigner.windows_of(ts) if e - 1 + lateness > wm]


class AlignedWindows:
    """Tumbling, sliding and cumulative windows: panes by (window, key)."""

    def __init__(self, assigner, lateness: int = 0):
        self.assigner, self.lateness = assigner, lateness
        self.panes: dict[tuple, Pane] = {}
        self.refired: list[Pane] = []  # (allowed lateness) what the last record fires again

    def add(self, group: tuple, key: tuple, ts: int, record, wm: float) -> bool:
        kept = kept_windows(self.assigner, ts, wm, self.lateness)
        self.refired = []
        for s, e in kept:
            pane = self.panes.setdefault((s, e, group), Pane(key, s, e))
            pane.records.append(record)
            if e - 1 <= wm:  # fired already (or complete while empty): Flink fires it again now
                pane.fired = True
                self.refired.append(pane)
        self.refired.sort(key=lambda p: (p.end, p.start))
        return bool(kept)

    def fire(self, wm: float) -> list[tuple[tuple, Pane]]:
        fired = [(k[2], p) for k, p in self.panes.items() if p.end - 1 <= wm and not p.fired]
        for _, p in fired:
            p.fired = True
        for k in [k for k, p in self.panes.items() if p.end - 1 + self.lateness <= wm]:
            del self.panes[k]  # cleaned: its lateness is over
        return fired


class SessionWindows:
    """Session windows: per key, a list of open (pairwise non-touching) sessions."""

    def __init__(self, assigner: EventTimeSessionWindows):
        self.gap = assigner.gap_ms
        self.sessions: dict[tuple, list[Pane]] = {}
        self.refired: list[Pane] = []  # (sessions take no allowed lateness)

    def add(self, group: tuple, key: tuple, ts: int, record, wm: float) -> bool:
        new = Pane(key, int(ts), int(ts) + self.gap, [record])  # ms, not a source timestamp's raw value
        sessions = self.sessions.setdefault(group, [])
        touching = [s for s in sessions if s.start <= new.end and s.end >= new.start]
        if not touching and new.end - 1 <= wm:
            return False
        for s in touching:
            sessions.remove(s)
            new = Pane(key, min(s.start, new.start), max(s.end, new.end), s.records + new.records)
        sessions.append(new)
        return True

    def fire(self, wm: float) -> list[tuple[tuple, Pane]]:
        fired = []
        for group, sessions in self.sessions.items():
            fired.extend((group, s) for s in sessions if s.end - 1 <= wm)
            sessions[:] = [s for s in sessions if s.end - 1 > wm]
        return fired


SKIPPED = object()  # an aggregate's input for a record its where= does not count


def _aggregate_input(call: AggCall, schema: Schema) -> Evaluator:
    """The input of aggregate ``call`` for a row: its argument's value (None for ``count()``), or
    ``SKIPPED`` where its ``where=`` condition is not true (false or null)."""
    arg = compile_expr(call.arg, schema) if call.arg is not None else (lambda row: None)
    if call.where is None:
        return arg
    where = compile_expr(call.where, schema)
    return lambda row: arg(row) if where(row) is True else SKIPPED


def window_state(assigner, lateness: int = 0):
    if assigner.kind.clock == "count":
        return None  # CountWindowAggregate keeps its own state
    if isinstance(assigner, AlignedWindowAssigner) and assigner.is_event_time:
        return AlignedWindows(assigner, lateness)
    if isinstance(assigner, EventTimeSessionWindows):
        return SessionWindows(assigner)
    raise NotImplementedError(f"reference: {assigner!r} is not an event-time window assigner; "
                              "processing-time windows are not deterministic")


class WindowAggregate(Operator):
    def __init__(self, node: WindowAggregateNode, downstream: Operator, metrics: dict):
        in_schema = node.input.schema
        self.keys = node.keys
        self.calls = [call for _, call in node.aggregates]
        self.args = [_aggregate_input(c, in_schema) for c in self.calls]
        self.arg_types = [None if c.arg is None else c.arg.dtype(in_schema) for c in self.calls]
        self.out_names = node.schema.names
        self.state = window_state(node.assigner, node.allowed_lateness_ms)
        self.downstream = downstream
        self.metrics = metrics
        self.wm = -math.inf
        self.arrivals = 0

    def push(self, ts, row):
        key = tuple(normalize_key(row[k]) for k in self.keys)
        group = tuple(sort_key(v) for v in key)
        record = (self.arrivals, ts, self.kept(row))
        self.arrivals += 1
        if not self.state.add(group, key, ts, record, self.wm):
            self.metrics["late_records"] += 1
        for pane in self.state.refired:  # kept windows this record fires again (allowed lateness)
            self.emit(pane)

    def kept(self, row):
        """What a window keeps of a record: its aggregates' inputs."""
        return [a(row) for a in self.args]

    def watermark(self, wm):
        self.wm = wm
        fired = sorted(self.state.fire(wm), key=lambda gp: (gp[1].end, gp[0], gp[1].start))
        for _, pane in fired:
            self.emit(pane)
        self.downstream.watermark(wm)

    def emit(self, pane) -> None:
        """The rows of a fired window (and key): one, its aggregates."""
        self.downstream.push(pane.end - 1, self.result_row(pane))

    def result_row(self, pane: Pane) -> Row:
        records = sorted(pane.records, key=lambda r: r[0])
        return dict(zip(self.out_names, (*pane.key, pane.start, pane.end, *self.results(records))))

    def results(self, records: list) -> list:
        """Each aggregate over ``records`` ((arrival, event time, the aggregates' inputs) in
        arrival order; an input is ``SKIPPED`` where the aggregate's ``where=`` is not true)."""
        return [self.result(i, [(arrival, ts, v[i]) for arrival, ts, v in records]) for i in range(len(self.calls))]

    def result(self, i: int, inputs: list):
        """Aggregate ``i`` over its ``inputs``: (arrival, event time, input) in arrival order."""
        call, arg_type = self.calls[i], self.arg_types[i]
        counted = [(arrival, 0 if ts is None else int(ts), x) for arrival, ts, x in inputs if x is not SKIPPED]
        if call.spec.ordered:
            values = [(ts, arrival, x) for arrival, ts, x in counted if x is not None]
        else:
            values = [x for _, _, x in counted if x is not None]
        return aggregate(call, arg_type, values, len(counted))


class CountWindowAggregate(WindowAggregate):
    """Keyed count windows (Flink ``countWindow``): per key, every ``slide`` records, the
    aggregates over the key's last ``size`` records (fewer at the start), in stream order. The
    result's time is the time of the record that fired it. Records are never late."""

    def __init__(self, node: WindowAggregateNode, downstream: Operator, metrics: dict):
        super().__init__(node, downstream, metrics)
        self.size, self.slide = node.assigner.size, node.assigner.slide
        self.recent: dict[tuple, deque] = {}
        self.counts: dict[tuple, int] = {}

    def push(self, ts, row):
        key = tuple(normalize_key(row[k]) for k in self.keys)
        group = tuple(sort_key(v) for v in key)
        recent = self.recent.setdefault(group, deque(maxlen=self.size))
        recent.append((self.arrivals, ts, [a(row) for a in self.args]))
        self.arrivals += 1
        self.counts[group] = self.counts.get(group, 0) + 1
        if self.counts[group] % self.slide == 0:
            self.downstream.push(ts, self.result_row(Pane(key, 0, 0, list(recent))))

    def result_row(self, pane: Pane) -> Row:
        return dict(zip(self.out_names, (*pane.key, *self.results(pane.records))))

    def watermark(self, wm):
        self.wm = wm
        self.downstream.watermark(wm)


def _same(a, b) -> bool:
    """Whether two result values are equal as rows of a changelog are (the row did not change):
    a NaN equals a NaN; -0.0 is not 0.0, which the final table tells apart, so that a ``-U``
    always names the row emitted before."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


def _take_out(inputs: list, x) -> None:
    """A retraction of input ``x`` from one aggregate's ``inputs`` ((arrival, event time, input)):
    the earliest by (event time, arrival) of its equal inputs leaves (as Flink's
    ``FirstValueWithRetractAggFunction`` takes a value's oldest occurrence out; which one leaves
    matters to ``first`` and ``last`` only). Floats are equal as Java's ``Double.equals`` has
    them: NaN equals NaN, ``-0.0`` is not ``0.0``."""
    equal = [(0 if ts is None else int(ts), arrival, n) for n, (arrival, ts, y) in enumerate(inputs) if _same(x, y)]
    if equal:
        del inputs[min(equal)[2]]


class RunningAggregate(WindowAggregate):
    """``keyed.aggregate`` without a window: per key, every record's aggregates over all the key's
    records so far, as a changelog (``+I``; ``-U`` old, ``+U`` new; nothing when unchanged)."""

    def __init__(self, node: RunningAggregateNode, downstream: Operator, metrics: dict):
        in_schema = node.input.schema
        self.keys = node.keys
        self.calls = [call for _, call in node.aggregates]
        self.args = [_aggregate_input(c, in_schema) for c in self.calls]
        self.arg_types = [None if c.arg is None else c.arg.dtype(in_schema) for c in self.calls]
        self.out_names = node.schema.names
        self.downstream = downstream
        self.metrics = metrics
        self.arrivals = 0
        self.records: dict[tuple, list] = {}     # group -> its rows (what a retraction matches)
        self.inputs: dict[tuple, list] = {}      # group -> per aggregate, its (arrival, event time, input)s
        self.rows: dict[tuple, Row] = {}

    def push(self, ts, row):
        key = tuple(normalize_key(row[k]) for k in self.keys)
        group = tuple(sort_key(v) for v in key)
        records = self.records.setdefault(group, [])
        inputs = self.inputs.setdefault(group, [[] for _ in self.calls])
        kind = row.get(OP_COLUMN, INSERT)
        values = {n: v for n, v in row.items() if n != OP_COLUMN}
        if kind in (UPDATE_BEFORE, DELETE):  # a retraction takes out one equal row added before
            i = next((i for i, r in enumerate(records) if all(_same(r[n], values[n]) for n in values)), None)
            if i is not None:
                del records[i]
                for column, a in zip(inputs, self.args):
                    _take_out(column, a(row))
        else:
            records.append(values)
            for column, a in zip(inputs, self.args):
                column.append((self.arrivals, ts, a(row)))
            self.arrivals += 1
        old = self.rows.get(group)
        if not records:  # no row left: the key's row is deleted
            self.rows.pop(group, None)
            self.inputs.pop(group, None)
            if old is not None:
                self.downstream.push(ts, {**old, OP_COLUMN: DELETE})
            return
        new = dict(zip(self.out_names, (*key, *(self.result(i, column) for i, column in enumerate(inputs)))))
        self.rows[group] = new
        if old is None:
            self.downstream.push(ts, {**new, OP_COLUMN: INSERT})
        elif not all(_same(old[n], new[n]) for n in self.out_names):
            self.downstream.push(ts, {**old, OP_COLUMN: UPDATE_BEFORE})
            self.downstream.push(ts, {**new, OP_COLUMN: UPDATE_AFTER})

    def watermark(self, wm):
        self.downstream.watermark(wm)


class Deduplicate(Operator):
    """``keyed.deduplicate``: per key, the first row to arrive (``keep="first"``: emitted then,
    append-only), or the row with the latest (event time, arrival) (``keep="last"``: ``+I`` for
    the first, ``-U`` old / ``+U`` new when a row takes the place of a different one). The key
    columns hold the key's normalized value."""

    def __init__(self, node: DeduplicateNode, downstream: Operator):
        self.keys, self.keep_last = node.keys, node.keep == "last"
        self.names = node.schema.names
        self.downstream = downstream
        self.arrivals = 0
        self.kept: dict[tuple, tuple] = {}  # group -> (event time, arrival, row)

    def push(self, ts, row):
        key = tuple(normalize_key(row[k]) for k in self.keys)
        group = tuple(sort_key(v) for v in key)
        new = {**{n: row[n] for n in self.names}, **dict(zip(self.keys, key))}
        order = (0 if ts is None else int(ts), self.arrivals)
        self.arrivals += 1
        old = self.kept.get(group)
        if old is None:
            self.kept[group] = (*order, new)
            self.downstream.push(ts, {**new, OP_COLUMN: INSERT} if self.keep_last else new)
        elif self.keep_last and order > old[:2]:
            self.kept[group] = (*order, new)
            if not all(_same(old[2][n], new[n]) for n in self.names):
                self.downstream.push(ts, {**old[2], OP_COLUMN: UPDATE_BEFORE})
                self.downstream.push(ts, {**new, OP_COLUMN: UPDATE_AFTER})


class TopN(Operator):
    """``keyed.top_n`` (``top_n.TopNNode``): per key, its rows so far in rank order, the first
    ``n`` kept. A record that ranks ``r <= n`` emits, as Flink's append-only Top-N with a row
    number does, for each rank ``k`` from ``r`` to the last one held before it: ``-U`` (the row
    that held ``k``), ``+U`` (the row that holds it now); where fewer than ``n`` rows were held,
    ``+I`` for the new last rank."""

    def __init__(self, node: TopNNode, downstream: Operator):
        self.keys, self.order = node.keys, node.order
        self.names = node.input.schema.names
        self.downstream = downstream
        self.arrivals = 0
        self.kept: dict[tuple, list] = {}  # group -> [(rank key, row)], in rank order

    def push(self, ts, row):
        group = tuple(sort_key(normalize_key(row[k])) for k in self.keys)
        row = {c: int(row[c]) if isinstance(row[c], SourceTimestamp) else row[c] for c in self.names}
        # (a descending column's rank key negated by position: ties keep arrival order)
        place = (tuple(_Desc(_rank_key(row[c])) if d else _rank_key(row[c]) for c, d in self.order.by),
                 self.arrivals)
        self.arrivals += 1
        before = self.kept.setdefault(group, [])
        after = sorted(before + [(place, row)], key=lambda e: e[0])[:self.order.n]
        r = next((i for i, e in enumerate(after) if e[0] == place), None)
        if r is None:
            return
        for k in range(r, len(before)):
            self.downstream.push(ts, {**before[k][1], RANK: k + 1, OP_COLUMN: UPDATE_BEFORE})
            self.downstream.push(ts, {**after[k][1], RANK: k + 1, OP_COLUMN: UPDATE_AFTER})
        if len(after) > len(before):
            self.downstream.push(ts, {**after[-1][1], RANK: len(after), OP_COLUMN: INSERT})
        self.kept[group] = after


@dataclass(frozen=True)
class _Desc:
    """A rank key compared in reverse (a descending ``by`` column)."""

    key: tuple

    def __lt__(self, other):
        return other.key < self.key

    def __eq__(self, other):
        return self.key == other.key


class Changelog(Operator):
    """``changelog()``: a row's kind as the leading column ``op``."""

    def __init__(self, downstream: Operator):
        self.downstream = downstream

    def push(self, ts, row):
        row = dict(row)
        self.downstream.push(ts, {OP_NAME: OPS[row.pop(OP_COLUMN)], **row})


class OverAggregate(Operator):
    """OVER aggregates (``OverAggregateNode``): a record at or behind the watermark is late;
    the others wait until the watermark reaches them. Then each one leaves (ordered by event
    time, key, arrival) with the aggregates over its frame among every record of its key up to
    the watermark, in (event time, arrival) order: itself and the ``rows`` before it, or every one
    with ``ts - range <= t <= ts``. Each key keeps what later frames can still need."""

    def __init__(self, node: OverAggregateNode, downstream: Operator, metrics: dict):
        in_schema = node.input.schema
        self.keys, self.frame = node.keys, node.frame
        self.calls = [call for _, call in node.aggregates]
        self.names = [name for name, _ in node.aggregates]
        self.args = [_aggregate_input(c, in_schema) for c in self.calls]
        self.arg_types = [None if c.arg is None else c.arg.dtype(in_schema) for c in self.calls]
        self.downstream, self.metrics = downstream, metrics
        self.wm = -math.inf
        self.arrivals = 0
        self.waiting: list[tuple] = []        # (ts, group, arrival, row, inputs) not yet emitted
        self.released: dict[tuple, list] = {}  # group -> emitted records later frames may need

    def push(self, ts, row):
        ts = int(ts)
        if ts <= self.wm:
            self.metrics["late_records"] += 1
            return
        group = tuple(sort_key(normalize_key(row[k])) for k in self.keys)
        self.waiting.append((ts, group, self.arrivals, row, [a(row) for a in self.args]))
        self.arrivals += 1

    def watermark(self, wm):
        if wm > self.wm:
            self.wm = wm
            ready = sorted((r for r in self.waiting if r[0] <= wm), key=lambda r: (r[0], r[1], r[2]))
            self.waiting = [r for r in self.waiting if r[0] > wm]
            for r in ready:
                self.released.setdefault(r[1], []).append(r)
            for records in self.released.values():
                records.sort(key=lambda r: (r[0], r[2]))
            for r in ready:
                frame = self.frame_of(r, self.released[r[1]])
                out = dict(r[3])
                out.update(zip(self.names, self.results(frame)))
                self.downstream.push(r[0], out)
            for group, records in self.released.items():  # what later frames can still need
                if self.frame.rows is not None:
                    records[:] = records[max(0, len(records) - self.frame.rows):] if self.frame.rows else []
                else:
                    records[:] = [r for r in records if r[0] > wm - self.frame.range_ms]
        self.downstream.watermark(wm)

    def frame_of(self, r: tuple, records: list) -> list:
        """The frame of record ``r`` among its key's ``records`` (in (event time, arrival) order)."""
        if self.frame.rows is not None:
            upto = records[:records.index(r) + 1]
            return upto[-(self.frame.rows + 1):]
        return [x for x in records if r[0] - self.frame.range_ms <= x[0] <= r[0]]

    def results(self, frame: list) -> list:
        results = []
        for i, (call, arg_type) in enumerate(zip(self.calls, self.arg_types)):
            counted = [x[4][i] for x in frame if x[4][i] is not SKIPPED]
            results.append(aggregate(call, arg_type, [v for v in counted if v is not None], len(counted)))
        return results
class WindowRank(WindowAggregate):
    """Window Top-N and window deduplication (``window_rank.WindowRankNode``): each (key, window)
    keeps its records; when it fires, they are ranked and the first ``n`` go on, each with its
    window (and its rank, for top_n)."""

    def __init__(self, node: WindowRankNode, downstream: Operator, metrics: dict):
        self.keys, self.order = node.keys, node.order
        self.state = window_state(node.assigner, node.allowed_lateness_ms)
        self.downstream, self.metrics = downstream, metrics
        self.wm = -math.inf
        self.arrivals = 0

    def kept(self, row):
        """A ranked window keeps whole records."""
        return row

    def emit(self, pane) -> None:
        """The first ``n`` records of a fired window (and key) in rank order."""
        kept = self.at_extreme(pane.records) if self.order.at_extreme else self.ranked(pane.records)[:self.order.n]
        for rank, (_, _, row) in enumerate(kept, 1):
            # timestamps at millisecond precision, as the engine keeps them
            out = {WINDOW_START: pane.start, WINDOW_END: pane.end,
                   **{c: int(v) if isinstance(v, SourceTimestamp) else v for c, v in row.items()}}
            if self.order.ranked:
                out[RANK] = rank
            self.downstream.push(pane.end - 1, out)

    def at_extreme(self, records: list) -> list:
        """The records whose ``by`` column equals ``agg.max`` (``min``) of it over ``records``,
        by arrival: the extreme as the aggregate's reference computes it, equality as a join
        key's (``-0.0`` is ``0.0``, NaN equals NaN)."""
        column, largest = self.order.by[0]
        values = [r[2][column] for r in records if r[2][column] is not None]
        if not values:
            return []
        numbers = [v for v in values if not (isinstance(v, float) and math.isnan(v))]
        extreme = normalize_key((max if largest else min)(numbers)) if numbers else None
        return [r for r in sorted(records, key=lambda r: r[0]) if r[2][column] is not None and
                (normalize_key(r[2][column]) == extreme if numbers else math.isnan(r[2][column]))]

    def ranked(self, records: list) -> list:
        """``records`` (arrival, event time, row) in rank order: by arrival, then (stable sorts,
        last criterion first) by each ``by`` column; ``last``: latest event time, then arrival."""
        by_arrival = sorted(records, key=lambda r: r[0])
        if self.order.keep == KEEP_FIRST:
            return by_arrival
        if self.order.keep == KEEP_LAST:
            return sorted(by_arrival, key=lambda r: (int(r[1]), r[0]), reverse=True)
        out = by_arrival
        for column, descending in reversed(self.order.by):
            out = sorted(out, key=lambda r: _rank_key(r[2][column]), reverse=descending)
        return out


def _rank_key(value) -> tuple:
    """A value's place in a Top-N order: null the smallest, NaN the largest number, ``-0.0``
    equal to ``0.0``."""
    if value is None:
        return (0,)
    if isinstance(value, float) and math.isnan(value):
        return (2,)
    return (1, value)


class LateData(Operator):
    """``late_data(tag)``: the records that the window ``node.window`` drops as late (no window
    of theirs kept under the watermark in force: ``kept_windows``); the others are counted in
    ``filtered_records``."""

    def __init__(self, node: LateDataNode, downstream: Operator, metrics: dict):
        self.assigner, self.lateness = node.window.assigner, node.window.allowed_lateness_ms
        self.downstream, self.metrics = downstream, metrics
        self.wm = -math.inf

    def push(self, ts, row):
        if kept_windows(self.assigner, ts, self.wm, self.lateness):
            self.metrics["filtered_records"] += 1
        else:
            self.downstream.push(ts, row)

    def watermark(self, wm):
        self.wm = wm
        self.downstream.watermark(wm)


class Union(Operator):
    """``union``: records of every input pass on with their own event time; the watermark is the
    minimum over the inputs (each starts at -infinity: an input without data holds it back)."""

    def __init__(self, inputs: int, downstream: Operator):
        self.downstream = downstream
        self.inputs = [-math.inf] * inputs
        self.wm = -math.inf

    def push(self, ts, row):
        self.downstream.push(ts, row)

    def input_watermark(self, index: int, wm: float) -> None:
        self.inputs[index] = max(self.inputs[index], wm)
        self.wm = max(self.wm, min(self.inputs))
        self.downstream.watermark(self.wm)  # every step, moved or not


class UnionPort(Operator):
    """Input ``index`` of a ``Union``: the end of that input's chain."""

    def __init__(self, union: Union, index: int):
        self.union, self.index = union, index

    def push(self, ts, row):
        self.union.push(ts, row)

    def watermark(self, wm):
        self.union.input_watermark(self.index, wm)


# ----------------------------------------------------------------------------------------------
# Joins
# ----------------------------------------------------------------------------------------------
@dataclass
class JoinPane:
    """The records of one key in one window of a join, per side: (arrival number, row)."""

    key: tuple
    start: int
    end: int
    sides: tuple = field(default_factory=lambda: ([], []))


class TwoInputOperator(Operator):
    """An operator with a left (0) and a right (1) input, each with its own watermark (both
    start at -infinity); the operator's watermark is their minimum (Flink)."""

    def __init__(self, downstream: Operator):
        self.downstream = downstream
        self.inputs = [-math.inf, -math.inf]
        self.wm = -math.inf

    def input_watermark(self, side: int, wm: float) -> None:
        self.inputs[side] = max(self.inputs[side], wm)
        low = min(self.inputs)
        if low > self.wm:
            self.wm = low
            self.advance(low)
        self.downstream.watermark(self.wm)  # every step, moved or not

    def advance(self, wm: float) -> None:
        pass


class JoinPort(Operator):
    """Input ``side`` of a join: the end of that input's chain."""

    def __init__(self, join: "TwoInputOperator", side: int):
        self.join, self.side = join, side

    def push(self, ts, row):
        self.join.push_side(self.side, ts, row)

    def watermark(self, wm):
        self.join.input_watermark(self.side, wm)


def _join_key(row: Row, keys: tuple[str, ...]) -> tuple | None:
    """The normalized key of ``row`` (``-0.0`` is ``0.0``), or None when a key value is null (a
    null key equals nothing, as in SQL)."""
    key = tuple(normalize_key(row[k]) for k in keys)
    return None if any(v is None for v in key) else key


class WindowJoin(TwoInputOperator):
    """Flink's window join. Each record goes to its windows (tumbling, sliding) or to its key's
    sessions, which merge across both sides (a session holds the records of both inputs whose
    event times lie within the gap of each other). When a window fires, for each key with records
    on both sides, every (left, right) pair leaves, ordered by window_end, then key, then left
    arrival, then right arrival; its event time is ``window_end - 1``. A record whose windows
    have all fired is late (sessions: as for session windows); a record with a null key is
    dropped (counted filtered, never late)."""

    def __init__(self, node: WindowJoinNode, downstream: Operator, metrics: dict):
        super().__init__(downstream)
        self.keys = (node.left_keys, node.right_keys)
        self.assigner = node.assigner
        self.gap = node.assigner.gap_ms if isinstance(node.assigner, EventTimeSessionWindows) else None
        self.right_names = node.right_names
        self.metrics = metrics
        self.panes: dict[tuple, JoinPane] = {}         # (start, end, group) -> pane
        self.sessions: dict[tuple, list[JoinPane]] = {}  # group -> open sessions
        self.arrivals = [0, 0]

    def push_side(self, side, ts, row):
        key = _join_key(row, self.keys[side])
        if key is None:
            self.metrics["filtered_records"] += 1
            return
        group = tuple(sort_key(v) for v in key)
        record = (self.arrivals[side], row)
        self.arrivals[side] += 1
        ts = int(ts)
        added = self._add_session(side, group, key, ts, record) if self.gap is not None \
            else self._add_aligned(side, group, key, ts, record)
        if not added:
            self.metrics["late_records"] += 1

    def _add_aligned(self, side, group, key, ts, record) -> bool:
        open_windows = [(s, e) for s, e in self.assigner.windows_of(ts) if e - 1 > self.wm]
        for s, e in open_windows:
            self.panes.setdefault((s, e, group), JoinPane(key, s, e)).sides[side].append(record)
        return bool(open_windows)

    def _add_session(self, side, group, key, ts, record) -> bool:
        new = JoinPane(key, ts, ts + self.gap)
        new.sides[side].append(record)
        sessions = self.sessions.setdefault(group, [])
        touching = [s for s in sessions if s.start <= new.end and s.end >= new.start]
        if not touching and new.end - 1 <= self.wm:
            return False
        for s in touching:
            sessions.remove(s)
            new = JoinPane(key, min(s.start, new.start), max(s.end, new.end),
                           (s.sides[0] + new.sides[0], s.sides[1] + new.sides[1]))
        sessions.append(new)
        return True

    def advance(self, wm):
        fired = [(g, p) for (_, _, g), p in self.panes.items() if p.end - 1 <= wm]
        for g, p in fired:
            del self.panes[(p.start, p.end, g)]
        for g, sessions in self.sessions.items():
            fired.extend((g, s) for s in sessions if s.end - 1 <= wm)
            sessions[:] = [s for s in sessions if s.end - 1 > wm]
        for _, pane in sorted(fired, key=lambda gp: (gp[1].end, gp[0], gp[1].start)):
            lefts, rights = (sorted(records, key=lambda r: r[0]) for records in pane.sides)
            for _, left in lefts:
                for _, right in rights:
                    row = {WINDOW_START: pane.start, WINDOW_END: pane.end, **left}
                    row.update((out, right[name]) for name, out in self.right_names)
                    self.downstream.push(pane.end - 1, row)


class IntervalJoin(TwoInputOperator):
    """Flink's interval join: a record is late when its event time is below the join's watermark
    (Flink's ``isLate``); otherwise it is kept, and paired at once with every record of the other
    side kept so far with an equal key and ``lower <= right.ts - left.ts <= upper``: pairs leave in
    the order of the records that complete them, and for one record in the arrival order of its
    partners. A pair's event time is ``max(left.ts, right.ts)``. A left record is dropped from the
    state once ``left.ts + upper < watermark``, a right one once ``right.ts - lower < watermark``:
    no record on time can pair with it any more."""

    def __init__(self, node: IntervalJoinNode, downstream: Operator, metrics: dict):
        super().__init__(downstream)
        self.keys = (node.left_keys, node.right_keys)
        self.lower, self.upper = node.lower_ms, node.upper_ms
        self.right_names = node.right_names
        self.metrics = metrics
        self.buffers: tuple[dict, dict] = ({}, {})  # per side: group -> [(ts, row)] in arrival order

    def push_side(self, side, ts, row):
        key = _join_key(row, self.keys[side])
        if key is None:
            self.metrics["filtered_records"] += 1
            return
        ts = int(ts)
        if ts < self.wm:
            self.metrics["late_records"] += 1
            return
        group = tuple(sort_key(v) for v in key)
        self.buffers[side].setdefault(group, []).append((ts, row))
        for other_ts, other in self.buffers[1 - side].get(group, ()):
            (lts, left), (rts, right) = ((ts, row), (other_ts, other)) if side == 0 else ((other_ts, other), (ts, row))
            if self.lower <= rts - lts <= self.upper:
                out = dict(left)
                out.update((o, right[name]) for name, o in self.right_names)
                self.downstream.push(max(lts, rts), out)

    def advance(self, wm):
        for side, keep in ((0, lambda t: t + self.upper >= wm), (1, lambda t: t - self.lower >= wm)):
            buffers = self.buffers[side]
            for group in list(buffers):
                buffers[group] = [r for r in buffers[group] if keep(r[0])]
                if not buffers[group]:
                    del buffers[group]


class RegularJoin(TwoInputOperator):
    """Flink's regular join: a record pairs at once with every record of the other side with an
    equal key that is held, then is held itself: pairs leave in the order of the records that
    complete them, and for one record in the arrival order of its partners; a pair's event time
    is ``max(left.ts, right.ts)``. No record is late. With a TTL, the state holds the records
    with ``ts >= watermark - ttl`` (the join's watermark when the probing record arrives): older
    ones leave it, and a record that arrives older than that pairs but is not held."""

    def __init__(self, node: RegularJoinNode, downstream: Operator, metrics: dict):
        super().__init__(downstream)
        self.keys = (node.left_keys, node.right_keys)
        self.ttl = node.ttl_ms
        self.right_names = node.right_names
        self.metrics = metrics
        self.held: tuple[dict, dict] = ({}, {})  # per side: group -> [(ts, row)] in arrival order

    def _alive(self, ts: int) -> bool:
        return self.ttl is None or ts + self.ttl >= self.wm

    def push_side(self, side, ts, row):
        key = _join_key(row, self.keys[side])
        if key is None:
            self.metrics["filtered_records"] += 1
            return
        ts = int(ts)
        group = tuple(sort_key(v) for v in key)
        for other_ts, other in self.held[1 - side].get(group, ()):
            if not self._alive(other_ts):
                continue
            left, right = (row, other) if side == 0 else (other, row)
            out = dict(left)
            out.update((o, right[name]) for name, o in self.right_names)
            self.downstream.push(max(ts, other_ts), out)
        if self._alive(ts):
            self.held[side].setdefault(group, []).append((ts, row))

    def advance(self, wm):
        for held in self.held:
            for group in list(held):
                held[group] = [r for r in held[group] if self._alive(r[0])]
                if not held[group]:
                    del held[group]


class LookupJoin(Operator):
    """A stream joined with a static table: each record (a null key is filtered) is followed by
    one output row per table row of its key, in table order, with the record's event time."""

    def __init__(self, node: LookupJoinNode, downstream: Operator, metrics: dict):
        self.downstream, self.metrics = downstream, metrics
        self.left_on, self.right_names = node.left_on, node.right_names
        self.rows: dict[tuple, list[Row]] = {}
        for batch in node.table.to_batches():
            for _, row in batch_records(batch, None):
                key = _join_key(row, node.right_on)
                if key is not None:
                    self.rows.setdefault(tuple(sort_key(v) for v in key), []).append(row)

    def push(self, ts, row):
        key = _join_key(row, self.left_on)
        if key is None:
            self.metrics["filtered_records"] += 1
            return
        for match in self.rows.get(tuple(sort_key(v) for v in key), ()):
            out = dict(row)
            out.update((o, match[name]) for name, o in self.right_names)
            self.downstream.push(ts, out)

    def watermark(self, wm):
        self.downstream.watermark(wm)


def build(node: PlanNode, downstream: Operator, metrics: dict, readers: dict) -> None:
    """Wire the operators of ``node`` and its inputs to ``downstream``, source-first. The first
    operator of every path from a source is appended to ``readers[id(source)]``, in the order of
    the plan's source reads (depth-first, inputs left to right)."""
    if isinstance(node, SourceNode):
        readers.setdefault(id(node.source), []).append(downstream)
        return
    if isinstance(node, UnionNode):
        union = Union(len(node.inputs), downstream)
        for i, input_node in enumerate(node.inputs):
            build(input_node, UnionPort(union, i), metrics, readers)
        return
    if isinstance(node, (WindowJoinNode, IntervalJoinNode, RegularJoinNode)):
        join = {WindowJoinNode: WindowJoin, IntervalJoinNode: IntervalJoin,
                RegularJoinNode: RegularJoin}[type(node)](node, downstream, metrics)
        build(node.left, JoinPort(join, 0), metrics, readers)
        build(node.right, JoinPort(join, 1), metrics, readers)
        return
    if isinstance(node, FilterNode):
        op = Filter(node, downstream, metrics)
    elif isinstance(node, (MapNode, ProjectNode)):
        op = Map(node, downstream)
    elif isinstance(node, WindowAggregateNode) and node.assigner.kind.clock == "count":
        op = CountWindowAggregate(node, downstream, metrics)
    elif isinstance(node, WindowAggregateNode):
        if node.assigner.is_event_time and any(s.timestamp is None for s in distinct_sources(node)):
            raise ValueError("reference: an event-time window needs a source with a timestamp column")
        op = WindowAggregate(node, downstream, metrics)
    elif isinstance(node, WindowRankNode):
        op = WindowRank(node, downstream, metrics)
    elif isinstance(node, LateDataNode):
        op = LateData(node, downstream, metrics)
    elif isinstance(node, LookupJoinNode):
        op = LookupJoin(node, downstream, metrics)
    elif isinstance(node, OverAggregateNode):
        op = OverAggregate(node, downstream, metrics)
    elif isinstance(node, RunningAggregateNode):
        op = RunningAggregate(node, downstream, metrics)
    elif isinstance(node, ChangelogNode):
        op = Changelog(downstream)
    elif isinstance(node, DeduplicateNode):
        op = Deduplicate(node, downstream)
    elif isinstance(node, TopNNode):
        op = TopN(node, downstream)
    else:
        raise NotImplementedError(f"reference: plan node {node.label()}")
    build(node.input, op, metrics, readers)


# ==============================================================================================
# Arrow in and out
# ==============================================================================================
class SourceTimestamp(int):
    """A value read from an Arrow timestamp column: the int of its epoch milliseconds (what
    expressions, windows and keys see), remembering the raw value and unit, so that a column
    passed through unchanged leaves with its original (sub-millisecond) value."""

    def __new__(cls, raw: int, unit: str):
        mul, div = TIMESTAMP_UNIT_DIVISOR[unit]
        self = super().__new__(cls, raw * mul // div)
        self.raw, self.unit = raw, unit
        return self


def column_values(array: pa.Array) -> list:
    """Python values of an Arrow column as grizzly-py holds them (timestamps in epoch ms)."""
    if pa.types.is_timestamp(array.type):
        unit = array.type.unit
        return [None if v is None else SourceTimestamp(v, unit) for v in array.cast(pa.int64()).to_pylist()]
    return array.to_pylist()


def batch_records(batch: pa.RecordBatch, timestamp: str | None) -> list[tuple[int | None, Row]]:
    columns = {name: column_values(batch.column(name)) for name in batch.schema.names}
    rows = [dict(zip(columns, values)) for values in zip(*columns.values())]
    times = columns[timestamp] if timestamp is not None else [None] * batch.num_rows
    return list(zip(times, rows))


def arrow_column(values: list, f: Field) -> pa.Array:
    """An output column of ``f``'s Arrow type; timestamps convert from ms to their unit, except
    source values that keep their unit (see ``SourceTimestamp``)."""
    arrow_type = f.arrow_type if f.arrow_type is not None else to_arrow_type(f.dtype)
    if f.dtype.is_timestamp and pa.types.is_timestamp(arrow_type):
        mul, div = TIMESTAMP_UNIT_DIVISOR[arrow_type.unit]

        def raw(v):
            if isinstance(v, SourceTimestamp) and v.unit == arrow_type.unit:
                return v.raw
            return int(v) * div // mul
        return pa.array([None if v is None else raw(v) for v in values], pa.int64()).cast(arrow_type)
    if f.dtype.is_timestamp:
        return pa.array([None if v is None else int(v) for v in values], pa.int64())
    return pa.array(values, arrow_type)


def to_table(rows: list[Row], schema: Schema) -> pa.Table:
    columns = [arrow_column([r[f.name] for r in rows], f) for f in schema]
    arrow_schema = pa.schema([pa.field(f.name, c.type) for f, c in zip(schema, columns)])
    return pa.Table.from_arrays(columns, schema=arrow_schema)


# ==============================================================================================
# Entry points
# ==============================================================================================
def run(node: PlanNode) -> tuple[pa.Table, dict]:
    """Run the plan ending in ``node`` to the end of its input; return (table, metrics).

    The sources are read round-robin, one batch each per round, in order of first appearance in
    the plan (``plan.distinct_sources``); a source that ends drops out, and its watermark becomes
    +infinity. A batch's records go through every path that reads its source (in the plan's
    order of source reads, all records of the batch through one path before the next), then the
    source's watermark moves along those paths.

    Metrics: ``records_in`` (source rows), ``records_out`` (result rows), ``late_records``,
    ``filtered_records`` (in every operator: after a union, a join or a window too).
    """
    metrics = {"records_in": 0, "records_out": 0, "late_records": 0, "filtered_records": 0}
    sink = Collect()
    readers: dict[int, list[Operator]] = {}
    build(node, sink, metrics, readers)
    sources = distinct_sources(node)
    iterators = {id(s): iter(s.batches()) for s in sources}
    watermarks = {id(s): -math.inf for s in sources}
    live = list(sources)
    while live:
        ended = []
        for source in live:
            batch = next(iterators[id(source)], None)
            if batch is None:
                ended.append(source)
                for first in readers[id(source)]:
                    first.watermark(math.inf)
                continue
            records = batch_records(batch, source.timestamp)
            metrics["records_in"] += len(records)
            for first in readers[id(source)]:
                for ts, row in records:
                    first.push(ts, row)
            if records and source.timestamp is not None:
                wm = max(watermarks[id(source)], source.watermark.watermark_for(max(ts for ts, _ in records)))
                watermarks[id(source)] = wm
                for first in readers[id(source)]:
                    first.watermark(wm)
        live = [s for s in live if not any(s is e for e in ended)]
    metrics["records_out"] = len(sink.rows)
    if node.updating:  # the table the changelog leaves
        return final_table(changelog_rows(sink.rows, node.schema)), metrics
    return to_table(sink.rows, node.schema), metrics


def changelog_rows(rows: list[Row], schema: Schema) -> pa.Table:
    """The rows of an updating stream, with their kinds in ``OP_COLUMN``."""
    table = to_table(rows, schema)
    return table.append_column(OP_COLUMN, pa.array([r[OP_COLUMN] for r in rows], pa.int64()))


def evaluate(node: PlanNode) -> pa.Table:
    """The result table of the plan ending in ``node``."""
    return run(node)[0]


__all__ = ["run", "evaluate", "compile_expr", "aggregate", "wrap_int64", "wrap_int32", "float_mod",
           "float_divide", "sort_key"]
