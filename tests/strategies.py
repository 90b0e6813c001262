"""Hypothesis strategies for grizzly-py's differential tests, and the table comparison they use.

- ``input_data``: a random Arrow table (int32, int64, float64 with NaN/+-inf/-0.0, bool, string,
  dictionary<int32, string> columns with nulls, and an event-time column ``ts`` without nulls,
  int64 ms or an Arrow timestamp, roughly increasing with random disorder), split into
  RecordBatches (zero-row ones too).
- ``expressions``: random well-typed expression trees over a schema, of a requested kind.
- ``query_cases``: random queries: a chain of filter / with_columns / select, optionally ending in
  a keyed or global window aggregation (``window_steps``: tumbling, sliding or cumulative
  event-time windows, with and without Flink's offset and allowed lateness, aggregates or window
  Top-N / deduplication; or a count window).
- ``keyed_operator_cases``: a stateless prefix, then one operator that keeps keyed state without
  a window (``KEYED_OPERATORS``: a running aggregate, unbounded ``top_n``, ``deduplicate`` first
  or last, an OVER aggregate, a ``lookup_join`` against a drawn static table), sometimes a
  running aggregate over its updating result (Nexmark Q4's shape), then stateless steps or a
  window over an append-only result (``steps_after``); with the parallelism to run at and the
  changelog's key columns where the output keeps them.
- ``regular_join_cases``: two random inputs with their own stateless prefixes (one in four then
  first rows, OVER or a lookup join), joined by a regular join on keys of one class (with and without ``state_ttl``, a filter after it), then
  ``steps_after``.

A drawn ``QueryCase`` rebuilds its query on any environment (``case.build(env)``; a join's
second input is ``case.right``), and its repr is a runnable Python reproducer, which hypothesis
prints for a falsifying example.

``assert_tables_equal`` compares two result tables: same column names and types (dictionary
columns count as their value type), same rows in the same order, floats within 1e-9 relative.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import dataclass, field

import pyarrow as pa
from hypothesis import strategies as st

import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, agg, reference
from grizzly_py.aggregates import AggCall
from grizzly_py.changelog import OP_NAME
from grizzly_py.expressions import (Alias, BinaryOp, Call, Cast, Column, Expr, IfElse, IsIn, Literal, UnaryOp, col,
                                    concat_str, if_else, lit)
from grizzly_py.reference import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from grizzly_py.types import Schema
from grizzly_py.windows import CumulativeEventTimeWindows, SlidingEventTimeWindows, TumblingEventTimeWindows

TIMESTAMP = "ts"

# ==============================================================================================
# Values
# ==============================================================================================
STRINGS = ["", "a", "b", "ab", "B", "é", "a\x00"]


def int_values(lo: int = INT64_MIN, hi: int = INT64_MAX) -> st.SearchStrategy[int]:
    """Mostly small ints, sometimes the extremes, sometimes anything in range."""
    edges = [v for v in (lo, hi, lo + 1, hi - 1, INT32_MIN, INT32_MAX, 0, -1, 1) if lo <= v <= hi]
    return st.one_of(st.integers(-20, 20), st.sampled_from(edges), st.integers(lo, hi))


def float_values() -> st.SearchStrategy[float]:
    specials = [0.0, -0.0, math.nan, math.inf, -math.inf, 0.5, -1.5, 1e308, -1e308, 5e-324]
    return st.one_of(st.floats(-100, 100).map(lambda x: round(x, 2)), st.sampled_from(specials), st.floats())


# column name tag -> (Arrow type, value strategy)
COLUMN_KINDS = {
    "i32": (pa.int32(), int_values(INT32_MIN, INT32_MAX)),
    "i64": (pa.int64(), int_values()),
    "f64": (pa.float64(), float_values()),
    "b": (pa.bool_(), st.booleans()),
    "s": (pa.string(), st.sampled_from(STRINGS)),
    "d": (pa.dictionary(pa.int32(), pa.string()), st.sampled_from(STRINGS)),
}


# ==============================================================================================
# Input data
# ==============================================================================================
# the event-time column's type: mostly int64 ms, sometimes an Arrow timestamp
EVENT_TIME_TYPES = (pa.int64(), pa.int64(), pa.timestamp("ms"), pa.timestamp("us"))


@st.composite
def event_times(draw, n: int) -> list[int]:
    """``n`` event times: a random walk forward from a (possibly negative) base, plus disorder."""
    base = draw(st.integers(-60, 60))
    disorder = draw(st.integers(0, 25))
    steps = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    jitter = draw(st.lists(st.integers(-disorder, disorder), min_size=n, max_size=n))
    times, t = [], base
    for step, j in zip(steps, jitter):
        t += step
        times.append(t + j)
    return times


@st.composite
def batch_slices(draw, n: int) -> list[tuple[int, int]]:
    """A split of ``n`` rows into consecutive (offset, length) slices; lengths may be zero."""
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=8)))
    bounds = [0, *cuts, n]
    return [(a, b - a) for a, b in zip(bounds, bounds[1:])]


def _wrap(x: int, bits: int) -> int:
    return (x + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))


def tiled(values: list, kind: str, repeat: int, drift: int) -> list:
    """``values`` repeated ``repeat`` times; copy j of a number adds ``j * drift`` (ints wrap),
    so that big inputs still have many distinct keys and event times."""
    def shifted(v, j):
        if v is None or kind in ("b", "s", "d"):
            return v
        if kind == "f64":
            return v + j * drift
        return _wrap(v + j * drift, 32 if kind == "i32" else 64)
    return [shifted(v, j) for j in range(repeat) for v in values]


@st.composite
def input_data(draw, max_rows: int = 25, max_repeat: int = 1,
               min_rows: int = 0) -> tuple[pa.Schema, dict[str, list], list[tuple[int, int]]]:
    """(Arrow schema, column values, batch slices) of a random input.

    With ``max_repeat`` > 1 the drawn rows may be repeated (``tiled``) into a big input, to cross
    the engine's internal chunk sizes and grow its hash tables.
    """
    n = draw(st.integers(min_rows, max_rows))
    kinds = draw(st.lists(st.sampled_from(sorted(COLUMN_KINDS)), min_size=1, max_size=5))
    repeat = draw(st.integers(1, max_repeat))
    times = draw(event_times(n))
    span = max(times) - min(times) + 1 if times else 0
    times = tiled(times, "i64", repeat, drift=span)
    ts_type = draw(st.sampled_from(EVENT_TIME_TYPES))
    if ts_type == pa.timestamp("us"):  # the same milliseconds, plus sub-millisecond noise
        noise = draw(st.lists(st.integers(0, 999), min_size=n, max_size=n))
        times = [t * 1000 + noise[i % n] for i, t in enumerate(times)]
    schema_fields = [pa.field(TIMESTAMP, ts_type)]
    columns = {TIMESTAMP: times}
    for i, kind in enumerate(kinds):
        arrow_type, values = COLUMN_KINDS[kind]
        name = f"{kind}_{i}"
        schema_fields.append(pa.field(name, arrow_type))
        column = draw(st.lists(st.none() | values, min_size=n, max_size=n))
        columns[name] = tiled(column, kind, repeat, drift=draw(st.integers(0, 3)))
    return pa.schema(schema_fields), columns, draw(batch_slices(n * repeat))


# ==============================================================================================
# Expressions
# ==============================================================================================
NUMERIC = ("int", "float")
NON_STRING = ("int", "float", "bool")


def kind_of(dtype) -> str:
    if dtype.is_list:  # (a top_k result: passed through, never an expression's operand)
        return "list"
    if dtype.is_integer or dtype.is_timestamp:
        return "int"
    if dtype.is_float:
        return "float"
    if dtype.is_bool:
        return "bool"
    return "string"


def columns_of_kind(schema: Schema, kind: str) -> list[str]:
    return [f.name for f in schema if kind_of(f.dtype) == kind]


def literals(kind: str) -> st.SearchStrategy:
    return {
        "int": int_values(),
        "float": float_values(),
        "bool": st.booleans(),
        "string": st.sampled_from(STRINGS),
    }[kind]


@st.composite
def leaves(draw, schema: Schema, kind: str) -> Expr:
    """A column of the kind (preferred), a literal, or (for ints) the null literal."""
    names = columns_of_kind(schema, kind)
    choice = draw(st.integers(0, 5))
    if names and choice >= 2:
        return col(draw(st.sampled_from(names)))
    if kind == "int" and choice == 1:
        return lit(None)
    return lit(draw(literals(kind)))


@st.composite
def expressions(draw, schema: Schema, kind: str, depth: int = 3) -> Expr:
    """A well-typed expression of ``kind`` ("int", "float", "bool", "string") over ``schema``."""
    if depth <= 0 or draw(st.integers(0, 2)) == 0:
        return draw(leaves(schema, kind))
    builder = draw(st.sampled_from(BUILDERS[kind]))
    return builder(draw, schema, depth - 1)


def _sub(draw, schema, kinds, depth) -> Expr:
    """A subexpression of one of ``kinds``."""
    kind = kinds if isinstance(kinds, str) else draw(st.sampled_from(kinds))
    return draw(expressions(schema, kind, depth))


def _maybe_swapped(draw, a, b):
    return (b, a) if draw(st.booleans()) else (a, b)


# --- int ------------------------------------------------------------------------------------
def _int_arith(draw, schema, depth):
    op = draw(st.sampled_from(["+", "-", "*", "%"]))
    return BinaryOp(op, _sub(draw, schema, "int", depth), _sub(draw, schema, "int", depth))


def _int_unary(draw, schema, depth):
    return UnaryOp(draw(st.sampled_from(["neg", "abs"])), _sub(draw, schema, "int", depth))


def _int_cast(draw, schema, depth):
    return _sub(draw, schema, NON_STRING, depth).cast(draw(st.sampled_from(["int32", "int64"])))


def _int_if_else(draw, schema, depth):
    return if_else(_sub(draw, schema, "bool", depth), _sub(draw, schema, "int", depth),
                   _sub(draw, schema, "int", depth))


# --- float ----------------------------------------------------------------------------------
def _float_arith(draw, schema, depth):
    op = draw(st.sampled_from(["+", "-", "*", "/", "%"]))
    a, b = _maybe_swapped(draw, _sub(draw, schema, "float", depth), _sub(draw, schema, NUMERIC, depth))
    return BinaryOp(op, a, b)


def _int_division(draw, schema, depth):
    return _sub(draw, schema, "int", depth) / _sub(draw, schema, "int", depth)


def _float_unary(draw, schema, depth):
    return UnaryOp(draw(st.sampled_from(["neg", "abs"])), _sub(draw, schema, "float", depth))


def _float_cast(draw, schema, depth):
    return _sub(draw, schema, NON_STRING, depth).cast("float64")


def _float_if_else(draw, schema, depth):
    a, b = _maybe_swapped(draw, _sub(draw, schema, "float", depth), _sub(draw, schema, NUMERIC, depth))
    return if_else(_sub(draw, schema, "bool", depth), a, b)


# --- bool -----------------------------------------------------------------------------------
def _compare_numbers(draw, schema, depth):
    op = draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]))
    return BinaryOp(op, _sub(draw, schema, NUMERIC, depth), _sub(draw, schema, NUMERIC, depth))


def _compare_bools(draw, schema, depth):
    op = draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]))
    return BinaryOp(op, _sub(draw, schema, "bool", depth), _sub(draw, schema, "bool", depth))


def _compare_strings(draw, schema, depth):
    op = draw(st.sampled_from(["==", "!="]))
    return BinaryOp(op, _sub(draw, schema, "string", depth), _sub(draw, schema, "string", depth))


def _logic(draw, schema, depth):
    def operand():
        return lit(None) if draw(st.integers(0, 5)) == 0 else _sub(draw, schema, "bool", depth)
    return BinaryOp(draw(st.sampled_from(["&", "|"])), operand(), operand())


def _not(draw, schema, depth):
    return ~_sub(draw, schema, "bool", depth)


def _isin(draw, schema, depth):
    kind = draw(st.sampled_from(["int", "float", "bool", "string"]))
    value_kinds = NUMERIC if kind in NUMERIC else (kind,)
    values = draw(st.lists(st.one_of(*(literals(k) for k in value_kinds)), max_size=4))
    if draw(st.integers(0, 3)) == 0:
        values.insert(draw(st.integers(0, len(values))), None)
    return _sub(draw, schema, kind, depth).isin(values)


def _between(draw, schema, depth):
    return _sub(draw, schema, NUMERIC, depth).between(_sub(draw, schema, NUMERIC, 0),
                                                      _sub(draw, schema, NUMERIC, 0))


def _null_test(draw, schema, depth):
    operand = _sub(draw, schema, ("int", "float", "bool", "string"), depth)
    return operand.is_null() if draw(st.booleans()) else operand.is_not_null()


def _bool_cast(draw, schema, depth):
    return _sub(draw, schema, NON_STRING, depth).cast("bool")


def _bool_if_else(draw, schema, depth):
    return if_else(*(_sub(draw, schema, "bool", depth) for _ in range(3)))


# --- string functions (literal patterns; tests/test_regex.py draws regular expressions) ------
PIECES = ["", "a", "b", "é", "ab", "\x00"]


def _string_function(draw, schema, depth):
    s = _sub(draw, schema, "string", depth)
    which = draw(st.integers(0, 5))
    if which == 0:
        return s.str.to_lowercase() if draw(st.booleans()) else s.str.to_uppercase()
    if which == 1:
        return s.str.slice(draw(st.integers(-3, 3)), draw(st.sampled_from([None, 0, 1, 2, 5])))
    if which == 2:
        return s.str.split_part(draw(st.sampled_from(PIECES[1:])), draw(st.integers(0, 3)))
    if which == 3:
        method = draw(st.sampled_from(["replace", "replace_all"]))
        return getattr(s.str, method)(draw(st.sampled_from(PIECES[1:])), draw(st.sampled_from(PIECES)), literal=True)
    if which == 4:
        parts = [s] + [_sub(draw, schema, "string", depth) for _ in range(draw(st.integers(0, 2)))]
        return concat_str(*parts, separator=draw(st.sampled_from(PIECES)))
    return if_else(_sub(draw, schema, "bool", depth), s, _sub(draw, schema, "string", depth))


def _string_measure(draw, schema, depth):
    s = _sub(draw, schema, "string", depth)
    if draw(st.booleans()):
        return s.str.len_chars()
    return s.str.count_matches(draw(st.sampled_from(PIECES[1:])), literal=True)


def _string_test(draw, schema, depth):
    s = _sub(draw, schema, "string", depth)
    piece = draw(st.sampled_from(PIECES))
    method = draw(st.sampled_from(["contains", "starts_with", "ends_with"]))
    return s.str.contains(piece, literal=True) if method == "contains" else getattr(s.str, method)(piece)


BUILDERS = {
    "int": [_int_arith, _int_unary, _int_cast, _int_if_else, _string_measure],
    "float": [_float_arith, _int_division, _float_unary, _float_cast, _float_if_else],
    "bool": [_compare_numbers, _compare_bools, _compare_strings, _logic, _not, _isin, _between,
             _null_test, _bool_cast, _bool_if_else, _string_test],
    "string": [_string_function],
}


# ==============================================================================================
# Queries
# ==============================================================================================
def expr_code(e: Expr) -> str:
    """Python source that rebuilds ``e`` (with ``col, lit, if_else`` and ``nan, inf`` in scope)."""
    if isinstance(e, Column):
        return f"col({e.name!r})"
    if isinstance(e, Literal):
        return f"lit({e.value!r})"
    if isinstance(e, BinaryOp):
        return f"({expr_code(e.left)} {e.op} {expr_code(e.right)})"
    if isinstance(e, UnaryOp):
        inner = expr_code(e.operand)
        return {"~": f"(~{inner})", "neg": f"(-{inner})"}.get(e.op, f"{inner}.{e.op}()")
    if isinstance(e, IsIn):
        return f"{expr_code(e.operand)}.isin({list(e.values)!r})"
    if isinstance(e, Cast):
        return f"{expr_code(e.operand)}.cast({e.type_name!r})"
    if isinstance(e, IfElse):
        return f"if_else({expr_code(e.cond)}, {expr_code(e.then)}, {expr_code(e.otherwise)})"
    if isinstance(e, Alias):
        return f"{expr_code(e.operand)}.alias({e.name!r})"
    if isinstance(e, Call):
        options = ", ".join(f"{k}={v!r}" for k, v in e.options)
        if e.func == "concat_str":
            return f"concat_str({', '.join(map(expr_code, e.args))}, {options})"
        return f"{expr_code(e.args[0])}.{e.func}({options})"  # "str.slice" -> x.str.slice(...)
    raise TypeError(e)


def value_code(v) -> str:
    if isinstance(v, Expr):
        return expr_code(v)
    if isinstance(v, pa.Table):  # a lookup join's table (timestamps as their integers)
        columns = {name: (c.cast(pa.int64()) if pa.types.is_timestamp(c.type) else c).to_pylist()
                   for name, c in zip(v.column_names, v.columns)}
        return f"pa.Table.from_pydict({columns!r}, schema={schema_code(v.schema)})"
    if isinstance(v, AggCall):
        args = ([expr_code(v.arg)] if v.arg is not None else []) + ([str(v.k)] if v.func == "top_k" else []) \
            + ([f"where={expr_code(v.where)}"] if v.where is not None else [])
        return f"agg.{v.func}({', '.join(args)})"
    return repr(v)  # assigners print as the code that builds them


def schema_code(schema: pa.Schema) -> str:
    return "pa.schema([" + ", ".join(f"({f.name!r}, {arrow_type_code(f.type)})" for f in schema) + "])"


def arrow_type_code(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        return f"pa.dictionary(pa.{t.index_type}(), pa.{t.value_type}())"
    if pa.types.is_timestamp(t):
        return f"pa.timestamp({t.unit!r})"
    return {"bool": "pa.bool_()", "double": "pa.float64()"}.get(str(t), f"pa.{t}()")


class _RightInput:
    """Stands for a join's second input (``QueryCase.right``) in a ``join`` step's arguments."""

    def __repr__(self):
        return "right"


RIGHT = _RightInput()


@dataclass(frozen=True)
class Step:
    """One DSL method call on the stream so far: ``stream.<method>(*args, **kwargs)``."""

    method: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)

    def apply(self, stream, right=None):
        """``right``: the stream that ``RIGHT`` among the arguments stands for."""
        args = tuple(right if a is RIGHT else a for a in self.args)
        return getattr(stream, self.method)(*args, **self.kwargs)

    def code(self) -> str:
        args = [value_code(a) for a in self.args] + [f"{k}={value_code(v)}" for k, v in self.kwargs.items()]
        return f".{self.method}({', '.join(args)})"


@dataclass
class QueryCase:
    """Input data, watermark bound and DSL steps of one random query; with ``right``, the second
    input of the ``join`` step among them (its own data and steps), and the parallelism to run at.
    ``keys``: the output columns that name a changelog row's key (rows of one key keep their
    order), where the query is an updating stream that keeps them."""

    arrow_schema: pa.Schema
    columns: dict[str, list]
    slices: list[tuple[int, int]]
    bound_ms: int
    steps: list[Step] = field(default_factory=list)
    right: QueryCase | None = None
    parallelism: int = 1
    keys: tuple[str, ...] | None = None

    def batches(self) -> list[pa.RecordBatch]:
        whole = pa.RecordBatch.from_pydict(self.columns, schema=self.arrow_schema)
        return [whole.slice(offset, length) for offset, length in self.slices]

    def source(self, env: gz.StreamEnvironment):
        return env.from_arrow(self.batches(), timestamp=TIMESTAMP,
                              watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(self.bound_ms)))

    def build(self, env: gz.StreamEnvironment):
        stream = self.source(env)
        for step in self.steps:
            stream = step.apply(stream, self.right.build(env) if any(a is RIGHT for a in step.args) else None)
        return stream

    @property
    def is_windowed(self) -> bool:
        return any(s.method in ("aggregate", "top_n", "deduplicate") for s in self.steps)

    def _source_code(self, suffix: str) -> list[str]:
        """Lines that build this case's stream as ``q{suffix}`` (its data as ``batches{suffix}``)."""
        query = "".join(f"\n     {s.code()}" for s in self.steps)
        return [
            f"schema{suffix} = {schema_code(self.arrow_schema)}",
            f"whole{suffix} = pa.RecordBatch.from_pydict({self.columns!r}, schema=schema{suffix})",
            f"batches{suffix} = [whole{suffix}.slice(o, n) for o, n in {self.slices!r}]",
            f"{'q' if not suffix else suffix.strip('_')} = (env.from_arrow(batches{suffix}, timestamp={TIMESTAMP!r}, "
            f"watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds({self.bound_ms})))"
            f"{query})",
        ]

    def code(self, run: bool = True) -> str:
        """A Python script that rebuilds the query as ``q`` (a join's second input as ``right``);
        with ``run``, it also runs it and prints the compiled engine's and the reference's
        results (and changelogs, for an updating stream)."""
        lines = [
            "",
            "import pyarrow as pa",
            "import grizzly_py as gz",
            "from grizzly_py import col, lit, agg, if_else, concat_str, Time, WatermarkStrategy",
            "from grizzly_py.windows import (CumulativeEventTimeWindows, EventTimeSessionWindows, SlidingEventTimeWindows,",
            "                                TumblingEventTimeWindows)",
            "from grizzly_py import reference",
            "nan, inf = float('nan'), float('inf')",
            f"env = gz.StreamEnvironment(parallelism={self.parallelism})",
        ]
        if self.right is not None:
            lines += self.right._source_code("_right")
        lines += self._source_code("")
        if run:
            lines += [
                "expected, ref_metrics = reference.run(q.node)",
                "q.collect('out')",
                "if q.is_updating:",
                "    print(reference.evaluate(q.changelog().node))",
                "    q.changelog().collect('changes')",
                "result = env.execute()",
                "print(result['out'], result.metrics, expected, ref_metrics, sep='\\n')",
                "if q.is_updating:",
                "    print(result['changes'])",
            ]
        return "\n".join(lines)

    def __repr__(self):
        return self.code()

    def _repr_pretty_(self, printer, cycle):  # what hypothesis prints for a falsifying example
        printer.text(self.code())


def fresh_name(schema: Schema, prefix: str, taken=()) -> str:
    i = 0
    while f"{prefix}{i}" in schema or f"{prefix}{i}" in taken:
        i += 1
    return f"{prefix}{i}"


def _any_expression(draw, schema: Schema, depth: int = 3) -> Expr:
    return draw(expressions(schema, draw(st.sampled_from(["int", "float", "bool", "string"])), depth))


@st.composite
def stateless_steps(draw, schema: Schema) -> Step:
    """A filter, with_columns (new or replaced columns, ``ts`` included) or select."""
    kind = draw(st.sampled_from(["filter", "with_columns", "select"]))
    if kind == "filter":
        return Step("filter", (draw(expressions(schema, "bool")),))
    if kind == "with_columns":
        columns = {}
        for _ in range(draw(st.integers(1, 2))):
            replace = draw(st.booleans())
            name = draw(st.sampled_from(schema.names)) if replace else fresh_name(schema, "x", columns)
            columns[name] = _any_expression(draw, schema)
        return Step("with_columns", kwargs=columns)
    names = draw(st.lists(st.sampled_from(schema.names), unique=True, max_size=len(schema)))
    named = {}
    for _ in range(draw(st.integers(0 if names else 1, 2))):
        named[fresh_name(schema, "y", named)] = _any_expression(draw, schema)
    return Step("select", tuple(names), named)


KEY_KINDS = ("int32", "int64", "bool", "float64", "timestamp", "string")


def can_be_key(f) -> bool:
    """What the engine groups by today: timestamps only in milliseconds."""
    if f.dtype.name not in KEY_KINDS:
        return False
    return not (f.arrow_type is not None and pa.types.is_timestamp(f.arrow_type) and f.arrow_type.unit != "ms")


# the aggregates that take a string column (api.md, "Aggregates over strings")
STRING_AGGREGATES = ("count_arg", "min", "max", "mode", "count_distinct", "first", "last")
WINDOW_AGGREGATES = ("count", "count_arg", "sum", "min", "max", "avg", "var_pop", "var_samp", "stddev_pop",
                     "stddev_samp", "median", "mode", "count_distinct", "top_k", "first", "last")


# a running aggregate (no window) takes every aggregate, of strings those a window takes
RUNNING_AGGREGATES = ("count", "count_arg", "sum", "min", "max", "avg", "var_pop", "var_samp", "stddev_pop",
                      "stddev_samp", "first", "last", "count_distinct", "median", "mode", "top_k")
RUNNING_STRING_AGGREGATES = ("count_arg", "min", "max", "first", "last", "count_distinct", "mode")


@st.composite
def aggregate_calls(draw, schema: Schema, functions=WINDOW_AGGREGATES,
                    string_functions=STRING_AGGREGATES) -> AggCall:
    """An aggregate of ``functions`` (those of ``string_functions`` also over strings); one in
    three with a ``where=`` condition (SQL ``FILTER (WHERE ...)``)."""
    func = draw(st.sampled_from(functions))
    where = draw(expressions(schema, "bool", depth=2)) if draw(st.integers(0, 2)) == 0 else None
    if func == "count":
        return agg.count(where=where)
    strings = columns_of_kind(schema, "string")
    if func in string_functions and strings and draw(st.integers(0, 2)) == 0:  # a string, often computed
        arg = draw(expressions(schema, "string", depth=2)) if draw(st.booleans()) else col(draw(st.sampled_from(strings)))
        return agg.count(arg, where=where) if func == "count_arg" else getattr(agg, func)(arg, where=where)
    arg = draw(expressions(schema, draw(st.sampled_from(NUMERIC)), depth=2))
    if func == "top_k":  # k of 1, a few, and more than a group holds
        return agg.top_k(arg, draw(st.sampled_from([1, 2, 3, 50])), where=where)
    return agg.count(arg, where=where) if func == "count_arg" else getattr(agg, func)(arg, where=where)


@st.composite
def aligned_windows(draw, max_size: int = 30):
    """A tumbling, sliding or cumulative event-time window assigner of a few ms; tumbling and
    sliding ones often with an offset (Flink's, ``abs(offset) < size`` / ``< slide``, negative too)."""
    ms = Time.milliseconds
    kind = draw(st.sampled_from(["tumbling", "sliding", "cumulative"]))
    if kind == "cumulative":
        step = draw(st.integers(1, 10))
        return CumulativeEventTimeWindows.of(ms(step * draw(st.integers(1, 5))), ms(step))
    size = draw(st.integers(1, max_size))
    period = size if kind == "tumbling" else draw(st.integers(1, size))
    offset = draw(st.integers(-(period - 1), period - 1)) if draw(st.booleans()) else None
    if kind == "tumbling":
        return TumblingEventTimeWindows.of(ms(size), None if offset is None else ms(offset))
    return SlidingEventTimeWindows.of(ms(size), ms(period), None if offset is None else ms(offset))


@st.composite
def window_steps(draw, schema: Schema) -> list[Step]:
    """``key_by(1-2 keys)`` or ``window_all``, a tumbling, sliding or cumulative event-time
    window (``aligned_windows``; one in four with an allowed lateness), then ``aggregate`` (one
    in six: ``top_n`` or ``deduplicate``, ``ranked_step``); sometimes a keyed count window
    instead."""
    key_candidates = [f.name for f in schema if can_be_key(f)]
    keys = draw(st.lists(st.sampled_from(key_candidates), unique=True, max_size=2)) if key_candidates else []
    assigner = draw(aligned_windows())
    calls = draw(st.lists(aggregate_calls(schema), min_size=1, max_size=4))
    aggregates = {f"agg{i}": call for i, call in enumerate(calls)}
    if keys and draw(st.integers(0, 3)) == 0:  # sometimes a count window instead
        return [Step("key_by", tuple(keys)), draw(count_window_step()), Step("aggregate", kwargs=aggregates)]
    head = [Step("key_by", tuple(keys)), Step("window", (assigner,))] if keys else [Step("window_all", (assigner,))]
    if draw(st.integers(0, 3)) == 0:
        head.append(Step("allowed_lateness", (Time.milliseconds(draw(st.integers(0, 20))),)))
    if draw(st.integers(0, 5)) == 0:  # sometimes the window's rows ranked instead
        return head + [draw(ranked_step(schema))]
    return head + [Step("aggregate", kwargs=aggregates)]


@st.composite
def ranked_step(draw, schema: Schema) -> Step:
    """``top_n(1-4, by=1-3 columns, descending=a bool or one per column)`` or
    ``deduplicate(keep="first" | "last")`` of a window's rows."""
    if draw(st.integers(0, 3)) == 0:
        return Step("deduplicate", kwargs={"keep": draw(st.sampled_from(["first", "last"]))})
    names = [f.name for f in schema if not f.dtype.is_list]
    by = draw(st.lists(st.sampled_from(names), unique=True, min_size=1, max_size=3))
    descending = draw(st.booleans() | st.lists(st.booleans(), min_size=len(by), max_size=len(by)))
    return Step("top_n", (draw(st.integers(1, 4)),), {"by": by if len(by) > 1 else by[0], "descending": descending})


@st.composite
def count_window_step(draw, max_size: int = 8) -> Step:
    """``count_window(size)`` (tumbling) or ``count_window(size, slide)``: slides shorter than,
    equal to and longer than the window, sizes that are and are not multiples of the slide."""
    size = draw(st.integers(1, max_size))
    if draw(st.integers(0, 3)) == 0:
        return Step("count_window", (size,))
    return Step("count_window", (size, draw(st.integers(1, max_size + 2))))


@st.composite
def count_window_steps(draw, schema: Schema) -> list[Step]:
    """``key_by(1-3 keys)`` (nulls, strings, floats...), a count window, then ``aggregate``.
    Often one key is an integer column modulo 1-4 (a new column), so that groups have records
    enough to fire windows."""
    steps, names = [], [f.name for f in schema if can_be_key(f)]
    ints = [f.name for f in schema if f.dtype.is_integer]
    if not names or draw(st.booleans()):
        name = fresh_name(schema, "ck")
        base = col(draw(st.sampled_from(ints))) if ints else lit(0)
        steps.append(Step("with_columns", kwargs={name: base % draw(st.integers(1, 4))}))
        keys = [name] + draw(st.lists(st.sampled_from(names), unique=True, max_size=2)) if names else [name]
    else:
        keys = draw(st.lists(st.sampled_from(names), unique=True, min_size=1, max_size=3))
    calls = draw(st.lists(aggregate_calls(schema), min_size=1, max_size=4))
    return steps + [Step("key_by", tuple(keys)), draw(count_window_step(draw(st.sampled_from([3, 8, 20])))),
                    Step("aggregate", kwargs={f"agg{i}": call for i, call in enumerate(calls)})]


@st.composite
def stateless_cases(draw, max_rows: int = 25, max_repeat: int = 1, max_steps: int = 2, min_rows: int = 0):
    """Input data, batching, a watermark bound and 0..``max_steps`` stateless steps: the case so
    far and the stream it builds (whose schema the next steps draw from)."""
    arrow_schema, columns, slices = draw(input_data(max_rows, max_repeat, min_rows))
    case = QueryCase(arrow_schema, columns, slices, bound_ms=draw(st.integers(0, 12)))
    stream = case.source(gz.StreamEnvironment(parallelism=1))
    for _ in range(draw(st.integers(0, max_steps))):
        step = draw(stateless_steps(stream.schema))
        stream = step.apply(stream)
        case.steps.append(step)
    return case, stream


@st.composite
def query_cases(draw, windowed: bool | None = None, max_rows: int = 25, max_repeat: int = 1,
                count_windows: bool = False) -> QueryCase:
    """A random query; ``windowed`` True/False forces or forbids the final window aggregation;
    ``count_windows`` makes it a keyed count window."""
    case, stream = draw(stateless_cases(max_rows, max_repeat, max_steps=3))
    if windowed is None:
        windowed = draw(st.booleans())
    if count_windows:
        case.steps.extend(draw(count_window_steps(stream.schema)))
    elif windowed:
        case.steps.extend(draw(window_steps(stream.schema)))
    return case


# ==============================================================================================
# Keyed state without windows, updating streams and joins
# ==============================================================================================
@st.composite
def grouping_keys(draw, schema: Schema, max_keys: int = 2, floats: bool = True) -> tuple[list[Step], list[str]]:
    """(steps, keys): 1..``max_keys`` key columns; two in three (and when no column can be a
    key) first a new column, an integer column modulo 1-4 (and one in three more keys), so that
    keys get records enough to update or re-rank. ``floats=False`` leaves float columns out (a
    computed float may differ from the reference's in its last bits: fine for a value, not for a
    key)."""
    names = [f.name for f in schema if can_be_key(f) and (floats or not f.dtype.is_float)]
    if names and draw(st.integers(0, 2)) == 0:
        return [], draw(st.lists(st.sampled_from(names), unique=True, min_size=1, max_size=max_keys))
    ints = [f.name for f in schema if f.dtype.is_integer]
    name = fresh_name(schema, "ck")
    base = col(draw(st.sampled_from(ints))) if ints else lit(0)
    others = draw(st.lists(st.sampled_from(names), unique=True, max_size=max_keys - 1)) \
        if names and draw(st.integers(0, 2)) == 0 else []
    return [Step("with_columns", kwargs={name: base % draw(st.integers(1, 4))})], [name, *others]


def millisecond_timestamps(schema: Schema, keys=()) -> list[Step]:
    """A ``with_columns`` that casts the timestamp columns finer than milliseconds (other than
    ``keys``) to int64: unbounded Top-N and deduplication reject them (docs/api.md)."""
    fine = {f.name: col(f.name).cast("int64") for f in schema
            if f.name not in keys and f.arrow_type is not None and pa.types.is_timestamp(f.arrow_type)
            and f.arrow_type.unit != "ms"}
    return [Step("with_columns", kwargs=fine)] if fine else []


def _applied(stream, steps: list[Step]):
    """``stream`` with ``steps`` applied (whose schema the next steps draw from)."""
    for step in steps:
        stream = step.apply(stream)
    return stream


@st.composite
def running_aggregate_steps(draw, stream) -> tuple[list[Step], list[str]]:
    """``key_by`` then a running aggregate (no window) of 1-4 aggregates."""
    steps, keys = draw(grouping_keys(stream.schema))
    schema = _applied(stream, steps).schema
    calls = draw(st.lists(aggregate_calls(schema, RUNNING_AGGREGATES, RUNNING_STRING_AGGREGATES), min_size=1, max_size=4))
    return steps + [Step("key_by", tuple(keys)),
                    Step("aggregate", kwargs={f"run{i}": c for i, c in enumerate(calls)})], keys


@st.composite
def unbounded_top_n_steps(draw, stream) -> tuple[list[Step], list[str]]:
    """``key_by`` then ``top_n(1-4, by=1-2 columns, descending=a bool or one per column)``."""
    steps, keys = draw(grouping_keys(stream.schema))
    steps += millisecond_timestamps(_applied(stream, steps).schema, keys)
    schema = _applied(stream, steps).schema
    by = draw(st.lists(st.sampled_from([f.name for f in schema if not f.dtype.is_list]), unique=True,
                       min_size=1, max_size=2))
    descending = draw(st.booleans() | st.lists(st.booleans(), min_size=len(by), max_size=len(by)))
    return steps + [Step("key_by", tuple(keys)),
                    Step("top_n", (draw(st.integers(1, 4)),), {"by": by, "descending": descending})], keys


@st.composite
def deduplicate_steps(draw, stream, keeps=("first", "last")) -> tuple[list[Step], list[str]]:
    """``key_by`` then ``deduplicate(keep="first")`` (append-only) or ``keep="last"`` (updating)."""
    steps, keys = draw(grouping_keys(stream.schema))
    steps += millisecond_timestamps(_applied(stream, steps).schema, keys)
    keep = draw(st.sampled_from(keeps))
    return steps + [Step("key_by", tuple(keys)), Step("deduplicate", kwargs={"keep": keep})], keys


OVER_AGGREGATES = ("count", "count_arg", "sum", "min", "max", "avg")


@st.composite
def over_steps(draw, stream) -> tuple[list[Step], list[str]]:
    """``key_by``, ``over(rows_preceding=0-5 | range_preceding=0-12 ms)``, then 1-4 of count, sum,
    min, max, avg over numbers (not timestamps)."""
    steps, keys = draw(grouping_keys(stream.schema))
    schema = _applied(stream, steps).schema
    calls = [c for c in draw(st.lists(aggregate_calls(schema, OVER_AGGREGATES, ()), min_size=1, max_size=4))
             if c.arg is None or not c.arg.dtype(schema).is_timestamp] or [agg.count()]
    frame = ({"rows_preceding": draw(st.integers(0, 5))} if draw(st.booleans())
             else {"range_preceding": Time.milliseconds(draw(st.integers(0, 12)))})
    return steps + [Step("key_by", tuple(keys)), Step("over", kwargs=frame),
                    Step("aggregate", kwargs={f"over{i}": c for i, c in enumerate(calls)})], keys


def key_class(dtype) -> str:
    """What join keys compare within (docs/semantics.md, "Joins"): timestamps apart from ints."""
    return "timestamp" if dtype.is_timestamp else kind_of(dtype)


def _lookup_key_column(draw, f, seen: list, n: int) -> pa.Array:
    """``n`` values of a lookup table's key column that may equal ``f``'s: nulls, values ``f``
    holds (``seen``) and others, in either Arrow type of the key's class."""
    cls = key_class(f.dtype)
    if cls == "int":
        fits32 = all(v is None or INT32_MIN <= v <= INT32_MAX for v in seen)
        arrow_type, others = draw(st.sampled_from([pa.int64(), pa.int32()] if fits32 else [pa.int64()])), \
            st.integers(-20, 20)
    elif cls == "timestamp":
        arrow_type, others = pa.timestamp("ms"), st.integers(-60, 200)
    elif cls == "float":
        arrow_type, others = pa.float64(), st.sampled_from([0.0, -0.0, math.nan, 1.5, -1.5, math.inf, 0.5])
    elif cls == "bool":
        arrow_type, others = pa.bool_(), st.booleans()
    else:
        arrow_type, others = draw(st.sampled_from([pa.string(), pa.dictionary(pa.int32(), pa.string())])), \
            st.sampled_from(STRINGS)
    values = st.none() | others | st.sampled_from(seen) if seen else st.none() | others
    return pa.array(draw(st.lists(values, min_size=n, max_size=n)), arrow_type)


@st.composite
def lookup_join_steps(draw, stream) -> tuple[list[Step], list[str]]:
    """``lookup_join`` on 1-2 key columns against a static table of 0-12 rows (keys with nulls,
    repeats and values of the stream's keys, of either type of the key's class; named as the
    stream's keys or not), an int64 ``v`` and a string ``label`` column (``_right`` where the
    stream has them)."""
    steps, keys = draw(grouping_keys(stream.schema))
    keyed = _applied(stream, steps)
    records = reference.evaluate(keyed.node)  # the stream's keys, for the table to hold some
    n = draw(st.integers(0, 12))
    same_names = draw(st.booleans())
    right_keys = keys if same_names else [f"lk{i}" for i in range(len(keys))]
    table = {r: _lookup_key_column(draw, keyed.schema.field(k), records.column(k).to_pylist(), n)
             for k, r in zip(keys, right_keys)}
    table["v"] = pa.array(range(100, 100 + n), pa.int64())
    table["label"] = pa.array([f"r{i}" for i in range(n)], pa.string())
    kwargs = {} if same_names else {"right_on": right_keys}
    return steps + [Step("lookup_join", (pa.table(table), keys), kwargs)], keys


# each keyed operator: a strategy of (its steps, its key columns) over a stream
KEYED_OPERATORS = {"running aggregate": running_aggregate_steps, "unbounded top_n": unbounded_top_n_steps,
                   "deduplicate": deduplicate_steps, "over": over_steps, "lookup_join": lookup_join_steps}


@st.composite
def aggregate_over_updating_steps(draw, stream) -> tuple[list[Step], list[str]]:
    """A running aggregate over an updating stream (Nexmark Q4's shape), the aggregates it takes
    (docs/semantics.md, "Updating streams"): count, and count / sum / avg of integer columns (a
    float sum subtracts retracted values, where rounding may differ from the reference's
    recomputation: tests/test_updating_streams.py covers floats by hand), min / max /
    count_distinct / mode of numbers and strings and median / top_k of numbers (a value bag:
    exact for floats too), first / last of numbers and strings (a sequence of the values in:
    exact), variances and standard deviations of integer columns modulo 1000 (retractable sums:
    exact for integers of that range)."""
    steps, keys = draw(grouping_keys(stream.schema, floats=False))
    schema = _applied(stream, steps).schema
    ints = [f.name for f in schema if f.dtype.is_integer]
    numbers = [f.name for f in schema if (f.dtype.is_numeric and not f.dtype.is_bool) or f.dtype.is_string]
    calls = {"n": agg.count()}
    for i, name in enumerate(draw(st.lists(st.sampled_from(ints), max_size=2)) if ints else []):
        calls[f"o{i}"] = getattr(agg, draw(st.sampled_from(["count", "sum", "avg"])))(col(name))
    for i, name in enumerate(draw(st.lists(st.sampled_from(numbers), max_size=2)) if numbers else []):
        bags = ["min", "max", "count_distinct", "mode"] + ([] if schema.field(name).dtype.is_string else
                                                           ["median", "top_k"])
        func = draw(st.sampled_from(bags))
        calls[f"b{i}"] = agg.top_k(col(name), draw(st.sampled_from([1, 2, 50]))) if func == "top_k" else \
            getattr(agg, func)(col(name))
    for i, name in enumerate(draw(st.lists(st.sampled_from(numbers), max_size=2)) if numbers else []):
        calls[f"p{i}"] = getattr(agg, draw(st.sampled_from(["first", "last"])))(col(name))
    for i, name in enumerate(draw(st.lists(st.sampled_from(ints), max_size=1)) if ints else []):
        spread = draw(st.sampled_from(["var_pop", "var_samp", "stddev_pop", "stddev_samp"]))
        calls[f"v{i}"] = getattr(agg, spread)(col(name) % 1000)
    return steps + [Step("key_by", tuple(keys)), Step("aggregate", kwargs=calls)], keys


def keys_after(keys, step: Step):
    """The changelog keys that ``step`` (filter / with_columns / select) leaves unchanged, or None."""
    if keys is None or step.method == "filter":
        return keys
    if step.method == "with_columns":
        return None if any(k in step.kwargs for k in keys) else keys
    return keys if all(k in step.args for k in keys) else None


@st.composite
def steps_after(draw, case: QueryCase, stream, keys):
    """Appends to ``case`` 0-2 stateless steps, then (one in four) a window aggregation: over an
    append-only stream any (``window_steps``), over an updating one of its ``.changelog()``
    (``changelog_window_steps``); returns the changelog keys they keep (``keys_after``; None
    after a window)."""
    for _ in range(draw(st.integers(0, 2))):
        step = draw(stateless_steps(stream.schema))
        stream = step.apply(stream)
        case.steps.append(step)
        keys = keys_after(keys, step)
    if draw(st.integers(0, 3)) == 0:
        case.steps.extend(draw(changelog_window_steps(stream.schema) if stream.is_updating
                               else window_steps(stream.schema)))
        return None
    return keys


@st.composite
def changelog_window_steps(draw, schema: Schema) -> list[Step]:
    """``changelog()`` of an updating stream (of columns ``schema``), then an event-time window
    over it (``key_by`` the row kind ``op`` and/or a column, or ``window_all``; one in four with
    an allowed lateness) with aggregates that do not depend on the order of the changelog's rows,
    which is unspecified across keys (docs/semantics.md): count, count / count_distinct of a
    number or string, min / max of an integer or string, sum of an integer."""
    keys = draw(st.lists(st.sampled_from([OP_NAME] + [f.name for f in schema if can_be_key(f)]),
                         unique=True, max_size=2))
    values = [f.name for f in schema if (f.dtype.is_numeric and not f.dtype.is_bool) or f.dtype.is_string]
    ordered = [f.name for f in schema if f.dtype.is_integer or f.dtype.is_string]
    calls = [agg.count()]
    for name in draw(st.lists(st.sampled_from(values), max_size=2)) if values else []:
        calls.append(getattr(agg, draw(st.sampled_from(["count", "count_distinct"])))(col(name)))
    for name in draw(st.lists(st.sampled_from(ordered), max_size=2)) if ordered else []:
        func = draw(st.sampled_from(["min", "max"] + (["sum"] if schema.field(name).dtype.is_integer else [])))
        calls.append(getattr(agg, func)(col(name)))
    names = []  # not a key's name
    for _ in calls:
        names.append(fresh_name(schema, "agg", names))
    assigner = draw(aligned_windows())
    head = [Step("key_by", tuple(keys)), Step("window", (assigner,))] if keys else [Step("window_all", (assigner,))]
    if draw(st.integers(0, 3)) == 0:
        head.append(Step("allowed_lateness", (Time.milliseconds(draw(st.integers(0, 20))),)))
    return [Step("changelog")] + head + [Step("aggregate", kwargs=dict(zip(names, calls)))]


def _no_overflowing_float_sums(case: QueryCase) -> None:
    """OVER sums of floats whose partial sums overflow may add in another order than the
    reference (docs/semantics.md, "OVER aggregates"): keep finite input floats where 40 of them
    cannot overflow (as tests/test_over.py does)."""
    for name, values in case.columns.items():
        case.columns[name] = [math.copysign(1e200, v) if isinstance(v, float) and math.isfinite(v) and abs(v) > 1e200
                              else v for v in values]


@st.composite
def keyed_operator_cases(draw, max_rows: int = 25) -> QueryCase:
    """A random stateless prefix, one keyed operator without a window (``KEYED_OPERATORS``),
    sometimes (one in three, over an updating stream) a running aggregate over it (one in two
    after a stateless step), then ``steps_after``; and the parallelism (1-4) to run it at."""
    # mostly inputs with rows enough for keys to update
    case, stream = draw(stateless_cases(max_rows, max_steps=2, min_rows=draw(st.sampled_from([0, 6, 6]))))
    operator = draw(st.sampled_from(sorted(KEYED_OPERATORS)))
    if operator == "over":
        _no_overflowing_float_sums(case)
    steps, keys = draw(KEYED_OPERATORS[operator](stream))
    case.steps += steps
    stream = _applied(stream, steps)
    if stream.is_updating and draw(st.integers(0, 2)) == 0:
        if draw(st.booleans()):  # a stateless step in between keeps the row kinds
            step = draw(stateless_steps(stream.schema))
            case.steps.append(step)
            stream = step.apply(stream)
        steps, keys = draw(aggregate_over_updating_steps(stream))
        case.steps += steps
        stream = _applied(stream, steps)
    keys = draw(steps_after(case, stream, keys if stream.is_updating else None))
    case.keys = None if keys is None else tuple(keys)
    case.parallelism = draw(st.integers(1, 4))
    return case


# the keyed operators whose result is append-only, which a join takes as an input
APPEND_ONLY_KEYED_OPERATORS = {"first rows": lambda stream: deduplicate_steps(stream, keeps=("first",)),
                               "over": over_steps, "lookup_join": lookup_join_steps}


def _join_input(draw, case: QueryCase, stream):
    """One in four: ``stream`` through an append-only keyed operator (appended to ``case``)."""
    if draw(st.integers(0, 3)) > 0:
        return stream
    operator = draw(st.sampled_from(sorted(APPEND_ONLY_KEYED_OPERATORS)))
    if operator == "over":
        _no_overflowing_float_sums(case)
    steps, _ = draw(APPEND_ONLY_KEYED_OPERATORS[operator](stream))
    case.steps += steps
    return _applied(stream, steps)


def _join_key_steps(draw, left, right) -> tuple[list[Step], list[Step], list[str], list[str]]:
    """Key columns of a regular join: 1-2 pairs of columns of one class (int, timestamp, float,
    bool, string) from both inputs, or a new column on each side (an integer column modulo 1-3,
    or a constant) when they share none (and two in three when they do), so that keys match."""
    def by_class(schema):
        out: dict[str, list[str]] = {}
        for f in schema:
            if not f.dtype.is_list:
                out.setdefault(key_class(f.dtype), []).append(f.name)
        return out
    lc, rc = by_class(left.schema), by_class(right.schema)
    shared = sorted(set(lc) & set(rc))
    if shared and draw(st.integers(0, 2)) == 0:
        classes = draw(st.lists(st.sampled_from(shared), min_size=1, max_size=2))
        return [], [], [draw(st.sampled_from(lc[c])) for c in classes], [draw(st.sampled_from(rc[c])) for c in classes]
    modulo = draw(st.integers(1, 3))
    sides = []
    for stream in (left, right):
        ints = [f.name for f in stream.schema if f.dtype.is_integer]
        name = fresh_name(stream.schema, "jk")
        value = col(draw(st.sampled_from(ints))) % modulo if ints and draw(st.integers(0, 3)) else lit(draw(st.integers(0, 1)))
        sides.append(([Step("with_columns", kwargs={name: value})], name))
    (ls, lk), (rs, rk) = sides
    return ls, rs, [lk], [rk]


@st.composite
def regular_join_cases(draw, max_rows: int = 20) -> QueryCase:
    """Two random inputs (each with its stateless prefix, one in four then an append-only keyed
    operator: first rows, OVER or a lookup join) joined by a regular join on keys of one class (``_join_key_steps``; left and right keys need not share a name), one in two with a
    ``state_ttl`` of 0-12 ms, one in two with a filter over both sides' columns right after it
    (which the engine runs in the join's probe), then ``steps_after``; and the parallelism."""
    # mostly inputs with rows (an empty one makes no pairs), one stateless step at most
    case, left = draw(stateless_cases(max_rows, max_steps=1, min_rows=draw(st.sampled_from([0, 4, 4]))))
    right_case, right = draw(stateless_cases(max_rows, max_steps=1, min_rows=draw(st.sampled_from([0, 4, 4]))))
    left, right = _join_input(draw, case, left), _join_input(draw, right_case, right)
    lsteps, rsteps, lkeys, rkeys = _join_key_steps(draw, left, right)
    case.steps += lsteps
    right_case.steps += rsteps
    case.right = right_case
    case.steps += [Step("join", (RIGHT,)), Step("where", tuple(lkeys)), Step("equal_to", tuple(rkeys))]
    if draw(st.booleans()):
        case.steps.append(Step("state_ttl", (Time.milliseconds(draw(st.integers(0, 12))),)))
    stream = case.build(gz.StreamEnvironment())
    if draw(st.booleans()):
        step = Step("filter", (draw(expressions(stream.schema, "bool")),))
        case.steps.append(step)
        stream = step.apply(stream)
    draw(steps_after(case, stream, None))
    case.parallelism = draw(st.integers(1, 4))
    return case


# ==============================================================================================
# Hand-written inputs
# ==============================================================================================
def arrow_stream(env: gz.StreamEnvironment, data: dict, *, sizes: list[int] | None = None, bound: int = 0,
                 timestamp: str | None = TIMESTAMP):
    """A stream over ``data`` (column -> list or pa.Array), cut into batches of ``sizes`` rows
    (zero allowed; default one batch), with a bounded out-of-orderness watermark of ``bound`` ms."""
    whole = pa.record_batch(data)
    sizes = sizes if sizes is not None else [whole.num_rows]
    assert sum(sizes) == whole.num_rows, "batch sizes must add up to the rows"
    offsets = [sum(sizes[:i]) for i in range(len(sizes))]
    return env.from_arrow([whole.slice(o, n) for o, n in zip(offsets, sizes)], timestamp=timestamp,
                          watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(bound)))


def run_collected(build, parallelism: int = 1, switch=None, **options) -> tuple[pa.Table, dict]:
    """Run ``build(env)`` collected as ``out``: (its table, the job's metrics); ``switch``: a
    plan choice's switch (``grizzly_py.switches.Switch``) turned off for the run. Warnings
    (parallel plans of a few rows) are ignored."""
    env = gz.StreamEnvironment(parallelism=parallelism, **options)
    build(env).collect("out")
    with warnings.catch_warnings(), (switch.disabled() if switch is not None else contextlib.nullcontext()):
        warnings.simplefilter("ignore")
        result = env.execute()
    return result["out"], result.metrics


def tumbling(ms: int) -> TumblingEventTimeWindows:
    return TumblingEventTimeWindows.of(Time.milliseconds(ms))


# ==============================================================================================
# Comparing result tables
# ==============================================================================================
def normalize_table(table: pa.Table) -> pa.Table:
    """One chunk per column; dictionary columns decoded to their value type."""
    columns = [c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in table.columns]
    return pa.Table.from_arrays(columns, names=table.column_names).combine_chunks()


def values_equal(a, b, rel_tol: float = 1e-9) -> bool:
    """Exact for everything but floats; floats within ``rel_tol`` relative, NaN == NaN, inf exact;
    lists element by element."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(values_equal(x, y, rel_tol) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return math.isclose(a, b, rel_tol=rel_tol, abs_tol=0.0)
    return type(a) is type(b) and a == b


def assert_tables_equal(actual: pa.Table, expected: pa.Table) -> None:
    actual, expected = normalize_table(actual), normalize_table(expected)
    assert actual.schema.names == expected.schema.names, \
        f"columns differ: {actual.schema.names} != expected {expected.schema.names}"
    for a, e in zip(actual.schema, expected.schema):
        assert a.type == e.type, f"column {a.name!r}: type {a.type} != expected {e.type}"
    actual_rows, expected_rows = actual.to_pylist(), expected.to_pylist()
    assert len(actual_rows) == len(expected_rows), \
        f"{len(actual_rows)} rows != expected {len(expected_rows)}\nactual:   {actual_rows}\nexpected: {expected_rows}"
    for i, (a, e) in enumerate(zip(actual_rows, expected_rows)):
        bad = [name for name in a if not values_equal(a[name], e[name])]
        assert not bad, (f"row {i}, columns {bad}: {a} != expected {e}\n"
                         f"actual:   {actual_rows}\nexpected: {expected_rows}")
