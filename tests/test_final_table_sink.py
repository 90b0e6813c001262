"""The collecting sink of an updating stream with a unique key (``engine/upsert.py``): it keeps the
last row per key instead of the changelog, and must return exactly ``changelog.final_table`` of
that changelog.

- ``LastRowPerKey`` against ``final_table`` on random changelogs of unique-key streams (a key's
  rows put in and taken out in turn, as a filter after an aggregate leaves them: a ``-U`` whose
  ``+U`` was filtered out, a ``+U`` whose ``-U`` was), in random batches, compacting often.
- ``unique_key`` of plans: which operators after an aggregate keep its key; a Top-N's (keys,
  rank), its keys alone when ``n == 1``.
- Compiled queries (random running aggregates, deduplications and Top-Ns, a random stateless step
  after them, parallelism 1-4, random batchings): the final table equals ``final_table`` of the
  changelog the same job collects, and the reference; also after crashes and restarts.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import assert_tables_equal, stateless_steps
from test_checkpoint import _data, run_with_crashes
from test_top_n import top_n_cases
from test_updating_streams import (_last_rows, _running, deduplicate_cases, running_aggregate_cases,
                                   run_compiled)

import grizzly_py as gz
from grizzly_py import agg, col, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.changelog import DELETE, INSERT, OP_COLUMN, UPDATE_AFTER, UPDATE_BEFORE, final_table, with_kind_column
from grizzly_py.engine.sinks import CollectSink, CsvSink, FinalTableSink, open_sink
from grizzly_py.engine.upsert import LastRowPerKey, unique_key
from grizzly_py.plan import SinkSpec

SCHEMA = pa.schema([("k", pa.int64()), ("s", pa.string()), ("v", pa.int64()), (OP_COLUMN, pa.int64())])


@st.composite
def unique_key_changelogs(draw):
    """A changelog of a stream keyed by (k, s) (nulls among them), and its split into batches."""
    live: dict = {}  # key -> the row put in and not taken out since
    rows = []
    for _ in range(draw(st.integers(0, 60))):
        key = (draw(st.sampled_from([0, 1, 2, None])), draw(st.sampled_from(["a", "b", None])))
        new = (*key, draw(st.one_of(st.none(), st.integers(0, 3))))
        old = live.pop(key, None)
        if old is None:
            rows.append((*new, draw(st.sampled_from([INSERT, UPDATE_AFTER]))))  # (+U: its -U filtered out)
            live[key] = new
            continue
        what = draw(st.sampled_from(["update", "delete", "retract only"]))
        rows.append((*old, DELETE if what == "delete" else UPDATE_BEFORE))
        if what == "update":
            rows.append((*new, UPDATE_AFTER))
            live[key] = new
    table = pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA)
    cuts = sorted(draw(st.lists(st.integers(0, len(rows)), max_size=6)))
    bounds = [0, *cuts, len(rows)]
    return table, [table.slice(a, b - a) for a, b in zip(bounds, bounds[1:])]


@given(unique_key_changelogs(), st.integers(1, 8), st.booleans())
def test_last_row_per_key_is_the_final_table(changelog, compact_min_rows, dictionary):
    table, parts = changelog
    schema = SCHEMA
    if dictionary:  # a dictionary column: each batch with its own dictionary
        schema = SCHEMA.set(1, pa.field("s", pa.dictionary(pa.int32(), pa.string())))
        parts = [p.set_column(1, "s", p.column("s").dictionary_encode()) for p in parts]
    kept = LastRowPerKey(schema, ("k", "s"), compact_min_rows)
    for part in parts:
        for batch in part.cast(schema).to_batches():
            kept.add(batch)
    expected = final_table(pa.concat_tables([p.cast(schema) for p in parts]) if parts else schema.empty_table())
    assert kept.table().cast(expected.schema).equals(expected)


def test_open_sink_keeps_rows_by_key_only_for_a_collected_updating_stream(tmp_path):
    collect = SinkSpec("collect", "out")
    assert isinstance(open_sink(collect, SCHEMA, ("k", "s")), FinalTableSink)
    assert type(open_sink(collect, SCHEMA)) is CollectSink
    assert type(open_sink(collect, SCHEMA, ("k", "gone"))) is CollectSink
    assert type(open_sink(collect, SCHEMA.remove(3), ("k",))) is CollectSink  # append-only
    csv = open_sink(SinkSpec("csv", "out", str(tmp_path / "out.csv")), SCHEMA, ("k",))
    try:  # a file sink writes the changelog, whatever the key
        assert isinstance(csv, CsvSink) and csv.file_schema.names[0] == "op"
    finally:
        csv.abort()


def _aggregate(env):
    data = pa.table({"k": pa.array([1, 2, 1], pa.int64()), "v": pa.array([3, 4, 5], pa.int64())})
    return env.from_arrow(data).key_by("k").aggregate(n=agg.count(), s=agg.sum("v"))


@pytest.mark.parametrize("after, key", [
    (lambda s: s, ("k",)),
    (lambda s: s.filter(col("s") > 3).with_columns(t=col("s") * 2), ("k",)),
    (lambda s: s.select("s", key="k", again="k"), ("key",)),
    (lambda s: s.with_columns(k=col("k") % 2), None),          # the key changed
    (lambda s: s.select("s"), None),                            # the key dropped
    (lambda s: s.select("s", k=col("k") + 0), None),            # computed, not passed on
    (lambda s: s.changelog(), None),                            # append-only
])
def test_unique_key_follows_the_key_through_stateless_steps(after, key):
    assert unique_key(after(_aggregate(gz.StreamEnvironment())).node) == key


def test_unique_key_of_a_deduplication():
    env = gz.StreamEnvironment()
    data = env.from_arrow(pa.table({"k": pa.array([1], pa.int64()), "v": pa.array([1], pa.int64())}))
    assert unique_key(data.key_by("k", "v").deduplicate(keep="last").node) == ("k", "v")
    assert unique_key(data.key_by("k").deduplicate(keep="first").node) is None


def test_unique_key_of_a_top_n():
    env = gz.StreamEnvironment()
    data = env.from_arrow(pa.table({"k": pa.array([1], pa.int64()), "v": pa.array([1], pa.int64())}))
    assert unique_key(data.key_by("k").top_n(3, by="v").node) == ("k", "rank")
    assert unique_key(data.key_by("k").top_n(3, by="v").select("k", "v").node) is None  # rank dropped
    assert unique_key(data.key_by("k").top_n(1, by="v").select("v", key="k").node) == ("key",)
    assert unique_key(data.key_by("k").top_n(1, by="v").select("v").node) is None


@st.composite
def keyed_cases(draw):
    """A random running aggregate, last-row deduplication or Top-N, sometimes followed by a random
    filter, with_columns or select."""
    case = draw(st.one_of(running_aggregate_cases(), deduplicate_cases(), top_n_cases()))
    if draw(st.booleans()):
        case.steps.append(draw(stateless_steps(case.build(gz.StreamEnvironment()).schema)))
    return case


@given(keyed_cases())
def test_final_table_by_key_equals_final_table_of_the_changelog(case):
    node = case.build(gz.StreamEnvironment()).node
    if not node.updating:
        return  # keep="first"
    try:
        expected = reference.evaluate(node)
    except AggregateOverflowError:
        return
    final, changes = run_compiled(case.build, case.parallelism)
    # (assert_tables_equal: Table.equals holds NaN unequal to itself)
    assert_tables_equal(final, final_table(with_kind_column(changes)).cast(final.schema))
    assert_tables_equal(final, expected)


@pytest.mark.parametrize("build, keys", [(_running, ["k", "name"]), (_last_rows, ["k", "n"])])
@pytest.mark.parametrize("parallelism", [1, 2])
def test_final_table_of_a_resumed_job(build, keys, parallelism, tmp_path):
    batches = _data().to_batches(max_chunksize=100)
    expected = reference.evaluate(build(gz.StreamEnvironment(), batches).node)
    result = run_with_crashes(build, batches, [2, 9, 10], tmp_path / "chk", parallelism)
    assert result.metrics["checkpoints"]["restored_from"] == 10
    assert_tables_equal(result["out"], expected)
