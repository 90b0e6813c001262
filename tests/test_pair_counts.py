"""A window join whose only reader counts its pairs per window emits the counts itself
(``physical/pair_counts.py``, ``engine/pair_counts.py``; Nexmark Q8).

- Differential (hypothesis): drawn left and right streams (repeated and null join keys, integer
  or string, several names per key and window, null names, out-of-order and late records, batch
  cuts), the count
  keyed by the left columns in drawn orders (the join key first or not, no key), one or two
  counts, under each join (sort-merge, hash) and parallelism: the job equals the reference
  evaluator of the query as written and the job with the choice turned off, and the job's
  records_in, filtered, late and records_out are the reference's.
- The choice is made exactly for the pattern: near misses (another window, a sum, a count with
  ``where=``, a right column as key, a projection between) lower as written.
- Nexmark Q8 is counted by the join, equals the reference and the job without the choice.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import arrow_stream, assert_tables_equal, event_times, run_collected, tumbling

import grizzly_py as gz
from grizzly_py import agg, col, reference
from grizzly_py.physical import pair_counts
from grizzly_py.physical.pipelines import JoinTerminal, build_physical_plan
from grizzly_py.plan import Query
from grizzly_py.windows import SlidingEventTimeWindows
from grizzly_py import Time
from grizzly_py.workloads import nexmark


def _streams(env, case):
    left = arrow_stream(env, case["left"], sizes=case["left_sizes"], bound=case["bound"])
    right = arrow_stream(env, case["right"], sizes=case["right_sizes"], bound=case["bound"])
    return left, right


def _query(case):
    def build(env):
        left, right = _streams(env, case)
        on = case.get("on", ("id", "seller"))
        joined = (left.select("id", "name", "flag", "ts").join(right.select("seller", "nm", "ts"))
                  .where(on[0]).equal_to(on[1]).window(tumbling(case["window_ms"])))
        counts = {name: agg.count() for name in case["counts"]}
        keyed = joined.key_by(*case["keys"]) if case["keys"] else joined
        window = keyed.window(tumbling(case["window_ms"])) if case["keys"] else keyed.window_all(tumbling(case["window_ms"]))
        return window.aggregate(**counts)
    return build


def _run(build, parallelism=1, counted=True, **options) -> tuple[pa.Table, dict]:
    return run_collected(build, parallelism, None if counted else pair_counts.switch, **options)


def _counted(node) -> bool:
    """Whether the physical plan has a join that counts its pairs."""
    plan = build_physical_plan(Query(node))
    return any(isinstance(p.terminal, JoinTerminal) and p.terminal.pair_counts is not None for p in plan.pipelines)


def _cuts(draw, n):
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=3)))
    return [b - a for a, b in zip([0, *cuts], [*cuts, n])]


@st.composite
def count_cases(draw):
    nl, nr = draw(st.integers(0, 30)), draw(st.integers(0, 30))
    key = st.one_of(st.integers(0, 3), st.none())
    names = st.one_of(st.sampled_from(["a", "b", "ab", ""]), st.none())
    left = {"ts": pa.array(draw(event_times(nl)), pa.int64()), "id": pa.array(draw(st.lists(key, min_size=nl, max_size=nl)), pa.int64()),
            "name": pa.array(draw(st.lists(names, min_size=nl, max_size=nl)), pa.string()),
            "flag": pa.array(draw(st.lists(st.booleans(), min_size=nl, max_size=nl)), pa.bool_())}
    right = {"ts": pa.array(draw(event_times(nr)), pa.int64()),
             "seller": pa.array(draw(st.lists(key, min_size=nr, max_size=nr)), pa.int64()),
             "nm": pa.array(draw(st.lists(names, min_size=nr, max_size=nr)), pa.string())}
    keys = draw(st.sampled_from([("id", "name"), ("name", "id"), ("id",), ("name",), ("id", "flag", "name"),
                                 ("flag",), ()]))
    case = dict(left=left, right=right, left_sizes=_cuts(draw, nl), right_sizes=_cuts(draw, nr),
                bound=draw(st.sampled_from([0, 0, 5])), window_ms=draw(st.sampled_from([5, 10, 30])),
                keys=keys, counts=draw(st.sampled_from([("n",), ("n", "m")])),
                # an integer join key (the merge counts, key words in order) or a string one (run
                # lengths of the pairs, ordered as the hash join orders them)
                on=draw(st.sampled_from([("id", "seller"), ("name", "nm")])))
    options = draw(st.sampled_from([{}, {"grouping": "hash"}, {"grouping": "sort"}]))
    return case, draw(st.integers(1, 3)), options


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(case=count_cases())
def test_counted_pairs_equal_the_reference_and_the_join(every_row_a_morsel, case):
    args, parallelism, options = case
    build = _query(args)
    node = build(gz.StreamEnvironment()).node
    assert _counted(node)
    expected, expected_metrics = reference.run(node)
    actual, metrics = _run(build, parallelism, **options)
    assert_tables_equal(actual, expected)
    plain, plain_metrics = _run(build, parallelism, counted=False, **options)
    assert_tables_equal(plain, expected)
    for name in ("records_in", "filtered_records", "late_records", "records_out"):
        assert metrics[name] == plain_metrics[name] == expected_metrics[name], name


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=count_cases())
def test_counts_merged_in_key_ranges_on_the_workers_equal_the_reference(case):
    # with a worker pool the counting merge runs in key ranges (every threshold at its minimum:
    # each firing is split): the counts, in key order, equal the reference's
    from grizzly_py.engine import sort_kernel
    args, _, _ = case
    build = _query(args)
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sort_kernel, "MERGE_SPLIT_ROWS", 2)
        actual, _ = _run(build, 3, grouping="sort")
    assert_tables_equal(actual, expected)


def _near_misses(env, kind):
    left, right = _streams(env, NEAR_CASE)
    joined = (left.select("id", "name", "flag", "ts").join(right.select("seller", "nm", "ts"))
              .where("id").equal_to("seller").window(tumbling(10)))
    if kind == "sliding":
        window = SlidingEventTimeWindows.of(Time.milliseconds(10), Time.milliseconds(5))
        return joined.key_by("id").window(window).aggregate(n=agg.count())
    if kind == "other size":
        return joined.key_by("id").window(tumbling(20)).aggregate(n=agg.count())
    if kind == "sum":
        return joined.key_by("id").window(tumbling(10)).aggregate(n=agg.count(), s=agg.sum("id"))
    if kind == "count where":
        return joined.key_by("id").window(tumbling(10)).aggregate(n=agg.count(where=col("flag")))
    if kind == "count of a column":
        return joined.key_by("id").window(tumbling(10)).aggregate(n=agg.count("name"))
    if kind == "right key":
        return joined.key_by("seller").window(tumbling(10)).aggregate(n=agg.count())
    if kind == "projection between":
        return joined.select("id", "name").key_by("id").window(tumbling(10)).aggregate(n=agg.count())
    if kind == "lateness":
        return joined.key_by("id").window(tumbling(10)).allowed_lateness(Time.milliseconds(5)).aggregate(n=agg.count())
    raise AssertionError(kind)


NEAR_CASE = dict(left={"ts": [1, 2, 3, 12, 14, 25], "id": pa.array([1, 1, 2, 1, None, 3], pa.int64()),
                       "name": ["a", "b", "a", None, "c", "d"], "flag": [True, False, True, True, False, True]},
                 right={"ts": [0, 4, 5, 11, 13, 27], "seller": pa.array([1, 1, 2, 1, 1, 3], pa.int64()),
                        "nm": ["a", "a", "b", "a", "x", "d"]},
                 left_sizes=[2, 4], right_sizes=[6], bound=0)
NEAR_MISSES = ["sliding", "other size", "sum", "count where", "count of a column", "right key", "projection between",
               "lateness"]


@pytest.mark.parametrize("kind", NEAR_MISSES)
def test_near_misses_run_as_written(kind):
    def build(env):
        return _near_misses(env, kind)
    node = build(gz.StreamEnvironment()).node
    assert not _counted(node)
    assert_tables_equal(_run(build)[0], reference.evaluate(node))


def test_by_hand_duplicates_and_names_sum_per_group():
    """Two left rows of id 1 in window [0, 10) with names a, b: each pairs with the window's two
    right rows of seller 1; keyed by id alone they are one group of 4 pairs, by (id, name) two
    of 2; id 2 pairs once; the null id joins nothing."""
    case = dict(NEAR_CASE, window_ms=10, counts=("n",))
    for keys, rows in [(("id",), [(1, 0, 4), (2, 0, 1), (1, 10, 2), (3, 20, 1)]),
                       (("id", "name"), [(1, "a", 0, 2), (1, "b", 0, 2), (2, "a", 0, 1), (1, None, 10, 2),
                                         (3, "d", 20, 1)])]:
        build = _query(dict(case, keys=keys))
        assert _counted(build(gz.StreamEnvironment()).node)
        out = _run(build)[0]
        got = [tuple(r[k] for k in (*keys, "window_start", "n")) for r in out.to_pylist()]
        assert got == rows


def test_explain_names_the_counted_pairs():
    node = _query(dict(NEAR_CASE, window_ms=10, counts=("n",), keys=("id", "name")))(gz.StreamEnvironment()).node
    text = build_physical_plan(Query(node)).explain()
    assert "pairs counted per window and id, name as n" in text
    with pair_counts.disabled():
        assert "pairs counted" not in build_physical_plan(Query(node)).explain()


def test_nexmark_q8_counts_its_pairs_in_the_join():
    persons, auctions = nexmark.generate_persons(20_000, 7), nexmark.generate_auctions(20_000, 7)

    def build(env):
        return nexmark.q8(env, persons, auctions)
    node = build(gz.StreamEnvironment()).node
    assert _counted(node)
    expected = reference.evaluate(node)
    assert expected.num_rows
    actual, metrics = _run(build, 2)
    assert_tables_equal(actual, expected)
    plain, plain_metrics = _run(build, 2, counted=False)
    assert_tables_equal(plain, expected)
    assert metrics["records_out"] == plain_metrics["records_out"] == expected.num_rows


def _self_counted(env, data):
    """A stream's rows joined with its own rows of the same key per window, counted per (k,
    name): the pattern over one source (a checkpointed job's crashing source)."""
    from test_checkpoint import _bounded
    s = _bounded(env, data)
    return (s.select("k", "name", "ts").join(s.select("k", "ts")).where("k").equal_to("k")
            .window(tumbling(1000)).key_by("k", "name").window(tumbling(1000)).aggregate(n=agg.count()))


@pytest.mark.parametrize("options", [{}, {"grouping": "hash"}], ids=["sort-merge", "hash"])
def test_counted_joins_resume_from_checkpoints_at_other_parallelisms(options, tmp_path):
    from test_checkpoint import _data, run_with_crashes
    batches = _data(rows=1500).to_batches(max_chunksize=100)
    assert _counted(_self_counted(gz.StreamEnvironment(), batches).node)
    expected, expected_metrics = reference.run(_self_counted(gz.StreamEnvironment(), batches).node)
    result = run_with_crashes(_self_counted, batches, [4, 9], tmp_path / "chk", parallelisms=[2, 1, 3], **options)
    assert_tables_equal(result["out"], expected)
    assert result.metrics["checkpoints"]["restored_from"] == 9
