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
their strings stay as long as the job runs; the state-memory limit counts them like the key
table.

Batches prepared but not run yet hold ids too: the driver prepares the batches of a parallel
tumbling window's next round while the round before runs, and fires that round's windows before
the next one starts (``local.QueryRun._flush_group``); it passes them in (``pending``). Every
other batch runs right after it is prepared, before the next firing.

``release_strings`` is called by the driver after every firing (``QueryRun.release_strings``),
when no task runs on the kernel: when its interner is due (its strings doubled since its last
release and take at least ``interning.RELEASE_MIN_BYTES``), it reads the ids the state and the
pending batches hold, one pass over the live entries, and the interner forgets the others. The
state-memory check forces a release before it fails a job, and a checkpoint forces one before
it copies the interner, so that a snapshot holds the strings of open windows only.
"""

from __future__ import annotations

import numpy as np

from ..codegen import abi
from ..codegen.join import J_DIR, J_TABLE, SLOT_WORDS
from . import native_words
from .join_kernel import JoinKernel
from .kernels import WindowKernel

_NULL_BITS = 48  # a table entry's tag: key i is null when bit 48 + i is set (codegen/module.py)


def release_strings(kernel, pending=(), force: bool = False) -> int:
    """Release the strings of ``kernel`` (any kernel; a regrouping one's live kernels) that neither
    its state nor the ``pending`` batches (``SharedBatch``es prepared but not run) hold, when its
    interner is due or ``force``. Returns the strings released. No task may be running on the
    kernel."""
    live = getattr(kernel, "live_kernels", None)
    if live is not None:  # grouping="auto": each kernel has its own interner (regrouping.py)
        return sum(release_strings(k, pending, force) for k in live())
    interner = interner_of(kernel)
    if interner is None or not (force or interner.due) or not len(interner):
        return 0
    held = held_ids(kernel)
    if held is None:  # count windows: every key stays
        return 0
    prepared = [ids.fill_null(0).to_numpy(zero_copy_only=False) for batch in pending
                for ids in batch.interned_ids(interner)]
    return interner.release(_concat([held] + prepared))


def interner_of(kernel):
    """The interner of ``kernel``'s string keys (a join's sides share one), or None."""
    if isinstance(kernel, JoinKernel):
        return kernel.sides[0].interner
    return getattr(kernel, "interner", None)


def held_ids(kernel) -> np.ndarray | None:
    """The interned ids the state of ``kernel`` holds (with repeats), None for a kernel whose
    keys stay for good (count windows)."""
    from .sort_kernel import SortMergeJoinKernel  # (sort_kernel imports this package's join kernel)
    if isinstance(kernel, SortMergeJoinKernel):
        words = _string_words(kernel.terminal.sides[0].keys)
        return _concat([_kpa_keys(k.state, kernel.row_words, words, None) for k in kernel.sides])
    if isinstance(kernel, JoinKernel):
        return _join_ids(kernel)
    if not isinstance(kernel, WindowKernel):
        return np.zeros(0, dtype=np.int64)
    trigger = kernel.gen.trigger
    keys = _string_words(kernel.gen.pipeline.terminal.keys)
    if trigger == "count":
        return None
    if trigger == "kpa":
        return _concat([_kpa_keys(s, kernel.gen.kpa_row_words, [1 + k for k in keys], keys) for s in kernel.states])
    entry_words = kernel.gen.grouping.entry_size // 8
    head = None
    if trigger == "session":  # the key table's entries: tag, keys, the head of the key's sessions
        entry_words = kernel.gen.grouping.key_words + 2
        head = entry_words - 1
    blocks = [kernel.state] if trigger == "shared" else kernel.states
    found = []
    for state in blocks:
        for _start, entries, capacity, _size in kernel.windows(state):
            found.append(_table_keys(int(entries), int(capacity), entry_words, keys, head))
    return _concat(found)


def _string_words(keys) -> list[int]:
    """The positions of the string keys among ``keys`` ((field, expression) pairs)."""
    return [i for i, (f, _) in enumerate(keys) if f.dtype.is_string]


def _table_keys(address: int, capacity: int, entry_words: int, keys: list[int], head: int | None = None,
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
    return _concat(out)


def _kpa_keys(state: np.ndarray, row_words: int, words: list[int], null_bits: list[int] | None) -> np.ndarray:
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
    return _concat(out)


def _join_ids(kernel) -> np.ndarray:
    """The ids in a hash join's tables: its window directory's tables and its key table."""
    keys = _string_words(kernel.terminal.sides[0].keys)
    if not keys:
        return np.zeros(0, dtype=np.int64)
    entry_words = kernel.gen.entry_size // 8
    shared = kernel.shared
    tables = [(int(shared[J_TABLE]), int(shared[J_TABLE + 1]))]
    slots, length = int(shared[J_DIR]), int(shared[J_DIR + 1])
    if slots and length:
        words = native_words.view(slots, length * SLOT_WORDS).reshape(length, SLOT_WORDS)
        tables += [(int(a), int(c)) for a, c in words[:, 1:3]]
    return _concat([_table_keys(a, c, entry_words, keys, nullable=False) for a, c in tables])


def _concat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)


__all__ = ["held_ids", "interner_of", "release_strings"]
