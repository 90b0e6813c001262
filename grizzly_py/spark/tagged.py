"""Several DataFrame sources as one DataFrame, and back: the rows of a query over several Spark
DataFrames that one group of tasks reads together (the whole strategy's one task; a streaming
query over several streams, micro-batch by micro-batch).

``tagged_dataframe`` unions them: column ``TAG`` says which source a row is of, source ``i``'s
column ``c`` is ``__gz<i>_<c>``, null in the other sources' rows (the sources' schemas may differ
and share names). ``untagged`` splits a task's Arrow batches of it into each source's rows, with
the source's own column names and Arrow types.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

TAG = "__gz_source"


def tagged_name(index: int, column: str) -> str:
    return f"__gz{index}_{column}"


def tagged_dataframe(dataframes: list, extra: list | None = None):
    """One DataFrame carrying the rows of the ``SparkSource``s ``dataframes`` (module docstring).
    ``extra``: per source, a Spark column over its own columns that its rows carry last (the same
    alias for every source: a stream's key group)."""
    from pyspark.sql import functions as F
    parts = []
    for i, src in enumerate(dataframes):
        columns = [F.lit(i).alias(TAG)]
        for j, other in enumerate(dataframes):
            for field in other.df.schema.fields:
                value = F.col(f"`{field.name}`") if i == j else F.lit(None).cast(field.dataType)
                columns.append(value.alias(tagged_name(j, field.name)))
        if extra is not None:
            columns.append(extra[i])
        parts.append(src.df.select(*columns))
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    return out


def untagged(batches: list[pa.RecordBatch], schemas: dict[str, pa.Schema]) -> dict[str, list[pa.RecordBatch]]:
    """Each source's rows of the tagged DataFrame's ``batches``, as the source's one batch (an
    empty list where it has none); ``schemas``: each source's schema, in the tagging's order."""
    if not batches:
        return {name: [] for name in schemas}
    table = pa.Table.from_batches(batches)
    tags = table.column(TAG)
    feeds = {}
    for i, (name, schema) in enumerate(schemas.items()):
        rows = table.filter(pc.equal(tags, i))
        columns = [rows.column(tagged_name(i, f.name)).cast(f.type) for f in schema]
        one = pa.Table.from_arrays(columns, schema=schema).combine_chunks().to_batches()
        feeds[name] = [one[0]] if one and one[0].num_rows else []
    return feeds
