"""The bandwidth ceiling of YSB (``ysb_stream.c``): read the three columns, compute nothing.

Compiled at bench time with ``gcc -O3 -march=native -fopenmp`` and called once per Arrow
RecordBatch on the batch's own buffers, as the other C peers are. It returns no query result
(``computes_query = False``): the harness times it and leaves it out of the cross-check, and the
report's ratio against it is the share of the memory bandwidth a peer reaches.
"""

from __future__ import annotations

import ctypes
import tempfile
import time
from pathlib import Path

from .base import Peer
from .ysb_c import CFLAGS, _TypeCodes, _values_address, compile_shared

SOURCE = Path(__file__).with_name("ysb_stream.c")
_i64, _ptr = ctypes.c_int64, ctypes.c_void_p


class StreamCeilingPeer(Peer):
    computes_query = False

    def __init__(self, threads: int = 1) -> None:
        super().__init__()
        self.threads = threads
        self.name = "c_stream" if threads == 1 else f"c_stream_omp{threads}"
        self.description = (f"C loop that only streams event_time, event_type and campaign_id "
                            f"(the bandwidth ceiling, no query), {threads} thread(s)")
        self._tmp: tempfile.TemporaryDirectory | None = None

    def setup(self, data) -> None:
        self.data = data
        self._tmp = tempfile.TemporaryDirectory(prefix="grizzly-bench-stream-")
        start = time.perf_counter()
        lib_path, cmd = compile_shared(SOURCE, Path(self._tmp.name), extra_flags=["-fopenmp"])
        self.info.update(compile_s=time.perf_counter() - start, compiler=" ".join(cmd[:1] + CFLAGS + ["-fopenmp"]),
                         threads=self.threads)
        self.lib = ctypes.CDLL(str(lib_path))
        self.lib.ysb_stream_read.argtypes = [_ptr, _ptr, _ptr, _i64, ctypes.c_int]
        self.lib.ysb_stream_read.restype = _i64
        names = data.table.schema.names
        self._cols = [names.index(c) for c in ("event_time", "event_type", "campaign_id")]

    def run(self) -> None:
        i_ts, i_type, i_key = self._cols
        type_codes, read, checksum = _TypeCodes(self.data.view_value), self.lib.ysb_stream_read, 0
        for batch in self.data.table.to_batches():
            codes, _ = type_codes(batch.column(i_type))
            checksum ^= read(_values_address(batch.column(i_ts), 8), _values_address(codes, 4),
                             _values_address(batch.column(i_key), 8), len(batch), self.threads)
        self.info["checksum"] = checksum
        return None

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
