"""The queries of the batch peers (pyarrow, polars, DuckDB, Spark) for the Nexmark workloads
beyond fixed windows (``grizzly_py.workloads.nexmark``). ``nexmark-tables``, whose result is a
table of rows:

- ``q0``: pass-through, every bid column;
- ``q3``: the auctions of category 10 joined with their seller in OR, ID or CA (name, city,
  state, auction id);
- ``q11``: bids per bidder session (sessions close after a 10 s gap);
- ``q13``: each bid joined with the static side input on ``auction % 10000`` (a lookup join);
- ``q20``: the bids joined with their auction of category 10;

``nexmark-q23`` (each bid with its bidder and every auction the bidder sells: a workload of its
own, its output grows with the square of the input); and ``nexmark-updating``, whose grizzly-py
result is an updating stream's final table: ``q4`` (average winning price per category), ``q9``
(the winning bid per auction), ``q17`` (auction statistics per auction and day), ``q18`` (the
last bid per bidder and auction), ``q19`` (the 10 highest bids per auction, numbered).

A regular join over whole (bounded) inputs is the inner join of both, so a batch peer computes
it in one join. grizzly-py breaks ties by arrival; the peers see the arrival as a column (the
data set's table ``arrived``). Each method returns the normalized result (``OUTPUT``'s columns in that
order, ``workloads.row_digest`` hashes every row; the order of rows does not matter).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from grizzly_py.workloads import nexmark

from .base import table_of

# Q15's and Q16's statistics: the bids, distinct bidders and distinct auctions, in all and per price rank
STATISTICS = tuple(f"{rank}_{what}" for what in ("bids", "bidders", "auctions")
                   for rank in ("total", "rank1", "rank2", "rank3"))
CASES = ("q0", "q3", "q11", "q13", "q20")
UPDATING_CASES = ("q4", "q9", "q15", "q16", "q17", "q18", "q19")
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
    "q11": ("bidder", "window_start", "window_end", "bid_count"),
    "q15": ("day", *STATISTICS),
    "q16": ("channel", "day", "minute", *STATISTICS),
    "q9": ("id", "itemName", "description", "initialBid", "reserve", "dateTime", "expires", "seller", "category",
           "auction", "bidder", "price", "bid_dateTime", "bid_extra"),
    "q19": ("auction", "bidder", "price", "channel", "url", "dateTime", "extra", "rank"),
    "q23": ("bidder", "price", "channel", "url", "bid_extra", "person_id", "name", "emailAddress", "creditCard",
            "city", "state", "itemName", "description", "initialBid", "reserve", "auction_dateTime", "expires",
            "seller", "category"),
}
CATEGORY, STATES, KEYS = nexmark.Q3_Q20_CATEGORY, nexmark.Q3_STATES, nexmark.Q13_KEYS
LOW, HIGH = nexmark.RANK_PRICES
GAP, TOP = nexmark.Q11_GAP_MS, nexmark.Q19_TOP
HOW = {
    "numpy": {"nexmark-tables": "pyarrow (Acero): q0 select; q3/q20 filter then Table.join; q11 numpy "
                                "lexsort by (bidder, time), a session opens at a gap >= 10 s; q13 "
                                "numpy auction % 10000, Table.join with the side input",
              "nexmark-updating": "pyarrow (Acero): q4 Table.join, filter, group_by(id, category) max, "
                                  "group_by(category) mean; q9/q19 join (q9), sort by (key, price "
                                  "desc, ..., arrival), first rows per key; q17 strftime day, "
                                  "group_by(auction, day) with summed rank masks; q18 stable sort by "
                                  "(dateTime, arrival), ordered group_by(bidder, auction) last",
              "nexmark-q23": "pyarrow (Acero): two Table.join"},
    "polars": {"nexmark-tables": "lazy: q0 select; q3/q20 filter then inner join; q11 sort, shift over "
                                 "bidder, cum_sum of session starts, group_by; q13 join with the side "
                                 "input on auction % 10000",
               "nexmark-updating": "lazy: q4 join, filter, group_by(id, category).max, group_by(category)"
                                   ".mean; q9/q19 with_row_index, sort, first per id / int_range over "
                                   "auction <= 10; q17 group_by(auction, day) with filtered counts; q18 "
                                   "with_row_index, sort by (dateTime, index), group_by(bidder, auction).last",
               "nexmark-q23": "lazy: two inner joins"},
    "duckdb": {"nexmark-tables": "SQL: q0 SELECT every column; q3/q20 JOIN with WHERE; q11 lag() and a running "
                                 "sum() of session starts (gaps and islands); q13 JOIN with the side "
                                 "input ON auction % 10000 = key",
               "nexmark-updating": "SQL: q4 JOIN ... BETWEEN, GROUP BY id, category, then GROUP BY "
                                   "category; q9/q18/q19 row_number() OVER (PARTITION BY key ORDER BY "
                                   "..., arrival) over the bids with their arrival as a column; q17 GROUP "
                                   "BY auction, strftime day with count(*) FILTER",
               "nexmark-q23": "SQL: two JOINs"},
    "spark": {"nexmark-tables": "Spark SQL from Parquet, the DuckDB peer's SQL text",
              "nexmark-updating": "Spark SQL from Parquet, the DuckDB peer's SQL text (the bids with "
                                  "their arrival as a column: a Parquet file of their own)",
              "nexmark-q23": "Spark SQL from Parquet: two JOINs"},
}


def normalized_table(case: str, out) -> pa.Table:
    """``OUTPUT[case]``'s columns of a peer's result, in that order."""
    return table_of(**{name: out[name] for name in OUTPUT[case]})


def grizzly_stream(env, data, case: str):
    """grizzly-py's query of ``case`` over the bench data's tables."""
    return nexmark.QUERIES[case](env, data.tables)


def table_sql(case: str, quote: str) -> str:
    """The SQL of a ``nexmark-tables`` case (DuckDB, Spark and Flink SQL: averages cast to DOUBLE,
    where Flink's of a BIGINT truncates), identifiers quoted by ``quote``."""
    states = ", ".join(f"'{s}'" for s in STATES)
    q = quote
    return {
        "q0": "SELECT " + ", ".join(f"{q}{n}{q}" for n in OUTPUT["q0"]) + " FROM bid",
        "q11": q11_sql(q),
        "q23": q23_sql(q),
        "q3": f"""SELECT P.name, P.city, P.state, A.id FROM auction A JOIN person P ON A.seller = P.id
                  WHERE A.category = {CATEGORY} AND P.state IN ({states})""",
        "q13": f"""SELECT B.auction, B.bidder, B.price, B.{q}dateTime{q}, S.{q}value{q}
                   FROM bid B JOIN side S ON MOD(B.auction, {KEYS}) = S.{q}key{q}""",
        "q20": f"""SELECT B.auction, B.bidder, B.price, B.channel, B.url, A.{q}itemName{q}, A.description,
                          A.{q}initialBid{q}, A.reserve, A.expires, A.seller, A.category,
                          B.{q}dateTime{q} AS {q}bid_dateTime{q}, B.extra AS bid_extra,
                          A.{q}dateTime{q} AS {q}auction_dateTime{q}
                   FROM bid B JOIN auction A ON B.auction = A.id WHERE A.category = {CATEGORY}""",
    }[case]


def q11_sql(quote: str) -> str:
    """Nexmark Q11 over a whole input: a bidder's bids less than ``GAP`` apart form a session
    (gaps and islands: a new session where the gap to the bidder's previous bid is ``GAP`` or more).
    The running count of sessions takes a RANGE frame: a bidder's bids at one instant are peers,
    so they share a session whatever order the engine puts them in (a ROWS frame split them
    when a tie's opening bid came second: DuckDB's groups changed from run to run)."""
    t = f"{quote}dateTime{quote}"
    return f"""WITH marked AS (
                   SELECT bidder, {t}, CASE WHEN {t} - lag({t}) OVER (PARTITION BY bidder ORDER BY {t}) < {GAP}
                                            THEN 0 ELSE 1 END AS opens FROM bid),
               numbered AS (
                   SELECT bidder, {t}, sum(opens) OVER (PARTITION BY bidder ORDER BY {t}
                                                        RANGE UNBOUNDED PRECEDING) AS session FROM marked)
               SELECT bidder, min({t}) AS window_start, max({t}) + {GAP} AS window_end, count(*) AS bid_count
               FROM numbered GROUP BY bidder, session"""


def q23_sql(quote: str) -> str:
    """Nexmark Q23 over whole inputs: each bid with its bidder and every auction the bidder sells."""
    q = quote
    return f"""SELECT B.bidder, B.price, B.channel, B.url, B.extra AS bid_extra, P.id AS person_id, P.name,
                      P.{q}emailAddress{q}, P.{q}creditCard{q}, P.city, P.state, A.{q}itemName{q}, A.description,
                      A.{q}initialBid{q}, A.reserve, A.{q}dateTime{q} AS {q}auction_dateTime{q}, A.expires,
                      A.seller, A.category
               FROM bid B JOIN person P ON B.bidder = P.id JOIN auction A ON A.seller = B.bidder"""


def q9_sql(quote: str, bids: str) -> str:
    """Nexmark Q9 over whole inputs, ``bids`` a table of the bids with their ``arrival``: per
    auction its highest bid placed while open, the earliest of equal prices (then arrival)."""
    q = quote
    columns = ", ".join(f"{q}{n}{q}" for n in OUTPUT["q9"])
    return f"""SELECT {columns} FROM (
                   SELECT A.id, A.{q}itemName{q}, A.description, A.{q}initialBid{q}, A.reserve, A.{q}dateTime{q},
                          A.expires, A.seller, A.category, B.auction, B.bidder, B.price,
                          B.{q}dateTime{q} AS {q}bid_dateTime{q}, B.extra AS bid_extra,
                          row_number() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.{q}dateTime{q} ASC,
                                             B.arrival ASC) AS winner
                   FROM auction A JOIN {bids} B ON A.id = B.auction
                   WHERE B.{q}dateTime{q} BETWEEN A.{q}dateTime{q} AND A.expires)
               WHERE winner = 1"""


def q19_sql(quote: str, bids: str) -> str:
    """Nexmark Q19's final table: per auction the ``TOP`` highest bids, ties by arrival, numbered."""
    q = quote
    columns = ", ".join(f"{q}{n}{q}" for n in OUTPUT["q19"])
    return f"""SELECT {columns} FROM (
                   SELECT *, row_number() OVER (PARTITION BY auction ORDER BY price DESC, arrival ASC) AS {q}rank{q}
                   FROM {bids}) WHERE {q}rank{q} <= {TOP}"""


def statistics_sql(quote: str, keys: str, day: str, minute: str | None = None) -> str:
    """Nexmark Q15 (``keys`` the day) and Q16 (the channel and day, with the day's latest
    ``minute``) over a whole input: SQL's ``count(DISTINCT ...) FILTER (WHERE ...)``."""
    q = quote
    ranks = {"total": None, "rank1": f"price < {LOW}", "rank2": f"price >= {LOW} AND price < {HIGH}",
             "rank3": f"price >= {HIGH}"}
    columns = []
    for what, arg in (("bids", "*"), ("bidders", "DISTINCT bidder"), ("auctions", "DISTINCT auction")):
        for rank, where in ranks.items():
            columns.append(f"count({arg})" + (f" FILTER (WHERE {where})" if where else "") + f" AS {rank}_{what}")
    head = f"{day} AS {q}day{q}" + (f", max({minute}) AS {q}minute{q}" if minute else "")
    return f"SELECT {keys}{head}, {', '.join(columns)} FROM bid GROUP BY {keys}{day}"


def q4_sql(quote: str) -> str:
    """Nexmark Q4 over whole inputs: the average winning price per category."""
    q = quote
    return f"""SELECT category, avg(CAST(final AS DOUBLE)) AS avg_final FROM (
                   SELECT A.id, A.category, max(B.price) AS final FROM auction A JOIN bid B ON A.id = B.auction
                   WHERE B.{q}dateTime{q} BETWEEN A.{q}dateTime{q} AND A.expires GROUP BY A.id, A.category)
               GROUP BY category"""


def q17_sql(quote: str, day: str) -> str:
    """Nexmark Q17 over a whole input, ``day`` the SQL of a bid's day as 'yyyy-MM-dd'."""
    return f"""SELECT auction, {day} AS {quote}day{quote}, count(*) AS total_bids,
                      count(*) FILTER (WHERE price < {LOW}) AS rank1_bids,
                      count(*) FILTER (WHERE price >= {LOW} AND price < {HIGH}) AS rank2_bids,
                      count(*) FILTER (WHERE price >= {HIGH}) AS rank3_bids,
                      min(price) AS min_price, max(price) AS max_price, avg(CAST(price AS DOUBLE)) AS avg_price,
                      CAST(sum(price) AS BIGINT) AS sum_price
               FROM bid GROUP BY auction, {day}"""


def updating_sql(case: str, quote: str, day: str, minute: str = "") -> str:
    """The SQL of a ``nexmark-updating`` case's final table (DuckDB, Spark and Flink SQL), ``day``
    and ``minute`` the SQL of a bid's day 'yyyy-MM-dd' and minute 'HH:mm'; the bids with their
    arrival are the table ``arrived``."""
    if case == "q18":  # ties go to the later arrival
        columns = ", ".join(f"{quote}{n}{quote}" for n in OUTPUT["q18"])
        return f"""SELECT {columns} FROM (SELECT *, row_number() OVER (PARTITION BY bidder, auction
                       ORDER BY {quote}dateTime{quote} DESC, arrival DESC) AS newest FROM arrived) WHERE newest = 1"""
    return {"q4": lambda: q4_sql(quote), "q17": lambda: q17_sql(quote, day), "q9": lambda: q9_sql(quote, "arrived"),
            "q19": lambda: q19_sql(quote, "arrived"), "q15": lambda: statistics_sql(quote, "", day),
            "q16": lambda: statistics_sql(quote, "channel, ", day, minute)}[case]()


class DuckDBNexmarkTables:
    def nexmark_tables(self, case: str) -> pa.Table:
        return normalized_table(case, self._q(table_sql(case, '"')))

    def nexmark_q23(self, _p) -> pa.Table:
        return self.nexmark_tables("q23")

    def nexmark_updating(self, case: str) -> pa.Table:
        return normalized_table(case, self._q(updating_sql(case, '"', """strftime(epoch_ms("dateTime"), '%Y-%m-%d')""",
                                                           """strftime(epoch_ms("dateTime"), '%H:%M')""")))


class PolarsNexmarkTables:
    def _lazy_of(self, name: str):
        return self.pl.from_arrow(self.data.tables[name], rechunk=False).lazy()

    def nexmark_tables(self, case: str) -> pa.Table:
        pl, lazy = self.pl, self._lazy_of
        if case == "q0":
            out = lazy("bid")
        elif case == "q3":
            people = lazy("person").with_columns(pl.col("state").cast(pl.String)).filter(
                pl.col("state").is_in(list(STATES)))
            out = (lazy("auction").filter(pl.col("category") == CATEGORY).select("id", "seller")
                   .join(people.select(pl.col("id").alias("pid"), "name", "city", "state"),
                         left_on="seller", right_on="pid"))
        elif case == "q11":  # a new session where the gap to the bidder's previous bid is GAP or more
            t = pl.col("dateTime")
            out = (lazy("bid").select("bidder", "dateTime").sort("bidder", "dateTime")
                   .with_columns(opens=((t - t.shift(1).over("bidder")) >= GAP).fill_null(True))
                   .with_columns(session=pl.col("opens").cum_sum())
                   .group_by("bidder", "session")
                   .agg(window_start=t.min(), window_end=t.max() + GAP, bid_count=pl.len().cast(pl.Int64)))
        elif case == "q13":
            out = (lazy("bid").with_columns(key=pl.col("auction") % KEYS)
                   .join(lazy("side"), on="key"))
        elif case == "q20":
            items = lazy("auction").filter(pl.col("category") == CATEGORY).rename({"dateTime": "auction_dateTime"})
            out = (lazy("bid").rename({"dateTime": "bid_dateTime", "extra": "bid_extra"})
                   .join(items, left_on="auction", right_on="id"))
        elif case == "q23":
            people = lazy("person").select(pl.col("id").alias("person_id"), "name", "emailAddress", "creditCard",
                                           "city", "state")
            items = lazy("auction").select("itemName", "description", "initialBid", "reserve",
                                           pl.col("dateTime").alias("auction_dateTime"), "expires", "seller",
                                           "category")
            out = (lazy("bid").select("bidder", "price", "channel", "url", pl.col("extra").alias("bid_extra"))
                   .join(people, left_on="bidder", right_on="person_id", coalesce=False)
                   .join(items, left_on="bidder", right_on="seller", coalesce=False))
        else:
            raise ValueError(case)
        return normalized_table(case, out.collect().to_arrow())

    def nexmark_q23(self, _p) -> pa.Table:
        return self.nexmark_tables("q23")

    def nexmark_updating(self, case: str) -> pa.Table:
        pl, lazy = self.pl, self._lazy_of
        if case == "q4":
            bids = lazy("bid").select("auction", "price", pl.col("dateTime").alias("bid_time"))
            out = (lazy("auction").select("id", "category", "dateTime", "expires")
                   .join(bids, left_on="id", right_on="auction")
                   .filter(pl.col("bid_time").is_between(pl.col("dateTime"), pl.col("expires")))
                   .group_by("id", "category").agg(final=pl.col("price").max())
                   .group_by("category").agg(avg_final=pl.col("final").mean()))
        elif case == "q9":
            bids = lazy("arrived").select(
                "auction", "bidder", "price", pl.col("dateTime").alias("bid_dateTime"),
                pl.col("extra").alias("bid_extra"), "arrival")
            out = (lazy("auction").join(bids, left_on="id", right_on="auction", coalesce=False)
                   .filter(pl.col("bid_dateTime").is_between(pl.col("dateTime"), pl.col("expires")))
                   .sort(["id", "price", "bid_dateTime", "arrival"], descending=[False, True, False, False])
                   .group_by("id", maintain_order=True).first())
        elif case in ("q15", "q16"):
            price, when = pl.col("price"), pl.from_epoch("dateTime", time_unit="ms")
            ranks = {"total": None, "rank1": price < LOW, "rank2": (price >= LOW) & (price < HIGH),
                     "rank3": price >= HIGH}
            stats = {}
            for rank, where in ranks.items():
                def kept(column, where=where):
                    return pl.col(column) if where is None else pl.col(column).filter(where)
                stats[f"{rank}_bids"] = kept("price").len().cast(pl.Int64)
                stats[f"{rank}_bidders"] = kept("bidder").n_unique().cast(pl.Int64)
                stats[f"{rank}_auctions"] = kept("auction").n_unique().cast(pl.Int64)
            keys = ["day"] if case == "q15" else ["channel", "day"]
            extra = {} if case == "q15" else {"minute": pl.col("minute").max()}
            out = (lazy("bid").with_columns(day=when.dt.strftime("%Y-%m-%d"), minute=when.dt.strftime("%H:%M"))
                   .group_by(keys).agg(**extra, **stats))
        elif case == "q17":
            price = pl.col("price")
            out = (lazy("bid").with_columns(day=pl.from_epoch("dateTime", time_unit="ms").dt.strftime("%Y-%m-%d"))
                   .group_by("auction", "day")
                   .agg(total_bids=pl.len().cast(pl.Int64), rank1_bids=(price < LOW).sum().cast(pl.Int64),
                        rank2_bids=((price >= LOW) & (price < HIGH)).sum().cast(pl.Int64),
                        rank3_bids=(price >= HIGH).sum().cast(pl.Int64), min_price=price.min(),
                        max_price=price.max(), avg_price=price.mean(), sum_price=price.sum()))
        elif case == "q18":
            out = (lazy("arrived").sort("dateTime", "arrival").drop("arrival")
                   .group_by("bidder", "auction").last())
        elif case == "q19":
            out = (lazy("arrived")
                   .sort(["auction", "price", "arrival"], descending=[False, True, False])
                   .with_columns(rank=(pl.int_range(pl.len()).over("auction") + 1).cast(pl.Int64))
                   .filter(pl.col("rank") <= TOP))
        else:
            raise ValueError(case)
        return normalized_table(case, out.collect().to_arrow())


def first_rows_per_group(table: pa.Table, group: str, sort_keys: list, n: int) -> pa.Table:
    """The first ``n`` rows of each ``group`` in the order ``sort_keys`` (after the group), with
    their position in the group from 1 as ``rank``."""
    ordered = table.take(pc.sort_indices(table, sort_keys=[(group, "ascending"), *sort_keys]))
    keys = ordered[group].to_numpy()
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(keys) else np.empty(0, np.int64)
    position = np.arange(len(keys)) - np.repeat(starts, np.diff(np.r_[starts, len(keys)]))
    kept = np.flatnonzero(position < n)
    return ordered.take(kept).append_column("rank", pa.array(position[kept] + 1))


def _without_suffix(name: str, suffixes: tuple[str, ...]) -> str:
    """``name`` without the first of ``suffixes`` it ends with (pyarrow's aggregate names)."""
    return next((name.removesuffix(s) for s in suffixes if name.endswith(s)), name)


class ArrowNexmarkTables:
    """pyarrow's compute kernels and Acero joins and group-bys, numpy where a step is plain array
    arithmetic (the suite's ``numpy`` peer, which every installation has: so that the quick suite
    cross-checks these workloads without the ``bench`` extra)."""

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
        elif case == "q11":  # a new session where the gap to the bidder's previous bid is GAP or more
            bidder, time = t["bid"]["bidder"].to_numpy(), t["bid"]["dateTime"].to_numpy()
            order = np.lexsort((time, bidder))
            bidder, time = bidder[order], time[order]
            opens = np.r_[True, (bidder[1:] != bidder[:-1]) | (np.diff(time) >= GAP)] if len(time) else \
                np.empty(0, bool)
            starts = np.flatnonzero(opens)
            ends = np.r_[starts[1:], len(time)] - 1
            out = pa.table({"bidder": bidder[starts], "window_start": time[starts], "window_end": time[ends] + GAP,
                            "bid_count": (ends - starts + 1).astype(np.int64)})
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
        elif case == "q23":
            people = t["person"].select(["id", "name", "emailAddress", "creditCard", "city", "state"]) \
                .rename_columns({"id": "person_id"})
            items = t["auction"].select(["itemName", "description", "initialBid", "reserve", "dateTime", "expires",
                                         "seller", "category"]).rename_columns({"dateTime": "auction_dateTime"})
            bids = t["bid"].select(["bidder", "price", "channel", "url", "extra"]).rename_columns({"extra": "bid_extra"})
            with_people = bids.join(people, "bidder", "person_id", join_type="inner", use_threads=False,
                                    coalesce_keys=False)
            out = with_people.join(items, "bidder", "seller", join_type="inner", use_threads=False,
                                   coalesce_keys=False)
        else:
            raise ValueError(case)
        return normalized_table(case, out)

    def nexmark_q23(self, _p) -> pa.Table:
        return self.nexmark_tables("q23")

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
        elif case == "q9":
            bids = t["arrived"].select(["auction", "bidder", "price", "dateTime", "extra", "arrival"])
            bids = bids.rename_columns({"dateTime": "bid_dateTime", "extra": "bid_extra"})
            joined = t["auction"].join(bids, "id", "auction", join_type="inner", use_threads=False,
                                       coalesce_keys=False)
            opened = joined.filter(pc.and_(pc.greater_equal(joined["bid_dateTime"], joined["dateTime"]),
                                           pc.less_equal(joined["bid_dateTime"], joined["expires"])))
            out = first_rows_per_group(opened, "id", [("price", "descending"), ("bid_dateTime", "ascending"),
                                                      ("arrival", "ascending")], 1)
        elif case in ("q15", "q16"):
            bids = t["bid"]
            price, when = bids["price"], bids["dateTime"].cast(pa.timestamp("ms"))
            ranks = {"total": None, "rank1": pc.less(price, LOW),
                     "rank2": pc.and_(pc.greater_equal(price, LOW), pc.less(price, HIGH)),
                     "rank3": pc.greater_equal(price, HIGH)}
            columns = {"day": pc.strftime(when, "%Y-%m-%d"), "minute": pc.strftime(when, "%H:%M"),
                       "channel": bids["channel"].cast(pa.string())}
            aggregates = [("minute", "max")] if case == "q16" else []
            for rank, where in ranks.items():  # a filtered-out value is null: counts skip it
                for what, column in (("bids", "price"), ("bidders", "bidder"), ("auctions", "auction")):
                    name = f"{rank}_{what}"
                    columns[name] = bids[column] if where is None else pc.if_else(where, bids[column], None)
                    aggregates.append((name, "count" if what == "bids" else "count_distinct"))
            keys = ["day"] if case == "q15" else ["channel", "day"]
            out = pa.table(columns).group_by(keys).aggregate(aggregates)
            out = out.rename_columns([_without_suffix(n, ("_count_distinct", "_count", "_max"))
                                      for n in out.column_names])
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
        elif case == "q19":
            out = first_rows_per_group(t["arrived"], "auction",
                                       [("price", "descending"), ("arrival", "ascending")], TOP)
        else:
            raise ValueError(case)
        return normalized_table(case, out)


class SparkNexmarkTables:
    """Spark SQL over the tables' Parquet files (``self.paths``, set by the suite's ``on_data``)."""

    def _register_tables(self) -> None:
        for name, path in self.paths.items():
            self.spark.read.parquet(path).createOrReplaceTempView(name)

    def nexmark_tables(self, case: str) -> pa.Table:
        self._register_tables()
        return normalized_table(case, self.spark.sql(table_sql(case, "`")).toArrow())

    def nexmark_q23(self, _p) -> pa.Table:
        return self.nexmark_tables("q23")

    def nexmark_updating(self, case: str) -> pa.Table:
        self._register_tables()
        sql = updating_sql(case, "`", "date_format(timestamp_millis(`dateTime`), 'yyyy-MM-dd')",
                           "date_format(timestamp_millis(`dateTime`), 'HH:mm')")
        return normalized_table(case, self.spark.sql(sql).toArrow())
