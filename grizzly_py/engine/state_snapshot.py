"""Kernel state out of native memory into plain arrays, and back into a fresh kernel.

A checkpoint (``checkpoint.py``) holds, for every pipeline, what its kernel keeps between batches
(``PipelineKernel.export_state``; each kernel class exports its own layout):

- every kernel: the record counters of each worker's state block (rows in, filtered, late, the
  largest event time seen, the earliest open window end: ``COUNTER_WORDS``);
- a window kernel on hash tables (tumbling, sliding, session and count windows; thread-local
  state, any parallelism): per state block, the window directory in its order (window or pane
  starts; slot 0 holds the key table of sessions and count windows) and each table as its live
  entries ``[tag, key words, ...]`` (``window_tables.TableShape``), each holistic aggregate's
  value vector as its values, each key's session nodes (in list order) and each key's pane ring of
  a sliding count window (``export_window_block``); the string interner (string keys are ids in
  the entries); the sliding trigger's last watermark; the processing-time clock;
- a join kernel: ``join_snapshot.py``; the shared window state: ``shared_snapshot.py``; sort-based
  grouping (a window kernel's key/pointer arrays per pane, the sort-merge join): ``sort_snapshot.py``.
  They are built from this module's blocks.

Restoring writes the same entries into fresh tables allocated with the C allocator the runtime
frees them with (libc ``calloc``/``malloc``): an entry goes to the slot its tag hashes to
(``tag & (capacity - 1)``, linear probing, the placement of ``runtime/hashtable.ll``) in a table at
most half full, so the compiled code finds and grows it as if it had inserted the entries itself.
The aggregate state words are copied bit for bit, so a restored window fires exactly the results
the original would have (float sums included).

A snapshot restores at another parallelism: thread-local window state has one block per worker,
and blocks beyond the resumed job's workers become idle blocks whose windows fire merged with the
workers' (``kernels.WindowKernel.restore_state``); the record counters of other kernels are
folded or spread (``restore_counters``).
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..codegen import abi
from . import native_words
from .window_tables import TableShape

COUNTER_WORDS = (abi.STATE_ROWS_IN, abi.STATE_FILTERED, abi.STATE_LATE, abi.STATE_MAX_EVENT_TIME,
                 abi.STATE_MIN_OPEN_END)
SLOT_BYTES = 32            # runtime/windows.ll: { i64 window_start, %gz.ht { ptr, i64 capacity, i64 size } }
FIRST_TABLE_CAPACITY = 1024  # runtime/hashtable.ll: an empty table's first allocation

_libc = ctypes.CDLL(None)
_libc.calloc.restype, _libc.calloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t, ctypes.c_size_t]
_libc.malloc.restype, _libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]


def export_counters(kernel) -> dict:
    """The record counters of every state block (``COUNTER_WORDS``) and the batch count."""
    return {"counters": [[int(s[w]) for w in COUNTER_WORDS] for s in kernel.states],
            "batches_processed": kernel.batches_processed}


# ----------------------------------------------------------------------------------------------
# a window kernel's hash tables (window_tables.TableShape)
def export_window_block(windows: np.ndarray, shape: TableShape) -> dict:
    """One state block's window directory (``windows``: rows of (window or pane start, entries,
    capacity, size), in directory order) and what its tables hold, as arrays (copies)."""
    starts, counts, chunks = [], [], []
    for start, entries, capacity, _size in windows:
        live = live_entries(int(entries), int(capacity), shape.entry_words)
        starts.append(int(start))
        counts.append(len(live))
        chunks.append(live)
    entries = np.concatenate(chunks) if chunks else np.zeros((0, shape.entry_words), dtype=np.int64)
    block = {"starts": np.array(starts, dtype=np.int64), "counts": np.array(counts, dtype=np.int64),
             "entries": entries}
    if shape.head_word is not None:  # each entry's session list, in list order
        block["nodes"], block["nodes_per_entry"] = export_lists(entries[:, shape.head_word], shape.layout.entry_words)
        block["vectors"] = export_vectors(block["nodes"], shape.vector_words)
    else:
        block["vectors"] = export_vectors(entries, shape.vector_words)
    if shape.ring_word is not None:  # each entry's pane ring: (1 + capacity) pane states
        rings = [native_words.copy(int(p), (1 + int(c)) * shape.pane_words)
                 for p, c in zip(entries[:, shape.ring_word], entries[:, shape.ring_word + 1])]
        block["rings"] = (np.concatenate(rings) if rings else np.zeros(0, dtype=np.int64)).reshape(-1, shape.pane_words)
        # a pane's value vectors sit in its slot (valid or zeroed: the ring frees them when the pane leaves)
        block["ring_vectors"] = export_vectors(block["rings"], shape.pane_vector_words)
    return block


def restore_window_block(state: np.ndarray, block: dict, shape: TableShape) -> None:
    """Build the window directory and tables of ``block`` (``export_window_block``) in the fresh
    state block ``state``."""
    if int(state[abi.STATE_WINDOWS]) or int(state[abi.STATE_WINDOWS + 1]):
        raise RuntimeError("restoring into a state block that already holds windows")
    starts, counts = block["starts"], block["counts"]
    entries = block["entries"].copy()
    if shape.head_word is not None:  # session lists: nodes allocated and linked as the kernel does
        nodes = block["nodes"].copy()
        restore_vectors(nodes, shape.vector_words, block["vectors"])
        entries[:, shape.head_word] = restore_lists(nodes, block["nodes_per_entry"])
    else:
        restore_vectors(entries, shape.vector_words, block["vectors"])
    if shape.ring_word is not None:
        rings = block["rings"].copy()
        restore_vectors(rings, shape.pane_vector_words, block["ring_vectors"])
        at = 0
        for r in range(len(entries)):
            if not entries[r, shape.ring_word]:
                continue
            states = 1 + int(entries[r, shape.ring_word + 1])
            entries[r, shape.ring_word] = allocated(rings[at:at + states].reshape(-1))
            at += states
    slots = np.zeros((directory_capacity(len(starts)), SLOT_BYTES // 8), dtype=np.int64)
    bounds = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    for i, start in enumerate(starts):
        slots[i, 0] = start
        slots[i, 1:4] = build_table(entries[bounds[i]:bounds[i + 1]], shape.entry_words)
    state[abi.STATE_WINDOWS:abi.STATE_WINDOWS + 3] = (allocated(slots.reshape(-1)), len(starts), len(slots))


# --- building blocks (also of the shared state, sort grouping and joins) ---------------------------
def live_entries(entries: int, capacity: int, entry_words: int) -> np.ndarray:
    """A copy of the live entries (tag > 1) of a hash table's entry array."""
    rows = native_words.view(entries, capacity * entry_words).reshape(-1, entry_words)
    return rows[rows[:, 0].view(np.uint64) > 1].copy()


def export_vectors(rows: np.ndarray, words: list[int]) -> list[dict]:
    """The vectors ``{data, length, capacity}`` at each of ``words`` of ``rows``: lengths, whether
    each is held inline (capacity 0: a join's one-ref vector keeps the ref in its data word), and
    the values, concatenated."""
    out = []
    for word in words:
        data, lengths = rows[:, word], rows[:, word + 1].copy()
        inline = rows[:, word + 2] == 0
        # an inline vector holds its one value (if any) in the data word; another, its length's
        # values at the data pointer (none at a null pointer)
        counts = np.where(inline, lengths != 0, np.where(data != 0, np.maximum(lengths, 0), 0)).astype(np.int64)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64) if len(counts) else counts
        values = np.empty(int(counts.sum()), dtype=np.int64)
        kept = inline & (counts > 0)
        values[starts[kept]] = data[kept]
        heap = ~inline & (counts > 0)
        base = values.ctypes.data
        for address, n, at in zip(data[heap].tolist(), counts[heap].tolist(), starts[heap].tolist()):
            ctypes.memmove(base + 8 * at, address, 8 * n)  # one copy per vector, into place
        out.append({"lengths": lengths, "inline": inline.astype(np.uint8), "values": values})
    return out


def export_lists(heads: np.ndarray, node_words: int) -> tuple[np.ndarray, np.ndarray]:
    """The nodes of the linked lists starting at ``heads`` (word 0 of a node: the next one), in
    list order, and how many each list has."""
    nodes, lengths = [], np.zeros(len(heads), dtype=np.int64)
    for r, head in enumerate(heads):
        node = int(head)
        while node:
            words = native_words.copy(node, node_words)
            nodes.append(words)
            lengths[r] += 1
            node = int(words[0])
    return np.array(nodes, dtype=np.int64).reshape(-1, node_words), lengths


def export_strings(values: list[str | None]) -> dict:
    """``values`` as UTF-8 data and offsets; ``free``: the indices of the None values (empty)."""
    data = [b"" if v is None else v.encode("utf-8", "surrogatepass") for v in values]
    offsets = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum([len(d) for d in data], out=offsets[1:])
    free = np.array([i for i, v in enumerate(values) if v is None], dtype=np.int64)
    return {"offsets": offsets, "data": np.frombuffer(b"".join(data), dtype=np.uint8).copy(), "free": free}


def import_strings(saved: dict) -> list[str | None]:
    """The inverse of ``export_strings`` (a snapshot of format version 1 or 2 has no ``free``)."""
    offsets, data = saved["offsets"], saved["data"].tobytes()
    values = [data[offsets[i]:offsets[i + 1]].decode("utf-8", "surrogatepass") for i in range(len(offsets) - 1)]
    for i in saved.get("free", ()):
        values[int(i)] = None
    return values


def export_interner(interner) -> dict | None:
    """A kernel's interned strings by id, its free ids as None, and its carried strings (None: it
    interns none). The checkpoint releases the strings no window holds first
    (``checkpoint.export_query_state``)."""
    if interner is None:
        return None
    out = export_strings(interner.strings)
    carried = interner.carried.export()
    if carried is not None:
        out["carried"] = carried
    return out


def restore_interner(interner, saved: dict | None) -> None:
    """The inverse of ``export_interner``, into the kernel's (fresh) interner."""
    if saved is not None:
        interner.load(import_strings(saved))
        interner.carried.load(saved.get("carried"))


def allocated(words: np.ndarray, zeroed: bool = False) -> int:
    """A C allocation holding ``words`` (at least one word)."""
    size = 8 * max(1, len(words))
    memory = _libc.calloc(1, size) if zeroed else _libc.malloc(size)
    if not memory:
        raise MemoryError("out of memory restoring a checkpoint")
    if len(words):
        ctypes.memmove(memory, np.ascontiguousarray(words, dtype=np.int64).ctypes.data, 8 * len(words))
    return memory


def restore_vectors(rows: np.ndarray, words: list[int], saved: list[dict]) -> None:
    """Fresh vectors at ``words`` of ``rows`` (in place) from ``export_vectors``."""
    for word, v in zip(words, saved):
        at = np.concatenate([[0], np.cumsum(v["lengths"])])
        for r in range(len(rows)):
            n = int(v["lengths"][r])
            if v["inline"][r]:
                rows[r, word:word + 3] = (int(v["values"][at[r]]) if n else 0, n, 0)
            else:
                rows[r, word:word + 3] = (allocated(v["values"][at[r]:at[r] + n]) if n else 0, n, n)


def restore_lists(nodes: np.ndarray, per_head: np.ndarray) -> list[int]:
    """Allocate and link ``nodes`` (from ``export_lists``, vectors already restored); the heads."""
    heads, first = [], 0
    for n in per_head:
        following = 0
        for i in range(first + int(n) - 1, first - 1, -1):  # last node first: each points to the next
            nodes[i, 0] = following
            following = allocated(nodes[i], zeroed=True)
        heads.append(following)
        first += int(n)
    return heads


def build_table(rows: np.ndarray, entry_words: int, capacity: int | None = None) -> tuple[int, int, int]:
    """A hash table header ``(entries, capacity, size)`` holding ``rows`` at their hashed places
    (a zeroed header, the empty table, when there are none); ``capacity``: a given one (a power of
    two, at least twice the rows) instead of the runtime's."""
    n = len(rows)
    if not n and capacity is None:
        return 0, 0, 0
    capacity = capacity or table_capacity(n)
    table = np.zeros((capacity, entry_words), dtype=np.int64)
    table[hashed_positions(rows[:, 0], capacity)] = rows
    memory = _libc.calloc(capacity, 8 * entry_words)
    if not memory:
        raise MemoryError("out of memory restoring a checkpoint")
    ctypes.memmove(memory, table.ctypes.data, capacity * 8 * entry_words)
    return memory, capacity, n


def table_capacity(entries: int) -> int:
    """The capacity a table of ``entries`` live entries gets: a power of two, at least the first
    allocation, with the table at most half full (the runtime's growth rule)."""
    capacity = FIRST_TABLE_CAPACITY
    while 2 * entries > capacity:
        capacity *= 2
    return capacity


def hashed_positions(tags: np.ndarray, capacity: int) -> np.ndarray:
    """Where linear probing from ``tag & (capacity - 1)`` puts each entry of an empty table (one
    entry per slot; ``len(tags)`` at most ``capacity``). Rounds: the entries whose slot is free take
    it (the first of them when several want one), the others move one slot on."""
    mask = np.uint64(capacity - 1)
    pos = (tags.view(np.uint64) & mask).astype(np.int64)
    owner = np.full(capacity, -1, dtype=np.int64)
    pending = np.arange(len(tags))
    while len(pending):
        want = pos[pending]
        free = owner[want] < 0
        slots, first = np.unique(want[free], return_index=True)
        winners = pending[free][first]
        owner[slots] = winners
        pending = np.setdiff1d(pending, winners, assume_unique=True)
        pos[pending] = (pos[pending] + 1) & (capacity - 1)  # every pending entry's slot is taken now
    return pos


def directory_capacity(length: int) -> int:
    """A window directory's capacity for ``length`` slots (it grows 0 -> 8 -> 16 ...)."""
    capacity = 8
    while capacity < length:
        capacity *= 2
    return capacity


def restore_counters(kernel, saved: dict) -> None:
    """The record counters of every state block and the batch count, as the snapshot has them. A
    snapshot taken at another parallelism has another number of blocks: the kernel's first blocks
    take the saved ones; more saved blocks than the kernel has are folded into its first (rows
    added up, the largest event time, the earliest open window end), fewer leave the rest fresh.
    (Window kernels whose blocks hold windows get idle blocks for them first:
    ``WindowKernel.restore_state``.)"""
    counters = [list(c) for c in saved["counters"]]
    for extra in counters[len(kernel.states):]:
        counters[0] = fold_counters(counters[0], extra)
    for state, values in zip(kernel.states, counters):
        for word, value in zip(COUNTER_WORDS, values):
            state[word] = value
    kernel.batches_processed = saved["batches_processed"]


def fold_counters(a: list[int], b: list[int]) -> list[int]:
    """The ``COUNTER_WORDS`` of two state blocks as one block's."""
    return [a[0] + b[0], a[1] + b[1], a[2] + b[2], max(a[3], b[3]), min(a[4], b[4])]


__all__ = ["COUNTER_WORDS", "allocated", "build_table", "directory_capacity", "export_counters", "export_interner",
           "export_lists", "export_strings", "export_vectors", "export_window_block", "fold_counters",
           "hashed_positions", "import_strings", "live_entries", "restore_counters", "restore_interner",
           "restore_lists", "restore_vectors", "restore_window_block", "table_capacity"]
