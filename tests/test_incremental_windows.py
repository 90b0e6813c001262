"""Incremental sliding and cumulative windows (issue 31, ``engine/pane_accumulator.py``): a fired
window's merged state carries over to the next one, less the panes that leave it (sliding
windows of invertible aggregates) or plus the panes that join it (cumulative windows).

The hypothesis cases draw what the accumulator must get right: sliding windows of many panes
(2-16 per window, sizes that are and are not multiples of the slide, offsets) and cumulative
windows of many steps; event times with gaps longer than a window (windows with no rows between
two with rows), disorder past the watermark (records that reach panes the accumulator holds,
and, with an allowed lateness, windows fired again); keys that stay and keys that come and go (a
key whose records all left a window is not in it; the tombstones of a hashed table); int values
at the int64 limits (a sum that wraps within a window's panes but fits, and one that overflows);
several batches, parallelism 1-3, forced dense placements that later keys break, and crashes
resumed from checkpoints. Each must equal the reference evaluator.
"""

from __future__ import annotations

import collections
import shutil
import tempfile

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from strategies import assert_tables_equal
from test_adaptive import forcing, quick
from test_checkpoint import run_with_crashes

import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, agg, col, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.codegen import generate_pipeline
from grizzly_py.engine import pane_accumulator
from grizzly_py.physical import build_physical_plan
from grizzly_py.plan import Query
from grizzly_py.reference import INT64_MAX, INT64_MIN
from grizzly_py.windows import CumulativeEventTimeWindows, SlidingEventTimeWindows

ms = Time.milliseconds
i64 = pa.int64()
FIXTURE_OK = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# aggregates with an exact inverse (AggregateSpec.invertible), and others (merged afresh in a
# sliding window, carried over in a cumulative one where their merge is exact)
INVERTIBLE = {"n": lambda: agg.count(), "c": lambda: agg.count("v"), "s": lambda: agg.sum("v"),
              "a": lambda: agg.avg("v"), "w": lambda: agg.count(where=col("v") > 0),
              "sw": lambda: agg.sum("v", where=col("k") != 1)}
OTHERS = {"lo": lambda: agg.min("v"), "f": lambda: agg.first("v"), "fs": lambda: agg.sum(col("v").cast("float64"))}


class Case:
    """A drawn query: its window, aggregates, lateness and input; ``build(env, source)``."""

    def __init__(self, assigner, aggregates: list[str], lateness: int | None, bound: int, data: dict,
                 sizes: list[int]):
        self.assigner, self.aggregates, self.lateness, self.bound = assigner, aggregates, lateness, bound
        self.data, self.sizes = data, sizes

    def batches(self) -> list[pa.RecordBatch]:
        whole = pa.record_batch(self.data)
        offsets = np.cumsum([0] + self.sizes[:-1])
        return [whole.slice(int(o), n) for o, n in zip(offsets, self.sizes)]

    def build(self, env, source=None):
        stream = env.from_arrow(self.batches() if source is None else source, timestamp="ts",
                                watermark=WatermarkStrategy.for_bounded_out_of_orderness(ms(self.bound)))
        windowed = stream.key_by("k").window(self.assigner)
        if self.lateness is not None:
            windowed = windowed.allowed_lateness(ms(self.lateness))
        table = {**INVERTIBLE, **OTHERS}
        return windowed.aggregate(**{name: table[name]() for name in self.aggregates})

    def __repr__(self):
        return (f"Case({self.assigner!r}, {self.aggregates}, lateness={self.lateness}, bound={self.bound}, "
                f"sizes={self.sizes}, data={ {k: v.to_pylist() for k, v in self.data.items()} })")


@st.composite
def windows(draw):
    """A sliding window of 2-16 panes per window (its size a multiple of the slide or not, with
    an offset or not) or a cumulative window of 2-12 steps."""
    if draw(st.integers(0, 3)) == 0:
        step = draw(st.integers(1, 5))
        return CumulativeEventTimeWindows.of(ms(step * draw(st.integers(2, 12))), ms(step))
    slide = draw(st.integers(1, 6))
    size = slide * draw(st.integers(2, 16)) - draw(st.integers(0, slide - 1))
    offset = draw(st.integers(-(slide - 1), slide - 1)) if draw(st.booleans()) else None
    return SlidingEventTimeWindows.of(ms(size), ms(slide), None if offset is None else ms(offset))


@st.composite
def incremental_cases(draw, max_rows: int = 80) -> Case:
    assigner = draw(windows())
    size = assigner.max_size_ms if isinstance(assigner, CumulativeEventTimeWindows) else assigner.size_ms
    n = draw(st.integers(1, max_rows))
    # event times: a walk forward with gaps longer than a window, plus disorder
    disorder = draw(st.sampled_from([0, 0, 2, 6, 15]))
    times, t = [], draw(st.integers(-40, 40))
    for _ in range(n):
        t += draw(st.integers(0, 3)) if draw(st.integers(0, 12)) else draw(st.integers(size, 3 * size + 5))
        times.append(t + draw(st.integers(-disorder, disorder)))
    # keys: a few that stay, or ones that come and go with time (then leave every window), nulls
    churn = draw(st.booleans())
    keys = [None if draw(st.integers(0, 15)) == 0 else
            (ts // 4 + draw(st.integers(0, 2)) if churn else draw(st.integers(0, 4))) for ts in times]
    values = draw(st.lists(st.one_of(st.integers(-50, 50), st.none(),
                                     st.sampled_from([INT64_MAX, INT64_MIN, INT64_MAX - 1, -INT64_MAX])),
                           min_size=n, max_size=n))
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=8)))
    bounds = [0, *cuts, n]
    names = draw(st.lists(st.sampled_from(sorted(INVERTIBLE)), min_size=1, max_size=3, unique=True))
    if draw(st.integers(0, 4)) == 0:  # one that is not invertible: merged afresh (sliding), carried (cumulative)
        names.append(draw(st.sampled_from(sorted(OTHERS))))
    lateness = draw(st.sampled_from([None, None, None, 0, 5, 20]))
    return Case(assigner, names, lateness, draw(st.integers(0, 8)),
                {"ts": pa.array(times, i64), "k": pa.array(keys, i64), "v": pa.array(values, i64)},
                [b - a for a, b in zip(bounds, bounds[1:])])


def expected_of(case: Case):
    """The reference's table and metrics; None where it raises the int64 overflow error."""
    try:
        return reference.run(case.build(gz.StreamEnvironment()).node)
    except AggregateOverflowError:
        return None


def check(case: Case, parallelism: int = 1, adaptive=False, **options) -> dict | None:
    """The engine's result equals the reference's (or both raise the overflow error); the metrics."""
    expected = expected_of(case)
    env = gz.StreamEnvironment(parallelism=parallelism, adaptive=adaptive, **options)
    case.build(env).collect("out")
    if expected is None:
        with pytest.raises(AggregateOverflowError):
            env.execute()
        return None
    result = env.execute()
    assert_tables_equal(result["out"], expected[0])
    assert result.metrics["late_records"] == expected[1]["late_records"]
    return result.metrics


@pytest.fixture
def accumulator_calls(monkeypatch):
    """Counts of what the accumulators did: windows built on the last one ("carried") and built
    afresh ("merged"), tables dropped while holding panes ("dropped"), compactions."""
    calls = collections.Counter()
    real_window, real_reset, real_fn = (pane_accumulator.PaneAccumulator.window, pane_accumulator.PaneAccumulator.reset,
                                        pane_accumulator.PaneAccumulator._fn)

    def window(self, lo, hi, *args):
        calls["carried" if self.held and self.lo == lo and self.hi <= hi and self.layout == args[2] else "merged"] += 1
        return real_window(self, lo, hi, *args)

    def reset(self):
        calls["dropped"] += self.held
        return real_reset(self)

    def fn(self, name, *types):
        calls["compacted"] += name == "compact"
        return real_fn(self, name, *types)
    monkeypatch.setattr(pane_accumulator.PaneAccumulator, "window", window)
    monkeypatch.setattr(pane_accumulator.PaneAccumulator, "reset", reset)
    monkeypatch.setattr(pane_accumulator.PaneAccumulator, "_fn", fn)
    return calls


# ----------------------------------------------------------------------------------------------
# random cases against the reference
# ----------------------------------------------------------------------------------------------
@FIXTURE_OK
@given(case=incremental_cases(), parallelism=st.integers(1, 3))
def test_incremental_windows_match_reference(case, parallelism, every_row_a_morsel, accumulator_calls):
    check(case, parallelism)
    note(f"accumulator: {dict(accumulator_calls)}")


@FIXTURE_OK
@given(case=incremental_cases(), parallelism=st.integers(1, 3), seed=st.integers(0, 100),
       lo_shift=st.integers(-3, 3), cap=st.integers(1, 20))
@pytest.mark.slow
def test_incremental_windows_under_dense_placement_and_deoptimization(case, parallelism, seed, lo_shift, cap,
                                                                      every_row_a_morsel):
    """Forced dense key ranges (the accumulator then merges index by index, its table dense too)
    that later keys break (the blocks go back to hash tables: the accumulator is rebuilt)."""
    check(case, parallelism, adaptive=quick(specializer=forcing(seed, lo_shift, cap, "predicated"),
                                            profile_workers=parallelism))


@settings(max_examples=max(settings().max_examples // 2, 5))
@given(case=incremental_cases(max_rows=40), parallelism=st.integers(1, 2), data=st.data())
@pytest.mark.slow
def test_incremental_windows_resume_after_crashes(case, parallelism, data):
    """Crashes after drawn batches, each run resumed from the latest checkpoint: the accumulator
    is not in a snapshot; the restored job rebuilds it from the restored panes."""
    expected = expected_of(case)
    if expected is None:
        return
    batches = case.batches()
    points = sorted({p for p in data.draw(st.lists(st.integers(1, max(1, len(batches))), max_size=3)) if p < len(batches)})
    path = tempfile.mkdtemp(prefix="gz-inc-")
    try:
        result = run_with_crashes(case.build, batches, points, path, parallelism)
    finally:
        shutil.rmtree(path, ignore_errors=True)
    assert_tables_equal(result["out"], expected[0])
    assert result.metrics["late_records"] == expected[1]["late_records"]


# ----------------------------------------------------------------------------------------------
# hand-picked cases
# ----------------------------------------------------------------------------------------------
def _in_order(rows: int, keys, slide_rows: int = 1, values=None) -> dict:
    ts = [i // slide_rows for i in range(rows)]
    return {"ts": pa.array(ts, i64), "k": pa.array([keys(i) for i in range(rows)], i64),
            "v": pa.array(values if values is not None else [(i * 37) % 23 - 11 for i in range(rows)], i64)}


def test_consecutive_windows_carry_the_last_one_over(accumulator_calls):
    """In-order records, a sliding window of 20 panes: after the first window every window of a
    firing is built on the one before; the results are the reference's."""
    case = Case(SlidingEventTimeWindows.of(ms(40), ms(2)), ["n", "c", "s", "a"], None, 0,
                _in_order(2000, lambda i: i % 7, slide_rows=4), [100] * 20)
    check(case)
    assert accumulator_calls["carried"] >= 250 and accumulator_calls["merged"] == 1, dict(accumulator_calls)


def test_cumulative_windows_grow_by_their_new_panes(accumulator_calls):
    case = Case(CumulativeEventTimeWindows.of(ms(30), ms(3)), ["n", "s", "lo", "f"], None, 0,
                _in_order(900, lambda i: i % 5, slide_rows=2), [90] * 10)
    check(case, parallelism=2)
    # ten windows per period of 30 ms: the first merged afresh, nine carried
    assert accumulator_calls["carried"] >= 8 * accumulator_calls["merged"] > 0, dict(accumulator_calls)


def test_windows_that_are_not_consecutive_merge_afresh(accumulator_calls):
    """Gaps of more than a window between bursts of records: each burst's first window is
    merged afresh, the others carried."""
    ts = [b * 1000 + i for b in range(5) for i in range(60)]
    data = {"ts": pa.array(ts, i64), "k": pa.array([i % 3 for i in range(300)], i64), "v": pa.array(range(300), i64)}
    check(Case(SlidingEventTimeWindows.of(ms(20), ms(5)), ["s", "n"], None, 0, data, [50] * 6), parallelism=2)
    assert accumulator_calls["merged"] == 5 and accumulator_calls["carried"] > 40, dict(accumulator_calls)


def test_a_key_whose_records_left_is_not_in_the_window():
    """Keys live for a few ms each: most windows lose keys; none may show one with a count of 0."""
    case = Case(SlidingEventTimeWindows.of(ms(12), ms(1)), ["w", "s"], None, 0,
                _in_order(600, lambda i: i // 10), [60] * 10)
    check(case, parallelism=3)


def test_records_behind_the_watermark_reach_carried_panes(accumulator_calls):
    """Records whose first windows fired but not their last ones join panes the accumulator
    holds: it is dropped and rebuilt with them, and the later windows count them."""
    ts = []
    for i in range(400):
        ts.append(i // 2 if i % 17 else max(0, i // 2 - 15))  # every 17th record 15 ms late
    data = {"ts": pa.array(ts, i64), "k": pa.array([i % 4 for i in range(400)], i64),
            "v": pa.array([i % 9 for i in range(400)], i64)}
    check(Case(SlidingEventTimeWindows.of(ms(30), ms(3)), ["n", "s"], None, 0, data, [10] * 40))
    assert accumulator_calls["dropped"] > 0, dict(accumulator_calls)


@pytest.mark.parametrize("lateness", [5, 40])
def test_allowed_lateness_fires_windows_again_and_the_accumulator_follows(lateness):
    ts = [i // 2 if i % 11 else max(0, i // 2 - 25) for i in range(400)]
    data = {"ts": pa.array(ts, i64), "k": pa.array([i % 3 for i in range(400)], i64), "v": pa.array(range(400), i64)}
    check(Case(SlidingEventTimeWindows.of(ms(20), ms(4)), ["n", "a"], lateness, 0, data, [8] * 50), parallelism=2)


@pytest.mark.parametrize("parallelism", [1, 2])
def test_int_sums_that_wrap_between_panes_but_fit_in_each_window(parallelism):
    """Windows of three one-record panes over -M, M, M, -M, ... (M = INT64_MAX): every window's
    sum fits, but taking a pane out and putting the next in wraps past int64 both ways (the
    carry word must come back to 0 each time)."""
    values = [(-INT64_MAX, INT64_MAX, INT64_MAX, -INT64_MAX)[i % 4] for i in range(200)]
    case = Case(SlidingEventTimeWindows.of(ms(3), ms(1)), ["s", "a", "n"], None, 0,
                _in_order(200, lambda i: 0, values=values), [25] * 8)
    assert expected_of(case) is not None
    check(case, parallelism)


def test_an_int_sum_that_overflows_in_one_window_raises_the_overflow_error():
    values = [1] * 60 + [INT64_MAX, INT64_MAX] + [1] * 60
    case = Case(SlidingEventTimeWindows.of(ms(10), ms(1)), ["s"], None, 0, _in_order(122, lambda i: 0, values=values),
                [61, 61])
    assert expected_of(case) is None
    check(case)


def test_a_stream_of_new_keys_keeps_the_hashed_table_compact(accumulator_calls, monkeypatch):
    """Each key lives a few panes (a Nexmark auction's bids): the tombstones of the keys that
    left are rehashed away, so the table keeps the size of the keys live in a window."""
    capacities = []
    real = pane_accumulator.PaneAccumulator._advance

    def advance(self, *args):
        real(self, *args)
        capacities.append(int(self.block[1]))
    monkeypatch.setattr(pane_accumulator.PaneAccumulator, "_advance", advance)
    rows = 40_000
    case = Case(SlidingEventTimeWindows.of(ms(20), ms(2)), ["n", "s"], None, 0,
                _in_order(rows, lambda i: i // 8, slide_rows=20), [4000] * 10)
    check(case)
    assert accumulator_calls["compacted"] > 0, dict(accumulator_calls)
    assert max(capacities) <= 2048, max(capacities)  # ~400 keys live per window; 5000 keys in all


def test_windows_of_sort_grouping_and_shared_state_merge_afresh(accumulator_calls):
    case = Case(SlidingEventTimeWindows.of(ms(20), ms(2)), ["n", "s"], None, 0, _in_order(500, lambda i: i % 5),
                [50] * 10)
    check(case, parallelism=2, grouping="sort")
    check(case, parallelism=2, window_state="shared")
    assert not accumulator_calls, dict(accumulator_calls)


# ----------------------------------------------------------------------------------------------
# which windows carry their state over
# ----------------------------------------------------------------------------------------------
def _reuse(assigner, **aggregates) -> str | None:
    env = gz.StreamEnvironment()
    stream = env.from_arrow(pa.table({"ts": pa.array([0], i64), "k": pa.array([0], i64), "v": pa.array([0], i64),
                                      "f": pa.array([0.0])}), timestamp="ts")
    node = stream.key_by("k").window(assigner).aggregate(**aggregates).node
    (gen,) = [generate_pipeline(p) for p in build_physical_plan(Query(node)).pipelines]
    return gen.pane_reuse


def test_which_windows_carry_their_state_over():
    sliding = SlidingEventTimeWindows.of(ms(10), ms(2))
    cumulative = CumulativeEventTimeWindows.of(ms(10), ms(2))
    assert _reuse(sliding, n=agg.count(), s=agg.sum("v"), a=agg.avg("v"), c=agg.count("f")) == "invert"
    for other in (agg.sum("f"), agg.avg("f"), agg.min("v"), agg.max("v"), agg.first("v"), agg.median("v"),
                  agg.var_pop("v")):
        assert _reuse(sliding, n=agg.count(), x=other) is None, other
    assert _reuse(cumulative, n=agg.count(), lo=agg.min("v"), hi=agg.max("v"), f=agg.first("f"), l=agg.last("v")) \
        == "extend"
    for other in (agg.sum("f"), agg.min("f"), agg.stddev_pop("v"), agg.median("v"), agg.count_distinct("v")):
        assert _reuse(cumulative, n=agg.count(), x=other) is None, other
    assert _reuse(SlidingEventTimeWindows.of(ms(10), ms(10)), n=agg.count()) is None  # a window is its own pane
