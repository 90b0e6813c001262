"""Regular-expression patterns as users write them (Python ``re`` syntax), checked when a query
is defined: a pattern that does not parse, or that uses what the compiled matcher does not run
(backreferences, lookahead and lookbehind, conditionals, atomic groups, possessive quantifiers),
is refused at once with the construct named, not when the job starts.

This module is the one place that decides which constructs are supported: the compiler of
patterns (``codegen/regex``) asks ``unsupported_construct`` too, and raises the same
``RegexError``. What it cannot know here, an automaton beyond its size limits, is refused when
the job's code is generated, with a ``RegexError`` as well.
"""

from __future__ import annotations

import re
import re._constants as _c
import re._parser as _parser

_UNSUPPORTED = {
    _c.GROUPREF: "a backreference (\\1, (?P=name))",
    _c.GROUPREF_EXISTS: "a conditional group ((?(1)yes|no))",
    _c.ATOMIC_GROUP: "an atomic group ((?>...))",
    _c.POSSESSIVE_REPEAT: "a possessive quantifier (*+, ++, ?+, {m,n}+)",
}


class RegexError(ValueError):
    """A pattern that is invalid, uses an unsupported construct, or is too complex to compile to
    an automaton."""


def parse(pattern: str):
    """``re``'s parse tree of ``pattern``; ``RegexError`` where ``re`` refuses the pattern."""
    if not isinstance(pattern, str):
        raise TypeError(f"a pattern must be a string, got {pattern!r}")
    try:
        re.compile(pattern)
        return _parser.parse(pattern, 0)
    except (re.error, OverflowError, RecursionError) as e:
        raise RegexError(f"{pattern!r} is not a valid regular expression: {e}") from None


def unsupported_construct(parsed) -> str | None:
    """What the parse tree ``parsed`` uses that compiled patterns do not run, in words, or None."""
    for op, av in parsed:
        if op in (_c.ASSERT, _c.ASSERT_NOT):
            ahead = av[0] >= 0
            return {(_c.ASSERT, True): "a lookahead (?=...)", (_c.ASSERT, False): "a lookbehind (?<=...)",
                    (_c.ASSERT_NOT, True): "a negative lookahead (?!...)",
                    (_c.ASSERT_NOT, False): "a negative lookbehind (?<!...)"}[op, ahead]
        if op in _UNSUPPORTED:
            return _UNSUPPORTED[op]
        for sub in _subpatterns(op, av):
            found = unsupported_construct(sub)
            if found:
                return found
    return None


def _subpatterns(op, av):
    if op is _c.SUBPATTERN:
        return [av[3]]
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
        return [av[2]]
    if op is _c.BRANCH:
        return list(av[1])
    return []


def check_pattern(pattern: str, what: str) -> re.Pattern:
    """The compiled Python pattern, or ``RegexError`` (a ``ValueError``) naming what ``what``
    (the call) cannot run."""
    if not isinstance(pattern, str):
        raise TypeError(f"{what}: the pattern must be a string, got {pattern!r}")
    try:
        construct = unsupported_construct(parse(pattern))
    except RegexError as e:
        raise RegexError(f"{what}: {e}") from None
    if construct:
        raise RegexError(f"{what}: {pattern!r} uses {construct}, which compiled patterns do not support "
                         f"(use literal=True for plain text)")
    return re.compile(pattern)
