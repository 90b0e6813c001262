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
        return UnaryOp("abs", self)

    def is_null(self) -> Expr:
        return UnaryOp("is_null", self)

    def is_not_null(self) -> Expr:
        return UnaryOp("is_not_null", self)

    def isin(self, values) -> Expr:
        values = tuple(values)
        for v in values:
            if isinstance(v, Expr):
                raise TypeError("isin takes literal values, not expressions")
        return IsIn(self, values)

    def between(self, lo, hi) -> Expr:
        return (self >= as_expr(lo)) & (self <= as_expr(hi))

    def cast(self, type_name: str) -> Expr:
        if type_name not in CAST_TARGETS:
            raise SchemaError(f"cannot cast to {type_name!r}; cast targets: {', '.join(CAST_TARGETS)}")
        return Cast(self, type_name)

    def alias(self, name: str) -> Expr:
        return Alias(self, name)

    # --- analysis --------------------------------------------------------------------------
    def dtype(self, schema: Schema) -> DataType:
        raise NotImplementedError

    def children(self) -> tuple[Expr, ...]:
        return ()

    def columns(self) -> set[str]:
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
            raise SchemaError("if_else producing strings is not supported in compiled code")
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
    return IfElse(as_expr(cond), as_expr(then), as_expr(otherwise))


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
    raise TypeError(e)

__all__ = ["Expr", "Column", "Literal", "BinaryOp", "UnaryOp", "IsIn", "Cast", "IfElse", "Alias",
           "col", "lit", "if_else", "as_expr", "strip_alias", "walk", "structural_key", "ProcessingTime"]
