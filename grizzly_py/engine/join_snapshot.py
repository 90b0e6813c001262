"""A join pipeline's state out of native memory into plain arrays, and back (``state_snapshot.py``
does the same for window kernels and supplies the building blocks).

A ``JoinKernel`` keeps (layouts: ``codegen/join.py``):

- per side, its kernel's record counters;
- the shared join state: the earliest window end (interval: expiry) held, the smallest ref held per
  side, the records held; and its structures, by join kind:
  - tumbling and sliding: the window directory, slots of ``abi.J_SLOT_WORDS`` words ``{start, table,
    pairs, smallest ref per side, ...}``; each table's entries ``{tag, keys, left refs, right refs}``;
  - interval: one key table, entries ``{tag, keys, left (ref, time) vector, right (ref, time) vector}``;
  - session: one key table, entries ``{tag, keys, head}``, and per key a list of session nodes
    ``{next, start, end, smallest refs, left refs, right refs}``;
- whether a lookup join's table is still to be inserted (else it is the right side's state);
- per side, the Arrow batches the refs point into (``SideStore``: each batch with the ref of its
  first row), written into the snapshot as an Arrow IPC stream, and the ref the next batch gets;
- the interned strings of string keys (one id space for both sides).

Ref vectors keep their representation: a join's vector of one ref holds it inline (capacity 0).
The interval join's output vector is empty between batches, so it is not saved.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..codegen import abi
from . import native_words
from .state_snapshot import (COUNTER_WORDS, export_interner, restore_interner, allocated, build_table,
                             directory_capacity, export_lists, export_vectors, live_entries, restore_lists,
                             restore_vectors)

_POINTER_WORDS = (*range(abi.J_DIR, abi.J_DIR + 3), *range(abi.J_TABLE, abi.J_TABLE + 3), *range(abi.J_OUT, abi.J_OUT + 3))


def _geometry(kernel) -> tuple[str, int, list[int]]:
    """(join kind, entry words, the entry words where ref vectors start)."""
    kind = kernel.terminal.join_kind
    refs = 1 + kernel.gen.key_words
    return kind, kernel.gen.entry_size // 8, ([] if kind == "session" else [refs, refs + 3])


def export_join(kernel) -> dict:
    kind, entry_words, vectors = _geometry(kernel)
    shared = kernel.shared.copy()
    shared[list(_POINTER_WORDS)] = 0
    out = {"sides": [{"counters": [int(k.state[w]) for w in COUNTER_WORDS], "batches_processed": k.batches_processed}
                     for k in kernel.sides],
           "shared": shared, "inserted_since_expire": kernel.inserted_since_expire,
           "table_pending": kernel.table_pending,
           "stores": [export_store(store) for store in kernel.stores],
           "interner": export_interner(kernel.sides[0].interner)}
    if kind in ("tumbling", "sliding"):
        slots_ptr, length = int(kernel.shared[abi.J_DIR]), int(kernel.shared[abi.J_DIR + 1])
        slots = native_words.copy(slots_ptr, length * abi.J_SLOT_WORDS).reshape(-1, abi.J_SLOT_WORDS)
        tables = [live_entries(int(s[1]), int(s[2]), entry_words) for s in slots]
        entries = np.concatenate(tables) if tables else np.zeros((0, entry_words), dtype=np.int64)
        out.update(slots=slots, counts=np.array([len(t) for t in tables], dtype=np.int64), entries=entries,
                   vectors=export_vectors(entries, vectors))
        return out
    t = kernel.shared[abi.J_TABLE:abi.J_TABLE + 3]
    entries = live_entries(int(t[0]), int(t[1]), entry_words)
    out["entries"] = entries
    if kind == "session":
        nodes, per_entry = export_lists(entries[:, entry_words - 1], abi.J_NODE_WORDS)
        out.update(nodes=nodes, nodes_per_entry=per_entry, vectors=export_vectors(nodes, [abi.J_NODE_REFS, abi.J_NODE_REFS + 3]))
    else:
        out["vectors"] = export_vectors(entries, vectors)
    return out


def restore_join(kernel, saved: dict) -> None:
    """Load ``saved`` (``export_join`` of the same pipeline) into the fresh ``kernel``."""
    kind, entry_words, vectors = _geometry(kernel)
    for k, side in zip(kernel.sides, saved["sides"]):
        for word, value in zip(COUNTER_WORDS, side["counters"]):
            k.state[word] = value
        k.batches_processed = side["batches_processed"]
    keep = [w for w in range(len(kernel.shared)) if w not in _POINTER_WORDS]
    kernel.shared[keep] = saved["shared"][keep]
    kernel.inserted_since_expire = saved["inserted_since_expire"]
    for store, s in zip(kernel.stores, saved["stores"]):
        restore_store(store, s)
    # a lookup join's table is in the saved state once inserted (a snapshot written without the
    # flag holds no lookup join)
    kernel.table_pending = saved.get("table_pending", False)
    restore_interner(kernel.sides[0].interner, saved["interner"])
    entries = saved["entries"].copy()
    kernel._allocated = True  # close() frees what is restored
    if kind in ("tumbling", "sliding"):
        restore_vectors(entries, vectors, saved["vectors"])
        slots = np.zeros((directory_capacity(len(saved["slots"])), abi.J_SLOT_WORDS), dtype=np.int64)
        slots[:len(saved["slots"])] = saved["slots"]
        bounds = np.concatenate([[0], np.cumsum(saved["counts"])]).astype(np.int64)
        for i in range(len(saved["slots"])):
            slots[i, 1:4] = build_table(entries[bounds[i]:bounds[i + 1]], entry_words)
        kernel.shared[abi.J_DIR:abi.J_DIR + 3] = (allocated(slots.reshape(-1)), len(saved["slots"]), len(slots))
        return
    if kind == "session":
        nodes = saved["nodes"].copy()
        restore_vectors(nodes, [abi.J_NODE_REFS, abi.J_NODE_REFS + 3], saved["vectors"])
        entries[:, entry_words - 1] = restore_lists(nodes, saved["nodes_per_entry"])
    else:
        restore_vectors(entries, vectors, saved["vectors"])
    kernel.shared[abi.J_TABLE:abi.J_TABLE + 3] = build_table(entries, entry_words)


def export_store(store) -> dict:
    """The stored batches, each as an Arrow IPC stream of its own (batches may differ in their
    dictionaries), with the ref of their first rows."""
    streams = []
    for _, batch in store.batches:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batch.schema) as writer:
            writer.write_batch(batch)
        streams.append(np.frombuffer(sink.getvalue(), dtype=np.uint8).copy())
    return {"bases": np.array([b for b, _ in store.batches], dtype=np.int64), "next_base": store.next_base,
            "batches": streams}


def restore_store(store, saved: dict) -> None:
    batches = [pa.ipc.open_stream(pa.py_buffer(s.tobytes())).read_next_batch() for s in saved["batches"]]
    store.batches = [(int(b), batch) for b, batch in zip(saved["bases"], batches)]
    store.next_base = saved["next_base"]


__all__ = ["export_join", "export_store", "restore_join", "restore_store"]
