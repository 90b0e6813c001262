"""The report of ``grizzly bench``: console table, Markdown, JSON and PNG plots.

Per case: each peer's records/s (input records over the median wall time of its runs), the
ratio grizzly-py ÷ peer (above 1: grizzly-py is faster), the cross-check verdict, grizzly-py's
window latency p50/p99 and its first run's code generation + compilation time. Then pending
workloads and cases with the feature they wait for, peers that are missing with the reason,
per-record counters and the host.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from .suite import BASELINE, CaseResult, SuiteResult

STATUS_SHORT = {"missing": "missing", "unsupported": "unsupported", "failed": "FAILED",
                "no query": "–", "pending": "pending"}


def _rate(r) -> float | None:
    return r.runs.records_per_s if r is not None and r.ok and r.runs and r.runs.seconds else None


def _cell(case: CaseResult, name: str) -> str:
    r = case.by_peer().get(name)
    if r is None:
        return ""
    rate = _rate(r)
    text = f"{rate / 1e6:,.1f}" if rate else STATUS_SHORT.get(r.status, r.status)
    if case.check is not None and name in case.check.mismatches:
        text += " MISMATCH"
    return text


def _ratio(case: CaseResult, name: str) -> str:
    by = case.by_peer()
    base, other = _rate(by.get(BASELINE)), _rate(by.get(name))
    return f"{base / other:.2f}" if base and other else "–"


def _verdict(case: CaseResult) -> str:
    c = case.check
    if c is None:
        return "pending"
    ran = len(c.agreeing) + len(c.mismatches)
    if c.mismatches:
        return f"MISMATCH: {', '.join(c.mismatches)}"
    return f"ok ({ran} agree)" if ran > 1 else "single peer" if ran else "no result"


def _latency(case: CaseResult) -> str:
    r = case.by_peer().get(BASELINE)
    lat = r.info.get("latency") if r is not None else None
    if not lat:
        return "–"
    if "error" in lat:
        return "unavailable"
    if not lat.get("windows"):
        return "–"
    return f"{lat['p50_ms']:.1f} / {lat['p99_ms']:.1f}"


def _compile(case: CaseResult) -> str:
    r = case.by_peer().get(BASELINE)
    ms = r.info.get("compile_ms") if r is not None else None
    return f"{ms:.0f}" if ms is not None else "–"


def rows(suite: SuiteResult) -> tuple[list[str], list[list[str]], list[str], list[list[str]]]:
    """(header, rows) of the records/s table and of the ratio table."""
    peers = suite.options.peers
    order = [BASELINE] + [p for p in peers if p != BASELINE]
    others = order[1:]
    head = ["workload", "case", *(f"{p} Mrec/s" for p in order), "cross-check",
            "grizzly latency p50 / p99 ms", "grizzly compile ms"]
    ratio_head = ["workload", "case", *(f"÷ {p}" for p in others)]
    body, ratio_body = [], []
    for w in suite.workloads:
        if w.pending:
            body.append([w.workload.name, "–", "pending", *[""] * len(others),
                         w.workload.pending, "", ""])
            continue
        for c in w.cases:
            if c.case.pending:
                body.append([w.workload.name, c.case.label, "pending", *[""] * len(others),
                             c.case.pending, "", ""])
                continue
            body.append([w.workload.name, c.case.label, *(_cell(c, p) for p in order), _verdict(c),
                         _latency(c), _compile(c)])
            ratio_body.append([w.workload.name, c.case.label, *(_ratio(c, p) for p in others)])
    return head, body, ratio_head, ratio_body


def md_table(header: list[str], body: list[list[str]]) -> list[str]:
    return (["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i < 2 else "---:" for i in range(len(header))) + "|"]
            + ["| " + " | ".join(r) + " |" for r in body])


def problems(suite: SuiteResult) -> list[str]:
    lines = []
    for w in suite.workloads:
        for c in w.cases:
            for r in c.results:
                if r.status in ("failed", "unsupported"):
                    lines.append(f"{w.workload.name} {c.case.label}: {r.name}: {r.status}: {r.error}")
            if c.check is not None:
                for name in c.check.mismatches:
                    from .window_workloads import mismatch_detail
                    lines.append(f"{w.workload.name} {c.case.label}: MISMATCH {name} vs "
                                 f"{', '.join(c.check.agreeing)}: "
                                 f"{mismatch_detail(c.check.mismatches[name], c.check.reference)}")
    return lines


def peer_status(suite: SuiteResult) -> dict[str, dict[str, Any]]:
    """Per peer: ``missing`` with the reason if it never started, else what it ran."""
    out: dict[str, dict[str, Any]] = {}
    for name in suite.options.peers:
        results = [r for w in suite.workloads for c in w.cases for r in c.results if r.name == name]
        missing = [r for r in results if r.status == "missing"]
        ran = [r for r in results if r.ok]
        info = next((r.info for r in ran), {})
        out[name] = {
            "status": "missing" if missing and not ran else "ok" if ran else "not run",
            "reason": missing[0].error if missing else None,
            "cases_run": len(ran),
            "description": next((r.description for r in ran if r.description), "").removeprefix(f"{name}: "),
            "version": info.get("version"), "threads": info.get("threads"),
        }
    return out


def counters_md(counters: dict | None) -> list[str]:
    if counters is None:
        return ["Not measured in this run (`--counters` turns them on; off in `--quick`)."]
    if "error" in counters:
        return [f"Failed: {counters['error']}"]
    md = [counters.get("note", "")]
    table = counters.get("table") or []
    if table:
        cols = counters.get("columns", [])
        md += [""] + md_table(cols, [[str(x) for x in row] for row in table])
    return md


def markdown(suite: SuiteResult) -> str:
    head, body, ratio_head, ratio_body = rows(suite)
    mode = suite.config["mode"]
    md = [f"# grizzly bench ({mode})", "",
          "Input records per second in millions (all input rows, before any filter), median of "
          f"{suite.options.repeat} run(s) per peer and case. `–`: the peer has no query for the "
          "workload; `pending`: grizzly-py cannot run it yet (the reason says which feature); "
          "`missing`: the peer could not be installed or started (reason below). Cross-check: "
          "how many peers produced the same result (exact on integers, relative 1e-9 on floats). "
          "Latency: grizzly-py, ingestion of the batch holding a window's last record to the "
          "emission of the window's result, p50 / p99 over the windows of one extra run. Compile: "
          "grizzly-py's code generation + LLVM compilation in its first run of the case.", ""]
    md += md_table(head, body)
    md += ["", "## Ratios", "", "grizzly-py's records/s ÷ the peer's (above 1: grizzly-py is faster).", ""]
    md += md_table(ratio_head, ratio_body)
    md += ["", "## Workloads", ""]
    for w in suite.workloads:
        wl = w.workload
        size = f"{w.rows:,} input rows" if w.records in ([], [w.rows]) else \
            f"{w.rows:,} rows ({' and '.join(f'{r:,}' for r in w.records)} input records)"
        state = f"pending: {wl.pending}" if wl.pending else f"{size}, {w.seconds:.0f} s"
        md.append(f"- **{wl.name}** ({wl.source}): {wl.query}. {state}."
                  + (f" Note: {wl.note}." if wl.note else ""))
        for c in w.cases:
            if c.case.pending and not wl.pending:
                md.append(f"  - case {c.case.label}: pending: {c.case.pending}")
    md += ["", "## Peers", ""]
    for name, st in peer_status(suite).items():
        if st["status"] == "missing":
            md.append(f"- **{name}**: missing: {st['reason']}")
        else:
            extra = ", ".join(f"{k} {st[k]}" for k in ("version", "threads") if st[k] is not None)
            md.append(f"- **{name}** ({st['status']}, {st['cases_run']} cases{', ' + extra if extra else ''}): "
                      f"{st['description']}")
    lines = problems(suite)
    if lines:
        md += ["", "## Problems", ""] + [f"- **{l}**" if "MISMATCH" in l else f"- {l}" for l in lines]
    md += ["", "## Per-record counters", ""] + counters_md(suite.counters)
    md += ["", "## Setup", ""] + [f"- {k}: {v}" for k, v in suite.config.items()]
    md += ["", "## Host", ""]
    for k, v in suite.host.items():
        if isinstance(v, dict):
            v = ", ".join(f"{n} {ver}" for n, ver in v.items() if ver) or "-"
        md.append(f"- {k}: {v}")
    return "\n".join(md) + "\n"


def as_json(suite: SuiteResult) -> dict:
    return {
        "title": f"grizzly bench ({suite.config['mode']})",
        "config": suite.config, "host": suite.host,
        "peers": peer_status(suite),
        "workloads": [{
            "name": w.workload.name, "source": w.workload.source, "query": w.workload.query,
            "pending": w.workload.pending, "note": w.workload.note, "rows": w.rows,
            "records": w.records,
            "seconds": round(w.seconds, 3), "data_s": round(w.data_s, 3),
            "cases": [{"case": c.case.label, "param": c.case.param, "pending": c.case.pending,
                       "cross_check": c.check.as_dict() if c.check else None,
                       "peers": [r.as_dict() for r in c.results]} for c in w.cases],
        } for w in suite.workloads],
        "counters": suite.counters,
    }


def plots(suite: SuiteResult, stem: Path) -> list[Path]:
    """PNG plots: records/s per case and peer (log scale), and grizzly-py ÷ peer ratios."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    peers = [BASELINE] + [p for p in suite.options.peers if p != BASELINE]
    cases = [(w.workload.name, c) for w in suite.workloads for c in w.cases if c.check is not None]
    if not cases:
        return []
    labels = [f"{name} {c.case.label}" if c.case.label != "-" else name for name, c in cases]
    colors = {p: plt.get_cmap("tab10")(i) for i, p in enumerate(peers)}
    paths = []
    height = max(4.0, 0.32 * len(cases) * max(1, len(peers)) / 3)
    fig, ax = plt.subplots(figsize=(10, height))
    bar = 0.8 / len(peers)
    for j, p in enumerate(peers):
        ys, xs = [], []
        for i, (_, c) in enumerate(cases):
            rate = _rate(c.by_peer().get(p))
            if rate:
                ys.append(i + j * bar - 0.4 + bar / 2)
                xs.append(rate / 1e6)
        ax.barh(ys, xs, height=bar, label=p, color=colors[p])
    ax.set_yticks(range(len(cases)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("million input records / s (log scale; higher is better)")
    ax.set_title(f"grizzly bench ({suite.config['mode']}): throughput by workload and peer")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    path = stem.with_name(stem.name + "-throughput.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    paths.append(path)

    fig, ax = plt.subplots(figsize=(10, max(4.0, 0.25 * len(cases))))
    for p in peers[1:]:
        xs, ys = [], []
        for i, (_, c) in enumerate(cases):
            base, other = _rate(c.by_peer().get(BASELINE)), _rate(c.by_peer().get(p))
            if base and other:
                xs.append(base / other)
                ys.append(i)
        ax.scatter(xs, ys, label=p, color=colors[p], s=22)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(cases)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("grizzly-py records/s ÷ peer records/s (log scale; right of 1: grizzly-py faster)")
    ax.set_title("grizzly-py against each peer")
    ax.legend(fontsize=7)
    ax.grid(axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    path = stem.with_name(stem.name + "-ratios.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    paths.append(path)
    return paths


def write(suite: SuiteResult, out_dir: Path, with_plots: bool = True) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / ("suite-" + ("quick-" if suite.options.quick else "")
                      + suite.config["date"].replace(":", "").replace("T", "-"))
    md_path, json_path = stem.with_suffix(".md"), stem.with_suffix(".json")
    md_path.write_text(markdown(suite))
    json_path.write_text(json.dumps(as_json(suite), indent=2, default=str) + "\n")
    paths = [md_path, json_path]
    if with_plots:
        paths += plots(suite, stem)
    return paths


def console(suite: SuiteResult) -> None:
    head, body, ratio_head, ratio_body = rows(suite)
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print("\n".join(md_table(head, body)))
        return
    con = Console()
    if not con.is_terminal:
        con = Console(width=max(con.width, shutil.get_terminal_size((200, 20)).columns, 200))
    table = Table(title=f"grizzly bench ({suite.config['mode']}): Mrec/s, median of {suite.options.repeat}")
    for i, h in enumerate(head):
        table.add_column(h, justify="left" if i < 2 else "right")
    for r in body:
        style = "red" if any("MISMATCH" in x or "FAILED" in x for x in r) else \
            "dim" if r[2] == "pending" else None
        table.add_row(*r, style=style)
    con.print(table)
    for line in problems(suite):
        con.print(line, markup=False, style="bold red" if "MISMATCH" in line else None)
    for name, st in peer_status(suite).items():
        if st["status"] == "missing":
            con.print(f"{name}: missing: {st['reason']}", markup=False)
