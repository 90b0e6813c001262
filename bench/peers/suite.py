"""The peers of ``grizzly bench`` (``bench/suite.py``): one class per system, one method per
workload, named after it (``nexmark-q1`` -> ``nexmark_q1``), taking the case's parameter and
returning the normalized result (``bench/workloads.py`` says which form each workload has).

They extend the window workloads' peers (``bench/peers/windowed.py``: ``agg_types``,
``concurrent_windows``, ``count_windows``), which extend the YSB peers (imports, threads, Spark
session, C compilation in ``setup``). The YSB-shaped workloads (``ysb``, ``state-size``,
``adaptive-range``, ``adaptive-skew``) run the YSB peers' own query on their data. The join
workloads' queries (Nexmark Q7, Q8, StreamBox's temporal join) come from the mixins of
``bench/peers/joins.py``, the string workload's and Nexmark Q10's and Q14's from those of
``bench/peers/strings.py``. A peer without a method for a workload is reported ``no query`` by
the runner without being started.
"""

from __future__ import annotations

import ctypes
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from grizzly_py import StreamEnvironment
from grizzly_py.workloads import adaptive, bid_strings, nexmark, selection, streambox

from ..window_workloads import ranked, ranked_lists, windowed
from .base import table_of
from .joins import HOW as JOIN_HOW
from .joins import CJoins, DuckDBJoins, NumpyJoins, PolarsJoins, SparkJoins
from .nexmark_tables import HOW as TABLES_HOW
from .nexmark_tables import (ArrowNexmarkTables, DuckDBNexmarkTables, PolarsNexmarkTables, SparkNexmarkTables,
                             grizzly_stream, normalized_table)
from .strings import HOW as STRINGS_HOW
from .strings import ArrowStrings, DuckDBStrings, PolarsStrings, normalized_strings
from .windowed import (DuckDBWindows, GrizzlyWindows, NumpyWindows, PolarsWindows,
                       SparkWindows)
from .ysb_c import CPeer, compile_shared
from .ysb_duckdb import DuckDBPeer
from .ysb_numpy import NumpyPeer, count_windows, view_rows
from .ysb_polars import PolarsPeer
from .ysb_spark import SparkPeer, cluster_session

YSB_LIKE = ("ysb", "state-size", "adaptive-range", "adaptive-skew")
Q5_PANES = nexmark.Q5_SIZE_MS // nexmark.Q5_SLIDE_MS
SB_W = streambox.WINDOW_MS


def join_how(peer: str, how: dict[str, str]) -> dict[str, str]:
    """A peer's ``how`` with its join workloads (the temporal join as a part of streambox's) and,
    where it has them, its string queries (the strings workload, Nexmark Q10 and Q14)."""
    joins = JOIN_HOW[peer]
    return dict(how, **STRINGS_HOW.get(peer, {}), **TABLES_HOW.get(peer, {}), **{"nexmark-q7": joins["nexmark-q7"], "nexmark-q8": joins["nexmark-q8"],
                                   "streambox": how["streambox"] + "; temporal join: " + joins["temporal-join"]})


def _col(table: pa.Table, name: str) -> np.ndarray:
    column = table.column(name)
    return column.to_numpy() if column.num_chunks else np.empty(0, column.type.to_pandas_dtype())


class SuiteMixin:
    """Per-case data: the runner sets ``self.data`` before ``prepare``; ``on_data`` lets a
    peer refresh what its setup derived from the data."""

    def use_data(self, data) -> None:
        self.data = data
        self.on_data()

    def on_data(self) -> None:
        pass

    @classmethod
    def supports(cls, workload: str) -> bool:
        """Whether this peer has a query for ``workload`` (else: not started, ``no query``)."""
        return getattr(cls, workload.replace("-", "_"), None) is not None


# ---- grizzly-py --------------------------------------------------------------------------------

class GrizzlySuite(SuiteMixin, GrizzlyWindows):
    """grizzly-py through the public API; each run builds, compiles (cached after the first run
    in the process) and executes the query; compile time and window latency come from here."""

    how = {"*": "the query of grizzly_py.workloads / bench/window_workloads.py, end to end "
                "incl. query build and compile"}

    def describe(self, workload: str) -> str:
        return f"{self.name}: {self.how['*']}"

    def stream(self, env, case):
        from ..window_workloads import grizzly_query
        from grizzly_py.workloads.ysb import ysb_query

        w, p, t = case.workload, case.param, self.data.table
        if w in YSB_LIKE:
            return ysb_query(env, t, self.data.window_ms)
        if w == "adaptive-selectivity":  # six chained filters: the engine can reorder them
            from ..adaptive import selectivity_stream
            return selectivity_stream(env, t, self.data.window_ms)
        if w in ("agg-types", "concurrent-windows", "count-windows"):
            return grizzly_query(env, t, case)
        if w == "selection":
            return selection.selection_query(env, t, p)
        if w == "nexmark-q1":
            return nexmark.q1(env, t)
        if w == "nexmark-q2":
            return nexmark.q2(env, t)
        if w == "nexmark-q10":
            return nexmark.q10(env, t)
        if w == "nexmark-q14":
            return nexmark.q14(env, t)
        if w == "nexmark-q5":
            return nexmark.q5(env, t) if p == "hot-items" else nexmark.q5_counts(env, t)
        if w == "nexmark-q7":
            return nexmark.q7(env, t)
        if w == "nexmark-q8":
            return nexmark.q8(env, self.data.tables["person"], self.data.tables["auction"])
        if w == "strings":
            return bid_strings.query(env, t, p)
        if w in ("nexmark-tables", "nexmark-updating"):
            return grizzly_stream(env, self.data, p)
        if w == "nexmark-q23":
            return grizzly_stream(env, self.data, "q23")
        if w == "streambox" and p == "temporal-join":
            return streambox.temporal_join_query(env, self.data.tables["left"], self.data.tables["right"])
        if w == "streambox":
            return streambox.streambox_query(env, t, p)
        raise NotImplementedError(f"grizzly peer: no query for {w}")

    @staticmethod
    def normalize(case, out: pa.Table) -> pa.Table:
        w, p = case.workload, case.param
        if w in YSB_LIKE or w == "adaptive-selectivity":
            return windowed(out["window_start"], out["campaign_id"], out["views"])
        if w in ("agg-types", "concurrent-windows"):
            return windowed(out["window_start"], out["campaign_id"], out["value"])
        if w == "count-windows":
            return table_of(campaign_id=out["campaign_id"], first_ts=out["first_ts"],
                            last_ts=out["last_ts"], views=out["views"])
        if w == "selection":
            return table_of(event_time=out["event_time"], key=out["key"], value=out["value"])
        if w == "nexmark-q1":
            return table_of(auction=out["auction"], bidder=out["bidder"], price=out["price"],
                            dateTime=out["dateTime"])
        if w == "nexmark-q2":
            return table_of(auction=out["auction"], price=out["price"])
        if w == "nexmark-q5" and p == "hot-items":
            return table_of(window_end=out["window_end"], auction=out["auction"], num=out["num"])
        if w == "nexmark-q5":
            return table_of(window_end=out["window_end"], max_num=out["max_num"])
        if w == "nexmark-q7":
            return table_of(**{n: out[n] for n in ("window_end", "auction", "bidder", "price", "dateTime")})
        if w == "nexmark-q8":
            return table_of(window_start=out["window_start"], id=out["id"], name=out["name"],
                            auctions=out["auctions"])
        if w == "strings":
            return normalized_strings(p, out)
        if w in ("nexmark-q10", "nexmark-q14"):
            return normalized_strings(w, out)
        if w in ("nexmark-tables", "nexmark-updating"):
            return normalized_table(p, out)
        if w == "nexmark-q23":
            return normalized_table("q23", out)
        if w == "streambox":
            if p == "temporal-join":
                return table_of(window_start=out["window_start"], key=out["key"], event_time=out["event_time"],
                                value=out["value"], event_time_right=out["event_time_right"],
                                value_right=out["value_right"])
            if p == "avg-all":
                return table_of(window_start=out["window_start"], value=out["value"])
            if p == "topk-per-key":
                return ranked_lists(out["window_start"], out["key"], out["value"])
            return windowed(out["window_start"], out["key"], out["value"])
        raise ValueError(w)

    def environment(self):
        return self.gz.StreamEnvironment(parallelism=self.parallelism)

    def run(self) -> pa.Table:
        env = self.environment()
        self.stream(env, self.case).collect("bench")
        result = env.execute()
        pipelines = [p for q in result.metrics.get("queries", []) for p in q.get("pipelines", [])]
        compile_ms = sum(p.get("codegen_ms", 0.0) + p.get("compile_ms", 0.0) for p in pipelines)
        self.info.setdefault("compile_ms_by_case", {}).setdefault(self.case.label, compile_ms)
        stages = [" > ".join(h["stage"] for h in p["variant_history"]) for p in pipelines if p.get("variant_history")]
        if stages:  # the adaptive stages of the last run (bench/adaptive.py shows them over time)
            self.info.setdefault("variants_by_case", {})[self.case.label] = "; ".join(stages)
        spark_jobs = [q for q in result.metrics.get("queries", []) if "input" in q]
        if spark_jobs:  # on Spark: each query's strategy and how its sources reached the tasks
            self.info.setdefault("spark_input_by_case", {})[self.case.label] = \
                "; ".join(f"{q['strategy']}, input {q['input']}" for q in spark_jobs)
        return self.normalize(self.case, result["bench"])

    def latency(self) -> dict:
        """Window latency of one extra (untimed) run, measured around the engine's batch loop."""
        from ..latency import window_latencies

        env = self.gz.StreamEnvironment(parallelism=self.parallelism)
        return window_latencies(self.stream(env, self.case))


class GrizzlySparkSuite(GrizzlySuite):
    """grizzly-py on Spark (``StreamEnvironment.for_spark``): the same queries over the same Arrow
    tables, whose batches travel to the tasks (source pushdown), on local[threads] or, with
    ``grizzly bench --engine spark-cluster``, on the bench's standalone cluster."""

    name = "grizzly_spark"
    how = {"*": "the query of grizzly_py.workloads / bench/window_workloads.py through "
                "StreamEnvironment.for_spark, end to end incl. query build, compile in the tasks"}

    def __init__(self, threads: int = 2, master: str | None = None, conf: dict[str, str] | None = None) -> None:
        super().__init__(threads, name=type(self).name)
        self.threads, self.master, self.conf, self.spark = threads, master, dict(conf or {}), None

    def setup(self, data) -> None:
        super().setup(data)
        from grizzly_py.spark import local_session

        start = time.perf_counter()
        self.spark = local_session(self.threads, app="grizzly-bench") if self.master is None \
            else cluster_session(self.threads, self.master, self.conf)
        self.info.update(master=self.master or f"local[{self.threads}]",
                         session_start_s=time.perf_counter() - start)

    def environment(self):
        return self.gz.StreamEnvironment.for_spark(self.spark)

    def latency(self) -> dict:
        raise NotImplementedError("window latency is measured on the embedded engine")

    def close(self) -> None:
        if self.spark is not None:
            self.spark.stop()
            self.spark = None


class GrizzlySparkFilesSuite(GrizzlySparkSuite):
    """grizzly-py on Spark reading the data set's Parquet copy through ``from_spark``: each table
    the query would read with ``from_arrow`` is ``from_spark(spark.read.parquet(path))`` instead,
    the same files Spark's own plans read (issue 32's "from_spark on files" measure). A plain
    file scan takes the engine's file-scan path (``spark/file_scans.py``): the tasks read the
    files with pyarrow instead of receiving Spark's rows."""

    name = "grizzly_spark_files"
    needs_parquet = True
    how = {"*": "the query of grizzly_py.workloads / bench/window_workloads.py through "
                "StreamEnvironment.for_spark, every source from_spark(spark.read.parquet(copy))"}

    def environment(self):
        env = _ParquetBackedEnvironment.for_spark(self.spark)
        env.parquet_copies = {id(t): str(self.data.parquet_path(n)) for n, t in self.data.tables.items()}
        return env


class _ParquetBackedEnvironment(StreamEnvironment):
    """A Spark environment whose ``from_arrow`` of a bench table reads that table's Parquet copy
    (``parquet_copies``: the table's id -> its file) through ``from_spark``."""

    parquet_copies: dict[int, str] = {}

    def from_arrow(self, data, timestamp=None, watermark=None):
        path = self.parquet_copies.get(id(data))
        if path is None:
            raise ValueError("grizzly_spark_files reads only the data set's own tables")
        return self.from_spark(self.spark.read.parquet(path), timestamp=timestamp, watermark=watermark)


GRIZZLY_WORKLOADS = ("ysb", "state-size", "adaptive-range", "adaptive-skew", "adaptive-selectivity",
                     "agg-types", "concurrent-windows", "count-windows", "selection", "nexmark-q1",
                     "nexmark-q2", "nexmark-q10", "nexmark-q14", "nexmark-q5", "nexmark-q7", "nexmark-q8", "streambox", "strings",
                     "nexmark-tables", "nexmark-updating", "nexmark-q23")
GrizzlySuite.supports = classmethod(lambda cls, workload: workload in GRIZZLY_WORKLOADS)


# ---- hand-written C ------------------------------------------------------------------------------

class CSuite(SuiteMixin, CJoins, CPeer):
    """Hand-written C: YSB (and the YSB-shaped workloads), selection, Nexmark Q7 and Q8, built
    with gcc."""

    SELECTION_SOURCE = Path(__file__).with_name("selection.c")

    def describe(self, workload: str) -> str:
        if workload == "selection":
            return f"{self.name}: hand-written C selection (branch-free copy), per batch, 1 thread"
        if workload in JOIN_HOW["c"]:
            return f"{self.name}: {JOIN_HOW['c'][workload]}"
        return self.description

    def setup(self, data) -> None:
        super().setup(data)
        if self.variant == "hash":
            lib_path, _ = compile_shared(self.SELECTION_SOURCE, Path(self._tmp.name))
            self.sel = ctypes.CDLL(str(lib_path)).selection_process
            p = ctypes.c_void_p
            self.sel.argtypes = [p, p, p, ctypes.c_int64, ctypes.c_int32, p, p, p]
            self.sel.restype = ctypes.c_int64
            self.setup_joins(Path(self._tmp.name))

    def on_data(self) -> None:
        schema = self.data.table.schema
        if "event_type" in schema.names:
            self._cols = [schema.get_field_index(c) for c in ("event_time", "event_type", "campaign_id")]
            self._new_arg = self.data.n_campaigns

    def ysb(self, _p) -> pa.Table:
        out = CPeer.run(self)
        return windowed(out["window_start"], out["campaign_id"], out["count"])

    state_size = adaptive_range = adaptive_skew = ysb

    def selection(self, bound: int) -> pa.Table:
        if self.variant != "hash":
            raise NotImplementedError("c_dense: YSB only")
        batches = []
        for batch in self.data.table.to_batches():
            n = len(batch)
            ts, key, value = (batch.column(i) for i in range(3))
            o_ts, o_key = np.empty(n, np.int64), np.empty(n, np.int64)
            o_val = np.empty(n, np.int32)
            addr = [a.buffers()[1].address + a.offset * w for a, w in ((ts, 8), (key, 8), (value, 4))]
            k = self.sel(*addr, n, bound, o_ts.ctypes.data, o_key.ctypes.data, o_val.ctypes.data)
            batches.append((o_ts[:k], o_key[:k], o_val[:k]))
        parts = [np.concatenate([b[i] for b in batches]) if batches else np.empty(0) for i in range(3)]
        return table_of(event_time=parts[0], key=parts[1], value=parts[2])

    def prepare(self, case) -> None:
        self.case = case

    def run(self) -> pa.Table:
        method = getattr(self, self.case.workload.replace("-", "_"), None)
        if method is None:
            raise NotImplementedError(f"{self.name} peer has no {self.case.workload} query")
        return method(self.case.param)


class CDenseSuite(CSuite):
    """The dense-array YSB variant (keys index a count array): YSB-shaped workloads only."""

    selection = nexmark_q7 = nexmark_q8 = None

    def __init__(self) -> None:
        super().__init__("dense")


# ---- numpy ---------------------------------------------------------------------------------------

class NumpySuite(SuiteMixin, ArrowStrings, ArrowNexmarkTables, NumpyJoins, NumpyWindows):
    how = join_how("numpy", dict(NumpyWindows.how, **{
        "ysb": NumpyPeer.description,
        "adaptive-selectivity": "boolean mask of the six predicates per batch, take, bincount",
        "selection": "boolean mask per batch, take of three columns, concatenate",
        "nexmark-q1": "vectorized column arithmetic per batch",
        "nexmark-q2": "mask auction % 123 == 0 per batch, take",
        "nexmark-q5": "np.unique of (2 s pane, auction) counts, expanded to the 5 windows of "
                      "each pane, np.unique sum, max per window (hot items: keep the counts "
                      "equal to their window's max)",
        "streambox": "dense (window, key) ids; bincount (sum, avg), lexsort (median; top-k: "
                     "the last k of each group, reversed), np.unique of (group, value) (unique count)",
    }))

    def describe(self, workload: str) -> str:
        return f"{self.name}: {self.how.get(workload, self.how['ysb'] if workload in YSB_LIKE else 'no query')}"

    def ysb(self, _p) -> pa.Table:
        out = NumpyPeer.run(self)
        return windowed(out["window_start"], out["campaign_id"], out["count"])

    state_size = adaptive_range = adaptive_skew = ysb

    def _select(self, mask_of, names) -> list[np.ndarray]:
        parts = [[] for _ in names]
        idx = [self.data.table.schema.get_field_index(n) for n in names]
        for batch in self.data.table.to_batches():
            rows = np.flatnonzero(mask_of(batch))
            for part, i in zip(parts, idx):
                part.append(batch.column(i).to_numpy().take(rows))
        return [np.concatenate(p) if p else np.empty(0, np.int64) for p in parts]

    def adaptive_selectivity(self, _p) -> pa.Table:
        view = self.data.view_value
        schema = self.data.table.schema

        def mask(batch):
            m = np.zeros(len(batch), bool)
            m[view_rows(batch.column(schema.get_field_index("event_type")), view)] = True
            for j in range(len(adaptive.SELECTIVITIES)):
                m &= batch.column(schema.get_field_index(f"p{j + 1}")).to_numpy() >= adaptive.PREDICATE_MIN
            return m

        ts, keys = self._select(mask, ("event_time", "campaign_id"))
        return windowed(*count_windows(ts, keys, self.data.window_ms))

    def selection(self, bound: int) -> pa.Table:
        ts, key, value = self._select(lambda b: b.column(2).to_numpy() < bound, ("event_time", "key", "value"))
        return table_of(event_time=ts, key=key, value=value)

    def nexmark_q1(self, _p) -> pa.Table:
        t = self.data.table
        return table_of(auction=_col(t, "auction"), bidder=_col(t, "bidder"),
                        price=_col(t, "price") * 0.908, dateTime=_col(t, "dateTime"))

    def nexmark_q2(self, _p) -> pa.Table:
        i = self.data.table.schema.get_field_index("auction")
        auction, price = self._select(lambda b: b.column(i).to_numpy() % nexmark.Q2_MODULUS == 0,
                                      ("auction", "price"))
        return table_of(auction=auction, price=price)

    def nexmark_q5(self, p) -> pa.Table:
        t = self.data.table
        pane = _col(t, "dateTime") // nexmark.Q5_SLIDE_MS
        auction = _col(t, "auction")
        if not pane.size:
            return table_of(window_end=np.empty(0, np.int64), auction=np.empty(0, np.int64),
                            num=np.empty(0, np.int64)) if p == "hot-items" else \
                table_of(window_end=np.empty(0, np.int64), max_num=np.empty(0, np.int64))
        p0, a0 = pane.min(), auction.min()
        n_a = int(auction.max() - a0) + 1
        ids, counts = np.unique((pane - p0) * n_a + (auction - a0), return_counts=True)
        # window k covers panes k .. k + Q5_PANES - 1: a pane's count goes to Q5_PANES windows
        win = (ids // n_a)[:, None] - np.arange(Q5_PANES)[None, :] + (Q5_PANES - 1)
        wid = (win * n_a + (ids % n_a)[:, None]).ravel()
        wids, inverse = np.unique(wid, return_inverse=True)
        sums = np.bincount(inverse, weights=np.repeat(counts, Q5_PANES)).astype(np.int64)
        k = wids // n_a
        starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        max_num = np.maximum.reduceat(sums, starts)
        window_end = (k + p0 - (Q5_PANES - 1)) * nexmark.Q5_SLIDE_MS + nexmark.Q5_SIZE_MS
        if p == "hot-items":  # wids are sorted, so each window's counts are one run
            hot = np.flatnonzero(sums == np.repeat(max_num, np.diff(np.r_[starts, k.size])))
            return table_of(window_end=window_end[hot], auction=wids[hot] % n_a + a0, num=sums[hot])
        return table_of(window_end=window_end[starts], max_num=max_num)

    def streambox(self, bench: str) -> pa.Table:
        if bench == "temporal-join":
            return self.temporal_join()
        t = self.data.table
        ts, key, value = _col(t, "event_time"), _col(t, "key"), _col(t, "value")
        if bench == "windowed-filter":
            keep = value >= streambox.FILTER_MIN
            ts, key, value = ts[keep], key[keep], value[keep]
        win = ts // SB_W
        if bench == "avg-all":
            w0 = win.min()
            n = np.bincount(win - w0)
            present = np.flatnonzero(n)
            s = np.bincount(win - w0, weights=value)[present]
            return table_of(window_start=(present + w0) * SB_W, value=s / n[present])
        w0, k0 = win.min(), key.min()
        n_key = int(key.max() - k0) + 1
        gid_all = (win - w0) * n_key + (key - k0)
        groups, gid, n = np.unique(gid_all, return_inverse=True, return_counts=True)
        ws, k = (groups // n_key + w0) * SB_W, groups % n_key + k0
        if bench == "windowed-filter":
            return windowed(ws, k, n)
        if bench in ("sum-per-key", "avg-per-key"):
            total = np.bincount(gid, weights=value, minlength=groups.size)
            return windowed(ws, k, total.astype(np.int64) if bench == "sum-per-key" else total / n)
        if bench == "median-per-key":
            order = np.lexsort((value, gid))
            v = value[order].astype(np.float64)
            start = np.r_[0, np.cumsum(n)[:-1]]
            return windowed(ws, k, (v[start + (n - 1) // 2] + v[start + n // 2]) / 2)
        if bench == "unique-count-per-key":
            pairs = np.unique(gid.astype(np.int64) * streambox.VALUE_RANGE + value)
            return windowed(ws, k, np.bincount(pairs // streambox.VALUE_RANGE, minlength=groups.size))
        if bench == "topk-per-key":  # sorted by (group, value): a group's top k are its last k, reversed
            order = np.lexsort((value, gid))
            taken = np.minimum(n, streambox.TOP_K)
            end = np.cumsum(n)
            rank = np.arange(int(taken.sum())) - np.repeat(np.cumsum(taken) - taken, taken)
            rows = order[np.repeat(end - 1, taken) - rank]
            return ranked(np.repeat(ws, taken), np.repeat(k, taken), rank, value[rows])
        raise NotImplementedError(f"numpy peer: no streambox {bench}")


# ---- polars --------------------------------------------------------------------------------------

class PolarsSuite(SuiteMixin, PolarsStrings, PolarsNexmarkTables, PolarsJoins, PolarsWindows):
    how = join_how("polars", dict(PolarsWindows.how, **{
        "ysb": PolarsPeer.description,
        "adaptive-selectivity": "lazy filter on the six predicates, group_by(window, key).len()",
        "selection": "lazy filter, collect, to_arrow",
        "nexmark-q1": "lazy select with arithmetic",
        "nexmark-q2": "lazy filter, select",
        "nexmark-q5": "group_by_dynamic(every 2 s, period 10 s, group_by auction).len(), "
                      "then group_by(window).max() (hot items: joined back on (window, "
                      "num == max))",
        "streambox": "lazy group_by(window start, key).agg(sum | mean | median | n_unique | len | "
                     "top_k(3).sort(descending)), avg-all: group_by(window).mean()",
    }))
    describe = NumpySuite.describe

    def ysb(self, _p) -> pa.Table:
        out = PolarsPeer.run(self)
        return windowed(out["window_start"], out["campaign_id"], out["count"])

    state_size = adaptive_range = adaptive_skew = ysb

    def _lazy(self):
        return self.pl.from_arrow(self.data.table, rechunk=False).lazy()

    def adaptive_selectivity(self, _p) -> pa.Table:
        pl, w = self.pl, self.data.window_ms
        pred = pl.col("event_type") == self.data.view_value
        for j in range(len(adaptive.SELECTIVITIES)):
            pred = pred & (pl.col(f"p{j + 1}") >= adaptive.PREDICATE_MIN)
        out = (self._lazy().filter(pred)
               .group_by((pl.col("event_time") // w * w).alias("window_start"), "campaign_id")
               .agg(pl.len().alias("n")).collect())
        return windowed(out["window_start"], out["campaign_id"], out["n"])

    def selection(self, bound: int) -> pa.Table:
        out = self._lazy().filter(self.pl.col("value") < bound).collect()
        return table_of(event_time=out["event_time"], key=out["key"], value=out["value"])

    def nexmark_q1(self, _p) -> pa.Table:
        pl = self.pl
        out = self._lazy().select("auction", "bidder", pl.col("price") * 0.908, "dateTime").collect()
        return table_of(auction=out["auction"], bidder=out["bidder"], price=out["price"],
                        dateTime=out["dateTime"])

    def nexmark_q2(self, _p) -> pa.Table:
        pl = self.pl
        out = (self._lazy().filter(pl.col("auction") % nexmark.Q2_MODULUS == 0)
               .select("auction", "price").collect())
        return table_of(auction=out["auction"], price=out["price"])

    def nexmark_q5(self, p) -> pa.Table:
        pl = self.pl
        size, slide = nexmark.Q5_SIZE_MS, nexmark.Q5_SLIDE_MS
        counts = (self._lazy().set_sorted("dateTime")
                  .group_by_dynamic("dateTime", every=f"{slide}i", period=f"{size}i",
                                    offset=f"{slide - size}i", group_by="auction", closed="left",
                                    label="left", start_by="window")
                  .agg(pl.len().alias("num")))
        maxima = counts.group_by("dateTime").agg(pl.col("num").max().alias("max_num"))
        if p == "hot-items":
            out = counts.join(maxima, left_on=["dateTime", "num"], right_on=["dateTime", "max_num"]).collect()
            return table_of(window_end=out["dateTime"] + size, auction=out["auction"], num=out["num"])
        out = maxima.collect()
        return table_of(window_end=out["dateTime"] + size, max_num=out["max_num"])

    def streambox(self, bench: str) -> pa.Table:
        if bench == "temporal-join":
            return self.temporal_join()
        pl = self.pl
        lf = self._lazy()
        ws = (pl.col("event_time") // SB_W * SB_W).alias("window_start")
        v = pl.col("value")
        if bench == "avg-all":
            out = lf.group_by(ws).agg(v.mean().alias("value")).collect()
            return table_of(window_start=out["window_start"], value=out["value"])
        if bench == "windowed-filter":
            lf = lf.filter(v >= streambox.FILTER_MIN)
        agg = {"sum-per-key": v.sum(), "avg-per-key": v.mean(), "median-per-key": v.median(),
               "unique-count-per-key": v.n_unique(), "windowed-filter": pl.len(),
               "topk-per-key": v.top_k(streambox.TOP_K).sort(descending=True)}.get(bench)
        if agg is None:
            raise NotImplementedError(f"polars peer: no streambox {bench}")
        out = lf.group_by(ws, "key").agg(agg.alias("value")).collect()
        if bench == "topk-per-key":
            return ranked_lists(out["window_start"], out["key"], out["value"])
        return windowed(out["window_start"], out["key"], out["value"])


# ---- DuckDB --------------------------------------------------------------------------------------

class DuckDBSuite(SuiteMixin, DuckDBStrings, DuckDBNexmarkTables, DuckDBJoins, DuckDBWindows):
    how = join_how("duckdb", dict(DuckDBWindows.how, **{
        "ysb": DuckDBPeer.description,
        "adaptive-selectivity": "SQL WHERE with the six predicates, GROUP BY (window, key)",
        "selection": "SQL SELECT ... WHERE value < s",
        "nexmark-q1": "SQL SELECT with arithmetic",
        "nexmark-q2": "SQL SELECT ... WHERE auction % 123 = 0",
        "nexmark-q5": "count per (2 s pane, auction), cross join range(5), sum per (window, "
                      "auction), max per window (hot items: JOIN of the counts and the max on "
                      "(window, num = max))",
        "streambox": "SQL GROUP BY (window start, key) with sum | avg | median | "
                     "count(DISTINCT) | count(*); top-k: row_number() OVER (PARTITION BY window "
                     "start, key ORDER BY value DESC) <= 3",
    }))
    describe = NumpySuite.describe

    def on_data(self) -> None:
        view = getattr(self.data, "view_value", None)
        if view is not None:
            literal = "'" + view.replace("'", "''") + "'" if isinstance(view, str) else str(int(view))
            from .ysb_duckdb import SQL
            self.sql = SQL.format(w=int(self.data.window_ms), view=literal)

    def ysb(self, _p) -> pa.Table:
        out = DuckDBPeer.run(self)
        return windowed(out["window_start"], out["campaign_id"], out["count"])

    state_size = adaptive_range = adaptive_skew = ysb

    def _q(self, sql: str) -> pa.Table:
        """Run ``sql`` over the data set: its first table as ``t``, every table by its name."""
        views = {"t": self.data.table, **self.data.tables}
        for name, table in views.items():
            self.con.register(name, table)
        try:
            return self.con.sql(sql).to_arrow_table()
        finally:
            for name in views:
                self.con.unregister(name)

    def adaptive_selectivity(self, _p) -> pa.Table:
        view = self.data.view_value
        where = " AND ".join(["event_type = " + (f"'{view}'" if isinstance(view, str) else str(view))]
                             + [f"p{j + 1} >= {adaptive.PREDICATE_MIN}"
                                for j in range(len(adaptive.SELECTIVITIES))])
        w = self.data.window_ms
        out = self._q(f"SELECT (event_time // {w}) * {w} AS ws, campaign_id, count(*) AS n "
                      f"FROM t WHERE {where} GROUP BY ALL")
        return windowed(out["ws"], out["campaign_id"], out["n"])

    def selection(self, bound: int) -> pa.Table:
        out = self._q(f"SELECT event_time, key, value FROM t WHERE value < {int(bound)}")
        return table_of(event_time=out["event_time"], key=out["key"], value=out["value"])

    def nexmark_q1(self, _p) -> pa.Table:
        out = self._q('SELECT auction, bidder, 0.908::DOUBLE * price AS price, "dateTime" FROM t')
        return table_of(auction=out["auction"], bidder=out["bidder"], price=out["price"],
                        dateTime=out["dateTime"])

    def nexmark_q2(self, _p) -> pa.Table:
        out = self._q(f"SELECT auction, price FROM t WHERE auction % {nexmark.Q2_MODULUS} = 0")
        return table_of(auction=out["auction"], price=out["price"])

    def nexmark_q5(self, p) -> pa.Table:
        s, size = nexmark.Q5_SLIDE_MS, nexmark.Q5_SIZE_MS
        counts = f"""
            WITH panes AS (SELECT "dateTime" // {s} AS pane, auction, count(*) AS n FROM t GROUP BY ALL),
                 counts AS (SELECT pane - j AS k, auction, sum(n)::BIGINT AS num
                            FROM panes, range({Q5_PANES}) AS r(j) GROUP BY ALL)"""
        if p == "hot-items":
            out = self._q(counts + f""",
                maxima AS (SELECT k, max(num) AS max_num FROM counts GROUP BY k)
                SELECT c.k * {s} + {size} AS window_end, c.auction, c.num
                FROM counts c JOIN maxima m ON c.k = m.k AND c.num = m.max_num""")
            return table_of(window_end=out["window_end"], auction=out["auction"], num=out["num"])
        out = self._q(counts + f"""
            SELECT k * {s} + {size} AS window_end, max(num)::BIGINT AS max_num FROM counts GROUP BY k""")
        return table_of(window_end=out["window_end"], max_num=out["max_num"])

    def streambox(self, bench: str) -> pa.Table:
        if bench == "temporal-join":
            return self.temporal_join()
        ws = f"(event_time // {SB_W}) * {SB_W}"
        if bench == "avg-all":
            out = self._q(f"SELECT {ws} AS ws, avg(value) AS value FROM t GROUP BY ALL")
            return table_of(window_start=out["ws"], value=out["value"])
        if bench == "topk-per-key":
            out = self._q(f"""
                SELECT ws, key, rank, value FROM (
                    SELECT {ws} AS ws, key, value,
                           row_number() OVER (PARTITION BY {ws}, key ORDER BY value DESC) - 1 AS rank
                    FROM t) WHERE rank < {streambox.TOP_K}""")
            return ranked(out["ws"], out["key"], out["rank"], out["value"])
        agg = {"sum-per-key": "sum(value)::BIGINT", "avg-per-key": "avg(value)",
               "median-per-key": "median(value::DOUBLE)",
               "unique-count-per-key": "count(DISTINCT value)", "windowed-filter": "count(*)"}.get(bench)
        if agg is None:
            raise NotImplementedError(f"duckdb peer: no streambox {bench}")
        where = f"WHERE value >= {streambox.FILTER_MIN}" if bench == "windowed-filter" else ""
        out = self._q(f"SELECT {ws} AS ws, key, {agg} AS value FROM t {where} GROUP BY ALL")
        return windowed(out["ws"], out["key"], out["value"])


# ---- Spark ---------------------------------------------------------------------------------------

class SparkSuite(SuiteMixin, SparkNexmarkTables, SparkJoins, SparkWindows):
    how = join_how("spark", dict(SparkWindows.how, **{
        "ysb": SparkPeer.description,
        "adaptive-selectivity": "from Parquet, filter on the six predicates, window() groupBy count",
        "selection": "from Parquet, filter, toArrow",
        "nexmark-q1": "from Parquet, select with arithmetic (double), toArrow",
        "nexmark-q2": "from Parquet, filter, select, toArrow",
        "nexmark-q5": "from Parquet, groupBy(window(ts, 10 s, 2 s), auction).count(), "
                      "groupBy(window).max (hot items: joined back on (window, num == max))",
        "streambox": "from Parquet, groupBy(window(ts, 1 s), key).agg(sum | avg | median | "
                     "countDistinct | count | slice(sort_array(collect_list, asc=False), 1, 3))",
    }))
    describe = NumpySuite.describe

    def on_data(self) -> None:
        self.path = str(self.data.parquet_path())
        self.paths = {name: str(self.data.parquet_path(name)) for name in self.data.tables}

    def ysb(self, _p) -> pa.Table:
        out = SparkPeer.run(self)
        return windowed(out["window_start"], out["campaign_id"], out["count"])

    state_size = adaptive_range = adaptive_skew = ysb

    def _df(self):
        return self.spark.read.parquet(self.path)

    def adaptive_selectivity(self, _p) -> pa.Table:
        F = self.F
        pred = F.col("event_type") == F.lit(self.data.view_value)
        for j in range(len(adaptive.SELECTIVITIES)):
            pred = pred & (F.col(f"p{j + 1}") >= adaptive.PREDICATE_MIN)
        df = self._df().filter(pred).withColumn("ts", F.timestamp_millis("event_time"))
        out = (df.groupBy(F.window("ts", f"{self.data.window_ms} milliseconds"), "campaign_id")
               .agg(F.count(F.lit(1)).alias("n"))
               .select(F.unix_millis(F.col("window.start")).alias("ws"), "campaign_id", "n").toArrow())
        return windowed(out["ws"], out["campaign_id"], out["n"])

    def selection(self, bound: int) -> pa.Table:
        F = self.F
        out = self._df().filter(F.col("value") < bound).select("event_time", "key", "value").toArrow()
        return table_of(event_time=out["event_time"], key=out["key"], value=out["value"])

    def nexmark_q1(self, _p) -> pa.Table:
        F = self.F
        out = self._df().select("auction", "bidder", (F.col("price").cast("double") * F.lit(0.908))
                                .alias("price"), "dateTime").toArrow()
        return table_of(auction=out["auction"], bidder=out["bidder"], price=out["price"],
                        dateTime=out["dateTime"])

    def nexmark_q2(self, _p) -> pa.Table:
        F = self.F
        out = (self._df().filter(F.col("auction") % nexmark.Q2_MODULUS == 0)
               .select("auction", "price").toArrow())
        return table_of(auction=out["auction"], price=out["price"])

    def nexmark_q5(self, p) -> pa.Table:
        F = self.F
        window = F.window(F.timestamp_millis("dateTime"), f"{nexmark.Q5_SIZE_MS} milliseconds",
                          f"{nexmark.Q5_SLIDE_MS} milliseconds")
        counts = (self._df().groupBy(window.alias("w"), "auction").agg(F.count(F.lit(1)).alias("num"))
                  .select(F.unix_millis(F.col("w.end")).alias("window_end"), "auction", "num"))
        maxima = counts.groupBy("window_end").agg(F.max("num").alias("max_num"))
        if p == "hot-items":  # joined by name: a self-join
            out = (counts.join(maxima.withColumnRenamed("max_num", "num"), ["window_end", "num"])
                   .select("window_end", "auction", "num").toArrow())
            return table_of(window_end=out["window_end"], auction=out["auction"], num=out["num"])
        out = maxima.toArrow()
        return table_of(window_end=out["window_end"], max_num=out["max_num"])

    def streambox(self, bench: str) -> pa.Table:
        if bench == "temporal-join":
            return self.temporal_join()
        F = self.F
        df = self._df().withColumn("ts", F.timestamp_millis("event_time"))
        window = F.window("ts", f"{SB_W} milliseconds")
        if bench == "avg-all":
            out = (df.groupBy(window.alias("w")).agg(F.avg("value").alias("value"))
                   .select(F.unix_millis(F.col("w.start")).alias("ws"), "value").toArrow())
            return table_of(window_start=out["ws"], value=out["value"])
        if bench == "windowed-filter":
            df = df.filter(F.col("value") >= streambox.FILTER_MIN)
        agg = {"sum-per-key": F.sum("value"), "avg-per-key": F.avg("value"),
               "median-per-key": F.median(F.col("value").cast("double")),
               "unique-count-per-key": F.countDistinct("value"),
               "windowed-filter": F.count(F.lit(1)),
               "topk-per-key": F.slice(F.sort_array(F.collect_list("value"), asc=False), 1, streambox.TOP_K),
               }.get(bench)
        if agg is None:
            raise NotImplementedError(f"spark peer: no streambox {bench}")
        out = (df.groupBy(window.alias("w"), "key").agg(agg.alias("value"))
               .select(F.unix_millis(F.col("w.start")).alias("ws"), "key", "value").toArrow())
        if bench == "topk-per-key":
            return ranked_lists(out["ws"], out["key"], out["value"])
        return windowed(out["ws"], out["key"], out["value"])

