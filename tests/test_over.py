"""OVER aggregates (``keyed.over(rows_preceding=n | range_preceding=d).aggregate(...)``).

Random queries (hypothesis) run compiled at parallelism 1 to 4 and must equal the reference
evaluator (``reference.OverAggregate``, written independently): random keys (ints with nulls,
strings plain and dictionary-encoded, floats with NaN and -0.0), int64 or Arrow timestamp event
times out of order within and beyond the watermark bound (late rows), any batching, ROWS and
RANGE frames, count/sum/min/max/avg with nulls and ``where=``, int64 overflow; and OVER after the
shared random stateless queries (``strategies.stateless_cases``), also crashing and resuming
from checkpoints. Hand-written cases pin the frame definitions (ties in ROWS by arrival, RANGE
including later rows with the same timestamp), the output order, OVER before and after windows,
unions and another OVER, the int64 limits, float sums (cancellation, tiny values, infinities,
overflow), checkpoint restarts at other parallelisms, the state-memory limit (the state is
pruned and keeps only what frames read), Spark (slow) and the definition-time errors.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import Step, aggregate_calls, arrow_stream, assert_tables_equal, can_be_key, stateless_cases, tumbling
from test_checkpoint import check_resume, run_with_crashes

import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, agg, col, lit, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.engine.state_memory import StateMemoryLimitError
from grizzly_py.reference import INT64_MAX, INT64_MIN
from grizzly_py.types import SchemaError

i64 = pa.int64()


def compiled(build, parallelism: int = 1, **options):
    env = gz.StreamEnvironment(parallelism=parallelism, **options)
    build(env).collect("out")
    result = env.execute()
    return result["out"], result.metrics


def check(build, parallelism: int = 1) -> pa.Table:
    """The compiled result equals the reference's (rows, order, late and filtered counts)."""
    try:
        expected, expected_metrics = reference.run(build(gz.StreamEnvironment()).node)
    except AggregateOverflowError:
        with pytest.raises(AggregateOverflowError):
            compiled(build, parallelism)
        return None
    actual, metrics = compiled(build, parallelism)
    assert_tables_equal(actual, expected)
    assert metrics["late_records"] == expected_metrics["late_records"]
    assert metrics["filtered_records"] == expected_metrics["filtered_records"]
    return actual


# ----------------------------------------------------------------------------------------------
# random queries
# ----------------------------------------------------------------------------------------------
FLOATS = st.one_of(st.floats(-100, 100).map(lambda x: round(x, 2)),
                   st.sampled_from([0.0, -0.0, math.nan, math.inf, -math.inf]))
INTS = st.one_of(st.integers(-50, 50), st.sampled_from([INT64_MAX, INT64_MIN, INT64_MAX - 1]))
KEYS = {"ki": st.one_of(st.none(), st.integers(0, 3)), "ks": st.sampled_from([None, "", "a", "b", "é"]),
        "kf": st.sampled_from([None, 0.0, -0.0, 1.5, math.nan])}
KEY_TYPES = {"ki": pa.int64(), "ks": pa.string(), "kf": pa.float64()}


@st.composite
def over_cases(draw):
    n = draw(st.integers(0, 40))
    base = draw(st.integers(-5, 5))
    ts, t = [], base
    for _ in range(n):  # roughly increasing, with disorder (some of it beyond the bound: late rows)
        t += draw(st.integers(0, 3))
        ts.append(t - draw(st.sampled_from([0, 0, 0, 1, 2, 5])))
    unit = draw(st.sampled_from([None, "ms", "us"]))  # int64 ms, or an Arrow timestamp column
    data = {"ts": pa.array(ts, i64) if unit is None else
            pa.array([t * (1000 if unit == "us" else 1) for t in ts], pa.timestamp(unit))}
    key_names = draw(st.lists(st.sampled_from(sorted(KEYS)), min_size=1, max_size=2, unique=True))
    for k in key_names:
        data[k] = pa.array([draw(KEYS[k]) for _ in range(n)], KEY_TYPES[k])
        if k == "ks" and draw(st.booleans()):
            data[k] = data[k].dictionary_encode()
    overflow = draw(st.booleans())
    ints = INTS if overflow else st.integers(-50, 50)
    data["v"] = pa.array([draw(st.one_of(st.none(), ints)) for _ in range(n)], i64)
    data["f"] = pa.array([draw(st.one_of(st.none(), FLOATS)) for _ in range(n)], pa.float64())
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=6)))
    sizes = [b - a for a, b in zip([0] + cuts, cuts + [n])]
    bound = draw(st.sampled_from([0, 1, 3]))
    if draw(st.booleans()):
        frame = {"rows_preceding": draw(st.integers(0, 4))}
    else:
        frame = {"range_preceding": Time.milliseconds(draw(st.integers(0, 6)))}
    pool = {"n": agg.count(), "nv": agg.count("v"), "s": agg.sum("v"), "sf": agg.sum("f"), "lo": agg.min("v"),
            "hi": agg.max("f"), "lof": agg.min("f"), "hiv": agg.max("v"), "m": agg.avg("v"), "mf": agg.avg("f"),
            "sw": agg.sum(col("v") * 2, where=col("f") > 0), "nw": agg.count(where=col("v") < 10),
            "hb": agg.max(col("v") > 0)}
    names = draw(st.lists(st.sampled_from(sorted(pool)), min_size=1, max_size=4, unique=True))
    filtered = draw(st.booleans())
    parallelism = draw(st.integers(1, 4))

    def build(env):
        s = arrow_stream(env, data, sizes=sizes, bound=bound)
        if filtered:
            s = s.filter(col("v").is_null() | (col("v") != 3))
        return s.key_by(*key_names).over(**frame).aggregate(**{k: pool[k] for k in names})
    return build, parallelism


@given(over_cases())
@settings(deadline=None)
def test_over_queries_match_reference(case):
    build, parallelism = case
    check(build, parallelism)


OVER_FUNCTIONS = ("count", "sum", "min", "max", "avg")


def _over_call(call, schema) -> bool:
    """Whether OVER takes ``call`` (the shared strategy draws every window aggregate)."""
    if call.func not in OVER_FUNCTIONS:
        return False
    if call.func == "count" or call.arg is None:
        return True
    t = call.arg.dtype(schema)
    return (t.is_integer or t.is_float) and not t.is_timestamp


@st.composite
def over_query_cases(draw):
    """The shared random queries (``strategies.stateless_cases``: every column kind, filters,
    maps and selects over random expressions), then ``key_by``, ``over`` and ``aggregate``."""
    case, stream = draw(stateless_cases(max_steps=2))
    # float sums whose partial sums overflow may add in another order than the reference
    # (docs/semantics.md): keep finite values where 40 of them cannot overflow
    for name, values in case.columns.items():
        case.columns[name] = [math.copysign(1e200, v) if isinstance(v, float) and math.isfinite(v)
                              and abs(v) > 1e200 else v for v in values]
    keys = [f.name for f in stream.schema if can_be_key(f)]
    keys = draw(st.lists(st.sampled_from(keys), unique=True, min_size=1, max_size=2)) if keys else []
    if not keys:
        case.steps.append(Step("with_columns", kwargs={"k0": lit(0)}))
        keys = ["k0"]
    calls = [c for c in draw(st.lists(aggregate_calls(stream.schema), min_size=1, max_size=6))
             if _over_call(c, stream.schema)] or [agg.count()]
    frame = {"rows_preceding": draw(st.integers(0, 5))} if draw(st.booleans()) else \
        {"range_preceding": Time.milliseconds(draw(st.integers(0, 12)))}
    case.steps += [Step("key_by", tuple(keys)), Step("over", kwargs=frame),
                   Step("aggregate", kwargs={f"agg{i}": c for i, c in enumerate(calls)})]
    return case, draw(st.integers(1, 4))


@given(over_query_cases())
@settings(deadline=None)
def test_over_after_random_stateless_steps_matches_reference(case):
    query, parallelism = case
    check(query.build, parallelism)


# ----------------------------------------------------------------------------------------------
# the frames by hand
# ----------------------------------------------------------------------------------------------
def _stream(env, ts, k, v, sizes=None, bound=0):
    return arrow_stream(env, {"ts": pa.array(ts, i64), "k": pa.array(k, i64), "v": pa.array(v, i64)},
                        sizes=sizes, bound=bound)


def test_rows_frame_orders_by_event_time_ties_by_arrival():
    # one key; out of order within the bound: frames follow event time, equal times keep arrival
    def build(env):
        return (_stream(env, [5, 3, 3, 4, 9], [1] * 5, [50, 30, 31, 40, 90], sizes=[2, 3], bound=10)
                .key_by("k").over(rows_preceding=1).aggregate(s=agg.sum("v"), n=agg.count()))
    out = check(build).to_pylist()
    assert [(r["ts"], r["v"], r["s"], r["n"]) for r in out] == \
        [(3, 30, 30, 1), (3, 31, 61, 2), (4, 40, 71, 2), (5, 50, 90, 2), (9, 90, 140, 2)]


def test_range_frame_includes_every_row_with_the_same_timestamp():
    # the row at ts 3 that arrives first already counts the one at ts 3 arriving after it
    def build(env):
        return (_stream(env, [1, 3, 2, 3, 6], [1] * 5, [1, 10, 100, 1000, 10000], sizes=[1, 1, 1, 1, 1], bound=5)
                .key_by("k").over(range_preceding=Time.milliseconds(2)).aggregate(s=agg.sum("v")))
    out = check(build).to_pylist()
    assert [(r["ts"], r["s"]) for r in out] == [(1, 1), (2, 101), (3, 1111), (3, 1111), (6, 10000)]


def test_rows_are_emitted_by_event_time_then_key_and_late_rows_are_dropped():
    def build(env):
        return (_stream(env, [4, 2, 6, 1, 7], [2, 1, 1, 1, 2], [1, 2, 3, 4, 5], sizes=[2, 1, 1, 1], bound=0)
                .key_by("k").over(rows_preceding=5).aggregate(n=agg.count()))
    out, metrics = compiled(build)
    # the watermark after the first batch is 3, so ts 1 arrives late
    assert [(r["ts"], r["k"], r["n"]) for r in out.to_pylist()] == [(2, 1, 1), (4, 2, 1), (6, 1, 2), (7, 2, 2)]
    assert metrics["late_records"] == 1
    check(build)


def test_a_window_after_over_reads_its_rows_by_event_time():
    def build(env):
        s = _stream(env, list(range(20)), [i % 3 for i in range(20)], list(range(20)), sizes=[7, 6, 7])
        over = s.select("k", "v", t=col("ts")).key_by("k").over(rows_preceding=2).aggregate(m=agg.max("v"))
        return over.key_by("k").window(tumbling(5)).aggregate(total=agg.sum("m"))
    check(build)


@pytest.mark.parametrize("parallelism", [1, 3])
def test_same_result_for_every_batching_and_parallelism(parallelism):
    n = 600
    data = {"ts": pa.array([i // 3 - (i * 7) % 5 for i in range(n)], i64), "k": pa.array([i % 7 for i in range(n)], i64),
            "v": pa.array([(i * 31) % 17 - 8 for i in range(n)], i64)}

    def build(sizes):
        return lambda env: (arrow_stream(env, data, sizes=sizes, bound=4).key_by("k")
                            .over(range_preceding=Time.milliseconds(9))
                            .aggregate(s=agg.sum("v"), lo=agg.min("v"), m=agg.avg("v")))
    one = check(build([n]), parallelism)
    assert one.num_rows == n  # nothing late: the disorder is within the bound
    for sizes in ([1] * 20 + [n - 20], [100] * 6, [250, 0, 350]):
        assert_tables_equal(compiled(build(sizes), parallelism)[0], one)


@pytest.mark.parametrize("frame", [{"rows_preceding": 1}, {"range_preceding": Time.milliseconds(3)}])
def test_event_times_at_the_int64_limits(frame):
    def build(env):
        return (_stream(env, [INT64_MIN, INT64_MIN + 2, 0, INT64_MAX - 1, INT64_MAX], [1] * 5, [1, 2, 3, 4, 5],
                        sizes=[1, 1, 1, 1, 1]).key_by("k").over(**frame).aggregate(s=agg.sum("v"), n=agg.count()))
    out = check(build).to_pylist()
    assert [r["v"] for r in out] == [1, 2, 3, 4, 5]  # none late: the first row comes before any watermark


@pytest.mark.parametrize("rows", [0, 1])
def test_min_and_max_at_the_int64_limits(rows):
    def build(env):
        return (_stream(env, list(range(6)), [1] * 6, [INT64_MIN, INT64_MIN + 1, None, INT64_MAX, INT64_MAX - 1, None])
                .key_by("k").over(rows_preceding=rows).aggregate(lo=agg.min("v"), hi=agg.max("v")))
    out = check(build).to_pylist()
    if rows == 0:
        assert [(r["lo"], r["hi"]) for r in out] == [(v, v) for v in (INT64_MIN, INT64_MIN + 1, None, INT64_MAX,
                                                                      INT64_MAX - 1, None)]


def test_int_sum_overflow_in_a_frame_is_reported():
    def build(env):
        return (_stream(env, [1, 2, 3], [1, 1, 1], [INT64_MAX, 1, -5]).key_by("k")
                .over(rows_preceding=1).aggregate(s=agg.sum("v")))
    with pytest.raises(AggregateOverflowError, match="'s'"):
        compiled(build)
    check(build)


def test_a_wrapped_intermediate_sum_that_comes_back_is_exact():
    def build(env):  # rows 1-3 overflow on the way, frames of two rows do not
        return (_stream(env, [1, 2, 3], [1, 1, 1], [INT64_MAX, -INT64_MAX, INT64_MAX]).key_by("k")
                .over(rows_preceding=1).aggregate(s=agg.sum("v"), m=agg.avg("v")))
    assert [r["s"] for r in check(build).to_pylist()] == [INT64_MAX, 0, 0]


def _floats(env, values, sizes=None):
    n = len(values)
    return arrow_stream(env, {"ts": pa.array(range(n), i64), "k": pa.array([1] * n, i64),
                              "f": pa.array(values, pa.float64())}, sizes=sizes)


def test_float_sums_keep_small_values_next_to_cancelling_large_ones():
    def build(env):
        return _floats(env, [1e16, 1.0, -1e16, 3.0, 2.5], sizes=[2, 3]).key_by("k") \
            .over(rows_preceding=2).aggregate(s=agg.sum("f"), m=agg.avg("f"))
    assert [r["s"] for r in check(build).to_pylist()] == [1e16, 1e16 + 1.0, 1.0, -1e16 + 4.0, -1e16 + 5.5]


def test_float_sums_of_tiny_values_after_large_ones_stay_exact():
    # the prefix sums of the run cannot hold 5e-324 next to 7.0 or 1e-300 next to 1e300
    def build(env):
        n = 6
        return arrow_stream(env, {"ts": pa.array(range(n), i64), "k": pa.array([0, 0, 1, 2, 2, 2], i64),
                                  "f": pa.array([7.0, 1.62, 5e-324, 1e300, 1e-300, -1e300])}) \
            .key_by("k").over(rows_preceding=0).aggregate(s=agg.sum("f"), m=agg.avg("f"))
    assert [r["s"] for r in check(build).to_pylist()] == [7.0, 1.62, 5e-324, 1e300, 1e-300, -1e300]


def test_float_sums_with_infinities_and_overflowing_partial_sums():
    def build(env):  # 1e308 + 1e308 overflows to inf, as adding in arrival order does
        return _floats(env, [1e308, 1e308, -1e308, 5.0, math.inf, -math.inf, 1.0, math.nan, 2.0]).key_by("k") \
            .over(rows_preceding=1).aggregate(s=agg.sum("f"))
    got = [r["s"] for r in check(build).to_pylist()]
    assert got[:5] == [1e308, math.inf, 0.0, -1e308, math.inf] and got[6] == -math.inf
    assert all(math.isnan(got[i]) for i in (5, 7, 8))

    def build_finite(env):  # the same frames without overflow take the prefix sums
        return _floats(env, [5.0, math.inf, -math.inf, 1.0, math.nan, 2.0]).key_by("k") \
            .over(rows_preceding=1).aggregate(s=agg.sum("f"))
    got = [r["s"] for r in check(build_finite).to_pylist()]
    assert got[:2] == [5.0, math.inf] and math.isnan(got[2]) and got[3] == -math.inf
    assert math.isnan(got[4]) and math.isnan(got[5])


def _mixed(env, shift=0):
    n = 60
    return arrow_stream(env, {"ts": pa.array([i * 3 - (i * 7) % 5 + shift for i in range(n)], i64),
                              "k": pa.array([["a", "b", None, "é"][i % 4] for i in range(n)]).dictionary_encode(),
                              "v": pa.array([i % 9 - 4 for i in range(n)], i64)}, sizes=[7] * 8 + [4], bound=4)


PLANS = {
    "union": lambda env: _mixed(env).union(_mixed(env, 1)).key_by("k").over(range_preceding=Time.milliseconds(5))
    .aggregate(n=agg.count()),
    "window before": lambda env: _mixed(env).key_by("k").window(tumbling(10)).aggregate(s=agg.sum("v"))
    .key_by("k").over(rows_preceding=1).aggregate(t=agg.max("s")),
    "over after over": lambda env: _mixed(env).key_by("k").over(rows_preceding=1).aggregate(a=agg.sum("v"))
    .key_by("k").over(range_preceding=Time.milliseconds(6)).aggregate(b=agg.max("a")),
    "event time dropped, window after": lambda env: _mixed(env).select("k", "v").key_by("k").over(rows_preceding=1)
    .aggregate(b=agg.max("v")).key_by("k").window(tumbling(10)).aggregate(c=agg.count(), s=agg.sum("b")),
    "event time column replaced": lambda env: _mixed(env).with_columns(ts=col("ts") * -1).key_by("k")
    .over(range_preceding=Time.milliseconds(6)).aggregate(lo=agg.min("ts"), n=agg.count()),
    "computed keys and arguments": lambda env: _mixed(env).with_columns(kk=col("v") % 2).filter(col("v") != 0)
    .key_by("kk", "k").over(rows_preceding=4).aggregate(s=agg.sum(col("v") * 3), n=agg.count(where=col("v") > 0)),
}


@pytest.mark.parametrize("name", sorted(PLANS))
@pytest.mark.parametrize("parallelism", [1, 3])
def test_over_anywhere_in_a_plan(name, parallelism):
    check(PLANS[name], parallelism)


# ----------------------------------------------------------------------------------------------
# checkpoints and the state-memory limit
# ----------------------------------------------------------------------------------------------
def _batches(rows=400, keys=5, disorder=6):
    return [pa.record_batch({"ts": pa.array([i - (i * 13) % disorder for i in range(b, b + 40)], i64),
                             "k": pa.array([f"k{i % keys}" for i in range(b, b + 40)]),
                             "v": pa.array([None if i % 11 == 0 else (i * 7) % 23 for i in range(b, b + 40)], i64)})
            for b in range(0, rows, 40)]


@pytest.mark.parametrize("frame", [{"rows_preceding": 3}, {"range_preceding": Time.milliseconds(7)}])
def test_resume_after_crashes_gives_the_same_result(frame, tmp_path):
    batches = _batches()

    def build(env, source):
        s = env.from_arrow(source, timestamp="ts",
                           watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(3)))
        return s.key_by("k").over(**frame).aggregate(s=agg.sum("v"), hi=agg.max("v"), n=agg.count())
    expected = reference.evaluate(build(gz.StreamEnvironment(), batches).node)
    result = run_with_crashes(build, batches, [2, 5, 7], str(tmp_path / "chk"), parallelisms=[1, 2, 3, 4])
    assert_tables_equal(result["out"], expected)


@given(case=over_query_cases(), data=st.data())
@settings(deadline=None, max_examples=15)
def test_random_over_queries_resume_after_crashes(case, data):
    """Random OVER queries crash at drawn batches and resume: the same rows, bit for bit, as an
    uninterrupted run, and the reference's."""
    query, parallelism = case
    check_resume(query, min(parallelism, 2), data)


def test_state_carried_as_bytes_between_single_batches():
    # Spark streaming's sequential strategy runs a query one micro-batch at a time, restoring the
    # state each time from the bytes the last one left (engine/incremental.py)
    from grizzly_py.engine.incremental import IncrementalQuery
    from grizzly_py.plan import Query
    batches = _batches(rows=200)
    q = gz.StreamEnvironment().from_arrow(batches, timestamp="ts", watermark=WatermarkStrategy
                                          .for_bounded_out_of_orderness(Time.milliseconds(3))) \
        .key_by("k").over(range_preceding=Time.milliseconds(5)).aggregate(s=agg.sum("v"), hi=agg.max("v"))
    state, outputs = None, []
    for batch in [*batches, None]:
        run = IncrementalQuery(Query(q.node))
        try:
            run.restore(state)
            outputs.append(run.feed(batch) if batch is not None else run.finish())
            state = run.snapshot()
        finally:
            run.close()
    assert_tables_equal(pa.concat_tables(outputs), reference.evaluate(q.node))


def test_state_is_pruned_as_the_watermark_moves():
    # 20,000 rows through a 3-row frame stay within a limit that holding them all would break
    batches = [pa.record_batch({"ts": pa.array(range(b, b + 500), i64), "k": pa.array([i % 4 for i in range(500)], i64),
                                "v": pa.array(range(500), i64)}) for b in range(0, 20_000, 500)]

    def run(frame, limit):
        env = gz.StreamEnvironment(state_memory_limit=limit)
        s = env.from_arrow(batches, timestamp="ts")
        return s.key_by("k").over(**frame).aggregate(s=agg.sum("v")).execute_and_collect()
    assert run({"rows_preceding": 3}, "64k").num_rows == 20_000
    with pytest.raises(StateMemoryLimitError):
        run({"range_preceding": Time.hours(1)}, "64k")  # every row stays in the frame's reach


def test_the_history_keeps_only_what_frames_read():
    # 1,000 rows of a 2,000-row frame per key, each with a 500-byte payload the frames never read:
    # the history holds their keys, times and values (~130 KB), not the payloads (~2 MB)
    rows = 8_000
    payload = pa.array(["x" * 500] * 500)
    batches = [pa.record_batch({"ts": pa.array(range(b, b + 500), i64), "k": pa.array([i % 4 for i in range(500)], i64),
                                "v": pa.array(range(500), i64), "text": payload}) for b in range(0, rows, 500)]
    env = gz.StreamEnvironment(state_memory_limit="512k")
    out = env.from_arrow(batches, timestamp="ts").key_by("k").over(rows_preceding=1000) \
        .aggregate(s=agg.sum("v")).execute_and_collect()
    assert out.num_rows == rows and out.column("text")[0].as_py() == "x" * 500


# ----------------------------------------------------------------------------------------------
# definition-time errors
# ----------------------------------------------------------------------------------------------
def _keyed():
    env = gz.StreamEnvironment()
    return env.from_arrow(pa.table({"ts": pa.array([1], i64), "k": [1], "v": [1], "s": ["x"]}), timestamp="ts").key_by("k")


@pytest.mark.parametrize("kwargs, error, match", [
    ({}, ValueError, "exactly one"),
    ({"rows_preceding": 2, "range_preceding": Time.seconds(1)}, ValueError, "exactly one"),
    ({"rows_preceding": -1}, ValueError, "negative"),
    ({"rows_preceding": 10 ** 30}, ValueError, "between 0 and"),
    ({"rows_preceding": 1.5}, TypeError, "int"),
    ({"range_preceding": 5}, TypeError, "unit"),
])
def test_frame_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        _keyed().over(**kwargs)


@pytest.mark.parametrize("aggregates, match", [
    ({"med": agg.median("v")}, "agg.median is not supported over an OVER frame"),
    ({"total": agg.sum("s")}, "numeric|string"),
    ({"lo": agg.min("s")}, "takes a number"),
    ({"v": agg.count()}, "clashes"),
    ({}, "at least one aggregate"),
])
def test_aggregate_errors(aggregates, match):
    with pytest.raises(SchemaError, match=match):
        _keyed().over(rows_preceding=1).aggregate(**aggregates)


def test_over_needs_event_time():
    env = gz.StreamEnvironment()
    s = env.from_arrow(pa.table({"k": [1], "v": [1]}))
    with pytest.raises(SchemaError, match="no event time"):
        s.key_by("k").over(rows_preceding=1).aggregate(n=agg.count())


# ----------------------------------------------------------------------------------------------
# Spark
# ----------------------------------------------------------------------------------------------
@pytest.mark.slow  # a Spark session
def test_to_spark_runs_over_in_one_task():
    pytest.importorskip("pyspark")
    from grizzly_py.spark import local_session
    table = pa.table({"ts": pa.array([i // 2 for i in range(200)], i64), "k": pa.array([i % 3 for i in range(200)], i64),
                      "v": pa.array(range(200), i64)})

    def build(env):
        return (env.from_arrow(table, timestamp="ts").key_by("k").over(range_preceding=Time.milliseconds(5))
                .aggregate(s=agg.sum("v"), n=agg.count()))
    spark = local_session(2, master="local[2,2]", app="grizzly-over")
    try:
        env = gz.StreamEnvironment.for_spark(spark)
        build(env).collect("out")
        assert_tables_equal(env.execute()["out"], reference.evaluate(build(gz.StreamEnvironment()).node))
    finally:
        spark.stop()
