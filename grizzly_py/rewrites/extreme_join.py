"""Rewrite: a window join of a stream with its own window maximum (or minimum) on that column
becomes one window operator that keeps the rows at the extreme (issue 31; Nexmark Q7 and Q5's
hot items).

The pattern, exactly (anything else is left alone)::

    X.select(...).join(X.window_all(W).aggregate(m=agg.max(c)).select("m"))
     .where(c).equal_to("m").window(W)

with the same plan object ``X`` on both sides (the left side ``X`` itself or a ``select`` of it
whose key is ``X``'s column ``c`` passed through), ``W`` the same tumbling event-time window on
both, the window aggregate global, one ``max`` or ``min`` of a plain column, no ``where=``, no
allowed lateness. It pairs each row of ``X.select(...)`` whose ``c`` equals its window's extreme
with that one extreme: the rows at the extreme, ties all of them. The replacement is
``WindowRankNode(X.select(...).filter(c is not null), W, rows_at_max(c))`` (``window_rank.py``),
projected to the join's columns, ``m`` being ``c``.

Why it is the same: both fire a window when the watermark of ``X`` passes its end, so a record
is late for the one exactly when it is for the other (the join's watermark is the minimum of two
inputs that are both ``X``'s); the join emits a window's pairs by key, then left arrival, and
only one key pairs: the rows at the extreme in arrival order, each at event time
``window_end - 1``, as the ranked window emits them. A null ``c`` joins nothing (the filter
drops it, as the join counts it filtered); NaN is the extreme only when every value is (``agg.
max`` skips NaN), and then every NaN row pairs (join keys: NaN equals NaN); ``-0.0`` equals
``0.0``, so ``m`` of such a row is the aggregate's zero, not the row's: over floats the rewrite
applies only where the parent does not read ``m``. Metrics differ where the plan did: ``X`` is
computed once instead of twice, so its late and filtered records count once
(docs/semantics.md, "Plan rewrites").
"""

from __future__ import annotations

from ..expressions import Column, strip_alias
from ..plan import FilterNode, PlanNode, ProjectNode, WindowAggregateNode, WindowJoinNode
from ..types import SchemaError
from ..window_rank import AT_MAX, AT_MIN, WindowRankNode, extreme_order
from ..windows import TumblingEventTimeWindows
from .registry import Rewritten, register

# which extreme an aggregate is, by what its spec says of it (``FrameMethod.extreme`` of agg.max and
# agg.min), not by its name
_EXTREMES = {"high": AT_MAX, "low": AT_MIN}


def _extreme_of(right: PlanNode, assigner) -> tuple[str, str, PlanNode, str] | None:
    """(the right side's column, its extreme's kind, the window's input, the aggregated column)
    where ``right`` is ``X.window_all(assigner).aggregate(m=agg.max(c)).select(m)``."""
    if not (isinstance(right, ProjectNode) and len(right.columns) == 1):
        return None
    name, expr = right.columns[0]
    window = right.input
    if not (isinstance(window, WindowAggregateNode) and not window.keys and window.assigner == assigner
            and not window.allowed_lateness_ms and window.late_tag is None and len(window.aggregates) == 1):
        return None
    aggregate, call = window.aggregates[0]
    expr = strip_alias(expr)
    keep = _EXTREMES.get(getattr(call.spec.frame, "extreme", None))
    if not (isinstance(expr, Column) and expr.name == aggregate and keep is not None
            and call.where is None and isinstance(call.arg, Column)):
        return None
    return name, keep, window.input, call.arg.name


def _source_column(left: PlanNode, x: PlanNode, key: str) -> str | None:
    """The column of ``x`` that ``left``'s column ``key`` passes through (``left`` being ``x`` or a
    ``select`` of it), or None."""
    if left is x:
        return key
    if isinstance(left, ProjectNode) and left.input is x:
        expr = strip_alias(dict(left.columns)[key])
        return expr.name if isinstance(expr, Column) else None
    return None


@register("extreme_join")
def rows_at_extreme(node: PlanNode, used: frozenset[str] | None) -> Rewritten | None:
    if not (isinstance(node, WindowJoinNode) and isinstance(node.assigner, TumblingEventTimeWindows)
            and len(node.left_keys) == 1):
        return None
    found = _extreme_of(node.right, node.assigner)
    if found is None:
        return None
    m, keep, x, c = found
    key = node.left_keys[0]
    if node.right_keys != (m,) or _source_column(node.left, x, key) != c:
        return None
    dtype = node.left.schema.field(key).dtype
    if not (dtype.is_integer or dtype.is_float):  # (timestamps: not yet checked against the join)
        return None
    m_out = dict(node.right_names)[m]
    reads_m = used is None or m_out in used
    if reads_m and dtype.is_float:  # m would be the row's -0.0 where the aggregate's is 0.0
        return None
    try:
        rows = WindowRankNode(FilterNode(node.left, Column(key).is_not_null()), (), node.assigner,
                              extreme_order(key, keep))
        columns = tuple((f.name, Column(key) if f.name == m_out else Column(f.name))
                        for f in node.schema if reads_m or f.name != m_out)
        out = ProjectNode(rows, columns)
    except SchemaError:  # a column the ranked window cannot hold (a list)
        return None
    if any(out.schema.field(f.name) != f for f in node.schema if f.name in out.schema):
        return None  # (a type the output would not keep exactly)
    return Rewritten(out, f"{node.label()} of a stream with its own window {keep}({c}) -> {rows.label()}")


__all__ = ["rows_at_extreme"]
