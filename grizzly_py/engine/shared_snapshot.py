"""The shared window state (``window_state="shared"``, ``shared_kernel.py``) out of native memory
into plain arrays, and back (``state_snapshot.py`` does the same for thread-local state and
supplies the building blocks).

A ``SharedWindowKernel`` keeps one ring of window slots (a numpy array it owns: a header, then
slots ``{status, start, entries, capacity, size, fill limit, users, emit claim}``) whose open slots
point to concurrent hash tables laid out as ``runtime/hashtable.ll``'s; each worker's state block
keeps its record counters. Snapshots are taken between rounds of tasks, so no worker is inside a
window (users 0), no entry or slot is being published, and no emit claim is held. The ring is
restored with the same size and header, each open slot at its index with a fresh table of the
same capacity holding the same entries at their hashed places (so probe chains and fill limits
are those of the original).
"""

from __future__ import annotations

import numpy as np

from ..codegen import abi
from .state_snapshot import (build_table, export_counters, export_interner, live_entries, restore_counters,
                             restore_interner)


def export_shared(kernel) -> dict:
    """A ``SharedWindowKernel``'s state: counters, the ring's header and open slots, their tables'
    live entries (``kernel.table_shape``), the interned strings, the sliding trigger's last
    watermark."""
    entry_words = kernel.table_shape.entry_words
    slots = kernel.ring.slots()
    open_ = np.nonzero(slots[:, abi.RING_SLOT_STATUS] == abi.RING_SLOT_OPEN)[0]
    tables = [live_entries(int(slots[i, abi.RING_SLOT_ENTRIES]), int(slots[i, abi.RING_SLOT_CAPACITY]), entry_words) for i in open_]
    return {**export_counters(kernel),
            "header": kernel.ring.header.copy(), "ring_slots": kernel.ring.size,
            "open": open_.astype(np.int64), "slots": slots[open_].copy(),
            "counts": np.array([len(t) for t in tables], dtype=np.int64),
            "entries": np.concatenate(tables) if tables else np.zeros((0, entry_words), dtype=np.int64),
            "interner": export_interner(kernel.interner),
            "previous_watermark": kernel.previous_watermark}


def restore_shared(kernel, saved: dict, ring) -> None:
    """The inverse of ``export_shared``, into the fresh ``kernel`` and ``ring``, a fresh, empty
    ``SharedRing`` of ``saved["ring_slots"]`` slots (the kernel's ring to be)."""
    restore_counters(kernel, saved)
    entry_words = kernel.table_shape.entry_words
    ring.header[:abi.RING_HEADER_WORDS] = saved["header"]
    slots = ring.slots()
    bounds = np.concatenate([[0], np.cumsum(saved["counts"])]).astype(np.int64)
    for k, index in enumerate(saved["open"]):
        row = saved["slots"][k].copy()
        rows = saved["entries"][bounds[k]:bounds[k + 1]]
        row[abi.RING_SLOT_ENTRIES] = build_table(rows, entry_words, int(row[abi.RING_SLOT_CAPACITY]))[0]
        row[abi.RING_SLOT_USERS] = row[abi.RING_SLOT_CLAIM] = 0
        slots[int(index)] = row
    restore_interner(kernel.interner, saved["interner"])
    kernel.previous_watermark = saved["previous_watermark"]


__all__ = ["export_shared", "restore_shared"]
