"""Seeded generator and queries of the StreamBox-HBM benchmarks (Miao et al., ASPLOS 2019).

Data: one row per record, ``event_time`` (int64 epoch ms, ``EVENTS_PER_SECOND`` per simulated
second, non-decreasing), ``key`` (int64, ``n_keys`` distinct, uniform) and ``value`` (int64,
uniform in ``[0, VALUE_RANGE)``, so that medians, distinct counts and ties are real).

Benchmarks, all over 1 s tumbling event-time windows (``WINDOW_MS``):

====================== ================================================================ =========
name                   query                                                            runs today
====================== ================================================================ =========
``sum-per-key``        sum(value) per key                                               yes
``avg-per-key``        avg(value) per key                                               yes
``median-per-key``     median(value) per key                                            yes
``topk-per-key``       the ``TOP_K`` largest values per key                             no: needs a top-k aggregate
``unique-count-per-key`` count_distinct(value) per key                                  yes
``avg-all``            avg(value) over all keys                                         yes
``temporal-join``      records of two streams with equal keys in the same window        no: needs joins (issue 7)
``windowed-filter``    records with ``value >= FILTER_MIN`` (10%), counted per key      yes
====================== ================================================================ =========

The windowed filter is this project's reading of the benchmark (a selection inside a windowed
per-key aggregation); the temporal join pairs this stream with a second one generated with
``seed + 1``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

EPOCH_MS = 1_700_000_000_000
EVENTS_PER_SECOND = 1_000_000
WINDOW_MS = 1_000
N_KEYS = 10_000
VALUE_RANGE = 1_000
FILTER_MIN = 900
TOP_K = 3
BENCHMARKS = ("sum-per-key", "avg-per-key", "median-per-key", "topk-per-key", "unique-count-per-key",
              "avg-all", "temporal-join", "windowed-filter")
PENDING = {"topk-per-key": "needs a top-k aggregate (not in the DSL yet)",
           "temporal-join": "needs windowed joins (issue 7)"}


def generate_streambox(n_rows: int, seed: int = 42, n_keys: int = N_KEYS,
                       batch_rows: int = 1 << 16) -> pa.Table:
    """``n_rows`` records (event_time, key, value) chunked into RecordBatches of ``batch_rows``."""
    if n_rows < 0 or n_keys < 1 or batch_rows < 1:
        raise ValueError("n_rows must be >= 0, n_keys and batch_rows >= 1")
    rng = np.random.default_rng([seed, 5])
    event_time = EPOCH_MS + (np.arange(n_rows, dtype=np.int64) * 1000) // EVENTS_PER_SECOND
    table = pa.table({"event_time": event_time,
                      "key": rng.integers(0, n_keys, size=n_rows, dtype=np.int64),
                      "value": rng.integers(0, VALUE_RANGE, size=n_rows, dtype=np.int64)})
    return pa.Table.from_batches(table.to_batches(max_chunksize=batch_rows), schema=table.schema)


def streambox_query(env, table: pa.Table, benchmark: str):
    """One benchmark as a grizzly-py query. Keyed ones output key, window_start, window_end,
    value; ``avg-all`` outputs window_start, window_end, value."""
    from .. import Time, agg, col
    from ..windows import TumblingEventTimeWindows
    if benchmark in PENDING:
        raise NotImplementedError(f"streambox {benchmark}: {PENDING[benchmark]}")
    stream = env.from_arrow(table, timestamp="event_time")
    window = TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS))
    if benchmark == "avg-all":
        return stream.window_all(window).aggregate(value=agg.avg("value"))
    if benchmark == "windowed-filter":
        stream = stream.filter(col("value") >= FILTER_MIN)
    value = {"sum-per-key": agg.sum("value"), "avg-per-key": agg.avg("value"),
             "median-per-key": agg.median("value"), "unique-count-per-key": agg.count_distinct("value"),
             "windowed-filter": agg.count()}[benchmark]
    return stream.key_by("key").window(window).aggregate(value=value)
