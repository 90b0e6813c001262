"""The shared-state variant of parallel windows (``window_state="shared"``): every worker updates
one state with atomic instructions (codegen/shared_window.py, engine/shared_kernel.py).

Its results must equal the reference evaluator's for any parallelism and any cut of the batches
into morsels, also when tasks finish out of order and when the state must grow in the middle of
a batch (a kernel stops, the engine grows the tables or the ring between tasks and runs the rest
of the morsel again: no record lost or counted twice, filtered and late records counted once).
The ``tiny_state`` fixture starts every table at 2 entries and the ring at 2 slots, so that the
random queries stop and grow all the time and exercise every stop path.
"""

from __future__ import annotations

import ctypes
import random
import threading

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import (NUMERIC, QueryCase, Step, arrow_stream, assert_tables_equal, can_be_key, expressions,
                        stateless_cases, tumbling)

import grizzly_py as gz
from grizzly_py import agg, col, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.codegen import abi
from grizzly_py.codegen.module import CodegenOptions, generate_pipeline
from grizzly_py.codegen.shared_window import shared_state_unsupported
from grizzly_py.engine.kernels import _ResultBuffers
from grizzly_py.engine.local import run_job
from grizzly_py.engine.shared_kernel import SharedWindowKernel
from grizzly_py.physical import build_physical_plan
from grizzly_py.physical.pipelines import SourceInput
from grizzly_py.plan import Query
from grizzly_py.windows import EventTimeSessionWindows, SlidingEventTimeWindows
from marks import slow

i64 = pa.int64()
INT64_MAX = 2**63 - 1
_P, _I64 = ctypes.c_void_p, ctypes.c_int64


@pytest.fixture
def tiny_state(monkeypatch):
    """Tables of 2 entries and a ring of 2 slots to start with: kernels stop and the state grows
    all the time."""
    monkeypatch.setattr(SharedWindowKernel, "initial_slots", 2)
    monkeypatch.setattr(SharedWindowKernel, "initial_table_capacity", 2)


def run(build, parallelism, window_state="shared"):
    env = gz.StreamEnvironment(parallelism=parallelism, window_state=window_state)
    build(env).collect("out")
    result = env.execute()
    return result["out"], result.metrics


def window_pipeline(metrics) -> dict:
    return next(p for p in metrics["queries"][0]["pipelines"] if p["kind"] == "window")


def check_shared(build, parallelism, expect_shared=True):
    """The shared variant at ``parallelism`` against the reference (results, late records) and
    against the thread-local variant on one worker (filtered records)."""
    try:
        expected, expected_metrics = reference.run(build(gz.StreamEnvironment(parallelism=1)).node)
    except AggregateOverflowError:
        with pytest.raises(AggregateOverflowError):
            run(build, parallelism)
        return None
    actual, metrics = run(build, parallelism)
    assert_tables_equal(actual, expected)
    assert metrics["late_records"] == expected_metrics["late_records"], "late record counts differ"
    _, serial = run(build, 1, "thread_local")
    assert metrics["filtered_records"] == serial["filtered_records"], "filtered record counts differ"
    assert metrics["records_in"] == serial["records_in"]
    if expect_shared:
        assert window_pipeline(metrics)["window_state"] == "shared"
    return metrics


# ----------------------------------------------------------------------------------------------
# random queries: tumbling windows of atomic aggregates
# ----------------------------------------------------------------------------------------------
ATOMIC = ("count", "count_arg", "sum", "min", "max", "avg")


@st.composite
def shared_cases(draw, max_rows: int = 25, max_repeat: int = 1) -> QueryCase:
    """A random query ending in a keyed or global tumbling or sliding event-time window whose
    aggregates all have atomic updates (count, sum, avg, min, max of ints and floats)."""
    case, stream = draw(stateless_cases(max_rows, max_repeat))
    schema = stream.schema
    keys = draw(st.lists(st.sampled_from([f.name for f in schema if can_be_key(f)] or ["-"]), unique=True,
                         max_size=2))
    keys = [k for k in keys if k != "-"]
    calls = {}
    for i in range(draw(st.integers(1, 4))):
        func = draw(st.sampled_from(ATOMIC))
        if func == "count":
            calls[f"agg{i}"] = agg.count()
            continue
        arg = draw(expressions(schema, draw(st.sampled_from(NUMERIC)), depth=2))
        calls[f"agg{i}"] = agg.count(arg) if func == "count_arg" else getattr(agg, func)(arg)
    size = draw(st.integers(1, 30))
    assigner = tumbling(size) if draw(st.booleans()) else \
        SlidingEventTimeWindows.of(gz.Time.milliseconds(size), gz.Time.milliseconds(draw(st.integers(1, size))))
    head = [Step("key_by", tuple(keys)), Step("window", (assigner,))] if keys else [Step("window_all", (assigner,))]
    case.steps.extend(head + [Step("aggregate", kwargs=calls)])
    return case


def reads_the_source(case: QueryCase) -> bool:
    """Whether the case's window pipeline reads the source: a computed string key is materialized
    by a pipeline of its own, and a window reading another pipeline's output runs on one worker,
    in stream order, with thread-local state."""
    window = build_physical_plan(Query(case.build(gz.StreamEnvironment()).node)).pipelines[-1]
    return isinstance(window.input, SourceInput)


SETTINGS = dict(max_examples=max(settings().max_examples // 2, 5),
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], deadline=None)


@settings(**SETTINGS)
@given(shared_cases(), st.integers(2, 8))
@pytest.mark.slow
def test_random_shared_windows_match_reference(every_row_a_morsel, random_delays, case, parallelism):
    check_shared(case.build, parallelism, expect_shared=reads_the_source(case))


@settings(**SETTINGS)
@given(shared_cases(max_rows=20, max_repeat=4), st.integers(1, 8))
@pytest.mark.slow
def test_random_shared_windows_match_reference_while_the_state_grows(every_row_a_morsel, tiny_state, case,
                                                                       parallelism):
    check_shared(case.build, parallelism, expect_shared=reads_the_source(case))


# ----------------------------------------------------------------------------------------------
# growth in the middle of a batch
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("parallelism", [slow(1), 2, slow(4)])
def test_table_growth_mid_batch_loses_nothing(every_row_a_morsel, parallelism):
    # 60,000 distinct keys in a few windows: every table starts at 1024 entries and grows several
    # times while the workers insert; a filter drops a third of the rows and some rows are late
    n = 60_000
    rng = np.random.default_rng(5)
    ts = np.arange(n) // 20_000 * 100 + rng.integers(0, 100, n)
    ts[::997] = 0  # late once the first window fired
    data = {"ts": pa.array(ts, i64), "k": pa.array(rng.permutation(n), i64),
            "v": pa.array(rng.integers(-1000, 1000, n), i64), "f": pa.array(rng.random(n))}

    def build(env):
        return arrow_stream(env, data, sizes=[20_000, 20_000, 20_000]).filter(col("v") % 3 != 0) \
            .key_by("k").window(tumbling(100)) \
            .aggregate(n=agg.count(), s=agg.sum("v"), lo=agg.min("f"), hi=agg.max("v"), m=agg.avg("f"))

    metrics = check_shared(build, parallelism)
    shared = window_pipeline(metrics)["shared_state"]
    assert shared["table_grows"] >= 3 and shared["stops"] >= 3
    assert metrics["late_records"] > 0


def test_ring_growth_with_many_open_windows(every_row_a_morsel):
    # a watermark far behind keeps hundreds of 1 ms windows open at once: the ring (64 slots to
    # start with) doubles until they fit
    rng = random.Random(9)
    n = 3000
    data = {"ts": [rng.randint(0, 600) for _ in range(n)], "k": pa.array([rng.randint(0, 5) for _ in range(n)], i64)}

    def build(env):
        return arrow_stream(env, data, sizes=[500] * 6, bound=1000).key_by("k").window(tumbling(1)) \
            .aggregate(n=agg.count(), s=agg.sum("k"))

    metrics = check_shared(build, 4)
    shared = window_pipeline(metrics)["shared_state"]
    assert shared["ring_grows"] >= 1 and shared["ring_slots"] >= 1024


@pytest.mark.parametrize("parallelism", [1, 3])
def test_stops_count_filtered_and_late_rows_once(every_row_a_morsel, tiny_state, parallelism):
    # tiny tables stop the blocked kernel in the middle of its blocks: the rows of a block after
    # the stop (filtered ones too) must count once, when the rest of the morsel runs again
    n = 9000
    data = {"ts": pa.array([0 if i % 101 == 0 else i // 3 for i in range(n)], i64),
            "k": pa.array([(i * 7919) % 4099 for i in range(n)], i64)}

    def build(env):
        return arrow_stream(env, data, sizes=[3000, 3000, 3000]).filter(col("k") % 5 != 0) \
            .key_by("k").window(tumbling(1000)).aggregate(n=agg.count())

    metrics = check_shared(build, parallelism)
    assert window_pipeline(metrics)["shared_state"]["stops"] >= 3
    assert metrics["filtered_records"] == sum(1 for i in range(n) if ((i * 7919) % 4099) % 5 == 0)


# ----------------------------------------------------------------------------------------------
# int64 sums: overflow is reported, wrap-around that comes back is not
# ----------------------------------------------------------------------------------------------
def test_int_sum_overflow_is_reported_under_the_shared_state(every_row_a_morsel, random_delays):
    data = {"ts": list(range(40)), "v": pa.array([INT64_MAX // 16] * 40, i64)}

    def build(env):
        return arrow_stream(env, data, sizes=[10] * 4).window_all(tumbling(1000)).aggregate(s=agg.sum("v"))

    for parallelism in (1, 4, 8):
        with pytest.raises(AggregateOverflowError, match="sum overflow"):
            run(build, parallelism)


@pytest.mark.parametrize("parallelism", [2, 5])
def test_int_sum_wrapping_and_coming_back_is_exact(every_row_a_morsel, random_delays, parallelism):
    # the running sum leaves int64 in either direction, in whatever order the workers add, and
    # the final sums fit: no error, exact results
    big = INT64_MAX // 2 + 1
    values = [big, big, big, -big, -big, -big + 7, -big, -big, -big, big, big, big - 3] * 5
    data = {"ts": list(range(len(values))), "k": pa.array([i % 2 for i in range(len(values))], i64),
            "v": pa.array(values, i64)}

    def build(env):
        return arrow_stream(env, data, sizes=[12] * 5).key_by("k").window(tumbling(1000)) \
            .aggregate(s=agg.sum("v"), m=agg.avg("v"), lo=agg.min("v"), hi=agg.max("v"))

    check_shared(build, parallelism)


# ----------------------------------------------------------------------------------------------
# fallback, option, explain
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("aggregate, reason", [(agg.var_pop("v"), "var_pop"), (agg.median("v"), "median"),
                                               (agg.mode("v"), "mode"), (agg.count_distinct("v"), "count_distinct"),
                                               (agg.stddev_samp("v"), "stddev_samp"), (agg.top_k("v", 3), "top_k")])
def test_non_atomic_aggregates_fall_back_to_thread_local(every_row_a_morsel, aggregate, reason):
    rng = random.Random(2)
    data = {"ts": [i + rng.randint(-5, 5) for i in range(400)], "k": pa.array([i % 7 for i in range(400)], i64),
            "v": pa.array([rng.random() for _ in range(400)])}

    def build(env):
        return arrow_stream(env, data, sizes=[100] * 4, bound=5).key_by("k").window(tumbling(50)) \
            .aggregate(n=agg.count(), x=aggregate)

    metrics = check_shared(build, 3, expect_shared=False)
    p = window_pipeline(metrics)
    assert p["window_state"] == "thread_local"
    assert reason in p["window_state_fallback"] and "atomic" in p["window_state_fallback"]
    assert p["variant_history"][0]["window_state"] == "thread_local"


@pytest.mark.parametrize("window", ["session", "count"])
def test_session_and_count_windows_fall_back_to_thread_local(every_row_a_morsel, window):
    data = {"ts": [i * 3 for i in range(300)], "k": pa.array([i % 3 for i in range(300)], i64)}

    def build(env):
        keyed = arrow_stream(env, data, sizes=[100] * 3).key_by("k")
        windowed = keyed.window(EventTimeSessionWindows.with_gap(gz.Time.milliseconds(5))) if window == "session" \
            else keyed.count_window(7)
        return windowed.aggregate(n=agg.count(), s=agg.sum("ts"))

    metrics = check_shared(build, 2, expect_shared=False)
    assert window in window_pipeline(metrics)["window_state_fallback"]


@pytest.mark.parametrize("parallelism", [2, 4])
def test_sliding_windows_share_panes_while_the_state_grows(every_row_a_morsel, random_delays, tiny_state,
                                                           parallelism):
    # panes of gcd(50, 20) = 10 ms in the ring; tiny tables and ring grow while workers insert;
    # windows fire by merging their panes, a pane leaves once its last window fired
    rng = random.Random(4)
    n = 3000
    data = {"ts": [i // 2 + rng.randint(-15, 15) - (150 if i % 97 == 0 else 0) for i in range(n)],
            "k": pa.array([rng.randint(0, 60) for _ in range(n)], i64),
            "v": pa.array([rng.randint(-50, 50) for _ in range(n)], i64), "f": pa.array([rng.random() for _ in range(n)])}
    sliding = SlidingEventTimeWindows.of(gz.Time.milliseconds(50), gz.Time.milliseconds(20))

    def build(env):
        return arrow_stream(env, data, sizes=[300] * 10, bound=5).filter(col("v") != 0).key_by("k").window(sliding) \
            .aggregate(n=agg.count(), s=agg.sum("v"), lo=agg.min("f"), hi=agg.max("v"), m=agg.avg("f"))

    metrics = check_shared(build, parallelism)
    shared = window_pipeline(metrics)["shared_state"]
    assert shared["table_grows"] > 0 and shared["ring_grows"] > 0
    assert metrics["late_records"] > 0


def test_the_default_is_thread_local_and_unknown_values_are_rejected():
    assert gz.StreamEnvironment().window_state == "thread_local"
    with pytest.raises(ValueError, match="window_state"):
        gz.StreamEnvironment(parallelism=2, window_state="sharded")
    with pytest.raises(ValueError, match="window_state"):
        CodegenOptions(window_state="atomic")
    with pytest.raises(ValueError, match="window_state"):
        run_job([], window_state="both")

    def build(env):
        return arrow_stream(env, {"ts": list(range(10))}).window_all(tumbling(5)).aggregate(n=agg.count())

    _, metrics = run(build, 2, "thread_local")
    assert window_pipeline(metrics)["window_state"] == "thread_local"
    assert "window_state_fallback" not in window_pipeline(metrics)


def test_shared_ir_uses_atomic_instructions():
    env = gz.StreamEnvironment()
    stream = arrow_stream(env, {"ts": [1], "k": pa.array([1], i64), "v": pa.array([1.5])}).key_by("k") \
        .window(tumbling(10)).aggregate(n=agg.count(), s=agg.sum("k"), lo=agg.min("v"), m=agg.avg("v"))
    pipeline = build_physical_plan(Query(stream.node)).pipelines[0]
    shared = generate_pipeline(pipeline, CodegenOptions(window_state="shared"))
    local = generate_pipeline(pipeline)
    assert shared.trigger == "shared" and "shared window state" in shared.ir.splitlines()[1]
    process = shared.units["process"].ir
    for piece in ("atomicrmw add", "cmpxchg", "@gz_sring_enter", "@gz_sht_upsert", "store atomic"):
        assert piece in process
    assert "atomicrmw" not in local.units["process"].ir and "@gz_ht_upsert" in local.units["process"].ir


# ----------------------------------------------------------------------------------------------
# the trigger: exactly once, only when every worker has left the window
# ----------------------------------------------------------------------------------------------
def _loaded_kernel(workers: int = 4, windows: int = 24):
    """A kernel whose workers (threads) put ``windows`` windows of 50 records (13 keys) into the
    shared state, fewer than the ring holds before it must grow."""
    env = gz.StreamEnvironment()
    n = windows * 50
    data = {"ts": list(range(n)), "k": pa.array([i % 13 for i in range(n)], i64)}
    stream = arrow_stream(env, data).key_by("k").window(tumbling(50)).aggregate(n=agg.count())
    pipeline = build_physical_plan(Query(stream.node)).pipelines[0]
    kernel = SharedWindowKernel(generate_pipeline(pipeline, CodegenOptions(window_state="shared")), "test", workers)
    batch = pa.record_batch(data)
    threads = [threading.Thread(target=lambda w=w: kernel.process(batch.slice(w * n // workers, n // workers),
                                                                  abi.INT64_MIN, w)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return kernel, n


def test_concurrent_triggers_emit_each_window_exactly_once():
    kernel, n = _loaded_kernel()
    try:
        slots = kernel.ring.slots()
        assert (slots[slots[:, abi.RING_SLOT_STATUS] == abi.RING_SLOT_OPEN, abi.RING_SLOT_USERS] == 0).all()  # every worker left
        emit = kernel.function("state", "shared_emit", _I64, _P, _I64, _P, _P)
        outs, counts = [], []
        barrier = threading.Barrier(6)
        lock = threading.Lock()

        def trigger():
            out = _ResultBuffers(kernel, n)
            state = np.zeros(abi.STATE_WORDS, dtype=np.int64)
            barrier.wait()
            got = emit(kernel.ring.address, abi.INT64_MAX, out.descriptor, state.ctypes.data)
            with lock:
                outs.append(out)
                counts.append(got)
        threads = [threading.Thread(target=trigger) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sum(counts) == 24 * 13  # every (window, key) once, whichever trigger took it
        starts = np.concatenate([o.window_start[:c] for o, c in zip(outs, counts)])
        keys = np.concatenate([o.keys[0][0][:c] for o, c in zip(outs, counts)])
        views = np.concatenate([o.aggs[0][0][:c] for o, c in zip(outs, counts)])
        assert len(set(zip(starts.tolist(), keys.tolist()))) == 24 * 13
        assert views.sum() == n
        assert (kernel.ring.slots()[:, abi.RING_SLOT_STATUS] != abi.RING_SLOT_OPEN).all()
    finally:
        kernel.close()


def test_a_window_with_a_worker_inside_is_not_emitted():
    kernel, n = _loaded_kernel(workers=2, windows=3)
    try:
        slots = kernel.ring.slots()
        inside = int(np.nonzero(slots[:, abi.RING_SLOT_STATUS] == abi.RING_SLOT_OPEN)[0][0])
        slots[inside, abi.RING_SLOT_USERS] = 1  # as if a worker still held it
        with pytest.raises(RuntimeError, match="still inside"):
            kernel.fire(abi.INT64_MAX)
        emit = kernel.function("state", "shared_emit", _I64, _P, _I64, _P, _P)
        out = _ResultBuffers(kernel, n)
        got = emit(kernel.ring.address, abi.INT64_MAX, out.descriptor, kernel.state_ptr)
        assert got == 2 * 13  # the two other windows; the held one stays open, its claim given back
        assert slots[inside, abi.RING_SLOT_STATUS] == abi.RING_SLOT_OPEN and slots[inside, abi.RING_SLOT_CLAIM] == 0
        slots[inside, abi.RING_SLOT_USERS] = 0  # the last worker leaves: now it fires
        table = kernel.fire(abi.INT64_MAX)
        assert table.num_rows == 13 and sum(table.column("n").to_pylist()) == 50
    finally:
        kernel.close()


@pytest.mark.parametrize("parallelism", [1, 3])
def test_an_error_after_a_stop_names_the_row_of_the_source_batch(every_row_a_morsel, tiny_state, parallelism):
    # tiny tables stop the kernels before they reach the bad row; the rerun must still report
    # the row within the source batch
    ts = list(range(40))
    ts[20 + 17] = 2**63 - 5  # batch 1, row 17: too close to the int64 limit for its window
    data = {"ts": pa.array(ts, i64), "k": pa.array(range(40), i64)}

    def build(env):
        return arrow_stream(env, data, sizes=[20, 20]).key_by("k").window(tumbling(10)).aggregate(n=agg.count())

    with pytest.raises(gz.BadInputError, match="batch 1, row 17"):
        run(build, parallelism)


def test_a_worker_that_fails_leaves_its_window(every_row_a_morsel):
    # the bad row comes after rows of an open window: the failing kernel still leaves it (its
    # trigger counter is back at zero), so the state stays consistent for close()
    env = gz.StreamEnvironment()
    data = {"ts": pa.array([1, 2, 3, 2**63 - 5], i64), "k": pa.array([1, 2, 1, 2], i64)}
    stream = arrow_stream(env, data).key_by("k").window(tumbling(10)).aggregate(n=agg.count())
    pipeline = build_physical_plan(Query(stream.node)).pipelines[0]
    kernel = SharedWindowKernel(generate_pipeline(pipeline, CodegenOptions(window_state="shared")), "test", 2)
    try:
        with pytest.raises(gz.BadInputError, match="row 3"):
            kernel.process(pa.record_batch(data), abi.INT64_MIN, 1)
        slots = kernel.ring.slots()
        assert (slots[:, abi.RING_SLOT_USERS] == 0).all() and (slots[:, abi.RING_SLOT_STATUS] == abi.RING_SLOT_OPEN).sum() == 1
    finally:
        kernel.close()


def test_sliding_windows_with_gaps_say_why_they_keep_no_shared_state():
    env = gz.StreamEnvironment()
    s = env.from_arrow(pa.table({"ts": [1, 2], "k": [1, 2]}), timestamp="ts").key_by("k")
    gaps = s.window(SlidingEventTimeWindows.of(gz.Time.milliseconds(5), gz.Time.milliseconds(10))).aggregate(n=agg.count())
    pipeline = build_physical_plan(Query(gaps.node)).pipelines[0]
    assert shared_state_unsupported(pipeline) == "sliding windows with gaps (slide longer than the window)"
