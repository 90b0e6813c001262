"""The state-memory limit: ``StreamEnvironment(state_memory_limit=...)`` bounds the bytes of
window and join state a job holds, checked after every round of source batches (between tasks),
so a job whose state outgrows its budget fails with a clear error instead of exhausting memory.

What is measured: the hash tables of every window kind (both state variants: capacity x entry
size per open window or pane, per worker; the key table of session and count windows) and their
window directories, the value vectors of holistic aggregates (median, mode, count_distinct) in
tumbling and sliding windows (their capacities, read from the live entries: one pass over the
tables per check), and a join's tables (capacity x entry size) and the Arrow batches it keeps
for its open windows. Not measured: session nodes, count-window pane rings, join ref vectors,
sort grouping's key/pointer arrays (docs/fault_tolerance.md).
"""

from __future__ import annotations

import ctypes
import re

import numpy as np

from ..codegen.join import J_DIR, J_TABLE, SLOT_WORDS
from ..codegen.module import HOLISTIC
from .join_kernel import JoinKernel
from .kernels import WindowKernel

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}
DIRECTORY_SLOT_BYTES = 32


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
    """The bytes of state ``kernel`` holds, as far as it can be measured cheaply."""
    live = getattr(kernel, "live_kernels", None)
    if live is not None:  # grouping="auto": both kernels while a switch is under way (regrouping.py)
        return sum(state_bytes(k) for k in live())
    if isinstance(kernel, JoinKernel):
        return _join_table_bytes(kernel) + sum(b.nbytes for store in kernel.stores for _, b in store.batches)
    if not isinstance(kernel, WindowKernel) or kernel.gen.grouping is None \
            or kernel.gen.trigger not in ("tumbling", "panes", "shared", "session", "count"):
        return 0  # (sort-based grouping keeps key/pointer arrays, not tables: not measured)
    entry = kernel.gen.grouping.entry_size
    if kernel.gen.trigger == "session":  # the key table's entries: tag, keys, the head of the key's sessions
        entry = 8 * (kernel.gen.grouping.key_words + 2)
    total = 0
    blocks = [kernel.state] if kernel.gen.trigger == "shared" else kernel.states
    vectors = _vector_words(kernel) if kernel.gen.trigger in ("tumbling", "panes") else []
    for state in blocks:
        windows = kernel.windows(state)
        total += int(windows[:, 2].sum()) * entry + len(windows) * DIRECTORY_SLOT_BYTES
        if vectors:
            total += sum(_vector_bytes(int(address), int(capacity), entry, vectors)
                         for _, address, capacity, _ in windows)
    return total


def _vector_words(kernel) -> list[int]:
    """Per holistic aggregate, the entry word holding its value vector's capacity (a vector is
    {data, length, capacity} in the entry: codegen/module.py)."""
    return [a.off // 8 + 2 for a in kernel.gen.grouping.aggregates if a.func in HOLISTIC]


def _vector_bytes(address: int, capacity: int, entry: int, words: list[int]) -> int:
    """The bytes the value vectors of one table's live entries hold (8 per value slot)."""
    if not address or not capacity:
        return 0
    table = np.ctypeslib.as_array((ctypes.c_int64 * (capacity * entry // 8)).from_address(address))
    table = table.reshape(capacity, entry // 8)
    live = table[:, 0] != 0
    return 8 * int(sum(int(table[live, w].sum()) for w in words))


def _join_table_bytes(kernel) -> int:
    shared, entry = kernel.shared, kernel.gen.entry_size
    total = int(shared[J_TABLE + 1]) * entry
    slots, length = int(shared[J_DIR]), int(shared[J_DIR + 1])
    if slots and length:
        words = np.ctypeslib.as_array((ctypes.c_int64 * (length * SLOT_WORDS)).from_address(slots))
        total += int(words.reshape(length, SLOT_WORDS)[:, 2].sum()) * entry + length * 8 * SLOT_WORDS
    return total


def check_state_memory(runs, limit: int) -> int:
    """The job's state bytes; ``StateMemoryLimitError`` when they exceed ``limit``."""
    usage = [(state_bytes(r.kernel), qr, r) for qr in runs for r in qr.runs if r.kernel is not None]
    total = sum(u for u, _, _ in usage)
    if total > limit:
        used, qr, r = max(usage, key=lambda u: u[0])
        raise StateMemoryLimitError(
            f"state_memory_limit exceeded: the job holds {total} bytes of window/join state, the limit is "
            f"{limit} bytes; pipeline {r.pipeline.id} ({r.pipeline.terminal.kind}) of sink {qr.sink.spec.name!r} "
            f"holds {used} of them. Hint: too many distinct keys or windows stay open (large windows, small "
            f"slides, a long out-of-orderness bound); raise StreamEnvironment(state_memory_limit=...), "
            f"shorten the windows or the bound, filter or coarsen the keys, or run on Spark")
    return total


__all__ = ["StateMemoryLimitError", "check_state_memory", "parse_memory_size", "state_bytes"]
