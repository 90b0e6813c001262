"""The runtime's literal substring search (``gz_str_find``, ``gz_str_count`` in
``runtime/strfuncs.ll``): 32 positions per step through a first-byte/last-byte vector filter, the
positions after the last whole vector as one masked vector, short haystacks byte by byte; a
one-byte needle counted with a vector compare and popcount.

The runtime functions are called directly on haystacks around the vector width (matches and
near-misses at every position: chunk edges 31/32/33, the masked tail) and compared with
``bytes.find``/``bytes.count``; a child process checks that no search reads past the haystack
(each ends at a page that cannot be read); ``str.contains``/``str.count_matches`` with literal
patterns run compiled over long strings (non-ASCII, nulls, sliced, ``large_string`` and
dictionary columns) against the reference evaluator.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grizzly_py as gz
from grizzly_py import col, jit, reference

from strategies import assert_tables_equal

DRIVER = """
declare i64 @gz_str_find(ptr, i64, ptr, i64, i64)
declare i64 @gz_str_count(ptr, i64, ptr, i64)
define i64 @t_find(ptr %h, i64 %n, ptr %nd, i64 %m, i64 %from) {
  %r = call i64 @gz_str_find(ptr %h, i64 %n, ptr %nd, i64 %m, i64 %from)
  ret i64 %r
}
define i64 @t_count(ptr %h, i64 %n, ptr %nd, i64 %m) {
  %r = call i64 @gz_str_count(ptr %h, i64 %n, ptr %nd, i64 %m)
  ret i64 %r
}
"""
_P, _I = ctypes.c_void_p, ctypes.c_int64


@pytest.fixture(scope="module")
def search():
    module = jit.compile_ir(DRIVER)
    return module.function("t_find", _I, _P, _I, _P, _I, _I), module.function("t_count", _I, _P, _I, _P, _I)


def _call_find(find, haystack: bytes, needle: bytes, start: int) -> int:
    h, nd = ctypes.create_string_buffer(haystack, len(haystack) or 1), ctypes.create_string_buffer(needle, len(needle) or 1)
    return find(ctypes.addressof(h), len(haystack), ctypes.addressof(nd), len(needle), start)


def _call_count(count, haystack: bytes, needle: bytes) -> int:
    h, nd = ctypes.create_string_buffer(haystack, len(haystack) or 1), ctypes.create_string_buffer(needle, len(needle) or 1)
    return count(ctypes.addressof(h), len(haystack), ctypes.addressof(nd), len(needle))


haystacks = st.binary(max_size=160).map(lambda b: bytes(b"ab\xc3\xa9c"[x % 5] for x in b))  # few bytes: many candidates


@settings(max_examples=400)
@given(haystacks, st.integers(0, 40), st.integers(0, 40), st.integers(0, 170), st.booleans())
def test_find_and_count_are_bytes_find_and_count(search, haystack, at, length, start, inside):
    find, count = search
    needle = haystack[at:at + length] if inside else (haystack[at:at + length] + b"c")[:length] or b"a"
    expected = haystack.find(needle, start) if start <= len(haystack) else -1
    assert _call_find(find, haystack, needle, start) == expected
    if needle:  # (an empty needle counts code points: tests/test_strings.py)
        assert _call_count(count, haystack, needle) == haystack.count(needle)


@pytest.mark.parametrize("length", [1, 2, 3, 12, 31, 32, 33])
def test_a_match_at_every_position_around_the_vector_width(search, length):
    find, count = search
    needle = (b"xyz" * 12)[:length - 1] + b"!" if length > 1 else b"!"
    for n in (length, 31, 32, 33, 63, 64, 65, 97):
        for pos in range(0, n - length + 1):
            haystack = b"." * pos + needle + b"." * (n - pos - length)
            for start in {0, pos, pos + 1, max(pos - 1, 0)}:
                assert _call_find(find, haystack, needle, start) == haystack.find(needle, start), (n, pos, start)
            near = haystack[:pos] + needle[:-1] + b"?" + haystack[pos + length:]  # first byte and length agree
            assert _call_find(find, near, needle, 0) == near.find(needle)
            assert _call_count(count, haystack, needle) == 1


def test_no_search_reads_past_the_haystack():
    # each haystack ends at a page that cannot be read: a read past its end kills the child
    child = textwrap.dedent(f"""
        import ctypes, mmap
        from grizzly_py import jit
        module = jit.compile_ir({DRIVER!r})
        P, I = ctypes.c_void_p, ctypes.c_int64
        find, count = module.function("t_find", I, P, I, P, I, I), module.function("t_count", I, P, I, P, I)
        libc = ctypes.CDLL(None)
        page = mmap.PAGESIZE
        area = mmap.mmap(-1, 2 * page, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        base = ctypes.addressof(ctypes.c_char.from_buffer(area))
        assert libc.mprotect(ctypes.c_void_p(base + page), page, 0) == 0  # the second page: no access
        for n in range(0, 100):
            for needle in (b"a", b"ab", b"zq", b"a" * 9 + b"b"):
                end = base + page
                ctypes.memmove(end - n, b"a" * n, n)
                nd = ctypes.create_string_buffer(needle)
                assert find(end - n, n, ctypes.addressof(nd), len(needle), 0) == (b"a" * n).find(needle)
                assert count(end - n, n, ctypes.addressof(nd), len(needle)) == (b"a" * n).count(needle)
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


LONG = ["https://www.nexmark.com/a/b/c/item.htm?query=1&channel_id=1234", "channel_id=1" * 5,
        "é" * 40 + "channel_id=1", "日本" * 20 + "c", "", "c" * 70, "x" * 31 + "channel_id=1", "abc" * 33]


def _tables() -> list[tuple[str, pa.Table]]:
    values = LONG * 7 + [None] * 3
    ts = list(range(len(values)))
    plain = pa.table({"ts": ts, "s": pa.array(values, pa.string())})
    offset = pa.array(["zz"] * 10 + values, pa.string()).slice(10)  # (an array whose data starts at an offset)
    sliced = pa.table({"ts": ts, "s": offset})
    return [("plain", plain), ("sliced", sliced),
            ("large_string", plain.set_column(1, "s", plain["s"].cast(pa.large_string()))),
            ("dictionary", plain.set_column(1, "s", plain["s"].dictionary_encode()))]


@pytest.mark.parametrize("name, table", _tables(), ids=[name for name, _ in _tables()])
@pytest.mark.parametrize("pattern", ["channel_id=1", "c", "é", "日本日", "", "channel_id=12345678901234567890x"])
def test_literal_contains_and_count_over_long_strings(name, table, pattern):
    def query(env):
        s = env.from_arrow(table, timestamp="ts")
        return s.filter(col("s").str.contains(pattern, literal=True)).select(
            "ts", "s", n=col("s").str.count_matches(pattern, literal=True))
    expected, _ = reference.run(query(gz.StreamEnvironment()).node)
    env = gz.StreamEnvironment()
    query(env).collect("out")
    assert_tables_equal(env.execute()["out"], expected)
    if pattern in ("channel_id=1", "c"):
        assert expected.num_rows > 0
