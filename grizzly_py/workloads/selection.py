"""Seeded generator and query of the selection benchmark (PipeFabric, Pohl et al., table 1).

Data: ``event_time`` (int64 epoch ms, 1M records per simulated second), ``key`` (int64,
uniform in ``[0, 10_000)``) and ``value`` (int32, uniform in ``[0, 100)``). The query keeps the
records with ``value < selectivity_percent`` (exactly that share in expectation: 100% keeps all,
0% none) and outputs the three columns.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

EPOCH_MS = 1_700_000_000_000
EVENTS_PER_SECOND = 1_000_000
N_KEYS = 10_000
SELECTIVITIES = (100, 50, 10, 0)


def generate_selection(n_rows: int, seed: int = 42, batch_rows: int = 1 << 16) -> pa.Table:
    if n_rows < 0 or batch_rows < 1:
        raise ValueError("n_rows must be >= 0, batch_rows >= 1")
    rng = np.random.default_rng([seed, 7])
    table = pa.table({
        "event_time": EPOCH_MS + (np.arange(n_rows, dtype=np.int64) * 1000) // EVENTS_PER_SECOND,
        "key": rng.integers(0, N_KEYS, size=n_rows, dtype=np.int64),
        "value": rng.integers(0, 100, size=n_rows, dtype=np.int32),
    })
    return pa.Table.from_batches(table.to_batches(max_chunksize=batch_rows), schema=table.schema)


def selection_query(env, table: pa.Table, selectivity_percent: int):
    from .. import col
    return (env.from_arrow(table, timestamp="event_time")
            .filter(col("value") < selectivity_percent)
            .select("event_time", "key", "value"))
