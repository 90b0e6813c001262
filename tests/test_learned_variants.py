"""What earlier jobs' profiles chose (``engine/learned_variants.py``): a later job of the same
plan, in the process or (from the record on disk) in a new process, starts in that optimized
variant from its first record and gives the reference's results; data that changed between the
jobs (a key outside the dense range, another share of kept records) re-profiles, and a
deoptimization forgets what was learned; a malformed record is ignored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pyarrow as pa

import grizzly_py as gz
from grizzly_py import agg, col, reference

from grizzly_py import code_cache
from grizzly_py.engine import learned_variants
from grizzly_py.codegen.module import CodegenOptions
from grizzly_py.engine.adaptive import AdaptiveSettings
from grizzly_py.engine.learned_variants import LearnedVariant

from strategies import assert_tables_equal, tumbling

# one job in a new process: keys 0..99, or (argv[1] == "wide") a key far outside that range in
# the second half of the stream; prints the pipeline's stages and the results
JOB = textwrap.dedent("""
    import json, sys
    import numpy as np, pyarrow as pa
    import grizzly_py as gz
    from grizzly_py import agg, col, Time
    from grizzly_py.engine.adaptive import AdaptiveSettings
    from grizzly_py.windows import TumblingEventTimeWindows
    n = 40_000
    keys = np.arange(n, dtype=np.int64) * 7 % 100
    if sys.argv[1] == "wide":
        keys[n // 2::97] = 1_000_000_007
    t = pa.table({"ts": np.arange(n, dtype=np.int64), "k": keys, "v": np.arange(n, dtype=np.int64) % 13})
    t = pa.Table.from_batches(t.to_batches(max_chunksize=1000))
    def run(adaptive):
        env = gz.StreamEnvironment(adaptive=adaptive)
        (env.from_arrow(t, timestamp="ts").filter(col("v") > 3).key_by("k")
            .window(TumblingEventTimeWindows.of(Time.milliseconds(10_000)))
            .aggregate(n=agg.count(), s=agg.sum(col("v"))).collect("out"))
        return env.execute()
    settings = AdaptiveSettings(generic_records=2000, profile_records=4000, early_build_share=0,
                                counters="none", wait_for_compile=True, step_records=1000)
    result = run(settings)
    history = result.metrics["queries"][0]["pipelines"][0]["variant_history"]
    rows = sorted(map(str, result["out"].to_pylist()))
    expected = sorted(map(str, run(False)["out"].to_pylist()))
    print(json.dumps({"stages": [(h["stage"], h["at_record"], h["reason"]) for h in history],
                      "same_as_generic": rows == expected, "rows": len(rows)}))
""")


def _job(tmp_path, data: str) -> dict:
    env = {**os.environ, "GRIZZLY_CACHE_DIR": str(tmp_path), "GRIZZLY_LEARNED_VARIANTS": "on"}
    env.pop("GRIZZLY_CODE_CACHE", None)
    done = subprocess.run([sys.executable, "-c", JOB, data], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _records(tmp_path) -> dict[str, str]:
    return {p.name: p.read_text() for p in (tmp_path / "code").glob("*.variant.json")}


def test_a_new_process_starts_in_the_variant_an_earlier_job_ended_with(tmp_path):
    first = _job(tmp_path, "narrow")
    assert first["same_as_generic"] and first["rows"] > 0
    assert [s[0] for s in first["stages"]][:2] == ["generic", "instrumented"]
    assert first["stages"][-1][0] == "optimized"
    recorded = _records(tmp_path)
    assert len(recorded) == 1
    assert json.loads(next(iter(recorded.values())))["options"]["dense_keys"] is not None

    second = _job(tmp_path, "narrow")
    assert second["same_as_generic"]
    stage, at_record, reason = second["stages"][0]
    assert (stage, at_record) == ("optimized", 0) and "recorded on disk" in reason
    assert [s[0] for s in second["stages"]] == ["optimized"]  # no profile needed
    assert _records(tmp_path) == recorded

    # a key outside the recorded dense range: the guard fails, results stay right, and the
    # record of the range that did not hold goes
    third = _job(tmp_path, "wide")
    assert third["same_as_generic"]
    stages = [s[0] for s in third["stages"]]
    assert stages[0] == "optimized" and stages[1] == "generic"
    assert third["stages"][1][2].startswith("deoptimized")
    assert _records(tmp_path) != recorded


def test_a_record_is_read_once_per_process_and_a_malformed_one_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("GRIZZLY_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GRIZZLY_CODE_CACHE", raising=False)
    monkeypatch.setenv("GRIZZLY_LEARNED_VARIANTS", "on")
    options = CodegenOptions(variant="optimized", dense_keys=(0, 1024), filter_order=(1, 0))
    LearnedVariant.of("ir of plan a").remember(options, 0.25)
    learned_variants.forget_all()  # as a new process: only the record is left
    recalled = LearnedVariant.of("ir of plan a").recall()
    assert (recalled.options, recalled.kept_share, recalled.source) == (options, 0.25, "disk")
    assert LearnedVariant.of("ir of plan a").recall() is None  # this process has read it
    bad = LearnedVariant.of("ir of plan b")
    for text in ("{not json", '{"format": 1, "options": {"no_such_field": 1}}',
                 '{"format": 1, "options": {"variant": "generic"}}', '{"format": 99, "options": {}}'):
        (code_cache.folder() / f"{bad.plan}.variant.json").write_text(text)
        learned_variants.forget_all()
        assert bad.recall() is None, text


def test_the_process_remembers_what_its_last_job_entered_without_records(tmp_path, monkeypatch):
    """The memory needs no code cache: with the records off (the test suite's and the bench's
    setting) a plan's last choice is recalled at every job; forgetting it in memory only (the
    variant left to re-profile) keeps the record, a deoptimization's forget deletes both."""
    monkeypatch.setenv("GRIZZLY_LEARNED_VARIANTS", "off")
    a = LearnedVariant.of("ir of plan m")
    assert a.recall() is None
    narrow, wide = (CodegenOptions(variant="optimized", dense_keys=(0, cap)) for cap in (1024, 4096))
    a.remember(narrow, None)
    a.remember(wide, 0.5)  # the last job's choice wins
    for _ in range(2):
        got = LearnedVariant.of("ir of plan m").recall()
        assert (got.options, got.kept_share, got.source) == (wide, 0.5, "memory")
    assert LearnedVariant.of("ir of plan n").recall() is None
    a.forget(on_disk=False)
    assert a.recall() is None
    monkeypatch.setenv("GRIZZLY_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GRIZZLY_CODE_CACHE", raising=False)
    monkeypatch.setenv("GRIZZLY_LEARNED_VARIANTS", "on")
    a.remember(narrow, None)
    a.forget(on_disk=False)
    record = code_cache.folder() / f"{a.plan}.variant.json"
    assert record.exists()
    a.remember(narrow, None)
    a.forget()
    assert not record.exists() and a.recall() is None


def test_a_process_writes_a_plan_s_record_once_per_choice(tmp_path, monkeypatch):
    """Every job of a pipeline enters its optimized variant; the record is written only when the
    options differ from what this process last read or wrote (or after a forget)."""
    monkeypatch.setenv("GRIZZLY_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GRIZZLY_CODE_CACHE", raising=False)
    monkeypatch.setenv("GRIZZLY_LEARNED_VARIANTS", "on")
    options = CodegenOptions(variant="optimized", dense_keys=(0, 1024))
    LearnedVariant.of("ir of plan c").remember(options, None)
    record = code_cache.folder() / f"{LearnedVariant.of('ir of plan c').plan}.variant.json"
    assert json.loads(record.read_text())["options"]["dense_keys"] == [0, 1024]
    record.write_text("untouched")
    LearnedVariant.of("ir of plan c").remember(options, None)  # a later job, the same choice: no write
    assert record.read_text() == "untouched"
    wider = CodegenOptions(variant="optimized", dense_keys=(0, 4096))
    LearnedVariant.of("ir of plan c").remember(wider, None)  # another choice: written
    assert json.loads(record.read_text())["options"]["dense_keys"] == [0, 4096]
    LearnedVariant.of("ir of plan c").forget()
    assert not record.exists()
    LearnedVariant.of("ir of plan c").remember(wider, None)  # forgotten: written again
    assert record.exists()


# ----------------------------------------------------------------------------------------------
# later jobs in one process (the records off: the memory alone)
# ----------------------------------------------------------------------------------------------
SETTINGS = AdaptiveSettings(generic_records=2000, profile_records=4000, early_build_share=0, profile_sample=1,
                            counters="none", wait_for_compile=True, step_records=1000, warm_check_records=4000)


def _table(n=40_000, keys=100, wide_from=None, keep=0.7, seed=0):
    """Keys 0..keys-1 (from row ``wide_from`` on, every 97th key far outside them); a filter on
    ``v`` that keeps about ``keep`` of the rows."""
    rng = np.random.default_rng(seed)
    k = rng.integers(0, keys, n)
    if wide_from is not None:
        k[wide_from::97] = 1_000_000_007
    v = (rng.random(n) < keep).astype(np.int64)
    return pa.table({"ts": np.arange(n, dtype=np.int64), "k": k, "v": v})


def _run(table, settings=SETTINGS, parallelism=1):
    """One job of the same plan over ``table`` (any data: the plan is the same): its variant
    history, checked against the reference evaluator."""
    def build(env):
        return env.from_arrow(table.to_batches(max_chunksize=1000), timestamp="ts").filter(col("v") > 0) \
            .key_by("k").window(tumbling(10_000)).aggregate(n=agg.count(), s=agg.sum(col("ts")))
    env = gz.StreamEnvironment(adaptive=settings, parallelism=parallelism)
    build(env).collect("out")
    result = env.execute()
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    assert_tables_equal(result["out"], expected)
    return result.metrics["queries"][0]["pipelines"][0]["variant_history"]


def _stages(history):
    return [h["stage"] for h in history]


def test_a_later_job_starts_in_the_variant_the_last_one_entered():
    first = _run(_table())
    assert _stages(first) == ["generic", "instrumented", "optimized"]
    assert first[-1]["options"]["dense_keys"] is not None
    for seed in (1, 2):  # other data of the same kind
        later = _run(_table(seed=seed))
        assert _stages(later) == ["optimized"], later  # from record 0, no profile, no check failed
        assert later[0]["at_record"] == 0 and "in this process" in later[0]["reason"]
        assert later[0]["options"] == first[-1]["options"]
    assert _stages(_run(_table(), SETTINGS.__class__(**{**SETTINGS.__dict__, "warm_start": False}))) == \
        ["generic", "instrumented", "optimized"]  # the switch: every job profiles afresh


def test_keys_outside_the_remembered_range_deoptimize_and_the_next_job_profiles():
    _run(_table())
    drifted = _run(_table(wide_from=20_000))
    assert _stages(drifted)[:2] == ["optimized", "generic"], drifted
    assert drifted[1]["reason"].startswith("deoptimized")
    assert drifted[0]["records"] > 19_000  # the warm check passed: the share kept was the same
    after = _run(_table(wide_from=0))  # what the deoptimized job ended in, or nothing: a profile
    assert _stages(after)[0] != "optimized" or "in this process" in after[0]["reason"]
    assert not any(h["stage"] == "optimized" and h["options"]["dense_keys"] == drifted[0]["options"]["dense_keys"]
                   for h in after[1:]), after


def test_another_share_of_kept_records_re_profiles_a_warm_started_job():
    """The data changed between the jobs in a way no guard sees (the filter keeps 5% instead of
    70%): the warm check after ``warm_check_records`` records re-profiles."""
    _run(_table(keep=0.7))
    changed = _run(_table(keep=0.05, seed=3))
    assert _stages(changed)[:2] == ["optimized", "instrumented"], changed
    assert changed[1]["at_record"] == SETTINGS.warm_check_records
    assert "the data changed" in changed[1]["reason"] and "70" in changed[1]["reason"]
    assert _stages(changed)[-1] == "optimized"
    same = _run(_table(keep=0.05, seed=4))  # it remembered the new choice and its share
    assert _stages(same) == ["optimized"], same


def test_a_projection_s_filters_are_checked_too():
    """A filtered projection's optimized variant (its filter order and mode) starts warm, and
    re-profiles when its filters keep another share."""
    def run(keep_a, seed):
        rng = np.random.default_rng(seed)
        n = 40_000
        table = pa.table({"ts": np.arange(n), "a": (rng.random(n) < keep_a).astype(np.int64),
                          "b": (rng.random(n) < 0.5).astype(np.int64)})

        def build(env):
            return env.from_arrow(table.to_batches(max_chunksize=1000), timestamp="ts") \
                .filter((col("a") > 0) & (col("b") > 0)).select("ts", "a")
        env = gz.StreamEnvironment(adaptive=SETTINGS)
        build(env).collect("out")
        result = env.execute()
        expected, _ = reference.run(build(gz.StreamEnvironment()).node)
        assert_tables_equal(result["out"], expected)
        return result.metrics["queries"][0]["pipelines"][0]["variant_history"]
    assert _stages(run(0.7, 0))[-1] == "optimized"
    assert _stages(run(0.7, 1)) == ["optimized"]
    changed = run(0.05, 2)
    assert _stages(changed)[:2] == ["optimized", "instrumented"] and "the data changed" in changed[1]["reason"]


def test_concurrent_and_parallel_jobs_share_what_was_learned():
    """Jobs of one plan in threads at once (each its own controller, the memory under a lock) and
    at parallelism 2 (one controller for the workers): each starts warm and equals the
    reference; at parallelism 2, keys outside the range deoptimize."""
    _run(_table())
    histories, errors = {}, []

    def one(name, table, parallelism):
        try:
            histories[name] = _run(table, parallelism=parallelism)
        except BaseException as e:
            errors.append(e)
    threads = [threading.Thread(target=one, args=(i, _table(seed=i), 1 + i % 2)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i, history in histories.items():
        assert _stages(history) == ["optimized"] and history[0]["at_record"] == 0, (i, history)
    drifted = _run(_table(wide_from=30_000), parallelism=2)  # the workers' blocks deoptimize
    assert drifted[0]["stage"] == "optimized" and drifted[1]["reason"].startswith("deoptimized"), drifted
