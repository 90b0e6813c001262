"""``IncrementalQuery``: a query fed batch after batch, its state carried between calls as bytes
(what Spark streaming's sequential strategy keeps in Spark's state store). A fresh instance per
batch, restored from the bytes the one before left, gives the reference evaluator's results."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import arrow_stream, assert_tables_equal, query_cases, tumbling

import grizzly_py as gz
from grizzly_py import Time, agg, col, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.changelog import sorted_rows
from grizzly_py.engine.checkpoint import CheckpointError
from grizzly_py.engine.incremental import IncrementalQuery
from grizzly_py.engine import snapshot
from grizzly_py.engine.snapshot import SnapshotError
from grizzly_py.plan import Query, distinct_sources
from grizzly_py.windows import EventTimeSessionWindows

i64 = pa.int64()


def run_incrementally(node, batches, adaptive=True) -> pa.Table:
    """Each batch in a fresh ``IncrementalQuery`` restored from the previous one's bytes, then
    the end of the input in one more."""
    return run_rounds(node, [[b] for b in batches], adaptive)


def run_rounds(node, rounds: list[list], adaptive=True) -> pa.Table:
    """Each round (one batch per source, None: none) in a fresh ``IncrementalQuery`` restored from
    the previous one's bytes, then the end of the input in one more."""
    query, state, parts = Query(node), None, []
    for batches in rounds + [None]:
        job = IncrementalQuery(query, adaptive)
        try:
            job.restore(state)
            parts.append(job.feed_round(batches) if batches is not None else job.finish())
            state = job.snapshot()
        finally:
            job.close()
    return pa.concat_tables(parts)


@given(case=query_cases(max_rows=30, max_repeat=2))
@pytest.mark.slow
def test_batch_after_batch_equals_the_reference(case):
    node = case.build(gz.StreamEnvironment()).node
    try:
        expected, _ = reference.run(node)
    except AggregateOverflowError:
        with pytest.raises(AggregateOverflowError):
            run_incrementally(node, case.batches())
        return
    assert_tables_equal(run_incrementally(node, case.batches()), expected)


@given(case=query_cases(max_rows=30, max_repeat=2, count_windows=True))
@pytest.mark.slow
def test_count_windows_batch_after_batch(case):
    node = case.build(gz.StreamEnvironment()).node
    try:
        expected, _ = reference.run(node)
    except AggregateOverflowError:
        return
    assert_tables_equal(run_incrementally(node, case.batches()), expected)


def test_sessions_and_a_window_after_a_window():
    data = {"ts": pa.array([1, 3, 30, 31, 7, 60, 62, 95, 140, 141], i64),
            "k": pa.array([1, 2, 1, 1, 2, 1, 2, 2, 1, 1], i64), "v": pa.array(range(10), i64)}
    sizes = [3, 3, 2, 2]
    for build in (
        lambda env: arrow_stream(env, data, sizes=sizes, bound=10).key_by("k")
        .window(EventTimeSessionWindows.with_gap(Time.milliseconds(20))).aggregate(n=agg.count(), s=agg.sum(col("v"))),
        lambda env: arrow_stream(env, data, sizes=sizes, bound=10).key_by("k").window(tumbling(20))
        .aggregate(n=agg.count()).key_by("n").window(tumbling(60)).aggregate(c=agg.count()),
    ):
        node = build(gz.StreamEnvironment()).node
        batches = list(node_source_batches(node))
        expected, _ = reference.run(node)
        assert_tables_equal(run_incrementally(node, batches), expected)


@settings(max_examples=30)  # (each example runs every batch in three groups)
@given(rows=st.lists(st.tuples(st.integers(0, 300), st.one_of(st.none(), st.integers(0, 5))), min_size=1, max_size=40),
       cuts=st.lists(st.integers(0, 40), max_size=5), gap=st.integers(1, 40), bound=st.integers(0, 30))
def test_sessions_by_key_group_with_the_streams_watermark_equal_one_group(rows, cuts, gap, bound):
    """A session window run on each key group's rows apart (as Spark's ``keyed+stream`` does),
    each group told every batch's largest event time (``feed_round``'s ``latest``), emits before the end of the
    input the rows one instance fed every row emits, and counts the same late records."""
    import numpy as np
    data = {"ts": pa.array([t for t, _ in rows], i64), "k": pa.array([k for _, k in rows], i64)}
    edges = [0] + sorted(min(c, len(rows)) for c in cuts) + [len(rows)]
    sizes = [b - a for a, b in zip(edges, edges[1:])]
    node = arrow_stream(gz.StreamEnvironment(), data, sizes=sizes, bound=bound).key_by("k") \
        .window(EventTimeSessionWindows.with_gap(Time.milliseconds(gap))).aggregate(n=agg.count(), t=agg.max("ts")).node
    batches = list(node_source_batches(node))
    whole = IncrementalQuery(Query(node))
    try:
        expected = pa.concat_tables([whole.feed(b) for b in batches])
        late = whole.metrics()["late_records"]
    finally:
        whole.close()
    states, parts, late_by_group = [None, None, None], [], 0
    for b in batches:
        groups = np.array([hash(k) % 3 for k in b.column("k").to_pylist()])
        for g in range(3):
            job = IncrementalQuery(Query(node))
            try:
                job.restore(states[g])
                parts.append(job.feed_round([b.filter(pa.array(groups == g))],
                                            latest=[pa.compute.max(b.column("ts")).as_py()]))
                states[g] = job.snapshot()
                if b is batches[-1]:
                    late_by_group += job.metrics()["late_records"]
            finally:
                job.close()
    assert_tables_equal(sorted_rows(pa.concat_tables(parts)), sorted_rows(expected))
    assert late_by_group == late


TWO_STREAMS = {  # queries over two streams that Spark runs by key group (the key: "k" of each)
    "window_join": lambda a, b: a.join(b.select(col("k").alias("k2"), col("ts").alias("ts2"), col("v").alias("v2")))
    .where("k").equal_to("k2").window(tumbling(20)).select("k", "v", "v2"),
    "interval_join": lambda a, b: a.interval_join(b.select(col("k").alias("k2"), col("ts").alias("ts2")))
    .where("k").equal_to("k2").between(Time.milliseconds(-8), Time.milliseconds(5)),
    "union_tumbling": lambda a, b: a.union(b.with_columns(v=col("v") * 2)).key_by("k").window(tumbling(20))
    .aggregate(n=agg.count(), s=agg.sum("v")),
    "union_session": lambda a, b: a.union(b).filter(col("v") % 5 != 0).key_by("k")
    .window(EventTimeSessionWindows.with_gap(Time.milliseconds(15))).aggregate(n=agg.count(), t=agg.max("ts")),
}

_stream_rows = st.lists(st.tuples(st.integers(0, 200), st.one_of(st.none(), st.integers(0, 5))), max_size=30)


@settings(max_examples=25, deadline=None)  # (each example runs every round in three groups)
@given(kind=st.sampled_from(sorted(TWO_STREAMS)), left=_stream_rows, right=_stream_rows,
       cuts=st.lists(st.integers(0, 30), max_size=4), bound=st.integers(0, 20))
def test_two_streams_by_key_group_with_each_streams_watermark_equal_one_group(kind, left, right, cuts, bound):
    """A join or union of two streams run on each key group's rows apart (as Spark's
    ``keyed+stream`` over several streams does), each group told, right after each stream's part
    of a round, that stream's largest event time in the whole round (``feed_round``'s
    ``latest``), emits before the end of the input the rows one instance fed every row emits, and
    counts the same records in, filtered and late; one instance's rows, with those of the end of
    the input, are the reference evaluator's. Rounds leave a stream out at times (its watermark
    stays)."""
    import numpy as np

    def data(rows):
        return {"ts": pa.array([t for t, _ in rows], i64), "k": pa.array([k for _, k in rows], i64),
                "v": pa.array(range(len(rows)), i64)}

    def cut(rows, shift):  # the same number of batches for both streams (empty ones too)
        edges = [0] + sorted(min((c + shift) % 31, len(rows)) for c in cuts) + [len(rows)]
        return [b - a for a, b in zip(edges, edges[1:])]
    env = gz.StreamEnvironment()
    a, b = (arrow_stream(env, data(rows), sizes=cut(rows, shift), bound=bound)
            for rows, shift in ((left, 0), (right, 7)))
    node = TWO_STREAMS[kind](a, b).node
    rounds = list(zip(*(s.batches() for s in distinct_sources(node))))
    counted = ("records_in", "filtered_records", "late_records")
    whole = IncrementalQuery(Query(node))
    try:
        expected = pa.concat_tables([whole.feed_round(list(r)) for r in rounds])
        metrics = {c: whole.metrics()[c] for c in counted}
        # (the rows after the end of the input too: the reference evaluator's)
        finished = pa.concat_tables([expected, whole.finish()])
    finally:
        whole.close()
    assert_tables_equal(sorted_rows(finished), sorted_rows(reference.run(node)[0]))
    states, parts, by_group = [None] * 3, [], dict.fromkeys(counted, 0)
    for r in rounds:
        latest = [pa.compute.max(batch.column("ts")).as_py() for batch in r]
        for g in range(3):
            job = IncrementalQuery(Query(node))
            try:
                job.restore(states[g])
                before = job.metrics()
                mine = [batch.filter(pa.array(np.array([hash(k) % 3 == g for k in batch.column("k").to_pylist()],
                                                       bool))) for batch in r]
                parts.append(job.feed_round(mine, latest=latest))
                after = job.metrics()
                states[g] = job.snapshot()
                for c in counted:
                    by_group[c] += after[c] - before[c]
            finally:
                job.close()
    assert_tables_equal(sorted_rows(pa.concat_tables(parts)), sorted_rows(expected))
    assert by_group == metrics


def node_source_batches(node):
    from grizzly_py.plan import distinct_sources
    (source,) = distinct_sources(node)
    return source.batches()


def test_state_of_another_query_or_corrupt_bytes_are_refused():
    data = {"ts": pa.array([1, 2, 3], i64), "k": pa.array([1, 1, 2], i64)}
    one = arrow_stream(gz.StreamEnvironment(), data).key_by("k").window(tumbling(10)).aggregate(n=agg.count()).node
    other = arrow_stream(gz.StreamEnvironment(), data).key_by("k").count_window(2).aggregate(n=agg.count()).node
    job = IncrementalQuery(Query(one))
    job.feed(next(iter(node_source_batches(one))))
    state = job.snapshot()
    job.close()
    with pytest.raises(CheckpointError, match="another query"):
        job = IncrementalQuery(Query(other))
        try:
            job.restore(state)
        finally:
            job.close()
    with pytest.raises(SnapshotError):
        job = IncrementalQuery(Query(one))
        try:
            job.restore(state[:-3] + b"xyz")
        finally:
            job.close()


def test_state_saved_under_another_state_layout_is_refused():
    # a float sum's state grew a word (its compensation): state saved with the old layout must
    # not be read with the new offsets (session windows read past their nodes, count windows
    # failed in numpy), but refused
    data = {"ts": pa.array([1, 2, 3], i64), "k": pa.array([1, 1, 2], i64), "v": [0.5, 1.5, 2.5]}
    for window in (lambda s: s.key_by("k").window(EventTimeSessionWindows.with_gap(Time.milliseconds(5))),
                   lambda s: s.key_by("k").count_window(2, 1)):
        node = window(arrow_stream(gz.StreamEnvironment(), data)).aggregate(s=agg.sum("v"), m=agg.avg("v")).node
        job = IncrementalQuery(Query(node))
        try:
            job.feed(next(iter(node_source_batches(node))))
            state = job.snapshot()
        finally:
            job.close()
        doc = snapshot.decode(state)
        layout = doc["shape"][0][3]
        assert layout is not None and layout[1] >= 24  # (entry bytes: the layout is in the shape)
        layout[1] -= 8  # as the layout before: one word less per float sum
        layout[2] = [[name, func, off - 8 if i else off] for i, (name, func, off) in enumerate(layout[2])]
        job = IncrementalQuery(Query(node))
        try:
            with pytest.raises(CheckpointError, match="state layout differs"):
                job.restore(snapshot.encode(doc))
            job.restore(state)  # (the untouched state is taken)
        finally:
            job.close()


def _cut(rows: list[tuple[int, int]], cuts: list[int], rounds: int) -> list[pa.RecordBatch]:
    """``rows`` as ``rounds`` batches cut at ``cuts`` (empty batches where cuts repeat)."""
    table = pa.table({"ts": pa.array([r[0] for r in rows], i64), "k": pa.array([r[1] for r in rows], i64)})
    bounds = [0] + sorted(min(c, len(rows)) for c in cuts)[:rounds - 1]
    bounds += [len(rows)] * (rounds + 1 - len(bounds))
    return [pa.record_batch(table.slice(a, b - a).to_pydict(), schema=table.schema) for a, b in zip(bounds, bounds[1:])]


_ROWS = st.lists(st.tuples(st.integers(0, 200), st.integers(0, 3)), min_size=1, max_size=25)


@settings(max_examples=40)
@given(left=_ROWS, right=_ROWS, left_cuts=st.lists(st.integers(0, 25), max_size=4),
       right_cuts=st.lists(st.integers(0, 25), max_size=4), bound=st.integers(0, 30),
       kind=st.sampled_from(["union-session", "union-tumbling", "window-join"]))
def test_two_streams_round_after_round_equal_the_reference(left, right, left_cuts, right_cuts, bound, kind):
    # a round is one batch of each stream (an empty one: that stream's watermark stays), as the
    # embedded engine's job reads them and Spark's streaming strategy feeds a micro-batch
    rounds = 1 + max(len(left_cuts), len(right_cuts))
    lb, rb = _cut(left, left_cuts, rounds), _cut(right, right_cuts, rounds)
    env = gz.StreamEnvironment()
    watermark = gz.WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(bound))
    a = env.from_arrow(lb, timestamp="ts", watermark=watermark)
    b = env.from_arrow(rb, timestamp="ts", watermark=watermark)
    if kind == "union-session":
        q = a.union(b).key_by("k").window(EventTimeSessionWindows.with_gap(Time.milliseconds(15))) \
            .aggregate(n=agg.count(), s=agg.sum(col("ts")))
    elif kind == "union-tumbling":
        q = a.union(b).key_by("k").window(tumbling(40)).aggregate(n=agg.count()) \
            .key_by("n").window(tumbling(80)).aggregate(c=agg.count())
    else:
        q = a.join(b.select(col("k").alias("k2"), col("ts").alias("ts2"))).where("k").equal_to("k2") \
            .window(tumbling(50)).key_by("k").window(tumbling(50)).aggregate(n=agg.count())
    node = q.node
    expected, _ = reference.run(node)
    assert expected.num_rows > 0 or kind == "window-join"
    actual = run_rounds(node, [[x, y] for x, y in zip(lb, rb)])
    assert_tables_equal(actual, expected)
    # the engine's own job reads the same rounds
    assert_tables_equal(q.execute_and_collect(), expected)


def test_a_round_has_one_batch_per_source():
    data = {"ts": pa.array([1, 2], i64), "k": pa.array([1, 2], i64)}
    env = gz.StreamEnvironment()
    node = arrow_stream(env, data).union(arrow_stream(env, data)).key_by("k").window(tumbling(10)) \
        .aggregate(n=agg.count()).node
    job = IncrementalQuery(Query(node))
    try:
        assert len(job.sources) == 2
        with pytest.raises(ValueError, match="2 batches, got 1"):
            job.feed_round([pa.record_batch(data)])
    finally:
        job.close()
