"""Logical plan rewrites: the plan the embedded engine runs in place of the query's own, with
the same results (rows, their order, their event times) and only faster. Each rule is one module
that registers itself in ``registry.RULES``:

- ``extreme_join``: a window join of a stream with its own window maximum (minimum) on that
  column becomes one window operator keeping the rows at the extreme (Nexmark Q7, Q5).

``rewrite(root)`` walks the plan from the root and offers every node to the rules before its
inputs (a rule sees the node as the query built it, and which of its columns the parent reads);
a subplan reached twice stays shared. Spark's planner rewrites as the engine does (its job notes
name each rewrite); the reference evaluator runs the plan as written; ``grizzly explain`` shows
the rewritten plan and the notes. ``disabled()`` (tests) or the
environment variable ``GRIZZLY_REWRITES=off`` turn the rewrites off.
"""

from __future__ import annotations

from ..plan import PlanNode, ProjectNode, replace_inputs
from ..switches import Switch
from .extreme_join import rows_at_extreme  # (importing it registers the rule)
from .registry import RULES, Rewritten

switch = Switch("GRIZZLY_REWRITES")
# within the block, ``rewrite`` leaves every plan as it is (to compare against the rewrite)
disabled, enabled = switch.disabled, switch.enabled


def rewrite(root: PlanNode) -> tuple[PlanNode, tuple[str, ...]]:
    """``root`` with every rule applied where it matches, and the rules' notes (none: ``root``
    itself)."""
    if not enabled():
        return root, ()
    notes: list[str] = []
    done: dict[tuple, PlanNode] = {}

    def walk(node: PlanNode, used: frozenset[str] | None) -> PlanNode:
        memo = (id(node), used)
        if memo not in done:
            done[memo] = visit(node, used)
        return done[memo]

    def visit(node: PlanNode, used: frozenset[str] | None) -> PlanNode:
        for _, rule in RULES:
            found: Rewritten | None = rule(node, used)
            if found is not None:
                notes.append(found.note)
                return walk(found.node, used)
        # a projection reads only some of its input's columns; other parents read them all
        reads = frozenset(c for _, e in node.columns for c in e.columns()) if isinstance(node, ProjectNode) else None
        inputs = [walk(i, reads) for i in node.inputs]
        if all(new is old for new, old in zip(inputs, node.inputs)):
            return node
        return replace_inputs(node, lambda i: walk(i, reads))

    return walk(root, None), tuple(notes)


__all__ = ["RULES", "Rewritten", "disabled", "enabled", "rewrite", "rows_at_extreme", "switch"]
