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
``topk-per-key``       top_k(value, ``TOP_K``) per key (the 3 largest, largest first)   yes
``unique-count-per-key`` count_distinct(value) per key                                  yes
``avg-all``            avg(value) over all keys                                         yes
``temporal-join``      pairs of records of two streams with equal keys in one window    yes
``windowed-filter``    records with ``value >= FILTER_MIN`` (10%), counted per key      yes
====================== ================================================================ =========

The windowed filter is this project's reading of the benchmark (a selection inside a windowed
per-key aggregation). The temporal join (``generate_temporal_join``) pairs two streams of this
shape (the second from its own seeded stream) over ``JOIN_KEYS`` keys, one per record of a
window, so that a key meets about one record of the other stream per window and the join's
output is about as large as one input (with the ``N_KEYS`` of the other benchmarks a window
would pair 100 x 100 records per key: 10^8 pairs per window). Its output: window_start,
window_end, then each side's event_time, key, value (the right's suffixed ``_right``).
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
JOIN_KEYS = EVENTS_PER_SECOND * WINDOW_MS // 1000  # keys of the temporal join: one per record of a window
BENCHMARKS = ("sum-per-key", "avg-per-key", "median-per-key", "topk-per-key", "unique-count-per-key",
              "avg-all", "temporal-join", "windowed-filter")
PENDING: dict[str, str] = {}  # benchmark -> what the engine still needs to run it (none today)


def generate_streambox(n_rows: int, seed: int = 42, n_keys: int = N_KEYS,
                       batch_rows: int = 1 << 16) -> pa.Table:
    """``n_rows`` records (event_time, key, value) chunked into RecordBatches of ``batch_rows``."""
    if n_rows < 0 or n_keys < 1 or batch_rows < 1:
        raise ValueError("n_rows must be >= 0, n_keys and batch_rows >= 1")
    return _records(n_rows, np.random.default_rng([seed, 5]), n_keys, batch_rows)


def generate_temporal_join(n_rows: int, seed: int = 42, n_keys: int = JOIN_KEYS,
                           batch_rows: int = 1 << 16) -> tuple[pa.Table, pa.Table]:
    """The two inputs of the temporal join, ``n_rows`` records each, from two seeded streams."""
    if n_rows < 0 or n_keys < 1 or batch_rows < 1:
        raise ValueError("n_rows must be >= 0, n_keys and batch_rows >= 1")
    return tuple(_records(n_rows, np.random.default_rng([seed, stream]), n_keys, batch_rows)
                 for stream in (6, 7))


def _records(n_rows: int, rng: np.random.Generator, n_keys: int, batch_rows: int) -> pa.Table:
    event_time = EPOCH_MS + (np.arange(n_rows, dtype=np.int64) * 1000) // EVENTS_PER_SECOND
    table = pa.table({"event_time": event_time,
                      "key": rng.integers(0, n_keys, size=n_rows, dtype=np.int64),
                      "value": rng.integers(0, VALUE_RANGE, size=n_rows, dtype=np.int64)})
    return pa.Table.from_batches(table.to_batches(max_chunksize=batch_rows), schema=table.schema)


def _window():
    from .. import Time
    from ..windows import TumblingEventTimeWindows
    return TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS))


def temporal_join_query(env, left: pa.Table, right: pa.Table):
    """The temporal join as a grizzly-py window join: every pair of a left and a right record
    with equal keys in one 1 s tumbling window."""
    return (env.from_arrow(left, timestamp="event_time")
            .join(env.from_arrow(right, timestamp="event_time"))
            .where("key").equal_to("key").window(_window()))


def streambox_query(env, table: pa.Table, benchmark: str):
    """One benchmark over one stream as a grizzly-py query (the temporal join, over two:
    ``temporal_join_query``). Keyed ones output key, window_start, window_end, value (for
    ``topk-per-key`` a list<int64>, largest first); ``avg-all`` outputs window_start,
    window_end, value."""
    from .. import agg, col
    if benchmark in PENDING:
        raise NotImplementedError(f"streambox {benchmark}: {PENDING[benchmark]}")
    if benchmark == "temporal-join":
        raise ValueError("the temporal join reads two streams: temporal_join_query(env, left, right)")
    stream = env.from_arrow(table, timestamp="event_time")
    window = _window()
    if benchmark == "avg-all":
        return stream.window_all(window).aggregate(value=agg.avg("value"))
    if benchmark == "windowed-filter":
        stream = stream.filter(col("value") >= FILTER_MIN)
    value = {"sum-per-key": agg.sum("value"), "avg-per-key": agg.avg("value"),
             "median-per-key": agg.median("value"), "unique-count-per-key": agg.count_distinct("value"),
             "topk-per-key": agg.top_k("value", TOP_K), "windowed-filter": agg.count()}[benchmark]
    return stream.key_by("key").window(window).aggregate(value=value)
