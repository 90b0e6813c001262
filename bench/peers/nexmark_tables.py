"""The ``nexmark-tables`` workload's queries of the batch peers (polars, DuckDB): the Nexmark
queries beyond windows, whose result is a table of rows (``grizzly_py.workloads.nexmark``):

- ``q0``: pass-through, every bid column;
- ``q3``: the auctions of category 10 joined with their seller in OR, ID or CA (name, city,
  state, auction id);
- ``q13``: each bid joined with the static side input on ``auction % 10000`` (a lookup join);
- ``q20``: the bids joined with their auction of category 10.

A regular join over whole (bounded) inputs is the inner join of both, so a batch peer computes
it in one join. Each method returns the normalized result (``OUTPUT``'s columns in that order,
``workloads.row_digest`` hashes every row; the order of rows does not matter).
"""

from __future__ import annotations

import pyarrow as pa

from grizzly_py.workloads import nexmark

from .base import table_of

CASES = ("q0", "q3", "q13", "q20")
OUTPUT = {
    "q0": ("auction", "bidder", "price", "channel", "url", "dateTime", "extra"),
    "q3": ("name", "city", "state", "id"),
    "q13": ("auction", "bidder", "price", "dateTime", "value"),
    "q20": ("auction", "bidder", "price", "channel", "url", "itemName", "description", "initialBid", "reserve",
            "expires", "seller", "category", "bid_dateTime", "bid_extra", "auction_dateTime"),
}
CATEGORY, STATES, KEYS = nexmark.Q3_Q20_CATEGORY, nexmark.Q3_STATES, nexmark.Q13_KEYS
HOW = {
    "polars": {"nexmark-tables": "lazy: q0 select; q3/q20 filter then inner join; q13 join with the "
                                 "side input on auction % 10000"},
    "duckdb": {"nexmark-tables": "SQL: q0 SELECT *; q3/q20 JOIN with WHERE; q13 JOIN with the side "
                                 "input ON auction % 10000 = key"},
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
    raise ValueError(case)


class DuckDBNexmarkTables:
    def nexmark_tables(self, case: str) -> pa.Table:
        states = ", ".join(f"'{s}'" for s in STATES)
        sql = {
            "q0": "SELECT * FROM bid",
            "q3": f"""SELECT P.name, P.city, P.state, A.id FROM auction A JOIN person P ON A.seller = P.id
                      WHERE A.category = {CATEGORY} AND P.state IN ({states})""",
            "q13": f"""SELECT B.auction, B.bidder, B.price, B."dateTime", S.value
                       FROM bid B JOIN side S ON B.auction % {KEYS} = S.key""",
            "q20": f"""SELECT B.auction, B.bidder, B.price, B.channel, B.url, A."itemName", A.description,
                              A."initialBid", A.reserve, A.expires, A.seller, A.category,
                              B."dateTime" AS "bid_dateTime", B.extra AS bid_extra,
                              A."dateTime" AS "auction_dateTime"
                       FROM bid B JOIN auction A ON B.auction = A.id WHERE A.category = {CATEGORY}""",
        }[case]
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
