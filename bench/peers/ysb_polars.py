"""polars peer of YSB: lazy filter, group_by on (window start, campaign_id), count."""

from __future__ import annotations

import os

import pyarrow as pa

from .base import Peer, PeerUnavailable, window_result


class PolarsPeer(Peer):
    name = "polars"
    description = ("polars lazy: from_arrow (no rechunk; dictionary to Categorical included), "
                   "filter, group_by(window start, key).len()")

    def __init__(self, threads: int | None = None) -> None:
        super().__init__()
        self.threads = threads

    def setup(self, data) -> None:
        self.data = data
        if self.threads:  # read once, when polars is first imported
            os.environ.setdefault("POLARS_MAX_THREADS", str(self.threads))
        try:
            import polars as pl
        except Exception as exc:  # noqa: BLE001 - any import failure makes the peer missing
            raise PeerUnavailable(f"import polars: {exc!r}") from exc
        self.pl = pl
        self.info.update(version=pl.__version__, threads=pl.thread_pool_size())

    def run(self) -> pa.Table:
        pl, w = self.pl, self.data.window_ms
        out = (
            pl.from_arrow(self.data.table, rechunk=False)
            .lazy()
            .filter(pl.col("event_type") == self.data.view_value)
            .group_by((pl.col("event_time") // w * w).alias("window_start"), "campaign_id")
            .agg(pl.len().alias("count"))
            .collect()
        )
        return window_result(out["window_start"].to_arrow(), out["campaign_id"].to_arrow(),
                             out["count"].to_arrow())
