"""Render benchmark results: a console table (rich when installed) and Markdown + JSON files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .harness import CrossCheck, PeerResult

BASELINE = "grizzly"
COLUMNS = ("peer", "status", "median s", "Mrec/s", "ns/rec", f"x {BASELINE}", "first s", "threads")


def _fmt(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def rows(results: list[PeerResult], check: CrossCheck) -> list[tuple[str, ...]]:
    """One row of strings per peer; ``x grizzly`` is the peer's records/s over grizzly-py's.
    A peer whose result disagrees with the cross-check reference shows status MISMATCH."""
    base = next((r for r in results if r.name == BASELINE and r.ok and r.runs.seconds), None)
    out = []
    for r in results:
        timed = r.runs is not None and bool(r.runs.seconds) and r.ok
        rate = r.runs.records_per_s if timed else None
        out.append((
            r.name,
            "MISMATCH" if r.name in check.mismatches else r.status,
            _fmt(r.runs.median if timed else None, 3),
            _fmt(rate / 1e6 if rate else None, 1),
            _fmt(r.runs.ns_per_record if timed else None, 2),
            _fmt(rate / base.runs.records_per_s if rate and base else None, 2),
            _fmt(r.runs.first if timed else None, 3),
            str(r.info.get("threads", "-")),
        ))
    return out


def problems(results: list[PeerResult], check: CrossCheck) -> list[str]:
    """Human-readable lines for missing/failed peers and cross-check mismatches."""
    lines = [f"{r.name}: {r.status}: {r.error}" for r in results if not r.ok]
    ref = check.reference
    for name, s in check.mismatches.items():
        diffs = [f"{f} {getattr(s, f)} != {getattr(ref, f)}" for f in ("total", "groups", "fingerprint")
                 if getattr(s, f) != getattr(ref, f)]
        lines.append(f"MISMATCH {name} vs {', '.join(check.agreeing)}: {'; '.join(diffs)}")
    return lines


def print_table(title: str, results: list[PeerResult], check: CrossCheck) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        table = [COLUMNS, *rows(results, check)]
        widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
        print(title)
        for row in table:
            print("  ".join(cell.rjust(w) if i > 1 else cell.ljust(w)
                            for i, (cell, w) in enumerate(zip(row, widths))))
        for line in problems(results, check):
            print(("WARNING: " if line.startswith("MISMATCH") else "") + line)
        return
    console = Console()
    if not console.is_terminal:  # piped to a file: do not squeeze the table to 80 columns
        console = Console(width=max(console.width, 120))
    table = Table(title=title)
    for i, name in enumerate(COLUMNS):
        table.add_column(name, justify="left" if i < 2 else "right")
    for row in rows(results, check):
        style = None if row[1] == "ok" else "red"
        table.add_row(*row, style=style)
    console.print(table)
    for line in problems(results, check):
        console.print(f"[bold red]WARNING: {line}[/]" if line.startswith("MISMATCH") else line,
                      markup=line.startswith("MISMATCH"))


def markdown(title: str, config: dict[str, Any], host: dict[str, Any],
             results: list[PeerResult], check: CrossCheck) -> str:
    md = [f"# {title}", ""]
    md += ["## Setup", ""] + [f"- {k}: {v}" for k, v in config.items()] + [""]
    md += ["## Host", ""]
    for k, v in host.items():
        if isinstance(v, dict):
            v = ", ".join(f"{name} {ver}" for name, ver in v.items() if ver) or "-"
        md.append(f"- {k}: {v}")
    md += ["", "## Results", "",
           f"Median of the runs; `x {BASELINE}` is the peer's records/s over grizzly-py's "
           "(above 1: faster than grizzly-py). `first s` is the first run (grizzly-py compiles "
           "from scratch there).", ""]
    md.append("| " + " | ".join(COLUMNS) + " |")
    md.append("|" + "|".join("---" if i < 2 else "---:" for i in range(len(COLUMNS))) + "|")
    md += ["| " + " | ".join(row) + " |" for row in rows(results, check)]
    md += ["", "## Cross-check", ""]
    if check.reference is None:
        md.append("No peer produced a result.")
    else:
        ref = check.reference
        md.append(f"Reference (agreed by {', '.join(check.agreeing)}): total {ref.total:,}, "
                  f"groups {ref.groups:,}, fingerprint `{ref.fingerprint}`.")
    for line in problems(results, check):
        md.append(f"- **{line}**" if line.startswith("MISMATCH") else f"- {line}")
    md += ["", "## Peers", ""]
    for r in results:
        info = ", ".join(f"{k}={_round(v)}" for k, v in r.info.items())
        md.append(f"- **{r.name}** ({r.status}): {r.description}. {info}")
    return "\n".join(md) + "\n"


def _round(v: Any) -> Any:
    return round(v, 3) if isinstance(v, float) else v


def write(out_dir: Path, stem: str, title: str, config: dict[str, Any], host: dict[str, Any],
          results: list[PeerResult], check: CrossCheck) -> tuple[Path, Path]:
    """Write ``<stem>.md`` and ``<stem>.json`` under ``out_dir``; return both paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    md_path, json_path = out_dir / f"{stem}.md", out_dir / f"{stem}.json"
    md_path.write_text(markdown(title, config, host, results, check))
    doc = {"title": title, "config": config, "host": host,
           "peers": [r.as_dict() for r in results], "cross_check": check.as_dict()}
    json_path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return md_path, json_path
