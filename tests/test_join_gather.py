"""The compiled gather of a join's output columns (``engine/join_gather.py``,
``codegen_templates/join_gather.ll.j2``): ``SideStore.take`` with it must give Arrow's ``take``
of the concatenated batches, for every column type (the ones it leaves to Arrow included), any
batch sizes (uneven ones fall back), nulls, and refs cut into ranges on a worker pool."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grizzly_py.codegen.templates import render, runtime_declarations
from grizzly_py.engine import join_gather
from grizzly_py.engine.join_gather import NativeGather
from grizzly_py.engine.join_kernel import SideStore
from grizzly_py.engine.parallel import WorkerPool
from grizzly_py.jit import compile_ir

TYPES = {"i64": pa.int64(), "i32": pa.int32(), "i16": pa.int16(), "i8": pa.int8(), "f64": pa.float64(),
         "ts": pa.timestamp("ms"), "b": pa.bool_(), "s": pa.string()}


@pytest.fixture(scope="module")
def compiled():
    module = compile_ir(render("join_gather.ll.j2", p="t") + runtime_declarations(), 1)
    return lambda name, restype, *argtypes: module.function(f"t_{name}", restype, *argtypes)


@pytest.fixture(scope="module")
def pool():
    p = WorkerPool(3)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(join_gather, "MIN_RANGE_ROWS", 7)  # ranges on the pool from a few refs on
        yield p
    p.shutdown()


def _batch(rows: int, seed: int, nulls: bool) -> pa.RecordBatch:
    rng = np.random.default_rng(seed)
    ints = rng.integers(-100, 100, size=rows)
    mask = (rng.random(rows) < 0.2) if nulls else None
    cols = {"i64": pa.array(ints * 1_000_003, pa.int64(), mask=mask), "i32": pa.array(ints, pa.int32()),
            "i16": pa.array(ints, pa.int16()), "i8": pa.array(ints, pa.int8()),
            "f64": pa.array(ints / 7, pa.float64()), "ts": pa.array(ints + 1_700_000_000_000, pa.int64()).cast(TYPES["ts"]),
            "b": pa.array(ints > 0), "s": pa.array([f"v{i}" for i in ints])}
    return pa.RecordBatch.from_pydict(cols)


@given(sizes=st.one_of(st.lists(st.sampled_from([1, 2, 8, 64]), min_size=1, max_size=5).map(lambda s: [s[0]] * len(s)),
                       st.lists(st.integers(1, 40), min_size=1, max_size=5)),
       last=st.integers(1, 64), skip=st.integers(0, 1), nulls=st.booleans(), pooled=st.booleans(),
       refs_seed=st.integers(0, 2 ** 16), n=st.integers(0, 300))
def test_the_native_gather_equals_arrow_s_take(compiled, pool, sizes, last, skip, nulls, pooled, refs_seed, n):
    sizes = sizes + [last]  # a span's last batch may be shorter (a longer one falls back)
    batches = [_batch(r, i, nulls and i == 1) for i, r in enumerate(sizes)]
    store = SideStore(batches[0].schema)
    base = 5
    for b in batches:
        store.add(base, b)
        base += b.num_rows
    store.drop_below(5 + sizes[0] * skip if len(sizes) > 1 else 0)  # refs need not start at the first batch
    first = store.batches[0][0]
    refs = np.random.default_rng(refs_seed).integers(first, base, size=n)
    columns = list(TYPES)
    native = NativeGather(compiled, pool if pooled else None)
    got = store.take(refs, columns, native)
    for c, array in zip(columns, got):
        whole = pa.concat_arrays([b.column(c) for _, b in store.batches])
        expected = whole.take(pa.array(refs - first, pa.int64()))
        assert array.type == expected.type and array.equals(expected), c


def test_only_fixed_width_columns_without_nulls_of_even_batches_go_native(compiled):
    native = NativeGather(compiled)
    even = [(0, _batch(8, 0, False)), (8, _batch(8, 1, True)), (16, _batch(3, 2, False))]
    got = native.columns(even, np.array([0, 9, 18]), ["i64", "i32", "b", "s", "ts"])
    assert [g is not None for g in got] == [False, True, False, False, True]  # i64 of batch 1 has nulls
    uneven = [(0, _batch(8, 0, False)), (8, _batch(6, 1, False)), (14, _batch(8, 2, False))]
    assert native.columns(uneven, np.array([0, 9, 15]), ["i32"]) == [None]
    longer_last = [(0, _batch(8, 0, False)), (8, _batch(16, 1, False))]
    assert native.columns(longer_last, np.array([0, 23]), ["i32"]) == [None]
    odd = [(0, _batch(6, 0, False)), (6, _batch(6, 1, False))]  # not a power of two: no shift
    assert native.columns(odd, np.array([0, 7]), ["i32"]) == [None]
    one = [(3, _batch(5, 0, False))]  # one batch: any size
    assert native.columns(one, np.array([7, 3]), ["i32"])[0].to_pylist() == \
        [one[0][1].column("i32")[4].as_py(), one[0][1].column("i32")[0].as_py()]


def test_a_ref_outside_the_kept_batches_raises_instead_of_reading_there(compiled):
    native = NativeGather(compiled)
    batches = [(8, _batch(8, 0, False)), (16, _batch(8, 1, False))]
    for refs in ([7, 9], [8, 24]):
        with pytest.raises(IndexError):
            native.columns(batches, np.array(refs), ["i32"])
    assert native.columns(batches, np.array([8, 23]), ["i32"])[0] is not None
