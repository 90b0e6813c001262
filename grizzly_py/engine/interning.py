"""Interning of string keys: each distinct string gets a stable int64 id, so generated code
groups strings the way it groups integers, and window results map the ids back.

Per batch only the batch's distinct values go through Python (a dictionary-encoded column
already has them; a plain one is dictionary-encoded in Arrow first); rows are mapped with a
vectorized ``take``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


class StringInterner:
    def __init__(self):
        self._ids: dict[str, int] = {}
        self._values: list[str] = []
        self._array: pa.Array | None = None

    @property
    def strings(self) -> list[str]:
        """The interned strings, by id."""
        return self._values

    def load(self, strings: list[str]) -> None:
        """Replace the interned strings (a restore from a checkpoint): ``strings[i]`` gets id ``i``."""
        self._values, self._ids, self._array = list(strings), {v: i for i, v in enumerate(strings)}, None

    def ids(self, column: pa.Array, memo=None) -> pa.Array:
        """int64 ids for a string column (null stays null). With ``memo`` (the pipeline's
        ``DictionaryCodes``), a dictionary's ids are worked out once, not once per batch."""
        encoded = column if pa.types.is_dictionary(column.type) else pc.dictionary_encode(column)
        if memo is not None and pa.types.is_dictionary(column.type):
            mapping = memo.remember(encoded.dictionary, ("intern",), lambda: self._mapping(encoded.dictionary))
        else:
            mapping = self._mapping(encoded.dictionary)
        indices = encoded.indices
        if not len(mapping):
            return pa.nulls(len(indices), pa.int64())
        return mapping.take(indices)

    def _mapping(self, dictionary: pa.Array) -> pa.Array:
        """The id of each dictionary entry (null for a null entry: a null key)."""
        dictionary = dictionary.to_pylist()
        mapping = np.empty(len(dictionary), dtype=np.int64)
        null_entries = np.zeros(len(dictionary), dtype=bool)
        for i, value in enumerate(dictionary):
            if value is None:  # a null dictionary entry is a null key
                null_entries[i] = True
                mapping[i] = 0
                continue
            ident = self._ids.get(value)
            if ident is None:
                ident = self._ids[value] = len(self._values)
                self._values.append(value)
                self._array = None
            mapping[i] = ident
        return pa.array(mapping, pa.int64(), mask=null_entries if null_entries.any() else None)

    def values(self, ids: np.ndarray, valid: np.ndarray, arrow_type: pa.DataType) -> pa.Array:
        """The strings of ``ids`` (null where not ``valid``), as ``arrow_type``."""
        if self._array is None:
            self._array = pa.array(self._values, pa.string())
        safe = np.where(valid.astype(bool), ids, 0) if len(self._values) else np.zeros(len(ids), np.int64)
        strings = self._array.take(pa.array(safe)) if len(self._values) else pa.nulls(len(ids), pa.string())
        strings = pc.if_else(pa.array(valid.astype(bool)), strings, pa.scalar(None, pa.string()))
        return strings.cast(arrow_type)
