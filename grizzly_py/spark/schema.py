"""Arrow types on the way into and out of Spark.

Spark has no dictionary, large-string or unsigned types and keeps timestamps in microseconds, so
batches a task hands to Spark are cast to ``spark_arrow_schema`` of their schema, and batches a
task receives from Spark are cast back to the Arrow types the compiled pipeline expects
(``conform``). Timestamps keep their time zone: one with a zone is Spark's ``TimestampType``, one
without is ``TimestampNTZType``.
"""

from __future__ import annotations

import pyarrow as pa

from ..types import to_arrow_type


def spark_arrow_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_dictionary(t):
        return spark_arrow_type(t.value_type)
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", t.tz)
    if pa.types.is_uint8(t) or pa.types.is_uint16(t):
        return pa.int32()
    if pa.types.is_uint32(t) or pa.types.is_uint64(t):
        return pa.int64()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(spark_arrow_type(t.value_type))
    return t


def spark_arrow_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, spark_arrow_type(f.type), f.nullable) for f in schema])


def pipeline_arrow_schema(pipeline) -> pa.Schema:
    """The Arrow schema of a compiled pipeline's output."""
    return pa.schema([pa.field(f.name, f.arrow_type if f.arrow_type is not None else to_arrow_type(f.dtype))
                      for f in pipeline.output_schema])


def spark_column(name: str):
    """The Spark column ``name``, quoted (a name may hold dots or backticks)."""
    from pyspark.sql import functions as F
    return F.col("`" + name.replace("`", "``") + "`")


def hashed_key(name: str, dtype):
    """Key column ``name`` (grizzly type ``dtype``) as Spark should hash it to put equal keys in
    one partition or key group: as the compiled code groups them, -0.0 as 0.0 and every NaN one
    value; integers as longs and floats as doubles, so keys of one class compare equal across
    widths (a join's or a union's inputs may differ in width)."""
    from pyspark.sql import functions as F
    c = spark_column(name)
    if dtype.is_float:
        c = c.cast("double")
        return F.when(F.isnan(c), F.lit(float("nan"))).when(c == 0, F.lit(0.0)).otherwise(c)
    if dtype.is_integer:
        return c.cast("long")
    return c


def spark_struct(schema: pa.Schema):
    """The Spark ``StructType`` of Arrow ``schema`` (after ``spark_arrow_schema``)."""
    from pyspark.sql.pandas.types import from_arrow_schema
    return from_arrow_schema(spark_arrow_schema(schema), prefer_timestamp_ntz=True)


def conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with the columns of ``schema`` (by name, in its order) cast to its types."""
    if batch.schema == schema:
        return batch
    columns = []
    for f in schema:
        c = batch.column(f.name)
        if c.type != f.type:
            c = c.cast(f.type)
        columns.append(c)
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def to_spark_batches(table_or_batch, schema: pa.Schema):
    """Batches of ``table_or_batch`` (pa.Table or RecordBatch) cast for Spark (``spark_arrow_schema``)."""
    target = spark_arrow_schema(schema)
    batches = table_or_batch.to_batches() if isinstance(table_or_batch, pa.Table) else [table_or_batch]
    for b in batches:
        if b.num_rows:
            yield conform(b, target)


def spark_schema_arrow(df) -> pa.Schema:
    """The Arrow schema in which Spark hands ``df``'s rows to Python (``mapInArrow``)."""
    from pyspark.sql.pandas.types import to_arrow_schema
    tz = df.sparkSession.conf.get("spark.sql.session.timeZone")
    return to_arrow_schema(df.schema, timezone=tz)
