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
"""

from __future__ import annotations

import ctypes
import re

import numpy as np

from ..codegen import abi
from ..codegen.join import J_DIR, J_OUT, J_TABLE, SLOT_WORDS
from . import native_words
from .join_kernel import JoinKernel
from .kernels import WindowKernel
from .string_release import interner_of

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
    """The bytes of state ``kernel`` holds: what its state blocks point to (tables, directories,
    value vectors, session nodes, pane rings, key/pointer arrays, ref vectors), the Arrow
    batches a join keeps and its interned strings (module docstring)."""
    live = getattr(kernel, "live_kernels", None)
    if live is not None:  # grouping="auto": both kernels while a switch is under way (regrouping.py)
        return sum(state_bytes(k) for k in live())
    return _structure_bytes(kernel) + interned_bytes(kernel)


def interned_bytes(kernel) -> int:
    """The bytes of the strings ``kernel`` interned for its string keys."""
    live = getattr(kernel, "live_kernels", None)
    if live is not None:
        return sum(interned_bytes(k) for k in live())
    interner = interner_of(kernel)
    return interner.nbytes if interner is not None else 0


def _structure_bytes(kernel) -> int:
    from .sort_kernel import SortMergeJoinKernel  # (sort_kernel imports this package's join kernel)
    if isinstance(kernel, SortMergeJoinKernel):
        return sum(kpa_bytes(k.state, kernel.row_words) for k in kernel.sides) + _kept_batch_bytes(kernel)
    if isinstance(kernel, JoinKernel):
        return _join_bytes(kernel) + _kept_batch_bytes(kernel)
    if not isinstance(kernel, WindowKernel):
        return 0
    trigger = kernel.gen.trigger
    if trigger == "kpa":  # sort-based grouping: key/pointer arrays per pane, no tables
        return sum(kpa_bytes(state, kernel.gen.kpa_row_words) for state in kernel.states)
    if kernel.gen.grouping is None or trigger not in ("tumbling", "panes", "shared", "session", "count"):
        return 0
    entry = kernel.gen.grouping.entry_size
    if trigger == "session":  # the key table's entries: tag, keys, the head of the key's sessions
        entry = 8 * (kernel.gen.grouping.key_words + 2)
    total = 0
    blocks = [kernel.state] if trigger == "shared" else kernel.states
    vectors = _vector_words(kernel) if trigger in ("tumbling", "panes", "count") else []
    heap = _heap_function(kernel)
    for state in blocks:
        windows = kernel.windows(state)
        total += int(windows[:, 2].sum()) * entry + len(windows) * DIRECTORY_SLOT_BYTES
        if vectors:
            total += sum(_vector_bytes(int(address), int(capacity), entry, vectors)
                         for _, address, capacity, _ in windows)
        if heap is not None:
            total += int(heap(state.ctypes.data))
    return total


def _heap_function(kernel):
    """The state unit's ``heap_bytes`` of a kernel whose state reaches past its tables through
    pointers that only native code walks cheaply (session nodes; a sliding count window's pane
    rings); None for the others."""
    trigger = kernel.gen.trigger
    if trigger == "session":
        pass
    elif trigger == "count":
        assigner = kernel.gen.pipeline.terminal.assigner
        if assigner.size == assigner.slide:
            return None  # tumbling count windows keep everything in the key table
    else:
        return None
    return kernel.function("state", "heap_bytes", ctypes.c_int64, ctypes.c_void_p)


def _vector_words(kernel) -> list[int]:
    """Per holistic aggregate, the entry word holding its value vector's capacity (a vector is
    {data, length, capacity} in the entry: codegen/module.py)."""
    return [a.off // 8 + 2 for a in kernel.gen.grouping.aggregates if a.spec.holistic]


def _vector_bytes(address: int, capacity: int, entry: int, words: list[int]) -> int:
    """The bytes the value vectors of one table's live entries hold (8 per value slot)."""
    if not address or not capacity:
        return 0
    table = _table(address, capacity, entry // 8)
    live = table[:, 0].view(np.uint64) > 1
    return 8 * int(sum(int(table[live, w].sum()) for w in words))


def _table(address: int, capacity: int, entry_words: int) -> np.ndarray:
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


def _kept_batch_bytes(kernel) -> int:
    return sum(b.nbytes for store in kernel.stores for _, b in store.batches)


def _join_bytes(kernel) -> int:
    """A hash join's shared state: its tables, window directory and ref vectors (a one-ref vector
    is inline: no bytes of its own), a session join's nodes (native walk), an interval join's
    output vector."""
    shared, entry = kernel.shared, kernel.gen.entry_size
    kind = kernel.terminal.join_kind
    refs = 1 + kernel.gen.key_words  # the first ref vector's entry word (windows, interval)
    total = int(shared[J_TABLE + 1]) * entry + 8 * int(shared[J_OUT + 2])
    tables = [(int(shared[J_TABLE]), int(shared[J_TABLE + 1]))]
    slots, length = int(shared[J_DIR]), int(shared[J_DIR + 1])
    if slots and length:
        words = native_words.view(slots, length * SLOT_WORDS).reshape(length, SLOT_WORDS)
        total += int(words[:, 2].sum()) * entry + length * 8 * SLOT_WORDS
        tables += [(int(a), int(c)) for a, c in words[:, 1:3]]
    if kind == "session":
        if kernel._allocated and int(shared[J_TABLE + 1]):
            total += int(kernel._function("heap_bytes", ctypes.c_int64, ctypes.c_void_p)(shared.ctypes.data))
        return total
    for address, capacity in tables:
        if address and capacity:
            table = _table(address, capacity, entry // 8)
            live = table[:, 0].view(np.uint64) > 1
            total += 8 * int(table[live, refs + 2].sum() + table[live, refs + 5].sum())
    return total


def check_state_memory(runs, limit: int) -> int:
    """The job's state bytes; ``StateMemoryLimitError`` when they exceed ``limit`` even once the
    strings of fired windows are released. No task may be running."""
    kernels = [(qr, r) for qr in runs for r in qr.runs if r.kernel is not None]
    total = sum(state_bytes(r.kernel) for _, r in kernels)
    if total <= limit:
        return total
    for qr in runs:  # strings are released at a firing only once enough of them went
        for index in range(len(qr.runs)):
            qr.release_strings(index, force=True)
    usage = [(state_bytes(r.kernel), qr, r) for qr, r in kernels]
    total = sum(u for u, _, _ in usage)
    if total > limit:
        used, qr, r = max(usage, key=lambda u: u[0])
        strings = sum(interned_bytes(r.kernel) for _, r in kernels)
        of_strings = f" ({strings} of them interned string keys)" if strings else ""
        raise StateMemoryLimitError(
            f"state_memory_limit exceeded: the job holds {total} bytes of window/join state{of_strings}, the limit "
            f"is {limit} bytes; pipeline {r.pipeline.id} "
            f"({r.pipeline.terminal.kind}) of sink {qr.sink.spec.name!r} holds {used} of them. Hint: too many "
            f"distinct keys or windows stay open (large windows, small slides, a long out-of-orderness bound); "
            f"raise StreamEnvironment(state_memory_limit=...), shorten the windows or the bound, filter or "
            f"coarsen the keys, or run on Spark")
    return total


__all__ = ["StateMemoryLimitError", "check_state_memory", "interned_bytes", "kpa_bytes", "parse_memory_size",
           "state_bytes"]
