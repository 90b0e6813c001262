"""``from_spark`` DataFrames that are plain Parquet or ORC file scans, read by the tasks with pyarrow.

A DataFrame such as ``spark.read.parquet(dir).filter(...).select(...)`` need not pass its rows
through the JVM: when its optimized plan is a ``LogicalRelation`` over a ``HadoopFsRelation`` of
a format in ``_FORMATS`` (one root path, no reader options) under ``Filter``s and ``Project``s
of plain columns, the tasks read the relation's files themselves (``datasets.py``, the same
splits as ``from_parquet``; an ORC file's stripes as its row groups), apply the filters as a
``pyarrow.compute`` expression and select the DataFrame's columns, cast to the Arrow types Spark
would hand over. The rows are the ones Spark's scan would give; the stream semantics stay those
of a DataFrame (one batch, no watermarks).

CSV and JSON scans stay on ``mapInArrow``: their values are Spark's parse of text (its
``PERMISSIVE`` mode turns a malformed field into a null, quoted and unquoted empty fields and
escapes follow univocity's rules, types may be inferred from a sample), which pyarrow's readers
do not reproduce value for value.

Only filters whose semantics are exactly Spark's convert (``_condition``): ``AND``/``OR``/``NOT``,
``IS [NOT] NULL``, comparisons and ``IN`` of an integer, string (binary collation) or boolean
column with literals of the column's own type (SQL's three-valued logic is pyarrow's Kleene
logic). Anything else -- a float comparison (Spark orders NaN above every number), a cast, a
function, a join, an aggregate, another file format -- keeps the DataFrame on ``mapInArrow``;
``scan_of`` says why, and the job's notes repeat it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

import pyarrow as pa

from ..datasets import BadDatasetError, resolve
from ..sources import ParquetSource

_COMPARISONS = {"EqualTo": "==", "LessThan": "<", "LessThanOrEqual": "<=", "GreaterThan": ">",
                "GreaterThanOrEqual": ">="}
_EXACT_TYPES = ("tinyint", "smallint", "int", "bigint", "string", "boolean")
_FORMATS = {"ParquetFileFormat": "parquet", "OrcFileFormat": "orc"}  # Spark's file format -> datasets'


class NotAScan(Exception):
    """The DataFrame is not a file scan the tasks can read exactly (the message says why)."""


@dataclass(eq=False)
class FileScan:
    """What the tasks read instead of the DataFrame's rows."""

    source: ParquetSource          # the relation's files (named as the DataFrame source)
    read: tuple[str, ...]          # the file columns to read (output and filter columns)
    columns: tuple[str, ...]       # the DataFrame's columns, in its order
    condition: object              # a pyarrow.compute.Expression, or None
    schema: pa.Schema              # the Arrow types Spark hands to Python, of ``columns``

    def batches(self, raw: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """The DataFrame's rows of the raw batches ``raw`` (of ``read``): filtered, selected,
        cast to Spark's Arrow types."""
        for batch in raw:
            if self.condition is not None:
                batch = pa.Table.from_batches([batch]).filter(self.condition).combine_chunks()
                batch = batch.to_batches()[0] if batch.num_rows else None
                if batch is None:
                    continue
            yield pa.RecordBatch.from_arrays([batch.column(n).cast(f.type) if batch.column(n).type != f.type
                                              else batch.column(n) for n, f in zip(self.columns, self.schema)],
                                             schema=self.schema)


def scan_of(df, name: str, arrow_schema: pa.Schema, columns) -> FileScan:
    """The file scan of batch DataFrame ``df`` (source ``name``, Arrow schema ``arrow_schema``
    as Spark hands it over), reading only ``columns`` of it (None: all); ``NotAScan`` otherwise."""
    from py4j.protocol import Py4JError
    try:
        return _scan_of(df, name, arrow_schema, columns)
    except Py4JError as e:  # a plan of a shape not foreseen here: Spark reads it
        raise NotAScan(f"its plan could not be read ({type(e).__name__})") from e


def _scan_of(df, name: str, arrow_schema: pa.Schema, columns) -> FileScan:
    plan = df._jdf.queryExecution().optimizedPlan()
    conditions = []
    while _kind(plan) in ("Project", "Filter"):
        if _kind(plan) == "Project":
            for e in _seq(plan.projectList()):
                if _kind(e) != "AttributeReference":
                    raise NotAScan(f"the DataFrame computes a column ({e.toString()})")
        else:
            conditions.append(plan.condition())
        plan = plan.child()
    if _kind(plan) != "LogicalRelation":
        raise NotAScan(f"its plan is a {_kind(plan)}, not a file scan")
    relation = plan.relation()
    if _kind(relation) != "HadoopFsRelation":
        raise NotAScan(f"it reads a {_kind(relation)}, not files")
    file_format = _FORMATS.get(_kind(relation.fileFormat()))
    if file_format is None:
        raise NotAScan(f"it reads {_kind(relation.fileFormat())} files (only Parquet and ORC are read in the "
                       "tasks: Spark's parse of text formats has no exact pyarrow equivalent)")
    roots = [p.toString() for p in _seq(relation.location().rootPaths())]
    options = {k for k in _seq(relation.options().keys().toSeq())} - {"path", "paths"}
    if len(roots) != 1 or options:
        raise NotAScan(f"it reads {len(roots)} root paths with options {sorted(options)} (one path, no options taken)")
    try:
        dataset = resolve(_local_or_uri(roots[0]), file_format)
    except (BadDatasetError, FileNotFoundError, ValueError) as e:
        raise NotAScan(f"pyarrow cannot read its files: {e}") from e
    kept = list(columns) if columns is not None else list(arrow_schema.names)
    types = {a.name(): a.dataType().simpleString() for a in _seq(plan.output())}
    expression = None
    for c in conditions:
        e = _condition(c, types)
        expression = e if expression is None else expression & e
    needed = set(kept) | _columns_of(conditions)
    missing = needed - set(dataset.schema.names)
    if missing:
        raise NotAScan(f"columns {sorted(missing)} are not the files' own names")
    schema = pa.schema([arrow_schema.field(n) for n in kept])
    for n, f in zip(kept, schema):
        if not _casts_exactly(dataset.schema.field(n).type, f.type):
            raise NotAScan(f"column {n!r} is {dataset.schema.field(n).type} in the files and {f.type} in Spark")
    read = tuple(n for n in dataset.schema.names if n in needed)
    source = ParquetSource(name, dataset.schema, None, path=dataset.path, dataset=dataset)
    return FileScan(source, read, tuple(kept), expression, schema)


def _condition(e, types: dict):
    """A Catalyst boolean expression as a pyarrow expression with its exact semantics."""
    import pyarrow.compute as pc
    kind = _kind(e)
    if kind in ("And", "Or"):
        left, right = _condition(e.left(), types), _condition(e.right(), types)
        return left & right if kind == "And" else left | right
    if kind == "Not":
        return ~_condition(e.child(), types)
    if kind in ("IsNull", "IsNotNull"):
        field = pc.field(_column(e.child(), types, any_type=True))
        return field.is_null() if kind == "IsNull" else field.is_valid()
    if kind in _COMPARISONS:
        left, right, op = e.left(), e.right(), _COMPARISONS[kind]
        if _kind(left) == "Literal" and _kind(right) == "AttributeReference":
            left, right, op = right, left, {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
        field, value = pc.field(_column(left, types)), _literal(right, types[left.name()])
        return {"==": field == value, "<": field < value, "<=": field <= value, ">": field > value,
                ">=": field >= value}[op]
    if kind == "In":
        values = [_literal(v, types[e.value().name()]) for v in _seq(e.list())] if \
            _kind(e.value()) == "AttributeReference" else None
        return pc.field(_column(e.value(), types)).isin(values)
    raise NotAScan(f"its filter {e.toString()} has no exact pyarrow equivalent")


def _column(e, types: dict, any_type: bool = False) -> str:
    if _kind(e) != "AttributeReference":
        raise NotAScan(f"its filter reads {e.toString()}, not a column")
    if not any_type and types.get(e.name()) not in _EXACT_TYPES:
        raise NotAScan(f"its filter compares column {e.name()!r} of type {types.get(e.name())} (Spark's "
                       "semantics differ for floats, timestamps, decimals and collations)")
    return e.name()


def _literal(e, spark_type: str):
    if _kind(e) != "Literal" or e.dataType().simpleString() != spark_type or e.value() is None:
        raise NotAScan(f"its filter compares with {e.toString()}, not a non-null {spark_type} literal")
    value = e.value()
    return value if isinstance(value, (bool, int)) else str(value.toString())


def _columns_of(conditions) -> set[str]:
    names, stack = set(), list(conditions)
    while stack:
        e = stack.pop()
        if _kind(e) == "AttributeReference":
            names.add(e.name())
        stack.extend(_seq(e.children()))
    return names


def _casts_exactly(file_type: pa.DataType, spark_type: pa.DataType) -> bool:
    """Spark's Arrow value of every file value is the file value cast (no rounding, no overflow)."""
    if file_type == spark_type:
        return True
    if pa.types.is_string(spark_type):
        return pa.types.is_large_string(file_type) or (
            pa.types.is_dictionary(file_type) and pa.types.is_string(file_type.value_type))
    if pa.types.is_timestamp(spark_type) and pa.types.is_timestamp(file_type):
        return file_type.unit in ("s", "ms", "us") and (file_type.tz is None) == (spark_type.tz is None)
    return False


def _local_or_uri(root: str) -> str:
    """A Hadoop path (``file:/tmp/x``, ``s3a://bucket/x``) as ``datasets.resolve`` takes it."""
    parsed = urlparse(root)
    return unquote(parsed.path) if parsed.scheme in ("", "file") else root


def _kind(java_object) -> str:
    return java_object.getClass().getSimpleName()


def _seq(scala_seq) -> list:
    return [scala_seq.apply(i) for i in range(scala_seq.size())]
