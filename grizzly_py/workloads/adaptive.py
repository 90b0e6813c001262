"""Seeded generators of the three adaptive scenarios (Grizzly paper 7.4), YSB-shaped.

All three keep YSB's schema (``grizzly_py.workloads.ysb``) and change one property mid-stream:

- ``generate_range``: ``campaign_id`` uniform over ``n_keys`` keys for the first third of the
  rows, then over ``RANGE_GROWTH * n_keys`` keys (Grizzly 7.4.1: the key range grows 10x).
- ``generate_selectivity``: five extra int32 columns ``p1..p5`` in ``[0, 100)``; row ``i``
  passes predicate ``pj >= 50`` with probability ``SELECTIVITIES[j]``, and ``p1`` and ``p5`` swap
  their probabilities after half of the rows (Grizzly 7.4.2). The query adds the five
  predicates to YSB's filter (``selectivity_query``).
- ``generate_skew``: ``n_keys`` (1M) keys; the probability that a row goes to key 0 grows
  linearly from 0 at the start to ``SKEW_FINAL`` (60%) at the end, the rest stays uniform
  (Grizzly 7.4.3).

The range and skew scenarios run YSB's query unchanged (``ysb_query``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .ysb import ADS_PER_CAMPAIGN, WINDOW_MS, generate_ysb

RANGE_KEYS = 1_000
RANGE_GROWTH = 10
SKEW_KEYS = 1_000_000
SKEW_FINAL = 0.6
SELECTIVITIES = (0.9, 0.7, 0.5, 0.3, 0.1)
PREDICATE_MIN = 50


def _with_keys(table: pa.Table, campaign_id: np.ndarray, batch_rows: int) -> pa.Table:
    i = table.schema.get_field_index("campaign_id")
    table = table.set_column(i, "campaign_id", pa.array(campaign_id))
    ad = table.schema.get_field_index("ad_id")
    ad_id = campaign_id * ADS_PER_CAMPAIGN + table.column(ad).to_numpy() % ADS_PER_CAMPAIGN
    table = table.set_column(ad, "ad_id", pa.array(ad_id))
    return pa.Table.from_batches(table.to_batches(max_chunksize=batch_rows), schema=table.schema)


def generate_range(n_rows: int, seed: int = 42, n_keys: int = RANGE_KEYS, batch_rows: int = 1 << 16,
                   int_coded: bool = False) -> pa.Table:
    table = generate_ysb(n_rows, seed, n_keys, batch_rows, int_coded)
    rng = np.random.default_rng([seed, 11])
    keys = rng.integers(0, n_keys * RANGE_GROWTH, size=n_rows, dtype=np.int64)
    third = n_rows // 3
    keys[:third] %= n_keys
    return _with_keys(table, keys, batch_rows)


def generate_skew(n_rows: int, seed: int = 42, n_keys: int = SKEW_KEYS, batch_rows: int = 1 << 16,
                  int_coded: bool = False) -> pa.Table:
    table = generate_ysb(n_rows, seed, n_keys, batch_rows, int_coded)
    rng = np.random.default_rng([seed, 12])
    hot = rng.random(n_rows) < SKEW_FINAL * np.arange(n_rows) / max(n_rows - 1, 1)
    keys = np.where(hot, 0, table.column("campaign_id").to_numpy())
    return _with_keys(table, keys, batch_rows)


def generate_selectivity(n_rows: int, seed: int = 42, n_campaigns: int = 10_000,
                         batch_rows: int = 1 << 16, int_coded: bool = False) -> pa.Table:
    table = generate_ysb(n_rows, seed, n_campaigns, batch_rows, int_coded)
    rng = np.random.default_rng([seed, 13])
    half = n_rows // 2
    for j, s in enumerate(SELECTIVITIES):
        p = np.full(n_rows, s)
        if j in (0, len(SELECTIVITIES) - 1):  # p1 and p5 swap after half of the rows
            p[half:] = SELECTIVITIES[len(SELECTIVITIES) - 1 - j]
        passes = rng.random(n_rows) < p
        values = rng.integers(0, PREDICATE_MIN, size=n_rows, dtype=np.int32) + PREDICATE_MIN * passes
        table = table.append_column(f"p{j + 1}", pa.array(values.astype(np.int32)))
    return pa.Table.from_batches(table.to_batches(max_chunksize=batch_rows), schema=table.schema)


def selectivity_query(env, table: pa.Table, window_ms: int = WINDOW_MS):
    """YSB with the five predicates ``pj >= 50`` after ``event_type == view``."""
    from .. import Time, agg, col
    from ..windows import TumblingEventTimeWindows
    from .ysb import VIEW, VIEW_CODE
    view = VIEW_CODE if pa.types.is_integer(table.schema.field("event_type").type) else VIEW
    predicate = col("event_type") == view
    for j in range(len(SELECTIVITIES)):
        predicate = predicate & (col(f"p{j + 1}") >= PREDICATE_MIN)
    return (env.from_arrow(table, timestamp="event_time")
            .filter(predicate)
            .key_by("campaign_id")
            .window(TumblingEventTimeWindows.of(Time.milliseconds(window_ms)))
            .aggregate(views=agg.count()))
