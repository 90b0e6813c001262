"""The optimized variant's branch-free path for counting windows over densely placed keys.

A blocked kernel (predicated filters) with a densely placed key (Grizzly section 6.2.2) first
compacts each block's surviving rows into a selection vector, then updates their entries one
by one, each row checking its window, the key range and whether its entry is new. When every
aggregate of the window counts rows, a block can instead run as one branch-free pass over all
its rows, ``entry[key - lo].count += keep``, the loop hand-written C uses. Two things make that
sound:

- **A guard per block.** A pre-pass reads the event time and the key of every row of the block
  (minimum and maximum, a vectorized loop) and takes the branch-free pass only when every row
  lies in the window (pane) the kernel has open and every key in the dense range; otherwise the
  block takes the general path, which stops exactly where a key leaves the range. Either path
  evaluates event time and filters for every row, so errors are the same.
- **Entries claimed afterwards.** The pass adds to an entry's counts without giving a new entry
  its tag and key: testing for a new entry would cost a load-dependent branch per row. A count
  of rows is non-zero exactly when a row reached the entry, so the variant's ``claim`` function
  gives every entry with tag 0 and a non-zero count the tag, key and table size the general path
  would have. The kernel sets ``state[abi.STATE_UNCLAIMED]`` when the pass ran; the engine then
  calls ``claim`` after the native call, before anything (triggers, merges, migration,
  snapshots) reads the state (``Kernel._claim_entries``), and ``claim`` clears the word.

The path applies to tumbling windows and the panes of sliding ones in the no-nulls kernel, with
one key that is a plain column (not a string), aggregates that are all ``count()`` or counts of
a column (which has no null there), and dense tables of at most ``MAX_TABLE_BYTES``.
``dense_count_path`` returns its code, or None where it does not apply.
"""

from __future__ import annotations

from ..expressions import Column, strip_alias
from ..physical.pipelines import Pipeline
from . import abi
from .expr_emitter import EmitContext, ExprEmitter

CLAIM_FUNCTION = "claim"  # {prefix}_claim(ptr state), in the unit of the kernel that has the path
# The largest dense table (bytes) that gets the path: a claim reads every entry of each open
# table after a call in which the path ran, so it must stay cheap next to a call's work (a table
# this size is cache-resident, where the branch-free pass also gains the most).
MAX_TABLE_BYTES = 1 << 20


def dense_count_path(pipeline: Pipeline, options, ctx: EmitContext, emitter: ExprEmitter, grouping,
                     dense: dict, pane: int) -> dict | None:
    """The template arguments of the branch-free path (``dense_counts.ll.j2``) for the kernel
    being emitted in ``ctx``, or None where it does not apply."""
    from .module import _emit_filters, _key_word  # module.py lowers the rest of the window
    field, key_expr = pipeline.terminal.keys[0]
    if dense["valid"] != "true" or field.dtype.is_string or not isinstance(strip_alias(key_expr), Column):
        return None  # (a computed key evaluated for filtered rows too could raise for them)
    if not grouping.aggregates or any(a.func != "count" or a.valid != "true" for a in grouping.aggregates):
        return None
    if any(a.arg is not None and not isinstance(strip_alias(a.arg), Column) for a in pipeline.terminal.aggregates):
        return None  # the general path evaluates count(<expression>)'s argument (and its error checks)
    if dense["cap"] * grouping.entry_size > MAX_TABLE_BYTES:
        return None
    body, row = ctx.body, ctx.row
    try:
        ctx.body, ctx.row = [], "%pi"  # the pre-pass: event time and key of every row
        ctx.new_row()
        ts = emitter.emit(pipeline.event_time)
        key = _key_word(emitter, ctx, key_expr, field.dtype)
        pre = ctx.body
        ctx.body, ctx.row = [], "%fi"  # the pass: filters and key, then the counts
        ctx.new_row()
        keep = _emit_filters(pipeline, options, ctx, emitter, predicated=True, name="fp.filter")
        fkey = _key_word(emitter, ctx, key_expr, field.dtype)
        fast = ctx.body
    finally:
        ctx.body, ctx.row = body, row
        ctx.new_row()
    lo, cap = dense["lo"], dense["cap"]
    return dict(pre=pre, ts=ts.val, key=key.val, body=fast, keep=keep, fkey=fkey.val, lo=lo, cap=cap,
                pane=pane, entry_size=grouping.entry_size, counts=[a.off for a in grouping.aggregates],
                key_name=field.name, unclaimed_word=abi.STATE_UNCLAIMED)
