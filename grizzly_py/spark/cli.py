"""``grizzly run --engine spark``: the query of FILE[:NAME] on a Spark session, local
(``local[N]``) or on the cluster of ``--master``, with ``--conf`` settings."""

from __future__ import annotations

import json
import time

import click

from ..cli_common import console, load_query, print_result, records_per_second, without_notes
from ..plan import Query
from .planner import run_on_spark
from .session import local_session, require_pyspark


def parse_conf(pairs) -> dict[str, str]:
    """``("k=v", ...)`` of ``--conf`` as a dict; a pair without ``=`` is a usage error."""
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE (e.g. spark.executor.memory=2g)",
                                     param_hint="--conf")
        conf[key.strip()] = value
    return conf


def run_spark(target: str, threads: int, limit: int, as_json: bool, trace: bool, verbose: bool = False,
              master: str | None = None, conf: dict[str, str] | None = None) -> None:
    require_pyspark()
    from pyspark.sql import SparkSession
    started_here = SparkSession.getActiveSession() is None
    start = time.perf_counter()
    spark = local_session(max(1, threads), master=master, **(conf or {}))
    session_s = time.perf_counter() - start
    try:
        stream = load_query(target)
        start = time.perf_counter()
        result = run_on_spark([Query(stream.node)], spark)
        seconds = time.perf_counter() - start
    finally:
        if started_here:
            spark.stop()
    table, m = result["result"], result.metrics
    q = m["queries"][0]
    if as_json:
        click.echo(json.dumps({"seconds": seconds, "session_start_seconds": session_s,
                               **(m if verbose else without_notes(m))}, indent=2, default=str))
        return
    print_result(table, limit)
    console.print(f"[bold]{m['records_in']:,}[/] records in {seconds:.3f} s on Spark ({spark.sparkContext.master}, "
                  f"{q['strategy']} strategy, {q['input']} input) = [bold green]{records_per_second(m['records_in'], seconds)}[/]; "
                  f"out {m['records_out']:,}, filtered {m['filtered_records']:,}, late {m['late_records']:,}; "
                  f"{q['tasks']} tasks in {q['worker_processes']} Python workers, {q['plan_cache_hits']} found "
                  f"their plan compiled (session start {session_s:.1f} s, not counted)")
    if trace:
        for t in q["task_reports"]:
            for p in t["pipelines"]:
                for h in p["variant_history"]:
                    console.print(f"  {t['stage']} task {t.get('partition')} (worker {t['pid']}): pipeline {p['id']} "
                                  f"stage={h['stage']} reason={h['reason']} records={h['records']:,} "
                                  f"compile={p['compile_ms']} ms plan cached={t['plan_cached']}")
