"""What every peer implements, and how results are normalized and fingerprinted.

A peer is set up once (untimed: imports, compilation, session start, file writes), then its
``run()`` is timed ``--repeat`` times; each run returns its full result so that the harness
can cross-check peers against each other. A peer that cannot be imported or started raises
``PeerUnavailable`` from ``setup()`` and is reported as missing with that reason.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa


class PeerUnavailable(RuntimeError):
    """The peer's library is not installed or its engine does not start here."""


class Peer:
    """Base class: subclasses set ``name``/``description`` and implement ``setup`` and ``run``."""

    name = "peer"
    description = ""
    needs_parquet = False  # the runner writes the data to Parquet (untimed) before any peer runs
    computes_query = True  # False: a ceiling (reads the input only); no result, no cross-check

    def __init__(self) -> None:
        # Facts for the report: versions, threads, untimed setup costs, caveats.
        self.info: dict[str, Any] = {}

    def setup(self, data: Any) -> None:
        """Prepare to run on ``data`` (untimed). Raise ``PeerUnavailable`` if impossible."""

    def run(self) -> pa.Table:
        """Run the query once end to end (timed); return its result table."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what ``setup`` acquired."""


@dataclass(frozen=True)
class Summary:
    """Order-independent digest of a (window_start, key, count) result."""

    total: int  # sum of counts
    groups: int  # number of (window, key) rows
    fingerprint: str  # hash of the (window_start, key, count) rows in sorted order

    def as_dict(self) -> dict[str, Any]:
        return {"total": self.total, "groups": self.groups, "fingerprint": self.fingerprint}


def window_result(window_start: Any, key: Any, count: Any, key_name: str = "campaign_id") -> pa.Table:
    """Build the normalized result table (window_start int64 ms, key int64, count int64)."""

    def int64(values: Any) -> pa.Array | pa.ChunkedArray:
        if isinstance(values, (pa.Array, pa.ChunkedArray)):
            if pa.types.is_timestamp(values.type):
                values = values.cast(pa.timestamp("ms")).cast(pa.int64())
            return values.cast(pa.int64())
        return pa.array(np.asarray(values, dtype=np.int64))

    return pa.table(
        {"window_start": int64(window_start), key_name: int64(key), "count": int64(count)}
    )


def summarize(result: pa.Table) -> Summary:
    """Digest a normalized result: totals, and a hash of its rows sorted by (window, key)."""
    columns = [result.column(i) for i in range(3)]
    if any(c.null_count for c in columns):
        raise ValueError("result has nulls")
    ws, key, count = (
        np.ascontiguousarray(c.to_numpy(), dtype=np.int64) if c.num_chunks
        else np.empty(0, np.int64)
        for c in columns
    )
    order = np.lexsort((key, ws))
    digest = hashlib.blake2b(digest_size=8)
    for values in (ws, key, count):
        digest.update(values[order].tobytes())
    return Summary(total=int(count.sum()), groups=result.num_rows, fingerprint=digest.hexdigest())


def table_of(**columns) -> pa.Table:
    """A normalized result table: integer columns as int64, strings (plain, large, dictionary,
    polars' views) as string, the others as float64."""
    out = {}
    for name, values in columns.items():
        if hasattr(values, "to_arrow"):  # polars Series
            values = values.to_arrow()
        if not isinstance(values, (pa.Array, pa.ChunkedArray)):
            values = pa.array(np.asarray(values))
        if pa.types.is_dictionary(values.type):
            values = values.cast(values.type.value_type)
        if pa.types.is_timestamp(values.type):
            values = values.cast(pa.timestamp("ms")).cast(pa.int64())
        if pa.types.is_decimal(values.type):
            values = values.cast(pa.float64())
        if pa.types.is_string(values.type) or pa.types.is_large_string(values.type) \
                or pa.types.is_string_view(values.type):
            out[name] = values.cast(pa.string())
        else:
            out[name] = values.cast(pa.int64() if pa.types.is_integer(values.type) else pa.float64())
    return pa.table(out)
