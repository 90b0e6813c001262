"""Lowering of tumbling and sliding event-time windows over a SHARED state (``window_state="shared"``).

The thread-local variant gives every worker its own state block and merges the blocks when a
window fires. The shared variant has one state that every worker updates (Grizzly section 5.1):

- a ring of window slots (``runtime/shared/concurrent_table.ll``): a window's home slot is its
  number (start / size) mod R, claimed with a compare-and-swap, linear probing on collisions
  (sliding windows keep their panes of gcd(size, slide) there, merged when a window fires);
- one concurrent open-addressing hash table per slot: an insert claims an empty entry with a
  compare-and-swap of its tag (empty -> busy), writes the key and the aggregates' initial values
  and publishes the tag (release); readers that meet a busy tag wait for it;
- decomposable aggregates updated with atomic instructions (each function's ``atomic_update`` macro: ``aggregates.ll.j2``);
- per-worker window pointers (the worker's current window, cached across records) and a trigger
  counter per window (workers inside it): a window is final when its last worker has left.

Tables cannot grow while workers insert into them. A worker whose insert takes a table past its
fill limit (half its capacity) stops after that record; one whose record finds no slot (the ring
is half full) or no entry stops before it. The kernel then returns ``abi.KERNEL_STOPPED`` with
the first row not done, the engine waits for the batch's other tasks (it does anyway), grows the
tables and the ring single-threaded, and runs the rest of the stopped morsels again
(``engine/shared_kernel.py``, ``engine/local.py``).

Only aggregates with an atomic update qualify (count, sum, avg, min, max); a window pipeline with
another aggregate (var/stddev, median, mode, count_distinct) keeps the thread-local variant, and
so do session, count and processing-time windows (``shared_state_unsupported`` says why; the
engine reports it in the pipeline's metrics).
"""

from __future__ import annotations

from functools import lru_cache

from ..physical.pipelines import Pipeline, SourceInput, WindowTerminal
from . import abi
from .expr_emitter import EmitContext, ExprEmitter
from .generated import GeneratedPipeline, KernelCode
from .lowering import lower_lateness, lower_time_window_parts, macro_lines, template_lines
from .options import CodegenOptions
from .templates import render, resource_dir


def shared_state_unsupported(pipeline: Pipeline) -> str | None:
    """Why ``pipeline`` cannot run over a shared window state, or None when it can."""
    t = pipeline.terminal
    if not isinstance(t, WindowTerminal):
        return "not a window"
    kind = t.assigner.kind
    if not kind.shared_state:
        return f"{kind.label} windows keep thread-local state"
    geometry = t.assigner.geometry
    if not geometry.cumulative and geometry.slide > geometry.size:
        return "sliding windows with gaps (slide longer than the window)"
    if not isinstance(pipeline.input, SourceInput):
        return "its input is another pipeline's output (one worker, in stream order)"
    if pipeline.event_time is None:
        return "no event time"
    for a in t.aggregates:
        if not a.spec.atomic:
            return f"aggregate {a.field.name}={a.func}(...) has no atomic update"
    return None


@lru_cache(maxsize=1)
def shared_runtime_ir() -> str:
    """The concurrent table and ring (runtime/shared/), appended to the shared kernels only."""
    return (resource_dir("runtime") / "shared" / "concurrent_table.ll").read_text()


def lower_shared_time_window(pipeline: Pipeline, options: CodegenOptions, ctx: EmitContext, emitter: ExprEmitter,
                             gen: GeneratedPipeline) -> tuple[KernelCode, str]:
    """Tumbling and sliding event-time windows over one state that every worker updates."""
    reason = shared_state_unsupported(pipeline)
    if reason is not None:
        raise ValueError(f"pipeline {pipeline.id} cannot use a shared window state: {reason}")
    t: WindowTerminal = pipeline.terminal
    geo, blocked, keep, pre_body, g = lower_time_window_parts(pipeline, options, ctx, emitter, gen)
    inits = macro_lines("aggregates.ll.j2", "atomic_init", g.aggregates)
    updates = macro_lines("aggregates.ll.j2", "atomic_update", g.aggregates)
    ctx.preamble.extend(template_lines("window_shared_preamble.ll.j2", abi=abi, key_words=g.key_words))
    late = lower_lateness(pipeline, ctx, gen)
    ctx.body.extend(template_lines("window_shared.ll.j2", geo=geo, geo_text=geo.describe() + ", shared state", **late,
                           entry_size=g.entry_size,
                           key_words=g.key_words,
                           keys=[dict(name=f.name, word=k.val) for (f, _), k in zip(t.keys, g.keys)],
                           null_mask=g.null_mask, inits=inits, updates=updates))
    ctx.globals.append(shared_runtime_ir())
    ctx.error_blocks.append(("err_oom", abi.ERROR_OUT_OF_MEMORY, ctx.row))
    ctx.error_blocks.append(("err_time", abi.ERROR_TIME_RANGE, ctx.row))
    gen.trigger = "shared"
    state = render("window_shared_state.ll.j2", abi=abi, p=gen.prefix, entry_size=g.entry_size, window_size=geo.size,
                   geo=geo, merging=geo.pane != geo.size or bool(late["lateness"]), keys=g.keys, key_words=g.key_words, aggregates=g.aggregates)
    return KernelCode("", [], ctx.body, pre_body=pre_body, keep=keep, blocked=blocked, stop=True,
                      epilogue=["  call void @gz_sring_leave(ptr %wslot.a)  ; the worker leaves its window"]), state
