"""Literal facts of a parsed pattern, for cheaper paths: whether the whole pattern is a plain
literal, and the longest literal that every match contains."""

from __future__ import annotations

from re import _constants as sre

from .nfa import combine_flags


def plain_literal(parsed) -> str | None:
    """The string the pattern matches when it is nothing but literal characters (case-sensitive)."""
    if parsed.state.flags & sre.SRE_FLAG_IGNORECASE:
        return None
    if any(op is not sre.LITERAL for op, _ in parsed):
        return None
    return "".join(chr(av) for _, av in parsed)


def required_literal(parsed) -> tuple[bytes | None, bool]:
    """The longest case-sensitive literal (UTF-8) that every match contains, and whether every
    match begins with it; (None, False) if there is none."""
    runs: list = []
    _collect(parsed, parsed.state.flags, True, runs)
    if not runs:
        return None, False
    text, leading = max(runs, key=lambda run: len(run[0].encode()))
    return text.encode(), leading


def _collect(items, flags: int, at_start: bool, runs: list) -> bool:
    """Append the literal runs that a match of the sequence ``items`` must contain, each with
    whether it begins the match; returns whether nothing was consumed yet after ``items``."""
    current: list = []
    leading = False

    def flush():
        if current:
            runs.append(("".join(current), leading))
            current.clear()

    for op, av in items:
        if op is sre.LITERAL and not flags & sre.SRE_FLAG_IGNORECASE:
            if not current:
                leading = at_start
            current.append(chr(av))
            at_start = False
            continue
        flush()
        if op is sre.SUBPATTERN:
            at_start = _collect(av[3], combine_flags(flags, av[1], av[2]), at_start, runs)
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and av[0] >= 1:
            _collect(av[2], flags, at_start, runs)
            at_start = False
        elif op is not sre.AT:
            at_start = False
    flush()
    return at_start
