"""Updating streams (Flink's dynamic tables, docs/semantics.md "Updating streams"): the running
aggregate (``keyed.aggregate`` without a window), its changelog, its sinks, and the one
definition-time check that keeps updating streams out of operators that need append-only input.

The compiled engine is checked against the reference evaluator on random queries (data, keys,
batchings, parallelism 1-4): the final table, and the changelog per key (rows of one key keep
input order; the order across keys is unspecified). Resuming from a checkpoint gives the same
changelog and final table.
"""

from __future__ import annotations

import math
import shutil
import tempfile

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from strategies import (RUNNING_AGGREGATES, RUNNING_STRING_AGGREGATES, Step, aggregate_calls, arrow_stream,
                        assert_tables_equal, can_be_key, fresh_name, stateless_cases, tumbling, values_equal)
from test_checkpoint import _bounded, _case_over, _crash_points, _data, run_with_crashes

import grizzly_py as gz
from grizzly_py import Time, agg, col, lit, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.aggregates.functions.variance import exact_variance
from grizzly_py.engine.state_memory import StateMemoryLimitError
from grizzly_py.plan import ChangelogNode
from grizzly_py.windows import EventTimeSessionWindows

i64 = pa.int64()


# ----------------------------------------------------------------------------------------------
# random running aggregates against the reference
# ----------------------------------------------------------------------------------------------
@st.composite
def running_aggregate_cases(draw):
    """A random stateless prefix, ``key_by`` 1-3 keys (often an integer column modulo 1-4, so that
    keys get records enough to update), then ``aggregate`` of 1-4 aggregates, and
    the parallelism to run it at."""
    case, stream = draw(stateless_cases(max_steps=2))
    schema = stream.schema
    names = [f.name for f in schema if can_be_key(f)]
    ints = [f.name for f in schema if f.dtype.is_integer]
    if not names or draw(st.booleans()):
        name = fresh_name(schema, "ck")
        base = col(draw(st.sampled_from(ints))) if ints else lit(0)
        case.steps.append(Step("with_columns", kwargs={name: base % draw(st.integers(1, 4))}))
        keys = [name] + draw(st.lists(st.sampled_from(names), unique=True, max_size=1)) if names else [name]
    else:
        keys = draw(st.lists(st.sampled_from(names), unique=True, min_size=1, max_size=3))
    calls = draw(st.lists(aggregate_calls(schema, RUNNING_AGGREGATES, RUNNING_STRING_AGGREGATES),
                          min_size=1, max_size=4))
    case.steps += [Step("key_by", tuple(keys)),
                   Step("aggregate", kwargs={f"agg{i}": call for i, call in enumerate(calls)})]
    case.keys = keys
    case.parallelism = draw(st.integers(1, 4))
    return case


def _group(value):
    """A key value as a dict key (NaN equal to NaN, -0.0 to 0.0)."""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else value + 0.0
    return value


def per_key(changelog: pa.Table, keys) -> dict:
    """The rows of each key, in order."""
    out: dict = {}
    for row in changelog.to_pylist():
        out.setdefault(tuple(_group(row[k]) for k in keys), []).append(row)
    return out


def assert_same_changelog(actual: pa.Table, expected: pa.Table, keys) -> None:
    assert actual.schema.names == expected.schema.names
    a, e = per_key(actual, keys), per_key(expected, keys)
    assert a.keys() == e.keys(), f"keys differ: {sorted(map(str, a))} != expected {sorted(map(str, e))}"
    for k in e:
        assert len(a[k]) == len(e[k]), f"key {k}: {a[k]} != expected {e[k]}"
        for x, y in zip(a[k], e[k]):
            assert all(values_equal(x[n], y[n]) for n in y), f"key {k}: {a[k]} != expected {e[k]}"


def run_compiled(build, parallelism: int | str = 1, **options):
    """(final table, changelog) of ``build``'s updating stream, compiled with the engine ``options``."""
    env = gz.StreamEnvironment(parallelism=parallelism, **options)
    stream = build(env)
    stream.collect("final")
    stream.changelog().collect("changes")
    result = env.execute()
    return result["final"], result["changes"]


def check_against_reference(build, keys, parallelism: int = 1) -> None:
    node = build(gz.StreamEnvironment()).node
    try:
        expected = reference.evaluate(node)
        expected_changes = reference.evaluate(ChangelogNode(node))
    except AggregateOverflowError:
        with pytest.raises(AggregateOverflowError):
            run_compiled(build, parallelism)
        return
    final, changes = run_compiled(build, parallelism)
    assert_tables_equal(final, expected)
    assert_same_changelog(changes, expected_changes, keys)


@given(running_aggregate_cases())
def test_running_aggregates_match_reference(case):
    check_against_reference(case.build, case.keys, case.parallelism)


@given(case=running_aggregate_cases(), data=st.data())
def test_running_aggregates_resume_after_crashes(case, data):
    """A job resumed from its checkpoints (after crashes at drawn batches) writes the same
    changelog and final table as the reference."""
    build = _case_over(case)
    node = build(gz.StreamEnvironment(), case.batches()).node
    try:
        expected = reference.evaluate(ChangelogNode(node))
    except AggregateOverflowError:
        return
    points = _crash_points(data, len(case.slices))
    path = tempfile.mkdtemp(prefix="gz-ckpt-")
    try:
        result = run_with_crashes(lambda env, source: build(env, source).changelog(), case.batches(), points, path,
                                  case.parallelism)
        assert_same_changelog(result["out"], expected, case.keys)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _running(env, data):
    return (_bounded(env, data).key_by("k", "name")
            .aggregate(c=agg.count(), s=agg.sum("n"), hi=agg.max("v"), a=agg.avg("n"), la=agg.last("name"),
                       d=agg.count_distinct("v")))


@pytest.mark.parametrize("parallelism", [1, 2])
def test_running_aggregate_resumes_exactly(parallelism, tmp_path):
    batches = _data().to_batches(max_chunksize=100)
    expected = reference.evaluate(ChangelogNode(_running(gz.StreamEnvironment(), batches).node))
    result = run_with_crashes(lambda env, data: _running(env, data).changelog(), batches, [1, 7, 8, 19],
                              tmp_path / "chk", parallelism)
    assert result.metrics["checkpoints"]["restored_from"] == 19
    assert_same_changelog(result["out"], expected, ["k", "name"])


def _aggregate_of_aggregate(env, data):
    return (_bounded(env, data).key_by("k", "name").aggregate(hi=agg.max("n"))
            .key_by("name").aggregate(a=agg.avg("hi"), c=agg.count(), s=agg.sum("hi"), lo=agg.min("hi"),
                                      top=agg.max("hi"), d=agg.count_distinct("hi")))


@pytest.mark.parametrize("parallelism", [1, 2])
def test_aggregate_of_aggregate_resumes_exactly(parallelism, tmp_path):
    batches = _data().to_batches(max_chunksize=100)
    expected = reference.evaluate(ChangelogNode(_aggregate_of_aggregate(gz.StreamEnvironment(), batches).node))
    result = run_with_crashes(lambda env, data: _aggregate_of_aggregate(env, data).changelog(), batches,
                              [1, 7, 8, 19], tmp_path / "chk", parallelism)
    assert result.metrics["checkpoints"]["restored_from"] == 19
    assert_same_changelog(result["out"], expected, ["name"])


def _string_extremes(env, data):
    """min/max of strings over the last row per (k, n): string value bags that retract."""
    return (_bounded(env, data).key_by("k", "n").deduplicate(keep="last")
            .key_by("k").aggregate(lo=agg.min("name"), hi=agg.max("name"), d=agg.count_distinct("name")))


def _retracting_sequences(env, data):
    """first/last of strings and a variance over the last row per (k, n): sequences of values
    (a holistic state) and retractable sums."""
    return (_bounded(env, data).key_by("k", "n").deduplicate(keep="last")
            .key_by("k").aggregate(f=agg.first("name"), la=agg.last("name"), sd=agg.stddev_samp("n")))


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("query", [_string_extremes, _retracting_sequences], ids=["value_bags", "sequences"])
def test_retracting_states_resume_exactly(query, parallelism, tmp_path):
    """String value bags, sequences of values and retractable sums come back from a checkpoint
    exactly: the changelog equals the reference's after crashes."""
    batches = _data().to_batches(max_chunksize=100)
    expected = reference.evaluate(ChangelogNode(query(gz.StreamEnvironment(), batches).node))
    result = run_with_crashes(lambda env, data: query(env, data).changelog(), batches, [2, 9, 10],
                              tmp_path / "chk", parallelism)
    assert result.metrics["checkpoints"]["restored_from"] == 10
    assert_same_changelog(result["out"], expected, ["k"])


def _last_rows(env, data):
    return _bounded(env, data).key_by("k", "n").deduplicate(keep="last")


@pytest.mark.parametrize("parallelism", [1, 2])
def test_deduplicate_resumes_exactly(parallelism, tmp_path):
    batches = _data().to_batches(max_chunksize=100)
    expected = reference.evaluate(ChangelogNode(_last_rows(gz.StreamEnvironment(), batches).node))
    result = run_with_crashes(lambda env, data: _last_rows(env, data).changelog(), batches, [2, 9, 10],
                              tmp_path / "chk", parallelism)
    assert result.metrics["checkpoints"]["restored_from"] == 10
    assert_same_changelog(result["out"], expected, ["k", "n"])


def test_file_sink_of_a_resumed_job_holds_the_changelog_once(tmp_path):
    batches = _data().to_batches(max_chunksize=100)
    expected = reference.evaluate(ChangelogNode(_running(gz.StreamEnvironment(), batches).node))
    out = tmp_path / "changes.parquet"
    run_with_crashes(_running, batches, [3, 11], tmp_path / "chk", 1, sink=str(out))
    assert_same_changelog(pq.read_table(out), expected, ["k", "name"])


@pytest.mark.parametrize("options", [dict(grouping="sort"), dict(window_state="shared", parallelism=3),
                                     dict(parallelism="auto", adaptive=False)])
def test_engine_options_leave_a_running_aggregate_as_it_is(options):
    def build(env):
        return _running(env, _data(rows=500).to_batches(max_chunksize=64))
    base_final, base_changes = run_compiled(build)
    final, changes = run_compiled(build, **options)
    assert_tables_equal(final, base_final)
    assert_same_changelog(changes, base_changes, ["k", "name"])


def test_state_memory_limit_counts_value_bags():
    """One key's 20,000 distinct values: the key table fits the limit, its value bag does not."""
    def run(**calls):
        env = gz.StreamEnvironment(state_memory_limit=64 * 1024)
        data = {"ts": pa.array(range(20_000), i64), "k": pa.array([0] * 20_000, i64),
                "v": pa.array(range(20_000), i64)}
        arrow_stream(env, data, sizes=[1_000] * 20).key_by("k").aggregate(**calls).collect("out")
        return env.execute()
    assert run(n=agg.count(), hi=agg.max("v"))["out"].num_rows == 1
    with pytest.raises(StateMemoryLimitError, match="the limit is 65536 bytes"):
        run(n=agg.count(), d=agg.count_distinct("v"))


def test_state_memory_limit_counts_the_key_table():
    env = gz.StreamEnvironment(state_memory_limit=1024)
    _running(env, _data().to_batches(max_chunksize=100)).collect("out")
    with pytest.raises(StateMemoryLimitError, match="the limit is 1024 bytes"):
        env.execute()


@st.composite
def aggregate_of_aggregate_cases(draw, inner=None):
    """A running aggregate (``running_aggregate_cases``; or the updating case ``inner`` draws),
    sometimes filtered, then a running aggregate over it (an updating input): 1-2 keys among its
    columns, count / count(c) / sum / avg of its integer columns (float sums subtract retracted
    values, where rounding may differ from a recomputation: the hand-written cases cover them),
    min / max / count_distinct of its numeric and string columns (a value bag: exact for floats
    too), first / last of them (exact too), variances of its integer columns modulo 1000
    (retractable sums: exact for such integers)."""
    case = draw(inner if inner is not None else running_aggregate_cases())
    inner = case.build(gz.StreamEnvironment()).schema
    if draw(st.booleans()):
        ints = [f.name for f in inner if f.dtype.is_integer]
        if ints:
            case.steps.append(Step("filter", (col(draw(st.sampled_from(ints))) % 3 != 1,)))
    # (not float columns: a computed float may differ from the reference's in its last bits,
    # which is fine for a value but not for a key)
    names = [f.name for f in inner if can_be_key(f) and not f.dtype.is_float]
    assume(names)
    keys = draw(st.lists(st.sampled_from(names), unique=True, min_size=1, max_size=2))
    ints = [f.name for f in inner if f.dtype.is_integer]
    numbers = [f.name for f in inner if (f.dtype.is_numeric and not f.dtype.is_bool) or f.dtype.is_string]
    calls = {"n": agg.count()}
    for i, name in enumerate(draw(st.lists(st.sampled_from(ints), max_size=3)) if ints else []):
        calls[f"o{i}"] = getattr(agg, draw(st.sampled_from(["count", "sum", "avg"])))(name)
    for i, name in enumerate(draw(st.lists(st.sampled_from(numbers), max_size=3)) if numbers else []):
        calls[f"b{i}"] = getattr(agg, draw(st.sampled_from(["min", "max", "count_distinct"])))(name)
    for i, name in enumerate(draw(st.lists(st.sampled_from(numbers), max_size=2)) if numbers else []):
        calls[f"p{i}"] = getattr(agg, draw(st.sampled_from(["first", "last"])))(name)
    for i, name in enumerate(draw(st.lists(st.sampled_from(ints), max_size=1)) if ints else []):
        spread = draw(st.sampled_from(["var_pop", "var_samp", "stddev_pop", "stddev_samp"]))
        calls[f"v{i}"] = getattr(agg, spread)(col(name) % 1000)
    case.steps += [Step("key_by", tuple(keys)), Step("aggregate", kwargs=calls)]
    case.keys = keys
    return case


@given(aggregate_of_aggregate_cases())
def test_aggregates_over_updating_streams_match_reference(case):
    check_against_reference(case.build, case.keys, case.parallelism)


def test_aggregate_of_an_aggregate_by_hand():
    """Nexmark Q4's shape: the average per category of each auction's highest price."""
    def build(env, sizes=None):
        data = {"ts": pa.array(range(7), i64), "category": pa.array([1, 1, 2, 1, 2, 1, 2], i64),
                "auction": pa.array([10, 11, 20, 10, 20, 11, 21], i64),
                "price": [5.0, 7.0, 1.0, 9.0, 3.0, 2.0, float("nan")]}
        highest = arrow_stream(env, data, sizes=sizes).key_by("auction", "category").aggregate(hi=agg.max("price"))
        return highest.key_by("category").aggregate(avg_hi=agg.avg("hi"), n=agg.count(), total=agg.sum("hi"))
    final, changes = run_compiled(build)
    assert [(r["op"], r["category"], r["n"]) for r in changes.to_pylist()] == [
        ("+I", 1, 1), ("-U", 1, 1), ("+U", 1, 2), ("+I", 2, 1),
        ("-U", 1, 2), ("+U", 1, 1),     # auction 10's maximum 5 retracted ...
        ("-U", 1, 1), ("+U", 1, 2),     # ... and 9 put in its place
        ("-D", 2, 1), ("+I", 2, 1),     # category 2's only auction: emptied, then filled again
        ("-U", 2, 1), ("+U", 2, 2)]     # (auction 11's price 2 is below its maximum: nothing)
    assert final.to_pylist()[0] == dict(category=1, avg_hi=8.0, n=2, total=16.0)
    assert final.to_pylist()[1]["n"] == 2 and math.isnan(final.to_pylist()[1]["total"])
    for sizes in (None, [1] * 7, [3, 4]):
        check_against_reference(lambda env: build(env, sizes), ["category"], 2)


def _last_prices(env, sizes=None):
    """The last price of each auction (``deduplicate(keep="last")``, an updating stream)."""
    data = {"ts": pa.array(range(9), i64), "id": pa.array([1, 2, 1, 2, 3, 3, 4, 5, 5], i64),
            "g": ["a", "a", "a", "a", "b", "c", "b", "b", "b"], "v": pa.array([5, 3, 7, 9, 4, 6, 1, 8, 2], i64)}
    return arrow_stream(env, data, sizes=sizes).key_by("id").deduplicate(keep="last")


def test_min_max_and_count_distinct_take_back_a_retracted_value():
    """A retraction of the minimum makes the next smallest value the minimum (Flink's
    MinWithRetractAggFunction); a group emptied and filled again starts from an empty bag."""
    def build(env, sizes=None):
        return _last_prices(env, sizes).key_by("g").aggregate(lo=agg.min("v"), hi=agg.max("v"),
                                                              d=agg.count_distinct("v"))
    final, changes = run_compiled(build)
    rows = [(r["op"], r["g"], r["lo"], r["hi"], r["d"]) for r in changes.to_pylist()]
    assert [r for r in rows if r[1] == "a"] == [
        ("+I", "a", 5, 5, 1), ("-U", "a", 5, 5, 1), ("+U", "a", 3, 5, 2),
        ("-U", "a", 3, 5, 2), ("+U", "a", 3, 3, 1),    # id 1's 5 retracted: the maximum falls back to 3
        ("-U", "a", 3, 3, 1), ("+U", "a", 3, 7, 2),    # ... and its 7 put in
        ("-U", "a", 3, 7, 2), ("+U", "a", 7, 7, 1),    # id 2's 3 retracted: the minimum rises to 7
        ("-U", "a", 7, 7, 1), ("+U", "a", 7, 9, 2)]
    assert [r for r in rows if r[1] == "b"] == [
        ("+I", "b", 4, 4, 1), ("-D", "b", 4, 4, 1),    # id 3 moves to group c: b is emptied
        ("+I", "b", 1, 1, 1), ("-U", "b", 1, 1, 1), ("+U", "b", 1, 8, 2),
        ("-U", "b", 1, 8, 2), ("+U", "b", 1, 1, 1),    # id 5's 8 retracted ...
        ("-U", "b", 1, 1, 1), ("+U", "b", 1, 2, 2)]    # ... and replaced by 2
    assert final.to_pylist() == [dict(g="a", lo=7, hi=9, d=2), dict(g="b", lo=1, hi=2, d=2),
                                 dict(g="c", lo=6, hi=6, d=1)]
    for sizes in (None, [1] * 9, [4, 5]):
        for parallelism in (1, 3):
            check_against_reference(lambda env: build(env, sizes), ["g"], parallelism)


def test_a_value_in_twice_stays_until_both_are_retracted():
    """Equal values count: retracting one of two 5s leaves the minimum at 5 (nothing emitted);
    NaN is a maximum only when every value is NaN, and counts as one distinct value."""
    def build(env):
        data = {"ts": pa.array(range(6), i64), "id": pa.array([1, 2, 1, 3, 2, 3], i64),
                "v": [5.0, 5.0, 7.0, float("nan"), 8.0, -0.0]}
        rows = arrow_stream(env, data).key_by("id").deduplicate(keep="last")
        return rows.with_columns(g=lit(0)).key_by("g").aggregate(lo=agg.min("v"), hi=agg.max("v"),
                                                                 d=agg.count_distinct("v"))
    final, changes = run_compiled(build)
    assert [(r["lo"], r["hi"], r["d"]) for r in changes.to_pylist() if r["op"] in ("+I", "+U")] == [
        (5.0, 5.0, 1), (5.0, 7.0, 2), (5.0, 7.0, 3), (7.0, 7.0, 2), (7.0, 8.0, 3), (7.0, 8.0, 2), (0.0, 8.0, 3)]
    assert final.to_pylist() == [dict(g=0, lo=0.0, hi=8.0, d=3)]
    check_against_reference(build, ["g"], 2)


def test_min_and_max_of_strings_tell_a_long_common_prefix_apart():
    """Strings whose first 8 bytes agree tie on their order keys: the result is picked among
    them by the strings; a retracted maximum gives way to the next largest string."""
    def build(env, sizes=None):
        data = {"ts": pa.array(range(7), i64), "id": pa.array([1, 2, 3, 1, 4, 3, 5], i64),
                "s": ["zebra-crossing-9", "zebra-crossing-10", "é", "apple", None, "zebra-crossing-8", ""]}
        rows = arrow_stream(env, data, sizes=sizes).key_by("id").deduplicate(keep="last")
        return rows.with_columns(g=lit(0)).key_by("g").aggregate(lo=agg.min("s"), hi=agg.max("s"))
    final, changes = run_compiled(build)
    assert [(r["lo"], r["hi"]) for r in changes.to_pylist() if r["op"] in ("+I", "+U")] == [
        ("zebra-crossing-9", "zebra-crossing-9"), ("zebra-crossing-10", "zebra-crossing-9"),
        ("zebra-crossing-10", "é"), ("apple", "é"),      # (id 1: -U zebra-crossing-9 leaves lo, hi as they are)
        ("apple", "zebra-crossing-10"),                  # id 3's é retracted: the next largest string
        ("apple", "zebra-crossing-8"), ("", "zebra-crossing-8")]
    assert final.to_pylist() == [dict(g=0, lo="", hi="zebra-crossing-8")]
    for sizes in (None, [1] * 7, [2, 5]):
        check_against_reference(lambda env: build(env, sizes), ["g"], 2)


def _runs(n):
    """(batch sizes, parallelism) to check a case of ``n`` rows against the reference at."""
    return [(None, 1), ([1] * n, 2), ([2, n - 2], 3), ([n - 1, 1], 4)]


def _rows(changes, *columns):
    """The +I/+U rows of a changelog as reprs (NaN and -0.0 told apart), with the key ``g``."""
    return [(r["g"], *(repr(r[c]) for c in columns)) for r in changes.to_pylist() if r["op"] in ("+I", "+U")]


def test_first_and_last_give_back_the_next_value_when_one_is_retracted():
    """A retraction of the first (last) value makes the next (previous) one in event-time order
    the result; a group emptied and filled again starts over."""
    def build(env, sizes=None):
        return _last_prices(env, sizes).key_by("g").aggregate(f=agg.first("v"), la=agg.last("v"))
    final, changes = run_compiled(build)
    rows = [(r["op"], r["g"], r["f"], r["la"]) for r in changes.to_pylist()]
    assert [r for r in rows if r[1] == "a"] == [
        ("+I", "a", 5, 5), ("-U", "a", 5, 5), ("+U", "a", 5, 3),
        ("-U", "a", 5, 3), ("+U", "a", 3, 3),          # id 1's 5 (the first) retracted: 3 is first
        ("-U", "a", 3, 3), ("+U", "a", 3, 7),
        ("-U", "a", 3, 7), ("+U", "a", 7, 7),          # id 2's 3 retracted
        ("-U", "a", 7, 7), ("+U", "a", 7, 9)]
    assert [r for r in rows if r[1] == "b"] == [
        ("+I", "b", 4, 4), ("-D", "b", 4, 4), ("+I", "b", 1, 1), ("-U", "b", 1, 1), ("+U", "b", 1, 8),
        ("-U", "b", 1, 8), ("+U", "b", 1, 1),          # id 5's 8 (the last) retracted: 1 is last again
        ("-U", "b", 1, 1), ("+U", "b", 1, 2)]
    assert final.to_pylist() == [dict(g="a", f=7, la=9), dict(g="b", f=1, la=2), dict(g="c", f=6, la=6)]
    for sizes, parallelism in _runs(9):
        check_against_reference(lambda env: build(env, sizes), ["g"], parallelism)


def test_a_retraction_takes_the_oldest_equal_value_out():
    """Of two equal values, a retraction takes the older one out (Flink's retracting FIRST_VALUE
    and LAST_VALUE), whichever row it retracts: id 3's 5 retracted leaves id 1's 5 out, so 3 is
    first."""
    def build(env, sizes=None):
        data = {"ts": pa.array(range(4), i64), "id": pa.array([1, 2, 3, 3], i64), "v": pa.array([5, 3, 5, 9], i64)}
        rows = arrow_stream(env, data, sizes=sizes).key_by("id").deduplicate(keep="last")
        return rows.with_columns(g=lit(0)).key_by("g").aggregate(f=agg.first("v"), la=agg.last("v"))
    final, changes = run_compiled(build)
    assert _rows(changes, "f", "la") == [(0, "5", "5"), (0, "5", "3"), (0, "5", "5"), (0, "3", "5"), (0, "3", "9")]
    assert final.to_pylist() == [dict(g=0, f=3, la=9)]
    for sizes, parallelism in _runs(4):
        check_against_reference(lambda env: build(env, sizes), ["g"], parallelism)


def test_first_and_last_of_floats_and_strings_with_nulls():
    """Nulls are skipped, and so is their retraction; a float is retracted by an equal one, NaN
    by NaN and -0.0 only by -0.0; strings by equal strings."""
    def build(env, sizes=None):
        data = {"ts": pa.array(range(6), i64), "id": pa.array([1, 2, 3, 1, 3, 2], i64),
                "f": [float("nan"), None, -0.0, 1.0, 0.0, 2.0], "s": ["x", None, "é", "y", "x", "x"]}
        rows = arrow_stream(env, data, sizes=sizes).key_by("id").deduplicate(keep="last")
        return rows.with_columns(g=lit(0)).key_by("g").aggregate(ff=agg.first("f"), lf=agg.last("f"),
                                                                 fs=agg.first("s"), ls=agg.last("s"))
    final, changes = run_compiled(build)
    assert _rows(changes, "ff", "lf", "fs", "ls") == [
        (0, "nan", "nan", "'x'", "'x'"), (0, "nan", "-0.0", "'x'", "'é'"),
        (0, "-0.0", "-0.0", "'é'", "'é'"),             # id 1's NaN and x retracted
        (0, "-0.0", "1.0", "'é'", "'y'"), (0, "1.0", "1.0", "'y'", "'y'"),
        (0, "1.0", "0.0", "'y'", "'x'"), (0, "1.0", "2.0", "'y'", "'x'")]
    for sizes, parallelism in _runs(6):
        check_against_reference(lambda env: build(env, sizes), ["g"], parallelism)


def test_variances_follow_the_values_in():
    """A variance over the values in: back to one value (0, a sample variance null), to none
    (null) and filled again from a fresh state; NaN while a NaN or infinite value is in, exact
    again once it is retracted."""
    def build(env, sizes=None):
        data = {"ts": pa.array(range(8), i64), "id": pa.array([1, 2, 1, 2, 1, 4, 4, 4], i64),
                "g": ["a", "a", "a", "b", "a", "b", "b", "b"],
                "v": [2.0, 4.0, None, 4.0, 10.0, float("nan"), float("inf"), 6.0]}
        rows = arrow_stream(env, data, sizes=sizes).key_by("id").deduplicate(keep="last")
        return rows.key_by("g").aggregate(vp=agg.var_pop("v"), vs=agg.var_samp("v"), sd=agg.stddev_samp("v"))
    final, changes = run_compiled(build)
    assert [(r["op"], *map(repr, (r["vp"], r["vs"]))) for r in changes.to_pylist() if r["g"] == "a"] == [
        ("+I", "0.0", "None"), ("-U", "0.0", "None"), ("+U", "1.0", "2.0"),
        ("-U", "1.0", "2.0"), ("+U", "0.0", "None"),    # 2 retracted: one value left
        ("-U", "0.0", "None"), ("+U", "None", "None"),  # 4 moves to b: a keeps a row with no value
        ("-D", "None", "None"), ("+I", "0.0", "None")]  # the null row retracted, then 10
    assert [r for r in _rows(changes, "vp", "vs") if r[0] == "b"] == [
        ("b", "0.0", "None"), ("b", "nan", "nan"), ("b", "0.0", "None"), ("b", "nan", "nan"),
        ("b", "0.0", "None"), ("b", "1.0", "2.0")]
    assert final.to_pylist()[1] == dict(g="b", vp=1.0, vs=2.0, sd=math.sqrt(2.0))
    for sizes, parallelism in _runs(8):
        check_against_reference(lambda env: build(env, sizes), ["g"], parallelism)


def test_a_variance_keeps_its_digits_where_the_values_drift_from_the_first():
    """The sums are of values shifted by the first one; once it is retracted, the values left
    are far from it (their squares near 1e16, their spread 1): the squares' rounding errors are
    kept and the sums cancel in double-double arithmetic, so the result is still exact."""
    def build(env, sizes=None):
        big = [1e8 + 1, 1e8 + 2, 1e8 + 3, 1e8 + 7, 1e8 + 11]
        data = {"ts": pa.array(range(7), i64), "id": pa.array([0, 1, 2, 3, 4, 5, 0], i64),
                "v": [0.0, *big, None]}
        rows = arrow_stream(env, data, sizes=sizes).key_by("id").deduplicate(keep="last")
        return rows.with_columns(g=lit(0)).key_by("g").aggregate(vp=agg.var_pop("v"), ss=agg.stddev_samp("v"))
    final, _ = run_compiled(build)
    spread = [1.0, 2.0, 3.0, 7.0, 11.0]
    assert final.to_pylist() == [dict(g=0, vp=float(exact_variance(spread, 0)),
                                      ss=math.sqrt(exact_variance(spread, 1)))]
    for sizes, parallelism in _runs(7):
        check_against_reference(lambda env: build(env, sizes), ["g"], parallelism)


def test_every_aggregate_takes_an_updating_input():
    """Every aggregate users call can undo a retracted row, so each defines over an updating input."""
    from grizzly_py.aggregates.spec import specs
    env = gz.StreamEnvironment()
    names = [s.name for s in specs() if s.public and not s.name.startswith("_")]
    calls = {f"a_{name}": (agg.count() if name == "count" else agg.top_k("k", 2) if name == "top_k"
                           else getattr(agg, name)("k")) for name in names}
    out = _updating(env).key_by("n").aggregate(**calls)
    assert out.node.updating and out.schema.names == ["n", *calls]


# ----------------------------------------------------------------------------------------------
# by hand
# ----------------------------------------------------------------------------------------------
def _bids(env, sizes=None):
    data = {"ts": pa.array(range(8), i64), "k": pa.array([1, 2, 1, 1, None, 2, 1, None], i64),
            "v": pa.array([5, 2, 3, 9, 4, None, 9, 4], i64), "f": [0.5, float("nan"), 1.0, 2.0, 1.0, 3.0, 2.0, 1.0]}
    return arrow_stream(env, data, sizes=sizes)


def test_changelog_in_retract_form_by_hand():
    def build(env):
        return _bids(env, sizes=[3, 0, 1, 4]).key_by("k").aggregate(hi=agg.max("v"), n=agg.count("v"))
    final, changes = run_compiled(build)
    assert changes.to_pylist() == [
        dict(op="+I", k=1, hi=5, n=1), dict(op="+I", k=2, hi=2, n=1),
        dict(op="-U", k=1, hi=5, n=1), dict(op="+U", k=1, hi=5, n=2),   # 3 < 5: the count changes
        dict(op="-U", k=1, hi=5, n=2), dict(op="+U", k=1, hi=9, n=3),
        dict(op="+I", k=None, hi=4, n=1),                                # a null key is a key
        # k=2 with a null v: max and count(v) unchanged, nothing emitted
        dict(op="-U", k=1, hi=9, n=3), dict(op="+U", k=1, hi=9, n=4),
        dict(op="-U", k=None, hi=4, n=1), dict(op="+U", k=None, hi=4, n=2)]
    assert final.to_pylist() == [dict(k=1, hi=9, n=4), dict(k=2, hi=2, n=1), dict(k=None, hi=4, n=2)]
    check_against_reference(build, ["k"])


def test_unchanged_result_emits_nothing_nan_included():
    def build(env):
        return _bids(env, sizes=[1] * 8).key_by("k").aggregate(hi=agg.max("v"), s=agg.sum(col("f") * 0 + col("f")))
    final, changes = run_compiled(build)
    ops = [(r["op"], r["k"]) for r in changes.to_pylist()]
    assert ops.count(("-U", 2)) == 0   # key 2: NaN, then NaN + 3.0 = NaN; max(2, null) = 2
    check_against_reference(build, ["k"])


@pytest.mark.parametrize("parallelism", [1, 3])
def test_batch_size_and_parallelism_do_not_change_the_changelog(parallelism):
    def build(sizes):
        return lambda env: _bids(env, sizes).key_by("k").aggregate(a=agg.avg("f"), lo=agg.min("v"))
    base = run_compiled(build(None), 1)
    for sizes in ([1] * 8, [5, 3], [2, 2, 0, 4]):
        final, changes = run_compiled(build(sizes), parallelism)
        assert_tables_equal(final, base[0])
        assert_same_changelog(changes, base[1], ["k"])


def test_string_key_computed_and_filter_after_the_aggregate():
    def build(env):
        return (_bids(env).with_columns(day=gz.concat_str(lit("d"), gz.if_else(col("ts") % 3 == 0, "x", "y")))
                .key_by("day").aggregate(n=agg.count(), la=agg.last("v")).filter(col("n") > 1).select("day", "n"))
    check_against_reference(build, ["day"])


def test_file_sinks_write_the_changelog(tmp_path):
    def build(env):
        return _bids(env, sizes=[3, 5]).key_by("k").aggregate(hi=agg.max("v"))
    _, changes = run_compiled(build)
    env = gz.StreamEnvironment()
    build(env).sink_to_parquet(tmp_path / "out.parquet")
    build(env).sink_to_csv(tmp_path / "out.csv")
    env.execute()
    assert pq.read_table(tmp_path / "out.parquet").to_pylist() == changes.to_pylist()
    csv = pcsv.read_csv(tmp_path / "out.csv", convert_options=pcsv.ConvertOptions(
        column_types={"op": pa.string(), "k": i64, "hi": i64}))
    assert csv.to_pylist() == changes.to_pylist()


def test_execute_and_collect_returns_the_final_table():
    env = gz.StreamEnvironment()
    s = _bids(env).key_by("k").aggregate(n=agg.count())
    assert s.is_updating and not s.changelog().is_updating
    assert s.execute_and_collect().to_pylist() == [dict(k=1, n=4), dict(k=2, n=2), dict(k=None, n=2)]


# ----------------------------------------------------------------------------------------------
# definition-time checks
# ----------------------------------------------------------------------------------------------
def _updating(env):
    return _bids(env).key_by("k").aggregate(n=agg.count())


@pytest.mark.parametrize("what, build", [
    ("tumbling window", lambda u, a: u.key_by("k").window(tumbling(10)).aggregate(n=agg.count())),
    ("session window", lambda u, a: u.key_by("k").window(EventTimeSessionWindows.with_gap(Time.milliseconds(5)))
     .aggregate(n=agg.count())),
    ("count window", lambda u, a: u.key_by("k").count_window(2).aggregate(n=agg.count())),
    ("window join", lambda u, a: a.join(u).where("k").equal_to("k").window(tumbling(10))),
    ("interval join", lambda u, a: u.interval_join(a).between(Time.milliseconds(-1), Time.milliseconds(1))),
    ("union", lambda u, a: a.select("k", n=col("v")).union(u)),
    ("regular join", lambda u, a: a.join(u).where("k").equal_to("k")),
    ("regular join", lambda u, a: u.join(a).where("k").equal_to("k").state_ttl(Time.milliseconds(5))),
    ("lookup join", lambda u, a: u.lookup_join(pa.table({"k": [1], "w": [2]}), "k")),
    ("OVER aggregate", lambda u, a: u.key_by("k").over(rows_preceding=2).aggregate(c=agg.count())),
    ("tumbling window", lambda u, a: u.key_by("k").window(tumbling(10)).top_n(1, by="n")),
])
def test_operators_that_need_append_only_input_reject_an_updating_one(what, build):
    env = gz.StreamEnvironment()
    with pytest.raises(ValueError, match=f"{what}.*needs an append-only input.*updating stream"):
        build(_updating(env), _bids(env))


def test_other_misuse_is_rejected_at_definition_time():
    env = gz.StreamEnvironment()
    with pytest.raises(ValueError, match="append-only, not an updating stream"):
        _bids(env).changelog()
    with pytest.raises(TypeError, match="by name"):
        _bids(env).key_by("k").aggregate(agg.count())
    # the changelog is append-only: windows take it
    _updating(env).changelog().key_by("k").count_window(2).aggregate(n=agg.count())


# ----------------------------------------------------------------------------------------------
# deduplicate
# ----------------------------------------------------------------------------------------------
@st.composite
def deduplicate_cases(draw, keep=None):
    """A random stateless prefix, ``key_by`` 1-2 keys (often an integer column modulo 1-4), then
    ``deduplicate(keep)`` (``keep`` drawn unless given), and the parallelism to run it at."""
    case = draw(running_aggregate_cases())
    keyed = case.steps[-2]
    stream = case.source(gz.StreamEnvironment())
    for step in case.steps[:-2]:
        stream = step.apply(stream)
    # timestamps finer than milliseconds are kept as int64 (deduplicate rejects them)
    fine = {f.name: col(f.name).cast("int64") for f in stream.schema
            if f.name not in keyed.args and f.arrow_type is not None and pa.types.is_timestamp(f.arrow_type)
            and f.arrow_type.unit != "ms"}
    case.steps[-2:] = ([Step("with_columns", kwargs=fine)] if fine else []) + [
        keyed, Step("deduplicate", kwargs={"keep": keep or draw(st.sampled_from(["first", "last"]))})]
    return case


def check_deduplicate(build, keys, parallelism: int = 1) -> None:
    node = build(gz.StreamEnvironment()).node
    if not node.updating:  # keep="first": an append-only stream, in arrival order
        expected = reference.evaluate(node)
        env = gz.StreamEnvironment(parallelism=parallelism)
        build(env).collect("out")
        assert_tables_equal(env.execute()["out"], expected)
        return
    check_against_reference(build, keys, parallelism)


@given(deduplicate_cases())
def test_deduplicate_matches_reference(case):
    check_deduplicate(case.build, case.keys, case.parallelism)


@given(aggregate_of_aggregate_cases(inner=deduplicate_cases(keep="last")))
def test_aggregates_over_last_rows_match_reference(case):
    """Over ``deduplicate(keep="last")``: a key's newer row retracts its older one (-U/+U)."""
    check_against_reference(case.build, case.keys, case.parallelism)


def test_deduplicate_by_hand():
    def build(keep, sizes=None):
        def query(env):
            data = {"ts": pa.array([5, 2, 3, 6, 5, 2, 6], i64), "k": pa.array([1, 2, 1, 1, None, 2, 1], i64),
                    "v": pa.array([1, None, 3, 2, 5, 7, 2], i64), "s": ["a", "b", None, "d", "e", "f", "d"]}
            return arrow_stream(env, data, sizes=sizes).key_by("k").deduplicate(keep=keep)
        return query
    env = gz.StreamEnvironment()
    first = build("first", [2, 5])(env)
    assert not first.is_updating
    assert first.execute_and_collect().to_pylist() == [
        dict(ts=5, k=1, v=1, s="a"), dict(ts=2, k=2, v=None, s="b"), dict(ts=5, k=None, v=5, s="e")]
    final, changes = run_compiled(build("last", [3, 4]))
    assert [(r["op"], r["k"], r["ts"]) for r in changes.to_pylist()] == [
        ("+I", 1, 5), ("+I", 2, 2),                  # ts 3 < 5: key 1 keeps its row
        ("-U", 1, 5), ("+U", 1, 6), ("+I", None, 5),
        ("-U", 2, 2), ("+U", 2, 2)]                  # the same time, a later arrival; the last row
    # of key 1 equals the kept one: nothing
    # (sorted by the columns in order: ts first)
    assert final.to_pylist() == [dict(ts=2, k=2, v=7, s="f"), dict(ts=5, k=None, v=5, s="e"),
                                 dict(ts=6, k=1, v=2, s="d")]
    for sizes in (None, [1] * 7):
        check_deduplicate(build("last", sizes), ["k"], 2)
        check_deduplicate(build("first", sizes), ["k"], 2)


def test_first_rows_keep_their_event_time_for_a_window():
    def build(env):
        data = {"ts": pa.array([1, 2, 3, 11, 12, 25], i64), "k": pa.array([1, 1, 2, 1, 2, 3], i64)}
        return (arrow_stream(env, data, sizes=[2, 2, 2]).key_by("k").deduplicate(keep="first")
                .window_all(tumbling(10)).aggregate(n=agg.count()))
    env = gz.StreamEnvironment()
    assert build(env).execute_and_collect().column("n").to_pylist() == [2, 1]
    assert reference.evaluate(build(gz.StreamEnvironment()).node).column("n").to_pylist() == [2, 1]


def test_deduplicate_rejects_misuse():
    env = gz.StreamEnvironment()
    with pytest.raises(ValueError, match="'first' or 'last'"):
        _bids(env).key_by("k").deduplicate(keep="any")
    with pytest.raises(ValueError, match="deduplicate over an updating stream"):
        _updating(env).key_by("k").deduplicate()
    with pytest.raises(ValueError, match="tumbling window.*needs an append-only input"):
        _bids(env).key_by("k").deduplicate(keep="last").window_all(tumbling(10)).aggregate(n=agg.count())
