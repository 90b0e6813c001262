"""LLVM IR of a compiled pattern: the tables of its automata (``dfa.py``, ``reverse.py``) as
internal constants and the matching loops over them, every name beginning with the caller's
prefix, and a comment block that lists the search automaton (``describe.py``).

Functions (all ``internal``; ``%data``/``%len`` are a string's UTF-8 bytes, offsets are bytes),
in three parts that a module defines as it needs them (each after the ones before it):

- ``search_module``: ``i1 @P_search(ptr %data, i64 %len)``, whether the pattern matches
  anywhere; ``i64 @P_count(ptr %data, i64 %len)``, the number of matches ``re.finditer`` yields;
- ``find_module``: ``{i64, i64} @P_find(ptr %data, i64 %len, i64 %from, i1 %after_empty)``: the
  leftmost-first match at or after ``%from``, (-1, -1) if none. ``%after_empty``: the previous
  match of an iteration was empty and ended at ``%from``, so an empty match there does not count
  (how ``re.finditer``/``re.sub`` go on after an empty match);
- ``group_module``: ``{i64, i64} @P_group<g>(ptr %data, i64 %len, i64 %start, i64 %end)``: the
  span of capture group ``g`` in the match ``[%start, %end)`` that ``@P_find`` returned,
  (-1, -1) if the group took no part in it.

The loops: ``@P_scan`` (the search automaton; it records where the last match ends and whether
it is empty) serves search, count and find; ``@P_rscan`` runs the reverse automaton from a
match's end back to its start (find); ``@P_g<g>_run`` replays a match with the capture
automaton of group ``g``, applying each transition's register operations to the two registers
(the group's start and end) of every thread.
A step reads one code point's class: a byte table lookup when the pattern does not tell
non-ASCII code points apart (continuation bytes leave the state as it is), else a UTF-8 decode
and a lookup (a table below U+0800, a binary search above). While only the fresh thread is alive
(an "idle" state) and every match begins with one of a few bytes, a vector scan skips to the next
such byte; a literal that every match contains is looked for first (its absence means no match).
No function is declared: the module needs nothing beyond these definitions.
"""

from __future__ import annotations

import re

from .. import ir_text
from . import describe
from .dfa import FRESH, MATCH_ROW, Dfa, lead_bytes

_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_VECTOR = 32  # bytes per step of the skip scans


def search_module(regex, prefix: str) -> str:
    return _Emitter(regex, prefix).search_text()


def find_module(regex, prefix: str) -> str:
    return _Emitter(regex, prefix).find_text()


def group_module(regex, prefix: str, group: int) -> str:
    return _Emitter(regex, prefix).group_text(group)


def _array(elem: str, values) -> str:
    values = list(values)
    return f"[{len(values)} x {elem}] [" + ", ".join(f"{elem} {v}" for v in values) + "]"


def _in_ranges(var: str, ranges, width: str, out: str, tmp: str) -> str:
    """IR setting ``out`` to whether ``var`` (of type ``width``: i8 or a vector of i8) lies in
    one of the byte ``ranges``."""
    lines, terms = [], []
    for i, (lo, hi) in enumerate(ranges):
        const = (lambda v: f"splat (i8 {v})") if width.startswith("<") else (lambda v: str(v))
        if lo == hi:
            lines.append(f"  %{tmp}{i} = icmp eq {width} %{var}, {const(lo)}")
        else:
            lines.append(f"  %{tmp}d{i} = sub {width} %{var}, {const(lo)}")
            lines.append(f"  %{tmp}{i} = icmp ule {width} %{tmp}d{i}, {const(hi - lo)}")
        terms.append(f"%{tmp}{i}")
    i1 = "i1" if not width.startswith("<") else f"<{_VECTOR} x i1>"
    acc = terms[0]
    for j, t in enumerate(terms[1:]):
        lines.append(f"  %{tmp}o{j} = or {i1} {acc}, {t}")
        acc = f"%{tmp}o{j}"
    lines.append(f"  %{out} = or {i1} {acc}, {'false' if i1 == 'i1' else 'zeroinitializer'}")
    return "\n".join(lines)


class _Emitter:
    def __init__(self, regex, prefix: str):
        self.r = regex
        self.d: Dfa = regex.dfa
        self.c = regex.dfa.classes
        if not _PREFIX.match(prefix):
            raise ValueError(f"IR prefix {prefix!r} is not a generated identifier")
        self.P = prefix
        # a literal every match contains, looked for before the automaton runs, unless the skip
        # scan already looks for its first byte
        required = regex.required
        self.required = required if required and not (regex.required_leading and self.skip_ranges()) else None

    # ------------------------------------------------------------------ tables
    def search_text(self) -> str:
        d, P = self.d, self.P
        parts = [describe.comment_block(self.r)]
        parts.append(self.dfa_tables(d, ""))
        parts.append(f"@{P}_lbof = internal constant " + _array("i8", d.lookbehind_of))
        parts.append(self.class_tables())
        parts.append(self.class_function())
        parts.append(self.back_function())
        parts.append(self.lookbehind_function())
        skip = self.skip_ranges()
        if skip:
            parts.append(self.scan_function(f"{P}_skip", skip))
        literal = self.required
        if literal:
            parts.append(f"@{P}_lit = internal constant [{len(literal)} x i8] {ir_text.byte_array(literal)}")
            parts.append(self.scan_function(f"{P}_litfirst", ((literal[0], literal[0]),)))
            parts.append(self.literal_function(literal))
        parts.append(self.scan_loop(search=False, skip=bool(skip)))
        parts.append(self.scan_loop(search=True, skip=bool(skip)))
        parts.append(self.count_function())
        return "\n".join(parts) + "\n"

    def find_text(self) -> str:
        return "\n".join([f"; the reverse automaton: {self.r.reverse.states} states", self.reverse_tables(),
                          self.reverse_function(), self.find_function()]) + "\n"

    def group_text(self, group: int) -> str:
        d, tag = self.r.captures(group), f"g{group}"
        run = [self.op_tables(d, tag), self.run_function(d, tag)] if d.threads > 1 else \
            [self.single_op_table(d, tag), self.single_run_function(d, tag)]
        return "\n".join([f"; the capture automaton of group {group}: {d.states} states, at most {d.threads} "
                          "threads", self.dfa_tables(d, tag), *run, self.group_function(group)]) + "\n"

    def dfa_tables(self, d: Dfa, tag: str) -> str:
        """Transitions (next state's row, pre-multiplied, << 2 | match here | empty << 1), what
        the end of the input gives per state, and the first state's row per lookbehind."""
        P, C = self.P, self.c.count
        trans = [((nxt * C) << 2) | int(match) | int(empty) << 1 for nxt, match, empty in d.trans]
        return "\n".join([
            f"@{P}_{tag}trans = internal constant " + _array("i32", trans),
            f"@{P}_{tag}final = internal constant " + _array("i8", [int(m) | int(e) << 1 for m, e in d.final]),
            f"@{P}_{tag}init = internal constant " + _array("i32", [s * C for s in d.init])])

    def reverse_tables(self) -> str:
        """The reverse automaton: transitions ((next state's row) << 1 | the span from here
        matches) over the classes plus "position 0", first rows, lookahead index per class."""
        rev, P, W = self.r.reverse, self.P, self.c.count + 1
        trans = [((nxt * W) << 1) | int(match) for nxt, match in rev.trans]
        return "\n".join([
            f"@{P}_rtrans = internal constant " + _array("i32", trans),
            f"@{P}_rinit = internal constant " + _array("i32", [s * W for s in rev.init]),
            f"@{P}_rla = internal constant " + _array("i8", rev.lookahead_of)])

    def class_tables(self) -> str:
        c, P = self.c, self.P
        if c.non_ascii is not None:
            table = list(c.ascii) + [c.continuation] * 0x40 + [c.non_ascii] * 0x40
            return f"@{P}_bytes = internal constant " + _array("i8", table)
        lines = [f"@{P}_ascii = internal constant " + _array("i8", c.ascii)]
        mid = [c.of(cp) for cp in range(0x80, 0x800)]
        if len(set(mid)) > 1:
            lines.append(f"@{P}_mid = internal constant " + _array("i8", mid))
        starts, classes = self.high_intervals()
        if len(starts) > 1:
            lines.append(f"@{P}_hstart = internal constant " + _array("i32", starts))
            lines.append(f"@{P}_hclass = internal constant " + _array("i8", classes))
        return "\n".join(lines)

    def high_intervals(self):
        """Interval starts and classes from U+0800 on."""
        c = self.c
        pairs = [(max(s, 0x800), k) for s, k, nxt in zip(c.starts, c.of_interval, c.starts[1:] + (1 << 21,))
                 if nxt > 0x800]
        starts, classes = [], []
        for s, k in pairs:
            if not classes or classes[-1] != k:
                starts.append(s)
                classes.append(k)
        return starts, classes

    def op_tables(self, d: Dfa, tag: str) -> str:
        """Each transition's register operations (a span of a pool of distinct lists): (dst
        row, source row, mask of the two registers set to the position)."""
        pool, index, spans = [], {}, []
        for ops in d.ops:
            if ops not in index:
                index[ops] = len(pool)
                pool.extend(ops)
            spans.append(f"{{i32, i32}} {{i32 {index[ops]}, i32 {len(ops)}}}")
        if not pool:
            pool = [(0, 0, 0)]
        self.pool_size = len(pool)
        threads = d.threads
        row = {FRESH: threads, MATCH_ROW: threads + 1}
        ops = ", ".join(f"{{i32, i32, i32}} {{i32 {row.get(dst, dst)}, i32 {row.get(src, src)}, i32 {mask}}}"
                        for dst, src, mask in pool)
        return (f"@{self.P}_{tag}opspan = internal constant [{len(spans)} x {{i32, i32}}] [" + ", ".join(spans) + "]\n"
                f"@{self.P}_{tag}ops = internal constant [{len(pool)} x {{i32, i32, i32}}] [{ops}]\n"
                f"@{self.P}_{tag}fresh = internal constant [2 x i64] [i64 -1, i64 -1]")

    def skip_ranges(self):
        """Byte ranges that every match begins with, when few enough for a vector scan to pay."""
        first = self.r.first
        if first is None or self.d.idle == 0:
            return None
        ranges = [r for r in lead_bytes(first) if r[0] < 0x80]
        if any(hi >= 0x80 for _, hi in lead_bytes(first)):
            ranges.append((0xC0, 0xFF))  # any lead byte: the step decides
        if len(ranges) > 3 or sum(hi - lo + 1 for lo, hi in ranges if lo < 0x80) > 16:
            return None
        return ranges

    # ------------------------------------------------------------------ helpers
    def class_function(self) -> str:
        """``{i64, i64} @P_class(data, len, pos)``: the class of the code point at ``pos`` and the
        position after it (``$``'s final newline is a class of its own)."""
        c, P = self.c, self.P
        fnl = ""
        if c.final_newline is not None:
            fnl = (f"  %isnl = icmp eq i8 %b, 10\n  %islast = icmp eq i64 %p1, %len\n"
                   f"  %fnl = and i1 %isnl, %islast\n  %ka = select i1 %fnl, i64 {c.final_newline}, i64 %k0\n")
        else:
            fnl = "  %ka = add i64 %k0, 0\n"
        head = (f"define internal {{i64, i64}} @{P}_class(ptr %data, i64 %len, i64 %pos) alwaysinline {{\n"
                f"entry:\n  %bp = getelementptr inbounds i8, ptr %data, i64 %pos\n  %b = load i8, ptr %bp\n"
                f"  %bi = zext i8 %b to i64\n  %p1 = add i64 %pos, 1\n")
        if c.non_ascii is not None:
            return (head + f"  %kp = getelementptr inbounds [256 x i8], ptr @{P}_bytes, i64 0, i64 %bi\n"
                    f"  %k8 = load i8, ptr %kp\n  %k0 = zext i8 %k8 to i64\n" + fnl +
                    "  %r0 = insertvalue {i64, i64} undef, i64 %ka, 0\n"
                    "  %r1 = insertvalue {i64, i64} %r0, i64 %p1, 1\n  ret {i64, i64} %r1\n}\n")
        return head + f"""  %isascii = icmp ult i64 %bi, 128
  br i1 %isascii, label %ascii, label %multi
ascii:
  %kp = getelementptr inbounds [128 x i8], ptr @{P}_ascii, i64 0, i64 %bi
  %k8 = load i8, ptr %kp
  %k0 = zext i8 %k8 to i64
{fnl}  %r0 = insertvalue {{i64, i64}} undef, i64 %ka, 0
  %r1 = insertvalue {{i64, i64}} %r0, i64 %p1, 1
  ret {{i64, i64}} %r1
multi:
  %m = call {{i64, i64}} @{P}_decode(ptr %data, i64 %len, i64 %pos)
  ret {{i64, i64}} %m
}}

define internal {{i64, i64}} @{P}_decode(ptr %data, i64 %len, i64 %pos) noinline {{
entry:
  %bp = getelementptr inbounds i8, ptr %data, i64 %pos
  %b = load i8, ptr %bp
  %bi = zext i8 %b to i64
  %p1 = add i64 %pos, 1
  br label %multi
multi:
  %ge_c0 = icmp uge i64 %bi, 192
  %ge_e0 = icmp uge i64 %bi, 224
  %ge_f0 = icmp uge i64 %bi, 240
  %n34 = select i1 %ge_f0, i64 4, i64 3
  %n234 = select i1 %ge_e0, i64 %n34, i64 2
  %end = add i64 %pos, %n234
  %fits = icmp ule i64 %end, %len
  %valid = and i1 %ge_c0, %fits
  br i1 %valid, label %two, label %done
two:
  %b1p = getelementptr inbounds i8, ptr %bp, i64 1
  %b1 = load i8, ptr %b1p
  %c1 = zext i8 %b1 to i64
  %t1 = and i64 %c1, 63
  %h2 = and i64 %bi, 31
  %s2 = shl i64 %h2, 6
  %cp2 = or i64 %s2, %t1
  br i1 %ge_e0, label %three, label %lookup
three:
  %b2p = getelementptr inbounds i8, ptr %bp, i64 2
  %b2 = load i8, ptr %b2p
  %c2 = zext i8 %b2 to i64
  %t2 = and i64 %c2, 63
  %u1 = shl i64 %t1, 6
  %h3 = and i64 %bi, 15
  %s3 = shl i64 %h3, 12
  %m3 = or i64 %s3, %u1
  %cp3 = or i64 %m3, %t2
  br i1 %ge_f0, label %four, label %lookup
four:
  %b3p = getelementptr inbounds i8, ptr %bp, i64 3
  %b3 = load i8, ptr %b3p
  %c3 = zext i8 %b3 to i64
  %t3 = and i64 %c3, 63
  %v1 = shl i64 %t1, 12
  %v2 = shl i64 %t2, 6
  %h4 = and i64 %bi, 7
  %s4 = shl i64 %h4, 18
  %m4 = or i64 %s4, %v1
  %m5 = or i64 %m4, %v2
  %cp4 = or i64 %m5, %t3
  br label %lookup
lookup:
  %cp = phi i64 [%cp2, %two], [%cp3, %three], [%cp4, %four]
{self.lookup_code()}
done:
  %k = phi i64 [{c.of(0xFFFD)}, %multi], [%kl, %looked]
  %next = phi i64 [%p1, %multi], [%end, %looked]
  %r0 = insertvalue {{i64, i64}} undef, i64 %k, 0
  %r1 = insertvalue {{i64, i64}} %r0, i64 %next, 1
  ret {{i64, i64}} %r1
}}
"""

    def lookup_code(self) -> str:
        """From ``%cp`` (>= 0x80) to ``%kl`` in block ``%looked``, which branches to ``%done``."""
        c, P = self.c, self.P
        mid = [c.of(cp) for cp in range(0x80, 0x800)]
        if len(set(mid)) > 1:
            low = (f"  %mi0 = sub i64 %cp, 128\n  %mi = select i1 %islow, i64 %mi0, i64 0\n"
                   f"  %mp = getelementptr inbounds [1920 x i8], ptr @{P}_mid, i64 0, i64 %mi\n"
                   f"  %m8 = load i8, ptr %mp\n  %kmid = zext i8 %m8 to i64\n")
        else:
            low = f"  %kmid = add i64 0, {mid[0]}\n"
        starts, classes = self.high_intervals()
        if len(starts) == 1:
            return (f"  %islow = icmp ult i64 %cp, 2048\n{low}"
                    f"  %kl = select i1 %islow, i64 %kmid, i64 {classes[0]}\n  br label %looked\nlooked:\n"
                    f"  br label %done")
        n = len(starts)
        return f"""  %islow = icmp ult i64 %cp, 2048
{low}  br i1 %islow, label %looked, label %search
search:
  %lo = phi i64 [0, %lookup], [%lo2, %probe]
  %hi = phi i64 [{n}, %lookup], [%hi2, %probe]
  %w = sub i64 %hi, %lo
  %narrow = icmp ule i64 %w, 1
  br i1 %narrow, label %found, label %probe
probe:
  %sum = add i64 %lo, %hi
  %mid = lshr i64 %sum, 1
  %sp = getelementptr inbounds [{n} x i32], ptr @{P}_hstart, i64 0, i64 %mid
  %s32 = load i32, ptr %sp
  %s = zext i32 %s32 to i64
  %le = icmp ule i64 %s, %cp
  %lo2 = select i1 %le, i64 %mid, i64 %lo
  %hi2 = select i1 %le, i64 %hi, i64 %mid
  br label %search
found:
  %hp = getelementptr inbounds [{n} x i8], ptr @{P}_hclass, i64 0, i64 %lo
  %h8 = load i8, ptr %hp
  %khigh = zext i8 %h8 to i64
  br label %looked
looked:
  %kl = phi i64 [%kmid, %lookup], [%khigh, %found]
  br label %done"""

    def back_function(self) -> str:
        """``i64 @P_back(data, pos)``, ``pos`` > 0: where the code point before ``pos`` begins
        (at most 3 continuation bytes back)."""
        return f"""define internal i64 @{self.P}_back(ptr %data, i64 %pos) alwaysinline {{
entry:
  br label %back
back:
  %q = phi i64 [%pos, %entry], [%qm, %cont]
  %qm = sub i64 %q, 1
  %stop0 = icmp eq i64 %qm, 0
  %dist = sub i64 %pos, %qm
  %stop1 = icmp uge i64 %dist, 4
  %stop = or i1 %stop0, %stop1
  br i1 %stop, label %lead, label %test
test:
  %bp = getelementptr inbounds i8, ptr %data, i64 %qm
  %b = load i8, ptr %bp
  %top = and i8 %b, -64
  %iscont = icmp eq i8 %top, -128
  br i1 %iscont, label %cont, label %lead
cont:
  br label %back
lead:
  ret i64 %qm
}}
"""

    def lookbehind_function(self) -> str:
        """``i64 @P_lb(data, pos)``: the lookbehind index at ``pos`` (0 at position 0), from the
        class of the code point before it."""
        P, C = self.P, self.c.count
        if len(self.d.init) == 2:  # one lookbehind: the pattern's assertions look at no previous character
            return f"define internal i64 @{P}_lb(ptr %data, i64 %pos) alwaysinline {{\nentry:\n  ret i64 0\n}}\n"
        after = {lb for k, lb in enumerate(self.d.lookbehind_of) if k != self.c.continuation}
        if len(after) == 1:  # the assertions ask only whether the position is 0 (^, \A)
            return (f"define internal i64 @{P}_lb(ptr %data, i64 %pos) alwaysinline {{\nentry:\n"
                    f"  %atstart = icmp eq i64 %pos, 0\n  %lb = select i1 %atstart, i64 0, i64 {after.pop()}\n"
                    f"  ret i64 %lb\n}}\n")
        return f"""define internal i64 @{P}_lb(ptr %data, i64 %pos) alwaysinline {{
entry:
  %atstart = icmp eq i64 %pos, 0
  br i1 %atstart, label %begin, label %back
begin:
  ret i64 0
back:
  %q = call i64 @{P}_back(ptr %data, i64 %pos)
  %kc = call {{i64, i64}} @{P}_class(ptr %data, i64 %pos, i64 %q)
  %k = extractvalue {{i64, i64}} %kc, 0
  %lp = getelementptr inbounds [{C} x i8], ptr @{P}_lbof, i64 0, i64 %k
  %l8 = load i8, ptr %lp
  %l = zext i8 %l8 to i64
  ret i64 %l
}}
"""

    def scan_function(self, name: str, ranges) -> str:
        """``i64 @name(data, len, pos)``: the first position at or after ``pos`` whose byte lies
        in ``ranges``, or ``len``. Whole vectors from ``pos``; the last part of a string of at
        least one vector is the string's last vector, its bytes before the position masked off;
        a shorter string is read byte by byte."""
        vector, mask = f"<{_VECTOR} x i8>", f"i{_VECTOR}"
        return f"""define internal i64 @{name}(ptr %data, i64 %len, i64 %pos) {{
entry:
  br label %vec
vec:
  %i = phi i64 [%pos, %entry], [%inext, %vmiss]
  %iend = add i64 %i, {_VECTOR}
  %room = icmp ule i64 %iend, %len
  br i1 %room, label %vload, label %rest
vload:
  %vp = getelementptr inbounds i8, ptr %data, i64 %i
  %v = load {vector}, ptr %vp, align 1
{_in_ranges("v", ranges, vector, "vm", "vr")}
  %bits = bitcast <{_VECTOR} x i1> %vm to {mask}
  %hit = icmp ne {mask} %bits, 0
  br i1 %hit, label %vfound, label %vmiss
vmiss:
  %inext = add i64 %i, {_VECTOR}
  br label %vec
vfound:
  %tz = call {mask} @llvm.cttz.{mask}({mask} %bits, i1 true)
  %tz64 = zext {mask} %tz to i64
  %at = add i64 %i, %tz64
  ret i64 %at
rest:
  %left = icmp ult i64 %i, %len
  %whole = icmp uge i64 %len, {_VECTOR}
  %tail = and i1 %left, %whole
  br i1 %tail, label %tload, label %bytes
tload:
  %base = sub i64 %len, {_VECTOR}
  %tp = getelementptr inbounds i8, ptr %data, i64 %base
  %t = load {vector}, ptr %tp, align 1
{_in_ranges("t", ranges, vector, "tm", "tr")}
  %tbits = bitcast <{_VECTOR} x i1> %tm to {mask}
  %skip64 = sub i64 %i, %base
  %skip = trunc i64 %skip64 to {mask}
  %tafter = lshr {mask} %tbits, %skip
  %thit = icmp ne {mask} %tafter, 0
  br i1 %thit, label %tfound, label %none
tfound:
  %ttz = call {mask} @llvm.cttz.{mask}({mask} %tafter, i1 true)
  %ttz64 = zext {mask} %ttz to i64
  %tat = add i64 %i, %ttz64
  ret i64 %tat
bytes:
  %j = phi i64 [%i, %rest], [%jnext, %bmiss]
  %more = icmp ult i64 %j, %len
  br i1 %more, label %bload, label %none
bload:
  %bp = getelementptr inbounds i8, ptr %data, i64 %j
  %b = load i8, ptr %bp
{_in_ranges("b", ranges, "i8", "bm", "br")}
  br i1 %bm, label %found, label %bmiss
bmiss:
  %jnext = add i64 %j, 1
  br label %bytes
found:
  ret i64 %j
none:
  ret i64 %len
}}
"""

    def literal_function(self, literal: bytes) -> str:
        """``i1 @P_has_lit(data, len, from)``: whether the required literal occurs at or after ``from``."""
        P, n = self.P, len(literal)
        return f"""define internal i1 @{P}_has_lit(ptr %data, i64 %len, i64 %from) {{
entry:
  br label %next
next:
  %pos = phi i64 [%from, %entry], [%after, %differ]
  %q = call i64 @{P}_litfirst(ptr %data, i64 %len, i64 %pos)
  %qend = add i64 %q, {n}
  %fits = icmp ule i64 %qend, %len
  br i1 %fits, label %compare, label %absent
compare:
  %i = phi i64 [1, %next], [%i1, %same]
  %done = icmp uge i64 %i, {n}
  br i1 %done, label %present, label %byte
byte:
  %qi = add i64 %q, %i
  %dp = getelementptr inbounds i8, ptr %data, i64 %qi
  %db = load i8, ptr %dp
  %lp = getelementptr inbounds [{n} x i8], ptr @{P}_lit, i64 0, i64 %i
  %lb = load i8, ptr %lp
  %eq = icmp eq i8 %db, %lb
  br i1 %eq, label %same, label %differ
same:
  %i1 = add i64 %i, 1
  br label %compare
differ:
  %after = add i64 %q, 1
  br label %next
present:
  ret i1 true
absent:
  ret i1 false
}}
"""

    def init_row(self, lb: str, not_empty: str, out: str) -> str:
        n = len(self.d.init)
        return (f"  %{out}z = zext i1 {not_empty} to i64\n  %{out}d = shl i64 {lb}, 1\n"
                f"  %{out}i = or i64 %{out}d, %{out}z\n"
                f"  %{out}p = getelementptr inbounds [{n} x i32], ptr @{self.P}_init, i64 0, i64 %{out}i\n"
                f"  %{out}r = load i32, ptr %{out}p\n  %{out} = zext i32 %{out}r to i64\n")

    def idle_test(self, row: str, out: str) -> str:
        C = self.c.count
        return (f"  %{out}rel = sub i64 {row}, {2 * C}\n"
                f"  %{out} = icmp ult i64 %{out}rel, {self.d.idle * C}\n")

    # ------------------------------------------------------------------ loops
    def scan_loop(self, search: bool, skip: bool) -> str:
        """``i64 @P_scan(data, len, from, after_empty)``: (end << 1 | empty) of the match, or -1;
        ``i1 @P_search1(data, len, from)``: whether there is a match (stops at the first one)."""
        P, C, S = self.P, self.c.count, self.d.states
        if search:
            signature = f"define internal i1 @{P}_search1(ptr %data, i64 %len, i64 %from) {{"
            not_empty = "false"
        else:
            signature = f"define internal i64 @{P}_scan(ptr %data, i64 %len, i64 %from, i1 %not_empty) {{"
            not_empty = "%not_empty"
        skip_blocks = ""
        go_pos, go_row = "%pos", "%row"
        if skip:
            skip_blocks = f"""{self.idle_test("%row", "idle")}  br i1 %idle, label %skip, label %go
skip:
  %q = call i64 @{P}_skip(ptr %data, i64 %len, i64 %pos)
  %qend = icmp uge i64 %q, %len
  br i1 %qend, label %nomatch, label %skipped
skipped:
  %qlb = call i64 @{P}_lb(ptr %data, i64 %q)
{self.init_row("%qlb", "false", "qrow")}  br label %go
go:
  %gpos = phi i64 [%pos, %body], [%q, %skipped]
  %grow = phi i64 [%row, %body], [%qrow, %skipped]
"""
            go_pos, go_row = "%gpos", "%grow"
        else:
            skip_blocks = "  br label %go\ngo:\n"
        if search:
            on_step = f"""  %hit = icmp ne i64 %m, 0
  br i1 %hit, label %yes, label %alive
alive:
  %stop = icmp ult i64 %nrow, {C}
  br i1 %stop, label %nomatch, label %loop
yes:
  ret i1 true
nomatch:
  ret i1 false
eot:
  %s = udiv i64 %row, {C}
  %fp = getelementptr inbounds [{S} x i8], ptr @{P}_final, i64 0, i64 %s
  %f = load i8, ptr %fp
  %fm = trunc i8 %f to i1
  ret i1 %fm
}}
"""
            last_phi = ""
        else:
            on_step = f"""  %hit = icmp ne i64 %m, 0
  %ebit = lshr i64 %e, 1
  %empty = and i64 %ebit, 1
  %enc0 = shl i64 {go_pos}, 1
  %enc = or i64 %enc0, %empty
  %last2 = select i1 %hit, i64 %enc, i64 %last
  %stop = icmp ult i64 %nrow, {2 * C}
  br i1 %stop, label %finish, label %loop
finish:
  ret i64 %last2
nomatch:
  ret i64 %last
eot:
  %s = udiv i64 %row, {C}
  %fp = getelementptr inbounds [{S} x i8], ptr @{P}_final, i64 0, i64 %s
  %f = load i8, ptr %fp
  %f64 = zext i8 %f to i64
  %fm = and i64 %f64, 1
  %fe = lshr i64 %f64, 1
  %fin0 = shl i64 %len, 1
  %fin = or i64 %fin0, %fe
  %fhit = icmp ne i64 %fm, 0
  %res = select i1 %fhit, i64 %fin, i64 %last
  ret i64 %res
}}
"""
            last_phi = "  %last = phi i64 [-1, %entry], [%last2, %go]\n"
        return f"""{signature}
entry:
  %lb0 = call i64 @{P}_lb(ptr %data, i64 %from)
{self.init_row("%lb0", not_empty, "row0")}  br label %loop
loop:
  %pos = phi i64 [%from, %entry], [%npos, %{"alive" if search else "go"}]
  %row = phi i64 [%row0, %entry], [%nrow, %{"alive" if search else "go"}]
{last_phi}  %more = icmp ult i64 %pos, %len
  br i1 %more, label %body, label %eot
body:
{skip_blocks}  %kc = call {{i64, i64}} @{P}_class(ptr %data, i64 %len, i64 {go_pos})
  %k = extractvalue {{i64, i64}} %kc, 0
  %npos = extractvalue {{i64, i64}} %kc, 1
  %ti = add i64 {go_row}, %k
  %tp = getelementptr inbounds [{S * C} x i32], ptr @{P}_trans, i64 0, i64 %ti
  %e32 = load i32, ptr %tp
  %e = zext i32 %e32 to i64
  %m = and i64 %e, 1
  %nrow = lshr i64 %e, 2
{on_step}"""

    def count_function(self) -> str:
        P = self.P
        check = ""
        if self.required:
            check = (f"  %has = call i1 @{P}_has_lit(ptr %data, i64 %len, i64 0)\n"
                     f"  br i1 %has, label %loop, label %none\nnone:\n  ret i64 0\n")
        else:
            check = "  br label %loop\n"
        search_check = check.replace("ret i64 0", "ret i1 false")
        return f"""define internal i1 @{P}_search(ptr %data, i64 %len) {{
entry:
{search_check}loop:
  %r = call i1 @{P}_search1(ptr %data, i64 %len, i64 0)
  ret i1 %r
}}

define internal i64 @{P}_count(ptr %data, i64 %len) {{
entry:
{check}loop:
  %from = phi i64 [0, %entry], [%end, %again]
  %ne = phi i1 [false, %entry], [%emp, %again]
  %n = phi i64 [0, %entry], [%n1, %again]
  %r = call i64 @{P}_scan(ptr %data, i64 %len, i64 %from, i1 %ne)
  %found = icmp sge i64 %r, 0
  br i1 %found, label %again, label %out
again:
  %n1 = add i64 %n, 1
  %end = lshr i64 %r, 1
  %emp = trunc i64 %r to i1
  br label %loop
out:
  ret i64 %n
}}
"""

    def run_function(self, d: Dfa, tag: str) -> str:
        """``i64 @P_<tag>_run(data, len, from, after_empty, stop, out)``: the capture automaton
        ``d`` with two registers per thread from ``from``, until the step at ``stop`` (or no
        thread is left, or the end). Writes the registers of the last recorded match to ``out``
        and returns its end, or -1. ``@P_<tag>_apply`` applies one transition's register
        operations: a thread of the next state (or the match, row ``rows - 1``: ``out``) gets the
        registers of a thread of this one (or of a fresh thread, row ``rows - 2``: unset), those
        of the mask set to the position."""
        P, C = self.P, self.c.count
        S, rows, spans, pool = d.states, d.threads + 2, len(d.ops), self.pool_size
        cont = ""
        if self.c.continuation is not None:
            cont = (f"  %iscont = icmp eq i64 %k, {self.c.continuation}\n"
                    f"  br i1 %iscont, label %loop, label %apply\napply:\n")
        from_cont = (", [%npos, %body]", ", [%s, %body]", ", [%cur, %body]", ", [%nxt, %body]",
                     ", [%end, %body]") if cont else ("",) * 5
        op = f"[{pool} x {{i32, i32, i32}}], ptr @{P}_{tag}ops, i64 0, i64 %j"
        return f"""define internal void @{P}_{tag}_apply(ptr %cur, ptr %nxt, ptr %out, i64 %t, i64 %pos) {{
entry:
  %sp = getelementptr inbounds [{spans} x {{i32, i32}}], ptr @{P}_{tag}opspan, i64 0, i64 %t, i32 0
  %o32 = load i32, ptr %sp
  %np = getelementptr inbounds [{spans} x {{i32, i32}}], ptr @{P}_{tag}opspan, i64 0, i64 %t, i32 1
  %n32 = load i32, ptr %np
  %first = zext i32 %o32 to i64
  %cnt = zext i32 %n32 to i64
  %last = add i64 %first, %cnt
  br label %op
op:
  %j = phi i64 [%first, %entry], [%j1, %load]
  %more = icmp ult i64 %j, %last
  br i1 %more, label %load, label %done
load:
  %dp = getelementptr inbounds {op}, i32 0
  %d32 = load i32, ptr %dp
  %srcp = getelementptr inbounds {op}, i32 1
  %s32 = load i32, ptr %srcp
  %mp = getelementptr inbounds {op}, i32 2
  %mask = load i32, ptr %mp
  %dst = zext i32 %d32 to i64
  %src = zext i32 %s32 to i64
  %dfar = icmp eq i64 %dst, {rows - 1}
  %doff = shl i64 %dst, 1
  %dthread = getelementptr inbounds i64, ptr %nxt, i64 %doff
  %dptr = select i1 %dfar, ptr %out, ptr %dthread
  %sfresh = icmp eq i64 %src, {rows - 2}
  %soff = shl i64 %src, 1
  %sthread = getelementptr inbounds i64, ptr %cur, i64 %soff
  %sptr = select i1 %sfresh, ptr @{P}_{tag}fresh, ptr %sthread
  %v0 = load i64, ptr %sptr
  %s1p = getelementptr inbounds i64, ptr %sptr, i64 1
  %v1 = load i64, ptr %s1p
  %m0 = and i32 %mask, 1
  %set0 = icmp ne i32 %m0, 0
  %m1 = and i32 %mask, 2
  %set1 = icmp ne i32 %m1, 0
  %w0 = select i1 %set0, i64 %pos, i64 %v0
  %w1 = select i1 %set1, i64 %pos, i64 %v1
  store i64 %w0, ptr %dptr
  %d1p = getelementptr inbounds i64, ptr %dptr, i64 1
  store i64 %w1, ptr %d1p
  %j1 = add i64 %j, 1
  br label %op
done:
  ret void
}}

define internal i64 @{P}_{tag}_run(ptr %data, i64 %len, i64 %from, i1 %not_empty, i64 %stop, ptr %out) {{
entry:
  %bufa = alloca [{rows * 2} x i64], align 8
  %bufb = alloca [{rows * 2} x i64], align 8
  store i64 -1, ptr %bufa
  %a1 = getelementptr inbounds i64, ptr %bufa, i64 1
  store i64 -1, ptr %a1
  %lb0 = call i64 @{P}_lb(ptr %data, i64 %from)
  %ii = shl i64 %lb0, 1
  %nez = zext i1 %not_empty to i64
  %iidx = or i64 %ii, %nez
  %ip = getelementptr inbounds [{len(d.init)} x i32], ptr @{P}_{tag}init, i64 0, i64 %iidx
  %ir = load i32, ptr %ip
  %row0 = zext i32 %ir to i64
  %s0 = udiv i64 %row0, {C}
  br label %loop
loop:
  %pos = phi i64 [%from, %entry], [%npos, %step]{from_cont[0]}
  %s = phi i64 [%s0, %entry], [%ns, %step]{from_cont[1]}
  %cur = phi ptr [%bufa, %entry], [%nxt, %step]{from_cont[2]}
  %nxt = phi ptr [%bufb, %entry], [%cur, %step]{from_cont[3]}
  %end = phi i64 [-1, %entry], [%end2, %step]{from_cont[4]}
  %more = icmp ult i64 %pos, %len
  br i1 %more, label %body, label %eot
body:
  %kc = call {{i64, i64}} @{P}_class(ptr %data, i64 %len, i64 %pos)
  %k = extractvalue {{i64, i64}} %kc, 0
  %npos = extractvalue {{i64, i64}} %kc, 1
{cont}  %sc = mul i64 %s, {C + 1}
  %t = add i64 %sc, %k
  call void @{P}_{tag}_apply(ptr %cur, ptr %nxt, ptr %out, i64 %t, i64 %pos)
  %srow = mul i64 %s, {C}
  %ti = add i64 %srow, %k
  %tp = getelementptr inbounds [{S * C} x i32], ptr @{P}_{tag}trans, i64 0, i64 %ti
  %e32 = load i32, ptr %tp
  %e = zext i32 %e32 to i64
  %m = trunc i64 %e to i1
  %end2 = select i1 %m, i64 %pos, i64 %end
  %nrow = lshr i64 %e, 2
  %ns = udiv i64 %nrow, {C}
  %atstop = icmp eq i64 %pos, %stop
  %dead = icmp ult i64 %ns, 2
  %over = or i1 %atstop, %dead
  br i1 %over, label %finish, label %step
step:
  br label %loop
finish:
  ret i64 %end2
eot:
  %es = mul i64 %s, {C + 1}
  %et = add i64 %es, {C}
  call void @{P}_{tag}_apply(ptr %cur, ptr %nxt, ptr %out, i64 %et, i64 %len)
  %efp = getelementptr inbounds [{S} x i8], ptr @{P}_{tag}final, i64 0, i64 %s
  %ef = load i8, ptr %efp
  %efm = trunc i8 %ef to i1
  %res = select i1 %efm, i64 %len, i64 %end
  ret i64 %res
}}
"""

    def single_op_table(self, d: Dfa, tag: str) -> str:
        """A capture automaton with at most one thread per state (no choice is ever pending: the
        common case) needs no register rows: per transition (and per state at the end), one byte
        says which of the two registers the thread sets (bits 0-1) and whether a match is
        recorded (bit 4) with which registers set (bits 2-3). ``op1`` is indexed like the
        transitions, ``op1end`` by state."""
        C, codes = self.c.count, []
        for ops in d.ops:
            code = 0
            for dst, src, mask in ops:
                assert src == 0 and dst in (0, MATCH_ROW), (dst, src)  # one thread: it comes from thread 0
                code |= mask if dst == 0 else 16 | mask << 2
            codes.append(code)
        steps = [code for i, code in enumerate(codes) if i % (C + 1) != C]
        ends = codes[C::C + 1]
        return (f"@{self.P}_{tag}op1 = internal constant " + _array("i8", steps) + "\n"
                f"@{self.P}_{tag}op1end = internal constant " + _array("i8", ends))

    def single_run_function(self, d: Dfa, tag: str) -> str:
        """``@P_<tag>_run`` (as ``run_function``) for a capture automaton with at most one thread
        per state: the thread's two registers and the match's live in SSA values."""
        P, C, S = self.P, self.c.count, d.states
        cont, from_cont = "", ""
        if self.c.continuation is not None:
            cont = (f"  %iscont = icmp eq i64 %k, {self.c.continuation}\n"
                    f"  br i1 %iscont, label %loop, label %apply\napply:\n")
            from_cont = ", [{}, %body]"
        phi = (lambda init, nxt, same: f"[{init}, %entry], [{nxt}, %step]" + from_cont.format(same))
        return f"""define internal i64 @{P}_{tag}_run(ptr %data, i64 %len, i64 %from, i1 %not_empty, i64 %stop, ptr %out) {{
entry:
  %lb0 = call i64 @{P}_lb(ptr %data, i64 %from)
  %ii = shl i64 %lb0, 1
  %nez = zext i1 %not_empty to i64
  %iidx = or i64 %ii, %nez
  %ip = getelementptr inbounds [{len(d.init)} x i32], ptr @{P}_{tag}init, i64 0, i64 %iidx
  %ir = load i32, ptr %ip
  %row0 = zext i32 %ir to i64
  br label %loop
loop:
  %pos = phi i64 {phi("%from", "%npos", "%npos")}
  %row = phi i64 {phi("%row0", "%nrow", "%row")}
  %r0 = phi i64 {phi("-1", "%w0", "%r0")}
  %r1 = phi i64 {phi("-1", "%w1", "%r1")}
  %o0 = phi i64 {phi("-1", "%p0", "%o0")}
  %o1 = phi i64 {phi("-1", "%p1", "%o1")}
  %end = phi i64 {phi("-1", "%end2", "%end")}
  %more = icmp ult i64 %pos, %len
  br i1 %more, label %body, label %eot
body:
  %kc = call {{i64, i64}} @{P}_class(ptr %data, i64 %len, i64 %pos)
  %k = extractvalue {{i64, i64}} %kc, 0
  %npos = extractvalue {{i64, i64}} %kc, 1
{cont}  %ti = add i64 %row, %k
  %opp = getelementptr inbounds [{S * C} x i8], ptr @{P}_{tag}op1, i64 0, i64 %ti
  %op = load i8, ptr %opp
{self._single_ops("%op", "%pos", "%r0", "%r1", "%o0", "%o1", "w", "p")}
  %tp = getelementptr inbounds [{S * C} x i32], ptr @{P}_{tag}trans, i64 0, i64 %ti
  %e32 = load i32, ptr %tp
  %e = zext i32 %e32 to i64
  %m = trunc i64 %e to i1
  %end2 = select i1 %m, i64 %pos, i64 %end
  %nrow = lshr i64 %e, 2
  %atstop = icmp eq i64 %pos, %stop
  %dead = icmp ult i64 %nrow, {2 * C}
  %over = or i1 %atstop, %dead
  br i1 %over, label %finish, label %step
step:
  br label %loop
finish:
  store i64 %p0, ptr %out
  %out1 = getelementptr inbounds i64, ptr %out, i64 1
  store i64 %p1, ptr %out1
  ret i64 %end2
eot:
  %s = udiv i64 %row, {C}
  %eop = getelementptr inbounds [{S} x i8], ptr @{P}_{tag}op1end, i64 0, i64 %s
  %fop = load i8, ptr %eop
{self._single_ops("%fop", "%len", "%r0", "%r1", "%o0", "%o1", "fw", "fp")}
  store i64 %fp0, ptr %out
  %eout1 = getelementptr inbounds i64, ptr %out, i64 1
  store i64 %fp1, ptr %eout1
  %efp = getelementptr inbounds [{S} x i8], ptr @{P}_{tag}final, i64 0, i64 %s
  %ef = load i8, ptr %efp
  %efm = trunc i8 %ef to i1
  %res = select i1 %efm, i64 %len, i64 %end
  ret i64 %res
}}
"""

    @staticmethod
    def _single_ops(op: str, pos: str, r0: str, r1: str, o0: str, o1: str, w: str, p: str) -> str:
        """IR applying a ``single_op_table`` byte: the thread's registers ``%{w}0 %{w}1`` and the
        match's ``%{p}0 %{p}1`` after it."""
        lines = []
        for bit, name, src in ((1, f"{w}0", r0), (2, f"{w}1", r1), (4, f"{p}m0", r0), (8, f"{p}m1", r1)):
            lines += [f"  %{name}b = and i8 {op}, {bit}", f"  %{name}s = icmp ne i8 %{name}b, 0",
                      f"  %{name} = select i1 %{name}s, i64 {pos}, i64 {src}"]
        lines += [f"  %{p}xb = and i8 {op}, 16", f"  %{p}x = icmp ne i8 %{p}xb, 0",
                  f"  %{p}0 = select i1 %{p}x, i64 %{p}m0, i64 {o0}", f"  %{p}1 = select i1 %{p}x, i64 %{p}m1, i64 {o1}"]
        return "\n".join(lines)

    def reverse_function(self) -> str:
        """``i64 @P_rscan(data, len, from, end)``: the smallest position ``p >= from`` such that
        ``[p, end)`` matches (-1 if none), reading back from ``end``."""
        P, C = self.P, self.c.count
        rev = self.r.reverse
        W = C + 1
        return f"""define internal i64 @{P}_rscan(ptr %data, i64 %len, i64 %from, i64 %end) {{
entry:
  %atend = icmp uge i64 %end, %len
  br i1 %atend, label %start, label %after
after:
  %ac = call {{i64, i64}} @{P}_class(ptr %data, i64 %len, i64 %end)
  %ak = extractvalue {{i64, i64}} %ac, 0
  %lap = getelementptr inbounds [{C} x i8], ptr @{P}_rla, i64 0, i64 %ak
  %la8 = load i8, ptr %lap
  %la = zext i8 %la8 to i64
  br label %start
start:
  %lai = phi i64 [0, %entry], [%la, %after]
  %ip = getelementptr inbounds [{len(rev.init)} x i32], ptr @{P}_rinit, i64 0, i64 %lai
  %ir = load i32, ptr %ip
  %row0 = zext i32 %ir to i64
  br label %loop
loop:
  %p = phi i64 [%end, %start], [%qq, %step]
  %row = phi i64 [%row0, %start], [%nrow, %step]
  %best = phi i64 [-1, %start], [%best2, %step]
  %atzero = icmp eq i64 %p, 0
  br i1 %atzero, label %read, label %prev
prev:
  %q = call i64 @{P}_back(ptr %data, i64 %p)
  %kc = call {{i64, i64}} @{P}_class(ptr %data, i64 %len, i64 %q)
  %k = extractvalue {{i64, i64}} %kc, 0
  br label %read
read:
  %kk = phi i64 [{C}, %loop], [%k, %prev]
  %qq = phi i64 [0, %loop], [%q, %prev]
  %ti = add i64 %row, %kk
  %tp = getelementptr inbounds [{rev.states * W} x i32], ptr @{P}_rtrans, i64 0, i64 %ti
  %e32 = load i32, ptr %tp
  %e = zext i32 %e32 to i64
  %m = trunc i64 %e to i1
  %best2 = select i1 %m, i64 %p, i64 %best
  %nrow = lshr i64 %e, 1
  %limit = icmp ule i64 %p, %from
  %dead = icmp eq i64 %nrow, 0
  %over = or i1 %limit, %dead
  br i1 %over, label %done, label %step
step:
  br label %loop
done:
  ret i64 %best2
}}
"""

    def find_function(self) -> str:
        P = self.P
        check = ""
        if self.required:
            check = (f"  %has = call i1 @{P}_has_lit(ptr %data, i64 %len, i64 %from)\n"
                     f"  br i1 %has, label %run, label %none\nrun:\n")
        return f"""define internal {{i64, i64}} @{P}_find(ptr %data, i64 %len, i64 %from, i1 %after_empty) {{
entry:
  %inside = icmp ule i64 %from, %len
  br i1 %inside, label %check, label %none
check:
{check}  %r = call i64 @{P}_scan(ptr %data, i64 %len, i64 %from, i1 %after_empty)
  %found = icmp sge i64 %r, 0
  br i1 %found, label %yes, label %none
yes:
  %end = lshr i64 %r, 1
  %empty = trunc i64 %r to i1
  br i1 %empty, label %give, label %back
back:
  %s = call i64 @{P}_rscan(ptr %data, i64 %len, i64 %from, i64 %end)
  %started = icmp sge i64 %s, 0  ; a guard: the match the scan found has a start
  br i1 %started, label %give, label %none
give:
  %start = phi i64 [%end, %yes], [%s, %back]
  %r0 = insertvalue {{i64, i64}} undef, i64 %start, 0
  %r1 = insertvalue {{i64, i64}} %r0, i64 %end, 1
  ret {{i64, i64}} %r1
none:
  ret {{i64, i64}} {{i64 -1, i64 -1}}
}}
"""

    def group_function(self, group: int) -> str:
        P = self.P
        return f"""define internal {{i64, i64}} @{P}_group{group}(ptr %data, i64 %len, i64 %start, i64 %end) {{
entry:
  %out = alloca [2 x i64], align 8
  store i64 -1, ptr %out
  %o1 = getelementptr inbounds i64, ptr %out, i64 1
  store i64 -1, ptr %o1
  %ne = icmp ult i64 %start, %end
  %e = call i64 @{P}_g{group}_run(ptr %data, i64 %len, i64 %start, i1 %ne, i64 %end, ptr %out)
  %same = icmp eq i64 %e, %end
  br i1 %same, label %read, label %none
read:
  %gs = load i64, ptr %out
  %ge = load i64, ptr %o1
  %set0 = icmp sge i64 %gs, 0
  %set1 = icmp sge i64 %ge, 0
  %set = and i1 %set0, %set1
  br i1 %set, label %give, label %none
give:
  %g0 = insertvalue {{i64, i64}} undef, i64 %gs, 0
  %g1 = insertvalue {{i64, i64}} %g0, i64 %ge, 1
  ret {{i64, i64}} %g1
none:
  ret {{i64, i64}} {{i64 -1, i64 -1}}
}}
"""
