"""Compiled keyed count windows (``keyed.count_window(size[, slide])``), sliding ones above all.

Sliding count windows run on count panes of gcd(size, slide) records per key kept in a ring
(``grizzly_py/codegen/count_window.py``). Random queries over them are in
``test_differential.py`` (``test_count_window_queries_match_reference``); the cases here pin
what random data reaches rarely: windows across batch boundaries, sizes that are not multiples
of the slide, slides longer than the window, rings that grow and complete blocks many times,
int64 overflow, very long windows (constant work per record), and rings too big to compile.
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pytest
from strategies import arrow_stream
from test_differential import check_against_reference

import grizzly_py as gz
from grizzly_py import agg, col, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.reference import INT64_MAX

i64 = pa.int64()

ALL_AGGREGATES = dict(n=agg.count(), nv=agg.count("v"), s=agg.sum("v"), sf=agg.sum("f"), lo=agg.min("f"),
                      hi=agg.max("v"), mean=agg.avg("f"), vp=agg.var_pop("v"), sd=agg.stddev_samp("f"),
                      med=agg.median("f"), mo=agg.mode("v"), cd=agg.count_distinct("v"))


def data(n: int, keys: int = 3) -> dict:
    """``n`` rows: an int key with nulls, a string key, int and float values with nulls."""
    return {"ts": pa.array(range(n), i64),
            "k": pa.array([None if i % 7 == 3 else i % keys for i in range(n)], i64),
            "name": pa.array([["x", "y", None, ""][i % 4] for i in range(n)]),
            "v": pa.array([None if i % 5 == 4 else (i * 37) % 11 - 5 for i in range(n)], i64),
            "f": pa.array([None if i % 6 == 5 else ((i * 13) % 17) / 4 - 2 for i in range(n)])}


def collected(build) -> list[dict]:
    env = gz.StreamEnvironment(parallelism=1)
    build(env).collect("out")
    return env.execute()["out"].to_pylist()


def test_sliding_count_window_across_batch_boundaries_by_hand():
    def build(env):
        return (arrow_stream(env, {"ts": list(range(10)), "k": [1] * 10, "v": _i64(range(1, 11))}, sizes=[3, 0, 4, 1, 2])
                .key_by("k").count_window(4, 2).aggregate(n=agg.count(), s=agg.sum("v"), lo=agg.min("v")))
    expected = [(2, 3, 1), (4, 10, 1), (4, 18, 3), (4, 26, 5), (4, 34, 7)]
    assert [(r["n"], r["s"], r["lo"]) for r in collected(build)] == expected
    check_against_reference(build)


def test_size_not_a_multiple_of_the_slide_by_hand():
    # per key, every 2 records over the last 5: g = 1, a window is 5 panes of one record
    def build(env):
        return (arrow_stream(env, {"ts": list(range(24)), "k": [i % 2 for i in range(24)], "v": _i64(range(24))},
                             sizes=[1] * 24)
                .key_by("k").count_window(5, 2).aggregate(n=agg.count(), s=agg.sum("v"), med=agg.median("v")))
    out = collected(build)
    for key in (0, 1):
        values = [v for v in range(24) if v % 2 == key]
        fired = [values[max(0, c - 5):c] for c in range(2, len(values) + 1, 2)]
        assert [(r["n"], r["s"], r["med"]) for r in out if r["k"] == key] == \
            [(len(w), sum(w), float(np.median(w))) for w in fired]
    check_against_reference(build)


def test_slide_longer_than_the_window_skips_records_as_the_reference_does():
    # every 5 records of a key, the last 2 (Flink countWindow(2, 5))
    def build(env):
        return (arrow_stream(env, {"ts": list(range(12)), "k": [7] * 12, "v": _i64(range(12))}, sizes=[4, 4, 4])
                .key_by("k").count_window(2, 5).aggregate(s=agg.sum("v"), cd=agg.count_distinct("v")))
    assert [(r["s"], r["cd"]) for r in collected(build)] == [(3 + 4, 2), (8 + 9, 2)]
    check_against_reference(build)


BATCHINGS = [None, [1] * 40, [7, 0, 13, 20]]


@pytest.mark.parametrize("n,size,slide", [(n, *g) for n, g in enumerate([(2, 1), (3, 2), (4, 2), (5, 3), (6, 4), (2, 5),
                                                                       (3, 7), (1, 2), (12, 1)])])
def test_every_aggregate_with_null_string_and_composite_keys_matches_reference(n, size, slide):
    sizes, keys = BATCHINGS[n % 3], (("k",), ("name",), ("k", "name"))[n // 3 % 3]
    check_against_reference(lambda env: arrow_stream(env, data(40), sizes=sizes)
                            .key_by(*keys).count_window(size, slide).aggregate(**ALL_AGGREGATES))


def test_dictionary_string_and_float_keys_match_reference():
    d = data(30)
    d["name"] = d["name"].dictionary_encode()
    d["fk"] = pa.array([[0.0, -0.0, float("nan"), None, 1.5][i % 5] for i in range(30)])
    for keys in (("name",), ("fk",), ("fk", "name")):
        check_against_reference(lambda env: arrow_stream(env, d, sizes=[11, 19])
                                .key_by(*keys).count_window(4, 3).aggregate(**ALL_AGGREGATES))


@pytest.mark.slow
def test_rings_grow_and_complete_many_blocks():
    # 100 panes per window, 600 records per key: the ring grows 4, 8, ..., 100 slots and its
    # blocks of 100 panes turn into suffix states 6 times
    n = 1200
    d = data(n, keys=2)
    d["k"] = pa.array([i % 2 for i in range(n)], i64)
    aggregates = {name: a for name, a in ALL_AGGREGATES.items() if name not in ("vp", "sd")}  # exact in the reference: slow
    for size, slide in ((100, 3), (100, 1), (300, 60)):
        check_against_reference(lambda env: arrow_stream(env, d, sizes=[500, 1, 699])
                                .key_by("k").count_window(size, slide).aggregate(**aggregates))


def test_filters_and_downstream_operators():
    check_against_reference(lambda env: arrow_stream(env, data(60), sizes=[25, 35])
                            .filter(col("v") != 0).key_by("k").count_window(6, 4)
                            .aggregate(n=agg.count(), s=agg.sum("v"), med=agg.median("f"))
                            .filter(col("n") > 2).select("k", "s", total=col("s") * 2))


def test_sum_overflow_in_a_sliding_count_window_is_an_aggregate_overflow():
    t = pa.table({"ts": _i64([1, 2, 3]), "k": [1, 1, 1], "v": _i64([INT64_MAX, 1, -1])})
    q = gz.StreamEnvironment().from_arrow(t, timestamp="ts").key_by("k").count_window(3, 1).aggregate(s=agg.sum("v"))
    with pytest.raises(AggregateOverflowError, match="'s'"):
        q.execute_and_collect()


def test_int_sums_that_overflow_only_inside_panes_are_exact():
    # panes of 3 records wrap around in between (INT64_MAX + 1), every window fits in int64
    values = [INT64_MAX, 1, -2, 1, -2, 1, -5, 3, 1, -INT64_MAX, 2, -1]
    check_against_reference(lambda env: arrow_stream(env, {"ts": list(range(12)), "k": [0] * 12, "v": _i64(values)},
                                                     sizes=[5, 7])
                            .key_by("k").count_window(6, 3).aggregate(s=agg.sum("v"), a=agg.avg("v")))


def test_a_long_window_costs_constant_work_per_record():
    # 50,000 records per window, a window every record: merging the window's panes at every
    # firing would take ~10^10 merges; the prefix/suffix states take a few per record
    n, size = 200_000, 50_000
    v = np.random.default_rng(7).integers(-1000, 1000, n)
    t = pa.table({"ts": pa.array(np.arange(n), i64), "k": pa.array(np.zeros(n, dtype=np.int64)), "v": pa.array(v)})
    start = time.perf_counter()
    out = (gz.StreamEnvironment().from_arrow(t.to_batches(max_chunksize=30_000), timestamp="ts")
           .key_by("k").count_window(size, 1).aggregate(s=agg.sum("v"), lo=agg.min("v"), hi=agg.max("v"))
           .execute_and_collect())
    assert time.perf_counter() - start < 60
    assert out.num_rows == n
    csum = np.concatenate([[0], np.cumsum(v)])
    for c in [1, 2, size - 1, size, size + 1, 2 * size, 123_457, n]:  # the window fired by record c
        window = v[max(0, c - size):c]
        assert (out["s"][c - 1].as_py(), out["lo"][c - 1].as_py(), out["hi"][c - 1].as_py()) == \
            (int(csum[c] - csum[max(0, c - size)]), int(window.min()), int(window.max()))


def test_a_million_panes_per_key_start_small():
    # the ring grows with the key's records, so a huge window over few records is cheap
    check_against_reference(lambda env: arrow_stream(env, data(50), sizes=[20, 30])
                            .key_by("k").count_window(1_000_000, 1).aggregate(**ALL_AGGREGATES))


def test_rings_too_big_for_a_key_are_rejected_when_compiling():
    q = (gz.StreamEnvironment().from_arrow(pa.table({"ts": _i64([1]), "k": _i64([1])}), timestamp="ts")
         .key_by("k").count_window(1 << 40, 1).aggregate(n=agg.count()))
    with pytest.raises(NotImplementedError, match=r"1099511627776 panes .* per key"):
        q.execute_and_collect()
    assert reference.evaluate(q.node).num_rows == 1  # the reference has no such limit


def test_tumbling_count_windows_are_unchanged():
    check_against_reference(lambda env: arrow_stream(env, data(40), sizes=[9, 31])
                            .key_by("k", "name").count_window(3).aggregate(**ALL_AGGREGATES))


def _i64(values):
    return pa.array(list(values), i64)


def test_last_of_a_computed_string_orders_by_event_time():
    # the computed string is materialized before the count window; the event time goes with it
    def build(env):
        data = {"ts": pa.array([5, 1, 3, 2], i64), "k": pa.array([1, 1, 1, 1], i64), "s": ["a", "b", "c", "d"]}
        return (arrow_stream(env, data, sizes=[2, 2]).with_columns(u=gz.concat_str(col("s"), gz.lit("!")))
                .key_by("k").count_window(3).aggregate(la=agg.last("u"), fi=agg.first("u")))
    assert collected(build) == [dict(k=1, la="a!", fi="b!")]
    check_against_reference(build)
