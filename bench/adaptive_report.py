"""The report of ``bench/adaptive.py``: throughput-over-time plots, Markdown and JSON.

``plot`` draws one scenario (median Mrec/s per time bin for each curve, the adaptive run's
stage switches and the data's change point); ``targets`` computes issue 5's figures (adaptive
over generic and over the hand-written C dense array on YSB, records until re-optimization);
``write`` puts everything into ``adaptive-<date>-<time>.{md,json}`` in the report folder.
``python -m bench.adaptive_report RESULTS.json [IMG_DIR]`` draws a saved run's plots again.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
import sys
from pathlib import Path

from . import report
from .host import describe_host

STAGE_STYLE = {"instrumented": ("tab:orange", ":"), "optimized": ("tab:green", "-"),
               "generic": ("tab:red", "--")}
CURVE_COLORS = {"adaptive": "tab:blue", "generic": "tab:gray", "p5 first": "tab:purple", "p1 first": "tab:brown"}


def plot(summary: dict, img_dir: Path) -> Path:
    """``docs/img/adaptive-<scenario>.png``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width = summary["bin_s"]
    fig, ax = plt.subplots(figsize=(10, 4.6))
    top = 1.0
    for curve, c in summary["curves"].items():
        ys = [float("nan") if v is None else v for v in c["mrec_s_per_bin"]]
        xs = [(i + 0.5) * width for i in range(len(ys))]
        ax.plot(xs, ys, drawstyle="steps-mid", label=f"{curve} ({c['mrec_s']:.0f} Mrec/s overall)",
                color=CURVE_COLORS.get(curve), linewidth=2.0 if curve == "adaptive" else 1.3)
        top = max([top] + [y for y in ys if y == y])
    adaptive = summary["curves"].get("adaptive")
    if adaptive is not None:
        for h in adaptive["history"][1:]:
            color, style = STAGE_STYLE.get(h["stage"], ("black", "-"))
            ax.axvline(h["at_s_from_pulls"], color=color, linestyle=style, linewidth=1.0, alpha=0.8)
        for stage, (color, style) in STAGE_STYLE.items():
            if any(h["stage"] == stage for h in adaptive["history"][1:]):
                ax.plot([], [], color=color, linestyle=style, linewidth=1.0, label=f"adaptive run enters {stage}")
    for curve, c in summary["curves"].items():  # where each curve's typical run reached the change
        if c["change_s"] is not None:
            ax.plot([c["change_s"]], [0], marker="^", markersize=9, color=CURVE_COLORS.get(curve), clip_on=False)
    if adaptive is not None and adaptive["change_s"] is not None:
        change = adaptive["change_s"]
        ax.axvline(change, color="black", linestyle="-.", linewidth=1.2)
        ax.annotate(f"data change ({summary['change']}; triangles: each curve)", (change, top * 1.15),
                    fontsize=8, ha="left", xytext=(4, 0), textcoords="offset points")
    ax.set_ylim(0, top * 1.25)
    ax.set_xlabel(f"seconds since the job started (bins of {width * 1000:.0f} ms; median of "
                  f"{len(next(iter(summary['curves'].values()))['seconds'])} runs per bin)")
    ax.set_ylabel("million records / s")
    ax.set_title(f"Grizzly fig. {summary['figure']}: {summary['title']}", fontsize=10)
    ax.legend(fontsize=7, loc="lower right", ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    img_dir.mkdir(parents=True, exist_ok=True)
    path = img_dir / f"adaptive-{summary['name']}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def targets(summaries: list[dict], ysb) -> dict:
    """Issue 5's targets from the measurements (None where not measured)."""
    out: dict = {}
    if ysb is not None:
        rate = {r.name: r.runs.records_per_s for r in ysb[0] if r.ok and r.runs and r.runs.seconds}
        if "grizzly" in rate and "grizzly_generic" in rate:
            out["ysb_end_to_end_adaptive_over_generic"] = round(rate["grizzly"] / rate["grizzly_generic"], 2)
        if "grizzly" in rate and "c_dense" in rate:
            out["ysb_end_to_end_adaptive_over_c_dense"] = round(rate["grizzly"] / rate["c_dense"], 2)
        steady = next((s for s in summaries if s["name"] == "ysb"), None)
        if steady is not None and "c_dense" in rate:
            opt = steady["curves"]["adaptive"]["steady_mrec_s"]
            gen = steady["curves"]["generic"]["steady_mrec_s"]
            if opt["mrec_s"] and gen["mrec_s"]:
                out["ysb_steady_optimized_over_generic"] = round(opt["mrec_s"] / gen["mrec_s"], 2)
                out["ysb_steady_optimized_over_c_dense"] = round(opt["mrec_s"] * 1e6 / rate["c_dense"], 2)
                out["ysb_steady_stage"] = opt["stage"]
    for s in summaries:
        a = s["curves"].get("adaptive")
        if a is None or s["change_record"] is None:
            continue
        after = [r.get("optimized_after_records") for r in a["reoptimization"]]
        out[f"{s['name']}_records_to_reoptimize"] = None if None in after else max(after)
        out[f"{s['name']}_seconds_to_reoptimize"] = _median(r.get("optimized_after_s") for r in a["reoptimization"])
    out["results_equal"] = all(s["results_equal"] for s in summaries) and (ysb is None or ysb[1].ok)
    return out


def markdown(config: dict, host: dict, summaries: list[dict], ysb, goals: dict) -> str:
    md = ["# Adaptive compilation over time (Grizzly figures 12-14)", "", "## Setup", ""]
    md += [f"- {k}: {v}" for k, v in config.items()] + ["", "## Host", ""]
    for k, v in host.items():
        if isinstance(v, dict):
            v = ", ".join(f"{name} {ver}" for name, ver in v.items() if ver) or "-"
        md.append(f"- {k}: {v}")
    md += ["", "## Targets (issue 5)", ""] + [f"- {k}: {v}" for k, v in goals.items()]
    md += ["", "## Scenarios", "",
           "Overall: records / wall time of the whole job (median of the runs); steady: the rate "
           "after the run's last stage switch (from the pull log), with that stage; replay: the share "
           "of the job's time the source spent shifting event times (the engine waits meanwhile).", "",
           "| scenario | curve | overall Mrec/s | steady Mrec/s (stage) | replay | runs s | stages (typical run) |",
           "|---|---|---:|---:|---:|---|---|"]
    for s in summaries:
        for curve, c in s["curves"].items():
            st = c["steady_mrec_s"]
            stages = " > ".join(h["stage"][:3] for h in c["history"])
            md.append(f"| {s['name']} | {curve} | {c['mrec_s']:.1f} | {st['mrec_s']} ({st['stage']}) | "
                      f"{c['replay_share']:.0%} | "
                      f"{', '.join(f'{x:.2f}' for x in c['seconds'])} | {stages} |")
    md += ["", "## Re-optimization after the change", "",
           "Records from the first changed record to the first optimized stage after it (each run).", "",
           "| scenario | change at record | first reaction | optimized after (records) | (s) | options |",
           "|---|---:|---|---|---|---|"]
    for s in summaries:
        a = s["curves"].get("adaptive")
        if a is None:
            continue
        ro = a["reoptimization"]
        md.append(f"| {s['name']} | {s['change_record'] if s['change_record'] is not None else s['change']} | "
                  f"{ro[0].get('reacted') or '-'} | "
                  f"{', '.join(str(r.get('optimized_after_records', r.get('optimized_at_record'))) for r in ro)} | "
                  f"{', '.join(str(r.get('optimized_after_s', r.get('optimized_at_s'))) for r in ro)} | "
                  f"{ro[-1].get('options', '-')} |")
    md += ["", "## Variant history of the adaptive runs (the run of median length)", ""]
    for s in summaries:
        md += [f"### {s['name']} ({s['title']})", "",
               f"{s['records']:,} records ({s['distinct_rows']:,} generated, replayed {s['copies']}x); "
               f"results of all curves and runs equal: **{s['results_equal']}** "
               f"({s['result_rows']:,} result rows, total {s['result_total']:,}); {s['counters']}", ""]
        if s.get("plot"):
            md += [f"![{s['name']}](../../docs/img/{Path(s['plot']).name})", ""]
        for h in s["curves"].get("adaptive", {"history": []})["history"]:
            md.append(f"- {h['at_s_from_pulls']:.3f} s, record {h['at_record']:,}: **{h['stage']}** "
                      f"({h['records']:,} records): {h['reason']}")
        md.append("")
    if ysb is not None:
        results, check = ysb
        md += ["## YSB, 10,000 keys: bench/ysb.py's peers side by side", "",
               "| " + " | ".join(report.COLUMNS) + " |",
               "|" + "|".join("---" if i < 2 else "---:" for i in range(len(report.COLUMNS))) + "|"]
        md += ["| " + " | ".join(row) + " |" for row in report.rows(results, check)]
        md += [""] + [f"- {line}" for line in report.problems(results, check)]
        md += [f"- **{r.name}**: {r.description}" for r in results] + [""]
    return "\n".join(md) + "\n"


def write(out_dir: Path, config: dict, summaries: list[dict], ysb) -> list[Path]:
    host = describe_host()
    goals = targets(summaries, ysb)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / ("adaptive-" + dt.datetime.now().strftime("%Y-%m-%d-%H%M%S"))
    doc = {"config": config, "host": host, "targets": goals, "scenarios": summaries,
           "ysb": None if ysb is None else {"peers": [r.as_dict() for r in ysb[0]], "cross_check": ysb[1].as_dict()}}
    md, js = stem.with_suffix(".md"), stem.with_suffix(".json")
    md.write_text(markdown(config, host, summaries, ysb, goals))
    js.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return [md, js]


if __name__ == "__main__":
    saved = json.loads(Path(sys.argv[1]).read_text())
    img = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).resolve().parent.parent / "docs" / "img"
    for summary in saved["scenarios"]:
        if summary.get("plot"):
            print(plot(summary, img))
