"""Nexmark's string and date queries (Q10, Q14, Q21, Q22 of the Flink suite), the other two
queries of the ``strings`` bench workload (``grizzly_py/workloads/bid_strings.py``) and the
strings of the bid generator (``grizzly_py/workloads/nexmark.py``).

Each query runs compiled at parallelism 1 and 2, on a few input sizes cut into batches of a few
sizes, and must give the reference evaluator's table (Q21's ``str.extract`` runs a compiled
regular expression); the reference's Q21 is checked against Python's ``re``. Q14 also runs on bids spread
over a day, so that every branch of its time-of-day ``if_else`` is taken. The generator's
strings are checked against the shape of the suite's BidGenerator: hot and other channels, one
url per channel, ``channel_id`` parameters (Java's ``Math.abs(Integer.reverse(j))``), ``extra``.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import grizzly_py as gz
from grizzly_py import reference
from grizzly_py.workloads import bid_strings, nexmark

from strategies import assert_tables_equal

QUERIES = {"q10": nexmark.q10, "q14": nexmark.q14, "q21": nexmark.q21, "q22": nexmark.q22,
           "url-contains": bid_strings.url_contains, "distinct-channels": bid_strings.distinct_channels}


def compiled_and_reference(query, bids: pa.Table, parallelism: int) -> tuple[pa.Table, pa.Table]:
    expected, _ = reference.run(query(gz.StreamEnvironment(), bids).node)
    env = gz.StreamEnvironment(parallelism=parallelism)
    query(env, bids).collect("out")
    return env.execute()["out"], expected


@pytest.mark.parametrize("name", QUERIES)
@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("n_events, batch_rows", [(0, 64), (1_500, 97), (40_000, 8_192)])
def test_queries_match_the_reference(name, parallelism, n_events, batch_rows):
    bids = nexmark.generate_bids(n_events, seed=5, batch_rows=batch_rows)
    actual, expected = compiled_and_reference(QUERIES[name], bids, parallelism)
    assert_tables_equal(actual, expected)
    if n_events:
        assert expected.num_rows > 0


def test_q21_reference_is_the_suites_query():
    # the reference evaluator's Q21 against the suite's SQL evaluated row by row with Python's re
    # (REGEXP_EXTRACT: the first match, group 2), independently of the compiled regex
    bids = nexmark.generate_bids(20_000, seed=9, batch_rows=3_000)
    actual, _ = reference.run(nexmark.q21(gz.StreamEnvironment(), bids).node)
    pattern, expected = re.compile(nexmark.Q21_CHANNEL_ID), []
    for row in bids.select(["auction", "bidder", "price", "channel", "url"]).to_pylist():
        url, lower = row.pop("url"), row["channel"].lower()
        found = pattern.search(url)
        channel_id = (str(nexmark.Q21_CHANNELS.index(lower)) if lower in nexmark.Q21_CHANNELS
                      else found.group(2) if found else None)
        if channel_id is not None:
            expected.append(dict(row, channel_id=channel_id))
    assert actual.to_pylist() == expected
    ids = actual.column("channel_id").to_pylist()
    assert {"0", "1", "2", "3"} <= set(ids) and len(set(ids)) > 1_000  # hot channels and url ids
    assert 0.9 < len(ids) / bids.num_rows < 0.97  # (half hot, 9 in 10 of the others have an id)


def _over_a_day(bids: pa.Table) -> pa.Table:
    """The bids 97 s apart: 1,380 bids span a day and a half."""
    times = nexmark.EPOCH_MS + 97_000 * np.arange(bids.num_rows, dtype=np.int64)
    return bids.set_column(bids.schema.get_field_index("dateTime"), "dateTime", pa.array(times))


@pytest.mark.parametrize("parallelism", [1, 2])
def test_q14_time_of_day_and_q10_dates_over_a_day(parallelism):
    bids = _over_a_day(nexmark.generate_bids(1_500, seed=3, batch_rows=200))
    q14, expected = compiled_and_reference(nexmark.q14, bids, parallelism)
    assert_tables_equal(q14, expected)
    assert set(q14.column("bidTimeType").to_pylist()) == {"dayTime", "nightTime", "otherTime"}
    q10, expected = compiled_and_reference(nexmark.q10, bids, parallelism)
    assert_tables_equal(q10, expected)
    assert len(set(q10.column("dt").to_pylist())) == 3


def _java_abs_reverse(j: int) -> int:
    """Java's ``Math.abs(Integer.reverse(j))`` for a non-negative int ``j``."""
    bits = int(f"{j:032b}"[::-1], 2)
    signed = bits - (1 << 32) if bits >> 31 else bits
    return signed if signed == -(1 << 31) else abs(signed)


def test_channel_ids_are_javas_abs_of_the_reversed_bits():
    j = np.arange(nexmark.CHANNELS_NUMBER, dtype=np.uint32)
    assert nexmark._channel_ids(j).tolist() == [_java_abs_reverse(int(v)) for v in j]


URL = re.compile(r"https://www\.nexmark\.com/([a-z_]{3,4})/([a-z_]{3,4})/([a-z_]{3,4})/item\.htm\?query=1"
                 r"(&channel_id=(-?\d+))?")


def test_bid_strings_look_like_nexmarks():
    bids = nexmark.generate_bids(60_000, seed=11, batch_rows=5_000)
    assert {b.num_rows for b in bids.to_batches()[:-1]} == {5_000}
    for name in ("channel", "url", "extra"):
        assert bids.schema.field(name).type == pa.string()
    channels, urls = bids.column("channel").to_pylist(), bids.column("url").to_pylist()
    hot = sum(c in nexmark.HOT_CHANNELS for c in channels) / len(channels)
    assert 0.48 < hot < 0.52
    url_of: dict[str, str] = {}
    with_id = 0
    for channel, url in zip(channels, urls):
        assert url_of.setdefault(channel, url) == url, f"{channel} has two urls"
        m = URL.fullmatch(url)
        assert m, url
        if channel in nexmark.HOT_CHANNELS:
            assert m.group(4) is None
        else:
            j = int(channel.removeprefix("channel-"))
            assert 0 <= j < nexmark.CHANNELS_NUMBER
            if m.group(4):
                with_id += 1
                assert int(m.group(5)) == _java_abs_reverse(j)
    assert len(url_of) > 5_000  # channels beyond the hot ones
    assert 0.85 < with_id / (len(channels) * (1 - hot)) < 0.95
    lengths = pc.utf8_length(bids.column("extra"))
    assert pc.min(lengths).as_py() >= nexmark.EXTRA_LENGTH[0] and pc.max(lengths).as_py() <= nexmark.EXTRA_LENGTH[1]
    assert pc.all(pc.match_substring_regex(bids.column("extra"), "^[a-z]+$")).as_py()


def test_bids_are_seeded():
    a, b = nexmark.generate_bids(3_000, seed=1), nexmark.generate_bids(3_000, seed=1)
    assert a.equals(b)
    c = nexmark.generate_bids(3_000, seed=2)
    for name in ("channel", "url", "extra"):
        assert not a.column(name).equals(c.column(name))
