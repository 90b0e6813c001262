"""The window workloads of ``bench/windows.py`` (Grizzly paper 7.3.1-7.3.3), defined once.

All three run on the same data: YSB (``grizzly_py.workloads.ysb``) plus a seeded float64
``price`` column, filtered to ``event_type == "view"`` and keyed by ``campaign_id``.

==================== ====================================================================
workload             query (one case per parameter)
==================== ====================================================================
``agg-types``        10 s tumbling event-time window per key, one aggregate of ``price``:
                     sum, count (rows), avg, stddev_pop, median (numpy semantics), mode
                     (most frequent; ties to the smallest)
``concurrent-windows`` sliding event-time windows of 10 s sliding by ``10000 // c`` ms, so
                     that every record lies in ``c`` windows; count per (window, key).
                     Windows are epoch-aligned ``[k * slide, k * slide + 10 s)``, only
                     windows with data are emitted
``count-windows``    per-key tumbling count windows of ``n`` records in stream order: count,
                     min and max ``event_time``; the incomplete last window of a key is not
                     emitted (Flink ``countWindow(n)`` on a bounded stream)
``sliding-count-windows`` per-key count windows of the last 1000 records every
                     ``1000 // c`` records (``c`` concurrent windows; Flink
                     ``countWindow(1000, 1000 // c)``): count, min and max ``event_time``
==================== ====================================================================

Results are normalized to a table of integer id columns (``window_start, campaign_id``; for
count windows every column) followed by value columns, and digested by ``digest``: exact over
the integer (and string) columns, within a relative 1e-9 over float values (peers sum in other
orders), whatever the order of the rows.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .harness import CrossCheck, PeerResult
from grizzly_py.workloads.ysb import VIEW, VIEW_CODE, WINDOW_MS, generate_ysb

AGGREGATES = ("sum", "count", "avg", "stddev_pop", "median", "mode")
RTOL = 1e-9


@dataclass(frozen=True)
class Workload:
    name: str
    source: str
    query: str  # what one case computes, for the report
    param: str  # what a case's parameter is: "aggregate", "c", "n"
    params: tuple  # the default cases

    def cases(self, params: tuple | None = None) -> list["Case"]:
        return [Case(self.name, p) for p in (params or self.params)]

    def parse(self, text: str) -> tuple:
        """``--cases`` on the command line: comma-separated names or integers."""
        items = [t.strip() for t in text.split(",") if t.strip()]
        return tuple(items) if self.param == "aggregate" else tuple(int(t) for t in items)


@dataclass(frozen=True)
class Case:
    workload: str
    param: Any

    @property
    def label(self) -> str:
        return str(self.param) if self.workload == "agg-types" else \
            f"{WORKLOADS[self.workload].param}={self.param}"


WORKLOADS = {w.name: w for w in (
    Workload("agg-types", "Grizzly 7.3.1",
             "filter view, key campaign_id, 10 s tumbling event-time window, one aggregate "
             "of price (count: rows)", "aggregate", AGGREGATES),
    Workload("concurrent-windows", "Grizzly 7.3.2",
             "filter view, key campaign_id, sliding event-time window of 10 s sliding by "
             "10000 // c ms (c concurrent windows), count", "c", (1, 2, 5, 10, 20, 50, 100)),
    Workload("count-windows", "Grizzly 7.3.3",
             "filter view, key campaign_id, tumbling count window of n records (incomplete "
             "last window dropped): count, min and max event_time", "n",
             (1, 10, 100, 1000, 10000)),
    Workload("sliding-count-windows", "Grizzly 7.3.3, sliding",
             "filter view, key campaign_id, count window of the last 1000 records every "
             "1000 // c records (c concurrent windows): count, min and max event_time", "c",
             (1, 10, 100, 1000)),
)}

SLIDING_COUNT_SIZE = 1000


def slide_ms(c: int) -> int:
    return WINDOW_MS // c


def generate(n_rows: int, seed: int = 42, n_campaigns: int = 10_000, batch_rows: int = 1 << 16,
             int_coded: bool = False) -> pa.Table:
    """YSB rows plus ``price`` float64: gamma(2, 10) rounded to 0.1 (a few hundred distinct
    values, so that modes are real and ties occur), from its own seeded stream."""
    table = generate_ysb(n_rows, seed, n_campaigns, batch_rows, int_coded)
    rng = np.random.default_rng([seed, 1])
    price = np.round(rng.gamma(2.0, 10.0, size=n_rows), 1)
    table = table.append_column("price", pa.array(price, type=pa.float64()))
    return pa.Table.from_batches(table.to_batches(max_chunksize=batch_rows), schema=table.schema)


def view_value(table: pa.Table) -> str | int:
    return VIEW_CODE if pa.types.is_integer(table.schema.field("event_type").type) else VIEW


def grizzly_query(env, table: pa.Table, case: Case):
    """The case as a grizzly-py query (the public DSL of spec/api.md)."""
    from grizzly_py import Time, agg, col
    from grizzly_py.windows import SlidingEventTimeWindows, TumblingEventTimeWindows

    keyed = (env.from_arrow(table, timestamp="event_time")
             .filter(col("event_type") == view_value(table))
             .key_by("campaign_id"))
    if case.workload == "agg-types":
        value = agg.count() if case.param == "count" else getattr(agg, case.param)("price")
        return (keyed.window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS)))
                .aggregate(value=value))
    if case.workload == "concurrent-windows":
        assigner = SlidingEventTimeWindows.of(Time.milliseconds(WINDOW_MS),
                                              Time.milliseconds(slide_ms(case.param)))
        return keyed.window(assigner).aggregate(value=agg.count())
    if case.workload in ("count-windows", "sliding-count-windows"):
        size = case.param if case.workload == "count-windows" else SLIDING_COUNT_SIZE
        slide = case.param if case.workload == "count-windows" else SLIDING_COUNT_SIZE // case.param
        return keyed.count_window(size, slide).aggregate(
            views=agg.count(), first_ts=agg.min("event_time"), last_ts=agg.max("event_time"))
    raise ValueError(case.workload)


def windowed(window_start: Any, key: Any, value: Any) -> pa.Table:
    """Normalized window result: window_start (int64 ms), campaign_id, value (int64 counts,
    else float64)."""
    ws = _array(window_start)
    if pa.types.is_timestamp(ws.type):
        ws = ws.cast(pa.timestamp("ms")).cast(pa.int64())
    value = _array(value)
    vtype = pa.int64() if pa.types.is_integer(value.type) else pa.float64()
    return pa.table({"window_start": ws.cast(pa.int64()), "campaign_id": _array(key).cast(pa.int64()),
                     "value": value.cast(vtype)})


def ranked(window_start: Any, key: Any, rank: Any, value: Any) -> pa.Table:
    """Normalized per-key top-k result: one row per (window, key, rank): window_start (int64
    ms), campaign_id, rank (0 for the largest value), value (all int64)."""
    return windowed(window_start, key, value).add_column(2, "rank", _array(rank).cast(pa.int64()))


def ranked_lists(window_start: Any, key: Any, lists: Any) -> pa.Table:
    """``ranked`` from one list of values per (window, key), largest first."""
    lists = _array(lists)
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks() if lists.num_chunks else pa.array([], lists.type)
    lengths = pc.list_value_length(lists).to_numpy(zero_copy_only=False).astype(np.int64)
    starts = np.cumsum(lengths) - lengths
    rank = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(starts, lengths)

    def repeated(values):
        values = _array(values)
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks() if values.num_chunks else pa.array([], values.type)
        if pa.types.is_timestamp(values.type):
            values = values.cast(pa.timestamp("ms")).cast(pa.int64())
        return np.repeat(values.to_numpy(zero_copy_only=False), lengths)
    return ranked(repeated(window_start), repeated(key), rank, lists.flatten())


def counted(key: Any, views: Any, first_ts: Any, last_ts: Any) -> pa.Table:
    """Normalized count-window result: campaign_id, first_ts, last_ts, views (all int64)."""
    cols = {"campaign_id": key, "first_ts": first_ts, "last_ts": last_ts, "views": views}
    return pa.table({k: _array(v).cast(pa.int64()) for k, v in cols.items()})


def _array(values: Any) -> pa.Array | pa.ChunkedArray:
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    if hasattr(values, "to_arrow"):  # polars Series
        return values.to_arrow()
    return pa.array(np.asarray(values))


@dataclass(frozen=True, eq=False)
class Digest:
    """Order-independent digest of a normalized result. ``==`` is exact on the integer
    columns and within ``RTOL`` on float values (kept, in row order, for that)."""

    total: float  # sum of the last column (the count or aggregate value)
    groups: int  # rows
    fingerprint: str  # hash of the integer columns, rows sorted
    floats: np.ndarray | None = field(default=None, repr=False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Digest):
            return NotImplemented
        if (self.groups, self.fingerprint) != (other.groups, other.fingerprint):
            return False
        if self.floats is None or other.floats is None:
            return self.floats is other.floats and self.total == other.total
        return bool(np.allclose(self.floats, other.floats, rtol=RTOL, atol=RTOL, equal_nan=True))

    __hash__ = None  # tolerant equality: not hashable

    def max_rel_diff(self, other: "Digest") -> float | None:
        if self.floats is None or other.floats is None or self.floats.shape != other.floats.shape:
            return None
        scale = np.maximum(np.abs(other.floats), RTOL)
        return float(np.nanmax(np.abs(self.floats - other.floats) / scale, initial=0.0))

    def as_dict(self) -> dict[str, Any]:
        return {"total": self.total, "groups": self.groups, "fingerprint": self.fingerprint}


def string_hashes(column: pa.ChunkedArray) -> np.ndarray:
    """A string column as int64: a stable 64-bit hash of each value, so that string columns take
    part in the fingerprint and the row order. Values repeat in most columns (keys, channels,
    urls): each distinct value is hashed once. A column whose first rows are mostly distinct
    (Nexmark's ``extra``) is hashed value by value instead, which is 2-3 times faster there
    than building its dictionary; both give the same hashes."""
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    if not column.num_chunks or not len(column):
        return np.empty(0, np.int64)
    sample = column.slice(0, DISTINCT_SAMPLE)
    if pc.count_distinct(sample).as_py() > len(sample) // 2:
        return _blake2b_of(column.cast(pa.large_binary()).to_pylist())
    encoded = column.combine_chunks().dictionary_encode()
    hashes = _blake2b_of(encoded.dictionary.cast(pa.large_binary()).to_pylist())
    return hashes[encoded.indices.to_numpy(zero_copy_only=False)]


DISTINCT_SAMPLE = 1 << 16  # the rows string_hashes looks at to choose how to hash a column


def _blake2b_of(values: list[bytes]) -> np.ndarray:
    return np.array([int.from_bytes(hashlib.blake2b(v, digest_size=8).digest(), "little", signed=True)
                     for v in values], dtype=np.int64)


def is_string(t: pa.DataType) -> bool:
    t = t.value_type if pa.types.is_dictionary(t) else t
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def digest(result: pa.Table) -> Digest:
    """Digest a normalized result: its integer and string columns (strings as stable hashes)
    exactly, in rows sorted by them (so that the order of the rows does not matter, and
    duplicate rows count), its float columns within ``RTOL`` in that order."""
    columns = [result.column(i) for i in range(result.num_columns)]
    if any(c.null_count for c in columns):
        raise ValueError("result has nulls")
    arrays = [string_hashes(c) if is_string(c.type) else
              c.to_numpy() if c.num_chunks else np.empty(0, c.type.to_pandas_dtype())
              for c in columns]
    ints = [np.ascontiguousarray(a, dtype=np.int64) for a in arrays if a.dtype.kind in "iu"]
    floats = [a.astype(np.float64) for a in arrays if a.dtype.kind == "f"]
    order = np.lexsort(ints[::-1]) if ints else np.arange(result.num_rows)
    h = hashlib.blake2b(digest_size=8)
    for values in ints:
        h.update(values[order].tobytes())
    last = arrays[-1] if arrays else np.empty(0)
    total = float(last.sum()) if last.dtype.kind == "f" else int(last.sum())
    return Digest(total, result.num_rows, h.hexdigest(),
                  np.stack([f[order] for f in floats]) if floats else None)


def cross_check(results: list[PeerResult]) -> CrossCheck:
    """Group the peers that ran by equal (tolerant) digests; the largest group is the
    reference, and on a tie the group without grizzly-py (the peers check it, not it them)."""
    groups: list[list[PeerResult]] = []
    for r in results:
        if r.ok and r.summary is not None:
            group = next((g for g in groups if g[0].summary == r.summary), None)
            (group.append(r) if group else groups.append([r]))
    if not groups:
        return CrossCheck(None, [], {})
    best = max(groups, key=lambda g: (len(g), all(r.name != "grizzly" for r in g)))
    return CrossCheck(best[0].summary, [r.name for r in best],
                      {r.name: r.summary for g in groups if g is not best for r in g})


def mismatch_detail(s: Digest, ref: Digest) -> str:
    diffs = [f"{f} {getattr(s, f)} != {getattr(ref, f)}" for f in ("groups", "fingerprint")
             if getattr(s, f) != getattr(ref, f)]
    rel = s.max_rel_diff(ref)
    if rel is not None and rel > RTOL:
        diffs.append(f"values differ by up to {rel:.3g} (relative)")
    if s.floats is None and s.total != ref.total:
        diffs.append(f"total {s.total} != {ref.total}")
    return "; ".join(diffs)

