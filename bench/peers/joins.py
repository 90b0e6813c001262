"""The join workloads' queries of the suite's batch peers (numpy, polars, DuckDB, Spark, and
hand-written C for Q7 and Q8: ``joins.c``): Nexmark Q7 and Q8 and StreamBox-HBM's temporal join,
one mixin per peer (``bench/peers/suite.py`` composes them with the peers' other workloads;
Flink's are in ``bench/peers/flink.py``).

Each method returns the normalized result (``peers.base.table_of``; the digest sorts the
rows, so the order of the pairs does not matter, duplicates do):

- ``nexmark_q7``: window_end, auction, bidder, price, dateTime of the bids whose price is the
  maximum of their 10 s tumbling window;
- ``nexmark_q8``: window_start, id, name, auctions: per 10 s tumbling window, the persons who
  registered in it and opened auctions in it, with the number of those auctions;
- ``temporal_join``: window_start, key, event_time, value, event_time_right, value_right: every
  pair of a left and a right record with equal keys in one 1 s tumbling window.

Windows are epoch-aligned ``[k * size, (k + 1) * size)``: a batch peer computes the window of
a record as ``ts // size``, so a window join is an equi-join on (window, key).
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pyarrow as pa

from grizzly_py.workloads import nexmark, streambox

from .base import table_of

Q7_W, Q8_W, SB_W = nexmark.Q7_WINDOW_MS, nexmark.Q8_WINDOW_MS, streambox.WINDOW_MS
C_SOURCE = Path(__file__).with_name("joins.c")
HOW = {
    "c": {"nexmark-q7": "hand-written C over whole columns: max per window in a dense array, "
                        "branch-free selection of the rows at the max, 1 thread",
          "nexmark-q8": "hand-written C over whole columns: open-addressing table of the persons "
                        "by (window, id), each auction counted in it by (window, seller), 1 thread"},
    "numpy": {"nexmark-q7": "window ids, np.maximum.at per window, keep price == its window's max",
              "nexmark-q8": "np.unique counts of (window, seller), searchsorted of (window, id)",
              "temporal-join": "sort-merge on (window, key): argsort one side, searchsorted, "
                               "expand the matching ranges"},
    "polars": {"nexmark-q7": "lazy group_by(window).max, join on (window, price == max)",
               "nexmark-q8": "lazy join on (window, id == seller), group_by(window, id, name).len()",
               "temporal-join": "lazy join on (window, key)"},
    "duckdb": {"nexmark-q7": "SQL: max per window in a CTE, JOIN on (window, price = max)",
               "nexmark-q8": "SQL: JOIN on (id = seller, same window), GROUP BY window, id, name",
               "temporal-join": "SQL: JOIN on (key, same window)"},
    "spark": {"nexmark-q7": "from Parquet, groupBy(window start).max, join on (window, price == max)",
              "nexmark-q8": "from Parquet, join on (window start, id == seller), groupBy count",
              "temporal-join": "from Parquet, join on (window start, key)"},
}


def _col(table: pa.Table, name: str) -> np.ndarray:
    column = table.column(name)
    return column.to_numpy() if column.num_chunks else np.empty(0, np.int64)


def _contiguous(table: pa.Table, name: str) -> np.ndarray:
    return np.ascontiguousarray(_col(table, name), dtype=np.int64)


class CJoins:
    """Q7 and Q8 in hand-written C (``joins.c``, compiled by ``setup_joins``). The columns are
    made contiguous first (part of the timed run, a copy only when a column has several chunks);
    the C code returns row numbers, and the output columns are gathered with Arrow ``take``."""

    def setup_joins(self, out_dir: Path) -> None:
        from .ysb_c import compile_shared

        lib_path, _ = compile_shared(C_SOURCE, out_dir)
        lib = ctypes.CDLL(str(lib_path))
        p, i64 = ctypes.c_void_p, ctypes.c_int64
        lib.q7_highest.argtypes = [p, p, i64, i64, p]
        lib.q8_sellers.argtypes = [p, p, i64, p, p, i64, i64, p, p]
        lib.q7_highest.restype = lib.q8_sellers.restype = i64
        self.joins_lib = lib

    @staticmethod
    def _rows(found: int, what: str) -> int:
        if found < 0:
            raise MemoryError(f"c peer: {what}: out of memory")
        return found

    def nexmark_q7(self, _p) -> pa.Table:
        t = self.data.table
        ts, price = _contiguous(t, "dateTime"), _contiguous(t, "price")
        rows = np.empty(ts.size, np.int64)
        n = self._rows(self.joins_lib.q7_highest(ts.ctypes.data, price.ctypes.data, ts.size, Q7_W,
                                                 rows.ctypes.data), "q7")
        rows = rows[:n]
        return table_of(window_end=(ts[rows] // Q7_W + 1) * Q7_W, auction=t["auction"].take(rows),
                         bidder=t["bidder"].take(rows), price=price[rows], dateTime=ts[rows])

    def nexmark_q8(self, _p) -> pa.Table:
        persons, auctions = self.data.tables["person"], self.data.tables["auction"]
        pts, pid = _contiguous(persons, "dateTime"), _contiguous(persons, "id")
        ats, seller = _contiguous(auctions, "dateTime"), _contiguous(auctions, "seller")
        rows, counts = np.empty(pid.size, np.int64), np.empty(pid.size, np.int64)
        n = self._rows(self.joins_lib.q8_sellers(pts.ctypes.data, pid.ctypes.data, pid.size, ats.ctypes.data,
                                                 seller.ctypes.data, seller.size, Q8_W, rows.ctypes.data,
                                                 counts.ctypes.data), "q8")
        rows = rows[:n]
        return table_of(window_start=pts[rows] // Q8_W * Q8_W, id=pid[rows], name=persons["name"].take(rows),
                         auctions=counts[:n])


class NumpyJoins:
    def nexmark_q7(self, _p) -> pa.Table:
        t = self.data.table
        ts, price = _col(t, "dateTime"), _col(t, "price")
        window = ts // Q7_W
        w0 = window.min() if window.size else 0
        highest = np.full(int(window.max() - w0) + 1 if window.size else 0, np.iinfo(np.int64).min)
        np.maximum.at(highest, window - w0, price)
        rows = np.flatnonzero(price == highest[window - w0])
        return table_of(window_end=(window[rows] + 1) * Q7_W, auction=_col(t, "auction")[rows],
                         bidder=_col(t, "bidder")[rows], price=price[rows], dateTime=ts[rows])

    def nexmark_q8(self, _p) -> pa.Table:
        persons, auctions = self.data.tables["person"], self.data.tables["auction"]
        pid, pw = _col(persons, "id"), _col(persons, "dateTime") // Q8_W
        seller, aw = _col(auctions, "seller"), _col(auctions, "dateTime") // Q8_W
        w0 = min(pw.min(initial=0), aw.min(initial=0))
        span = int(max(pid.max(initial=0), seller.max(initial=0))) + 1
        sold, counts = np.unique((aw - w0) * span + seller, return_counts=True)
        wanted = (pw - w0) * span + pid
        pos = np.minimum(np.searchsorted(sold, wanted), max(sold.size - 1, 0))
        rows = np.flatnonzero(sold[pos] == wanted) if sold.size else np.empty(0, np.intp)
        return table_of(window_start=pw[rows] * Q8_W, id=pid[rows], name=persons["name"].take(rows),
                         auctions=counts[pos[rows]])

    def temporal_join(self) -> pa.Table:
        left, right = self.data.tables["left"], self.data.tables["right"]
        lt, lk, lv = (_col(left, c) for c in ("event_time", "key", "value"))
        rt, rk, rv = (_col(right, c) for c in ("event_time", "key", "value"))
        span = int(max(lk.max(initial=0), rk.max(initial=0))) + 1
        w0 = min(lt.min(initial=0), rt.min(initial=0)) // SB_W
        lg, rg = (lt // SB_W - w0) * span + lk, (rt // SB_W - w0) * span + rk
        order = np.argsort(rg, kind="stable")
        rs = rg[order]
        lo, hi = np.searchsorted(rs, lg, "left"), np.searchsorted(rs, lg, "right")
        n = hi - lo
        li = np.repeat(np.arange(lg.size), n)
        offset = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
        ri = order[np.repeat(lo, n) + offset]
        return table_of(window_start=lt[li] // SB_W * SB_W, key=lk[li], event_time=lt[li], value=lv[li],
                         event_time_right=rt[ri], value_right=rv[ri])


class PolarsJoins:
    def _lazy_of(self, name: str):
        return self.pl.from_arrow(self.data.tables[name], rechunk=False).lazy()

    def nexmark_q7(self, _p) -> pa.Table:
        pl = self.pl
        bids = self._lazy().with_columns((pl.col("dateTime") // Q7_W).alias("w"))
        highest = bids.group_by("w").agg(pl.col("price").max().alias("maxprice"))
        out = (bids.join(highest, left_on=["w", "price"], right_on=["w", "maxprice"])
               .select(((pl.col("w") + 1) * Q7_W).alias("window_end"), "auction", "bidder", "price",
                       "dateTime").collect())
        return table_of(**{n: out[n] for n in out.columns})

    def nexmark_q8(self, _p) -> pa.Table:
        pl = self.pl
        w = (pl.col("dateTime") // Q8_W).alias("w")
        persons = self._lazy_of("person").select(w, "id", "name")
        auctions = self._lazy_of("auction").select(w, "seller")
        out = (persons.join(auctions, left_on=["w", "id"], right_on=["w", "seller"])
               .group_by("w", "id", "name").agg(pl.len().alias("auctions")).collect())
        return table_of(window_start=out["w"] * Q8_W, id=out["id"], name=out["name"], auctions=out["auctions"])

    def temporal_join(self) -> pa.Table:
        pl = self.pl
        w = (pl.col("event_time") // SB_W).alias("w")
        left = self._lazy_of("left").with_columns(w)
        right = self._lazy_of("right").with_columns(w)
        out = left.join(right, on=["w", "key"], suffix="_right").collect()
        return table_of(window_start=out["w"] * SB_W, key=out["key"], event_time=out["event_time"],
                         value=out["value"], event_time_right=out["event_time_right"],
                         value_right=out["value_right"])


class DuckDBJoins:
    def nexmark_q7(self, _p) -> pa.Table:
        out = self._q(f"""
            WITH b AS (SELECT *, "dateTime" // {Q7_W} AS w FROM t),
                 m AS (SELECT w, max(price) AS maxprice FROM b GROUP BY w)
            SELECT (b.w + 1) * {Q7_W} AS window_end, auction, bidder, price, "dateTime"
            FROM b JOIN m ON b.w = m.w AND b.price = m.maxprice""")
        return table_of(**{n: out[n] for n in out.column_names})

    def nexmark_q8(self, _p) -> pa.Table:
        out = self._q(f"""
            SELECT p."dateTime" // {Q8_W} * {Q8_W} AS ws, p.id, p.name, count(*) AS auctions
            FROM person p JOIN auction a
              ON p.id = a.seller AND p."dateTime" // {Q8_W} = a."dateTime" // {Q8_W}
            GROUP BY ALL""")
        return table_of(window_start=out["ws"], id=out["id"], name=out["name"], auctions=out["auctions"])

    def temporal_join(self) -> pa.Table:
        out = self._q(f"""
            SELECT l.event_time // {SB_W} * {SB_W} AS ws, l.key, l.event_time, l.value,
                   r.event_time AS event_time_right, r.value AS value_right
            FROM "left" l JOIN "right" r ON l.key = r.key AND l.event_time // {SB_W} = r.event_time // {SB_W}""")
        return table_of(window_start=out["ws"], **{n: out[n] for n in out.column_names[1:]})


class SparkJoins:
    def _df_of(self, name: str):
        return self.spark.read.parquet(self.paths[name])

    def _window_start(self, column: str, size: int):
        F = self.F
        return (F.col(column) - F.pmod(F.col(column), F.lit(size))).alias("ws")

    def nexmark_q7(self, _p) -> pa.Table:
        F = self.F
        bids = self._df().select("auction", "bidder", "price", "dateTime", self._window_start("dateTime", Q7_W))
        highest = bids.groupBy("ws").agg(F.max("price").alias("price"))  # joined by name: a self-join
        out = (bids.join(highest, ["ws", "price"])
               .select((F.col("ws") + Q7_W).alias("window_end"), "auction", "bidder", "price", "dateTime")
               .toArrow())
        return table_of(**{n: out[n] for n in out.column_names})

    def nexmark_q8(self, _p) -> pa.Table:
        F = self.F
        persons = self._df_of("person").select("id", "name", self._window_start("dateTime", Q8_W))
        auctions = self._df_of("auction").select("seller", self._window_start("dateTime", Q8_W))
        out = (persons.join(auctions, (persons.ws == auctions.ws) & (persons.id == auctions.seller))
               .groupBy(persons.ws, "id", "name").agg(F.count(F.lit(1)).alias("auctions")).toArrow())
        return table_of(window_start=out["ws"], id=out["id"], name=out["name"], auctions=out["auctions"])

    def temporal_join(self) -> pa.Table:
        left = self._df_of("left").select("event_time", "key", "value", self._window_start("event_time", SB_W))
        right = self._df_of("right").select(self.F.col("event_time").alias("event_time_right"),
                                            self.F.col("key").alias("key_right"),
                                            self.F.col("value").alias("value_right"),
                                            self._window_start("event_time", SB_W).alias("ws_right"))
        out = (left.join(right, (left.ws == right.ws_right) & (left.key == right.key_right))
               .select("ws", "key", "event_time", "value", "event_time_right", "value_right").toArrow())
        return table_of(window_start=out["ws"], **{n: out[n] for n in out.column_names[1:]})
