"""``grouping="auto"`` and ``window_state="auto"``: the adaptive controller switches a tumbling
window between hash and sort grouping, and between thread-local and shared state, at window
boundaries (``engine/regrouping.py``); every switch leaves the results, late records and record
accounting as they are without it.

The measured crossing points (over a million distinct keys per window) are far beyond test data,
so the tests set tiny ones (a handful of keys) and build the other kernel on the driver's thread:
switches then happen at random windows of random queries, both ways, at any parallelism.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import arrow_stream, assert_tables_equal, query_cases, tumbling
from test_adaptive import check  # the run (grouping="auto" is the default) equals the reference

import grizzly_py as gz
from grizzly_py import Time, agg, col, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.engine.adaptive import AdaptiveSettings
from grizzly_py.codegen.sort_grouping import regrouping_unsupported
from grizzly_py.engine.regrouping import GroupingChooser, KeySampler, StateChooser, host_cache_bytes
from grizzly_py.physical.pipelines import build_physical_plan
from grizzly_py.plan import Query
from grizzly_py.windows import SlidingEventTimeWindows

i64 = pa.int64()
FIXTURE_OK = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def tiny(keys: int = 3, confirm: int = 1, background: bool = False, **overrides) -> AdaptiveSettings:
    """Crossing points of ``keys`` distinct keys per window, so that small inputs switch."""
    return AdaptiveSettings(sort_min_distinct_keys=keys, sort_min_distinct_keys_holistic=keys,
                            grouping_confirm_windows=confirm, regroup_in_background=background,
                            cache_bytes=1, counters="none", **overrides)


def run(build, adaptive, parallelism: int = 1, grouping: str = "auto", window_state: str = "thread_local"):
    env = gz.StreamEnvironment(parallelism=parallelism, adaptive=adaptive, grouping=grouping, window_state=window_state)
    build(env).collect("out")
    result = env.execute()
    return result["out"], result.metrics


def layout_history(metrics: dict) -> list[dict]:
    return [h for q in metrics["queries"] for p in q["pipelines"] for h in p.get("layout_history", [])]


# ----------------------------------------------------------------------------------------------
# switches at random windows never change results
# ----------------------------------------------------------------------------------------------
@given(case=query_cases(windowed=True, max_rows=30, max_repeat=2), keys=st.integers(1, 4),
       confirm=st.integers(1, 2))
@pytest.mark.slow
def test_switching_grouping_equals_the_reference(case, keys, confirm):
    check(case.build, tiny(keys, confirm))


@FIXTURE_OK
@given(case=query_cases(windowed=True, max_rows=30, max_repeat=2), keys=st.integers(1, 4),
       parallelism=st.integers(2, 4))
@pytest.mark.slow
def test_switching_under_parallelism(case, keys, parallelism, every_row_a_morsel):
    check(case.build, tiny(keys), parallelism)


def _phases(rows_per_phase: int, key_counts: list[int], bound: int, seed: int = 0, per_ms: int = 4):
    """Event times rising (``per_ms`` records a millisecond, jittered by up to ``bound`` ms), keys
    drawn from a range whose size changes per phase: few keys, many keys, few keys..."""
    rng = np.random.default_rng(seed)
    n = rows_per_phase * len(key_counts)
    ts = np.arange(n) // per_ms + rng.integers(-bound, bound + 1, n)
    keys = np.concatenate([rng.integers(0, k, rows_per_phase) for k in key_counts])
    return {"ts": pa.array(ts, i64), "k": pa.array(keys, i64), "v": pa.array(rng.integers(-50, 50, n), i64)}


def test_keys_growing_then_shrinking_switch_to_sort_and_back(every_row_a_morsel):
    """(One source batch per round of tasks, so windows fire, and layouts switch, batch by batch.)"""
    data = _phases(4000, [4, 200, 4], bound=15)

    def build(env):
        return arrow_stream(env, data, sizes=[500] * 24, bound=20).key_by("k").window(tumbling(100)).aggregate(
            n=agg.count(), s=agg.sum(col("v")), m=agg.median(col("v")), t=agg.top_k(col("v"), 3))
    metrics = check(build, tiny(keys=50, confirm=2))
    history = layout_history(metrics)
    assert [h["grouping"] for h in history] == ["hash", "sort", "hash"]
    sort_at, hash_at = history[1]["boundary"], history[2]["boundary"]
    assert sort_at % 100 == 0 and hash_at % 100 == 0 and sort_at < hash_at  # window boundaries
    assert history[1]["distinct_keys"] >= 50 and history[2]["distinct_keys"] < 25
    pipeline = metrics["queries"][0]["pipelines"][0]
    assert pipeline["grouping"] == "hash"


def test_variant_history_keeps_the_stages_of_every_kernel():
    """After a switch the pipeline's variant history still holds the old kernel's stages (its
    generic, instrumented and optimized variants, and a deoptimization when the keys grew),
    then the sort kernel's one stage; every record counted in exactly one stage."""
    data = _phases(4000, [4, 200, 4], bound=15)

    def build(env):
        return arrow_stream(env, data, sizes=[500] * 24, bound=20).key_by("k").window(tumbling(100)).aggregate(
            n=agg.count(), s=agg.sum(col("v")))
    metrics = check(build, tiny(keys=50, confirm=2, generic_records=1000, profile_records=1000,
                                wait_for_compile=True))
    pipeline = metrics["queries"][0]["pipelines"][0]
    history = pipeline["variant_history"]
    assert [h["grouping"] for h in layout_history(metrics)][:2] == ["hash", "sort"]
    hashed = [h for h in history if h["grouping"] == "hash"]
    assert [h["stage"] for h in hashed][:3] == ["generic", "instrumented", "optimized"]
    assert any(h["reason"].startswith("deoptimized") for h in hashed) and pipeline["deoptimizations"] >= 1
    assert history[-1]["grouping"] == "sort" and history[-1]["stage"] == "generic"
    assert [h["grouping"] for h in history] == sorted((h["grouping"] for h in history), key=["hash", "sort"].index)
    assert sum(h["records"] for h in history) == pipeline["rows_in"] == 12000
    assert all(a["at_record"] + a["records"] == b["at_record"] for a, b in zip(history, history[1:]))
    assert all(a["at_s"] <= b["at_s"] for a, b in zip(history, history[1:]))


def test_out_of_order_records_reach_the_old_kernel_and_late_ones_count_once():
    """A large bound: records below the boundary keep arriving after the switch."""
    data = _phases(1500, [3, 300], bound=120, seed=3)

    def build(env):
        return arrow_stream(env, data, sizes=[37] * 81 + [3], bound=60).key_by("k").window(tumbling(50)).aggregate(
            n=agg.count(), lo=agg.min(col("v")))
    metrics = check(build, tiny(keys=40))
    assert [h["grouping"] for h in layout_history(metrics)][:2] == ["hash", "sort"]
    assert metrics["late_records"] > 0


def test_building_in_the_background():
    data = _phases(2000, [4, 400], bound=5)

    def build(env):
        return arrow_stream(env, data, sizes=[250] * 16, bound=5).key_by("k").window(tumbling(200)).aggregate(
            n=agg.count(), d=agg.count_distinct(col("v")))
    metrics = check(build, tiny(keys=100, background=True), parallelism=2)
    assert metrics["accounting"]["ok"]


def test_timestamp_event_times_route_by_the_floored_millisecond():
    """Event times in microseconds: the boundary compares in the column's own unit."""
    n = 3000
    us = np.arange(n, dtype=np.int64) * 733 + 999  # not multiples of a millisecond
    keys = np.where(np.arange(n) < n // 3, np.arange(n) % 3, np.arange(n) % 97)
    data = {"ts": pa.array(us, pa.timestamp("us")), "k": pa.array(keys, i64)}

    def build(env):
        return arrow_stream(env, data, sizes=[100] * 30, bound=3).key_by("k").window(tumbling(50)).aggregate(
            n=agg.count())
    metrics = check(build, tiny(keys=30))
    assert "sort" in [h["grouping"] for h in layout_history(metrics)]


def test_an_error_in_a_batch_that_straddles_the_boundary_names_the_same_row(every_row_a_morsel):
    """Batch 0 holds event times 0..99 with 50 keys: the open window [0, 100) already passes the
    crossing point, so the pipeline switches to sort at B = 100. Batch 1 mixes times below and
    above 100, and its row 7 holds an event time too close to the int64 limit: the message names
    the same batch and row as under hash grouping, and the switch did happen (a run without the
    bad row). (One source batch per round of tasks.)"""
    ts = list(range(100)) + [50 + (j * 37) % 100 for j in range(100)] + list(range(150, 250))
    keys = [i % 50 for i in range(300)]

    def build_with(times):
        def build(env):
            data = {"ts": pa.array(times, i64), "k": pa.array(keys, i64)}
            return arrow_stream(env, data, sizes=[100] * 3, bound=50).key_by("k").window(tumbling(100)).aggregate(
                n=agg.count())
        return build
    metrics = check(build_with(ts), tiny(keys=20))
    history = layout_history(metrics)
    assert [(h["grouping"], h["boundary"]) for h in history] == [("hash", None), ("sort", 100)]
    assert "still open" in history[1]["reason"]
    bad = list(ts)
    bad[107] = 2**63 - 2
    assert min(bad[100:107]) < 100 < max(bad[100:107])  # rows before it on both sides of B
    messages = []
    for grouping, adaptive in (("hash", False), ("auto", tiny(keys=20))):
        with pytest.raises(gz.BadInputError) as failure:
            run(build_with(bad), adaptive, grouping=grouping)
        messages.append(str(failure.value).split(":", 1)[1])  # (source names count up per process)
    assert messages[0] == messages[1] and "batch 1, row 7" in messages[0]


# ----------------------------------------------------------------------------------------------
# where the grouping stays fixed
# ----------------------------------------------------------------------------------------------
def _plan(stream) -> object:
    return build_physical_plan(Query(stream.node)).pipelines[-1]


def test_only_tumbling_event_time_windows_switch():
    env = gz.StreamEnvironment()
    data = {"ts": pa.array([1, 2, 3], i64), "k": pa.array([1, 2, 3], i64)}
    keyed = arrow_stream(env, data).key_by("k")
    assert regrouping_unsupported(_plan(keyed.window(tumbling(10)).aggregate(n=agg.count()))) is None
    sliding = _plan(keyed.window(SlidingEventTimeWindows.of(Time.milliseconds(10), Time.milliseconds(5)))
                    .aggregate(n=agg.count()))
    assert "split windows" in regrouping_unsupported(sliding)


def test_sliding_windows_and_checkpointed_jobs_keep_hash(tmp_path):
    data = _phases(300, [50], bound=0)

    def sliding(env):
        return arrow_stream(env, data, sizes=[30] * 10).key_by("k").window(
            SlidingEventTimeWindows.of(Time.milliseconds(40), Time.milliseconds(20))).aggregate(n=agg.count())
    metrics = check(sliding, tiny(keys=2))
    assert layout_history(metrics) == []

    env = gz.StreamEnvironment(adaptive=tiny(keys=2))
    env.enable_checkpointing(tmp_path, interval_batches=2)
    arrow_stream(env, data, sizes=[30] * 10).key_by("k").window(tumbling(40)).aggregate(n=agg.count()).collect("out")
    result = env.execute()
    assert layout_history(result.metrics) == []
    assert result.metrics["queries"][0]["pipelines"][0]["grouping"] == "hash"


def test_fixed_groupings_and_adaptive_false_do_not_switch():
    data = _phases(300, [50], bound=0)

    def build(env):
        return arrow_stream(env, data, sizes=[30] * 10).key_by("k").window(tumbling(40)).aggregate(n=agg.count())
    for grouping in ("hash", "sort"):
        _, metrics = run(build, tiny(keys=2), grouping=grouping)
        assert layout_history(metrics) == []
        assert metrics["queries"][0]["pipelines"][0]["grouping"] == grouping
    _, metrics = run(build, False)
    assert layout_history(metrics) == []
    # an explicit grouping with window_state="auto": the grouping stays, only the state may move
    _, metrics = run(build, tiny(keys=2), parallelism=2, grouping="sort", window_state="auto")
    assert layout_history(metrics) == [] and metrics["queries"][0]["pipelines"][0]["grouping"] == "sort"
    _, metrics = run(build, tiny(keys=2, skew_share=1.01), parallelism=2, grouping="hash", window_state="auto")
    assert {h["grouping"] for h in layout_history(metrics)} == {"hash"}
    assert "window state" in layout_history(metrics)[0]["reason"]


def test_bad_grouping_is_rejected():
    with pytest.raises(ValueError, match="'auto', 'hash' or 'sort'"):
        gz.StreamEnvironment(grouping="radix")


# ----------------------------------------------------------------------------------------------
# the chooser
# ----------------------------------------------------------------------------------------------
def test_chooser_confirms_and_does_not_flap():
    c = GroupingChooser(aggregate_kinds=("count",), hash_entry_bytes=32, cache_bytes=1000,
                        confirm_windows=2, min_keys=100, min_keys_holistic=10)
    assert c.decide("hash", 500) is None          # one window is not enough
    assert c.decide("hash", 50) is None           # and the streak breaks
    assert c.decide("hash", 500) is None
    grouping, reason = c.decide("hash", 500)
    assert grouping == "sort" and "500 distinct keys" in reason
    # back to hash only well below the crossing point (or when the table fits the cache)
    assert c.decide("sort", 80) is None and c.decide("sort", 80) is None
    assert c.decide("sort", 40) is None
    assert c.decide("sort", 40)[0] == "hash"
    fits = GroupingChooser(aggregate_kinds=("count",), hash_entry_bytes=32, cache_bytes=10**9,
                           confirm_windows=1, min_keys=100)
    assert fits.decide("hash", 10**6) is None     # a million entries fit this cache: hash
    assert fits.decide("sort", 10**6)[0] == "hash"


def test_chooser_uses_the_holistic_crossing_point():
    c = GroupingChooser(aggregate_kinds=("count", "median"), hash_entry_bytes=32, cache_bytes=10**9,
                        confirm_windows=1, min_keys=1000, min_keys_holistic=10)
    assert c.decide("hash", 20)[0] == "sort"       # holistic: the cache does not save the hash path


def test_host_cache_size_is_read():
    assert host_cache_bytes() >= 64 * 1024


@pytest.mark.slow
def test_grouping_auto_benchmark_runs_and_switches_where_keys_are_many():
    """bench/grouping_auto.py on small data with a small crossing point: all three groupings agree,
    auto stays on hash with few keys and moves to sort with many."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.grouping_auto import measure
    few, many = measure(windows=4, per_window=3000, key_counts=[10, 5000], repeat=1, batch_rows=1000, min_keys=500,
                        background=False)
    assert few["equal"] and many["equal"]
    assert few["auto_switches"] == []
    assert many["auto_switches"] and many["auto_switches"][0]["grouping"] == "sort"


# ----------------------------------------------------------------------------------------------
# thread-local vs shared window state (window_state="auto")
# ----------------------------------------------------------------------------------------------
def check_state(build, adaptive, parallelism: int, grouping: str = "hash") -> dict:
    """``window_state="auto"`` equals the reference (rows, late records)."""
    expected, expected_metrics = reference.run(build(gz.StreamEnvironment()).node)
    actual, metrics = run(build, adaptive, parallelism, grouping=grouping, window_state="auto")
    assert_tables_equal(actual, expected)
    assert metrics["late_records"] == expected_metrics["late_records"]
    return metrics


@FIXTURE_OK
@given(case=query_cases(windowed=True, max_rows=30, max_repeat=2), keys=st.integers(1, 4),
       skew=st.sampled_from([0.05, 0.3, 0.7, 1.01]), parallelism=st.integers(2, 4),
       grouping=st.sampled_from(["hash", "auto"]))
@pytest.mark.slow
def test_switching_window_state_equals_the_reference(case, keys, skew, parallelism, grouping, every_row_a_morsel):
    try:
        reference.run(case.build(gz.StreamEnvironment()).node)
    except AggregateOverflowError:
        return
    settings_ = tiny(keys if grouping == "auto" else 10**9, skew_share=skew)
    check_state(case.build, settings_, parallelism, grouping)


def test_uniform_keys_go_shared_and_a_heavy_hitter_goes_back_to_thread_local(every_row_a_morsel):
    rng = np.random.default_rng(11)
    n = 6000
    uniform = rng.integers(0, 300, n // 2)
    skewed = np.where(rng.random(n // 2) < 0.6, 7, rng.integers(0, 300, n // 2))
    data = {"ts": pa.array(np.arange(n) // 4, i64), "k": pa.array(np.concatenate([uniform, skewed]), i64),
            "v": pa.array(rng.integers(-9, 9, n), i64)}

    def build(env):
        return arrow_stream(env, data, sizes=[250] * 24, bound=3).key_by("k").window(tumbling(100)).aggregate(
            n=agg.count(), s=agg.sum(col("v")), hi=agg.max(col("v")))
    metrics = check_state(build, tiny(keys=10**9, skew_share=0.2), parallelism=2)
    history = layout_history(metrics)
    assert [h["window_state"] for h in history] == ["thread_local", "shared", "thread_local"]
    assert history[1]["top_key_share"] < 0.2 <= history[2]["top_key_share"]
    assert all(h["grouping"] == "hash" for h in history)
    pipeline = metrics["queries"][0]["pipelines"][0]
    assert pipeline["window_state"] == "thread_local"


def test_window_state_auto_needs_atomic_aggregates_and_workers():
    data = _phases(400, [100], bound=0)

    def median(env):
        return arrow_stream(env, data, sizes=[40] * 10).key_by("k").window(tumbling(20)).aggregate(
            m=agg.median(col("v")))
    metrics = check_state(median, tiny(keys=10**9, skew_share=0.9), parallelism=2)
    assert [h["window_state"] for h in layout_history(metrics)] in ([], ["thread_local"])
    metrics = check_state(median, tiny(keys=10**9, skew_share=0.9), parallelism=1)
    assert layout_history(metrics) == []


def test_state_chooser_rules():
    c = StateChooser(hash_entry_bytes=32, cache_bytes=32_000, workers=2, confirm_windows=1, skew_share=0.1)
    assert c.decide("thread_local", 100_000, None) is None               # nothing sampled: no decision
    assert c.decide("thread_local", 100_000, 0.01)[0] == "shared"        # many uniform keys
    assert c.decide("thread_local", 100_000, 0.5) is None                # a heavy hitter: stay
    assert c.decide("thread_local", 100_000, 0.07) is None               # hysteresis: shared only under 5%
    assert c.decide("thread_local", 100, 0.01) is None                   # 2 x 100 entries fit the cache
    assert c.decide("shared", 100_000, 0.07) is None                     # and back only from 10%
    state, reason = c.decide("shared", 100_000, 0.3)
    assert state == "thread_local" and "30%" in reason
    assert c.decide("shared", 400, 0.01) is None                         # 25,600 bytes > half the cache
    assert c.decide("shared", 200, 0.01)[0] == "thread_local"            # 12,800 bytes < half the cache


def test_key_sampler_shares():
    batch = pa.record_batch({"k": pa.array([1] * 60 + list(range(40)), i64), "j": pa.array([0] * 100, i64)})
    sampler = KeySampler(["k"], every=1, rows=100)
    sampler.offer(batch)
    assert sampler.top_share() == pytest.approx(0.61)
    assert sampler.top_share() is None                                   # reset after reading
    both = KeySampler(["k", "j"], every=2, rows=50)
    for _ in range(4):
        both.offer(batch)
    assert both.top_share() == pytest.approx(0.6)                        # two samples of rows 0, 2, 4, ...
    assert KeySampler([]).top_share() == 1.0                             # a global window: one key
    assert KeySampler(None).top_share() is None                          # computed keys: not sampled


def test_open_windows_of_dense_tables_below_the_crossing_point_are_not_read(monkeypatch):
    """Under hash grouping the open windows' tables are looked at after every round, for a
    window that already holds more keys than the crossing point (``_observe_open``). A block
    whose keys are placed densely holds at most the dense capacity in any table, so while every
    block is dense with a capacity under the crossing point the look is skipped (it cost ~80 us
    a round); results are unchanged. (Premise: the chooser never answers "sort" for fewer keys
    than ``fewest_keys_for_sort``.)"""
    from dataclasses import replace

    from grizzly_py.codegen.specialize import Specialization
    from grizzly_py.engine import kernels
    chooser = GroupingChooser(aggregate_kinds=("count",), hash_entry_bytes=32, cache_bytes=1000,
                              confirm_windows=1, min_keys=100, min_keys_holistic=10)
    assert all(chooser.decide_open(k) is None for k in range(chooser.fewest_keys_for_sort))

    def forcing(dense_keys):
        def specializer(pipeline, profile, base, entry_bytes):
            return Specialization(replace(base, variant="optimized", dense_keys=dense_keys), ("forced by the test",))
        return specializer

    looks = []
    real = kernels.WindowKernel.all_windows

    def all_windows(self):
        looks.append(all(p is not None for p in self.placement))
        return real(self)
    monkeypatch.setattr(kernels.WindowKernel, "all_windows", all_windows)
    rng = np.random.default_rng(5)
    n = 20_000
    data = {"ts": pa.array(np.arange(n), i64), "k": pa.array(rng.integers(0, 10, n), i64)}

    def build(env):
        return arrow_stream(env, data, sizes=[500] * (n // 500)).key_by("k").window(tumbling(5000)) \
            .aggregate(c=agg.count())
    for dense_keys in (None, (0, 16)):  # hashed: the look runs; dense under the crossing: never
        looks.clear()
        check(build, tiny(keys=100, generic_records=0, profile_records=4, profile_sample=1, wait_for_compile=True,
                          specializer=forcing(dense_keys)))
        assert looks if dense_keys is None else not any(looks), (dense_keys, looks)
