"""``_extreme_rows`` and ``_extreme_row_values``: the state of a window that keeps the rows at a
column's ``agg.max``/``agg.min`` (``window_rank.py``, ``RowOrder`` ``"max"``/``"min"``; what the
rewrite of a join with a window maximum runs: ``rewrites/extreme_join.py``), not functions users
call.

Per (key, window) only the rows attaining the running extreme are kept. ``_extreme_rows(c)``
decides, once per record: its state is ``[vector, extreme, seen]`` (``seen``: 0 nothing, 1 only
NaN, 2 a number) and its vector holds the kept records' arrival positions. A record with a better
number (or the first number after NaNs) clears the kept rows and becomes the only one; an equal
number (``-0.0`` equals ``0.0``) is appended; a worse one, a null, or a NaN once a number is
kept, is dropped: the rows whose value equals ``agg.max``'s result, NaN rows only when every value
is NaN. Merging two states keeps the better extreme's rows, or both (appended) where they are
equal. Each ``_extreme_row_values`` of the same window (``k``: the decider's position among the
window's aggregates, which comes before it) holds one carried column's words (as
``_row_values``: values and null masks) and follows that decision, in its update and its merge
alike (the decider's registers ``.clear`` and ``.take``), so the i-th words of a group's vectors
belong to one record. The engine orders the kept rows by arrival when the window fires
(``engine/window_rows.py``); it need not look at the values."""

from __future__ import annotations

from ...types import INT64, SchemaError, list_of
from ..spec import AggCall, AggregateSpec, argument, register
from .row_values import RowValues

EXTREMES = {"max": 0, "min": 1}  # the decider's ``k``


class ExtremeRows(AggregateSpec):
    name = "_extreme_rows"
    template = "aggregates/rows_at_extreme.ll.j2"
    holistic = True
    ordered = True
    list_result = True

    def call(self, c, keep: str = "max") -> AggCall:
        """The arrival positions of the records at ``keep`` (``"max"``/``"min"``) of ``c``."""
        if keep not in EXTREMES:
            raise ValueError(f"_extreme_rows: keep= is one of {', '.join(EXTREMES)}, got {keep!r}")
        return AggCall(self.name, argument(c), EXTREMES[keep])

    def output_type(self, call, arg_type):
        if not (arg_type.is_integer or arg_type.is_float):
            raise SchemaError(f"_extreme_rows: {call.arg!r} is a {arg_type.name}, not a number")
        return list_of(INT64)

    def state_words(self, kind):
        return 5  # the vector's three words, the extreme, what was seen

    def result_store(self, kind):
        return "i64"  # arrival positions, whatever the column's type

    def reference(self, call, arg_type, values, rows):
        # (event time, arrival, value) of the non-null values: the arrivals of those at the extreme
        numbers = [v[2] for v in values if v[2] == v[2]]
        best = (max if call.k == EXTREMES["max"] else min)(numbers) if numbers else None
        return [v[1] for v in sorted(values, key=lambda v: v[1])
                if (v[2] == best if numbers else v[2] != v[2])]

    def call_repr(self, call):
        keep = {v: k for k, v in EXTREMES.items()}[call.k]
        return f"agg._extreme_rows({call.arg!r}, keep={keep!r})"


class ExtremeRowValues(RowValues):
    name = "_extreme_row_values"
    template = "aggregates/rows_at_extreme.ll.j2"
    ordered = False

    def call(self, c, decider: int = 0) -> AggCall:
        """The words of ``c`` of the records that the ``_extreme_rows`` at position ``decider`` keeps."""
        if isinstance(decider, bool) or not isinstance(decider, int) or decider < 0:
            raise ValueError(f"_extreme_row_values: decider= is an aggregate's position, got {decider!r}")
        return AggCall(self.name, argument(c), decider)

    def reference(self, call, arg_type, values, rows):
        raise NotImplementedError("_extreme_row_values follows its decider: reference.WindowRank keeps the rows")

    def call_repr(self, call):
        return f"agg._extreme_row_values({call.arg!r}, decider={call.k})"


EXTREME_ROWS = register(ExtremeRows())
EXTREME_ROW_VALUES = register(ExtremeRowValues())
