"""Sort-based grouping over key/pointer arrays (KPA, StreamBox-HBM) for time-window aggregates,
and the choice between it and hash grouping.

With ``CodegenOptions(grouping="sort")`` a tumbling or sliding window pipeline (event or
processing time) does not keep a hash table per window (pane): its fused loop (filters fused,
lateness checked as on the hash path) appends one fixed-size row per record to the pane's
key/pointer array, ``{key null mask, key words, aggregate inputs, their validity bits}``
(``kpa_append.ll.j2``, ``runtime/kpa.ll``). After each batch the kernel's epilogue sorts the
new rows into a run (stable LSD radix sort on the mask and key words; digits that every row
shares are skipped). When a window fires, the runs of its panes, over every worker's state
block, are merged pairwise and reduced run by run: the rows of a key are adjacent and are folded
into a scratch entry laid out as a hash-table entry, with the same aggregate update and emit
macros (``aggregates.ll.j2``), so results equal the hash path's (``kpa_state.ll.j2``). The
engine drives it with the merging trigger of sliding windows (``engine/sort_kernel.py``).

Key words are the hash path's (``module._key_word``): -0.0 and 0.0 one key, one NaN, strings by
their interned ids, null keys by the null mask. Holistic aggregates keep a value vector in the
scratch entry as on the hash path (their values arrive in key order, one key at a time).

``choose_grouping`` is the pure decision the adaptive controller calls with profiled
statistics; ``grouping_summary`` is what ``grizzly explain --pipelines`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..aggregates import as_spec
from ..expressions import Column
from ..physical.pipelines import Pipeline, SourceInput, WindowTerminal
from . import abi
from .expr_emitter import EmitContext, ExprEmitter
from .generated import GeneratedPipeline, KernelCode
from .lowering import lower_lateness, lower_time_window_parts, macro_lines, template_lines
from .options import CodegenOptions
from .templates import render

GROUPINGS = ("hash", "sort")


def sort_unsupported(pipeline: Pipeline) -> str | None:
    """Why ``pipeline`` cannot use sort-based grouping, or None when it can."""
    t = pipeline.terminal
    if not isinstance(t, WindowTerminal):
        return "not a window aggregate"
    if not t.assigner.kind.sort_grouping:
        return f"{t.assigner.kind.label} windows group by hash only"
    return None


def regrouping_unsupported(pipeline: Pipeline) -> str | None:
    """Why ``pipeline``'s grouping stays fixed under ``grouping="auto"`` (``engine/regrouping.py``),
    or None when the adaptive controller may switch it between hash and sort."""
    why = sort_unsupported(pipeline)
    if why is not None:
        return why
    kind = pipeline.terminal.assigner.kind
    if not kind.regrouping:
        return (f"{kind.label} windows keep hash grouping under grouping='auto' "
                "(a switch at a time boundary would split windows between two kernels)")
    if pipeline.terminal.allowed_lateness_ms:
        return "windows with allowed lateness keep hash grouping under grouping='auto' (kept windows " \
               "would be split between two kernels)"
    if not isinstance(pipeline.input, SourceInput) or not isinstance(pipeline.event_time, Column):
        return "the event time is not a column of the source (records cannot be routed by it)"
    return None


def sort_grouping_applies(pipeline: Pipeline, options: CodegenOptions) -> bool:
    """Whether ``pipeline`` groups by sorting under ``options``: they ask for it (thread-local
    state only) and the pipeline supports it; otherwise its windows group by hash."""
    return options.grouping == "sort" and options.window_state == "thread_local" and sort_unsupported(pipeline) is None


@dataclass(frozen=True)
class KpaRow:
    """The layout of one key/pointer-array row (``_row_layout``), as ``kpa_*.ll.j2`` read it."""

    group_words: int
    key_words: int
    words: int
    inputs: list[dict]
    valids: list[dict]


def _row_layout(g) -> KpaRow:
    """Where each aggregate's input and validity sit in a KPA row: word 0 the key null mask,
    words 1..K the key words, then one word per aggregate with an input value (doubles stored
    as their bits), last a word of validity bits (bit n: aggregate n's input is not null).
    Rows sort on the mask and key words (``group_words``: a group is a run of equal ones) and,
    with a holistic aggregate, on its value too (``key_words``): the first holistic aggregate's
    values then reach its vector in ascending order, and its finalizer skips sorting them
    (unless a float sum/avg/variance needs the rows of a key in arrival order)."""
    group_words = 1 + g.key_words
    values, valids, word = [], [], group_words
    with_value = [a for a in g.aggregates if a.kind is not None]  # (count reads validity only)
    first_holistic = next((a for a in with_value if a.spec.holistic), None)
    if any(a.spec.order_sensitive(a.kind) for a in g.aggregates):
        first_holistic = None  # rows of a key stay in arrival order: floats add as on the hash path
    if first_holistic is not None:  # its value word right after the key: part of the sort key
        with_value.remove(first_holistic)
        with_value.insert(0, first_holistic)
    for a in g.aggregates:
        if not a.counts_rows:  # count() keeps nothing
            valids.append(dict(idx=a.idx, valid=a.valid, bit=a.idx))
    for a in with_value:
        double = a.kind == "float" and a.spec.reads != "key"  # (a holistic key is an i64)
        values.append(dict(idx=a.idx, value=a.value, type="double" if double else "i64", word=word))
        word += 1
    ordered = next((a for a in g.aggregates if a.spec.ordered), None)
    if ordered is not None:  # the row's event time and arrival position, read back as %rvts, %rvpos
        values += [dict(idx="ts", value=ordered.ts, type="i64", word=word),
                   dict(idx="pos", value=ordered.pos, type="i64", word=word + 1)]
        word += 2
    return KpaRow(group_words=group_words, key_words=group_words + (first_holistic is not None), words=word + 1,
                  inputs=values, valids=valids)


def lower_sort_window(pipeline: Pipeline, options: CodegenOptions, ctx: EmitContext, emitter: ExprEmitter,
                      gen: GeneratedPipeline) -> tuple[KernelCode, str]:
    """Tumbling and sliding windows with sort-based grouping (see the module docstring)."""
    t: WindowTerminal = pipeline.terminal
    geo, blocked, keep, pre_body, g = lower_time_window_parts(pipeline, options, ctx, emitter, gen)
    row = _row_layout(g)
    ctx.preamble.extend(template_lines("window_preamble.ll.j2", abi=abi, key_words=g.key_words))
    ctx.preamble.append(f"  %kpa.err.p = getelementptr inbounds i64, ptr %state, i64 {abi.STATE_ERROR_CODE}")
    late = lower_lateness(pipeline, ctx, gen)
    ctx.body.extend(template_lines("window_tumbling.ll.j2", geo=geo, geo_text=geo.describe(), **late,
                                   upsert="kpa_append.ll.j2",
                           keys=[dict(name=f.name, word=k.val) for (f, _), k in zip(t.keys, g.keys)],
                           null_mask=g.null_mask, key_words=g.key_words, row=row))
    ctx.error_blocks.append(("err_oom", abi.ERROR_OUT_OF_MEMORY, ctx.row))
    ctx.error_blocks.append(("err_time", abi.ERROR_TIME_RANGE, ctx.row))
    gen.trigger = "kpa"
    gen.kpa_row_words = row.words
    strings = {a.idx for a in g.aggregates if a.kind == "str"}
    gen.kpa_string_words = tuple(v["word"] for v in row.inputs if v["idx"] in strings)
    # the trigger's reduce applies the same update macros to the values it reads back from a row
    reduce_aggs = [replace(a, value=f"%rv{a.idx}", valid="true" if a.counts_rows else f"%rvalid{a.idx}",
                           **(dict(ts="%rvts", pos="%rvpos") if a.spec.ordered else {}))
                   for a in g.aggregates]
    updates = macro_lines("aggregates.ll.j2", "update", reduce_aggs)
    state = render("kpa_state.ll.j2", abi=abi, p=gen.prefix, entry_size=g.entry_size, window_size=geo.size,
                   geo=geo, keys=g.keys, aggregates=g.aggregates, updates=updates, row=row,
                   vectors=[a for a in g.aggregates if a.spec.holistic])
    seal = f"  call void @gz_kpa_seal_into(ptr %dir, ptr %kpa.err.p, i64 {row.words}, i64 {row.key_words})" \
           "  ; sort this batch's rows into a run"
    return KernelCode("", [], ctx.body, pre_body=pre_body, keep=keep, blocked=blocked, epilogue=[seal]), state


# --- the choice ---------------------------------------------------------------------------------
# Distinct keys per window above which sort grouping was faster, measured by bench/grouping.py
# (docs/benchmarks.md, "Hash vs sort grouping": 10M YSB-like records, one window): about 1.2M
# keys for count(), about 210K for count() + median().
SORT_MIN_DISTINCT_KEYS = 1_200_000
SORT_MIN_DISTINCT_KEYS_HOLISTIC = 200_000


def choose_grouping(distinct_keys: int | None, state_bytes: int | None, cache_bytes: int,
                    aggregate_kinds=(), thresholds: tuple[int, int] | None = None) -> tuple[str, str]:
    """("hash" | "sort", reason) for a window pipeline, from profiled statistics: the distinct
    keys per window (an estimate), the bytes its hash state takes (None: unknown), the last-level
    cache size, and the aggregate functions. Hash grouping wins while its table stays in cache
    (one probe per record); once the keys are many every probe misses, and sorting, whose passes
    stream through memory, wins (StreamBox-HBM, figure 2). Holistic aggregates keep every value
    on both paths (a vector per key on the hash path), which makes sorting win much earlier.
    ``thresholds``: (decomposable, holistic) distinct-key crossing points in place of the
    measured ones (``AdaptiveSettings``: tests, other hosts)."""
    if distinct_keys is None:
        return "hash", "no distinct-key estimate yet"
    holistic = [as_spec(k).name for k in aggregate_kinds if as_spec(k).holistic]
    if not holistic and state_bytes is not None and state_bytes <= cache_bytes:
        return "hash", f"state of {state_bytes:,} bytes fits the {cache_bytes:,}-byte cache"
    plain, with_holistic = thresholds or (SORT_MIN_DISTINCT_KEYS, SORT_MIN_DISTINCT_KEYS_HOLISTIC)
    threshold = with_holistic if holistic else plain
    source = "measured" if thresholds is None else "configured"
    kind = f"holistic aggregates ({', '.join(holistic)})" if holistic else "decomposable aggregates"
    if distinct_keys >= threshold:
        return "sort", f"{distinct_keys:,} distinct keys >= {threshold:,} {source} crossing point for {kind}"
    return "hash", f"{distinct_keys:,} distinct keys < {threshold:,} {source} crossing point for {kind}"


def grouping_summary(pipeline: Pipeline, options: CodegenOptions | None = None) -> str | None:
    """One line for ``grizzly explain --pipelines``: the grouping a window pipeline uses and why;
    None for pipelines without grouping."""
    t = pipeline.terminal
    if not isinstance(t, WindowTerminal):
        return None
    asked = options.grouping if options is not None else "hash"
    why_not = sort_unsupported(pipeline)
    if asked == "sort":
        if why_not is not None:
            return f"pipeline {pipeline.id}: hash grouping ({why_not})"
        if options.window_state != "thread_local":
            return f"pipeline {pipeline.id}: hash grouping (a shared window state groups by hash)"
        return f"pipeline {pipeline.id}: sort grouping over key/pointer arrays (asked for: grouping='sort')"
    return f"pipeline {pipeline.id}: hash grouping (the default until profiling picks; " \
           f"{'sort also possible' if why_not is None else why_not})"


def explain_grouping(pipelines, grouping: str = "hash") -> str:
    """The grouping lines that ``grizzly explain --pipelines`` appends (empty without windows)."""
    if grouping == "auto":
        lines = [line for p in pipelines if (line := _auto_summary(p)) is not None]
    else:
        options = CodegenOptions(grouping=grouping)
        lines = [line for p in pipelines if (line := grouping_summary(p, options)) is not None]
    return "".join(["\ngrouping:"] + [f"\n  {line}" for line in lines]) if lines else ""


def _auto_summary(pipeline: Pipeline) -> str | None:
    """The ``grouping="auto"`` line of one pipeline (None without grouping)."""
    if not isinstance(pipeline.terminal, WindowTerminal):
        return None
    why_not = regrouping_unsupported(pipeline)
    if why_not is not None:
        return f"pipeline {pipeline.id}: hash grouping (auto: {why_not})"
    return (f"pipeline {pipeline.id}: auto: hash grouping first; the adaptive controller switches to sort "
            f"grouping at a window boundary once fired windows hold >= {SORT_MIN_DISTINCT_KEYS:,} distinct "
            f"keys ({SORT_MIN_DISTINCT_KEYS_HOLISTIC:,} with holistic aggregates) and the hash table outgrows "
            f"the cache, and back (metrics: layout_history)")
