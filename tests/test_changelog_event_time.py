"""An event-time window over an updating stream's ``.changelog()``: each changelog row carries
the event time of the record that made it (``+I``, ``-U`` and ``+U`` of one record alike, ``-D``
that of the retraction), and the changelog's watermark is its input's (docs/semantics.md,
"Updating streams"). Hand-written edge cases, compiled against the reference evaluator; the
random plans of test_differential_updating.py draw such windows too."""

from __future__ import annotations

import pyarrow as pa
import pytest
from strategies import arrow_stream, assert_tables_equal, tumbling

import grizzly_py as gz
from grizzly_py import agg, col, reference

TS = [0, 1, 5, 7, 12, 3, 14, 6, 20, 9]
KEYS = [1, 1, 2, 1, 2, 2, 1, 3, 3, 1]
VALUES = [4, 9, 2, 9, 1, 7, 3, 5, 8, 6]

# updating streams, each with the row kinds it makes
UPDATING = {
    "running aggregate": lambda s: s.key_by("k").aggregate(n=agg.count(), hi=agg.max("v")),
    "last rows": lambda s: s.key_by("k").deduplicate(keep="last"),
    "top 2": lambda s: s.key_by("k").top_n(2, by="v"),
    "top 2, descending, all keys": lambda s: s.with_columns(one=col("k") * 0).key_by("one").top_n(
        2, by="v", descending=True).select("ts", "k", "v", "rank"),
    "aggregate of an aggregate (-D)": lambda s: (s.key_by("k").aggregate(hi=agg.max("v"))
                                                  .key_by("hi").aggregate(n=agg.count())),
}


def _windowed(changelog):
    """Per row kind and 5 ms window: how many changelog rows, and order-free aggregates of them."""
    return (changelog.key_by("op").window(tumbling(5))
            .aggregate(c=agg.count(), lo=agg.min("x"), hi=agg.max("x")))


def _check(build, parallelism: int) -> pa.Table:
    expected, expected_metrics = reference.run(build(gz.StreamEnvironment()).node)
    env = gz.StreamEnvironment(parallelism=parallelism)
    build(env).collect("out")
    result = env.execute()
    assert_tables_equal(result["out"], expected)
    query = next(q for q in result.metrics["queries"] if q["sink"] == "out")
    for name in ("records_in", "records_out", "late_records"):
        assert query[name] == expected_metrics[name], name
    return expected


@pytest.mark.parametrize("operator", sorted(UPDATING))
@pytest.mark.parametrize("sizes,bound", [(None, 0), ([1] * len(TS), 0), ([3, 0, 4, 3], 4)],
                         ids=["one batch", "a batch per row (late rows)", "batches, bound 4"])
@pytest.mark.parametrize("parallelism", [1, 2, 3, 4])
def test_a_window_over_a_changelog_counts_each_row_at_its_records_time(operator, sizes, bound, parallelism):
    """Out-of-order input: with a batch per row and no bound, records behind the watermark make
    changelog rows that are late for the window (counted, not windowed), as in the reference."""
    def build(env):
        data = {"ts": pa.array(TS, pa.int64()), "k": pa.array(KEYS, pa.int64()), "v": pa.array(VALUES, pa.int64())}
        updating = UPDATING[operator](arrow_stream(env, data, sizes=sizes, bound=bound))
        # a column computed from a changelog row: the window's minimum/maximum of it are order-free
        return _windowed(updating.changelog().with_columns(x=col(updating.schema.names[-1])))
    expected = _check(build, parallelism)
    assert expected.num_rows > 0


@pytest.mark.parametrize("parallelism", [1, 3])
def test_records_of_one_time_make_rows_of_that_time(parallelism):
    """Ties: every record at the same time; a later arrival of equal time takes a last row's place."""
    def build(env):
        data = {"ts": pa.array([5] * 6, pa.int64()), "k": pa.array([1, 2, 1, 1, 2, 1], pa.int64()),
                "v": pa.array([1, 2, 3, 4, 5, 6], pa.int64())}
        changes = arrow_stream(env, data, sizes=[2, 4]).key_by("k").deduplicate(keep="last").changelog()
        return changes.key_by("op").window(tumbling(5)).aggregate(c=agg.count(), s=agg.sum("v"))
    expected = _check(build, parallelism)
    assert expected.column("c").to_pylist() == [2, 4, 4]  # +I, +U, -U: each key's first, then 3 + 1 replaced


@pytest.mark.parametrize("parallelism", [1, 2])
def test_an_empty_input_makes_an_empty_windowed_changelog(parallelism):
    def build(env):
        data = {"ts": pa.array([], pa.int64()), "k": pa.array([], pa.int64())}
        return (arrow_stream(env, data).key_by("k").aggregate(n=agg.count()).changelog()
                .window_all(tumbling(5)).aggregate(c=agg.count()))
    assert _check(build, parallelism).num_rows == 0


def test_a_changelog_row_keeps_its_time_through_a_filter_before_the_aggregate():
    """A filter before the running aggregate runs in the pipeline before it: the records it drops
    make no rows, and the others' rows keep their own times."""
    def build(env):
        data = {"ts": pa.array(TS, pa.int64()), "k": pa.array(KEYS, pa.int64()), "v": pa.array(VALUES, pa.int64())}
        return (arrow_stream(env, data, sizes=[4, 6], bound=10).filter(col("v") > 3).key_by("k")
                .aggregate(s=agg.sum("v")).changelog().window_all(tumbling(4)).aggregate(c=agg.count(), s=agg.sum("s")))
    assert _check(build, 2).num_rows > 0


def _changelog_and_source(env):
    data = {"ts": pa.array(TS, pa.int64()), "k": pa.array(KEYS, pa.int64())}
    changes = arrow_stream(env, data, sizes=[1] * len(TS), bound=3).key_by("k").aggregate(n=agg.count()).changelog()
    return changes, arrow_stream(env, data, bound=3)


@pytest.mark.parametrize("reader", [
    lambda changes, _: changes.key_by("op").over(rows_preceding=2).aggregate(s=agg.sum("n")),
    lambda changes, source: changes.key_by("k").interval_join(source.key_by("k")).between(
        gz.Time.milliseconds(-2), gz.Time.milliseconds(2)),
], ids=["OVER aggregate", "interval join"])
@pytest.mark.parametrize("parallelism", [1, 3])
def test_other_readers_of_event_time_see_the_changelog_rows_times(reader, parallelism):
    """An OVER aggregate orders (and a join pairs) changelog rows by their records' times; rows
    of records behind the watermark are late there too."""
    expected = _check(lambda env: reader(*_changelog_and_source(env)), parallelism)
    assert expected.num_rows > 0
