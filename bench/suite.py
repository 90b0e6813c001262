"""The benchmark suite behind ``grizzly bench``: every workload of ``bench/workloads.py`` against
every peer, in one run, with one report.

    grizzly bench                              # every workload, default sizes, every peer
    grizzly bench ysb selection --peers c,numpy,grizzly --rows 1000000
    grizzly bench --quick                      # every workload on small data, fast peers (< 2 min)
    python -m grizzly_py.cli bench --quick     # the same without the installed entry point
    grizzly bench --engine spark-cluster       # Spark's plans vs grizzly-py on a standalone cluster

For each runnable workload: its seeded data sets are generated once (and written to Parquet for
Spark, CSV for Flink, untimed); each peer runs in its own forked child for all cases of the
workload (set up once: imports, gcc, session start; a crash fails only the case it happened in),
``--repeat`` timed runs per case; results are cross-checked per case (every peer against the
others; grizzly-py is not trusted as the reference). For grizzly-py, an extra untimed run per
case measures window latency (``bench/latency.py``), and the first run's code generation and
compilation time is reported. Per-record counters come last (``bench/counters.py``). The report
goes to ``--out`` (default ``output.default_results_dir()``: ``$GRIZZLY_CACHE_DIR/bench-results``,
``~/.cache/grizzly-py/bench-results`` without it) as ``suite-<date>-<time>.{md,json}`` and PNG
plots beside them (``bench/suite_report.py``). Exit status 2 if peers disagree anywhere.
"""

from __future__ import annotations

import datetime as dt
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, Iterator

from . import counters
from .harness import CrossCheck, PeerResult, run_isolated_each, run_peer
from .host import describe_host, load_average
from .peers.base import Peer, PeerUnavailable
from .suite_options import BASELINE, PEERS, Options, PeerSpec
from .window_workloads import cross_check
from .workloads import WORKLOADS, Case, Workload

# ``grizzly bench --engine spark-cluster``'s default workloads (issue 32's measure): YSB, Nexmark
# Q5/Q7/Q8, count windows, and the sessions and regular joins of nexmark-tables
CLUSTER_WORKLOADS = ("ysb", "nexmark-q5", "nexmark-q7", "nexmark-q8", "count-windows", "nexmark-tables")


@dataclass
class CaseResult:
    case: Case
    results: list[PeerResult]
    check: CrossCheck | None

    def by_peer(self) -> dict[str, PeerResult]:
        return {r.name: r for r in self.results}


@dataclass
class WorkloadResult:
    workload: Workload
    rows: int = 0
    cases: list[CaseResult] = field(default_factory=list)
    records: list[int] = field(default_factory=list)  # input records of its data sets (Nexmark: < rows, the events)
    data_s: float = 0.0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def pending(self) -> str | None:
        return self.workload.pending


@dataclass
class SuiteResult:
    options: Options
    workloads: list[WorkloadResult]
    host: dict
    config: dict
    counters: dict | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(c.check is None or c.check.ok for w in self.workloads for c in w.cases)


class CaseRun(Peer):
    """One case of a set-up suite peer, as ``harness.run_peer`` runs it."""

    def __init__(self, peer, case: Case) -> None:
        super().__init__()
        self.peer, self.case = peer, case
        self.name = peer.name
        self.description = peer.describe(case.workload)
        self.info = peer.info

    def setup(self, data) -> None:
        self.peer.use_data(data)
        self.peer.prepare(self.case)

    def run(self):
        return self.peer.run()


def _status_of(exc: BaseException) -> tuple[str, str]:
    if isinstance(exc, PeerUnavailable):
        return "missing", str(exc)
    if isinstance(exc, NotImplementedError):
        return "unsupported", f"setup: {type(exc).__name__}: {exc}"
    return "failed", f"setup: {type(exc).__name__}: {exc}"


def run_cases(spec: PeerSpec, opts: Options, w: Workload, data: dict, cases: list[Case]) -> Iterator[PeerResult]:
    """In the peer's child: set it up once, then yield one PeerResult per case."""
    peer = spec.make(opts)
    description = peer.describe(w.name) if hasattr(peer, "describe") else spec.name
    first = data[w.data_key(cases[0].param)] if cases else None
    try:
        peer.setup(first)
    except Exception as exc:  # noqa: BLE001 - every case gets the reason
        status, error = _status_of(exc)
        for _ in cases:
            yield PeerResult(spec.name, description, status, error,
                             None if status == "missing" else traceback.format_exc(), info=dict(peer.info))
        try:
            peer.close()
        except Exception:  # noqa: BLE001
            pass
        return
    try:
        for case in cases:
            d = data[w.data_key(case.param)]
            result = run_peer(CaseRun(peer, case), d, d.n_rows, opts.repeat,
                              log=lambda line: None, summarize=w.summarize, budget_s=opts.budget_s)
            by_case = result.info.pop("compile_ms_by_case", None)
            result.info.pop("job_seconds", None)
            if by_case and case.label in by_case:
                result.info["compile_ms"] = round(by_case[case.label], 3)
            if spec.name == BASELINE and result.ok and w.windows and opts.latency:
                try:
                    result.info["latency"] = peer.latency()
                except Exception as exc:  # noqa: BLE001 - reported, never fatal
                    result.info["latency"] = {"error": f"{type(exc).__name__}: {exc}"}
            yield result
    finally:
        peer.close()


def _peer_result(name: str, description: str, status: str, error: str | None) -> PeerResult:
    return PeerResult(name, description, status=status, error=error)


def run_workload(w: Workload, opts: Options, advance: Callable[[str], None] = lambda s: None) -> WorkloadResult:
    start = time.perf_counter()
    out = WorkloadResult(w)
    if w.pending:
        return out
    cases = w.cases(opts.quick)
    runnable = [c for c in cases if not c.pending]
    rows = opts.rows or (w.quick_rows if opts.quick else w.rows)
    out.rows = rows
    advance(f"{w.name}: generating data")
    t = time.perf_counter()
    data = {}
    for c in runnable:
        key = w.data_key(c.param)
        if key not in data:
            data[key] = w.make(c.param, rows, opts.seed)
    out.records = sorted({d.n_rows for d in data.values()})
    specs = [PEERS[n] for n in opts.peers]
    try:
        parquet, csv = (any(getattr(s.cls(), need, False) and s.cls().supports(w.name) for s in specs)
                        for need in ("needs_parquet", "needs_csv"))
        for d in data.values():
            d.write_files(parquet=parquet, csv=csv)
        out.data_s = time.perf_counter() - t
        per_peer: dict[str, list[PeerResult]] = {}
        for spec in specs:
            if not spec.cls().supports(w.name):
                per_peer[spec.name] = [_peer_result(spec.name, "", "no query",
                                                    f"no {spec.name} query for {w.name}")
                                       for _ in runnable]
                for _ in range(len(runnable) + 1):
                    advance(f"{w.name}: {spec.name}")
                continue
            advance(f"{w.name}: {spec.name}")

            def fn(todo, spec=spec):
                return run_cases(spec, opts, w, data, list(todo))

            def on_result(r, spec=spec):
                advance(f"{w.name}: {spec.name}")

            if opts.in_process:
                got = []
                for r in fn(runnable):
                    got.append(r)
                    on_result(r)
            else:
                got = run_isolated_each(spec.name, spec.name, runnable, fn, on_result)
            per_peer[spec.name] = got
    finally:
        for d in data.values():
            d.cleanup()
    results = iter(range(len(runnable)))
    index = {c: next(results) for c in runnable}
    for c in cases:
        if c.pending:
            out.cases.append(CaseResult(c, [_peer_result(n, "", "pending", c.pending) for n in opts.peers], None))
            continue
        rs = [per_peer[n][index[c]] for n in opts.peers]
        out.cases.append(CaseResult(c, rs, cross_check(rs)))
    out.seconds = time.perf_counter() - start
    return out


def steps(w: Workload, opts: Options) -> int:
    if w.pending:
        return 0
    runnable = [c for c in w.cases(opts.quick) if not c.pending]
    return 1 + len(opts.peers) * (len(runnable) + 1)


def run_suite(opts: Options) -> SuiteResult:
    opts.resolve()
    start = time.perf_counter()
    load_at_start = load_average()
    selected = [WORKLOADS[n] for n in opts.workloads]
    results: list[WorkloadResult] = []
    progress = None
    if opts.progress:
        try:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn)
            progress = Progress(TextColumn("{task.description:<44}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), transient=False)
        except ImportError:
            progress = None
    if progress is not None:
        with progress:
            overall = progress.add_task("grizzly bench", total=sum(steps(w, opts) for w in selected))
            for w in selected:
                def advance(text, w=w):
                    progress.update(overall, description=text[:44], advance=1)
                results.append(run_workload(w, opts, advance))
            counters = _counters(opts, progress)
    else:
        for w in selected:
            opts.log(f"{w.name} ...")
            results.append(run_workload(w, opts))
        counters = _counters(opts, None)
    config = {
        "mode": "quick" if opts.quick else "full",
        "peers": ", ".join(opts.peers),
        "repeat": opts.repeat, "seed": opts.seed,
        "threads (polars, duckdb, spark, flink)": opts.threads,
        "grizzly parallelism": opts.parallelism,
        "isolation": "in process" if opts.in_process else
                     "one forked child process per peer and workload (a crash fails one case)",
        "load average at start (1/5/15 min)": load_at_start,
        "date": dt.datetime.now().isoformat(timespec="seconds"),
    }
    suite = SuiteResult(opts, results, describe_host(), config, counters,
                        time.perf_counter() - start)
    suite.config["wall time s"] = round(suite.seconds, 1)
    return suite


def _counters(opts: Options, progress) -> dict | None:
    if not opts.counters:
        return None
    task = progress.add_task("per-record counters", total=None) if progress is not None else None
    try:
        return counters.measure(opts, [w for w in opts.workloads if w in counters.WORKLOADS])
    except Exception as exc:  # noqa: BLE001 - reported, never fatal
        return {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    finally:
        if task is not None:
            progress.update(task, total=1, completed=1)

