"""Differential tests: the compiled engine against the reference evaluator.

Each hypothesis example draws input data, a batching, a watermark bound and a query
(``strategies.query_cases``), runs it through the compiled engine (``collect`` + ``env.execute()``)
and through ``grizzly_py.reference.run``, and requires the same table (column names and types,
rows in the same order, floats within 1e-9 relative) and the same number of late records. Where
the reference raises ``AggregateOverflowError``, the engine must raise it too. A few hand-picked
edge cases (overflow, lateness at a window boundary, float keys, inputs bigger than the engine's
chunks) run the same check deterministically.

The strategies only generate what the engine compiles today: tumbling event-time windows and the
count/sum/min/max/avg aggregates. A failing example prints as a runnable reproducer.

``GRIZZLY_HYPOTHESIS_PROFILE=long`` runs many more examples (see conftest.py).
"""

from __future__ import annotations

import re
from typing import Callable

import pyarrow as pa
import pytest
from hypothesis import given, settings
from strategies import arrow_stream, assert_tables_equal, query_cases, tumbling, values_equal

import grizzly_py as gz
from grizzly_py import agg, col, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.reference import INT64_MAX, INT64_MIN

Build = Callable[[gz.StreamEnvironment], object]  # env -> the DataStream to run


def run_reference(build: Build):
    return reference.run(build(gz.StreamEnvironment(parallelism=1)).node)


def run_compiled(build: Build):
    env = gz.StreamEnvironment(parallelism=1)
    build(env).collect("out")
    result = env.execute()
    return result["out"], result.metrics


def check_against_reference(build: Build) -> None:
    try:
        expected, expected_metrics = run_reference(build)
    except AggregateOverflowError:
        with pytest.raises(AggregateOverflowError):
            run_compiled(build)
        return
    actual, metrics = run_compiled(build)
    assert_tables_equal(actual, expected)
    assert metrics["late_records"] == expected_metrics["late_records"], "late record counts differ"
    assert metrics["filtered_records"] == expected_metrics["filtered_records"], "filtered record counts differ"
    for q in metrics["accounting"]["queries"]:  # every row filtered, late, into state or out (checked by the engine)
        assert q["records_in"] + q["results"] == q["filtered"] + q["late"] + q["into_state"] + q["records_out"]
    assert metrics["accounting"]["records_in"] == metrics["records_in"] == expected_metrics["records_in"]


def engine_exists() -> bool:
    """Whether ``grizzly_py.engine.local`` is there (an engine that fails to import is an error)."""
    try:
        from grizzly_py.engine.local import run_job  # noqa: F401
    except ModuleNotFoundError as e:
        if e.name in ("grizzly_py.engine", "grizzly_py.engine.local"):
            return False
        raise
    return True


needs_engine = pytest.mark.skipif(not engine_exists(), reason="the compiled engine (grizzly_py.engine.local) is not there yet")


# ----------------------------------------------------------------------------------------------
# random queries
# ----------------------------------------------------------------------------------------------
@needs_engine
@given(query_cases(windowed=False))
def test_stateless_queries_match_reference(case):
    check_against_reference(case.build)


@needs_engine
@given(query_cases(windowed=True))
def test_window_queries_match_reference(case):
    check_against_reference(case.build)


@needs_engine
@settings(max_examples=max(settings().max_examples // 2, 3))
@given(query_cases(max_rows=12, max_repeat=400))
@pytest.mark.slow
def test_big_inputs_match_reference(case):
    check_against_reference(case.build)


@needs_engine
@given(query_cases(count_windows=True))
def test_count_window_queries_match_reference(case):
    check_against_reference(case.build)


@needs_engine
@settings(max_examples=max(settings().max_examples // 2, 3))
@given(query_cases(max_rows=12, max_repeat=60, count_windows=True))
@pytest.mark.slow
def test_big_count_window_inputs_match_reference(case):
    check_against_reference(case.build)


# ----------------------------------------------------------------------------------------------
# hand-picked edge cases
# ----------------------------------------------------------------------------------------------
def _i64(values):
    return pa.array(values, pa.int64())


N = 5000  # more rows than one compiled chunk


def _distinct_groups(env):
    """count_distinct's finish (runtime/vectors.ll, gz_vec_distinct) takes one of three paths by a
    vector's length and order: ascending values counted in one pass, up to 32 values compared
    pairwise, more through a scratch hash set whose free-slot marker is the key -1. Groups of
    lengths around 32, in arrival order or ascending with one late descent, over values that
    include -1 (int, and the order-preserving key of no float), the int64 extremes, floats'
    -0.0/0.0/NaN/inf and strings."""
    pool = [-1, 0, 1, -2, INT64_MIN, INT64_MAX, None, 7, -1, 3]
    floats = [-0.0, 0.0, float("nan"), float("inf"), -float("inf"), -1.0, None, 2.5]
    k, v, f, s = [], [], [], []
    for g, n in enumerate([1, 5, 31, 32, 33, 40, 64, 700, 3000]):
        for i in range(n):
            k.append(g)
            v.append(pool[(i * 7 + g) % len(pool)] if i % 3 else (i * 2654435761) % (n // 2 + 1) - n // 4)
            f.append(floats[(i * 5 + g) % len(floats)] if i % 2 else float((i * 40503) % (n + 1)))
            s.append(None if i % 11 == 5 else f"s{(i * 31) % (n // 3 + 2)}")
    for g, n in ((100, 20), (101, 40), (102, 300)):  # ascending, then one smaller value at the end
        for i in range(n):
            k.append(g)
            v.append(i // 2 if i < n - 1 else -1)
            f.append(float(i) if i < n - 1 else -0.0)
            s.append(f"t{i:04d}" if i < n - 1 else "a")
    return (arrow_stream(env, {"ts": [0] * len(k), "k": _i64(k), "v": _i64(v), "f": pa.array(f, pa.float64()),
                               "s": pa.array(s, pa.string())}, sizes=[len(k) // 2, len(k) - len(k) // 2])
            .key_by("k").window(tumbling(10))
            .aggregate(dv=agg.count_distinct("v"), df=agg.count_distinct("f"), ds=agg.count_distinct("s")))


def _holistic_groups(env):
    """mode's finish (gz_vec_mode) counts through a scratch hash table, on the stack up to 511
    values and on the heap above; median and top_k select (gz_select_kth) with branch-free
    partitions that gather the pivot's copies. Groups of 1, 2, 3 values and around the stack's
    limit (511, 512, 513), over few distinct values (ties of the mode, runs of the median's
    pivot), the int64 extremes, -1, floats' -0.0/0.0/NaN/inf and nulls, in arrival order and
    ascending."""
    pool = [-1, 0, 1, -2, INT64_MIN, INT64_MAX, None, 7, -1, 3, 7]
    floats = [-0.0, 0.0, float("nan"), float("inf"), -float("inf"), -1.0, None, 2.5, 2.5]
    k, v, f = [], [], []
    for g, n in enumerate([1, 2, 3, 4, 17, 511, 512, 513, 1500]):
        for i in range(n):
            k.append(g)
            v.append(pool[(i * 7 + g) % len(pool)] if i % 3 else (i * 2654435761) % 5 - 2)
            f.append(floats[(i * 5 + g) % len(floats)] if g % 2 and i % 2 else float((i * 40503) % 4))
    for g, n in ((100, 20), (101, 600)):  # ascending: counted and selected in place
        for i in range(n):
            k.append(g)
            v.append(i // 3)
            f.append(float(i // 5))
    return (arrow_stream(env, {"ts": [0] * len(k), "k": _i64(k), "v": _i64(v), "f": pa.array(f, pa.float64())},
                         sizes=[len(k) // 3, len(k) - len(k) // 3])
            .key_by("k").window(tumbling(10))
            .aggregate(mv=agg.mode("v"), mf=agg.mode("f"), medv=agg.median("v"), medf=agg.median("f"),
                       tv=agg.top_k("v", 3), tf=agg.top_k("f", 2)))


EDGE_CASES: dict[str, Build] = {
    "sum overflow": lambda env: arrow_stream(env, {"ts": [0, 1], "v": _i64([INT64_MAX, 1])})
        .window_all(tumbling(10)).aggregate(s=agg.sum("v")),
    "avg overflow": lambda env: arrow_stream(env, {"ts": [0, 1], "v": _i64([INT64_MIN, -1])})
        .window_all(tumbling(10)).aggregate(a=agg.avg("v")),
    "sum overflows only in between": lambda env: arrow_stream(env, {"ts": [0, 1, 2], "v": _i64([INT64_MAX, 1, -1])})
        .window_all(tumbling(10)).aggregate(s=agg.sum("v"), a=agg.avg("v")),
    "int modulo edge cases": lambda env: arrow_stream(env, {"ts": [0, 1, 2], "a": _i64([INT64_MIN, 7, -7]),
                                                      "b": _i64([-1, 0, 3])})
        .select(m=col("a") % col("b"), n=-col("a"), x=col("a").abs()),
    "float keys": lambda env: arrow_stream(env, {"ts": [0] * 7, "k": pa.array([-0.0, 0.0, float("nan"), float("nan"),
                                                                         None, -1.0, 2.0])})
        .key_by("k").window(tumbling(10)).aggregate(n=agg.count()),
    "bool and int keys with nulls": lambda env: arrow_stream(env, {"ts": [0, 1, 2, 3, 4], "a": pa.array([True, None, False, True, None]),
                                                             "b": _i64([None, 2, 0, None, 2])})
        .key_by("a", "b").window(tumbling(10)).aggregate(n=agg.count()),
    "lateness at the window boundary": lambda env: arrow_stream(env, {"ts": [5, 9, 10, 9, 0, 19, 10]}, sizes=[2, 0, 1, 2, 2])
        .window_all(tumbling(10)).aggregate(n=agg.count()),
    "bounded out-of-orderness": lambda env: arrow_stream(env, {"ts": [12, 6, 3, 17, 4]}, sizes=[1] * 5, bound=5)
        .window_all(tumbling(10)).aggregate(n=agg.count(), lo=agg.min("ts")),
    "watermark before filters": lambda env: arrow_stream(env, {"ts": [0, 100, 5], "v": _i64([1, 2, 3])}, sizes=[2, 1])
        .filter(col("v") != 2).window_all(tumbling(10)).aggregate(n=agg.count()),
    "negative timestamps": lambda env: arrow_stream(env, {"ts": [-1, -10, -11, 0]})
        .window_all(tumbling(10)).aggregate(n=agg.count()),
    "event time survives dropping ts": lambda env: arrow_stream(env, {"ts": [1, 15], "v": _i64([1, 2])})
        .select("v").window_all(tumbling(10)).aggregate(n=agg.count(), s=agg.sum("v")),
    "big filter": lambda env: arrow_stream(env, {"ts": list(range(N)), "v": _i64([i % 7 for i in range(N)])}, sizes=[3000, 2000])
        .filter(col("v") > 2),
    # a float among isin's values makes every comparison float64 (Spark's IN): INT64_MIN + 1 is
    # then equal to INT64_MIN (found by hypothesis: the compiled code compared the ints as ints)
    "isin with a float among large ints": lambda env: arrow_stream(env, {"ts": [0, 1, 2], "v": _i64([INT64_MIN + 1, 5, None])})
        .with_columns(a=col("v").isin([None, INT64_MIN, 0.0]), b=col("v").isin([-1.5, INT64_MIN, 5]),
                      c=col("v").isin([INT64_MIN, 5])),
    "many groups": lambda env: arrow_stream(env, {"ts": [i // 10 for i in range(N)], "k": _i64([i * 7919 % 3001 for i in range(N)])},
                                      sizes=[1500, 0, 2500, 1000], bound=3)
        .key_by("k").window(tumbling(100)).aggregate(n=agg.count(), s=agg.sum("ts")),
    "count_distinct of short, long, ascending vectors": _distinct_groups,
    "mode, median, top_k of short, long, tied vectors": _holistic_groups,
}


@needs_engine
@pytest.mark.parametrize("name", list(EDGE_CASES))
def test_edge_cases_match_reference(name):
    check_against_reference(EDGE_CASES[name])


# ----------------------------------------------------------------------------------------------
# the harness itself (runs without the engine)
# ----------------------------------------------------------------------------------------------
@given(query_cases())
def test_strategies_build_valid_plans_the_reference_runs(case):
    node = case.build(gz.StreamEnvironment(parallelism=1)).node
    try:
        table, metrics = reference.run(node)
    except AggregateOverflowError:
        return
    assert table.schema.names == node.schema.names
    assert metrics["records_in"] == sum(n for _, n in case.slices)
    assert_tables_equal(table, table)


@given(query_cases())
def test_reproducer_code_rebuilds_the_same_query(case):
    namespace: dict = {}
    exec(compile(case.code(run=False), "<reproducer>", "exec"), namespace)
    node = case.build(gz.StreamEnvironment(parallelism=1)).node

    def plan_text(n):  # without the numbered source name
        return re.sub(r"arrow#\d+", "arrow", n.explain())
    assert plan_text(namespace["q"].node) == plan_text(node)
    for rebuilt, batch in zip(namespace["batches"], case.batches(), strict=True):
        assert_tables_equal(pa.Table.from_batches([rebuilt]), pa.Table.from_batches([batch]))


def test_values_equal_rules():
    nan, inf = float("nan"), float("inf")
    assert values_equal(nan, nan) and values_equal(inf, inf) and values_equal(None, None)
    assert values_equal(1.0, 1.0 + 1e-12) and not values_equal(1.0, 1.0 + 1e-6)
    assert not values_equal(inf, -inf) and not values_equal(inf, 1e308) and not values_equal(0.0, None)
    assert not values_equal(1, True) and not values_equal(1, 2) and values_equal("a", "a")


def test_assert_tables_equal_normalizes_dictionaries_and_detects_differences():
    plain = pa.table({"s": ["a", None], "x": [1.0, float("nan")]})
    encoded = pa.table({"s": pa.array(["a", None]).dictionary_encode(), "x": [1.0, float("nan")]})
    assert_tables_equal(encoded, plain)
    for other in (pa.table({"s": ["a", "b"], "x": [1.0, float("nan")]}),  # value
                  pa.table({"s": ["a", None], "x": [1.0, 2.0]}),  # NaN vs number
                  pa.table({"x": [1.0, float("nan")], "s": ["a", None]}),  # column order
                  pa.table({"s": ["a", None], "x": pa.array([1.0, None], pa.float32())}),  # type
                  pa.table({"s": ["a"], "x": [1.0]})):  # row count
        with pytest.raises(AssertionError):
            assert_tables_equal(other, plain)
