"""Every benchmark workload (docs/benchmarks.md, "Workloads, pending features, peers"), defined
once, for ``grizzly bench``.

A workload is a list of cases (one parameter each: an aggregate, a number of concurrent windows,
a count-window size, a number of keys, a selectivity, a StreamBox benchmark), the seeded data
each case runs on (cases with equal ``data_key`` share one data set), the form of its result
(``digest``: exact on integer columns, relative 1e-9 on floats; ``rows``: an order-independent
hash of every output row, for projections) and whether grizzly-py can run it today. A workload
(or a case) the engine cannot run yet carries ``pending = "needs <feature> (issue N)"``: it is
listed in every report with that reason, its generator is still here, and it turns runnable by
clearing the field once the engine has the feature.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from .window_workloads import AGGREGATES, Digest
from .window_workloads import WORKLOADS as WINDOW_WORKLOADS
from .window_workloads import digest as window_digest
from .window_workloads import is_string, string_hashes
from .window_workloads import generate as generate_priced_ysb
from .ysb_data import BenchData, YsbData
from grizzly_py.workloads import adaptive, bid_strings, nexmark, selection, streambox
from grizzly_py.workloads.ysb import generate_ysb

ADAPTIVE = ("grizzly-py runs adaptively (default AdaptiveSettings: generic for 65,536 records, "
            "instrumented for 200,000, then the optimized variant once it compiled in the background); "
            "the stages of its last run are in the JSON (`variants_by_case`): jobs of this size end "
            "within ~0.1 s, mostly before the optimized variant is compiled; bench/adaptive.py runs "
            "long streams and plots the stages over time (docs/benchmarks.md, Adaptive optimizations)")


@dataclass(frozen=True)
class Case:
    workload: str
    param: Any
    label: str
    pending: str | None = None


@dataclass
class Workload:
    name: str
    source: str
    query: str
    params: tuple = (None,)
    quick_params: tuple | None = None
    rows: int = 5_000_000  # default input rows (events for Nexmark)
    quick_rows: int = 100_000
    make: Callable[[Any, int, int], BenchData] | None = None  # (param, rows, seed) -> data
    data_key: Callable[[Any], Any] = lambda p: None
    result: str = "digest"  # or "rows" (projections)
    windows: bool = True  # time windows: window latency is measured
    pending: str | None = None  # the whole workload cannot run yet
    pending_cases: dict = field(default_factory=dict)  # param -> reason
    note: str | None = None  # what part runs, what is left
    label: Callable[[Any], str] = lambda p: "-" if p is None else str(p)

    def cases(self, quick: bool = False, params: tuple | None = None) -> list[Case]:
        chosen = params or (self.quick_params if quick and self.quick_params else self.params)
        return [Case(self.name, p, self.label(p), self.pending or self.pending_cases.get(p))
                for p in chosen]

    def summarize(self, table: pa.Table):
        return row_digest(table) if self.result == "rows" else window_digest(table)


def row_digest(table: pa.Table) -> Digest:
    """Order-independent digest of a projection's output: row count and the sum (mod 2^64) of a
    hash of each row (integer values, the bits of float values, stable hashes of strings),
    computed in O(rows)."""
    n = table.num_rows
    acc = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i, column in enumerate(table.columns):
            if column.null_count:
                raise ValueError("result has nulls")
            values = string_hashes(column) if is_string(column.type) else \
                column.to_numpy() if column.num_chunks else np.empty(0, np.int64)
            bits = values.astype(np.float64).view(np.uint64) if values.dtype.kind == "f" \
                else values.astype(np.int64).view(np.uint64)
            h = (bits + np.uint64(0x9E3779B97F4A7C15 * (i + 1) % 2**64)) * np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(31)
            acc = (acc ^ h) * np.uint64(0x94D049BB133111EB)
        acc ^= acc >> np.uint64(29)
        total = int(acc.sum(dtype=np.uint64)) if n else 0
    fingerprint = hashlib.blake2b(total.to_bytes(8, "little") + n.to_bytes(8, "little"),
                                  digest_size=8).hexdigest()
    return Digest(n, n, fingerprint)


def _ysb(n_campaigns: int = 10_000):
    return lambda p, rows, seed: YsbData(generate_ysb(rows, seed, n_campaigns), n_campaigns)


def _priced(p, rows, seed):
    return YsbData(generate_priced_ysb(rows, seed), 10_000)


def _bids(p, rows, seed):
    return BenchData(nexmark.generate_bids(rows, seed))


def _persons_and_auctions(p, rows, seed):
    return BenchData({"person": nexmark.generate_persons(rows, seed),
                      "auction": nexmark.generate_auctions(rows, seed)}, window_ms=nexmark.Q8_WINDOW_MS)


def arrived_bids(bids: pa.Table) -> pa.Table:
    """The bids with their arrival index as the column ``arrival``: grizzly-py breaks ties by
    arrival, SQL and dataframe peers see it as data."""
    return bids.append_column("arrival", pa.array(np.arange(bids.num_rows, dtype=np.int64)))


def _nexmark_tables(p, rows, seed):
    """All three Nexmark streams of ``rows`` events, Q13's side input and the bids with their
    arrival (``arrived``, the same buffers)."""
    bids = nexmark.generate_bids(rows, seed)
    return BenchData({"bid": bids, "person": nexmark.generate_persons(rows, seed),
                      "auction": nexmark.generate_auctions(rows, seed), "side": nexmark.q13_side_input(),
                      "arrived": arrived_bids(bids)})


def _streambox(p, rows, seed):
    """One stream of ``rows`` records; for the temporal join two of ``rows // 2`` each."""
    if p == "temporal-join":
        left, right = streambox.generate_temporal_join(rows // 2, seed)
        return BenchData({"left": left, "right": right}, window_ms=streambox.WINDOW_MS)
    return BenchData(streambox.generate_streambox(rows, seed), window_ms=streambox.WINDOW_MS)


_W = WINDOW_WORKLOADS
WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("ysb", "Grizzly 7.1.2",
             "filter event_type == view, key campaign_id, 10 s tumbling event-time window, count",
             rows=20_000_000, quick_rows=200_000, make=_ysb()),
    Workload("nexmark-q1", "Nexmark (Flink suite)",
             "bids: auction, bidder, 0.908 * price, dateTime", make=_bids, result="rows", windows=False),
    Workload("nexmark-q2", "Nexmark",
             "bids where auction % 123 == 0: auction, price", make=_bids, result="rows", windows=False),
    Workload("nexmark-q10", "Nexmark (Flink suite)",
             "bids: auction, bidder, price, dateTime, extra and the date 'yyyy-MM-dd' and time 'HH:mm' "
             "of dateTime as strings (UTC)", make=_bids, result="rows", windows=False),
    Workload("nexmark-q14", "Nexmark (Flink suite)",
             "bids whose 0.908 * price lies in (1M, 50M): auction, bidder, converted price, "
             "dayTime/nightTime/otherTime from the hour, dateTime, extra and its number of 'c' "
             "(str.count_matches, literal, for the suite's count_char UDF)",
             make=_bids, result="rows", windows=False),
    Workload("nexmark-q5", "Nexmark",
             "hot items: bids per auction in 10 s windows sliding by 2 s (chained windows); case "
             "max-count: the max count per window (steps 1-2); hot-items: the auctions whose count "
             "is that max (step 3, a window join of the counts with the max)",
             params=("max-count", "hot-items"), make=_bids),
    Workload("nexmark-q7", "Nexmark", "highest bid: max price per 10 s tumbling window, joined "
             "back to the bids with that price (a window join of the bids with their window's max)",
             quick_rows=500_000, make=_bids),
    Workload("nexmark-q8", "Nexmark", "new users: persons and auctions joined on person.id == "
             "auction.seller in the same 10 s tumbling window, counted per person and window; "
             "input records: the persons and auctions (8% of the events)",
             rows=50_000_000, quick_rows=1_000_000, make=_persons_and_auctions),
    Workload("nexmark-tables", "Nexmark (Flink suite)",
             "the queries beyond fixed windows, on all three streams: q0 pass-through (every bid "
             "column); q3 auctions of category 10 joined with their seller in OR/ID/CA (a regular "
             "join); q11 bids per bidder session (10 s gap, a session window); q13 each bid joined "
             "with a static 10,000-row side input on auction % 10000 (a lookup join); q20 the bids "
             "joined with their auction of category 10 (a regular join)",
             params=("q0", "q3", "q11", "q13", "q20"), quick_rows=50_000, make=_nexmark_tables, result="rows",
             windows=False),
    Workload("nexmark-updating", "Nexmark (Flink suite)",
             "updating streams, their final tables: q4 the auctions regular-joined with the bids placed "
             "while open, max price per auction, average of those per category (a running aggregate "
             "over a running aggregate); q9 per auction its winning bid placed while open (a regular "
             "join, then Top-1); q15 per day the bids, distinct bidders and distinct auctions, in all "
             "and per price rank (count_distinct with where=); q16 the same per channel and day with "
             "the day's latest minute (a running max of strings); q17 per auction and day (yyyy-MM-dd) the bids, bids per price rank, "
             "min/max/avg/sum price; q18 the last bid per (bidder, auction); q19 the 10 highest bids "
             "per auction (Top-N)",
             params=("q4", "q9", "q15", "q16", "q17", "q18", "q19"), quick_rows=30_000, make=_nexmark_tables, windows=False),
    Workload("nexmark-q23", "Nexmark (Flink suite)",
             "each bid joined with its bidder and with every auction that bidder sells (two regular "
             "joins; the output grows with the square of the input: 10k events give 0.6M rows)",
             rows=10_000, quick_rows=5_000, make=_nexmark_tables, result="rows", windows=False),
    Workload("strings", "Nexmark Q21, Q22 (Flink suite); string functions",
             "bids (10.0M of 10.87M events): nexmark-q21, a channel id from lower(channel) or "
             "REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2), null ones dropped; nexmark-q22, "
             "SPLIT_INDEX(url, '/', 3|4|5); url-contains, the bids whose url contains "
             f"'{bid_strings.URL_TEXT}' (auction, bidder, price); distinct-channels, count_distinct(channel) "
             f"per auction and {bid_strings.WINDOW_MS // 1000} s tumbling window",
             params=bid_strings.CASES, rows=10_870_000, make=_bids, result="rows", windows=False),
    Workload("agg-types", _W["agg-types"].source, _W["agg-types"].query, params=AGGREGATES,
             quick_params=("sum", "median"), rows=5_000_000, make=_priced),
    Workload("concurrent-windows", _W["concurrent-windows"].source, _W["concurrent-windows"].query,
             params=(1, 10, 100), quick_params=(1, 10), rows=5_000_000, make=_priced,
             label=lambda c: f"c={c}"),
    Workload("count-windows", _W["count-windows"].source,
             _W["count-windows"].query + "; one campaign, so that windows of 1M views fill",
             params=(1, 100, 10_000, 1_000_000), quick_params=(1, 100), make=_ysb(1), windows=False,
             label=lambda n: f"n={n:,}"),
    Workload("state-size", "Grizzly 7.3.4", "the YSB query with 1 to 10M distinct campaign_id keys",
             params=(1, 1_000, 100_000, 10_000_000), quick_params=(1, 10_000),
             make=lambda k, rows, seed: YsbData(generate_ysb(rows, seed, k), k), data_key=lambda k: k,
             label=lambda k: f"keys={k:,}"),
    Workload("selection", "PipeFabric table 1",
             "value < s with selectivity s of 100%, 50%, 10%, 0%: event_time, key, value",
             params=selection.SELECTIVITIES, quick_params=(50, 0), result="rows", windows=False,
             make=lambda p, rows, seed: BenchData(selection.generate_selection(rows, seed)),
             label=lambda s: f"{s}%"),
    Workload("streambox", "StreamBox-HBM benchmarks 1-8",
             "1 s tumbling windows over (event_time, key, value): per-key sum, avg, median, top-3 "
             "(result: one row per window, key and rank), "
             "unique count; avg over all keys; temporal join (two streams of rows / 2 records "
             f"over {streambox.JOIN_KEYS:,} keys, every pair with equal keys in one window); "
             "windowed filter (value >= 900, count per key)", params=streambox.BENCHMARKS,
             quick_params=("sum-per-key", "median-per-key", "avg-all", "topk-per-key", "temporal-join"),
             make=_streambox, data_key=lambda p: p == "temporal-join"),
    Workload("adaptive-range", "Grizzly 7.4.1",
             f"YSB; after a third of the run the distinct keys grow {adaptive.RANGE_GROWTH}x "
             f"({adaptive.RANGE_KEYS:,} -> {adaptive.RANGE_KEYS * adaptive.RANGE_GROWTH:,})",
             make=lambda p, rows, seed: YsbData(adaptive.generate_range(rows, seed),
                                                adaptive.RANGE_KEYS * adaptive.RANGE_GROWTH),
             note=ADAPTIVE),
    Workload("adaptive-selectivity", "Grizzly 7.4.2",
             "YSB with five >= predicates (selectivities 90/70/50/30/10%); p1 and p5 swap mid-run",
             make=lambda p, rows, seed: YsbData(adaptive.generate_selectivity(rows, seed), 10_000),
             note=ADAPTIVE),
    Workload("adaptive-skew", "Grizzly 7.4.3",
             "YSB with 1M keys drifting from uniform to 60% of the records on one key",
             make=lambda p, rows, seed: YsbData(adaptive.generate_skew(rows, seed), adaptive.SKEW_KEYS),
             note=ADAPTIVE),
)}
