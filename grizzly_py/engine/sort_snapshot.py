"""Sort-based grouping's state out of native memory into plain arrays, and back (``state_snapshot.py``
does the same for hash grouping and supplies the building blocks).

A sort-grouped window kernel (``SortWindowKernel``, ``codegen/sort_grouping.py``) and each side of
a sort-merge join (``SortMergeJoinKernel``, ``codegen/sort_merge_join.py``) keep, per state block, a
window directory whose slots hold a pane's key/pointer array (``runtime/kpa.ll``): slot ``{pane
start, pane object, 0, rows}``, pane object ``{rows, length, capacity, sealed, run ends {data,
length, capacity}, scratch}``. A snapshot holds per state block the pane starts in directory order
and per pane its rows (``length`` rows of ``row words``: a window's rows are ``{key null mask, key
words, aggregate inputs, validity bits}``, a join side's ``{key words, ref}``), how many of them are
sealed into runs, and the run ends. Rows are copied word for word, so a restored pane merges and
reduces exactly as the original would (float inputs included: their bits are in the rows).

Restoring allocates each pane object, its rows (capacity = length) and its run ends with libc
``calloc``/``malloc`` (what ``gz_kpa_free`` frees them with); the sort scratch buffer starts
empty (the next seal allocates it, as on a pane's first seal). The rest of a window kernel (record
counters, interned strings, the sliding trigger's last watermark, the processing-time clock) is
``state_snapshot.export_kernel``'s; a sort-merge join adds each side's counters, its kept Arrow
batches (``join_snapshot``'s stores) and its last fired watermark.
"""

from __future__ import annotations

import numpy as np

from ..codegen import abi
from . import native_words
from .join_snapshot import export_store, restore_store
from .state_snapshot import COUNTER_WORDS, allocated, directory_capacity, export_interner, restore_interner

KPA_PANE_WORDS = 8   # runtime/kpa.ll: %gz.kpa
SLOT_WORDS = 4       # runtime/windows.ll: {start, table {ptr, capacity, size}}
FORMAT = "kpa-1"     # the layout of an exported block (checked on restore)


def export_kpa_block(state: np.ndarray, row_words: int) -> dict:
    """One state block's panes: starts, rows, sealed rows, run ends (copies)."""
    slots_ptr, length = int(state[abi.STATE_WINDOWS]), int(state[abi.STATE_WINDOWS + 1])
    slots = native_words.view(slots_ptr, SLOT_WORDS * length).reshape(-1, SLOT_WORDS)
    starts, rows_per_pane, sealed, runs_per_pane, rows, runs = [], [], [], [], [], []
    for start, pane, _zero, _rows in slots:
        starts.append(int(start))
        if not pane:  # a slot whose pane was never allocated
            rows_per_pane.append(0), sealed.append(0), runs_per_pane.append(0)
            continue
        data, n, _capacity, done, ends, nruns, _runs_capacity, _scratch = (int(w) for w in native_words.view(int(pane), KPA_PANE_WORDS))
        rows_per_pane.append(n)
        sealed.append(done)
        runs_per_pane.append(nruns)
        rows.append(native_words.copy(data, n * row_words))
        runs.append(native_words.copy(ends, nruns))
    return {"format": FORMAT, "row_words": row_words, "starts": np.array(starts, dtype=np.int64),
            "rows_per_pane": np.array(rows_per_pane, dtype=np.int64), "sealed": np.array(sealed, dtype=np.int64),
            "runs_per_pane": np.array(runs_per_pane, dtype=np.int64),
            "rows": np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64),
            "runs": np.concatenate(runs) if runs else np.zeros(0, dtype=np.int64)}


def restore_kpa_block(state: np.ndarray, block: dict, row_words: int, what: str) -> None:
    """Build ``block``'s directory and panes in the fresh state block ``state``."""
    if block.get("format") != FORMAT or int(block["row_words"]) != row_words:
        raise ValueError(f"{what}: the checkpoint's key/pointer arrays have layout {block.get('format')!r} with "
                         f"{block.get('row_words')} words per row, this job's {FORMAT!r} with {row_words}")
    if int(state[abi.STATE_WINDOWS]) or int(state[abi.STATE_WINDOWS + 1]):
        raise RuntimeError("restoring into a state block that already holds panes")
    starts, per_pane, sealed, per_run = block["starts"], block["rows_per_pane"], block["sealed"], block["runs_per_pane"]
    rows, runs = block["rows"], block["runs"]
    if int(per_pane.sum()) * row_words != len(rows) or int(per_run.sum()) != len(runs):
        raise ValueError(f"{what}: the checkpoint's key/pointer arrays do not add up")
    slots = np.zeros((directory_capacity(len(starts)), SLOT_WORDS), dtype=np.int64)
    row_at = run_at = 0
    for i, start in enumerate(starts):
        n, nruns = int(per_pane[i]), int(per_run[i])
        pane = np.zeros(KPA_PANE_WORDS, dtype=np.int64)
        if n:
            pane[0:4] = (allocated(rows[row_at:row_at + n * row_words]), n, n, int(sealed[i]))
        if nruns:
            pane[4:7] = (allocated(runs[run_at:run_at + nruns]), nruns, nruns)
        row_at += n * row_words
        run_at += nruns
        slots[i] = (int(start), allocated(pane, zeroed=True), 0, n)
    state[abi.STATE_WINDOWS:abi.STATE_WINDOWS + 3] = (allocated(slots.reshape(-1)), len(starts), len(slots))


# --- the sort-merge join ----------------------------------------------------------------------
def export_sort_merge_join(kernel) -> dict:
    return {"kind": "sort_merge_join",
            "sides": [{"counters": [int(k.state[w]) for w in COUNTER_WORDS], "batches_processed": k.batches_processed,
                       "block": export_kpa_block(k.state, kernel.row_words)} for k in kernel.sides],
            "stores": [export_store(store) for store in kernel.stores],
            "interner": export_interner(kernel.sides[0].interner),
            "previous_watermark": kernel.previous_watermark}


def restore_sort_merge_join(kernel, saved: dict) -> None:
    if saved.get("kind") != "sort_merge_join":
        raise ValueError(f"pipeline {kernel.pipeline.id}: the checkpoint does not hold a sort-merge join's state")
    for k, side, name in zip(kernel.sides, saved["sides"], ("left", "right")):
        for word, value in zip(COUNTER_WORDS, side["counters"]):
            k.state[word] = value
        k.batches_processed = side["batches_processed"]
        restore_kpa_block(k.state, side["block"], kernel.row_words, f"pipeline {kernel.pipeline.id} ({name} input)")
    kernel._allocated = True  # close() frees what is restored
    for store, s in zip(kernel.stores, saved["stores"]):
        restore_store(store, s)
    restore_interner(kernel.sides[0].interner, saved["interner"])
    kernel.previous_watermark = saved["previous_watermark"]


__all__ = ["export_kpa_block", "export_sort_merge_join", "restore_kpa_block", "restore_sort_merge_join"]
