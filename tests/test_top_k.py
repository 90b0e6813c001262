"""``agg.top_k(c, k)``: the k largest non-null values, largest first, as a list.

Hand cases (k beyond the group, duplicates, nulls, NaN, -0.0, empty groups, k = 1, ints and
floats) against fixed expected lists and the reference evaluator, on every window kind that keeps
holistic aggregates (tumbling, sliding, session, count, processing time, window_all), with hash
and sort grouping and several workers; the definition-time errors; a kernel's output vector
freed after a firing. The differential tests draw top_k as well (``strategies.aggregate_calls``).
"""

import itertools
import math

import numpy as np
import pyarrow as pa
import pytest
from strategies import assert_tables_equal

import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, agg, reference
from grizzly_py.engine import kernel_table, kernels
from grizzly_py.windows import (
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)

nan = float("nan")
TEN = TumblingEventTimeWindows.of(Time.milliseconds(10))


def _data():
    # window [0, 10): key 1 has duplicates, a null, NaN, -0.0; key 2 only nulls; key 3 one value
    # window [10, 20): key 1 has fewer values than k
    return pa.table({"ts": pa.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12], pa.int64()),
                     "k": [1, 1, 1, 1, 1, 2, 2, 3, 1, 1, 1],
                     "x": [3.0, None, nan, -0.0, 3.0, None, None, -7.5, 2.0, 1.0, -1.0],
                     "i": pa.array([5, 5, None, -2, 9, None, None, 0, 5, 4, None], pa.int32())})


def _run(build, parallelism=1, grouping="hash"):
    env = gz.StreamEnvironment(parallelism=parallelism, grouping=grouping)
    build(env).collect("out")
    result = env.execute()
    return result["out"]


def _check(build, parallelism=1, grouping="hash"):
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    actual = _run(build, parallelism, grouping)
    assert_tables_equal(actual, expected)
    return actual


def _is_nan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _same(actual, expected):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.keys() == e.keys()
        for name in a:
            if isinstance(e[name], list):
                assert len(a[name]) == len(e[name]) and all(
                    _is_nan(x) and _is_nan(y) or (x == y and type(x) is type(y))
                    for x, y in zip(a[name], e[name])), (a, e)
            else:
                assert a[name] == e[name], (a, e)


@pytest.mark.parametrize("parallelism", [1, 2, 4])
@pytest.mark.parametrize("grouping", ["hash", "sort"])
def test_hand_cases_tumbling(parallelism, grouping):
    def build(env):
        return (env.from_arrow(_data(), timestamp="ts").key_by("k").window(TEN)
                .aggregate(t2=agg.top_k("x", 2), t1=agg.top_k("x", 1), big=agg.top_k("x", 100),
                           i3=agg.top_k("i", 3), n=agg.count()))
    out = _check(build, parallelism, grouping)
    assert out.schema.field("t2").type == pa.list_(pa.float64())
    assert out.schema.field("i3").type == pa.list_(pa.int32())
    _same(out.to_pylist(), [
        {"k": 1, "window_start": 0, "window_end": 10, "t2": [nan, 3.0], "t1": [nan],
         "big": [nan, 3.0, 3.0, 2.0, 0.0], "i3": [9, 5, 5], "n": 6},
        {"k": 2, "window_start": 0, "window_end": 10, "t2": [], "t1": [], "big": [], "i3": [], "n": 2},
        {"k": 3, "window_start": 0, "window_end": 10, "t2": [-7.5], "t1": [-7.5], "big": [-7.5], "i3": [0], "n": 1},
        {"k": 1, "window_start": 10, "window_end": 20, "t2": [1.0, -1.0], "t1": [1.0], "big": [1.0, -1.0],
         "i3": [4], "n": 2}])
    zero = out.column("big")[0].values[4].as_py()
    assert zero == 0.0 and np.copysign(1.0, zero) == 1.0  # -0.0 comes out as 0.0, as keys do


@pytest.mark.parametrize("parallelism", [1, 3])
@pytest.mark.parametrize("assigner", [SlidingEventTimeWindows.of(Time.milliseconds(10), Time.milliseconds(3)),
                                      EventTimeSessionWindows.with_gap(Time.milliseconds(2))], ids=["sliding", "session"])
def test_sliding_and_session_windows(assigner, parallelism):
    def build(env):
        return (env.from_arrow(_data(), timestamp="ts").key_by("k").window(assigner)
                .aggregate(t=agg.top_k("x", 3), i=agg.top_k("i", 2), m=agg.median("x")))
    assert _check(build, parallelism).num_rows >= 4


@pytest.mark.parametrize("size, slide", [(3, None), (4, 2), (2, 5)])
def test_count_windows(size, slide):
    def build(env):
        return env.from_arrow(_data(), timestamp="ts").key_by("k").count_window(size, slide).aggregate(
            t=agg.top_k("x", 2), i=agg.top_k("i", 5))
    assert _check(build).num_rows > 0


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("grouping", ["hash", "sort"])
def test_window_all(parallelism, grouping):
    def build(env):
        return env.from_arrow(_data(), timestamp="ts").window_all(TEN).aggregate(t=agg.top_k("i", 4),
                                                                                 f=agg.top_k("x", 3))
    out = _check(build, parallelism, grouping)
    _same(out.to_pylist(), [{"window_start": 0, "window_end": 10, "t": [9, 5, 5, 5], "f": [nan, 3.0, 3.0]},
                            {"window_start": 10, "window_end": 20, "t": [4], "f": [1.0, -1.0]}])


@pytest.mark.parametrize("processing, event", [
    (TumblingProcessingTimeWindows.of(Time.milliseconds(100)), TumblingEventTimeWindows.of(Time.milliseconds(100))),
    (SlidingProcessingTimeWindows.of(Time.milliseconds(100), Time.milliseconds(40)),
     SlidingEventTimeWindows.of(Time.milliseconds(100), Time.milliseconds(40))),
])
@pytest.mark.parametrize("grouping", ["hash", "sort"])
def test_processing_time_windows(monkeypatch, processing, event, grouping):
    rng = np.random.default_rng(3)
    batches = [pa.record_batch({"k": rng.integers(0, 3, 20), "v": rng.normal(size=20)}) for _ in range(12)]
    times = [1_000 + 37 * i for i in range(len(batches))]
    clock = itertools.chain(times, itertools.repeat(times[-1]))
    monkeypatch.setattr(kernels, "wall_clock_ms", lambda: next(clock))
    out = (gz.StreamEnvironment(grouping=grouping).from_arrow(batches).key_by("k").window(processing)
           .aggregate(t=agg.top_k("v", 3)).execute_and_collect())
    stamped = [b.append_column("ts", pa.array([t] * b.num_rows, pa.int64())) for b, t in zip(batches, times)]
    expected, _ = reference.run(gz.StreamEnvironment().from_arrow(stamped, timestamp="ts").key_by("k").window(event)
                                .aggregate(t=agg.top_k("v", 3)).node)
    assert out.to_pylist() == expected.to_pylist()
    assert out.num_rows > 3


@pytest.mark.parametrize("parallelism", [1, 3])
@pytest.mark.slow
def test_sort_and_hash_grouping_agree_on_many_keys_and_batches(parallelism):
    rng = np.random.default_rng(11)
    n = 30_000
    values = rng.integers(-1000, 1000, n).astype(np.float64)
    values[rng.random(n) < 0.01] = np.nan
    table = pa.table({"ts": pa.array(np.sort(rng.integers(0, 3000, n)), pa.int64()),
                      "k": rng.integers(0, 500, n),
                      "v": pa.array(values, mask=rng.random(n) < 0.05),
                      "i": rng.integers(-50, 50, n)})

    def build(env):
        return (env.from_arrow(table.to_batches(max_chunksize=2048), timestamp="ts",
                               watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(5)))
                .key_by("k").window(SlidingEventTimeWindows.of(Time.milliseconds(1000), Time.milliseconds(500)))
                .aggregate(t=agg.top_k("v", 5), i=agg.top_k("i", 1)))
    hashed = _run(build, parallelism, "hash")
    assert_tables_equal(_run(build, parallelism, "sort"), hashed)
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    assert_tables_equal(hashed, expected)


def test_chained_and_filtered_after_top_k():
    def build(env):
        per_key = env.from_arrow(_data(), timestamp="ts").key_by("k").window(TEN).aggregate(
            t=agg.top_k("x", 2), n=agg.count())
        return per_key.filter(gz.col("n") > 1).select("k", "t").union(
            per_key.filter(gz.col("n") <= 1).select("k", "t"))
    assert _check(build).num_rows == 4


def test_top_k_results_go_to_parquet(tmp_path):
    path = tmp_path / "out.parquet"
    env = gz.StreamEnvironment()
    env.from_arrow(_data(), timestamp="ts").key_by("k").window(TEN).aggregate(t=agg.top_k("i", 2)).sink_to_parquet(
        str(path))
    env.execute()
    import pyarrow.parquet as pq
    assert pq.read_table(path).column("t").to_pylist() == [[9, 5], [], [0], [4]]


def test_output_vector_is_freed_and_oom_is_reported():
    """The emit's output vector is malloc'd by generated code: the table takes a copy and frees
    it once; a count of -1 (no memory) is a MemoryError."""
    env = gz.StreamEnvironment()
    q = env.from_arrow(_data(), timestamp="ts").key_by("k").window(TEN).aggregate(t=agg.top_k("x", 2))
    from grizzly_py.codegen.module import generate_pipeline
    from grizzly_py.physical import build_physical_plan
    from grizzly_py.plan import Query
    gen = generate_pipeline(build_physical_plan(Query(q.node)).pipelines[0])
    kernel = kernel_table.make_kernel(gen, "arrow")
    try:
        kernel.process(_data().to_batches()[0], kernels.abi.INT64_MIN)
        out = kernel.fire(10**6)
        assert [len(t) for t in out.column("t").to_pylist()] == [2, 0, 1, 2]
        buffers = kernels._ResultBuffers(kernel, 2)
        vec, pairs = buffers.aggs[0]
        assert not vec.any()
        pairs[:] = [0, -1, 0, 0]
        with pytest.raises(MemoryError, match="out of memory emitting aggregate 't'"):
            buffers.table(2)
    finally:
        kernel.close()


@pytest.mark.parametrize("k, message", [(0, "positive int"), (-3, "positive int"), (2.0, "positive int"),
                                        (True, "positive int"), ("3", "positive int"), (None, "positive int"),
                                        (2**31, "at most")])
def test_k_is_validated_when_defined(k, message):
    with pytest.raises(ValueError, match=message):
        agg.top_k("x", k)


@pytest.mark.parametrize("column", ["s", "b"])
def test_strings_and_bools_are_rejected_when_defined(column):
    table = pa.table({"ts": pa.array([1], pa.int64()), "s": ["a"], "b": [True]})
    stream = gz.StreamEnvironment().from_arrow(table, timestamp="ts").key_by("s").window(TEN)
    with pytest.raises(gz.SchemaError, match="agg.top_k needs a number or a timestamp"):
        stream.aggregate(t=agg.top_k(column, 2))


def test_repr_and_explain_show_k():
    assert repr(agg.top_k("x", 4)) == "agg.top_k(col('x'), 4)"
    env = gz.StreamEnvironment()
    q = env.from_arrow(_data(), timestamp="ts").key_by("k").window(TEN).aggregate(t=agg.top_k("x", 4))
    assert "top_k(col('x'), 4)" in q.explain()


def _per_key(env):
    return env.from_arrow(_data(), timestamp="ts").key_by("k").window(TEN).aggregate(t=agg.top_k("x", 2),
                                                                                   n=agg.count())


@pytest.mark.parametrize("build, message", [
    (lambda s: s.filter(gz.col("t") > 1), "is a list<float64> .* not computed with"),
    (lambda s: s.with_columns(u=gz.col("t").cast("int64")), "not computed with"),
    (lambda s: s.filter(gz.col("t").isin([1.0])), "not computed with"),
    (lambda s: s.key_by("t").window(TEN).aggregate(n=agg.count()), "lists cannot be keys"),
    (lambda s: s.window_all(TEN).aggregate(m=agg.max("t")), "lists can only be counted"),
    (lambda s: s.sink_to_csv("/nonexistent/out.csv"), "CSV cannot hold"),
])
def test_a_list_column_is_passed_through_not_computed_with(build, message):
    with pytest.raises(gz.SchemaError, match=message):
        build(_per_key(gz.StreamEnvironment()))


def test_lists_can_be_counted_and_null_tested():
    def build(env):
        return _per_key(env).filter(gz.col("t").is_not_null()).window_all(TEN).aggregate(c=agg.count("t"))
    assert _check(build).column("c").to_pylist() == [3, 1]


_FAILED_JOB_THEN_ANOTHER = """
import pyarrow as pa, grizzly_py as gz
from grizzly_py import agg, col, Time
from grizzly_py.windows import TumblingEventTimeWindows
W = TumblingEventTimeWindows.of(Time.milliseconds(10))
t = pa.table({"ts": pa.array([1, 2, 3], pa.int64()), "k": [1, 1, 2], "x": [1.0, 2.0, 3.0]})
import sys
assert "llvmlite.binding" not in sys.modules
per_key = gz.StreamEnvironment().from_arrow(t, timestamp="ts").key_by("k").window(W).aggregate(t=agg.top_k("x", 2))
try:  # a list in a filter is rejected when defined
    per_key.filter(col("t").cast("int64") > 1)
except gz.SchemaError:
    pass
import grizzly_py.expressions as E
E._scalar = lambda e, schema: e.dtype(schema)  # past the definition-time check: the engine rejects it
try:
    per_key.filter(col("t") > 1).execute_and_collect()
except NotImplementedError:
    pass
import gc, sys
gc.disable()


class CollectOnImport:  # the collector runs while llvmlite is first imported (under jit._init_lock)
    def find_spec(self, name, path=None, target=None):
        if name == "llvmlite.binding.ffi":
            gc.collect()
        return None


sys.meta_path.insert(0, CollectOnImport())
print(gz.StreamEnvironment().from_arrow(t, timestamp="ts").window_all(W).aggregate(
    t=agg.top_k("x", 2)).execute_and_collect().column("t").to_pylist())
"""


def test_a_failed_job_does_not_hang_the_next_one(tmp_path):
    """A window kernel dropped before any code was compiled in the process must not compile its
    close from the garbage collector (it ran inside the first llvmlite import: a deadlock)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    script = tmp_path / "failed_then_run.py"
    script.write_text(_FAILED_JOB_THEN_ANOTHER)
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith("[[3.0, 2.0]]")
