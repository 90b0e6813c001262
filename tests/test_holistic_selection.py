"""``agg.median`` and ``agg.top_k`` select (the runtime's ``gz_select_kth``: quickselect with
branch-free partitions) instead of sorting each group's values, and ``agg.mode`` and
``agg.count_distinct`` count through a scratch hash table (``gz_vec_mode``, ``gz_vec_distinct``:
on the stack for small groups, on the heap for large ones): on groups large enough for the
partitions and both tables to matter (up to thousands of values) and on the orders that break
naive pivots (ascending, descending, all equal, few distinct values, NaN and infinities), the
compiled results equal numpy's median, the k largest values of a full sort, the most frequent
value (the smallest of ties) and the number of distinct values."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

import grizzly_py as gz
from grizzly_py import Time, agg
from grizzly_py.windows import TumblingEventTimeWindows

ORDERS = ("random", "ascending", "descending", "equal", "few", "special")


def values(order: str, n: int, rng) -> np.ndarray:
    if order == "random":
        return rng.normal(size=n)
    if order == "ascending":
        return np.sort(rng.integers(-50, 50, n)).astype(np.float64)
    if order == "descending":
        return -np.sort(rng.integers(-50, 50, n)).astype(np.float64)
    if order == "equal":
        return np.full(n, 2.5)
    if order == "few":
        return rng.integers(0, 3, n).astype(np.float64)
    v = rng.normal(size=n)
    for special, share in ((math.nan, 0.02), (math.inf, 0.02), (-math.inf, 0.02), (-0.0, 0.05)):
        v[rng.random(n) < share] = special
    return v


@settings(max_examples=25, deadline=None)
@given(order=st.sampled_from(ORDERS), n=st.integers(1, 3000), keys=st.integers(1, 6), k=st.integers(1, 5),
       seed=st.integers(0, 2**32 - 1))
def test_median_and_top_k_equal_a_full_sort(order, n, keys, k, seed):
    rng = np.random.default_rng(seed)
    v = values(order, n, rng)
    key = rng.integers(0, keys, n)
    ints = np.nan_to_num(v * 10, nan=7, posinf=9, neginf=-9).astype(np.int64)
    table = pa.table({"ts": np.zeros(n, np.int64), "k": key, "v": v, "i": ints})
    out = (gz.StreamEnvironment().from_arrow(table, timestamp="ts").key_by("k")
           .window(TumblingEventTimeWindows.of(Time.seconds(1)))
           .aggregate(m=agg.median("v"), mi=agg.median("i"), top=agg.top_k("i", k))
           .execute_and_collect())
    assert out.num_rows == len(np.unique(key))
    for row in out.to_pylist():
        group = key == row["k"]
        expected = np.median(v[group])
        assert (math.isnan(expected) and math.isnan(row["m"])) or row["m"] == expected, (row, expected)
        assert row["mi"] == np.median(ints[group])
        assert row["top"] == sorted(ints[group].tolist(), reverse=True)[:k]


def _key(x: float) -> tuple:
    """A value as mode and count_distinct compare it: -0.0 is 0.0, every NaN one value, above
    +inf."""
    return (1, 0.0) if math.isnan(x) else (0, x + 0.0)


@settings(max_examples=25, deadline=None)
@given(order=st.sampled_from(ORDERS), n=st.integers(1, 3000), keys=st.integers(1, 6),
       seed=st.integers(0, 2**32 - 1))
def test_mode_and_count_distinct_equal_a_full_count(order, n, keys, seed):
    rng = np.random.default_rng(seed)
    v = values(order, n, rng)
    if order == "random":  # repeats, so that the mode is not only the smallest value
        v = np.round(v, 1)
    key = rng.integers(0, keys, n)
    ints = np.nan_to_num(v * 10, nan=7, posinf=9, neginf=-9).astype(np.int64)
    table = pa.table({"ts": np.zeros(n, np.int64), "k": key, "v": v, "i": ints})
    out = (gz.StreamEnvironment().from_arrow(table, timestamp="ts").key_by("k")
           .window(TumblingEventTimeWindows.of(Time.seconds(1)))
           .aggregate(m=agg.mode("v"), mi=agg.mode("i"), d=agg.count_distinct("v"), di=agg.count_distinct("i"))
           .execute_and_collect())
    assert out.num_rows == len(np.unique(key))
    for row in out.to_pylist():
        group = key == row["k"]
        floats = Counter(_key(x) for x in v[group].tolist())
        best = min(floats, key=lambda x: (-floats[x], x))
        assert (math.isnan(row["m"]) if best[0] else row["m"] == best[1]), (row, best)
        counts = Counter(ints[group].tolist())
        assert row["mi"] == min(counts, key=lambda x: (-counts[x], x))
        assert row["d"] == len(floats)
        assert row["di"] == len(counts)
