"""The state-memory limit: ``StreamEnvironment(state_memory_limit=...)`` bounds the bytes of
window and join state a job holds, checked after every round of source batches (between tasks),
so a job whose state outgrows its budget fails with a clear error instead of exhausting memory.

What is measured (the allocated sizes, read from the state blocks and the structures they point
to): the hash tables of every window kind (both state variants: capacity x entry size per open
window or pane, per worker; the key table of session and count windows) and their window
directories; the value vectors of holistic aggregates (``AggregateSpec.holistic``: their capacities, read from
the live entries: one pass over the tables per check) in tumbling, sliding and count windows;
session nodes with their value vectors and a sliding count window's pane rings with their panes'
value vectors (the state unit's ``heap_bytes``, a native walk: session_state.ll.j2,
count_sliding_state.ll.j2); sort grouping's key/pointer arrays (per pane: the pane object, its
rows, its run ends and its sort scratch buffer: ``kpa_bytes``), also the sort-merge join's per
side; a join's tables, its ref vectors (a one-ref vector is inline), a session join's nodes
(``heap_bytes`` of join_state.ll.j2), an interval join's output vector, and the Arrow batches it
keeps for its open windows; the strings a kernel interned for its string keys
(``StringInterner.nbytes``: per string its ``str`` object, its UTF-8 copy and its entries in the
interner's tables), which are released when the windows holding them fire
(``string_release.py``). Outside the budget: allocations that live only during a call (a
firing's merge buffers, result buffers).

Each kernel class measures its own state (``PipelineKernel.state_bytes``) with this module's
readers (``table_bytes``, ``vector_bytes``, ``kpa_bytes``, ``kept_batch_bytes``);
``StateMemoryLimit``, a job observer (``job_observers.py``), checks the job's total.
"""

from __future__ import annotations

import re

import numpy as np

from ..codegen import abi
from . import native_words
from .job_observers import JobObserver

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}
DIRECTORY_SLOT_BYTES = 32
KPA_PANE_WORDS = 8  # runtime/kpa.ll: {rows, length, capacity, sealed, runs {data, length, capacity}, scratch}


class StateMemoryLimitError(MemoryError):
    """A job's window/join state outgrew ``state_memory_limit``."""


def parse_memory_size(value) -> int:
    """Bytes from an int or a string such as ``"512m"``, ``"2 GiB"`` (powers of 1024, as Flink's
    memory options); None stays None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"state_memory_limit: expected bytes (int) or a size such as '512m', got {value!r}")
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", value)
        if not m or m.group(2).lower() not in _UNITS:
            raise ValueError(f"state_memory_limit: cannot read {value!r} as a size (e.g. 1073741824, '512m', '2g')")
        value = int(m.group(1)) * _UNITS[m.group(2).lower()]
    if value <= 0:
        raise ValueError(f"state_memory_limit must be positive, got {value!r}")
    return value


def state_bytes(kernel) -> int:
    """The bytes of state ``kernel`` holds (``PipelineKernel.state_bytes``: what its state blocks
    point to, the Arrow batches a join keeps, its interned strings; module docstring)."""
    return kernel.state_bytes()


def table_bytes(windows: np.ndarray, entry_bytes: int, vector_words: list[int]) -> int:
    """The bytes of one state block's window directory (``windows``: rows of (window or pane
    start, entries, capacity, size)) and its tables of ``entry_bytes`` entries, and of the value
    vectors whose capacities sit at ``vector_words`` of the live entries (one pass over the
    tables)."""
    total = int(windows[:, 2].sum()) * entry_bytes + len(windows) * DIRECTORY_SLOT_BYTES
    if vector_words:
        capacities = [w + 2 for w in vector_words]  # a vector is {data, length, capacity}
        total += sum(vector_bytes(int(address), int(capacity), entry_bytes // 8, capacities)
                     for _, address, capacity, _ in windows)
    return total


def vector_bytes(address: int, capacity: int, entry_words: int, capacity_words: list[int]) -> int:
    """The bytes the vectors of one hash table's live entries hold: 8 per slot of the capacities
    at ``capacity_words`` (value vectors; a join's ref vectors)."""
    if not address or not capacity:
        return 0
    table = _table(address, capacity, entry_words)
    live = table[:, 0].view(np.uint64) > 1
    return 8 * int(sum(int(table[live, w].sum()) for w in capacity_words))


def _table(address: int, capacity: int, entry_words: int) -> np.ndarray:
    """A hash table's entries at ``address`` (a view)."""
    return native_words.view(address, capacity * entry_words).reshape(capacity, entry_words)


def kpa_bytes(state: np.ndarray, row_words: int) -> int:
    """The bytes of the key/pointer arrays in a state block's window directory (runtime/kpa.ll):
    per pane its object, its rows (capacity x row), its vector of run ends and its sort scratch
    buffer (which the last seal sized to the last run), plus the directory."""
    slots, length = int(state[abi.STATE_WINDOWS]), int(state[abi.STATE_WINDOWS + 1])
    if not length:
        return 0
    total = length * DIRECTORY_SLOT_BYTES
    for pane in native_words.view(slots, 4 * length)[1::4]:
        if not pane:
            continue
        rows, _length, capacity, _sealed, runs, nruns, runs_capacity, scratch = (
            int(w) for w in native_words.view(int(pane), KPA_PANE_WORDS))
        total += 8 * KPA_PANE_WORDS + capacity * row_words * 8 + runs_capacity * 8
        if scratch and nruns:
            ends = native_words.view(runs, nruns)
            last = int(ends[-1]) - (int(ends[-2]) if nruns > 1 else 0)
            total += last * row_words * 8
    return total


def kept_batch_bytes(stores) -> int:
    """The bytes of the Arrow batches a join's inputs keep (``join_kernel.SideStore``)."""
    return sum(b.nbytes for store in stores for _, b in store.batches)


def check_state_memory(runs, limit: int) -> int:
    """The job's state bytes; ``StateMemoryLimitError`` when they exceed ``limit`` even once the
    strings of fired windows are released. No task may be running."""
    kernels = [(qr, r) for qr in runs for r in qr.runs if r.kernel is not None]
    total = sum(r.kernel.state_bytes() for _, r in kernels)
    if total <= limit:
        return total
    for qr in runs:  # strings are released at a firing only once enough of them went
        for index in range(len(qr.runs)):
            qr.release_strings(index, force=True)
    usage = [(r.kernel.state_bytes(), qr, r) for qr, r in kernels]
    total = sum(u for u, _, _ in usage)
    if total > limit:
        used, qr, r = max(usage, key=lambda u: u[0])
        strings = sum(r.kernel.interned_bytes() for _, r in kernels)
        of_strings = f" ({strings} of them interned string keys)" if strings else ""
        raise StateMemoryLimitError(
            f"state_memory_limit exceeded: the job holds {total} bytes of window/join state{of_strings}, the limit "
            f"is {limit} bytes; pipeline {r.pipeline.id} "
            f"({r.pipeline.terminal.kind}) of sink {qr.sink.spec.name!r} holds {used} of them. Hint: too many "
            f"distinct keys or windows stay open (large windows, small slides, a long out-of-orderness bound); "
            f"raise StreamEnvironment(state_memory_limit=...), shorten the windows or the bound, filter or "
            f"coarsen the keys, or run on Spark")
    return total


def dense_table_budget(limit: int, workers: int) -> int:
    """The bytes one worker's dense window tables (``codegen/specialize.py``) may take under a
    job limit of ``limit`` bytes: half of the worker's share, so that an optimized variant's
    dense table never fails a job whose hashed state fits the limit with room to spare."""
    return limit // (2 * max(workers, 1))


class StateMemoryLimit(JobObserver):
    """``state_memory_limit`` as a job's observer (``job_observers.py``): checked after every round
    of source batches, and when a source ends (its batches grouped for a round go through first,
    before their windows fire). The tables are read between tasks: no round may run then."""

    def __init__(self, limit: int):
        self.limit = limit

    def before_source_end(self, job) -> None:
        for qr in job.runs:
            qr.flush()
        check_state_memory(job.runs, self.limit)

    def on_round_end(self, job) -> None:
        for qr in job.runs:
            qr.finish_round()
        check_state_memory(job.runs, self.limit)

    def add_metrics(self, metrics: dict) -> None:
        metrics["state_memory_limit"] = self.limit


__all__ = ["StateMemoryLimit", "StateMemoryLimitError", "check_state_memory", "dense_table_budget", "kept_batch_bytes", "kpa_bytes", "parse_memory_size",
           "state_bytes", "table_bytes", "vector_bytes"]
