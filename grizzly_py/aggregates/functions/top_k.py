"""``agg.top_k(c, k)``: holistic; the ``k`` largest non-null values, largest first, duplicates
kept, as a list (an empty list for a group without values). Its emit appends each group's values
to an output vector and writes {first value, count} per result row, from which the engine builds
the Arrow list column. A partial state (Spark) ships only each vector's k largest values: the top
k of a union is the top k of the parts' top k."""

from __future__ import annotations

import numpy as np

from ...types import SchemaError, list_of
from ...value_order import normalize_key, sort_key
from ..spec import AggCall, AggregateSpec, argument, register
from .value_bag import ValueBag

MAX_TOP_K = (1 << 31) - 1  # the most values one Arrow list (int32 offsets) holds


class TopK(AggregateSpec):
    name = "top_k"
    template = "aggregates/top_k.ll.j2"
    holistic = True
    reads = "key"
    list_result = True

    def call(self, c, k: int) -> AggCall:
        """The ``k`` largest non-null values of ``c`` in descending order, duplicates kept (fewer
        when the group has fewer; an empty list when it has none): a ``list<type of c>``."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"agg.top_k: k must be a positive int, got {k!r}")
        if k > MAX_TOP_K:
            raise ValueError(f"agg.top_k: k must be at most {MAX_TOP_K:,}, got {k:,}")
        return AggCall("top_k", argument(c), int(k))

    def output_type(self, call, arg_type):
        if not (arg_type.is_numeric or arg_type.is_timestamp):
            raise SchemaError(f"agg.top_k needs a number or a timestamp (int32, int64, float64, timestamp), "
                              f"but {call.arg!r} is {arg_type!r}")
        return list_of(arg_type)

    def partial_values(self, call):
        return call.k

    def running(self, updating):
        """A value bag: its last values, each as many times as it is in, up to k."""
        return ValueBag(self, "top")

    def reference(self, call, arg_type, values, rows):
        # largest first (NaN above +inf), -0.0 as 0.0; no values: []
        return [normalize_key(v) for v in sorted(values, key=sort_key, reverse=True)[:call.k]]

    def call_repr(self, call):
        return f"agg.top_k({call.arg!r}, {call.k})"


TOP_K = register(TopK())
