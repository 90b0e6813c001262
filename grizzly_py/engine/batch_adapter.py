"""Hand Arrow batches to generated kernels: column descriptors and per-batch parameters.

A descriptor is ``COLUMN_SLOTS`` u64 words per column the kernel reads (buffer addresses, array
offset, string data length). Every batch is validated (buffer sizes against lengths) before its
addresses are taken, so generated code never reads outside a buffer.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..codegen import abi
from ..codegen.module import GeneratedPipeline


class PreparedBatch:
    """The descriptor and parameter arrays of one batch, keeping the buffers they point to alive."""

    __slots__ = ("columns", "params", "rows", "has_nulls", "_keep")

    def __init__(self, columns: np.ndarray, params: np.ndarray, rows: int, has_nulls: bool, keep: list):
        self.columns, self.params, self.rows, self.has_nulls, self._keep = columns, params, rows, has_nulls, keep


def _address(buf: pa.Buffer | None) -> int:
    return 0 if buf is None else buf.address


class DictionaryCodes:
    """Per pipeline: the codes of string literals in each dictionary, and whether a dictionary
    is free of duplicates, remembered by the dictionary's buffers (batches of one table share
    their dictionary, so the lookups run once, not once per batch)."""

    LIMIT = 64  # dictionaries remembered (batches of one table share one)

    def __init__(self):
        self._seen: OrderedDict[tuple, tuple] = OrderedDict()

    @staticmethod
    def _identity(dictionary: pa.Array) -> tuple:
        return (len(dictionary), dictionary.offset) + tuple(_address(b) for b in dictionary.buffers())

    def remember(self, dictionary: pa.Array, what: tuple, compute):
        """``compute()`` once per dictionary (and ``what``)."""
        key = what + self._identity(dictionary)
        if key in self._seen:
            self._seen.move_to_end(key)  # least recently used goes first
        else:
            if len(self._seen) >= self.LIMIT:
                self._seen.popitem(last=False)
            # the entry keeps the dictionary alive, so no other dictionary can take its addresses
            self._seen[key] = (dictionary, compute())
        return self._seen[key][1]

    def normalized(self, column: pa.Array) -> pa.Array:
        """``column`` with a dictionary free of duplicates and nulls (a null entry becomes a null
        index), and the same index type; the new dictionary is made once per dictionary, so
        batches sharing one share the result (and its cached literal codes)."""
        dictionary = column.dictionary
        if self.remember(dictionary, ("clean",), lambda: dictionary.null_count == 0 and _unique(dictionary)):
            return column
        unique, mapping = self.remember(dictionary, ("remap",), lambda: _remap(dictionary, column.type.index_type))
        indices = mapping.take(column.indices)
        return pa.DictionaryArray.from_arrays(indices, unique)

    def code(self, dictionary: pa.Array, literal: str) -> int:
        return self.remember(dictionary, ("code", literal),
                          lambda: pc.index(dictionary, pa.scalar(literal, dictionary.type)).as_py())


def prepare(batch: pa.RecordBatch, gen: GeneratedPipeline, watermark: int, source_name: str,
            codes: DictionaryCodes | None = None, interner=None, processing_time: int = 0) -> PreparedBatch:
    """Descriptors of ``batch`` for the kernels of ``gen``. String keys are interned to the
    virtual id columns the kernels read (``gen.interned_keys``) with ``interner``."""
    try:
        batch.validate()
    except pa.ArrowInvalid as e:
        raise ValueError(f"{source_name}: malformed Arrow batch: {e}") from e
    codes = codes or DictionaryCodes()
    desc = np.zeros(len(gen.columns) * abi.COLUMN_SLOTS, dtype=np.uint64)
    keep: list = [batch]
    arrays = {}
    has_nulls = False
    virtual = {name: interner.ids(batch.column(source), codes) for name, source in gen.interned_keys.items()}
    for i, lay in enumerate(gen.columns):
        arr = virtual[lay.name] if lay.name in virtual else batch.column(lay.name)
        if lay.name in gen.decode_columns:
            arr = arr.cast(lay.arrow_type)
        elif pa.types.is_dictionary(arr.type):
            arr = codes.normalized(arr)  # codes must identify values; null entries are nulls
        arrays[lay.name] = arr
        keep.append(arr)
        bufs = arr.buffers()
        base = i * abi.COLUMN_SLOTS
        desc[base + abi.SLOT_VALIDITY] = _address(bufs[0]) if arr.null_count else 0
        has_nulls = has_nulls or arr.null_count > 0
        desc[base + abi.SLOT_OFFSET] = arr.offset
        desc[base + abi.SLOT_LENGTH] = len(arr)
        values = bufs[1] if len(bufs) > 1 else None
        if values is None and len(arr):
            # e.g. an all-null array without a values buffer: read zeros instead
            values = pa.py_buffer(np.zeros(len(arr) + arr.offset + 1, dtype=np.int64).tobytes())
            keep.append(values)
        desc[base + abi.SLOT_VALUES] = _address(values)
        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
            data = bufs[2] if len(bufs) > 2 else None
            desc[base + abi.SLOT_DATA] = _address(data)
            desc[base + abi.SLOT_DATA_LEN] = 0 if data is None else data.size
        elif pa.types.is_dictionary(arr.type):  # the kernels check each index they read against it
            desc[base + abi.SLOT_DATA_LEN] = len(arr.dictionary)
    params = np.zeros(abi.PARAM_FIRST_DICT_CODE + len(gen.dict_params), dtype=np.int64)
    params[abi.PARAM_WATERMARK] = watermark
    params[abi.PARAM_PROCESSING_TIME] = processing_time
    for n, (column, literal) in enumerate(gen.dict_params):
        params[abi.PARAM_FIRST_DICT_CODE + n] = codes.code(arrays[column].dictionary, literal)
    return PreparedBatch(desc, params, batch.num_rows, has_nulls, keep)


def shifted(prepared: PreparedBatch, offset: int, length: int) -> PreparedBatch:
    """Rows ``[offset, offset + length)`` of a prepared batch: the same buffers, each column's
    array offset moved (the kernels add it to every value, validity and string-offset index), so
    morsels of one source batch share one preparation."""
    columns = prepared.columns.copy()
    columns[abi.SLOT_OFFSET::abi.COLUMN_SLOTS] += np.uint64(offset)
    columns[abi.SLOT_LENGTH::abi.COLUMN_SLOTS] = length
    return PreparedBatch(columns, prepared.params.copy(), length, prepared.has_nulls, prepared._keep)


def _remap(dictionary: pa.Array, index_type: pa.DataType) -> tuple[pa.Array, pa.Array]:
    """The distinct non-null values of ``dictionary``, and for each old index its new one."""
    unique = pc.unique(dictionary.drop_null()) if dictionary.null_count else pc.unique(dictionary)
    mapping = pc.index_in(dictionary, value_set=unique).cast(index_type)
    return unique, mapping


def _unique(dictionary: pa.Array) -> bool:
    return len(dictionary) <= 1 or pc.count_distinct(dictionary).as_py() == len(dictionary)
