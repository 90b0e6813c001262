"""The string workloads run interleaved: grizzly-py against pyarrow.compute, polars and DuckDB.

    python -m bench.strings [--cases nexmark-q22,url-contains,...] [--rows N] [--repeat 5]
                            [--peers numpy,polars,duckdb,grizzly] [--threads 2] [--parallelism 1]

``grizzly bench strings nexmark-q10 nexmark-q14`` runs each peer's runs back to back; on this
shared 2-core host the load drifts by tens of percent over minutes, so a peer whose runs fell in
a quiet minute looks faster than it is. Here each case's peers are set up first (each in a forked
child of its own) and then run round by round (``harness.run_interleaved``): every peer samples
each phase of the drift alike. The cases, data, queries and result digests are the suite's
(``bench/workloads.py``: the ``strings`` cases, ``nexmark-q10``, ``nexmark-q14``; the peers of
``bench/peers/suite.py``); the results are cross-checked per case as in the suite. Prints a
table of medians (million input records per second) and grizzly-py's ratio to each peer, and
writes ``strings-<date>-<time>.{md,json}`` to ``--out``. Exit status 2 if peers disagree.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
from pathlib import Path

from .harness import PeerResult, run_interleaved
from .host import describe_host, load_average
from .output import default_results_dir
from .suite import CaseRun
from .suite_options import BASELINE, PEERS, Options
from .window_workloads import cross_check
from .workloads import WORKLOADS

CASES = {**{case: ("strings", case) for case in WORKLOADS["strings"].params},
         "nexmark-q10": ("nexmark-q10", None), "nexmark-q14": ("nexmark-q14", None)}
DEFAULT_PEERS = ("numpy", "polars", "duckdb", BASELINE)


class SetUpCase(CaseRun):
    """One case of a suite peer as a ``harness.Peer`` of its own: set-up is the suite peer's
    (imports, threads) and then the case's."""

    def setup(self, data) -> None:
        self.peer.setup(data)
        super().setup(data)


def rate(result: PeerResult) -> float | None:
    """Median million records per second of the peer's runs, None without runs."""
    if not result.ok or not result.runs or not result.runs.seconds:
        return None
    return result.runs.n_records / statistics.median(result.runs.seconds) / 1e6


def run_case(name: str, opts: Options, rows: int, log=print, known: dict | None = None) -> dict:
    workload, param = (known or CASES)[name]
    w = WORKLOADS[workload]
    case = next(c for c in w.cases(params=(param,)))
    start = time.perf_counter()
    data = w.make(param, rows, opts.seed)
    data_s = time.perf_counter() - start
    log(f"{name}: {data.n_rows:,} input records ({data_s:.1f} s to generate)")
    peers = [SetUpCase(PEERS[p].make(opts), case) for p in opts.peers]
    try:
        results = run_interleaved(peers, data, data.n_rows, opts.repeat, log=log, summarize=w.summarize)
    finally:
        data.cleanup()
    return {"case": name, "records": data.n_rows, "results": results, "check": cross_check(results),
            "load_average": load_average()}


def table(cases: list[dict], peers: list[str]) -> list[str]:
    """Markdown rows: each case's medians (Mrec/s) and grizzly-py's ratio to each other peer."""
    others = [p for p in peers if p != BASELINE]
    head = ["case", *(f"{p} Mrec/s" for p in peers), *(f"{BASELINE} ÷ {p}" for p in others),
            "cross-check", "load after"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 3) + "---|---|"]
    for c in cases:
        by = {r.name: r for r in c["results"]}
        rates = {p: rate(by[p]) for p in peers}
        cells = [f"{rates[p]:.1f}" if rates[p] else by[p].status for p in peers]
        cells += [f"{rates[BASELINE] / rates[p]:.2f}" if rates[BASELINE] and rates[p] else "–" for p in others]
        check = c["check"]
        agree = f"ok ({len(check.agreeing)} agree)" if check.ok else f"MISMATCH: {', '.join(check.mismatches)}"
        lines.append("| " + " | ".join([c["case"], *cells, agree, c["load_average"] or "?"]) + " |")
    return lines


def main(argv: list[str] | None = None, known: dict | None = None, name: str = "strings",
         description: str | None = None) -> int:
    """The runner over ``known`` cases (name -> (workload, case parameter); default: the string
    cases), its reports named ``<name>-<date>-<time>``."""
    known = known or CASES
    p = argparse.ArgumentParser(description=description or __doc__.splitlines()[0])
    p.add_argument("--cases", default=",".join(known), help=f"comma-separated, from: {', '.join(known)}")
    p.add_argument("--rows", type=int, default=None,
                   help="input rows per case (default: the workload's; strings 10.87M events, Q10, Q14 5M)")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--peers", default=",".join(DEFAULT_PEERS))
    p.add_argument("--threads", type=int, default=Options.threads, help="polars' and DuckDB's threads")
    p.add_argument("--parallelism", type=int, default=1, help="grizzly-py's parallelism")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--out", type=Path, default=default_results_dir())
    p.add_argument("--no-save", action="store_true")
    args = p.parse_args(argv)
    names = [n.strip() for n in args.cases.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    peers = [n.strip() for n in args.peers.split(",") if n.strip()]
    if unknown or BASELINE not in peers or any(n not in PEERS for n in peers):
        p.error(f"cases from {list(known)}; peers from {list(PEERS)}, {BASELINE} among them")
    opts = Options(workloads=[], peers=peers, repeat=args.repeat, seed=args.seed, threads=args.threads,
                   parallelism=args.parallelism).resolve()
    load_at_start, start = load_average(), time.perf_counter()
    cases = [run_case(n, opts, args.rows or WORKLOADS[known[n][0]].rows, known=known) for n in names]
    lines = table(cases, peers)
    print("\n".join(lines))
    config = {"cases": names, "peers": peers, "repeat": args.repeat, "seed": args.seed,
              "threads (polars, duckdb)": args.threads, "grizzly parallelism": args.parallelism,
              "runs": "interleaved: set up every peer (a forked child each), then one run of every peer per round",
              "load average at start (1/5/15 min)": load_at_start, "load average at end": load_average(),
              "wall time s": round(time.perf_counter() - start, 1),
              "date": dt.datetime.now().isoformat(timespec="seconds")}
    if not args.no_save:
        stem = f"{name}-" + dt.datetime.now().strftime("%Y-%m-%d-%H%M%S")
        args.out.mkdir(parents=True, exist_ok=True)
        host = describe_host()
        md = [f"# {p.description}", "", "## Setup", ""]
        md += [f"- {k}: {v}" for k, v in config.items()]
        md += [f"- host {k}: " + (", ".join(f"{n} {v}" for n, v in value.items() if v) if isinstance(value, dict) else f"{value}")
               for k, value in host.items()]
        md += ["", "## Results (million input records per second, median of the runs)", "", *lines, ""]
        md += [f"- {c['case']} {r.name}: {r.status}: {r.error}" for c in cases for r in c["results"] if not r.ok]
        (args.out / f"{stem}.md").write_text("\n".join(md) + "\n")
        doc = {"config": config, "host": host,
               "cases": [{"case": c["case"], "records": c["records"], "load_average": c["load_average"],
                          "cross_check": c["check"].as_dict(), "peers": [r.as_dict() for r in c["results"]]}
                         for c in cases]}
        (args.out / f"{stem}.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
        print(f"wrote {args.out / stem}.md, .json")
    return 0 if all(c["check"].ok for c in cases) else 2


if __name__ == "__main__":
    sys.exit(main())
