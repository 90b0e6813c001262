"""Nexmark's window queries (``workloads/nexmark.py``: Q5, Q7, Q8, Q11) on seeded data, at two
parallelisms and batch sizes, give the reference evaluator's table; Q11 is also checked against
sessions computed by hand from the bids (a bidder's bids split where more than 10 s pass without one)."""

from __future__ import annotations

import numpy as np
import pytest
from strategies import assert_tables_equal

import grizzly_py as gz
from grizzly_py import reference
from grizzly_py.workloads import nexmark

QUERIES = {
    "q5": lambda env, t: nexmark.q5(env, t["bid"]),
    "q7": lambda env, t: nexmark.q7(env, t["bid"]),
    "q8": lambda env, t: nexmark.q8(env, t["person"], t["auction"]),
    "q11": lambda env, t: nexmark.q11(env, t["bid"]),
}


@pytest.mark.parametrize("name", QUERIES)
@pytest.mark.parametrize("parallelism, batch_rows", [(1, 113), (2, 2_048)])
def test_window_queries_match_the_reference(name, parallelism, batch_rows):
    tables = nexmark.generate_nexmark(60_000, seed=11, events_per_second=1_000, batch_rows=batch_rows)
    expected = reference.evaluate(QUERIES[name](gz.StreamEnvironment(), tables).node)
    env = gz.StreamEnvironment(parallelism=parallelism)
    QUERIES[name](env, tables).collect("out")
    assert_tables_equal(env.execute()["out"], expected)
    assert expected.num_rows > 0


def test_q11_sessions_are_the_bidders_bids_split_at_gaps():
    bids = nexmark.generate_bids(30_000, seed=4, events_per_second=200)
    out = nexmark.q11(gz.StreamEnvironment(), bids).execute_and_collect()
    expected = []
    bidder, times = bids.column("bidder").to_numpy(), bids.column("dateTime").to_numpy()
    for b in np.unique(bidder):
        ts = np.sort(times[bidder == b])
        cuts = np.flatnonzero(np.diff(ts) > nexmark.Q11_GAP_MS) + 1  # Flink merges touching windows
        for part in np.split(ts, cuts):
            expected.append((int(b), int(part[0]), int(part[-1]) + nexmark.Q11_GAP_MS, len(part)))
    got = sorted(zip(*(out.column(c).to_pylist() for c in ("bidder", "window_start", "window_end", "bid_count"))))
    assert got == sorted(expected)
    assert any(n > 1 for *_, n in expected) and len({b for b, *_ in expected}) < len(expected)
