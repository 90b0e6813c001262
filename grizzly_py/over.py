"""OVER aggregates (Flink's OVER windows): the plan node ``OverAggregateNode`` and its frame.

``keyed.over(rows_preceding=n)`` or ``keyed.over(range_preceding=d)``, then ``.aggregate(...)``:
every input row, plus the aggregates over its *frame*, the rows of its key ordered by event time
(ties by arrival) that end at the row itself: ``ROWS BETWEEN n PRECEDING AND CURRENT ROW`` (the
row and the n rows before it) or ``RANGE BETWEEN d PRECEDING AND CURRENT ROW`` (the rows with
``ts - d <= t <= ts``, rows with the row's own timestamp included, also those that arrive after
it). A row leaves when the watermark passes it; a row behind the watermark is late. What the
node accepts is checked here, at definition time; docs/semantics.md ("OVER aggregates") has the
rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from .aggregates import AggCall, spec_of, specs
from .plan import PlanNode, distinct_sources, require_append_only
from .types import Field, Schema, SchemaError, to_arrow_type
from .windows import MAX_WINDOW_MS

MAX_ROWS_PRECEDING = 1 << 53  # frame arithmetic stays far from the int64 limits


@dataclass(frozen=True)
class OverFrame:
    """A frame ending at the current row: ``rows`` preceding rows, or the rows at most
    ``range_ms`` earlier in event time (exactly one of them is set)."""

    rows: int | None = None
    range_ms: int | None = None

    @staticmethod
    def of(rows_preceding, range_ms: int | None) -> "OverFrame":
        """The frame of ``over(rows_preceding=..., range_preceding=...)`` (the range in ms)."""
        if (rows_preceding is None) == (range_ms is None):
            raise ValueError("over() takes exactly one of rows_preceding=n (ROWS BETWEEN n PRECEDING AND "
                             "CURRENT ROW) and range_preceding=duration (RANGE BETWEEN duration PRECEDING "
                             "AND CURRENT ROW)")
        if rows_preceding is not None:
            if isinstance(rows_preceding, bool) or not isinstance(rows_preceding, int):
                raise TypeError(f"over(rows_preceding=...) takes an int number of rows, got {rows_preceding!r}")
            if not 0 <= rows_preceding <= MAX_ROWS_PRECEDING:
                raise ValueError(f"over(rows_preceding=...) must be between 0 and {MAX_ROWS_PRECEDING} "
                                 f"(it must not be negative), got {rows_preceding}")
            return OverFrame(rows=rows_preceding)
        if not 0 <= range_ms <= MAX_WINDOW_MS:
            raise ValueError(f"over(range_preceding=...) must be between 0 and {MAX_WINDOW_MS} ms, got {range_ms} ms")
        return OverFrame(range_ms=range_ms)

    def __repr__(self):
        if self.rows is not None:
            return f"ROWS BETWEEN {self.rows} PRECEDING AND CURRENT ROW"
        return f"RANGE BETWEEN {self.range_ms} ms PRECEDING AND CURRENT ROW"


@dataclass(frozen=True, eq=False)
class OverAggregateNode(PlanNode):
    """``keyed.over(...).aggregate(**aggregates)``: every input row (in event-time order), then
    the aggregates over its frame (see the module docstring). Output: the input columns, then the
    aggregates in order."""

    input: PlanNode
    keys: tuple[str, ...]
    frame: OverFrame
    aggregates: tuple[tuple[str, AggCall], ...]

    def __post_init__(self):
        require_append_only("an OVER aggregate", self.input)
        if not self.aggregates:
            raise SchemaError("over(...).aggregate() needs at least one aggregate, e.g. n=agg.count()")
        for k in self.keys:
            if self.input.schema.field(k).dtype.is_list:  # an unknown key raises SchemaError naming it
                raise SchemaError(f"key {k!r} is a list (a top_k result): lists cannot be keys")
        for s in distinct_sources(self):
            if s.timestamp is None:
                raise SchemaError(f"over(): the input reads source {s.name}, which has no event time; an OVER "
                                  f"frame is ordered by event time (from_arrow(..., timestamp='ts'))")
        self.schema

    @property
    def inputs(self):
        return (self.input,)

    def _derive_schema(self):
        in_schema = self.input.schema
        fields = list(in_schema)
        for name, call in self.aggregates:
            if not isinstance(call, AggCall):
                raise SchemaError(f"aggregate {name!r}: expected agg.<function>(...), got {call!r}")
            method = spec_of(call.func).frame
            if method is None:
                raise SchemaError(f"aggregate {name!r}: agg.{call.func} is not supported over an OVER frame; "
                                  f"it takes {', '.join(over_aggregates())}")
            if name in in_schema:
                raise SchemaError(f"aggregate name {name!r} clashes with the input column of that name")
            dtype = call.output_type(in_schema)
            if call.arg is not None and method.reads_numbers:
                t = call.arg.dtype(in_schema)
                numeric = t.is_integer or t.is_float or (t.is_bool and method.takes_bools)
                if not numeric or t.is_timestamp:
                    raise SchemaError(f"aggregate {name!r}: agg.{call.func} over an OVER frame takes a number "
                                      f"(int32, int64, float64{', bool' if method.takes_bools else ''}), "
                                      f"but {call.arg!r} is {t.name}")
            fields.append(Field(name, dtype, to_arrow_type(dtype)))
        return Schema(tuple(fields))

    def label(self):
        aggs = ", ".join(f"{n}={c!r}" for n, c in self.aggregates)
        return f"OverAggregate[keys=[{', '.join(self.keys)}], {self.frame!r}, {aggs}]"


def over_aggregates() -> list[str]:
    """The aggregates an OVER frame computes (their specs declare a ``frame`` method)."""
    return [s.name for s in specs() if s.frame is not None]


__all__ = ["OverAggregateNode", "OverFrame", "over_aggregates"]
