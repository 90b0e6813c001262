"""The table of logical plan rewrites: each rule looks at one plan node and either returns the
node that replaces it (with a note for ``grizzly explain``) or None. A rule is registered here by
its module (``register``); ``rewrites.rewrite`` applies them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..plan import PlanNode


@dataclass(frozen=True)
class Rewritten:
    """What a rule put in place of a node: the new subplan (whose inputs are the old node's
    subplans, not yet rewritten) and a one-line note saying what it did."""

    node: PlanNode
    note: str


# a rule: (node, the node's output columns its parent reads, None: all of them) -> Rewritten | None
Rule = Callable[[PlanNode, "frozenset[str] | None"], "Rewritten | None"]
RULES: list[tuple[str, Rule]] = []


def register(name: str):
    """Decorator: add a rule to ``RULES`` under ``name``."""
    def add(rule: Rule) -> Rule:
        RULES.append((name, rule))
        return rule
    return add


__all__ = ["RULES", "Rewritten", "Rule", "register"]
