"""The bulk intake of in-memory Arrow sources (engine/arrow_intake.py) against the per-batch path.

The intake must hand the kernels exactly the descriptors ``batch_adapter.prepare`` builds, or
decline (None) so that the batch takes the per-batch path; and the source's checks it answers
in bulk must let through only the batches that ``Source.check_batch`` would pass.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grizzly_py as gz
from grizzly_py import Time, agg, col
from grizzly_py.codegen import abi, generate_pipeline
from grizzly_py.codegen.module import CodegenOptions
from grizzly_py.engine.arrow_intake import MAX_ENTRIES, ArrowIntake, walk_batches
from grizzly_py.engine.batch_adapter import DictionaryCodes, prepare
from grizzly_py.physical import build_physical_plan
from grizzly_py.plan import Query
from grizzly_py.sources import BadInputError
from grizzly_py.windows import TumblingEventTimeWindows

TEN_MS = TumblingEventTimeWindows.of(Time.milliseconds(10))


def _gens(stream, variants=("generic", "instrumented")):
    pipelines = build_physical_plan(Query(stream.node)).pipelines
    return [generate_pipeline(p, CodegenOptions(variant=v)) for p in pipelines for v in variants]


def _same_as_prepare(intake: ArrowIntake, batches, gen) -> int:
    """Asserts that every batch the intake prepares for ``gen`` equals ``prepare``'s result;
    returns how many it prepared."""
    codes_bulk, codes_each = DictionaryCodes(), DictionaryCodes()
    done = 0
    for row, batch in enumerate(batches):
        assert intake.row(batch) == row
        bulk = intake.prepared(row, gen, codes_bulk)
        if bulk is None:
            continue
        each = prepare(batch, gen, abi.INT64_MIN, "src", codes_each)
        np.testing.assert_array_equal(bulk.columns, each.columns)
        np.testing.assert_array_equal(bulk.params, each.params)
        assert (bulk.rows, bulk.has_nulls) == (each.rows, each.has_nulls)
        done += 1
    return done


def _table(n: int, seed: int, null_share: float, dictionaries: str) -> list[pa.RecordBatch]:
    """Batches of event times, a dictionary-coded kind, a float and a bool column (with nulls
    at ``null_share``), cut at random lengths (slices: nonzero offsets, empty batches)."""
    rng = np.random.default_rng(seed)
    nulls = rng.random(n) < null_share

    def maybe_null(values):
        return pa.array(values, mask=nulls if null_share else None)
    kinds = np.array(["view", "click", "buy"])[rng.integers(0, 3, n)]
    table = pa.table({
        "ts": pa.array(np.sort(rng.integers(0, 1000, n)), pa.int64()),
        "kind": pa.array(kinds).dictionary_encode(),
        "v": maybe_null(rng.normal(size=n)),
        "ok": maybe_null(rng.random(n) < 0.5),
        "k": pa.array(rng.integers(0, 7, n), pa.int32()),
    })
    whole = table.combine_chunks().to_batches()[0] if n else pa.RecordBatch.from_pylist([], schema=table.schema)
    cuts = sorted(set(rng.integers(0, n + 1, 6).tolist()) | {0, n})
    batches = [whole.slice(a, b - a) for a, b in zip(cuts, cuts[1:])] or [whole]
    batches.append(whole.slice(n, 0))  # an empty batch at the end
    if dictionaries == "per batch":  # each batch its own (equal or reordered) dictionary
        out = []
        for b in batches:
            kind = b.column(1).dictionary_decode().dictionary_encode() if b.num_rows else b.column(1)
            out.append(pa.RecordBatch.from_arrays([b.column(0), kind, *b.columns[2:]], schema=b.schema))
        batches = out
    return batches


def _query(env, batches):
    return (env.from_arrow(batches, timestamp="ts").filter((col("kind") == "view") & (col("v") > 0))
            .key_by("k").window(TEN_MS).aggregate(s=agg.sum("v"), n=agg.count(), t=agg.count("ok")))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 400), seed=st.integers(0, 2**31), null_share=st.sampled_from([0.0, 0.2]),
       dictionaries=st.sampled_from(["shared", "per batch"]))
def test_descriptors_equal_the_per_batch_preparation(n, seed, null_share, dictionaries):
    batches = _table(n, seed, null_share, dictionaries)
    intake = ArrowIntake.of(batches, batches[0].schema)
    assert intake is not None
    for gen in _gens(_query(gz.StreamEnvironment(), batches)):
        # every batch is covered (primitive and clean dictionary columns): the test compares
        # something, and the bulk path is the one that runs
        assert _same_as_prepare(intake, batches, gen) == len(batches)


def test_walk_reads_buffers_offsets_and_dictionaries():
    t = pa.table({"a": pa.array([1, 2, None, 4], pa.int64()), "d": pa.array(["x", "y", "x", "z"]).dictionary_encode()})
    batches = [t.slice(1, 3).to_batches()[0]]
    raw = walk_batches(batches, t.schema)
    a, d = batches[0].column(0), batches[0].column(1)
    assert raw.shape == (1, 2, 16)
    assert raw[0, 0, :3].tolist() == [3, 1, 1]  # length, null count, offset
    assert raw[0, 0, 5] == a.buffers()[1].address and raw[0, 0, 4] == a.buffers()[0].address
    assert raw[0, 1, 8] == len(d.dictionary)
    assert raw[0, 1, 11] == d.dictionary.buffers()[1].address


def test_columns_the_intake_does_not_cover_take_the_per_batch_path():
    t = pa.table({"ts": pa.array([1, 2, 3], pa.int64()), "name": pa.array(["a", "b", "a"]),
                  "d": pa.DictionaryArray.from_arrays(pa.array([0, 1, 2], pa.int32()), pa.array(["a", "b", "a"]))})
    batches = t.to_batches()
    intake = ArrowIntake.of(batches, t.schema)
    env = gz.StreamEnvironment()
    strings = env.from_arrow(batches, timestamp="ts").filter(col("name") == "a")
    unclean = env.from_arrow(batches, timestamp="ts").filter(col("d") == "a")  # a duplicate entry
    for gen in _gens(strings, ("generic",)) + _gens(unclean, ("generic",)):
        assert intake.prepared(0, gen, DictionaryCodes()) is None
    # and the jobs give what the per-batch path gives
    assert strings.execute_and_collect().column("name").to_pylist() == ["a", "a"]
    assert unclean.execute_and_collect().column("ts").to_pylist() == [1, 3]


def test_other_schemas_too_many_batches_and_iterators_have_no_intake(monkeypatch):
    t = pa.table({"ts": pa.array([1, 2], pa.int64())})
    other = pa.table({"ts": pa.array([1, 2], pa.int32())}).to_batches()[0]
    assert ArrowIntake.of(t.to_batches() + [other], t.schema) is None
    assert ArrowIntake.of(iter(t.to_batches()), t.schema) is None
    monkeypatch.setattr("grizzly_py.engine.arrow_intake.MAX_ENTRIES", 1)
    assert ArrowIntake.of(t.to_batches() * 2, t.schema) is None
    assert MAX_ENTRIES >= 1 << 16


def test_a_batch_that_failed_validation_is_prepared_per_batch():
    """(pyarrow refuses to build a primitive array that fails its cheap validation, so the flag
    is set by hand here; ``prepare`` then validates the batch itself and raises its error.)"""
    batches = _table(300, 5, 0.0, "shared")
    intake = ArrowIntake.of(batches, batches[0].schema)
    assert intake.valid.all()
    intake.valid[1] = False
    gen = _gens(_query(gz.StreamEnvironment(), batches), ("generic",))[0]
    assert intake.prepared(1, gen, DictionaryCodes()) is None
    assert intake.prepared(0, gen, DictionaryCodes()) is not None


@pytest.mark.parametrize("parallelism", [1, 2])
def test_bulk_checks_leave_bad_batches_to_the_source_check(parallelism):
    """A null event time in the third batch: the same error, naming batch and row, as batch by
    batch; batches with a clean dictionary skip their own check, a batch whose dictionary has a
    duplicate gets it (and passes)."""
    schema = pa.schema([("ts", pa.int64()), ("kind", pa.dictionary(pa.int32(), pa.string()))])

    def batch(ts, codes, dictionary=("view", "click")):
        return pa.record_batch([pa.array(ts, pa.int64()),
                                pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(dictionary))],
                               schema=schema)
    batches = [batch([1, 2], [0, 1]), batch([3, 4], [1, 0]), batch([5, None, 7], [0, 0, 1])]
    env = gz.StreamEnvironment(parallelism=parallelism)
    q = env.from_arrow(batches, timestamp="ts").filter(col("kind") == "view").key_by("kind") \
        .window(TEN_MS).aggregate(n=agg.count())
    with pytest.raises(BadInputError, match=r"null event timestamp in batch 2, row 1"):
        q.execute_and_collect()
    unclean = batch([5, 6, 7], [0, 2, 1], ("view", "click", "view"))
    q = env.from_arrow(batches[:2] + [unclean], timestamp="ts").filter(col("kind") == "view") \
        .key_by("kind").window(TEN_MS).aggregate(n=agg.count())
    out = q.execute_and_collect()
    assert out.column("n").to_pylist() == [4]


def test_checked_rows_follow_the_source_checks():
    schema = pa.schema([("ts", pa.int64()), ("kind", pa.dictionary(pa.int8(), pa.string()))])
    clean = pa.array(["a", "b"])
    dup = pa.array(["a", "a"])
    batches = [pa.record_batch([pa.array(ts, pa.int64()), pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int8()), d)],
                               schema=schema)
               for ts, d in [([1, 2], clean), ([3, None], clean), ([5, 6], dup), ([7, 8], clean)]]
    intake = ArrowIntake.of(batches, schema)
    accepts = {id(clean): True, id(dup): False}
    ok = intake.checked_rows(0, lambda d: d.equals(clean) and accepts[id(clean)])
    assert ok.tolist() == [True, False, False, True]
    assert intake.checked_rows(None, lambda d: True).tolist() == [True] * 4


def test_jobs_over_a_table_give_the_same_result_through_the_intake_and_batch_by_batch(monkeypatch):
    batches = _table(3000, 7, 0.1, "shared")
    def run():
        return _query(gz.StreamEnvironment(parallelism=2), batches).execute_and_collect().sort_by(
            [("window_start", "ascending"), ("k", "ascending")])
    through_intake = run()
    monkeypatch.setattr("grizzly_py.sources.ArrowSource.known_batches", lambda self: None)
    assert run().equals(through_intake)
    assert through_intake.num_rows > 0


def test_variant_options_change_nothing_the_intake_reads():
    """Every variant of a pipeline reads the same columns: the optimized variant's options
    (filter order, dense keys) give the same descriptors as prepare."""
    batches = _table(500, 3, 0.0, "shared")
    intake = ArrowIntake.of(batches, batches[0].schema)
    pipeline = build_physical_plan(Query(_query(gz.StreamEnvironment(), batches).node)).pipelines[0]
    options = replace(CodegenOptions(variant="optimized"), dense_keys=(0, 16))
    assert _same_as_prepare(intake, batches, generate_pipeline(pipeline, options)) == len(batches)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 400), seed=st.integers(0, 2**31), null_share=st.sampled_from([0.0, 0.2]),
       data=st.data())
def test_a_tasks_parts_table_equals_the_one_built_from_prepared_batches(n, seed, null_share, data):
    """``ArrowIntake.parts_table`` (one gather for a task's parts) against ``PartsTable`` over
    each part's prepared batch: the same descriptors, row counts and watermarks."""
    from grizzly_py.engine.kernels import SharedBatch
    from grizzly_py.engine.task_parts import PartsTable
    batches = _table(n, seed, null_share, "shared")
    intake = ArrowIntake.of(batches, batches[0].schema)
    gen = _gens(_query(gz.StreamEnvironment(), batches), ("generic",))[0]
    chosen = data.draw(st.lists(st.integers(0, len(batches) - 1), min_size=1, max_size=6))
    parts = []
    for number, row in enumerate(chosen):
        rows = batches[row].num_rows
        first = data.draw(st.integers(0, rows))
        parts.append((SharedBatch(batches[row], intake), number, data.draw(st.integers(-5, 5000)), first,
                      data.draw(st.integers(0, rows - first))))
    bulk, has_nulls = intake.parts_table(gen, DictionaryCodes(), parts, 17)
    prepared = [prepare(p[0].batch, gen, abi.INT64_MIN, "src", DictionaryCodes()) for p in parts]
    each = PartsTable(prepared, [p[1] for p in parts], [p[3] for p in parts], [p[4] for p in parts], [p[2] for p in parts], 17)
    np.testing.assert_array_equal(bulk.columns, each.columns)
    np.testing.assert_array_equal(bulk.params, each.params)
    np.testing.assert_array_equal(bulk.rows, each.rows)
    assert has_nulls == any(p.has_nulls for p in prepared)
    # a part whose batch the intake does not hold: the parts are prepared one by one
    stranger = batches[chosen[0]].slice(0)
    assert intake.parts_table(gen, DictionaryCodes(), parts + [(SharedBatch(stranger, intake), 9, 0, 0, 0)], 17) is None


def test_only_the_engines_runs_use_the_intake_and_the_source_holds_none(monkeypatch):
    """The reference evaluator checks batch by batch (it shares no bulk code with what it
    checks); the intake belongs to the job (``engine/source_reads.py``), not to its source."""
    from grizzly_py import reference
    from grizzly_py.engine import arrow_intake
    built = []
    real = arrow_intake.ArrowIntake.of.__func__
    monkeypatch.setattr(arrow_intake.ArrowIntake, "of",
                        classmethod(lambda cls, *a: built.append(1) or real(cls, *a)))
    batches = _table(300, 11, 0.0, "shared")
    q = _query(gz.StreamEnvironment(), batches)
    node = q.node
    while not hasattr(node, "source"):
        node = node.input
    reference.run(q.node)
    assert built == []
    q.execute_and_collect()
    assert built == [1] and not hasattr(node.source, "intake")


def test_a_failure_of_the_bulk_path_leaves_the_batches_to_the_per_batch_path(monkeypatch):
    """(An error the bulk build meets for some batch is raised by ``prepare`` when that batch's
    turn comes, after the batches before it ran; here the bulk build always fails.)"""
    from grizzly_py.engine import arrow_intake
    batches = _table(2000, 13, 0.1, "shared")
    expected = _query(gz.StreamEnvironment(), batches).execute_and_collect()

    def failing(*a, **k):
        raise RuntimeError("bulk build failed")
    monkeypatch.setattr(arrow_intake._GenRows, "build", classmethod(failing))
    assert _query(gz.StreamEnvironment(), batches).execute_and_collect().equals(expected)
