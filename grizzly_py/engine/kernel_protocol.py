"""What the engine needs of a pipeline's kernel, whatever its state layout: ``PipelineKernel``.

A pipeline's kernel (``kernels.py``, ``shared_kernel.py``, ``sort_kernel.py``, ``join_kernel.py``,
``regrouping.py``; chosen by ``kernel_table.py``) owns the pipeline's compiled code and state.
The driver (``local.py``, ``rounds.py``, ``watermarks.py``), checkpoints (``checkpoint.py``), the
state-memory limit (``state_memory.py``) and the release of interned strings
(``string_release.py``) reach it only through this protocol, so none of them asks which state
layout a kernel has: what differs between layouts is answered by the kernel's class.

- What it is (class attributes): ``fires`` (it keeps windows that the watermark fires),
  ``emits_per_batch`` (``process`` returns output rows), ``tumbling``, ``window_state``,
  ``grouping``, ``contributing_means`` (the record accounting's words), ``snapshot_unsupported``,
  ``reads_watermark``.
- What it does: ``process`` a batch, ``fire`` at a watermark (also when ``refires_pending``),
  ``grow`` a shared state that stopped, ``close``; a window aggregate (``WindowAggregateKernel``)
  also runs a task's *parts*.
- Its state: ``export_state``/``restore_state`` (checkpoints: plain arrays, ``state_snapshot.py``),
  ``state_bytes`` (the limit), ``held_string_ids`` and ``release_strings`` (the interner's
  release), ``counter`` (the record counters), ``state_kind`` (what a snapshot calls it).
- Its code variants: ``variant_history``, ``deopts``, ``layout_history`` (metrics).

A kernel that holds other kernels (``RegroupingKernel``: the old and the new layout during a
switch) answers each call from them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import pyarrow as pa

from ..codegen import abi
from .string_release import release_unheld


class PipelineKernel(ABC):
    """A pipeline's kernel, as the engine sees it (see the module docstring)."""

    #: it keeps windows that the watermark fires (False: a projection, stateless)
    fires = True
    #: ``process`` returns the output rows of the batch (projections; count windows, which fire in
    #: the kernel); else the output leaves through ``fire``
    emits_per_batch = False
    #: every window is its own pane: a record of a later batch never enters a window that an
    #: earlier batch's watermark completed (it is late), so rounds of source batches may run
    #: before their windows fire (``rounds.py``)
    tumbling = False
    #: window aggregates: "thread_local" or "shared" (one state every worker updates atomically)
    window_state: str | None = None
    #: kernels with windows: "hash" or "sort"
    grouping: str | None = None
    #: what the record accounting calls the records that neither a filter nor lateness dropped
    contributing_means = "rows aggregated into windows"
    #: why the kernel's state cannot be checkpointed (None: it can)
    snapshot_unsupported: str | None = None
    #: its kernel reads the watermark in force (a projection that keeps a window's late records,
    #: ``late_records.py``): the driver tracks watermarks for it as for a window
    reads_watermark = False
    #: the interner of its string keys (None: it interns none)
    interner = None
    #: the code-variant controller (``adaptive.py``; None: one variant)
    controller = None

    gen: object
    workers: int
    compile_ms: float

    # --- running ---------------------------------------------------------------------------------
    @abstractmethod
    def counter(self, index: int) -> int:
        """A state word over every state block (``abi.STATE_*``): the record counters summed, the
        largest event time, the earliest open window end."""

    @property
    def pairs_filtered(self) -> int:
        """Results it built and a filter fused into it rejected (a join's probe); they count as
        filtered results, not as filtered records (``accounting.py``)."""
        return 0

    @property
    def max_event_time(self) -> int:
        """The largest event time the kernel has read (``abi.INT64_MIN``: none, or not tracked)."""
        return self.counter(abi.STATE_MAX_EVENT_TIME)

    def fire(self, watermark: int) -> pa.RecordBatch | None:
        """Emit the windows complete at ``watermark``, in the semantic order (None: none)."""
        return None

    @property
    def refires_pending(self) -> bool:
        """Windows kept for their allowed lateness got records since the last firing: the
        driver fires the kernel after the batch even if its watermark did not move."""
        return False

    def grow(self) -> None:
        """Make room after a task stopped for its state to grow (a shared window state); no task
        may be running."""

    def close(self) -> None:
        """Free the native state (idempotent)."""

    # --- state -----------------------------------------------------------------------------------
    @abstractmethod
    def export_state(self) -> dict:
        """Everything the kernel keeps between batches, as JSON-able values and numpy arrays
        (copies; ``state_snapshot.py``). No task may be running."""

    @abstractmethod
    def restore_state(self, saved: dict) -> None:
        """Load ``export_state``'s ``saved`` (of the same pipeline, at any parallelism) into this
        fresh kernel (nothing processed yet)."""

    @property
    def state_kind(self) -> str:
        """What snapshots call the kernel's state (checkpoint fingerprints, incremental state):
        its class, unless another class keeps the same state."""
        return type(self).__name__

    @abstractmethod
    def structure_bytes(self) -> int:
        """The bytes of the native structures and kept batches the state holds (``state_memory.py``)."""

    def state_bytes(self) -> int:
        """The bytes of state the kernel holds: its structures and its interned strings."""
        return self.structure_bytes() + self.interned_bytes()

    def interned_bytes(self) -> int:
        """The bytes of the strings the kernel interned for its string keys."""
        return self.interner.nbytes + self.interner.carried.nbytes if self.interner is not None else 0

    def held_string_ids(self) -> np.ndarray | None:
        """The interned ids the state holds (with repeats); None where every key stays for good."""
        return np.zeros(0, dtype=np.int64)

    def release_strings(self, pending=(), force: bool = False) -> int:
        """Release the interned strings that neither the state nor the ``pending`` batches
        (``SharedBatch``es prepared but not run) hold, when the interner is due or ``force``
        (``string_release.py``); the strings released. No task may be running."""
        interner = self.interner
        if interner is None or not (force or interner.due) or not (len(interner) or len(interner.carried)):
            return 0
        held = self.held_string_ids()
        if held is None:
            return 0
        return release_unheld(interner, held, pending)

    # --- code variants (metrics) -----------------------------------------------------------------
    def variant_history(self, note: str | None = None) -> list[dict] | None:
        """The code stages so far (``VariantController.variant_history``); None: one variant."""
        return self.controller.variant_history() if self.controller is not None else None

    @property
    def deopts(self) -> int:
        """Deoptimizations so far."""
        return self.controller.deopts if self.controller is not None else 0

    def layout_history(self) -> list[dict] | None:
        """The state layouts the kernel switched between (None: it keeps one)."""
        return None

    def metrics(self) -> dict:
        """The state's own metrics (a shared window state's stops and growths)."""
        return {}


class WindowAggregateKernel(PipelineKernel):
    """A window aggregate's kernel: its fused loop tracks the largest event time it reads (the
    watermark of a source it reads, ``watermarks.SourceClock``), and with several workers the
    driver runs it as tasks of *parts*, row ranges of source batches each under its watermark
    (``rounds.py``): ``(SharedBatch, source batch number, watermark, first row, rows)``."""

    @abstractmethod
    def process(self, batch, watermark: int, worker: int = 0, where: tuple[int, int] | None = None):
        """Fold ``batch`` (a RecordBatch or a ``Morsel``) into worker ``worker``'s state block
        under ``watermark``; ``where`` (source batch number, first row) names rows in errors.
        Returns None, or (a shared state that must grow first) the first row not done."""

    @abstractmethod
    def process_parts(self, parts: list, worker: int = 0, chain_delay: int | None = None) -> list | None:
        """A task's parts on block ``worker``; ``chain_delay``: the watermark moves between them
        (``task_parts.chained_watermark``). Returns None, or the parts not done (a shared state
        that must grow)."""

    @abstractmethod
    def plan_task(self, parts: list, worker: int, chain_delay: int | None = None):
        """The driver's plan of a task (``PlannedParts``: its native call is all a worker does),
        or None when the parts do not run in one call now."""

    @abstractmethod
    def prepare_ahead(self, shared) -> None:
        """Prepare a source batch of the next round while the round before runs."""

    @abstractmethod
    def block_max_event_time(self, block: int) -> int:
        """The largest event time state block ``block`` has read (or was raised to)."""

    @abstractmethod
    def raise_max_event_time(self, block: int, at_least: int) -> None:
        """Block ``block`` takes ``at_least`` as read (no task may be running on it)."""


__all__ = ["PipelineKernel", "WindowAggregateKernel"]
