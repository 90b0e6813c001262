"""Differential tests of the operators that keep keyed state without windows: the compiled
engine against the reference evaluator (``grizzly_py/reference.py``) on random plans.

``strategies.keyed_operator_cases`` draws a random stateless prefix, then a running aggregate,
an unbounded ``top_n``, a ``deduplicate`` (first or last), an OVER aggregate or a
``lookup_join`` against a static table; over an updating stream sometimes a running aggregate
of it (Nexmark Q4's shape); then stateless steps, or a window aggregation (over an updating
result: of its ``.changelog()``, with aggregates its order across keys cannot change). ``strategies.regular_join_cases`` draws two random inputs (some through first rows,
OVER or a lookup join) joined by a regular join (with and without ``state_ttl``, a filter over
both sides after it), then the same tail. Each
runs at a drawn parallelism (1-4; ``every_row_a_morsel`` cuts even a few rows into a morsel per
worker) over drawn batchings and must give:

- the reference's final table (column names and types, rows in order: an updating stream's
  final table is sorted by its columns, append-only results leave in a defined order);
- for an updating stream, the reference's changelog (``.changelog()``, op column first): per key
  in order where the output keeps the key columns (docs/semantics.md: the order across keys is
  unspecified), else the same rows in any order; and every ``-U``/``-D`` retracts a row emitted
  before (the final table is what the changelog leaves);
- the same records in, records out, late and filtered records per sink, and the engine's record
  accounting balanced;
- ``AggregateOverflowError`` where the reference raises it.

A failing example prints as a runnable reproducer (``QueryCase.code()``, both inputs included).
``GRIZZLY_HYPOTHESIS_PROFILE=long`` runs many more examples (see conftest.py). Hand-written
regression tests pin what the random plans found.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from strategies import (arrow_stream, assert_tables_equal, keyed_operator_cases, normalize_table,
                        regular_join_cases, tumbling)
from test_updating_streams import assert_same_changelog

import grizzly_py as gz
from grizzly_py import agg, col, concat_str, lit, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.changelog import sorted_rows
from grizzly_py.plan import ChangelogNode

FEWER = settings(max_examples=max(settings().max_examples // 2, 3))


def run_compiled(case):
    """The compiled job: the final table as sink ``final`` and, for an updating stream, its
    changelog as sink ``changes``."""
    env = gz.StreamEnvironment(parallelism=case.parallelism)
    q = case.build(env)
    q.collect("final")
    if q.is_updating:
        q.changelog().collect("changes")
    return env.execute()


def assert_same_rows_in_any_order(actual: pa.Table, expected: pa.Table) -> None:
    """Equal as multisets of rows: both sorted by every column first (as final tables sort)."""
    actual, expected = normalize_table(actual), normalize_table(expected)
    assert_tables_equal(sorted_rows(actual) if actual.column_names == expected.column_names else actual,
                        sorted_rows(expected))


def _row_identity(row: dict) -> tuple:
    """A changelog row as the final table tells rows apart: NaN equal to NaN, -0.0 not 0.0."""
    def value(v):
        if isinstance(v, float):
            return ("nan",) if math.isnan(v) else (v, math.copysign(1.0, v))
        return tuple(map(value, v)) if isinstance(v, list) else v
    return tuple((name, value(v)) for name, v in row.items() if name != "op")


def assert_retractions_name_live_rows(changes: pa.Table) -> None:
    """Each ``-U``/``-D`` row of a changelog is a row added before (``+I``/``+U``) and not yet
    retracted: the final table is what the changelog leaves (docs/semantics.md). This holds
    in any order that keeps each key's rows in order."""
    live: Counter = Counter()
    for i, row in enumerate(changes.to_pylist()):
        identity = _row_identity(row)
        if row["op"] in ("-U", "-D"):
            assert live[identity] > 0, f"changelog row {i} retracts a row that is not there: {row}"
            live[identity] -= 1
        else:
            live[identity] += 1


def assert_same_counts(metrics: dict, sink: str, expected: dict, final_rows: int | None = None) -> None:
    """The sink's counts are the reference's; where a running aggregate emitted one change per
    key and batch (a pipeline's ``mini_batch``: docs/semantics.md) the sink got fewer rows than
    the per-record changelog, and at least one per row of its final table (``final_rows``)."""
    query = next(q for q in metrics["queries"] if q["sink"] == sink)
    for name in ("records_in", "records_out", "late_records", "filtered_records"):
        if name == "records_out" and any(p.get("mini_batch") for p in query["pipelines"]):
            assert final_rows is not None and final_rows <= query[name] <= expected[name], \
                f"sink {sink!r}: {name} {query[name]} not in [{final_rows}, {expected[name]}]"
            continue
        assert query[name] == expected[name], f"sink {sink!r}: {name} {query[name]} != expected {expected[name]}"


def check_against_reference(case) -> None:
    node = case.build(gz.StreamEnvironment()).node
    try:
        expected, expected_metrics = reference.run(node)
        if node.updating:
            expected_changes, changes_metrics = reference.run(ChangelogNode(node))
    except AggregateOverflowError:
        with pytest.raises(AggregateOverflowError):
            run_compiled(case)
        return
    result = run_compiled(case)
    assert_tables_equal(result["final"], expected)
    assert_same_counts(result.metrics, "final", expected_metrics, expected.num_rows)
    if node.updating:
        assert_retractions_name_live_rows(result["changes"])
        if case.keys is not None:
            assert_same_changelog(result["changes"], expected_changes, list(case.keys))
        else:
            assert_same_rows_in_any_order(result["changes"], expected_changes)
        assert_same_counts(result.metrics, "changes", changes_metrics)
    accounting = result.metrics["accounting"]
    for q in accounting["queries"]:  # every row filtered, late, into state or out
        assert q["records_in"] + q["results"] == q["filtered"] + q["late"] + q["into_state"] + q["records_out"]
    assert accounting["records_in"] == result.metrics["records_in"]


# every_row_a_morsel (conftest.py): even these few rows are cut into a morsel per worker
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=keyed_operator_cases())
def test_keyed_operators_without_windows_match_reference(every_row_a_morsel, case):
    check_against_reference(case)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=regular_join_cases())
def test_regular_joins_of_random_inputs_match_reference(every_row_a_morsel, case):
    check_against_reference(case)


# ----------------------------------------------------------------------------------------------
# what the random plans found
# ----------------------------------------------------------------------------------------------
def _first_rows_then_window(prepare):
    """``deduplicate(keep="first")`` then a window, after ``prepare`` leaves no column that
    holds the event time: the first rows keep it all the same (docs/semantics.md)."""
    def build(env):
        data = {"ts": pa.array([1000, 2000, 3000, 11000, 12000, 25000], pa.timestamp("us")),
                "k": pa.array([1, 1, 2, 1, 2, 3], pa.int64()), "v": pa.array([5, 6, 7, 8, 9, 10], pa.int64())}
        return (prepare(arrow_stream(env, data, sizes=[2, 2, 2])).key_by("k").deduplicate(keep="first")
                .window_all(tumbling(10)).aggregate(n=agg.count(), hi=agg.max("v")))
    return build


@pytest.mark.parametrize("prepare", [
    lambda s: s.select("k", "v"),                             # the timestamp column dropped
    lambda s: s.with_columns(ts=col("ts").cast("int64")),     # as deduplicate asks of a timestamp in us
    lambda s: s.with_columns(ts=lit(0)),                      # replaced by another value
], ids=["dropped", "cast", "replaced"])
@pytest.mark.parametrize("parallelism", [1, 3])
def test_first_rows_keep_their_event_time_without_a_column_that_holds_it(prepare, parallelism):
    build = _first_rows_then_window(prepare)
    expected = reference.evaluate(build(gz.StreamEnvironment()).node)
    assert expected.num_rows > 1
    env = gz.StreamEnvironment(parallelism=parallelism)
    build(env).collect("out")
    assert_tables_equal(env.execute()["out"], expected)


def _zero_then_negative_zero(env, operator):
    """Key 0's result goes from -0.0 to 0.0 (which compare equal), then changes again."""
    data = {"ts": pa.array([-1, 1, 0, 2], pa.int64()), "k": pa.array([0, 0, 0, 0], pa.int64()),
            "v": pa.array([None, None, 1, 2], pa.int64())}
    s = arrow_stream(env, data, sizes=[1, 3]).with_columns(f=lit(0) / col("ts"))  # -0.0, 0.0, NaN, 0.0
    if operator == "aggregate":
        return s.key_by("k").aggregate(n=agg.count("v"), last=agg.last("f"))
    return s.select("k", "f", "v").key_by("k").deduplicate(keep="last")


@pytest.mark.parametrize("operator", ["aggregate", "deduplicate"])
@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_zero_of_another_sign_is_a_change_the_changelog_shows(operator, parallelism):
    """-0.0 and 0.0 are different rows of the changelog (the final table tells them apart), so
    a result going from one to the other emits -U/+U, and a later -U names the row emitted
    last, bit for bit."""
    def build(env):
        return _zero_then_negative_zero(env, operator)
    expected_changes = reference.evaluate(build(gz.StreamEnvironment()).changelog().node)
    assert_retractions_name_live_rows(expected_changes)
    env = gz.StreamEnvironment(parallelism=parallelism)
    q = build(env)
    q.collect("final")
    q.changelog().collect("changes")
    result = env.execute()
    assert_retractions_name_live_rows(result["changes"])
    assert_tables_equal(result["changes"], expected_changes)
    assert_tables_equal(result["final"], reference.evaluate(build(gz.StreamEnvironment()).node))
    assert result["final"].num_rows == 1


def _totals(env, sizes):
    data = {"ts": pa.array(range(6), pa.int64()), "k": pa.array([1, 1, 1, 2, 1, 2], pa.int64()),
            "s": ["a", "b", "c", "d", "a", "é"]}
    return arrow_stream(env, data, sizes=sizes).key_by("k").aggregate(n=agg.count(), hi=agg.max("s"))


@pytest.mark.parametrize("aggregate_over", [
    lambda s: s.with_columns(y=lit("")).key_by("y").aggregate(c=agg.sum("n")),     # a computed string key
    lambda s: s.key_by("k").aggregate(c=agg.count_distinct(col("hi").str.to_uppercase())),  # a computed string
    lambda s: s.with_columns(y=concat_str(col("hi"), lit("!"))).key_by("y").aggregate(c=agg.max("n")),
], ids=["computed key", "computed argument", "computed key, value bag"])
@pytest.mark.parametrize("sizes", [None, [1] * 6])
def test_computed_strings_over_an_updating_input_keep_the_row_kinds(aggregate_over, sizes):
    """A running aggregate over an updating stream reads a computed string (key or argument)
    from a materialized projection, which must carry the row kinds: a -U still retracts."""
    def build(env):
        return aggregate_over(_totals(env, sizes))
    expected = reference.evaluate(build(gz.StreamEnvironment()).node)
    for parallelism in (1, 2):
        env = gz.StreamEnvironment(parallelism=parallelism)
        build(env).collect("out")
        assert_tables_equal(env.execute()["out"], expected)


def test_an_event_time_window_over_a_changelog():
    """Each changelog row has the event time of the record that made it (the reference's rule)."""
    def build(env):
        data = {"ts": pa.array([0, 1, 5, 7, 12], pa.int64()), "k": pa.array([1, 1, 2, 1, 2], pa.int64())}
        return (arrow_stream(env, data).key_by("k").aggregate(n=agg.count()).changelog()
                .window_all(tumbling(5)).aggregate(c=agg.count()))
    expected = reference.evaluate(build(gz.StreamEnvironment()).node)
    assert expected.column("c").to_pylist() == [3, 3, 2]
    assert_tables_equal(build(gz.StreamEnvironment()).execute_and_collect(), expected)


# ----------------------------------------------------------------------------------------------
# the harness itself
# ----------------------------------------------------------------------------------------------
@FEWER
@given(keyed_operator_cases() | regular_join_cases())
def test_reproducer_code_rebuilds_the_same_query(case):
    namespace: dict = {}
    exec(compile(case.code(run=False), "<reproducer>", "exec"), namespace)

    def plan_text(n):  # without the numbered source names
        return re.sub(r"arrow#\d+", "arrow", n.explain())
    assert plan_text(namespace["q"].node) == plan_text(case.build(gz.StreamEnvironment()).node)
    assert namespace["env"].parallelism == case.parallelism


def test_a_retraction_of_a_row_not_there_is_caught():
    ok = pa.table({"op": ["+I", "-U", "+U", "-D"], "x": [-0.0, -0.0, float("nan"), float("nan")]})
    assert_retractions_name_live_rows(ok)
    for bad in (pa.table({"op": ["+I", "-U"], "x": [-0.0, 0.0]}), pa.table({"op": ["-D"], "x": [1.0]})):
        with pytest.raises(AssertionError, match="retracts a row that is not there"):
            assert_retractions_name_live_rows(bad)


def test_rows_in_any_order_still_compares_every_row():
    table = pa.table({"op": ["+I", "-U", "+U"], "n": [1, 1, 2]})
    assert_same_rows_in_any_order(table, table.take([2, 0, 1]))
    with pytest.raises(AssertionError):
        assert_same_rows_in_any_order(table, pa.table({"op": ["+I", "-U", "+U"], "n": [1, 2, 2]}))
