"""Hand Arrow batches to generated kernels: column descriptors and per-batch parameters.

A descriptor is ``COLUMN_SLOTS`` u64 words per column the kernel reads (buffer addresses, array
offset, string data length). Every batch is validated (buffer sizes against lengths) before its
addresses are taken, so generated code never reads outside a buffer.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..arrow_numpy import string_scalar
from ..codegen import abi
from ..codegen.module import GeneratedPipeline
from ..sources import dictionary_is_clean
from .string_order import order_keys


class PreparedBatch:
    """The descriptor and parameter arrays of one batch, keeping the buffers they point to alive;
    ``interned``: (interner, ids) of each string key column (until the batch has run, its ids are
    held by nothing else: ``string_release.py``)."""

    __slots__ = ("columns", "params", "rows", "has_nulls", "_keep", "interned")

    def __init__(self, columns: np.ndarray, params: np.ndarray, rows: int, has_nulls: bool, keep: list,
                 interned: list | None = None):
        self.columns, self.params, self.rows, self.has_nulls, self._keep = columns, params, rows, has_nulls, keep
        self.interned = interned or []


def _address(buf: pa.Buffer | None) -> int:
    return 0 if buf is None else buf.address


class DictionaryCodes:
    """Per pipeline: what was worked out about each dictionary (its literal codes, whether it is
    free of duplicates, its interned ids), remembered by the dictionary's buffers (batches of
    one table share their dictionary, so the lookups run once, not once per batch)."""

    LIMIT = 64  # dictionaries remembered (batches of one table share one)

    def __init__(self):
        self._seen: OrderedDict[tuple, tuple[pa.Array, dict]] = OrderedDict()
        self._last: tuple[pa.Array, dict] | None = None  # the entry found last

    @staticmethod
    def _identity(dictionary: pa.Array) -> tuple:
        return (len(dictionary), dictionary.offset) + tuple(_address(b) for b in dictionary.buffers())

    def memo(self, dictionary: pa.Array) -> dict:
        """What is remembered about ``dictionary`` (what -> value), looked up once per call.
        Everything remembered depends on the dictionary's values only (and on what ``what``
        names: a remap is kept per index type, since columns of other index types may share a
        dictionary or have an equal one), so the dictionary found last answers for an equal
        one: batches of a table share theirs, and Arrow compares shared buffers by address
        (~0.05 us, where the buffers' addresses cost ~2 us)."""
        last = self._last
        if last is not None and last[0].equals(dictionary):
            return last[1]
        key = self._identity(dictionary)
        found = self._seen.get(key)
        if found is not None:
            self._seen.move_to_end(key)  # least recently used goes first
        else:
            if len(self._seen) >= self.LIMIT:
                self._seen.popitem(last=False)
            # the entry keeps the dictionary alive, so no other dictionary can take its addresses
            found = self._seen[key] = (dictionary, {})
        self._last = found
        return found[1]

    def remember(self, dictionary: pa.Array, what: tuple, compute):
        """``compute()`` once per dictionary (and ``what``)."""
        memo = self.memo(dictionary)
        if what not in memo:
            memo[what] = compute()
        return memo[what]

    def normalized(self, column: pa.Array, memo: dict | None = None) -> pa.Array:
        """``column`` with a dictionary free of duplicates and nulls (a null entry becomes a null
        index), and the same index type; the new dictionary is made once per dictionary, so
        batches sharing one share the result (and its cached literal codes). ``memo``: what is
        remembered about the column's dictionary, when the caller looked it up already."""
        dictionary = column.dictionary
        memo = self.memo(dictionary) if memo is None else memo
        clean = memo.get(("clean",))
        if clean is None:
            clean = memo[("clean",)] = dictionary_is_clean(dictionary)
        if clean:
            return column
        index_type = column.type.index_type  # (the mapping has the column's index type)
        remap = memo.get(("remap", index_type))
        if remap is None:
            remap = memo[("remap", index_type)] = _remap(dictionary, index_type)
        unique, mapping = remap
        return pa.DictionaryArray.from_arrays(mapping.take(column.indices), unique)

    def code(self, dictionary: pa.Array, literal: str, memo: dict | None = None) -> int:
        memo = self.memo(dictionary) if memo is None else memo
        what = ("code", literal)
        found = memo.get(what)
        if found is None:
            found = memo[what] = pc.index(dictionary, string_scalar(literal, dictionary.type)).as_py()
        return found


# how prepare() reads each column of a pipeline's layout (_ColumnPlan.kind)
_PLAIN, _STRING, _DICTIONARY, _DECODE, _INTERNED, _ORDER, _CARRIED = range(7)


class _ColumnPlan(NamedTuple):
    name: str
    index: int  # in the batch (-1: an interned key, computed per batch)
    kind: int
    codes: tuple[tuple[int, str], ...]  # a dictionary column: (param index, literal) of its literals
    string_data: bool = False  # the array read has a string data buffer (plain, or decoded to one)


_PLANS: dict[int, tuple[GeneratedPipeline, pa.Schema, tuple[_ColumnPlan, ...]]] = {}
_PLANS_LIMIT = 64  # (each entry keeps its pipeline code alive)


def _batch_plan(gen: GeneratedPipeline, batch: pa.RecordBatch) -> tuple[_ColumnPlan, ...]:
    """How ``prepare`` reads each column of ``gen``'s layout from batches of ``batch``'s schema:
    worked out once per (pipeline code, schema), not per batch."""
    schema = batch.schema
    found = _PLANS.get(id(gen))
    if found is not None and found[0] is gen and found[1].equals(schema):
        return found[2]
    plans = []
    for lay in gen.columns:
        literals = tuple((abi.PARAM_FIRST_DICT_CODE + n, literal)
                         for n, (column, literal) in enumerate(gen.dict_params) if column == lay.name)
        if lay.name in gen.interned_columns:
            plans.append(_ColumnPlan(lay.name, -1, _INTERNED, literals))  # int64 ids
            continue
        if lay.name in gen.carried_columns:
            plans.append(_ColumnPlan(lay.name, -1, _CARRIED, literals))  # int64 carried ids
            continue
        if lay.name in gen.order_columns:
            plans.append(_ColumnPlan(lay.name, -1, _ORDER, literals))  # int64 order keys
            continue
        index = schema.get_field_index(lay.name)
        if index < 0:
            batch.column(lay.name)  # raises the usual error
        arrow_type = schema.field(index).type
        if lay.name in gen.decode_columns:
            kind = _DECODE
        elif pa.types.is_dictionary(arrow_type):
            kind = _DICTIONARY
        elif pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
            kind = _STRING
        else:
            kind = _PLAIN
        read_type = lay.arrow_type if kind == _DECODE else arrow_type
        plans.append(_ColumnPlan(lay.name, index, kind, literals,
                                 pa.types.is_string(read_type) or pa.types.is_large_string(read_type)))
    if len(_PLANS) >= _PLANS_LIMIT:
        _PLANS.clear()
    _PLANS[id(gen)] = (gen, schema, tuple(plans))
    return _PLANS[id(gen)][2]


def prepare(batch: pa.RecordBatch, gen: GeneratedPipeline, watermark: int, source_name: str,
            codes: DictionaryCodes | None = None, interner=None, processing_time: int = 0) -> PreparedBatch:
    """Descriptors of ``batch`` for the kernels of ``gen``. String keys are interned to the
    virtual id columns the kernels read (``gen.interned_columns``) with ``interner``, the strings
    aggregates only carry to carried ids (``gen.carried_columns``, ``interner.carried``); the strings
    whose order compiled code reads, to their order keys (``gen.order_columns``)."""
    try:
        batch.validate()
    except pa.ArrowInvalid as e:
        raise ValueError(f"{source_name}: malformed Arrow batch: {e}") from e
    codes = codes or DictionaryCodes()
    words = [0] * (len(gen.columns) * abi.COLUMN_SLOTS)
    params = [0] * (abi.PARAM_FIRST_DICT_CODE + len(gen.dict_params))
    params[abi.PARAM_WATERMARK] = watermark
    params[abi.PARAM_PROCESSING_TIME] = processing_time
    keep: list = [batch]
    interned = []
    has_nulls = False
    for i, plan in enumerate(_batch_plan(gen, batch)):
        kind = plan.kind
        if kind == _INTERNED:
            arr = interner.ids(batch.column(gen.interned_columns[plan.name]), codes)
            interned.append((interner, arr))
        elif kind == _CARRIED:
            arr = interner.carried.ids(batch.column(gen.carried_columns[plan.name]))
            interned.append((interner, arr))
        elif kind == _ORDER:
            arr = order_keys(batch.column(gen.order_columns[plan.name]))
        else:
            arr = batch.column(plan.index)
        if kind == _DECODE:
            arr = arr.cast(gen.columns[i].arrow_type)
        elif kind == _DICTIONARY:  # codes must identify values; null entries are nulls
            memo = codes.memo(arr.dictionary)
            normal = codes.normalized(arr, memo)
            if plan.codes:
                dictionary = normal.dictionary
                if normal is not arr:  # a new dictionary, free of duplicates
                    memo = codes.memo(dictionary)
                for param, literal in plan.codes:
                    params[param] = codes.code(dictionary, literal, memo)
            arr = normal
        keep.append(arr)
        bufs = arr.buffers()
        base = i * abi.COLUMN_SLOTS
        if arr.null_count:
            has_nulls = True
            words[base + abi.SLOT_VALIDITY] = _address(bufs[0])
        words[base + abi.SLOT_OFFSET] = arr.offset
        words[base + abi.SLOT_LENGTH] = length = len(arr)
        values = bufs[1] if len(bufs) > 1 else None
        if values is None and length:
            # e.g. an all-null array without a values buffer: read zeros instead
            values = pa.py_buffer(np.zeros(length + arr.offset + 1, dtype=np.int64).tobytes())
            keep.append(values)
        words[base + abi.SLOT_VALUES] = _address(values)
        if plan.string_data:
            data = bufs[2] if len(bufs) > 2 else None
            words[base + abi.SLOT_DATA] = _address(data)
            words[base + abi.SLOT_DATA_LEN] = 0 if data is None else data.size
        elif kind == _DICTIONARY:  # the kernels check each index they read against it
            words[base + abi.SLOT_DATA_LEN] = len(arr.dictionary)
    return PreparedBatch(np.array(words, dtype=np.uint64), np.array(params, dtype=np.int64),
                         batch.num_rows, has_nulls, keep, interned)


def shifted(prepared: PreparedBatch, offset: int, length: int) -> PreparedBatch:
    """Rows ``[offset, offset + length)`` of a prepared batch: the same buffers, each column's
    array offset moved (the kernels add it to every value, validity and string-offset index), so
    morsels of one source batch share one preparation."""
    columns = prepared.columns.copy()
    columns[abi.SLOT_OFFSET::abi.COLUMN_SLOTS] += np.uint64(offset)
    columns[abi.SLOT_LENGTH::abi.COLUMN_SLOTS] = length
    return PreparedBatch(columns, prepared.params.copy(), length, prepared.has_nulls, prepared._keep,
                         prepared.interned)


def _remap(dictionary: pa.Array, index_type: pa.DataType) -> tuple[pa.Array, pa.Array]:
    """The distinct non-null values of ``dictionary``, and for each old index its new one."""
    unique = pc.unique(dictionary.drop_null()) if dictionary.null_count else pc.unique(dictionary)
    mapping = pc.index_in(dictionary, value_set=unique).cast(index_type)
    return unique, mapping
