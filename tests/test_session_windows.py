"""Compiled keyed session windows (``EventTimeSessionWindows``) against the reference evaluator.

A hypothesis property draws data, batching, watermark bound, stateless steps, keys, a gap and
aggregates, and requires the compiled result (and late-record count) to equal the reference's.
Hand-written cases pin the parts of session merging that random data reaches rarely: sessions
that merge across batches, a record that bridges several sessions, late records at the boundary,
keys that come and go (the table of keys is rebuilt without them), and int64 overflow.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import (QueryCase, Step, aggregate_calls, arrow_stream, assert_tables_equal, can_be_key,
                        stateless_cases)
from test_differential import check_against_reference, run_compiled

import grizzly_py as gz
from grizzly_py import Time, agg, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.windows import EventTimeSessionWindows

i64 = pa.int64()


def session(gap: int) -> EventTimeSessionWindows:
    return EventTimeSessionWindows.with_gap(Time.milliseconds(gap))


@st.composite
def session_cases(draw, max_rows: int = 25, max_repeat: int = 1) -> QueryCase:
    case, stream = draw(stateless_cases(max_rows, max_repeat))
    keys = [f.name for f in stream.schema if can_be_key(f)]
    keys = draw(st.lists(st.sampled_from(keys), unique=True, max_size=2)) if keys else []
    assigner = session(draw(st.integers(1, 20)))
    calls = draw(st.lists(aggregate_calls(stream.schema), min_size=1, max_size=4))
    head = [Step("key_by", tuple(keys)), Step("window", (assigner,))] if keys else [Step("window_all", (assigner,))]
    case.steps += head + [Step("aggregate", kwargs={f"agg{i}": c for i, c in enumerate(calls)})]
    return case


@given(session_cases())
@pytest.mark.slow
def test_session_windows_match_reference(case):
    check_against_reference(case.build)


@given(session_cases(max_rows=12, max_repeat=300))
@pytest.mark.slow
def test_session_windows_over_bigger_inputs_match_reference(case):
    check_against_reference(case.build)


def rows(build) -> list[tuple]:
    table, _ = run_compiled(build)
    return [tuple(r.values()) for r in table.to_pylist()]


def test_sessions_merge_across_batches_and_a_record_bridges_several():
    # key 1: [1,6) and [12,17) in the first batches; 7 bridges [7,12) into [12,17); 4 joins all
    data = {"ts": [1, 12, 7, 4, 1, 7, 20, 25], "k": pa.array([1, 1, 1, 1, 2, 2, 3, 3], i64),
            "v": pa.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])}

    def build(env):
        return arrow_stream(env, data, sizes=[1, 1, 2, 1, 3], bound=30).key_by("k").window(session(5)) \
            .aggregate(n=agg.count(), s=agg.sum("v"), med=agg.median("v"), sd=agg.stddev_pop("v"))

    assert [r[:5] for r in rows(build)] == [(2, 1, 6, 1, 5.0), (2, 7, 12, 1, 6.0), (1, 1, 17, 4, 10.0),
                                            (3, 20, 30, 2, 15.0)]
    check_against_reference(build)


def test_session_lateness_merges_with_open_sessions_first():
    # [1,6) fires at wm 19; 3 touches no open session and [3,8) has fired: late; 16 joins
    # [20,25); 14 -> [14,19) has fired on its own, but touches [16,25): it joins, not late
    def build(env):
        return arrow_stream(env, {"ts": [1, 20, 3, 16, 14]}, sizes=[1] * 5).window_all(session(5)) \
            .aggregate(n=agg.count())

    table, metrics = run_compiled(build)
    assert [tuple(r.values()) for r in table.to_pylist()] == [(1, 6, 1), (14, 25, 3)]
    assert metrics["late_records"] == 1
    check_against_reference(build)


def test_a_session_fires_when_the_watermark_reaches_its_last_millisecond():
    # session [0, 10) (ts 0 and 5, gap 5) fires at watermark 9: ts 14 gives wm 13 (bound 0);
    # ts 9 then opens [9, 14), which has not fired: a new session, not late
    def build(env):
        return arrow_stream(env, {"ts": [0, 5, 14, 9]}, sizes=[2, 1, 1]).window_all(session(5)) \
            .aggregate(n=agg.count())

    assert rows(build) == [(0, 10, 2), (9, 19, 2)]
    check_against_reference(build)


def test_keys_that_come_and_go_are_dropped_from_the_state():
    # 3000 keys, each with one session that fires before the next key's records arrive: the
    # table of keys is rebuilt without the emptied keys, and results stay exact
    n = 3000
    ts = [10 * i for i in range(n)]

    def build(env):
        return arrow_stream(env, {"ts": ts, "k": pa.array(list(range(n)), i64)}, sizes=[100] * (n // 100)) \
            .key_by("k").window(session(5)).aggregate(c=agg.count())

    from grizzly_py.engine.local import QueryRun
    env = gz.StreamEnvironment(parallelism=1)
    build(env).collect("out")
    run = QueryRun(env._sinks[-1])
    try:  # the state after the input: far fewer than n keys in the table
        for batch in run.source.batches():
            run.feed(batch)
        live_keys = run.runs[0].kernel.windows()[0, 3]
        assert live_keys < 1024, f"the table of keys kept {live_keys} keys"
        run.finish()
    finally:
        run.close()
    check_against_reference(build)


def test_int_sum_overflow_in_a_session_is_reported():
    def build(env):
        return arrow_stream(env, {"ts": [1, 2], "v": pa.array([2**62, 2**62], i64)}).window_all(session(5)) \
            .aggregate(s=agg.sum("v"))

    with pytest.raises(AggregateOverflowError):
        run_compiled(build)
    with pytest.raises(AggregateOverflowError):
        reference.run(build(gz.StreamEnvironment(parallelism=1)).node)


def test_session_timestamps_near_the_int64_limit_are_rejected():
    def build(env):
        return arrow_stream(env, {"ts": pa.array([2**63 - 3], i64)}).window_all(session(5)).aggregate(n=agg.count())

    with pytest.raises(gz.BadInputError, match="too close to the int64 limits"):
        run_compiled(build)


def test_session_windows_with_string_and_null_keys():
    data = {"ts": [1, 3, 2, 30, 31], "k": pa.array(["a", None, "a", None, "b"]),
            "v": pa.array([1, 2, None, 4, 5], i64)}

    def build(env):
        return arrow_stream(env, data, sizes=[2, 3], bound=5).key_by("k").window(session(4)) \
            .aggregate(n=agg.count(), s=agg.sum("v"), d=agg.count_distinct("v"))

    assert rows(build) == [("a", 1, 6, 2, 1, 1), (None, 3, 7, 1, 2, 1), (None, 30, 34, 1, 4, 1),
                           ("b", 31, 35, 1, 5, 1)]
    check_against_reference(build)
    assert_tables_equal(run_compiled(build)[0], reference.run(build(gz.StreamEnvironment(parallelism=1)).node)[0])
