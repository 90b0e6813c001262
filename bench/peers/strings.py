"""The string workload's queries (``grizzly_py.workloads.bid_strings``) and Nexmark Q10 and Q14
(``grizzly_py.workloads.nexmark``) for the suite's batch peers: pyarrow.compute (the ``numpy``
peer), polars and DuckDB, one mixin per peer with a ``strings(case)``, a ``nexmark_q10`` and a
``nexmark_q14`` method (``bench/peers/suite.py`` composes them with the peers' other
workloads). Each returns the normalized result (``peers.base.table_of``) with the columns of
``OUTPUT``:

- ``nexmark-q21``: auction, bidder, price, channel, channel_id;
- ``nexmark-q22``: auction, bidder, price, channel, dir1, dir2, dir3;
- ``url-contains``: auction, bidder, price;
- ``distinct-channels``: window_start, auction, channels;
- ``nexmark-q10``: auction, bidder, price, dateTime, extra, dt, hm;
- ``nexmark-q14``: auction, bidder, price (converted), bidTimeType, dateTime, extra, c_counts.

Each peer reads only the columns its case needs, and writes the query as its users would:
pyarrow's string and temporal kernels over the chunked columns, polars' ``str`` and ``dt``
namespaces, DuckDB's SQL functions. Q21's regular expression is the suite's,
``(&|^)channel_id=([^&]*)``, group 2; where it does not match, the channel id is null. DuckDB's
``regexp_extract`` gives an empty string there instead, which the DuckDB query turns into null
with ``nullif`` (the idiom, a third faster than asking ``regexp_matches`` first): an empty
``channel_id=`` would read as none, and the generator makes none. Q14's converted price is
``price * 0.908`` in float64 everywhere (DuckDB's literal cast to DOUBLE, not DECIMAL), so the
rows' bits agree; its ``c`` count is DuckDB's ``length - length(replace)`` idiom.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from grizzly_py.workloads import bid_strings, nexmark

from .base import table_of

PATTERN, HOT = nexmark.Q21_CHANNEL_ID, nexmark.Q21_CHANNELS
W = bid_strings.WINDOW_MS
HOW = {  # peer -> workload -> how its query is written
    "numpy": {
        "strings": "pyarrow.compute over the chunked columns: Q21 utf8_lower, extract_regex, case_when, "
                   "filter; Q22 split_pattern + list_element; url-contains match_substring + filter; "
                   "distinct-channels Table.group_by(window, auction).aggregate(count_distinct)",
        "nexmark-q10": "pyarrow.compute: cast to timestamp, strftime twice",
        "nexmark-q14": "pyarrow.compute: multiply, filter, hour + case_when, count_substring",
    },
    "polars": {
        "strings": "lazy, from the Arrow columns it reads: Q21 str.to_lowercase, str.extract, when/then; "
                   "Q22 str.split + list.get; url-contains str.contains(literal=True); "
                   "distinct-channels group_by(window, auction).agg(n_unique)",
        "nexmark-q10": "lazy: from_epoch(ms), dt.strftime twice",
        "nexmark-q14": "lazy: filter on price * 0.908, dt.hour + when/then, str.count_matches(literal=True)",
    },
    "duckdb": {
        "strings": "SQL over the Arrow table: Q21 lower, nullif(regexp_extract, ''), CASE; Q22 "
                   "split_part; url-contains contains(); distinct-channels GROUP BY window, auction "
                   "with count(DISTINCT channel)",
        "nexmark-q10": "SQL: strftime(epoch_ms(dateTime), ...) twice",
        "nexmark-q14": "SQL: WHERE on price * 0.908::DOUBLE, CASE on hour(epoch_ms(dateTime)), "
                       "length(extra) - length(replace(extra, 'c', ''))",
    },
}
OUTPUT = {"nexmark-q21": ("auction", "bidder", "price", "channel", "channel_id"),
          "nexmark-q22": ("auction", "bidder", "price", "channel", "dir1", "dir2", "dir3"),
          "url-contains": ("auction", "bidder", "price"),
          "distinct-channels": ("window_start", "auction", "channels"),
          "nexmark-q10": ("auction", "bidder", "price", "dateTime", "extra", "dt", "hm"),
          "nexmark-q14": ("auction", "bidder", "price", "bidTimeType", "dateTime", "extra", "c_counts")}
Q10_FORMATS = {"dt": "%Y-%m-%d", "hm": "%H:%M"}
Q14_PRICE = 0.908


def normalized_strings(case: str, out) -> pa.Table:
    """The output columns of ``case`` (a strings case or ``nexmark-q10``/``nexmark-q14``),
    normalized (grizzly-py's have window_end beside them)."""
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

    def nexmark_q10(self, _p) -> pa.Table:
        t = self.data.table
        when = t["dateTime"].cast(pa.timestamp("ms"))
        out = {name: t[name] for name in ("auction", "bidder", "price", "dateTime", "extra")}
        out.update({name: pc.strftime(when, fmt) for name, fmt in Q10_FORMATS.items()})
        return normalized_strings("nexmark-q10", out)

    def nexmark_q14(self, _p) -> pa.Table:
        t = self.data.table.select(["auction", "bidder", "price", "dateTime", "extra"])
        converted = pc.multiply(t["price"], Q14_PRICE)
        t = t.filter(pc.and_(pc.greater(converted, nexmark.Q14_MIN_PRICE), pc.less(converted, nexmark.Q14_MAX_PRICE)))
        hour = pc.hour(t["dateTime"].cast(pa.timestamp("ms")))
        day = pc.and_(pc.greater_equal(hour, 8), pc.less_equal(hour, 18))
        night = pc.or_(pc.less_equal(hour, 6), pc.greater_equal(hour, 20))
        time_type = pc.case_when(pc.make_struct(day, night, field_names=["day", "night"]),
                                 "dayTime", "nightTime", "otherTime")
        return normalized_strings("nexmark-q14", {
            "auction": t["auction"], "bidder": t["bidder"], "price": pc.multiply(t["price"], Q14_PRICE),
            "bidTimeType": time_type, "dateTime": t["dateTime"], "extra": t["extra"],
            "c_counts": pc.count_substring(t["extra"], "c")})


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

    def nexmark_q10(self, _p) -> pa.Table:
        pl = self.pl
        when = pl.from_epoch("dateTime", time_unit="ms")
        out = (self._read("auction", "bidder", "price", "dateTime", "extra")
               .with_columns(when.dt.strftime(fmt).alias(name) for name, fmt in Q10_FORMATS.items())
               .collect())
        return normalized_strings("nexmark-q10", out)

    def nexmark_q14(self, _p) -> pa.Table:
        pl = self.pl
        converted, hour = pl.col("price") * Q14_PRICE, pl.from_epoch("dateTime", time_unit="ms").dt.hour()
        time_type = (pl.when((hour >= 8) & (hour <= 18)).then(pl.lit("dayTime"))
                     .when((hour <= 6) | (hour >= 20)).then(pl.lit("nightTime")).otherwise(pl.lit("otherTime")))
        out = (self._read("auction", "bidder", "price", "dateTime", "extra")
               .filter((converted > nexmark.Q14_MIN_PRICE) & (converted < nexmark.Q14_MAX_PRICE))
               .select("auction", "bidder", converted.alias("price"), time_type.alias("bidTimeType"),
                       "dateTime", "extra", pl.col("extra").str.count_matches("c", literal=True).alias("c_counts"))
               .collect())
        return normalized_strings("nexmark-q14", out)


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

    def nexmark_q10(self, _p) -> pa.Table:
        formats = ", ".join(f"""strftime(epoch_ms("dateTime"), '{fmt}') AS {name}""" for name, fmt in Q10_FORMATS.items())
        out = self._q(f'SELECT auction, bidder, price, "dateTime", extra, {formats} FROM t')
        return normalized_strings("nexmark-q10", out)

    def nexmark_q14(self, _p) -> pa.Table:
        out = self._q(f"""
            SELECT auction, bidder, price * {Q14_PRICE}::DOUBLE AS price,
                   CASE WHEN hour(epoch_ms("dateTime")) BETWEEN 8 AND 18 THEN 'dayTime'
                        WHEN hour(epoch_ms("dateTime")) <= 6 OR hour(epoch_ms("dateTime")) >= 20 THEN 'nightTime'
                        ELSE 'otherTime' END AS "bidTimeType",
                   "dateTime", extra, length(extra) - length(replace(extra, 'c', '')) AS c_counts
            FROM t WHERE price * {Q14_PRICE}::DOUBLE > {nexmark.Q14_MIN_PRICE}
                     AND price * {Q14_PRICE}::DOUBLE < {nexmark.Q14_MAX_PRICE}""")
        return normalized_strings("nexmark-q14", out)
