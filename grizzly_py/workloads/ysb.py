"""Seeded generator for the Yahoo Streaming Benchmark (YSB), columnar form.

Schema (one row per ad event):

==============  =======================================  =========================================
column          type                                     content
==============  =======================================  =========================================
``event_time``  int64, epoch milliseconds                1M events per simulated second, monotone
                                                         non-decreasing from ``EPOCH_MS``
``event_type``  dictionary<int32, string>                "view", "click", "purchase", uniform;
                (``int_coded=True``: int32 codes 0/1/2)  ``VIEW_CODE`` (0) is "view"
``campaign_id`` int64                                    ``n_campaigns`` distinct (0..n-1), uniform
``ad_id``       int64                                    10 ads per campaign: ``campaign_id*10+r``
``user_id``     int64                                    uniform random
``page_id``     int64                                    uniform random
==============  =======================================  =========================================

The query (Grizzly paper 7.1.2): keep ``event_type == "view"``, key by ``campaign_id``, 10 s
tumbling event-time windows on ``event_time``, count per (window, key).

The data depends only on ``n_rows``, ``seed`` and ``n_campaigns``; ``batch_rows`` only changes
how the table is chunked (zero-copy slices of one buffer per column).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

EPOCH_MS = 1_700_000_000_000
EVENTS_PER_SECOND = 1_000_000
EVENT_TYPES = ("view", "click", "purchase")
VIEW = "view"
VIEW_CODE = 0
ADS_PER_CAMPAIGN = 10
WINDOW_MS = 10_000


def generate_ysb(
    n_rows: int,
    seed: int = 42,
    n_campaigns: int = 10_000,
    batch_rows: int = 1 << 16,
    int_coded: bool = False,
) -> pa.Table:
    """Return ``n_rows`` YSB events as a table chunked into RecordBatches of ``batch_rows``."""
    if n_rows < 0 or n_campaigns < 1 or batch_rows < 1:
        raise ValueError("n_rows must be >= 0, n_campaigns and batch_rows >= 1")
    rng = np.random.default_rng(seed)
    # Row i happens at i / EVENTS_PER_SECOND seconds: non-decreasing, several rows per ms.
    event_time = EPOCH_MS + (np.arange(n_rows, dtype=np.int64) * 1000) // EVENTS_PER_SECOND
    codes = rng.integers(0, len(EVENT_TYPES), size=n_rows, dtype=np.int32)
    # One draw gives both the ad and its campaign (uniform over campaigns).
    ad_id = rng.integers(0, n_campaigns * ADS_PER_CAMPAIGN, size=n_rows, dtype=np.int64)
    campaign_id = ad_id // ADS_PER_CAMPAIGN
    user_id = rng.integers(0, 1 << 62, size=n_rows, dtype=np.int64)
    page_id = rng.integers(0, 1 << 62, size=n_rows, dtype=np.int64)

    if int_coded:
        event_type: pa.Array = pa.array(codes, type=pa.int32())
    else:
        event_type = pa.DictionaryArray.from_arrays(
            pa.array(codes, type=pa.int32()), pa.array(EVENT_TYPES, type=pa.string())
        )
    table = pa.table(
        {
            "event_time": event_time,
            "event_type": event_type,
            "campaign_id": campaign_id,
            "ad_id": ad_id,
            "user_id": user_id,
            "page_id": page_id,
        }
    )
    return pa.Table.from_batches(table.to_batches(max_chunksize=batch_rows), schema=table.schema)


def write_parquet(table: pa.Table, path: str | Path, row_group_rows: int = 1 << 20) -> Path:
    """Write ``table`` to a Parquet file (snappy, dictionary-encoded strings); return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=row_group_rows, compression="snappy")
    return path


def ysb_query(env, table: pa.Table, window_ms: int = WINDOW_MS):
    """The YSB query over ``table`` in the grizzly-py DSL."""
    from .. import Time, agg, col
    from ..windows import TumblingEventTimeWindows
    view = VIEW_CODE if pa.types.is_integer(table.schema.field("event_type").type) else VIEW
    return (env.from_arrow(table, timestamp="event_time")
            .filter(col("event_type") == view)
            .key_by("campaign_id")
            .window(TumblingEventTimeWindows.of(Time.milliseconds(window_ms)))
            .aggregate(views=agg.count()))
