"""A query's pipelines as they run: each one's kernel, chosen from the job's settings, and its
statistics (``PipelineRun``).

``instantiate`` generates a pipeline's code and picks its kernel: a projection's (none for an
identity), a join's (``kernel_table.make_join_kernel``), an OVER aggregate's, or a window's by its state layout
(``kernel_table.make_kernel``): shared window state where asked for and supported (else
thread-local, and the run says why), hash or sort grouping, or a ``RegroupingKernel`` that
chooses while it runs (``grouping``/``window_state`` "auto"). A kernel with code variants runs
them under the job's adaptivity (``adaptive.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pyarrow as pa

from ..codegen import abi
from ..codegen.module import GeneratedPipeline, generate_pipeline
from ..codegen.options import CodegenOptions
from ..codegen.shared_window import shared_state_unsupported
from ..codegen.sort_grouping import regrouping_unsupported
from ..physical.pipelines import JoinTerminal, OverTerminal, Pipeline, ProjectTerminal, SourceInput, TopNTerminal
from .adaptive import Adaptivity, generic_only
from .kernel_protocol import PipelineKernel
from .kernel_table import make_join_kernel, make_kernel, make_over_kernel, make_top_n_kernel
from .kernels import ProjectKernel, arrow_schema
from .regrouping import Layout, RegroupingKernel, state_choice_unsupported


@dataclass
class PipelineRun:
    """One pipeline in a running job: its kernel, watermark and statistics."""

    pipeline: Pipeline
    gen: GeneratedPipeline
    kernel: PipelineKernel | None  # None: an identity projection, nothing to run
    codegen_ms: float
    output_schema: pa.Schema
    watermark: int = abi.INT64_MIN  # windows: the last one fired at; projections: their input's
    rows_in: int = 0
    rows_out: int = 0
    seconds: float = 0.0
    window_state_note: str | None = None  # why a shared window state was asked for but not used
    generic_note: str | None = None  # why the pipeline has no other code variant

    def metrics(self) -> dict:
        k = self.kernel
        late = k.counter(abi.STATE_LATE) if k is not None else 0
        # a join's rejected pairs are filtered results, counted with the records a filter dropped
        filtered = k.counter(abi.STATE_FILTERED) + k.pairs_filtered if k is not None else 0
        window_state = k.window_state if k is not None else None
        history = k.variant_history(self.generic_note) if k is not None else None  # (a switching
        # layout: every kernel's stages, each with its own layout)
        if history is None:
            history = [{"stage": "generic", "reason": self.generic_note or "initial", "at_s": 0.0,
                        "at_record": 0, "records": self.rows_in}]
        for h in history:
            h.setdefault("window_state", window_state)
        out = {"id": self.pipeline.id, "kind": self.pipeline.terminal.kind,
               "variant": history[-1]["stage"], "window_state": window_state,
               "grouping": k.grouping if k is not None else None,
               "rows_in": self.rows_in, "rows_out": self.rows_out,
               "filtered": filtered, "late": late, "codegen_ms": round(self.codegen_ms, 3),
               "compile_ms": round(k.compile_ms if k is not None else 0.0, 3),
               "seconds": round(self.seconds, 6),
               "variant_history": history,
               "deoptimizations": k.deopts if k is not None else 0}
        if getattr(k, "mini_batch", False):  # one change per key and batch (mini_batch.py)
            out["mini_batch"] = True
        if self.window_state_note is not None:
            out["window_state_fallback"] = self.window_state_note
        if window_state == "shared":
            out["shared_state"] = k.metrics()
        layouts = k.layout_history() if k is not None else None
        if layouts is not None:
            out["layout_history"] = layouts
        return out


def instantiate(pipeline: Pipeline, input_name: str, workers: int = 1,
                 window_state: str = "thread_local", adaptive: Adaptivity | None = None,
                 grouping: str = "hash") -> PipelineRun:
    """Generate and wrap ``pipeline``; ``workers`` > 1 for a pipeline that reads a source gives its
    kernel one state block per worker when its work can be cut into morsels. ``window_state``
    "shared": a window pipeline that supports it keeps one state that every worker updates
    atomically (``codegen/shared_window.py``); the others keep thread-local state, and say why."""
    if isinstance(pipeline.terminal, JoinTerminal):  # one compiled kernel per input (join_kernel.py)
        join = make_join_kernel(pipeline, input_name, grouping)
        return PipelineRun(pipeline, join.gen, join, join.codegen_ms, join.schema)
    if isinstance(pipeline.terminal, OverTerminal):  # its input pipeline computes what it reads
        over = make_over_kernel(pipeline, input_name)
        return PipelineRun(pipeline, over.gen, over, 0.0, over.schema)
    if isinstance(pipeline.terminal, TopNTerminal):  # as OVER: its input pipeline computes its rows
        top_n = make_top_n_kernel(pipeline, input_name)
        return PipelineRun(pipeline, top_n.gen, top_n, 0.0, top_n.schema)
    start = time.perf_counter()
    note = None
    if window_state == "shared" and not isinstance(pipeline.terminal, ProjectTerminal):
        note = shared_state_unsupported(pipeline)
    shared = window_state == "shared" and note is None
    if not isinstance(pipeline.input, SourceInput):
        workers = 1
    choose_grouping = grouping == "auto"
    choose_state = window_state == "auto" and grouping != "sort" and state_choice_unsupported(pipeline, workers) is None
    if (choose_grouping or choose_state) and not shared and adaptive is not None \
            and regrouping_unsupported(pipeline) is None:  # the state layout is chosen as it runs
        def build(layout: Layout):
            shared_now = layout.window_state == "shared"
            return _kernel(pipeline, input_name, workers, shared_now, layout.grouping, adaptive)[1]
        kernel = RegroupingKernel(pipeline, build, adaptive.settings, workers, choose_grouping, choose_state)
        gen = kernel.gen
        ms = (time.perf_counter() - start) * 1000
        return PipelineRun(pipeline, gen, kernel, ms, arrow_schema(pipeline.output_schema), window_state_note=note,
                           generic_note=generic_only(gen, True))
    gen, kernel, generic_note = _kernel(pipeline, input_name, workers, shared,
                                        "hash" if grouping == "auto" else grouping, adaptive)
    ms = (time.perf_counter() - start) * 1000
    return PipelineRun(pipeline, gen, kernel, ms, arrow_schema(pipeline.output_schema), window_state_note=note,
                       generic_note=generic_note)


def _kernel(pipeline: Pipeline, input_name: str, workers: int, shared: bool, grouping: str,
            adaptive: Adaptivity | None):
    """(generated code, kernel or None, why it has one variant) of a pipeline that is not a join:
    a shared window state, hash or sort grouping; adaptive when it has variants."""
    options = None
    if shared:
        options = CodegenOptions(window_state="shared")
    elif grouping != "hash":  # sort grouping where supported (codegen/sort_grouping.py)
        options = CodegenOptions(grouping=grouping)
    gen = generate_pipeline(pipeline, options)
    t = pipeline.terminal
    if isinstance(t, ProjectTerminal):
        kernel = None if (not pipeline.filters and t.is_identity(pipeline.input_schema)) \
            else ProjectKernel(gen, input_name, workers)
    else:
        kernel = make_kernel(gen, input_name, workers)
    generic_note = generic_only(gen, adaptive is not None)
    if kernel is not None and generic_note is None:
        kernel.make_adaptive(adaptive.settings, adaptive.counters)
    return gen, kernel, generic_note


__all__ = ["PipelineRun", "instantiate"]
