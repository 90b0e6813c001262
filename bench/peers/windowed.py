"""Peers of the window workloads (``bench/window_workloads.py``), side by side.

Each peer reuses its YSB peer's setup and close (imports, threads, Spark session and Parquet
copy) and has one method per workload, named after it (``agg_types``, ``concurrent_windows``,
``count_windows``), that runs one case end to end and returns the normalized result. A peer
that has no method for a workload, or cannot express a case, raises ``NotImplementedError``:
the harness reports it ``unsupported`` with the message.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..window_workloads import WINDOW_MS, Case, counted, grizzly_query, slide_ms, windowed
from .ysb_duckdb import DuckDBPeer
from .ysb_grizzly import GrizzlyPeer
from .ysb_numpy import NumpyPeer, view_rows
from .ysb_polars import PolarsPeer
from .ysb_spark import SparkPeer


class CasePeer:
    """Mixin for a ``bench.peers.base.Peer``: ``prepare(case)`` (untimed) picks the case,
    ``run()`` runs it. ``how`` describes, per workload, how the peer computes it."""

    how: dict[str, str] = {}
    case: Case

    def prepare(self, case: Case) -> None:
        self.case = case

    def describe(self, workload: str) -> str:
        return f"{self.name}: {self.how.get(workload, 'no query')}"

    def run(self) -> pa.Table:
        method = getattr(self, self.case.workload.replace("-", "_"), None)
        if method is None:
            raise NotImplementedError(f"{self.name} peer has no {self.case.workload} query")
        return method(self.case.param)


class GrizzlyWindows(CasePeer, GrizzlyPeer):
    how = {w: "the query of bench/window_workloads.py, end to end incl. build and compile"
           for w in ("agg-types", "concurrent-windows", "count-windows", "sliding-count-windows")}

    def _execute(self) -> pa.Table:
        env = self.gz.StreamEnvironment(parallelism=self.parallelism)
        return grizzly_query(env, self.data.table, self.case).execute_and_collect()

    def agg_types(self, _name: str) -> pa.Table:
        out = self._execute()
        return windowed(out["window_start"], out["campaign_id"], out["value"])

    concurrent_windows = agg_types

    def count_windows(self, _n: int) -> pa.Table:
        out = self._execute()
        return counted(out["campaign_id"], out["views"], out["first_ts"], out["last_ts"])

    sliding_count_windows = count_windows


def _group_starts(sorted_ids: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]]) if sorted_ids.size \
        else np.empty(0, np.intp)


class NumpyWindows(CasePeer, NumpyPeer):
    how = {
        "agg-types": "dense (window, key) group ids; bincount for sum/count/avg and two-pass "
                     "stddev; lexsort by (group, price) for median and mode, 1 thread",
        "concurrent-windows": "counts per (pane of slide ms, key) on a dense grid, then a "
                              "cumsum-based sum of c panes per window, 1 thread",
        "count-windows": "stable argsort by key (stream order kept), keep the first "
                         "n * (count // n) rows per key, reshape to (windows, n), 1 thread",
    }

    def _views(self, *names: str) -> list[np.ndarray]:
        """The named columns of the view rows, in stream order."""
        table = self.data.table
        i_type = table.schema.get_field_index("event_type")
        idx = [table.schema.get_field_index(n) for n in names]
        parts: list[list[np.ndarray]] = [[] for _ in names]
        for batch in table.to_batches():
            rows = view_rows(batch.column(i_type), self.data.view_value)
            for part, i in zip(parts, idx):
                part.append(batch.column(i).to_numpy().take(rows))
        return [np.concatenate(p) for p in parts]

    @staticmethod
    def _dense(major: np.ndarray, keys: np.ndarray, pad: int = 0) -> tuple[np.ndarray, int, int]:
        """Counts on a dense (major - min + pad, key - min) grid; raise if it would be huge."""
        m0, k0 = int(major.min()), int(keys.min())
        n_major, n_key = int(major.max()) - m0 + 1 + 2 * pad, int(keys.max()) - k0 + 1
        if n_major * n_key > 4 * major.size + (1 << 24):
            raise NotImplementedError("numpy peer: only dense (window, key) grids")
        grid = np.bincount((major - m0 + pad) * n_key + (keys - k0), minlength=n_major * n_key)
        return grid.reshape(n_major, n_key), m0, k0

    def agg_types(self, name: str) -> pa.Table:
        ts, keys, price = self._views("event_time", "campaign_id", "price")
        grid, w0, k0 = self._dense(ts // WINDOW_MS, keys)
        present = np.flatnonzero(grid)
        n = grid.ravel()[present]
        remap = np.zeros(grid.size, np.int64)
        remap[present] = np.arange(present.size)
        gid = remap[(ts // WINDOW_MS - w0) * grid.shape[1] + (keys - k0)]
        n_key = grid.shape[1]
        window_start, key = (present // n_key + w0) * WINDOW_MS, present % n_key + k0
        if name == "count":
            return windowed(window_start, key, n)
        if name in ("sum", "avg", "stddev_pop"):
            total = np.bincount(gid, weights=price, minlength=n.size)
            if name == "sum":
                return windowed(window_start, key, total)
            mean = total / n
            if name == "avg":
                return windowed(window_start, key, mean)
            dev = price - mean[gid]
            return windowed(window_start, key, np.sqrt(np.bincount(gid, dev * dev, n.size) / n))
        order = np.lexsort((price, gid))
        p, g = price[order], gid[order]
        start = np.r_[0, np.cumsum(n)[:-1]]
        if name == "median":
            return windowed(window_start, key, (p[start + (n - 1) // 2] + p[start + n // 2]) / 2)
        if name == "mode":  # runs of equal (group, price); longest run per group, first wins
            run = np.flatnonzero(np.r_[True, (p[1:] != p[:-1]) | (g[1:] != g[:-1])])
            run_len = np.diff(np.r_[run, p.size])
            run_gid = g[run]
            longest = np.maximum.reduceat(run_len, _group_starts(run_gid))
            best = np.flatnonzero(run_len == longest[run_gid])
            _, first = np.unique(run_gid[best], return_index=True)
            return windowed(window_start, key, p[run[best[first]]])
        raise NotImplementedError(f"numpy peer: no {name}")

    def concurrent_windows(self, c: int) -> pa.Table:
        ts, keys = self._views("event_time", "campaign_id")
        slide = slide_ms(c)
        # window k * slide covers panes k .. k + c - 1: sum c panes, padded by c - 1 either side
        grid, p0, k0 = self._dense(ts // slide, keys, pad=c - 1)
        csum = np.zeros((grid.shape[0] + 1, grid.shape[1]), np.int64)
        np.cumsum(grid, axis=0, out=csum[1:])
        counts = csum[c:] - csum[:-c]  # row j: window starting at pane p0 - (c - 1) + j
        w, k = np.nonzero(counts)
        return windowed((w + p0 - (c - 1)) * slide, k + k0, counts[w, k])

    def count_windows(self, n: int) -> pa.Table:
        ts, keys = self._views("event_time", "campaign_id")
        order = np.argsort(keys, kind="stable")
        keys, ts = keys[order], ts[order]
        starts = _group_starts(keys)
        sizes = np.diff(np.r_[starts, keys.size])
        rank = np.arange(keys.size) - np.repeat(starts, sizes)
        keep = rank < np.repeat(sizes // n * n, sizes)
        keys, ts = keys[keep].reshape(-1, n), ts[keep].reshape(-1, n)
        return counted(keys[:, 0], np.full(len(keys), n), ts.min(axis=1), ts.max(axis=1))


class PolarsWindows(CasePeer, PolarsPeer):
    how = {
        "agg-types": "lazy filter, group_by(window start, key).agg(sum | len | mean | "
                     "std(ddof=0) | median | mode().min())",
        "concurrent-windows": "group_by_dynamic(event_time, every=slide, period=10 s, "
                              "offset=slide - 10 s, group_by=key).len()",
        "count-windows": "int_range(len).over(key) // n as window id, group_by(key, id), "
                         "keep windows of n rows",
    }

    def _views(self):
        pl = self.pl
        return (pl.from_arrow(self.data.table, rechunk=False).lazy()
                .filter(pl.col("event_type") == self.data.view_value))

    def agg_types(self, name: str) -> pa.Table:
        pl = self.pl
        price = pl.col("price")
        value = {"sum": price.sum(), "count": pl.len(), "avg": price.mean(),
                 "stddev_pop": price.std(ddof=0), "median": price.median(),
                 "mode": price.mode().min()}[name]
        out = (self._views()
               .group_by((pl.col("event_time") // WINDOW_MS * WINDOW_MS).alias("window_start"),
                         "campaign_id")
               .agg(value.alias("value")).collect())
        return windowed(out["window_start"], out["campaign_id"], out["value"])

    def concurrent_windows(self, c: int) -> pa.Table:
        slide = slide_ms(c)
        out = (self._views().set_sorted("event_time")
               .group_by_dynamic("event_time", every=f"{slide}i", period=f"{WINDOW_MS}i",
                                 offset=f"{slide - WINDOW_MS}i", group_by="campaign_id",
                                 closed="left", label="left", start_by="window")
               .agg(self.pl.len().alias("value")).collect())
        return windowed(out["event_time"], out["campaign_id"], out["value"])

    def count_windows(self, n: int) -> pa.Table:
        pl = self.pl
        out = (self._views()
               .with_columns((pl.int_range(pl.len()).over("campaign_id") // n).alias("w"))
               .group_by("campaign_id", "w")
               .agg(pl.len().alias("views"), pl.col("event_time").min().alias("first_ts"),
                    pl.col("event_time").max().alias("last_ts"))
               .filter(pl.col("views") == n).collect())
        return counted(out["campaign_id"], out["views"], out["first_ts"], out["last_ts"])


DUCKDB_AGG = {"sum": "sum(price)", "count": "count(*)", "avg": "avg(price)",
              "stddev_pop": "stddev_pop(price)", "median": "median(price)"}


class DuckDBWindows(CasePeer, DuckDBPeer):
    how = {
        "agg-types": "SQL GROUP BY (window start, key) with sum | count | avg | stddev_pop | "
                     "median; mode (DuckDB's mode() breaks ties by first seen) as count per "
                     "(window, key, price), then arg_max(price, (count, -price))",
        "concurrent-windows": "count per (pane of slide ms, key), cross join range(c), "
                              "sum per (pane - j, key)",
        "count-windows": "row_number() OVER (PARTITION BY key ORDER BY event_time) // n as "
                         "window id; HAVING count(*) = n (ties in event_time do not change "
                         "count/min/max)",
    }

    def _sql(self, sql: str) -> pa.Table:
        view = self.data.view_value
        where = "event_type = " + ("'" + view.replace("'", "''") + "'"
                                   if isinstance(view, str) else str(int(view)))
        self.con.register("ysb", self.data.table)
        try:
            return self.con.sql(sql.format(where=where, w=WINDOW_MS)).to_arrow_table()
        finally:
            self.con.unregister("ysb")

    def agg_types(self, name: str) -> pa.Table:
        if name == "mode":
            out = self._sql("""
                SELECT window_start, campaign_id, arg_max(price, (n, -price)) AS value
                FROM (SELECT (event_time // {w}) * {w} AS window_start, campaign_id, price,
                             count(*) AS n
                      FROM ysb WHERE {where} GROUP BY ALL)
                GROUP BY ALL""")
        else:
            out = self._sql(f"""
                SELECT (event_time // {{w}}) * {{w}} AS window_start, campaign_id,
                       {DUCKDB_AGG[name]} AS value
                FROM ysb WHERE {{where}} GROUP BY ALL""")
        return windowed(out["window_start"], out["campaign_id"], out["value"])

    def concurrent_windows(self, c: int) -> pa.Table:
        s = slide_ms(c)
        out = self._sql(f"""
            WITH panes AS (SELECT event_time // {s} AS pane, campaign_id, count(*) AS n
                           FROM ysb WHERE {{where}} GROUP BY ALL)
            SELECT (pane - j) * {s} AS window_start, campaign_id, sum(n)::BIGINT AS value
            FROM panes, range({c}) AS t(j) GROUP BY ALL""")
        return windowed(out["window_start"], out["campaign_id"], out["value"])

    def count_windows(self, n: int) -> pa.Table:
        out = self._sql(f"""
            SELECT campaign_id, count(*) AS views, min(event_time) AS first_ts,
                   max(event_time) AS last_ts
            FROM (SELECT campaign_id, event_time,
                         row_number() OVER (PARTITION BY campaign_id ORDER BY event_time) - 1
                           AS rank
                  FROM ysb WHERE {{where}})
            GROUP BY campaign_id, rank // {n} HAVING count(*) = {n}""")
        return counted(out["campaign_id"], out["views"], out["first_ts"], out["last_ts"])


class SparkWindows(CasePeer, SparkPeer):
    how = {
        "agg-types": "from Parquet, groupBy(window(ts, '10 seconds'), key).agg(sum | count | "
                     "avg | stddev_pop | median | mode(deterministic=True))",
        "concurrent-windows": "from Parquet, groupBy(window(ts, '10 seconds', slide), key).count()",
        "count-windows": "from Parquet, row_number() over (partitionBy key orderBy event_time) "
                         "// n as window id, groupBy, keep count == n",
    }

    def _views(self):
        F = self.F
        events = self.spark.read.parquet(self.path)
        return (events.filter(F.col("event_type") == F.lit(self.data.view_value))
                .withColumn("ts", F.timestamp_millis(F.col("event_time"))))

    def _windowed(self, df) -> pa.Table:
        F = self.F
        out = df.select(F.unix_millis(F.col("window.start")).alias("window_start"),
                        "campaign_id", "value").toArrow()
        return windowed(out["window_start"], out["campaign_id"], out["value"])

    def agg_types(self, name: str) -> pa.Table:
        F = self.F
        value = {"sum": F.sum("price"), "count": F.count(F.lit(1)), "avg": F.avg("price"),
                 "stddev_pop": F.stddev_pop("price"), "median": F.median("price"),
                 "mode": F.mode("price", deterministic=True)}[name]
        return self._windowed(self._views()
                              .groupBy(F.window("ts", f"{WINDOW_MS} milliseconds"), "campaign_id")
                              .agg(value.alias("value")))

    def concurrent_windows(self, c: int) -> pa.Table:
        F = self.F
        window = F.window("ts", f"{WINDOW_MS} milliseconds", f"{slide_ms(c)} milliseconds")
        return self._windowed(self._views().groupBy(window, "campaign_id")
                              .agg(F.count(F.lit(1)).alias("value")))

    def count_windows(self, n: int) -> pa.Table:
        from pyspark.sql import Window

        F = self.F
        rank = F.row_number().over(Window.partitionBy("campaign_id").orderBy("event_time")) - 1
        out = (self._views().withColumn("w", F.floor(rank / n))
               .groupBy("campaign_id", "w")
               .agg(F.count(F.lit(1)).alias("views"), F.min("event_time").alias("first_ts"),
                    F.max("event_time").alias("last_ts"))
               .filter(F.col("views") == n).drop("w").toArrow())
        return counted(out["campaign_id"], out["views"], out["first_ts"], out["last_ts"])


PEERS = {"grizzly": GrizzlyWindows, "numpy": NumpyWindows, "polars": PolarsWindows,
         "duckdb": DuckDBWindows, "spark": SparkWindows}
