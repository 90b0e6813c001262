"""Adaptive execution: every code variant, every switch and every deoptimization gives the
reference evaluator's results (semantics.md, "Adaptive execution").

The controller normally switches stages when background compiles finish, which makes stage
lengths depend on timing. Most tests here set ``wait_for_compile`` so that a stage starts exactly
when it is due (a few records in), and a ``specializer`` that forces speculations (dense key
ranges that later records break, any predicate order and filter mode), so that guards fail and
state migrates at random points of the stream. Counter-driven re-profiling runs on a scripted
counter source.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import arrow_stream, assert_tables_equal, query_cases, tumbling

import grizzly_py as gz
from grizzly_py import agg, col, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.cli import main
from grizzly_py.engine import learned_variants
from grizzly_py.codegen.module import CodegenOptions, adaptable, generate_pipeline
from grizzly_py.codegen.profile import Profile, hll_estimate
from grizzly_py.codegen.specialize import Specialization, filter_costs, specialize, still_fits
from grizzly_py.counters import ScriptedCounterSource
from grizzly_py.engine.adaptive import AdaptiveSettings
from grizzly_py.engine.parallel import CostModel
from grizzly_py.windows import SlidingEventTimeWindows

i64 = pa.int64()
FIXTURE_OK = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def quick(**overrides) -> AdaptiveSettings:
    """Stages a few records long, switching as soon as they are due."""
    base = dict(generic_records=2, profile_records=3, profile_sample=1, wait_for_compile=True, counters="none")
    base.update(overrides)
    return AdaptiveSettings(**base)


def run(build, adaptive, parallelism: int = 1):
    env = gz.StreamEnvironment(parallelism=parallelism, adaptive=adaptive)
    build(env).collect("out")
    result = env.execute()
    return result["out"], result.metrics


def check(build, adaptive, parallelism: int = 1) -> dict:
    """The adaptive run equals the reference; returns the job's metrics."""
    try:
        expected, expected_metrics = reference.run(build(gz.StreamEnvironment()).node)
    except AggregateOverflowError:
        with pytest.raises(AggregateOverflowError):
            run(build, adaptive, parallelism)
        return {}
    actual, metrics = run(build, adaptive, parallelism)
    assert_tables_equal(actual, expected)
    assert metrics["late_records"] == expected_metrics["late_records"], "late record counts differ"
    return metrics


def histories(metrics: dict) -> list[list[dict]]:
    return [p["variant_history"] for q in metrics["queries"] for p in q["pipelines"]]


def forcing(rng_seed: int, lo_shift: int, cap: int, mode: str):
    """A specializer that speculates on a dense range of ``cap`` keys (any size: the specializer
    puts capacities on a grid, not on powers of two) around the profiled keys (shifted, so that
    later keys fall outside it at some point) and on a random predicate order."""
    def specializer(pipeline, profile, base, entry_bytes):
        order = list(range(len(pipeline.filters)))
        np.random.default_rng(rng_seed).shuffle(order)
        changes = dict(variant="optimized", filter_mode=mode, filter_order=tuple(order) or None)
        t = pipeline.terminal
        if getattr(t, "keys", None) is not None and len(t.keys) == 1 and profile.key_min is not None:
            # (a range that ends past int64's largest key is not a valid speculation)
            changes["dense_keys"] = (min(profile.key_min + lo_shift, (1 << 63) - cap), cap)

        return Specialization(replace(base, **changes), ("forced by the test",))
    return specializer


# ----------------------------------------------------------------------------------------------
# every variant, every switch: the reference's results
# ----------------------------------------------------------------------------------------------
@given(case=query_cases(max_rows=30, max_repeat=2), generic=st.integers(0, 12), profile=st.integers(1, 12),
       sample=st.sampled_from([1, 2, 4]))
def test_adaptive_runs_equal_the_reference(case, generic, profile, sample):
    check(case.build, quick(generic_records=generic, profile_records=profile, profile_sample=sample))


@given(case=query_cases(windowed=True, max_rows=30, max_repeat=2), seed=st.integers(0, 100),
       lo_shift=st.integers(-3, 3), cap=st.integers(1, 20),
       mode=st.sampled_from(["branch", "combined", "predicated"]), generic=st.integers(0, 6))
@pytest.mark.slow
def test_forced_speculation_and_deoptimization_never_change_results(case, seed, lo_shift, cap, mode, generic):
    check(case.build, quick(generic_records=generic, specializer=forcing(seed, lo_shift, cap, mode)))


@given(case=query_cases(max_rows=30, max_repeat=2), steps=st.lists(st.integers(1, 60), min_size=1, max_size=4),
       seed=st.integers(0, 100), cap=st.integers(1, 20))
@pytest.mark.slow
def test_scripted_counter_changes_at_random_points_never_change_results(case, steps, seed, cap):
    """Re-profiling whenever the scripted per-record figure jumps (at random records), with forced
    speculations in between."""
    at = sorted(set(steps))
    script = [(0, {"ns_per_record": 1.0})] + [(a, {"ns_per_record": 1.0 + 9.0 * (i % 2 == 0)})
                                               for i, a in enumerate(at)]
    adaptive = quick(specializer=forcing(seed, 0, cap, "branch"), counters=ScriptedCounterSource(steps=script),
                     measure_every=1, detector_warmup=1, detector_sustain=1, detector_min_records=0)
    check(case.build, adaptive)


@FIXTURE_OK
@given(case=query_cases(windowed=True, max_rows=30, max_repeat=2), seed=st.integers(0, 100),
       lo_shift=st.integers(-3, 3), cap=st.integers(1, 20), parallelism=st.integers(2, 4))
@pytest.mark.slow
def test_migration_under_parallelism(case, seed, lo_shift, cap, parallelism, every_row_a_morsel):
    check(case.build, quick(specializer=forcing(seed, lo_shift, cap, "predicated"), profile_workers=parallelism),
          parallelism)


def test_deoptimization_with_random_delays(random_delays, every_row_a_morsel):
    """Keys grow past the dense range mid-stream, with tasks finishing out of order."""
    keys = [k % 5 for k in range(60)] + [k % 50 for k in range(60)]
    data = {"ts": pa.array(range(120), i64), "k": pa.array(keys, i64), "v": pa.array(range(120), i64)}

    def build(env):
        return arrow_stream(env, data, sizes=[7] * 17 + [1]).key_by("k").window(tumbling(40)).aggregate(
            n=agg.count(), s=agg.sum(col("v")))
    metrics = check(build, quick(profile_records=10), parallelism=3)
    assert metrics["queries"][0]["pipelines"][0]["deoptimizations"] >= 1


def test_workers_dense_tables_merge_index_by_index(monkeypatch, every_row_a_morsel):
    """Every block in one dense placement: the merging trigger takes the dense path (the engine
    passes the range's size; keys come out in order, unsorted by the engine); once a block holds
    a key outside the range (it falls back to hash tables) the windows merge through the hash
    table again. Both match the reference, every aggregate kind included."""
    from grizzly_py.engine import kernels
    dense_caps = []
    real = kernels.Kernel.function

    def function(self, unit, name, *args, **kwargs):
        f = real(self, unit, name, *args, **kwargs)
        if name != "merge_emit":
            return f

        def merge_emit(*call):
            dense_caps.append(call[-1])
            return f(*call)
        return merge_emit
    monkeypatch.setattr(kernels.Kernel, "function", function)
    keys = [(k * 7) % 5 for k in range(80)] + [(k * 7) % 50 * 10**12 for k in range(40)]  # then too wide
    data = {"ts": pa.array(range(120), i64), "k": pa.array(keys, i64), "v": pa.array([(i * 37) % 11 - 5 for i in range(120)], i64)}

    def build(env):
        return arrow_stream(env, data, sizes=[4] * 30).key_by("k").window(tumbling(20)).aggregate(
            n=agg.count(), s=agg.sum(col("v")), lo=agg.min(col("v")), hi=agg.max(col("v")), m=agg.avg(col("v")))
    check(build, quick(profile_records=8, profile_workers=2), parallelism=2)
    assert any(cap > 0 for cap in dense_caps), dense_caps  # windows of dense blocks
    assert dense_caps[-1] == 0  # after the deoptimization: hash tables


# ----------------------------------------------------------------------------------------------
# the stage machine
# ----------------------------------------------------------------------------------------------
def _ysb_like(rows: int, keys: int, seed: int = 0, batch: int = 1000) -> pa.Table:
    rng = np.random.default_rng(seed)
    table = pa.table({"ts": pa.array(np.arange(rows) * 3, i64),
                      "kind": pa.array(rng.integers(0, 3, rows), i64),
                      "k": pa.array(rng.integers(0, keys, rows), i64)})
    return pa.Table.from_batches(table.to_batches(max_chunksize=batch))


def _ysb_query(table):
    def build(env):
        return env.from_arrow(table, timestamp="ts").filter(col("kind") == 0).key_by("k") \
            .window(tumbling(5_000)).aggregate(n=agg.count())
    return build


def test_stages_generic_instrumented_optimized_with_record_counts():
    table = _ysb_like(20_000, 100)
    metrics = check(_ysb_query(table), quick(generic_records=3000, profile_records=4000))
    (history,) = histories(metrics)
    assert [h["stage"] for h in history] == ["generic", "instrumented", "optimized"]
    assert [h["records"] for h in history] == [3000, 4000, 13_000]  # batches of 1000 records
    assert history[1]["at_record"] == 3000
    assert history[2]["options"]["dense_keys"] is not None
    assert "keys: dense" in history[2]["reason"]
    profile = history[2]["profile"] if "profile" in history[2] else history[1].get("profile")
    assert profile is None or profile["key_max"] <= 99


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_builds_its_variants_too():
    # a job here starts the variant builder's thread; a child forked afterwards has no such
    # thread, and before the fix its builder queued every variant and built none: the child's
    # job waited for a compile that never came (here), or ran the generic variant to the end
    table = _ysb_like(20_000, 100)
    # warm_start=False: the child's job builds its own variants rather than starting in the one
    # the parent's job entered (which the child's memory holds)
    settings = quick(generic_records=3000, profile_records=4000, warm_start=False)
    assert [h["stage"] for h in histories(check(_ysb_query(table), settings))[0]][-1] == "optimized"
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if its job reached the optimized variant
        code = 1
        try:
            stages = [h["stage"] for h in histories(check(_ysb_query(table), settings))[0]]
            code = 0 if stages == ["generic", "instrumented", "optimized"] else 1
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the forked child's job never finished: its variants were never built")


@pytest.mark.parametrize("step", [1000, 2500])
def test_large_batches_change_stages_within_a_batch(step):
    # two batches of 10,000 rows: the stages still end after the records they are due, to a step
    table = _ysb_like(20_000, 100, batch=10_000)
    metrics = check(_ysb_query(table), quick(generic_records=3000, profile_records=4000, step_records=step))
    (history,) = histories(metrics)
    assert [h["stage"] for h in history] == ["generic", "instrumented", "optimized"]
    generic = -(-3000 // step) * step
    assert [h["records"] for h in history] == [generic, -(-4000 // step) * step, 20_000 - generic - history[1]["records"]]


def test_step_records_must_be_positive():
    with pytest.raises(ValueError, match="step_records"):
        AdaptiveSettings(step_records=0)


def test_large_batches_change_stages_under_parallelism():
    table = _ysb_like(40_000, 100, batch=20_000)
    metrics = check(_ysb_query(table), quick(generic_records=2000, profile_records=2000, step_records=1000,
                                             profile_workers=2), parallelism=2)
    (history,) = histories(metrics)
    assert [h["stage"] for h in history][:3] == ["generic", "instrumented", "optimized"]
    assert history[0]["records"] < 10_000 and history[1]["records"] < 10_000  # both within a morsel
    assert sum(h["records"] for h in history) == 40_000


def test_deoptimization_when_keys_outgrow_the_range_then_reoptimization():
    rng = np.random.default_rng(1)
    rows = 30_000
    keys = np.concatenate([rng.integers(0, 100, rows // 3), rng.integers(0, 1000, rows - rows // 3)])
    table = pa.Table.from_batches(pa.table({"ts": pa.array(np.arange(rows), i64), "kind": pa.array(np.zeros(rows, np.int64)),
                                            "k": pa.array(keys)}).to_batches(max_chunksize=500))
    metrics = check(_ysb_query(table), quick(generic_records=1000, profile_records=2000))
    (history,) = histories(metrics)
    stages = [h["stage"] for h in history]
    assert stages[:3] == ["generic", "instrumented", "optimized"]
    deopt = next(i for i, h in enumerate(history) if h["reason"].startswith("deoptimized"))
    assert "outside the dense range" in history[deopt]["reason"]
    assert "optimized" in stages[deopt:], "re-optimizes after the deoptimization"
    last = [h for h in history if h["stage"] == "optimized"][-1]
    lo, cap = last["options"]["dense_keys"]
    assert lo <= 0 and lo + cap > 999
    assert sum(h["records"] for h in history) == rows  # every record counted once


def test_frequent_deoptimizations_back_off():
    rows = 12_000
    keys = np.arange(rows) // 2  # every batch brings new, larger keys
    table = pa.Table.from_batches(pa.table({"ts": pa.array(np.arange(rows), i64), "kind": pa.array(np.zeros(rows, np.int64)),
                                            "k": pa.array(keys)}).to_batches(max_chunksize=100))
    metrics = check(_ysb_query(table), quick(generic_records=100, profile_records=100, deopt_backoff=3000))
    (history,) = histories(metrics)
    assert any("deoptimizations come often" in h["reason"] for h in history)


def test_counter_change_triggers_reprofiling(monkeypatch):
    # rounds of two batches: a settled task runs a round's batches in one call, one sample each
    monkeypatch.setattr(CostModel, "group_rows", lambda self, workers, first=False: 1000)
    table = _ysb_like(40_000, 50, batch=500)
    scripted = ScriptedCounterSource(steps=[(0, {"ns_per_record": 2.0}), (15_000, {"ns_per_record": 9.0})])
    adaptive = quick(generic_records=1000, profile_records=1000, counters=scripted, detector_warmup=3,
                     detector_sustain=3, detector_min_records=500, measure_every=1)
    metrics = check(_ysb_query(table), adaptive)
    (history,) = histories(metrics)
    reprofile = [h for h in history if h["reason"].startswith("counters")]
    assert len(reprofile) == 1, history
    assert "ns_per_record" in reprofile[0]["reason"] and reprofile[0]["stage"] == "instrumented"
    assert "scripted" in metrics["adaptive"]["counters"]


def test_adaptive_false_pins_the_generic_variant():
    table = _ysb_like(5000, 10)
    _, metrics = run(_ysb_query(table), False)
    (history,) = histories(metrics)
    assert history == [{"stage": "generic", "reason": "adaptive=False pins the generic variant", "at_s": 0.0,
                        "at_record": 0, "records": 5000, "window_state": "thread_local"}]
    assert metrics["adaptive"] is False


def test_pipelines_without_variants_say_why():
    data = {"ts": pa.array(range(10), i64), "k": pa.array([1] * 10, i64)}
    _, metrics = run(lambda env: arrow_stream(env, data).key_by("k").count_window(3).aggregate(n=agg.count()),
                     quick())
    (history,) = histories(metrics)
    assert history[0]["stage"] == "generic" and "one variant" in history[0]["reason"]


def test_short_jobs_never_build_other_variants():
    table = _ysb_like(3000, 10)
    _, metrics = run(_ysb_query(table), AdaptiveSettings(counters="none"))
    (history,) = histories(metrics)
    assert [h["stage"] for h in history] == ["generic"]


# ----------------------------------------------------------------------------------------------
# the profile and the decisions taken from it
# ----------------------------------------------------------------------------------------------
def _profile_of(table, build_filters, sample=1):
    from grizzly_py.engine.profiling import profile_offline
    from grizzly_py.physical.pipelines import build_physical_plan
    from grizzly_py.plan import Query
    env = gz.StreamEnvironment()
    stream = build_filters(env.from_arrow(table, timestamp="ts")).key_by("k").window(tumbling(1000)).aggregate(
        n=agg.count())
    (pipeline,) = build_physical_plan(Query(stream.node)).pipelines
    return profile_offline(pipeline, table.to_batches(), table.num_rows,
                           base=CodegenOptions(profile_sample=sample))


def test_profile_counts_selectivities_exactly_and_estimates_keys():
    rng = np.random.default_rng(3)
    n = 50_000
    a, b = rng.integers(0, 100, n), rng.integers(0, 100, n)
    keys = np.where(rng.random(n) < 0.6, 7, rng.integers(-2000, 3000, n))
    table = pa.table({"ts": pa.array(np.arange(n), i64), "a": pa.array(a), "b": pa.array(b), "k": pa.array(keys)})
    profile, spec = _profile_of(table, lambda s: s.filter(col("a") < 90).filter(col("b") < 10))
    assert profile.rows_scanned == n
    assert profile.predicate_passed == [int((a < 90).sum()), int((b < 10).sum())]
    selected = (a < 90) & (b < 10)
    assert profile.rows_sampled == int(selected.sum())
    assert profile.sample_every == 1 and profile.kept_share == pytest.approx(selected.mean())
    assert (profile.key_min, profile.key_max) == (int(keys[selected].min()), int(keys[selected].max()))
    distinct = len(np.unique(keys[selected]))
    assert abs(profile.distinct_keys - distinct) < 0.35 * distinct
    assert profile.heavy_hitters[0][0] == 7 and profile.top_share > 0.5
    assert spec.options.filter_order == (1, 0)  # the more selective predicate first


def test_profile_sampling_reads_one_row_in_n():
    n = 40_000
    table = pa.table({"ts": pa.array(np.arange(n), i64), "k": pa.array(np.arange(n) % 10)})
    profile, _ = _profile_of(table, lambda s: s, sample=8)
    assert profile.rows_sampled == n // 8


def test_builder_compiles_a_spare_null_kernel_for_optimized_variants_only():
    """The builder compiles a variant's kernel for batches without nulls; after an optimized
    variant also its kernel for batches with nulls (the instrumented one's compiles when a batch
    first needs it: its compile would delay the optimized build) and the runner of whole tasks."""
    from grizzly_py import jit
    from grizzly_py.engine.adaptive import _builder, build_in_background
    from grizzly_py.engine.task_parts import parts_runner
    from grizzly_py.physical.pipelines import build_physical_plan
    from grizzly_py.plan import Query
    env = gz.StreamEnvironment()
    data = {"ts": pa.array([1], i64), "k": pa.array([1], i64), "a": pa.array([1], i64)}
    s = arrow_stream(env, data).filter(col("a") > 271828).key_by("k").window(tumbling(10)).aggregate(n=agg.count())
    (p,) = build_physical_plan(Query(s.node)).pipelines  # (a literal no other test compiles)
    for stage, options in (("instrumented", CodegenOptions(variant="instrumented")),
                           ("optimized", CodegenOptions(variant="optimized", dense_keys=(0, 16)))):
        gen = build_in_background(stage, p, options).future.result(timeout=120)
        _builder().submit(lambda: None).result(timeout=120)  # the builder is idle again
        # the general kernel is rendered only when something needs it (CodeUnits): the builder
        # renders the optimized variant's after the switch; the instrumented variant's, never
        assert "process" in gen.units and gen.units.rendered("process") == (stage == "optimized"), stage
        nonnull, nullable = gen.units["process_nonnull"], gen.units["process"]
        assert gen.units.rendered("process") and "@gz_bit" in nullable.ir  # (it reads validity bits)
        assert jit.is_compiled(nonnull.ir, nonnull.opt_level)
        assert jit.is_compiled(nullable.ir, nullable.opt_level) == (stage == "optimized"), stage
    assert parts_runner.cache_info().currsize == 1


def test_code_generation_in_the_background_shortens_the_gil_switch_interval_meanwhile():
    """While the builder generates a variant (Python that holds the GIL), a worker returning
    from native code waits at most the switch interval for the GIL; the interval is short while
    any generation runs (nested or concurrent) and restored after the last one."""
    import sys
    import threading
    from grizzly_py.engine import adaptive
    before = sys.getswitchinterval()
    inside, release = threading.Event(), threading.Event()
    seen = []

    def generate():
        with adaptive.yielding_gil():
            inside.set()
            release.wait(timeout=60)
            seen.append(sys.getswitchinterval())

    thread = threading.Thread(target=generate)
    thread.start()
    assert inside.wait(timeout=60)
    with adaptive.yielding_gil():  # a second generation meanwhile
        assert sys.getswitchinterval() <= adaptive.GENERATING_SWITCH_INTERVAL
    assert sys.getswitchinterval() <= adaptive.GENERATING_SWITCH_INTERVAL  # the other still runs
    release.set()
    thread.join(timeout=60)
    assert seen and seen[0] <= adaptive.GENERATING_SWITCH_INTERVAL
    assert sys.getswitchinterval() == before
    with pytest.raises(RuntimeError):
        with adaptive.yielding_gil():
            raise RuntimeError("a failed generation")
    assert sys.getswitchinterval() == before


def test_specialize_rules():
    from grizzly_py.physical.pipelines import build_physical_plan
    from grizzly_py.plan import Query
    env = gz.StreamEnvironment()
    data = {"ts": pa.array([1], i64), "k": pa.array([1], i64), "a": pa.array([1], i64)}
    s = arrow_stream(env, data).filter(col("a") > 0).filter(col("a") < 9).key_by("k").window(tumbling(10)) \
        .aggregate(n=agg.count())
    (p,) = build_physical_plan(Query(s.node)).pipelines
    base = CodegenOptions()
    dense_profile = Profile(rows_scanned=100, rows_sampled=50, key_min=10, key_max=99, predicate_passed=[50, 5],
                            distinct_keys=90)
    dense = specialize(p, dense_profile, base, 24)
    assert dense.options.dense_keys[0] <= 10 and sum(dense.options.dense_keys) > 99
    assert dense.options.filter_order == (1, 0)
    sparse = specialize(p, Profile(rows_scanned=100, rows_sampled=50, key_min=0, key_max=10**9,
                                   predicate_passed=[100, 100], distinct_keys=50), base, 24)
    assert sparse.options is None or sparse.options.dense_keys is None
    nulls = specialize(p, Profile(rows_scanned=10, rows_sampled=10, null_keys=1, key_min=0, key_max=5,
                                  predicate_passed=[10, 10], distinct_keys=5), base, 24)
    assert nulls.options is None or nulls.options.dense_keys is None
    assert still_fits(dense.options, dense.options, Profile(key_min=20, key_max=30))
    assert not still_fits(dense.options, dense.options, Profile(key_min=0, key_max=10**6))
    # the dense pass lists the kept rows first where the filters keep few (~2.5% here), not many
    assert dense.options.filter_mode == "predicated" and dense.options.dense_select
    assert any("lists the ~2% kept rows" in r for r in dense.reasons)
    kept_most = specialize(p, Profile(rows_scanned=100, rows_sampled=81, key_min=10, key_max=99,
                                      predicate_passed=[90, 90], distinct_keys=90), base, 24)
    assert kept_most.options.dense_keys is not None and not kept_most.options.dense_select
    # the list is made eight rows at a time where the host has AVX-512 (comparisons of a column
    # with a literal only), never without the list
    from grizzly_py.codegen import specialize as specialize_module
    assert dense.options.simd_select == specialize_module.simd_select_available()
    assert not kept_most.options.simd_select
    real = specialize_module.simd_select_available
    try:
        specialize_module.simd_select_available = lambda: False
        assert not specialize(p, dense_profile, base, 24).options.simd_select
        specialize_module.simd_select_available = lambda: True
        assert specialize(p, dense_profile, base, 24).options.simd_select
    finally:
        specialize_module.simd_select_available = real
    # the kept share comes from the sampled rows where the sampling rate is known: correlated
    # predicates (60% each, 60% together) keep too many rows for the list, though their product
    # (36%) would not
    def correlated(sample_every):
        return Profile(rows_scanned=1000, rows_sampled=600, key_min=10, key_max=99, predicate_passed=[600, 600],
                       distinct_keys=90, sample_every=sample_every)
    assert not specialize(p, correlated(1), base, 24).options.dense_select
    assert specialize(p, correlated(0), base, 24).options.dense_select  # (rate unknown: the product)
    # a running variant keeps its choice within DENSE_SELECT_MARGIN of the threshold
    selecting = replace(dense.options, dense_select=True)

    def kept(share):
        return Profile(rows_scanned=1000, rows_sampled=int(1000 * share), key_min=20, key_max=30,
                       predicate_passed=[1000, int(1000 * share)], sample_every=1)
    assert still_fits(selecting, replace(selecting, dense_select=False), kept(0.45))
    assert not still_fits(selecting, replace(selecting, dense_select=False), kept(0.55))
    assert still_fits(replace(selecting, dense_select=False), selecting, kept(0.35))
    assert not still_fits(replace(selecting, dense_select=False), selecting, kept(0.25))
    # a selective first predicate makes branching cheaper; 50% predicates make it dearer
    assert filter_costs([0.01, 0.5])[0] < filter_costs([0.01, 0.5])[1]
    assert filter_costs([0.5, 0.5])[0] > filter_costs([0.5, 0.5])[1]


def test_dense_keys_for_a_key_sample_that_barely_repeats():
    """Grizzly 7.4.3's 1M keys: a sample of ~20K rows sees each key about once, so the sampled
    distinct count bounds nothing and the key range decides (a dense table of the range with its
    margins, 1.25M entries: 30 MiB of 24-byte entries); a sample whose keys repeat bounds them
    (1,000 keys over the same range stay hashed: too sparse for the table)."""
    from grizzly_py.physical.pipelines import build_physical_plan
    from grizzly_py.plan import Query
    env = gz.StreamEnvironment()
    data = {"ts": pa.array([1], i64), "k": pa.array([1], i64)}
    s = arrow_stream(env, data).key_by("k").window(tumbling(10)).aggregate(n=agg.count())
    (p,) = build_physical_plan(Query(s.node)).pipelines
    many = Profile(rows_scanned=60_000, rows_sampled=20_000, key_min=0, key_max=999_999, distinct_keys=19_000)
    dense = specialize(p, many, CodegenOptions(), 24).options
    lo, cap = dense.dense_keys
    margin = 125_000  # DENSE_MARGIN of the range on each side, the grid's steps at most beyond it
    assert lo <= -margin and lo + cap > 999_999 + margin and cap <= 1_000_000 + 2 * margin + 2 * (1 << 21) // 64
    few = replace(many, distinct_keys=1_000)
    assert specialize(p, few, CodegenOptions(), 24).options is None
    assert specialize(p, many, CodegenOptions(), 40).options.dense_keys == (lo, cap)  # 49 MiB


def test_large_dense_tables_for_many_keys():
    """10M possible keys (state-size at 10M): beyond DENSE_MAX_BYTES a dense table is allowed up
    to DENSE_LARGE_MAX_BYTES, when it is at most DENSE_HASHED_RATIO times the hashed table the
    estimated keys need; its margin is a few gaps between the sampled keys, not 12.5% of the
    range, and its capacity no power of two. Panes and allowed lateness multiply the tables."""
    from grizzly_py.codegen import specialize as sp
    from grizzly_py.physical.pipelines import build_physical_plan
    from grizzly_py.plan import Query
    env = gz.StreamEnvironment()
    data = {"ts": pa.array([1], i64), "k": pa.array([1], i64)}

    def pipeline(window, lateness=0):
        w = arrow_stream(env, data).key_by("k").window(window)
        if lateness:
            w = w.allowed_lateness(gz.Time.milliseconds(lateness))
        (p,) = build_physical_plan(Query(w.aggregate(n=agg.count()).node)).pipelines
        return p
    tumbling_p = pipeline(tumbling(10))
    many = Profile(rows_scanned=60_000, rows_sampled=21_830, key_min=136, key_max=9_999_708, distinct_keys=26_656)
    lo, cap = specialize(tumbling_p, many, CodegenOptions(), 24).options.dense_keys
    gap = 9_999_573 // 26_656 + 1
    assert lo <= 136 - sp.DENSE_EDGE_GAPS * gap and lo + cap > 9_999_708 + sp.DENSE_EDGE_GAPS * gap
    assert cap < 10_600_000 and cap & (cap - 1)  # 252 MiB; the old margins and a power of two: 384 MiB
    assert sp.DENSE_MAX_BYTES < cap * 24 <= sp.DENSE_LARGE_MAX_BYTES
    # within the ratio of the hashed table the keys need: 1.5M keys (a sample whose keys repeat)
    # need 4M hashed entries (96 MiB), a 252 MiB dense table is more than twice that
    repeats = replace(many, rows_sampled=1_000_000, distinct_keys=730_000)
    estimate = sp.data_distinct_keys(repeats, 9_999_573)
    assert 1_000_000 < estimate < 3_000_000
    declined = specialize(tumbling_p, repeats, CodegenOptions(), 24)
    assert declined.options is None and "too many for a dense table" in declined.reasons[-2]
    # a worker's tables together: five panes of a sliding window, or two kept windows, are too many
    sliding = pipeline(SlidingEventTimeWindows.of(gz.Time.milliseconds(10), gz.Time.milliseconds(2)))
    assert specialize(sliding, many, CodegenOptions(), 24).options is None
    assert specialize(pipeline(tumbling(10), lateness=20), many, CodegenOptions(), 24).options is None
    assert sp.dense_fits(cap, 24, 9_999_573, tables=3, large=True) is False
    assert sp.dense_fits(cap, 24, 9_999_573, large=False) is False


def test_a_large_dense_table_weighs_the_keys_of_one_window():
    """Many short windows over 10M possible keys hold ~330K keys each: the hashed table of one
    window's keys (``Profile.window_keys``, extrapolated from the open windows) is what a large
    dense table is weighed against, not the data's keys over every window."""
    from grizzly_py.physical.pipelines import build_physical_plan
    from grizzly_py.plan import Query
    env = gz.StreamEnvironment()
    data = {"ts": pa.array([1], i64), "k": pa.array([1], i64)}
    (p,) = build_physical_plan(Query(arrow_stream(env, data).key_by("k").window(tumbling(10))
                                     .aggregate(n=agg.count()).node)).pipelines
    many = Profile(rows_scanned=60_000, rows_sampled=21_830, key_min=136, key_max=9_999_708, distinct_keys=26_656)
    assert specialize(p, replace(many, window_keys=3_300_000.0), CodegenOptions(), 24).options is not None
    short = specialize(p, replace(many, window_keys=330_000.0), CodegenOptions(), 24)
    assert short.options is None and "~330,000 keys per window" in short.reasons[-2]


def test_short_windows_over_many_keys_stay_hashed(monkeypatch):
    """End to end, with the large-table rules for every table: windows of ~100 records over keys
    in [0, 100,000) keep hash tables (the open window's keys say so), and equal the reference."""
    from grizzly_py.codegen import specialize as sp
    monkeypatch.setattr(sp, "DENSE_MAX_BYTES", 0)
    rng = np.random.default_rng(11)
    n = 12_000
    data = {"ts": pa.array(np.arange(n, dtype=np.int64), i64), "k": pa.array(rng.integers(0, 100_000, n), i64)}

    def build(env):
        return arrow_stream(env, data, sizes=[1000] * 12).key_by("k").window(tumbling(400)).aggregate(
            n=agg.count())
    metrics = check(build, quick(generic_records=1000, profile_records=1000))
    [history] = histories(metrics)
    reasons = " | ".join(h["reason"] for h in history)
    assert "keys per window" in reasons and "keys: dense" not in reasons, reasons


@FIXTURE_OK
@given(case=query_cases(windowed=True, max_rows=30, max_repeat=2), generic=st.integers(0, 6),
       parallelism=st.integers(1, 3))
def test_every_dense_table_large_equals_the_reference(case, generic, parallelism, monkeypatch):
    """The large dense tables' rules for every table (DENSE_MAX_BYTES 0): margins of a few gaps
    between the sampled keys, capacities off the powers of two, the hashed-state ratio; nulls, late
    records, several windows and workers, deoptimizations, all equal to the reference."""
    from grizzly_py.codegen import specialize as sp
    monkeypatch.setattr(sp, "DENSE_MAX_BYTES", 0)
    check(case.build, quick(generic_records=generic, profile_workers=parallelism), parallelism)


def test_a_large_dense_table_runs_and_equals_the_reference(monkeypatch):
    """With the large-table rules forced, the optimized variant places keys densely in a table of
    no power of two and its results are the reference's."""
    from grizzly_py.codegen import specialize as sp
    monkeypatch.setattr(sp, "DENSE_MAX_BYTES", 0)
    table = _ysb_like(20_000, 1_000)
    metrics = check(_ysb_query(table), quick(generic_records=3000, profile_records=4000, profile_sample=4), 2)
    (history,) = histories(metrics)
    dense = [h["options"]["dense_keys"] for h in history if h["stage"] == "optimized"]
    assert dense and dense[0][1] & (dense[0][1] - 1), dense


def test_a_state_memory_limit_bounds_dense_tables():
    """A job's state_memory_limit bounds the dense tables the specializer may choose (half of a
    worker's share): a dense table must not fail a job whose hashed state fits the limit. Without
    the limit the same job goes dense, so the test would see a dense variant slip through."""
    from grizzly_py.engine.state_memory import dense_table_budget
    table = _ysb_like(60_000, 200_000, batch=5_000)  # ~18K views over keys in [0, 200,000): one window
    build = _ysb_query(table)

    def job(limit):
        env = gz.StreamEnvironment(parallelism=1, adaptive=quick(generic_records=10_000, profile_records=10_000),
                                   state_memory_limit=limit)
        build(env).collect("out")
        result = env.execute()
        return result["out"], " | ".join(h["reason"] for h in histories(result.metrics)[0])
    free, free_reasons = job(None)
    assert "keys: dense" in free_reasons, free_reasons  # ~250K entries of 24 bytes: ~6 MiB
    bounded, reasons = job("4m")
    assert "keys: dense" not in reasons and "state-memory limit" in reasons, reasons
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    assert_tables_equal(bounded, expected)
    assert_tables_equal(free, expected)
    assert dense_table_budget(4 << 20, 1) == 2 << 20 and dense_table_budget(4 << 20, 4) == 512 << 10


def test_data_distinct_keys_from_a_sample():
    from grizzly_py.codegen.specialize import data_distinct_keys

    def sample(distinct, rows, hot=()):
        return Profile(rows_sampled=rows, distinct_keys=distinct, heavy_hitters=list(hot))
    rng = np.random.default_rng(3)
    for keys, draws in ((1_000, 28_000), (50_000, 20_000), (20_000, 40_000)):
        seen = len(np.unique(rng.integers(0, keys, draws)))
        assert abs(data_distinct_keys(sample(seen, draws), 10**6) - keys) < 0.05 * keys
    assert data_distinct_keys(sample(19_500, 20_000), 10**6) == 10**6  # no repeats to go by: the range
    assert data_distinct_keys(sample(30, 30), 20) == 20                 # never beyond the range
    # one key with 14% of the sample (the skew scenario's profile): its repeats say nothing about
    # the other keys, which barely repeat
    assert data_distinct_keys(sample(4_197, 5_385, [(0, 0.14), (7, 0.001)]), 10**6) == 10**6
    # a few keys, two of them hot: still a few
    assert data_distinct_keys(sample(40, 20_000, [(0, 0.3), (1, 0.2), (2, 0.005)]), 10**6) < 50
    assert data_distinct_keys(sample(1, 500, [(0, 1.0)]), 10**6) == 1


def test_no_dense_range_that_the_window_state_cannot_move_into():
    """A dense range must hold the keys the window state holds (``Profile.held_keys``): the
    variant could not take the state over (a compile for nothing)."""
    from grizzly_py.physical.pipelines import build_physical_plan
    from grizzly_py.plan import Query
    env = gz.StreamEnvironment()
    data = {"ts": pa.array([1], i64), "k": pa.array([1], i64)}
    s = arrow_stream(env, data).key_by("k").window(SlidingEventTimeWindows.of(gz.Time.milliseconds(10),
                                                                             gz.Time.milliseconds(2))) \
        .aggregate(n=agg.count())
    (p,) = build_physical_plan(Query(s.node)).pipelines

    def keys(held):
        return specialize(p, Profile(rows_sampled=500, key_min=1000, key_max=1999, distinct_keys=900,
                                     held_keys=held), CodegenOptions(), 24)
    lo, cap = keys(None).options.dense_keys
    assert keys((lo, lo + cap - 1)).options.dense_keys == (lo, cap)
    for held in [(lo - 1, 1500), (1500, lo + cap), (0, 10**6)]:
        declined = keys(held)
        assert declined.options is None and "the window state holds keys" in declined.reasons[0], held


def test_sliding_windows_over_drifting_keys_stay_hashed_and_equal_the_reference():
    """New keys all the time (Nexmark's auctions): the open panes hold older keys than a
    profile samples, so no dense variant is built just to fail its placement; the fired
    windows' key range tells the profile so."""
    n = 60_000
    rng = np.random.default_rng(3)
    ts = np.arange(n, dtype=np.int64) // 6
    data = {"ts": pa.array(ts, i64), "k": pa.array(ts // 4 + rng.integers(0, 200, n), i64)}

    def build(env):
        return (arrow_stream(env, data, sizes=[2_000] * 30).key_by("k")
                .window(SlidingEventTimeWindows.of(gz.Time.milliseconds(1_000), gz.Time.milliseconds(200)))
                .aggregate(n=agg.count()))
    metrics = check(build, quick(generic_records=4_000, profile_records=4_000))
    [history] = histories(metrics)
    reasons = " | ".join(h["reason"] for h in history)
    assert "the window state holds keys in" in reasons
    assert "the window state holds keys outside the dense range" not in reasons
    assert all(h["stage"] != "optimized" for h in history)


def test_many_keys_run_dense_and_equal_the_reference():
    """Keys uniform over 100,000 values drifting to one hot key (the skew scenario, small): the
    profile's ~1,000 sampled keys barely repeat, the optimized variant places keys densely, and
    the results are the reference's."""
    rng = np.random.default_rng(5)
    n = 40_960
    keys = np.where(rng.random(n) < 0.6 * np.arange(n) / n, 0, rng.integers(0, 100_000, n))
    data = {"ts": pa.array(np.arange(n) // 4, i64), "k": pa.array(keys, i64)}

    def build(env):
        return arrow_stream(env, data, sizes=[4096] * 10).key_by("k").window(tumbling(4_000)).aggregate(
            n=agg.count())
    metrics = check(build, quick(profile_records=4_000, profile_sample=4))
    [history] = histories(metrics)
    optimized = [h for h in history if h["stage"] == "optimized"]
    lo, cap = optimized[0]["options"]["dense_keys"] if optimized else (None, None)
    assert optimized and lo <= -12_000 and lo + cap >= 111_000 and cap <= 1 << 17  # 12.5% margins


def test_hll_estimate_small_and_large():
    registers = np.zeros(64, dtype=np.int64)
    assert hll_estimate(registers) == 0.0
    rng = np.random.default_rng(0)
    for n in (10, 1000, 100_000):
        hashes = (rng.integers(0, 2**32, n, dtype=np.uint64) << np.uint64(32)) | rng.integers(0, 2**32, n, dtype=np.uint64)
        regs = np.zeros(64, dtype=np.int64)
        idx = (hashes & np.uint64(63)).astype(np.int64)
        rest = hashes >> np.uint64(6)
        rho = np.array([64 - int(r).bit_length() - 5 for r in rest])
        np.maximum.at(regs, idx, rho)
        assert abs(hll_estimate(regs) - n) < 0.4 * n + 3


def test_adaptable_pipelines():
    from grizzly_py.physical.pipelines import build_physical_plan
    from grizzly_py.plan import Query
    env = gz.StreamEnvironment()
    data = {"ts": pa.array([1], i64), "k": pa.array([1], i64)}
    sliding = arrow_stream(env, data).key_by("k").window(SlidingEventTimeWindows.of(gz.Time.milliseconds(10),
                                                                                     gz.Time.milliseconds(5)))
    (p,) = build_physical_plan(Query(sliding.aggregate(n=agg.count()).node)).pipelines
    assert adaptable(p)
    assert not adaptable(p, CodegenOptions(window_state="shared"))
    gen = generate_pipeline(p, CodegenOptions(variant="optimized", dense_keys=(0, 16)))
    assert "dense placement" in gen.units["process"].ir
    assert "profile" in generate_pipeline(p, CodegenOptions(variant="instrumented")).units["process"].ir


# ----------------------------------------------------------------------------------------------
# command line
# ----------------------------------------------------------------------------------------------
QUERY_FILE = '''
import numpy as np
import pyarrow as pa
import grizzly_py as gz
from grizzly_py import col, agg, Time
from grizzly_py.windows import TumblingEventTimeWindows

def query(env):
    n = 300_000
    rng = np.random.default_rng(0)
    t = pa.table({"ts": np.arange(n), "kind": rng.integers(0, 3, n), "k": rng.integers(0, 500, n)})
    return (env.from_arrow(t, timestamp="ts").filter(col("kind") == 0).key_by("k")
            .window(TumblingEventTimeWindows.of(Time.seconds(10))).aggregate(n=agg.count()))
'''


def test_explain_shows_each_variant_and_run_traces_the_stages(tmp_path):
    path = tmp_path / "q.py"
    path.write_text(QUERY_FILE)
    runner = CliRunner()
    instrumented = runner.invoke(main, ["explain", str(path), "--ir", "--variant", "instrumented"])
    assert instrumented.exit_code == 0, instrumented.output
    assert "profile: keys" in instrumented.output and "variant instrumented" in instrumented.output
    optimized = runner.invoke(main, ["explain", str(path), "--ir", "--variant", "optimized"])
    assert optimized.exit_code == 0, optimized.output
    assert "keys: dense" in optimized.output and "dense placement" in optimized.output
    traced = runner.invoke(main, ["run", str(path), "--trace"])
    assert traced.exit_code == 0, traced.output
    assert "at record" in traced.output and "generic" in traced.output


# ----------------------------------------------------------------------------------------------
# inside Spark tasks (the same task functions, run in this process; tests/test_spark.py runs them
# on Spark)
# ----------------------------------------------------------------------------------------------
def test_spark_tasks_adapt_and_later_tasks_start_from_what_earlier_ones_learned():
    pytest.importorskip("pyspark")
    from grizzly_py.spark.planner import run_in_process
    from grizzly_py.spark.schema import spark_arrow_schema

    learned_variants.forget_all()
    table = _ysb_like(40_000, 100, batch=1000)
    root = _ysb_query(table)(gz.StreamEnvironment()).node
    expected, _ = run(_ysb_query(table), False)
    settings_ = quick(generic_records=2000, profile_records=2000)
    for attempt in range(2):
        actual, reports = run_in_process(root, 2, adaptive=settings_)
        assert_tables_equal(actual, expected.cast(spark_arrow_schema(expected.schema)))
        partial = [p for r in reports if r["stage"] == "partial" for p in r["pipelines"]]
        assert partial and all(p["variant_history"][-1]["stage"] == "optimized" for p in partial), partial
        reasons = [h["reason"] for p in partial for h in p["variant_history"]]
        learned = [r for r in reasons if "in this process" in r]
        if attempt == 0:  # the first task profiles; the second starts from what the first learned
            assert any(h["stage"] == "instrumented" for p in partial for h in p["variant_history"])
        assert learned, reasons
    _, reports = run_in_process(root, 2, adaptive=False)
    assert all([h["stage"] for h in p["variant_history"]] == ["generic"] for r in reports for p in r["pipelines"])


def test_a_conjunction_becomes_one_filter_per_term_so_variants_can_reorder_them():
    from grizzly_py.physical.pipelines import build_physical_plan
    from grizzly_py.plan import Query
    data = {"ts": pa.array([1, 2, 3], i64), "a": pa.array([1, None, 3], i64), "b": pa.array([5, 6, None], i64)}
    build = (lambda env: arrow_stream(env, data).filter((col("a") > 0) & ((col("b") < 9) & ~col("a").is_null()))
             .select("a", "b"))
    (p,) = build_physical_plan(Query(build(gz.StreamEnvironment()).node)).pipelines
    assert [repr(f) for f in p.filters] == [repr(col("a") > 0), repr(col("b") < 9), repr(~col("a").is_null())]
    check(build, quick(generic_records=0, profile_records=1))


def test_large_optimized_tasks_are_always_measured():
    """One optimized task in ``measure_every`` is measured, and every task large enough that a
    measurement is a tiny share of it (a settled round's batches in one call)."""
    from grizzly_py.engine.adaptive import VariantController
    settings = AdaptiveSettings(measure_every=4, detector_min_records=1000)
    controller = VariantController.__new__(VariantController)  # (only the measuring rule here)
    controller.settings, controller._tasks = settings, 0
    small = [controller.take_measurement(100) for _ in range(8)]
    assert small == [False, False, False, True] * 2
    assert all(controller.take_measurement(4000) for _ in range(5))


@pytest.mark.parametrize("settles_early", [True, False])
def test_the_optimized_variant_starts_compiling_part_way_through_the_profile(monkeypatch, settles_early):
    """Once ``early_build_share`` of the profile is in (and at least ``early_build_records``
    records), the optimized variant that the partial profile leads to starts compiling. When the
    full profile leads to the same variant, that build is the one that runs (one build); when
    it leads elsewhere, its own variant is built and runs. Results equal the reference."""
    from grizzly_py.engine import adaptive as adaptive_module
    builds, profiled, spares = [], [], []
    real_build, real_spares = adaptive_module.build_in_background, adaptive_module.compile_spares

    def counting_build(stage, pipeline, options, reasons=(), spares=True):
        builds.append((stage, options, spares))
        return real_build(stage, pipeline, options, reasons, spares)

    def counting_spares(variant):
        spares.append(variant)  # (its build may still be running: its code is read below)
        return real_spares(variant)

    def specializer(pipeline, profile, base, entry_bytes):
        profiled.append(profile.rows_sampled)  # (every row: no filter, profile_sample=1)
        # a range that holds every key (0..9); where the profile does not settle early, the
        # partial profile picks a wider one than the full profile
        width = 16 if settles_early or profile.rows_sampled >= 8 else 32
        return Specialization(replace(base, variant="optimized", filter_mode="predicated", dense_keys=(0, width)),
                              ("forced by the test",))

    monkeypatch.setattr(adaptive_module, "build_in_background", counting_build)
    monkeypatch.setattr(adaptive_module, "compile_spares", counting_spares)
    n = 40
    data = {"ts": pa.array(np.arange(n), i64), "k": pa.array(np.arange(n) % 10, i64)}

    def build(env):
        return arrow_stream(env, data, sizes=[2] * (n // 2)).key_by("k").window(tumbling(8)).aggregate(c=agg.count())

    settings = quick(generic_records=0, profile_records=8, early_build_share=0.5, early_build_records=4,
                     specializer=specializer)
    (history,) = histories(check(build, settings))
    assert profiled == [4, 8], "a partial profile at half the profile's records, then the full one"
    optimized = [(options.dense_keys, with_spares) for stage, options, with_spares in builds if stage == "optimized"]
    # the early build leaves its spares (the other kernel, the runner) until a full profile
    # picks it: the builder is one thread, and an unpicked variant must not hold it
    assert optimized == ([((0, 16), False)] if settles_early else [((0, 32), False), ((0, 16), True)])
    assert [v.result().gen.options.dense_keys for v in spares] == ([(0, 16)] if settles_early else [])
    runs = [h for h in history if h["stage"] == "optimized"]
    assert len(runs) == 1 and runs[0]["options"]["dense_keys"] == [0, 16]


def test_a_speed_up_after_the_first_optimized_tasks_retakes_the_baseline_once(monkeypatch):
    """The first optimized tasks of a job are slow (a new process warming up): the speed-up that
    follows re-takes the detector's baseline instead of re-profiling; a later slow-down against
    the new baseline re-profiles."""
    monkeypatch.setattr(CostModel, "group_rows", lambda self, workers, first=False: 1000)
    table = _ysb_like(40_000, 50, batch=500)
    scripted = ScriptedCounterSource(steps=[(0, {"ns_per_record": 9.0}), (6_000, {"ns_per_record": 2.0}),
                                            (25_000, {"ns_per_record": 9.0})])
    adaptive = quick(generic_records=1000, profile_records=1000, counters=scripted, detector_warmup=3,
                     detector_sustain=3, detector_min_records=500, measure_every=1)
    metrics = check(_ysb_query(table), adaptive)
    (history,) = histories(metrics)
    first_optimized = next(h for h in history if h["stage"] == "optimized")
    assert len(first_optimized["baseline_retaken"]) == 1 and "0.22x" in first_optimized["baseline_retaken"][0]
    reprofile = [h for h in history if h["reason"].startswith("counters")]
    assert len(reprofile) == 1 and "4.50x" in reprofile[0]["reason"], history
