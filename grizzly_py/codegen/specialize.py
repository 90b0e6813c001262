"""From a profile to the options of an optimized code variant (Grizzly section 6.2).

A pure function of the pipeline, the profile the instrumented variant measured (``profile.py``)
and the options of the generic variant. Each optimization is a speculation that the generated
code guards, or a choice that is correct whatever the data:

- **Predicate order and filter mode** (6.2.1): evaluate the most selective predicate first, and
  choose between branching per predicate and branch-free (predicated) evaluation with a cost
  model in ns per row, fitted to ``bench/filter_modes.py`` on the development machine
  (docs/benchmarks.md, "Filter code"): a branching predicate costs ``BRANCH_EVAL_NS`` plus
  ``MISPREDICT_NS`` per mispredicted branch, and a predictor cannot do better than the majority
  direction, so a predicate that passes a fraction ``p`` of rows mispredicts about
  ``min(p, 1 - p)`` of the time; branch-free evaluation evaluates every predicate (vectorized,
  ``VECTOR_EVAL_NS`` each) and appends to a selection vector (``SELECTION_NS``). Branching wins
  only when every predicate it reaches is almost always true or false. Any order and any mode give
  the same rows (predicates are pure), so these need no guard.
- **Dense key placement** (6.2.2): when a window has one key and the sampled key words fall in
  a narrow range, entries sit at index ``key - lo`` of a table of ``capacity`` entries instead
  of being hashed. A key sample that barely repeats (many keys, each sampled about once, as with
  Grizzly 7.4.3's 1M keys) bounds the distinct keys by the range alone (``data_distinct_keys``).
  A table beyond ``DENSE_MAX_BYTES`` is allowed when it costs at most ``DENSE_HASHED_RATIO``
  times the hashed table of one window's keys (``dense_fits``), with tighter margins. Guarded
  in the generated code: another key deoptimizes. With branch-free filters that keep at most
  ``DENSE_SELECT_BELOW`` of the rows, the dense pass lists the kept rows before it updates
  their entries (``dense_select``: ``dense_pass.py``); any choice gives
  the same results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..physical.pipelines import Pipeline, WindowTerminal
from .dense_pass import simd_filters, simd_select_available
from .options import CodegenOptions
from .profile import MAX_PREDICATES, Profile

BRANCH_EVAL_NS = 0.3       # a predicate evaluated and branched on, per row reaching it
MISPREDICT_NS = 7.2        # a mispredicted branch (fitted: 8.0 vs 0.9 ns/row at 50% vs 0%)
VECTOR_EVAL_NS = 0.2       # a predicate evaluated branch-free (vectorized), per row
SELECTION_NS = 0.15        # the branch-free selection-vector append, per row
DENSE_MAX_ENTRIES = 1 << 22   # a dense table within both bounds is always allowed (the byte
DENSE_MAX_BYTES = 64 << 20    # bound decides first for every entry of 16+ bytes)
DENSE_LARGE_MAX_BYTES = 512 << 20  # a worker's dense tables of one window together, at most
DENSE_HASHED_RATIO = 2        # a larger dense table: at most this times the hashed table's bytes
DENSE_GRID = 64               # the dense range's lo and capacity: multiples of 1/64 of its power of two
DENSE_EDGE_GAPS = 16          # a large dense table's margin: this many gaps between sampled keys
DENSE_MIN_FILL = 1 / 16    # distinct keys (estimated) per entry of the dense table, at least
UNSATURATED_SAMPLE = 0.85  # a key sample with at least this share of distinct keys (HLL's
                           # estimate; its error is ~13% with 64 registers) repeats too few keys
                           # to bound the distinct keys of the data: they may fill the key range
HOT_KEY_SHARE = 0.01       # a sampled key with this share of the sampled rows is hot (skew)
DENSE_MARGIN = 0.125       # room on each side of the sampled key range, as a fraction of it
DENSE_SELECT_BELOW = 0.4   # kept share of rows under which the dense pass lists them first
                           # (measured: -5% at 0.33, +5% at 0.5, +8% at 0.67 on YSB's kernel)
DENSE_SELECT_MARGIN = 0.1  # a running variant keeps its choice within this of the threshold


@dataclass(frozen=True)
class Specialization:
    """The optimized variant's options (None: nothing worth a variant) and why."""

    options: CodegenOptions | None
    reasons: tuple[str, ...]


def specialize(pipeline: Pipeline, profile: Profile, base: CodegenOptions, entry_bytes: int = 0,
               budget: int | None = None) -> Specialization:
    """Options of the optimized variant of ``pipeline`` for ``profile`` (``entry_bytes``: the size
    of one window-table entry, for the dense table's memory bound; ``budget``: the bytes a
    worker's dense tables of one window may take at most, from the job's state-memory limit)."""
    changes, reasons = {}, []
    order, mode, why = _filters(pipeline, profile, base)
    if why:
        reasons.append(why)
        if order != tuple(range(len(pipeline.filters))):
            changes["filter_order"] = order
        if mode != base.filter_mode:
            changes["filter_mode"] = mode
    dense, why = _dense_keys(pipeline, profile, entry_bytes, budget)
    reasons.append(why)
    if dense is not None:
        changes["dense_keys"] = dense
        kept = _kept_share(profile)
        if mode == "predicated" and kept is not None and kept <= DENSE_SELECT_BELOW:
            changes["dense_select"] = True
            reasons.append(f"dense pass: lists the ~{kept:.0%} kept rows before updating their entries")
            if simd_select_available() and simd_filters(pipeline):
                changes["simd_select"] = True
                reasons.append("eight rows at a time (AVX-512 compress)")
    if not changes:
        return Specialization(None, tuple(reasons) + ("nothing to specialize",))
    return Specialization(replace(base, variant="optimized", **changes), tuple(reasons))


def filter_costs(selectivities: list[float]) -> tuple[float, float]:
    """(branching, branch-free) expected cost per row, in ns, of evaluating the predicates in the
    given order (what follows the filters costs the same either way)."""
    reach, branching = 1.0, 0.0
    for p in selectivities:
        branching += reach * (BRANCH_EVAL_NS + MISPREDICT_NS * min(p, 1.0 - p))
        reach *= p
    return branching, len(selectivities) * VECTOR_EVAL_NS + SELECTION_NS


def _filters(pipeline: Pipeline, profile: Profile, base: CodegenOptions) -> tuple[tuple[int, ...], str, str]:
    n = len(pipeline.filters)
    if not n or not profile.rows_scanned:
        return tuple(range(n)), base.filter_mode, ""
    sel = profile.selectivities
    profiled = sorted(range(len(sel)), key=lambda i: (sel[i], i))  # most selective first
    order = tuple(profiled) + tuple(range(len(sel), n))  # beyond MAX_PREDICATES: as written
    branching, predicated = filter_costs([sel[i] for i in profiled])
    mode = "branch" if branching < predicated else "predicated"
    text = ", ".join(f"#{i} {sel[i]:.0%}" for i in profiled)
    extra = f" (predicates after the first {MAX_PREDICATES} keep their order)" if n > MAX_PREDICATES else ""
    return order, mode, (f"filters: selectivity {text}; {mode} (~{min(branching, predicated):.2f} vs "
                         f"~{max(branching, predicated):.2f} ns per row){extra}")


def _kept_share(profile: Profile) -> float | None:
    """The share of rows the filters keep: measured on the sampled rows where the sampling rate
    is known (``Profile.kept_share``), else as if the predicates were independent (the product
    of their selectivities: too low for correlated ones); None: no filter profiled."""
    if not profile.rows_scanned or not profile.selectivities:
        return None
    measured = profile.kept_share
    return measured if measured is not None else math.prod(profile.selectivities)


def _select_fits(current: bool, profile: Profile) -> bool:
    """Whether the running variant's ``dense_select`` choice still suits ``profile``, with a
    margin around ``DENSE_SELECT_BELOW`` (a kept share near it must not flip the choice, and
    compile a variant, on every re-profile)."""
    kept = _kept_share(profile)
    if kept is None:
        return not current
    if current:
        return kept <= DENSE_SELECT_BELOW + DENSE_SELECT_MARGIN
    return kept > DENSE_SELECT_BELOW - DENSE_SELECT_MARGIN


def _dense_keys(pipeline: Pipeline, profile: Profile, entry_bytes: int,
                budget: int | None = None) -> tuple[tuple[int, int] | None, str]:
    t = pipeline.terminal
    if not isinstance(t, WindowTerminal):
        return None, "keys: no window"
    if len(t.keys) != 1:
        return None, f"keys: hashed ({len(t.keys)} key columns; dense placement needs one)"
    if not profile.rows_sampled or profile.key_min is None:
        return None, "keys: hashed (no key sampled)"
    if profile.null_keys:
        return None, f"keys: hashed ({profile.null_keys} sampled null keys)"
    seen_lo, seen_hi = profile.key_min, profile.key_max
    span = seen_hi - seen_lo + 1
    distinct = max(profile.distinct_keys, 1.0)
    what = f"key range [{seen_lo}, {seen_hi}], ~{distinct:.0f} distinct"
    distinct = data_distinct_keys(profile, span)
    if distinct > profile.distinct_keys * 2:
        what += f" in {profile.rows_sampled:,} sampled rows (~{distinct:,.0f} in the data)"
    margin = int(span * DENSE_MARGIN) + 1  # keys a sample missed, and a slowly growing range
    lo, cap = _dense_range(seen_lo, seen_hi, margin)
    if not dense_fits(cap, entry_bytes, distinct):
        # a large table: every entry costs its zeroing and the emit's scan, so the margin is
        # only what the sample may have missed at the edges (DENSE_EDGE_GAPS gaps between its keys)
        gap = span // max(int(profile.distinct_keys), 1) + 1
        lo, cap = _dense_range(seen_lo, seen_hi, min(margin, DENSE_EDGE_GAPS * gap))
    if lo < -(1 << 63) or lo + cap - 1 > (1 << 63) - 1:
        return None, f"keys: hashed ({what}: the range reaches the int64 limit)"
    # a window's table holds the keys of that window: fewer than the data's, with many windows
    held_per_window = distinct if profile.window_keys is None else min(distinct, profile.window_keys)
    if not dense_fits(cap, entry_bytes, held_per_window, _tables_per_window(t), large=True):
        return None, (f"keys: hashed ({what}: {cap:,} entries are too many for a dense table"
                      + ("" if profile.window_keys is None else f"; ~{held_per_window:,.0f} keys per window")
                      + ")")
    tables_bytes = _dense_tables_bytes(t, cap, entry_bytes)
    if budget is not None and tables_bytes > budget:
        # the job's state-memory limit: a dense table must not fail a job the hashed one fits in
        return None, (f"keys: hashed ({what}: {tables_bytes / (1 << 20):,.1f} MiB of dense tables per window "
                      f"exceed the state-memory limit's {budget / (1 << 20):,.1f} MiB per worker)")
    if distinct < cap * DENSE_MIN_FILL:
        return None, f"keys: hashed ({what}: too sparse for {cap:,} entries)"
    held = profile.held_keys
    if held is not None and not (lo <= held[0] and held[1] < lo + cap):
        # the variant could not take the state over (the kernel finds it at placement): keys
        # that drift, such as new auctions, leave older ones in the open windows
        return None, (f"keys: hashed ({what}: the window state holds keys in [{held[0]}, {held[1]}], "
                      f"outside [{lo}, {lo + cap}))")
    return (lo, cap), f"keys: dense ({what}: entries at key - {lo}, {cap:,} per table)"


def _dense_range(seen_lo: int, seen_hi: int, margin: int) -> tuple[int, int]:
    """(lo, capacity) of a dense range holding [seen_lo - margin, seen_hi + margin]. lo and the
    capacity lie on a grid of 1/DENSE_GRID of the range's power of two: profiles that differ by a
    few keys give the same variant (compiled once, cached), and the table is at most two steps
    larger than the range (the guard compares against the capacity: no mask, no power of two)."""
    step = max(_pow2(seen_hi - seen_lo + 1 + 2 * margin) // DENSE_GRID, 1)
    lo = (seen_lo - margin) // step * step
    return lo, -(-(seen_hi + margin + 1 - lo) // step) * step


def dense_fits(cap: int, entry_bytes: int, distinct: float, tables: int = 1, large: bool = False) -> bool:
    """Whether a dense table of ``cap`` entries of ``entry_bytes`` may replace the hashed one, for
    ``distinct`` keys (estimated) and ``tables`` tables a worker holds at once per window.
    Within ``DENSE_MAX_BYTES`` a table always may; beyond, up to ``DENSE_LARGE_MAX_BYTES`` for
    the worker's tables together, when it is at most ``DENSE_HASHED_RATIO`` times the hashed
    table those keys grow (a power of two at most half full: ``hashed_table_bytes``). A dense
    update is one access at a known place, a hashed one a probe into a table that grows by
    rehashing, so the memory buys time where the keys are many anyway. ``large=False``: the
    small bound only."""
    dense = cap * entry_bytes
    if cap <= DENSE_MAX_ENTRIES and dense <= DENSE_MAX_BYTES:
        return True
    return (large and dense * tables <= DENSE_LARGE_MAX_BYTES
            and dense <= DENSE_HASHED_RATIO * hashed_table_bytes(distinct, entry_bytes))


def hashed_table_bytes(distinct: float, entry_bytes: int) -> int:
    """The bytes of a hashed window table holding ``distinct`` keys (runtime/hashtable.ll: the
    capacity doubles before the table is more than half full)."""
    return _pow2(max(int(math.ceil(2 * distinct)), 1)) * entry_bytes


def within_budget(pipeline: Pipeline, options: CodegenOptions, entry_bytes: int, budget: int | None) -> bool:
    """Whether the dense tables of ``options`` (an optimized variant's, as ``specialize`` chose
    them for an earlier job) stay within a job's ``budget`` (``specialize``'s; None: no bound)."""
    if budget is None or options.dense_keys is None or not isinstance(pipeline.terminal, WindowTerminal):
        return True
    return _dense_tables_bytes(pipeline.terminal, options.dense_keys[1], entry_bytes) <= budget


def _dense_tables_bytes(t: WindowTerminal, cap: int, entry_bytes: int) -> int:
    """The bytes of the dense tables of ``cap`` entries a worker holds at once for a window."""
    return cap * entry_bytes * _tables_per_window(t)


def _tables_per_window(t: WindowTerminal) -> int:
    """How many tables a worker holds at once for a window's keys: one per pane of the window and
    of its allowed lateness (fired windows stay that long); a tumbling window's pane is the window."""
    geometry = getattr(t.assigner, "geometry", None)
    if geometry is None or geometry.pane <= 0:
        return 1
    return max(-(-(geometry.size + t.allowed_lateness_ms) // geometry.pane), 1)


def data_distinct_keys(profile: Profile, span: int) -> float:
    """The distinct keys of the data that the profile's key sample suggests, in a range of
    ``span`` keys. The sample's rows on hot keys (``HOT_KEY_SHARE`` or more of them, from the
    heavy-hitter sketch) are set aside: they repeat because those keys are hot, not because the
    keys are few. Of the rest, ``n`` rows with ``d`` distinct keys: the sample's own count when
    its keys repeat (a sample that saw each key many times saw them all); else the ``D`` that
    uniform keys over ``D`` values need for ``d`` distinct keys in ``n`` draws,
    ``D * (1 - exp(-n / D)) = d``; the whole range when the sample barely repeats
    (``UNSATURATED_SAMPLE``: within the estimate's error of no repeat at all)."""
    hot = [share for _, share in profile.heavy_hitters if share >= HOT_KEY_SHARE]
    n = profile.rows_sampled * (1.0 - min(sum(hot), 1.0))
    d = max(profile.distinct_keys - len(hot), 0.0)
    if n < 1.0:  # every sampled row on a hot key: those are the keys
        return max(profile.distinct_keys, 1.0)
    ratio = min(d / n, 1.0)
    if ratio >= UNSATURATED_SAMPLE or d >= span:
        return float(span)
    # (1 - exp(-x)) / x = ratio for x = n / D: decreasing in x, bisect on [tiny, n]
    lo, hi = 1e-9, n
    for _ in range(100):
        mid = (lo + hi) / 2
        if -math.expm1(-mid) / mid > ratio:
            lo = mid
        else:
            hi = mid
    return min(float(span), max(profile.distinct_keys, n / hi + len(hot)))


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def still_fits(current: CodegenOptions, proposed: CodegenOptions, profile: Profile) -> bool:
    """Whether the ``current`` optimized variant serves a new profile as well as the
    ``proposed`` one: the same filter decisions, and a dense range (if any) that holds every
    sampled key. Re-profiling then keeps the running variant (no compile, no state migration)."""
    if (current.filter_order, current.filter_mode) != (proposed.filter_order, proposed.filter_mode):
        return False
    if current.dense_select != proposed.dense_select and not _select_fits(current.dense_select, profile):
        return False
    if (current.dense_keys is None) != (proposed.dense_keys is None):
        return False
    if current.dense_keys is None:
        return True
    lo, cap = current.dense_keys
    return profile.key_min is not None and lo <= profile.key_min and profile.key_max < lo + cap
