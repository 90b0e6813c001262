"""The two ways records reach a task.

1. A Spark DataFrame (``env.from_spark``): Spark reads it and hands each task its partition as
   Arrow batches through ``mapInArrow`` (with ``session.ARROW_CONF``: no per-row size check,
   64K-row batches). Only the columns the query reads are selected first.

2. Source pushdown (``from_parquet``, ``from_csv``, ``from_arrow`` under Spark): the driver cuts
   the source into ``Split``s (contiguous runs of Parquet row groups or Arrow batches, about
   ``SPLITS_PER_CORE`` per core of the cluster; a CSV file whole) and each task reads its split
   itself with pyarrow, only the columns the query reads, so raw rows never pass through the JVM. The tasks of such an input are the partitions of
   ``spark.range(n, numPartitions=n)``: task ``i`` reads ``splits[i]``. A Parquet source is a
   dataset (``datasets.py``): a split's row groups may span files. ``from_spark`` DataFrames
   that are plain Parquet or ORC scans are cut the same way (``file_scans.py``).

A split also carries the source's watermark before its first batch: the driver knows every
batch's largest event time (Parquet row-group statistics, or the batches themselves), so a task
processes its batches under the watermarks the embedded engine would have, and what is late (and
which windows a late record still counts in) does not depend on how the source was split.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa

from ..codegen import abi
from ..engine.watermarks import batch_max_event_time
from ..expressions import Column
from ..identity_cache import IdentityCache
from ..physical.pipelines import JoinInput, JoinTerminal, Pipeline, ProjectTerminal, SourceInput
from ..sources import (
    TIMESTAMP_UNIT_DIVISOR,
    ArrowSource,
    BadInputError,
    CsvSource,
    ParquetSource,
    Source,
)

INLINE_BYTES = 16 << 20  # Arrow sources up to this size travel inside the task closures
# splits per core of the cluster (where the source has that many row groups / batches): tasks of
# uneven speed then even out, as Spark hands a free core the next split
SPLITS_PER_CORE = 3


def split_target(cores: int) -> int:
    """How many splits to cut a source into for a cluster of ``cores`` (``defaultParallelism``)."""
    return max(1, cores) * SPLITS_PER_CORE


@dataclass(frozen=True)
class Split:
    """One task's share of a source: ``pieces`` (row groups, batch indices) of ``path`` or of the
    ``inline`` batches, read in order; ``columns``: only these (None: all)."""

    source: str
    kind: str                       # "parquet" | "ipc" | "inline" | "csv"
    pieces: tuple[int, ...]
    watermark_before: int | None    # None: the source has no event time
    path: str | None = None
    columns: tuple[str, ...] | None = None
    inline: tuple = field(default=(), repr=False)
    marks: tuple = ()               # the source's watermark before each piece (file and Arrow sources)
    row_groups: tuple = ()          # Parquet: the pieces' ``datasets.RowGroup``s
    reader: object = field(default=None, repr=False)  # file sources: a copy of the source (its checks)


def split_numbers(split: Split) -> tuple[int, ...] | None:
    """The numbers in the source of the batches ``read_split`` gives (one per piece), or None for
    a CSV split (one task reads the whole file, numbering its blocks from 0)."""
    return None if split.kind == "csv" else split.pieces


def read_split(split: Split, rejected: dict | None = None) -> Iterator[pa.RecordBatch]:
    """The batches of ``split``, one per row group / Arrow batch / CSV block (the source's
    watermark steps), checked as the source checks them (``on_bad_rows``); rows dropped by
    ``on_bad_rows="drop"`` are added to ``rejected[source name]``."""
    cols = list(split.columns) if split.columns is not None else None
    if split.kind == "parquet":
        yield from _read_parquet(split, cols, rejected)
    elif split.kind == "ipc":
        reader = pa.ipc.open_file(pa.memory_map(split.path))
        for i in split.pieces:
            b = reader.get_batch(i)
            yield b.select(cols) if cols is not None else b
    elif split.kind == "inline":
        for b in split.inline:
            yield b.select(cols) if cols is not None else b
    elif split.kind == "csv":  # one task reads the whole file, exactly as the source reads it
        src = split.reader
        for b in src.batches():
            yield b.select(cols) if cols is not None else b
        if rejected is not None:
            rejected[src.name] = rejected.get(src.name, 0) + src.rejected_records
    else:  # pragma: no cover
        raise ValueError(f"unknown split kind {split.kind!r}")


def _read_parquet(split: Split, cols, rejected) -> Iterator[pa.RecordBatch]:
    """Row groups of a Parquet dataset, only ``cols``, with ``ParquetSource``'s checks and errors."""
    src = split.reader
    dropped = 0
    for group, batch in src.read_row_groups(split.row_groups, cols):
        if src.on_bad_rows == "drop":
            before = src.rejected_records
            batch = src._drop_null_timestamps(batch, group.number)
            dropped += src.rejected_records - before
        check_columns(src, batch, group.number)
        yield batch
    if rejected is not None and dropped:
        rejected[src.name] = rejected.get(src.name, 0) + dropped


def check_columns(src: Source, batch: pa.RecordBatch, index: int) -> None:
    """``Source.check_batch`` for a batch of some of the source's columns: their types, the
    dictionary indices, no null event time."""
    for f, column in zip(batch.schema, batch.columns):
        expected = src.arrow_schema.field(f.name).type
        if f.type != expected:
            raise BadInputError(f"{src.name}: batch {index}: column {f.name!r} has type {f.type}, "
                                f"expected {expected}")
        if pa.types.is_dictionary(f.type) and len(column):
            src._check_dictionary_indices(column, f.name, index)
    ts = src.timestamp
    if ts is not None and ts in batch.schema.names and batch.num_rows and batch.column(ts).null_count:
        import pyarrow.compute as pc
        row = pc.index(pc.is_null(batch.column(ts)), True).as_py()
        raise BadInputError(f"{src.name}: column {ts!r}: null event timestamp in batch {index}, row {row}")


def needed_columns(pipeline: Pipeline, source: Source) -> tuple[str, ...]:
    """The source columns the first pipeline reads (and passes through), plus the event time."""
    names = set(pipeline.used_columns())
    if isinstance(pipeline.terminal, ProjectTerminal):
        names |= {e.name for _, e in pipeline.terminal.outputs if isinstance(e, Column)}
    if source.timestamp is not None:
        names.add(source.timestamp)
    return tuple(n for n in source.arrow_schema.names if n in names)


def read_columns(physical, source: Source) -> tuple[str, ...]:
    """The columns of ``source`` that the query reads, in the source's order: what each pipeline
    reading it needs (``needed_columns``); where that pipeline is an identity feeding a join (the
    join's kernel reads the source's batches in place), what the join's side reads."""
    sides = {}
    for p in physical.pipelines:
        if isinstance(p.input, JoinInput) and isinstance(p.terminal, JoinTerminal):
            sides.update({pid: side for pid, side in zip((p.input.left, p.input.right), p.terminal.sides)
                          if pid is not None})
    names = {source.timestamp} if source.timestamp is not None else set()
    for p in physical.pipelines:
        if not (isinstance(p.input, SourceInput) and p.input.node.source is source):
            continue
        side = sides.get(p.id)
        if side is not None and p.terminal.is_identity(p.input_schema):
            exprs = [side.event_time, *(e for _f, e in side.keys), *side.filters]
            names.update(c for _out, c in side.columns)
            names.update(c for e in exprs for c in e.columns())
        else:
            names.update(needed_columns(p, source))
    return tuple(n for n in source.arrow_schema.names if n in names)


def _watermarks(maxima: list[int | None], source: Source) -> list[int | None]:
    """The source's watermark before each batch, from every batch's largest event time."""
    if source.timestamp is None:
        return [None] * len(maxima)
    out, w = [], abi.INT64_MIN
    bound = source.watermark.out_of_orderness_ms
    for m in maxima:
        out.append(w)
        if m is not None:
            w = max(w, m - bound - 1)
    return out


def _ranges(weights: list[int], tasks: int) -> list[tuple[int, int]]:
    """Cut ``len(weights)`` pieces into at most ``tasks`` contiguous, non-empty runs of similar
    total weight (rows)."""
    n = len(weights)
    if not n:
        return []
    tasks = max(1, min(tasks, n))
    cum = [0]
    for w in weights:
        cum.append(cum[-1] + max(int(w), 0))
    total = cum[-1]
    cuts, prev = [], 0
    for t in range(1, tasks):
        target = total * t / tasks
        i = next((j for j in range(1, n + 1) if cum[j] >= target), n) if total else round(n * t / tasks)
        i = max(i, prev + 1)
        i = min(i, n - (tasks - t))
        if i > prev:
            cuts.append(i)
            prev = i
    bounds = [0, *cuts, n]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def _parquet_maxima(source: ParquetSource, groups: list) -> list[int | None]:
    """Every row group's largest event time (from the footers' statistics, else read), for the
    ``groups`` that ``source.row_groups()`` just gave."""
    if source.timestamp is None:
        return [None] * len(groups)
    t = source.arrow_schema.field(source.timestamp).type
    dataset, maxima = source.dataset, []
    for g in groups:
        value = None
        md = dataset.metadata(g.file) if source.timestamp not in dataset.partition_names and g.rows else None
        if md is not None:
            leaf = [i for i in range(md.num_columns) if md.schema.column(i).path == source.timestamp]
            stats = md.row_group(g.index).column(leaf[0]).statistics if leaf else None
            if stats is not None and stats.has_min_max:
                value = _to_ms(stats.max, t)
        if value is None and g.rows:  # no statistics: read the column
            _, batch = next(source.read_row_groups([g], [source.timestamp]))
            value = batch_max_event_time(batch, source.timestamp)
        maxima.append(value)
    return maxima


def _to_ms(value, arrow_type: pa.DataType) -> int | None:
    """A statistics value of the event-time column in epoch ms (floored), or None if unusable."""
    try:
        if pa.types.is_timestamp(arrow_type):
            raw = pa.scalar(value, type=arrow_type).cast(pa.int64()).as_py()
            mul, div = TIMESTAMP_UNIT_DIVISOR[arrow_type.unit]
            return raw * mul // div
        return int(value)
    except (TypeError, ValueError, pa.ArrowException):
        return None


_TEMP_DIRS: list[str] = []


def _temp_dir() -> str:
    if not _TEMP_DIRS:
        _TEMP_DIRS.append(tempfile.mkdtemp(prefix="grizzly-spark-"))
        atexit.register(lambda: [shutil.rmtree(d, ignore_errors=True) for d in _TEMP_DIRS])
    return _TEMP_DIRS[0]


# The IPC file written of a list of batches, by its first batch (while that batch lives): the
# weak references to all of them, in order, the file's schema and its path.
_IPC_FILES: IdentityCache[tuple[list, pa.Schema, str]] = IdentityCache(lambda entry: _remove_quietly(entry[2]))


def _ipc_file(batches: list[pa.RecordBatch], schema: pa.Schema) -> str:
    """A temporary Arrow IPC file of ``batches``, written once for the same batch objects (a table
    passed to ``from_arrow`` again, or a source run again): Arrow data is immutable, and the file
    goes when the first batch does."""
    found = _IPC_FILES.get(batches[0])
    if found is not None:
        refs, written_as, path = found
        if written_as.equals(schema) and len(refs) == len(batches) and all(r() is b for r, b in zip(refs, batches)) \
                and os.path.exists(path):
            return path
    fd, path = tempfile.mkstemp(suffix=".arrow", prefix="arrow-", dir=_temp_dir())
    with os.fdopen(fd, "wb") as f, pa.PythonFile(f) as sink, pa.ipc.new_file(sink, schema) as writer:
        for b in batches:
            writer.write_batch(b)
    _IPC_FILES.put(batches[0], ([weakref.ref(b) for b in batches], schema, path))
    return path


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def plan_splits(source: Source, tasks: int, columns: tuple[str, ...] | None,
                executors_here: bool = True) -> list[Split]:
    """Cut ``source`` into at most ``tasks`` splits (file and Arrow sources). A large Arrow source
    goes to a temporary IPC file that the tasks map where ``executors_here`` (local mode, or a
    cluster on this machine's loopback: ``session.executors_here``), else in the task closures."""
    if isinstance(source, ParquetSource):
        groups = source.row_groups()
        rows, maxima = [g.rows for g in groups], _parquet_maxima(source, groups)
        marks = _watermarks(maxima, source)
        return [Split(source.name, "parquet", tuple(range(a, b)), marks[a] if rows else None, source.path, columns,
                      marks=tuple(marks[a:b]), reader=source, row_groups=tuple(groups[a:b]))
                for a, b in _ranges(rows, tasks)] or \
            [Split(source.name, "parquet", (), None, source.path, columns, reader=source)]
    if isinstance(source, ArrowSource):
        batches = list(source.raw_batches())
        if not isinstance(source.data, list):
            source.data = batches  # a one-shot iterator, read once here
        for i, b in enumerate(batches):
            source.check_batch(b, i)
        maxima = [batch_max_event_time(b, source.timestamp) if source.timestamp is not None else None
                  for b in batches]
        marks = _watermarks(maxima, source)
        ranges = _ranges([b.num_rows for b in batches], tasks)
        size = sum(b.nbytes for b in batches)
        if size <= INLINE_BYTES or not executors_here:
            return [Split(source.name, "inline", tuple(range(a, b)), marks[a], None, columns,
                          tuple(batches[a:b]), marks=tuple(marks[a:b])) for a, b in ranges] or \
                [Split(source.name, "inline", (), None, None, columns)]
        path = _ipc_file(batches, source.arrow_schema)
        return [Split(source.name, "ipc", tuple(range(a, b)), marks[a], path, columns, marks=tuple(marks[a:b]))
                for a, b in ranges]
    if isinstance(source, CsvSource):
        return [Split(source.name, "csv", (0,), abi.INT64_MIN if source.timestamp is not None else None,
                      source.path, columns, reader=source)]
    raise NotImplementedError(f"{source.name}: a {type(source).__name__} cannot be read by Spark tasks")


def batch_maxima(source: Source) -> list[int | None]:
    """Every batch's largest event time in epoch ms (None: no rows, or no event time) of a
    Parquet or Arrow source, in the source's batch order (read after ``plan_splits``, which makes
    a one-shot Arrow iterator a list)."""
    if isinstance(source, ParquetSource):
        return _parquet_maxima(source, source.row_groups())
    if isinstance(source, ArrowSource):
        ts = source.timestamp
        return [batch_max_event_time(b, ts) if ts is not None else None for b in source.raw_batches()]
    raise NotImplementedError(f"{source.name}: the batches of a {type(source).__name__} are not known in advance")


def pushdown_source(source: Source) -> bool:
    return isinstance(source, (ParquetSource, ArrowSource, CsvSource))
