"""Record accounting: every record a pipeline is given is filtered, late, or contributes to its
results, and the engine checks it at the end of every job.

Per pipeline (``pipeline_account``), from the driver's count of rows handed to it and its kernel's
counters (``abi.STATE_ROWS_IN``, ``STATE_FILTERED``, ``STATE_LATE``, summed over the workers' state
blocks):

- ``rows_in == filtered + late + contributing``, where *contributing* is, per pipeline kind:
  a projection's output rows (counted by the driver from the batches the kernel returned; an
  identity passes every row); the rows a window pipeline aggregated into windows, or a join
  pipeline inserted into its tables (the rows its compiled loop took in, less filtered and late);
- the compiled loop took in exactly the rows the driver handed it (``kernel_rows_in == rows_in``).

Between pipelines: a pipeline fed by others (chained windows, union and join consumers) got exactly
the rows its producers emitted, and the sink exactly the last pipeline's. Over the pipelines that
read a query's sources (each source batch goes to every pipeline that reads the source): they got
the same rows per source, together as many as the sources delivered.

A join with a filter fused into its probe (``JoinTerminal.pair_filter``) builds pairs the filter
rejects: those are results of the join that were filtered, as a filter pipeline after it would
count them (``pairs_filtered``, in the query's ``results`` and ``filtered`` below), not records
the join was given.

Per query, the sums over all its pipelines, whatever the plan's shape: rows flow in from
the sources (``records_in``, a row counted once per pipeline that reads it) and out of windows and
joins (``results``), and every one of them is filtered, late, aggregated into a window or inserted
into a join table (``into_state``), or written to the sink (``records_out``):
``records_in + results == filtered + late + into_state + records_out``. It follows from the checks
above (a projection's output is its consumer's input); it is checked too, as the law the job's
metrics state. The job's ``filtered_records``, ``late_records`` and ``records_out`` are these sums
over its queries; with the rows the sources rejected (``on_bad_rows="drop"``),
``records_read == records_in + rejected``.

A violation is an internal error (``AccountingError``) naming the pipeline and the numbers; the
accounts are ``JobResult.metrics["accounting"]``.
"""

from __future__ import annotations

from ..codegen import abi
from ..physical.pipelines import SourceInput


class AccountingError(RuntimeError):
    """Records that the engine lost or counted twice (a bug in the engine, not in the input)."""


def pipeline_account(run) -> dict:
    """The account of one ``PipelineRun`` (see the module docstring)."""
    k = run.kernel
    filtered = k.counter(abi.STATE_FILTERED) if k is not None else 0
    late = k.counter(abi.STATE_LATE) if k is not None else 0
    seen = k.counter(abi.STATE_ROWS_IN) if k is not None else run.rows_in
    stateful = k is not None and k.fires  # a window or a join
    # pairs a join built and the filter fused into its probe rejected: results of the join that
    # were filtered (as a filter pipeline after it would count them), not records it was given
    pairs_filtered = k.pairs_filtered if k is not None else 0
    if not stateful:
        contributing, what = run.rows_out, "output rows"
    else:
        contributing, what = seen - filtered - late, k.contributing_means
    return {"pipeline": run.pipeline.id, "kind": run.pipeline.terminal.kind,
            "reads_source": isinstance(run.pipeline.input, SourceInput),
            "stateful": stateful, "rows_in": run.rows_in,
            "kernel_rows_in": seen, "filtered": filtered, "late": late, "contributing": contributing,
            "contributing_means": what, "rows_out": run.rows_out, "pairs_filtered": pairs_filtered}


def _problems(account: dict) -> list[str]:
    out = []
    a = account
    if a["rows_in"] != a["filtered"] + a["late"] + a["contributing"]:
        out.append(f"rows_in {a['rows_in']} != filtered {a['filtered']} + late {a['late']} + "
                   f"{a['contributing_means']} {a['contributing']}")
    if a["kernel_rows_in"] != a["rows_in"]:
        out.append(f"its compiled loop took in {a['kernel_rows_in']} rows, the driver handed it {a['rows_in']}")
    if min(a["filtered"], a["late"], a["contributing"]) < 0:
        out.append(f"a negative count ({a})")
    return out


def _flow(accounts: list[dict]) -> dict:
    """A query's rows, summed over all its pipelines (``accounts``, the last one feeding the sink;
    see the module docstring)."""
    readers = [a for a in accounts if a["reads_source"]]
    return {"records_in": sum(a["rows_in"] for a in readers),
            "results": sum(a["rows_out"] + a["pairs_filtered"] for a in accounts if a["stateful"]),
            "filtered": sum(a["filtered"] + a["pairs_filtered"] for a in accounts),
            "late": sum(a["late"] for a in accounts),
            "into_state": sum(a["contributing"] for a in accounts if a["stateful"]),
            "records_out": accounts[-1]["rows_out"]}


def _handover_problems(qr, accounts: list[dict]) -> list[str]:
    """Rows lost or doubled between pipelines, and between the last one and the sink."""
    out = []
    emitted = {}
    for pid, consumer in qr.consumer.items():
        if consumer is not None:
            emitted[consumer] = emitted.get(consumer, 0) + accounts[pid]["rows_out"]
    for pid, rows in emitted.items():
        if accounts[pid]["rows_in"] != rows:
            out.append(f"pipeline {pid} got {accounts[pid]['rows_in']} rows, its producers emitted {rows}")
    if qr.sink.rows != accounts[-1]["rows_out"]:
        out.append(f"the sink got {qr.sink.rows} rows, the last pipeline emitted {accounts[-1]['rows_out']}")
    return out


def check_accounting(runs, metrics: dict) -> dict:
    """The accounts of a finished job's ``QueryRun``s; raises ``AccountingError`` on a violation."""
    queries, errors = [], []
    for qr in runs:
        sink = f"sink {qr.sink.spec.name!r}"
        accounts = [pipeline_account(r) for r in qr.runs]
        for a in accounts:
            errors += [f"{sink}, pipeline {a['pipeline']} ({a['kind']}): {p}" for p in _problems(a)]
        errors += [f"{sink}: {p}" for p in _handover_problems(qr, accounts)]
        by_source: dict[int, list[int]] = {}
        for r, a in zip(qr.runs, accounts):
            if a["reads_source"]:
                by_source.setdefault(id(r.pipeline.input.source), []).append(a["rows_in"])
        if any(len(set(rows)) != 1 for rows in by_source.values()):
            errors.append(f"{sink}: pipelines reading one source got different row counts "
                          f"{list(by_source.values())}")
        delivered = sum(rows[0] for rows in by_source.values())
        if delivered != qr.records_in:
            errors.append(f"{sink}: the sources delivered {qr.records_in} rows, the pipelines "
                          f"reading them got {delivered}")
        f = _flow(accounts)
        if f["records_in"] + f["results"] != f["filtered"] + f["late"] + f["into_state"] + f["records_out"]:
            errors.append(f"{sink}: rows in from sources {f['records_in']} + results of windows and joins "
                          f"{f['results']} != filtered {f['filtered']} + late {f['late']} + into window or "
                          f"join state {f['into_state']} + written to the sink {f['records_out']}")
        queries.append({"sink": qr.sink.spec.name, **f, "pipelines": accounts})
    totals = {key: sum(q[key] for q in queries) for key in ("filtered", "late", "records_out")}
    for key, name in (("filtered", "filtered_records"), ("late", "late_records"), ("records_out", "records_out")):
        if metrics.get(name) != totals[key]:
            errors.append(f"metrics[{name!r}] is {metrics.get(name)}, the pipelines' accounts sum to {totals[key]}")
    rejected = metrics.get("rejected_records", 0)
    out = {"ok": not errors, "records_read": metrics.get("records_in", 0) + rejected, "rejected": rejected,
           "records_in": metrics.get("records_in", 0), **totals, "queries": queries}
    if errors:
        raise AccountingError("record accounting failed (records lost or counted twice; an engine bug): "
                              + "; ".join(errors))
    return out


__all__ = ["AccountingError", "check_accounting", "pipeline_account"]
