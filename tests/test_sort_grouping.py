"""Sort-based grouping over key/pointer arrays (``codegen/sort_grouping.py``, ``runtime/kpa.ll``).

- The runtime's radix sort and run merge, called directly: stable, signed order, several key
  words, all-equal keys, runs of millions of rows.
- Random window queries (tumbling and sliding, every aggregate, keys of every type, nulls, late
  records, random batching) with ``grouping="sort"`` at parallelism 1..4 against the reference
  evaluator, and against the hash path on the same query.
- Hand cases: float keys (-0.0, NaN, null), string keys, int64 overflow, many keys over many
  batches, running out of memory (an error, never a crash), the choice function and
  ``grizzly explain``.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import arrow_stream, assert_tables_equal, query_cases, tumbling

import grizzly_py as gz
from grizzly_py import Time, agg, col, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.codegen.module import CodegenOptions
from grizzly_py.codegen.sort_grouping import choose_grouping, explain_grouping, grouping_summary
from grizzly_py.codegen.templates import runtime_declarations
from grizzly_py.jit import compile_ir
from grizzly_py.engine import kernels
from grizzly_py.windows import (EventTimeSessionWindows, SlidingEventTimeWindows, SlidingProcessingTimeWindows,
                                TumblingEventTimeWindows, TumblingProcessingTimeWindows)

_P, _I64 = ctypes.c_void_p, ctypes.c_int64


# ----------------------------------------------------------------------------------------------
# the runtime: radix sort and run merge
# ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def kpa_runtime():
    ir = """
define i32 @sort(ptr %r, i64 %n, i64 %rw, i64 %kw) {
  %x = call i32 @gz_kpa_radix_sort(ptr %r, i64 %n, i64 %rw, i64 %kw, ptr null)
  ret i32 %x
}
define ptr @merge(ptr %a, i64 %n, i64 %rw, i64 %kw, ptr %b, i64 %nr) {
  %x = call ptr @gz_kpa_merge_runs(ptr %a, i64 %n, i64 %rw, i64 %kw, ptr %b, i64 %nr)
  ret ptr %x
}
""" + runtime_declarations()
    module = compile_ir(ir, 3)
    sort = module.function("sort", ctypes.c_int32, _P, _I64, _I64, _I64)
    merge = module.function("merge", _P, _P, _I64, _I64, _I64, _P, _I64)
    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = _P, [ctypes.c_size_t]
    libc.free.argtypes = [_P]
    return module, sort, merge, libc


def _rows(keys: np.ndarray, extra: int = 1) -> np.ndarray:
    """Rows of (key words..., arrival number, extra words)."""
    keys = keys.reshape(len(keys), 1) if keys.ndim == 1 else keys
    n = len(keys)
    rows = np.zeros((n, keys.shape[1] + 1 + extra), dtype=np.int64)
    rows[:, :keys.shape[1]] = keys
    rows[:, keys.shape[1]] = np.arange(n)
    return rows


def _expected(rows: np.ndarray, kw: int) -> np.ndarray:
    """A stable sort on the first ``kw`` words (signed, word 0 most significant)."""
    return rows[np.lexsort([rows[:, w] for w in reversed(range(kw))])]


@pytest.mark.parametrize("n", [0, 1, 2, 3, 255, 256, 257, 5000])
def test_radix_sort_is_stable_and_signed(kpa_runtime, n):
    _, sort, _, _ = kpa_runtime
    rng = np.random.default_rng(n)
    rows = _rows(rng.integers(-20, 20, n))  # many equal keys: stability shows in the arrival column
    got = rows.copy()
    assert sort(got.ctypes.data, n, rows.shape[1], 1) == 0
    assert (got == _expected(rows, 1)).all()


def test_radix_sort_orders_extreme_and_negative_words_over_several_key_words(kpa_runtime):
    _, sort, _, _ = kpa_runtime
    rng = np.random.default_rng(3)
    limits = np.array([-(1 << 63), (1 << 63) - 1, -1, 0, 1, 255, 256, -256], dtype=np.int64)
    k0 = rng.choice(limits, 3000)
    k1 = np.where(rng.random(3000) < 0.5, rng.choice(limits, 3000), rng.integers(-(1 << 63), (1 << 63) - 1, 3000))
    rows = _rows(np.stack([k0, k1], axis=1), extra=2)
    got = rows.copy()
    assert sort(got.ctypes.data, len(rows), rows.shape[1], 2) == 0
    assert (got == _expected(rows, 2)).all()


def test_radix_sort_of_all_equal_keys_keeps_the_rows_in_place(kpa_runtime):
    _, sort, _, _ = kpa_runtime
    rows = _rows(np.full(1000, -7, dtype=np.int64))
    got = rows.copy()
    assert sort(got.ctypes.data, len(rows), rows.shape[1], 1) == 0
    assert (got == rows).all()


@pytest.mark.slow
def test_radix_sort_of_a_huge_run(kpa_runtime):
    _, sort, _, _ = kpa_runtime
    n = 3_000_000
    rows = _rows(np.random.default_rng(5).integers(-(1 << 40), 1 << 40, n), extra=0)
    got = rows.copy()
    assert sort(got.ctypes.data, n, rows.shape[1], 1) == 0
    assert (got == _expected(rows, 1)).all()


@pytest.mark.parametrize("runs", [1, 2, 3, 7, 16])
def test_merging_sorted_runs_is_stable(kpa_runtime, runs):
    _, sort, merge, libc = kpa_runtime
    rng = np.random.default_rng(runs)
    sizes = rng.integers(0, 300, runs)
    rows = _rows(rng.integers(-5, 5, int(sizes.sum())))
    bounds = np.cumsum(sizes).astype(np.int64)
    start = 0
    for end in bounds:  # each run sorted on its own, as after each batch
        part = np.ascontiguousarray(rows[start:end])
        sort(part.ctypes.data, len(part), rows.shape[1], 1)
        rows[start:end] = part
        start = end
    n, nbytes = len(rows), max(rows.nbytes, 8)
    buf = libc.malloc(nbytes)  # merge_runs owns its input: malloc'ed, freed by it or by us
    ctypes.memmove(buf, rows.ctypes.data, rows.nbytes)
    out = merge(buf, n, rows.shape[1], 1, bounds.ctypes.data, runs)
    assert out
    got = np.ctypeslib.as_array((ctypes.c_int64 * (n * rows.shape[1])).from_address(out)).reshape(rows.shape).copy() \
        if n else rows
    libc.free(out)
    assert (got == _expected(rows, 1)).all()


# ----------------------------------------------------------------------------------------------
# random queries: sort grouping against the reference and against hash grouping
# ----------------------------------------------------------------------------------------------
def run_engine(build, parallelism: int, grouping: str):
    env = gz.StreamEnvironment(parallelism=parallelism, grouping=grouping)
    build(env).collect("out")
    result = env.execute()
    return result["out"], result.metrics


def _groupings(metrics) -> set:
    return {p.get("grouping") for q in metrics["queries"] for p in q["pipelines"] if p["kind"] == "window"}


def _is_time_window(case) -> bool:
    return any(s.method in ("window", "window_all") for s in case.steps)


_PARALLEL = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


@_PARALLEL
@given(query_cases(windowed=True), st.integers(1, 4))
@pytest.mark.slow
def test_sort_grouping_matches_reference(every_row_a_morsel, case, parallelism):
    try:
        expected, expected_metrics = reference.run(case.build(gz.StreamEnvironment(parallelism=1)).node)
    except AggregateOverflowError:
        with pytest.raises(AggregateOverflowError):
            run_engine(case.build, parallelism, "sort")
        return
    actual, metrics = run_engine(case.build, parallelism, "sort")
    assert_tables_equal(actual, expected)
    assert metrics["late_records"] == expected_metrics["late_records"]
    if _is_time_window(case):
        assert _groupings(metrics) == {"sort"}


@settings(max_examples=max(settings().max_examples // 2, 3))
@given(query_cases(windowed=True, max_rows=12, max_repeat=200))
@pytest.mark.slow
def test_sort_and_hash_grouping_give_the_same_results(case):
    try:
        hashed, hash_metrics = run_engine(case.build, 1, "hash")
    except AggregateOverflowError:
        with pytest.raises(AggregateOverflowError):
            run_engine(case.build, 1, "sort")
        return
    sorted_, sort_metrics = run_engine(case.build, 1, "sort")
    assert_tables_equal(sorted_, hashed)
    assert sort_metrics["late_records"] == hash_metrics["late_records"]


# ----------------------------------------------------------------------------------------------
# hand cases
# ----------------------------------------------------------------------------------------------
def _check_both(build, parallelism: int = 1):
    expected, expected_metrics = reference.run(build(gz.StreamEnvironment(parallelism=1)).node)
    for grouping in ("sort", "hash"):
        actual, metrics = run_engine(build, parallelism, grouping)
        assert_tables_equal(actual, expected)
        assert metrics["late_records"] == expected_metrics["late_records"]
        assert _groupings(metrics) == {grouping}


@pytest.mark.parametrize("parallelism", [1, 3])
def test_float_keys_zero_nan_and_null_group_as_on_the_hash_path(parallelism):
    nan = float("nan")
    data = {"ts": [1, 2, 3, 4, 5, 6, 7, 8, 12],
            "k": [0.0, -0.0, nan, -nan, None, None, 1.5, 0.0, nan],
            "v": [1, 2, 3, None, 5, 6, 7, 8, 9]}

    def build(env):
        return (arrow_stream(env, data, sizes=[4, 5]).key_by("k").window(tumbling(10))
                .aggregate(n=agg.count(), c=agg.count(col("v")), s=agg.sum(col("v")), m=agg.median(col("v")),
                           d=agg.count_distinct(col("v")), mo=agg.mode(col("v"))))
    _check_both(build, parallelism)


def test_string_and_bool_keys_with_nulls_over_sliding_windows():
    data = {"ts": list(range(0, 40, 2)),
            "s": ["a", "b", None, "a", "ccc", "b", None, "a", "", ""] * 2,
            "b": [True, False, None, True] * 5,
            "x": [float(i) * (-1) ** i for i in range(20)]}

    def build(env):
        return (arrow_stream(env, data, sizes=[3, 7, 10]).key_by("s", "b")
                .window(SlidingEventTimeWindows.of(Time.milliseconds(12), Time.milliseconds(4)))
                .aggregate(n=agg.count(), mx=agg.max(col("x")), v=agg.var_samp(col("x")), md=agg.median(col("x"))))
    _check_both(build, 2)


def test_late_records_are_counted_not_grouped():
    data = {"ts": [10, 11, 25, 3, 12, 40, 21], "k": [1, 2, 1, 1, 2, 1, 2]}

    def build(env):
        return arrow_stream(env, data, sizes=[3, 2, 2]).key_by("k").window(tumbling(10)).aggregate(n=agg.count())
    _check_both(build)


def test_int64_sum_overflow_raises_as_on_the_hash_path():
    data = {"ts": [1, 2, 3], "k": [1, 1, 1], "v": [(1 << 63) - 1, 1, 5]}

    def build(env):
        return arrow_stream(env, data, sizes=[1, 2]).key_by("k").window(tumbling(10)).aggregate(s=agg.sum(col("v")))
    with pytest.raises(AggregateOverflowError):
        run_engine(build, 1, "sort")


@pytest.mark.parametrize("parallelism", [1, 4])
def test_many_keys_over_many_batches(parallelism):
    rng = np.random.default_rng(11)
    n = 60_000
    table = pa.table({"ts": np.sort(rng.integers(0, 3_000, n)), "k": rng.integers(-(1 << 62), 1 << 62, 5_000)[rng.integers(0, 5_000, n)],
                      "v": rng.integers(-100, 100, n)})

    def build(env):
        return (env.from_arrow(table.to_batches(max_chunksize=4_096), timestamp="ts")
                .filter(col("v") != 0).key_by("k").window(TumblingEventTimeWindows.of(Time.milliseconds(1_000)))
                .aggregate(n=agg.count(), s=agg.sum(col("v")), d=agg.count_distinct(col("v"))))
    hashed, _ = run_engine(build, parallelism, "hash")
    sorted_, metrics = run_engine(build, parallelism, "sort")
    assert_tables_equal(sorted_, hashed)
    assert sorted_.num_rows > 10_000 and _groupings(metrics) == {"sort"}


@pytest.mark.parametrize("window", [TumblingProcessingTimeWindows.of(Time.milliseconds(100)),
                                    SlidingProcessingTimeWindows.of(Time.milliseconds(100), Time.milliseconds(40))])
def test_processing_time_windows_group_by_sorting_too(monkeypatch, window):
    rng = np.random.default_rng(4)
    batches = [pa.record_batch({"k": rng.integers(0, 5, 30), "v": rng.normal(size=30)}) for _ in range(10)]
    results = {}
    for grouping in ("hash", "sort"):
        clock = itertools.chain([1_000 + 37 * i for i in range(len(batches))], itertools.repeat(2_000))
        monkeypatch.setattr(kernels, "wall_clock_ms", lambda: next(clock))
        env = gz.StreamEnvironment(grouping=grouping)
        env.from_arrow(batches).key_by("k").window(window) \
            .aggregate(n=agg.count(), s=agg.sum(col("v")), m=agg.mode(col("k"))).collect("out")
        result = env.execute()
        results[grouping] = result["out"]
        assert _groupings(result.metrics) == {grouping}
    assert results["sort"].num_rows > 5
    assert_tables_equal(results["sort"], results["hash"])


def test_session_and_count_windows_keep_hash_grouping():
    data = {"ts": [1, 2, 30], "k": [1, 1, 1]}

    def build(env):
        return arrow_stream(env, data).key_by("k").window(EventTimeSessionWindows.with_gap(Time.milliseconds(5))) \
            .aggregate(n=agg.count())
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    actual, metrics = run_engine(build, 1, "sort")
    assert_tables_equal(actual, expected)
    assert _groupings(metrics) == {"hash"}


_OOM_SCRIPT = """
import resource, sys
import numpy as np, pyarrow as pa
import grizzly_py as gz
from grizzly_py import agg, Time
from grizzly_py.windows import TumblingEventTimeWindows

def query(table):
    env = gz.StreamEnvironment(grouping="sort")
    env.from_arrow(table.to_batches(max_chunksize=1 << 20), timestamp="ts").key_by("k") \\
        .window(TumblingEventTimeWindows.of(Time.seconds(10))).aggregate(n=agg.count(), m=agg.median("k")).collect("out")
    return env.execute()["out"]

query(pa.table({"ts": np.arange(10), "k": np.arange(10)}))  # compiles every unit first
n = 8_000_000
big = pa.table({"ts": np.zeros(n, dtype=np.int64), "k": np.arange(n, dtype=np.int64)})
with open("/proc/self/status") as f:
    size = next(int(line.split()[1]) for line in f if line.startswith("VmSize")) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + (96 << 20), resource.RLIM_INFINITY))
try:
    query(big)
except MemoryError as e:
    print("MemoryError:", e)
    sys.exit(3)
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc to size the address-space limit")
@pytest.mark.slow
def test_running_out_of_memory_is_an_error_not_a_crash(tmp_path):
    """Under an address-space limit the key/pointer arrays cannot grow: the kernel returns the
    out-of-memory code and the job raises MemoryError (in a child process: the limit is its own)."""
    script = tmp_path / "oom.py"
    script.write_text(textwrap.dedent(_OOM_SCRIPT))
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 3, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    assert "out of memory" in proc.stdout


# ----------------------------------------------------------------------------------------------
# the choice and explain
# ----------------------------------------------------------------------------------------------
def test_choose_grouping():
    mb = 1 << 20
    assert choose_grouping(None, None, 32 * mb)[0] == "hash"
    assert choose_grouping(100, 8_000, 32 * mb)[0] == "hash"
    assert choose_grouping(10_000_000, 800 * mb, 32 * mb)[0] == "sort"
    assert choose_grouping(50_000, 4 * mb, 32 * mb)[0] == "hash"
    assert choose_grouping(3_000_000, 16 * mb, 32 * mb, ["count"])[0] == "hash"  # fits the cache
    few, reason = choose_grouping(600_000, 48 * mb, 32 * mb, ["count"])
    holistic, why = choose_grouping(600_000, 48 * mb, 32 * mb, ["count", "median"])
    assert few == "hash" and holistic == "sort" and "median" in why and "600,000" in reason
    assert choose_grouping(1_000, 1 * mb, 32 * mb, ["mode"])[0] == "hash"


def test_configure_rejects_an_unknown_grouping():
    with pytest.raises(ValueError, match="grouping"):
        gz.StreamEnvironment().configure(grouping="radix")
    with pytest.raises(ValueError, match="grouping"):
        CodegenOptions(grouping="radix")


def test_explain_shows_the_grouping_of_each_window_pipeline(tmp_path):
    from grizzly_py.cli import main
    from grizzly_py.physical import build_physical_plan
    from grizzly_py.plan import Query
    script = tmp_path / "q.py"
    script.write_text("import pyarrow as pa\nimport grizzly_py as gz\nfrom grizzly_py import agg, Time\n"
                      "from grizzly_py.windows import TumblingEventTimeWindows\n"
                      "env = gz.StreamEnvironment(grouping='sort')\n"
                      "query = env.from_arrow(pa.table({'ts': [1], 'k': [1]}), timestamp='ts').key_by('k')"
                      ".window(TumblingEventTimeWindows.of(Time.seconds(1))).aggregate(n=agg.count())\n")
    out = CliRunner().invoke(main, ["explain", str(script), "--pipelines"])
    assert out.exit_code == 0, out.output
    assert "sort grouping over key/pointer arrays" in out.output
    out = CliRunner().invoke(main, ["explain", str(script), "--pipelines", "--grouping", "hash"])
    assert "pipeline 0: hash grouping" in out.output
    out = CliRunner().invoke(main, ["explain", str(script), "--ir", "--grouping", "sort"])
    assert "gz_kpa_append" in out.output
    default = tmp_path / "default.py"  # grouping="auto", the default: hash first, sort when keys are many
    default.write_text(script.read_text().replace("gz.StreamEnvironment(grouping='sort')", "gz.StreamEnvironment()"))
    out = CliRunner().invoke(main, ["explain", str(default), "--pipelines"])
    assert out.exit_code == 0, out.output
    assert "auto" in out.output and "sort" in out.output
    env = gz.StreamEnvironment()
    session = env.from_arrow(pa.table({"ts": [1], "k": [1]}), timestamp="ts").key_by("k") \
        .window(EventTimeSessionWindows.with_gap(Time.seconds(1))).aggregate(n=agg.count())
    pipelines = build_physical_plan(Query(session.node)).pipelines
    assert "session windows group by hash only" in explain_grouping(pipelines, "sort")
    assert grouping_summary(pipelines[0], CodegenOptions(grouping="sort", window_state="shared")) is not None
