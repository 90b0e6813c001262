"""The ``grizzly`` command line: run queries and show every phase of their compilation.

``grizzly explain FILE[:NAME]`` shows the logical plan, the pipelines, the generated LLVM IR
(before and after optimization) and the machine code; ``grizzly run FILE[:NAME]`` runs the query
on the embedded engine and prints its result and throughput. ``FILE`` is a Python file; ``NAME``
(default ``query``) is a module-level stream or a function that takes a ``StreamEnvironment``
and returns one. ``FILE:NAME`` splits at the last ``:`` when what follows is a Python identifier
(so a path may hold ``:``, ``C:\\q.py`` too). Both commands run ``FILE`` as Python, as
``python FILE`` would: it must be code you trust.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import click
from rich.syntax import Syntax
from rich.table import Table

from .cli_common import console, load_query, one_line_errors, print_result, records_per_second, without_notes

DEBUG = click.option("--debug", is_flag=True, help="on an error, print the full trace (default: one line)")


def _show(title: str, text: str, lexer: str) -> None:
    console.rule(f"[bold]{title}")
    if console.is_terminal:
        console.print(Syntax(text, lexer, theme="ansi_dark", word_wrap=False))
    else:
        click.echo(text)


@click.group()
@click.version_option(package_name="grizzly-py")
def main():
    """grizzly-py: an adaptive query compiler for stream processing."""


@main.command()
@click.argument("target")
@click.option("--plan", "show_plan", is_flag=True, help="the logical plan")
@click.option("--pipelines", "show_pipelines", is_flag=True, help="the physical pipelines")
@click.option("--ir", "show_ir", is_flag=True, help="generated LLVM IR")
@click.option("--ir-optimized", "show_ir_opt", is_flag=True, help="LLVM IR after O3")
@click.option("--asm", "show_asm", is_flag=True, help="machine code for this CPU")
@click.option("--variant", type=click.Choice(["generic", "instrumented", "optimized"]), default="generic",
              help="which code variant to show")
@click.option("--grouping", type=click.Choice(["auto", "hash", "sort"]), default=None,
              help="window grouping: chosen while running, hash tables or sorted key/pointer arrays "
                   "(default: as the environment says)")
@DEBUG
@one_line_errors
def explain(target, show_plan, show_pipelines, show_ir, show_ir_opt, show_asm, variant, grouping, debug):
    """Show how FILE[:NAME] is compiled (default: plan and pipelines).

    FILE is a Python file and runs as Python (trusted code), with its folder on the module search
    path; NAME (default: query) is a stream it defines, or a function taking a StreamEnvironment
    and returning one. FILE:NAME splits at the last ':'."""
    from .codegen.module import generate_pipeline
    from .jit import compile_ir
    from .physical import build_physical_plan
    from .plan import Query
    from .rewrites import rewrite

    stream = load_query(target)
    grouping = grouping or getattr(stream.env, "grouping", "auto")
    if not any((show_plan, show_pipelines, show_ir, show_ir_opt, show_asm)):
        show_plan = show_pipelines = True
    root, notes = rewrite(stream.node)
    if show_plan:
        _show("logical plan", stream.explain(), "text")
        if notes:
            _show("logical plan, rewritten (docs/semantics.md, \"Plan rewrites\")",
                  "\n".join(f"rewrite: {n}" for n in notes) + "\n" + root.explain(), "text")
    physical = build_physical_plan(Query(root))
    if show_pipelines:
        from .codegen.sort_grouping import explain_grouping
        _show("pipelines", physical.explain() + explain_grouping(physical.pipelines, grouping), "text")
    for p in physical.pipelines:
        if not (show_ir or show_ir_opt or show_asm):
            break
        if not p.compiles:
            console.print(f"[bold]pipeline {p.id}[/]: no generated code (an OVER aggregate over the columns "
                          f"that the pipeline before it computes)")
            continue
        options, note = variant_options(p, variant)
        if note:
            console.print(f"[bold]pipeline {p.id}[/]: {note}")
        if grouping == "sort":  # sort grouping has the generic variant only
            from .codegen.module import CodegenOptions
            options = CodegenOptions(grouping="sort")
        from .codegen.sort_merge_join import generate_sort_merge_join, joins_by_sort_merge
        if p.terminal.kind == "join" and joins_by_sort_merge(p, grouping):  # the join the engine runs
            gen = generate_sort_merge_join(p)
        else:
            gen = generate_pipeline(p, options)
        if show_ir:
            _show(f"pipeline {p.id}: LLVM IR ({options.variant})", gen.ir, "llvm")
        for unit in gen.units.values() if (show_ir_opt or show_asm) else ():
            compiled = compile_ir(unit.ir, unit.opt_level)
            if show_ir_opt:
                _show(f"pipeline {p.id}, unit {unit.name}: optimized LLVM IR (O{unit.opt_level})",
                      compiled.optimized_ir, "llvm")
            if show_asm:
                _show(f"pipeline {p.id}, unit {unit.name}: assembly", compiled.assembly, "nasm")


def variant_options(pipeline, variant: str):
    """The options of ``pipeline``'s ``variant``, and a note on how they were chosen. The
    optimized variant comes from profiling the pipeline's source with the instrumented variant
    (the first ``AdaptiveSettings.profile_records`` records), as a running job would."""
    from .codegen.module import CodegenOptions, adaptable
    from .engine.adaptive import AdaptiveSettings
    from .engine.profiling import profile_offline
    from .physical.pipelines import SourceInput

    if variant == "generic":
        return CodegenOptions(), None
    if not adaptable(pipeline):
        return CodegenOptions(), f"has only the generic variant ({pipeline.terminal.kind} pipeline)"
    if variant == "instrumented":
        return CodegenOptions(variant="instrumented"), None
    if not isinstance(pipeline.input, SourceInput):
        return CodegenOptions(), ("showing the generic variant: its input is another pipeline's output, "
                                  "profiled only while the job runs")
    records = AdaptiveSettings.profile_records
    profile, spec = profile_offline(pipeline, pipeline.input.source.batches(), records)
    how = f"profiled {profile.rows_scanned or profile.rows_sampled:,} records of {pipeline.input.source.name}: "
    if spec.options is None:
        return CodegenOptions(), how + "; ".join(spec.reasons) + " (showing the generic variant)"
    return spec.options, how + "; ".join(spec.reasons)


@main.command()
@click.argument("target")
@click.option("--parallelism", default=None, help="worker threads, or 'auto' (default: as the query's environment says)")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="the embedded engine, or a Spark session (local[N], N = --parallelism, or --master)")
@click.option("--master", default=None, metavar="URL",
              help="with --engine spark: the Spark master, e.g. spark://host:7077 (default: local[N])")
@click.option("--conf", "spark_conf", multiple=True, metavar="KEY=VALUE",
              help="with --engine spark: a Spark setting (repeatable), e.g. --conf spark.executor.memory=2g")
@click.option("--window-state", type=click.Choice(["thread_local", "shared", "auto"]), default=None,
              help="window state under parallelism: per-worker states merged at fire, one atomic state, "
                   "or chosen while running")
@click.option("--trace", is_flag=True, help="print each pipeline's variant history")
@click.option("--limit", default=20, show_default=True, help="result rows to print")
@click.option("--json", "as_json", is_flag=True, help="print metrics as JSON")
@click.option("--verbose", is_flag=True, help="also print diagnostics (why counter sources were passed over)")
@DEBUG
@one_line_errors
def run(target, parallelism, engine, master, spark_conf, window_state, trace, limit, as_json, verbose, debug):
    """Run FILE[:NAME] and print its result and throughput.

    FILE is a Python file and runs as Python (trusted code), with its folder on the module search
    path; NAME (default: query) is a stream it defines, or a function taking a StreamEnvironment
    and returning one. FILE:NAME splits at the last ':'. The query runs on the embedded engine,
    or with --engine spark on a Spark session: local[N], or the cluster of --master."""
    if engine != "spark" and (master or spark_conf):
        raise click.UsageError("--master and --conf are Spark settings: add --engine spark")
    if engine == "spark":  # local[N] with N = --parallelism, or --master (docs/spark.md)
        from .spark.cli import parse_conf, run_spark
        return run_spark(target, (os.cpu_count() or 1) if parallelism == "auto" else int(parallelism or 1),
                         limit, as_json, trace, verbose, master=master, conf=parse_conf(spark_conf))
    par = parallelism if parallelism in (None, "auto") else int(parallelism)
    stream = load_query(target, par, window_state)
    stream.collect("result")
    start = time.perf_counter()
    result = stream.env.execute()
    seconds = time.perf_counter() - start
    table, m = result["result"], result.metrics
    if as_json:
        click.echo(json.dumps({"seconds": seconds, **(m if verbose else without_notes(m))}, indent=2, default=str))
        return
    print_result(table, limit)
    compile_ms = sum(p["codegen_ms"] + p["compile_ms"] for q in m["queries"] for p in q["pipelines"])
    console.print(f"[bold]{m['records_in']:,}[/] records in {seconds:.3f} s = "
                  f"[bold green]{records_per_second(m['records_in'], seconds)}[/] "
                  f"(including {compile_ms:.0f} ms of code generation and compilation); out {m['records_out']:,}, "
                  f"filtered {m['filtered_records']:,}, late {m['late_records']:,}")
    if trace:
        print_trace(m)
    if verbose:
        for note in (m.get("adaptive") or {}).get("counter_notes", []):
            console.print(f"counters: {note}")


def print_trace(metrics: dict) -> None:
    """Each pipeline's variant history as a timeline (``grizzly run --trace``)."""
    adaptive = metrics.get("adaptive")
    if adaptive:
        console.print(f"adaptive execution; {adaptive['counters']}")
    for q in metrics["queries"]:
        for p in q["pipelines"]:
            table = Table(title=f"pipeline {p['id']} ({p['kind']}): {p['rows_in']:,} records, "
                                f"{p['deoptimizations']} deoptimizations, codegen {p['codegen_ms']:.0f} ms, "
                                f"compile {p['compile_ms']:.0f} ms, run {p['seconds']:.3f} s",
                          title_justify="left", show_lines=False)
            layouts = "layout_history" in p  # the state layout is chosen as it runs: each stage's
            columns = (("at s", "right"), ("at record", "right"), ("stage", "left"), ("records", "right")) \
                + ((("layout", "left"),) if layouts else ()) + (("why", "left"),)
            for name, justify in columns:
                table.add_column(name, justify=justify, overflow="fold")
            for h in p["variant_history"]:
                layout = (f"{h.get('grouping', 'hash')}, {h['window_state']}",) if layouts else ()
                table.add_row(f"{h['at_s']:.3f}", f"{h['at_record']:,}", h["stage"], f"{h['records']:,}",
                              *layout, h["reason"])
            console.print(table)
            for h in p.get("layout_history", [])[1:]:  # grouping/window_state="auto": its switches
                console.print(f"  {h['at_s']:.3f} s: layout -> {h['grouping']} grouping, {h['window_state']} state "
                              f"from event time {h['boundary']:,} on ({h['reason']})")


def _bench_modules():
    """The benchmark suite's modules ``suite`` and ``suite_report``: from ``grizzly_py.bench`` in
    an installed wheel, from the checkout's top-level ``bench/`` (beside ``grizzly_py/``) in a
    source checkout, where the package root is on ``sys.path`` (an editable install's .pth file,
    or the checkout as the working directory)."""
    package = f"{__package__}.bench"
    if importlib.util.find_spec(package) is None:
        checkout = Path(__file__).resolve().parent.parent / "bench"
        spec = importlib.util.find_spec("bench")
        if spec is None or spec.origin is None or Path(spec.origin).resolve().parent != checkout:
            raise click.UsageError(f"grizzly bench: no benchmark package ({package} is not installed, "
                                   f"and the importable 'bench' is not the checkout's {checkout})")
        package = "bench"
    return importlib.import_module(f"{package}.suite"), importlib.import_module(f"{package}.suite_report")


def _csv(value):
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


@main.command()
@click.argument("workloads", nargs=-1)
@click.option("--peers", help="comma-separated: c,c_dense,numpy,polars,duckdb,spark,flink,grizzly "
              "(default: all; with --quick: all but spark and flink)")
@click.option("--rows", type=int, help="input rows of every workload (default: each workload's own)")
@click.option("--quick", is_flag=True, help="every workload on small data, fast peers, 3 runs (< 2 min)")
@click.option("--repeat", type=int, help="timed runs per peer and case (default 5; --quick: 3)")
@click.option("--seed", type=int, default=42, show_default=True)
@click.option("--threads", type=int, help="threads of polars, DuckDB, Spark and Flink (default: all cores)")
@click.option("--parallelism", type=int, default=1, show_default=True, help="grizzly-py parallelism")
@click.option("--out", type=click.Path(file_okay=False),
              help="report directory (default: $GRIZZLY_CACHE_DIR/bench-results, else "
                   "~/.cache/grizzly-py/bench-results)")
@click.option("--no-save", is_flag=True, help="print only, write no report")
@click.option("--no-plots", is_flag=True, help="write no PNG plots")
@click.option("--counters/--no-counters", default=None,
              help="per-record counters: hardware counters, else callgrind (default: on; off with --quick)")
@click.option("--no-latency", is_flag=True, help="skip grizzly-py's window-latency run")
@click.option("--no-install", is_flag=True, help="do not create PyFlink's virtual environment if missing")
@click.option("--in-process", is_flag=True, help="run peers in this process (no fork per peer)")
@click.option("--engine", type=click.Choice(["local", "spark-cluster"]), default="local", show_default=True,
              help="spark-cluster: start a Spark standalone cluster here (a master, 2 workers of 1 core) "
                   "and run Spark's own plans (spark) against grizzly-py on it (grizzly_spark: Arrow "
                   "sources pushed down; grizzly_spark_files: from_spark of the Parquet copy Spark reads)")
@click.option("--list", "list_only", is_flag=True, help="list workloads and peers, run nothing")
def bench(workloads, peers, rows, quick, repeat, seed, threads, parallelism, out, no_save, no_plots,
          counters, no_latency, no_install, in_process, engine, list_only):
    """Benchmark grizzly-py against its peers (spec: benchmarks.md); WORKLOADS default to all.
    Reports go to --out, by default a folder under grizzly-py's cache, never the checkout."""
    suite, suite_report = _bench_modules()
    if list_only:
        for w in suite.WORKLOADS.values():
            state = f"pending: {w.pending}" if w.pending else ", ".join(c.label for c in w.cases())
            click.echo(f"{w.name:22} {w.source:28} {state}")
        click.echo("peers: " + ", ".join(f"{n}{'' if p.fast else ' (not in --quick)'}"
                                        for n, p in suite.PEERS.items()))
        return
    unknown = [w for w in workloads if w not in suite.WORKLOADS]
    if unknown:
        raise click.UsageError(f"unknown workloads {unknown}; choose from {', '.join(suite.WORKLOADS)}")
    peer_list = _csv(peers)
    if peer_list is not None:
        bad = [p for p in peer_list if p not in suite.PEERS]
        if bad:
            raise click.UsageError(f"unknown peers {bad}; choose from {', '.join(suite.PEERS)}")
    if (rows is not None and rows < 1) or (repeat is not None and repeat < 1):
        raise click.UsageError("--rows and --repeat must be >= 1")
    opts = suite.Options(
        workloads=list(workloads) or list(suite.WORKLOADS), peers=peer_list, rows=rows, quick=quick,
        repeat=repeat, seed=seed, threads=threads or os.cpu_count() or 1, parallelism=parallelism,
        save=not no_save, plots=not no_plots, latency=not no_latency, counters=counters,
        install=not no_install, in_process=in_process, progress=True)
    if out:  # (else the default folder: bench/output.py)
        opts.out = Path(out)
    if engine == "spark-cluster":
        result = _bench_on_a_cluster(suite, opts, bool(workloads), peer_list is not None)
    else:
        result = suite.run_suite(opts)
    suite_report.console(result)
    if opts.save:
        paths = suite_report.write(result, opts.out, opts.plots)
        click.echo("wrote " + ", ".join(str(p) for p in paths))
    click.echo(f"{result.seconds:.1f} s in all")
    if not result.ok:
        raise SystemExit(2)


def _bench_on_a_cluster(suite, opts, workloads_given: bool, peers_given: bool):
    """``grizzly bench --engine spark-cluster``: the suite with its Spark peers on a standalone
    cluster of 2 one-core workers started here (and stopped after); by default the workloads of
    issue 32's measure and the peers spark, grizzly_spark, grizzly_spark_files (and the embedded
    baseline)."""
    from .spark.cluster import StandaloneCluster

    if not workloads_given:
        opts.workloads = [w for w in suite.CLUSTER_WORKLOADS if w in suite.WORKLOADS]
    if not peers_given:
        opts.peers = ["spark", "grizzly_spark", "grizzly_spark_files"]
    opts.threads, opts.in_process = 2, False
    # heaps as the local Spark peer has them (a 4g driver) and nearly all of each worker's 2g for
    # its executor: Spark's default 1g runs out on Nexmark Q23's joined rows
    opts.spark_conf = {"spark.driver.memory": "4g", "spark.executor.memory": "1800m"}
    with StandaloneCluster(workers=2, cores=1, memory="2g") as cluster:
        click.echo(f"Spark standalone cluster at {cluster.url} (2 workers, 1 core and 2g each)")
        opts.spark_master = cluster.url
        return suite.run_suite(opts)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
