"""Parallel execution: results under any parallelism equal the reference evaluator's.

The cost model normally keeps small batches in one morsel (a task would cost more than it
saves); these tests make it cut every batch into as many morsels as there are workers (or rows),
so that tiny hypothesis inputs really run as concurrent tasks on several state blocks. Delays
injected before each kernel call make tasks finish out of order; the reorder buffer must still
deliver stateless output in input order and never strand a result; errors inside a task must
surface without a deadlock.
"""

from __future__ import annotations

import random
import threading
import time

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import arrow_stream, assert_tables_equal, query_cases, tumbling

import grizzly_py as gz
from grizzly_py import agg, col, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.engine import kernels
from grizzly_py.engine.parallel import CostModel, WorkerPool, align_morsels, numa_nodes, parse_cpulist, plan_morsels
from grizzly_py.engine.reorder import ReorderBuffer
from grizzly_py.windows import SlidingEventTimeWindows
from marks import slow

i64 = pa.int64()


def run_parallel(build, parallelism):
    env = gz.StreamEnvironment(parallelism=parallelism)
    build(env).collect("out")
    result = env.execute()
    return result["out"], result.metrics


def check_parallel(build, parallelism):
    try:
        expected, expected_metrics = reference.run(build(gz.StreamEnvironment(parallelism=1)).node)
    except AggregateOverflowError:
        with pytest.raises(AggregateOverflowError):
            run_parallel(build, parallelism)
        return
    actual, metrics = run_parallel(build, parallelism)
    assert_tables_equal(actual, expected)
    assert metrics["late_records"] == expected_metrics["late_records"], "late record counts differ"
    assert metrics["parallelism"] == parallelism


# ----------------------------------------------------------------------------------------------
# the reorder buffer
# ----------------------------------------------------------------------------------------------
def test_reorder_buffer_sends_in_serial_order_whatever_the_completion_order():
    for trial in range(20):
        out, n, capacity = [], 200, 16
        buffer = ReorderBuffer(capacity, out.append)
        rng = random.Random(trial)
        delays = [rng.random() * 0.0005 for _ in range(n)]
        added = [False] * n

        def worker(serial):
            time.sleep(delays[serial])
            added[serial] = buffer.send(serial, serial)

        threads = []
        for s in range(n):
            if s >= capacity:  # like the engine: wait for the oldest task, so the serial numbers
                threads[s - capacity].join(timeout=30)  # in flight stay within the buffer
            t = threading.Thread(target=worker, args=(s,))
            t.start()
            threads.append(t)
        for t in threads:
            t.join(timeout=30)
        assert not any(t.is_alive() for t in threads), "a worker hung"
        assert all(added), f"trial {trial}: a send was rejected"
        assert out == list(range(n)), f"trial {trial}: out of order or missing"
        assert buffer.pending == 0 and buffer.next == n  # nothing stranded


def test_reorder_buffer_rejects_serials_beyond_its_window_and_holds_early_ones():
    out = []
    buffer = ReorderBuffer(4, out.append)
    assert not buffer.send(4, "too far")
    assert buffer.send(2, "c") and buffer.send(1, "b") and out == []
    assert buffer.send(0, "a") and out == ["a", "b", "c"]
    assert buffer.send(5, "f") and buffer.send(3, "d") and out == ["a", "b", "c", "d"]
    assert buffer.pending == 1


def test_reorder_buffer_reports_a_downstream_error():
    def downstream(x):
        raise ValueError("sink failed")
    buffer = ReorderBuffer(2, downstream)
    with pytest.raises(ValueError, match="sink failed"):
        buffer.send(0, "a")


def test_morsels_cover_the_batch_and_the_cost_model_avoids_tiny_tasks():
    assert plan_morsels(10, 3) == [(0, 4), (4, 3), (7, 3)]
    assert plan_morsels(2, 8) == [(0, 1), (1, 1)]
    model = CostModel(per_record_ns=2.0, task_overhead_ns=30_000)
    assert model.morsel_count(1000, 8) == 1           # 2 us of work: one task
    assert model.morsel_count(10_000_000, 8) == 8     # 20 ms of work: every worker
    assert model.morsel_count(64_000, 8) == 2         # 128 us: two tasks beat one, three cost more
    assert model.group_rows(2) >= 2 * model.smallest_morsel
    # the job's first round is a quarter of one (nothing runs while the driver reads it), never
    # below a morsel per worker
    assert model.group_rows(2, first=True) == 2 * max(model.smallest_morsel, model.group_rows(2) // 8)
    assert CostModel(per_record_ns=1e6).group_rows(2, first=True) == 2 * CostModel(per_record_ns=1e6).smallest_morsel
    # a grouped round: the driver runs the first morsel, smaller by its own Python per round
    model.driver_ns = 1e6                             # 1 ms of reading and preparing batches
    morsels, driver = model.round_morsels(3_000_000, 2)
    assert driver and morsels == [(0, 1_250_000), (1_250_000, 1_750_000)]  # 2.5 + 1 ms and 3.5 ms
    model.driver_ns = 1e9                             # the driver is busy all round: no share
    assert model.round_morsels(3_000_000, 2) == ([(0, 1_500_000), (1_500_000, 1_500_000)], False)
    assert model.round_morsels(3_000_000, 1) == ([(0, 3_000_000)], False)
    model.observe_driver(0.002)
    assert 1e6 < model.driver_ns < 1e9
    model.observe(1_000_000, 0.1)                     # 100 ns per record measured
    assert model.per_record_ns > 50
    assert model.smallest_morsel < 10_000


def test_the_per_record_estimate_starts_over_when_other_code_runs():
    """A variant switch changes the per-record cost (the optimized variant runs ~2x faster than
    the generic one): the estimate restarts from the new code's first task, so that the
    driver's share of the next round is planned with the new speed."""
    model = CostModel(per_record_ns=2.0)
    for _ in range(20):
        model.observe(1_000_000, 0.008, code="generic")     # 8 ns per record
    assert model.per_record_ns == pytest.approx(8.0)
    model.observe(1_000_000, 0.003, code="generic")         # the same code: averaged in
    assert model.per_record_ns > 7.5
    model.observe(1_000_000, 0.003, code="optimized")       # other code: its own figure
    assert model.per_record_ns == pytest.approx(3.0)
    model.observe(1_000_000, 0.005, code="optimized")
    assert 3.0 < model.per_record_ns < 5.0                  # then averaged again
    model.observe(1_000_000, 0.008)                         # no code given: averaged in
    assert model.per_record_ns < 8.0
    model.driver_ns = 1e6                                   # the driver's share of a round is
    before = model.round_morsels(3_000_000, 2)[0][0][1]     # smaller by its own 1 ms ...
    model.observe(1_000_000, 0.001, code="faster")          # ... which is more rows of a
    assert model.round_morsels(3_000_000, 2)[0][0][1] < before  # faster kernel


def test_aligned_morsels_hold_whole_batches_near_the_cut_asked_for():
    sizes = [100] * 10                                # ten batches of 100 rows
    asked = [(0, 260), (260, 370), (630, 370)]
    assert align_morsels(asked, sizes) == [(0, 300), (300, 300), (600, 400)]  # nearest boundaries
    assert align_morsels([(0, 40), (40, 960)], sizes) == [(0, 0), (0, 1000)]  # too small for a batch
    assert align_morsels([(0, 500), (500, 500)], [600, 400]) == [(0, 600), (600, 400)]
    # one batch of the round: whole, it would be twice the largest morsel asked for
    assert align_morsels([(0, 500), (500, 500)], [1000]) is None
    # boundaries never cross: each morsel starts where the one before ends
    for cut in range(0, 1001, 7):
        aligned = align_morsels([(0, cut), (cut, 1000 - cut)], [150, 30, 400, 20, 400])
        if aligned is not None:
            assert aligned[0][0] == 0 and aligned[0][0] + aligned[0][1] == aligned[1][0]
            assert sum(n for _, n in aligned) == 1000 and aligned[1][0] in (0, 150, 180, 580, 600, 1000)


def test_worker_pool_runs_tasks_on_distinct_workers_and_counts_them():
    pool = WorkerPool(3)
    try:
        seen = pool.run_all([(lambda w: (time.sleep(0.01), w)[1], 5) for _ in range(9)])
        assert set(seen) <= {0, 1, 2}
        assert sum(s["tasks"] for s in pool.metrics()) == 9
        assert sum(s["records"] for s in pool.metrics()) == 45
        with pytest.raises(ZeroDivisionError):
            pool.run_all([(lambda w: 1 / 0, 1), (lambda w: 1, 1)])
    finally:
        pool.shutdown()


# ----------------------------------------------------------------------------------------------
# queries: any parallelism gives the reference's results
# ----------------------------------------------------------------------------------------------
@settings(max_examples=max(settings().max_examples // 2, 5), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query_cases(), st.integers(2, 8))
def test_random_queries_match_reference_under_parallelism(every_row_a_morsel, case, parallelism):
    check_parallel(case.build, parallelism)


@pytest.mark.parametrize("parallelism", [2, 3, 8])
def test_stateless_output_keeps_input_order_with_out_of_order_tasks(every_row_a_morsel, random_delays, parallelism):
    n = 3000
    data = {"ts": list(range(n)), "v": pa.array([(i * 7919) % 1000 for i in range(n)], i64)}

    def build(env):
        return arrow_stream(env, data, sizes=[100] * 30).filter(col("v") % 3 != 0).select("ts", w=col("v") * 2)

    actual, metrics = run_parallel(build, parallelism)
    assert actual.column("ts").to_pylist() == [i for i in range(n) if ((i * 7919) % 1000) % 3 != 0]
    check_parallel(build, parallelism)
    assert sum(w["tasks"] for w in metrics["workers"]) >= 30


def test_grouped_tumbling_batches_fire_like_one_batch_at_a_time(monkeypatch):
    # rounds of 2-3 source batches: each batch's rows are judged late against the watermark
    # after the batch before it, not the round's, and windows fire once per round
    monkeypatch.setattr(CostModel, "morsel_count", lambda self, rows, workers: max(1, min(workers, rows)))
    monkeypatch.setattr(CostModel, "group_rows", lambda self, workers, first=False: 5)
    data = {"ts": [0, 9, 25, 3, 30, 12, 50, 41, 5, 60], "k": pa.array([1, 2, 1, 1, 2, 2, 1, 1, 2, 1], i64)}

    def build(env):
        return arrow_stream(env, data, sizes=[2, 2, 2, 2, 2], bound=3).key_by("k").window(tumbling(10)) \
            .aggregate(n=agg.count(), s=agg.sum("ts"))

    actual, metrics = run_parallel(build, 2)
    expected, expected_metrics = reference.run(build(gz.StreamEnvironment(parallelism=1)).node)
    assert_tables_equal(actual, expected)
    assert metrics["late_records"] == expected_metrics["late_records"] == 2  # 12 and 5


@pytest.mark.slow
def test_the_driver_runs_a_share_of_each_grouped_round_itself(monkeypatch):
    # rounds of 60,000 rows: the driver runs a (smaller) morsel of each round itself while the
    # other worker runs its own, and the windows equal the reference
    monkeypatch.setattr(CostModel, "group_rows", lambda self, workers, first=False: 60_000)
    n, rng = 300_000, np.random.default_rng(5)
    data = {"ts": np.sort(rng.integers(0, 30_000, n)), "k": rng.integers(0, 500, n), "v": rng.integers(-9, 9, n)}

    def build(env):
        return arrow_stream(env, data, sizes=[10_000] * 30, bound=5).filter(col("v") > -5).key_by("k") \
            .window(tumbling(1000)).aggregate(n=agg.count(), s=agg.sum("v"))

    actual, metrics = run_parallel(build, 2)
    expected, _ = reference.run(build(gz.StreamEnvironment(parallelism=1)).node)
    assert_tables_equal(actual, expected)
    driver = [w for w in metrics["workers"] if w["worker"] == "driver"]
    assert driver and 0 < driver[0]["records"] < n
    assert sum(w["records"] for w in metrics["workers"]) == n


@pytest.mark.slow
def test_the_first_grouped_round_is_shorter_than_the_next(monkeypatch):
    # nothing runs while the driver reads the job's first round, so it is a quarter of a round:
    # count the rows of each round the driver starts (the cost model's estimate held fixed)
    import functools
    from grizzly_py.engine import local
    from grizzly_py.engine.rounds import RoundPlanner
    monkeypatch.setattr(CostModel, "observe", lambda self, records, seconds, code=None: None)
    # rounds of 40 us of work at 2 ns a record: 20,000 rows a worker; morsels of 1,000 rows or more
    monkeypatch.setattr(local, "CostModel", functools.partial(
        CostModel, round_ms=0.04, round_overhead_ns=1000.0, task_overhead_ns=100.0, min_rows=1000))
    rounds, flush = [], RoundPlanner.flush

    def counted(self):
        if self.group:
            rounds.append(self.group_rows)
        flush(self)
    monkeypatch.setattr(RoundPlanner, "flush", counted)
    n, rng = 200_000, np.random.default_rng(9)
    data = {"ts": np.sort(rng.integers(0, 20_000, n)), "k": rng.integers(0, 50, n)}

    def build(env):
        return arrow_stream(env, data, sizes=[2_000] * 100, bound=5).key_by("k") \
            .window(tumbling(1000)).aggregate(n=agg.count())

    actual, _ = run_parallel(build, 2)
    expected, _ = reference.run(build(gz.StreamEnvironment(parallelism=1)).node)
    assert_tables_equal(actual, expected)
    assert rounds[0] == 10_000 and set(rounds[1:-1]) == {40_000} and sum(rounds) == n


@pytest.mark.slow
def test_chained_rounds_read_the_event_times_before_each_task_once(monkeypatch):
    # rounds of 60,000 rows cut at batch boundaries; out-of-order event times with late records,
    # so every batch's watermark matters. Planned tasks read the largest event time of the rows
    # before them themselves (RoundBases, natively) and the driver reads none; unplanned ones
    # (a controller that has not settled) have the driver read those before the round's last
    # task; batches too large to cut whole are read one by one by the driver. All equal the
    # reference, late records included.
    from grizzly_py.engine import task_parts, watermarks
    from grizzly_py.engine.adaptive import AdaptiveSettings
    monkeypatch.setattr(CostModel, "group_rows", lambda self, workers, first=False: 60_000)
    reads, native = [], []
    real, column_max = watermarks.batch_max_event_time, task_parts.PartsTable.column_max
    monkeypatch.setattr(watermarks, "batch_max_event_time",
                        lambda batch, column: reads.append(1) or real(batch, column))
    monkeypatch.setattr(task_parts.PartsTable, "column_max", lambda self, slot: native.append(len(self.rows))
                        or column_max(self, slot))
    n, rng = 300_000, np.random.default_rng(11)
    ts = np.arange(n) // 10 + rng.integers(-400, 400, n)  # up to 400 ms out of order, bound 50: late rows
    data = {"ts": ts, "k": rng.integers(0, 300, n), "v": rng.integers(-9, 9, n)}
    never_settles = AdaptiveSettings(generic_records=10**9)
    for adaptive, sizes, driver_reads in ((False, [5_000] * 60, "none"), (never_settles, [5_000] * 60, "some"),
                                          (False, [150_000] * 2, "all")):
        def build(env):
            return arrow_stream(env, data, sizes=sizes, bound=50).key_by("k") \
                .window(tumbling(1000)).aggregate(n=agg.count(), s=agg.sum("v"))

        reads.clear(), native.clear()
        env = gz.StreamEnvironment(parallelism=2, adaptive=adaptive)
        build(env).collect("out")
        result = env.execute()
        expected, ref_metrics = reference.run(build(gz.StreamEnvironment(parallelism=1)).node)
        assert_tables_equal(result["out"], expected)
        assert result.metrics["late_records"] == ref_metrics["late_records"] > 0
        if driver_reads == "none":  # each round's second task read the first task's batches
            assert not reads and len(native) == 5 and 0 < sum(native) < len(sizes)
        elif driver_reads == "some":
            assert not native and 0 < len(reads) < len(sizes) * 2 // 3  # (the driver's morsel is the smaller)
        else:
            assert not native and len(reads) >= len(sizes)


@pytest.mark.parametrize("window", ["tumbling", slow("sliding")])
def test_windows_merge_worker_states_with_out_of_order_tasks(every_row_a_morsel, random_delays, window):
    n = 4000
    rng = random.Random(3)
    data = {"ts": [i + rng.randint(-20, 20) for i in range(n)], "k": pa.array([rng.randint(0, 9) for _ in range(n)], i64),
            "v": pa.array([rng.random() for _ in range(n)])}
    assigner = tumbling(50) if window == "tumbling" else SlidingEventTimeWindows.of(gz.Time.milliseconds(50),
                                                                                    gz.Time.milliseconds(10))

    def build(env):
        return arrow_stream(env, data, sizes=[250] * 16, bound=10).key_by("k").window(assigner) \
            .aggregate(n=agg.count(), s=agg.sum("v"), lo=agg.min("v"), med=agg.median("v"), sd=agg.stddev_samp("v"))

    for parallelism in (2, 4):
        check_parallel(build, parallelism)


def test_an_error_inside_a_task_surfaces_without_deadlock(every_row_a_morsel):
    def build(env):
        return arrow_stream(env, {"ts": pa.array([1, 2, 3, 2**63 - 5, 4, 5], i64)}, sizes=[3, 3]) \
            .window_all(tumbling(10)).aggregate(n=agg.count())

    outcome = {}

    def job():
        try:
            run_parallel(build, 3)
        except BaseException as e:
            outcome["error"] = e

    t = threading.Thread(target=job)
    t.start()
    t.join(timeout=60)
    assert not t.is_alive(), "the job hung after a task failed"
    assert isinstance(outcome.get("error"), gz.BadInputError)
    assert "batch 1, row 0" in str(outcome["error"])  # the row within the source batch, not the morsel


def test_a_stateless_task_error_surfaces_without_deadlock(every_row_a_morsel, monkeypatch):
    real = kernels.ProjectKernel.process
    calls = {"n": 0}
    lock = threading.Lock()

    def failing(self, batch, *args, **kwargs):
        with lock:
            calls["n"] += 1
            n = calls["n"]
        if n == 7:
            raise RuntimeError("injected task failure")
        return real(self, batch, *args, **kwargs)
    monkeypatch.setattr(kernels.ProjectKernel, "process", failing)

    def build(env):
        return arrow_stream(env, {"ts": list(range(400))}, sizes=[20] * 20).filter(col("ts") % 2 == 0)

    with pytest.raises(RuntimeError, match="injected task failure"):
        run_parallel(build, 4)


def test_parallelism_auto_runs_and_reports_its_workers():
    def build(env):
        return arrow_stream(env, {"ts": list(range(100))}).window_all(tumbling(10)).aggregate(n=agg.count())

    actual, metrics = run_parallel(build, "auto")
    assert actual.column("n").to_pylist() == [10] * 10
    assert metrics["parallelism"] >= 1 and "per_record_ns" in metrics["cost_model"]


def test_numa_nodes_are_read_from_sysfs_and_workers_pin_only_with_several(tmp_path):
    assert parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    for node, cpus in (("node0", "0-1"), ("node1", "2-3"), ("node2", "")):
        (tmp_path / node).mkdir()
        (tmp_path / node / "cpulist").write_text(cpus + "\n")
    assert numa_nodes(str(tmp_path)) == [[0, 1], [2, 3]]  # a node without CPUs is left out
    assert numa_nodes(str(tmp_path / "missing")) == []
    pool = WorkerPool(2, nodes=[[0, 1]])
    try:
        assert pool.placement() == {"numa_nodes": 1, "pinned": False}
    finally:
        pool.shutdown()
