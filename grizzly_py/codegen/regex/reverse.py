"""The reverse automaton that finds where a match starts once the search knows where it ends
(RE2's approach): the smallest position ``p`` at or after the search's start such that the span
``[p, end)`` matches is the leftmost match's start, since a match starting before it would have
been found first. Only the language matters here (no priorities, no captures), so the states are
plain sets of reverse-NFA nodes (``nfa.build_reverse``), read from the end towards the start.

A state is ``(nodes, lookahead)``: the nodes ready at position ``p`` and what the code point at
``p`` is (the end of the input, ``\\n``, the final ``\\n``, a word character), as far as the
pattern's assertions ask. A step reads the class of the code point before ``p`` (or "none",
at position 0), so every assertion at ``p`` is decided; it records whether the span starting at
``p`` matches, and moves the nodes that accept the class to position ``p - 1``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .dfa import MAX_STATES, MAX_TABLE, MAX_WORK, Classes, holds, lookahead_tracker, node_classes
from .nfa import ASSERT, CHAR, MATCH, Nfa, epsilon_targets, too_complex



@dataclass(frozen=True)
class ReverseDfa:
    states: int           # state 0: no node left
    trans: tuple          # states x (classes + 1; the last: position 0): (next state, the span from here matches)
    init: tuple           # first state per lookahead index of the code point at the end (0: the end of the input)
    lookahead_of: tuple   # per class: its lookahead index


def build(nfa: Nfa, pattern: str, classes: Classes) -> ReverseDfa:
    accepts = node_classes(nfa, classes)
    tracked = lookahead_tracker(nfa.assertions)

    lookaheads = {tracked(classes.lookahead(None)): 0}
    lookahead_of = tuple(0 if c == classes.continuation else lookaheads.setdefault(tracked(classes.lookahead(c)),
                                                                                     len(lookaheads))
                         for c in range(classes.count))
    lookahead_tuples = [t for t, _ in sorted(lookaheads.items(), key=lambda kv: kv[1])]
    ids: dict = {}
    keys: list = []

    def state(key) -> int:
        nodes, la = key
        if not nodes:
            key = (frozenset(), 0)
        found = ids.get(key)
        if found is None:
            if len(keys) >= MAX_STATES or len(keys) * (classes.count + 1) >= MAX_TABLE:
                raise too_complex(pattern, f"its reverse automaton needs more than {MAX_STATES} states")
            found = ids[key] = len(keys)
            keys.append(key)
        return found

    work = 0

    def closure(nodes, lb: tuple, la: tuple):
        nonlocal work
        seen, stack, consuming, match = set(), list(nodes), [], False
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            work += 1
            node = nfa.nodes[n]
            if node[0] == CHAR:
                consuming.append(n)
            elif node[0] == MATCH:
                match = True
            elif node[0] != ASSERT or holds(node[1], lb, la):
                stack.extend(epsilon_targets(node))
        if work > MAX_WORK:
            raise too_complex(pattern, f"building its reverse automaton takes more than {MAX_WORK} steps")
        return consuming, match

    state((frozenset(), 0))
    init = tuple(state((frozenset([nfa.start]), la)) for la in range(len(lookahead_tuples)))
    trans = []
    s = 0
    while s < len(keys):
        nodes, la = keys[s]
        for c in list(range(classes.count)) + [None]:
            if c is not None and c == classes.continuation:
                trans.append((0, False))
                continue
            consuming, match = closure(nodes, classes.lookbehind(c), lookahead_tuples[la])
            if c is None:
                trans.append((0, match))
                continue
            moved = frozenset(nfa.nodes[n][2] for n in consuming if c in accepts[n])
            trans.append((state((moved, lookahead_of[c])), match))
        s += 1
    return ReverseDfa(len(keys), tuple(trans), init, lookahead_of)
