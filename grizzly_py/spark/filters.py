"""Filter pushdown into a Spark DataFrame input.

Every row a task receives crosses from the JVM to Python, so a filter that Spark can evaluate in
its scan saves the transfer of the rows it drops, and of the columns only it reads. Conjuncts of
the filters directly above a batch DataFrame source are pushed into Spark when Spark's semantics
are exactly grizzly-py's: comparisons of an integer, string or bool column with a non-null literal
of its kind, and ``isin`` of such literals (null operands drop the row in both). Float
comparisons stay in compiled code (Spark orders NaN above every number and equates NaNs).
Remaining conjuncts stay in the compiled pipeline.

Rows dropped by pushed filters never reach a task, so ``filtered_records`` does not count them.
Streaming DataFrames get no pushdown: a filtered record still moves the watermark. Nor does a
query that reads its DataFrame twice (a union or join of two branches of it): the filters of one
branch do not hold for the other.
"""

from __future__ import annotations

from ..expressions import Alias, BinaryOp, Column, Expr, IsIn, Literal
from ..plan import FilterNode, PlanNode, SourceNode
from ..types import Schema
from .shipping import replace_inputs

_OPS = ("==", "!=", "<", "<=", ">", ">=")
_FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _conjuncts(e: Expr) -> list[Expr]:
    e = e.operand if isinstance(e, Alias) else e
    if isinstance(e, BinaryOp) and e.op == "&":
        return _conjuncts(e.left) + _conjuncts(e.right)
    return [e]


def _kind(schema: Schema, name: str) -> str | None:
    if name not in schema:
        return None
    t = schema.field(name).dtype
    if t.is_integer:
        return "int"
    if t.is_string:
        return "string"
    if t.is_bool:
        return "bool"
    return None  # floats (NaN), timestamps (units)


def _literal_ok(kind: str, value) -> bool:
    if value is None:
        return False
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    return isinstance(value, bool)


def spark_condition(e: Expr, schema: Schema):
    """The Spark Column of ``e`` where its semantics are grizzly-py's, else None."""
    from pyspark.sql import functions as F
    e = e.operand if isinstance(e, Alias) else e
    if isinstance(e, BinaryOp) and e.op in _OPS:
        left, right, op = e.left, e.right, e.op
        left = left.operand if isinstance(left, Alias) else left
        right = right.operand if isinstance(right, Alias) else right
        if isinstance(left, Literal) and isinstance(right, Column):
            left, right, op = right, left, _FLIPPED[op]
        if isinstance(left, Column) and isinstance(right, Literal):
            kind = _kind(schema, left.name)
            if kind is None or not _literal_ok(kind, right.value):
                return None
            c, v = F.col("`" + left.name.replace("`", "``") + "`"), F.lit(right.value)
            return {"==": c == v, "!=": c != v, "<": c < v, "<=": c <= v, ">": c > v, ">=": c >= v}[op]
        return None
    if isinstance(e, IsIn):
        operand = e.operand.operand if isinstance(e.operand, Alias) else e.operand
        if not isinstance(operand, Column):
            return None
        kind = _kind(schema, operand.name)
        if kind is None or not e.values or not all(_literal_ok(kind, v) for v in e.values):
            return None
        return F.col("`" + operand.name.replace("`", "``") + "`").isin(list(e.values))
    return None


def push_filters(root: PlanNode, source) -> tuple[PlanNode, list]:
    """``root`` without the pushable conjuncts of the filters right above ``source``'s node, and
    those conjuncts as Spark Columns (to apply to the DataFrame in order). A query that reads the
    source more than once (a union or join of two of its branches) keeps its filters: a filter
    of one branch would drop the rows of the other."""
    if _reads(root, source) != 1:
        return root, []
    pushed: list = []

    def walk(node: PlanNode) -> PlanNode:
        if isinstance(node, FilterNode) and _above_source(node, source):
            inner = walk(node.input)
            keep = []
            for c in _conjuncts(node.predicate):
                cond = spark_condition(c, node.input.schema)
                if cond is None:
                    keep.append(c)
                else:
                    pushed.append(cond)
            if not keep:
                return inner
            predicate = keep[0]
            for c in keep[1:]:
                predicate = predicate & c
            return FilterNode(inner, predicate)
        if isinstance(node, SourceNode):
            return node
        return replace_inputs(node, walk)

    new_root = walk(root)
    return new_root, pushed


def _above_source(node: PlanNode, source) -> bool:
    """``node`` is a filter with only filters between it and ``source``'s node."""
    while isinstance(node, FilterNode):
        node = node.input
    return isinstance(node, SourceNode) and node.source is source


def _reads(node: PlanNode, source) -> int:
    """How many times the query reads ``source`` (once per path from the root to its node)."""
    if isinstance(node, SourceNode):
        return int(node.source is source)
    return sum(_reads(i, source) for i in node.inputs)
