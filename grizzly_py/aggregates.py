"""Aggregate functions: ``agg.count()``, ``agg.sum(c)``, ... as immutable call descriptions.

Each function knows its output type and whether it is decomposable. Aggregates skip nulls; a
group whose inputs are all null gets a null result, except ``count`` which gives 0 and
``top_k`` which gives an empty list.

``HOLISTIC`` is the one list of the aggregates that keep every value of a group (a value vector
in the compiled engine); the code generator, its templates and the Spark partials import it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .expressions import Expr, as_expr, col
from .types import FLOAT64, INT64, DataType, Schema, SchemaError, list_of

DECOMPOSABLE = ("count", "sum", "min", "max", "avg", "var_pop", "var_samp", "stddev_pop", "stddev_samp")
HOLISTIC = ("median", "mode", "count_distinct", "top_k")
MAX_TOP_K = (1 << 31) - 1  # the most values one Arrow list (int32 offsets) holds
# What the compiled engine computes today (the others are recognized and rejected when compiling).
COMPILED = DECOMPOSABLE + HOLISTIC


@dataclass(frozen=True, eq=False)
class AggCall:
    func: str
    arg: Expr | None  # None: count(*)
    k: int | None = None  # top_k: how many values

    def output_type(self, schema: Schema) -> DataType:
        if self.arg is None:
            return INT64
        t = self.arg.dtype(schema)
        if t.is_list and self.func != "count":
            raise SchemaError(f"agg.{self.func} of {self.arg!r}: it is a {t.name} (a top_k result); lists can "
                              f"only be counted")
        if self.func == "top_k":
            if not (t.is_numeric or t.is_timestamp):
                raise SchemaError(f"agg.top_k needs a number or a timestamp (int32, int64, float64, timestamp), "
                                  f"but {self.arg!r} is {t!r}")
            return list_of(t)
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
        if self.func == "top_k":
            return f"agg.top_k({self.arg!r}, {self.k})"
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

    @staticmethod
    def top_k(c, k: int) -> AggCall:
        """The ``k`` largest non-null values of ``c`` in descending order, duplicates kept (fewer
        when the group has fewer; an empty list when it has none): a ``list<type of c>``."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"agg.top_k: k must be a positive int, got {k!r}")
        if k > MAX_TOP_K:
            raise ValueError(f"agg.top_k: k must be at most {MAX_TOP_K:,}, got {k:,}")
        return AggCall("top_k", _arg(c), int(k))


class AggregateOverflowError(ArithmeticError):
    """An int64 sum (or the sum behind an int64 average) does not fit in int64."""
