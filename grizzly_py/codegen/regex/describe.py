"""A compiled pattern's search automaton as text: its input classes (the code points each
stands for) and, per state, where each class leads. ``comment_block`` puts it at the head of the
pattern's IR as ``;`` comments (every line through ``ir_text.comment``), so ``grizzly explain
--ir`` shows it beside the code that runs it.

Notation: ``s2 (start)`` is a first state (one per kind of position before it, as far as the
pattern's assertions ask: the start of the string, after ``\\n``, after a word character...);
``c1 c4 -> s3`` reads a code point of class 1 or 4 and goes to state 3; ``!`` after the target:
a match ends before that code point; ``end: match`` a match ends at the end of the string.
States 0 (no match is possible any more) and 1 (a match was found and nothing can extend it)
stop the loop.
"""

from __future__ import annotations

from .. import ir_text
from .dfa import Classes

MAX_LISTED_STATES = 24  # the rest are counted, not listed
MAX_LISTED_RANGES = 12  # per input class


def comment_block(regex) -> str:
    return "\n".join("; " + ir_text.comment(line) for line in lines(regex))


def lines(regex) -> list[str]:
    d, c = regex.dfa, regex.classes
    mode = "bytes (code points above ASCII are one class)" if c.non_ascii is not None else "code points (UTF-8 decoded)"
    out = [f"regular expression /{regex.pattern}/",
           f"search automaton: {d.states} states over {c.count} input classes; reads {mode}"]
    out += [f"  c{k} = {text}" for k, text in enumerate(class_texts(c))]
    starts = {s: n for n, s in enumerate(d.init)}
    for s in range(2, min(d.states, 2 + MAX_LISTED_STATES)):
        row = d.trans[s * c.count:(s + 1) * c.count]
        targets: dict = {}
        for k, (nxt, match, _empty) in enumerate(row):
            if k != c.continuation:
                targets.setdefault((nxt, match), []).append(f"c{k}")
        moves = "; ".join(" ".join(ks) + f" -> s{nxt}" + ("!" if match else "")
                          for (nxt, match), ks in sorted(targets.items()))
        end = "; end: match" if d.final[s][0] else ""
        out.append(f"  s{s}{' (start)' if s in starts else ''}: {moves}{end}")
    if d.states > 2 + MAX_LISTED_STATES:
        out.append(f"  ... {d.states - 2 - MAX_LISTED_STATES} more states")
    return out


def class_texts(c: Classes) -> list[str]:
    """Per input class, the code points it stands for, as ranges."""
    ranges: list[list] = [[] for _ in range(c.count)]
    for cp, k in enumerate(c.ascii):
        _extend(ranges[k], cp, cp)
    bounds = list(c.starts) + [0x110000]
    for lo, hi, k in zip(bounds, bounds[1:], c.of_interval):
        _extend(ranges[k], lo, hi - 1)
    texts = [_ranges(r) for r in ranges]
    if c.final_newline is not None:
        texts[c.final_newline] = "a \\n that ends the string"
    if c.continuation is not None:
        texts[c.continuation] = "UTF-8 continuation bytes (the state stays)"
    return texts


def _extend(ranges: list, lo: int, hi: int) -> None:
    if ranges and ranges[-1][1] + 1 == lo:
        ranges[-1][1] = hi
    else:
        ranges.append([lo, hi])


def _ranges(ranges: list) -> str:
    listed = " ".join(_range(lo, hi) for lo, hi in ranges[:MAX_LISTED_RANGES])
    if len(ranges) > MAX_LISTED_RANGES:
        points = sum(hi - lo + 1 for lo, hi in ranges)
        listed += f" ... ({len(ranges)} ranges, {points} code points)"
    return f"[{listed}]"


def _char(cp: int) -> str:
    return chr(cp) if 0x21 <= cp < 0x7F and chr(cp) not in "[]-\\" else f"U+{cp:04X}"


def _range(lo: int, hi: int) -> str:
    return _char(lo) if lo == hi else f"{_char(lo)}-{_char(hi)}"
