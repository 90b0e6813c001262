"""The lowering rule of a pipeline that ends in a projection (``ProjectTerminal``): its filters,
then every computed output column written to its output buffer; pass-through columns are
gathered by the engine with the selection vector the kernel writes."""

from __future__ import annotations

from ..expressions import Column
from ..physical.pipelines import Pipeline, ProjectTerminal
from .expr_emitter import EmitContext, ExprEmitter, Value
from .generated import GeneratedPipeline, KernelCode, OutputColumn
from .lowering import emit_filters, template_lines
from .options import CodegenOptions

# how a computed column of each type is stored: (store type, conversion, register type)
_STORE = {"int32": ("i32", "trunc", "i64"), "int64": ("i64", "", "i64"), "timestamp": ("i64", "", "i64"),
          "float64": ("double", "", "double"), "bool": ("i8", "zext", "i1")}


def lower_project(pipeline: Pipeline, options: CodegenOptions, ctx: EmitContext, emitter: ExprEmitter,
                  gen: GeneratedPipeline) -> tuple[KernelCode, str]:
    t: ProjectTerminal = pipeline.terminal
    predicated = options.filter_mode == "predicated"
    keep = emit_filters(pipeline, options, ctx, emitter, predicated)
    outputs = []
    for f, e in t.outputs:
        if isinstance(e, Column):
            continue  # pass-through columns are gathered by the engine with the selection vector
        if f.dtype.is_string:
            raise NotImplementedError(f"output column {f.name!r}: computed string columns are not supported")
        v: Value = emitter.emit_typed(e, f.dtype)
        store_type, convert, reg_type = _STORE[f.dtype.name]
        outputs.append(dict(value=v.val, valid=v.valid, store_type=store_type, convert=convert, reg_type=reg_type))
        gen.outputs.append(OutputColumn(f.name, f.arrow_type, store_type))
    ctx.preamble.extend(template_lines("project_preamble.ll.j2", outputs=outputs))
    ctx.body.extend(template_lines("project.ll.j2", p="prj", outputs=outputs, keep=None if keep == "true" else keep))
    code = KernelCode("", [], ctx.body, counted_filter=predicated and bool(pipeline.filters))
    return code, ""
