"""Aggregate functions: ``agg.count()``, ``agg.sum(c)``, ... as immutable call descriptions.

Each function knows its output type and whether it is decomposable. Aggregates skip nulls; a
group whose inputs are all null gets a null result, except ``count`` which gives 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from .expressions import Expr, as_expr, col
from .types import FLOAT64, INT64, DataType, Schema, SchemaError

DECOMPOSABLE = ("count", "sum", "min", "max", "avg", "var_pop", "var_samp", "stddev_pop", "stddev_samp")
HOLISTIC = ("median", "mode", "count_distinct")
# What the compiled engine computes today (the others are recognized and rejected when compiling).
COMPILED = DECOMPOSABLE + HOLISTIC


@dataclass(frozen=True, eq=False)
class AggCall:
    func: str
    arg: Expr | None  # None: count(*)

    def output_type(self, schema: Schema) -> DataType:
        if self.arg is None:
            return INT64
        t = self.arg.dtype(schema)
        if self.func in ("count", "count_distinct"):
            return INT64
        if t.is_string:
            if self.func in ("mode",):
                return t
            raise SchemaError(f"agg.{self.func} needs a numeric column, but {self.arg!r} is a string")
        if self.func == "sum":
            if t.is_bool:
                raise SchemaError(f"agg.sum needs a number, but {self.arg!r} is bool")
            return FLOAT64 if t.is_float else INT64
        if self.func in ("min", "max", "mode"):
            return t
        if t.is_bool:
            raise SchemaError(f"agg.{self.func} needs a number, but {self.arg!r} is bool")
        return FLOAT64

    def __repr__(self):
        return f"agg.{self.func}({'' if self.arg is None else repr(self.arg)})"


def _arg(c) -> Expr:
    return col(c) if isinstance(c, str) else as_expr(c)


class agg:  # noqa: N801 - a namespace named as in api.md
    """Namespace of aggregate constructors."""

    @staticmethod
    def count(c=None) -> AggCall:
        return AggCall("count", None if c is None else _arg(c))

    @staticmethod
    def sum(c) -> AggCall:
        return AggCall("sum", _arg(c))

    @staticmethod
    def min(c) -> AggCall:
        return AggCall("min", _arg(c))

    @staticmethod
    def max(c) -> AggCall:
        return AggCall("max", _arg(c))

    @staticmethod
    def avg(c) -> AggCall:
        return AggCall("avg", _arg(c))

    @staticmethod
    def var_pop(c) -> AggCall:
        return AggCall("var_pop", _arg(c))

    @staticmethod
    def var_samp(c) -> AggCall:
        return AggCall("var_samp", _arg(c))

    @staticmethod
    def stddev_pop(c) -> AggCall:
        return AggCall("stddev_pop", _arg(c))

    @staticmethod
    def stddev_samp(c) -> AggCall:
        return AggCall("stddev_samp", _arg(c))

    @staticmethod
    def median(c) -> AggCall:
        return AggCall("median", _arg(c))

    @staticmethod
    def mode(c) -> AggCall:
        return AggCall("mode", _arg(c))

    @staticmethod
    def count_distinct(c) -> AggCall:
        return AggCall("count_distinct", _arg(c))


class AggregateOverflowError(ArithmeticError):
    """An int64 sum (or the sum behind an int64 average) does not fit in int64."""
