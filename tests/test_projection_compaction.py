"""Selection and projection (issue 31) against the reference evaluator.

A filter then a projection: the kernel's masked loop (a 64-bit filter mask per chunk of rows,
the body for its set bits only, codegen/project.py) and the engine's hand-off to Arrow
(engine/project_output.py: every row kept -> the batch's columns, none -> an empty batch, else
pass-through columns gathered by the selection vector, computed columns at the output cursor).
Hypothesis draws the selectivity (0-100%), nulls in the filtered and in every projected column
(ints, floats, strings, booleans, timestamps, dictionaries), the batch cuts (chunks of 64 rows
cross batch ends) and the parallelism (every batch cut into morsels, so morsels start at
offsets inside a batch).
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import STRINGS, assert_tables_equal, batch_slices

import grizzly_py as gz
from grizzly_py import col, reference
from grizzly_py.engine import project_output
from grizzly_py.workloads.selection import generate_selection, selection_query

I64_MAX = 2 ** 63 - 1


@st.composite
def selection_inputs(draw, max_rows: int = 300):
    """(columns, batch sizes, threshold): ``v`` uniform in [0, 100) with nulls, so that
    ``v < threshold`` keeps about threshold% of the rows."""
    n = draw(st.integers(0, max_rows))
    null_share = draw(st.sampled_from([0.0, 0.0, 0.1, 0.5]))

    def column(values):
        nulls = st.none() if null_share else st.nothing()
        return draw(st.lists(st.one_of(values, nulls) if null_share else values, min_size=n, max_size=n))

    rng_v = st.integers(0, 99)
    data = {
        "ts": pa.array(range(n), pa.int64()),
        "v": pa.array(column(rng_v), pa.int32()),
        "k": pa.array(column(st.integers(-I64_MAX - 1, I64_MAX)), pa.int64()),
        "x": pa.array(column(st.floats(allow_nan=False, width=64)), pa.float64()),
        "s": pa.array(column(st.sampled_from(STRINGS)), pa.string()),
        "b": pa.array(column(st.booleans()), pa.bool_()),
        "t": pa.array(column(st.integers(0, 2 ** 40)), pa.timestamp("ms")),
        "d": pa.array(column(st.sampled_from(STRINGS)), pa.string()).dictionary_encode(),
    }
    sizes = [length for _, length in draw(batch_slices(n))]
    threshold = draw(st.sampled_from([0, 1, 10, 50, 90, 99, 100]) | st.integers(0, 100))
    return data, sizes, threshold


def source(env, data, sizes):
    whole = pa.record_batch(data)
    offsets = [sum(sizes[:i]) for i in range(len(sizes))]
    return env.from_arrow([whole.slice(o, n) for o, n in zip(offsets, sizes)], timestamp="ts")


def check(build, parallelism: int = 1) -> None:
    expected, expected_metrics = reference.run(build(gz.StreamEnvironment(parallelism=1)).node)
    env = gz.StreamEnvironment(parallelism=parallelism)
    build(env).collect("out")
    result = env.execute()
    assert_tables_equal(result["out"], expected)
    assert result.metrics["filtered_records"] == expected_metrics["filtered_records"]


@given(selection_inputs())
def test_filter_then_pass_through_columns_match_reference(case):
    data, sizes, p = case
    check(lambda env: source(env, data, sizes).filter(col("v") < p).select("ts", "k", "v", "x", "s", "b", "t", "d"))


@given(selection_inputs())
def test_filter_then_computed_columns_match_reference(case):
    data, sizes, p = case
    check(lambda env: source(env, data, sizes).filter((col("v") < p) & (col("k") != 7))
          .select("k", k2=col("v") * 3 + 1, x2=col("x") * 0.908, up=col("s").str.to_uppercase(),
                  nb=~col("b"), s="s"))


@given(selection_inputs(max_rows=120))
def test_projection_without_filter_matches_reference(case):
    data, sizes, _ = case
    check(lambda env: source(env, data, sizes).select("ts", "s", price=col("x") * 0.908, v2=col("v") + col("v")))


@settings(max_examples=max(settings().max_examples // 2, 5), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(selection_inputs(), st.integers(2, 4))
def test_selection_under_parallelism_matches_reference(every_row_a_morsel, case, parallelism):
    data, sizes, p = case
    check(lambda env: source(env, data, sizes).filter(col("v") < p).select("ts", "k", "s", w=col("k") % 5), parallelism)


@pytest.mark.parametrize("percent", [100, 50, 10, 1, 0])
def test_selection_workload_keeps_exactly_the_rows_numpy_keeps(percent):
    """The benchmark's query on 64K-row batches (many 64-row chunks, one odd-sized batch at the end)."""
    table = generate_selection(200_003, batch_rows=1 << 16)
    out = selection_query(gz.StreamEnvironment(parallelism=1), table, percent).execute_and_collect()
    keep = pa.compute.less(table["value"], percent)
    assert out.schema == table.schema
    assert out.combine_chunks().equals(table.filter(keep).combine_chunks())


def test_gather_takes_fixed_width_columns_by_position_and_others_through_arrow():
    sel = pa.array([0, 2, 3], pa.int64()).to_numpy()
    for column in (pa.array([1, 2, 3, 4, 5], pa.int64()).slice(1), pa.array([1.5, 2, None, 4, 5]),
                   pa.array(["a", "b", "c", "d"]), pa.array([True, False, True, True]),
                   pa.array([1, 2, 3, 4], pa.timestamp("us")), pa.array([1, 2, 3, 4], pa.int8())):
        assert project_output.gather(column, sel).equals(column.take(pa.array(sel)))


def test_one_filter_keeps_the_generic_variant_and_two_filters_adapt():
    """With one filter the masked kernel is the whole choice (codegen.module.adaptable): no
    instrumented or optimized variant; with two, their order can change, so the job profiles."""
    from grizzly_py.engine.adaptive import AdaptiveSettings
    table = generate_selection(200_003, batch_rows=1 << 12)
    settings = AdaptiveSettings(generic_records=4096, profile_records=8192, counters="none", wait_for_compile=True)

    def stages(build):
        env = gz.StreamEnvironment(adaptive=settings)
        build(env.from_arrow(table, timestamp="event_time")).select("key", "value").collect("out")
        history = env.execute().metrics["queries"][0]["pipelines"][0]["variant_history"]
        return [h["stage"] for h in history], history[0]["reason"]

    one, reason = stages(lambda s: s.filter(col("value") < 10))
    assert one == ["generic"] and "at most one filter" in reason
    two, _ = stages(lambda s: s.filter(col("value") < 10).filter(col("key") >= 0))
    assert "instrumented" in two


@given(selection_inputs(max_rows=150),
       st.sampled_from([1, 2, 3, 7, 123, -1, -2, -123, 2 ** 40, -(2 ** 63)]) | st.integers(-(2 ** 63), 2 ** 63 - 1),
       st.booleans(), st.booleans())
def test_divisibility_filters_match_reference(case, divisor, negate, zero_first):
    """``x % c == 0`` (or ``!=``, either side) lowers to the truncated remainder's test
    (codegen/expr_emitter.py ``_divisibility``): negative ``x`` and ``c``, nulls, int32 and
    int64 columns and a computed ``x`` give the reference's rows."""
    data, sizes, _ = case
    op = (lambda a, b: a != b) if negate else (lambda a, b: a == b)

    def test(x):
        return op(0, x % divisor) if zero_first else op(x % divisor, 0)
    check(lambda env: source(env, data, sizes).filter(test(col("k")) | test(col("v") + 1) & test(col("v")))
          .select("ts", "k", "v", m=col("k") % divisor))
