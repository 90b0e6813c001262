"""The ``nexmark-tables`` workload's queries of the batch peers (pyarrow, polars, DuckDB, Spark): the Nexmark
queries beyond windows, whose result is a table of rows (``grizzly_py.workloads.nexmark``):

- ``q0``: pass-through, every bid column;
- ``q3``: the auctions of category 10 joined with their seller in OR, ID or CA (name, city,
  state, auction id);
- ``q13``: each bid joined with the static side input on ``auction % 10000`` (a lookup join);
- ``q20``: the bids joined with their auction of category 10;

and the ``nexmark-updating`` workload's, whose grizzly-py result is an updating stream's final
table: ``q4`` (average winning price per category), ``q17`` (auction statistics per auction and
day), ``q18`` (the last bid per bidder and auction).

A regular join over whole (bounded) inputs is the inner join of both, so a batch peer computes
it in one join. Each method returns the normalized result (``OUTPUT``'s columns in that order,
``workloads.row_digest`` hashes every row; the order of rows does not matter).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from grizzly_py.workloads import nexmark
from grizzly_py.workloads.ysb import write_parquet

from .base import table_of

CASES = ("q0", "q3", "q13", "q20")
UPDATING_CASES = ("q4", "q17", "q18")
OUTPUT = {
    "q0": ("auction", "bidder", "price", "channel", "url", "dateTime", "extra"),
    "q3": ("name", "city", "state", "id"),
    "q13": ("auction", "bidder", "price", "dateTime", "value"),
    "q20": ("auction", "bidder", "price", "channel", "url", "itemName", "description", "initialBid", "reserve",
            "expires", "seller", "category", "bid_dateTime", "bid_extra", "auction_dateTime"),
    "q4": ("category", "avg_final"),
    "q17": ("auction", "day", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids", "min_price", "max_price",
            "avg_price", "sum_price"),
    "q18": ("auction", "bidder", "price", "channel", "url", "dateTime", "extra"),
}
CATEGORY, STATES, KEYS = nexmark.Q3_Q20_CATEGORY, nexmark.Q3_STATES, nexmark.Q13_KEYS
LOW, HIGH = nexmark.RANK_PRICES
HOW = {
    "numpy": {"nexmark-tables": "pyarrow (Acero): q0 select; q3/q20 filter then Table.join; q13 numpy "
                                "auction % 10000, Table.join with the side input",
              "nexmark-updating": "pyarrow (Acero): q4 Table.join, filter, group_by(id, category) max, "
                                  "group_by(category) mean; q17 strftime day, group_by(auction, day) with "
                                  "summed rank masks; q18 stable sort by (dateTime, arrival), ordered "
                                  "group_by(bidder, auction) last"},
    "polars": {"nexmark-tables": "lazy: q0 select; q3/q20 filter then inner join; q13 join with the "
                                 "side input on auction % 10000",
               "nexmark-updating": "lazy: q4 join, filter, group_by(id, category).max, group_by(category)"
                                   ".mean; q17 group_by(auction, day) with filtered counts; q18 "
                                   "with_row_index, sort by (dateTime, index), group_by(bidder, auction).last"},
    "duckdb": {"nexmark-tables": "SQL: q0 SELECT *; q3/q20 JOIN with WHERE; q13 JOIN with the side "
                                 "input ON auction % 10000 = key",
               "nexmark-updating": "SQL: q4 JOIN ... BETWEEN, GROUP BY id, category, then GROUP BY "
                                   "category; q17 GROUP BY auction, strftime day with count(*) FILTER; "
                                   "q18 the arrival as a column, QUALIFY row_number() OVER (PARTITION BY "
                                   "bidder, auction ORDER BY dateTime DESC, arrival DESC) = 1"},
    "spark": {"nexmark-tables": "Spark SQL from Parquet: q0 SELECT *; q3/q20 JOIN with WHERE; q13 JOIN "
                                "with the side input ON auction % 10000 = key",
              "nexmark-updating": "Spark SQL from Parquet: q4 JOIN ... BETWEEN, GROUP BY id, category, "
                                  "then GROUP BY category; q17 GROUP BY auction, date_format day with "
                                  "count(*) FILTER; q18 row_number() OVER (PARTITION BY bidder, auction "
                                  "ORDER BY dateTime DESC, arrival DESC) = 1 over the bids with their "
                                  "arrival as a column"},
}


def normalized_table(case: str, out) -> pa.Table:
    """``OUTPUT[case]``'s columns of a peer's result, in that order."""
    return table_of(**{name: out[name] for name in OUTPUT[case]})


def grizzly_stream(env, data, case: str):
    """grizzly-py's query of ``case`` over the bench data's tables."""
    t = data.tables
    if case == "q0":
        return nexmark.q0(env, t["bid"])
    if case == "q3":
        return nexmark.q3(env, t["person"], t["auction"])
    if case == "q13":
        return nexmark.q13(env, t["bid"], t["side"])
    if case == "q20":
        return nexmark.q20(env, t["bid"], t["auction"])
    if case == "q4":
        return nexmark.q4(env, t["auction"], t["bid"])
    if case == "q17":
        return nexmark.q17(env, t["bid"])
    if case == "q18":
        return nexmark.q18(env, t["bid"])
    raise ValueError(case)


def table_sql(case: str, quote: str) -> str:
    """The SQL of a ``nexmark-tables`` case (DuckDB and Spark SQL), identifiers quoted by ``quote``."""
    states = ", ".join(f"'{s}'" for s in STATES)
    q = quote
    return {
        "q0": "SELECT * FROM bid",
        "q3": f"""SELECT P.name, P.city, P.state, A.id FROM auction A JOIN person P ON A.seller = P.id
                  WHERE A.category = {CATEGORY} AND P.state IN ({states})""",
        "q13": f"""SELECT B.auction, B.bidder, B.price, B.{q}dateTime{q}, S.value
                   FROM bid B JOIN side S ON B.auction % {KEYS} = S.key""",
        "q20": f"""SELECT B.auction, B.bidder, B.price, B.channel, B.url, A.{q}itemName{q}, A.description,
                          A.{q}initialBid{q}, A.reserve, A.expires, A.seller, A.category,
                          B.{q}dateTime{q} AS {q}bid_dateTime{q}, B.extra AS bid_extra,
                          A.{q}dateTime{q} AS {q}auction_dateTime{q}
                   FROM bid B JOIN auction A ON B.auction = A.id WHERE A.category = {CATEGORY}""",
    }[case]


def q4_sql(quote: str) -> str:
    """Nexmark Q4 over whole inputs: the average winning price per category."""
    q = quote
    return f"""SELECT category, avg(final) AS avg_final FROM (
                   SELECT A.id, A.category, max(B.price) AS final FROM auction A JOIN bid B ON A.id = B.auction
                   WHERE B.{q}dateTime{q} BETWEEN A.{q}dateTime{q} AND A.expires GROUP BY A.id, A.category)
               GROUP BY category"""


def q17_sql(day: str) -> str:
    """Nexmark Q17 over a whole input, ``day`` the SQL of a bid's day as 'yyyy-MM-dd'."""
    return f"""SELECT auction, {day} AS day, count(*) AS total_bids,
                      count(*) FILTER (WHERE price < {LOW}) AS rank1_bids,
                      count(*) FILTER (WHERE price >= {LOW} AND price < {HIGH}) AS rank2_bids,
                      count(*) FILTER (WHERE price >= {HIGH}) AS rank3_bids,
                      min(price) AS min_price, max(price) AS max_price, avg(price) AS avg_price,
                      CAST(sum(price) AS BIGINT) AS sum_price
               FROM bid GROUP BY auction, {day}"""


class DuckDBNexmarkTables:
    def nexmark_tables(self, case: str) -> pa.Table:
        return normalized_table(case, self._q(table_sql(case, '"')))

    def nexmark_updating(self, case: str) -> pa.Table:
        if case == "q18":  # ties go to the later arrival: SQL sees the arrival order as a column
            bids = self.data.tables["bid"]
            self.con.register("arrived", bids.append_column("arrival", pa.array(np.arange(bids.num_rows))))
            try:
                out = self.con.sql("""SELECT * EXCLUDE (arrival) FROM arrived QUALIFY row_number() OVER (
                                          PARTITION BY bidder, auction ORDER BY "dateTime" DESC, arrival DESC) = 1""")
                return normalized_table(case, out.to_arrow_table())
            finally:
                self.con.unregister("arrived")
        sql = {"q4": q4_sql('"'), "q17": q17_sql("""strftime(epoch_ms("dateTime"), '%Y-%m-%d')""")}[case]
        return normalized_table(case, self._q(sql))


class PolarsNexmarkTables:
    def nexmark_tables(self, case: str) -> pa.Table:
        pl = self.pl

        def lazy(name):
            return pl.from_arrow(self.data.tables[name], rechunk=False).lazy()
        if case == "q0":
            out = lazy("bid")
        elif case == "q3":
            people = lazy("person").with_columns(pl.col("state").cast(pl.String)).filter(
                pl.col("state").is_in(list(STATES)))
            out = (lazy("auction").filter(pl.col("category") == CATEGORY).select("id", "seller")
                   .join(people.select(pl.col("id").alias("pid"), "name", "city", "state"),
                         left_on="seller", right_on="pid"))
        elif case == "q13":
            out = (lazy("bid").with_columns(key=pl.col("auction") % KEYS)
                   .join(lazy("side"), on="key"))
        elif case == "q20":
            items = lazy("auction").filter(pl.col("category") == CATEGORY).rename({"dateTime": "auction_dateTime"})
            out = (lazy("bid").rename({"dateTime": "bid_dateTime", "extra": "bid_extra"})
                   .join(items, left_on="auction", right_on="id"))
        else:
            raise ValueError(case)
        return normalized_table(case, out.collect().to_arrow())

    def nexmark_updating(self, case: str) -> pa.Table:
        pl = self.pl

        def lazy(name):
            return pl.from_arrow(self.data.tables[name], rechunk=False).lazy()
        if case == "q4":
            bids = lazy("bid").select("auction", "price", pl.col("dateTime").alias("bid_time"))
            out = (lazy("auction").select("id", "category", "dateTime", "expires")
                   .join(bids, left_on="id", right_on="auction")
                   .filter(pl.col("bid_time").is_between(pl.col("dateTime"), pl.col("expires")))
                   .group_by("id", "category").agg(final=pl.col("price").max())
                   .group_by("category").agg(avg_final=pl.col("final").mean()))
        elif case == "q17":
            price = pl.col("price")
            out = (lazy("bid").with_columns(day=pl.from_epoch("dateTime", time_unit="ms").dt.strftime("%Y-%m-%d"))
                   .group_by("auction", "day")
                   .agg(total_bids=pl.len().cast(pl.Int64), rank1_bids=(price < LOW).sum().cast(pl.Int64),
                        rank2_bids=((price >= LOW) & (price < HIGH)).sum().cast(pl.Int64),
                        rank3_bids=(price >= HIGH).sum().cast(pl.Int64), min_price=price.min(),
                        max_price=price.max(), avg_price=price.mean(), sum_price=price.sum()))
        elif case == "q18":
            out = (lazy("bid").with_row_index("arrival").sort("dateTime", "arrival")
                   .group_by("bidder", "auction").last())
        else:
            raise ValueError(case)
        return normalized_table(case, out.collect().to_arrow())


class ArrowNexmarkTables:
    """pyarrow's compute kernels and Acero joins and group-bys (the suite's ``numpy`` peer, which
    every installation has: so that the quick suite cross-checks these workloads without the
    ``bench`` extra)."""

    def nexmark_tables(self, case: str) -> pa.Table:
        t = self.data.tables
        if case == "q0":
            out = t["bid"]
        elif case == "q3":
            people = t["person"].select(["id", "name", "city", "state"])
            people = people.set_column(3, "state", people["state"].cast(pa.string()))
            people = people.filter(pc.is_in(people["state"], pa.array(STATES, pa.string())))
            items = t["auction"].filter(pc.equal(t["auction"]["category"], CATEGORY)).select(["id", "seller"])
            out = items.join(people.rename_columns(["pid", "name", "city", "state"]), "seller", "pid",
                             join_type="inner", use_threads=False)
        elif case == "q13":
            bids = t["bid"].select(["auction", "bidder", "price", "dateTime"])
            bids = bids.append_column("key", pa.array(bids["auction"].to_numpy() % KEYS))
            out = bids.join(t["side"], "key", join_type="inner", use_threads=False)
        elif case == "q20":
            auction = t["auction"]
            items = auction.filter(pc.equal(auction["category"], CATEGORY))
            items = items.rename_columns(["auction_dateTime" if n == "dateTime" else n for n in items.column_names])
            bids = t["bid"].rename_columns({"dateTime": "bid_dateTime", "extra": "bid_extra"})
            out = bids.join(items, "auction", "id", join_type="inner", use_threads=False)
        else:
            raise ValueError(case)
        return normalized_table(case, out)

    def nexmark_updating(self, case: str) -> pa.Table:
        t = self.data.tables
        if case == "q4":
            bids = t["bid"].select(["auction", "price", "dateTime"]).rename_columns(["auction", "price", "bid_time"])
            joined = t["auction"].select(["id", "category", "dateTime", "expires"]).join(
                bids, "id", "auction", join_type="inner", use_threads=False)
            opened = pc.and_(pc.greater_equal(joined["bid_time"], joined["dateTime"]),
                             pc.less_equal(joined["bid_time"], joined["expires"]))
            finals = joined.filter(opened).group_by(["id", "category"]).aggregate([("price", "max")])
            out = finals.group_by("category").aggregate([("price_max", "mean")])
            out = out.rename_columns([{"price_max_mean": "avg_final"}.get(n, n) for n in out.column_names])
        elif case == "q17":
            bids = t["bid"]
            price = bids["price"]
            day = pc.strftime(bids["dateTime"].cast(pa.timestamp("ms")), "%Y-%m-%d")
            ranks = {"rank1_bids": pc.less(price, LOW),
                     "rank2_bids": pc.and_(pc.greater_equal(price, LOW), pc.less(price, HIGH)),
                     "rank3_bids": pc.greater_equal(price, HIGH)}
            keyed = pa.table({"auction": bids["auction"], "day": day, "price": price,
                              **{n: m.cast(pa.int64()) for n, m in ranks.items()}})
            out = keyed.group_by(["auction", "day"]).aggregate(
                [([], "count_all"), *((n, "sum") for n in ranks), ("price", "min"), ("price", "max"),
                 ("price", "mean"), ("price", "sum")])
            names = {"count_all": "total_bids", "price_min": "min_price", "price_max": "max_price",
                     "price_mean": "avg_price", "price_sum": "sum_price",
                     **{f"{n}_sum": n for n in ranks}}
            out = out.rename_columns([names.get(n, n) for n in out.column_names])
        elif case == "q18":  # the last by (dateTime, arrival): a stable sort, then ordered "last"
            bids = t["bid"]
            ordered = bids.take(pc.sort_indices(bids["dateTime"]))
            rest = [n for n in bids.column_names if n not in ("bidder", "auction")]
            keep_nulls = pc.ScalarAggregateOptions(skip_nulls=False)
            out = ordered.group_by(["bidder", "auction"], use_threads=False).aggregate(
                [(n, "last", keep_nulls) for n in rest])
            out = out.rename_columns([n.removesuffix("_last") for n in out.column_names])
        else:
            raise ValueError(case)
        return normalized_table(case, out)


class SparkNexmarkTables:
    """Spark SQL over the tables' Parquet files (``self.paths``, set by the suite's ``on_data``)."""

    def prepare(self, case) -> None:
        super().prepare(case)
        if case.workload == "nexmark-updating" and case.param == "q18":
            self.arrived_bids_path()  # written before the timed runs

    def _views(self) -> None:
        for name, path in self.paths.items():
            self.spark.read.parquet(path).createOrReplaceTempView(name)

    def nexmark_tables(self, case: str) -> pa.Table:
        self._views()
        return normalized_table(case, self.spark.sql(table_sql(case, "`")).toArrow())

    def nexmark_updating(self, case: str) -> pa.Table:
        self._views()
        if case == "q18":  # ties go to the later arrival: the arrival order is a column of its own file
            columns = ", ".join(f"`{n}`" for n in OUTPUT["q18"])
            self.spark.read.parquet(self.arrived_bids_path()).createOrReplaceTempView("arrived")
            sql = f"""SELECT {columns} FROM (SELECT *, row_number() OVER (PARTITION BY bidder, auction
                          ORDER BY `dateTime` DESC, arrival DESC) AS newest FROM arrived) WHERE newest = 1"""
        else:
            sql = {"q4": q4_sql("`"), "q17": q17_sql("date_format(timestamp_millis(`dateTime`), 'yyyy-MM-dd')")}[case]
        return normalized_table(case, self.spark.sql(sql).toArrow())

    def arrived_bids_path(self) -> str:
        """The bids with their arrival index as a column, as Parquet (written once per data)."""
        if getattr(self, "_arrived_for", None) is not self.data:
            bids = self.data.tables["bid"]
            path = Path(self.paths["bid"]).with_name("bid_arrived.parquet")
            write_parquet(bids.append_column("arrival", pa.array(np.arange(bids.num_rows))), path)
            self._arrived_for, self._arrived_path = self.data, str(path)
        return self._arrived_path
