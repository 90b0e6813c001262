"""``_row_pick``: the state of window deduplication (``window_rank.py``), not a function users
call. Per (key, window) and column, the value of one record, null or not: the first record to
arrive (``keep="first"``) or the one with the latest event time, ties to the later arrival
(``keep="last"``). Every ``_row_pick`` of a window compares the same (event time, arrival
position), so all of them keep the same record.

State ``[value, event time, arrival position, records, value present]``: an update takes the
record when it wins over the kept one, a merge keeps the winner of two states, so the result is
the same however the records are split between workers, panes and sessions."""

from __future__ import annotations

from ..spec import AggCall, AggregateSpec, argument, register

KEEP = {"first": 0, "last": 1}  # the call's ``k``


class RowPick(AggregateSpec):
    name = "_row_pick"
    template = "aggregates/row_pick.ll.j2"
    ordered = True

    def call(self, c, keep: str = "first") -> AggCall:
        """The value of ``c`` of the record that ``keep`` picks, null or not."""
        if keep not in KEEP:
            raise ValueError(f"_row_pick: keep= is one of {', '.join(KEEP)}, got {keep!r}")
        return AggCall(self.name, argument(c), KEEP[keep])

    def output_type(self, call, arg_type):
        return arg_type

    def state_words(self, kind):
        return 5

    def count_slot(self, kind):
        return 3

    def reference(self, call, arg_type, values, rows):
        # (event time, arrival, value) of the non-null values: the value of the record kept among
        # those (window deduplication's reference keeps whole records: reference.WindowRank)
        if not values:
            return None
        if call.k == KEEP["first"]:
            return min(values, key=lambda v: v[1])[2]
        return max(values, key=lambda v: (v[0], v[1]))[2]

    def call_repr(self, call):
        keep = {v: k for k, v in KEEP.items()}[call.k]
        return f"agg._row_pick({call.arg!r}, keep={keep!r})"


ROW_PICK = register(RowPick())
