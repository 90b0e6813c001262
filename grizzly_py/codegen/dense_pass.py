"""The optimized variant's branch-free pass for window aggregates over densely placed keys.

A blocked kernel (predicated filters) with a densely placed key (Grizzly section 6.2.2) first
compacts each block's surviving rows into a selection vector, then updates their entries one
by one, each row checking its window, the key range and whether its entry is new. When every
aggregate of the window has a branch-free update (count, sum, avg, min, max, var, stddev: the
update macros of ``aggregates.ll.j2`` select on the row's validity), a block can instead run as
one pass over all its rows that updates ``entry[key - lo]`` with the filters' verdict as the
validity: ``count += keep`` for YSB, the loop hand-written C uses. Two things make that sound:

- **A guard per block.** A pre-pass reads the event time and the key of every row of the block
  (minimum and maximum, a vectorized loop) and takes the pass only when every row lies in the
  window (pane) the kernel has open and every key in the dense range; otherwise the block takes
  the general path, which stops exactly where a key leaves the range. Either path evaluates
  event time and filters for every row, so errors are the same; the pass reads the aggregates'
  argument columns for filtered rows too, so only plain columns qualify as arguments (a
  computed argument could fail on a row the filters drop).
- **Entries claimed afterwards.** The pass updates an entry without giving a new entry its tag
  and key: testing for a new entry would cost a load-dependent branch per row. Every aggregate
  counts the rows it took (its ``n`` slot), which is non-zero exactly when a row reached the
  entry, so the variant's ``claim`` function gives every entry with tag 0 and a non-zero count
  the tag, key and table size the general path would have. The kernel lowers
  ``state[abi.STATE_UNCLAIMED]`` (INT64_MAX: nothing to claim) to the start of each window or
  pane the pass ran in; the engine then calls ``claim`` after the native call, before anything
  (triggers, merges, migration, snapshots) reads the state (``Kernel._claim_entries``), and
  ``claim`` reads only the dense tables that start there or later, then resets the word. (A
  sliding window of ``c`` panes keeps about ``c`` tables open, and a call reaches one or two:
  reading them all after every call cost as much as the pass itself at ``c = 100``.)

**Selective filters** (``CodegenOptions.dense_select``, chosen by ``specialize.py`` when the
profile says the filters keep few rows): every row's update is a read-modify-write of its entry,
so where the filters drop most rows the pass first lists the kept rows (branch-free, into the
kernel's selection vector) and a second loop updates only theirs. On YSB (a third of the rows
kept) that took ~5% off the optimized kernel's time; where most rows are kept, the list is work
the single pass does not do (+8% at two thirds, +30% at 95%: docs/benchmarks.md).

**Eight rows at a time** (``CodegenOptions.simd_select``, chosen with ``dense_select`` where the
host has AVX-512 F and VL and every filter compares a column with a literal: ``simd_filters``):
the list is made by a vector loop over the block's first multiple of 8 rows. Each filter is
compared lane-wise (a dictionary column's indices against the literal's code, an integer column
against the integer), the kept lanes' row indices are compressed in a register (``vpcompressq``;
its form that stores to memory is microcoded on AMD Zen 4 and ten times slower there) and stored
at the end of the list, which grows by the mask's population count; the remaining rows go
through the row-by-row loop. A dictionary index outside its dictionary anywhere in those
lanes sends the block to the general path, which reports it with its row. On YSB this took the
optimized kernel from ~1.5 to ~1.25 ns per record (the row-by-row list, with its bounds check
and a store per row, was the kernel's largest part); a microbenchmark with the bounds check
hoisted into the pre-pass instead, without the vector loop, was slower in the kernel (the
pre-pass then reads a third column). Other hosts keep the row-by-row list: the option is
ignored where the host lacks the instructions (LLVM would abort compiling the intrinsic).

The pass applies to tumbling windows and the panes of sliding ones in the no-nulls kernel, with
one key that is a plain column (not a string) and dense tables of at most ``MAX_TABLE_BYTES``.
``dense_pass`` returns its template arguments (``dense_pass.ll.j2``), or None where it does not
apply.
"""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa

from ..expressions import BinaryOp, Column, Literal, strip_alias
from ..physical.pipelines import Pipeline
from .expr_emitter import INT_PREDICATES, EmitContext, ExprEmitter
from .lowering import aggregate_input, emit_filters, key_word, macro_lines

CLAIM_FUNCTION = "claim"  # {prefix}_claim(ptr state), in the unit of the kernel that has the pass
# The largest dense table (bytes) that gets the pass: a claim reads every entry of each open
# table after a call in which the pass ran, so it must stay cheap next to a call's work (a table
# this size is cache-resident, where the branch-free pass also gains the most).
MAX_TABLE_BYTES = 1 << 20


_FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def simd_filters(pipeline: Pipeline) -> list[tuple[str, str, object]] | None:
    """The pipeline's filters as (column, operator, literal) where the vector selection can
    evaluate every one of them eight rows at a time: a dictionary-coded string column ``==`` or
    ``!=`` a string, or a signed integer column compared with an integer. None otherwise."""
    if not pipeline.filters:
        return None
    out = []
    for f in pipeline.filters:
        e = strip_alias(f)
        if not isinstance(e, BinaryOp) or e.op not in INT_PREDICATES:
            return None
        left, right, op = strip_alias(e.left), strip_alias(e.right), e.op
        if isinstance(left, Literal) and isinstance(right, Column):
            left, right, op = right, left, _FLIPPED[op]
        if not isinstance(left, Column) or not isinstance(right, Literal) or right.value is None \
                or left.name not in pipeline.input_schema.names:
            return None
        t = pipeline.input_schema.field(left.name).arrow_type
        if pa.types.is_dictionary(t):
            ok = op in ("==", "!=") and right.type_name == "string" and pa.types.is_signed_integer(t.index_type)
        else:
            ok = pa.types.is_signed_integer(t) and right.type_name == "int64" and type(right.value) is int
        if not ok:
            return None
        out.append((left.name, op, right.value))
    return out


def simd_select_available() -> bool:
    """Whether this host compiles the vector selection: x86 with AVX-512 F and VL (the
    register form of ``vpcompressq``; LLVM cannot compile the intrinsic for other CPUs and
    aborts the process, so the option is ignored there). ``specialize.py`` chooses the option
    where the variant is specialized, so a plan's variants follow the host they run on (a Spark
    executor specializes on its own)."""
    from ..jit import host_has_features
    return host_has_features("avx512f", "avx512vl")


def _simd_terms(pipeline: Pipeline, ctx: EmitContext, emitter: ExprEmitter) -> list[dict] | None:
    """The vector selection's comparisons (``simd_filters``) with the registers they read, or
    None where a filter column is not read as it is (a dictionary the engine decodes)."""
    filters = simd_filters(pipeline)
    if filters is None:
        return None
    terms = []
    for name, op, value in filters:
        t = ctx.columns[name].arrow_type
        c = emitter.column_registers(name)
        if pa.types.is_dictionary(t):  # (the column's index type; the literal's code is a parameter)
            terms.append(dict(vals=f"{c}.vals", off=f"{c}.off", bits=t.index_type.bit_width, pred=INT_PREDICATES[op],
                              rhs=ctx.dict_param(name, value), dlen=f"{c}.dlen"))
        elif pa.types.is_signed_integer(t):
            terms.append(dict(vals=f"{c}.vals", off=f"{c}.off", bits=t.bit_width, pred=INT_PREDICATES[op],
                              rhs=str(int(value)), dlen=None))
        else:
            return None
    return terms


def dense_pass(pipeline: Pipeline, options, ctx: EmitContext, emitter: ExprEmitter, grouping, dense: dict,
               pane: int) -> dict | None:
    """The template arguments of the branch-free pass for the kernel being emitted in ``ctx``,
    or None where it does not apply."""
    t = pipeline.terminal
    field, key_expr = t.keys[0]
    if dense["valid"] != "true" or field.dtype.is_string or not isinstance(strip_alias(key_expr), Column):
        return None  # (a computed key evaluated for filtered rows too could raise for them)
    if dense["cap"] * grouping.entry_size > MAX_TABLE_BYTES or not grouping.aggregates:
        return None
    for a, call in zip(grouping.aggregates, t.aggregates):
        if a.spec.count_slot(a.kind) is None or a.valid != "true" or a.spec.ordered:
            return None  # a holistic aggregate (it branches), an argument that may be null, or one
                         # that reads the record's event time and position (not kept in the pass)
        if call.arg is not None and not isinstance(strip_alias(call.arg), Column):
            return None
    body, row = ctx.body, ctx.row
    try:
        ctx.body, ctx.row = [], "%pi"  # the pre-pass: event time and key of every row
        ctx.new_row()
        ts = emitter.emit(pipeline.event_time)
        key = key_word(emitter, ctx, key_expr, field.dtype)
        pre = ctx.body
        ctx.body, ctx.row = [], "%fi"  # the pass: filters, key and arguments, then the updates
        ctx.new_row()
        keep = emit_filters(pipeline, options, ctx, emitter, predicated=True, name="fp.filter")
        select = bool(pipeline.filters) and options.dense_select
        simd = None
        if select and options.simd_select and simd_select_available():  # (LLVM aborts on the
            simd = _simd_terms(pipeline, ctx, emitter)                     # intrinsic elsewhere)
        if select:  # the filters list the kept rows (%fi); a second loop reads key and arguments of each (%fr)
            fast, valid = ctx.body, "true"
            ctx.body, ctx.row = [], "%fr"
            ctx.new_row()
        else:  # every row updates its entry, with the filters' verdict as its validity
            valid = keep
        fkey = key_word(emitter, ctx, key_expr, field.dtype)
        aggregates = []
        for a, call in zip(grouping.aggregates, t.aggregates):
            value = a.value
            if call.arg is not None and a.spec.reads != "validity":
                value = aggregate_input(emitter, call.arg, call.arg.dtype(pipeline.input_schema)).val
            # count() counts the rows the filters kept: the row's validity
            aggregates.append(replace(a, idx=f"fp{a.idx}", value=value, valid=valid, grp="%fp.grp",
                                      arg_text=a.arg_text or "*", counts_rows=False))
        fast, update = (fast, ctx.body) if select else (ctx.body, [])
    finally:
        ctx.body, ctx.row = body, row
        ctx.new_row()
    updates = macro_lines("aggregates.ll.j2", "update", aggregates)
    first = grouping.aggregates[0]
    return dict(pre=pre, ts=ts.val, key=key.val, body=fast, select=select, simd=simd, update_body=update, keep=keep,
                fkey=fkey.val, lo=dense["lo"], cap=dense["cap"], pane=pane, entry_size=grouping.entry_size,
                updates=updates, late=bool(pipeline.terminal.allowed_lateness_ms),
                count_offset=first.off + 8 * first.spec.count_slot(first.kind), key_name=field.name)
