"""Large hash tables ask for transparent huge pages (``runtime/hashtable.ll``, ``gz_advise_huge``):
an entry array of 16 MiB or more is advised MADV_HUGEPAGE when it is allocated, smaller ones are
left alone, and a window whose table grows past that size still equals the reference."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np
import pytest
from strategies import arrow_stream, assert_tables_equal, tumbling

import grizzly_py as gz
from grizzly_py import agg, reference
from grizzly_py.codegen.templates import runtime_declarations
from grizzly_py.jit import compile_ir

_P, _I64 = ctypes.c_void_p, ctypes.c_int64
HUGE_MIN_BYTES = 16 << 20
THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def _thp_advisable() -> bool:
    return sys.platform.startswith("linux") and THP.exists() and "[never]" not in THP.read_text()


def _vm_flags(address: int) -> list[str]:
    """The VmFlags of the mapping that holds ``address`` (/proc/self/smaps)."""
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= address < hi
        elif inside and head == "VmFlags:":
            return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


@pytest.fixture(scope="module")
def advise():
    module = compile_ir("""
define void @advise(ptr %p, i64 %bytes) {
  call void @gz_advise_huge(ptr %p, i64 %bytes)
  ret void
}
""" + runtime_declarations(), 3)
    return module, module.function("advise", None, _P, _I64)


@pytest.mark.skipif(not _thp_advisable(), reason="transparent huge pages: Linux with THP not 'never'")
def test_a_large_allocation_is_advised_huge_pages(advise):
    _, call = advise
    libc = ctypes.CDLL(None)
    libc.mmap.restype, libc.mmap.argtypes = _P, [_P, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, _I64]
    libc.munmap.argtypes = [_P, ctypes.c_size_t]
    size = 3 * HUGE_MIN_BYTES  # a mapping of its own, as a large calloc gets
    small, large = (libc.mmap(None, size, 3, 0x22, -1, 0) for _ in range(2))  # PROT_RW, MAP_PRIVATE|ANON
    try:
        call(small + 16, HUGE_MIN_BYTES - 4096)  # below the threshold: no advice
        call(large + 16, size - 16)  # an unaligned start (calloc's header): the whole pages inside
        assert "hg" not in _vm_flags(small)
        assert "hg" in _vm_flags(large + 4096)
    finally:
        libc.munmap(small, size)
        libc.munmap(large, size)


def test_a_window_past_the_threshold_equals_the_reference():
    """~140,000 keys in one window and five aggregates: the table grows to 512K entries of at
    least 64 bytes (32 MiB or more)."""
    rng = np.random.default_rng(3)
    n = 140_000
    data = {"ts": np.sort(rng.integers(0, 2_000, n)).astype(np.int64),
            "k": rng.integers(0, 1 << 40, n) // 3 * 3,
            "v": rng.integers(-100, 100, n)}

    def build(env):
        return (arrow_stream(env, data, sizes=[35_000] * 4).key_by("k").window(tumbling(10_000))
                .aggregate(n=agg.count(), s=agg.sum("v"), lo=agg.min("v"), hi=agg.max("v"), mean=agg.avg("v")))
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    env = gz.StreamEnvironment(adaptive=False)
    build(env).collect("out")
    result = env.execute()
    assert_tables_equal(result["out"], expected)
    assert result.metrics["records_in"] == n
