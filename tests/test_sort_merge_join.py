"""The sort-merge window join (``codegen/sort_merge_join.py``, ``engine/sort_kernel.py``): unless
``grouping="hash"`` asks for the hash join, tumbling and sliding window joins keep key/pointer
rows per side, sort them and join by merging when a window fires. Their output must equal the reference evaluator's and the
hash join's: the hand-computed cases of test_join.py (duplicates on both sides, output order,
empty sides, late records, null and float keys, state dropping) run again with sort-merge, and
the random join cases of test_join.py are checked against the reference and the hash join. The
hand-computed cases run with the hash join too, as test_join.py's defaults now merge.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import test_join as tj
from hypothesis import given
from strategies import assert_tables_equal

import grizzly_py as gz
from grizzly_py import reference
from marks import all_but, slow


def _grouping_by_default(monkeypatch, default: str) -> None:
    """Every StreamEnvironment a test makes groups (and joins) by ``default``."""
    original = gz.StreamEnvironment.__init__

    def init(self, *args, grouping=default, **kwargs):
        original(self, *args, grouping=grouping, **kwargs)
    monkeypatch.setattr(gz.StreamEnvironment, "__init__", init)


@pytest.fixture
def sort_by_default(monkeypatch):
    _grouping_by_default(monkeypatch, "sort")


@pytest.fixture
def hash_by_default(monkeypatch):
    """The hash join, which window joins use only when asked (grouping="hash")."""
    _grouping_by_default(monkeypatch, "hash")


def run(build, grouping: str, parallelism: int = 1):
    env = gz.StreamEnvironment(parallelism=parallelism, grouping=grouping)
    build(env).collect("out")
    result = env.execute()
    return result["out"], result.metrics


def _join_groupings(metrics) -> set:
    return {p["grouping"] for q in metrics["queries"] for p in q["pipelines"] if p["kind"] == "join"}


HAND_CASES = [
    tj.test_tumbling_join_pairs_duplicates_in_order, tj.test_results_are_ordered_by_window_end_then_key_then_arrivals,
    tj.test_sliding_join_pairs_in_every_shared_window, tj.test_lateness_at_window_boundaries_uses_the_minimum_watermark,
    tj.test_null_keys_join_nothing_and_are_not_late, tj.test_float_keys_follow_the_grouping_rules,
    tj.test_an_empty_input_gives_no_pairs, tj.test_self_join_and_inputs_with_filters_and_computed_columns,
    tj.test_join_of_window_results, tj.test_event_times_at_the_int64_limits,
]
FAST_HAND_CASES = {tj.test_results_are_ordered_by_window_end_then_key_then_arrivals,
                   tj.test_sliding_join_pairs_in_every_shared_window, tj.test_null_keys_join_nothing_and_are_not_late}


@pytest.mark.parametrize("case", all_but(HAND_CASES, FAST_HAND_CASES),
                         ids=lambda f: f.__name__)
def test_hand_computed_join_cases_with_sort_merge(sort_by_default, case):
    case()


@pytest.mark.parametrize("case", all_but(HAND_CASES, FAST_HAND_CASES),
                         ids=lambda f: f.__name__)
def test_hand_computed_join_cases_with_the_hash_join(hash_by_default, case):
    case()


def test_window_joins_merge_by_default_and_hash_when_asked():
    def build(env):
        a = tj.stream(env, [{"ts": [1, 2], "k": [1, 2]}])
        b = tj.stream(env, [{"ts": [3, 4], "k": [2, 1]}])
        return a.join(b).where("k").equal_to("k").window(tj.tumbling(10))
    table, metrics = run(build, "auto")
    assert _join_groupings(metrics) == {"sort"} and tj.rows(table, "k") == [(1,), (2,)]
    hashed, hash_metrics = run(build, "hash")
    assert _join_groupings(hash_metrics) == {"hash"}
    assert_tables_equal(table, hashed)


@pytest.mark.parametrize("parallelism", [slow(1), 2])
def test_parallel_inputs_give_the_same_pairs(sort_by_default, parallelism):
    tj.test_parallel_inputs_give_the_same_pairs(parallelism)


def test_the_join_runs_as_sort_merge_and_drops_its_state():
    def build(env):
        a = tj.stream(env, [{"ts": [1, 2, 3], "k": [1, 2, 1], "v": [10, 11, 12]}, {"ts": [25], "k": [1], "v": [13]}])
        b = tj.stream(env, [{"ts": [4, 5, 15], "k": [1, 1, 2], "v": [20, 21, 22]}, {"ts": [26], "k": [1], "v": [23]}])
        return a.join(b).where("k").equal_to("k").window(tj.tumbling(10))
    table, metrics = run(build, "sort")
    assert _join_groupings(metrics) == {"sort"}
    assert tj.rows(table, "window_start", "k", "v", "v_right") == [
        (0, 1, 10, 20), (0, 1, 10, 21), (0, 1, 12, 20), (0, 1, 12, 21), (20, 1, 13, 23)]
    hashed, hash_metrics = run(build, "hash")
    assert _join_groupings(hash_metrics) == {"hash"}
    assert_tables_equal(table, hashed)


def test_session_and_interval_joins_stay_hash_joins():
    def build(env):
        a = tj.stream(env, [{"ts": [1], "k": [1]}])
        b = tj.stream(env, [{"ts": [2], "k": [1]}])
        return a.join(b).where("k").equal_to("k").window(tj.EventTimeSessionWindows.with_gap(tj.ms(5)))
    table, metrics = run(build, "sort")
    assert _join_groupings(metrics) == {"hash"} and table.num_rows == 1


def test_merge_join_pairs_every_equal_key_in_arrival_order():
    """The compiled merge of both sides' sorted rows: keys in ascending order (negative ones
    first), a key's pairs in (left arrival, right arrival) order, unmatched keys on either side
    skipped, across batches (several sorted runs per side)."""
    def build(env):
        a = tj.stream(env, [{"ts": [1, 2], "k": [7, 1], "v": [0, 1]}, {"ts": [3, 4], "k": [-3, 1], "v": [2, 3]}])
        b = tj.stream(env, [{"ts": [1, 2, 3], "k": [7, 2, 1], "v": [10, 11, 12]},
                            {"ts": [4, 5], "k": [1, 7], "v": [13, 14]}])
        return a.join(b).where("k").equal_to("k").window(tj.tumbling(10))
    table, metrics = run(build, "sort")
    assert _join_groupings(metrics) == {"sort"}
    assert tj.rows(table, "k", "v", "v_right") == [
        (1, 1, 12), (1, 1, 13), (1, 3, 12), (1, 3, 13), (7, 0, 10), (7, 0, 14)]
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    assert_tables_equal(table, expected)


def test_multi_word_keys_merge_word_by_word():
    """Two key columns: rows compare on the first word, then the second; a right side with
    no equal pair of words gives nothing."""
    def build(env):
        a = tj.stream(env, [{"ts": [1, 2, 3, 4], "k": [1, 1, 2, -1], "j": [2, 3, 0, 5], "v": [0, 1, 2, 3]}])
        b = tj.stream(env, [{"ts": [1, 2, 3], "k": [1, 2, -1], "j": [3, 1, 5], "v": [10, 11, 12]}])
        return a.join(b).where("k", "j").equal_to("k", "j").window(tj.tumbling(10))
    table, _ = run(build, "sort")
    assert tj.rows(table, "k", "j", "v", "v_right") == [(-1, 5, 3, 12), (1, 3, 1, 10)]
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    assert_tables_equal(table, expected)


@given(tj.join_cases(kinds=("tumbling", "sliding")))
@pytest.mark.slow
def test_sort_merge_joins_match_reference_and_the_hash_join(case):
    expected, ref_metrics = reference.run(case.build(gz.StreamEnvironment()).node)
    table, metrics = run(case.build, "sort", case.parallelism)
    assert_tables_equal(table, expected)
    assert metrics["late_records"] == ref_metrics["late_records"]
    assert _join_groupings(metrics) == {"sort"}
    hashed, _ = run(case.build, "hash", case.parallelism)
    assert_tables_equal(table, hashed)


def test_big_inputs_with_many_duplicates():
    rng = np.random.default_rng(2)
    n = 20_000

    def side(offset):
        return pa.table({"ts": np.sort(rng.integers(0, 5_000, n)), "k": rng.integers(0, 3_000, n),
                         "v": np.arange(offset, offset + n)})
    left, right = side(0), side(n)

    def build(env):
        a = env.from_arrow(left.to_batches(max_chunksize=1_000), timestamp="ts")
        b = env.from_arrow(right.to_batches(max_chunksize=1_500), timestamp="ts")
        return a.join(b).where("k").equal_to("k").window(tj.SlidingEventTimeWindows.of(tj.ms(500), tj.ms(250)))
    table, metrics = run(build, "sort")
    hashed, _ = run(build, "hash")
    assert table.num_rows > 1_000 and _join_groupings(metrics) == {"sort"}
    assert_tables_equal(table, hashed)


def test_explain_shows_the_join_the_engine_runs():
    """``grizzly explain --ir`` of a window join shows the sort-merge join's IR (its compiled
    merge) by default, as the engine runs it, and the hash join's with ``--grouping hash``."""
    from pathlib import Path

    from click.testing import CliRunner

    from grizzly_py.cli import main
    example = str(Path(__file__).parent.parent / "examples" / "nexmark_joins.py")  # Q8: a tumbling join
    by_default = CliRunner().invoke(main, ["explain", example, "--ir"])
    assert by_default.exit_code == 0, by_default.output
    assert "sort-merge join" in by_default.output and "_sm_merge_join(" in by_default.output
    hashed = CliRunner().invoke(main, ["explain", example, "--ir", "--grouping", "hash"])
    assert hashed.exit_code == 0, hashed.output
    assert "sort-merge join" not in hashed.output and "_sm_merge_join(" not in hashed.output


@given(tj.join_cases(kinds=("tumbling", "sliding")))
def test_a_firing_split_across_the_workers_gives_the_same_pairs(case):
    """With a worker pool the sides sort at once, the merge runs in key ranges (groups of float
    and string keys renumbered across ranges) and the output columns gather in row ranges:
    with every threshold at its minimum, the pairs equal the reference's and the hash join's."""
    from grizzly_py.engine import join_gather, sort_kernel
    case.parallelism = 3
    expected, _ = reference.run(case.build(gz.StreamEnvironment()).node)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sort_kernel, "MERGE_SPLIT_ROWS", 2)
        mp.setattr(join_gather, "MIN_RANGE_ROWS", 1)
        table, metrics = run(case.build, "sort", case.parallelism)
    assert_tables_equal(table, expected)
    assert _join_groupings(metrics) == {"sort"}
    hashed, _ = run(case.build, "hash", case.parallelism)
    assert_tables_equal(table, hashed)
