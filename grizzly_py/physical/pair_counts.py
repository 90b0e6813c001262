"""Physical choice: a window join whose only reader counts its pairs per window runs as one join
pipeline that emits the counts (issue 31; Nexmark Q8). The join never gathers its pairs, and the
count's pipeline (its insert, its hash table of interned strings, its sort of the results by a
string key) does not exist.

The pattern, exactly (anything else runs as written)::

    a.join(b).where(...).equal_to(...).window(W).key_by(*keys).window(W).aggregate(n=agg.count(), ...)

``W`` the same tumbling event-time window on both, the aggregate's input the join itself (no
filter or projection between), every aggregate a plain ``agg.count()`` (no argument, no
``where=``), no allowed lateness and no late side output, every key a column of the join's left
side whose type groups as Arrow groups it (integers, bools, timestamps, strings; not floats:
``-0.0`` and NaN). No key at all is a count per window.

Why it is the same: a pair carries event time ``window_end - 1``, inside its own window, and
the count fires that window when the same watermark passes its end, so the count's group
``(window, keys)`` counts exactly the pairs of the window's left rows with those key values:
for each left row, the right rows of its window with its join key. The join pipeline emits
those groups with the count's columns (keys, ``window_start``, ``window_end``, counts) in the
count's order (window end, keys; nulls last). The join's sides count the records in, filtered
and late as before; the count took in only the join's pairs, never late ones, so the job's
``records_in``, ``filtered_records``, ``late_records`` and ``records_out`` are unchanged; the
query's ``results`` are the count's rows instead of the pairs plus them
(engine/accounting.py). ``disabled()`` (tests, benchmarks) or ``GRIZZLY_PAIR_COUNTS=off``
turn the choice off; the engine side is ``engine/pair_counts.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..plan import WindowAggregateNode, WindowJoinNode
from ..switches import Switch
from ..windows import TumblingEventTimeWindows


@dataclass(frozen=True)
class PairCounts:
    """What a join pipeline that counts its pairs emits, besides the window: ``keys``, the left
    side's output columns the pairs are grouped by (in the count's key order), and ``counts``,
    the count columns (each the number of pairs of the group)."""

    keys: tuple[str, ...]
    counts: tuple[str, ...]

    def describe(self) -> str:
        keys = ", ".join(self.keys) or "(none)"
        return f"pairs counted per window and {keys} as {', '.join(self.counts)} (no pair gathered)"


switch = Switch("GRIZZLY_PAIR_COUNTS")
# within the block, window joins followed by a count lower as written (to compare)
disabled, enabled = switch.disabled, switch.enabled


def _groups_as_arrow(dtype) -> bool:
    return dtype.is_integer or dtype.is_bool or dtype.is_timestamp or dtype.is_string


def pair_counts(node: WindowAggregateNode) -> PairCounts | None:
    """How the join under window aggregate ``node`` counts its pairs in its place, or None where
    the pattern (module docstring) does not hold."""
    join = node.input
    if not (enabled() and isinstance(join, WindowJoinNode) and isinstance(node.assigner, TumblingEventTimeWindows)
            and node.assigner == join.assigner and not node.allowed_lateness_ms and node.late_tag is None):
        return None
    if not all(call.spec.counts_records(call) and call.where is None for _, call in node.aggregates):
        return None
    left = join.left.schema
    if not all(k in left.names and _groups_as_arrow(left.field(k).dtype) for k in node.keys):
        return None
    return PairCounts(tuple(node.keys), tuple(name for name, _ in node.aggregates))


__all__ = ["PairCounts", "disabled", "enabled", "pair_counts", "switch"]
