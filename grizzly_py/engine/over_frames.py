"""OVER frames over one sorted run of rows, vectorized with numpy: where each row's frame starts
and ends, and the aggregates over it (``over_kernel.py`` gives the run: rows sorted by key, event
time, arrival).

A frame is ``[lo, hi]`` (positions in the run, both inclusive, never across a key). The
aggregates come from structures built once per run, so a frame costs O(1) or O(log n) whatever
its length:
- counts and exact int64 sums: prefix sums; a sum is split into its high and low 32 bits, whose
  prefix sums cannot overflow, so a frame's true sum is known exactly and one outside int64 is
  reported (``AggregateOverflowError``), as every sum in grizzly-py is;
- float sums: compensated prefix sums (the cumulative sum and the exact error of each of its
  additions, TwoSum), a frame's sum their difference, as accurate as the compensated sum in
  arrival order that windows compute (``aggregates/functions/sum.py``); infinities and NaN
  counted apart. Where the cumulative sum overflows, a table of compensated block sums (a sum and
  its error for every block of 2^k rows) gives each frame from at most log2(length) blocks;
- min and max: a sparse table (the extreme of every block of 2^k rows), two overlapping blocks
  per frame; floats ignore NaN unless every value is NaN, as ``minnum``/``maxnum`` do.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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
    # infinities and NaN of the frame decide it as adding them would
    nan = _count_in(valid & np.isnan(values), lo, hi) > 0
    up = _count_in(valid & (values == np.inf), lo, hi) > 0
    down = _count_in(valid & (values == -np.inf), lo, hi) > 0
    total = np.where(up, np.inf, np.where(down, -np.inf, total))
    return np.where(nan | (up & down), np.nan, total)


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


def extremes(values: np.ndarray, valid: np.ndarray, lo: np.ndarray, hi: np.ndarray, largest: bool
             ) -> np.ndarray:
    """Each frame's min (or max, ``largest``) of the valid values: a sparse table; where no value
    is valid the result is meaningless (the caller nulls it)."""
    n = len(values)
    if values.dtype.kind == "f":
        pick = np.fmax if largest else np.fmin
        level = np.where(valid, values, np.nan)
    else:
        pick = np.maximum if largest else np.minimum
        level = np.where(valid, values.astype(np.int64), INT64_MIN if largest else INT64_MAX)
    length = hi - lo + 1
    longest = int(length.max()) if len(length) else 0
    table = [level]
    k = 1
    while (1 << k) <= longest:
        half = 1 << (k - 1)
        prev = table[-1]
        table.append(np.concatenate([pick(prev[:n - half], prev[half:]), prev[n - half:]]))
        k += 1
    if not len(lo):
        return level[:0]
    k = np.floor(np.log2(np.maximum(length, 1))).astype(np.int64)
    while True:  # log2 of a float may round up at a power of two
        over = (1 << k) > length
        if not over.any():
            break
        k[over] -= 1
    out = np.empty(len(lo), dtype=level.dtype)
    for lvl in np.unique(k):
        rows = k == lvl
        t = table[lvl]
        out[rows] = pick(t[lo[rows]], t[hi[rows] - (1 << lvl) + 1])
    return out


__all__ = ["counts", "extremes", "float_sums", "group_starts", "int_sums", "range_frames", "rows_frames"]
