"""Code generation for join pipelines (window joins, interval joins and regular joins).

A join pipeline (``physical.pipelines.JoinTerminal``) reads two inputs. Each side compiles to its
own fused kernel over that side's batches (``join_side_pipeline``): event time, key words (string
keys interned by the engine into one id space shared by both sides), a null-key check, the
lateness check, then the *join-insert* terminal (``join_insert.ll.j2``): the record's ref goes to
its key's entry in the join state and the other side's entry is probed. The kernels of both
sides work on one shared join state block (its address is a word of each side's own state
block, which keeps the side's counters). The trigger functions (``join_state.ll.j2``, compiled
at O1) emit the pairs of complete windows as refs and drop expired state. The engine keeps each
side's batches and turns refs into rows with Arrow ``take`` (``engine/join_kernel.py``).

A ref numbers a row of one side: the engine passes the ref of each batch's first row (the rows
of the batches it stored before), so refs grow with arrival on each side and the engine finds
the batch of a ref by its position.

State layouts, in i64 words:

- shared join state (``J_*``): the earliest end (interval: expiry) held, the window directory
  (tumbling/sliding) or the key table (sessions, interval), the interval join's output vector
  of (left ref, right ref, event time) triples, the smallest ref held per side, the records held.
- directory slot (``SLOT_*``): window start, the window's table (3 words), its pairs, the
  smallest ref per side.
- table entry: tag, key words, then (windows, interval) the left and right refs as vectors
  ``{data, length, capacity}`` (interval joins keep (ref, event time) per record), or (sessions)
  the head of the key's session list; a session node is ``{next, start, end, smallest left ref,
  smallest right ref, left refs, right refs}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pyarrow as pa

from ..physical.pipelines import JoinTerminal, Pipeline, join_side_pipeline
from ..expressions import Column
from ..types import INT64, Schema
from . import abi
from .emit_context import Value
from .expr_emitter import EmitContext, ExprEmitter
from .generated import CODEGEN_VERSION, KERNELS, CodeUnit, GeneratedPipeline, KernelCode
from .lowering import (MAX_KEYS, column_layouts, columns_to_decode, emit_filters, interned_column, key_word,
                       template_lines)
from .options import CodegenOptions
from .templates import render, runtime_declarations

INT64_MIN, INT64_MAX = abi.INT64_MIN, abi.INT64_MAX

# the layout's words, by the names the join templates use
LAYOUT = dict(J_MIN_OPEN_END=abi.J_MIN_OPEN_END, J_DIR=abi.J_DIR, J_TABLE=abi.J_TABLE, J_OUT=abi.J_OUT,
              J_MIN_REF=abi.J_MIN_REF, J_LIVE=abi.J_LIVE, S_SHARED=abi.J_SIDE_SHARED, S_BASE=abi.J_SIDE_BASE,
              S_INSERTED=abi.J_SIDE_INSERTED, S_PAIRS_FILTERED=abi.J_SIDE_PAIRS_FILTERED, SLOT_WORDS=abi.J_SLOT_WORDS, SLOT_PAIRS=abi.J_SLOT_PAIRS,
              SLOT_FIRST=abi.J_SLOT_FIRST, NODE_MIN=abi.J_NODE_MIN, NODE_REFS=abi.J_NODE_REFS,
              NODE_WORDS=abi.J_NODE_WORDS)


@dataclass
class GeneratedJoin:
    """A join pipeline's code: one ``GeneratedPipeline`` per side (its kernels, its column
    layout), and the trigger unit they share."""

    pipeline: Pipeline
    options: CodegenOptions
    prefix: str
    sides: list[GeneratedPipeline]
    state: CodeUnit
    key_words: int
    entry_size: int
    units: dict[str, CodeUnit] = field(default_factory=dict)  # every unit, for display

    @property
    def ir(self) -> str:
        return "\n".join(f"; ==== unit {n} (O{u.opt_level})\n{u.ir}" for n, u in self.units.items())


# a keep offset no event time reaches: records of a regular join without TTL never expire
_FOREVER = 1 << 64


def _geometry(t: JoinTerminal) -> dict:
    """Window size/slide/offset/pane/gap, interval bounds and (joins that pair on arrival) how
    long each side's records stay, as template constants: a record is held while
    ``ts + keep{side} >= watermark``."""
    arrival = dict(size=0, slide=0, offset=0, pane=0, pane_offset=0, gap=0, ts_min=INT64_MIN, ts_max=INT64_MAX)
    if t.join_kind == "interval":  # late below the watermark; held while an on-time record may pair
        return dict(arrival, lo=t.lower_ms, hi=t.upper_ms, keep=(t.upper_ms, -t.lower_ms), bounded=True,
                    ttl=False)
    if t.join_kind in ("regular", "lookup"):  # no lateness, no bounds; held for the TTL
        keep = _FOREVER if t.ttl_ms is None else t.ttl_ms
        return dict(arrival, lo=0, hi=0, keep=(keep, keep), bounded=False, ttl=t.ttl_ms is not None,
                    lookup=t.join_kind == "lookup")
    if t.join_kind == "session":
        gap = t.assigner.gap_ms
        return dict(size=0, slide=0, offset=0, pane=0, pane_offset=0, gap=gap, lo=0, hi=0, ts_min=INT64_MIN + gap,
                    ts_max=INT64_MAX - gap)
    geo = t.assigner.geometry
    size, slide = geo.size, geo.slide
    if slide > size:
        raise NotImplementedError(f"join: {t.assigner!r}: a slide longer than the window (gaps between "
                                  "windows) is not compiled yet")
    return dict(size=size, slide=slide, offset=geo.offset, pane=geo.pane, pane_offset=geo.pane_offset, gap=0, lo=0,
                hi=0, ts_min=INT64_MIN + 2 * size, ts_max=INT64_MAX - 2 * size)


def generate_join(pipeline: Pipeline, options: CodegenOptions | None = None) -> GeneratedJoin:
    """Render the kernels of both sides of join pipeline ``pipeline`` and its trigger unit."""
    options = options or CodegenOptions()
    t: JoinTerminal = pipeline.terminal
    key_words = len(t.sides[0].keys)
    if key_words > MAX_KEYS:
        raise NotImplementedError(f"a join takes at most {MAX_KEYS} key columns, got {key_words}")
    geometry = _geometry(t)
    kind = t.join_kind
    refs_off = 8 * (1 + key_words)
    entry_size = refs_off + (8 if kind == "session" else 48)
    prefix = f"p{pipeline.id}_{options.variant}"
    header = f"; grizzly-py codegen v{CODEGEN_VERSION}, variant {options.variant}\n"
    consts = dict(LAYOUT, kind=kind, arrival=not t.is_window, key_words=key_words, entry_size=entry_size,
                  refs_off=refs_off, stride=record_words(t),
                  **{"keep": (0, 0), "bounded": False, "ttl": False, "lookup": False, **geometry})
    runtime = render("join_runtime.ll.j2", **consts)
    sides, all_units = side_kernels(pipeline, options, prefix, header, consts, f"join ({kind})", f"join_{kind}",
                                    runtime=runtime)
    state_ir = render("join_state.ll.j2", p=prefix, **consts) + render("join_gather.ll.j2", p=prefix)
    state = CodeUnit("state", header + state_ir + "\n" + runtime + "\n" + runtime_declarations(), 1)
    all_units["state"] = state
    return GeneratedJoin(pipeline, options, prefix, sides, state, key_words, entry_size, all_units)


def record_words(t: JoinTerminal) -> tuple[int, int]:
    """Per side, the words of a held record in a join that pairs on arrival: ref and event time,
    then (when a filter on the pairs reads the side's columns) a validity mask and a word per
    column."""
    return tuple(2 + (1 + len(c) if c else 0) for c in t.pair_columns)


def _pair_filter_code(sp: Pipeline, side: int, ctx: EmitContext, emitter: ExprEmitter) -> tuple[list, list, str]:
    """The pair filter of a regular or interval join on side ``side``'s kernel: (the words this record keeps
    for it, the probe's lines that load the other side's record's words and evaluate the
    filter, the register that says whether the pair passes). This record's columns are loaded
    once per row, before the probe loop; the other side's come from the held record at
    ``%ji.odata[%ji.j]``."""
    t: JoinTerminal = sp.terminal.join
    other = 1 - side
    names = {out: column for out, column in t.pair_columns[side]}
    words = []
    if t.pair_columns[side]:
        mask = "0"
        values = []
        for i, (_, column) in enumerate(t.pair_columns[side]):
            v = emitter.column(column)
            word = _as_word(ctx, v)
            values.append(word)
            bit, acc = ctx.fresh("pwb"), ctx.fresh("pwm")
            ctx.emit(f"{bit} = select i1 {v.valid}, i64 {1 << i}, i64 0")
            ctx.emit(f"{acc} = or i64 {mask}, {bit}")
            mask = acc
        words = [mask] + values
    body, ctx.body = ctx.body, []
    fields = list(sp.input_schema)
    if t.pair_columns[other]:
        mask = ctx.fresh("pom")
        ctx.emit(f"{mask}.i = add i64 %ji.j, 2")
        ctx.emit(f"{mask}.p = getelementptr inbounds i64, ptr %ji.odata, i64 {mask}.i")
        ctx.emit(f"{mask} = load i64, ptr {mask}.p")
        for i, (out, _) in enumerate(t.pair_columns[other]):
            field = t.output_schema.field(out)
            placeholder = f"__gz_pair_{i}"
            w, valid = ctx.fresh("pow"), ctx.fresh("pov")
            ctx.emit(f"{w}.i = add i64 %ji.j, {3 + i}")
            ctx.emit(f"{w}.p = getelementptr inbounds i64, ptr %ji.odata, i64 {w}.i")
            ctx.emit(f"{w} = load i64, ptr {w}.p")
            ctx.emit(f"{valid}.b = and i64 {mask}, {1 << i}")
            ctx.emit(f"{valid} = icmp ne i64 {valid}.b, 0")
            ctx._loaded[("value", placeholder)] = _of_word(ctx, w, field.dtype, valid)
            ctx._loaded[("valid", placeholder)] = valid
            fields.append(replace(field, name=placeholder))
            names[out] = placeholder
    pair = ExprEmitter(ctx, Schema(tuple(fields))).emit(t.pair_filter.substitute(
        {out: Column(name) for out, name in names.items()}))
    ok = ctx.fresh("pok")
    ctx.emit(f"{ok} = and i1 {pair.val}, {pair.valid}")  # false and null drop the pair
    lines, ctx.body = ctx.body, body
    for i in range(len(t.pair_columns[other])):
        for what in ("value", "valid"):
            del ctx._loaded[(what, f"__gz_pair_{i}")]
    return words, lines, ok


def _as_word(ctx: EmitContext, v) -> str:
    """A column's value as an i64 word (floats by their bits)."""
    if v.kind == "int":
        return v.val
    w = ctx.fresh("pw")
    ctx.emit(f"{w} = bitcast double {v.val} to i64" if v.kind == "float" else f"{w} = zext i1 {v.val} to i64")
    return w


def _of_word(ctx: EmitContext, w: str, dtype, valid: str) -> Value:
    if dtype.is_float:
        v = ctx.fresh("pf")
        ctx.emit(f"{v} = bitcast i64 {w} to double")
        return Value("float", v, valid)
    if dtype.name == "bool":
        v = ctx.fresh("pb")
        ctx.emit(f"{v} = trunc i64 {w} to i1")
        return Value("bool", v, valid)
    return Value("int", w, valid)


def side_kernels(pipeline: Pipeline, options: CodegenOptions, prefix: str, header: str, consts: dict, title: str,
                 trigger: str, runtime: str = "", templates: tuple[str, str] = ("join_preamble.ll.j2", "join_insert.ll.j2"),
                 epilogue: tuple[str, ...] = ()) -> tuple[list[GeneratedPipeline], dict[str, CodeUnit]]:
    """Both sides' kernels (general and no-nulls) of a join pipeline: per side, a generated
    pipeline (its trigger ``trigger``) and the units ``{l|r}_{kernel}``. ``templates`` (preamble,
    insert) make the join-insert terminal (``_lower_side``); ``epilogue`` lines end each kernel;
    ``runtime`` is IR appended to each kernel unit."""
    all_units: dict[str, CodeUnit] = {}
    sides = []
    for side in (0, 1):
        sp = join_side_pipeline(pipeline, side)
        sprefix = f"{prefix}_{'lr'[side]}"
        decode = columns_to_decode(sp)  # dictionary columns a filter compares with string columns
        layouts = column_layouts(sp, decode)
        units: dict[str, CodeUnit] = {}
        gen = None
        for name, assume_valid in KERNELS:
            gen = GeneratedPipeline(sp, options, units, sprefix, layouts, sorted(decode), [], state_words=abi.J_SIDE_WORDS)
            ctx = EmitContext(f"{sprefix}.{name}", {c.name: c for c in layouts}, assume_valid=assume_valid)
            code = _lower_side(sp, side, options, ctx, ExprEmitter(ctx, sp.input_schema), gen, consts, *templates)
            code.name, code.globals = name, "\n".join(ctx.globals)
            code.preamble, code.error_blocks = ctx.preamble, ctx.error_blocks
            code.epilogue = list(epilogue) + ctx.epilogue
            kernel = render("pipeline.ll.j2", abi=abi, id=pipeline.id, p=sprefix, kernels=[code],
                            block=options.block_rows,
                            title=f"{title}, {('left', 'right')[side]} input over {sp.input_schema}")
            text = "\n".join(part for part in (header + kernel, runtime, runtime_declarations()) if part)
            units[name] = all_units[f"{'lr'[side]}_{name}"] = CodeUnit(name, text, 3)
            gen.dict_params = list(ctx.dict_params)
        gen.trigger = trigger
        sides.append(gen)
    return sides, all_units


def _lower_side(sp: Pipeline, side: int, options: CodegenOptions, ctx: EmitContext, emitter: ExprEmitter,
                gen: GeneratedPipeline, consts: dict, preamble: str = "join_preamble.ll.j2",
                insert: str = "join_insert.ll.j2") -> KernelCode:
    """The fused loop of one side: event time, the input's filters (when its pipeline left them
    to the join), key words, then the join-insert terminal (``preamble`` and ``insert``
    templates: the hash join's, or the sort-merge join's, ``sort_merge_join.py``)."""
    ts = emitter.emit(sp.event_time)
    ctx.body.extend(template_lines("event_time.ll.j2", name="ts", value=emitter.convert(ts, "int").val, track=False))
    emit_filters(sp, replace(options, filter_mode="combined"), ctx, emitter, predicated=False)
    keys, any_null = [], "false"
    for f, e in sp.terminal.keys:
        if f.dtype.is_string:  # both sides intern into one id space (the engine shares the interner)
            e = interned_column(gen, ctx, e, f"key {f.name!r}")
            word = key_word(emitter, ctx, e, INT64)
        else:
            word = key_word(emitter, ctx, e, f.dtype)
        keys.append(dict(name=f.name, word=word.val))
        if word.valid != "true":
            null = ctx.fresh("jn")
            ctx.emit(f"{null} = xor i1 {word.valid}, true")
            if any_null != "false":
                acc = ctx.fresh("jn")
                ctx.emit(f"{acc} = or i1 {any_null}, {null}")
                null = acc
            any_null = null
        gen.key_types.append(pa.int64() if f.dtype.is_string else f.arrow_type)
    pair_words, pair_lines, pair_ok = [], [], ""
    if sp.terminal.join.pair_filter is not None:
        pair_words, pair_lines, pair_ok = _pair_filter_code(sp, side, ctx, emitter)
    ctx.preamble.extend(template_lines(preamble, **consts))
    ctx.body.extend(template_lines(insert, side=side, keys=keys, any_null=any_null, row=ctx.row,
                                   pair_words=pair_words, pair_lines=pair_lines, pair_ok=pair_ok, **consts))
    ctx.error_blocks.append(("err_oom", abi.ERROR_OUT_OF_MEMORY, ctx.row))
    ctx.error_blocks.append(("err_time", abi.ERROR_TIME_RANGE, ctx.row))
    return KernelCode("", [], ctx.body)


__all__ = ["GeneratedJoin", "generate_join"]
