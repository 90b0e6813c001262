"""OVER frames over one sorted run of rows: where each row's frame starts and ends, and the
aggregates over it, vectorized with numpy and, for min and max, a compiled loop
(``over_kernel.py`` gives the run: rows sorted by key, event time, arrival).

A frame is ``[lo, hi]`` (positions in the run, both inclusive, never across a key). The
aggregates come from structures built once per run, so a frame costs O(1) (amortized) whatever
its length, O(log n) where block sums are needed:
- counts and exact int64 sums: prefix sums; a sum is split into its high and low 32 bits, whose
  prefix sums cannot overflow, so a frame's true sum is known exactly and one outside int64 is
  reported (``AggregateOverflowError``), as every sum in grizzly-py is;
- float sums: compensated prefix sums (the cumulative sum and the exact error of each of its
  additions, TwoSum), a frame's sum their difference, within 1e-9 of the compensated sum in
  arrival order that windows compute (``aggregates/functions/sum.py``); infinities and NaN
  counted apart. A frame whose sum is too small next to the prefixes for that, and every frame
  where the cumulative sum overflows, is added from its own values: a table of compensated
  block sums (a sum and its error for every block of 2^k rows), at most log2(length) blocks;
- min and max: a compiled loop (``gz_over_min_positions``) keeps a monotone deque of positions
  over the run, O(1) amortized per row whatever the frame's length; floats ignore NaN unless
  every value is NaN, as ``minnum``/``maxnum`` do.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..jit import compile_ir
from ..value_order import ordered_float_bits

INT64_MIN, INT64_MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max
_LOW32 = np.int64(0xFFFFFFFF)


def group_starts(keys: list[pa.Array]) -> np.ndarray:
    """Where a new key starts in a run sorted by ``keys`` (bool per row): keys group as SQL's
    GROUP BY does (a null is its own group, ``-0.0`` is ``0.0``, every NaN is one value)."""
    n = len(keys[0]) if keys else 0
    new = np.zeros(n, dtype=bool)
    if n:
        new[0] = True
    for array in keys:
        if n < 2:
            break
        if pa.types.is_dictionary(array.type):
            array = array.cast(array.type.value_type)
        prev, cur = array.slice(0, n - 1), array.slice(1)
        same = pc.fill_null(pc.equal(cur, prev), False)
        same = pc.or_(same, pc.and_(cur.is_null(), prev.is_null()))
        if pa.types.is_floating(array.type):
            same = pc.or_(same, pc.fill_null(pc.and_(pc.is_nan(cur), pc.is_nan(prev)), False))
        new[1:] |= ~same.to_numpy(zero_copy_only=False)
    return new


def rows_frames(new: np.ndarray, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """``ROWS BETWEEN rows PRECEDING AND CURRENT ROW``: each row and the ``rows`` before it."""
    index = np.arange(len(new), dtype=np.int64)
    start = np.maximum.accumulate(np.where(new, index, 0))
    return np.maximum(start, index - rows), index


def range_frames(new: np.ndarray, ts: np.ndarray, range_ms: int) -> tuple[np.ndarray, np.ndarray]:
    """``RANGE BETWEEN range_ms PRECEDING AND CURRENT ROW``: the rows of the key with
    ``ts - range_ms <= t <= ts`` (every row with the row's own timestamp included)."""
    group = np.cumsum(new, dtype=np.int64) - 1
    times = np.unique(ts)
    width = np.int64(len(times) + 1)
    position = group * width + np.searchsorted(times, ts)  # non-decreasing: sorted by (key, ts)
    earliest = np.maximum(ts, INT64_MIN + range_ms) - range_ms
    lo = np.searchsorted(position, group * width + np.searchsorted(times, earliest, "left"), "left")
    hi = np.searchsorted(position, position, "right") - 1
    return lo.astype(np.int64), hi.astype(np.int64)


def _over_prefix(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    prefix = np.zeros(len(values) + 1, dtype=values.dtype)
    np.cumsum(values, out=prefix[1:])
    return prefix[hi + 1] - prefix[lo]


def counts(valid: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The valid rows of each frame."""
    return _over_prefix(valid.astype(np.int64), lo, hi)


def int_sums(values: np.ndarray, valid: np.ndarray, lo: np.ndarray, hi: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """(each frame's int64 sum of the valid values, where the true sum does not fit in int64)."""
    x = np.where(valid, values.astype(np.int64), 0)
    high = _over_prefix(x >> 32, lo, hi)             # |sum| <= n * 2^31
    low = _over_prefix(x & _LOW32, lo, hi)           # 0 <= sum < n * 2^32
    top = high + (low >> 32)                         # true sum = top * 2^32 + (low & 0xFFFFFFFF)
    overflow = (top < -(1 << 31)) | (top > (1 << 31) - 1)
    top = np.where(overflow, 0, top)
    return (top << 32) | (low & _LOW32), overflow


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a + b`` and the exact rounding error of that addition (Knuth's TwoSum)."""
    with np.errstate(invalid="ignore", over="ignore"):
        s = a + b
        bp = s - a
        return s, (a - (s - bp)) + (b - bp)


def float_sums(values: np.ndarray, valid: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Each frame's compensated float sum of the valid values (0.0 where none is valid): from
    compensated prefix sums where they stay finite, else from compensated block sums."""
    finite = valid & np.isfinite(values)
    x = np.where(finite, values, 0.0)
    with np.errstate(over="ignore"):
        if not np.isfinite(np.abs(x).sum()):  # partial sums may overflow: add block by block
            return _block_sums(values, valid, lo, hi)
    prefix = np.zeros(len(x) + 1)
    np.cumsum(x, out=prefix[1:])
    # prefix + error is the exact prefix sum to about eps^2 of the sum of magnitudes: TwoSum of
    # each step of the cumulative sum, whose operands are known afterwards
    _, step = _two_sum(prefix[:-1], x)
    error = np.zeros(len(x) + 1)
    np.cumsum(step, out=error[1:])
    head, cut = _two_sum(prefix[hi + 1], -prefix[lo])
    total = head + (cut + (error[hi + 1] - error[lo]))
    # what the prefixes leave out is below eps^2 x (rows) x (their magnitude); a frame whose sum
    # is not well above that (values far smaller than the ones before them, or cancelling to
    # zero) is added from its own values instead
    magnitude = np.zeros(len(x) + 1)
    np.cumsum(np.abs(x), out=magnitude[1:])
    doubtful = np.abs(total) <= _DOUBT * len(x) * magnitude[hi + 1]
    if doubtful.any():
        total[doubtful] = _block_sums(x, finite, lo[doubtful], hi[doubtful])
    # infinities and NaN of the frame decide it as adding them would
    nan = _count_in(valid & np.isnan(values), lo, hi) > 0
    up = _count_in(valid & (values == np.inf), lo, hi) > 0
    down = _count_in(valid & (values == -np.inf), lo, hi) > 0
    total = np.where(up, np.inf, np.where(down, -np.inf, total))
    return np.where(nan | (up & down), np.nan, total)


_DOUBT = 1e-22  # 1e9 x eps^2 (eps = 2^-52): the prefix sums' error stays 1e-9 of the frame's sum


def _count_in(flags: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return _over_prefix(flags.astype(np.int64), lo, hi) if flags.any() else np.zeros(len(lo), dtype=np.int64)


def _block_sums(values: np.ndarray, valid: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Each frame's compensated float sum, block by block (at most log2(length) blocks)."""
    n = len(values)
    sums = [np.where(valid, values, 0.0)]
    errors = [np.zeros(n)]
    length = hi - lo + 1
    longest = int(length.max()) if len(length) else 0
    k = 1
    while (1 << k) <= longest:  # level k: the blocks of 2^k rows starting at each position
        half = 1 << (k - 1)
        a, b = sums[-1][:n - half], sums[-1][half:]
        s, e = _two_sum(a, b)
        with np.errstate(invalid="ignore"):
            errors.append(np.concatenate([errors[-1][:n - half] + errors[-1][half:] + e, np.zeros(half)]))
        sums.append(np.concatenate([s, np.zeros(half)]))
        k += 1
    total, error, at = np.zeros(len(lo)), np.zeros(len(lo)), lo.copy()
    with np.errstate(invalid="ignore"):
        for level in range(len(sums) - 1, -1, -1):
            take = (length >> level) & 1 == 1
            idx = at[take]
            s, e = _two_sum(total[take], sums[level][idx])
            total[take] = s
            error[take] += errors[level][idx] + e
            at[take] += 1 << level
        finite = np.isfinite(total) & np.isfinite(error)
        return np.where(finite, total + error, total)


# For each frame r (0 <= r < %rows): %out[r] = the position p in [lo[r], hi[r]] whose key is the
# smallest (the latest such position on ties). lo and hi never decrease from one frame to the
# next, so one monotone deque of positions (%deque: room for every position) serves every frame:
# a position enters once, at the back, removing the positions behind it whose keys are not
# smaller; it leaves at the front once a frame starts after it.
_EXTREMES_IR = """
define i64 @gz_over_min_positions(ptr noalias %keys, ptr noalias %lo, ptr noalias %hi, i64 %rows,
                                  ptr noalias %deque, ptr noalias %out) {
entry:
  %r.a = alloca i64
  %next.a = alloca i64
  %head.a = alloca i64
  %tail.a = alloca i64
  store i64 0, ptr %r.a
  store i64 0, ptr %next.a
  store i64 0, ptr %head.a
  store i64 0, ptr %tail.a
  br label %row
row:
  %r = load i64, ptr %r.a
  %more = icmp slt i64 %r, %rows
  br i1 %more, label %enter, label %done
enter:                                ; positions up to hi[r] enter the deque
  %hi.p = getelementptr inbounds i64, ptr %hi, i64 %r
  %h = load i64, ptr %hi.p
  %next = load i64, ptr %next.a
  %due = icmp sle i64 %next, %h
  br i1 %due, label %back, label %front
back:                                 ; drop the positions at the back whose keys are not smaller
  %tail = load i64, ptr %tail.a
  %head = load i64, ptr %head.a
  %any = icmp sgt i64 %tail, %head
  br i1 %any, label %compare, label %append
compare:
  %last.i = sub i64 %tail, 1
  %last.p = getelementptr inbounds i64, ptr %deque, i64 %last.i
  %last = load i64, ptr %last.p
  %lk.p = getelementptr inbounds i64, ptr %keys, i64 %last
  %lk = load i64, ptr %lk.p
  %nk.p = getelementptr inbounds i64, ptr %keys, i64 %next
  %nk = load i64, ptr %nk.p
  %worse = icmp sge i64 %lk, %nk
  br i1 %worse, label %drop.back, label %append
drop.back:
  store i64 %last.i, ptr %tail.a
  br label %back
append:
  %t = load i64, ptr %tail.a
  %slot = getelementptr inbounds i64, ptr %deque, i64 %t
  store i64 %next, ptr %slot
  %t.1 = add i64 %t, 1
  store i64 %t.1, ptr %tail.a
  %next.1 = add i64 %next, 1
  store i64 %next.1, ptr %next.a
  br label %enter
front:                                ; drop the positions before lo[r] at the front
  %lo.p = getelementptr inbounds i64, ptr %lo, i64 %r
  %l = load i64, ptr %lo.p
  %f = load i64, ptr %head.a
  %first.p = getelementptr inbounds i64, ptr %deque, i64 %f
  %first = load i64, ptr %first.p
  %stale = icmp slt i64 %first, %l
  br i1 %stale, label %drop.front, label %emit
drop.front:
  %f.1 = add i64 %f, 1
  store i64 %f.1, ptr %head.a
  br label %front
emit:
  %out.p = getelementptr inbounds i64, ptr %out, i64 %r
  store i64 %first, ptr %out.p
  %r.1 = add i64 %r, 1
  store i64 %r.1, ptr %r.a
  br label %row
done:
  ret i64 0
}
"""


@functools.lru_cache(maxsize=1)
def _min_positions():
    """(module, gz_over_min_positions); the module is cached by ``jit`` and kept alive here."""
    module = compile_ir(_EXTREMES_IR)
    p, i64 = ctypes.c_void_p, ctypes.c_int64
    return module, module.function("gz_over_min_positions", i64, p, p, p, i64, p, p)


_NAN_KEY = INT64_MAX - 1   # after every number (+inf's key is 0x7FF0000000000000)
_NULL_KEY = INT64_MAX      # after everything: a frame's extreme is null only where it has no value


def extremes(values: np.ndarray, valid: np.ndarray, lo: np.ndarray, hi: np.ndarray, largest: bool
             ) -> np.ndarray:
    """Each frame's min (or max, ``largest``) of the valid values, found by a compiled loop over a
    monotone deque (frames ``[lo, hi]`` that never move backwards: sorted runs give them); where
    no value is valid the result is meaningless (the caller nulls it). Floats order as numbers,
    NaN after them: it is the result only where every value is NaN, as ``minnum``/``maxnum``."""
    floats = values.dtype.kind == "f"
    if floats:  # order-preserving int64 keys of the floats (negative ones: all bits but the sign flipped)
        keys = ordered_float_bits(values.astype(np.float64).view(np.int64))
    else:
        keys = values.astype(np.int64)
    if largest:
        keys = ~keys  # reverses the order exactly
    if floats:
        keys = np.where(np.isnan(values), _NAN_KEY, keys)
    keys = np.ascontiguousarray(np.where(valid, keys, _NULL_KEY), dtype=np.int64)
    lo, hi = np.ascontiguousarray(lo, dtype=np.int64), np.ascontiguousarray(hi, dtype=np.int64)
    if len(lo) and not (lo.min() >= 0 and hi.max() < len(keys) and (lo <= hi).all()
                        and (np.diff(lo) >= 0).all() and (np.diff(hi) >= 0).all()):
        raise RuntimeError("OVER frames out of order (an engine bug)")  # the loop relies on it
    positions = np.empty(len(lo), dtype=np.int64)
    if len(lo):
        deque = np.empty(len(keys), dtype=np.int64)
        _min_positions()[1](keys.ctypes.data, lo.ctypes.data, hi.ctypes.data, len(lo), deque.ctypes.data,
                            positions.ctypes.data)
    found = keys[positions]
    if not floats:  # (the null key is ~INT64_MIN: where it is found with a value, the max is INT64_MIN)
        return ~found if largest else found
    if largest:
        found = np.where(found >= _NAN_KEY, found, ~found)
    out = ordered_float_bits(found).view(np.float64)
    return np.where(found == _NAN_KEY, np.nan, out)


__all__ = ["counts", "extremes", "float_sums", "group_starts", "int_sums", "range_frames", "rows_frames"]
