"""``agg.first(c)`` and ``agg.last(c)``: the value of ``c`` of the group's earliest (latest) record
by event time, ties broken by arrival order; null values are skipped, as by every aggregate (as
Flink's ``FIRST_VALUE``/``LAST_VALUE`` skip them).

State ``[value, event time, arrival position, n]``: an update takes the record when it comes
before (after) the kept one, a merge keeps the earlier (later) of two states, so the result is
the same however the records are split between workers, panes and Spark tasks. Over an updating
input a running aggregate keeps every value instead, so that a retraction can give the next one
back (``first_last_retract.py``)."""

from __future__ import annotations

from ..spec import AggCall, AggregateSpec, argument, register
from .first_last_retract import FirstLastWithRetract


class Positional(AggregateSpec):
    template = "aggregates/first_last.ll.j2"
    ordered = True
    latest = False
    carries_strings = True

    def call(self, c) -> AggCall:
        return AggCall(self.name, argument(c))

    def output_type(self, call, arg_type):
        return arg_type

    def running(self, updating):
        """Over an updating input, a sequence of the values that are in (a retraction of the
        first or last value gives the next one back)."""
        return FirstLastWithRetract(self) if updating else self

    def state_words(self, kind):
        return 4

    def count_slot(self, kind):
        return 3

    def merge_exact(self, kind):
        """A merge keeps one of the two states whole, the earlier (later) by (event time, arrival)."""
        return True

    def reference(self, call, arg_type, values, rows):
        if not values:
            return None
        pick = max if self.latest else min
        return pick(values, key=lambda v: (v[0], v[1]))[2]


class First(Positional):
    name = "first"

    def call(self, c) -> AggCall:
        """The non-null value of ``c`` with the earliest event time (ties: the first to arrive)."""
        return super().call(c)


class Last(Positional):
    name = "last"
    latest = True

    def call(self, c) -> AggCall:
        """The non-null value of ``c`` with the latest event time (ties: the last to arrive)."""
        return super().call(c)


FIRST = register(First())
LAST = register(Last())
