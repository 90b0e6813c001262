"""Checkpoints and exactly-once restart (docs/fault_tolerance.md), record accounting, and the
state-memory limit.

- Resume after a crash: a source that raises after k batches stands for a crash (the job's
  checkpoints stay, as after a kill); running the job again with checkpointing resumes from the
  latest snapshot. Random queries (hypothesis, checkpoint every batch, one or more crashes, at
  parallelism 1 and 2) must equal the reference evaluator's result and late count; hand-written
  cases cover every supported operator (tumbling, sliding, chained windows, union, holistic
  aggregates, string keys, processing-time-free event time at the int64 limits), Parquet and CSV
  sources and sinks.
- Snapshots: a truncated, corrupt, foreign or future-version snapshot is skipped (falling back to
  the one before); a snapshot of another job is refused; unsupported operators fail at execute().
- kill -9 (``test_kill_9_at_random_points``): a subprocess writing a Parquet sink is killed at
  random moments and restarted until it completes; the file equals an uninterrupted run's. The
  chaos test does the same to a job with two sinks, with concurrent resumers (all but the owner
  refused: ownership.py). The soak variant: ``GRIZZLY_KILL_SOAK=<kills>`` (e.g. 200), with both
  parallelisms, CSV sinks and the two-sink job. Ownership, fencing, the commit of several sinks and
  checksums one by one: test_checkpoint_integrity.py.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from hypothesis import assume, given, note
from hypothesis import strategies as st
from strategies import TIMESTAMP, arrow_stream, assert_tables_equal, query_cases, tumbling
from test_join import join_cases
from test_session_windows import session_cases

import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, agg, col, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.engine import snapshot
from grizzly_py.engine.accounting import AccountingError
from grizzly_py.engine.checkpoint import CheckpointError
from grizzly_py.engine.kernels import WindowKernel
from grizzly_py.engine.ownership import LOCK_NAME, OWNER_NAME, read_record
from grizzly_py.engine.state_memory import StateMemoryLimitError, parse_memory_size
from grizzly_py.engine.state_snapshot import hashed_positions, table_capacity
from grizzly_py.plan import Query, SinkSpec, distinct_sources
from grizzly_py.engine.local import QueryRun
from grizzly_py.windows import EventTimeSessionWindows, SlidingEventTimeWindows
from marks import all_but, slow

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent


class Crash(Exception):
    """Stands for the process dying: raised by a source after some batches."""


def crashing(batches, at: int | None):
    """The batches, raising ``Crash`` instead of batch number ``at`` (None: no crash)."""
    for i, b in enumerate(batches):
        if i == at:
            raise Crash(f"crash before batch {at}")
        yield b


def run_with_crashes(build, batches, crash_points, path, parallelism=1, sink="collect", parallelisms=None,
                     **options):
    """Run the job once per crash point (each run ends in ``Crash``), then to the end; every run
    with checkpointing every round. ``build(env, data)`` returns the stream to sink. Returns the
    final JobResult. ``parallelisms``: each run's parallelism (one more than the crash points),
    instead of ``parallelism`` for all."""
    parallelisms = parallelisms or [parallelism] * (len(crash_points) + 1)
    for at, parallelism in zip(crash_points, parallelisms):
        env = gz.StreamEnvironment(parallelism=parallelism, **options)
        env.enable_checkpointing(path, interval_batches=1)
        _sink(build(env, crashing(batches, at)), sink)
        with pytest.raises(Crash):
            env.execute()
    env = gz.StreamEnvironment(parallelism=parallelisms[len(crash_points)], **options)
    env.enable_checkpointing(path, interval_batches=1)
    _sink(build(env, list(batches)), sink)
    result = env.execute()
    assert not left_behind(path), "a finished job leaves no checkpoint behind"
    return result


def left_behind(path) -> list[Path]:
    """The files in checkpoint directory ``path`` but its lock and owner record (ownership.py: they
    stay, so that the owners' epochs keep growing)."""
    return [p for p in Path(path).rglob("*") if p.is_file() and p.name not in (LOCK_NAME, OWNER_NAME)]


def _sink(stream, sink):
    if sink == "collect":
        stream.collect("out")
    elif sink.endswith(".parquet"):
        stream.sink_to_parquet(sink)
    else:
        stream.sink_to_csv(sink)


# ----------------------------------------------------------------------------------------------
# random queries against the reference
# ----------------------------------------------------------------------------------------------
def _crash_points(data, batches: int) -> list[int]:
    """Up to three distinct batch counts (1 .. batches - 1) after which a drawn run crashes."""
    points = sorted(set(data.draw(st.lists(st.integers(1, max(1, batches)), max_size=3), label="crash points")))
    return [p for p in points if p < batches]


def _case_over(case):
    """``build(env, source)``: ``case``'s query over ``source`` (its batches, or a checkpointed
    job's own copy of them)."""
    def build(env, source):
        stream = env.from_arrow(source, timestamp=TIMESTAMP, watermark=WatermarkStrategy.for_bounded_out_of_orderness(
            Time.milliseconds(case.bound_ms)))
        for step in case.steps:
            stream = step.apply(stream)
        return stream
    return build


def check_resume(case, parallelism, data, **options) -> None:
    """``case`` run with crashes at drawn points and resumed equals an uninterrupted run (exactly:
    same rows, order, bits, late count, at parallelism 1) and the reference evaluator (or, for what checkpoints do
    not cover, fails at execute() saying so). Where the uninterrupted run itself differs from the
    reference (an engine difference that checkpoints do not cause: the differential tests' business),
    only the exact comparison applies."""
    batches = case.batches()
    points = _crash_points(data, len(batches))

    build = _case_over(case)

    path = tempfile.mkdtemp(prefix="gz-ckpt-")
    try:
        try:
            expected, expected_metrics = reference.run(build(gz.StreamEnvironment(), batches).node)
        except AggregateOverflowError:
            return
        env = gz.StreamEnvironment(parallelism=parallelism, **options)
        build(env, batches).collect("out")
        straight = env.execute()
        result = run_with_crashes(build, batches, points, path, parallelism, **options)
        if parallelism == 1:  # (several workers add floats in an order that depends on which worker took which morsel)
            assert same_bits(result["out"], straight["out"]), "the resumed job's output differs from an uninterrupted run's"
        else:
            assert_tables_equal(result["out"], straight["out"])
        assert result.metrics["late_records"] == straight.metrics["late_records"]
        try:
            assert_tables_equal(straight["out"], expected)
        except AssertionError as e:
            note(f"the uninterrupted run differs from the reference too (not a checkpoint matter): {e}")
            assume(False)
        assert_tables_equal(result["out"], expected)
        assert result.metrics["late_records"] == expected_metrics["late_records"]
        assert result.metrics["accounting"]["ok"]
        assert result.metrics["checkpoints"]["restored_from"] == (points[-1] if points else None)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def same_bits(a: pa.Table, b: pa.Table) -> bool:
    """Equal schemas, rows and values, floats bit for bit (NaN included, in lists too: top_k),
    whatever the chunking."""
    if a.schema != b.schema or a.num_rows != b.num_rows:
        return False
    return all(_same_array(x.combine_chunks(), y.combine_chunks()) for x, y in zip(a.columns, b.columns))


def _same_array(x: pa.Array, y: pa.Array) -> bool:
    if pa.types.is_dictionary(x.type) and x.type == y.type:
        # a dictionary's order is an encoding: the interned strings' ids, which a restored job
        # numbers afresh; the values are what must be the same
        x, y = x.cast(x.type.value_type), y.cast(y.type.value_type)
    if pa.types.is_list(x.type):
        lengths = [pc.list_value_length(c).fill_null(-1).to_numpy(zero_copy_only=False) for c in (x, y)]
        return np.array_equal(*lengths) and _same_array(x.flatten(), y.flatten())
    if not pa.types.is_floating(x.type):
        return x.equals(y)
    valid = x.is_valid().to_numpy(zero_copy_only=False)
    if not np.array_equal(valid, y.is_valid().to_numpy(zero_copy_only=False)):
        return False
    bits = [np.asarray(c.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float64).view(np.int64) for c in (x, y)]
    return np.array_equal(bits[0][valid], bits[1][valid])


@given(case=query_cases(), parallelism=st.sampled_from([1, 2]), window_state=st.sampled_from(["thread_local", "shared"]),
       data=st.data())
@pytest.mark.slow
def test_resume_after_crashes_matches_reference(case, parallelism, window_state, data):
    check_resume(case, parallelism, data, window_state=window_state)


@given(case=query_cases(), parallelism=st.sampled_from([1, 2]), data=st.data())
@pytest.mark.slow
def test_sort_grouping_resumes_after_crashes(case, parallelism, data):
    """grouping="sort": the key/pointer arrays of every pane (rows, sealed runs) per worker, for
    the window pipelines that group by sorting (the others, e.g. count or session windows in a
    chain, keep hash grouping and their own export)."""
    check_resume(case, parallelism, data, grouping="sort")


@given(case=query_cases(), grouping=st.sampled_from(["hash", "sort"]),
       window_state=st.sampled_from(["thread_local", "shared"]), data=st.data())
@pytest.mark.slow
def test_resume_at_other_parallelisms_matches_reference(case, grouping, window_state, data):
    """Each run (crashed or final) at a drawn parallelism: snapshots restore at another one."""
    batches = case.batches()
    points = _crash_points(data, len(batches))
    parallelisms = data.draw(st.lists(st.sampled_from([1, 2, 3]), min_size=len(points) + 1, max_size=len(points) + 1),
                             label="parallelisms")

    build = _case_over(case)
    try:
        expected, expected_metrics = reference.run(build(gz.StreamEnvironment(), batches).node)
    except AggregateOverflowError:
        return
    env = gz.StreamEnvironment()
    build(env, batches).collect("out")
    try:
        assert_tables_equal(env.execute()["out"], expected)
    except AssertionError as e:
        note(f"an uninterrupted run differs from the reference (not a checkpoint matter): {e}")
        assume(False)
    path = tempfile.mkdtemp(prefix="gz-ckpt-")
    try:
        result = run_with_crashes(build, batches, points, path, parallelisms=parallelisms, grouping=grouping,
                                  window_state=window_state)
        assert_tables_equal(result["out"], expected)
        assert result.metrics["late_records"] == expected_metrics["late_records"]
        assert result.metrics["accounting"]["ok"]
    finally:
        shutil.rmtree(path, ignore_errors=True)


@given(case=query_cases(count_windows=True), data=st.data())
@pytest.mark.slow
def test_count_windows_resume_after_crashes(case, data):
    """Count windows (state inline in the key table; sliding ones with a ring of panes per key)."""
    check_resume(case, 1, data)


@given(case=session_cases(), data=st.data())
@pytest.mark.slow
def test_session_windows_resume_after_crashes(case, data):
    """Session windows (a list of session nodes per key, value vectors in the nodes)."""
    check_resume(case, 1, data)


@given(case=join_cases(), grouping=st.sampled_from(["hash", "sort"]), data=st.data())
@pytest.mark.slow
def test_joins_resume_after_crashes(case, grouping, data):
    """Window (tumbling, sliding, session) and interval joins: the join state, and the input
    batches that its refs point into; under grouping="sort" tumbling and sliding window joins are
    sort-merge joins (each side's sorted runs per pane)."""
    expected, expected_metrics = reference.run(case.build(gz.StreamEnvironment()).node)
    batches = max(len(case.left.slices), len(case.right.slices))
    points = _crash_points(data, batches)
    path = tempfile.mkdtemp(prefix="gz-ckpt-")

    def job():
        env = gz.StreamEnvironment(parallelism=case.parallelism, grouping=grouping)
        env.enable_checkpointing(path, interval_batches=1)
        stream = case.build(env)
        stream.collect("out")
        return env, max(distinct_sources(stream.node), key=lambda s: len(s.data))
    try:
        for at in points:
            env, longest = job()
            longest.raw_batches = _crash_at(longest.raw_batches, at)
            with pytest.raises(Crash):
                env.execute()
        env, _ = job()
        result = env.execute()
        assert_tables_equal(result["out"], expected)
        assert result.metrics["late_records"] == expected_metrics["late_records"]
        assert result.metrics["checkpoints"]["restored_from"] == (points[-1] if points else None)
    finally:
        shutil.rmtree(path, ignore_errors=True)


# ----------------------------------------------------------------------------------------------
# every supported operator, by hand
# ----------------------------------------------------------------------------------------------
def _data(rows=3000, keys=40, seed=3, disorder=50):
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.integers(0, 60_000, rows)) + rng.integers(-disorder, disorder + 1, rows)
    return pa.table({"ts": ts, "k": rng.integers(0, keys, rows), "name": rng.choice(["ann", "bo", "cy", ""], rows),
                     "v": rng.normal(size=rows), "n": rng.integers(-5, 100, rows)})


def _bounded(env, data, bound=40):
    return env.from_arrow(data, timestamp="ts", watermark=WatermarkStrategy.for_bounded_out_of_orderness(
        Time.milliseconds(bound)))


def _tumbling_holistic(env, data):
    return (_bounded(env, data).filter(col("n") > 0).key_by("k", "name").window(tumbling(2000))
            .aggregate(c=agg.count(), s=agg.sum("v"), m=agg.median("n"), d=agg.count_distinct("k"),
                       mo=agg.mode("n"), sd=agg.stddev_samp("v"), t=agg.top_k("n", 3), tv=agg.top_k("v", 2)))


def _sliding(env, data):
    return (_bounded(env, data).key_by("name").window(SlidingEventTimeWindows.of(Time.seconds(3), Time.milliseconds(700)))
            .aggregate(s=agg.sum("v"), mx=agg.max("n"), a=agg.avg("v")))


def _chained(env, data):
    first = _bounded(env, data).key_by("k").window(tumbling(1000)).aggregate(c=agg.count(), s=agg.sum("n"))
    return first.window_all(SlidingEventTimeWindows.of(Time.seconds(4), Time.seconds(2))).aggregate(
        total=agg.sum("c"), top=agg.max("s"))


def _union(env, data):
    a = _bounded(env, data).filter(col("n") % 2 == 0).select("ts", "k", "v")
    b = _bounded(env, _data(rows=1000, seed=4).to_batches(max_chunksize=70)).with_columns(v=col("v") * 2).select("ts", "k", "v")
    return a.union(b).key_by("k").window(tumbling(5000)).aggregate(s=agg.sum("v"), c=agg.count())


def _stateless(env, data):
    return _bounded(env, data).filter(col("v") > 0).with_columns(w=col("n") * 3).select("ts", "name", "w")


def _session(env, data):
    return (_bounded(env, data, bound=300).key_by("name").window(EventTimeSessionWindows.with_gap(Time.milliseconds(60)))
            .aggregate(c=agg.count(), s=agg.sum("v"), m=agg.median("n"), t=agg.top_k("n", 2)))


def _strings(env, data):
    """Aggregates of strings: interned ids in entries and value vectors, the strings in the snapshot."""
    return (_bounded(env, data).key_by("k").window(SlidingEventTimeWindows.of(Time.seconds(3), Time.seconds(1)))
            .aggregate(d=agg.count_distinct("name"), mo=agg.mode("name"), lo=agg.min("name"), hi=agg.max("name"),
                       fi=agg.first("name"), la=agg.last("name")))


def _count(env, data):
    return _bounded(env, data).key_by("k").count_window(7).aggregate(c=agg.count(), d=agg.count_distinct("n"),
                                                                     s=agg.sum("v"), la=agg.last("name"),
                                                                     dn=agg.count_distinct("name"))


def _sliding_count(env, data):
    return _bounded(env, data).key_by("name").count_window(40, 6).aggregate(s=agg.sum("n"), mx=agg.max("v"),
                                                                           a=agg.avg("v"), m=agg.median("n"),
                                                                           d=agg.count_distinct("k"),
                                                                           t=agg.top_k("v", 4))


def _other_side(env):
    return _bounded(env, _data(rows=1500, keys=60, seed=9).to_batches(max_chunksize=70)).select(
        "ts", "k", "name", x=col("v") + 1)


def _window_join(env, data):
    return _bounded(env, data).join(_other_side(env)).where("k", "name").equal_to("k", "name").window(
        SlidingEventTimeWindows.of(Time.milliseconds(900), Time.milliseconds(300)))


def _session_join(env, data):
    return _bounded(env, data).join(_other_side(env)).where("name").equal_to("name").window(
        EventTimeSessionWindows.with_gap(Time.milliseconds(25)))


def _interval_join(env, data):
    return _bounded(env, data).filter(col("n") < 50).interval_join(_other_side(env)).where("k").equal_to("k").between(
        Time.milliseconds(-40), Time.milliseconds(15))


OPERATORS = {"tumbling_holistic": _tumbling_holistic, "sliding": _sliding, "strings": _strings, "chained": _chained, "union": _union,
             "stateless": _stateless, "session": _session, "count": _count, "sliding_count": _sliding_count,
             "window_join": _window_join, "session_join": _session_join, "interval_join": _interval_join}
# the fast subset (pytest -m "not slow") resumes these; the full suite every operator
FAST_OPERATORS = ("tumbling_holistic", "sliding", "strings", "session", "count", "window_join", "interval_join")


@pytest.mark.parametrize("parallelism", [slow(1), 2])
@pytest.mark.parametrize("name", ["shared_tumbling", "shared_sliding"])
def test_shared_window_state_resumes_exactly(name, parallelism, tmp_path):
    """window_state="shared": the ring of slots and its concurrent tables (with many keys, so the
    tables and the ring have grown before the snapshots)."""
    size = Time.seconds(4) if name == "shared_tumbling" else Time.seconds(6)

    def build(env, data):
        assigner = SlidingEventTimeWindows.of(size, Time.seconds(2)) if name == "shared_sliding" else tumbling(4000)
        return (_bounded(env, data).key_by("k").window(assigner)
                .aggregate(c=agg.count(), s=agg.sum("v"), lo=agg.min("n"), a=agg.avg("v")))
    batches = _data(rows=6000, keys=3000).to_batches(max_chunksize=300)
    expected, expected_metrics = reference.run(build(gz.StreamEnvironment(), batches).node)
    result = run_with_crashes(build, batches, [2, 9, 10], tmp_path / "chk", parallelism, window_state="shared")
    assert_tables_equal(result["out"], expected)
    assert result.metrics["late_records"] == expected_metrics["late_records"]
    assert result.metrics["queries"][0]["pipelines"][0]["window_state"] == "shared"


@pytest.mark.parametrize("parallelism", [1, slow(2)])
@pytest.mark.parametrize("name", all_but(sorted(OPERATORS), FAST_OPERATORS))
def test_every_supported_operator_resumes_exactly(name, parallelism, tmp_path):
    build = OPERATORS[name]
    batches = _data().to_batches(max_chunksize=100)
    expected, expected_metrics = reference.run(build(gz.StreamEnvironment(), batches).node)
    result = run_with_crashes(build, batches, [1, 7, 8, 19], tmp_path / "chk", parallelism)
    assert_tables_equal(result["out"], expected)
    assert result.metrics["late_records"] == expected_metrics["late_records"]
    assert result.metrics["checkpoints"]["restored_from"] == 19


SORT_OPERATORS = ("tumbling_holistic", "sliding", "strings", "chained", "union", "window_join")


@pytest.mark.parametrize("parallelism", [1, slow(2)])
@pytest.mark.parametrize("name", all_but(SORT_OPERATORS, ("strings", "window_join")))
def test_sort_grouping_resumes_exactly(name, parallelism, tmp_path):
    """grouping="sort" (key/pointer arrays per pane; the sort-merge join): a resumed job equals an
    uninterrupted run (bit for bit at parallelism 1) and the reference; its pipelines did group
    by sorting."""
    build = OPERATORS[name]
    batches = _data().to_batches(max_chunksize=100)
    expected, expected_metrics = reference.run(build(gz.StreamEnvironment(), batches).node)
    env = gz.StreamEnvironment(parallelism=parallelism, grouping="sort")
    build(env, batches).collect("out")
    straight = env.execute()
    result = run_with_crashes(build, batches, [1, 7, 8, 19], tmp_path / "chk", parallelism, grouping="sort")
    assert "sort" in {p["grouping"] for p in result.metrics["queries"][0]["pipelines"]}
    if parallelism == 1:
        assert same_bits(result["out"], straight["out"])
    assert_tables_equal(result["out"], expected)
    assert result.metrics["late_records"] == expected_metrics["late_records"]
    assert result.metrics["checkpoints"]["restored_from"] == 19


def test_sort_grouping_snapshot_holds_unsealed_rows_and_runs():
    """A pane's rows, sealed rows and run ends go through export and restore word for word (also
    rows not sealed yet, as a seal that ran out of memory leaves them), and the restored kernel
    goes on (grows the panes, seals the rest, fires) exactly as the original does."""
    from grizzly_py.codegen import abi
    from grizzly_py.engine.sort_snapshot import export_kpa_block, restore_kpa_block
    from grizzly_py.engine.kernels import new_state_block

    def build(env, data):
        return _bounded(env, data).key_by("k").window(tumbling(100_000)).aggregate(c=agg.count(), s=agg.sum("v"))
    batches = _data(rows=1000).to_batches(max_chunksize=100)
    runs = [QueryRun(Query(build(gz.StreamEnvironment(), batches).node, SinkSpec("collect", "out")), grouping="sort")
            for _ in range(2)]
    try:
        original, restored = (r.runs[0].kernel for r in runs)
        for batch in batches[:5]:
            original.process(batch, abi.INT64_MIN)
        rw = original.gen.kpa_row_words
        block = export_kpa_block(original.state, rw)
        assert block["rows_per_pane"].sum() == 500 and len(block["runs"]) >= 5
        assert len(block["starts"]) == 1 and block["runs_per_pane"][0] == 5  # one pane, a run per batch
        block["runs"], block["runs_per_pane"] = block["runs"][:-1], block["runs_per_pane"] - 1
        block["sealed"] = block["runs"][-1:].copy()  # the last batch's rows not sealed into a run yet
        restore_kpa_block(restored.state, block, rw, "test")
        restored.state[abi.STATE_MIN_OPEN_END] = original.state[abi.STATE_MIN_OPEN_END]
        again = export_kpa_block(restored.state, rw)
        for field in ("starts", "rows_per_pane", "sealed", "runs_per_pane", "rows", "runs"):
            assert np.array_equal(again[field], block[field]), field
        with pytest.raises(ValueError, match="words per row"):
            restore_kpa_block(new_state_block(original.gen.state_words), block, rw + 1, "test")
        results = []
        for kernel in (original, restored):
            for batch in batches[5:]:
                kernel.process(batch, abi.INT64_MIN)
            results.append(kernel.fire(abi.INT64_MAX - 1))
        assert results[0].num_rows > 0 and results[0].equals(results[1])
    finally:
        for r in runs:
            r.close()


RESCALED = ("tumbling_holistic", "sliding", "chained", "union", "stateless", "session", "count", "sliding_count",
            "window_join", "interval_join")


@pytest.mark.parametrize("parallelisms", [[2, 1, 3], slow([1, 2, 1])],
                         ids=lambda p: "-".join(map(str, p)))
@pytest.mark.parametrize("options", [{}, slow({"grouping": "sort"}), slow({"window_state": "shared"})],
                         ids=["hash", "sort", "shared"])
@pytest.mark.parametrize("name", all_but(RESCALED, FAST_OPERATORS))
def test_restore_at_another_parallelism(name, options, parallelisms, tmp_path, every_row_a_morsel):
    """A snapshot taken at one parallelism restores at another (per-worker state blocks kept as
    idle blocks whose windows fire with the workers', or counters folded; fewer blocks leave the
    new workers' fresh): crashes at parallelism 2 and 1, resumed at 1, 3 or 2, equal the reference.
    (Every batch is cut into a morsel per worker: every worker's block holds state.)"""
    build = OPERATORS[name]
    batches = _data().to_batches(max_chunksize=100)
    expected, expected_metrics = reference.run(build(gz.StreamEnvironment(), batches).node)
    result = run_with_crashes(build, batches, [7, 19], tmp_path / "chk", parallelisms=parallelisms, **options)
    assert_tables_equal(result["out"], expected)
    assert result.metrics["late_records"] == expected_metrics["late_records"]
    assert result.metrics["accounting"]["ok"]
    assert result.metrics["checkpoints"]["restored_from"] == 19
    assert result.metrics["checkpoints"]["restored_parallelism"] == parallelisms[1]


def test_state_bits_survive_exactly(tmp_path):
    """Float sums restored bit for bit: the resumed result equals the uninterrupted run exactly
    (not only within the 1e-9 of the reference comparison), string keys included."""
    batches = _data(rows=5000, keys=500).to_batches(max_chunksize=64)
    env = gz.StreamEnvironment()
    _sliding(env, batches).collect("out")
    straight = env.execute()["out"]
    resumed = run_with_crashes(_sliding, batches, [5, 30, 31, 60], tmp_path / "chk")["out"]
    assert same_bits(resumed, straight)


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_file_sources_and_sinks_exactly_once(kind, tmp_path):
    """Parquet source (resumes at its row group) into a Parquet sink, CSV source with bad rows
    dropped (resumes by skipping blocks, rejected rows counted once) into a CSV sink."""
    data = _data(rows=4000)
    if kind == "parquet":
        src = tmp_path / "in.parquet"
        pq.write_table(data, src, row_group_size=250)

        def source(env):
            return env.from_parquet(src, timestamp="ts", watermark=WatermarkStrategy.for_bounded_out_of_orderness(
                Time.milliseconds(40)))
    else:
        src = tmp_path / "in.csv"
        pcsv.write_csv(data, src)
        lines = src.read_text().splitlines()
        for i in (5, 900, 2500):  # bad rows: a missing field, a value that is not a number
            lines[i] = lines[i].rsplit(",", 1)[0] if i != 900 else lines[i].replace(",", ",x", 1)
        src.write_text("\n".join(lines) + "\n")

        def source(env):
            return env.from_csv(src, schema=data.schema, timestamp="ts", on_bad_rows="drop", block_size=8192,
                                watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(40)))

    def build(env, _):
        return source(env).key_by("name").window(tumbling(3000)).aggregate(c=agg.count(), s=agg.sum("n"))

    out = tmp_path / f"out.{kind}"
    straight = build(gz.StreamEnvironment(), None).execute_and_collect()
    n = len(list(_only_source(build(gz.StreamEnvironment(), None)).batches()))
    assert n > 8

    def job():
        env = gz.StreamEnvironment()
        env.enable_checkpointing(tmp_path / "chk", interval_batches=1)
        stream = build(env, None)
        stream.sink_to_parquet(out) if kind == "parquet" else stream.sink_to_csv(out)
        return env, _only_source(stream)

    for at in [2, 5, n - 1]:
        env, source_object = job()
        source_object.raw_batches = _crash_at(source_object.raw_batches, at)
        with pytest.raises(Crash):
            env.execute()
        assert not out.exists()
    env, _ = job()
    result = env.execute()
    got = pq.read_table(out) if kind == "parquet" else pcsv.read_csv(out)
    expected = straight if kind == "parquet" else pcsv.read_csv(_csv_bytes(straight))
    assert got.equals(expected)
    assert result.metrics["checkpoints"]["restored_from"] == n - 1
    if kind == "csv":
        assert result.metrics["rejected_records"] == 3
        assert result.metrics["accounting"]["rejected"] == 3


def _csv_bytes(table):
    sink = pa.BufferOutputStream()
    pcsv.write_csv(table, sink)
    return pa.BufferReader(sink.getvalue())


def _only_source(stream):
    from grizzly_py.plan import distinct_sources
    (source,) = distinct_sources(stream.node)
    return source


def _crash_at(raw_batches, at):
    """``raw_batches`` raising ``Crash`` instead of the source's batch number ``at`` (counted
    from the start of the source, also when the source seeks to a later batch)."""
    def wrapped(first=0):
        for i, b in enumerate(raw_batches(first) if first else raw_batches(), first):
            if i == at:
                raise Crash(f"crash at batch {i}")
            yield b
    return wrapped


# ----------------------------------------------------------------------------------------------
# snapshots: format, corruption, fallback, refusal
# ----------------------------------------------------------------------------------------------
def test_snapshot_format_round_trip_and_checks():
    doc = {"a": 1, "b": [None, "x", {"arr": np.arange(6, dtype=np.int64).reshape(2, 3)}], "big": -(1 << 63)}
    data = snapshot.encode(doc)
    back = snapshot.decode(data)
    assert back["a"] == 1 and back["big"] == -(1 << 63) and back["b"][:2] == [None, "x"]
    assert np.array_equal(back["b"][2]["arr"], doc["b"][2]["arr"])
    broken = {
        "truncated header": data[:20],
        "truncated payload": data[:-7],
        "padded": data + b"\0",
        "flipped byte": data[:60] + bytes([data[60] ^ 0x40]) + data[61:],
        "magic": b"NOTASNAP" + data[8:],
        "version": data[:8] + (snapshot.FORMAT_VERSION + 1).to_bytes(4, "little") + data[12:],
    }
    messages = {"truncated header": "truncated", "truncated payload": "truncated", "padded": "padded",
                "flipped byte": "checksum", "magic": "not a grizzly-py snapshot", "version": "format version"}
    for what, bad in broken.items():
        with pytest.raises(snapshot.SnapshotError, match=messages[what]):
            snapshot.decode(bad)


def _crash_runs(path, points, build=_sliding, batches=None):
    batches = batches or _data().to_batches(max_chunksize=100)
    for at in points:
        env = gz.StreamEnvironment()
        env.enable_checkpointing(path, interval_batches=1)
        build(env, crashing(batches, at)).collect("out")
        with pytest.raises(Crash):
            env.execute()
    return batches


def _resume(path, batches, parallelism: int = 1, warning: str | None = None) -> dict:
    """Run the sliding-window job again from the checkpoints in ``path`` (expecting a
    RuntimeWarning matching ``warning`` when given); its output equals the reference's. Returns
    the job's metrics."""
    env = gz.StreamEnvironment(parallelism=parallelism)
    env.enable_checkpointing(path, interval_batches=1)
    _sliding(env, batches).collect("out")
    if warning is None:
        result = env.execute()
    else:
        with pytest.warns(RuntimeWarning, match=warning):
            result = env.execute()
    expected, _ = reference.run(_sliding(gz.StreamEnvironment(), batches).node)
    assert_tables_equal(result["out"], expected)
    return result.metrics


@pytest.mark.parametrize("version", [1, 2])
def test_older_version_snapshot_still_restores(version, tmp_path):
    """Format version 2 added sort-based grouping's state, 3 free ids among the interned strings;
    the other kernels' state is as in version 1, so files of versions 1 and 2 (from before)
    restore."""
    assert snapshot.FORMAT_VERSION == 3 and snapshot.READABLE_VERSIONS == (1, 2, 3)
    path = tmp_path / "chk"
    batches = _crash_runs(path, [12])
    for snap in path.glob("chk-*.snap"):  # rewrite the header's version (the checksum covers the payload only)
        data = snap.read_bytes()
        assert int.from_bytes(data[8:12], "little") == 3
        snap.write_bytes(data[:8] + version.to_bytes(4, "little") + data[12:])
    metrics = _resume(path, batches)
    assert metrics["checkpoints"]["restored_from"] == 12
    assert not metrics["checkpoints"]["skipped_snapshots"]


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "garbage"])
def test_corrupt_latest_snapshot_falls_back_to_the_one_before(damage, tmp_path):
    path = tmp_path / "chk"
    batches = _crash_runs(path, [12])
    snaps = sorted(path.glob("chk-*.snap"))
    assert [p.name for p in snaps] == ["chk-00000011.snap", "chk-00000012.snap"]  # the two newest are kept
    latest = snaps[-1]
    data = latest.read_bytes()
    latest.write_bytes({"truncate": data[: len(data) // 2], "flip": data[:-100] + bytes([data[-100] ^ 1]) + data[-99:],
                        "empty": b"", "garbage": os.urandom(len(data))}[damage])
    metrics = _resume(path, batches, warning="skipping checkpoint chk-00000012.snap")
    assert metrics["checkpoints"]["restored_from"] == 11
    assert len(metrics["checkpoints"]["skipped_snapshots"]) == 1


def test_all_snapshots_corrupt_starts_from_scratch(tmp_path):
    path = tmp_path / "chk"
    batches = _crash_runs(path, [6])
    for p in path.glob("chk-*.snap"):
        p.write_bytes(p.read_bytes()[:-1])
    (path / "parts" / "q0-00000099.arrow.inprogress").write_bytes(b"left over")
    metrics = _resume(path, batches, warning="skipping checkpoint")
    assert metrics["checkpoints"]["restored_from"] is None


def test_missing_output_part_makes_a_snapshot_unusable(tmp_path):
    path = tmp_path / "chk"
    batches = _crash_runs(path, [12])
    parts = sorted((path / "parts").glob("*.arrow"))
    parts[-1].unlink()  # the part that only the newest snapshot lists
    metrics = _resume(path, batches, warning="missing")
    assert metrics["checkpoints"]["restored_from"] == 11


def test_snapshot_of_another_job_is_refused(tmp_path):
    path = tmp_path / "chk"
    batches = _crash_runs(path, [4])
    env = gz.StreamEnvironment()
    env.enable_checkpointing(path, interval_batches=1)
    _tumbling_holistic(env, batches).collect("out")
    with pytest.raises(CheckpointError, match="belongs to another job"):
        env.execute()
    for snap in path.glob("chk-*.snap"):  # as written before restoring at another parallelism was supported
        doc = snapshot.read(str(snap))
        del doc["shape"], doc["parallelism"]
        snap.write_bytes(snapshot.encode(doc))
    env = gz.StreamEnvironment(parallelism=2)  # same query, other parallelism: that snapshot cannot tell
    env.enable_checkpointing(path, interval_batches=1)
    _sliding(env, batches).collect("out")
    with pytest.raises(CheckpointError, match="another job"):
        env.execute()
    env = gz.StreamEnvironment()  # the parallelism that wrote it: restored
    env.enable_checkpointing(path, interval_batches=1)
    _sliding(env, batches).collect("out")
    assert env.execute().metrics["checkpoints"]["restored_from"] == 4


def test_snapshot_of_the_same_job_at_another_parallelism_restores(tmp_path):
    path = tmp_path / "chk"
    batches = _crash_runs(path, [4])
    metrics = _resume(path, batches, parallelism=2)
    assert metrics["checkpoints"]["restored_from"] == 4
    assert metrics["checkpoints"]["restored_parallelism"] == 1


def test_a_kernel_without_an_export_fails_at_execute(tmp_path, monkeypatch):
    """A stateful kernel kind that checkpoints do not know (one added later without its export)
    fails the job at execute(), naming the pipeline, rather than being skipped."""
    monkeypatch.setattr("grizzly_py.engine.checkpoint.unsupported_reason",
                        lambda kernel: "a new window kind" if kernel is not None else None)
    env = gz.StreamEnvironment()
    env.enable_checkpointing(tmp_path / "chk")
    _sliding(env, _data(rows=100).to_batches()).collect("out")
    with pytest.raises(CheckpointError, match="pipeline 0 of sink 'out' uses a new window kind, whose state cannot "
                                              "be checkpointed"):
        env.execute()


def test_enable_checkpointing_arguments(tmp_path):
    env = gz.StreamEnvironment()
    assert env.enable_checkpointing(tmp_path, Time.milliseconds(250)) is env
    assert env.checkpoint.interval_ms == 250
    env.enable_checkpointing(tmp_path)
    assert env.checkpoint.interval_ms == 1000
    with pytest.raises(ValueError):
        env.enable_checkpointing(tmp_path, interval_batches=0)
    with pytest.raises(TypeError):
        env.enable_checkpointing(tmp_path, interval="1s")


def test_wall_clock_interval_takes_snapshots(tmp_path, monkeypatch):
    clock = iter(range(0, 10**9, 400))  # each reading of the clock: 0.4 s later
    monkeypatch.setattr("grizzly_py.engine.checkpoint.time.monotonic", lambda: next(clock))
    batches = _data().to_batches(max_chunksize=100)
    env = gz.StreamEnvironment()
    env.enable_checkpointing(tmp_path / "chk", interval=Time.seconds(1000))
    _sliding(env, batches).collect("out")
    result = env.execute()
    assert 0 < result.metrics["checkpoints"]["taken"] < len(batches)


# ----------------------------------------------------------------------------------------------
# interned strings: a snapshot holds those of open windows only
# ----------------------------------------------------------------------------------------------
SECONDS, NEW_KEYS = 24, 100


def _new_keys_every_second() -> list[pa.RecordBatch]:
    """``SECONDS`` seconds of records, each second with ``NEW_KEYS`` string keys of its own (64
    characters, two records each), in batches of a quarter second."""
    per_second = 2 * NEW_KEYS
    i = np.arange(SECONDS * per_second)
    second, key = i // per_second, i % NEW_KEYS
    names = [f"second {s:03d}, key {k:05d} ".ljust(64, ".") for s, k in zip(second.tolist(), key.tolist())]
    return pa.table({"ts": (second * 1000 + (i % per_second) * 1000 // per_second).astype(np.int64), "name": names,
                     "v": i.astype(np.int64)}).to_batches(max_chunksize=per_second // 4)


def _by_name(env, source):
    return env.from_arrow(source, timestamp="ts", watermark=WatermarkStrategy.for_bounded_out_of_orderness(
        Time.milliseconds(100)))


STRING_JOBS = {
    "tumbling": lambda env, source: _by_name(env, source).key_by("name").window(tumbling(1000)).aggregate(
        c=agg.count(), s=agg.sum("v")),
    "session": lambda env, source: _by_name(env, source).key_by("name").window(
        EventTimeSessionWindows.with_gap(Time.milliseconds(300))).aggregate(c=agg.count(), s=agg.sum("v")),
    "window_join": lambda env, source: (lambda s: s.filter(col("v") % 2 == 0).join(s.filter(col("v") % 2 == 1))
                                        .where("name").equal_to("name").window(tumbling(1000)))(_by_name(env, source)),
}


@pytest.mark.parametrize("grouping", ["hash", slow("sort")])
@pytest.mark.parametrize("name", sorted(STRING_JOBS))
def test_snapshots_hold_the_strings_of_open_windows_only(name, grouping, tmp_path, monkeypatch):
    """New keys every window, a snapshot after every batch: the interned strings the snapshots
    hold do not grow with the windows fired (they did, by every string ever interned). (The
    whole snapshot grows slowly anyway: it lists every output part committed so far.)"""
    sizes = []
    encode = snapshot.encode

    def strings_bytes(doc) -> int:
        if isinstance(doc, dict):
            own = len(doc["interner"]["data"]) if isinstance(doc.get("interner"), dict) else 0
            return own + sum(strings_bytes(v) for k, v in doc.items() if k != "interner")
        if isinstance(doc, (list, tuple)):
            return sum(strings_bytes(v) for v in doc)
        return 0

    def measured(doc):
        sizes.append(strings_bytes(doc))
        return encode(doc)
    monkeypatch.setattr(snapshot, "encode", measured)
    env = gz.StreamEnvironment(grouping=grouping)
    env.enable_checkpointing(tmp_path / "chk", interval_batches=1)
    STRING_JOBS[name](env, _new_keys_every_second()).collect("out")
    env.execute()
    per_second = len(sizes) // SECONDS
    early, late = max(sizes[2 * per_second:6 * per_second]), max(sizes[-4 * per_second:])
    assert early > 0, "the snapshots held no interned strings (the measure saw nothing)"
    assert late <= 1.2 * early, f"the snapshots' strings grew from {early} to {late} bytes"


@pytest.mark.parametrize("name, parallelism, grouping", [
    ("tumbling", 1, "hash"), slow("tumbling", 2, "hash"), slow("tumbling", 2, "sort"),
    ("session", 1, "hash"), slow("window_join", 1, "hash"), ("window_join", 1, "sort")])
def test_resume_after_strings_were_released_equals_the_reference(name, parallelism, grouping, tmp_path, monkeypatch):
    """Strings released at every firing (their ids handed out again at once), crashes, and resumes
    from snapshots with free ids among the interned strings."""
    from grizzly_py.engine.interning import StringInterner
    monkeypatch.setattr(StringInterner, "due", property(lambda self: True))
    batches = _new_keys_every_second()
    build = STRING_JOBS[name]
    result = run_with_crashes(build, batches, [9, 30, 31], tmp_path / "chk", parallelism=parallelism, grouping=grouping)
    expected, _ = reference.run(build(gz.StreamEnvironment(), batches).node)
    assert_tables_equal(result["out"], expected)


# ----------------------------------------------------------------------------------------------
# restored tables: placement
# ----------------------------------------------------------------------------------------------
@given(st.lists(st.integers(0, (1 << 63) - 1), unique=True, max_size=700))
def test_hashed_positions_are_reachable_by_linear_probing(tags):
    tags = np.array(tags, dtype=np.uint64) | np.uint64(1 << 63)
    capacity = table_capacity(len(tags))
    assert 2 * len(tags) <= capacity
    pos = hashed_positions(tags.view(np.int64), capacity)
    assert len(set(pos.tolist())) == len(tags)
    occupied = np.zeros(capacity, dtype=bool)
    occupied[pos] = True
    for tag, p in zip(tags, pos):  # no empty slot between an entry's home and its place
        home = int(tag) & (capacity - 1)
        walk = [(home + i) % capacity for i in range((p - home) % capacity + 1)]
        assert occupied[walk].all()


# ----------------------------------------------------------------------------------------------
# accounting
# ----------------------------------------------------------------------------------------------
def test_accounting_in_metrics(tmp_path):
    batches = _data().to_batches(max_chunksize=100)
    env = gz.StreamEnvironment()
    _chained(env, batches).collect("out")
    result = env.execute()
    acc = result.metrics["accounting"]
    assert acc["ok"] and acc["records_in"] == 3000 == acc["records_read"]
    (q,) = acc["queries"]
    first, second = q["pipelines"]
    assert q["records_in"] == 3000 == first["rows_in"] == first["filtered"] + first["late"] + first["contributing"]
    assert q["records_in"] + q["results"] == q["filtered"] + q["late"] + q["into_state"] + q["records_out"]
    assert q["late"] == first["late"] + second["late"] == result.metrics["late_records"]
    assert first["contributing_means"] == "rows aggregated into windows"
    assert second["rows_in"] == result.metrics["queries"][0]["pipelines"][0]["rows_out"] == first["rows_out"]


def test_lost_records_are_an_internal_error(monkeypatch):
    """A kernel that silently skips a row of each batch (the driver counted it) fails the job,
    naming the pipeline and the numbers."""
    process = WindowKernel.process

    def lossy(self, batch, *args, **kwargs):
        return process(self, batch.slice(0, max(0, batch.num_rows - 1)), *args, **kwargs)
    monkeypatch.setattr(WindowKernel, "process", lossy)
    env = gz.StreamEnvironment()
    _tumbling_holistic(env, _data(rows=500).to_batches(max_chunksize=100)).collect("out")
    with pytest.raises(AccountingError, match=r"pipeline 0 \(window\): .*took in 495 rows, the driver handed it 500"):
        env.execute()


# ----------------------------------------------------------------------------------------------
# state-memory limit
# ----------------------------------------------------------------------------------------------
def test_state_memory_limit_fails_with_a_clear_error():
    env = gz.StreamEnvironment(state_memory_limit="256k")
    keys = arrow_stream(env, {"ts": list(range(50_000)), "k": list(range(50_000))}, sizes=[5_000] * 10)
    keys.key_by("k").window(tumbling(10**9)).aggregate(c=agg.count()).collect("out")
    with pytest.raises(StateMemoryLimitError, match=r"holds \d+ bytes .* the limit is 262144 bytes; pipeline 0 "
                                                    r"\(window\) of sink 'out'.*Hint"):
        env.execute()


@pytest.mark.parametrize("parallelism", [1, 2])
def test_state_memory_limit_counts_the_values_holistic_aggregates_keep(parallelism, every_row_a_morsel):
    """One key, one window: the table is a few KB, the median's values 8 bytes each (200,000 of
    them); the limit is between the two. (Rounds of a few batches, so that the check runs while
    the window is open under parallelism too.)"""
    from grizzly_py.engine.state_memory import state_bytes

    def build(env):
        s = arrow_stream(env, {"ts": list(range(200_000)), "k": [1] * 200_000, "v": list(range(200_000))},
                         sizes=[20_000] * 10)
        return s.key_by("k").window(tumbling(10**9)).aggregate(m=agg.median("v"))
    env = gz.StreamEnvironment(parallelism=parallelism, state_memory_limit="1m")
    build(env).collect("out")
    with pytest.raises(StateMemoryLimitError, match="the limit is 1048576 bytes"):
        env.execute()
    run = QueryRun(Query(build(gz.StreamEnvironment()).node, SinkSpec("collect", "out")))
    try:
        for batch in run.source.batches():
            run.feed(batch)
        kernel = run.runs[0].kernel
        assert state_bytes(kernel) >= 200_000 * 8  # the vectors: tables alone are far smaller
    finally:
        run.close()


@pytest.mark.parametrize("parallelism", [1, 2])
def test_state_memory_limit_not_reached(parallelism):
    env = gz.StreamEnvironment(parallelism=parallelism).configure(state_memory_limit=64 << 20)
    _sliding(env, _data().to_batches(max_chunksize=100)).collect("out")
    result = env.execute()
    assert result.metrics["state_memory_limit"] == 64 << 20


def test_parse_memory_size():
    assert parse_memory_size(1000) == 1000
    assert parse_memory_size("512m") == 512 << 20
    assert parse_memory_size("2 GiB") == 2 << 30
    assert parse_memory_size("64kb") == 64 << 10
    for bad in ("lots", "5 parsecs", 0, -1, True, 1.5):
        with pytest.raises((ValueError, TypeError)):
            parse_memory_size(bad)


# ----------------------------------------------------------------------------------------------
# kill -9
# ----------------------------------------------------------------------------------------------
CHILD = """
import sys, time
import numpy as np, pyarrow as pa
import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, agg, col
from grizzly_py.windows import SlidingEventTimeWindows, TumblingEventTimeWindows

outs, checkpoints, parallelism, delay, grouping = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(7)
n = 60_000
ts = np.sort(rng.integers(0, 600_000, n)) + rng.integers(-300, 300, n)
table = pa.table({"ts": ts, "k": rng.integers(0, 300, n), "v": rng.normal(size=n),
                  "name": rng.choice(["a", "b", "c", "d"], n)})

def slowly():
    for batch in table.to_batches(max_chunksize=400):
        time.sleep(delay)
        yield batch

def sink(stream, out):
    stream.sink_to_parquet(out) if out.endswith(".parquet") else stream.sink_to_csv(out)

env = gz.StreamEnvironment(parallelism=parallelism, grouping=grouping)
if checkpoints != "-":
    env.enable_checkpointing(checkpoints, interval=Time.milliseconds(20))
events = env.from_arrow(slowly(), timestamp="ts",
                        watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(200)))
sink(events.filter(col("v") > -1.0).key_by("k", "name")
     .window(SlidingEventTimeWindows.of(Time.seconds(20), Time.seconds(5)))
     .aggregate(c=agg.count(), s=agg.sum("v"), m=agg.median("v")), outs[0])
if len(outs) > 1:  # a second sink of the same job: a map over most rows
    sink(events.filter(col("v") > -2.0).select("ts", "k", "name", w=col("v") * 2.0), outs[1])
env.execute()
"""


def _outputs(folder: Path, stem: str, sinks: str) -> list[Path]:
    """The output files of a job with ``sinks`` ("parquet", "csv", or two joined by "+")."""
    return [folder / f"{stem}.{suffix}" for suffix in sinks.split("+")]


def _read_output(path: Path) -> pa.Table:
    return pq.read_table(path) if path.suffix == ".parquet" else pcsv.read_csv(path)


def _kill_test(tmp_path, kills: int, parallelisms, sinks, seed: int, grouping: str = "hash",
               pairs: float = 0.0) -> tuple[int, int]:
    """Per parallelism and entry of ``sinks`` (one job each; "parquet+csv": one job with both
    sinks), run the job killed with SIGKILL at random moments and restarted until ``kills`` kills
    are done, then to the end. A share ``pairs`` of the starts launch two resumers at once: each
    must finish, be killed, or be refused with ``CheckpointOwnedError`` (the other owns the
    directory); with ``pairs``, the last start's owner is paused (SIGSTOP) and a second resumer
    must be refused. Whenever a start ends without a kill, every output must equal an
    uninterrupted run's and no checkpoint may be left. Returns (kills, refused resumers)."""
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(CHILD))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    rnd = random.Random(seed)
    total = refused = 0

    def start(outs, chk, parallelism, delay="0.002"):
        return subprocess.Popen([sys.executable, str(script), ",".join(map(str, outs)), str(chk), str(parallelism),
                                 delay, grouping], env=env, stderr=subprocess.PIPE)

    def refused_while_paused(outs, chk, parallelism) -> list[subprocess.Popen]:
        """Once a resumer owns the directory, pause it and run a second one, which must be
        refused; the owner (resumed) is returned to run to its end."""
        while True:
            owner = start(outs, chk, parallelism)
            while owner.poll() is None and getattr(read_record(str(chk)), "pid", None) != owner.pid:
                time.sleep(0.005)
            if owner.poll() is None:
                break
            assert owner.wait() == 0, owner.stderr.read().decode()[-3000:]  # done first: again, from scratch
        owner.send_signal(signal.SIGSTOP)
        try:
            second = start(outs, chk, parallelism)
            _, err = second.communicate(timeout=300)
        finally:
            owner.send_signal(signal.SIGCONT)
        assert second.returncode != 0 and b"CheckpointOwnedError" in err and f"pid {owner.pid} ".encode() in err, \
            err.decode()[-3000:]
        return [owner]

    for parallelism in parallelisms:
        for suffix in sinks:
            killed = 0
            straight = _outputs(tmp_path, f"straight-{parallelism}", suffix)
            subprocess.run([sys.executable, str(script), ",".join(map(str, straight)), "-", str(parallelism), "0",
                            grouping], env=env, check=True, timeout=300)
            expected = [_read_output(p) for p in straight]
            outs, chk = _outputs(tmp_path, f"out-{parallelism}", suffix), tmp_path / f"chk-{parallelism}-{suffix}"
            while True:
                last = killed >= kills
                if last and pairs:
                    children = refused_while_paused(outs, chk, parallelism)
                    refused += 1
                else:
                    children = [start(outs, chk, parallelism) for _ in range(2 if rnd.random() < pairs else 1)]
                if not last:  # ~1.4 s of start-up and compiling, then ~1.5 s of batches and snapshots
                    deadline = time.monotonic() + rnd.uniform(0.8, 3.0)
                    for child in children:
                        try:
                            child.wait(timeout=max(0.0, deadline - time.monotonic()))
                        except subprocess.TimeoutExpired:
                            child.send_signal(signal.SIGKILL)
                ended_by_kill = False
                for child in children:
                    _, err = child.communicate(timeout=300)
                    if child.returncode == -signal.SIGKILL:
                        ended_by_kill = True
                    elif child.returncode != 0:
                        assert b"CheckpointOwnedError" in err and b"is owned by another running job" in err, \
                            err.decode()[-3000:]
                        refused += 1
                if ended_by_kill:
                    killed += 1
                    continue
                for out, want in zip(outs, expected):
                    assert _read_output(out).equals(want), f"parallelism {parallelism}, {out.name}: output differs"
                assert not left_behind(chk), "a finished job leaves no checkpoint"
                if last:  # (a run that finished before its kill is checked too; the next starts afresh)
                    break
            total += killed
    return total, refused


@pytest.mark.parametrize("grouping", ["hash", "sort"])
@pytest.mark.slow
def test_kill_9_at_random_points(grouping, tmp_path):
    """A Parquet-writing job killed with SIGKILL at random moments (start-up, compiling, mid-run,
    while a snapshot or the output is written) and restarted until it completes writes the same
    file as an uninterrupted run; under hash and sort-based grouping."""
    start = time.monotonic()
    killed, _ = _kill_test(tmp_path, kills=6, parallelisms=[2], sinks=["parquet"], seed=int(time.time()),
                           grouping=grouping)
    assert killed == 6
    assert time.monotonic() - start < 120


@pytest.mark.slow
def test_chaos_two_sinks_and_concurrent_resumers(tmp_path):
    """A job with two sinks (a window query to Parquet, a map to CSV) killed with SIGKILL at
    random moments, a third of its restarts launching two resumers at once, the last one's owner
    paused while another resumer starts: both files equal an uninterrupted run's whenever a run
    completes, and every resumer that did not own the checkpoint directory was refused with the
    ownership error."""
    start = time.monotonic()
    seed = int(time.time())
    killed, refused = _kill_test(tmp_path, kills=16, parallelisms=[2], sinks=["parquet+csv"], seed=seed, pairs=0.35)
    assert killed == 16
    assert refused >= 1, f"seed {seed}: no second resumer met the first"
    assert time.monotonic() - start < 150


@pytest.mark.skipif(not os.environ.get("GRIZZLY_KILL_SOAK"), reason="soak: set GRIZZLY_KILL_SOAK=<kills>")
def test_kill_9_soak(tmp_path):
    """20 kills a round and grouping: single-sink Parquet and CSV jobs at parallelism 1 and 2, and
    the two-sink job with concurrent resumers."""
    kills = int(os.environ["GRIZZLY_KILL_SOAK"])
    for i in range(max(1, kills // 20)):
        round_dir = tmp_path / f"r{i}"
        round_dir.mkdir()
        for grouping in ("hash", "sort"):
            (round_dir / grouping).mkdir()
            _kill_test(round_dir / grouping, kills=3, parallelisms=[1, 2], sinks=["parquet", "csv", "parquet+csv"],
                       seed=i, grouping=grouping, pairs=0.3)


@pytest.mark.parametrize("build", [_session, _count, _window_join, _interval_join], ids=lambda b: b.__name__)
def test_state_memory_limit_measures_every_stateful_kind(build):
    env = gz.StreamEnvironment(state_memory_limit=1024)
    build(env, _data().to_batches(max_chunksize=100)).collect("out")
    with pytest.raises(StateMemoryLimitError, match="the limit is 1024 bytes"):
        env.execute()


def test_rejected_rows_of_a_source_that_ended_before_the_crash(tmp_path):
    """A CSV source with bad rows ends; the job crashes later in another source; the resumed job
    does not read the CSV again and still reports its rejected rows (and its accounts balance)."""
    data = _data(rows=400)
    src = tmp_path / "in.csv"
    pcsv.write_csv(data, src)
    lines = src.read_text().splitlines()
    lines[3] = lines[3].rsplit(",", 1)[0]
    src.write_text("\n".join(lines) + "\n")
    other = _data(rows=2000, seed=5).to_batches(max_chunksize=100)

    def job(crash_at=None):
        env = gz.StreamEnvironment()
        env.enable_checkpointing(tmp_path / "chk", interval_batches=1)
        a = env.from_csv(src, schema=data.schema, timestamp="ts", on_bad_rows="drop", block_size=4096)
        b = env.from_arrow(crashing(other, crash_at), timestamp="ts")
        a.union(b).key_by("k").window(tumbling(5000)).aggregate(c=agg.count()).collect("out")
        return env
    with pytest.raises(Crash):
        job(crash_at=15).execute()
    result = job().execute()
    assert result.metrics["rejected_records"] == 1
    assert result.metrics["accounting"]["records_read"] == 2400
    assert result.metrics["checkpoints"]["restored_from"] == 15


@pytest.mark.parametrize("parallelism, large", [(1, False), (2, False), (1, True), (3, True)])
def test_snapshot_of_a_dense_optimized_variant(parallelism, large, tmp_path, monkeypatch):
    """Adaptive variants: stages a few records long, so the optimized variant with its dense key
    placement runs when the snapshots are taken; the snapshot reads the dense tables and the
    resumed job restores the hashed placement (its controller starts from the generic stage).
    ``large``: the rules of dense tables beyond DENSE_MAX_BYTES for every table (capacities that
    are no power of two)."""
    from grizzly_py.codegen import specialize as specialize_module
    from grizzly_py.engine import checkpoint as checkpoint_module
    if large:
        monkeypatch.setattr(specialize_module, "DENSE_MAX_BYTES", 0)
    from grizzly_py.engine.adaptive import AdaptiveSettings
    quick = AdaptiveSettings(generic_records=2, profile_records=3, profile_sample=1, wait_for_compile=True,
                             counters="none")
    placements = []
    export = checkpoint_module.export_kernel

    def recording(kernel):
        placements.extend(p for p in getattr(kernel, "placement", []) if p is not None)
        return export(kernel)
    monkeypatch.setattr(checkpoint_module, "export_kernel", recording)

    def build(env, data):
        return _bounded(env, data).key_by("k").window(tumbling(2000)).aggregate(c=agg.count(), s=agg.sum("n"),
                                                                                m=agg.median("n"))
    batches = _data(rows=3000, keys=40).to_batches(max_chunksize=100)
    expected, _ = reference.run(build(gz.StreamEnvironment(), batches).node)
    result = run_with_crashes(build, batches, [12, 20], tmp_path / "chk", parallelism, adaptive=quick)
    assert placements, "no snapshot was taken of a dense state"
    if large:
        assert all(cap & (cap - 1) for _, cap in placements), placements
    assert_tables_equal(result["out"], expected)
