"""Hand-written C peers of YSB (``ysb.c``): hash-table and dense-array variants.

``ysb.c`` is compiled at bench time with ``gcc -O3 -march=native -shared -fPIC`` into a
temporary directory and called through ctypes once per Arrow RecordBatch, on the batch's own
buffers (no copies), with persistent state between calls, the way a streaming engine runs.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from .base import Peer, PeerUnavailable, window_result

SOURCE = Path(__file__).with_name("ysb.c")
CFLAGS = ["-O3", "-march=native", "-shared", "-fPIC"]

_i64 = ctypes.c_int64
_ptr = ctypes.c_void_p


def compile_shared(source: Path, out_dir: Path, cc: str | None = None,
                   extra_flags: list[str] | None = None) -> tuple[Path, list[str]]:
    """Compile ``source`` to a shared library in ``out_dir``; return (path, command line)."""
    cc = cc or os.environ.get("CC", "gcc")
    if shutil.which(cc) is None:
        raise PeerUnavailable(f"C compiler {cc!r} not found")
    lib = out_dir / (source.stem + ".so")
    cmd = [cc, *CFLAGS, *(extra_flags or []), "-o", str(lib), str(source)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise PeerUnavailable(f"{' '.join(cmd)} failed: {proc.stderr.strip()[:2000]}")
    return lib, cmd


def _load(lib_path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(lib_path))
    for variant in ("hash", "dense"):
        getattr(lib, f"ysb_{variant}_new").argtypes = [_i64, _i64]
        getattr(lib, f"ysb_{variant}_new").restype = _ptr
        getattr(lib, f"ysb_{variant}_process").argtypes = [_ptr, _ptr, _ptr, ctypes.c_int32, _ptr, _i64]
        getattr(lib, f"ysb_{variant}_process").restype = _i64
        getattr(lib, f"ysb_{variant}_finish").argtypes = [_ptr]
        getattr(lib, f"ysb_{variant}_finish").restype = _i64
        getattr(lib, f"ysb_{variant}_free").argtypes = [_ptr]
        getattr(lib, f"ysb_{variant}_free").restype = None
    lib.ysb_n_out.argtypes = [_ptr]
    lib.ysb_n_out.restype = _i64
    lib.ysb_copy_out.argtypes = [_ptr, _ptr, _ptr, _ptr]
    lib.ysb_copy_out.restype = None
    lib.ysb_stats.argtypes = [_ptr, _ptr]
    lib.ysb_stats.restype = None
    return lib


def _values_address(array: pa.Array, itemsize: int) -> int:
    """Address of element 0 of a primitive, null-free Arrow array's value buffer."""
    if array.null_count:
        raise ValueError("the C peer expects columns without nulls")
    return array.buffers()[1].address + array.offset * itemsize


class _TypeCodes:
    """Per batch: the int32 codes of event_type and the code meaning 'view' (-1: absent).

    The dictionary lookup is cached while consecutive batches share one dictionary."""

    def __init__(self, view: str | int) -> None:
        self.view = view
        self._dictionary: pa.Array | None = None
        self._code = -1

    def __call__(self, array: pa.Array) -> tuple[pa.Array, int]:
        if pa.types.is_dictionary(array.type):
            if array.type.index_type != pa.int32():
                raise ValueError(f"event_type indices must be int32, got {array.type.index_type}")
            dictionary = array.dictionary
            if self._dictionary is None or not dictionary.equals(self._dictionary):
                matches = np.flatnonzero(dictionary.to_numpy(zero_copy_only=False) == self.view)
                self._dictionary, self._code = dictionary, int(matches[0]) if matches.size else -1
            return array.indices, self._code
        if array.type != pa.int32():
            raise ValueError(f"event_type must be dictionary<int32, string> or int32, got {array.type}")
        return array, int(self.view)


class CPeer(Peer):
    """YSB in C; ``variant`` is "hash" (generic keys) or "dense" (keys 0..n_campaigns-1)."""

    def __init__(self, variant: str = "hash") -> None:
        super().__init__()
        if variant not in ("hash", "dense"):
            raise ValueError(variant)
        self.variant = variant
        self.name = "c" if variant == "hash" else "c_dense"
        self.description = (
            "hand-written C, open-addressing hash on (window, key), 1 thread"
            if variant == "hash"
            else "hand-written C, dense per-window count array, 1 thread"
        )
        self._tmp: tempfile.TemporaryDirectory | None = None

    def setup(self, data) -> None:
        self.data = data
        self._tmp = tempfile.TemporaryDirectory(prefix="grizzly-bench-c-")
        start = time.perf_counter()
        lib_path, cmd = compile_shared(SOURCE, Path(self._tmp.name))
        self.info["compile_s"] = time.perf_counter() - start
        self.info["compiler"] = " ".join(cmd[:1] + CFLAGS)
        self.info["threads"] = 1
        self.lib = _load(lib_path)
        self._new = getattr(self.lib, f"ysb_{self.variant}_new")
        self._process = getattr(self.lib, f"ysb_{self.variant}_process")
        self._finish = getattr(self.lib, f"ysb_{self.variant}_finish")
        self._free = getattr(self.lib, f"ysb_{self.variant}_free")
        schema = data.table.schema
        if "campaign_id" not in schema.names:  # not YSB-shaped data (bench/suite.py's selection)
            return
        for name in ("event_time", "campaign_id"):
            if schema.field(name).type != pa.int64():
                raise ValueError(f"the C peer needs {name} as int64, got {schema.field(name).type}")
        self._cols = [schema.get_field_index(c) for c in ("event_time", "event_type", "campaign_id")]
        # hash: expected open groups; dense: number of keys
        self._new_arg = data.n_campaigns

    def run(self) -> pa.Table:
        state = self._new(self.data.window_ms, self._new_arg)
        if not state:
            raise MemoryError("ysb state allocation failed")
        try:
            i_ts, i_type, i_key = self._cols
            process, type_codes = self._process, _TypeCodes(self.data.view_value)
            for batch in self.data.table.to_batches():
                ts, types, keys = batch.column(i_ts), batch.column(i_type), batch.column(i_key)
                codes, view = type_codes(types)
                if process(state, _values_address(ts, 8), _values_address(codes, 4), view,
                           _values_address(keys, 8), len(batch)) < 0:
                    raise MemoryError("ysb output allocation failed")
            n_out = self._finish(state)
            if n_out < 0:
                raise MemoryError("ysb output allocation failed")
            out = np.empty((3, n_out), dtype=np.int64)
            self.lib.ysb_copy_out(state, out[0].ctypes.data, out[1].ctypes.data, out[2].ctypes.data)
            stats = np.zeros(5, dtype=np.int64)
            self.lib.ysb_stats(state, stats.ctypes.data)
        finally:
            self._free(state)
        rows_in, _, late, bad_keys, _ = (int(v) for v in stats)
        if bad_keys:
            raise ValueError(f"{bad_keys} views have campaign_id outside 0..{self.data.n_campaigns - 1}")
        if rows_in != self.data.n_rows:
            raise AssertionError(f"C saw {rows_in} rows of {self.data.n_rows}")
        self.info["late_dropped"] = late
        return window_result(out[0], out[1], out[2])

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
