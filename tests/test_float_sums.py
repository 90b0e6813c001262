"""Float sums are compensated: every path gives the exact sum where plain addition would lose it.

A float ``sum``/``avg`` state keeps, next to the running sum, the exact rounding error of each
addition (TwoSum) and adds it back at the end (``aggregates.ll.j2``). Panes merged into a window,
worker states merged at a fire, atomic updates of a shared state, sort grouping, count and
session windows, and Spark's partial states all carry it, so a result does not depend on how
the values were grouped, even when large values cancel (docs/semantics.md, "Order and
determinism"). The values here are chosen so that plain addition gives a different answer in
some grouping: 2^63 + 1.0 rounds to 2^63, so 2^63, 1.0, -2^63 add up to 0.0 in that order, but
the sum is 1.0.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import arrow_stream, assert_tables_equal, tumbling

import grizzly_py as gz
from grizzly_py import agg, reference
from grizzly_py.aggregates.functions.sum import compensated_sum as _compensated_sum
from grizzly_py.spark.planner import run_in_process
from grizzly_py.spark.schema import spark_arrow_schema
from grizzly_py.windows import EventTimeSessionWindows, SlidingEventTimeWindows

BIG = 2.0 ** 63
# per key: the values add up to 1.0 (key 1) and 0.25 (key 2) in every grouping; 2^63 absorbs
# each small value it meets first
DATA = {"ts": [0, 1, 1, 2, 2, 3, 3, 4, 5, 5],
        "k": pa.array([1, 2, 1, 1, 2, 2, 1, 2, 1, 2], pa.int64()),
        "v": [BIG, BIG, 1.0, -BIG, 0.25, -BIG, 0.5, 0.0, -0.5, 0.0]}
EXPECTED = {1: 1.0, 2: 0.25}


def _plain_sum(values):
    total = 0.0
    for v in values:
        total += v
    return total


def test_the_data_loses_its_small_values_under_plain_addition():
    for key, want in EXPECTED.items():
        values = [v for k, v in zip(DATA["k"].to_pylist(), DATA["v"]) if k == key]
        assert _plain_sum(values) != want  # (else this file tests nothing)
        assert _compensated_sum(values) == want


def test_the_reference_adds_back_rounding_errors_and_keeps_ieee_specials():
    assert _compensated_sum([0.1] * 10) == 1.0  # plain addition: 0.9999999999999999
    assert _compensated_sum([BIG, 1.0, -BIG]) == 1.0
    assert _compensated_sum([math.inf, 1.0]) == math.inf
    assert _compensated_sum([1.0, -math.inf, 2.0]) == -math.inf
    assert math.isnan(_compensated_sum([math.inf, -math.inf]))
    assert math.isnan(_compensated_sum([1.0, math.nan]))
    assert _compensated_sum([1e308, 1e308]) == math.inf  # an overflow stays infinite
    assert math.copysign(1.0, _compensated_sum([-0.0])) == 1.0  # (0.0 + -0.0, as plain addition)


def _window_query(assigner, sizes, bound=0):
    def build(env):
        return arrow_stream(env, DATA, sizes=sizes, bound=bound).key_by("k").window(assigner) \
            .aggregate(s=agg.sum("v"), m=agg.avg("v"), n=agg.count())
    return build


def _run(build, **settings):
    env = gz.StreamEnvironment(**settings)
    build(env).collect("out")
    return env.execute()["out"]


def _check(build, expected_sums: dict | None = None, **settings):
    """The compiled run equals the reference, and (where given) each key's last sum is exact."""
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    actual = _run(build, **settings)
    assert_tables_equal(actual, expected)
    if expected_sums is not None:
        last = {k: s for k, s in zip(actual.column("k").to_pylist(), actual.column("s").to_pylist())}
        assert last == expected_sums


SETTINGS = [dict(), dict(adaptive=False), dict(grouping="sort"), dict(parallelism=2), dict(parallelism=3),
            dict(parallelism=2, window_state="shared")]


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()) or "default")
@pytest.mark.parametrize("sizes", [[10], [1] * 10, [3, 3, 4]])
def test_tumbling_window_sums_are_exact_in_every_grouping(every_row_a_morsel, random_delays, settings, sizes):
    _check(_window_query(tumbling(100), sizes), EXPECTED, **settings)


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()) or "default")
def test_sliding_windows_merge_panes_without_losing_small_values(every_row_a_morsel, settings):
    # 6 ms windows sliding by 1 ms: each window is the merge of up to six one-ms panes, and the
    # windows that hold every record (starting at 0) give the exact sums
    sliding = SlidingEventTimeWindows.of(gz.Time.milliseconds(6), gz.Time.milliseconds(1))
    build = _window_query(sliding, [2, 2, 2, 2, 2])
    _check(build, **settings)
    actual = _run(build, **settings)
    whole = {k: s for k, s, start in zip(actual.column("k").to_pylist(), actual.column("s").to_pylist(),
                                         actual.column("window_start").to_pylist()) if start == 0}
    assert whole == EXPECTED


def test_session_windows_merge_sessions_without_losing_small_values():
    # the first two records open two sessions; the third, late, bridges them into one
    data = {"ts": [0, 8, 4], "k": pa.array([1, 1, 1], pa.int64()), "v": [BIG, 1.0, -BIG]}

    def build(env):
        return arrow_stream(env, data, sizes=[1, 1, 1], bound=10).key_by("k") \
            .window(EventTimeSessionWindows.with_gap(gz.Time.milliseconds(5))).aggregate(s=agg.sum("v"))
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    actual = _run(build)
    assert_tables_equal(actual, expected)
    assert actual.column("s").to_pylist() == [1.0]


@pytest.mark.parametrize("slide", [1, 2, 4])
def test_count_windows_merge_count_panes_without_losing_small_values(slide):
    def build(env):
        return arrow_stream(env, DATA, sizes=[4, 6]).key_by("k").count_window(4, slide) \
            .aggregate(s=agg.sum("v"), m=agg.avg("v"))
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    assert_tables_equal(_run(build), expected)


@pytest.mark.parametrize("tasks", [1, 2, 3, 5])
def test_spark_partial_states_carry_the_compensation(tasks):
    build = _window_query(tumbling(100), [2, 2, 2, 2, 2])
    actual, _ = run_in_process(build(gz.StreamEnvironment()).node, tasks)
    expected = _run(build)
    assert_tables_equal(actual, expected.cast(spark_arrow_schema(expected.schema)))
    assert dict(zip(actual.column("k").to_pylist(), actual.column("s").to_pylist())) == EXPECTED


@pytest.mark.parametrize("settings", [dict(), dict(parallelism=2), dict(parallelism=2, window_state="shared")],
                         ids=["p1", "p2", "p2-shared"])
def test_infinities_nans_and_overflow_follow_ieee(every_row_a_morsel, settings):
    data = {"ts": [0, 0, 0, 0, 0, 0, 0, 0],
            "k": pa.array([1, 1, 2, 2, 3, 3, 4, 4], pa.int64()),
            "v": [math.inf, 1.0, math.inf, -math.inf, 1e308, 1e308, math.nan, 2.0]}

    def build(env):
        return arrow_stream(env, data, sizes=[2, 2, 2, 2]).key_by("k").window(tumbling(10)) \
            .aggregate(s=agg.sum("v"), m=agg.avg("v"))
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    actual = _run(build, **settings)
    assert_tables_equal(actual, expected)
    sums = actual.column("s").to_pylist()
    assert sums[0] == math.inf and math.isnan(sums[1]) and sums[2] == math.inf and math.isnan(sums[3])


# values whose rounding errors span few bits: every error and the compensation are exact, so a
# compensated sum is the exact sum rounded once, in any grouping (plain addition is not: 2^60
# absorbs the small values it meets first)
POOL = [2.0 ** 60, -(2.0 ** 60), 2.0 ** 61, -(2.0 ** 61), 1.0, -1.0, 0.5, -0.5, 3.0, 0.25]


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])  # (the cost model's patch holds for every example)
@given(st.lists(st.tuples(st.integers(0, 14), st.integers(0, 1), st.sampled_from(POOL)), min_size=3, max_size=40),
       st.data())
def test_compensated_sums_are_the_exact_sums_in_every_grouping(every_row_a_morsel, rows, data):
    rows = sorted(rows, key=lambda r: r[0])  # in order: nothing is late
    sizes = data.draw(st.lists(st.integers(1, 8), min_size=1).filter(lambda s: sum(s) >= len(rows)))
    sizes = _cut(sizes, len(rows))
    settings_ = data.draw(st.sampled_from(SETTINGS))
    sliding = data.draw(st.booleans())
    table = {"ts": [r[0] for r in rows], "k": pa.array([r[1] for r in rows], pa.int64()), "v": [r[2] for r in rows]}
    assigner = SlidingEventTimeWindows.of(gz.Time.milliseconds(10), gz.Time.milliseconds(5)) if sliding \
        else tumbling(10)

    def build(env):
        return arrow_stream(env, table, sizes=sizes).key_by("k").window(assigner).aggregate(s=agg.sum("v"))
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    actual = _run(build, **settings_)
    assert_tables_equal(actual, expected)
    for start, key, total in zip(actual.column("window_start").to_pylist(), actual.column("k").to_pylist(),
                                 actual.column("s").to_pylist()):
        exact = sum(Fraction(v) for ts, k, v in rows if k == key and start <= ts < start + 10)
        assert total == float(exact), (start, key)


def _cut(sizes: list[int], rows: int) -> list[int]:
    """``sizes`` cut down to add up to ``rows``."""
    out, left = [], rows
    for s in sizes:
        if left == 0:
            break
        out.append(min(s, left))
        left -= out[-1]
    return out
