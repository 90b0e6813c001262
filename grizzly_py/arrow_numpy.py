"""Arrow arrays and scalars to and from numpy without importing pandas.

pyarrow imports pandas, when it is installed, the first time it converts between Arrow and
numpy or Python objects (``pa.array``, ``pa.scalar``, ``Array.to_numpy``, ``np.asarray`` of an
array, a Python value passed to a compute function): it asks whether the object is one of
pandas' types, and loading pandas takes 0.25-0.4 s of a new process's first job
(``docs/benchmarks.md``, "First run in a new process"). The engine's per-batch paths convert
through these functions instead, which build arrays from buffers and read buffers as numpy
views: a job over Arrow input leaves pandas unimported. What they do not cover (nulls in
``as_numpy``, nested and variable-width types, other dtypes) goes through pyarrow.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def as_numpy(array: pa.Array) -> np.ndarray:
    """``array.to_numpy(zero_copy_only=False)`` (or a chunked array's ``to_numpy()``): for
    integers, floats, timestamps or durations without nulls, a read-only view of the data
    buffer (chunks: their views concatenated); booleans without nulls unpacked from their
    bits; else pyarrow's conversion."""
    if isinstance(array, pa.ChunkedArray):
        if array.num_chunks == 1:
            array = array.chunk(0)
        elif (_fixed_width(array.type) is not None or pa.types.is_boolean(array.type)) \
                and array.null_count == 0 and array.num_chunks:
            return np.concatenate([as_numpy(chunk) for chunk in array.chunks])
        else:
            return array.to_numpy()
    if pa.types.is_boolean(array.type) and not array.null_count:
        bits = np.frombuffer(array.buffers()[1], dtype=np.uint8) if len(array) else np.empty(0, np.uint8)
        return np.unpackbits(bits, count=array.offset + len(array), bitorder="little")[array.offset:].view(bool)
    width = _fixed_width(array.type)
    if width is None or array.null_count:
        return array.to_numpy(zero_copy_only=False)
    if not len(array):
        return np.empty(0, dtype=width)
    return np.frombuffer(array.buffers()[1], dtype=width, count=len(array), offset=array.offset * width.itemsize)


def _fixed_width(type_: pa.DataType) -> np.dtype | None:
    """The numpy dtype ``Array.to_numpy`` gives ``type_``'s values, where it is a view of the
    data buffer (None: booleans, dates, nested and variable-width types)."""
    if pa.types.is_integer(type_) or pa.types.is_floating(type_):
        return np.dtype(type_.to_pandas_dtype())
    if pa.types.is_timestamp(type_):
        return np.dtype(f"datetime64[{type_.unit}]")
    if pa.types.is_duration(type_):
        return np.dtype(f"timedelta64[{type_.unit}]")
    return None


def from_numpy(values: np.ndarray, type_: pa.DataType | None = None, mask: np.ndarray | None = None) -> pa.Array:
    """``pa.array(values, type=type_, mask=mask)`` (``mask``: True where null) for a
    one-dimensional numpy array of booleans, integers or floats: its buffer wrapped (no copy
    when it is contiguous), then cast when ``type_`` differs, safely as ``pa.array`` converts
    (integer words of a temporal type of their width are its values); anything else through
    ``pa.array``."""
    values = np.asarray(values)
    if values.ndim != 1 or values.dtype.kind not in "biuf" or (mask is not None and len(mask) != len(values)):
        return pa.array(values, type=type_, mask=mask)
    validity, nulls = None, 0
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        nulls = int(np.count_nonzero(mask))
        if nulls:
            validity = pa.py_buffer(np.packbits(~mask, bitorder="little"))
    if values.dtype.kind == "b":
        native, data = pa.bool_(), pa.py_buffer(np.packbits(values, bitorder="little"))
    else:
        native, data = pa.from_numpy_dtype(values.dtype), pa.py_buffer(np.ascontiguousarray(values))
    if type_ is not None and type_ != native and values.dtype.kind in "iu" \
            and _same_words(type_, values.dtype):
        native = type_
    array = pa.Array.from_buffers(native, len(values), [validity, data], null_count=nulls)
    return array if type_ is None or type_ == native else array.cast(type_)


def _same_words(type_: pa.DataType, dtype: np.dtype) -> bool:
    """Whether ``type_``'s values are stored as signed integers of ``dtype``'s width (temporal types)."""
    return dtype.kind == "i" and pa.types.is_temporal(type_) and type_.bit_width == dtype.itemsize * 8


def string_scalar(value: str, type_: pa.DataType = pa.string()) -> pa.Scalar:
    """``pa.scalar(value, type_)`` for a str and a string or binary ``type_`` (another type is
    reached by a cast, as ``pa.scalar`` would convert)."""
    data = value.encode()
    offsets = np.array([0, len(data)], dtype=np.int32)
    one = pa.StringArray.from_buffers(1, pa.py_buffer(offsets), pa.py_buffer(data))
    if type_ != pa.string():
        one = one.cast(type_)
    return one[0]
