"""A pattern in Python's syntax, parsed by ``re._parser``, as a Thompson NFA whose epsilon
edges are ordered as ``re``'s backtracking tries them.

Nodes (tuples, the first item is the kind):

- ``(CHAR, set, next)``: consume one code point of ``set`` (a ``charsets`` range tuple);
- ``(SPLIT, alternatives)``: try each target in order (alternation, and the choice of a
  quantifier: greedy tries the body first, lazy the exit);
- ``(SAVE, tag, next)``: record the position in capture register ``tag`` (group ``g`` has tags
  ``2g`` and ``2g + 1``; tag 0, the match start, is saved by the start node);
- ``(ASSERT, assertion, next)``: an empty-width test (``Assertion``);
- ``(ENTER, loop, next)``, ``(ITER, loop, next)``, ``(UNTIL, loop, greedy, body, exit)``: a
  repetition whose body can match the empty string. ``re`` allows another optional iteration
  only if the previous optional one consumed something (its "zero-width match protection",
  ``last_ptr`` in ``_sre``): ``ITER`` marks that an iteration of ``loop`` began at the current
  position, ``UNTIL`` then takes the exit only, and ``ENTER`` (the repetition entered anew)
  clears the mark. The marks live in the closure's context (``dfa.py``), never in the NFA;
- ``(MATCH,)``.

Bounded repetitions are unrolled (``x{2,4}`` is two copies and two nested optional ones), so
no node counts. The caller has refused unsupported constructs (``functions/patterns.py``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from re import _constants as sre

from ...functions.patterns import RegexError
from . import charsets

CHAR, SPLIT, SAVE, ASSERT, ENTER, ITER, UNTIL, MATCH = range(8)

MAX_NODES = 20_000


def too_complex(pattern: str, why: str) -> RegexError:
    return RegexError(f"pattern {pattern!r} is too complex to compile to an automaton: {why} (simplify it, "
                      "e.g. smaller repetition counts)")


class Assertion(enum.Enum):
    """Empty-width tests, as ``re`` defines them for str patterns."""

    BEGIN = "\\A (or ^)"              # at position 0
    BEGIN_LINE = "^ (MULTILINE)"      # at 0 or after \n
    END = "\\Z"                       # at the end
    END_OR_FINAL_NEWLINE = "$"        # at the end, or before a \n that is the last character
    END_LINE = "$ (MULTILINE)"        # at the end or before \n
    WORD_BOUNDARY = "\\b"             # Unicode word characters; never in an empty string
    NOT_WORD_BOUNDARY = "\\B"         # Unicode word characters; never in an empty string
    ASCII_WORD_BOUNDARY = "\\b (ASCII)"
    ASCII_NOT_WORD_BOUNDARY = "\\B (ASCII)"


_TYPE_FLAGS = sre.SRE_FLAG_ASCII | sre.SRE_FLAG_LOCALE | sre.SRE_FLAG_UNICODE


@dataclass(frozen=True)
class Nfa:
    nodes: tuple
    start: int              # SAVE(0) in front of the pattern; nothing else leads to it
    groups: int
    loops: int              # loops whose body can match empty (ids 0..loops-1)
    assertions: frozenset   # the Assertion kinds used
    anchored: bool          # every match begins with \A (or ^ without MULTILINE)


def build(parsed, pattern: str) -> Nfa:
    """The NFA of ``parsed`` (``re._parser.parse``'s result for ``pattern``)."""
    groups = parsed.state.groups - 1
    b = _Builder(pattern, reverse=False)
    match = b.add((MATCH,))
    start = b.add((SAVE, 0, b.sequence(parsed, parsed.state.flags, match)))
    nodes = tuple(b.nodes)
    return Nfa(nodes, start, groups, b.loops, frozenset(b.assertions), _anchored(nodes, start))


def build_reverse(parsed, pattern: str) -> Nfa:
    """An NFA of the reversed language (read from a match's end back to its start): no captures,
    no priorities (it only tells whether a span matches), assertions as they are (their two
    sides are known when a step reads the character before the position)."""
    b = _Builder(pattern, reverse=True)
    match = b.add((MATCH,))
    start = b.sequence(parsed, parsed.state.flags, match)
    return Nfa(tuple(b.nodes), start, 0, 0, frozenset(b.assertions), False)


def nullable(items) -> bool:
    """Whether the parsed sequence ``items`` can match the empty string (assertions assumed true)."""
    return all(_item_nullable(op, av) for op, av in items)


def _item_nullable(op, av) -> bool:
    if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
        return False
    if op is sre.BRANCH:
        return any(nullable(alt) for alt in av[1])
    if op is sre.SUBPATTERN:
        return nullable(av[3])
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
        return av[0] == 0 or nullable(av[2])
    return True  # AT (unsupported constructs are rejected before this matters)


def combine_flags(flags: int, add: int, remove: int) -> int:
    """The flags inside ``(?add-remove:...)``, as ``re._compiler`` combines them."""
    if add & _TYPE_FLAGS:
        flags &= ~_TYPE_FLAGS
    return (flags | add) & ~remove


class _Builder:
    def __init__(self, pattern: str, reverse: bool):
        self.pattern = pattern
        self.reverse = reverse
        self.nodes: list = []
        self.loops = 0
        self.assertions: set = set()

    def add(self, node) -> int:
        if len(self.nodes) >= MAX_NODES:
            raise too_complex(self.pattern, f"it needs more than {MAX_NODES} NFA states")
        self.nodes.append(node)
        return len(self.nodes) - 1

    def reject(self, what: str):
        raise RegexError(f"pattern {self.pattern!r} uses {what}, which compiled regular expressions do "
                         "not support")

    def sequence(self, items, flags: int, nxt: int) -> int:
        # built from the last item read: the last item of the pattern, or its first when reversed
        for op, av in (list(items) if self.reverse else reversed(list(items))):
            nxt = self.item(op, av, flags, nxt)
        return nxt

    def item(self, op, av, flags: int, nxt: int) -> int:
        if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
            chars = charsets.atom(op, av, ignorecase=bool(flags & sre.SRE_FLAG_IGNORECASE),
                                  ascii=not flags & sre.SRE_FLAG_UNICODE, dotall=bool(flags & sre.SRE_FLAG_DOTALL))
            return self.add((CHAR, chars, nxt))
        if op is sre.BRANCH:
            return self.add((SPLIT, tuple(self.sequence(alt, flags, nxt) for alt in av[1])))
        if op is sre.SUBPATTERN:
            group, add, remove, body = av
            inner = combine_flags(flags, add, remove)
            if group is None or self.reverse:
                return self.sequence(body, inner, nxt)
            end = self.add((SAVE, 2 * group + 1, nxt))
            return self.add((SAVE, 2 * group, self.sequence(body, inner, end)))
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            return self.repeat(*av, greedy=op is sre.MAX_REPEAT, flags=flags, nxt=nxt)
        if op is sre.AT:
            return self.assertion(av, flags, nxt)
        self.reject(f"the construct {op}")

    def assertion(self, at, flags: int, nxt: int) -> int:
        multiline = bool(flags & sre.SRE_FLAG_MULTILINE)
        ascii = not flags & sre.SRE_FLAG_UNICODE
        kind = {
            sre.AT_BEGINNING: Assertion.BEGIN_LINE if multiline else Assertion.BEGIN,
            sre.AT_BEGINNING_STRING: Assertion.BEGIN,
            sre.AT_END: Assertion.END_LINE if multiline else Assertion.END_OR_FINAL_NEWLINE,
            sre.AT_END_STRING: Assertion.END,
            sre.AT_BOUNDARY: Assertion.ASCII_WORD_BOUNDARY if ascii else Assertion.WORD_BOUNDARY,
            sre.AT_NON_BOUNDARY: Assertion.ASCII_NOT_WORD_BOUNDARY if ascii else Assertion.NOT_WORD_BOUNDARY,
        }.get(at)
        if kind is None:
            self.reject(f"the assertion {at}")
        self.assertions.add(kind)
        return self.add((ASSERT, kind, nxt))

    def repeat(self, lo: int, hi: int, body, *, greedy: bool, flags: int, nxt: int) -> int:
        """``body{lo,hi}``: ``lo`` copies, then the optional part (a loop, or ``hi - lo`` nested
        optional copies). Only a body that can match empty needs ``re``'s empty-iteration rule."""
        guarded = nullable(body) and not self.reverse
        loop = None
        if guarded:
            loop, self.loops = self.loops, self.loops + 1

        def choice(body_entry: int, exit: int) -> tuple:
            return (body_entry, exit) if greedy else (exit, body_entry)

        if hi == sre.MAXREPEAT:
            decide = self.add(None)  # patched below: the body loops back to it
            entry = self.sequence(body, flags, decide)
            if guarded:
                self.nodes[decide] = (UNTIL, loop, greedy, self.add((ITER, loop, entry)), nxt)
            else:
                self.nodes[decide] = (SPLIT, choice(entry, nxt))
            optional = decide
        else:
            optional = nxt  # after the last optional copy: the exit
            for _ in range(hi - lo):
                entry = self.sequence(body, flags, optional)
                if guarded:
                    optional = self.add((UNTIL, loop, greedy, self.add((ITER, loop, entry)), nxt))
                else:
                    optional = self.add((SPLIT, choice(entry, nxt)))
        if guarded and hi != lo:
            optional = self.add((ENTER, loop, optional))
        for _ in range(lo):
            optional = self.sequence(body, flags, optional)
        return optional


def _anchored(nodes, start: int) -> bool:
    """Whether every path from ``start`` passes ``Assertion.BEGIN`` before consuming or matching."""
    seen, stack = set(), [start]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        node = nodes[n]
        kind = node[0]
        if kind in (CHAR, MATCH):
            return False
        if kind == ASSERT and node[1] is Assertion.BEGIN:
            continue
        stack.extend(epsilon_targets(node))
    return True


def epsilon_targets(node) -> tuple:
    """The nodes an epsilon node leads to (both ways of a loop decision)."""
    kind = node[0]
    if kind == SPLIT:
        return node[1]
    if kind == UNTIL:
        return (node[3], node[4])
    if kind in (SAVE, ASSERT, ENTER, ITER):
        return (node[2],)
    return ()
