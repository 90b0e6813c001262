"""``_row_values``: the state of window Top-N (``window_rank.py``), not a function users call.
Holistic: a vector per (key, window) of one word per record, nulls included (as 0; a null-mask
column of the same rows tells them apart): the argument's value (a float's bits unchanged, a
string's interned id) or the record's arrival position. Every ``_row_values`` aggregate of a
window pushes one word per record and merges by appending, so the i-th words of a group's
vectors belong to one record. Its emit appends the whole vector, in the order it holds, to the
output vector and writes {first word, count} per result row; the engine ranks the rows
(``engine/window_rows.py``)."""

from __future__ import annotations

from ...types import SchemaError, list_of
from ..spec import AggCall, AggregateSpec, argument, register

WORDS = {"value": 0, "arrival": 1}  # what a record pushes (the call's ``k``)


class RowValues(AggregateSpec):
    name = "_row_values"
    template = "aggregates/row_values.ll.j2"
    holistic = True
    ordered = True
    list_result = True

    def call(self, c, what: str = "value") -> AggCall:
        """Every record's ``what``: ``"value"`` (of ``c``) or ``"arrival"``."""
        if what not in WORDS:
            raise ValueError(f"_row_values: what= is one of {', '.join(WORDS)}, got {what!r}")
        return AggCall(self.name, argument(c), WORDS[what])

    def output_type(self, call, arg_type):
        if arg_type.is_list:
            raise SchemaError(f"window rows cannot hold the list column {call.arg!r}")
        return list_of(arg_type)

    def finish(self, values):
        return values  # the rows' strings, ranked by the engine

    def reference(self, call, arg_type, values, rows):
        # (event time, arrival, value) of the non-null values; the ranking has its own reference
        word = {0: lambda v: v[2], 1: lambda v: v[1]}[call.k]
        return [word(v) for v in sorted(values, key=lambda v: v[1])]

    def call_repr(self, call):
        what = {v: k for k, v in WORDS.items()}[call.k]
        return f"agg._row_values({call.arg!r}, what={what!r})"


ROW_VALUES = register(RowValues())
