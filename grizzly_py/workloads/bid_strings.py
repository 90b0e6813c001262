"""The string workload of ``grizzly bench strings``: four queries over the Nexmark bids
(``nexmark.generate_bids``), one case each.

==================== ==============================================================================
case                 query
==================== ==============================================================================
``nexmark-q21``      Nexmark Q21 (``nexmark.q21``): a channel id from the channel's name in lower
                     case, else by a regular expression from the url; the bids with neither dropped
``nexmark-q22``      Nexmark Q22 (``nexmark.q22``): the url's directories 3, 4 and 5 (split at ``/``)
``url-contains``     the bids whose url contains ``URL_TEXT`` (literal text): auction, bidder, price
``distinct-channels`` per auction and 10 s tumbling window, the number of distinct channels its
                     bids came through (``agg.count_distinct`` of a string column): window_start,
                     window_end, auction, channels
==================== ==============================================================================
"""

from __future__ import annotations

import pyarrow as pa

from . import nexmark

CASES = ("nexmark-q21", "nexmark-q22", "url-contains", "distinct-channels")
URL_TEXT = "channel_id=1"  # about half of the urls with a channel id: a quarter of the bids
WINDOW_MS = 10_000


def url_contains(env, bids: pa.Table):
    from .. import col
    return (env.from_arrow(bids, timestamp="dateTime")
            .filter(col("url").str.contains(URL_TEXT, literal=True))
            .select("auction", "bidder", "price"))


def distinct_channels(env, bids: pa.Table):
    from .. import Time, agg
    from ..windows import TumblingEventTimeWindows
    return (env.from_arrow(bids, timestamp="dateTime")
            .key_by("auction")
            .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS)))
            .aggregate(channels=agg.count_distinct("channel")))


def query(env, bids: pa.Table, case: str):
    """The query of ``case`` (one of ``CASES``) over ``bids``."""
    queries = {"nexmark-q21": nexmark.q21, "nexmark-q22": nexmark.q22, "url-contains": url_contains,
               "distinct-channels": distinct_channels}
    if case not in queries:
        raise ValueError(f"unknown strings case {case!r}; cases: {', '.join(CASES)}")
    return queries[case](env, bids)
