"""The value of one column in a group's chosen record, nulls included: what a deduplication
keeps of each column of a key's row (``keyed.deduplicate``, ``plan.DeduplicateNode``). Internal:
no ``agg.<name>`` constructor (``public = False``); users have ``agg.first``/``agg.last``, which
skip nulls.

- ``row_last``: the record with the latest event time, ties to the later arrival;
- ``row_first``: the first record to arrive.

State ``[value, event time, arrival position, kept]``, ``kept`` 0 (no record), 1 (a null value)
or 2 (a value): an update takes the record when it comes after (before) the kept one, whatever its
value; a merge keeps the later (earlier) of two states."""

from __future__ import annotations

from ..spec import AggCall, AggregateSpec, argument, register


class RowValue(AggregateSpec):
    template = "aggregates/row_value.ll.j2"
    ordered = True
    public = False
    latest = False      # the latest record wins (else the earliest)
    by_arrival = False  # arrival order alone (else event time, ties by arrival)
    carries_strings = True

    def call(self, c) -> AggCall:
        return AggCall(self.name, argument(c))

    def output_type(self, call, arg_type):
        return arg_type

    def state_words(self, kind):
        return 4

    def count_slot(self, kind):
        return 3

    def reference(self, call, arg_type, values, rows):
        raise NotImplementedError("a row value keeps nulls, which the reference's aggregates never see: "
                                  "the reference deduplicates rows itself")


class RowLast(RowValue):
    name = "row_last"
    latest = True


class RowFirst(RowValue):
    name = "row_first"
    by_arrival = True


ROW_LAST = register(RowLast())
ROW_FIRST = register(RowFirst())
