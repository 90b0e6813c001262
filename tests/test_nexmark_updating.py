"""Nexmark's updating queries (Q17 and Q18 of the Flink suite; ``grizzly_py/workloads/nexmark.py``),
compiled at parallelism 1 and 2 over seeded bids cut into batches of a few sizes: the final table
and the per-key changelog equal the reference evaluator's. Bids spread over a day and a half make
several days per auction."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from strategies import assert_tables_equal
from test_updating_streams import assert_same_changelog

import grizzly_py as gz
from grizzly_py import reference
from grizzly_py.plan import ChangelogNode
from grizzly_py.workloads import nexmark


def _over_days(bids: pa.Table, gap_ms: int) -> pa.Table:
    times = nexmark.EPOCH_MS + gap_ms * np.arange(bids.num_rows, dtype=np.int64)
    return bids.set_column(bids.schema.get_field_index("dateTime"), "dateTime", pa.array(times))


def compiled_and_reference(query, bids: pa.Table, keys: list[str], parallelism: int) -> pa.Table:
    """Runs ``query`` compiled; checks its final table and per-key changelog against the
    reference; returns the reference's (final table, changelog)."""
    node = query(gz.StreamEnvironment(), bids).node
    expected, expected_changes = reference.evaluate(node), reference.evaluate(ChangelogNode(node))
    env = gz.StreamEnvironment(parallelism=parallelism)
    q = query(env, bids)
    q.collect("final")
    q.changelog().collect("changes")
    result = env.execute()
    assert_tables_equal(result["final"], expected)
    assert_same_changelog(result["changes"], expected_changes, keys)
    return expected, expected_changes


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("n_events, batch_rows, gap_ms", [(0, 64, 10), (3_000, 97, 97_000), (12_000, 1_024, 20_000)])
def test_q17_matches_the_reference(parallelism, n_events, batch_rows, gap_ms):
    bids = _over_days(nexmark.generate_bids(n_events, seed=5, batch_rows=batch_rows), gap_ms)
    expected, expected_changes = compiled_and_reference(nexmark.q17, bids, ["auction", "day"], parallelism)
    if n_events:
        assert len(set(expected.column("day").to_pylist())) > 1
        assert expected.num_rows < expected_changes.num_rows  # keys updated, not only inserted


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("n_events, batch_rows", [(0, 64), (3_000, 97), (30_000, 4_096)])
def test_q18_matches_the_reference(parallelism, n_events, batch_rows):
    bids = nexmark.generate_bids(n_events, seed=7, batch_rows=batch_rows)
    # out of order within a second: a later bid may be older than the kept one
    rng = np.random.default_rng(3)
    times = bids.column("dateTime").to_numpy() + rng.integers(-1_000, 1_000, bids.num_rows)
    bids = bids.set_column(bids.schema.get_field_index("dateTime"), "dateTime", pa.array(times))
    expected, expected_changes = compiled_and_reference(nexmark.q18, bids, ["bidder", "auction"], parallelism)
    assert expected.schema.names == bids.schema.names
    if n_events:
        assert expected.num_rows < expected_changes.num_rows < bids.num_rows + 2 * expected.num_rows


def _q4_by_hand(auctions: pa.Table, bids: pa.Table) -> pa.Table:
    """Q4 as SQL would compute it over the whole inputs, in Arrow (no grizzly-py code)."""
    a = auctions.select(["id", "category", "dateTime", "expires"])
    b = bids.select(["auction", "price", "dateTime"]).rename_columns(["id", "price", "bid_time"])
    joined = a.join(b, "id", join_type="inner")
    t, lo, hi = (joined.column(c).to_numpy() for c in ("bid_time", "dateTime", "expires"))
    joined = joined.filter(pa.array((t >= lo) & (t <= hi)))
    final = joined.group_by(["id", "category"]).aggregate([("price", "max")])
    out = final.group_by("category").aggregate([("price_max", "mean")])
    return pa.table({"category": out.column("category"), "avg_final": out.column("price_max_mean")}).sort_by("category")


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("n_events, batch_rows", [(0, 64), (4_000, 113), (20_000, 2_048)])
def test_q4_matches_the_reference_and_sql(parallelism, n_events, batch_rows):
    auctions = nexmark.generate_auctions(n_events, seed=9, batch_rows=batch_rows)
    bids = nexmark.generate_bids(n_events, seed=9, batch_rows=batch_rows)

    def query(env, _):
        return nexmark.q4(env, auctions, bids)
    expected, changes = compiled_and_reference(query, bids, ["category"], parallelism)
    assert_tables_equal(expected, _q4_by_hand(auctions, bids).cast(expected.schema))
    if n_events:
        assert expected.num_rows > 1
        assert "-U" in changes.column("op").to_pylist()  # a category's average was revised
