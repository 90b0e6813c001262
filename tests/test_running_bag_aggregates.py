"""``median``, ``mode`` and ``top_k`` in running aggregates (``keyed.aggregate`` without a
window), over append-only and updating inputs: a value bag per key (aggregates/functions/
value_bag.py), whose results must be the window functions' over the key's current values.

By hand: a retraction that moves the median, changes the mode and drops a value out of the top
k; NaN, nulls, even counts, overflowing middle values, ties (strings tied on their first 8
bytes too). At random: few distinct values (ties, retractions of the extremes and the middle)
against the reference evaluator, at parallelism 1-4 and random batch sizes.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pyarrow as pa
import test_differential_updating
from hypothesis import given
from hypothesis import strategies as st
from strategies import arrow_stream
from test_updating_streams import check_against_reference, run_compiled

from grizzly_py import agg, col
from grizzly_py.list_order import order_bytes

NAN = float("nan")
BAGS = dict(m=agg.median("v"), mo=agg.mode("v"), t=agg.top_k("v", 2),
            fm=agg.median("f"), fmo=agg.mode("f"), ft=agg.top_k("f", 3), sm=agg.mode("s"))


def _rows(ids, values, floats, strings, sizes=None):
    """``id``'s rows in order (``g`` 0 for all), each with ``v``, ``f`` and ``s``."""
    return lambda env: arrow_stream(env, {"ts": pa.array(range(len(ids)), pa.int64()),
                                          "id": pa.array(ids, pa.int64()), "g": pa.array([0] * len(ids), pa.int64()),
                                          "v": pa.array(values, pa.int64()), "f": pa.array(floats, pa.float64()),
                                          "s": pa.array(strings, pa.string())}, sizes=sizes)


def _changes(build, parallelism=1):
    final, changes = run_compiled(build, parallelism)
    return final.to_pylist(), [r for r in changes.to_pylist() if r["op"] in ("+I", "+U")]


def _same(a, b) -> bool:
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    return (isinstance(a, float) and math.isnan(a) and math.isnan(b)) or a == b


# id 1 and id 3 are replaced later (deduplicate keep="last": -U of the old row, +U of the new)
IDS = [1, 2, 3, 1, 4, 5, 3]
VALUES = [5, 3, 5, 1, None, 3, 7]
FLOATS = [NAN, 1.0, 1e308, 2.0, None, 1e308, 1.0]
STRINGS = ["prefix-long-b", "a", "prefix-long-b", "prefix-long-a", None, "prefix-long-a", "a"]


def test_retractions_move_the_median_mode_and_top_k():
    """Row by row (a replaced id's -U takes its old values out, its +U puts the new ones in):
    v {5} {5,3} {5,3,5} {3,5} {3,5,1} {3,5,1} (a null: no change) {3,5,1,3} {3,1,3} {3,1,3,7};
    f holds NaN until id 1's NaN leaves, then 1e308 twice; s ties go to the smallest string,
    and "prefix-long-a"/"-b" tie on their first 8 bytes."""
    expected = [  # (m, mo, t, fm, fmo, ft, sm) of each +I/+U row
        (5.0, 5, [5], NAN, NAN, [NAN], "prefix-long-b"),
        (4.0, 3, [5, 3], NAN, 1.0, [NAN, 1.0], "a"),
        (5.0, 5, [5, 5], NAN, 1.0, [NAN, 1e308, 1.0], "prefix-long-b"),
        (4.0, 3, [5, 3], (1.0 + 1e308) * 0.5, 1.0, [1e308, 1.0], "a"),         # id 1's 5 and NaN out
        (3.0, 1, [5, 3], 2.0, 1.0, [1e308, 2.0, 1.0], "a"),                    # id 1's 1 and 2.0 in
        (3.0, 3, [5, 3], (2.0 + 1e308) * 0.5, 1e308, [1e308, 1e308, 2.0], "prefix-long-a"),
        (3.0, 3, [3, 3], 2.0, 1.0, [1e308, 2.0, 1.0], "prefix-long-a"),      # id 3's 5 out of the top 2
        (3.0, 3, [7, 3], 1.5, 1.0, [1e308, 2.0, 1.0], "a"),
    ]
    for parallelism, sizes in ((1, None), (3, [1] * 7), (2, [3, 0, 4])):
        def build(env):
            rows = _rows(IDS, VALUES, FLOATS, STRINGS, sizes)(env)
            return rows.key_by("id").deduplicate(keep="last").key_by("g").aggregate(**BAGS)
        final, rows = _changes(build, parallelism)
        got = [tuple(r[n] for n in BAGS) for r in rows]
        assert len(got) == len(expected), got
        for g, e in zip(got, expected):
            assert all(map(_same, g, e)), f"{g} != expected {e}"
        assert all(_same(final[0][n], v) for n, v in zip(BAGS, expected[-1]))
        check_against_reference(build, ["g"], parallelism)


def test_even_counts_ties_and_nulls_over_an_append_only_input():
    """Append-only: every value stays. An even count's median is the mean of the middle values
    (1e308 and 1e308: 1e308, not inf); all-null values give a null median and mode and an empty
    top k."""
    def build(env):
        return _rows([1, 2, 3, 4, 5], [None, 4, 2, 4, 2], [None, 1e308, 1e308, -0.0, 0.0],
                     [None, "b", "a", "b", "a"], sizes=[1, 2, 2])(env).key_by("g").aggregate(**BAGS)
    final, rows = _changes(build)
    got = [tuple(r[n] for n in BAGS) for r in rows]
    assert got[0] == (None, None, [], None, None, [], None)
    assert got[-1] == (3.0, 2, [4, 4], 1e308 / 2, 0.0, [1e308, 1e308, 0.0], "a")
    assert [r["m"] for r in rows] == [None, 4.0, 3.0, 4.0, 3.0]
    assert rows[2]["fm"] == 1e308
    check_against_reference(build, ["g"], 2)


def test_negative_zero_counts_as_zero():
    """The median of -0.0 is 0.0 (the bag keeps order keys, -0.0's being 0.0's), so a 0.0
    joining it changes nothing; the reference agrees."""
    def build(env):
        return _rows([1, 2], [None] * 2, [-0.0, 0.0], [None] * 2)(env).key_by("g").aggregate(fm=agg.median("f"))
    final, rows = _changes(build)
    assert [math.copysign(1.0, r["fm"]) for r in rows] == [1.0]
    check_against_reference(build, ["g"], 1)


@st.composite
def updates(draw):
    """Rows of ids 0-5 in groups 0-1 (an id's later row replaces its earlier one when the input
    is a last-row deduplication), few distinct values with nulls (ints), NaN, infinities and
    -0.0 (floats), strings tied on their first 8 bytes; cut into random batches."""
    n = draw(st.integers(1, 30))
    column = lambda values: draw(st.lists(st.sampled_from(values), min_size=n, max_size=n))  # noqa: E731
    data = {"ts": pa.array(range(n), pa.int64()), "id": pa.array(column(range(6)), pa.int64()),
            "g": pa.array(column([0, 1]), pa.int64()),
            "v": pa.array(column([None, -3, 0, 1, 2, 2**62]), pa.int64()),
            "f": pa.array(column([None, NAN, -math.inf, -0.0, 0.0, 0.5, 1e308]), pa.float64()),
            "s": pa.array(column([None, "", "a", "prefix-long-a", "prefix-long-b", "é"]), pa.string())}
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))
    sizes = [b - a for a, b in zip([0] + cuts, cuts + [n])]
    return data, sizes, draw(st.booleans()), draw(st.integers(1, 4))


@given(updates(), st.sampled_from([1, 2, 4]))
def test_random_updates_match_the_reference(case, k):
    data, sizes, updating, parallelism = case
    aggregates = {**BAGS, "t": agg.top_k("v", k), "w": agg.median(col("v"), where=col("f") > 0)}

    def build(env):
        stream = arrow_stream(env, data, sizes=sizes)
        if updating:
            stream = stream.key_by("id").deduplicate(keep="last")
        return stream.key_by("g").aggregate(**aggregates)
    check_against_reference(build, ["g"], parallelism)


def test_top_k_lists_without_their_key_match_the_reference():
    """Without the key column, the changelog's rows are compared in any order and its final
    table groups whole rows: both by the top_k list."""
    def build(env):
        data = {"ts": pa.array(range(6), pa.int64()), "k": pa.array([1, 1, 2, 1, 2, 3], pa.int64()),
                "v": pa.array([3, 1, 2, 5, 2, 3], pa.int64())}
        return arrow_stream(env, data, sizes=[2, 4]).key_by("k").aggregate(t=agg.top_k("v", 2)).select("t")
    test_differential_updating.check_against_reference(SimpleNamespace(build=build, keys=None, parallelism=2))

def _list_order(values: list | None) -> tuple:
    """How a final table orders a list (nulls last): element by element, a null element after
    every number, -0.0 before 0.0, NaN after +inf; a list before the longer lists it begins."""
    def element(x):
        if x is None:
            return (2,)
        if isinstance(x, float) and math.isnan(x):
            return (1,)
        return (0, x, math.copysign(1.0, x) if isinstance(x, float) else 0)
    return (1,) if values is None else (0, tuple(element(x) for x in values))


@given(st.lists(st.none() | st.lists(st.none() | st.sampled_from([NAN, -math.inf, -1.5, -0.0, 0.0, 2.0, 1e308]),
                                     max_size=3), max_size=12))
def test_final_tables_group_and_sort_lists_by_their_elements(lists):
    """``list_order.order_bytes``: equal bytes where the lists are equal (NaN equal to NaN),
    byte order the lists' order."""
    encoded = order_bytes(pa.array(lists, pa.list_(pa.float64()))).to_pylist()
    ranks = sorted(range(len(lists)), key=lambda i: _list_order(lists[i]))
    for a, b in zip(ranks, ranks[1:]):
        equal = _list_order(lists[a]) == _list_order(lists[b])
        if lists[a] is None or lists[b] is None:
            assert (encoded[a] is None) == (lists[a] is None) and (encoded[b] is None) == (lists[b] is None)
            continue
        assert (encoded[a] == encoded[b]) == equal and (encoded[a] <= encoded[b]), (lists[a], lists[b])
