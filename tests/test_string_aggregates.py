"""Aggregates over strings (api.md, "Aggregates over strings"): ``count_distinct``, ``mode``,
``min``, ``max`` (byte-wise order), ``first``, ``last`` and ``count`` of a string column run
compiled on the strings' interned ids, and equal the reference evaluator on every window kind,
grouping, window state and parallelism, through Spark's partial states and across the release of
strings that no window holds any more.

The data has empty strings, non-ASCII text, an embedded NUL, nulls and frequency ties (``mode``
breaks them toward the smallest string, not the smallest id: the strings arrive in an order
opposite to theirs). The random queries of the differential tests draw string arguments for
these aggregates too (``strategies.STRING_AGGREGATES``).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import grizzly_py as gz
from grizzly_py import Time, agg, col, lit, reference
from grizzly_py.engine import interning
from grizzly_py.spark.planner import run_in_process
from grizzly_py.spark.schema import spark_arrow_schema
from grizzly_py.windows import (EventTimeSessionWindows, SlidingEventTimeWindows, TumblingEventTimeWindows)

from strategies import assert_tables_equal
from marks import slow

ms = Time.milliseconds
ROWS = 60
WORDS = ["zeta", "é", "", "alpha", "a\x00", "Zeta", "ß", "日本", "b"]
TS = [((i * 5) % 11) // 2 + i // 6 for i in range(ROWS)]
DATA = {
    "ts": TS,
    "k": [i % 3 for i in range(ROWS)],
    "s": [None if i % 7 == 3 else WORDS[(i * i) % len(WORDS)] for i in range(ROWS)],
    "v": list(range(ROWS)),
}


def _table(string_type: pa.DataType = pa.string()) -> pa.Table:
    t = pa.table(DATA)
    return t.set_column(2, "s", t.column("s").cast(string_type))


def _source(env, chunk: int = 5, string_type: pa.DataType = pa.string()):
    return env.from_arrow(_table(string_type).to_batches(max_chunksize=chunk), timestamp="ts",
                          watermark=gz.WatermarkStrategy.for_bounded_out_of_orderness(ms(3)))


def _aggregates():
    return dict(d=agg.count_distinct("s"), mo=agg.mode("s"), lo=agg.min("s"), hi=agg.max("s"),
                fi=agg.first("s"), la=agg.last("s"), n=agg.count("s"),
                dw=agg.count_distinct("s", where=col("v") % 2 == 0), hw=agg.max("s", where=col("v") > 20))


WINDOWS = {
    "tumbling": lambda s: s.key_by("k").window(TumblingEventTimeWindows.of(ms(4))),
    "sliding": lambda s: s.key_by("k").window(SlidingEventTimeWindows.of(ms(6), ms(2))),
    "global": lambda s: s.window_all(TumblingEventTimeWindows.of(ms(5))),
    "session": lambda s: s.key_by("k").window(EventTimeSessionWindows.with_gap(ms(1))),
    "count": lambda s: s.key_by("k").count_window(5),
    "count_sliding": lambda s: s.key_by("k").count_window(5, 2),
    "string_key": lambda s: s.key_by("s").window(TumblingEventTimeWindows.of(ms(4))),
}


def _build(window: str, chunk: int, string_type=pa.string()):
    def build(env):
        return WINDOWS[window](_source(env, chunk, string_type)).aggregate(**_aggregates())
    return build


def _check(window: str, chunk: int = 5, string_type=pa.string(), **options) -> pa.Table:
    build = _build(window, chunk, string_type)
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    env = gz.StreamEnvironment(**options)
    build(env).collect("out")
    actual = env.execute()["out"]
    assert_tables_equal(actual, expected)
    assert actual.num_rows > 0
    return actual


@pytest.mark.parametrize("window", sorted(WINDOWS))
@pytest.mark.parametrize("chunk", [slow(1), 7, slow(ROWS)])
def test_string_aggregates_match_the_reference(window, chunk):
    _check(window, chunk)


@pytest.mark.parametrize("string_type", [pa.large_string(), pa.dictionary(pa.int32(), pa.string())], ids=str)
@pytest.mark.parametrize("window", ["tumbling", "session"])
def test_string_column_types(window, string_type):
    out = _check(window, 7, string_type)
    assert out.schema.field("d").type == pa.int64() and out.schema.field("n").type == pa.int64()


@pytest.mark.parametrize("window", ["tumbling", "sliding", "global", "string_key"])
@pytest.mark.parametrize("options", [dict(parallelism=2), slow(dict(parallelism=3)),
                                     dict(grouping="sort"), slow(dict(parallelism=2, grouping="sort")),
                                     dict(parallelism=2, window_state="shared")], ids=str)
def test_worker_states_and_groupings(every_row_a_morsel, window, options):
    _check(window, **options)


def test_mode_ties_go_to_the_smallest_string():
    """Each string once, in descending order: the interned ids ascend as the strings descend, so
    a tie broken by id would pick the largest string."""
    words = sorted(set(WORDS), reverse=True)
    table = pa.table({"ts": list(range(len(words))), "s": words})
    env = gz.StreamEnvironment()
    out = env.from_arrow(table, timestamp="ts").window_all(TumblingEventTimeWindows.of(ms(100))).aggregate(
        mo=agg.mode("s"), lo=agg.min("s"), hi=agg.max("s"), fi=agg.first("s"), la=agg.last("s")).execute_and_collect()
    assert out.select(["mo", "lo", "hi", "fi", "la"]).to_pylist() == [
        {"mo": min(words), "lo": min(words), "hi": max(words), "fi": words[0], "la": words[-1]}]


@pytest.mark.parametrize("string_type", [pa.string(), pa.large_string(), pa.dictionary(pa.int32(), pa.string())],
                         ids=str)
def test_string_results_are_arrow_strings(string_type):
    """Whatever the input's string type, a string result is an Arrow ``string`` (as the
    reference's, and as the key columns' output types are not)."""
    out = _check("tumbling", string_type=string_type)
    for name in ("mo", "lo", "hi", "fi", "la", "hw"):
        assert out.schema.field(name).type == pa.string()


def test_released_strings_keep_the_values_windows_hold(monkeypatch):
    """Windows that stay open across many batches while the interner releases the strings no
    window holds: the values the open windows' aggregates hold must survive every release (a
    release that looked at the keys only would drop them, and the results would decode other
    strings)."""
    monkeypatch.setattr(interning, "RELEASE_MIN_BYTES", 0)
    n = 4000
    table = pa.table({"ts": [i // 40 for i in range(n)], "k": [i % 2 for i in range(n)],
                      "s": [f"user-{(i * 7919) % 997}-{i % 13}" for i in range(n)]})
    windows = {"tumbling": lambda k: k.window(TumblingEventTimeWindows.of(ms(30))),
               "sliding": lambda k: k.window(SlidingEventTimeWindows.of(ms(30), ms(10))),
               "session": lambda k: k.window(EventTimeSessionWindows.with_gap(ms(1))),
               "count": lambda k: k.count_window(300), "count_sliding": lambda k: k.count_window(300, 100)}
    for name, window in windows.items():
        for grouping in ("hash", "sort") if name in ("tumbling", "sliding") else ("hash",):
            def build(env):
                return window(env.from_arrow(table.to_batches(max_chunksize=97), timestamp="ts").key_by("k")).aggregate(
                    d=agg.count_distinct("s"), lo=agg.min("s"), hi=agg.max("s"), mo=agg.mode("s"),
                    fi=agg.first("s"), la=agg.last("s"))
            expected, _ = reference.run(build(gz.StreamEnvironment()).node)
            env = gz.StreamEnvironment(grouping=grouping)
            build(env).collect("out")
            assert_tables_equal(env.execute()["out"], expected)


@pytest.mark.parametrize("window", ["tumbling", "sliding", "string_key"])
def test_spark_partial_states_ship_strings(window):
    """Each task interns its own strings: partial states ship the strings, not the ids."""
    node = _build(window, 3)(gz.StreamEnvironment()).node
    expected, _ = reference.run(node)
    for tasks in (1, 3):
        actual, _reports = run_in_process(node, tasks)
        assert_tables_equal(actual, expected.cast(spark_arrow_schema(expected.schema)))


# --- computed strings: keys and arguments the pipeline computes --------------------------------
def _computed(window: str, chunk: int = 5):
    """A key made by a string function (``with_columns`` then ``key_by``) and aggregates of
    computed strings: the engine interns what a pipeline reads, so both are materialized by a
    projection first (physical/pipelines.py)."""
    def build(env):
        s = _source(env, chunk).with_columns(low=col("s").str.to_lowercase(),
                                             head=col("s").str.slice(0, 1))
        keyed = s.key_by("head") if window != "global" else s
        windowed = {
            "tumbling": lambda: keyed.window(TumblingEventTimeWindows.of(ms(4))),
            "sliding": lambda: keyed.window(SlidingEventTimeWindows.of(ms(6), ms(2))),
            "session": lambda: keyed.window(EventTimeSessionWindows.with_gap(ms(1))),
            "count": lambda: keyed.count_window(4, 2),
            "global": lambda: keyed.window_all(TumblingEventTimeWindows.of(ms(5))),
        }[window]()
        return windowed.aggregate(d=agg.count_distinct(gz.concat_str("low", lit("!"))), lo=agg.min("low"),
                                  mo=agg.mode(col("s").str.to_uppercase()), la=agg.last(col("head")),
                                  hi=agg.max(lit("x"), where=col("v") > 30),
                                  n=agg.count(col("s").str.slice(1)))
    return build


@pytest.mark.parametrize("window", ["tumbling", "sliding", "session", "count", "global"])
@pytest.mark.parametrize("options", [dict(), dict(parallelism=2), dict(grouping="sort")], ids=str)
def test_computed_string_keys_and_arguments(window, options):
    build = _computed(window)
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    env = gz.StreamEnvironment(**options)
    build(env).collect("out")
    actual = env.execute()["out"]
    assert_tables_equal(actual, expected)
    assert actual.num_rows > 0 and set(actual.column("lo").to_pylist()) - {None}


def test_computed_strings_are_materialized_once_before_the_window():
    plan = gz.StreamEnvironment()
    node = _computed("tumbling")(plan).node
    from grizzly_py.physical.pipelines import ProjectTerminal, UnionInput, build_physical_plan
    from grizzly_py.plan import Query, SinkSpec
    pipelines = build_physical_plan(Query(node, SinkSpec("collect", "out"))).pipelines
    assert len(pipelines) == 2
    first, window = pipelines
    assert isinstance(first.terminal, ProjectTerminal)
    assert isinstance(window.input, UnionInput) and window.input.pipeline_ids == (first.id,)
    # one hidden column per interned argument the pipeline computes: d, lo, mo, la (``low`` and
    # ``head`` are computed columns) and hi (a literal); count() of a computed string reads only
    # its validity and stays in the window pipeline
    hidden = [f.name for f, _ in first.terminal.outputs if f.name.startswith("__gz_arg")]
    assert len(hidden) == 5

