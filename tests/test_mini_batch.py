"""Mini-batch emission of running aggregates (``engine/mini_batch.py``): which pipelines emit one
change per key and batch, that ``changed_rows`` picks each key's row before and after the batch
(hash collisions included), and that the final table, a chained running aggregate's and a job
resumed from checkpoints all equal the reference at drawn batch sizes."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import assert_tables_equal
from test_checkpoint import _bounded, _data, run_with_crashes

import grizzly_py as gz
from grizzly_py import agg, col, reference
from grizzly_py.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from grizzly_py.engine import mini_batch
from grizzly_py.engine.incremental import IncrementalQuery
from grizzly_py.engine.kernels import RunningAggregateKernel
from grizzly_py.engine.mini_batch import changed_rows
from grizzly_py.plan import ChangelogNode, Query


@st.composite
def batch_changelogs(draw):
    """The rows one batch of a running aggregate writes: per record of key k, ``+I`` where k
    holds no row, else ``-U`` ``+U``, or ``-D`` (its last row retracted); keys of two words,
    the second sometimes null. Returns (kinds, key buffers, [(key, kind, row)])."""
    keys = draw(st.lists(st.tuples(st.integers(0, 3), st.one_of(st.none(), st.integers(0, 2))),
                         min_size=1, max_size=6, unique=True))
    held = {k: draw(st.booleans()) for k in keys}
    rows = []
    for _ in range(draw(st.integers(1, 40))):
        k = draw(st.sampled_from(keys))
        if not held[k]:
            rows.append((k, INSERT))
            held[k] = True
        elif draw(st.integers(0, 4)) == 0:
            rows.append((k, DELETE))
            held[k] = False
        else:
            rows += [(k, UPDATE_BEFORE), (k, UPDATE_AFTER)]
    kinds = np.array([kind for _, kind in rows], dtype=np.int64)
    first = np.array([k[0] for k, _ in rows], dtype=np.int64)
    second = np.array([-1 if k[1] is None else k[1] for k, _ in rows], dtype=np.int64)
    buffers = [(first, np.ones(len(rows), np.uint8)), (second, (second >= 0).astype(np.uint8))]
    return kinds, buffers, [(k, kind, i) for i, (k, kind) in enumerate(rows)]


def expected_changes(rows) -> list[tuple]:
    """Per key, in the order of its last row: the row before the batch (``-U``, or ``-D`` when
    the batch leaves none) and the row after it (``+U``, or ``+I`` when it had none)."""
    first, last = {}, {}
    for k, kind, i in rows:
        first.setdefault(k, (kind, i))
        last[k] = (kind, i)
    out = []
    for k in sorted(last, key=lambda k: last[k][1]):
        before = first[k][0] in (UPDATE_BEFORE, DELETE)
        after = last[k][0] in (INSERT, UPDATE_AFTER)
        if before:
            out.append((first[k][1], UPDATE_BEFORE if after else DELETE))
        if after:
            out.append((last[k][1], UPDATE_AFTER if before else INSERT))
    return out


@given(batch_changelogs())
def test_changed_rows_are_each_keys_rows_before_and_after_the_batch(case):
    kinds, buffers, rows = case
    picked, picked_kinds = changed_rows(kinds, buffers)
    assert list(zip(picked.tolist(), picked_kinds.tolist())) == expected_changes(rows)


@given(batch_changelogs())
def test_changed_rows_tell_keys_apart_when_their_hashes_collide(case):
    kinds, buffers, rows = case
    original = mini_batch._hashed
    mini_batch._hashed = lambda columns: np.zeros(len(columns[0]), dtype=np.uint64)  # every key collides
    try:
        picked, picked_kinds = changed_rows(kinds, buffers)
    finally:
        mini_batch._hashed = original
    assert list(zip(picked.tolist(), picked_kinds.tolist())) == expected_changes(rows)


def _emitting(monkeypatch, stream, sink="collect", tmp_path=None) -> list[bool]:
    """Per running aggregate of ``stream``'s job (in pipeline order), whether it emits per batch."""
    seen = {}
    process = RunningAggregateKernel.process

    def noting(self, batch, *args, **kwargs):
        seen[self.gen.pipeline.id] = self.mini_batch
        return process(self, batch, *args, **kwargs)
    monkeypatch.setattr(RunningAggregateKernel, "process", noting)
    if sink == "collect":
        stream.collect("out")
    else:
        stream.sink_to_parquet(str(tmp_path / "out.parquet"))
    stream.env.execute()
    return [seen[k] for k in sorted(seen)]


def test_only_aggregates_whose_changelog_nobody_sees_emit_per_batch(monkeypatch, tmp_path):
    data = _data(rows=50)

    def running(env):
        return env.from_arrow(data, timestamp="ts").key_by("k").aggregate(c=agg.count(), s=agg.sum("n"))
    assert _emitting(monkeypatch, running(gz.StreamEnvironment())) == [True]
    assert _emitting(monkeypatch, running(gz.StreamEnvironment()).changelog()) == [False]
    assert _emitting(monkeypatch, running(gz.StreamEnvironment()), "parquet", tmp_path) == [False]

    def chained(env, outer):
        return (env.from_arrow(data, timestamp="ts").key_by("k", "name").aggregate(hi=agg.max("n"), f=agg.max("v"))
                .key_by("name").aggregate(**outer))
    exact = dict(a=agg.avg("hi"), lo=agg.min("hi"), d=agg.count_distinct("hi"), m=agg.median("f"))
    assert _emitting(monkeypatch, chained(gz.StreamEnvironment(), exact)) == [True, True]
    # a float sum rounds by the order of its inputs: the aggregate it reads stays per record
    assert _emitting(monkeypatch, chained(gz.StreamEnvironment(), dict(s=agg.sum("f")))) == [False, True]
    assert _emitting(monkeypatch, chained(gz.StreamEnvironment(), exact).changelog()) == [False, False]
    # a filter between them counts the rows it drops: the per-record rows, as the reference's
    filtered = (gz.StreamEnvironment().from_arrow(data, timestamp="ts").key_by("k", "name").aggregate(hi=agg.max("n"))
                .filter(col("hi") > 50).key_by("name").aggregate(c=agg.count()))
    assert _emitting(monkeypatch, filtered) == [False, True]


def test_a_query_fed_batch_by_batch_keeps_the_per_record_changelog():
    """``IncrementalQuery`` (Spark's streaming update mode) returns every changelog row its
    collecting sink gets: its running aggregate stays per record."""
    data = _data(rows=300, keys=5)
    batches = data.to_batches(max_chunksize=50)
    node = gz.StreamEnvironment().from_arrow(batches, timestamp="ts").key_by("k").aggregate(c=agg.count()).node
    expected = reference.evaluate(ChangelogNode(node))
    job = IncrementalQuery(Query(node))
    try:
        assert not any(getattr(r.kernel, "mini_batch", False) for r in job.qr.runs)
        rows = pa.concat_tables([job.feed(b) for b in batches] + [job.finish()])
    finally:
        job.close()
    assert rows.num_rows == expected.num_rows == 5 + 2 * (300 - 5)  # (per batch: at most 2 * 5 * 6)


def _chained(env, data):
    return (_bounded(env, data).filter(col("n") > 0).key_by("k", "name").aggregate(hi=agg.max("n"), c=agg.count())
            .key_by("name").aggregate(a=agg.avg("hi"), s=agg.sum("c"), lo=agg.min("hi"), top=agg.max("hi"),
                                      d=agg.count_distinct("hi"), m=agg.median("hi")))


def _strings(env, data):
    return (_bounded(env, data).key_by("k").aggregate(
        hi=agg.max("name"), lo=agg.min("name"), d=agg.count_distinct("name", where=col("n") > 50),
        c=agg.count(where=col("v") > 0)))


@settings(max_examples=15, deadline=None)
@given(chunk=st.integers(1, 400), parallelism=st.sampled_from([1, 2]), query=st.sampled_from([_chained, _strings]))
def test_final_tables_at_any_batch_size_equal_the_reference(chunk, parallelism, query):
    batches = _data(rows=1200, keys=15).to_batches(max_chunksize=chunk)
    expected = reference.evaluate(query(gz.StreamEnvironment(), batches).node)
    env = gz.StreamEnvironment(parallelism=parallelism)
    query(env, batches).collect("final")
    assert_tables_equal(env.execute()["final"], expected)


@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_chained_final_table_resumes_exactly(parallelism, tmp_path):
    batches = _data().to_batches(max_chunksize=100)
    expected = reference.evaluate(_chained(gz.StreamEnvironment(), batches).node)
    result = run_with_crashes(_chained, batches, [1, 7, 8, 19], tmp_path / "chk", parallelism)
    assert result.metrics["checkpoints"]["restored_from"] == 19
    assert_tables_equal(result["out"], expected)
