"""Generate the LLVM IR module of one physical pipeline.

The pipeline's operators are lowered in produce/consume order into one fused loop: event time,
filters, then the terminal operator (projection sink, or window assign/aggregate with its
trigger functions), by the first matching rule of ``rules.RULES`` through the public lowering
API (``lowering.py``). The output, ``GeneratedPipeline`` (``generated.py``), is plain data: the
IR text plus what the engine needs to call the kernel (which columns go in which descriptor
slots, which dictionary literals to resolve per batch, the output layout).
"""

from __future__ import annotations

import pickle
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace

from ..physical.pipelines import Pipeline, ProjectTerminal, SourceInput, WindowTerminal
from ..plan import SourceNode
from ..sources import Source
from . import abi
from .expr_emitter import EmitContext, ExprEmitter
from .generated import CODEGEN_VERSION, KERNELS, CodeUnit, CodeUnits, GeneratedPipeline, KernelCode
from .join import generate_join
from .lowering import column_layouts, columns_to_decode, window_geometry
from .options import CodegenOptions
from .profile import PROFILE_WORDS
from .rules import rule_for
from .templates import render, runtime_declarations


def generate_pipeline(pipeline: Pipeline, options: CodegenOptions | None = None) -> GeneratedPipeline:
    """Render the module of ``pipeline``: its kernels (general and no-nulls) and, for windows,
    the state and trigger functions. A join pipeline has a kernel per input (``join.py``).
    The no-nulls kernel (what runs first) and the state unit are rendered now; the general
    kernel when it is first asked for (``CodeUnits``). Either way each unit's IR is the same.

    A pipeline generated before in this process, under the same options, is not rendered again
    (``_GENERATED``): a job that runs again (or a variant a job built before) takes the units
    already made, around its own pipeline."""
    key = _generated_key(pipeline, options)
    if key is None:
        return _render_pipeline(pipeline, options)
    with _GENERATED_LOCK:
        found = _GENERATED.get(key)
        if found is not None:
            _GENERATED.move_to_end(key)
    if found is None:
        # rendered from the pipeline without its source's data: what is kept (a deferred
        # unit's render, too) must not hold a table alive
        found = _render_pipeline(_without_data(pipeline), options)
        with _GENERATED_LOCK:
            _GENERATED[key] = found
            while len(_GENERATED) > GENERATED_LIMIT:
                _GENERATED.popitem(last=False)
    return replace(found, pipeline=pipeline)


# pipelines generated in this process, by what their code depends on (``_generated_key``):
# rendering a YSB variant costs ~1 ms of Python under the GIL, three variants a job
_GENERATED: "OrderedDict[bytes, GeneratedPipeline]" = OrderedDict()  # least recently used first
_GENERATED_LOCK = threading.Lock()
GENERATED_LIMIT = 64


def _generated_key(pipeline: Pipeline, options: CodegenOptions | None) -> bytes | None:
    """Everything a pipeline's code depends on, as bytes: the pipeline pickled without its
    source (only which input it reads: the source's columns are ``input_schema``), the options
    and the code generator's version. None where the pipeline does not pickle (a Python
    callable in an expression): it is rendered every time. Pickling records every field of
    every node, so two pipelines with one key are the same pipeline to the code generator."""
    detached = pipeline
    if isinstance(pipeline.input, SourceInput):
        detached = replace(pipeline, input=("source", pipeline.input.leaf))
    try:
        key = pickle.dumps((CODEGEN_VERSION, detached, options or CodegenOptions()), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # (anything unpicklable: no reuse)
        return None
    return key if len(key) <= GENERATED_KEY_LIMIT else None


GENERATED_KEY_LIMIT = 1 << 16  # bytes: a larger key would hold data, not a plan (no reuse then)


def _without_data(pipeline: Pipeline) -> Pipeline:
    """``pipeline`` reading a bare ``Source`` of its source's name, schema, event time and
    watermark (code generation reads the input's kind and the pipeline's own fields only)."""
    if not isinstance(pipeline.input, SourceInput):
        return pipeline
    src = pipeline.input.node.source
    bare = _BareSource(src.name, src.arrow_schema, src.timestamp, src.watermark)
    return replace(pipeline, input=replace(pipeline.input, node=SourceNode(bare)))


@dataclass(eq=False)
class _BareSource(Source):
    """A source's name, schema, event time and watermark, without data (``_without_data``)."""

    reads_lists = True  # (the source it stands for accepted its schema already: top_k lists too)


def _render_pipeline(pipeline: Pipeline, options: CodegenOptions | None = None) -> GeneratedPipeline:
    if pipeline.terminal.kind == "join":
        return generate_join(pipeline, options)
    options = options or CodegenOptions()
    if options.variant == "instrumented" and options.filter_mode != "predicated":
        options = replace(options, filter_mode="predicated")  # every predicate evaluated and counted
    prefix = f"p{pipeline.id}_{options.variant}"
    decode = columns_to_decode(pipeline)
    layouts = column_layouts(pipeline, decode)
    rule = rule_for(pipeline)
    header = f"; grizzly-py codegen v{CODEGEN_VERSION}, variant {options.variant}" \
        + (", shared window state" if options.window_state == "shared" else "") + "\n"
    units = CodeUnits()

    def render_kernel(name: str, assume_valid: bool) -> tuple[GeneratedPipeline, CodeUnit, str, KernelCode]:
        """One kernel (a fresh GeneratedPipeline takes what the rule records), and the state unit."""
        gen = GeneratedPipeline(pipeline, options, units, prefix, layouts, sorted(decode), [])
        if adaptable(pipeline, options):  # every variant's state block has room for a profile
            gen.profile_base, gen.state_words = gen.state_words, gen.state_words + PROFILE_WORDS
        ctx = EmitContext(f"{prefix}.{name}", {c.name: c for c in layouts}, assume_valid=assume_valid,
                          profile_base=gen.profile_base if options.variant == "instrumented" else None)
        code, state = rule(pipeline, options, ctx, ExprEmitter(ctx, pipeline.input_schema), gen)
        code.name, code.globals = name, "\n".join(ctx.globals)
        code.preamble, code.error_blocks = ctx.preamble, ctx.error_blocks
        code.epilogue = code.epilogue + ctx.epilogue
        kernel = render("pipeline.ll.j2", abi=abi, id=pipeline.id, title=_title(pipeline), p=prefix,
                        kernels=[code], block=options.block_rows)
        gen.dict_params = list(ctx.dict_params)  # the same in every kernel: same expressions, same order
        return gen, CodeUnit(name, header + kernel + "\n" + runtime_declarations(), 3), state, code

    (general, _), (nonnull, _) = KERNELS
    units.defer(general, lambda: render_kernel(general, False)[1])
    gen, unit, state, code = render_kernel(nonnull, True)
    if state:  # the same for every kernel
        units.add(CodeUnit("state", header + state + "\n" + runtime_declarations(), 1))
    units.add(unit)
    gen.claim_unit = nonnull if code.fast is not None else None  # (only that kernel has the pass)
    return gen


def adaptable(pipeline: Pipeline, options: CodegenOptions | None = None) -> bool:
    """Whether ``pipeline`` has code variants beyond the generic one (Grizzly section 6): a
    projection with two or more filters (their order and mode; with one, the generic masked
    kernel already adapts per chunk of 64 rows to how many it keeps, and profiling and compiling
    variants cost more than the filter mode could gain: docs/benchmarks.md, "Selection and
    projection (issue 31)"), or an event-time or processing-time
    tumbling/sliding/cumulative window with thread-local state (also the key placement). Sessions,
    count windows and joins keep the generic variant; so do shared window states (one state that
    every worker updates in place cannot move between placements while tasks run) and sort
    grouping (its key/pointer arrays have no specialized variants)."""
    t = pipeline.terminal
    if isinstance(t, ProjectTerminal):
        return len(pipeline.filters) > 1
    if not isinstance(t, WindowTerminal) or not t.assigner.kind.adaptive:
        return False
    return options is None or (options.window_state == "thread_local" and options.grouping == "hash")


def _title(p: Pipeline) -> str:
    """A description that depends only on the pipeline's structure (the IR is cached by hash)."""
    return f"{p.terminal.kind} pipeline over {p.input_schema}"


__all__ = ["CODEGEN_VERSION", "CodegenOptions", "GeneratedPipeline", "adaptable",
           "generate_pipeline", "window_geometry"]
