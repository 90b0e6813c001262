"""Lowering of keyed count windows (Flink ``countWindow(size[, slide])``), post-triggered in the kernel.

Both kinds keep one hash table of keys (the window directory's slot 0); an entry holds the key,
a record counter and aggregate state. Per key, every ``slide`` records, the kernel writes the
aggregates over the key's last ``size`` records (fewer at the start) to its output, in stream
order. Records are counted in stream order; incomplete windows never fire.

Tumbling (``size == slide``): the entry's aggregates are the window; the ``size``-th record
writes them out and the entry starts over (``count_trigger.ll.j2``).

Sliding: records go to *count panes* of ``g = gcd(size, slide)`` records per key, so a window
is exactly ``P = size / g`` consecutive panes and fires right after a pane closes. The entry's
aggregates are the open pane; every ``g``-th record of a key moves it into the key's *ring*, a
block of its own (pointer in the entry) holding a prefix state and ``P`` pane slots, slot
``i mod P`` for pane ``i``, so the ring always holds the key's last ``P`` panes. Decomposable
aggregates are combined without re-merging the whole window (Two-Stacks / "window partitioning"
over blocks of ``P`` panes aligned to pane ``0``): the prefix state merges the panes of the
current block as they close; when a block is complete its ring slots are turned, right to left,
into suffix states (slot ``k`` = merge of the block's panes ``k..P-1``) and the prefix starts
over. A window ending at pane ``i = B * P + q`` is then ``suffix[q + 1]`` of block ``B - 1``
(still in the slots above ``q``) merged with the prefix: two merges. Each pane is merged a
constant number of times (into the prefix, once in its block's conversion), so a record costs
O(1) amortized merges whatever ``size``, plus ``1/g`` of a pane copy. Holistic aggregates
(median, mode, count_distinct) keep each pane's value vector raw in its slot (the conversion
leaves them alone); a firing window extends the vectors of the ring's panes into a temporary
state, which the emit finalizes and frees; a pane's vectors are freed when the pane leaves the
ring. Their per-window cost is the window's values, as any exact median needs.

Memory per key: the entry (``8 * (4 + keys)`` bytes + one pane state of ``A`` bytes, in a table
at most half full) plus the ring, ``(1 + capacity) * A`` bytes, where the capacity grows by
doubling up to ``P`` as the key's panes arrive (a key with few records keeps a small ring). A
ring of more than ``MAX_RING_BYTES`` per key is rejected when compiling, with the numbers; an
allocation failure at run time is a ``MemoryError``.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..physical.pipelines import Pipeline, WindowTerminal
from . import abi
from .expr_emitter import EmitContext, ExprEmitter
from .generated import GeneratedPipeline, KernelCode
from .lowering import emit_filters, lower_grouping, template_lines
from .options import CodegenOptions
from .templates import render

MAX_RING_BYTES = 1 << 28  # pane state per key of a sliding count window (256 MiB)


def count_geometry(size: int, slide: int) -> tuple[int, int]:
    """(g, P): count panes of g = gcd(size, slide) records; a window is P = size / g panes."""
    g = math.gcd(size, slide)
    return g, size // g


def lower_count_window(pipeline: Pipeline, options: CodegenOptions, ctx: EmitContext, emitter: ExprEmitter,
                       gen: GeneratedPipeline) -> tuple[KernelCode, str]:
    """Keyed count windows, tumbling or sliding: one table of keys; the kernel fires a key's
    window after the record that completes it (post-trigger) and writes it to its output."""
    t: WindowTerminal = pipeline.terminal
    size, slide = t.assigner.size, t.assigner.slide
    sliding = size != slide
    if pipeline.event_time is not None:  # the source's event time: its watermark goes downstream
        ts = emitter.emit(pipeline.event_time)
        ctx.body.extend(template_lines("event_time.ll.j2", name="ts", value=ts.val, track=True))
    emit_filters(pipeline, replace(options, filter_mode="combined"), ctx, emitter, predicated=False)
    # entry: tag, keys, record counter, (sliding: ring pointer, ring capacity), aggregates
    g = lower_grouping(t, pipeline, ctx, emitter, gen, extra_words=3 if sliding else 1)
    count_off = 8 * (1 + g.key_words)
    ctx.preamble.extend(template_lines("count_preamble.ll.j2", abi=abi, key_words=g.key_words))
    ctx.emit("br i1 %ht.ok, label %c.table, label %err_oom, !prof !1")
    ctx.body.append("c.table:")
    keys = [dict(name=f.name, word=k.val) for (f, _), k in zip(t.keys, g.keys)]
    ctx.body.extend(template_lines("group_upsert.ll.j2", keys=keys, null_mask=g.null_mask, key_words=g.key_words,
                           entry_size=g.entry_size, updates=g.updates))
    vectors = [a for a in g.aggregates if a.spec.holistic]
    if not sliding:
        ctx.body.extend(template_lines("count_trigger.ll.j2", abi=abi, size=size, count_off=count_off,
                               entry_size=g.entry_size, keys=g.keys, aggregates=g.aggregates))
        state = render("count_state.ll.j2", abi=abi, p=gen.prefix, entry_size=g.entry_size, vectors=vectors)
    else:
        pane, panes = count_geometry(size, slide)
        agg_off = count_off + 24
        pane_bytes = g.entry_size - agg_off
        ring_bytes = (panes + 1) * pane_bytes
        if ring_bytes > MAX_RING_BYTES:
            raise NotImplementedError(
                f"{t.assigner!r}: a sliding count window keeps the last size / gcd(size, slide) = {panes} "
                f"panes of {pane_bytes} bytes per key, {ring_bytes} bytes; at most {MAX_RING_BYTES} bytes per "
                f"key are supported (a slide sharing a larger factor with the size needs fewer panes)")
        # the pane slots hold the aggregates at the same layout as the entry, from byte 0
        rebased = [replace(a, off=a.off - agg_off) for a in g.aggregates]
        geometry = dict(abi=abi, p=gen.prefix, size=size, slide=slide, pane=pane, panes=panes,
                        count_off=count_off, ring_off=count_off + 8, agg_off=agg_off, pane_bytes=pane_bytes,
                        entry_size=g.entry_size, key_words=g.key_words,
                        decomposable=[a for a in rebased if not a.spec.holistic],
                        holistic=[a for a in rebased if a.spec.holistic])
        ctx.globals.append(render("count_panes.ll.j2", **geometry))
        ctx.preamble.append(f"  %cw.tmp = alloca [{g.entry_size} x i8], align 8")
        ctx.body.extend(template_lines("count_sliding_trigger.ll.j2", keys=g.keys, aggregates=g.aggregates, **geometry))
        state = render("count_sliding_state.ll.j2", vectors=vectors, **geometry)
    ctx.error_blocks.append(("err_oom", abi.ERROR_OUT_OF_MEMORY, ctx.row))
    ctx.error_blocks.append(("err_overflow", abi.ERROR_SUM_OVERFLOW, ctx.row))
    gen.trigger = "count"
    return KernelCode("", [], ctx.body), state
