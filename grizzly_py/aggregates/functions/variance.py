"""``agg.var_pop``, ``agg.var_samp``, ``agg.stddev_pop``, ``agg.stddev_samp``: Welford's update on
values shifted by the group's first one, state ``[n, mean, m2, shift]``; merged with Chan et
al.'s formula. The reference computes them exactly (rationals) and rounds once."""

from __future__ import annotations

import math
from fractions import Fraction

from ...types import FLOAT64, SchemaError
from ..spec import AggCall, AggregateSpec, argument, register

NAN = float("nan")


def exact_variance(values: list, ddof: int) -> float | None:
    """Variance with exact rational arithmetic; any non-finite input gives NaN."""
    n = len(values)
    if n - ddof <= 0:
        return None
    if any(isinstance(v, float) and not math.isfinite(v) for v in values):
        return NAN
    exact = [Fraction(v) for v in values]
    mean = sum(exact) / n
    squares = sum((x - mean) ** 2 for x in exact)
    try:
        return float(squares / (n - ddof))
    except OverflowError:
        return math.inf


class Spread(AggregateSpec):
    template = "aggregates/variance.ll.j2"
    ddof = 0
    root = False

    def call(self, c) -> AggCall:
        return AggCall(self.name, argument(c))

    def output_type(self, call, arg_type):
        if arg_type.is_string:
            raise SchemaError(f"agg.{self.name} needs a numeric column, but {call.arg!r} is a string")
        if arg_type.is_bool:
            raise SchemaError(f"agg.{self.name} needs a number, but {call.arg!r} is bool")
        return FLOAT64

    def state_words(self, kind):
        return 4

    def result_store(self, kind):
        return "double"

    def count_slot(self, kind):
        return 0

    def order_sensitive(self, kind):
        return kind == "float"

    def running(self, updating):
        """Over an updating input, retractable sums (see the module docstring)."""
        return SpreadWithRetract(self) if updating else self

    def reference(self, call, arg_type, values, rows):
        if not values:
            return None
        # integers are taken as float64 values first (as numpy and Spark do), then exact
        var = exact_variance([float(v) for v in values], self.ddof)
        return math.sqrt(var) if self.root and var is not None else var


class VarPop(Spread):
    name = "var_pop"

    def call(self, c) -> AggCall:
        """The population variance of the non-null values of ``c`` (float64)."""
        return super().call(c)


class VarSamp(Spread):
    name = "var_samp"
    ddof = 1

    def call(self, c) -> AggCall:
        """The sample variance of the non-null values of ``c`` (float64; null below two values)."""
        return super().call(c)


class StddevPop(Spread):
    name = "stddev_pop"
    root = True

    def call(self, c) -> AggCall:
        """The population standard deviation of the non-null values of ``c`` (float64)."""
        return super().call(c)


class StddevSamp(Spread):
    name = "stddev_samp"
    ddof = 1
    root = True

    def call(self, c) -> AggCall:
        """The sample standard deviation of the non-null values of ``c`` (float64; null below two values)."""
        return super().call(c)


class SpreadWithRetract(Spread):
    """``base`` over the state ``[n, s1, s2, shift, nonfinite, c1, c2]`` that a retraction can
    undo (the module docstring). Not registered: ``Spread.running`` hands it out."""

    retractable = True
    public = False
    template = "aggregates/variance_retract.ll.j2"

    def __init__(self, base: Spread):
        self.name, self.ddof, self.root = base.name, base.ddof, base.root
        self.base = base

    def call(self, *args, **kwargs):
        return self.base.call(*args, **kwargs)

    def running(self, updating):
        return self

    def state_words(self, kind):
        return 7


VAR_POP = register(VarPop())
VAR_SAMP = register(VarSamp())
STDDEV_POP = register(StddevPop())
STDDEV_SAMP = register(StddevSamp())
