"""Code variants' choices: what makes two generated versions of one pipeline differ
(``CodegenOptions``)."""

from __future__ import annotations

from dataclasses import dataclass

from . import abi


@dataclass(frozen=True)
class CodegenOptions:
    """Choices that make code variants of the same pipeline.

    ``filter_mode``: "branch" leaves the row at the first failing predicate; "combined" evaluates
    all predicates and branches once; "predicated" never branches: projections write every row
    and advance the output by the keep flag, windows filter a block of rows into a selection
    vector first and aggregate the selected rows in a second loop ("blocked" kernel).

    ``window_state``: "thread_local" (each worker its own state block, merged when a window
    fires) or "shared" (one state that every worker updates with atomic instructions:
    ``shared_window.py``; event-time tumbling and sliding windows of count/sum/avg/min/max).

    ``variant`` (Grizzly section 6.1): "generic" assumes nothing; "instrumented" is generic plus
    profiling code (``profile.py``; all predicates are evaluated, so each one's selectivity is
    counted); "optimized" applies what a profile showed (``specialize.py``): ``filter_order``
    (most selective first) with the ``filter_mode`` that suits the selectivities, and
    ``dense_keys``: the entries of a single integer key in ``[lo, lo + capacity)`` sit at index
    ``key - lo`` (no hashing or probing; runtime/windows_placement.ll), guarded: a key outside
    the range, or a null key, stops the kernel at that row (``abi.KERNEL_STOPPED``) and the
    engine hands the rest of the batch to the generic variant (deoptimization).

    ``grouping``: "hash" (a hash table per window) or "sort" (key/pointer arrays sorted per batch
    and merged when the window fires: ``sort_grouping.py``; tumbling and sliding windows with
    thread-local state, others group by hash).
    """

    filter_mode: str = "predicated"
    variant: str = "generic"
    block_rows: int = 4096
    window_state: str = "thread_local"
    filter_order: tuple[int, ...] | None = None  # optimized: the order in which filters are evaluated
    dense_keys: tuple[int, int] | None = None    # optimized: (lo, capacity) dense placement of one int key
    dense_select: bool = False                   # optimized: the dense pass lists the kept rows first
                                                 # (selective filters: codegen/dense_pass.py)
    simd_select: bool = False                    # optimized: ... eight rows at a time with AVX-512's
                                                 # compress (hosts that have it: dense_pass.py)
    profile_sample: int = 4                      # instrumented: sample the keys of one row in this many
    grouping: str = "hash"

    def __post_init__(self):
        if self.filter_mode not in FILTER_MODES:
            raise ValueError(f"filter_mode must be one of {FILTER_MODES}, got {self.filter_mode!r}")
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {self.variant!r}")
        if self.profile_sample < 1 or self.profile_sample & (self.profile_sample - 1):
            raise ValueError(f"profile_sample must be a power of two, got {self.profile_sample}")
        if self.dense_keys is not None:
            lo, cap = self.dense_keys
            if cap < 1 or lo + cap - 1 > abi.INT64_MAX:
                raise ValueError(f"dense_keys: capacity must be positive, the range within int64, got {self.dense_keys}")
        if self.window_state not in WINDOW_STATES:
            raise ValueError(f"window_state must be one of {WINDOW_STATES}, got {self.window_state!r}")
        if self.grouping not in ("hash", "sort"):
            raise ValueError(f"grouping must be 'hash' or 'sort', got {self.grouping!r}")


FILTER_MODES = ("branch", "combined", "predicated")
WINDOW_STATES = ("thread_local", "shared")
VARIANTS = ("generic", "instrumented", "optimized")
