"""Sources: where records come from, as Arrow RecordBatches, with their event-time column.

A source knows its schema when it is defined (so a query that does not fit is rejected before any
data is read) and yields batches in order. The batch boundaries it yields are the watermark
boundaries of semantics.md: one per RecordBatch given to ``from_arrow``, per Parquet row group,
per CSV block. Each batch is checked against the declared schema and for null event timestamps,
and a problem is reported naming the source, the column and the row.

File sources take ``on_bad_rows``: ``"error"`` (the default: the first bad row fails the job with a
``BadInputError``) or ``"drop"`` (bad rows -- CSV lines with the wrong number of fields, values that
do not parse as their column's type or are not valid UTF-8, null event timestamps -- are skipped and
counted in the source's ``rejected_records``, which the job reports as ``metrics["rejected_records"]``).
The catalogue of hostile inputs and what each gives: docs/semantics.md, "Bad and hostile input".
"""

from __future__ import annotations

import itertools
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .identity_cache import IdentityCache
from .types import Schema, SchemaError, schema_from_arrow
from .watermark import WatermarkStrategy


class BadInputError(ValueError):
    """Input data that cannot be processed; the message names the source, column and row."""


_source_counter = itertools.count()

ON_BAD_ROWS = ("error", "drop")

# multiplier that turns one unit of an Arrow timestamp into milliseconds, as (numerator, divisor)
TIMESTAMP_UNIT_DIVISOR = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}


def dictionary_is_clean(dictionary: pa.Array) -> bool:
    """No null entries and no duplicates: a dictionary's indices then identify its values."""
    return dictionary.null_count == 0 and (len(dictionary) <= 1
                                           or pc.count_distinct(dictionary).as_py() == len(dictionary))


@dataclass(eq=False)
class Source:
    """Base of all sources."""

    name: str
    arrow_schema: pa.Schema
    timestamp: str | None
    watermark: WatermarkStrategy = field(default_factory=WatermarkStrategy.for_monotonous_timestamps)
    on_bad_rows: str = "error"  # or "drop": skip and count bad rows (file sources)
    reads_lists = False  # list columns (top_k results) only in the engine's own intermediate results
    spark_only = False  # its queries run on Spark only (a Spark DataFrame: spark/sources.py)

    def __post_init__(self):
        if self.on_bad_rows not in ON_BAD_ROWS:
            raise ValueError(f"{self.name}: on_bad_rows must be 'error' or 'drop', got {self.on_bad_rows!r}")
        # rows skipped by on_bad_rows="drop" in the last run of this source, and why (a few examples)
        self.rejected_records = 0
        self.rejected_examples: list[str] = []
        self.schema: Schema = schema_from_arrow(self.arrow_schema, source=self.name, lists=self.reads_lists)
        self.dictionary_columns = [(i, f.name) for i, f in enumerate(self.arrow_schema)
                                   if pa.types.is_dictionary(f.type)]  # (position, name): checked per batch
        self.timestamp_field: int | None = None  # the event-time column's position
        self._clean: dict[tuple, tuple[pa.Array, bool]] = {}
        self._last_clean: tuple[pa.Array, bool] | None = None
        if self.timestamp is not None:
            ts_field = self.schema.field(self.timestamp) if self.timestamp in self.schema else None
            if ts_field is None:
                raise SchemaError(f"{self.name}: timestamp column {self.timestamp!r} does not exist; "
                                  f"available columns: {', '.join(self.schema.names)}")
            t = self.arrow_schema.field(self.timestamp).type
            if not (pa.types.is_integer(t) or pa.types.is_timestamp(t)):
                raise SchemaError(f"{self.name}: timestamp column {self.timestamp!r} has type {t}; "
                                  "expected int64 epoch milliseconds or an Arrow timestamp")
            self.timestamp_field = self.arrow_schema.get_field_index(self.timestamp)

    @property
    def timestamp_arrow_type(self) -> pa.DataType:
        """Arrow type of ``window_start``/``window_end`` produced from this source's event time."""
        if self.timestamp is None:
            return pa.int64()
        t = self.arrow_schema.field(self.timestamp).type
        return t if pa.types.is_timestamp(t) else pa.int64()

    @property
    def watermark_description(self) -> str:
        return f"watermark=out-of-orderness {self.watermark.out_of_orderness_ms}ms"

    def raw_batches(self) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError

    def raw_batches_from(self, start: int, rejected: tuple[int, list[str]]) -> Iterator[pa.RecordBatch]:
        """The raw batches from number ``start`` on (a restart from a checkpoint): the ones before
        are read and skipped, then the rows they rejected are counted as ``rejected`` says."""
        raw = iter(self.raw_batches())
        for _ in itertools.islice(raw, start):
            pass
        self.rejected_records, self.rejected_examples = rejected[0], list(rejected[1])
        yield from raw

    def batches(self, start: int = 0, rejected: tuple[int, list[str]] = (0, []), *,
                checked=None, kernels_check_dictionaries: bool = False) -> Iterator[pa.RecordBatch]:
        """The checked batches of this source, in order (each run restarts ``rejected_records``).
        From batch number ``start`` on when a job resumes from a checkpoint, which also restores
        ``rejected`` (the count and examples of the rows rejected before that batch). The
        engine's jobs (``engine/source_reads.py``) may say which batches passed their checks in
        bulk already (``checked``, by batch number) and that their kernels check the dictionary
        indices they read (``check_batch``)."""
        self.rejected_records = 0
        self.rejected_examples = []
        raw = self.raw_batches() if start == 0 else self.raw_batches_from(start, rejected)
        for index, batch in enumerate(raw, start):
            if self.on_bad_rows == "drop":
                batch = self._drop_null_timestamps(batch, index)
            if checked is None or not checked[index]:
                self.check_batch(batch, index, kernels_check_dictionaries)
            yield batch

    def known_batches(self) -> list[pa.RecordBatch] | None:
        """This source's raw batches where it knows them all up front (the engine then reads
        their checks and descriptors in bulk: ``engine/arrow_intake.py``); None (the default):
        they come one by one."""
        return None

    def _check_dictionary_indices(self, column: pa.DictionaryArray, name: str, index: int) -> None:
        """Dictionary indices must point into the dictionary (Arrow's cheap validation does not
        check them, and a code past the dictionary would be taken for a value). Without nulls,
        the indices' largest value read as unsigned answers both bounds in one pass (a negative
        index reads as a huge one)."""
        indices, size = column.indices, len(column.dictionary)
        if not indices.null_count:
            width = indices.type.bit_width // 8
            unsigned = np.frombuffer(indices.buffers()[1], dtype=f"u{width}", count=len(indices),
                                     offset=indices.offset * width)
            if int(unsigned.max()) < size:
                return
        else:
            bounds = pc.min_max(indices).as_py()
            if bounds["min"] is None or (bounds["min"] >= 0 and bounds["max"] < size):
                return
        bad = pc.or_(pc.less(indices, 0), pc.greater_equal(indices, size))
        row = pc.index(bad, True).as_py()
        raise BadInputError(f"{self.name}: column {name!r}: dictionary index {indices[row].as_py()} is outside "
                            f"the dictionary of {size} values in batch {index}, row {row}")

    def clean_dictionary(self, dictionary: pa.Array) -> bool:
        """No nulls and no duplicates (remembered per dictionary: batches of a table share one,
        which answers for an equal one at the cost of a pointer comparison)."""
        if self._last_clean is not None and self._last_clean[0].equals(dictionary):
            return self._last_clean[1]
        key = (len(dictionary), dictionary.offset) + tuple(b.address if b is not None else 0
                                                          for b in dictionary.buffers())
        found = self._clean.get(key)
        if found is None:
            if len(self._clean) >= 64:
                self._clean.clear()
            found = self._clean[key] = (dictionary, dictionary_is_clean(dictionary))  # (holding it keeps its addresses)
        self._last_clean = found
        return found[1]

    def reject(self, count: int, why: str) -> None:
        """Count ``count`` rows dropped by ``on_bad_rows="drop"``; ``why`` names column and row."""
        self.rejected_records += count
        if len(self.rejected_examples) < 10:
            self.rejected_examples.append(why)

    def _drop_null_timestamps(self, batch: pa.RecordBatch, index: int) -> pa.RecordBatch:
        if self.timestamp is None or self.timestamp not in batch.schema.names:
            return batch
        ts = batch.column(self.timestamp)
        if not ts.null_count:
            return batch
        row = pc.index(pc.is_null(ts), True).as_py()
        self.reject(ts.null_count, f"column {self.timestamp!r}: null event timestamp in batch {index}, row {row}")
        return batch.filter(pc.is_valid(ts))

    def check_batch(self, batch: pa.RecordBatch, index: int, kernels_check_dictionaries: bool = False) -> None:
        """Raise a ``BadInputError`` naming the column and row for a batch that does not fit the
        source: another schema, a dictionary index outside its dictionary (unchecked for a clean
        dictionary where ``kernels_check_dictionaries``: the compiled loops check each index they
        read), a null event time."""
        if batch.schema != self.arrow_schema:
            if batch.schema.names != self.arrow_schema.names:
                raise BadInputError(f"{self.name}: batch {index} has columns {batch.schema.names}, "
                                    f"expected {self.arrow_schema.names}")
            for f, expected in zip(batch.schema, self.arrow_schema):
                if f.type != expected.type:
                    raise BadInputError(f"{self.name}: batch {index}: column {f.name!r} has type {f.type}, "
                                        f"expected {expected.type}")
        if batch.num_rows:  # the schema is the source's now: its dictionary columns are known
            for i, name in self.dictionary_columns:
                column = batch.column(i)
                if not (kernels_check_dictionaries and self.clean_dictionary(column.dictionary)):
                    self._check_dictionary_indices(column, name, index)
        if self.timestamp is not None and batch.num_rows:
            ts = batch.column(self.timestamp_field)  # (the batch has the source's columns, in order)
            if ts.null_count:
                row = pc.index(pc.is_null(ts), True).as_py()
                raise BadInputError(f"{self.name}: column {self.timestamp!r}: null event timestamp "
                                    f"in batch {index}, row {row}")


@dataclass(eq=False)
class ArrowSource(Source):
    data: object = None  # list of RecordBatches, or a one-shot iterator
    consumed: bool = False

    def known_batches(self):
        return self.data if isinstance(self.data, list) else None

    def raw_batches(self):
        if isinstance(self.data, list):
            return iter(self.data)
        if self.consumed:
            raise BadInputError(f"{self.name}: this source reads a one-shot iterator that an earlier job "
                                f"consumed; pass a list of batches or a Table to run it more than once")
        self.consumed = True
        return iter(self.data)


@dataclass(eq=False)
class ParquetSource(Source):
    """A Parquet file, directory of part files, glob or hive-partitioned dataset
    (``datasets.py``): one batch per row group, files in path order. A ``from_spark`` scan of ORC
    files reads its dataset the same way, a stripe per row group (``dataset.format``)."""

    path: str = ""
    dataset: object = field(default=None, repr=False)  # datasets.FileDataset of ``path``

    def raw_batches_from(self, start: int, rejected: tuple[int, list[str]]):
        self.rejected_records, self.rejected_examples = rejected[0], list(rejected[1])
        return self.raw_batches(start)  # seeks to row group `start`

    def raw_batches(self, first_group: int = 0):
        yield from (batch for _, batch in self.read_row_groups(self.row_groups()[first_group:]))

    def row_groups(self):
        """The dataset's row groups (``datasets.RowGroup``), from the files' footers."""
        try:
            return self.dataset.row_groups()
        except (pa.ArrowException, OSError) as e:
            raise BadInputError(f"{self.name}: not a readable {self.dataset.format_name} file (truncated or "
                                f"corrupt?): {e}") from e

    def read_row_groups(self, groups, columns: list[str] | None = None):
        """(row group, its batch) for each of ``groups`` (``datasets.RowGroup``, in order), only
        ``columns`` (None: all); a file that cannot be read or a row group that cannot be
        decoded is a ``BadInputError`` naming the file and row group."""
        handle, opened = None, None
        for group in groups:
            where = self.dataset.describe(group.file)
            if opened != group.file:
                try:  # page checksums are verified where the writer stored them
                    handle, opened = self.dataset.open(group.file), group.file
                except (pa.ArrowException, OSError) as e:
                    raise BadInputError(f"{self.name}: {where}: not a readable {self.dataset.format_name} file "
                                        f"(truncated or corrupt?): {e}") from e
            # a row group that cannot be decoded is an error even with on_bad_rows="drop": its rows
            # cannot be told apart, and dropping a whole group silently would be corruption
            try:
                table = self.dataset.read(handle, group, columns).combine_chunks()
            except (pa.ArrowException, OSError, KeyError) as e:
                raise BadInputError(f"{self.name}: {where}: row group {group.index} cannot be decoded "
                                    f"(truncated or corrupt file?): {e}") from e
            self._check_file_schema(table.schema, columns, where)
            batches = table.to_batches()
            yield group, (batches[0] if batches else pa.RecordBatch.from_pylist([], schema=table.schema))

    def _check_file_schema(self, schema: pa.Schema, columns: list[str] | None, where: str) -> None:
        """The files of a dataset share the schema of the first one: name a file that does not."""
        expected = self.arrow_schema.names if columns is None else list(columns)
        if schema.names != expected:
            raise BadInputError(f"{self.name}: {where}: has columns {schema.names}, expected {expected} "
                                "(every file of the dataset has the first file's columns)")
        for f in schema:
            if f.type != self.arrow_schema.field(f.name).type:
                raise BadInputError(f"{self.name}: {where}: column {f.name!r} has type {f.type}, expected "
                                    f"{self.arrow_schema.field(f.name).type}")


@dataclass(eq=False)
class CsvSource(Source):
    path: str = ""
    column_types: dict | None = None
    block_size: int = 1 << 22

    def raw_batches(self):
        import pyarrow.csv as pcsv
        if self.on_bad_rows == "drop":
            yield from self._checked_blocks(drop=True)
            return
        # the schema inferred at definition holds for every block (a block that the reader would
        # infer otherwise is read as declared, and a value that does not fit is named below)
        types = self.column_types or {f.name: f.type for f in self.arrow_schema}
        try:  # the fast path: Arrow's typed CSV reader; on an error, find its line, column and row
            reader = pcsv.open_csv(self.path, read_options=pcsv.ReadOptions(block_size=self.block_size),
                                   convert_options=pcsv.ConvertOptions(
                                       column_types=types, include_columns=self.arrow_schema.names))
            for batch in reader:
                yield batch
        except pa.ArrowException as e:
            for _ in self._checked_blocks(drop=False):  # raises a BadInputError naming the row
                pass
            raise BadInputError(f"{self.name}: {e}") from e

    def _checked_blocks(self, drop: bool) -> Iterator[pa.RecordBatch]:
        """The file's blocks read as raw bytes and converted here, column by column, so that a bad
        value can be named (column, batch, row) and, with ``drop``, its row skipped and counted.
        Lines with the wrong number of fields are named by line number (1 = the header)."""
        import pyarrow.csv as pcsv
        bad_lines: list = []

        def invalid_row(row):
            bad_lines.append(row)
            return "skip" if drop else "error"

        names = self.arrow_schema.names
        nulls = pa.array(pcsv.ConvertOptions().null_values, pa.string())
        data_row = 0
        try:
            reader = pcsv.open_csv(self.path, read_options=pcsv.ReadOptions(block_size=self.block_size,
                                                                                use_threads=False),
                                   parse_options=pcsv.ParseOptions(invalid_row_handler=invalid_row),
                                   convert_options=pcsv.ConvertOptions(
                                       column_types={n: pa.binary() for n in names}, include_columns=names))
            for index, block in enumerate(reader):
                for row in bad_lines:
                    self.reject(1, _field_count_message(row))
                bad_lines.clear()
                bad = np.zeros(block.num_rows, dtype=bool)
                columns = []
                for f in self.arrow_schema:
                    arr, bad_here = _convert_csv_column(block.column(f.name), f.type, nulls)
                    if bad_here:
                        if not drop:
                            r = bad_here[0]
                            value = block.column(f.name)[r].as_py()
                            raise BadInputError(f"{self.name}: column {f.name!r}, batch {index}, row {r} "
                                                f"(data row {data_row + r}): cannot read {_show(value)} as "
                                                f"{f.type}" + (" (not valid UTF-8)" if not _is_utf8(value) else ""))
                        for r in bad_here:
                            if not bad[r]:
                                self.reject(1, f"column {f.name!r}, batch {index}, row {r}: {_show(block.column(f.name)[r].as_py())}")
                        bad[bad_here] = True
                    columns.append(arr)
                batch = pa.RecordBatch.from_arrays(columns, schema=self.arrow_schema)
                data_row += block.num_rows
                yield batch.filter(pa.array(~bad)) if bad.any() else batch
            for row in bad_lines:  # skipped after the last block
                self.reject(1, _field_count_message(row))
        except pa.ArrowException as e:
            if bad_lines and not drop:
                raise BadInputError(f"{self.name}: {_field_count_message(bad_lines[0])}") from e
            if "straddl" in str(e):
                raise BadInputError(f"{self.name}: a row after data row {data_row} is longer than the CSV "
                                    f"block size ({self.block_size} bytes); read the file with "
                                    f"from_csv(..., block_size=...) above the longest row") from e
            raise BadInputError(f"{self.name}: {e}") from e


def _field_count_message(row) -> str:
    return (f"line {row.number}: expected {row.expected_columns} fields, got {row.actual_columns}: "
            f"{_show(row.text)}")


def _show(value, limit: int = 60) -> str:
    """A short repr of a bad value (values can be huge)."""
    if value is None:
        return "null"
    if isinstance(value, bytes) and _is_utf8(value):
        value = value.decode("utf-8")
    r = repr(value)
    return r if len(r) <= limit else r[:limit] + f"... ({len(value)} bytes)"


def _is_utf8(value) -> bool:
    if not isinstance(value, bytes):
        return True
    try:
        value.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _failing_rows(arr: pa.Array, convert) -> list[int]:
    """The indices of ``arr`` where ``convert`` fails, found by bisection (cheap for a few bad values)."""
    out, stack = [], [(0, len(arr))]
    while stack:
        lo, hi = stack.pop()
        try:
            convert(arr.slice(lo, hi - lo))
            continue
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        if hi - lo <= 16:
            for i in range(lo, hi):
                try:
                    convert(arr.slice(i, 1))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    out.append(i)
            continue
        mid = (lo + hi) // 2
        stack.append((mid, hi))
        stack.append((lo, mid))
    return out


def _convert_csv_column(raw: pa.Array, target: pa.DataType, nulls: pa.Array) -> tuple[pa.Array, list[int]]:
    """A CSV column read as bytes, converted to ``target`` like Arrow's CSV reader does (the
    reader's null spellings are nulls except in string columns); values that fail become nulls
    and their rows are returned."""
    if pa.types.is_binary(target) or pa.types.is_large_binary(target):
        return raw.cast(target), []
    bad: list[int] = []

    def to_string(a):
        return a.cast(pa.string())
    try:
        text = to_string(raw)
    except pa.ArrowInvalid:
        bad = _failing_rows(raw, to_string)
        mask = np.zeros(len(raw), dtype=bool)
        mask[bad] = True
        text = to_string(pc.if_else(pa.array(mask), pa.scalar(None, raw.type), raw))
    if pa.types.is_string(target) or pa.types.is_large_string(target):
        return text.cast(target), bad
    text = pc.if_else(pc.is_in(text, value_set=nulls), pa.scalar(None, pa.string()), text)

    def to_target(a):
        return a.cast(target)
    try:
        return to_target(text), bad
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        more = _failing_rows(text, to_target)
        mask = np.zeros(len(text), dtype=bool)
        mask[more] = True
        converted = to_target(pc.if_else(pa.array(mask), pa.scalar(None, pa.string()), text))
        return converted, sorted(set(bad) | set(more))


# A table's RecordBatch objects, made once while the table lives: jobs over the same table then
# read the same batch objects, which lets a Spark job reuse the IPC file an earlier job wrote of
# them (``spark/inputs.py``).
_TABLE_BATCHES: IdentityCache[list[pa.RecordBatch]] = IdentityCache()


def arrow_batches(data, *, name: str) -> tuple[pa.Schema, object]:
    """Normalize what ``from_arrow`` accepts to (schema, iterable of RecordBatches). A pandas
    DataFrame becomes a table without its index; another object that exports an Arrow stream
    (``__arrow_c_stream__``: polars, DuckDB, ...) is read into a table once, so that its query
    can run more than once."""
    if _is_pandas_frame(data):
        data = pa.Table.from_pandas(data, preserve_index=False)
    elif hasattr(data, "__arrow_c_stream__") and not isinstance(data, (pa.Table, pa.RecordBatch,
                                                                        pa.RecordBatchReader)):
        data = _without_string_views(pa.table(data))
    if isinstance(data, pa.Table):
        batches = _TABLE_BATCHES.get(data)
        if batches is None:  # (a table is immutable: its batches are the same objects every time)
            batches = _TABLE_BATCHES.put(data, data.to_batches())
        return data.schema, list(batches)
    if isinstance(data, pa.RecordBatch):
        return data.schema, [data]
    if isinstance(data, (list, tuple)):
        if not data:
            raise SchemaError(f"{name}: an empty list of batches has no schema; pass a pyarrow.Table instead")
        for i, b in enumerate(data):
            if not isinstance(b, pa.RecordBatch):
                raise TypeError(f"{name}: element {i} is a {type(b).__name__}, expected a pyarrow.RecordBatch")
        return data[0].schema, list(data)
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, data
    if isinstance(data, Iterable) and not isinstance(data, (dict, str, bytes)):
        it = iter(data)
        try:
            first = next(it)
        except StopIteration:
            raise SchemaError(f"{name}: an empty iterator has no schema; pass a pyarrow.Table instead") from None
        if not isinstance(first, pa.RecordBatch):
            raise TypeError(f"{name}: expected pyarrow.RecordBatch items, got {type(first).__name__} ({_ACCEPTED}; "
                            f"Python rows: from_collection)")
        return first.schema, itertools.chain([first], it)
    raise TypeError(f"{name}: from_arrow takes {_ACCEPTED}, got {type(data).__name__}")


_ACCEPTED = ("a pyarrow.Table, a RecordBatch, a list, iterator or reader of RecordBatches, a pandas or polars "
             "DataFrame, or an object with __arrow_c_stream__")


def _without_string_views(table: pa.Table) -> pa.Table:
    """``table`` with its ``string_view`` columns (what polars exports) as plain strings: the
    compiled code reads Arrow's offsets-and-data layout."""
    if not any(pa.types.is_string_view(t) for t in table.schema.types):
        return table
    return table.cast(pa.schema([f.with_type(pa.string()) if pa.types.is_string_view(f.type) else f
                                 for f in table.schema]))


def _is_pandas_frame(data) -> bool:
    """Whether ``data`` is a pandas DataFrame (without importing pandas where it is not loaded)."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(data, pandas.DataFrame)


def arrow_schema(schema, what: str) -> pa.Schema:
    """A ``pyarrow.Schema`` from one, or from a dict of column types (Arrow types or their names,
    ``"int64"``, ``"string"``, ``"timestamp[ms]"``)."""
    if isinstance(schema, dict):
        fields = []
        for k, v in schema.items():
            try:
                fields.append(pa.field(k, v if isinstance(v, pa.DataType) else pa.type_for_alias(v)))
            except (ValueError, TypeError):
                raise SchemaError(f"{what}: column {k!r}: {v!r} is not an Arrow type or a type name "
                                  f"such as 'int64', 'float64', 'string', 'timestamp[ms]'") from None
        schema = pa.schema(fields)
    if not isinstance(schema, pa.Schema):
        raise TypeError(f"{what}: schema must be a pyarrow.Schema or a dict of column types, got {schema!r}")
    return schema


def collection_table(rows, schema) -> pa.Table:
    """``from_collection``'s rows (dicts, or tuples/lists in ``schema``'s column order) as a table
    of ``schema`` (a pyarrow.Schema, a dict of column types, or a list of names: types inferred)."""
    what = "from_collection"
    if isinstance(rows, (str, bytes, dict)) or not isinstance(rows, Iterable):
        raise TypeError(f"{what}: expected a list of rows (dicts or tuples), got {type(rows).__name__}")
    rows = list(rows)
    names = list(schema) if isinstance(schema, (list, tuple)) else None
    typed = None if schema is None or names is not None else arrow_schema(schema, what)
    if names is None and typed is not None:
        names = typed.names
    if not rows and typed is None:
        raise SchemaError(f"{what}: an empty collection has no column types; pass schema= as a pyarrow.Schema "
                          "or a dict of column types")
    if all(isinstance(r, dict) for r in rows):
        columns = names or list(dict.fromkeys(k for r in rows for k in r))
        for i, r in enumerate(rows):
            extra = [k for k in r if k not in columns]
            if extra:
                raise SchemaError(f"{what}: row {i} has column(s) {extra} that schema= does not name "
                                  f"({', '.join(columns)})")
        values = {c: [r.get(c) for r in rows] for c in columns}
    elif names is None:
        raise SchemaError(f"{what}: rows given as tuples need schema= to name their columns, e.g. "
                          "schema={'ts': 'int64', 'k': 'string'} (or give the rows as dicts)")
    else:
        for i, r in enumerate(rows):
            if isinstance(r, dict) or not isinstance(r, (tuple, list)) or len(r) != len(names):
                raise SchemaError(f"{what}: row {i} is {r!r}; expected a tuple of {len(names)} values "
                                  f"({', '.join(names)})")
        values = {c: [r[j] for r in rows] for j, c in enumerate(names)}
    arrays = []
    for c, column in values.items():
        try:
            arrays.append(pa.array(column, type=typed.field(c).type if typed is not None else None))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as e:
            raise SchemaError(f"{what}: column {c!r}: {e}") from None
    return pa.Table.from_arrays(arrays, names=list(values))


def csv_schema(path: str, schema, block_size: int = 1 << 22) -> tuple[pa.Schema, dict | None]:
    """The Arrow schema of a CSV file: the given one (pa.Schema or {name: type}), or inferred. The
    header is read from the file's first ``block_size`` bytes at most, and must name each column
    once."""
    import pyarrow.csv as pcsv
    header = _csv_header(path, block_size)
    counts = Counter(header)
    twice = next((n for n in header if counts[n] > 1), None)
    if twice is not None:
        places = [i + 1 for i, n in enumerate(header) if n == twice]
        raise SchemaError(f"csv:{path}: the header names column {twice!r} more than once (columns "
                          f"{', '.join(map(str, places))}); rename the columns so that each name is unique")
    if schema is None:
        try:
            reader = pcsv.open_csv(path)
        except pa.ArrowInvalid as e:  # e.g. an empty file: no header to infer columns from
            raise BadInputError(f"csv:{path}: cannot infer the schema: {e}") from e
        untyped = [f.name for f in reader.schema if pa.types.is_null(f.type)]
        if untyped:
            first = next(iter(reader), None)
            why = ("the file has a header but no data rows" if first is None or first.num_rows == 0 else
                   "they have no values in the block of the file that types are inferred from")
            example = ", ".join(f"{n!r}: 'int64'" for n in reader.schema.names[:3])
            raise SchemaError(f"csv:{path}: cannot infer the type of column(s) {', '.join(map(repr, untyped))}: {why}; "
                              f"declare the columns' types with from_csv(..., schema={{{example}, ...}})")
        return reader.schema, None
    schema = arrow_schema(schema, "from_csv")
    missing = [n for n in schema.names if n not in header]
    if missing:
        raise SchemaError(f"csv:{path}: declared column(s) {missing} are not in the file's header; "
                          f"the header has: {', '.join(header) or '(nothing: an empty file)'}")
    return schema, {f.name: f.type for f in schema}


def _csv_header(path: str, block_size: int) -> list[str]:
    """The column names in a CSV file's first record (no type inference), read from its first
    ``block_size`` bytes, where Arrow's reader looks for it too: a first record that does not end
    within them (a file without line breaks, say) is a ``BadInputError``, not a read of the whole
    file."""
    import csv
    import io
    with open(path, "rb") as f:
        head = f.read(block_size)
        whole_file = not f.read(1)
    last = ""

    def lines():  # the lines the csv reader takes (a quoted field may span several)
        nonlocal last
        for last in io.TextIOWrapper(io.BytesIO(head), encoding="utf-8-sig", errors="replace", newline=""):
            yield last

    ended = whole_file or b"\n" in head or b"\r" in head  # (a cheap answer for a file without line breaks)
    if ended:
        try:
            names = next(csv.reader(lines()), [])
        except csv.Error as e:  # e.g. a field longer than the csv module's limit
            raise BadInputError(f"csv:{path}: cannot read the header: {e}") from e
        ended = whole_file or last.endswith(("\n", "\r"))
    if not ended:
        raise BadInputError(f"csv:{path}: the header (the first line) does not end within the first "
                            f"{block_size} bytes (the CSV block size): is it a CSV file with line breaks? "
                            f"For a longer header read the file with from_csv(..., block_size=...) above "
                            f"its length")
    return names


def parquet_dataset(path: str):
    """The ``datasets.FileDataset`` of Parquet files at ``path``; a path that holds no readable Parquet data is
    a ``BadInputError`` (``FileNotFoundError`` where nothing exists there)."""
    from .datasets import BadDatasetError, resolve
    try:
        return resolve(path)
    except BadDatasetError as e:
        raise BadInputError(str(e)) from e


def rejected_metrics(queries, metrics: dict) -> dict:
    """Add ``rejected_records`` (rows dropped by ``on_bad_rows="drop"``, over the job's distinct
    sources) and ``rejected_by_source`` to a job's ``metrics``."""
    from .plan import distinct_sources
    seen: dict[int, Source] = {}
    for q in queries:
        for s in distinct_sources(q.root):
            seen.setdefault(id(s), s)
    metrics["rejected_records"] = sum(getattr(s, "rejected_records", 0) for s in seen.values())
    metrics["rejected_by_source"] = {s.name: s.rejected_records for s in seen.values()
                                     if getattr(s, "rejected_records", 0)}
    return metrics


def next_source_name(kind: str) -> str:
    return f"{kind}#{next(_source_counter)}"
