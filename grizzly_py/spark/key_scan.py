"""The keyed strategies' input without a shuffle: every task scans every source and keeps its
keys' rows.

The ``keyed`` and ``keyed-join`` strategies partition the sources' rows by key so a task holds
every record of its keys (``joins.py``). For a DataFrame source Spark has to shuffle the rows.
For sources the tasks read themselves (Parquet, Arrow: ``inputs.pushdown_source``) the shuffle
is not needed: task ``p`` of ``P`` reads every split of every source (only the columns the query
reads) and keeps the rows whose key hashes to ``p`` (``key_partition``: equal keys alike across
integer widths and float classes, -0.0 as 0.0 and one NaN, as ``schema.hashed_key`` normalizes
them for Spark), batch by batch, so it rebuilds each source's batches of its keys in stream
order without Spark's sort, and runs the query on them as a shuffled task does
(``join_task.run_sources``). A ``from_spark`` DataFrame that is a plain Parquet or ORC scan
(``file_scans.py``) is read the same way, its filters applied in the task, its rows one batch in
the files' order (a DataFrame is one batch of its stream). Each task reads the whole input,
which costs less than moving every row through the JVM's shuffle while the tasks are few
(``SCAN_TASKS``; ``scan_parts`` picks how many); rows a reader rejects (``on_bad_rows="drop"``)
are reported by task 0 only, so they are counted once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .file_scans import FileScan
from .inputs import Split, read_split
from .join_task import run_sources
from .joins import SourceLayout

# the most tasks for which each task scanning the whole input beats the shuffle (docs/spark.md)
SCAN_TASKS = 16
# a core's share of the input (estimated bytes of the columns read) up to which one task per core
# holds it; above, ``split_target`` tasks each hold a smaller part: a 32nd of the Python workers'
# memory cap (``spark.executor.pyspark.memory``: 32 MiB of 1g, where Nexmark Q8 at 100M events
# passed), or this much where the workers are not capped
SCAN_SHARE_BYTES = 256 << 20
_UNITS = {"": 1 << 20, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
_NULL = np.uint64(0x9E3779B97F4A7C15)  # a null key's hash (any constant: equal nulls partition alike)
_MIX = np.uint64(0x100000001B3)
_FIBONACCI = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / the golden ratio, odd


def key_partition(batch: pa.RecordBatch, keys: Iterable[str], parts: int) -> np.ndarray:
    """Each row's key partition in ``range(parts)``: a hash of its ``keys`` columns, equal for
    keys that group as one (integers of any width, floats of either width, -0.0 and 0.0, every
    NaN; timestamps by instant), the same in every process."""
    mixed = None
    for name in keys:
        column = batch.column(name)
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        hashed = _hashed(_normalized(column))
        if column.null_count:
            hashed = np.where(column.is_valid().to_numpy(zero_copy_only=False), hashed, _NULL)
        mixed = hashed if mixed is None else mixed * _MIX + hashed
    if mixed is None:
        return np.zeros(batch.num_rows, dtype=np.int64)
    # the high 32 bits scaled to range(parts) (a multiply and a shift, not a 64-bit division)
    return (((mixed >> np.uint64(32)) * np.uint64(parts)) >> np.uint64(32)).astype(np.int64)


def _hashed(values: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each value: numbers by their 64 bits (Fibonacci hashing, then the high
    half folded into the low), strings by pandas' ``hash_array``."""
    if values.dtype == object:
        from pandas.util import hash_array
        values = hash_array(values)
    hashed = values.view(np.uint64) * _FIBONACCI
    hashed ^= hashed >> np.uint64(29)
    return hashed * _FIBONACCI


def _normalized(column: pa.Array) -> np.ndarray:
    """``column``'s values as one numpy array per class of key type (nulls as any value: the
    caller masks them)."""
    kind = column.type
    if pa.types.is_dictionary(kind):
        column, kind = column.cast(kind.value_type), kind.value_type
    if pa.types.is_floating(kind):
        values = column.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
        values = np.where(np.isnan(values), np.nan, values) + 0.0  # one NaN; -0.0 + 0.0 is 0.0
        return values.view(np.uint64)
    if pa.types.is_timestamp(kind):
        return column.cast(pa.timestamp("us")).cast(pa.int64()).fill_null(0).to_numpy()
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind) or pa.types.is_date(kind):
        if pa.types.is_date64(kind):
            column = column.cast(pa.date32())
        return column.cast(pa.int64()).fill_null(0).to_numpy()
    return column.fill_null("").to_numpy(zero_copy_only=False)


@dataclass(frozen=True)
class ScannedSource:
    """What a task reads of one source: its splits and key columns; ``files``: a ``from_spark``
    DataFrame that is a plain Parquet or ORC scan (``file_scans.FileScan``), whose rows are one batch of
    the stream (a DataFrame's), in the files' order; None: a pushdown source, batch by batch."""

    splits: tuple[Split, ...]
    keys: tuple[str, ...]
    files: FileScan | None = None

    def batches(self, rejected: dict) -> Iterator[tuple[int, pa.RecordBatch]]:
        """(number of the source batch, rows) of every piece, in order."""
        for split in self.splits:
            if self.files is not None:
                yield from ((0, b) for b in self.files.batches(read_split(split)))
            else:
                yield from zip(split.pieces, read_split(split, rejected))


def scan_parts(sources: list[ScannedSource], cores: int, finer: int, worker_memory: str | None = None) -> int:
    """How many key partitions (tasks) to scan into: one per core, which reads the input least
    often, while a core's share of the input fits ``share_bytes(worker_memory)``; else
    ``finer``."""
    size = sum(_estimated_bytes(split) for source in sources for split in source.splits)
    return max(1, cores) if size <= share_bytes(worker_memory) * max(1, cores) else finer


def share_bytes(worker_memory: str | None) -> int:
    """The most input (estimated bytes) one task per core may hold, for Python workers capped at
    ``worker_memory`` (Spark's ``spark.executor.pyspark.memory``: a size such as ``"1g"`` or
    ``"700m"``, MiB without a unit; None: not capped)."""
    if not worker_memory:
        return SCAN_SHARE_BYTES
    found = re.fullmatch(r"\s*(\d+)\s*([kmgtp]?)i?b?\s*", worker_memory.lower())
    if found is None:
        raise ValueError(f"spark.executor.pyspark.memory: not a size: {worker_memory!r}")
    return min(SCAN_SHARE_BYTES, int(found.group(1)) * _UNITS[found.group(2)] // 32)


def _estimated_bytes(split: Split) -> int:
    """The rows of ``split`` times 8 bytes per column read (known without reading its data)."""
    if split.row_groups:
        rows = sum(g.rows for g in split.row_groups)
    elif split.inline:
        rows = sum(b.num_rows for b in split.inline)
    elif split.kind == "ipc":
        reader = pa.ipc.open_file(pa.memory_map(split.path))
        rows = sum(reader.get_batch(i).num_rows for i in split.pieces)
    else:
        return SCAN_SHARE_BYTES << 10  # unknown: take the finer partitioning
    return rows * 8 * (len(split.columns) if split.columns else 8)


def scan_task(shipped, ids: Iterator[pa.RecordBatch], parts: int, sources: list[ScannedSource],
              layouts: list[SourceLayout], out_schema: pa.Schema, accumulator=None,
              stage: str = "keyed") -> Iterator[pa.RecordBatch]:
    """Task side: for each key partition number in ``ids``, every source's batches cut to the
    rows of that partition, then the query over them."""
    from . import worker
    for chunk in ids:
        for part in chunk.column(0).to_pylist():
            rejected: dict = {}
            feeds = {layout.name: _partition_batches(source, layout, part, parts, rejected)
                     for source, layout in zip(sources, layouts)}
            if part == 0:
                worker.report_rejected(accumulator, rejected)
            yield from run_sources(shipped, feeds, layouts, out_schema, accumulator, stage)


def _partition_batches(source: ScannedSource, layout: SourceLayout, part: int, parts: int,
                       rejected: dict) -> list[pa.RecordBatch]:
    """Every batch of one source, in order, holding its rows of key partition ``part`` (the
    columns the query does not read as nulls)."""
    pieces: list[list[pa.RecordBatch]] = [[] for _ in layout.maxima]
    for number, batch in source.batches(rejected):
        if batch.num_rows:
            mine = batch.filter(pa.array(key_partition(batch, source.keys, parts) == part))
            pieces[number].append(layout.rebuilt(mine.column, mine.num_rows))
    return [_one_batch(p, layout.schema) for p in pieces]


def _one_batch(batches: list[pa.RecordBatch], schema: pa.Schema) -> pa.RecordBatch:
    if len(batches) == 1:
        return batches[0]
    combined = pa.Table.from_batches(batches, schema=schema).combine_chunks().to_batches()
    return combined[0] if combined else pa.RecordBatch.from_pylist([], schema=schema)


__all__ = ["SCAN_SHARE_BYTES", "SCAN_TASKS", "ScannedSource", "key_partition", "scan_parts", "scan_task",
           "share_bytes"]
