"""Interning of string keys: each distinct string a kernel holds gets an int64 id, so generated
code groups strings the way it groups integers, and window results map the ids back.

Per batch only the batch's distinct values go through Python (a dictionary-encoded column
already has them; a plain one is dictionary-encoded in Arrow first); rows are mapped with a
vectorized ``take``.

The interner forgets strings that no window holds any more: after a firing the driver reads the
ids the kernel's state holds and those of the batches it prepared but has not run yet
(``string_release.py``), and ``release`` drops every other string; its id goes to a free list
and is handed out again to a later new string, so ids stay dense and native state never needs
rewriting. Each release that drops strings starts a new *generation*: a dictionary's ids
remembered across batches (``memo``) are remembered with their generation and worked out again
in the next one, so no batch gets an id that went to another string.

``nbytes`` estimates the memory the strings take: counted by ``state_memory_limit``.

Strings that an aggregate only carries are not interned: ``carried`` (``carried_strings.py``)
keeps them by arrival position, with ids above every interned one; ``values``, ``release`` and
``due`` cover both kinds.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .carried_strings import CARRIED_BASE, CarriedStrings

# The bytes each string costs besides its characters, which count twice as their UTF-8 bytes (in
# its ``str`` object, and in the Arrow array that maps results back): the ``str`` object's header
# (49), its dict entry, list slot and id (an int object), 56-74 bytes a string at 10^4-10^6
# strings as tracemalloc measures them, and its Arrow offset (4).
STRING_ENTRY_BYTES = 128
# A release is due once the strings held take this much and have doubled in number since the
# last release: the pass over the state it needs then costs O(1) per string added since.
RELEASE_MIN_BYTES = 1 << 20


def string_bytes(value: str) -> int:
    """What one interned string costs (``STRING_ENTRY_BYTES``)."""
    utf8 = len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
    return STRING_ENTRY_BYTES + 2 * utf8


class StringInterner:
    def __init__(self):
        self._ids: dict[str, int] = {}
        self._values: list[str | None] = []   # by id; None at a released id
        self._free: list[int] = []            # released ids, the lowest last (handed out first)
        self.generation = 0
        self._kept = 0                        # strings the last release kept
        self._array: pa.Array | None = None  # the strings by id, built when needed
        self._array_as: dict = {}             # ... cast to another string type
        # the strings by id for decoding results, grown by the strings appended since (a kernel
        # that emits every batch decodes as many batches as it interns); None after an id was
        # reused or released
        self._decoding: list[pa.Array] | None = []
        self.nbytes = 0
        self.carried = CarriedStrings()       # strings only carried, by arrival position

    @property
    def strings(self) -> list[str | None]:
        """The interned strings, by id (None: a released id)."""
        return self._values

    def __len__(self) -> int:
        """The strings held."""
        return len(self._values) - len(self._free)

    @property
    def due(self) -> bool:
        """Whether a release is worth a pass over the state (``RELEASE_MIN_BYTES``)."""
        return (self.nbytes >= RELEASE_MIN_BYTES and len(self) >= 2 * self._kept) \
            or self.carried.due(RELEASE_MIN_BYTES)

    def load(self, strings: list[str | None]) -> None:
        """Replace the interned strings (a restore from a checkpoint): ``strings[i]`` gets id ``i``
        (None: a free id)."""
        self._values = list(strings)
        self._ids = {v: i for i, v in enumerate(self._values) if v is not None}
        self._free = [i for i in range(len(self._values) - 1, -1, -1) if self._values[i] is None]
        self.nbytes = sum(string_bytes(v) for v in self._values if v is not None)
        self._kept, self._array, self._decoding = len(self), None, None

    def ids(self, column: pa.Array, memo=None) -> pa.Array:
        """int64 ids for a string column (null stays null). With ``memo`` (the pipeline's
        ``DictionaryCodes``), a dictionary's ids are worked out once per generation, not once
        per batch."""
        if not pa.types.is_dictionary(column.type) and self._values and self._array is not None \
                and len(self._values) <= 8 * len(column):
            found = pc.index_in(column, value_set=self._strings_by_id(column.type), skip_nulls=True)
            if found.null_count == column.null_count:  # every string known: its id is its index
                return found.cast(pa.int64())
        encoded = column if pa.types.is_dictionary(column.type) else pc.dictionary_encode(column)
        if memo is not None and pa.types.is_dictionary(column.type):
            remembered = memo.memo(encoded.dictionary)
            found = remembered.get(("intern",))
            if found is None or found[0] != self.generation:
                found = remembered[("intern",)] = (self.generation, self._mapping(encoded.dictionary))
            mapping = found[1]
        else:
            mapping = self._mapping(encoded.dictionary)
        indices = encoded.indices
        if not len(mapping):
            return pa.nulls(len(indices), pa.int64())
        return mapping.take(indices)

    def _mapping(self, dictionary: pa.Array) -> pa.Array:
        """The id of each dictionary entry (null for a null entry: a null key). The entries
        already interned are found by one ``index_in`` against the strings by id where that
        costs no more than the batch (``index_in`` hashes every string it looks in); only the
        others go through Python (a dict lookup each)."""
        n = len(dictionary)
        mapping = np.zeros(n, dtype=np.int64)
        null_entries = np.zeros(n, dtype=bool)
        if self._values and len(self._values) <= 8 * n:
            found = pc.index_in(dictionary, value_set=self._strings_by_id(dictionary.type), skip_nulls=True)
            hit = found.is_valid().to_numpy(zero_copy_only=False)
            mapping[hit] = found.drop_null().to_numpy()
            null_entries = dictionary.is_null().to_numpy(zero_copy_only=False)
            rest = np.flatnonzero(~hit & ~null_entries)
        else:
            rest = np.arange(n)
        if len(rest):
            self._intern(dictionary, rest, mapping, null_entries)
        return pa.array(mapping, pa.int64(), mask=null_entries if null_entries.any() else None)

    def _decoded(self) -> pa.ChunkedArray:
        """The strings by id, as chunks extended by the strings appended since the last call."""
        if self._decoding is None:
            self._decoding = [self._strings_by_id(pa.string())]
        have = sum(len(c) for c in self._decoding)
        if have < len(self._values):
            self._decoding.append(pa.array(self._values[have:], pa.string()))
            if len(self._decoding) > 64:  # (take over many chunks costs per chunk)
                self._decoding = [pa.chunked_array(self._decoding).combine_chunks()]
        return pa.chunked_array(self._decoding, pa.string())

    def _strings_by_id(self, arrow_type: pa.DataType) -> pa.Array:
        """The interned strings by id (null at a released id), in ``arrow_type`` (kept while
        no string is added or released)."""
        if self._array is None:
            self._array, self._array_as = pa.array(self._values, pa.string()), {}
        if arrow_type == self._array.type:
            return self._array
        if arrow_type not in self._array_as:
            self._array_as[arrow_type] = self._array.cast(arrow_type)
        return self._array_as[arrow_type]

    def _intern(self, dictionary: pa.Array, rows: np.ndarray, mapping: np.ndarray, null_entries: np.ndarray) -> None:
        """Ids for the entries ``rows`` of ``dictionary``, new strings interned, into ``mapping``."""
        values = dictionary.take(pa.array(rows, pa.int64())).to_pylist()
        known, strings, free, added = self._ids, self._values, self._free, []
        for i, value in zip(rows.tolist(), values):
            if value is None:  # a null dictionary entry is a null key
                null_entries[i] = True
                mapping[i] = 0
                continue
            ident = known.get(value)
            if ident is None:  # a new string: the lowest free id, else the next one
                if free:
                    ident = free.pop()
                    strings[ident] = value
                    self._decoding = None
                else:
                    ident = len(strings)
                    strings.append(value)
                known[value] = ident
                added.append(i)
            mapping[i] = ident
        if added:  # (string_bytes of each, from Arrow's lengths)
            utf8 = pc.sum(pc.binary_length(dictionary.take(pa.array(added, pa.int64())))).as_py()
            self.nbytes += len(added) * STRING_ENTRY_BYTES + 2 * utf8
            self._array = None

    def release(self, held: np.ndarray) -> int:
        """Forget every string whose id is not in ``held`` (the ids the kernel's state and its
        batches not run yet hold); returns how many (carried strings included)."""
        carried = self.carried.release(held)
        n = len(self._values)
        keep = np.zeros(n, dtype=bool)
        held = np.asarray(held, dtype=np.int64)
        keep[held[(held >= 0) & (held < n)]] = True
        keep[np.array(self._free, dtype=np.int64)] = True  # (nothing to forget there)
        dead = np.flatnonzero(~keep).tolist()
        if not dead:
            self._kept = len(self)
            return carried
        for ident in dead:
            value = self._values[ident]
            del self._ids[value]
            self._values[ident] = None
            self.nbytes -= string_bytes(value)
        top = n  # free ids at the end leave the id space
        while top and self._values[top - 1] is None:
            top -= 1
        del self._values[top:]
        self._free = sorted((i for i in self._free + dead if i < top), reverse=True)
        if len(dead) > len(self):  # a dict does not shrink as entries leave it: a copy does
            self._ids = dict(self._ids)
        self.generation += 1
        self._kept = len(self)
        self._array, self._decoding = None, None
        return carried + len(dead)

    def values(self, ids: np.ndarray, valid: np.ndarray, arrow_type: pa.DataType) -> pa.Array:
        """The strings of ``ids`` (null where not ``valid``), as ``arrow_type``: interned or
        carried ones."""
        valid = valid.astype(bool)
        carried = valid & (ids >= CARRIED_BASE)
        if carried.any():
            strings = self.carried.values(ids, carried)
            if (carried != valid).any():  # (both kinds: a partial state imported on Spark)
                strings = pc.if_else(pa.array(carried), strings, self._interned_values(ids, valid & ~carried))
            return strings.cast(arrow_type)
        return self._interned_values(ids, valid).cast(arrow_type)

    def _interned_values(self, ids: np.ndarray, valid: np.ndarray) -> pa.Array:
        """The interned strings of ``ids`` (pa.string(), null where not ``valid``)."""
        safe = np.where(valid.astype(bool), ids, 0) if len(self._values) else np.zeros(len(ids), np.int64)
        strings = self._decoded().take(pa.array(safe)).combine_chunks() if len(self._values) \
            else pa.nulls(len(ids), pa.string())
        return pc.if_else(pa.array(valid), strings, pa.scalar(None, pa.string()))
