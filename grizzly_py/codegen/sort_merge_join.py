"""Code generation for the sort-merge variant of the window equi-join (tumbling and sliding windows).

The hash window join (``join.py``) inserts each record's ref into its (window, key) entry of a
shared table and probes the other side. This variant keeps each side's window contents as sorted
key/pointer arrays (``runtime/kpa.ll``), as StreamBox-HBM does: each side's fused kernel (the
same event time, filters, key words, null-key drop and lateness check as the hash join's:
``join._lower_side``) appends ``{key words, ref}`` to the array of the record's pane
(gcd(size, slide) ms) in its own state block (``join_kpa_insert.ll.j2``). Nothing is sorted per
batch (one radix sort of a whole pane costs less than sorting each batch into a run and merging
the runs): when a window fires, the engine asks each side for its panes' rows
(``join_kpa_state.ll.j2``: a pane's rows not yet sorted are radix-sorted into one run on
``sorted_words``, and the panes' runs merged into one array sorted by key, then arrival) and
joins the two arrays by merging them in compiled code (``merge_join`` there, driven by
``engine/sort_kernel.py``), so the pairs come out per key in (left arrival, right arrival)
order, as the hash join's do, and keys in ascending key-word order.

Session and interval joins stay hash joins (``sort_merge_unsupported`` says why).
"""

from __future__ import annotations



from ..physical.pipelines import JoinTerminal, Pipeline
from . import abi
from .join import LAYOUT, GeneratedJoin, _geometry, side_kernels
from .generated import CODEGEN_VERSION, CodeUnit
from .lowering import MAX_KEYS
from .options import CodegenOptions
from .templates import render, runtime_declarations


def sort_merge_unsupported(pipeline: Pipeline) -> str | None:
    """Why join pipeline ``pipeline`` cannot be a sort-merge join, or None when it can."""
    t = pipeline.terminal
    if not isinstance(t, JoinTerminal):
        return "not a join"
    if t.join_kind not in ("tumbling", "sliding"):
        return f"{t.join_kind} joins are hash joins only"
    return None


def joins_by_sort_merge(pipeline: Pipeline, grouping: str) -> bool:
    """Whether join pipeline ``pipeline`` runs as a sort-merge join under ``grouping`` ("auto",
    "hash" or "sort"): where the join kind allows it, unless hash grouping is asked for. The
    engine's kernel (``engine/kernel_table.make_join_kernel``) and ``grizzly explain`` both ask."""
    return grouping != "hash" and sort_merge_unsupported(pipeline) is None


def sorted_words(t: JoinTerminal) -> int:
    """The words of a {key words, ref} row that the runs sort on. A tumbling window is one pane
    whose rows were appended in arrival order, and the radix sort and the merges of runs are
    stable: the key words suffice, and the refs of a key stay in arrival order. A sliding
    window merges several panes, whose rows interleave in arrival: the ref is sorted on too."""
    key_words = len(t.sides[0].keys)
    return key_words if t.join_kind == "tumbling" else key_words + 1


def generate_sort_merge_join(pipeline: Pipeline, options: CodegenOptions | None = None) -> GeneratedJoin:
    """Render both sides' kernels and the trigger unit of a sort-merge window join."""
    options = options or CodegenOptions(grouping="sort")
    reason = sort_merge_unsupported(pipeline)
    if reason is not None:
        raise NotImplementedError(f"pipeline {pipeline.id}: no sort-merge join: {reason}")
    t: JoinTerminal = pipeline.terminal
    key_words = len(t.sides[0].keys)
    if key_words > MAX_KEYS:
        raise NotImplementedError(f"a join takes at most {MAX_KEYS} key columns, got {key_words}")
    geometry = _geometry(t)
    sort_words = sorted_words(t)
    consts = dict(LAYOUT, kind=t.join_kind, key_words=key_words, sort_words=sort_words, entry_size=0, refs_off=0,
                  STATE_WINDOWS=abi.STATE_WINDOWS, **geometry)
    prefix = f"p{pipeline.id}_{options.variant}_sm"
    header = f"; grizzly-py codegen v{CODEGEN_VERSION}, variant {options.variant}, sort-merge join\n"
    sides, all_units = side_kernels(pipeline, options, prefix, header, consts, f"sort-merge join ({t.join_kind})",
                                    "join_sort_merge", templates=("join_kpa_preamble.ll.j2", "join_kpa_insert.ll.j2"))
    state_ir = render("join_kpa_state.ll.j2", p=prefix, **consts) + render("join_gather.ll.j2", p=prefix)
    state = CodeUnit("state", header + state_ir + "\n" + runtime_declarations(), 1)
    all_units["state"] = state
    return GeneratedJoin(pipeline, options, prefix, sides, state, key_words, 0, all_units)
