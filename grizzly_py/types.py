"""Data types of grizzly-py and their mapping to Arrow and to LLVM IR.

grizzly-py has a small closed set of column types. Every Arrow column a source offers is mapped
to one of them when the source is defined (so a schema problem is reported before any data is
processed), and every type knows how it is held in generated code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa


class SchemaError(ValueError):
    """A query does not fit the schema of its input: unknown column, wrong type, name clash."""


@dataclass(frozen=True)
class DataType:
    """One grizzly-py column type.

    ``name`` is the user-facing name (accepted by ``Expr.cast``); ``ir`` the LLVM type of a value
    in a register; ``width`` the bytes of one value in an Arrow buffer (0 for strings).
    """

    name: str
    ir: str
    width: int
    is_integer: bool = False
    is_float: bool = False
    is_string: bool = False
    is_bool: bool = False
    is_timestamp: bool = False
    element: DataType | None = None  # a list type's element type (``list_of``); None otherwise

    @property
    def is_numeric(self) -> bool:
        return self.is_integer or self.is_float

    @property
    def is_list(self) -> bool:
        return self.element is not None

    def __repr__(self) -> str:
        return self.name


INT32 = DataType("int32", "i32", 4, is_integer=True)
INT64 = DataType("int64", "i64", 8, is_integer=True)
FLOAT64 = DataType("float64", "double", 8, is_float=True)
BOOL = DataType("bool", "i1", 0, is_bool=True)  # Arrow packs booleans as bits
STRING = DataType("string", "ptr", 0, is_string=True)
TIMESTAMP = DataType("timestamp", "i64", 8, is_timestamp=True)  # epoch milliseconds

ALL_TYPES = {t.name: t for t in (INT32, INT64, FLOAT64, BOOL, STRING, TIMESTAMP)}
CAST_TARGETS = ("int32", "int64", "float64", "bool")


def list_of(element: DataType) -> DataType:
    """The type of a list of ``element`` values: only aggregates produce it (``agg.top_k``);
    it is an output type, never an expression operand or a key."""
    return DataType(f"list<{element.name}>", "ptr", 0, element=element)


def type_named(name: str) -> DataType:
    try:
        return ALL_TYPES[name]
    except KeyError:
        raise SchemaError(f"unknown type {name!r}; known types: {', '.join(ALL_TYPES)}") from None


@dataclass(frozen=True)
class Field:
    """A named, typed column. ``arrow_type`` keeps the physical Arrow type of source columns
    (e.g. dictionary<int32, string>, timestamp[us, tz]) so generated code reads the right buffers."""

    name: str
    dtype: DataType
    arrow_type: pa.DataType | None = field(default=None, compare=False)

    @property
    def is_dictionary(self) -> bool:
        return self.arrow_type is not None and pa.types.is_dictionary(self.arrow_type)


@dataclass(frozen=True)
class Schema:
    """An ordered set of uniquely named fields."""

    fields: tuple[Field, ...]

    def __post_init__(self):
        seen = set()
        for f in self.fields:
            if f.name in seen:
                raise SchemaError(f"duplicate column name {f.name!r}")
            seen.add(f.name)

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def __contains__(self, name: str) -> bool:
        return any(f.name == name for f in self.fields)

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise SchemaError(f"unknown column {name!r}; available columns: {', '.join(self.names) or '(none)'}")

    def __iter__(self):
        return iter(self.fields)

    def __len__(self):
        return len(self.fields)

    def __str__(self) -> str:
        return "(" + ", ".join(f"{f.name}: {f.dtype.name}" for f in self.fields) + ")"


def from_arrow_type(arrow_type: pa.DataType, *, column: str, source: str, lists: bool = False) -> DataType:
    """Map an Arrow type to a grizzly-py type, or reject it naming the source and column.
    ``lists``: a list of numbers is accepted too (the engine's own top_k results read back)."""
    t = arrow_type
    if pa.types.is_dictionary(t):
        if pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type):
            return STRING
        raise SchemaError(f"{source}: column {column!r}: dictionary of {t.value_type} is not supported (only strings)")
    if pa.types.is_int64(t) or pa.types.is_uint32(t) or pa.types.is_int16(t) or pa.types.is_int8(t) \
            or pa.types.is_uint16(t) or pa.types.is_uint8(t):
        # narrower integers are widened to int64 by the source adapter
        return INT64
    if pa.types.is_int32(t):
        return INT32
    if pa.types.is_float64(t) or pa.types.is_float32(t):
        return FLOAT64
    if pa.types.is_boolean(t):
        return BOOL
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return STRING
    if pa.types.is_timestamp(t):
        return TIMESTAMP
    if lists and pa.types.is_list(t) and (pa.types.is_integer(t.value_type) or pa.types.is_floating(t.value_type)):
        return list_of(from_arrow_type(t.value_type, column=column, source=source))
    raise SchemaError(f"{source}: column {column!r} has Arrow type {t}, which grizzly-py does not support "
                      f"(supported: integers, float32/64, bool, string, dictionary<string>, timestamp)")


def schema_from_arrow(arrow_schema: pa.Schema, *, source: str, lists: bool = False) -> Schema:
    return Schema(tuple(Field(f.name, from_arrow_type(f.type, column=f.name, source=source, lists=lists), f.type)
                        for f in arrow_schema))


def to_arrow_type(dtype: DataType) -> pa.DataType:
    if dtype.element is not None:
        return pa.list_(to_arrow_type(dtype.element))
    return {
        "int32": pa.int32(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_(),
        "string": pa.string(), "timestamp": pa.int64(),
    }[dtype.name]


def common_numeric(a: DataType, b: DataType) -> DataType:
    """The type two numeric operands are promoted to: float64 if either is, else int64."""
    if a.is_float or b.is_float:
        return FLOAT64
    return INT64
