"""How generated code computes each scalar function (``grizzly_py/functions/``): one emitter per
function name in ``EMITTERS``, called by ``ExprEmitter`` for a ``Call``.

An emitter gets the call and its arguments' values (strings as a pointer and a byte length into
an Arrow buffer, a literal or the arena) and returns the result's value; every function is
null-in, null-out, so the result is valid where every argument is (``emit_call`` does that), and
an emitter may narrow it (``split_part`` of an absent piece). The work is in the runtime
(``runtime/strfuncs.ll``: search, UTF-8, case mapping, replacement, the civil calendar, digits);
new text goes to the kernel's arena (``arena``), which the kernel frees on every exit. A pattern
that is plain text (``literal=True``, or a regular expression without special characters) is
searched for by the runtime; a regular expression runs as its compiled automaton
(``codegen/regex/``): internal functions defined once per pattern per module (``regex_functions``).
"""

from __future__ import annotations

import re
from typing import Callable

from ..expressions import Call, structural_key
from . import abi
from .emit_context import EmitContext, Value
from .regex import Regex, compile_pattern
from .regex.replace import replace_module

# (expr_emitter, call, argument values) -> the result (its validity narrowed by emit_call)
Emitter = Callable[[object, Call, list[Value]], Value]
EMITTERS: dict[str, Emitter] = {}


def emits(*names: str):
    def register(fn: Emitter) -> Emitter:
        for name in names:
            EMITTERS[name] = fn
        return fn
    return register


def emit_call(emitter, call: Call) -> Value:
    """The value of ``call``: its emitter's result, valid where every argument is. The functions
    are pure: the same call again in the same row and code (a filter's ``lower(channel)`` that
    the projection uses too) reuses the first result instead of computing it again, as column
    loads are reused (``EmitContext._loaded``); code emitted elsewhere (another body, another
    row register) computes its own."""
    fn = EMITTERS.get(call.func)
    if fn is None:
        raise NotImplementedError(f"{call!r}: {call.func} is not compiled yet")
    ctx, key = emitter.ctx, structural_key(call)
    seen = ctx._calls.get(key)
    if seen is not None and seen[0] is ctx.body and seen[1] == ctx.row:
        return seen[2]
    value = _emit_call(emitter, call, fn)
    ctx._calls[key] = (ctx.body, ctx.row, value)
    return value


def _emit_call(emitter, call: Call, fn: Emitter) -> Value:
    args = [emitter.emit(a) for a in call.args]
    for a, e in zip(args, call.args):
        if a.kind == "dict":
            raise AssertionError(f"{e!r}: a dictionary column reaches {call.func} undecoded (columns_to_decode)")
    out = fn(emitter, call, args)
    valid = out.valid
    for a in args:
        valid = _and(emitter.ctx, valid, a.valid)
    return Value(out.kind, out.val, valid, length=out.length)


# --- helpers ---------------------------------------------------------------------------------
def arena(ctx: EmitContext) -> str:
    """The kernel's arena (``runtime/strfuncs.ll``): set up in its entry block, freed on every exit."""
    if "%gz.arena" not in ctx.scratch:
        ctx.scratch.add("%gz.arena")
        ctx.preamble.append("  %gz.arena = alloca [3 x i64], align 8")
        ctx.preamble.append("  call void @gz_arena_init(ptr %gz.arena)")
        ctx.epilogue.append("  call void @gz_arena_free(ptr %gz.arena)")
    return "%gz.arena"


def alloc(ctx: EmitContext, size: str) -> str:
    """``size`` bytes of the arena (at least one), an out-of-memory error where there are none."""
    one, p, oom = ctx.fresh("asz"), ctx.fresh("abuf"), ctx.fresh("aoom")
    ctx.emit(f"{one} = call i64 @llvm.umax.i64(i64 {size}, i64 1)")
    ctx.emit(f"{p} = call ptr @gz_arena_alloc(ptr {arena(ctx)}, i64 {one})")
    ctx.emit(f"{oom} = icmp eq ptr {p}, null")
    ctx.error_branch(oom, abi.ERROR_OUT_OF_MEMORY)
    return p


def literal(emitter, text: str) -> tuple[str, str]:
    """(pointer, length) of ``text`` as a constant of the module."""
    name, n = emitter.ctx.string_constant(text)
    return name, str(n)


def _and(ctx: EmitContext, a: str, b: str) -> str:
    if a == "true":
        return b
    if b == "true":
        return a
    out = ctx.fresh("fv")
    ctx.emit(f"{out} = and i1 {a}, {b}")
    return out


def _pattern(call: Call) -> tuple[str | None, Regex | None]:
    """``(text, None)`` when ``call``'s pattern is plain text (``re`` finds exactly its
    occurrences, as the runtime's substring search does), else ``(None, the compiled pattern)``."""
    pattern = call.option("pattern")
    if call.option("literal", False):
        return pattern, None
    regex = compile_pattern(pattern)
    return (regex.literal, None) if regex.literal is not None else (None, regex)


def regex_functions(ctx: EmitContext, regex: Regex, *, find: bool = False, group: int = 0,
                    replace: bool = False) -> str:
    """The prefix of ``regex``'s functions in the kernel's module (``codegen/regex/emit.py``):
    ``_search`` and ``_count``, with ``find`` also ``_find``, with ``group`` also ``_group<group>``,
    with ``replace`` also ``_replace``. Each part is defined once per pattern per module."""
    prefix, defined = ctx.regexes.setdefault(regex.pattern, (f"{ctx.prefix}.rx{len(ctx.regexes)}", set()))
    parts = [("search", regex.emit_search)]
    if find or group or replace:
        parts.append(("find", regex.emit_find))
    if group:
        parts.append((f"group{group}", lambda p: regex.emit_group(p, group)))
    if replace:
        parts.append(("replace", replace_module))
    for part, emit in parts:
        if part not in defined:
            defined.add(part)
            ctx.globals.append(emit(prefix))
    return prefix


# --- predicates and counts -------------------------------------------------------------------
@emits("str.contains")
def _contains(emitter, call, args):
    s, ctx = args[0], emitter.ctx
    text, regex = _pattern(call)
    out = ctx.fresh("has")
    if regex is not None:
        ctx.emit(f"{out} = call i1 @{regex_functions(ctx, regex)}_search(ptr {s.val}, i64 {s.length})")
        return Value("bool", out, "true")
    p, m = literal(emitter, text)
    f = ctx.fresh("find")
    ctx.emit(f"{f} = call i64 @gz_str_find(ptr {s.val}, i64 {s.length}, ptr {p}, i64 {m}, i64 0)")
    ctx.emit(f"{out} = icmp sge i64 {f}, 0")
    return Value("bool", out, "true")


@emits("str.starts_with", "str.ends_with")
def _affix(emitter, call, args):
    s, ctx = args[0], emitter.ctx
    starts = call.func == "str.starts_with"
    p, m = literal(emitter, call.option("prefix" if starts else "suffix"))
    out = ctx.fresh("affix")
    ctx.emit(f"{out} = call i1 @gz_str_{'starts' if starts else 'ends'}(ptr {s.val}, i64 {s.length}, ptr {p}, i64 {m})")
    return Value("bool", out, "true")


@emits("str.len_chars")
def _len_chars(emitter, call, args):
    s, ctx = args[0], emitter.ctx
    out = ctx.fresh("nchar")
    ctx.emit(f"{out} = call i64 @gz_utf8_count(ptr {s.val}, i64 {s.length})")
    return Value("int", out, "true")


@emits("str.count_matches")
def _count_matches(emitter, call, args):
    s, ctx = args[0], emitter.ctx
    text, regex = _pattern(call)
    out = ctx.fresh("nmatch")
    if regex is not None:
        ctx.emit(f"{out} = call i64 @{regex_functions(ctx, regex)}_count(ptr {s.val}, i64 {s.length})")
        return Value("int", out, "true")
    p, m = literal(emitter, text)
    ctx.emit(f"{out} = call i64 @gz_str_count(ptr {s.val}, i64 {s.length}, ptr {p}, i64 {m})")
    return Value("int", out, "true")


# --- new strings -----------------------------------------------------------------------------
@emits("str.to_lowercase", "str.to_uppercase")
def _case(emitter, call, args):
    s, ctx = args[0], emitter.ctx
    dst = alloc(ctx, s.length)
    upper = "true" if call.func == "str.to_uppercase" else "false"
    ctx.emit(f"call void @gz_str_case(ptr {dst}, ptr {s.val}, i64 {s.length}, i1 {upper})")
    return Value("str", dst, "true", length=s.length)


@emits("str.slice")
def _slice(emitter, call, args):
    """Code points [start, end) with start = offset (from the end when negative) and end = start
    + length, both clamped to the string: a view of the argument, no copy."""
    s, ctx = args[0], emitter.ctx
    offset, length = call.option("offset"), call.option("length")
    if offset >= 0:
        start = str(offset)
    else:
        count, start = ctx.fresh("nchar"), ctx.fresh("slstart")
        ctx.emit(f"{count} = call i64 @gz_utf8_count(ptr {s.val}, i64 {s.length})")
        ctx.emit(f"{start} = add i64 {count}, {offset}")
    if length is None:
        end = str(abi.INT64_MAX)
    else:
        end = ctx.fresh("slend")
        ctx.emit(f"{end} = add i64 {start}, {length}")
    b0, b1, e0, e1, n, ptr = (ctx.fresh("sl") for _ in range(6))
    ctx.emit(f"{b0} = call i64 @llvm.smax.i64(i64 {start}, i64 0)")
    ctx.emit(f"{b1} = call i64 @gz_utf8_offset(ptr {s.val}, i64 {s.length}, i64 {b0})")
    ctx.emit(f"{e0} = call i64 @llvm.smax.i64(i64 {end}, i64 0)")
    ctx.emit(f"{e1} = call i64 @gz_utf8_offset(ptr {s.val}, i64 {s.length}, i64 {e0})")
    span = ctx.fresh("sl")
    ctx.emit(f"{span} = sub i64 {e1}, {b1}")
    ctx.emit(f"{n} = call i64 @llvm.smax.i64(i64 {span}, i64 0)")
    ctx.emit(f"{ptr} = getelementptr inbounds i8, ptr {s.val}, i64 {b1}")
    return Value("str", ptr, "true", length=n)


@emits("str.split_part")
def _split_part(emitter, call, args):
    s, ctx = args[0], emitter.ctx
    sep, m = literal(emitter, call.option("separator"))
    start_a, end, start, present, nonempty, ok, n, ptr = (ctx.fresh("sp") for _ in range(8))
    ctx.preamble.append(f"  {start_a} = alloca i64, align 8")
    ctx.emit(f"{end} = call i64 @gz_str_split_part(ptr {s.val}, i64 {s.length}, ptr {sep}, i64 {m}, "
             f"i64 {call.option('index')}, ptr {start_a})")
    ctx.emit(f"{start} = load i64, ptr {start_a}")
    ctx.emit(f"{present} = icmp sge i64 {end}, 0")
    ctx.emit(f"{nonempty} = icmp ne i64 {s.length}, 0")
    ctx.emit(f"{ok} = and i1 {present}, {nonempty}")
    span = ctx.fresh("sp")
    ctx.emit(f"{span} = sub i64 {end}, {start}")
    ctx.emit(f"{n} = select i1 {ok}, i64 {span}, i64 0")
    first = ctx.fresh("sp")
    ctx.emit(f"{first} = select i1 {ok}, i64 {start}, i64 0")
    ctx.emit(f"{ptr} = getelementptr i8, ptr {s.val}, i64 {first}")
    return Value("str", ptr, ok, length=n)


@emits("str.replace", "str.replace_all")
def _replace(emitter, call, args):
    """The first (or every) match replaced by the literal ``value`` (``re.sub``'s matches)."""
    s, ctx = args[0], emitter.ctx
    text, regex = _pattern(call)
    v, vl = literal(emitter, call.option("value"))
    len_a, out, oom, n = ctx.fresh("rl"), ctx.fresh("rep"), ctx.fresh("room"), ctx.fresh("rn")
    ctx.preamble.append(f"  {len_a} = alloca i64, align 8")
    every = "true" if call.func == "str.replace_all" else "false"
    if regex is not None:
        ctx.emit(f"{out} = call ptr @{regex_functions(ctx, regex, replace=True)}_replace(ptr {arena(ctx)}, "
                 f"ptr {s.val}, i64 {s.length}, ptr {v}, i64 {vl}, i1 {every}, ptr {len_a})")
    else:
        p, m = literal(emitter, text)
        ctx.emit(f"{out} = call ptr @gz_str_replace(ptr {arena(ctx)}, ptr {s.val}, i64 {s.length}, ptr {p}, "
                 f"i64 {m}, ptr {v}, i64 {vl}, i1 {every}, ptr {len_a})")
    ctx.emit(f"{oom} = icmp eq ptr {out}, null")
    ctx.error_branch(oom, abi.ERROR_OUT_OF_MEMORY)
    ctx.emit(f"{n} = load i64, ptr {len_a}")
    return Value("str", out, "true", length=n)


@emits("str.extract")
def _extract(emitter, call, args):
    """Capture group ``group_index`` (0: the whole match) of the first match: a view of the
    argument, null where nothing matches or the group took no part in the match."""
    s, ctx = args[0], emitter.ctx
    regex, group = compile_pattern(call.option("pattern")), call.option("group_index")
    prefix = regex_functions(ctx, regex, find=True, group=group)
    m, start, end, found = ctx.fresh("xm"), ctx.fresh("xs"), ctx.fresh("xe"), ctx.fresh("xf")
    ctx.emit(f"{m} = call {{i64, i64}} @{prefix}_find(ptr {s.val}, i64 {s.length}, i64 0, i1 false)")
    ctx.emit(f"{start} = extractvalue {{i64, i64}} {m}, 0")
    ctx.emit(f"{end} = extractvalue {{i64, i64}} {m}, 1")
    ctx.emit(f"{found} = icmp sge i64 {start}, 0")
    if group:
        # run on an empty span where nothing matched: no branch, and the group is not found
        s0, e0, g = ctx.fresh("xs"), ctx.fresh("xe"), ctx.fresh("xg")
        ctx.emit(f"{s0} = select i1 {found}, i64 {start}, i64 0")
        ctx.emit(f"{e0} = select i1 {found}, i64 {end}, i64 0")
        ctx.emit(f"{g} = call {{i64, i64}} @{prefix}_group{group}(ptr {s.val}, i64 {s.length}, i64 {s0}, i64 {e0})")
        start, end, found = ctx.fresh("xs"), ctx.fresh("xe"), ctx.fresh("xf")
        ctx.emit(f"{start} = extractvalue {{i64, i64}} {g}, 0")
        ctx.emit(f"{end} = extractvalue {{i64, i64}} {g}, 1")
        ctx.emit(f"{found} = icmp sge i64 {start}, 0")
    first, n, ptr = ctx.fresh("xs"), ctx.fresh("xn"), ctx.fresh("xp")
    ctx.emit(f"{first} = select i1 {found}, i64 {start}, i64 0")
    span = ctx.fresh("xn")
    ctx.emit(f"{span} = sub i64 {end}, {start}")
    ctx.emit(f"{n} = select i1 {found}, i64 {span}, i64 0")
    ctx.emit(f"{ptr} = getelementptr inbounds i8, ptr {s.val}, i64 {first}")
    return Value("str", ptr, found, length=n)


@emits("concat_str")
def _concat(emitter, call, args):
    ctx = emitter.ctx
    sep, sl = literal(emitter, call.option("separator", ""))
    total = str(int(sl) * (len(args) - 1))
    for a in args:
        t = ctx.fresh("cat")
        ctx.emit(f"{t} = add i64 {total}, {a.length}")
        total = t
    dst = alloc(ctx, total)
    at = "0"
    for i, a in enumerate(args):
        if i and int(sl):
            at = _copy(ctx, dst, at, sep, sl)
        at = _copy(ctx, dst, at, a.val, a.length)
    return Value("str", dst, "true", length=total)


def _copy(ctx: EmitContext, dst: str, at: str, src: str, n: str) -> str:
    """Copy (``src``, ``n``) to ``dst + at``; the offset after it."""
    d, nxt = ctx.fresh("cp"), ctx.fresh("cp")
    ctx.emit(f"{d} = getelementptr inbounds i8, ptr {dst}, i64 {at}")
    ctx.emit(f"call void @llvm.memcpy.p0.p0.i64(ptr {d}, ptr {src}, i64 {n}, i1 false)")
    ctx.emit(f"{nxt} = add i64 {at}, {n}")
    return nxt


# --- dates -----------------------------------------------------------------------------------
PARTS = {"year": 0, "month": 1, "day": 2, "hour": 3, "minute": 4, "second": 5, "weekday": 6, "yday": 7}


def civil(ctx: EmitContext, ms: str) -> str:
    """The calendar parts of ``ms`` (``gz_civil``: 8 words in a scratch of the kernel)."""
    if "%gz.civil" not in ctx.scratch:
        ctx.scratch.add("%gz.civil")
        ctx.preamble.append("  %gz.civil = alloca [8 x i64], align 8")
    ctx.emit(f"call void @gz_civil(i64 {ms}, ptr %gz.civil)")
    return "%gz.civil"


def _part(ctx: EmitContext, parts: str, name: str) -> str:
    p, v = ctx.fresh("dtp"), ctx.fresh("dt")
    ctx.emit(f"{p} = getelementptr inbounds i64, ptr {parts}, i64 {PARTS[name]}")
    ctx.emit(f"{v} = load i64, ptr {p}")
    return v


@emits("dt.year", "dt.month", "dt.day", "dt.hour", "dt.minute", "dt.weekday")
def _date_part(emitter, call, args):
    ctx = emitter.ctx
    ms = emitter.convert(args[0], "int").val
    return Value("int", _part(ctx, civil(ctx, ms), call.func.split(".")[1]), "true")


# what each strftime directive writes: (part, digits) or a name table
_DIGITS = {"m": ("month", 2), "d": ("day", 2), "H": ("hour", 2), "M": ("minute", 2), "S": ("second", 2),
           "j": ("yday", 3)}
_NAMES = {"a": ("weekday", "@gz_day_names"), "b": ("month", "@gz_month_names")}  # (functions.datetimes's names)


@emits("dt.strftime")
def _strftime(emitter, call, args):
    """The format unrolled at compile time: literal text copied from a constant, each directive
    written by the runtime's digit and name helpers."""
    ctx = emitter.ctx
    ms = emitter.convert(args[0], "int").val
    pieces = re.split(r"(%.)", call.option("format"))
    most = sum(21 if p == "%Y" else 3 if p in ("%j", "%a", "%b") else 2 if p.startswith("%") and p != "%%"
               else 1 if p == "%%" else len(p.encode()) for p in pieces)
    dst = alloc(ctx, str(most))
    parts = civil(ctx, ms)
    at = "0"
    for piece in pieces:
        if not piece:
            continue
        if piece == "%%" or not piece.startswith("%"):
            text = "%" if piece == "%%" else piece
            p, n = literal(emitter, text)
            at = _copy(ctx, dst, at, p, n)
            continue
        d, wrote, nxt = ctx.fresh("st"), ctx.fresh("st"), ctx.fresh("st")
        ctx.emit(f"{d} = getelementptr inbounds i8, ptr {dst}, i64 {at}")
        directive = piece[1]
        if directive == "Y":
            ctx.emit(f"{wrote} = call i64 @gz_fmt_year(ptr {d}, i64 {_part(ctx, parts, 'year')})")
        elif directive in _DIGITS:
            name, width = _DIGITS[directive]
            ctx.emit(f"{wrote} = call i64 @gz_fmt_digits(ptr {d}, i64 {_part(ctx, parts, name)}, i64 {width})")
        else:
            name, table = _NAMES[directive]
            i, off, src = ctx.fresh("st"), ctx.fresh("st"), ctx.fresh("st")
            ctx.emit(f"{i} = sub i64 {_part(ctx, parts, name)}, 1")
            ctx.emit(f"{off} = mul i64 {i}, 3")
            ctx.emit(f"{src} = getelementptr inbounds i8, ptr {table}, i64 {off}")
            ctx.emit(f"call void @llvm.memcpy.p0.p0.i64(ptr {d}, ptr {src}, i64 3, i1 false)")
            ctx.emit(f"{wrote} = add i64 0, 3")
        ctx.emit(f"{nxt} = add i64 {at}, {wrote}")
        at = nxt
    return Value("str", dst, "true", length=at)


__all__ = ["EMITTERS", "emit_call", "emits", "arena"]
