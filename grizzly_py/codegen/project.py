"""The lowering rule of a pipeline that ends in a projection (``ProjectTerminal``): its filters,
then every computed output column written to its output buffer; pass-through columns are
gathered by the engine with the selection vector the kernel writes (``engine/project_output.py``).

Predicated filters make a *masked* kernel (pipeline.ll.j2): per chunk of 64 rows a branch-free
pass evaluates the filters into a bit mask. A chunk that keeps no row costs the predicates alone;
one that keeps at most a quarter of its rows writes the selection vector and the computed columns
for the set bits only (walked with ``cttz``); a denser one writes every row at the output cursor
and advances it by the row's bit (the row is emitted twice, once per way). Without filters no
selection vector is written (every row is kept).

The output descriptor: the selection vector, then per computed column its values and its
validity bytes; a string column's values are int64 offsets (the engine zeroes the first) and a
third pointer is its growable data buffer ``{data, length, capacity}`` (``gz_strbuf_put``), which
the engine turns into the column and frees."""

from __future__ import annotations

from ..expressions import Column
from ..physical.pipelines import Pipeline
from .expr_emitter import ExprEmitter, Value
from . import abi
from .emit_context import EmitContext
from .generated import GeneratedPipeline, KernelCode, OutputColumn
from .lowering import emit_filters, template_lines
from .options import CodegenOptions

# how a computed column of each type is stored: (store type, conversion, register type)
_STORE = {"int32": ("i32", "trunc", "i64"), "int64": ("i64", "", "i64"), "timestamp": ("i64", "", "i64"),
          "float64": ("double", "", "double"), "bool": ("i8", "zext", "i1")}


def lower_project(pipeline: Pipeline, options: CodegenOptions, ctx: EmitContext, emitter: ExprEmitter,
                  gen: GeneratedPipeline) -> tuple[KernelCode, str]:
    predicated = options.filter_mode == "predicated"
    keep = emit_filters(pipeline, options, ctx, emitter, predicated)
    if not (predicated and pipeline.filters):
        # without filters every row is kept: the engine reads no selection vector, so none is written
        _emit_row(pipeline, ctx, emitter, gen, "prj", keep=None if keep == "true" else keep)
        return KernelCode("", [], ctx.body), ""
    # masked kernel: the filters fill a chunk's mask; a sparse chunk runs the body for its set bits
    # (%r, cursor + 1), a dense one for every row (%d, cursor + its bit: no branch per row)
    pre_body, ctx.body, ctx.row = ctx.body, [], "%r"
    ctx.new_row()
    _emit_row(pipeline, ctx, emitter, gen, "prj", keep=None)
    sparse, ctx.body, ctx.row = ctx.body, [], "%d"
    ctx.new_row()
    _emit_row(pipeline, ctx, emitter, None, "prjd", keep="%d.keep")
    code = KernelCode("", [], sparse, counted_filter=True, pre_body=pre_body, keep=keep, masked=True,
                      dense_body=ctx.body)
    return code, ""


def _emit_row(pipeline: Pipeline, ctx: EmitContext, emitter: ExprEmitter, gen: GeneratedPipeline | None,
              p: str, keep: str | None) -> None:
    """One output row at register ``ctx.row``: the selection vector (with filters) and every computed
    column at the output cursor, which advances by ``keep`` (None: by 1). ``gen``: record the output
    columns and emit the descriptor's loads (once per kernel; None for a second copy of the row)."""
    outputs, texts, slot = [], [], 1
    for f, e in pipeline.terminal.outputs:
        if isinstance(e, Column):
            continue  # pass-through columns are gathered by the engine with the selection vector
        v: Value = emitter.emit_typed(e, f.dtype)
        if f.dtype.is_string:
            texts.append(dict(value=v.val, length=v.length, valid=v.valid, slot=slot, index=len(outputs)))
            store_type = "str"
        else:
            store_type, convert, reg_type = _STORE[f.dtype.name]
            outputs.append(dict(value=v.val, valid=v.valid, store_type=store_type, convert=convert, reg_type=reg_type,
                                slot=slot))
        if gen is not None:
            gen.outputs.append(OutputColumn(f.name, f.arrow_type, store_type))
        slot += 3 if store_type == "str" else 2
    if gen is not None:
        ctx.preamble.extend(template_lines("project_preamble.ll.j2", outputs=outputs, texts=texts))
    ctx.body.extend(template_lines("project.ll.j2", p=p, outputs=outputs, row=ctx.row,
                                   selection=bool(pipeline.filters), keep=keep))
    for i, s in enumerate(texts):
        _write_text(ctx, p, i, s)


def _write_text(ctx: EmitContext, p: str, i: int, s: dict) -> None:
    """String output ``i`` of the row at output position ``%{p}.n`` (see project.ll.j2): its bytes
    after the end of the previous row's (offset ``n``), its end at offset ``n + 1``; a null is
    empty and invalid. A row the filters drop is written over by the next (offset ``n`` again)."""
    o = f"%{p}.t{i}"
    ctx.emit(f"{o}.n = select i1 {s['valid']}, i64 {s['length']}, i64 0")
    ctx.emit(f"{o}.at.p = getelementptr inbounds i64, ptr %out.t{i}, i64 %{p}.n")
    ctx.emit(f"{o}.at = load i64, ptr {o}.at.p")
    ctx.emit(f"{o}.end = call i64 @gz_strbuf_put(ptr %out.tb{i}, i64 {o}.at, ptr {s['value']}, i64 {o}.n)")
    ctx.emit(f"{o}.oom = icmp slt i64 {o}.end, 0")
    ctx.error_branch(f"{o}.oom", abi.ERROR_OUT_OF_MEMORY)
    ctx.emit(f"{o}.k = add i64 %{p}.n, 1")
    ctx.emit(f"{o}.next.p = getelementptr inbounds i64, ptr %out.t{i}, i64 {o}.k")
    ctx.emit(f"store i64 {o}.end, ptr {o}.next.p")
    ctx.emit(f"{o}.mp = getelementptr inbounds i8, ptr %out.tm{i}, i64 %{p}.n")
    ctx.emit(f"{o}.m = zext i1 {s['valid']} to i8")
    ctx.emit(f"store i8 {o}.m, ptr {o}.mp")
