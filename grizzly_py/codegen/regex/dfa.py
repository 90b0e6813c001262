"""The NFA (``nfa.py``) to a deterministic automaton over code-point classes whose states are
*ordered* lists of NFA threads (RE2's construction for leftmost-first matching), with the
capture-register operations of every transition (a tagged DFA).

Input classes. The code points are split into classes that no character set of the pattern
(nor ``\\n`` or the word characters, where an assertion needs them) tells apart. When every
code point above ASCII falls in one class, the automaton reads bytes: a lead byte stands for its
code point and the continuation bytes form a class of their own that leaves the state as it is.
Otherwise the generated loop decodes UTF-8 and looks the code point up (``Classes``).

Steps. A state is ``(threads, lookbehind, matched, no_empty)``: the NFA nodes that are ready to
be closed at the current position, highest priority first; what the previous code point was
(position 0, ``\\n``, a word character), as far as the pattern's assertions ask; whether a match
was already seen; and, for a search's first state only, that an empty match here does not count
(``re``'s rule after an empty match). A step reads the next code point's class, so the closure
knows both sides of the position and decides every assertion exactly: the threads are closed in
order (depth first, alternatives in priority order, each (node, loop marks) once, the first
``MATCH`` cutting off all lower-priority threads), the threads whose node accepts the class move
on, and, while nothing has matched, a fresh thread that starts a match at the next position is
appended last (the unanchored search; earlier starts come first, so the leftmost match wins).
The match a step records ends at the position before the class; the last one recorded is the
leftmost-first match, Python's.

Registers. The automaton that reads a capture group tracks the group's two ``nfa`` tags (its
start and end) in two registers per thread. Every transition lists, for each thread of the next
state, the thread of this state it came from and which registers its closure path set at this
position; and for a recorded match, the same for the matching thread. Running them gives the
group of the highest-priority path: what ``re``'s backtracking reports.

Size. A pattern whose automaton would exceed ``MAX_STATES`` states, ``MAX_TABLE`` transitions,
``MAX_OPS`` register operations or ``MAX_WORK`` closure steps (its construction time) raises
``RegexError``: the automaton is built whole, when the query's code is generated.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from . import charsets
from .nfa import ASSERT, CHAR, ENTER, ITER, MATCH, SAVE, SPLIT, UNTIL, Assertion, Nfa, epsilon_targets, too_complex

MAX_STATES = 4096
MAX_TABLE = 1 << 18  # transitions (states x classes): the tables' size in the IR
MAX_OPS = 1 << 18    # register operations of all transitions
MAX_WORK = 1_000_000  # NFA nodes visited by all closures: about a second of construction

DEAD, DONE = 0, 1      # no thread left, before / after a match
FRESH, MATCH_ROW = -1, -2  # register sources and destinations beyond the threads

_BOUNDARIES = {Assertion.WORD_BOUNDARY, Assertion.NOT_WORD_BOUNDARY}
_ASCII_BOUNDARIES = {Assertion.ASCII_WORD_BOUNDARY, Assertion.ASCII_NOT_WORD_BOUNDARY}
_LINES = {Assertion.BEGIN_LINE, Assertion.END_LINE, Assertion.END_OR_FINAL_NEWLINE}


@dataclass(frozen=True)
class Classes:
    """The input classes. ``count`` includes the extra classes: ``final_newline`` (a ``\\n``
    that is the last character, for ``$``) and ``continuation`` (the byte loop's continuation
    bytes)."""

    count: int
    ascii: tuple              # class of each code point 0..127
    starts: tuple             # sorted interval starts from 0x80 on ...
    of_interval: tuple        # ... and their classes
    non_ascii: int | None     # the one class of every code point above 0x7F, if there is one
    newline: int | None
    final_newline: int | None
    continuation: int | None
    word: tuple               # per class: (Unicode word, ASCII word)
    representative: tuple     # per class that code points fall in: one of its code points

    def accepting(self, ranges) -> frozenset:
        """The classes of a character set the partition was made from (its classes lie inside
        it or outside it whole); a \\n that ends the input is a \\n."""
        accepted = {c for c, cp in enumerate(self.representative) if charsets.contains(ranges, cp)}
        if self.final_newline is not None and self.newline in accepted:
            accepted.add(self.final_newline)
        return frozenset(accepted)

    def lookbehind(self, c) -> tuple:
        """(position 0, \\n, word, ASCII word) of the code point before a position: class ``c``,
        or None at position 0."""
        if c is None:
            return (True, False, False, False)
        newline = self.newline is not None and c in (self.newline, self.final_newline)
        return (False, newline, self.word[c][0], self.word[c][1])

    def lookahead(self, c) -> tuple:
        """(end, \\n, final \\n, word, ASCII word) of the code point after a position: class
        ``c``, or None at the end."""
        if c is None:
            return (True, False, False, False, False)
        newline = self.newline is not None and c in (self.newline, self.final_newline)
        return (False, newline, c == self.final_newline, self.word[c][0], self.word[c][1])

    def of(self, cp: int) -> int:
        if cp < 0x80:
            return self.ascii[cp]
        return self.of_interval[bisect_right(self.starts, cp) - 1]


@dataclass(frozen=True)
class Dfa:
    classes: Classes
    states: int
    trans: tuple          # states x classes: (next state, match here, match is empty)
    final: tuple          # per state, at the end of the input: (match, match is empty)
    ops: tuple | None     # states x (classes + 1, the last for the end): ((dst, src, mask), ...)
    init: tuple           # first state, indexed lookbehind * 2 + no_empty
    lookbehind_of: tuple  # per class: the lookbehind index after it
    idle: int             # states 2 .. 2+idle-1: only the fresh thread (a search may skip ahead)
    threads: int          # most threads in a state (register rows)


def build(nfa: Nfa, pattern: str, classes: Classes, *, anchored: bool = False, tags: tuple | None = None) -> Dfa:
    """The search automaton (unanchored, no registers), or with ``anchored`` and ``tags`` (the
    ``nfa`` tags of a group's start and end) the one that replays a known match from its start to
    read that capture group."""
    return _Construction(nfa, pattern, classes, anchored, tags).run()


def _partition(sets: list) -> tuple[list, list]:
    """Interval starts over all code points and a class per interval, such that no set splits
    a class; classes are numbered in code point order of first appearance."""
    starts = sorted({0} | {lo for s in sets for lo, _ in s}
                    | {hi + 1 for s in sets for _, hi in s if hi < charsets.MAX_CODE_POINT})
    signature = [0] * len(starts)
    for j, ranges in enumerate(sets):
        bit = 1 << j
        for lo, hi in ranges:
            for i in range(bisect_left(starts, lo), bisect_left(starts, hi + 1)):
                signature[i] |= bit
    ids: dict = {}
    classes = [ids.setdefault(sig, len(ids)) for sig in signature]
    merged_starts, merged = [], []
    for start, c in zip(starts, classes):
        if not merged or merged[-1] != c:
            merged_starts.append(start)
            merged.append(c)
    return merged_starts, merged, ids


def _lead_byte(cp: int) -> int:
    if cp < 0x80:
        return cp
    if cp < 0x800:
        return 0xC0 | cp >> 6
    if cp < 0x10000:
        return 0xE0 | cp >> 12
    return 0xF0 | cp >> 18


def lead_bytes(ranges) -> tuple:
    """The byte ranges that UTF-8 encodings of the code points in ``ranges`` begin with."""
    out = []
    for lo, hi in ranges:
        for seg_lo, seg_hi in ((0, 0x7F), (0x80, 0x7FF), (0x800, 0xFFFF), (0x10000, charsets.MAX_CODE_POINT)):
            a, b = max(lo, seg_lo), min(hi, seg_hi)
            if a <= b:
                out.append((_lead_byte(a), _lead_byte(b)))
    return charsets.normalize(out)


def input_classes(nfa: Nfa, pattern: str) -> Classes:
    """The classes of the code points that neither the pattern's character sets nor its
    assertions (``\\n``, word characters) tell apart."""
    used = nfa.assertions
    sets = list(dict.fromkeys(node[1] for node in nfa.nodes if node[0] == CHAR))
    if used & _LINES:
        sets.append(charsets.NEWLINE)
    word = charsets.word(ascii=False) if used & _BOUNDARIES else ()
    ascii_word = charsets.word(ascii=True) if used & _ASCII_BOUNDARIES else ()
    sets += [word, ascii_word]
    starts, of_interval, signatures = _partition(sets)
    count = len(signatures)
    if count > 250:
        raise too_complex(pattern, f"its character sets split the code points into {count} classes; at most 250 "
                                   "are supported")
    representative = [None] * count
    for start, c in zip(starts, of_interval):
        if representative[c] is None:
            representative[c] = start
    words = [(charsets.contains(word, cp), charsets.contains(ascii_word, cp)) for cp in representative]
    ascii = tuple(of_interval[bisect_right(starts, cp) - 1] for cp in range(0x80))
    first = bisect_right(starts, 0x80) - 1
    high_starts = (0x80,) + tuple(starts[first + 1:])
    high = tuple(of_interval[first:])
    non_ascii = high[0] if len(set(high)) == 1 else None
    newline = ascii[10] if used & _LINES else None
    final_newline = continuation = None
    if Assertion.END_OR_FINAL_NEWLINE in used:
        final_newline = count
        words.append((False, False))
        count += 1
    if non_ascii is not None:
        continuation = count
        words.append((False, False))
        count += 1
    return Classes(count, ascii, high_starts, high, non_ascii, newline, final_newline, continuation,
                   tuple(words), tuple(representative))


def node_classes(nfa: Nfa, classes: Classes) -> dict:
    """The classes each consuming node of ``nfa`` accepts."""
    of_set: dict = {}
    out = {}
    for n, node in enumerate(nfa.nodes):
        if node[0] == CHAR:
            accepted = of_set.get(node[1])
            if accepted is None:
                accepted = of_set[node[1]] = classes.accepting(node[1])
            out[n] = accepted
    return out


# the parts of a lookahead tuple (end, \n, final \n, word, ASCII word) that each assertion reads
_LOOKAHEAD_USE = {
    Assertion.END: (True, False, False, False, False),
    Assertion.END_OR_FINAL_NEWLINE: (True, False, True, False, False),
    Assertion.END_LINE: (True, True, False, False, False),
    Assertion.WORD_BOUNDARY: (True, False, False, True, False),
    Assertion.NOT_WORD_BOUNDARY: (True, False, False, True, False),
    Assertion.ASCII_WORD_BOUNDARY: (True, False, False, False, True),
    Assertion.ASCII_NOT_WORD_BOUNDARY: (True, False, False, False, True),
}


def lookahead_tracker(assertions):
    """A function that clears the parts of a lookahead tuple that none of ``assertions`` reads
    (so that code points those assertions do not tell apart give one closure, not one each)."""
    used = [any(_LOOKAHEAD_USE.get(kind, (False,) * 5)[i] for kind in assertions) for i in range(5)]
    return lambda la: tuple(flag and use for flag, use in zip(la, used))


def holds(kind: Assertion, lb: tuple, la: tuple) -> bool:
    """Whether assertion ``kind`` holds between a code point with lookbehind ``lb`` and one with
    lookahead ``la`` (``Classes.lookbehind`` and ``lookahead``)."""
    bos, prev_newline, prev_word, prev_ascii_word = lb
    end, newline, final_newline, word, ascii_word = la
    if kind is Assertion.BEGIN:
        return bos
    if kind is Assertion.BEGIN_LINE:
        return bos or prev_newline
    if kind is Assertion.END:
        return end
    if kind is Assertion.END_OR_FINAL_NEWLINE:
        return end or final_newline
    if kind is Assertion.END_LINE:
        return end or newline
    if bos and end:
        return False  # re: no word boundary (nor non-boundary) in an empty string
    if kind is Assertion.WORD_BOUNDARY:
        return prev_word != word
    if kind is Assertion.NOT_WORD_BOUNDARY:
        return prev_word == word
    if kind is Assertion.ASCII_WORD_BOUNDARY:
        return prev_ascii_word != ascii_word
    return prev_ascii_word == ascii_word


class _Construction:
    def __init__(self, nfa: Nfa, pattern: str, classes: Classes, anchored: bool, tags: tuple | None):
        self.nfa = nfa
        self.pattern = pattern
        self.classes = classes
        self.anchored = anchored or nfa.anchored  # no fresh thread after the first position
        self.registers = tags is not None
        self.saves = {tag: 1 << register for register, tag in enumerate(tags or ())}  # tag -> register bit
        self.work = 0
        used = nfa.assertions
        self.track_bos = bool(used & ({Assertion.BEGIN, Assertion.BEGIN_LINE} | _BOUNDARIES | _ASCII_BOUNDARIES))
        self.track_newline = Assertion.BEGIN_LINE in used
        self.track_word = bool(used & _BOUNDARIES)
        self.track_ascii_word = bool(used & _ASCII_BOUNDARIES)
        self.node_classes = node_classes(nfa, classes)
        self.lookahead = lookahead_tracker(used)
        self._lookbehinds()
        self._closures: dict = {}
        self.op_count = 0

    def _lookbehinds(self):
        """The distinct lookbehind tuples (bos, newline, word, ascii word) that the pattern's
        assertions can tell apart; index 0 is position 0."""
        cls = self.classes
        begin = (self.track_bos, False, False, False)
        tuples = {begin: 0}
        of_class = []
        for c in range(cls.count):
            if c == cls.continuation:
                of_class.append(0)  # never looked at: the byte loop stays in its state
                continue
            _, newline, word, ascii_word = cls.lookbehind(c)
            t = (False, self.track_newline and newline, self.track_word and word, self.track_ascii_word and ascii_word)
            of_class.append(tuples.setdefault(t, len(tuples)))
        self.lookbehind_tuples = [t for t, _ in sorted(tuples.items(), key=lambda kv: kv[1])]
        self.lookbehind_of = tuple(of_class)

    # ---------------------------------------------------------------- closure
    def _closure(self, threads: tuple, lb: int, la: tuple, no_empty: bool) -> tuple:
        """The ordered items of closing ``threads`` at one position: ``(node, source thread,
        tag mask)`` for a node that consumes, ``(None, source, mask)`` for the match (last)."""
        key = (threads, lb, la, no_empty)
        items = self._closures.get(key)
        if items is not None:
            return items
        nodes, saves = self.nfa.nodes, self.saves
        lookbehind = self.lookbehind_tuples[lb]
        out, visited = [], set()
        for source, thread in enumerate(threads):
            stack = [(thread, 0, 0)]
            while stack:
                n, marks, tags = stack.pop()
                if (n, marks) in visited:
                    continue
                visited.add((n, marks))
                self.work += 1
                node = nodes[n]
                kind = node[0]
                if kind == CHAR:
                    out.append((n, source, tags))
                elif kind == MATCH:
                    if not no_empty:
                        out.append((None, source, tags))
                        self._closures[key] = items = tuple(out)
                        return items
                elif kind == SPLIT:
                    stack.extend((alt, marks, tags) for alt in reversed(node[1]))
                elif kind == SAVE:
                    stack.append((node[2], marks, tags | saves.get(node[1], 0)))
                elif kind == ASSERT:
                    if holds(node[1], lookbehind, la):
                        stack.append((node[2], marks, tags))
                elif kind == ENTER:
                    stack.append((node[2], marks & ~(1 << node[1]), tags))
                elif kind == ITER:
                    stack.append((node[2], marks | 1 << node[1], tags))
                elif kind == UNTIL:
                    _, loop, greedy, body, exit = node
                    if marks >> loop & 1:  # the iteration that led here was empty
                        stack.append((exit, marks, tags))
                    elif greedy:
                        stack += [(exit, marks, tags), (body, marks, tags)]
                    else:
                        stack += [(body, marks, tags), (exit, marks, tags)]
        if self.work > MAX_WORK:
            raise too_complex(self.pattern, f"building its automaton takes more than {MAX_WORK} steps")
        self._closures[key] = items = tuple(out)
        return items

    # ---------------------------------------------------------------- states
    def _state(self, key) -> int:
        threads, lb, matched, no_empty = key
        if not threads:
            key = ((), 0, matched, False)
        state = self.ids.get(key)
        if state is None:
            if len(self.keys) >= MAX_STATES or len(self.keys) * self.classes.count >= MAX_TABLE:
                raise too_complex(self.pattern, f"its automaton needs more than "
                                                f"{min(MAX_STATES, MAX_TABLE // self.classes.count)} states")
            state = self.ids[key] = len(self.keys)
            self.keys.append(key)
        return state

    def _step(self, key, c: int | None):
        """The next state's key, the recorded match (source, tags) or None, and the register
        operations, for class ``c`` (None: the end of the input)."""
        threads, lb, matched, no_empty = key
        items = self._closure(threads, lb, self.lookahead(self.classes.lookahead(c)), no_empty)
        start = self.nfa.start
        fresh = len(threads) - 1 if threads and threads[-1] == start else None
        moved, index, ops, match = [], {}, [], None
        for node, source, tags in items:
            if node is None:
                match = (source, tags)
            elif c is not None and c in self.node_classes[node]:
                target = self.nfa.nodes[node][2]
                if target not in index:
                    index[target] = len(moved)
                    moved.append(target)
                    ops.append((index[target], source, tags))
        matched = matched or match is not None
        if not matched and not self.anchored and c is not None:
            ops.append((len(moved), FRESH, 0))
            moved.append(start)
        empty = match is not None and match[0] == fresh
        if match is not None:
            ops.append((MATCH_ROW, match[0], match[1]))
        next_key = None if c is None else (tuple(moved), self.lookbehind_of[c], matched, False)
        if not self.registers:
            return next_key, match is not None, empty, None
        self.op_count += len(ops)
        if self.op_count > MAX_OPS:
            raise too_complex(self.pattern, f"reading a capture group needs more than {MAX_OPS} register "
                                            "operations")
        return next_key, match is not None, empty, tuple(ops)

    def run(self) -> Dfa:
        cls, start = self.classes, self.nfa.start
        self.ids, self.keys = {}, []
        self._state(((), 0, False, False))
        self._state(((), 0, True, False))
        lookbehinds = len(self.lookbehind_tuples)
        idle = 0 if self.anchored else lookbehinds
        init = []
        for lb in range(lookbehinds):
            init.append(self._state(((start,), lb, False, False)))
            init.append(None)
        for lb in range(lookbehinds):
            init[2 * lb + 1] = self._state(((start,), lb, False, True))
        trans, final, ops = [], [], []
        s = 0
        while s < len(self.keys):
            key = self.keys[s]
            for c in range(cls.count):
                if c == cls.continuation:
                    trans.append((s, False, False))
                    ops.append(())
                    continue
                next_key, match, empty, step_ops = self._step(key, c)
                trans.append((self._state(next_key), match, empty))
                ops.append(step_ops)
            _, match, empty, step_ops = self._step(key, None)
            final.append((match, empty))
            ops.append(step_ops)
            s += 1
        threads = max(len(k[0]) for k in self.keys)
        return Dfa(cls, len(self.keys), tuple(trans), tuple(final), tuple(ops) if self.registers else None,
                   tuple(init), self.lookbehind_of, idle, threads)


def first_code_points(nfa: Nfa):
    """The code points a match can begin with, or None when a match can be empty."""
    seen, stack, sets = set(), [nfa.start], []
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        node = nfa.nodes[n]
        if node[0] == MATCH:
            return None
        if node[0] == CHAR:
            sets.append(node[1])
        else:
            stack.extend(epsilon_targets(node))
    return charsets.union(*sets)
