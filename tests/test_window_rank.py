"""Window Top-N (``window(w).top_n(n, by=..., descending=...)``) and window deduplication
(``window(w).deduplicate(keep=...)``).

- Definitions: bad arguments and clashing columns fail at definition time, naming what is wrong.
- Order, by hand: ties by arrival, nulls the smallest, NaN the largest, several ``by`` columns
  with mixed directions, ``keep="last"`` ties to the later arrival, against the reference too.
- Differential: random queries (stateless steps, keyed or global, tumbling/sliding/cumulative
  windows with offsets, sessions, allowed lateness) at parallelism 1-4, random batch sizes, hash
  or sort grouping, shared state asked for, adaptive variants: compiled == reference, results
  and late counts; every batch is cut into a morsel per worker.
- Checkpoints: jobs crashed and resumed at other parallelisms equal the reference.
- The state-memory limit counts the rows a ranked window keeps.
"""

from __future__ import annotations

import warnings

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import (Step, aligned_windows, arrow_stream, assert_tables_equal, can_be_key, ranked_step,
                        stateless_cases)

import grizzly_py as gz
from grizzly_py import Time, agg, reference
from grizzly_py.engine.state_memory import StateMemoryLimitError
from grizzly_py.workloads import nexmark
from grizzly_py.windows import (CumulativeEventTimeWindows, EventTimeSessionWindows, SlidingEventTimeWindows,
                                TumblingEventTimeWindows)

ms = Time.milliseconds


def _run(stream, parallelism: int = 1, **options) -> tuple[pa.Table, dict]:
    """The compiled result of ``stream`` (built on a throwaway environment) at ``parallelism``."""
    env = gz.StreamEnvironment(parallelism=parallelism, **options)
    rebuilt = stream(env)
    rebuilt.collect("out")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = env.execute()
    return result["out"], result.metrics


def _both(build, parallelism: int = 1, **options) -> tuple[pa.Table, pa.Table]:
    """(compiled, reference) results of ``build(env)``, checked to be equal."""
    expected = reference.evaluate(build(gz.StreamEnvironment()).node)
    actual, _ = _run(build, parallelism, **options)
    assert_tables_equal(actual, expected)
    return actual, expected


# ----------------------------------------------------------------------------------------------
# definitions
# ----------------------------------------------------------------------------------------------
def _events(env, **columns):
    data = {"ts": [1, 2, 3], "k": [1, 1, 2], "p": [3.0, 1.0, 2.0], **columns}
    return env.from_arrow(pa.table(data), timestamp="ts")


def test_bad_arguments_fail_at_definition():
    w = _events(gz.StreamEnvironment()).key_by("k").window(TumblingEventTimeWindows.of(ms(10)))
    with pytest.raises(ValueError, match="n must be a positive int"):
        w.top_n(0, by="p")
    with pytest.raises(ValueError, match="n must be a positive int"):
        w.top_n(True, by="p")
    with pytest.raises(TypeError, match="by= takes a column name or a list"):
        w.top_n(1, by=[])
    with pytest.raises(gz.SchemaError, match="unknown column 'nope'"):
        w.top_n(1, by="nope")
    with pytest.raises(ValueError, match="descending= has 1 entries for 2 by= columns"):
        w.top_n(1, by=["p", "ts"], descending=[True])
    with pytest.raises(TypeError, match="descending= takes a bool or a list of bools"):
        w.top_n(1, by="p", descending="yes")
    with pytest.raises(ValueError, match="keep= is 'first' or 'last'"):
        w.deduplicate(keep="any")
    clash = _events(gz.StreamEnvironment(), rank=[1, 2, 3]).key_by("k").window(TumblingEventTimeWindows.of(ms(10)))
    with pytest.raises(gz.SchemaError, match="input column 'rank' clashes"):
        clash.top_n(1, by="p")
    clash.deduplicate()  # no rank column: no clash
    keyed = _events(gz.StreamEnvironment()).key_by("k")
    with pytest.raises(gz.SchemaError, match="count windows are not supported"):
        keyed.count_window(2).top_n(1, by="p")
    with pytest.raises(ValueError, match="side_output_late_data is supported on aggregate"):
        keyed.window(TumblingEventTimeWindows.of(ms(10))).side_output_late_data("late").top_n(1, by="p")
    lists = _events(gz.StreamEnvironment()).key_by("k").window(TumblingEventTimeWindows.of(ms(10))).aggregate(
        t=agg.top_k("p", 2))
    with pytest.raises(gz.SchemaError, match="column 't' is a list"):
        lists.window_all(TumblingEventTimeWindows.of(ms(100))).top_n(1, by="window_end")


def test_output_columns_and_explain():
    s = _events(gz.StreamEnvironment())
    top = s.key_by("k").window(TumblingEventTimeWindows.of(ms(10))).top_n(2, by=["p", "ts"], descending=[True, False])
    assert top.schema.names == ["window_start", "window_end", "ts", "k", "p", "rank"]
    assert "top_n(2, by=[p desc, ts asc])" in top.explain()
    dedup = s.window_all(TumblingEventTimeWindows.of(ms(10))).deduplicate(keep="last")
    assert dedup.schema.names == ["window_start", "window_end", "ts", "k", "p"]


# ----------------------------------------------------------------------------------------------
# the order, by hand
# ----------------------------------------------------------------------------------------------
NAN = float("nan")


@pytest.mark.parametrize("grouping", ["hash", "sort"])  # sort grouping keeps the float values' bits
def test_ties_go_to_the_earlier_arrival_nulls_rank_smallest_nan_largest(grouping):
    data = {"ts": [0, 1, 2, 3, 4, 5, 6], "k": [1] * 7, "p": [2.0, None, NAN, 2.0, -0.0, 0.0, 5.0],
            "id": [0, 1, 2, 3, 4, 5, 6]}

    def build(descending):
        return lambda env: arrow_stream(env, data, sizes=[3, 4]).key_by("k").window(
            TumblingEventTimeWindows.of(ms(100))).top_n(7, by="p", descending=descending)
    down, _ = _both(build(True), grouping=grouping)
    assert down.column("id").to_pylist() == [2, 6, 0, 3, 4, 5, 1]  # NaN first, ties by arrival, null last
    assert down.column("rank").to_pylist() == list(range(1, 8))
    up, _ = _both(build(False), grouping=grouping)
    assert up.column("id").to_pylist() == [1, 4, 5, 0, 3, 6, 2]  # null first, -0.0 ties 0.0


def test_several_by_columns_with_mixed_directions():
    data = {"ts": list(range(8)), "k": ["a", "b"] * 4, "x": [1, 1, 2, 2, 1, 1, 2, None],
            "y": ["p", "q", "p", "q", "r", "a", None, "z"]}
    build = lambda env: arrow_stream(env, data, sizes=[1, 3, 4]).key_by("k").window(  # noqa: E731
        TumblingEventTimeWindows.of(ms(100))).top_n(3, by=["x", "y"], descending=[True, False])
    out, _ = _both(build)
    assert [(r["k"], r["x"], r["y"], r["rank"]) for r in out.to_pylist()] == [
        ("a", 2, None, 1), ("a", 2, "p", 2), ("a", 1, "p", 3), ("b", 2, "q", 1), ("b", 1, "a", 2), ("b", 1, "q", 3)]


def test_deduplicate_keeps_the_first_arrival_or_the_latest_event_time():
    # event times out of order: the first to arrive is not the earliest; two rows share the latest
    data = {"ts": [5, 3, 9, 9, 1, 12], "k": [1, 1, 1, 1, 1, 1], "id": [0, 1, 2, 3, 4, 5]}
    for keep, ids in (("first", [0, 5]), ("last", [3, 5])):
        build = lambda env, keep=keep: arrow_stream(env, data, sizes=[2, 4], bound=10).key_by("k").window(  # noqa: E731
            TumblingEventTimeWindows.of(ms(10))).deduplicate(keep=keep)
        out, _ = _both(build)
        assert out.column("id").to_pylist() == ids


def test_strings_timestamps_and_nulls_pass_through():
    ts = pa.array([1_000, 1_500, 2_000, 2_001], pa.timestamp("ms", "UTC"))
    data = {"ts": ts, "k": pa.array(["x", "x", None, None]).dictionary_encode(), "s": ["é", None, "b", "a"],
            "b": [True, None, False, True], "i": pa.array([1, 2, None, 4], pa.int32()),
            "at": pa.array([7, None, 9_000_000_123, 1], pa.timestamp("us"))}
    build = lambda env: arrow_stream(env, data, sizes=[2, 2]).key_by("k").window(  # noqa: E731
        SlidingEventTimeWindows.of(Time.seconds(2), Time.seconds(1))).top_n(2, by="i", descending=False)
    out, _ = _both(build)
    assert out.schema.field("at").type == pa.timestamp("us") and out.schema.field("window_end").type == ts.type
    at = pa.array([9_000_000_000], pa.timestamp("us"))[0].as_py()  # 9_000_000_123 us at ms precision
    assert at in out.column("at").to_pylist() and "é" in out.column("s").to_pylist()


def test_null_flags_of_more_columns_than_a_word_holds():
    """62 columns' null flags share a word: columns 62.. go to a second one."""
    data = {"ts": [1, 2, 3, 4], "k": [0, 0, 0, 0]}
    data.update({f"c{i}": [None if (i + r) % 3 == 0 else i * 10 + r for r in range(4)] for i in range(66)})
    build = lambda env: arrow_stream(env, data, sizes=[1, 3]).key_by("k").window(  # noqa: E731
        TumblingEventTimeWindows.of(ms(10))).top_n(3, by="c64", descending=False)
    out, _ = _both(build, parallelism=2)
    assert out.column("c64").to_pylist() == [None, 640, 641] and out.column("c63").to_pylist() == [632, None, 631]


def test_window_all_top_n_over_sessions_and_cumulative_windows():
    data = {"ts": [0, 3, 4, 20, 22, 40], "k": [1, 2, 1, 2, 1, 2], "v": [5, 1, 7, 2, 2, 9]}
    for assigner in (EventTimeSessionWindows.with_gap(ms(5)), CumulativeEventTimeWindows.of(ms(30), ms(10))):
        keyed = lambda env, a=assigner: arrow_stream(env, data, sizes=[2, 1, 3]).key_by("k").window(a).top_n(  # noqa: E731
            1, by="v")
        _both(keyed, parallelism=2)
    everything = lambda env: arrow_stream(env, data, sizes=[6]).window_all(  # noqa: E731
        CumulativeEventTimeWindows.of(ms(30), ms(10))).top_n(2, by="v")
    out, _ = _both(everything, parallelism=3)
    assert [(r["window_end"], r["v"]) for r in out.to_pylist()][:4] == [(10, 7), (10, 5), (20, 7), (20, 5)]


def test_allowed_lateness_fires_the_window_again_with_the_late_row():
    data = {"ts": [1, 2, 15, 3, 30], "k": [1, 1, 1, 1, 1], "v": [4, 6, 0, 9, 0]}
    build = lambda env: arrow_stream(env, data, sizes=[1, 1, 1, 1, 1]).key_by("k").window(  # noqa: E731
        TumblingEventTimeWindows.of(ms(10))).allowed_lateness(ms(10)).top_n(2, by="v")
    out, _ = _both(build)
    rows = [(r["window_end"], r["v"], r["rank"]) for r in out.to_pylist()]
    assert rows[:4] == [(10, 6, 1), (10, 4, 2), (10, 9, 1), (10, 6, 2)]


# ----------------------------------------------------------------------------------------------
# differential: compiled = reference, any parallelism, grouping and state
# ----------------------------------------------------------------------------------------------
@st.composite
def rank_cases(draw):
    """A random query (up to two stateless steps) ending in a keyed or global window Top-N or
    deduplication over an aligned window (sometimes with allowed lateness) or sessions."""
    case, stream = draw(stateless_cases(max_rows=25, max_repeat=4, max_steps=2))
    keys = draw(st.lists(st.sampled_from([f.name for f in stream.schema if can_be_key(f)] or [None]),
                         unique=True, max_size=2).map(lambda ks: [k for k in ks if k is not None]))
    if draw(st.integers(0, 3)) == 0:
        assigner = EventTimeSessionWindows.with_gap(ms(draw(st.integers(1, 20))))
    else:
        assigner = draw(aligned_windows())
    head = [Step("key_by", tuple(keys)), Step("window", (assigner,))] if keys else [Step("window_all", (assigner,))]
    if not isinstance(assigner, EventTimeSessionWindows) and draw(st.integers(0, 3)) == 0:
        head.append(Step("allowed_lateness", (ms(draw(st.integers(0, 20))),)))
    head.append(draw(ranked_step(stream.schema)))
    case.steps.extend(head)
    return case


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])  # examples: the profile (tests/conftest.py)
@given(case=rank_cases(), parallelism=st.integers(1, 4),
       options=st.sampled_from([{}, {"grouping": "sort"}, {"window_state": "shared"}, {"adaptive": True}]))
def test_ranked_windows_match_reference(every_row_a_morsel, case, parallelism, options):
    expected, expected_metrics = reference.run(case.build(gz.StreamEnvironment()).node)
    actual, metrics = _run(case.build, parallelism, **options)
    assert_tables_equal(actual, expected)
    assert metrics["late_records"] == expected_metrics["late_records"]
    assert metrics["accounting"]["ok"]


def test_a_ranked_window_feeds_a_window_downstream():
    data = {"ts": list(range(0, 60, 3)), "k": [i % 3 for i in range(20)], "v": [(i * 7) % 11 for i in range(20)]}

    def build(env):
        top = arrow_stream(env, data, sizes=[4] * 5).key_by("k").window(TumblingEventTimeWindows.of(ms(10))).top_n(
            2, by="v")
        return top.key_by("rank").window(TumblingEventTimeWindows.of(ms(30))).aggregate(n=agg.count(), s=agg.sum("v"))
    for parallelism in (1, 3):
        _both(build, parallelism)


@pytest.mark.parametrize("name", ["q18_window", "q19_window"])
@pytest.mark.parametrize("parallelism", [1, 3])
@pytest.mark.parametrize("n_events, batch_rows", [(3_000, 97), (30_000, 4_096)])
def test_nexmark_ranked_queries_match_the_reference(name, parallelism, n_events, batch_rows):
    bids = nexmark.generate_bids(n_events, seed=7, batch_rows=batch_rows, events_per_second=1_000)
    query = getattr(nexmark, name)
    expected = reference.evaluate(query(gz.StreamEnvironment(), bids).node)
    actual, _ = _run(lambda env: query(env, bids), parallelism)
    assert_tables_equal(actual, expected)
    assert 0 < expected.num_rows < bids.num_rows  # rows were dropped: the ranking is not the identity


# ----------------------------------------------------------------------------------------------
# checkpoints and the state-memory limit
# ----------------------------------------------------------------------------------------------
def _top_n_sliding(env, data):
    from test_checkpoint import _bounded
    return (_bounded(env, data).key_by("name").window(SlidingEventTimeWindows.of(Time.seconds(3), ms(700)))
            .top_n(3, by=["n", "v"], descending=[True, False]))


def _dedup_tumbling(env, data):
    from test_checkpoint import _bounded
    return _bounded(env, data).key_by("k").window(TumblingEventTimeWindows.of(Time.seconds(2), ms(-300))).deduplicate(
        keep="last")


@pytest.mark.parametrize("options", [{}, {"grouping": "sort"}], ids=["hash", "sort"])
@pytest.mark.parametrize("build", [_top_n_sliding, _dedup_tumbling], ids=["top_n", "deduplicate"])
def test_ranked_windows_resume_from_checkpoints_at_other_parallelisms(build, options, tmp_path, every_row_a_morsel):
    from test_checkpoint import _data, run_with_crashes
    batches = _data(rows=2000).to_batches(max_chunksize=100)
    expected, expected_metrics = reference.run(build(gz.StreamEnvironment(), batches).node)
    result = run_with_crashes(build, batches, [3, 11], tmp_path / "chk", parallelisms=[2, 1, 3], **options)
    assert_tables_equal(result["out"], expected)
    assert result.metrics["late_records"] == expected_metrics["late_records"]
    assert result.metrics["checkpoints"]["restored_from"] == 11


def test_the_state_memory_limit_counts_the_rows_a_ranked_window_keeps():
    """One window holds 200,000 rows of 4 columns (~ 7 words each with arrival and null flags:
    ~11 MB in vectors); a 4 MB limit stops the job, naming the pipeline; without it, it runs."""
    rows = 200_000
    table = pa.table({"ts": pa.array(range(rows), pa.int64()), "k": [i % 4 for i in range(rows)],
                      "v": [float(i % 1000) for i in range(rows)], "x": list(range(rows))})

    def build(env):
        return env.from_arrow(table.to_batches(max_chunksize=20_000), timestamp="ts").key_by("k").window(
            TumblingEventTimeWindows.of(ms(10 * rows))).top_n(2, by="v")
    env = gz.StreamEnvironment(state_memory_limit="4m")
    build(env).collect("out")
    with pytest.raises(StateMemoryLimitError, match=r"the limit is \d+ bytes; pipeline \d+ \(.*\) of sink 'out'"):
        env.execute()
    out, _ = _run(build)
    # each key's largest value comes 200 times: the two earliest arrivals rank
    assert [(r["k"], r["v"], r["x"], r["rank"]) for r in out.to_pylist()] == [
        (k, 996.0 + k, x, rank) for k in range(4) for rank, x in ((1, 996 + k), (2, 1996 + k))]
