"""Kernel state out of native memory into plain arrays, and back into a fresh kernel.

A checkpoint (``checkpoint.py``) holds, for every pipeline, what its kernel keeps between batches:

- every kernel: the record counters of each worker's state block (rows in, filtered, late, the
  largest event time seen, the earliest open window end: ``COUNTER_WORDS``);
- a window kernel (tumbling, sliding, session and count windows; thread-local state, any
  parallelism): per state block, the window directory in its order (window or pane starts; slot 0
  holds the key table of sessions and count windows) and each table as its live entries ``[tag,
  key words, aggregate state words]`` (layout: ``entry_layout.EntryLayout``), each holistic
  aggregate's value vector as its values, each key's session nodes (in list order) and each key's
  pane ring of a sliding count window; the string interner (string keys are ids in the entries);
  the sliding trigger's last watermark; the processing-time clock;
- a join kernel: ``join_snapshot.py``; the shared window state: ``shared_snapshot.py``; sort-based
  grouping (a window kernel's key/pointer arrays per pane, the sort-merge join): ``sort_snapshot.py``.

Restoring writes the same entries into fresh tables allocated with the C allocator the runtime
frees them with (libc ``calloc``/``malloc``): an entry goes to the slot its tag hashes to
(``tag & (capacity - 1)``, linear probing, the placement of ``runtime/hashtable.ll``) in a table at
most half full, so the compiled code finds and grows it as if it had inserted the entries itself.
The aggregate state words are copied bit for bit, so a restored window fires exactly the results
the original would have (float sums included).

A snapshot restores at another parallelism: thread-local window state has one block per worker,
and blocks beyond the resumed job's workers become idle blocks whose windows fire merged with the
workers' (``_make_room``); the record counters of other kernels are folded or spread.

Every kernel kind is covered, under hash and sort-based grouping; ``unsupported_reason`` names one
that is not (a kind added later without its export), and a job with checkpointing then refuses
to start.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from ..codegen import abi
from ..codegen.module import window_geometry
from . import native_words
from .kernels import ProjectKernel, WindowKernel

COUNTER_WORDS = (abi.STATE_ROWS_IN, abi.STATE_FILTERED, abi.STATE_LATE, abi.STATE_MAX_EVENT_TIME,
                 abi.STATE_MIN_OPEN_END)
SLOT_BYTES = 32            # runtime/windows.ll: { i64 window_start, %gz.ht { ptr, i64 capacity, i64 size } }
FIRST_TABLE_CAPACITY = 1024  # runtime/hashtable.ll: an empty table's first allocation

_libc = ctypes.CDLL(None)
_libc.calloc.restype, _libc.calloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t, ctypes.c_size_t]
_libc.malloc.restype, _libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]


def unsupported_reason(kernel) -> str | None:
    """Why ``kernel``'s state cannot be checkpointed (None: it can)."""
    if kernel is None or type(kernel) is ProjectKernel:
        return None
    trigger = getattr(getattr(kernel, "gen", None), "trigger", None)
    if isinstance(kernel, WindowKernel) and trigger in ("tumbling", "panes", "session", "count", "shared", "kpa"):
        return None  # shared: shared_snapshot.py; kpa (sort-based grouping): sort_snapshot.py
    if type(kernel).__name__ in ("JoinKernel", "SortMergeJoinKernel"):
        return None  # join_snapshot.py, sort_snapshot.py
    return f"{type(kernel).__name__} (trigger {trigger!r})"


@dataclass(frozen=True)
class _Shape:
    """Where a window kernel keeps what: ``entry_words`` per table entry; aggregates (``layout``)
    in the entry, or in session nodes of ``layout.entry_words`` words that the entry's word
    ``head_word`` points to (a list linked by each node's word 0); a sliding count window's pane
    ring (``(1 + capacity) * pane_words`` words) at entry word ``ring_word``, its capacity next."""

    layout: object
    entry_words: int
    head_word: int | None = None
    ring_word: int | None = None
    pane_words: int = 0


def _shape(kernel) -> _Shape:
    from .entry_layout import EntryLayout  # the entry layout, shared with Spark's partial states
    layout = EntryLayout.of(kernel.gen)
    trigger = kernel.gen.trigger
    if trigger == "session":  # codegen/session_window.py: entry {tag, keys, head}, nodes {next, start, end, aggs}
        return _Shape(layout, layout.key_words + 2, head_word=layout.key_words + 1)
    assigner = kernel.gen.pipeline.terminal.assigner
    if trigger == "count" and assigner.size != assigner.slide:  # codegen/count_window.py
        ring = layout.key_words + 2                       # tag, keys, record counter, ring, capacity, aggs
        return _Shape(layout, layout.entry_words, ring_word=ring, pane_words=layout.entry_words - (ring + 2))
    return _Shape(layout, layout.entry_words)


# ----------------------------------------------------------------------------------------------
# export
def export_kernel(kernel) -> dict:
    """Everything ``kernel`` keeps between batches, as JSON-able values and numpy arrays (copies)."""
    if type(kernel).__name__ == "SortMergeJoinKernel":
        from .sort_snapshot import export_sort_merge_join
        return export_sort_merge_join(kernel)
    if type(kernel).__name__ == "JoinKernel":
        from .join_snapshot import export_join
        return export_join(kernel)
    if getattr(kernel, "window_state", None) == "shared":
        from .shared_snapshot import export_shared
        return export_shared(kernel)
    out = {"counters": [[int(s[w]) for w in COUNTER_WORDS] for s in kernel.states],
           "batches_processed": kernel.batches_processed}
    if isinstance(kernel, WindowKernel):
        if kernel.gen.trigger == "kpa":  # sort-based grouping: key/pointer arrays per pane
            from .sort_snapshot import export_kpa_block
            out["blocks"] = [export_kpa_block(state, kernel.gen.kpa_row_words) for state in kernel.states]
        else:
            shape = _shape(kernel)
            out["blocks"] = [_export_block(kernel, state, shape) for state in kernel.states]
        out["interner"] = export_interner(kernel.interner)
        out["previous_watermark"] = getattr(kernel, "previous_watermark", None)
        out["clock_last"] = kernel.clock.last if kernel.clock is not None else None
    return out


def _export_block(kernel: WindowKernel, state: np.ndarray, shape: _Shape) -> dict:
    starts, counts, chunks = [], [], []
    for start, entries, capacity, _size in kernel.windows(state):
        live = live_entries(int(entries), int(capacity), shape.entry_words)
        starts.append(int(start))
        counts.append(len(live))
        chunks.append(live)
    entries = np.concatenate(chunks) if chunks else np.zeros((0, shape.entry_words), dtype=np.int64)
    block = {"starts": np.array(starts, dtype=np.int64), "counts": np.array(counts, dtype=np.int64),
             "entries": entries}
    vectors = _vector_words(shape.layout)
    if shape.head_word is not None:  # each entry's session list, in list order
        block["nodes"], block["nodes_per_entry"] = export_lists(entries[:, shape.head_word], shape.layout.entry_words)
        block["vectors"] = export_vectors(block["nodes"], vectors)
    else:
        block["vectors"] = export_vectors(entries, vectors)
    if shape.ring_word is not None:  # each entry's pane ring: (1 + capacity) pane states
        rings = [native_words.copy(int(p), (1 + int(c)) * shape.pane_words)
                 for p, c in zip(entries[:, shape.ring_word], entries[:, shape.ring_word + 1])]
        block["rings"] = (np.concatenate(rings) if rings else np.zeros(0, dtype=np.int64)).reshape(-1, shape.pane_words)
        # a pane's value vectors sit in its slot (valid or zeroed: the ring frees them when the pane leaves)
        block["ring_vectors"] = export_vectors(block["rings"], _pane_vector_words(shape))
    return block


def _pane_vector_words(shape: _Shape) -> list[int]:
    """Where the holistic aggregates' vectors sit in a pane state of a sliding count window's ring
    (pane states are laid out as the entry's aggregates, which start after the ring's two words)."""
    return [w - (shape.ring_word + 2) for w in _vector_words(shape.layout)]


def _vector_words(layout) -> list[int]:
    return [a.word for a in layout.aggregates if a.holistic]


# --- building blocks (also for join state: join_snapshot.py) --------------------------------------
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
        lengths = rows[:, word + 1].copy()
        inline = rows[:, word + 2] == 0
        values = [(np.array([p], dtype=np.int64) if n else np.zeros(0, dtype=np.int64)) if i else native_words.copy(int(p), int(n))
                  for p, n, i in zip(rows[:, word], lengths, inline)]
        out.append({"lengths": lengths, "inline": inline.astype(np.uint8),
                    "values": np.concatenate(values) if values else np.zeros(0, dtype=np.int64)})
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
    """A kernel's interned strings by id, its free ids as None (None: it interns none). The
    checkpoint releases the strings no window holds first (``checkpoint.export_query_state``)."""
    return export_strings(interner.strings) if interner is not None else None


def restore_interner(interner, saved: dict | None) -> None:
    """The inverse of ``export_interner``, into the kernel's (fresh) interner."""
    if saved is not None:
        interner.load(import_strings(saved))


# ----------------------------------------------------------------------------------------------
# restore
def restore_kernel(kernel, saved: dict) -> None:
    """Load ``saved`` (from ``export_kernel`` of the same pipeline, at any parallelism) into
    ``kernel``, whose state blocks must be fresh (nothing processed yet). Per-worker window blocks
    beyond the kernel's workers become idle blocks (``_make_room``); counters are folded or
    spread (``restore_counters``)."""
    if type(kernel).__name__ == "SortMergeJoinKernel":
        from .sort_snapshot import restore_sort_merge_join
        return restore_sort_merge_join(kernel, saved)
    if type(kernel).__name__ == "JoinKernel":
        from .join_snapshot import restore_join
        return restore_join(kernel, saved)
    if getattr(kernel, "window_state", None) == "shared":
        from .shared_snapshot import restore_shared
        return restore_shared(kernel, saved)
    if isinstance(kernel, WindowKernel) and len(saved["blocks"]) > len(kernel.states):
        _make_room(kernel, len(saved["blocks"]))
    restore_counters(kernel, saved)
    if not isinstance(kernel, WindowKernel):
        return
    if kernel.gen.trigger == "kpa":
        from .sort_snapshot import restore_kpa_block
        for state, block in zip(kernel.states, saved["blocks"]):
            restore_kpa_block(state, block, kernel.gen.kpa_row_words, f"pipeline {kernel.gen.pipeline.id}")
    else:
        shape = _shape(kernel)
        for state, block in zip(kernel.states, saved["blocks"]):
            _restore_block(state, block, shape)
    restore_interner(kernel.interner, saved["interner"])
    if saved["previous_watermark"] is not None:
        kernel.previous_watermark = saved["previous_watermark"]
    if saved["clock_last"] is not None:
        kernel.clock.last = saved["clock_last"]


def _make_room(kernel: WindowKernel, blocks: int) -> None:
    """A snapshot taken at a higher parallelism holds more per-worker blocks of windows than
    ``kernel`` has: the rest become idle blocks (no worker writes them; their windows fire merged
    with the workers' ones, as under the parallelism that wrote them). Tumbling windows at
    parallelism 1 fire one block without merging (``WindowKernel``): such a kernel takes the
    merging trigger that several workers' tumbling windows use (``make_kernel``) first."""
    from .kernels import SlidingWindowKernel
    trigger = kernel.gen.trigger
    if trigger not in ("tumbling", "panes", "kpa"):  # (the other window kernels keep one block)
        raise ValueError(f"pipeline {kernel.gen.pipeline.id}: the checkpoint has {blocks} state blocks of "
                         f"{trigger!r} windows, the job {len(kernel.states)}")
    if not isinstance(kernel, SlidingWindowKernel):
        kernel.__class__ = SlidingWindowKernel  # same compiled units: the tumbling trigger has merge_emit
        _, kernel.slide, kernel.pane = window_geometry(kernel.gen.pipeline.terminal.assigner)
        kernel.previous_watermark = None
    kernel.add_idle_blocks(blocks - len(kernel.states))


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


def _restore_block(state: np.ndarray, block: dict, shape: _Shape) -> None:
    """Build the window directory and tables of ``block`` in the fresh state block ``state``."""
    if int(state[abi.STATE_WINDOWS]) or int(state[abi.STATE_WINDOWS + 1]):
        raise RuntimeError("restoring into a state block that already holds windows")
    starts, counts = block["starts"], block["counts"]
    entries = block["entries"].copy()
    vectors = _vector_words(shape.layout)
    if shape.head_word is not None:  # session lists: nodes allocated and linked as the kernel does
        nodes = block["nodes"].copy()
        restore_vectors(nodes, vectors, block["vectors"])
        entries[:, shape.head_word] = restore_lists(nodes, block["nodes_per_entry"])
    else:
        restore_vectors(entries, vectors, block["vectors"])
    if shape.ring_word is not None:
        rings = block["rings"].copy()
        restore_vectors(rings, _pane_vector_words(shape), block["ring_vectors"])
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
    (Window kernels whose blocks hold windows get idle blocks for them first: ``restore_kernel``.)"""
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


__all__ = ["COUNTER_WORDS", "allocated", "build_table", "directory_capacity", "export_kernel", "export_lists",
           "export_strings", "export_vectors", "hashed_positions", "import_strings", "live_entries", "restore_counters",
           "restore_kernel", "restore_lists", "restore_vectors", "table_capacity", "unsupported_reason"]
