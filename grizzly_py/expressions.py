"""Scalar expressions: immutable trees built by ``col``/``lit`` and operators, typed against a schema.

An expression knows nothing about execution. ``Expr.dtype(schema)`` validates it against a schema
(unknown columns and type errors raise ``SchemaError`` naming the column) and returns its type.
The code generator (``grizzly_py.codegen.expr_emitter``) and the reference evaluator
(``grizzly_py.reference``) both walk these trees.

Semantics (documented in docs/semantics.md):
- integers are promoted to int64 for arithmetic; int with float gives float64; ``/`` always gives
  float64 (Python's true division); ``%`` follows Python (the sign of the divisor); integer
  ``%`` by zero is null; integer ``+ - *`` wrap around (int64 two's complement), as numpy does.
- nulls follow SQL: an operation with a null operand is null, except ``&``/``|`` (three-valued
  logic), ``is_null``/``is_not_null`` (never null) and ``if_else`` (a null condition takes the
  else branch, like SQL CASE).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .expr_misuse import number_error, truth_value_error
from .functions import function_spec
from .types import (BOOL, CAST_TARGETS, FLOAT64, INT64, TIMESTAMP, DataType, Schema,
                    SchemaError, common_numeric, type_named)

ARITHMETIC = ("+", "-", "*", "/", "%")
COMPARISON = ("==", "!=", "<", "<=", ">", ">=")
LOGICAL = ("&", "|")


class Expr:
    """Base of all expression nodes. Operators build new nodes; nodes are frozen dataclasses."""

    # --- operators -------------------------------------------------------------------------
    def _bin(self, op, other, swap=False):
        other = as_expr(other)
        return BinaryOp(op, other, self) if swap else BinaryOp(op, self, other)

    def __add__(self, o): return self._bin("+", o)
    def __radd__(self, o): return self._bin("+", o, True)
    def __sub__(self, o): return self._bin("-", o)
    def __rsub__(self, o): return self._bin("-", o, True)
    def __mul__(self, o): return self._bin("*", o)
    def __rmul__(self, o): return self._bin("*", o, True)
    def __truediv__(self, o): return self._bin("/", o)
    def __rtruediv__(self, o): return self._bin("/", o, True)
    def __mod__(self, o): return self._bin("%", o)
    def __rmod__(self, o): return self._bin("%", o, True)
    def __eq__(self, o): return self._bin("==", o)  # type: ignore[override]
    def __ne__(self, o): return self._bin("!=", o)  # type: ignore[override]
    def __lt__(self, o): return self._bin("<", o)
    def __le__(self, o): return self._bin("<=", o)
    def __gt__(self, o): return self._bin(">", o)
    def __ge__(self, o): return self._bin(">=", o)
    def __and__(self, o): return self._bin("&", o)
    def __rand__(self, o): return self._bin("&", o, True)
    def __or__(self, o): return self._bin("|", o)
    def __ror__(self, o): return self._bin("|", o, True)
    def __invert__(self): return UnaryOp("~", self)
    def __neg__(self): return UnaryOp("neg", self)
    def __abs__(self): return UnaryOp("abs", self)

    def __bool__(self):
        raise truth_value_error(self)

    def __float__(self):
        raise number_error(self, "a number")

    def __int__(self):
        raise number_error(self, "an integer")

    __index__ = __int__

    __hash__ = object.__hash__  # dataclasses below re-enable value hashing via eq=False + _key

    # --- methods ---------------------------------------------------------------------------
    def abs(self) -> Expr:
        """The absolute value (``abs(col("x"))`` too)."""
        return UnaryOp("abs", self)

    def is_null(self) -> Expr:
        """True where the value is null (never null itself)."""
        return UnaryOp("is_null", self)

    def is_not_null(self) -> Expr:
        """True where the value is not null (never null itself)."""
        return UnaryOp("is_not_null", self)

    def isin(self, values) -> Expr:
        """True where the value equals one of the literal ``values`` (SQL ``IN``: null where
        it is not found and ``values`` holds ``None``). ``TypeError`` for an expression among them."""
        values = tuple(values)
        for v in values:
            if isinstance(v, Expr):
                raise TypeError("isin takes literal values, not expressions")
        return IsIn(self, values)

    def between(self, lo, hi) -> Expr:
        """``lo <= self <= hi`` (both ends inclusive)."""
        return (self >= as_expr(lo)) & (self <= as_expr(hi))

    def cast(self, type_name: str) -> Expr:
        """The value as ``"int32"``, ``"int64"``, ``"float64"`` or ``"bool"`` (docs/semantics.md,
        "Expressions"). ``SchemaError`` for another type name."""
        if type_name not in CAST_TARGETS:
            raise SchemaError(f"cannot cast to {type_name!r}; cast targets: {', '.join(CAST_TARGETS)}")
        return Cast(self, type_name)

    def alias(self, name: str) -> Expr:
        """The same expression, named ``name`` as a ``select`` output column."""
        return Alias(self, name)

    @property
    def str(self) -> StringFunctions:
        """String functions (polars names): ``col("url").str.contains("/item/")``."""
        return StringFunctions(self)

    @property
    def dt(self) -> DateTimeFunctions:
        """Date and time functions of a timestamp or int64 epoch-milliseconds expression (UTC)."""
        return DateTimeFunctions(self)

    # --- analysis --------------------------------------------------------------------------
    def dtype(self, schema: Schema) -> DataType:
        """The expression's type over ``schema``; ``SchemaError`` naming the column or operand
        that does not fit."""
        raise NotImplementedError

    def children(self) -> tuple[Expr, ...]:
        """The operand expressions."""
        return ()

    def columns(self) -> set[str]:
        """The names of the columns the expression reads."""
        out: set[str] = set()
        stack: list[Expr] = [self]
        while stack:
            e = stack.pop()
            if isinstance(e, Column):
                out.add(e.name)
            stack.extend(e.children())
        return out

    def substitute(self, mapping: dict[str, Expr]) -> Expr:
        """Replace column references by expressions (used to fuse maps into one pipeline)."""
        raise NotImplementedError

    def output_name(self) -> str | None:
        """The column name ``select`` gives the expression: a column's or an alias's name, else None."""
        return None


@dataclass(frozen=True, eq=False, repr=False)
class Column(Expr):
    name: str

    def dtype(self, schema):
        return schema.field(self.name).dtype

    def substitute(self, mapping):
        return mapping.get(self.name, self)

    def output_name(self):
        return self.name

    def __repr__(self):
        return f"col({self.name!r})"


@dataclass(frozen=True, eq=False, repr=False)
class Literal(Expr):
    value: Any
    type_name: str  # one of int64, float64, bool, string, null

    def dtype(self, schema):
        if self.type_name == "null":
            return INT64  # an untyped null; operations with it are null anyway
        return type_named(self.type_name)

    def substitute(self, mapping):
        return self

    def __repr__(self):
        return f"lit({self.value!r})"


@dataclass(frozen=True, eq=False, repr=False)
class BinaryOp(Expr):
    op: str
    left: Expr
    right: Expr

    def children(self):
        return (self.left, self.right)

    def substitute(self, mapping):
        return BinaryOp(self.op, self.left.substitute(mapping), self.right.substitute(mapping))

    def dtype(self, schema):
        lt, rt = _scalar(self.left, schema), _scalar(self.right, schema)
        op = self.op
        if op in ARITHMETIC:
            for side, t in (("left", lt), ("right", rt)):
                if not (t.is_numeric or t.is_timestamp):
                    raise SchemaError(f"operator {op!r}: {side} operand {_describe(self.left if side == 'left' else self.right)}"
                                      f" has type {t.name}, expected a number")
            return FLOAT64 if op == "/" else common_numeric(lt, rt)
        if op in COMPARISON:
            if lt.is_string or rt.is_string:
                if not (lt.is_string and rt.is_string):
                    raise SchemaError(f"cannot compare {_describe(self.left)} ({lt.name}) with {_describe(self.right)} ({rt.name})")
                if op not in ("==", "!="):
                    raise SchemaError(f"strings support only == and !=, not {op!r} ({self!r})")
                return BOOL
            if lt.is_bool != rt.is_bool and not _is_null_literal(self.left) and not _is_null_literal(self.right):
                raise SchemaError(f"cannot compare {_describe(self.left)} ({lt.name}) with {_describe(self.right)} ({rt.name})")
            return BOOL
        if op in LOGICAL:
            for e, t in ((self.left, lt), (self.right, rt)):
                if not t.is_bool and not _is_null_literal(e):
                    raise SchemaError(f"operator {op!r} needs booleans, but {_describe(e)} has type {t.name}")
            return BOOL
        raise SchemaError(f"unknown operator {op!r}")

    def __repr__(self):
        return f"({self.left!r} {self.op} {self.right!r})"


@dataclass(frozen=True, eq=False, repr=False)
class UnaryOp(Expr):
    op: str  # "~", "neg", "abs", "is_null", "is_not_null"
    operand: Expr

    def children(self):
        return (self.operand,)

    def substitute(self, mapping):
        return UnaryOp(self.op, self.operand.substitute(mapping))

    def dtype(self, schema):
        if self.op in ("is_null", "is_not_null"):
            self.operand.dtype(schema)
            return BOOL
        t = _scalar(self.operand, schema)
        if self.op == "~":
            if not t.is_bool:
                raise SchemaError(f"operator '~' needs a boolean, but {_describe(self.operand)} has type {t.name}")
            return BOOL
        if not (t.is_numeric or t.is_timestamp):
            raise SchemaError(f"{self.op} needs a number, but {_describe(self.operand)} has type {t.name}")
        return FLOAT64 if t.is_float else INT64

    def __repr__(self):
        if self.op in ("~", "neg"):
            return f"{'~' if self.op == '~' else '-'}{self.operand!r}"
        return f"{self.operand!r}.{self.op}()"


@dataclass(frozen=True, eq=False, repr=False)
class IsIn(Expr):
    operand: Expr
    values: tuple

    def children(self):
        return (self.operand,)

    def substitute(self, mapping):
        return IsIn(self.operand.substitute(mapping), self.values)

    def dtype(self, schema):
        t = _scalar(self.operand, schema)
        for v in self.values:
            if v is None:
                continue
            lt = as_expr(v).dtype(schema)
            if t.is_string != lt.is_string or (t.is_bool != lt.is_bool):
                raise SchemaError(f"isin: value {v!r} ({lt.name}) does not match {_describe(self.operand)} ({t.name})")
        return BOOL

    def __repr__(self):
        return f"{self.operand!r}.isin({list(self.values)!r})"


@dataclass(frozen=True, eq=False, repr=False)
class Cast(Expr):
    operand: Expr
    type_name: str

    def children(self):
        return (self.operand,)

    def substitute(self, mapping):
        return Cast(self.operand.substitute(mapping), self.type_name)

    def dtype(self, schema):
        t = _scalar(self.operand, schema)
        if t.is_string:
            raise SchemaError(f"cannot cast string {_describe(self.operand)} to {self.type_name}")
        return type_named(self.type_name)

    def __repr__(self):
        return f"{self.operand!r}.cast({self.type_name!r})"


@dataclass(frozen=True, eq=False, repr=False)
class IfElse(Expr):
    cond: Expr
    then: Expr
    otherwise: Expr

    def children(self):
        return (self.cond, self.then, self.otherwise)

    def substitute(self, mapping):
        return IfElse(self.cond.substitute(mapping), self.then.substitute(mapping), self.otherwise.substitute(mapping))

    def dtype(self, schema):
        ct = _scalar(self.cond, schema)
        if not ct.is_bool:
            raise SchemaError(f"if_else: condition {_describe(self.cond)} has type {ct.name}, expected bool")
        a, b = _scalar(self.then, schema), _scalar(self.otherwise, schema)
        if _is_null_literal(self.then):
            return b
        if _is_null_literal(self.otherwise):
            return a
        if a.is_string or b.is_string:
            if not (a.is_string and b.is_string):
                raise SchemaError(f"if_else: branches have different types {a.name} and {b.name}")
            return a
        if a == b:
            return a
        if (a.is_numeric or a.is_timestamp) and (b.is_numeric or b.is_timestamp):
            return common_numeric(a, b)
        raise SchemaError(f"if_else: branches have different types {a.name} and {b.name}")

    def __repr__(self):
        return f"if_else({self.cond!r}, {self.then!r}, {self.otherwise!r})"


@dataclass(frozen=True, eq=False, repr=False)
class Alias(Expr):
    operand: Expr
    name: str

    def children(self):
        return (self.operand,)

    def substitute(self, mapping):
        return Alias(self.operand.substitute(mapping), self.name)

    def dtype(self, schema):
        return self.operand.dtype(schema)

    def output_name(self):
        return self.name

    def __repr__(self):
        return f"{self.operand!r}.alias({self.name!r})"


@dataclass(frozen=True, eq=False, repr=False)
class Call(Expr):
    """A scalar function (``grizzly_py/functions/``: its spec says the result's type, the
    options it takes and its reference) applied to ``args``, with literal ``options``."""

    func: str
    args: tuple[Expr, ...]
    options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self):
        spec = function_spec(self.func)
        if spec.arity >= 0 and len(self.args) != spec.arity:
            raise TypeError(f"{self.func} takes {spec.arity} argument(s), got {len(self.args)}")
        if spec.arity < 0 and not self.args:
            raise TypeError(f"{self.func} takes at least one argument")
        spec.check_options(dict(self.options))

    def option(self, name: str, default=None):
        return dict(self.options).get(name, default)

    def children(self):
        return self.args

    def substitute(self, mapping):
        return Call(self.func, tuple(a.substitute(mapping) for a in self.args), self.options)

    def dtype(self, schema):
        return function_spec(self.func).output_type(self, [_scalar(a, schema) for a in self.args])

    def __repr__(self):
        return function_spec(self.func).describe(self)


class StringFunctions:
    """``expr.str``: string functions. Every one is null-in, null-out; lengths and offsets count
    code points (UTF-8); a ``pattern`` is a Python regular expression unless ``literal=True``, with
    ``re``'s matches (backreferences and lookaround are refused when the query is defined; see
    docs/semantics.md, "Regular expressions")."""

    def __init__(self, expr: Expr):
        self._expr = expr

    def _call(self, name: str, **options) -> Call:
        return Call(f"str.{name}", (self._expr,), tuple(options.items()))

    def contains(self, pattern: str, literal: bool = False) -> Expr:
        """Whether the string matches ``pattern`` somewhere (contains the text, with ``literal=True``)."""
        return self._call("contains", pattern=pattern, literal=literal)

    def starts_with(self, prefix: str) -> Expr:
        """Whether the string starts with the text ``prefix``."""
        return self._call("starts_with", prefix=prefix)

    def ends_with(self, suffix: str) -> Expr:
        """Whether the string ends with the text ``suffix``."""
        return self._call("ends_with", suffix=suffix)

    def to_lowercase(self) -> Expr:
        """The string in lower case (ASCII and Latin-1 letters; other code points unchanged)."""
        return self._call("to_lowercase")

    def to_uppercase(self) -> Expr:
        """The string in upper case (ASCII and Latin-1 letters; other code points unchanged)."""
        return self._call("to_uppercase")

    def len_chars(self) -> Expr:
        """The number of code points (int64)."""
        return self._call("len_chars")

    def slice(self, offset: int, length: int | None = None) -> Expr:
        """The code points from ``offset`` (negative: counted from the end), at most ``length``."""
        return self._call("slice", offset=offset, length=length)

    def replace(self, pattern: str, value: str, literal: bool = False) -> Expr:
        """The string with its first match of ``pattern`` replaced by the text ``value``."""
        return self._call("replace", pattern=pattern, value=value, literal=literal)

    def replace_all(self, pattern: str, value: str, literal: bool = False) -> Expr:
        """The string with every non-overlapping match of ``pattern`` replaced by the text ``value``."""
        return self._call("replace_all", pattern=pattern, value=value, literal=literal)

    def extract(self, pattern: str, group_index: int = 1) -> Expr:
        """Capture group ``group_index`` (0: the whole match) of the first match of ``pattern``;
        null where nothing matches."""
        return self._call("extract", pattern=pattern, group_index=group_index)

    def split_part(self, separator: str, index: int) -> Expr:
        """Piece ``index`` (0-based) of the string split at ``separator``; null if there is none,
        and for an empty string."""
        return self._call("split_part", separator=separator, index=index)

    def count_matches(self, pattern: str, literal: bool = False) -> Expr:
        """The number of non-overlapping matches of ``pattern`` (int64)."""
        return self._call("count_matches", pattern=pattern, literal=literal)


class DateTimeFunctions:
    """``expr.dt``: functions of a timestamp (or int64 epoch milliseconds), in UTC."""

    def __init__(self, expr: Expr):
        self._expr = expr

    def _call(self, name: str, **options) -> Call:
        return Call(f"dt.{name}", (self._expr,), tuple(options.items()))

    def strftime(self, format: str) -> Expr:  # noqa: A002 - polars' name
        """The time as text (a string): ``format`` takes the directives ``%Y %m %d %H %M %S %j
        %a %b %%`` and literal text; another directive is a ``ValueError`` when the query is defined."""
        return self._call("strftime", format=format)

    def year(self) -> Expr:
        """The year (int64; proleptic Gregorian, astronomical: 0 is 1 BC)."""
        return self._call("year")

    def month(self) -> Expr:
        """The month, 1 to 12 (int64)."""
        return self._call("month")

    def day(self) -> Expr:
        """The day of the month, 1 to 31 (int64)."""
        return self._call("day")

    def hour(self) -> Expr:
        """The hour, 0 to 23 (int64)."""
        return self._call("hour")

    def minute(self) -> Expr:
        """The minute, 0 to 59 (int64)."""
        return self._call("minute")

    def weekday(self) -> Expr:
        """The ISO day of the week: 1 for Monday to 7 for Sunday (int64)."""
        return self._call("weekday")


@dataclass(frozen=True, eq=False, repr=False)
class ProcessingTime(Expr):
    """The wall-clock time (epoch ms) at which a record is processed: the time of
    processing-time windows. The engine reads the clock once per batch."""

    def dtype(self, schema):
        return TIMESTAMP

    def substitute(self, mapping):
        return self

    def __repr__(self):
        return "processing_time()"


# ----------------------------------------------------------------------------------------------
def col(name: str) -> Column:
    """The column ``name``: any string, as Arrow allows (the empty one too)."""
    if not isinstance(name, str):
        raise TypeError(f"col() takes a column name, got {name!r}")
    return Column(name)


def lit(value) -> Literal:
    """A literal: an int (int64), float (float64), bool, str (string), None (null) or a numpy
    scalar. ``TypeError`` for other values, ``SchemaError`` for an int beyond int64."""
    if isinstance(value, Expr):
        raise TypeError("lit() takes a Python value, not an expression")
    if value is None:
        return Literal(None, "null")
    if isinstance(value, bool):
        return Literal(value, "bool")
    if isinstance(value, int):
        if not -(1 << 63) <= value < (1 << 63):
            raise SchemaError(f"integer literal {value} does not fit in int64")
        return Literal(value, "int64")
    if isinstance(value, float):
        return Literal(value, "float64")
    if isinstance(value, str):
        return Literal(value, "string")
    import numpy as np
    if isinstance(value, np.generic):
        return lit(value.item())
    raise TypeError(f"unsupported literal {value!r} of type {type(value).__name__}")


def as_expr(value) -> Expr:
    return value if isinstance(value, Expr) else lit(value)


def if_else(cond, then, otherwise) -> Expr:
    """``then`` where ``cond`` is true, else ``otherwise`` (a null condition takes ``otherwise``,
    as SQL ``CASE``); the branches are expressions or literals whose types mix (an int and a float
    give float64). ``SchemaError`` for a condition that is not boolean or branches that do not mix."""
    return IfElse(as_expr(cond), as_expr(then), as_expr(otherwise))


def concat_str(*exprs, separator: str = "") -> Expr:
    """The strings of ``exprs`` (column names, expressions or literals) joined by ``separator``;
    null where any of them is null."""
    return Call("concat_str", tuple(col(e) if isinstance(e, str) else as_expr(e) for e in exprs),
                (("separator", separator),))


def strip_alias(e: Expr) -> Expr:
    while isinstance(e, Alias):
        e = e.operand
    return e


def _is_null_literal(e: Expr) -> bool:
    return isinstance(e, Literal) and e.type_name == "null"


def _describe(e: Expr) -> str:
    return f"column {e.name!r}" if isinstance(e, Column) else repr(e)


def _scalar(e: Expr, schema) -> DataType:
    """The type of operand ``e``, which must not be a list (``agg.top_k``'s results can be passed
    through, tested for null and counted, not computed with)."""
    t = e.dtype(schema)
    if t.is_list:
        raise SchemaError(f"{_describe(e)} is a {t.name} (a top_k result): lists can be passed through, "
                          f"not computed with")
    return t


def walk(e: Expr):
    """Pre-order traversal."""
    yield e
    for c in e.children():
        yield from walk(c)


def structural_key(e: Expr):
    """A hashable key equal for structurally equal trees (``==`` builds expressions instead)."""
    if isinstance(e, Column):
        return ("col", e.name)
    if isinstance(e, Literal):
        return ("lit", e.type_name, e.value)
    if isinstance(e, BinaryOp):
        return ("bin", e.op, structural_key(e.left), structural_key(e.right))
    if isinstance(e, UnaryOp):
        return ("un", e.op, structural_key(e.operand))
    if isinstance(e, IsIn):
        return ("isin", structural_key(e.operand), e.values)
    if isinstance(e, Cast):
        return ("cast", e.type_name, structural_key(e.operand))
    if isinstance(e, IfElse):
        return ("if", structural_key(e.cond), structural_key(e.then), structural_key(e.otherwise))
    if isinstance(e, Alias):
        return ("alias", e.name, structural_key(e.operand))
    if isinstance(e, ProcessingTime):
        return ("processing_time",)
    if isinstance(e, Call):
        return ("call", e.func, e.options, tuple(structural_key(a) for a in e.args))
    raise TypeError(e)

__all__ = ["Expr", "Column", "Literal", "BinaryOp", "UnaryOp", "IsIn", "Cast", "IfElse", "Alias", "Call",
           "StringFunctions", "DateTimeFunctions", "col", "lit", "if_else", "concat_str", "as_expr", "strip_alias",
           "walk", "structural_key", "ProcessingTime"]
