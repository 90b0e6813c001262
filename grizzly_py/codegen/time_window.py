"""The lowering rule of tumbling, sliding and cumulative windows (event or processing time) over
thread-local hash tables: one table per window, or per pane (``window_geometry.py``); the
instrumented variant samples keys (``profile.py``), the optimized one may place a dense key range
(``options.dense_keys``) and run the branch-free dense pass (``dense_pass.py``)."""

from __future__ import annotations

from ..physical.pipelines import Pipeline, WindowTerminal
from . import abi
from . import profile as pf
from .dense_pass import dense_pass
from .expr_emitter import EmitContext, ExprEmitter
from .generated import GeneratedPipeline, KernelCode
from ..window_geometry import PaneGeometry
from .lowering import AggregateArgs, Grouping, lower_lateness, lower_time_window_parts, template_lines
from .options import CodegenOptions
from .templates import render


def lower_time_window(pipeline: Pipeline, options: CodegenOptions, ctx: EmitContext, emitter: ExprEmitter,
                      gen: GeneratedPipeline) -> tuple[KernelCode, str]:
    """Tumbling, sliding and cumulative windows (the latter two through shared panes)."""
    t: WindowTerminal = pipeline.terminal
    geo, blocked, keep, pre_body, g = lower_time_window_parts(pipeline, options, ctx, emitter, gen)
    keys, null_mask, key_words, aggs, entry_size = g.keys, g.null_mask, g.key_words, g.aggregates, g.entry_size
    updates = g.updates
    ctx.preamble.extend(template_lines("window_preamble.ll.j2", abi=abi, key_words=key_words))
    if ctx.profile_base is not None:
        ctx.body.extend(_profile_keys(ctx, options, g))
    dense = None
    if options.dense_keys is not None:
        if len(keys) != 1:
            raise ValueError(f"pipeline {pipeline.id}: dense key placement needs exactly one key, got {len(keys)}")
        dense = dict(lo=options.dense_keys[0], cap=options.dense_keys[1], valid=keys[0].valid)
    late = lower_lateness(pipeline, ctx, gen)
    ctx.body.extend(template_lines("window_tumbling.ll.j2", geo=geo, geo_text=geo.describe(), **late,
                                   keys=[dict(name=f.name, word=k.val) for (f, _), k in zip(t.keys, keys)],
                                   null_mask=null_mask, key_words=key_words, entry_size=entry_size,
                                   updates=updates, dense=dense))
    ctx.error_blocks.append(("err_oom", abi.ERROR_OUT_OF_MEMORY, ctx.row))
    ctx.error_blocks.append(("err_time", abi.ERROR_TIME_RANGE, ctx.row))
    fast = None
    if dense is not None and blocked:
        fast = dense_pass(pipeline, options, ctx, emitter, g, dense, geo.pane)
    tumbling = geo.pane == geo.size and not late["lateness"]  # (kept windows fire again: the panes trigger)
    gen.trigger = "tumbling" if tumbling else "panes"
    gen.pane_reuse = pane_reuse(geo, aggs)
    state = render("window_state.ll.j2" if tumbling else "window_sliding_state.ll.j2", abi=abi,
                   p=gen.prefix, entry_size=entry_size, window_size=geo.size, geo=geo, keys=keys,
                   key_words=key_words, aggregates=aggs, reuse=gen.pane_reuse,
                   vectors=[a for a in aggs if a.spec.holistic])
    return KernelCode("", [], ctx.body, pre_body=pre_body, keep=keep, blocked=blocked,
                      stop=dense is not None, fast=fast), state


def pane_reuse(geo: PaneGeometry, aggs: list[AggregateArgs]) -> str | None:
    """How a window's merged state carries over to the next (a window then costs the keys of
    the panes that join and leave it, not of all its panes): "invert" for sliding
    windows whose aggregates are all invertible (``AggregateSpec.invertible``), "extend" for
    cumulative windows whose aggregates all merge exactly (``merge_exact``), else None (a window
    is its own pane, or an aggregate needs its panes merged afresh)."""
    if geo.pane == geo.size or any(a.spec.holistic for a in aggs):
        return None
    if geo.cumulative:
        return "extend" if all(a.spec.merge_exact(a.kind) for a in aggs) else None
    return "invert" if all(a.spec.invertible(a.kind) for a in aggs) else None


def _profile_keys(ctx: EmitContext, options: CodegenOptions, g: Grouping) -> list[str]:
    """The instrumented variant's key sampling (profile_keys.ll.j2) for the row in ``ctx.row``."""
    base = ctx.profile_base
    words = dict(sampled=base + pf.PROFILE_ROWS_SAMPLED, nulls=base + pf.PROFILE_NULL_KEYS,
                 min=base + pf.PROFILE_KEY_MIN, max=base + pf.PROFILE_KEY_MAX, hll=base + pf.PROFILE_HLL,
                 sketch=base + pf.PROFILE_SKETCH)
    keys = [k.val for k in g.keys] or ["0"]
    return template_lines("profile_keys.ll.j2", row=ctx.row, sample=options.profile_sample, w=words, keys=keys,
                          null_mask=g.null_mask, hll_bits=pf.HLL_REGISTERS.bit_length() - 1,
                          sketch_bits=pf.SKETCH_SLOTS.bit_length() - 1)
