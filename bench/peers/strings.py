"""The string workload's queries (``grizzly_py.workloads.bid_strings``) for the suite's batch
peers: pyarrow.compute (the ``numpy`` peer), polars and DuckDB, one mixin per peer with a
``strings(case)`` method (``bench/peers/suite.py`` composes them with the peers' other
workloads). Each returns the normalized result (``peers.base.table_of``):

- ``nexmark-q21``: auction, bidder, price, channel, channel_id;
- ``nexmark-q22``: auction, bidder, price, channel, dir1, dir2, dir3;
- ``url-contains``: auction, bidder, price;
- ``distinct-channels``: window_start, auction, channels.

Each peer reads only the columns its case needs, and writes the query as its users would:
pyarrow's string kernels over the chunked columns, polars' ``str`` namespace, DuckDB's SQL
functions. Q21's regular expression is the suite's, ``(&|^)channel_id=([^&]*)``, group 2; where
it does not match, the channel id is null. DuckDB's ``regexp_extract`` gives an empty string
there instead, which the DuckDB query turns into null with ``nullif`` (the idiom, a third faster
than asking ``regexp_matches`` first): an empty ``channel_id=`` would read as none, and the
generator makes none.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from grizzly_py.workloads import bid_strings, nexmark

from .base import table_of

PATTERN, HOT = nexmark.Q21_CHANNEL_ID, nexmark.Q21_CHANNELS
W = bid_strings.WINDOW_MS
HOW = {
    "numpy": "pyarrow.compute over the chunked columns: Q21 utf8_lower, extract_regex, case_when, "
             "filter; Q22 split_pattern + list_element; url-contains match_substring + filter; "
             "distinct-channels Table.group_by(window, auction).aggregate(count_distinct)",
    "polars": "lazy, from the Arrow columns it reads: Q21 str.to_lowercase, str.extract, when/then; "
              "Q22 str.split + list.get; url-contains str.contains(literal=True); "
              "distinct-channels group_by(window, auction).agg(n_unique)",
    "duckdb": "SQL over the Arrow table: Q21 lower, nullif(regexp_extract, ''), CASE; Q22 "
              "split_part; url-contains contains(); distinct-channels GROUP BY window, auction "
              "with count(DISTINCT channel)",
}
OUTPUT = {"nexmark-q21": ("auction", "bidder", "price", "channel", "channel_id"),
          "nexmark-q22": ("auction", "bidder", "price", "channel", "dir1", "dir2", "dir3"),
          "url-contains": ("auction", "bidder", "price"),
          "distinct-channels": ("window_start", "auction", "channels")}


def normalized_strings(case: str, out) -> pa.Table:
    """The output columns of ``case``, normalized (grizzly-py's have window_end beside them)."""
    return table_of(**{name: out[name] for name in OUTPUT[case]})


class ArrowStrings:
    """pyarrow.compute (the suite's ``numpy`` peer: a vectorized batch library, 1 thread)."""

    def strings(self, case: str) -> pa.Table:
        t = self.data.table
        if case == "nexmark-q21":
            lower = pc.utf8_lower(t["channel"])
            from_url = pc.struct_field(pc.extract_regex(t["url"], "(?P<sep>&|^)channel_id=(?P<id>[^&]*)"), "id")
            hot = [pc.equal(lower, name) for name in HOT]
            channel_id = pc.case_when(pc.make_struct(*hot, field_names=HOT), *map(str, range(len(HOT))), from_url)
            keep = pc.or_kleene(pc.is_valid(from_url), pc.is_in(lower, pa.array(HOT)))
            out = t.select(["auction", "bidder", "price", "channel"]).append_column("channel_id", channel_id)
            return normalized_strings(case, out.filter(keep))
        if case == "nexmark-q22":
            pieces = pc.split_pattern(t["url"], "/")  # (every url has 7 pieces: list_element's index exists)
            out = {name: t[name] for name in ("auction", "bidder", "price", "channel")}
            out.update({f"dir{i - 2}": pc.list_element(pieces, i) for i in (3, 4, 5)})
            return normalized_strings(case, out)
        if case == "url-contains":
            keep = pc.match_substring(t["url"], bid_strings.URL_TEXT)
            return normalized_strings(case, t.select(["auction", "bidder", "price"]).filter(keep))
        if case == "distinct-channels":
            window = pc.multiply(pc.divide(t["dateTime"], W), W)  # (integer division: non-negative times)
            keyed = pa.table({"window_start": window, "auction": t["auction"], "channel": t["channel"]})
            out = keyed.group_by(["window_start", "auction"]).aggregate([("channel", "count_distinct")])
            return normalized_strings(case, out.rename_columns(["window_start", "auction", "channels"]))
        raise NotImplementedError(f"pyarrow peer: no strings case {case}")


class PolarsStrings:
    def _read(self, *names: str):
        return self.pl.from_arrow(self.data.table.select(list(names)), rechunk=False).lazy()

    def strings(self, case: str) -> pa.Table:
        pl = self.pl
        if case == "nexmark-q21":
            lower = pl.col("channel").str.to_lowercase()
            from_url = pl.col("url").str.extract(PATTERN, 2)
            channel_id = from_url
            for code, name in reversed(list(enumerate(HOT))):
                channel_id = pl.when(lower == name).then(pl.lit(str(code))).otherwise(channel_id)
            out = (self._read("auction", "bidder", "price", "channel", "url")
                   .filter(from_url.is_not_null() | lower.is_in(HOT))
                   .select("auction", "bidder", "price", "channel", channel_id.alias("channel_id")).collect())
        elif case == "nexmark-q22":
            pieces = pl.col("url").str.split("/")
            out = (self._read("auction", "bidder", "price", "channel", "url")
                   .select("auction", "bidder", "price", "channel",
                           *(pieces.list.get(i, null_on_oob=True).alias(f"dir{i - 2}") for i in (3, 4, 5)))
                   .collect())
        elif case == "url-contains":
            out = (self._read("auction", "bidder", "price", "url")
                   .filter(pl.col("url").str.contains(bid_strings.URL_TEXT, literal=True))
                   .select("auction", "bidder", "price").collect())
        elif case == "distinct-channels":
            out = (self._read("dateTime", "auction", "channel")
                   .group_by((pl.col("dateTime") // W * W).alias("window_start"), "auction")
                   .agg(pl.col("channel").n_unique().alias("channels")).collect())
        else:
            raise NotImplementedError(f"polars peer: no strings case {case}")
        return normalized_strings(case, out)


class DuckDBStrings:
    def strings(self, case: str) -> pa.Table:
        if case == "nexmark-q21":
            names = " ".join(f"WHEN lc = '{name}' THEN '{code}'" for code, name in enumerate(HOT))
            hot = ", ".join(f"'{name}'" for name in HOT)
            out = self._q(f"""
                SELECT auction, bidder, price, channel, CASE {names} ELSE from_url END AS channel_id
                FROM (SELECT auction, bidder, price, channel, lower(channel) AS lc,
                             nullif(regexp_extract(url, '{PATTERN}', 2), '') AS from_url FROM t)
                WHERE from_url IS NOT NULL OR lc IN ({hot})""")
        elif case == "nexmark-q22":
            out = self._q("""SELECT auction, bidder, price, channel, split_part(url, '/', 4) AS dir1,
                                    split_part(url, '/', 5) AS dir2, split_part(url, '/', 6) AS dir3 FROM t""")
        elif case == "url-contains":
            out = self._q(f"SELECT auction, bidder, price FROM t WHERE contains(url, '{bid_strings.URL_TEXT}')")
        elif case == "distinct-channels":
            out = self._q(f"""SELECT "dateTime" // {W} * {W} AS window_start, auction,
                                     count(DISTINCT channel) AS channels FROM t GROUP BY ALL""")
        else:
            raise NotImplementedError(f"duckdb peer: no strings case {case}")
        return normalized_strings(case, out)
