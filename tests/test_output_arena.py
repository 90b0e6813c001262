"""The output memory of stateless pipelines (engine/output_arena.py, engine/project_output.py).

An arena hands out pieces of pooled chunks that only move forward; the pool hands a chunk out
again only once nothing cut from it is alive. These tests prove the pieces never overlap, that a
result returned to the user is never written over by a later batch or job (while a result
dropped gives its memory back), and that the zero-copy paths (every row kept: the input's own
columns) equal the reference with nulls and sliced inputs.
"""

from __future__ import annotations

import gc

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import assert_tables_equal

import grizzly_py as gz
from grizzly_py import col, reference
from grizzly_py.engine.output_arena import LARGEST_CHUNK, ChunkPool, OutputArena


def test_pieces_of_an_arena_never_overlap_and_start_on_cache_lines():
    arena, seen = OutputArena(ChunkPool()), []
    for nbytes in [8, 1000, 64, 300_000, 5, 2_000_000, 77, 4 << 20, 1]:
        reserved = arena.reserve(nbytes)
        assert len(reserved) == nbytes
        piece = reserved[: nbytes // 2 + 1]
        arena.commit(len(piece))
        assert piece.ctypes.data % 64 == 0
        seen.append((piece.ctypes.data, piece.ctypes.data + len(piece)))
    seen.sort()
    assert all(end <= nxt for (_, end), (nxt, _) in zip(seen, seen[1:]))


def test_a_reservation_not_committed_is_reserved_again():
    arena = OutputArena(ChunkPool())
    first = arena.reserve(1024)
    again = arena.reserve(512)
    assert again.ctypes.data == first.ctypes.data
    arena.commit(100)
    assert arena.reserve(8).ctypes.data == first.ctypes.data + 128


def test_large_chunks_start_on_a_huge_page():
    arena = OutputArena(ChunkPool())
    piece = arena.take(LARGEST_CHUNK // 8)
    assert piece.ctypes.data % (2 << 20) == 0


def test_the_pool_hands_out_a_chunk_only_when_nothing_cut_from_it_is_alive():
    pool = ChunkPool()
    arena = OutputArena(pool)
    kept = arena.take(1000)
    kept[:] = 7
    address = kept.ctypes.data
    del arena  # its chunk goes to the pool, still referenced by ``kept``
    other = OutputArena(pool)
    piece = other.take(1000)
    piece[:] = 9
    assert piece.ctypes.data != address and (kept == 7).all()
    del other, piece
    buffer = pa.py_buffer(kept)  # an Arrow buffer over the piece keeps the chunk too
    del kept
    gc.collect()
    third = OutputArena(pool)
    third.take(1000)[:] = 5
    assert (np.frombuffer(buffer, np.uint8) == 7).all()
    del third, buffer
    assert OutputArena(pool).take(1000).ctypes.data == address  # dropped: reused


def test_the_pool_keeps_at_most_its_limit():
    pool = ChunkPool(limit=1 << 20)
    for _ in range(10):
        OutputArena(pool).take(100_000)
    assert pool._bytes <= 1 << 20


def _expected(build) -> pa.Table:
    return reference.run(build(gz.StreamEnvironment()).node)[0]


def _query(env, table, threshold):
    return (env.from_arrow(table, timestamp="ts").filter(col("v") < threshold)
            .select("ts", "k", doubled=col("x") * 2.0, v=col("v")))


def _table(n, seed, batch):
    rng = np.random.default_rng(seed)
    t = pa.table({"ts": np.arange(n, dtype=np.int64), "v": rng.integers(0, 100, n).astype(np.int32),
                  "k": rng.integers(-10**9, 10**9, n), "x": rng.random(n)})
    return pa.Table.from_batches(t.to_batches(max_chunksize=batch))


@pytest.mark.parametrize("threshold", [50, 100])
def test_results_alive_are_not_written_over_by_later_jobs(threshold):
    kept = []
    for seed in range(4):
        table = _table(40_000, seed, 4096)
        env = gz.StreamEnvironment()
        _query(env, table, threshold).collect("out")
        out = env.execute()["out"]
        kept.append((out, out.to_pydict(), _expected(lambda e: _query(e, table, threshold))))
    for out, snapshot, expected in kept:
        assert out.to_pydict() == snapshot
        assert_tables_equal(out, expected)


def test_a_dropped_result_gives_its_memory_to_the_next_job_which_is_still_right():
    table = _table(300_000, 1, 65536)
    expected = _expected(lambda e: _query(e, table, 50))
    for _ in range(3):
        env = gz.StreamEnvironment()
        _query(env, table, 50).collect("out")
        assert_tables_equal(env.execute()["out"], expected)


@st.composite
def sliced_inputs(draw):
    n = draw(st.integers(1, 400))
    nulls = draw(st.booleans())
    values = st.one_of(st.none(), st.integers(-5, 5)) if nulls else st.integers(-5, 5)
    k = pa.array(draw(st.lists(values, min_size=n, max_size=n)), pa.int64())
    s = pa.array([None if v is None else f"s{v}" for v in k.to_pylist()], pa.string())
    whole = pa.record_batch({"ts": pa.array(range(n), pa.int64()), "k": k, "s": s})
    start = draw(st.integers(0, n - 1))
    cuts = sorted(draw(st.lists(st.integers(start, n), max_size=4)))
    edges = [start, *cuts, n]
    return [whole.slice(a, b - a) for a, b in zip(edges, edges[1:]) if b > a]


@settings(max_examples=40, deadline=None)
@given(sliced_inputs(), st.sampled_from([None, 100]))
def test_every_row_kept_passes_sliced_columns_through_as_the_reference_does(batches, bound):
    def query(env):
        s = env.from_arrow(batches, timestamp="ts")
        s = s.filter(col("ts") < bound) if bound is not None else s
        return s.select("ts", "k", "s", k1=col("k") + 1)
    env = gz.StreamEnvironment()
    query(env).collect("out")
    out = env.execute()["out"]
    assert_tables_equal(out, _expected(query))


def test_every_row_kept_returns_the_input_buffers_without_a_copy():
    batch = pa.record_batch({"ts": pa.array(range(1000), pa.int64()),
                             "k": pa.array(np.arange(1000) * 3)}).slice(10, 900)
    env = gz.StreamEnvironment()
    env.from_arrow([batch], timestamp="ts").filter(col("k") >= 0).select("ts", "k", k2=col("k") * 2).collect("out")
    out = env.execute()["out"]
    assert out.column("k").chunk(0).buffers()[1].address == batch.column(1).buffers()[1].address
    assert out.column("k2").to_pylist() == [v * 2 for v in batch.column(1).to_pylist()]
