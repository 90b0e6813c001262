"""What an earlier job's profile chose, kept on disk (``engine/learned_variants.py``): a new
process's first job of the same plan starts in that optimized variant from its first record,
gives the same results, and deoptimizes (forgetting the record) when its data breaks the
assumption; a malformed record is ignored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from grizzly_py import code_cache
from grizzly_py.engine import learned_variants
from grizzly_py.engine.learned_variants import LearnedVariant

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
    monkeypatch.setattr(learned_variants, "_seen", set())
    from grizzly_py.codegen.module import CodegenOptions
    options = CodegenOptions(variant="optimized", dense_keys=(0, 1024), filter_order=(1, 0))
    LearnedVariant.of("ir of plan a").remember(options)
    assert LearnedVariant.of("ir of plan a").recall() == options
    assert LearnedVariant.of("ir of plan a").recall() is None  # this process has read it
    bad = LearnedVariant.of("ir of plan b")
    for text in ("{not json", '{"format": 1, "options": {"no_such_field": 1}}',
                 '{"format": 1, "options": {"variant": "generic"}}', '{"format": 99, "options": {}}'):
        (code_cache.folder() / f"{bad.plan}.variant.json").write_text(text)
        learned_variants._seen.clear()
        assert bad.recall() is None, text
    monkeypatch.setenv("GRIZZLY_LEARNED_VARIANTS", "off")  # the test suite's setting: no records
    assert LearnedVariant.of("ir of plan a") is None


def test_a_process_writes_a_plan_s_record_once_per_choice(tmp_path, monkeypatch):
    """Every job of a pipeline enters its optimized variant; the record is written only when the
    options differ from what this process last read or wrote (or after a forget)."""
    monkeypatch.setenv("GRIZZLY_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GRIZZLY_CODE_CACHE", raising=False)
    monkeypatch.setenv("GRIZZLY_LEARNED_VARIANTS", "on")
    monkeypatch.setattr(learned_variants, "_on_disk", {})
    from grizzly_py.codegen.module import CodegenOptions
    options = CodegenOptions(variant="optimized", dense_keys=(0, 1024))
    LearnedVariant.of("ir of plan c").remember(options)
    record = code_cache.folder() / f"{LearnedVariant.of('ir of plan c').plan}.variant.json"
    assert json.loads(record.read_text())["options"]["dense_keys"] == [0, 1024]
    record.write_text("untouched")
    LearnedVariant.of("ir of plan c").remember(options)  # a later job, the same choice: no write
    assert record.read_text() == "untouched"
    wider = CodegenOptions(variant="optimized", dense_keys=(0, 4096))
    LearnedVariant.of("ir of plan c").remember(wider)  # another choice: written
    assert json.loads(record.read_text())["options"]["dense_keys"] == [0, 4096]
    LearnedVariant.of("ir of plan c").forget()
    assert not record.exists()
    LearnedVariant.of("ir of plan c").remember(wider)  # forgotten: written again
    assert record.exists()
    monkeypatch.setenv("GRIZZLY_LEARNED_VARIANTS", "off")
