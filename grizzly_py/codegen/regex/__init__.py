"""Regular expressions compiled to native code, with Python's ``re`` semantics.

Pipeline: ``re._parser`` parses the pattern (exactly Python's syntax and errors;
``functions/patterns.py`` refuses what is not supported) -> ``nfa`` (a Thompson NFA with
priority-ordered choices and ``re``'s rule for empty loop iterations) -> ``dfa`` (ordered-subset
construction over code-point classes, leftmost-first as backtracking) -> ``emit`` (LLVM IR:
tables as internal constants, the matching loops, vector scans for a required first byte or
literal). A match's start comes from ``reverse`` (a set automaton of the reversed pattern run
back from the match's end); a capture group from a second, anchored ``dfa`` with two registers
per thread and register operations per transition (a tagged DFA) replayed over the match.
``describe`` writes an automaton as text (for ``grizzly explain --ir``).

``compile_pattern(p)`` returns a ``Regex``; its ``emit_*`` methods the IR of its functions (see
``emit``). Matches are those of ``re.search`` / ``re.finditer`` on the decoded string, with
offsets in UTF-8 bytes. Unsupported constructs and a pattern whose automaton exceeds the size
limits (``dfa.MAX_STATES`` ...) raise ``RegexError`` (a ``ValueError``) saying why.
"""

from __future__ import annotations

import re
from functools import cached_property, lru_cache

from ...functions.patterns import RegexError, parse, unsupported_construct
from . import dfa as _dfa
from . import emit as _emit
from . import literals, nfa as _nfa, reverse as _reverse

__all__ = ["Regex", "RegexError", "compile_pattern"]


class Regex:
    """A compiled pattern. ``python``: the same pattern as a ``re.Pattern`` (the reference
    evaluator's); ``groups``: its number of capture groups; ``literal``: the text it matches when
    it is a plain case-sensitive literal (a caller may use a substring search instead). The
    automata are built when first asked for: the search's at once, the others as the functions
    that need them are emitted."""

    def __init__(self, pattern: str, parsed):
        self.pattern = pattern
        self.python = re.compile(pattern)
        self.groups = self.python.groups
        self.literal = literals.plain_literal(parsed)
        self.required, self.required_leading = literals.required_literal(parsed)  # a literal every match contains
        self._parsed = parsed
        self.nfa = _nfa.build(parsed, pattern)
        self.classes = _dfa.input_classes(self.nfa, pattern)
        self.first = _dfa.first_code_points(self.nfa)  # code points a match begins with (None: can be empty)
        self.dfa = _dfa.build(self.nfa, pattern, self.classes)  # the search: unanchored, leftmost-first

    def __repr__(self):
        return f"Regex({self.pattern!r})"

    @cached_property
    def reverse(self) -> _reverse.ReverseDfa:
        """From a match's end back to its start."""
        return _reverse.build(_nfa.build_reverse(self._parsed, self.pattern), self.pattern, self.classes)

    def captures(self, group: int) -> _dfa.Dfa:
        """Replays a match from its start, with the registers of capture group ``group`` (>= 1)."""
        return _captures(self, group)

    def emit_search(self, prefix: str) -> str:
        """IR defining ``internal`` functions ``@{prefix}_search`` and ``@{prefix}_count``, their
        helpers and tables; ``prefix`` must be a generated identifier. The pattern appears only
        in comments, through ``ir_text``."""
        return _emit.search_module(self, prefix)

    def emit_find(self, prefix: str) -> str:
        """IR defining ``@{prefix}_find`` (after ``emit_search``'s, with the same prefix)."""
        return _emit.find_module(self, prefix)

    def emit_group(self, prefix: str, group: int) -> str:
        """IR defining ``@{prefix}_group{group}`` (after ``emit_find``'s, with the same prefix)."""
        return _emit.group_module(self, prefix, group)


@lru_cache(maxsize=64)
def _captures(regex: Regex, group: int) -> _dfa.Dfa:
    if not 1 <= group <= regex.groups:
        raise ValueError(f"{regex.pattern!r} has no capture group {group}")
    return _dfa.build(regex.nfa, regex.pattern, regex.classes, anchored=True, tags=(2 * group, 2 * group + 1))


@lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> Regex:
    """Compile ``pattern`` (Python ``re`` syntax, str) or raise ``RegexError``."""
    parsed = parse(pattern)
    construct = unsupported_construct(parsed)
    if construct:
        raise RegexError(f"{pattern!r} uses {construct}, which compiled patterns do not support")
    return Regex(pattern, parsed)
