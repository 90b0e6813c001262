"""How a running aggregate (``keyed.aggregate`` without a window) runs ``first`` and ``last`` over
an updating input, whose ``-U``/``-D`` rows retract inputs added before.

The plain state ``[value, event time, arrival position, n]`` keeps one record and cannot give
the next one back when that record is retracted. This one keeps every value that is in, as
entries ``[event time, arrival position, value]`` in ascending (event time, arrival) order
(``gz_seq_insert``, runtime/vectors.ll; the IR macros: ``aggregates/first_last_retract.ll.j2``):
``first`` is the first entry's value, ``last`` the last one's, so they order as the plain
functions do. A retraction takes out the earliest entry of an equal value (``gz_seq_remove``),
as Flink's ``FirstValueWithRetractAggFunction`` and ``LastValueWithRetractAggFunction`` take
out a value's oldest occurrence; values are equal when their words are: integers, interned
string ids (equal strings share an id: ``engine/interning.py``) and floats by their bits with
every NaN made one (Java's ``Double.equals``: NaN equals NaN, ``-0.0`` is not ``0.0``). The
state is a holistic value vector that an emit leaves in place, so snapshots, the state-memory
count and the string release handle it as any other (the release reads its event times and
positions as ids too: it may keep a few strings it could drop). Not registered:
``Positional.running`` hands it out."""

from __future__ import annotations

from ..spec import AggregateSpec, RunningForm


class FirstLastWithRetract(RunningForm):
    """``base`` (``first`` or ``last``) over a sequence of the values that are in."""

    holistic = True
    ordered = True
    retractable = True
    template = "aggregates/first_last_retract.ll.j2"

    def __init__(self, base: AggregateSpec):
        super().__init__(base)
        self.latest = base.latest


__all__ = ["FirstLastWithRetract"]
