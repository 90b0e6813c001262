"""A join's gather of consecutive rows of one kept batch (``SideStore.take``): a lookup join's
probe rows each matching once gather the batch's own rows in order, so the output columns are
the batch's columns (or a slice of them), zero-copy. Those must equal Arrow's ``take`` for nulls,
strings, dictionaries and sliced inputs, and a result held by the caller must stay as it was
while later batches and jobs run."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

import grizzly_py as gz
from grizzly_py import col
from grizzly_py.engine.join_kernel import SideStore


def _batch(rows: int, seed: int, offset: int) -> pa.RecordBatch:
    """``rows`` rows with nulls in every column, cut at ``offset`` of a longer batch (Arrow
    offsets not zero)."""
    rng = np.random.default_rng(seed)
    total = rows + offset + 3
    ints = rng.integers(-50, 50, size=total)
    nulls = rng.random(total) < 0.25
    strings = pa.array([None if m else f"s{i}" * (abs(int(i)) % 4) for i, m in zip(ints, nulls)])
    whole = pa.RecordBatch.from_pydict({
        "i": pa.array(ints, pa.int64(), mask=nulls),
        "s": strings,
        "d": strings.dictionary_encode(),
        "b": pa.array(ints > 0, mask=nulls),
    })
    return whole.slice(offset, rows)


@given(rows=st.integers(1, 60), offset=st.integers(0, 7), seed=st.integers(0, 2 ** 16),
       start=st.integers(0, 60), stop=st.integers(0, 60), gap=st.booleans())
def test_consecutive_refs_give_the_batch_s_own_values(rows, offset, seed, start, stop, gap):
    before, batch = _batch(5, seed + 1, 0), _batch(rows, seed, offset)
    store = SideStore(batch.schema)
    store.add(10, before)
    store.add(15, batch)
    lo, hi = sorted((min(start, rows - 1), min(stop, rows - 1)))
    local = np.arange(lo, hi + 1, dtype=np.int64)
    gap = gap and len(local) > 2
    if gap:  # not consecutive: the general gather
        local = np.delete(local, 1)
    refs = local + 15
    got = store.take(refs, ["i", "s", "d", "b"])
    for name, array in zip(["i", "s", "d", "b"], got):
        expected = batch.column(name).take(pa.array(local))
        assert array.type == expected.type and array.equals(expected), name
        assert array.null_count == expected.null_count
    if not gap:  # the batch's buffers themselves, not a copy
        assert got[1].buffers()[2].address == batch.column("s").buffers()[2].address


def test_repeated_or_unordered_refs_are_gathered_not_sliced():
    batch = _batch(6, 3, 2)
    store = SideStore(batch.schema)
    store.add(0, batch)
    for local in ([0, 1, 1, 3, 4, 5][:5], [1, 0, 2], [0, 2, 1, 3]):
        refs = np.array(local, dtype=np.int64)
        got = store.take(refs, ["i", "s"])
        for name, array in zip(["i", "s"], got):
            assert array.equals(batch.column(name).take(pa.array(refs))), (local, name)


def _lookup_result(bids: pa.Table, side: pa.Table) -> pa.Table:
    env = gz.StreamEnvironment(parallelism=1)
    (env.from_arrow(bids, timestamp="t").with_columns(key=col("a") % 4).lookup_join(side, "key")
     .select("a", "name", "t", "value")).collect("out")
    return env.execute()["out"]


def test_a_zero_copy_lookup_join_result_is_unaffected_by_later_jobs():
    n = 20_000
    bids = pa.table({"a": np.arange(n, dtype=np.int64), "t": np.arange(n, dtype=np.int64),
                     "name": pa.array([None if i % 7 == 0 else f"n{i}" for i in range(n)])})
    side = pa.table({"key": np.arange(4, dtype=np.int64), "value": ["w", "x", "y", "z"]})
    first = _lookup_result(bids.slice(3), side)
    kept = first.to_pydict()
    assert first.num_rows == n - 3
    assert kept["a"] == list(range(3, n)) and kept["name"] == bids["name"].to_pylist()[3:]
    assert kept["value"] == [["w", "x", "y", "z"][a % 4] for a in range(3, n)]
    other = pa.table({"a": np.arange(n, dtype=np.int64)[::-1] * 5, "t": np.arange(n, dtype=np.int64),
                      "name": pa.array([f"m{i}" for i in range(n)])})
    for _ in range(2):
        _lookup_result(other, side)
    assert first.to_pydict() == kept
