"""Code generation for the sort-merge variant of the window equi-join (tumbling and sliding windows).

The hash window join (``join.py``) inserts each record's ref into its (window, key) entry of a
shared table and probes the other side. This variant keeps each side's window contents as sorted
key/pointer arrays (``runtime/kpa.ll``), as StreamBox-HBM does: each side's fused kernel (the
same event time, filters, key words, null-key drop and lateness check as the hash join's:
``join._lower_side``) appends ``{key words, ref}`` to the array of the record's pane
(gcd(size, slide) ms) in its own state block (``join_kpa_insert.ll.j2``), and its epilogue
sorts the batch's rows into a run on (key words, ref). When a window fires, the engine asks
each side for the merge of its panes' runs (``join_kpa_state.ll.j2``: one array sorted by key,
then arrival) and joins the two arrays by merging them (``engine/sort_kernel.py``), so the
pairs come out per key in (left arrival, right arrival) order, as the hash join's do.

Session and interval joins stay hash joins (``sort_merge_unsupported`` says why).
"""

from __future__ import annotations

import math

import pyarrow as pa

from ..physical.pipelines import JoinTerminal, Pipeline, join_side_pipeline
from . import abi
from .expr_emitter import ColumnLayout, EmitContext, ExprEmitter
from .join import LAYOUT, S_WORDS, GeneratedJoin, _geometry, _lower_side
from .module import CODEGEN_VERSION, KERNELS, MAX_KEYS, CodegenOptions, CodeUnit, GeneratedPipeline, _columns_to_decode
from .templates import render, runtime_declarations


def sort_merge_unsupported(pipeline: Pipeline) -> str | None:
    """Why join pipeline ``pipeline`` cannot be a sort-merge join, or None when it can."""
    t = pipeline.terminal
    if not isinstance(t, JoinTerminal):
        return "not a join"
    if t.join_kind not in ("tumbling", "sliding"):
        return f"{t.join_kind} joins are hash joins only"
    return None


def generate_sort_merge_join(pipeline: Pipeline, options: CodegenOptions | None = None) -> GeneratedJoin:
    """Render both sides' kernels and the trigger unit of a sort-merge window join."""
    options = options or CodegenOptions(grouping="sort")
    reason = sort_merge_unsupported(pipeline)
    if reason is not None:
        raise NotImplementedError(f"pipeline {pipeline.id}: no sort-merge join: {reason}")
    t: JoinTerminal = pipeline.terminal
    key_words = len(t.sides[0].keys)
    if key_words > MAX_KEYS:
        raise NotImplementedError(f"a join takes at most {MAX_KEYS} key columns, got {key_words}")
    geometry = _geometry(t)
    consts = dict(LAYOUT, kind=t.join_kind, key_words=key_words, entry_size=0, refs_off=0,
                  pane=math.gcd(geometry["size"], geometry["slide"]), STATE_WINDOWS=abi.STATE_WINDOWS,
                  STATE_ERROR_CODE=abi.STATE_ERROR_CODE, **geometry)
    prefix = f"p{pipeline.id}_{options.variant}_sm"
    header = f"; grizzly-py codegen v{CODEGEN_VERSION}, variant {options.variant}, sort-merge join\n"
    seal = f"  call void @gz_kpa_seal_into(ptr %dir, ptr %kpa.err.p, i64 {key_words + 1}, i64 {key_words + 1})" \
           "  ; sort this batch's rows into a run"
    all_units: dict[str, CodeUnit] = {}
    sides = []
    for side in (0, 1):
        sp = join_side_pipeline(pipeline, side)
        sprefix = f"{prefix}_{'lr'[side]}"
        decode = _columns_to_decode(sp)
        layouts = []
        for slot, name in enumerate(sp.used_columns()):
            arrow_type = sp.input_schema.field(name).arrow_type
            if name in decode:
                arrow_type = pa.large_string() if pa.types.is_large_string(arrow_type.value_type) else pa.string()
            layouts.append(ColumnLayout(name, slot * abi.COLUMN_SLOTS, arrow_type))
        units: dict[str, CodeUnit] = {}
        gen = None
        for name, assume_valid in KERNELS:
            gen = GeneratedPipeline(sp, options, units, sprefix, layouts, sorted(decode), [], state_words=S_WORDS)
            ctx = EmitContext(f"{sprefix}.{name}", {c.name: c for c in layouts}, assume_valid=assume_valid)
            code = _lower_side(sp, side, options, ctx, ExprEmitter(ctx, sp.input_schema), gen, consts,
                               preamble="join_kpa_preamble.ll.j2", insert="join_kpa_insert.ll.j2")
            code.name, code.globals = name, "\n".join(ctx.globals)
            code.preamble, code.error_blocks = ctx.preamble, ctx.error_blocks
            code.epilogue = [seal]
            kernel = render("pipeline.ll.j2", abi=abi, id=pipeline.id, p=sprefix, kernels=[code],
                            block=options.block_rows,
                            title=f"sort-merge join ({t.join_kind}), {('left', 'right')[side]} input over {sp.input_schema}")
            units[name] = CodeUnit(name, header + kernel + "\n" + runtime_declarations(), 3)
            all_units[f"{'lr'[side]}_{name}"] = units[name]
            gen.dict_params = list(ctx.dict_params)
        gen.trigger = "join_sort_merge"
        sides.append(gen)
    state_ir = render("join_kpa_state.ll.j2", p=prefix, **consts)
    state = CodeUnit("state", header + state_ir + "\n" + runtime_declarations(), 1)
    all_units["state"] = state
    return GeneratedJoin(pipeline, options, prefix, sides, state, key_words, 0, all_units)
