"""The bulk intake of an in-memory Arrow source: every batch's column descriptors in one go.

A job over ``from_arrow(table)`` used to spend ~20 us of Python on each batch before its rows
reached native code: the source's checks (schema, null event times, dictionaries) and
``batch_adapter.prepare`` (a pyarrow wrapper per column, its buffers, offsets, lengths). Most
of it is the wrappers (~1 us each), not the work. Where the source's batches are known up front
(a ``pa.Table`` or a list of batches) the intake reads what both need for all of them at once:

- the batches are exported through the Arrow C stream interface (zero-copy) and one native
  call, ``gz_arrow_stream_walk`` below, copies each column's length, null count, offset, buffer
  addresses and dictionary identity into one array (``RAW_WORDS`` words per batch and column);
- the source's checks are answered in bulk (``checked_rows``), and a batch they cannot clear
  (a null event time, a dictionary whose indices the kernels cannot check) goes through the
  source's own per-batch check, which raises its usual error in stream order;
- ``prepared(row, gen, codes)`` hands out the descriptors ``prepare`` would have built, made
  for every batch in a few numpy operations per kernel variant (``_GenRows``).

Whatever the bulk path does not cover returns None and takes the per-batch path unchanged:
string and decoded columns, interned keys, dictionaries with duplicates or nulls, batches
that fail validation (``prepare`` raises the error when the batch's turn comes), a null count
the export leaves unknown. The intake never changes what a kernel reads, only how the
descriptors are made; ``tests/test_arrow_intake.py`` compares both ways word for word.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np
import pyarrow as pa

from ..codegen import abi
from ..jit import compile_ir
from ..sources import dictionary_is_clean
from .batch_adapter import PreparedBatch
from .task_parts import PartsTable

_P, _I64 = ctypes.c_void_p, ctypes.c_int64

# words per (batch, column) written by gz_arrow_stream_walk
RAW_WORDS = 16
(W_LENGTH, W_NULLS, W_OFFSET, W_BUFFERS, W_BUF0, W_BUF1, W_BUF2, W_HAS_DICT, W_DICT_LENGTH,
 W_DICT_OFFSET, W_DICT_BUF0, W_DICT_BUF1, W_DICT_BUF2) = range(13)
# (batch, column) pairs an intake covers at most (RAW_WORDS words each: 32 MiB); a source with
# more (a million tiny batches) takes the per-batch path
MAX_ENTRIES = 1 << 18
_DICT_IDENTITY = slice(W_DICT_LENGTH, W_DICT_BUF2 + 1)  # (length, offset, buffers): DictionaryCodes._identity

# The C data interface's structs (64-bit): ArrowArray {length, null_count, offset, n_buffers,
# n_children, buffers, children, dictionary, release, private_data}; ArrowArrayStream
# {get_schema, get_next, get_last_error, release, private_data}.
_WALK_IR = f"""
%ArrowArray = type {{ i64, i64, i64, i64, i64, ptr, ptr, ptr, ptr, ptr }}

; Read up to %max record batches from %stream (each a struct array of %fields children) into
; %out: {RAW_WORDS} words per (batch, field). Returns the batches read, -1 when get_next failed,
; -2 when a batch is not a struct of %fields children at offset 0. Releases every array and,
; at the end, the stream.
define i64 @gz_arrow_stream_walk(ptr %stream, ptr %out, i64 %max, i64 %fields) {{
entry:
  %a = alloca %ArrowArray
  %get_next.p = getelementptr inbounds ptr, ptr %stream, i64 1
  %get_next = load ptr, ptr %get_next.p
  br label %batch
batch:
  %n = phi i64 [ 0, %entry ], [ %n.next, %batch.end ]
  %room = icmp slt i64 %n, %max
  br i1 %room, label %next, label %done
next:
  %rc = call i32 %get_next(ptr %stream, ptr %a)
  %failed = icmp ne i32 %rc, 0
  br i1 %failed, label %fail, label %got
got:
  %release.p = getelementptr inbounds %ArrowArray, ptr %a, i32 0, i32 8
  %release = load ptr, ptr %release.p
  %ended = icmp eq ptr %release, null
  br i1 %ended, label %done, label %shape
shape:
  %top.off.p = getelementptr inbounds %ArrowArray, ptr %a, i32 0, i32 2
  %top.off = load i64, ptr %top.off.p
  %nchild.p = getelementptr inbounds %ArrowArray, ptr %a, i32 0, i32 4
  %nchild = load i64, ptr %nchild.p
  %off.ok = icmp eq i64 %top.off, 0
  %n.ok = icmp eq i64 %nchild, %fields
  %ok = and i1 %off.ok, %n.ok
  br i1 %ok, label %columns, label %bad
bad:
  call void %release(ptr %a)
  br label %fail.shape
columns:
  %children.p = getelementptr inbounds %ArrowArray, ptr %a, i32 0, i32 6
  %children = load ptr, ptr %children.p
  %row = mul i64 %n, %fields
  br label %column
column:
  %j = phi i64 [ 0, %columns ], [ %j.next, %column.end ]
  %more = icmp slt i64 %j, %fields
  br i1 %more, label %column.body, label %batch.release
column.body:
  %c.p = getelementptr inbounds ptr, ptr %children, i64 %j
  %c = load ptr, ptr %c.p
  %slot = add i64 %row, %j
  %base = mul i64 %slot, {RAW_WORDS}
  %o = getelementptr inbounds i64, ptr %out, i64 %base
  call void @gz_walk_array(ptr %c, ptr %o, i64 0)
  %dict.p = getelementptr inbounds %ArrowArray, ptr %c, i32 0, i32 7
  %dict = load ptr, ptr %dict.p
  %has.dict = icmp ne ptr %dict, null
  %has.dict.w = zext i1 %has.dict to i64
  %o.has = getelementptr inbounds i64, ptr %o, i64 {W_HAS_DICT}
  store i64 %has.dict.w, ptr %o.has
  br i1 %has.dict, label %column.dict, label %column.end
column.dict:
  %o.dict = getelementptr inbounds i64, ptr %o, i64 {W_DICT_LENGTH}
  call void @gz_walk_array(ptr %dict, ptr %o.dict, i64 1)
  br label %column.end
column.end:
  %j.next = add i64 %j, 1
  br label %column
batch.release:
  call void %release(ptr %a)
  br label %batch.end
batch.end:
  %n.next = add i64 %n, 1
  br label %batch
fail:
  call void @gz_walk_release_stream(ptr %stream)
  ret i64 -1
fail.shape:
  call void @gz_walk_release_stream(ptr %stream)
  ret i64 -2
done:
  call void @gz_walk_release_stream(ptr %stream)
  ret i64 %n
}}

; An array's words at %o: length, null count, offset (and, unless %dict: the buffer count),
; then its first three buffers' addresses (0 past n_buffers).
define internal void @gz_walk_array(ptr %c, ptr %o, i64 %dict) {{
entry:
  %len.p = getelementptr inbounds %ArrowArray, ptr %c, i32 0, i32 0
  %len = load i64, ptr %len.p
  %nulls.p = getelementptr inbounds %ArrowArray, ptr %c, i32 0, i32 1
  %nulls = load i64, ptr %nulls.p
  %off.p = getelementptr inbounds %ArrowArray, ptr %c, i32 0, i32 2
  %off = load i64, ptr %off.p
  %nbuf.p = getelementptr inbounds %ArrowArray, ptr %c, i32 0, i32 3
  %nbuf = load i64, ptr %nbuf.p
  %bufs.p = getelementptr inbounds %ArrowArray, ptr %c, i32 0, i32 5
  %bufs = load ptr, ptr %bufs.p
  %is.dict = icmp ne i64 %dict, 0
  br i1 %is.dict, label %dict.words, label %plain.words
plain.words:
  store i64 %len, ptr %o
  %o1 = getelementptr inbounds i64, ptr %o, i64 {W_NULLS}
  store i64 %nulls, ptr %o1
  %o2 = getelementptr inbounds i64, ptr %o, i64 {W_OFFSET}
  store i64 %off, ptr %o2
  %o3 = getelementptr inbounds i64, ptr %o, i64 {W_BUFFERS}
  store i64 %nbuf, ptr %o3
  %ob = getelementptr inbounds i64, ptr %o, i64 {W_BUF0}
  br label %buffers
dict.words:
  ; (length, offset, buffers): the dictionary's identity
  store i64 %len, ptr %o
  %d1 = getelementptr inbounds i64, ptr %o, i64 1
  store i64 %off, ptr %d1
  %db = getelementptr inbounds i64, ptr %o, i64 2
  br label %buffers
buffers:
  %b.out = phi ptr [ %ob, %plain.words ], [ %db, %dict.words ]
  br label %buffer
buffer:
  %k = phi i64 [ 0, %buffers ], [ %k.next, %buffer.store ]
  %k.more = icmp slt i64 %k, 3
  br i1 %k.more, label %buffer.read, label %out
buffer.read:
  %in = icmp slt i64 %k, %nbuf
  br i1 %in, label %buffer.load, label %buffer.store
buffer.load:
  %bp = getelementptr inbounds ptr, ptr %bufs, i64 %k
  %b = load ptr, ptr %bp
  %bi = ptrtoint ptr %b to i64
  br label %buffer.store
buffer.store:
  %v = phi i64 [ 0, %buffer.read ], [ %bi, %buffer.load ]
  %bo = getelementptr inbounds i64, ptr %b.out, i64 %k
  store i64 %v, ptr %bo
  %k.next = add i64 %k, 1
  br label %buffer
out:
  ret void
}}

define internal void @gz_walk_release_stream(ptr %stream) {{
entry:
  %rel.p = getelementptr inbounds ptr, ptr %stream, i64 3
  %rel = load ptr, ptr %rel.p
  %has = icmp ne ptr %rel, null
  br i1 %has, label %call, label %out
call:
  call void %rel(ptr %stream)
  br label %out
out:
  ret void
}}
"""


@functools.lru_cache(maxsize=1)
def _walker():
    """(module, gz_arrow_stream_walk); the module is cached by ``jit`` and kept alive here."""
    module = compile_ir(_WALK_IR)
    return module, module.function("gz_arrow_stream_walk", _I64, _P, _P, _I64, _I64)


def walk_batches(batches: list[pa.RecordBatch], schema: pa.Schema) -> np.ndarray | None:
    """The raw words of every batch (shape ``(batches, fields, RAW_WORDS)``), or None where the
    batches cannot be exported as one stream of ``schema``."""
    raw = np.zeros((len(batches), len(schema), RAW_WORDS), dtype=np.int64)
    if not batches or not len(schema):
        return raw
    stream = (ctypes.c_uint64 * 5)()  # struct ArrowArrayStream
    try:
        pa.RecordBatchReader.from_batches(schema, batches)._export_to_c(ctypes.addressof(stream))
    except (pa.ArrowException, TypeError, ValueError):
        return None
    n = _walker()[1](ctypes.addressof(stream), raw.ctypes.data, len(batches), len(schema))
    return raw if n == len(batches) else None


class ArrowIntake:
    """The descriptors of a known list of batches of one schema (``walk_batches``), and what the
    source's checks and ``prepare`` read from them. Build it with ``ArrowIntake.of``."""

    def __init__(self, batches: list[pa.RecordBatch], schema: pa.Schema, raw: np.ndarray):
        self.batches, self.schema, self.raw = batches, schema, raw
        self.rows_of = {id(b): i for i, b in enumerate(batches)}
        self.valid = np.ones(len(batches), dtype=bool)  # passed batch.validate()
        for i, b in enumerate(batches):
            try:
                b.validate()
            except pa.ArrowInvalid:
                self.valid[i] = False  # prepare raises its error at the batch's turn
        self._dictionaries: dict[int, tuple[np.ndarray, list[pa.Array]]] = {}
        self._gens: dict[int, tuple[object, _GenRows | None]] = {}

    @classmethod
    def of(cls, batches, schema: pa.Schema) -> ArrowIntake | None:
        """The intake of ``batches`` (a list, each of ``schema``), or None where it does not apply
        (another schema, or more than ``MAX_ENTRIES`` (batch, column) pairs)."""
        if not isinstance(batches, list) or len(batches) * max(len(schema), 1) > MAX_ENTRIES \
                or not all(isinstance(b, pa.RecordBatch) and b.schema == schema for b in batches):
            return None
        raw = walk_batches(batches, schema)
        return None if raw is None else cls(batches, schema, raw)

    def row(self, batch: pa.RecordBatch) -> int:
        """``batch``'s row in the intake, or -1."""
        row = self.rows_of.get(id(batch), -1)
        return row if row >= 0 and self.batches[row] is batch else -1

    def dictionaries(self, field: int) -> tuple[np.ndarray, list[pa.Array]]:
        """For dictionary column ``field``: each batch's dictionary number, and the distinct
        dictionaries (by buffers, as ``DictionaryCodes`` tells them apart) in order of first use."""
        found = self._dictionaries.get(field)
        if found is None:
            identity = self.raw[:, field, _DICT_IDENTITY]
            _, first, inverse = np.unique(identity, axis=0, return_index=True, return_inverse=True)
            order = np.argsort(first)  # number the dictionaries by first use
            number = np.empty_like(order)
            number[order] = np.arange(len(order))
            found = self._dictionaries[field] = (number[inverse.reshape(-1)],
                                                 [self.batches[first[k]].column(field).dictionary for k in order])
        return found

    def checked_rows(self, timestamp_field: int | None, clean_dictionary) -> np.ndarray:
        """Which batches need no check of their own: no null event time, and every dictionary
        column's dictionary accepted by ``clean_dictionary`` (the source's test: clean, and the
        kernels check each index they read). The others go through ``Source.check_batch``."""
        ok = np.ones(len(self.batches), dtype=bool)
        if timestamp_field is not None:
            ok &= self.raw[:, timestamp_field, W_NULLS] == 0
        for field, f in enumerate(self.schema):
            if pa.types.is_dictionary(f.type):
                number, dictionaries = self.dictionaries(field)
                accepted = np.array([bool(clean_dictionary(d)) for d in dictionaries], dtype=bool)
                ok &= accepted[number]
        return ok

    def _rows(self, gen, codes) -> _GenRows | None:
        found = self._gens.get(id(gen))
        if found is None or found[0] is not gen:
            found = self._gens[id(gen)] = (gen, _GenRows.build(self, gen, codes))
        return found[1]

    def parts_table(self, gen, codes, parts: list, processing_time: int) -> tuple[PartsTable, bool] | None:
        """The parts table of a task's ``parts`` ((SharedBatch, number, watermark, first row,
        rows) each) for the kernels of ``gen``, and whether a batch of it has nulls: one
        gather from the descriptors of every batch, where the intake covers each part's batch
        (else None: the parts are prepared one by one)."""
        rows = self._rows(gen, codes)
        if rows is None:
            return None
        index = [self.rows_of.get(id(p[0].batch), -1) for p in parts]
        if min(index) < 0:
            return None
        at = np.asarray(index, dtype=np.int64)
        if not rows.usable[at].all() or any(self.batches[i] is not p[0].batch for i, p in zip(index, parts)):
            return None
        table = PartsTable.of_rows(rows.words[at], rows.params[at], [p[1] for p in parts], [p[3] for p in parts],
                                   [p[4] for p in parts], [p[2] for p in parts], processing_time,
                                   [p[0].batch for p in parts])
        return table, bool(rows.has_nulls[at].any())

    def prepared(self, row: int, gen, codes):
        """What ``batch_adapter.prepare`` gives for batch ``row`` and the kernels of ``gen``
        (watermark ``INT64_MIN``, processing time 0), or None where the bulk path does not
        cover it."""
        rows = self._rows(gen, codes)
        if rows is None or not rows.usable[row]:
            return None
        return PreparedBatch(rows.words[row], rows.params[row], self.batches[row].num_rows,
                             bool(rows.has_nulls[row]), [self.batches[row]])


class _GenRows:
    """Every batch's descriptor words and parameters for the kernels of one pipeline variant."""

    __slots__ = ("words", "params", "has_nulls", "usable")

    def __init__(self, words, params, has_nulls, usable):
        self.words, self.params, self.has_nulls, self.usable = words, params, has_nulls, usable

    @classmethod
    def build(cls, intake: ArrowIntake, gen, codes) -> _GenRows | None:
        """The rows of ``gen``, or None where a column of it needs the per-batch path (interned
        keys, decoded or string columns)."""
        raw, schema, n = intake.raw, intake.schema, len(intake.batches)
        words = np.zeros((n, len(gen.columns) * abi.COLUMN_SLOTS), dtype=np.uint64)
        params = np.zeros((n, abi.PARAM_FIRST_DICT_CODE + len(gen.dict_params)), dtype=np.int64)
        params[:, abi.PARAM_WATERMARK] = abi.INT64_MIN
        usable = intake.valid.copy()
        has_nulls = np.zeros(n, dtype=bool)
        for i, lay in enumerate(gen.columns):
            if lay.name in gen.interned_columns or lay.name in gen.carried_columns or lay.name in gen.order_columns \
                    or lay.name in gen.decode_columns:
                return None
            field = schema.get_field_index(lay.name)
            if field < 0:
                return None  # (prepare raises the usual error)
            arrow_type = schema.field(field).type
            if not (pa.types.is_primitive(arrow_type) or pa.types.is_dictionary(arrow_type)):
                return None  # (strings: their data length; nested types: their own buffers)
            col = raw[:, field, :]
            nulls, length = col[:, W_NULLS], col[:, W_LENGTH]
            usable &= nulls >= 0  # (-1: unknown to the export)
            usable &= (col[:, W_BUF1] != 0) | (length == 0)  # (prepare substitutes zeros)
            has_nulls |= nulls > 0
            base = i * abi.COLUMN_SLOTS
            words[:, base + abi.SLOT_VALUES] = col[:, W_BUF1].view(np.uint64)
            words[:, base + abi.SLOT_VALIDITY] = np.where(nulls > 0, col[:, W_BUF0], 0).view(np.uint64)
            words[:, base + abi.SLOT_OFFSET] = col[:, W_OFFSET].view(np.uint64)
            words[:, base + abi.SLOT_LENGTH] = length.view(np.uint64)
            if pa.types.is_dictionary(arrow_type):
                words[:, base + abi.SLOT_DATA_LEN] = col[:, W_DICT_LENGTH].view(np.uint64)
                number, dictionaries = intake.dictionaries(field)
                literals = [(abi.PARAM_FIRST_DICT_CODE + k, literal)
                            for k, (column, literal) in enumerate(gen.dict_params) if column == lay.name]
                for d, dictionary in enumerate(dictionaries):
                    memo = codes.memo(dictionary)
                    clean = memo.get(("clean",))
                    if clean is None:
                        clean = memo[("clean",)] = dictionary_is_clean(dictionary)
                    these = number == d
                    if not clean:  # prepare remaps it: the per-batch path
                        usable &= ~these
                        continue
                    for param, literal in literals:
                        params[these, param] = codes.code(dictionary, literal, memo)
        return cls(words, params, has_nulls, usable)
