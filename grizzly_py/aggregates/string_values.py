"""The string variants of the functions that order values: ``min``, ``max`` and ``mode`` (whose
ties go to the smallest value).

Generated code holds a string as the id the engine interned it to (``engine/interning.py``), and
ids do not order as their strings do. A string variant therefore keeps every id of a group in a
value vector (the holistic state: ``aggregates/holistic.ll.j2``), emits them all when the window
fires, and the engine finishes each group's result from its decoded strings in Arrow
(``finish``): a hash aggregation over all groups of a firing at once, no per-row Python. Merges,
snapshots, the string release and Spark's partial states treat the vector as any other holistic
state."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .spec import AggregateSpec


class StringValues(AggregateSpec):
    """``base`` over strings: every id kept, the result finished in Arrow by ``aggregation``
    ("min", "max" or "mode")."""

    holistic = True
    reads = "key"
    list_result = True
    template = "aggregates/string_values.ll.j2"

    def __init__(self, base: AggregateSpec, aggregation: str):
        self.name = base.name
        self.base = base
        self.aggregation = aggregation

    def call(self, *args, **kwargs):
        return self.base.call(*args, **kwargs)

    def output_type(self, call, arg_type):
        return self.base.output_type(call, arg_type)

    def reference(self, call, arg_type, values, rows):
        return self.base.reference(call, arg_type, values, rows)

    def call_repr(self, call):
        return self.base.call_repr(call)

    def running(self, updating):
        """In a running aggregate: a value bag ordered by the strings' first bytes
        (``functions/value_bag.py``)."""
        return StringBag(self.base, self.aggregation)

    def finish(self, values: pa.ListArray) -> pa.Array:
        rows = pc.list_parent_indices(values)
        flat = pa.table({"row": rows, "v": pc.list_flatten(values)})
        group_rows = rows.to_numpy()
        if not len(group_rows) or (group_rows[1:] != group_rows[:-1]).all():
            # one value per row at most (a string bag's extreme without ties): it is the result
            results = flat.column("v")
        elif self.aggregation == "mode":
            counted = flat.group_by(["row", "v"]).aggregate([([], "count_all")])
            order = pc.sort_indices(counted, sort_keys=[("row", "ascending"), ("count_all", "descending"),
                                                        ("v", "ascending")])
            ranked = counted.take(order)
            group_rows = ranked.column("row").to_numpy()
            first = np.ones(len(group_rows), dtype=bool)
            first[1:] = group_rows[1:] != group_rows[:-1]
            picked = ranked.filter(pa.array(first))
            group_rows, results = picked.column("row").to_numpy(), picked.column("v")
        else:
            picked = flat.group_by("row").aggregate([("v", self.aggregation)])
            group_rows, results = picked.column("row").to_numpy(), picked.column(f"v_{self.aggregation}")
        at = np.full(len(values), -1, dtype=np.int64)  # each group's row among the results
        at[group_rows] = np.arange(len(group_rows))
        return results.combine_chunks().take(pa.array(at, mask=at < 0)) if len(values) else \
            pa.array([], values.type.value_type)


class StringBag(StringValues):
    """``min``, ``max`` or ``mode`` (``aggregation``) of strings in a running aggregate: a value
    bag of [order key, id, count] entries (``functions/value_bag.py``); its emit gives the ids
    tied for the extreme order key (``mode``: those of the largest count tied for the smallest
    order key among them), and ``finish`` picks among their strings."""

    retractable = True
    kept_after_emit = True
    public = False
    string_order = True
    template = "aggregates/string_bag.ll.j2"

    def running(self, updating):
        return self

    def retracts_exactly(self, kind):
        """A bag of strings (``functions/value_bag.py``): the values that are in, however they came."""
        return True

    def finish(self, values: pa.ListArray) -> pa.Array:
        """``mode``'s candidates are distinct strings of one count: its ties go to the smallest."""
        picks = StringValues(self.base, "min") if self.aggregation == "mode" else super()
        return picks.finish(values)


__all__ = ["StringBag", "StringValues"]
