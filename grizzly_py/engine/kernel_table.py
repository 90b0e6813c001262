"""Which kernel class runs a generated pipeline: one declared table.

A window pipeline's generated code says how it keeps its state (``GeneratedPipeline.trigger``,
the *state layout*: the code generator's rule and options chose it, ``codegen/rules.py``);
``KERNELS`` maps each layout to the kernel classes that drive it, for one worker and for several.
Several workers each write a state block of their own and the blocks merge when a window fires;
a layout without a kernel for several workers keeps one (its records are taken in stream order).
A join pipeline's kernel follows its grouping (``join_kernel``, ``sort_kernel``: window joins
merge sorted runs unless hash grouping is asked for); an OVER pipeline's
is ``over_kernel.OverKernel``, an unbounded Top-N pipeline's ``top_n_kernel.TopNKernel``.

Every class here is a ``kernel_protocol.PipelineKernel``: what else differs between layouts (its
snapshot, its bytes, the interned ids it holds, whether rounds of batches may run before a
firing) the class answers itself.
"""

from __future__ import annotations

from typing import NamedTuple

from ..codegen.module import GeneratedPipeline
from ..codegen.sort_merge_join import joins_by_sort_merge
from ..physical.pipelines import Pipeline
from .join_kernel import JoinKernel
from .kernels import CountWindowKernel, RunningAggregateKernel, SessionWindowKernel, SlidingWindowKernel, WindowKernel
from .over_kernel import OverKernel
from .shared_kernel import SharedWindowKernel
from .sort_kernel import SortMergeJoinKernel, SortWindowKernel
from .top_n_kernel import TopNKernel


class LayoutKernels(NamedTuple):
    """The kernel classes of one state layout."""

    one_worker: type
    several_workers: type | None  # None: one worker takes the records, in stream order


KERNELS: dict[str, LayoutKernels] = {
    # tumbling windows, one emit per window; several workers' blocks merge as panes do (a window
    # is its own pane)
    "tumbling": LayoutKernels(WindowKernel, SlidingWindowKernel),
    # sliding windows: panes of gcd(size, slide), merged per window
    "panes": LayoutKernels(SlidingWindowKernel, SlidingWindowKernel),
    # sessions: a key's sessions merge as its records arrive, in stream order
    "session": LayoutKernels(SessionWindowKernel, None),
    # count windows: a key's records count in stream order; they fire in the kernel
    "count": LayoutKernels(CountWindowKernel, None),
    # running aggregates: a key's records update its row in stream order, each emitting its change
    "running": LayoutKernels(RunningAggregateKernel, None),
    # one state that every worker updates atomically (window_state="shared")
    "shared": LayoutKernels(SharedWindowKernel, SharedWindowKernel),
    # sort grouping: key/pointer arrays per pane (grouping="sort")
    "kpa": LayoutKernels(SortWindowKernel, SortWindowKernel),
}


def make_kernel(gen: GeneratedPipeline, input_name: str, workers: int = 1):
    """The kernel of a generated window pipeline, with a state block for each of ``workers``
    workers where its layout takes several."""
    kernels = KERNELS.get(gen.trigger)
    if kernels is None:
        raise ValueError(f"pipeline {gen.pipeline.id}: no kernel drives the window state layout {gen.trigger!r}")
    if workers > 1 and kernels.several_workers is not None:
        return kernels.several_workers(gen, input_name, workers)
    return kernels.one_worker(gen, input_name, 1)


def make_join_kernel(pipeline: Pipeline, input_name: str, grouping: str = "hash") -> JoinKernel:
    """The kernel of join pipeline ``pipeline``: sort-merge where the join kind allows it (window
    joins) unless hash grouping is asked for, else hash. Sort-merge is the default ("auto") as
    it does less work per record whatever the keys: an append per record, one radix sort per
    pane and a linear merge, where the hash join probes a table per record and sorts the key
    groups of each window (docs/benchmarks.md, "Window joins by sort-merge")."""
    return (SortMergeJoinKernel if joins_by_sort_merge(pipeline, grouping) else JoinKernel)(pipeline, input_name)


def make_over_kernel(pipeline: Pipeline, input_name: str) -> OverKernel:
    """The kernel of OVER pipeline ``pipeline``: one worker, rows in stream order."""
    return OverKernel(pipeline, input_name)


def make_top_n_kernel(pipeline: Pipeline, input_name: str) -> TopNKernel:
    """The kernel of unbounded Top-N pipeline ``pipeline``: one worker, rows in stream order."""
    return TopNKernel(pipeline, input_name)


__all__ = ["KERNELS", "LayoutKernels", "make_join_kernel", "make_kernel", "make_over_kernel", "make_top_n_kernel"]
