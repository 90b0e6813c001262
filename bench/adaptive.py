"""Adaptive compilation over time: the Grizzly paper's figures 12, 13 and 14 (issue 5's bench).

    python -m bench.adaptive [--rows N] [--repeat R] [--quick] [--no-ysb]

Each scenario (``grizzly_py.workloads.adaptive``) runs as a stream on the embedded engine, once
per curve: ``adaptive`` (the default settings), ``generic`` (``adaptive=False``) and, for the
selectivity scenario, two fixed predicate orders (``p5 first``: the best order before the swap,
``p1 first``: the best after it; branching filter code, forced through
``AdaptiveSettings(specializer=...)``, key placement as the profile says). The source is an
iterator of record batches that logs ``time.perf_counter()`` and the records done each time the
engine pulls the next batch (it pulls when it finished the previous one); binned, the log gives
million records per second over time, and it maps the variant history's ``at_record`` to time.

The scenario generators produce ``--distinct-rows`` rows (memory); the stream replays them to
``--rows`` records (``ReplayStream``): each chunk of ``CHUNK_BATCHES`` batches (larger than the
caches) is replayed ``rows / distinct_rows`` times before the next, with event times shifted so
that they go on at 1M events per simulated second. A change in the data (a third, a half of the
rows) stays at the same fraction of the stream. A long stream is what makes the stages
visible: compiling a variant takes 0.1-0.5 s, during which the generic variant runs on.

Every curve and repeat runs in a forked child (a cold code cache, as in a fresh job; ``--quick``
runs in process). Results of all curves of a scenario must be equal (exit status 2 if not).
The YSB part (issue 5's targets) runs ``bench/ysb.py``'s peers ``c_dense``, ``grizzly_generic``
and ``grizzly`` on ``--ysb-rows`` rows, and the steady-state rate of the optimized variant comes
from the ``ysb`` scenario (10,000 keys, no change). Writes ``adaptive-<date>.{md,json}`` to
``--out`` (default: ``output.default_results_dir()``) and the plots
``docs/img/adaptive-{range,selectivity,skew}.png`` (``bench/adaptive_report.py``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import multiprocessing
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa

from grizzly_py.workloads import adaptive as scenarios
from grizzly_py.workloads.ysb import EVENTS_PER_SECOND, WINDOW_MS, generate_ysb, ysb_query

from .output import default_results_dir
from .window_workloads import digest, windowed

ROOT = Path(__file__).resolve().parent.parent
IMG_DIR = ROOT / "docs" / "img"
BATCH_ROWS = 64_000        # a multiple of 1,000 rows (1 ms of event time): shifts are exact
CHUNK_BATCHES = 20         # 1.28M rows (~56 MB for YSB) replayed together, beyond the caches
SELECTIVITY_ORDERS = {     # predicate index (0: event_type, 1..5: p1..p5) -> fixed order
    "p5 first": (5, 4, 0, 3, 2, 1),  # most selective first before the swap
    "p1 first": (1, 4, 0, 3, 2, 5),  # ... and after it
}


@dataclass(frozen=True)
class Scenario:
    name: str
    figure: str              # the paper's figure
    title: str
    generate: Callable       # (rows, seed, batch_rows) -> pa.Table
    query: Callable          # (env, source with a .schema) -> a windowed stream with `views`
    change_at: float | None  # fraction of the rows where the data changes (None: drift / none)
    change: str
    curves: tuple[str, ...] = ("adaptive", "generic")
    plot: bool = True


def selectivity_stream(env, source, window_ms: int = WINDOW_MS):
    """YSB with the five predicates ``pj >= 50`` as six chained filters: the engine reorders
    filters, not the terms of one conjunction (``scenarios.selectivity_query`` writes them as one
    conjunction, which the profile sees as a single predicate)."""
    from grizzly_py import Time, agg, col
    from grizzly_py.windows import TumblingEventTimeWindows
    from grizzly_py.workloads.ysb import VIEW, VIEW_CODE
    view = VIEW_CODE if pa.types.is_integer(source.schema.field("event_type").type) else VIEW
    stream = env.from_arrow(source, timestamp="event_time").filter(col("event_type") == view)
    for j in range(len(scenarios.SELECTIVITIES)):
        stream = stream.filter(col(f"p{j + 1}") >= scenarios.PREDICATE_MIN)
    return (stream.key_by("campaign_id")
            .window(TumblingEventTimeWindows.of(Time.milliseconds(window_ms)))
            .aggregate(views=agg.count()))


def _ysb(env, source):
    return ysb_query(env, source, WINDOW_MS)


SCENARIOS = {s.name: s for s in (
    Scenario("range", "12", f"Key range grows {scenarios.RANGE_GROWTH}x after a third of the run "
             f"({scenarios.RANGE_KEYS:,} -> {scenarios.RANGE_KEYS * scenarios.RANGE_GROWTH:,} keys)",
             lambda n, seed, b: scenarios.generate_range(n, seed, batch_rows=b), _ysb, 1 / 3,
             "keys grow 10x"),
    Scenario("selectivity", "13", "Predicates p1 and p5 swap selectivity (90% <-> 10%) at half of the run",
             lambda n, seed, b: scenarios.generate_selectivity(n, seed, batch_rows=b), selectivity_stream, 1 / 2,
             "p1 and p5 swap", curves=("adaptive", "generic", "p5 first", "p1 first")),
    Scenario("skew", "14", f"Keys drift from uniform ({scenarios.SKEW_KEYS:,} keys) to "
             f"{scenarios.SKEW_FINAL:.0%} of the records on one key",
             lambda n, seed, b: scenarios.generate_skew(n, seed, batch_rows=b), _ysb, None,
             "gradual drift from the start"),
    Scenario("ysb", "-", "YSB, 10,000 keys, no change: steady-state rate of each variant",
             lambda n, seed, b: generate_ysb(n, seed, 10_000, b), _ysb, None, "none", plot=False),
)}


# ---- the stream --------------------------------------------------------------------------------

class ReplayStream:
    """``table``'s batches replayed to ``rows`` records (see the module docstring); ``pulls``:
    (perf_counter, records done) at each pull, and once more at the end; ``replay_s``: the time
    spent shifting event times (~40-80 us per 64K-row batch here, part of the job's time)."""

    def __init__(self, table: pa.Table, rows: int):
        self.batches = table.to_batches()
        if any(b.num_rows % 1000 for b in self.batches):
            raise ValueError("batches must be multiples of 1,000 rows (exact event-time shifts)")
        self.schema = table.schema
        self.times = self.schema.get_field_index("event_time")
        self.copies = max(1, rows // max(table.num_rows, 1))
        self.rows = self.copies * table.num_rows
        self.pulls: list[tuple[float, int]] = []
        self.replay_s = 0.0  # spent shifting event times (in the job's time: the engine waits)

    def chunks(self) -> list[tuple[int, list[pa.RecordBatch]]]:
        """(first base row, batches) of each chunk."""
        out, row = [], 0
        for i in range(0, len(self.batches), CHUNK_BATCHES):
            chunk = self.batches[i:i + CHUNK_BATCHES]
            out.append((row, chunk))
            row += sum(b.num_rows for b in chunk)
        return out

    def stream_row(self, base_row: int) -> int:
        """The first stream record that is a copy of base row ``base_row``."""
        for first, chunk in self.chunks():
            n = sum(b.num_rows for b in chunk)
            if base_row < first + n:
                return first * self.copies + base_row - first
        return self.rows

    def __iter__(self):
        done = 0
        for first, chunk in self.chunks():
            for _ in range(self.copies):
                base = first
                for batch in chunk:
                    start = time.perf_counter()
                    shift = (done - base) * 1000 // EVENTS_PER_SECOND  # ms; exact (see BATCH_ROWS)
                    if shift:
                        times = pa.array(batch.column(self.times).to_numpy() + shift)
                        batch = batch.set_column(self.times, "event_time", times)
                    now = time.perf_counter()
                    self.replay_s += now - start
                    self.pulls.append((now, done))
                    yield batch
                    done += batch.num_rows
                    base += batch.num_rows
        self.pulls.append((time.perf_counter(), done))

    def reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.schema, iter(self))


# ---- one run -----------------------------------------------------------------------------------

def fixed_order(order: tuple[int, ...]):
    """A specializer that keeps the profile's key placement but fixes the filter order (branching)."""
    from grizzly_py.codegen.specialize import Specialization, specialize

    def specializer(pipeline, profile, base, entry_bytes=0):
        spec = specialize(pipeline, profile, base, entry_bytes)
        options = replace(spec.options or replace(base, variant="optimized"), filter_order=order, filter_mode="branch")
        return Specialization(options, (f"fixed plan: filters {list(order)}, branch",) + spec.reasons[1:])
    return specializer


def adaptive_setting(curve: str, stages: dict | None):
    """``StreamEnvironment(adaptive=...)`` for a curve; ``stages``: AdaptiveSettings overrides."""
    from grizzly_py.engine.adaptive import AdaptiveSettings
    if curve == "generic":
        return False
    # every curve and repeat profiles from its start (--quick runs them in one process, where a
    # later job would otherwise start in the variant an earlier one entered)
    settings = AdaptiveSettings(**{"warm_start": False, **(stages or {})})
    if curve in SELECTIVITY_ORDERS:
        settings = replace(settings, specializer=fixed_order(SELECTIVITY_ORDERS[curve]))
    return settings


_DATA: dict[str, tuple[pa.Table, int]] = {}  # scenario -> (generated table, stream rows), set before forking


def run_curve(scenario: str, curve: str, stages: dict | None = None) -> dict:
    """Run one curve of ``scenario`` on ``_DATA[scenario]``: pull log, variant history, digest."""
    import grizzly_py as gz
    table, rows = _DATA[scenario]
    stream = ReplayStream(table, rows)
    env = gz.StreamEnvironment(parallelism=1, adaptive=adaptive_setting(curve, stages))
    SCENARIOS[scenario].query(env, stream.reader()).collect("out")
    start = time.perf_counter()
    result = env.execute()
    seconds = time.perf_counter() - start
    out = result["out"]
    pipelines = result.metrics["queries"][0]["pipelines"]
    history = next((p["variant_history"] for p in pipelines if p.get("variant_history")), [])
    pulls = np.array(stream.pulls)
    return {"scenario": scenario, "curve": curve, "seconds": seconds, "records": stream.rows,
            "replay_s": stream.replay_s,
            "pull_s": (pulls[:, 0] - start).tolist(), "pull_records": pulls[:, 1].astype(np.int64).tolist(),
            "history": history, "counters": (result.metrics.get("adaptive") or {}).get("counters"),
            "digest": digest(windowed(out["window_start"], out["campaign_id"], out["views"]))}


def run_isolated(fn, *args):
    """``fn(*args)`` in a forked child (cold code cache; inherits ``_DATA`` copy-on-write)."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:  # one child per call
        return pool.submit(fn, *args).result()


# ---- measures ----------------------------------------------------------------------------------

def throughput(run: dict, edges: np.ndarray) -> np.ndarray:
    """Million records per second in each bin of ``edges`` (seconds from the job's start);
    NaN beyond the run's end."""
    t, r = np.asarray(run["pull_s"]), np.asarray(run["pull_records"], dtype=np.float64)
    done = np.interp(edges, t, r, left=0.0, right=np.nan)
    return np.diff(done) / np.diff(edges) / 1e6


def record_time(run: dict, record: int) -> float:
    """Seconds from the job's start when the engine had done ``record`` records."""
    return float(np.interp(record, run["pull_records"], run["pull_s"]))


def reoptimization(run: dict, change_record: int | None) -> dict:
    """Records (and seconds) from the data's change to the first optimized stage after it."""
    history = run["history"]
    if change_record is None:
        first = next((h for h in history if h["stage"] == "optimized"), None)
        return {"change_record": None, "optimized_at_record": first and first["at_record"],
                "optimized_at_s": first and round(record_time(run, first["at_record"]), 3)}
    # a reaction can come at the changed record itself (a guard fails on it); an optimized
    # stage entered there was chosen before the change
    after = [h for h in history[1:] if h["at_record"] > change_record
             or (h["at_record"] == change_record and h["stage"] != "optimized")]
    first = next((h for h in after if h["stage"] == "optimized"), None)
    out = {"change_record": change_record, "change_s": round(record_time(run, change_record), 3),
           "reacted": after[0]["reason"] if after else None,
           "reacted_after_records": after[0]["at_record"] - change_record if after else None}
    if first is not None:
        out.update(optimized_after_records=first["at_record"] - change_record,
                   optimized_after_s=round(record_time(run, first["at_record"]) - out["change_s"], 3),
                   options=first.get("options"))
    return out


def summarize(scenario: Scenario, runs: dict[str, list[dict]], change_record: int | None, bins: int) -> dict:
    """Median curves per bin, per-curve rates, stage switches and the re-optimization distance."""
    width = max(float(np.median([r["seconds"] for r in rs])) for rs in runs.values()) / bins
    edges = np.arange(0, bins * 2 + 1) * width  # long enough for the slowest run
    curves = {}
    for curve, rs in runs.items():
        rates = np.array([throughput(r, edges) for r in rs])
        with warnings.catch_warnings():  # bins after every run's end: all NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            med = np.nanmedian(rates, axis=0) if len(rs) > 1 else rates[0]
        keep = int(np.max(np.nonzero(~np.isnan(med))[0])) + 1 if np.any(~np.isnan(med)) else 0
        typical = sorted(rs, key=lambda r: r["seconds"])[len(rs) // 2]
        curves[curve] = {
            "mrec_s_per_bin": [None if np.isnan(v) else round(float(v), 2) for v in med[:keep]],
            "seconds": [round(r["seconds"], 3) for r in rs],
            "replay_share": round(float(np.median([r["replay_s"] / r["seconds"] for r in rs])), 3),
            "mrec_s": round(float(np.median([r["records"] / r["seconds"] for r in rs])) / 1e6, 2),
            "history": [{k: v for k, v in h.items() if k != "profile"} | {"at_s_from_pulls":
                        round(record_time(typical, h["at_record"]), 3)} for h in typical["history"]],
            "reoptimization": [reoptimization(r, change_record) for r in rs],
            "steady_mrec_s": steady_rate(typical),
            "change_s": None if change_record is None else round(record_time(typical, change_record), 3),
            "digests": [r["digest"].as_dict() for r in rs],
        }
    digests = {(c, i): r["digest"] for c, rs in runs.items() for i, r in enumerate(rs)}
    first = next(iter(digests.values()))
    return {"name": scenario.name, "figure": scenario.figure, "title": scenario.title, "change": scenario.change,
            "change_record": change_record, "records": next(iter(runs.values()))[0]["records"],
            "bin_s": round(width, 4), "curves": curves,
            "results_equal": all(d == first for d in digests.values()),
            "result_rows": first.groups, "result_total": first.total,
            "counters": runs.get("adaptive", [{}])[0].get("counters")}


def steady_rate(run: dict) -> dict:
    """Mrec/s after the last stage switch (the whole run for the generic curve): the rate of the
    variant that ran at the end, from the pull log."""
    t, r = np.asarray(run["pull_s"]), np.asarray(run["pull_records"])
    last = run["history"][-1] if run["history"] else {"at_record": 0, "stage": "generic"}
    start = max(last["at_record"], int(r[1]) if len(r) > 1 else 0)  # after the first batch (compile)
    t0 = record_time(run, start)
    if t[-1] - t0 <= 0:
        return {"stage": last["stage"], "mrec_s": None}
    return {"stage": last["stage"], "from_record": start, "mrec_s": round((r[-1] - start) / (t[-1] - t0) / 1e6, 2)}


# ---- the YSB targets -----------------------------------------------------------------------------

def run_ysb_peers(rows: int, repeat: int, seed: int) -> tuple:
    """``bench/ysb.py``'s c_dense, grizzly_generic and grizzly peers side by side (forked each)."""
    from .harness import cross_check, run_isolated as run_peer_isolated, run_peer
    from .ysb import PEERS
    from .ysb_data import YsbData
    table = generate_ysb(rows, seed, 10_000, 1 << 16)
    data = YsbData(table, 10_000, False)
    args = argparse.Namespace(parallelism=1, threads=1)
    results = []
    try:
        for name in ("c_dense", "grizzly_generic", "grizzly"):
            peer = PEERS[name](args)
            results.append(run_peer_isolated(peer.name, peer.description,
                                             lambda peer=peer: run_peer(peer, data, rows, repeat)))
    finally:
        data.cleanup()
    return results, cross_check(results)


# ---- main ----------------------------------------------------------------------------------------

QUICK_STAGES = {"generic_records": 16_384, "profile_records": 32_768, "wait_for_compile": True}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Adaptive compilation: throughput over time (Grizzly figures 12-14).")
    p.add_argument("--rows", type=int, default=None, help="records per stream (default 400M; quick 1.28M)")
    p.add_argument("--distinct-rows", type=int, default=None,
                   help="rows generated per scenario and replayed (default 20M; quick 384K)")
    p.add_argument("--repeat", type=int, default=None, help="runs per curve (default 3; quick 1)")
    p.add_argument("--bins", type=int, default=None, help="time bins per plot (default 40; quick 10)")
    p.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated: " + ", ".join(SCENARIOS))
    p.add_argument("--ysb-rows", type=int, default=None, help="rows of the YSB peers' run (default 20M; 0: skip)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--quick", action="store_true",
                   help="small data, short stages (AdaptiveSettings: %s), in process, no YSB peers" % QUICK_STAGES)
    p.add_argument("--in-process", action="store_true", help="no forked child per run (warm code cache)")
    p.add_argument("--out", type=Path, default=default_results_dir())
    p.add_argument("--img", type=Path, default=IMG_DIR)
    args = p.parse_args(argv)
    quick = args.quick
    args.rows = args.rows or (1_280_000 if quick else 400_000_000)
    args.distinct_rows = args.distinct_rows or (384_000 if quick else 20_000_000)
    args.repeat = args.repeat or (1 if quick else 3)
    args.bins = args.bins or (10 if quick else 40)
    args.ysb_rows = (0 if quick else 20_000_000) if args.ysb_rows is None else args.ysb_rows
    args.in_process = args.in_process or quick
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    unknown = [s for s in args.scenarios if s not in SCENARIOS]
    if unknown:
        p.error(f"unknown scenario(s) {unknown}; choose from {list(SCENARIOS)}")
    return args


def main(argv: list[str] | None = None) -> int:
    from .adaptive_report import plot, write
    from .host import load_average
    args = parse_args(argv)
    stages = QUICK_STAGES if args.quick else None
    load_at_start, started = load_average(), time.perf_counter()
    summaries = []
    for name in args.scenarios:
        scenario = SCENARIOS[name]
        t = time.perf_counter()
        table = scenario.generate(args.distinct_rows, args.seed, BATCH_ROWS)
        _DATA[name] = (table, args.rows)
        stream = ReplayStream(table, args.rows)
        change = (None if scenario.change_at is None
                  else stream.stream_row(int(table.num_rows * scenario.change_at)))
        print(f"{name}: {table.num_rows:,} rows generated in {time.perf_counter() - t:.1f} s, "
              f"streamed as {stream.rows:,} ({stream.copies}x)")
        runs: dict[str, list[dict]] = {c: [] for c in scenario.curves}
        for rep in range(args.repeat):
            for curve in scenario.curves:  # interleaved: load changes hit every curve alike
                run = (run_curve(name, curve, stages) if args.in_process
                       else run_isolated(run_curve, name, curve, stages))
                runs[curve].append(run)
                stages_seen = " -> ".join(h["stage"] for h in run["history"])
                print(f"  {curve:9s} run {rep + 1}: {run['seconds']:.2f} s, "
                      f"{run['records'] / run['seconds'] / 1e6:.1f} Mrec/s; {stages_seen}")
        summary = summarize(scenario, runs, change, args.bins)
        summary["distinct_rows"], summary["copies"] = table.num_rows, stream.copies
        if scenario.plot:
            summary["plot"] = str(plot(summary, args.img))
        summaries.append(summary)
        del _DATA[name], table, stream
        print(f"  results equal across curves and runs: {summary['results_equal']}")
    ysb = run_ysb_peers(args.ysb_rows, max(args.repeat, 5), args.seed) if args.ysb_rows else None
    config = {"rows": args.rows, "distinct_rows": args.distinct_rows, "batch_rows": BATCH_ROWS,
              "chunk_batches": CHUNK_BATCHES, "repeat": args.repeat, "bins": args.bins, "seed": args.seed,
              "quick": args.quick, "stages": stages or "AdaptiveSettings() defaults",
              "isolation": "in process" if args.in_process else "one forked child per run (cold code cache)",
              "ysb_rows": args.ysb_rows, "load average at start (1/5/15 min)": load_at_start,
              "wall_s": round(time.perf_counter() - started, 1),
              "date": dt.datetime.now().isoformat(timespec="seconds")}
    paths = write(args.out, config, summaries, ysb)
    print("wrote " + ", ".join(str(p) for p in paths))
    ok = all(s["results_equal"] for s in summaries) and (ysb is None or ysb[1].ok)
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
