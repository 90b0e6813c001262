"""Hand-written C with OpenMP (``ysb_omp.c``): YSB on several threads, hash or dense variant.

Compiled at bench time with ``gcc -O3 -march=native -fopenmp``; each batch is split into one
slice per thread, each thread runs ``ysb.c``'s single-threaded code on its own state, and the
per-thread partial counts are summed at the end (timed). The peer for grizzly-py's parallel
engine (issue 4's scaling targets).
"""

from __future__ import annotations

import ctypes
import tempfile
import time
from pathlib import Path

import numpy as np

from .base import window_result
from .ysb_c import CFLAGS, CPeer, _TypeCodes, _load, _values_address, compile_shared

SOURCE = Path(__file__).with_name("ysb_omp.c")
_i64, _ptr = ctypes.c_int64, ctypes.c_void_p


class OmpPeer(CPeer):
    def __init__(self, variant: str = "hash", threads: int = 2) -> None:
        super().__init__(variant)
        self.threads = threads
        self.name = f"c_omp{threads}" if variant == "hash" else f"c_dense_omp{threads}"
        self.description = f"hand-written C + OpenMP, {variant}, {threads} threads"

    def setup(self, data) -> None:
        super().setup(data)  # compiles ysb.c (unused) and checks the columns
        self._tmp_omp = tempfile.TemporaryDirectory(prefix="grizzly-bench-omp-")
        start = time.perf_counter()
        lib_path, cmd = compile_shared(SOURCE, Path(self._tmp_omp.name), extra_flags=["-fopenmp"])
        self.info["compile_s"] = time.perf_counter() - start
        self.info["compiler"] = " ".join(cmd[:1] + CFLAGS + ["-fopenmp"])
        self.info["threads"] = self.threads
        lib = self.lib = _load(lib_path)
        lib.ysb_omp_process.argtypes = [_ptr, ctypes.c_int, ctypes.c_int, _ptr, _ptr, ctypes.c_int32, _ptr, _i64]
        lib.ysb_omp_process.restype = _i64
        lib.ysb_omp_finish.argtypes = [_ptr, ctypes.c_int, ctypes.c_int]
        lib.ysb_omp_finish.restype = _i64
        lib.ysb_omp_merge.argtypes = [_ptr, ctypes.c_int, _ptr]
        lib.ysb_omp_merge.restype = _i64
        self._new = getattr(lib, f"ysb_{self.variant}_new")
        self._free = getattr(lib, f"ysb_{self.variant}_free")

    def run(self):
        lib, T, variant = self.lib, self.threads, int(self.variant == "dense")
        states = [self._new(self.data.window_ms, self._new_arg) for _ in range(T)]
        merged = lib.ysb_hash_new(self.data.window_ms, self._new_arg)
        arr = (ctypes.c_void_p * T)(*states)
        try:
            if not all(states) or not merged:
                raise MemoryError("ysb state allocation failed")
            i_ts, i_type, i_key = self._cols
            type_codes = _TypeCodes(self.data.view_value)
            for batch in self.data.table.to_batches():
                ts, types, keys = batch.column(i_ts), batch.column(i_type), batch.column(i_key)
                codes, view = type_codes(types)
                if lib.ysb_omp_process(arr, T, variant, _values_address(ts, 8), _values_address(codes, 4), view,
                                       _values_address(keys, 8), len(batch)) < 0:
                    raise MemoryError("ysb output allocation failed")
            if lib.ysb_omp_finish(arr, T, variant) < 0:
                raise MemoryError("ysb output allocation failed")
            n_out = lib.ysb_omp_merge(arr, T, merged)
            if n_out < 0:
                raise MemoryError("ysb merge allocation failed")
            out = np.empty((3, n_out), dtype=np.int64)
            lib.ysb_copy_out(merged, out[0].ctypes.data, out[1].ctypes.data, out[2].ctypes.data)
        finally:
            for s in states:
                self._free(s)
            lib.ysb_hash_free(merged)
        return window_result(out[0], out[1], out[2])

    def close(self) -> None:
        super().close()
        if getattr(self, "_tmp_omp", None) is not None:
            self._tmp_omp.cleanup()
            self._tmp_omp = None
