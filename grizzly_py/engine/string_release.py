"""Releasing interned strings that no window holds any more.

A string key lives in native state as its interned id (``interning.py``), in the key words of:

- the hash tables of tumbling and sliding windows (each open window's or pane's table, per
  worker's state block, idle blocks included; the shared state's open slots): entries ``[tag,
  key words, ...]``, a null key flagged in the tag's bits 48.. (its key word means nothing);
- session windows' key table, where a key counts only while it has a session: a key whose
  sessions all fired keeps its entry until the table is rebuilt, but an entry without a session
  is as good as none, so its string may go (a later key given the same id finds the entry and
  starts its first session there);
- sort-based grouping's key/pointer arrays: rows ``{key null mask, key words, ...}`` per pane;
- joins: the tables of window joins, the key table of interval and session joins (a key leaves
  it once it holds nothing), the sort-merge join's rows ``{key words, ref}`` (null keys never
  enter a join).

Count windows keep every key's entry for good (a key's count goes on across its windows), so
their key strings stay as long as the job runs; the state-memory limit counts them like the key
table.

An aggregate of strings (``AggLayout.interned``) holds ids in its state: ``first``/``last`` in
its value word, the holistic ones (``count_distinct``, the string variants of ``min``, ``max``,
``mode``) in their value vectors, wherever the layout keeps aggregate states (table entries,
session nodes, the pane rings of sliding count windows: ``aggregate_ids`` reads them from the
block a snapshot would copy, ``state_snapshot.export_window_block``); sort-based grouping keeps
them in the rows' value words.

Batches prepared but not run yet hold ids too: the driver prepares the batches of a parallel
tumbling window's next round while the round before runs, and fires that round's windows before
the next one starts (``rounds.RoundPlanner.flush``); it passes them in (``pending``). Every
other batch runs right after it is prepared, before the next firing.

The driver calls ``PipelineKernel.release_strings`` after every firing (``QueryRun.release_strings``),
when no task runs on the kernel: when its interner is due (its strings doubled since its last
release and take at least ``interning.RELEASE_MIN_BYTES``), it reads the ids its state holds
(``PipelineKernel.held_string_ids``: each kernel class reads its own layout with this module's
readers, one pass over the live entries) and those of the pending batches, and the interner
forgets the others (``release_unheld``). The state-memory check forces a release before it fails
a job, and a checkpoint forces one before it copies the interner, so that a snapshot holds the
strings of open windows only.
"""

from __future__ import annotations

import numpy as np

from ..codegen import abi
from . import native_words

_NULL_BITS = 48  # a table entry's tag: key i is null when bit 48 + i is set (codegen/module.py)


def release_unheld(interner, held: np.ndarray, pending=()) -> int:
    """Release the strings of ``interner`` whose ids neither ``held`` (the ids a kernel's state
    holds, with repeats) nor the ``pending`` batches (``SharedBatch``es prepared but not run)
    hold; the strings released."""
    prepared = [ids.fill_null(0).to_numpy(zero_copy_only=False) for batch in pending
                for ids in batch.interned_ids(interner)]
    return interner.release(concat_ids([held] + prepared))


def string_key_positions(keys) -> list[int]:
    """The positions of the string keys among ``keys`` ((field, expression) pairs)."""
    return [i for i, (f, _) in enumerate(keys) if f.dtype.is_string]


def table_keys(address: int, capacity: int, entry_words: int, keys: list[int], head: int | None = None,
               nullable: bool = True) -> np.ndarray:
    """The ids of string keys ``keys`` in a hash table's live entries, but for null keys
    (``nullable``: flagged in the tag; a join holds none); with ``head``, only entries whose word
    ``head`` is set (a session key with a session)."""
    if not address or not capacity or not keys:
        return np.zeros(0, dtype=np.int64)
    rows = native_words.view(address, capacity * entry_words).reshape(capacity, entry_words)
    tags = rows[:, 0].view(np.uint64)
    live = tags > 1
    if head is not None:
        live &= rows[:, head] != 0
    out = []
    for k in keys:
        valid = live & ((tags >> np.uint64(_NULL_BITS + k)) & np.uint64(1) == 0) if nullable else live
        out.append(rows[valid, 1 + k])
    return concat_ids(out)


def kpa_keys(state: np.ndarray, row_words: int, words: list[int], null_bits: list[int] | None) -> np.ndarray:
    """The key words ``words`` of every row of the key/pointer arrays in a state block's window
    directory; ``null_bits``: per word, its bit in the row's null mask (word 0)."""
    slots, length = int(state[abi.STATE_WINDOWS]), int(state[abi.STATE_WINDOWS + 1])
    if not length or not words:
        return np.zeros(0, dtype=np.int64)
    out = []
    for pane in native_words.view(slots, 4 * length)[1::4]:
        if not pane:
            continue
        data, n = (int(w) for w in native_words.view(int(pane), 2))
        rows = native_words.view(data, n * row_words).reshape(n, row_words)
        for i, word in enumerate(words):
            if null_bits is None:
                out.append(rows[:, word].copy())
            else:
                out.append(rows[(rows[:, 0] >> null_bits[i]) & 1 == 0, word])
    return concat_ids(out)


def aggregate_ids(block: dict, shape) -> np.ndarray:
    """The interned ids the aggregate states of one exported state block hold (``block``:
    ``state_snapshot.export_window_block``; ``shape``: the kernel's ``TableShape``)."""
    ids = []

    def read(rows: np.ndarray, vectors: list[dict], offset: int = 0) -> None:
        ids.extend(rows[:, w - offset] for w in shape.string_words)
        string_vectors = set(shape.string_vector_words)
        ids.extend(v["values"] for w, v in zip(shape.vector_words, vectors) if w in string_vectors)

    if shape.head_word is not None:  # session nodes
        read(block["nodes"], block["vectors"])
    else:
        read(block["entries"], block["vectors"])
    if shape.ring_word is not None:  # pane states, laid out as the entry's aggregates after the ring's words
        read(block["rings"], block["ring_vectors"], shape.ring_word + 2)
    return concat_ids(ids)


def concat_ids(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)


__all__ = ["aggregate_ids", "concat_ids", "kpa_keys", "release_unheld", "string_key_positions", "table_keys"]
