"""Lowering rule for keyed event-time session windows (``EventTimeSessionWindows``).

State: one table of keys (directory slot 0) whose entries point to the key's open sessions, a
list of nodes ``{next, start, end, aggregates}`` ordered newest first. The kernel assigns each
record in the fused loop (codegen_templates/session_assign.ll.j2): in-order records take a fast
path (grow the newest session, or open a new one after it); out-of-order records that extend a
session backwards, fall between sessions or bridge two of them take the slow path
(session_insert.ll.j2), which merges sessions with the aggregates' merge macros. The trigger
(session_state.ll.j2) fires the sessions with ``end - 1 <= watermark``, as Flink's
``EventTimeTrigger`` does for merging windows.
"""

from __future__ import annotations

from dataclasses import replace

from ..physical.pipelines import Pipeline, WindowTerminal
from . import abi
from .expr_emitter import EmitContext, ExprEmitter
from .generated import GeneratedPipeline, KernelCode
from .lowering import emit_filters, lower_grouping, template_lines
from .options import CodegenOptions
from .templates import render

NODE_HEADER = 24  # next, start, end; the aggregates follow


def lower_session_window(pipeline: Pipeline, options: CodegenOptions, ctx: EmitContext, emitter: ExprEmitter,
                         gen: GeneratedPipeline) -> tuple[KernelCode, str]:
    t: WindowTerminal = pipeline.terminal
    gap = t.assigner.gap_ms
    if pipeline.event_time is None:
        raise NotImplementedError("a session window needs a source with a timestamp column "
                                  "(from_arrow(..., timestamp='ts'))")
    ts = emitter.emit(pipeline.event_time)
    ctx.body.extend(template_lines("event_time.ll.j2", name="ts", value=ts.val, track=True))
    emit_filters(pipeline, replace(options, filter_mode="combined"), ctx, emitter, predicated=False)
    g = lower_grouping(t, pipeline, ctx, emitter, gen, agg_base=NODE_HEADER)
    head_off = 8 * (1 + g.key_words)
    entry_size = head_off + 8  # tag, key words, head of the session list
    keys = [dict(name=f.name, word=k.val) for (f, _), k in zip(t.keys, g.keys)]
    vectors = [a for a in g.aggregates if a.spec.holistic]
    ctx.preamble.extend(template_lines("count_preamble.ll.j2", abi=abi, key_words=g.key_words))
    ctx.emit("br i1 %ht.ok, label %s.table, label %err_oom, !prof !1")
    ctx.body.append("s.table:")
    ctx.body.extend(template_lines("session_assign.ll.j2", p=gen.prefix, gap=gap, keys=keys, null_mask=g.null_mask,
                           key_words=g.key_words, entry_size=entry_size, head_off=head_off,
                           node_size=g.entry_size, updates=[], node_updates=g.updates))
    ctx.globals.append(render("session_insert.ll.j2", p=gen.prefix, gap=gap, node_size=g.entry_size,
                              aggregates=g.aggregates, vectors=vectors))
    ctx.globals.append("declare ptr @calloc(i64, i64)\ndeclare void @free(ptr)")
    ctx.error_blocks.append(("err_oom", abi.ERROR_OUT_OF_MEMORY, ctx.row))
    ctx.error_blocks.append(("err_time", abi.ERROR_TIME_RANGE, ctx.row))
    gen.trigger = "session"
    end_slot = 1 + 2 * len(g.keys) + 2 * len(g.aggregates)
    state = render("session_state.ll.j2", abi=abi, p=gen.prefix, entry_size=entry_size, head_off=head_off,
                   key_words=g.key_words, keys=g.keys, aggregates=g.aggregates, vectors=vectors,
                   end_slot=end_slot, node_size=g.entry_size)
    return KernelCode("", [], ctx.body), state
