"""Strings that an aggregate only carries are kept by arrival position (``engine/carried_strings.py``).

- The store by itself (a hypothesis property against a model): each batch's ids name its strings
  (nulls, slices, dictionary columns, large_string), ids are never handed out twice, a release
  keeps exactly the held strings (decoding them after it gives the same strings), the byte count
  follows, and a snapshot restores the strings, their ids and the next id.
- The interner decodes interned and carried ids of one column together (a partial state
  imported on Spark interns what a kernel carries).
- The lowering carries the arguments of ``carries_strings`` aggregates and interns keys and
  compared strings.
- Deduplications and ``first``/``last`` of strings, with a release at every firing, equal the
  reference; a job resumed from checkpoints taken across releases gives the same changelog.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import assert_tables_equal
from test_checkpoint import run_with_crashes
from test_updating_streams import assert_same_changelog

import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, agg, col, reference
from grizzly_py.codegen import generate_pipeline
from grizzly_py.engine.carried_strings import CARRIED_BASE, CarriedStrings
from grizzly_py.engine.interning import StringInterner
from grizzly_py.physical import build_physical_plan
from grizzly_py.plan import ChangelogNode, Query
from grizzly_py.windows import TumblingEventTimeWindows

WORDS = ["a", "b", "é", "", "ab", "日本", "a\x00", "B" * 40]
STRING_TYPES = [pa.string(), pa.large_string(), pa.dictionary(pa.int32(), pa.string())]


def _column(values: list, arrow_type: pa.DataType, offset: int) -> pa.Array:
    """``values`` as ``arrow_type``, a slice of a longer array from ``offset`` on."""
    padded = pa.array(["pad"] * offset + values, pa.string()).cast(arrow_type)
    return padded.slice(offset)


def _decoded(store: CarriedStrings, ids: list) -> list:
    valid = np.array([i is not None for i in ids], dtype=bool)
    words = np.array([0 if i is None else i for i in ids], dtype=np.int64)
    return store.values(words, valid).to_pylist()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.lists(st.one_of(st.none(), st.sampled_from(WORDS)), max_size=12),
                          st.sampled_from(STRING_TYPES), st.integers(0, 3), st.booleans(),
                          st.lists(st.integers(0, 200), max_size=20)), min_size=1, max_size=8))
def test_ids_name_their_strings_across_batches_releases_and_snapshots(steps):
    store = CarriedStrings()
    model: dict[int, str | None] = {}  # id -> string, the ones held
    handed = set()
    for values, arrow_type, offset, snapshot, held_picks in steps:
        ids = store.ids(_column(values, arrow_type, offset)).to_pylist()
        assert [i is None for i in ids] == [v is None for v in values]  # nulls stay null
        fresh = [i for i in ids if i is not None]
        assert all(i >= CARRIED_BASE for i in fresh) and not handed.intersection(fresh)
        handed.update(fresh)
        model.update({i: v for i, v in zip(ids, values) if i is not None})
        assert _decoded(store, ids) == values
        # a release keeps the held ids' strings (held: drawn among those seen, some not carried)
        known = sorted(model)
        held = [known[p % len(known)] for p in held_picks] if known else []
        store.release(np.array(held + [3, -1], dtype=np.int64))
        model = {i: model[i] for i in held}
        assert len(store) == len(model)
        assert _decoded(store, list(model)) == list(model.values())
        if snapshot:
            restored = CarriedStrings()
            restored.load(store.export())
            assert _decoded(restored, list(model)) == list(model.values())
            assert restored.next_id == store.next_id and restored.nbytes == store.nbytes
            store = restored
    assert store.nbytes == sum(8 + 4 + len((v or "").encode()) for v in model.values())


def test_a_released_id_is_not_decoded():
    store = CarriedStrings()
    first, second = store.ids(pa.array(["x", "y"])).to_pylist()
    store.release(np.array([second], dtype=np.int64))
    assert _decoded(store, [second]) == ["y"]
    with pytest.raises(RuntimeError, match="released"):
        _decoded(store, [first])
    assert store.ids(pa.array(["z"])).to_pylist() == [second + 1]  # ids are never reused


def test_the_interner_decodes_interned_and_carried_ids_together():
    interner = StringInterner()
    interned = interner.ids(pa.array(["k1", "k2"])).to_pylist()
    carried = interner.carried.ids(pa.array(["c1", None, "c2"], pa.large_string())).to_pylist()
    ids = np.array([carried[0], interned[1], 0, carried[2], interned[0]], dtype=np.int64)
    valid = np.array([1, 1, 0, 1, 1], dtype=np.uint8)
    assert interner.values(ids, valid, pa.large_string()).to_pylist() == ["c1", "k2", None, "c2", "k1"]
    # a release goes to both kinds
    assert interner.release(np.array([interned[0], carried[2]], dtype=np.int64)) == 3
    assert interner.strings == ["k1"] and len(interner.carried) == 1


def _pipelines_of(stream):
    return [generate_pipeline(p) for p in build_physical_plan(Query(stream.node)).pipelines]


def test_carried_arguments_are_registered_by_the_aggregate():
    env = gz.StreamEnvironment()
    data = env.from_arrow(pa.table({"ts": pa.array([1], pa.int64()), "k": pa.array(["a"]),
                                    "s": pa.array(["x"])}), timestamp="ts")
    kept = data.key_by("k").aggregate(f=agg.last("s"), m=agg.max("s"))
    gens = [g for g in _pipelines_of(kept) if g.interned_columns or g.carried_columns]
    assert len(gens) == 1
    assert sorted(gens[0].carried_columns.values()) == ["s"]           # last only carries it
    assert sorted(gens[0].interned_columns.values()) == ["k", "s"]     # a key, and max compares


def _strings_table(rows: int = 600, seed: int = 5) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = np.array(WORDS, dtype=object)
    s = words[rng.integers(0, len(WORDS), rows)]
    s[rng.random(rows) < 0.15] = None
    return pa.table({"ts": np.arange(rows, dtype=np.int64) * 7, "k": rng.integers(0, 12, rows),
                     "s": pa.array(list(s), pa.string()),
                     "d": pa.array(list(s), pa.string()).dictionary_encode(),
                     "l": pa.array(list(s), pa.large_string()),
                     "u": pa.array([f"u{i}-{w}" for i, w in enumerate(s)], pa.string())})


def _source(env, batches):
    return env.from_arrow(batches, timestamp="ts", watermark=WatermarkStrategy.for_bounded_out_of_orderness(
        Time.milliseconds(10)))


def _dedup(env, batches):
    return _source(env, batches).key_by("k").deduplicate(keep="last")


def _first_last_windows(env, batches):
    return (_source(env, batches).key_by("k").window(TumblingEventTimeWindows.of(Time.milliseconds(300)))
            .aggregate(f=agg.first("s"), la=agg.last("l"), fd=agg.first("d"), lu=agg.last("u")))


def _running_first_last(env, batches):
    return _source(env, batches).filter(col("k") < 8).key_by("k").aggregate(f=agg.first("u"), la=agg.last("d"))


@pytest.fixture
def release_at_every_firing(monkeypatch):
    monkeypatch.setattr(StringInterner, "due", property(lambda self: True))


@pytest.mark.parametrize("build", [_dedup, _first_last_windows, _running_first_last])
@pytest.mark.parametrize("chunk", [1, 37, 600])
@pytest.mark.parametrize("parallelism", [1, 2])
def test_carried_strings_match_reference(build, chunk, parallelism, release_at_every_firing):
    data = _strings_table()
    batches = [data.slice(i, chunk).to_batches()[0] for i in range(0, data.num_rows, chunk)]
    expected = reference.evaluate(build(gz.StreamEnvironment(), batches).node)
    env = gz.StreamEnvironment(parallelism=parallelism)
    build(env, batches).collect("out")
    assert_tables_equal(env.execute()["out"], expected)


def test_a_deduplication_resumes_across_releases(release_at_every_firing, tmp_path):
    batches = _strings_table().to_batches(max_chunksize=50)
    expected = reference.evaluate(ChangelogNode(_dedup(gz.StreamEnvironment(), batches).node))
    result = run_with_crashes(lambda env, data: _dedup(env, data).changelog(), batches, [3, 7, 8],
                              tmp_path / "chk")
    assert result.metrics["checkpoints"]["restored_from"] == 8
    assert_same_changelog(result["out"], expected, ["k"])
