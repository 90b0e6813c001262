"""Sets of code points, and the exact sets that Python's ``re`` matches with one character.

A set is a tuple of disjoint, sorted, inclusive ``(lo, hi)`` ranges over 0..0x10FFFF. The
sets of the character atoms of a parsed pattern (a literal, ``.``, a class ``[...]``, ``\\d``,
``\\w``, ``\\s`` and their negations) are computed so that they equal what ``re`` matches:

- the Unicode categories (``\\d \\w \\s``, and the word characters of ``\\b``) are read from
  ``re`` itself, by scanning a string of every code point once per process;
- an atom under ``IGNORECASE`` is its case-sensitive set, except on the code points where case
  can matter at all (cased characters and the lowercase images of characters, under 3,000),
  whose membership ``re`` decides: the atom is written back as a pattern and run over them.
  Outside those, ``re``'s case-insensitive tests reduce to the case-sensitive ones.
"""

from __future__ import annotations

import re
from functools import lru_cache

import _sre
from re import _constants as sre

MAX_CODE_POINT = 0x10FFFF
Ranges = tuple  # tuple[tuple[int, int], ...]

EVERYTHING: Ranges = ((0, MAX_CODE_POINT),)
NEWLINE: Ranges = ((10, 10),)


def normalize(ranges) -> Ranges:
    """Sorted, merged ranges (adjacent and overlapping ones joined)."""
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


def union(*sets: Ranges) -> Ranges:
    return normalize(r for s in sets for r in s)


def complement(ranges: Ranges) -> Ranges:
    out, nxt = [], 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CODE_POINT:
        out.append((nxt, MAX_CODE_POINT))
    return tuple(out)


def difference(a: Ranges, b: Ranges) -> Ranges:
    return complement(union(complement(a), b))


def of_code_points(points) -> Ranges:
    return normalize((p, p) for p in points)


def contains(ranges: Ranges, cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in ranges)


@lru_cache(maxsize=1)
def _all_characters() -> str:
    return "".join(map(chr, range(MAX_CODE_POINT + 1)))


def _runs(pattern: str) -> Ranges:
    """The code points a one-character ``pattern`` matches, as the runs ``pattern+`` finds in
    the string of every code point in order."""
    return tuple((m.start(), m.end() - 1) for m in re.finditer(f"(?:{pattern})+", _all_characters(), re.DOTALL))


_CATEGORY_PATTERNS = {
    sre.CATEGORY_DIGIT: r"\d", sre.CATEGORY_NOT_DIGIT: r"\D",
    sre.CATEGORY_SPACE: r"\s", sre.CATEGORY_NOT_SPACE: r"\S",
    sre.CATEGORY_WORD: r"\w", sre.CATEGORY_NOT_WORD: r"\W",
}


@lru_cache(maxsize=None)
def category(code, ascii: bool) -> Ranges:
    """The set of a ``CATEGORY_*`` code of the parser (``\\d`` ...), Unicode or ASCII."""
    pattern = _CATEGORY_PATTERNS.get(code)
    if pattern is None:
        raise KeyError(code)
    return _runs(f"(?a:{pattern})" if ascii else pattern)


def word(ascii: bool) -> Ranges:
    """The word characters of ``\\b`` and ``\\B`` (``re`` tests them as ``\\w``)."""
    return category(sre.CATEGORY_WORD, ascii)


@lru_cache(maxsize=1)
def _case_sensitive_points() -> str:
    """Every code point on which an ``IGNORECASE`` test can differ from the case-sensitive one:
    the cased characters and the lowercase image of every character (``re`` compares
    lowercase forms), as one string."""
    points = set()
    for c in range(MAX_CODE_POINT + 1):
        lower = _sre.unicode_tolower(c)
        if lower != c or _sre.unicode_iscased(c):
            points.add(c)
            points.add(lower)
    return "".join(map(chr, sorted(points)))


def _escape(cp: int) -> str:
    return "\\U%08x" % cp


def atom_pattern(op, av) -> str:
    """A one-character atom of the parse tree written back as pattern text (for ``re`` to
    decide its membership on the case-sensitive code points)."""
    if op is sre.LITERAL:
        return _escape(av)
    if op is sre.NOT_LITERAL:
        return "[^" + _escape(av) + "]"
    if op is sre.ANY:
        return "."
    parts = []
    for item_op, item_av in av:
        if item_op is sre.NEGATE:
            parts.insert(0, "^")
        elif item_op is sre.LITERAL:
            parts.append(_escape(item_av))
        elif item_op is sre.RANGE:
            parts.append(_escape(item_av[0]) + "-" + _escape(item_av[1]))
        elif item_op is sre.CATEGORY:
            parts.append(_CATEGORY_PATTERNS[item_av])
        else:
            raise KeyError(item_op)
    return "[" + "".join(parts) + "]"


def atom(op, av, *, ignorecase: bool, ascii: bool, dotall: bool) -> Ranges:
    """The code points the atom ``(op, av)`` of the parse tree matches under the given flags."""
    exact = _case_sensitive_atom(op, av, ascii, dotall)
    if not ignorecase:
        return exact
    flags = re.IGNORECASE | (re.ASCII if ascii else 0) | (re.DOTALL if dotall else 0)
    points = _case_sensitive_points()
    decided = of_code_points(map(ord, points))
    matched = of_code_points(ord(m.group()) for m in re.finditer(atom_pattern(op, av), points, flags))
    return union(difference(exact, decided), matched)


def _case_sensitive_atom(op, av, ascii: bool, dotall: bool) -> Ranges:
    if op is sre.LITERAL:
        return ((av, av),)
    if op is sre.NOT_LITERAL:
        return complement(((av, av),))
    if op is sre.ANY:
        return EVERYTHING if dotall else complement(NEWLINE)
    negate, parts = False, []
    for item_op, item_av in av:
        if item_op is sre.NEGATE:
            negate = True
        elif item_op is sre.LITERAL:
            parts.append(((item_av, item_av),))
        elif item_op is sre.RANGE:
            parts.append(((item_av[0], item_av[1]),))
        elif item_op is sre.CATEGORY:
            parts.append(category(item_av, ascii))
        else:
            raise KeyError(item_op)
    members = union(*parts)
    return complement(members) if negate else members
