"""What every peer implements, and how results are normalized and fingerprinted.

A peer is set up once (untimed: imports, compilation, session start, file writes), then its
``run()`` is timed ``--repeat`` times; each run returns its full result so that the harness
can cross-check peers against each other. A peer that cannot be imported or started raises
``PeerUnavailable`` from ``setup()`` and is reported as missing with that reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


class PeerUnavailable(RuntimeError):
    """The peer's library is not installed or its engine does not start here."""


class Peer:
    """Base class: subclasses set ``name``/``description`` and implement ``setup`` and ``run``."""

    name = "peer"
    description = ""

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
    fingerprint: str  # hex digest over (window_start, key, count) rows, order-independent

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


_MIX_A = np.uint64(0x9E3779B97F4A7C15)
_MIX_B = np.uint64(0xC2B2AE3D27D4EB4F)
_MIX_C = np.uint64(0x165667B19E3779F9)


def summarize(result: pa.Table) -> Summary:
    """Digest a normalized result: totals plus a sum of per-row hashes (wrapping, uint64)."""
    columns = [result.column(i) for i in range(3)]
    if any(c.null_count for c in columns):
        raise ValueError("result has nulls")
    ws, key, count = (
        c.combine_chunks().to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        for c in columns
    )
    with np.errstate(over="ignore"):
        row = ws.view(np.uint64) * _MIX_A ^ key.view(np.uint64) * _MIX_B ^ count.view(np.uint64) * _MIX_C
        row ^= row >> np.uint64(31)
        row *= _MIX_A
        digest = int(np.bitwise_xor.reduce(row) if row.size else 0) ^ int(row.sum(dtype=np.uint64))
    return Summary(total=int(pc.sum(result.column(2)).as_py() or 0), groups=result.num_rows,
                   fingerprint=f"{digest:016x}")
