"""Window workloads (Grizzly paper 7.3.1-7.3.3): grizzly-py against its peers, case by case.

    python -m bench.windows --workload agg-types --rows 5000000 --repeat 3
    python -m bench.windows --workload concurrent-windows --cases 1,10,100 --peers grizzly,polars
    python -m bench.windows --workload count-windows --rows 20000000 --campaigns 1000

The workloads and their cases are defined in ``bench/window_workloads.py``, the peers in
``bench/peers/windowed.py``. The data (YSB plus a ``price`` column) is generated once; each
peer runs in its own forked child (``harness.run_isolated_each``): set up once (untimed),
then every case is run ``--repeat`` times. A peer that raises ``NotImplementedError`` for a
case is reported ``unsupported`` with the message. Results are cross-checked per case (exact
on integers, relative 1e-9 on floats); the report (a table with one row per case, Mrec/s and
ratios to grizzly-py, then per-case details) goes to ``<workload>-<date>-<time>.{md,json}`` in
``--out`` (default: ``output.default_results_dir()``). Exit status 2 if peers disagree.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
import traceback
from typing import Any, Iterator, Sequence

from . import report
from .harness import (CrossCheck, PeerResult, add_common_arguments, check_common_arguments,
                      run_isolated_each, run_peer)
from .host import describe_host, load_average
from .peers.base import Peer, PeerUnavailable
from .peers.windowed import PEERS, CasePeer
from .window_workloads import (WORKLOADS, Case, cross_check, digest, generate,
                               mismatch_detail)
from .ysb_data import YsbData



def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Window workloads: grizzly-py vs peers, per case.")
    p.add_argument("--workload", required=True, choices=list(WORKLOADS))
    p.add_argument("--cases", help="comma-separated case parameters (aggregate names, c or n "
                                   "values); default: the workload's list")
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--repeat", type=int, default=5)
    add_common_arguments(p, PEERS, os.cpu_count() or 1)
    args = p.parse_args(argv)
    check_common_arguments(p, args, PEERS)
    try:
        args.cases = WORKLOADS[args.workload].parse(args.cases) if args.cases else None
    except ValueError as exc:
        p.error(f"--cases: {exc}")
    return args


def make_peer(name: str, args: argparse.Namespace) -> CasePeer:
    if name == "grizzly":
        return PEERS[name](args.parallelism)
    return PEERS[name]() if name == "numpy" else PEERS[name](args.threads)


class CaseRun(Peer):
    """One case of a set-up CasePeer, as ``run_peer`` runs it: its setup picks the case."""

    def __init__(self, peer: CasePeer, case: Case) -> None:
        super().__init__()
        self.peer, self.case = peer, case
        self.name, self.description = peer.name, peer.describe(case.workload)
        self.info = peer.info  # the engine's facts (version, threads, setup costs)

    def setup(self, data: Any) -> None:
        self.peer.prepare(self.case)

    def run(self):
        return self.peer.run()


def run_cases(peer: CasePeer, data: YsbData, cases: Sequence[Case], repeat: int) -> Iterator[PeerResult]:
    """Set ``peer`` up once, then yield one PeerResult per case (run in the forked child)."""
    try:
        peer.setup(data)
    except Exception as exc:  # noqa: BLE001 - every case gets the reason
        status = ("missing" if isinstance(exc, PeerUnavailable) else
                  "unsupported" if isinstance(exc, NotImplementedError) else "failed")
        error = str(exc) if status == "missing" else f"setup: {type(exc).__name__}: {exc}"
        for case in cases:
            yield PeerResult(peer.name, peer.describe(case.workload), status, error,
                             None if status == "missing" else traceback.format_exc())
        return
    try:
        for case in cases:
            print(f"{peer.name} {case.label}:")
            yield run_peer(CaseRun(peer, case), data, data.n_rows, repeat, summarize=digest)
    finally:
        peer.close()


def _rate(r: PeerResult) -> float | None:
    return r.runs.records_per_s if r.ok and r.runs and r.runs.seconds else None


def tables(names: list[str], per_case: list[tuple[Case, list[PeerResult], CrossCheck]]):
    """(header, rows) of the Mrec/s table and of the x-grizzly table, one row per case."""
    rate_rows, ratio_rows = [], []
    others = [n for n in names if n != report.BASELINE]
    for case, results, check in per_case:
        by = {r.name: r for r in results}
        cells = []
        for n in names:
            rate = _rate(by[n])
            cell = f"{rate / 1e6:,.1f}" if rate else by[n].status
            cells.append(cell + (" MISMATCH" if n in check.mismatches else ""))
        ran = len(check.agreeing) + len(check.mismatches)
        verdict = (f"MISMATCH: {', '.join(check.mismatches)}" if check.mismatches else
                   f"ok ({ran} agree)" if ran > 1 else "single peer" if ran else "no result")
        if check.reference is not None:
            verdict += f", {check.reference.groups:,} rows"
        rate_rows.append([case.label, *cells, verdict])
        base = _rate(by[report.BASELINE]) if report.BASELINE in by else None
        ratio_rows.append([case.label, *(f"{_rate(by[n]) / base:.2f}" if base and _rate(by[n])
                                         else "-" for n in others)])
    return ((["case", *names, "cross-check"], rate_rows),
            (["case", *(f"{n} x {report.BASELINE}" for n in others)], ratio_rows))


def problems(per_case) -> list[str]:
    lines = []
    for case, results, check in per_case:
        lines += [f"{case.label}: {r.name}: {r.status}: {r.error}" for r in results if not r.ok]
        lines += [f"{case.label}: MISMATCH {n} vs {', '.join(check.agreeing)}: "
                  f"{mismatch_detail(s, check.reference)}" for n, s in check.mismatches.items()]
    return lines


def text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths)))
                     for row in [header, *rows])


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    return (["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
            + ["| " + " | ".join(row) + " |" for row in rows])


def markdown(title, config, host, names, per_case) -> str:
    rates, ratios = tables(names, per_case)
    md = [f"# {title}", "", "## Setup", ""] + [f"- {k}: {v}" for k, v in config.items()]
    md += ["", "## Host", ""]
    for k, v in host.items():
        if isinstance(v, dict):
            v = ", ".join(f"{name} {ver}" for name, ver in v.items() if ver) or "-"
        md.append(f"- {k}: {v}")
    md += ["", "## Results", "", "Input records/s in millions (all rows, before the filter), "
           "median of the runs; `unsupported`: the peer raised NotImplementedError. "
           "cross-check: how many peers agree on the result, and its number of rows.", ""]
    md += md_table(*rates)
    md += ["", "Ratios: the peer's records/s over grizzly-py's (above 1: faster than "
           "grizzly-py).", ""] + md_table(*ratios)
    lines = problems(per_case)
    if lines:
        md += ["", "## Problems", ""] + [f"- **{l}**" if "MISMATCH" in l else f"- {l}" for l in lines]
    md += ["", "## Per case", ""]
    for case, results, check in per_case:
        md += [f"### {case.label}", ""]
        md += md_table(list(report.COLUMNS), [list(r) for r in report.rows(results, check)])
        if check.reference is not None:
            ref = check.reference
            md += ["", f"Reference (agreed by {', '.join(check.agreeing)}): total {ref.total:,}, "
                   f"groups {ref.groups:,}, fingerprint `{ref.fingerprint}`."]
        md.append("")
    md += ["## Peers", ""]
    for i, n in enumerate(names):
        r = per_case[0][1][i]
        info = ", ".join(f"{k}={round(v, 3) if isinstance(v, float) else v}"
                         for k, v in r.info.items())
        md.append(f"- **{n}**: {r.description}. {info}")
    return "\n".join(md) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    workload = WORKLOADS[args.workload]
    cases = workload.cases(args.cases)
    load_at_start = load_average()
    print(f"{workload.name}: generating {args.rows:,} rows (seed {args.seed}, "
          f"{args.campaigns:,} campaigns) ...")
    start = time.perf_counter()
    table = generate(args.rows, args.seed, args.campaigns, args.batch_rows, args.int_coded)
    data = YsbData(table, args.campaigns, args.int_coded)
    gen_s = time.perf_counter() - start
    print(f"  {gen_s:.1f} s, {table.nbytes / 2**30:.2f} GiB; cases: "
          f"{', '.join(c.label for c in cases)}")

    peers = [make_peer(name, args) for name in args.peers]
    by_peer: dict[str, list[PeerResult]] = {}
    try:
        if any(peer.needs_parquet for peer in peers):
            print(f"writing Parquet: {data.parquet_path()} ({data.parquet_write_s:.1f} s)")
        for peer in peers:
            def fn(todo, peer=peer):
                return run_cases(peer, data, todo, args.repeat)

            by_peer[peer.name] = (list(fn(cases)) if args.in_process else
                                  run_isolated_each(peer.name, peer.describe(workload.name), cases, fn))
    finally:
        data.cleanup()

    per_case = []
    for i, case in enumerate(cases):
        results = [by_peer[n][i] for n in args.peers]
        per_case.append((case, results, cross_check(results)))
    title = f"{workload.name} ({workload.source}), {args.rows:,} rows, median of {args.repeat}"
    rates, ratios = tables(args.peers, per_case)
    print(f"\n{title}\nMrec/s:\n{text_table(*rates)}\n\nx grizzly:\n{text_table(*ratios)}")
    for line in problems(per_case):
        print(("WARNING: " if "MISMATCH" in line else "") + line)
    if not args.no_save:
        config = {
            "workload": f"{workload.name}: {workload.query}",
            "cases": ", ".join(c.label for c in cases),
            "rows": args.rows, "repeat": args.repeat, "seed": args.seed,
            "campaigns": args.campaigns, "batch_rows": args.batch_rows,
            "event_type": "int32 codes" if args.int_coded else "dictionary<int32, string>",
            "price": "float64, gamma(2, 10) rounded to 0.1",
            "threads (polars, duckdb, spark)": args.threads,
            "grizzly parallelism": args.parallelism,
            "isolation": "in process" if args.in_process else
                         "one forked child process per peer (all cases; a crash fails one case)",
            "data": f"{table.nbytes / 2**30:.2f} GiB in memory, generated in {gen_s:.1f} s",
            "parquet write s (spark input)": (round(data.parquet_write_s, 2)
                                              if data.parquet_write_s else None),
            "load average at start (1/5/15 min)": load_at_start,
            "date": dt.datetime.now().isoformat(timespec="seconds"),
        }
        host = describe_host()
        args.out.mkdir(parents=True, exist_ok=True)
        stem = f"{workload.name}-" + dt.datetime.now().strftime("%Y-%m-%d-%H%M%S")
        md_path, json_path = args.out / f"{stem}.md", args.out / f"{stem}.json"
        md_path.write_text(markdown(title, config, host, args.peers, per_case))
        doc = {"title": title, "config": config, "host": host,
               "cases": [{"case": c.label, "param": c.param, "cross_check": check.as_dict(),
                          "peers": [r.as_dict() for r in results]}
                         for c, results, check in per_case]}
        json_path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
        print(f"wrote {md_path}, {json_path}")
    return 0 if all(check.ok for _, _, check in per_case) else 2


if __name__ == "__main__":
    sys.exit(main())
