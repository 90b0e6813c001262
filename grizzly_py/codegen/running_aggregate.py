"""Lowering of running aggregates (``keyed.aggregate`` without a window, ``RunningWindow``).

One table of keys (the window directory's slot 0, as count windows keep it); an entry holds the
key, a record counter and the aggregate state, and stays for good. Each record writes two rows to
the kernel's output (``running_trigger.ll.j2``): its key's row before the record (``-U``) and after
it (``+U``; ``+I`` for the key's first record, which writes one row). The kernel drops a pair
whose rows are equal (an unchanged result emits nothing), vectorized per batch. Over an updating
input a record retracts its input where its row kind is ``-U``/``-D`` (``WindowTerminal.sign``;
retractable aggregates subtract it); the counter counts the key's rows, and a key left with none
emits ``-D`` (its old row) and starts over empty. Rows leave in
stream order, so the changelog does not depend on batch size; one worker takes the records.
Where only the final table is seen, the kernel keeps of a batch's rows each changed key's row
before and after the batch (``engine/mini_batch.py``).

The aggregates ``AggregateSpec.running`` gives (the plan node checks there is one): decomposable
ones, and value bags (``aggregates/functions/value_bag.py``) for ``count_distinct``, ``median``,
``mode``, ``top_k`` and, over an updating input, ``min``/``max``, sequences for ``first``/``last``
(``aggregates/functions/first_last_retract.py``) and retractable sums for the variances: an emit
leaves a bag or a sequence in place; a key left with no rows frees its value vectors before its
state starts over, and the state unit frees those left at the end.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from ..physical.pipelines import Pipeline, WindowTerminal
from . import abi
from .expr_emitter import EmitContext, ExprEmitter
from .generated import GeneratedPipeline, KernelCode
from .lowering import emit_filters, lower_grouping, template_lines
from .options import CodegenOptions
from .templates import render

_DEFINED = re.compile(r"^\s*(%[\w.]+) =")
_LABEL = re.compile(r"^([\w.]+):")


def renamed(lines: list[str], suffix: str, renames: dict[str, str]) -> list[str]:
    """``lines`` of IR with every register and label they define given ``suffix``, and the
    registers in ``renames`` (used, not defined there) renamed: the same code emitted twice in
    one function."""
    names = dict(renames)
    for line in lines:
        m = _DEFINED.match(line)
        if m:
            names[m.group(1)] = m.group(1) + suffix
        m = _LABEL.match(line)
        if m:
            names["%" + m.group(1)] = "%" + m.group(1) + suffix
    if not names:
        return lines
    pattern = re.compile("|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r"(?![\w.])")

    def rename(line: str) -> str:
        m = _LABEL.match(line)
        if m:  # a label definition has no % sign
            line = m.group(1) + suffix + line[m.end(1):]
        return pattern.sub(lambda x: names[x.group(0)], line)
    return [rename(line) for line in lines]


def lower_running_aggregate(pipeline: Pipeline, options: CodegenOptions, ctx: EmitContext, emitter: ExprEmitter,
                            gen: GeneratedPipeline) -> tuple[KernelCode, str]:
    """One table of keys; every record writes its key's row before and after it to the output."""
    t: WindowTerminal = pipeline.terminal
    if pipeline.event_time is not None:  # the source's event time: its watermark goes downstream
        ts = emitter.emit(pipeline.event_time)
        ctx.body.extend(template_lines("event_time.ll.j2", name="ts", value=ts.val, track=True))
    emit_filters(pipeline, replace(options, filter_mode="combined"), ctx, emitter, predicated=False)
    # over an updating input, each record's sign: 1 adds its input, -1 retracts it
    sign = emitter.emit(t.sign).val if t.sign is not None else None
    # entry: tag, keys, record counter (the key's rows), aggregates
    g = lower_grouping(t, pipeline, ctx, emitter, gen, extra_words=1, sign=sign)
    ctx.preamble.extend(template_lines("count_preamble.ll.j2", abi=abi, key_words=g.key_words))
    ctx.emit("br i1 %ht.ok, label %c.table, label %err_oom, !prof !1")
    ctx.body.append("c.table:")
    keys = [dict(name=f.name, word=k.val) for (f, _), k in zip(t.keys, g.keys)]
    ctx.body.extend(template_lines("group_upsert.ll.j2", keys=keys, null_mask=g.null_mask, key_words=g.key_words,
                                   entry_size=g.entry_size, updates=[]))
    row = template_lines("running_row.ll.j2", keys=g.keys, aggregates=g.aggregates)
    bags = [a for a in g.aggregates if a.spec.holistic]
    ctx.body.extend(template_lines("running_trigger.ll.j2", abi=abi, count_off=8 * (1 + g.key_words),
                                   updates=g.updates, before=renamed(row, ".b", {"%j": "%jb"}), after=row,
                                   sign=sign or "1", entry_size=g.entry_size, insert=INSERT, bags=bags,
                                   update_before=UPDATE_BEFORE, update_after=UPDATE_AFTER, delete=DELETE))
    state = render("count_state.ll.j2", abi=abi, p=gen.prefix, entry_size=g.entry_size, vectors=bags)
    ctx.error_blocks.append(("err_oom", abi.ERROR_OUT_OF_MEMORY, ctx.row))
    ctx.error_blocks.append(("err_overflow", abi.ERROR_SUM_OVERFLOW, ctx.row))
    gen.trigger = "running"
    return KernelCode("", [], ctx.body), state
