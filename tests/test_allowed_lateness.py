"""Allowed lateness and the late side output (Flink's ``allowedLateness``, ``sideOutputLateData``).

- The reference evaluator on hand-worked examples (the rows Flink's WindowOperator gives, with
  the firings explained inline): one firing per late record, also for several late records of
  one batch, one key or interleaved keys; the compiled engine gives the same rows.
- Differential: random queries with a tumbling, sliding or cumulative window (offsets too), a
  random allowed lateness and a late side output, at parallelism 1-3 with hash or sort grouping,
  thread-local or shared state: the results, the late stream and the late counts equal the
  reference evaluator's; unions and a window after a window by hand.
- Checkpoints: a crashed and resumed job equals the reference.
- Bad definitions fail at once: lateness on session, count or processing-time windows, a
  negative one, ``late_data`` of a stream without that side output.
"""

from __future__ import annotations

import warnings

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import Step, aggregate_calls, aligned_windows, arrow_stream, assert_tables_equal, can_be_key, \
    stateless_cases, tumbling

import grizzly_py as gz
from grizzly_py import Time, agg, col, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.windows import (CumulativeEventTimeWindows, EventTimeSessionWindows, SlidingEventTimeWindows,
                                TumblingProcessingTimeWindows)

ms = Time.milliseconds


def _with_late(build):
    """``build(env)`` gives the main stream; this gives (main, its late records)."""
    def both(env):
        main = build(env)
        return main, main.late_data("late")
    return both


def run_compiled(both, parallelism=1, **options):
    env = gz.StreamEnvironment(parallelism=parallelism, **options)
    main, late = both(env)
    main.collect("out")
    late.collect("late")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = env.execute()
    return result


def check(both, parallelism=1, **options):
    env = gz.StreamEnvironment()
    main, late = both(env)
    try:
        expected, metrics = reference.run(main.node)
    except AggregateOverflowError:
        with pytest.raises(AggregateOverflowError):
            run_compiled(both, parallelism, **options)
        return
    expected_late, late_metrics = reference.run(late.node)
    # the side output holds its window's late records (windows before it may drop others)
    assert late_metrics["records_out"] <= metrics["late_records"]
    result = run_compiled(both, parallelism, **options)
    assert_tables_equal(result["out"], expected)
    assert_tables_equal(result["late"], expected_late)
    out_q, late_q = result.metrics["queries"]
    assert out_q["late_records"] == metrics["late_records"]
    assert late_q["filtered_records"] == late_metrics["filtered_records"]
    assert result.metrics["accounting"]["ok"]
    return result


# ----------------------------------------------------------------------------------------------
# the reference, by hand
# ----------------------------------------------------------------------------------------------
def test_reference_fires_kept_windows_again_per_key_and_sends_the_rest_to_the_side_output():
    # tumbling 10 ms, lateness 5 ms, no out-of-orderness: the watermark after a batch is its
    # largest event time - 1. Batches: [1(a), 2(b)] -> wm 1; [12(a)] -> wm 11: [0, 10) fires
    # (a: 1, b: 1); [3(a)] under wm 11: [0, 10) is kept until wm 14 (9 + 5 > 11), so it fires
    # again for a only (a: 2 records); [13(b)] -> wm 12; [4(b)] under wm 12: kept, fires again for
    # b (2 records); [20(a)] -> wm 19: [10, 20) fires (a, b), [0, 10) is cleaned; [5(a)] under
    # wm 19: 9 + 5 <= 19, late: the side output; end: [20, 30) fires.
    def build(env):
        s = arrow_stream(env, {"ts": [1, 2, 12, 3, 13, 4, 20, 5], "k": ["a", "b", "a", "a", "b", "b", "a", "a"]},
                         sizes=[2, 1, 1, 1, 1, 1, 1])
        return (s.key_by("k").window(tumbling(10)).allowed_lateness(ms(5)).side_output_late_data("late")
                .aggregate(n=agg.count(), s=agg.sum("ts")))
    env = gz.StreamEnvironment()
    main, late = _with_late(build)(env)
    table, metrics = reference.run(main.node)
    rows = [(r["k"], r["window_start"], r["n"], r["s"]) for r in table.to_pylist()]
    assert rows == [("a", 0, 1, 1), ("b", 0, 1, 2), ("a", 0, 2, 4), ("b", 0, 2, 6),
                    ("a", 10, 1, 12), ("b", 10, 1, 13), ("a", 20, 1, 20)]
    assert metrics["late_records"] == 1
    assert reference.evaluate(late.node).to_pylist() == [{"ts": 5, "k": "a"}]
    check(_with_late(build))


def _several_late_in_one_batch(env):
    # tumbling 10 ms, lateness 10 ms: [0, 10) fires at wm 14 (a: 1 record); the third batch, all
    # under wm 14, has four records for it, one of them filtered out, and one for [10, 20)
    s = arrow_stream(env, {"ts": [1, 15, 3, 12, 3, 6, 3], "k": ["a"] * 7, "v": [1, 2, 3, 4, 5, -1, 6]},
                     sizes=[1, 1, 5])
    return (s.filter(col("v") >= 0).key_by("k").window(tumbling(10)).allowed_lateness(ms(10))
            .side_output_late_data("late").aggregate(n=agg.count(), last=agg.last("v")))


def _interleaved_keys_in_one_batch(env):
    # sliding 10 ms / 5 ms, lateness 10 ms: at wm 21 the windows ending 15 and 20 are fired and
    # kept, those ending 5 and 10 cleaned. The third batch: 7(b) reaches [5, 15) (b's first
    # record there: it fires anyway, as in Flink), 8(a) [5, 15), 13(b) [5, 15) and [10, 20)
    # (two rows, by end), 2(a) only cleaned windows (late)
    s = arrow_stream(env, {"ts": [1, 2, 22, 7, 8, 13, 2], "k": ["a", "b", "a", "b", "a", "b", "a"]},
                     sizes=[2, 1, 4])
    return (s.key_by("k").window(SlidingEventTimeWindows.of(ms(10), ms(5))).allowed_lateness(ms(10))
            .side_output_late_data("late").aggregate(n=agg.count()))


def _late_rows_into_a_late_window(env):
    # both windows tumbling 10 ms, lateness 20 ms. At wm 24 the first fires [0, 10) (a: 1) and
    # the second [0, 10) (1 row). The third batch, under wm 24: 3(a) and 4(b) each fire the
    # first window again, and each such row reaches the second's fired, kept window: it fires
    # again for each, one batch of the first's results after the other
    s = arrow_stream(env, {"ts": [1, 25, 3, 4], "k": ["a", "a", "a", "b"]}, sizes=[1, 1, 2])
    first = s.key_by("k").window(tumbling(10)).allowed_lateness(ms(20)).aggregate(n=agg.count())
    return (first.window_all(tumbling(10)).allowed_lateness(ms(20)).side_output_late_data("late")
            .aggregate(s=agg.sum("n"), c=agg.count()))


def test_reference_fires_once_per_late_record_in_record_order():
    """Flink's WindowOperator fires a kept window for each late record at once, with every
    record of its key so far: several late records of one batch give one row each, in order
    (``last`` shows the arrival order across them; a filtered record fires nothing)."""
    table, _ = reference.run(_several_late_in_one_batch(gz.StreamEnvironment()).node)
    assert [(r["window_start"], r["n"], r["last"]) for r in table.to_pylist()] == \
        [(0, 1, 1), (0, 2, 3), (0, 3, 5), (0, 4, 6), (10, 2, 2)]
    table, metrics = reference.run(_interleaved_keys_in_one_batch(gz.StreamEnvironment()).node)
    assert [(r["k"], r["window_start"], r["n"]) for r in table.to_pylist()] == \
        [("a", -5, 1), ("b", -5, 1), ("a", 0, 1), ("b", 0, 1),
         ("b", 5, 1), ("a", 5, 1), ("b", 5, 2), ("b", 10, 1), ("a", 15, 1), ("a", 20, 1)]
    assert metrics["late_records"] == 1
    table = reference.evaluate(_late_rows_into_a_late_window(gz.StreamEnvironment()).node)
    assert [(r["window_start"], r["s"], r["c"]) for r in table.to_pylist()] == \
        [(0, 1, 1), (0, 3, 2), (0, 4, 3), (20, 1, 1)]


@pytest.mark.parametrize("parallelism,options", [(1, {}), (1, {"window_state": "shared"}), (2, {}),
                                                 (2, {"grouping": "sort"}), (3, {"window_state": "shared"})])
@pytest.mark.parametrize("build,rows", [(_several_late_in_one_batch, 5), (_interleaved_keys_in_one_batch, 10),
                                        (_late_rows_into_a_late_window, 4)],
                         ids=["one_key", "interleaved_keys", "chained"])
def test_compiled_fires_once_per_late_record(every_row_a_morsel, build, rows, parallelism, options):
    """The compiled engine cuts the batch after each such record (``engine/late_refires.py``),
    also the last of a batch that more batches follow under the same watermark (chained)."""
    assert check(_with_late(build), parallelism, **options)["out"].num_rows == rows


def test_no_lateness_keeps_the_old_results():
    """``allowed_lateness(0)`` (Flink's default) changes nothing: the same rows as without it."""
    def build(lateness):
        def b(env):
            s = arrow_stream(env, {"ts": [5, 9, 10, 9, 0, 19, 10]}, sizes=[2, 0, 1, 2, 2])
            w = s.window_all(tumbling(10))
            return (w.allowed_lateness(ms(0)) if lateness else w).aggregate(n=agg.count())
        return b
    env = gz.StreamEnvironment()
    assert reference.evaluate(build(True)(env).node).equals(reference.evaluate(build(False)(env).node))


def test_the_late_warning_only_when_late_records_are_lost():
    """A job whose windows send their late records to a ``late_data`` stream it reads loses none:
    no ``LateRecordsWarning``; the same window without that stream in the job warns."""
    def late_window(env):
        s = arrow_stream(env, {"ts": [5, 25, 3, 1]}, sizes=[2, 2])
        return s.window_all(tumbling(10)).side_output_late_data("late").aggregate(n=agg.count())
    env = gz.StreamEnvironment()
    main = late_window(env)
    main.collect("out")
    main.late_data("late").collect("late")
    with warnings.catch_warnings():
        warnings.simplefilter("error", gz.LateRecordsWarning)
        result = env.execute()
    assert result["late"].num_rows == 2 and result.metrics["late_records"] == 2
    with pytest.warns(gz.LateRecordsWarning, match="2 late record"):
        late_window(gz.StreamEnvironment()).execute_and_collect()


# ----------------------------------------------------------------------------------------------
# differential
# ----------------------------------------------------------------------------------------------
@st.composite
def late_cases(draw):
    case, stream = draw(stateless_cases(max_rows=25, max_repeat=4, max_steps=1))
    keys = draw(st.lists(st.sampled_from([f.name for f in stream.schema if can_be_key(f)] or [None]),
                         unique=True, max_size=2).map(lambda ks: [k for k in ks if k is not None]))
    calls = draw(st.lists(aggregate_calls(stream.schema), min_size=1, max_size=3))
    window = Step("window", (draw(aligned_windows()),)) if keys else Step("window_all", (draw(aligned_windows()),))
    head = [Step("key_by", tuple(keys))] if keys else []
    case.steps.extend(head + [window, Step("allowed_lateness", (ms(draw(st.integers(0, 30))),)),
                              Step("side_output_late_data", ("late",)),
                              Step("aggregate", kwargs={f"agg{i}": c for i, c in enumerate(calls)})])
    return case


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=late_cases(), parallelism=st.integers(1, 3),
       options=st.sampled_from([{}, {"grouping": "sort"}, {"window_state": "shared"}]))
def test_lateness_and_late_data_match_reference(every_row_a_morsel, case, parallelism, options):
    check(_with_late(case.build), parallelism, **options)


def _two_sources(env):
    a = arrow_stream(env, {"ts": [1, 14, 3, 25, 7, 30], "k": [1, 2, 1, 2, 1, 1]}, sizes=[2, 1, 1, 1, 1])
    b = arrow_stream(env, {"ts": [2, 9, 16, 4, 31, 12], "k": [2, 2, 1, 1, 2, 2]}, sizes=[1, 1, 2, 1, 1], bound=2)
    return a.union(b)


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("name", ["union", "chained", "sliding_union"])
def test_unions_and_chains_with_lateness_match_reference(name, parallelism):
    def build(env):
        if name == "chained":  # late rows of the first window are late (or kept) in the second
            first = (_two_sources(env).key_by("k").window(tumbling(5)).allowed_lateness(ms(6))
                     .aggregate(n=agg.count()))
            return (first.window_all(CumulativeEventTimeWindows.of(ms(20), ms(10))).allowed_lateness(ms(10))
                    .side_output_late_data("late").aggregate(n=agg.sum("n"), w=agg.count()))
        assigner = tumbling(10) if name == "union" else SlidingEventTimeWindows.of(ms(10), ms(5), ms(-2))
        return (_two_sources(env).key_by("k").window(assigner).allowed_lateness(ms(8))
                .side_output_late_data("late").aggregate(n=agg.count(), lo=agg.min("ts")))
    check(_with_late(build), parallelism)


# ----------------------------------------------------------------------------------------------
# checkpoints
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("options", [{}, {"grouping": "sort"}, {"window_state": "shared"}],
                         ids=["hash", "sort", "shared"])
def test_lateness_resumes_after_crashes(options, tmp_path):
    from test_checkpoint import _bounded, _data, run_with_crashes

    def build(env, data):
        return (_bounded(env, data, bound=10).key_by("name").window(tumbling(500)).allowed_lateness(ms(150))
                .aggregate(c=agg.count(), s=agg.sum("v")))
    batches = _data(rows=2000, disorder=400).to_batches(max_chunksize=100)
    expected, metrics = reference.run(build(gz.StreamEnvironment(), batches).node)
    assert metrics["late_records"] > 0 and expected.num_rows > 4 * 121  # late updates fired windows again
    result = run_with_crashes(build, batches, [4, 13], tmp_path / "chk", parallelisms=[2, 1, 2], **options)
    assert_tables_equal(result["out"], expected)
    assert result.metrics["late_records"] == metrics["late_records"]


# ----------------------------------------------------------------------------------------------
# definition-time errors
# ----------------------------------------------------------------------------------------------
def test_bad_definitions_fail_at_once():
    env = gz.StreamEnvironment()
    s = env.from_arrow(pa.table({"ts": [1], "k": [1]}), timestamp="ts")
    keyed = s.key_by("k")
    for windowed in (keyed.window(EventTimeSessionWindows.with_gap(ms(5))), keyed.count_window(3),
                     keyed.window(TumblingProcessingTimeWindows.of(ms(5)))):
        with pytest.raises(ValueError, match="allowed_lateness: .* takes none"):
            windowed.allowed_lateness(ms(5))
        with pytest.raises(ValueError, match="side_output_late_data: .* takes none"):
            windowed.side_output_late_data("late")
    with pytest.raises(ValueError, match="between 0 and"):
        keyed.window(tumbling(10)).allowed_lateness(ms(-1))
    with pytest.raises(TypeError, match="bare number"):
        keyed.window(tumbling(10)).allowed_lateness(5)
    with pytest.raises(TypeError, match="non-empty tag"):
        keyed.window(tumbling(10)).side_output_late_data("")
    plain = keyed.window(tumbling(10)).allowed_lateness(ms(5)).aggregate(n=agg.count())
    with pytest.raises(ValueError, match="not the result of a window with side_output_late_data"):
        plain.late_data("late")
    with pytest.raises(ValueError, match="not the result of a window"):
        s.late_data("late")
    tagged = keyed.window(tumbling(10)).side_output_late_data("late").aggregate(n=agg.count())
    with pytest.raises(ValueError, match="sends its late records to 'late', not 'other'"):
        tagged.late_data("other")
    assert tagged.late_data("late").schema == s.schema


def test_spark_partial_dataflow_leaves_lateness_to_the_tasks_by_key():
    """The partial strategy's tasks merge windows without the watermark batch by batch, which
    kept windows and late records need: ``run_in_process`` (its dataflow) refuses them; on Spark
    they run by key on the embedded engine (docs/spark.md, test_spark_keyed.py)."""
    from grizzly_py.spark.planner import run_in_process

    env = gz.StreamEnvironment()
    q = (arrow_stream(env, {"ts": [1, 12, 3], "k": [1, 1, 1]}, sizes=[1, 1, 1]).key_by("k").window(tumbling(10))
         .allowed_lateness(ms(5)).side_output_late_data("late").aggregate(n=agg.count()))
    for node in (q.node, q.late_data("late").node):
        with pytest.raises(NotImplementedError, match="single-source chains"):
            run_in_process(node, 2)
