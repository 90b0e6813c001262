"""``agg.median`` and ``agg.top_k`` select (the runtime's ``gz_select_kth``, Hoare's FIND)
instead of sorting each group's values: on groups large enough for the selection's partitions
to matter (up to thousands of values) and on the orders that break naive pivots (ascending,
descending, all equal, few distinct values, NaN and infinities), the compiled results equal
numpy's median and the k largest values of a full sort."""

from __future__ import annotations

import math

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
