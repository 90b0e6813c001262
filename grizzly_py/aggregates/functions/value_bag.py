"""Value bags: how a running aggregate (``keyed.aggregate`` without a window) runs ``min`` and
``max`` of numbers over an updating input, and ``count_distinct``, ``median``, ``mode``,
``top_k`` and ``min``/``max``/``mode`` of strings over any input.

A running aggregate emits its key's row at every record, so its state must stay after an emit,
and a retraction (an updating input's ``-U``/``-D`` row) must be able to take a value out: when
the current minimum leaves, the next smallest value becomes the minimum. Per key, the bag keeps
each distinct value (as its order-preserving int64 key, as holistic functions do) with how many
times it is in, sorted by value (``gz_bag_add``, runtime/vectors.ll; the IR macros:
``aggregates/value_bag.ll.j2``), as Flink's ``MinWithRetractAggFunction`` keeps a value -> count
map. ``min`` is the first value, ``max`` the last (NaN only when every value is NaN, as the plain
functions), ``count_distinct`` the number of values; ``median`` walks the counts to the middle
value(s), ``mode`` takes the first value of the largest count and ``top_k`` the last values,
each as many times as it is in: an emit costs O(distinct values) (O(k) for ``top_k``), and the
results are the window functions' (the same middle mean, NaN and tie rules). The bag is a
holistic state (a value vector of [key, count] pairs), so snapshots, the state-memory count and
the string release handle it as any other value vector. These descriptors are not registered:
``AggregateSpec.running`` hands them out.

Strings are interned ids, which do not order as their strings do. ``min``, ``max`` and ``mode``
of strings keep [order key, id, count] entries (``gz_bag2_add``; ``aggregates/string_bag.ll.j2``),
the order key being the string's first 8 bytes (``engine/string_order.py``, a virtual column the
engine fills per batch, as it does the ids): the first (last) entries share the smallest
(largest) order key, their ids are emitted, and the engine picks the result among their strings
in Arrow (``string_values.StringBag``); for ``mode`` the candidates are the entries of the
largest count that share the smallest order key among them."""

from __future__ import annotations

from ..spec import AggregateSpec, RunningForm


class ValueBag(RunningForm):
    """``base`` over a value bag; ``pick``: what the emit reads, ``"low"`` (the first value),
    ``"high"`` (the last), ``"distinct"`` (how many values), ``"median"``, ``"mode"`` or
    ``"top"`` (``top_k``'s list of the last values)."""

    holistic = True
    reads = "key"
    retractable = True
    template = "aggregates/value_bag.ll.j2"

    def retracts_exactly(self, kind):
        """A bag holds each value with its count: the values that are in, however they came."""
        return True

    def __init__(self, base: AggregateSpec, pick: str):
        super().__init__(base)
        self.pick = pick
        self.list_result = base.list_result

    def result_store(self, kind):
        return self.base.result_store(kind)


__all__ = ["ValueBag"]
