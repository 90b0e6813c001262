"""The one-word sort of a fired window's rows (``engine/packed_sort.py``): where it packs, its
indices equal Arrow's stable ascending sort; where it cannot, it says so (None) and Arrow sorts.
A window with thousands of hash-placed keys is ordered through it and equals the reference, and
so do the differential tests' window queries with the row threshold forced down to one row."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import arrow_stream, assert_tables_equal, query_cases, tumbling
from test_differential import check_against_reference

import grizzly_py as gz
from grizzly_py import agg, reference
from grizzly_py.engine import kernels, packed_sort
from grizzly_py.engine.packed_sort import PACKED_MIN_ROWS, packed_sort_indices

TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32(), pa.uint64(),
         pa.timestamp("ms"), pa.timestamp("ns")]


def arrow_sort(columns: list) -> pa.Array:
    table = pa.table({f"c{i}": c for i, c in enumerate(columns)})
    return pc.sort_indices(table, sort_keys=[(f"c{i}", "ascending") for i in range(len(columns))])


def _integers(column) -> np.ndarray:
    values = column.to_numpy()
    return values.view(np.int64) if pa.types.is_timestamp(column.type) else values


def _column(rng: np.random.Generator, t: pa.DataType, n: int, span: int, chunks: int):
    if pa.types.is_timestamp(t):
        info = np.iinfo(np.int64)
    else:
        info = np.iinfo(t.to_pandas_dtype())
    lo = int(rng.integers(int(info.min), int(info.max) - min(span, int(info.max) - int(info.min)), endpoint=True,
                          dtype=np.uint64 if info.min == 0 else np.int64))
    hi = lo + min(span, int(info.max) - lo)
    values = rng.integers(lo, hi, n, endpoint=True, dtype=np.uint64 if info.min == 0 else np.int64)
    if pa.types.is_timestamp(t):
        array = pa.array(values, pa.int64()).cast(t)
    else:
        array = pa.array(values.astype(t.to_pandas_dtype()), t)
    cut = sorted(rng.integers(0, n, chunks - 1).tolist())
    return pa.chunked_array([array.slice(a, b - a) for a, b in zip([0, *cut], [*cut, n])], type=t)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(PACKED_MIN_ROWS, 3 * PACKED_MIN_ROWS),
       types=st.lists(st.sampled_from(TYPES), min_size=1, max_size=3),
       spans=st.lists(st.sampled_from([0, 1, 7, 1000, 1 << 20, 1 << 40, 1 << 63]), min_size=3, max_size=3),
       chunks=st.integers(1, 3))
def test_packed_indices_equal_arrows_stable_sort(seed, n, types, spans, chunks):
    rng = np.random.default_rng(seed)
    columns = [_column(rng, t, n, s, chunks) for t, s in zip(types, spans)]
    got = packed_sort_indices(columns)
    width = sum((int(v.max()) - int(v.min())).bit_length() for v in map(_integers, columns))
    if width + (n - 1).bit_length() <= 64:
        assert got is not None, "columns that fit one word must take the packed path"
        assert got.to_pylist() == arrow_sort(columns).to_pylist()
    else:
        assert got is None


@pytest.mark.parametrize("column", [
    pa.array([1, None] * PACKED_MIN_ROWS, pa.int64()),     # nulls: Arrow places them
    pa.array([0.5, 1.5] * PACKED_MIN_ROWS, pa.float64()),  # floats (-0.0, NaN): Arrow orders them
    pa.array(["a", "b"] * PACKED_MIN_ROWS),
    pa.array([1, 2] * (PACKED_MIN_ROWS // 4), pa.int64()),  # too few rows to be worth it
])
def test_declines_what_it_cannot_pack(column):
    assert packed_sort_indices([column]) is None


def test_declines_ranges_wider_than_a_word():
    ends = pa.array(np.arange(PACKED_MIN_ROWS, dtype=np.int64) * (1 << 40))
    keys = pa.array(np.arange(PACKED_MIN_ROWS, dtype=np.int64) * (1 << 20))
    assert packed_sort_indices([ends, keys]) is None
    assert packed_sort_indices([ends]) is not None


def test_many_hashed_keys_fire_in_order_through_the_packed_sort(monkeypatch):
    """Two windows of ~6,000 hash-placed keys each (the generic variant: no dense placement),
    fired out of the hash tables' order: the packed sort orders them, as the reference does."""
    used = []

    def spy(columns):
        order = packed_sort_indices(columns)
        used.append(order is not None)
        return order
    monkeypatch.setattr(kernels, "packed_sort_indices", spy)
    rng = np.random.default_rng(7)
    n = 20_000
    data = {"ts": np.sort(rng.integers(0, 200, n)).astype(np.int64),
            "k": rng.integers(-9000, 9000, n),
            "v": rng.integers(-5, 5, n)}

    def build(env):
        return (arrow_stream(env, data, sizes=[4096, 7000, 8904]).key_by("k").window(tumbling(100))
                .aggregate(n=agg.count(), s=agg.sum("v")))
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    env = gz.StreamEnvironment(adaptive=False)
    build(env).collect("out")
    assert_tables_equal(env.execute()["out"], expected)
    assert any(used), "the fired windows were not ordered by the packed sort"


@given(query_cases(windowed=True))
def test_window_queries_match_reference_with_every_result_packed(case):
    """Small windows of the differential tests' queries, each ordered by the packed sort where
    its columns allow (``PACKED_MIN_ROWS`` forced to 1)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(packed_sort, "PACKED_MIN_ROWS", 1)
        check_against_reference(case.build)


def test_one_row_packs_when_forced(monkeypatch):
    monkeypatch.setattr(packed_sort, "PACKED_MIN_ROWS", 1)
    assert packed_sort_indices([pa.array([5], pa.int64())]).to_pylist() == [0]


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), windows=st.integers(1, 4), per_window=st.integers(1, 3 * PACKED_MIN_ROWS),
       key_span=st.sampled_from([1, 2, 3, 8, 100, 1 << 20]), keys=st.integers(1, 2),
       duplicate=st.booleans(), key_type=st.sampled_from([pa.int64(), pa.int32(), pa.uint32(), pa.timestamp("ms")]))
def test_fired_results_in_window_order_take_the_dense_order(seed, windows, per_window, key_span, keys, duplicate,
                                                            key_type):
    """Rows as a firing emits them (window by window in order of end, each window's distinct keys
    in hash order) and, with ``duplicate``, a repeated (end, keys) row: the indices equal Arrow's
    stable sort; the dense order takes them where its slots are few and the rows distinct."""
    rng = np.random.default_rng(seed)
    ends, key_columns = [], [[] for _ in range(keys)]
    for w in range(windows):
        combos = min(per_window, key_span ** keys)
        chosen = rng.choice(key_span ** keys, size=combos, replace=False)
        ends.append(np.full(combos, 1_000 + 2_000 * w, dtype=np.int64))
        for i in range(keys):
            key_columns[i].append(chosen // key_span ** i % key_span + 50)
    ends = np.concatenate(ends)
    key_columns = [np.concatenate(c) for c in key_columns]
    duplicated = duplicate and len(ends) > 1
    if duplicated:
        at = int(rng.integers(1, len(ends)))
        ends = np.insert(ends, at, ends[at - 1])
        key_columns = [np.insert(c, at, c[at - 1]) for c in key_columns]
    columns = [pa.array(ends)] + [pa.array(c).cast(key_type) for c in key_columns]
    used = []
    dense = packed_sort._dense_order
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(packed_sort, "_dense_order", lambda *a: used.append(dense(*a)) or used[-1])
        got = packed_sort_indices(columns)
    widths = [(int(c.max()) - int(c.min())).bit_length() for c in [ends] + key_columns]
    if len(ends) < PACKED_MIN_ROWS or (len(ends) - 1).bit_length() + sum(widths) > 64:
        assert got is None  # too few rows, or wider than one word: Arrow sorts them
        return
    assert got.to_pylist() == arrow_sort(columns).to_pylist()
    runs = len(np.unique(ends))
    slots = runs * np.prod([int(c.max()) - int(c.min()) + 1 for c in key_columns])
    assert (used[0] is not None) == (not duplicated and slots <= packed_sort.DENSE_SLOTS_PER_ROW * len(ends))


def test_dense_order_declines_a_first_column_that_decreases():
    ends = pa.array(np.r_[np.full(PACKED_MIN_ROWS, 3_000), np.full(PACKED_MIN_ROWS, 1_000)].astype(np.int64))
    keys = pa.array(np.r_[np.arange(PACKED_MIN_ROWS), np.arange(PACKED_MIN_ROWS)].astype(np.int64))
    assert packed_sort._dense_order([(ends.to_numpy(), 1_000, 12), (keys.to_numpy(), 0, 12)],
                                    2 * PACKED_MIN_ROWS) is None
    assert packed_sort_indices([ends, keys]).to_pylist() == arrow_sort([ends, keys]).to_pylist()
