"""Regular-expression patterns as users write them (Python ``re`` syntax), checked when a query
is defined: a pattern that does not parse, or that uses what the compiled matcher does not run
(backreferences, lookahead and lookbehind, conditionals, atomic groups, possessive quantifiers),
is refused at once with the construct named, not when the job starts."""

from __future__ import annotations

import re
import re._constants as _c
import re._parser as _parser

UNSUPPORTED = {
    _c.GROUPREF: "a backreference", _c.GROUPREF_EXISTS: "a conditional group (?(...)...)",
    _c.ASSERT: "a lookahead or lookbehind", _c.ASSERT_NOT: "a negative lookahead or lookbehind",
    _c.ATOMIC_GROUP: "an atomic group (?>...)", _c.POSSESSIVE_REPEAT: "a possessive quantifier",
}


def check_pattern(pattern: str, what: str) -> re.Pattern:
    """The compiled Python pattern, or ``ValueError`` naming what ``what`` (the call) cannot run."""
    if not isinstance(pattern, str):
        raise TypeError(f"{what}: the pattern must be a string, got {pattern!r}")
    try:
        compiled = re.compile(pattern)
    except re.error as e:
        raise ValueError(f"{what}: {pattern!r} is not a valid regular expression: {e}") from None
    for op in _opcodes(_parser.parse(pattern)):
        if op in UNSUPPORTED:
            raise ValueError(f"{what}: {pattern!r} uses {UNSUPPORTED[op]}, which compiled patterns do not support "
                             f"(use literal=True for plain text)")
    return compiled


def _opcodes(parsed):
    for op, av in parsed:
        yield op
        for item in (av if isinstance(av, (list, tuple)) else (av,)):
            if isinstance(item, _parser.SubPattern):
                yield from _opcodes(item)
            elif isinstance(item, (list, tuple)):
                for sub in item:
                    if isinstance(sub, _parser.SubPattern):
                        yield from _opcodes(sub)
