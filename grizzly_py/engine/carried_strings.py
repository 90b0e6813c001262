"""Strings that an aggregate only carries, kept by arrival position instead of interned.

A deduplication's row values (``row_last``/``row_first``) and ``first``/``last`` keep one of their
input strings per group and never compare, hash or order it (``AggregateSpec.carries_strings``),
so generated code needs no id that identifies the string, only one that finds it again. The
lowering reads such an argument as a virtual int64 column of *carried* ids
(``GeneratedPipeline.carried_columns``) instead of interned ones, and the engine fills it here:
each batch's strings are appended to the kernel's store as one Arrow chunk, and their ids are
handed out in arrival order (``CARRIED_BASE`` + a running count: an ``arange``, no Python per
string). Ids are never reused, so native state never needs rewriting, and they lie above every
interned id, so both kinds share the interner's id space (``StringInterner.values`` and
``release`` send the carried ones here): the string release, snapshots and Spark's partial
states treat them as any other string id. An id interned instead (a partial state imported on
Spark) is as good for such an aggregate, since it only carries it.

The store is a list of chunks, each ``(ids, strings)`` with ascending ids, all of a chunk's ids
above those of the chunks before it. Decoding finds each id's chunk (``searchsorted`` over the
chunks' first ids) and its row in it (a subtraction where the chunk's ids are consecutive, as
an appended chunk's are, else a ``searchsorted``), then takes the strings in Arrow. ``release``
keeps the strings whose ids are held and compacts them into one chunk (vectorized: no Python per
string). ``nbytes`` counts the strings' Arrow data and an 8-byte id each (``state_memory_limit``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Carried ids start here: above any interned id (those are dense from 0), below what a key word's
# flags or a null's zero could be taken for.
CARRIED_BASE = 1 << 48
# Chunks kept before the store combines them (a ``take`` over a chunked array costs per chunk).
MAX_CHUNKS = 64


class CarriedStrings:
    """A kernel's carried strings (see the module docstring)."""

    def __init__(self):
        self._firsts: list[int] = []          # each chunk's first id
        self._ids: list[np.ndarray] = []      # each chunk's ids, ascending
        self._strings: list[pa.Array] = []   # each chunk's strings (pa.string())
        self._dense: list[bool] = []          # whether a chunk's ids are consecutive
        self.next_id = CARRIED_BASE
        self.nbytes = 0
        self._kept = 0                        # strings the last release kept

    def __len__(self) -> int:
        return sum(len(s) for s in self._strings)

    def due(self, min_bytes: int) -> bool:
        """Whether a release is worth a pass over the state: the strings take ``min_bytes`` and
        have doubled since the last release (as ``StringInterner.due``)."""
        return self.nbytes >= min_bytes and len(self) >= 2 * self._kept

    def ids(self, column: pa.Array) -> pa.Array:
        """Ids for a string column's values (null stays null), the strings appended."""
        if pa.types.is_dictionary(column.type):
            column = column.dictionary_decode()
        strings = column.cast(pa.string()) if not pa.types.is_string(column.type) else column
        n = len(strings)
        first = self.next_id
        ids = np.arange(first, first + n, dtype=np.int64)
        if n:
            self._append(ids, strings)
        mask = strings.is_null().to_numpy(zero_copy_only=False) if strings.null_count else None
        return pa.array(ids, pa.int64(), mask=mask)

    def _append(self, ids: np.ndarray, strings: pa.Array, dense: bool = True) -> None:
        self._firsts.append(int(ids[0]))
        self._ids.append(ids)
        self._strings.append(strings)
        self._dense.append(dense)
        self.next_id = max(self.next_id, int(ids[-1]) + 1)
        self.nbytes += 8 * len(ids) + _data_bytes(strings)
        if len(self._strings) > MAX_CHUNKS:
            self._combine(np.ones(len(self), dtype=bool))

    def _positions(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each of ``ids``' chunk and row in it (chunk -1: not held); ids grouped by chunk with
        one stable sort, so the cost does not grow with ids x chunks."""
        chunks = np.full(len(ids), -1, dtype=np.int64)
        rows = np.zeros(len(ids), dtype=np.int64)
        if not self._ids or not len(ids):
            return chunks, rows
        chunk = np.searchsorted(np.array(self._firsts, dtype=np.int64), ids, side="right") - 1
        order = np.argsort(chunk, kind="stable")
        edges = np.searchsorted(chunk[order], np.arange(len(self._ids) + 1))
        for c, (chunk_ids, dense) in enumerate(zip(self._ids, self._dense)):
            at = order[edges[c]:edges[c + 1]]
            if len(at):
                wanted = ids[at]
                row = wanted - chunk_ids[0] if dense else np.searchsorted(chunk_ids, wanted)
                inside = (row >= 0) & (row < len(chunk_ids))
                inside[inside] &= chunk_ids[row[inside]] == wanted[inside]
                chunks[at[inside]] = c
                rows[at[inside]] = row[inside]
        return chunks, rows

    def values(self, ids: np.ndarray, valid: np.ndarray) -> pa.Array:
        """The strings of ``ids`` (pa.string(), null where not ``valid``); every valid id must be
        held. Each chunk is taken from on its own (a ``take`` over the chunked array would
        concatenate every chunk first), then the pieces are put in the order of ``ids``."""
        valid = np.asarray(valid, dtype=bool)
        chunks, rows = self._positions(np.where(valid, ids, CARRIED_BASE - 1))
        if (chunks[valid] < 0).any():
            raise RuntimeError("carried strings: an id that no chunk holds (released while held)")
        if not valid.any():
            return pa.nulls(len(ids), pa.string())
        chunks[~valid] = chunks[valid][0]  # (a null takes any held string, then is masked)
        rows[~valid] = rows[valid][0]
        order = np.argsort(chunks, kind="stable")
        ordered = chunks[order]
        bounds = np.flatnonzero(np.diff(ordered)) + 1
        pieces = [self._strings[int(ordered[a])].take(pa.array(rows[order[a:b]]))
                  for a, b in zip(np.r_[0, bounds], np.r_[bounds, len(order)])]
        taken = pieces[0] if len(pieces) == 1 else pa.concat_arrays(pieces)
        if len(pieces) > 1 or not (order == np.arange(len(order))).all():
            back = np.empty(len(order), dtype=np.int64)
            back[order] = np.arange(len(order), dtype=np.int64)
            taken = taken.take(pa.array(back))
        if valid.all():
            return taken
        return pc.if_else(pa.array(valid), taken, pa.scalar(None, pa.string()))

    def release(self, held: np.ndarray) -> int:
        """Forget every string whose id is not in ``held`` (ids of any kind, with repeats);
        returns how many."""
        before = len(self)
        if not before:
            return 0
        held = np.asarray(held, dtype=np.int64)
        chunks, rows = self._positions(held[held >= CARRIED_BASE])
        starts = np.cumsum([0] + [len(i) for i in self._ids])
        keep = np.zeros(before, dtype=bool)
        keep[starts[chunks[chunks >= 0]] + rows[chunks >= 0]] = True
        dropped = before - int(keep.sum())
        if dropped:
            self._combine(keep)
        self._kept = len(self)
        return dropped

    def _combine(self, keep: np.ndarray) -> None:
        """One chunk of the strings at ``keep`` (rows of the chunks laid end to end)."""
        ids = np.concatenate(self._ids)[keep]
        strings = pa.chunked_array(self._strings, pa.string()).filter(pa.array(keep)).combine_chunks()
        next_id = self.next_id
        self._firsts, self._ids, self._strings, self._dense, self.nbytes = [], [], [], [], 0
        if len(ids):
            dense = bool(ids[-1] - ids[0] == len(ids) - 1)
            self._append(ids, strings, dense)
        self.next_id = next_id

    # --- snapshots ------------------------------------------------------------------------------
    def export(self) -> dict | None:
        """The held strings, their ids and the next id (None: none ever carried)."""
        if self.next_id == CARRIED_BASE:
            return None
        strings = pa.chunked_array(self._strings, pa.string()).combine_chunks() if self._strings \
            else pa.array([], pa.string())
        offsets = np.frombuffer(strings.buffers()[1], dtype=np.int32)[strings.offset:strings.offset + len(strings) + 1]
        start = int(offsets[0]) if len(offsets) else 0
        data = strings.buffers()[2]
        end = int(offsets[-1]) if len(offsets) else 0
        return {"ids": np.concatenate(self._ids) if self._ids else np.zeros(0, np.int64),
                "offsets": (offsets.astype(np.int64) - start),
                "data": np.frombuffer(data, dtype=np.uint8)[start:end].copy() if data is not None and end > start
                else np.zeros(0, np.uint8),
                "next": self.next_id}

    def load(self, saved: dict | None) -> None:
        """Replace the store's strings with ``export``'s ``saved`` (a restore)."""
        self.__init__()
        if saved is None:
            return
        ids = np.asarray(saved["ids"], dtype=np.int64)
        if len(ids):
            offsets = np.asarray(saved["offsets"], dtype=np.int64)
            data = np.asarray(saved["data"], dtype=np.uint8)
            strings = pa.LargeStringArray.from_buffers(len(ids), pa.py_buffer(offsets.tobytes()),
                                                       pa.py_buffer(data.tobytes())).cast(pa.string())
            self._append(ids, strings, bool(ids[-1] - ids[0] == len(ids) - 1))
        self.next_id = int(saved["next"])
        self._kept = len(self)


def _data_bytes(strings: pa.Array) -> int:
    """The UTF-8 bytes and offsets of ``strings``."""
    return 4 * len(strings) + (pc.sum(pc.binary_length(strings)).as_py() or 0)


__all__ = ["CARRIED_BASE", "CarriedStrings"]
