"""Unbounded Top-N (``keyed.top_n``, docs/semantics.md "Updating streams"): an updating stream
whose changelog is Flink's append-only Top-N with a row number.

The compiled engine (``engine/top_n_kernel.py``) is checked against the reference evaluator
(``reference.TopN``, which keeps each key's rows in Python) on random queries: data, keys, the
``by`` columns and directions, ``n``, batchings, parallelism 1-4; the final table and the
changelog per key must be equal. Resuming from checkpoints gives the same changelog.
"""

from __future__ import annotations

import shutil
import tempfile

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import Step, arrow_stream, assert_tables_equal
from test_checkpoint import _bounded, _case_over, _crash_points, _data, run_with_crashes
from test_updating_streams import (_bids, _updating, assert_same_changelog, check_against_reference,
                                   running_aggregate_cases, run_compiled)

import grizzly_py as gz
from grizzly_py import col, reference
from grizzly_py.engine.state_memory import StateMemoryLimitError
from grizzly_py.plan import ChangelogNode

i64 = pa.int64()


@st.composite
def top_n_cases(draw):
    """A random stateless prefix, ``key_by`` 1-3 keys (often an integer column modulo 1-4, so
    that keys get rows enough to re-rank), then ``top_n`` of 1-4 rows by 1-2 columns."""
    case = draw(running_aggregate_cases())
    keyed = case.steps[-2]
    stream = case.source(gz.StreamEnvironment())
    for step in case.steps[:-2]:
        stream = step.apply(stream)
    # timestamps finer than milliseconds are kept as int64 (top_n rejects them, as deduplicate)
    fine = {f.name: col(f.name).cast("int64") for f in stream.schema
            if f.name not in keyed.args and f.arrow_type is not None and pa.types.is_timestamp(f.arrow_type)
            and f.arrow_type.unit != "ms"}
    orderable = [f.name for f in stream.schema if not f.dtype.is_list]
    by = draw(st.lists(st.sampled_from(orderable), min_size=1, max_size=2, unique=True))
    descending = draw(st.booleans() | st.lists(st.booleans(), min_size=len(by), max_size=len(by)))
    case.steps[-2:] = ([Step("with_columns", kwargs=fine)] if fine else []) + [
        keyed, Step("top_n", (draw(st.integers(1, 4)),), {"by": by, "descending": descending})]
    return case


@given(top_n_cases())
def test_top_n_matches_reference(case):
    check_against_reference(case.build, case.keys, case.parallelism)


@given(case=top_n_cases(), data=st.data())
def test_top_n_resumes_after_crashes(case, data):
    """A job resumed from its checkpoints (after crashes at drawn batches) writes the same
    changelog as the reference."""
    build = _case_over(case)
    expected = reference.evaluate(ChangelogNode(build(gz.StreamEnvironment(), case.batches()).node))
    points = _crash_points(data, len(case.slices))
    path = tempfile.mkdtemp(prefix="gz-ckpt-")
    try:
        result = run_with_crashes(lambda env, source: build(env, source).changelog(), case.batches(), points, path,
                                  case.parallelism)
        assert_same_changelog(result["out"], expected, case.keys)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _prices(sizes=None):
    def query(env):
        data = {"ts": pa.array(range(8), i64), "k": pa.array([1, 1, 1, 2, 1, 1, 1, None], i64),
                "p": pa.array([5, 7, 5, 1, None, 9, 8, 3], i64)}
        return arrow_stream(env, data, sizes=sizes).key_by("k").top_n(2, by="p")
    return query


def test_top_n_changelog_by_hand():
    """Flink's emission: a row entering at rank r retracts and re-emits every rank from r on
    (-U the old holder, +U the new one); +I only for a rank that is new; the row pushed out of
    the top n gets its -U at rank n and nothing more; a row outside the top n emits nothing."""
    final, changes = run_compiled(_prices([3, 0, 2, 3]))
    assert [(r["op"], r["k"], r["p"], r["rank"]) for r in changes.to_pylist()] == [
        ("+I", 1, 5, 1),
        ("-U", 1, 5, 1), ("+U", 1, 7, 1), ("+I", 1, 5, 2),  # 7 takes rank 1, 5 moves to rank 2
        # the second 5 ties with the first and arrived later: rank 3, outside the top 2
        ("+I", 2, 1, 1),
        # a null ranks as the smallest value: outside the top 2
        ("-U", 1, 7, 1), ("+U", 1, 9, 1), ("-U", 1, 5, 2), ("+U", 1, 7, 2),  # 5 leaves the top 2
        ("-U", 1, 7, 2), ("+U", 1, 8, 2),
        ("+I", None, 3, 1)]
    assert final.to_pylist() == [dict(ts=3, k=2, p=1, rank=1), dict(ts=5, k=1, p=9, rank=1),
                                 dict(ts=6, k=1, p=8, rank=2), dict(ts=7, k=None, p=3, rank=1)]
    for sizes in (None, [1] * 8, [0, 8]):
        for parallelism in (1, 3):
            check_against_reference(_prices(sizes), ["k"], parallelism)


def test_top_n_ascending_nulls_nan_and_two_columns():
    """Ascending: a null comes first; NaN ranks after every number, -0.0 ties with 0.0 (the
    earlier arrival first); a second ``by`` column breaks ties of the first."""
    def build(env):
        data = {"ts": pa.array(range(7), i64), "k": pa.array([0] * 7, i64),
                "p": pa.array([float("nan"), 0.0, -0.0, None, 2.0, 0.0, 0.0]),
                "q": pa.array([1, 1, 1, 1, 1, 5, 0], i64)}
        return arrow_stream(env, data, sizes=[2, 5]).key_by("k").top_n(4, by=["p", "q"], descending=[False, True])
    final = run_compiled(build)[0]
    ranked = sorted(final.to_pylist(), key=lambda r: r["rank"])
    assert [(r["ts"], r["rank"]) for r in ranked] == [(3, 1), (5, 2), (1, 3), (2, 4)]
    for parallelism in (1, 4):
        check_against_reference(build, ["k"], parallelism)


def test_top_n_keys_nan_of_either_sign_as_one_key():
    """NaN keys of other signs and payloads (``-nan``, ``nan``) in later batches are one key, as
    keys group; -0.0 is 0.0 (hypothesis found ``-nan`` counted as a new key's first row)."""
    nan = float("nan")
    def build(env):
        data = {"ts": pa.array([0] * 8, i64), "k": pa.array([None, nan, 0.0, None, -nan, -0.0, nan, -nan]),
                "p": pa.array(range(8), i64)}
        return arrow_stream(env, data, sizes=[3, 2, 3]).key_by("k").top_n(1, by="p")
    final = run_compiled(build)[0]
    assert sorted((r["p"], r["rank"]) for r in final.to_pylist()) == [(3, 1), (5, 1), (7, 1)]
    for parallelism in (1, 3):
        check_against_reference(build, ["k"], parallelism)


def _many(rows: int, sizes: list[int], n: int = 5):
    def build(env):
        data = {"ts": pa.array(range(rows), i64), "k": pa.array([i % 37 for i in range(rows)], i64),
                "p": pa.array([(i * 7919) % 1013 if i % 5 else i for i in range(rows)], i64)}
        return arrow_stream(env, data, sizes=sizes).key_by("k").top_n(n, by="p")
    return build


def test_top_n_many_keys_and_rows_in_one_batch():
    """Rows enough for the compiled loop to grow its output arrays mid-batch, over many keys."""
    check_against_reference(_many(5000, [2500, 2500]), ["k"], 2)


def test_top_n_of_more_rows_than_any_key_has():
    """A huge ``n`` keeps every row: the kernel's slots are as many as a key's rows, not ``n``."""
    check_against_reference(_many(300, [100, 200], n=1 << 40), ["k"], 1)


def test_top_n_compacts_its_kept_rows():
    """Many small batches: the kept rows that left their key's top n are dropped from the state
    now and then (more than 64 chunks), which changes nothing."""
    check_against_reference(_many(1400, [7] * 200), ["k"], 1)


def _packed_sorts(monkeypatch) -> list:
    """Records what the kernel's packed sort returns (None: it fell back to Arrow's sort; the
    Top-N kernel ranks through ``kernels.sort_indices_nulls_last``)."""
    from grizzly_py.engine import kernels
    seen, packed = [], kernels.packed_sort_indices
    monkeypatch.setattr(kernels, "packed_sort_indices", lambda columns: seen.append(packed(columns)) or seen[-1])
    return seen


def test_top_n_packed_ranking_mixes_directions_ties_and_nulls(monkeypatch):
    """Runs long enough for the packed one-word sort (integer keys and ``by`` columns): a
    descending column with nulls (the smallest value: last) and many ties, an ascending one that
    breaks some of them, the rest by arrival, across batches that rank the kept rows again."""
    seen = _packed_sorts(monkeypatch)
    rows = 9000

    def build(env):
        data = {"ts": pa.array(range(rows), i64), "k": pa.array([i % 53 for i in range(rows)], i64),
                "p": pa.array([None if i % 11 == 0 else (i * 7919) % 17 for i in range(rows)], i64),
                "q": pa.array([(i * 31) % 3 for i in range(rows)], i64)}
        return arrow_stream(env, data, sizes=[4500, 4500]).key_by("k").top_n(3, by=["p", "q"], descending=[True, False])
    check_against_reference(build, ["k"], 1)
    assert any(order is not None for order in seen), "the packed sort was not used"


def test_top_n_rows_that_push_every_rank(monkeypatch):
    """Every row ranks first in its key (prices rise, descending): it moves all ``n`` held rows
    down one rank (``-U``/``+U`` per rank) and pushes the last one out, batch after batch."""
    seen = _packed_sorts(monkeypatch)
    rows = 6000

    def build(env):
        data = {"ts": pa.array(range(rows), i64), "k": pa.array([i % 2 for i in range(rows)], i64),
                "p": pa.array(range(rows), i64)}
        return arrow_stream(env, data, sizes=[4100, 1, 1899]).key_by("k").top_n(10, by="p")
    check_against_reference(build, ["k"], 1)
    assert any(order is not None for order in seen)


def _ranked(env, data):
    return _bounded(env, data).key_by("k", "name").top_n(3, by=["v", "n"], descending=[True, False])


@pytest.mark.parametrize("options", [dict(grouping="sort"), dict(window_state="shared", parallelism=3),
                                     dict(parallelism="auto", adaptive=False)])
def test_engine_options_leave_top_n_as_it_is(options):
    def build(env):
        return _ranked(env, _data(rows=500).to_batches(max_chunksize=64))
    base_final, base_changes = run_compiled(build)
    final, changes = run_compiled(build, **options)
    assert_tables_equal(final, base_final)
    assert_same_changelog(changes, base_changes, ["k", "name"])


def test_state_memory_limit_counts_the_kept_rows():
    env = gz.StreamEnvironment(state_memory_limit=1024)
    _ranked(env, _data().to_batches(max_chunksize=100)).collect("out")
    with pytest.raises(StateMemoryLimitError, match=r"pipeline \d+ \(top_n\)"):
        env.execute()


def test_top_n_rejects_misuse():
    env = gz.StreamEnvironment()
    with pytest.raises(ValueError, match="positive int"):
        _bids(env).key_by("k").top_n(0, by="v")
    with pytest.raises(gz.SchemaError, match="nope"):
        _bids(env).key_by("k").top_n(3, by="nope")
    with pytest.raises(ValueError, match=r"top_n\(3.*needs an append-only input"):
        _updating(env).key_by("k").top_n(3, by="n")
    with pytest.raises(gz.SchemaError, match="'rank' clashes"):
        _bids(env).with_columns(rank=col("v")).key_by("k").top_n(3, by="v")
    with pytest.raises(ValueError, match="needs an append-only input"):
        _bids(env).key_by("k").top_n(3, by="v").key_by("k").top_n(1, by="rank")
    assert _bids(env).key_by("k").top_n(3, by="v").is_updating
