"""Sources: where records come from, as Arrow RecordBatches, with their event-time column.

A source knows its schema when it is defined (so a query that does not fit is rejected before any
data is read) and yields batches in order. The batch boundaries it yields are the watermark
boundaries of semantics.md: one per RecordBatch given to ``from_arrow``, per Parquet row group,
per CSV block. Each batch is checked against the declared schema and for null event timestamps,
and a problem is reported naming the source, the column and the row.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from .types import Schema, SchemaError, schema_from_arrow
from .watermark import WatermarkStrategy


class BadInputError(ValueError):
    """Input data that cannot be processed; the message names the source, column and row."""


_source_counter = itertools.count()

# multiplier that turns one unit of an Arrow timestamp into milliseconds, as (numerator, divisor)
TIMESTAMP_UNIT_DIVISOR = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}


@dataclass(eq=False)
class Source:
    """Base of all sources."""

    name: str
    arrow_schema: pa.Schema
    timestamp: str | None
    watermark: WatermarkStrategy = field(default_factory=WatermarkStrategy.for_monotonous_timestamps)

    def __post_init__(self):
        self.schema: Schema = schema_from_arrow(self.arrow_schema, source=self.name)
        if self.timestamp is not None:
            ts_field = self.schema.field(self.timestamp) if self.timestamp in self.schema else None
            if ts_field is None:
                raise SchemaError(f"{self.name}: timestamp column {self.timestamp!r} does not exist; "
                                  f"available columns: {', '.join(self.schema.names)}")
            t = self.arrow_schema.field(self.timestamp).type
            if not (pa.types.is_integer(t) or pa.types.is_timestamp(t)):
                raise SchemaError(f"{self.name}: timestamp column {self.timestamp!r} has type {t}; "
                                  "expected int64 epoch milliseconds or an Arrow timestamp")

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

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The checked batches of this source, in order."""
        for index, batch in enumerate(self.raw_batches()):
            self.check_batch(batch, index)
            yield batch

    def check_batch(self, batch: pa.RecordBatch, index: int) -> None:
        if batch.schema != self.arrow_schema:
            if batch.schema.names != self.arrow_schema.names:
                raise BadInputError(f"{self.name}: batch {index} has columns {batch.schema.names}, "
                                    f"expected {self.arrow_schema.names}")
            for f, expected in zip(batch.schema, self.arrow_schema):
                if f.type != expected.type:
                    raise BadInputError(f"{self.name}: batch {index}: column {f.name!r} has type {f.type}, "
                                        f"expected {expected.type}")
        if self.timestamp is not None and batch.num_rows:
            ts = batch.column(self.timestamp)
            if ts.null_count:
                row = pc.index(pc.is_null(ts), True).as_py()
                raise BadInputError(f"{self.name}: column {self.timestamp!r}: null event timestamp "
                                    f"in batch {index}, row {row}")


@dataclass(eq=False)
class ArrowSource(Source):
    data: object = None  # list of RecordBatches, or a one-shot iterator
    consumed: bool = False

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
    path: str = ""

    def raw_batches(self):
        import pyarrow.parquet as pq
        f = pq.ParquetFile(self.path)
        for i in range(f.num_row_groups):  # one batch (and one watermark step) per row group
            table = f.read_row_group(i).combine_chunks()
            batches = table.to_batches()
            yield batches[0] if batches else pa.RecordBatch.from_pylist([], schema=table.schema)


@dataclass(eq=False)
class CsvSource(Source):
    path: str = ""
    column_types: dict | None = None
    block_size: int = 1 << 22

    def raw_batches(self):
        import pyarrow.csv as pcsv
        try:
            reader = pcsv.open_csv(self.path, read_options=pcsv.ReadOptions(block_size=self.block_size),
                                   convert_options=pcsv.ConvertOptions(
                                       column_types=self.column_types,
                                       include_columns=self.arrow_schema.names))
            for batch in reader:
                yield batch
        except pa.ArrowInvalid as e:
            raise BadInputError(f"{self.name}: {e}") from e


def arrow_batches(data, *, name: str) -> tuple[pa.Schema, object]:
    """Normalize what ``from_arrow`` accepts to (schema, iterable of RecordBatches)."""
    if isinstance(data, pa.Table):
        batches = data.to_batches()
        return data.schema, batches
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
            raise TypeError(f"{name}: expected pyarrow.RecordBatch items, got {type(first).__name__}")
        return first.schema, itertools.chain([first], it)
    raise TypeError(f"{name}: from_arrow takes a pyarrow.Table, RecordBatch, or a list/iterator of "
                    f"RecordBatches, got {type(data).__name__}")


def csv_schema(path: str, schema) -> tuple[pa.Schema, dict | None]:
    """The Arrow schema of a CSV file: the given one (pa.Schema or {name: type}), or inferred."""
    import pyarrow.csv as pcsv
    if schema is None:
        reader = pcsv.open_csv(path)
        return reader.schema, None
    if isinstance(schema, dict):
        schema = pa.schema([(k, v if isinstance(v, pa.DataType) else pa.type_for_alias(v)) for k, v in schema.items()])
    if not isinstance(schema, pa.Schema):
        raise TypeError(f"from_csv: schema must be a pyarrow.Schema or a dict of column types, got {schema!r}")
    return schema, {f.name: f.type for f in schema}


def next_source_name(kind: str) -> str:
    return f"{kind}#{next(_source_counter)}"
