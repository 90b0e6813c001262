"""Nexmark's updating queries (Q17, Q18, Q19 and Q9 of the Flink suite; ``grizzly_py/workloads/nexmark.py``),
compiled at parallelism 1 and 2 over seeded bids cut into batches of a few sizes: the final table
and the per-key changelog equal the reference evaluator's. Bids spread over a day and a half make
several days per auction."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
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


@pytest.mark.parametrize("parallelism", [1, 3])
@pytest.mark.parametrize("n_events, batch_rows", [(0, 64), (3_000, 97), (20_000, 4_096)])
def test_q19_matches_the_reference(parallelism, n_events, batch_rows):
    bids = nexmark.generate_bids(n_events, seed=9, batch_rows=batch_rows)
    expected, expected_changes = compiled_and_reference(nexmark.q19, bids, ["auction"], parallelism)
    assert expected.schema.names == bids.schema.names + ["rank"]
    if n_events:
        ranks = expected.group_by("auction").aggregate([("rank", "max"), ("rank", "count")])
        assert ranks.column("rank_max").to_pylist() == ranks.column("rank_count").to_pylist()  # 1..k each
        assert max(ranks.column("rank_max").to_pylist()) == nexmark.Q19_TOP
        assert set(expected_changes.column("op").to_pylist()) == {"+I", "-U", "+U"}


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("n_events, batch_rows", [(600, 16), (6_000, 97), (20_000, 1_000)])
def test_q9_matches_the_reference(parallelism, n_events, batch_rows):
    tables = nexmark.generate_nexmark(n_events, seed=7, batch_rows=batch_rows)

    def q9(env, bids):
        return nexmark.q9(env, tables["auction"], bids)
    expected, expected_changes = compiled_and_reference(q9, tables["bid"], ["id"], parallelism)
    # one row per auction: its highest bid placed while it was open (the earliest of equal ones)
    auctions, bids = tables["auction"].to_pylist(), tables["bid"].to_pylist()
    of_auction = {}
    for b in bids:
        of_auction.setdefault(b["auction"], []).append(b)
    for row in expected.to_pylist():
        a = next(a for a in auctions if a["id"] == row["id"])
        placed = [b for b in of_auction[row["id"]] if a["dateTime"] <= b["dateTime"] <= a["expires"]]
        assert row["price"] == max(b["price"] for b in placed)
        assert row["bid_dateTime"] == min(b["dateTime"] for b in placed if b["price"] == row["price"])
    assert expected.num_rows < expected_changes.num_rows


def _statistics_by_hand(bids: pa.Table, keys: list[str]) -> pa.Table:
    """Q15's statistics grouped by ``keys`` as SQL computes them over the whole input, in Arrow
    (no grizzly-py code): per price rank, the bids, distinct bidders and distinct auctions."""
    price = bids.column("price").to_numpy()
    low, high = nexmark.RANK_PRICES
    ranks = {"total_": np.ones(len(price), bool), "rank1_": price < low,
             "rank2_": (price >= low) & (price < high), "rank3_": price >= high}
    out = None
    for what, column, how in (("bids", "price", "count"), ("bidders", "bidder", "count_distinct"),
                              ("auctions", "auction", "count_distinct")):
        for rank, kept in ranks.items():
            values = pa.array(np.where(kept, bids.column(column).to_numpy(), 0), mask=~kept)
            part = bids.select(keys).append_column("v", values).group_by(keys).aggregate([("v", how)])
            part = part.rename_columns([f"{rank}{what}" if n == f"v_{how}" else n for n in part.column_names])
            out = part if out is None else out.join(part, keys)
    return out.sort_by([(k, "ascending") for k in keys])


def _with_days(bids: pa.Table) -> pa.Table:
    day = pc.strftime(pc.cast(bids.column("dateTime"), pa.timestamp("ms", "UTC")), "%Y-%m-%d")
    return bids.append_column("day", day)


@pytest.mark.parametrize("parallelism", [1, 3])
@pytest.mark.parametrize("n_events, batch_rows, gap_ms", [(0, 64, 10), (2_000, 97, 200_000)])
def test_q15_matches_the_reference_and_sql(parallelism, n_events, batch_rows, gap_ms):
    bids = _over_days(nexmark.generate_bids(n_events, seed=15, batch_rows=batch_rows), gap_ms)
    expected, expected_changes = compiled_and_reference(nexmark.q15, bids, ["day"], parallelism)
    if n_events:
        assert expected.num_rows > 1 and expected.num_rows < expected_changes.num_rows
        by_hand = _statistics_by_hand(_with_days(bids), ["day"])
        assert by_hand.select(expected.column_names).equals(expected)
        assert all(r["rank1_bidders"] <= r["total_bidders"] for r in expected.to_pylist())


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("n_events, batch_rows, gap_ms", [(0, 64, 10), (2_000, 113, 150_000)])
def test_q16_matches_the_reference_and_sql(parallelism, n_events, batch_rows, gap_ms):
    bids = _over_days(nexmark.generate_bids(n_events, seed=16, batch_rows=batch_rows), gap_ms)
    expected, expected_changes = compiled_and_reference(nexmark.q16, bids, ["channel", "day"], parallelism)
    assert expected.column_names[:4] == ["channel", "day", "minute", "total_bids"]
    if n_events:
        assert expected.num_rows < expected_changes.num_rows
        days = _with_days(bids)
        minutes = days.append_column("minute", pc.strftime(pc.cast(days.column("dateTime"), pa.timestamp("ms", "UTC")),
                                                            "%H:%M"))
        latest = minutes.group_by(["channel", "day"]).aggregate([("minute", "max")]).rename_columns(
            ["channel", "day", "minute"])
        by_hand = _statistics_by_hand(days, ["channel", "day"]).join(latest, ["channel", "day"])
        by_hand = by_hand.sort_by([("channel", "ascending"), ("day", "ascending")])
        assert by_hand.select(expected.column_names).equals(expected)
