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

Per query, over the pipelines that read its sources (each source batch goes to every pipeline that
reads the source): ``records_in == filtered + late + contributing``, plus the rows the sources
rejected (``on_bad_rows="drop"``) on both sides at the job level. Pipelines fed by other pipelines
(chained windows, union and join consumers) have their own identity over their input, the results
of their producers.

A violation is an internal error (``AccountingError``) naming the pipeline and the numbers; the
accounts are ``JobResult.metrics["accounting"]``.
"""

from __future__ import annotations

from ..codegen import abi
from ..physical.pipelines import SourceInput
from .join_kernel import JoinKernel
from .kernels import ProjectKernel


class AccountingError(RuntimeError):
    """Records that the engine lost or counted twice (a bug in the engine, not in the input)."""


def pipeline_account(run) -> dict:
    """The account of one ``PipelineRun`` (see the module docstring)."""
    k = run.kernel
    filtered = k.counter(abi.STATE_FILTERED) if k is not None else 0
    late = k.counter(abi.STATE_LATE) if k is not None else 0
    seen = k.counter(abi.STATE_ROWS_IN) if k is not None else run.rows_in
    if k is None or isinstance(k, ProjectKernel):
        contributing, what = run.rows_out, "output rows"
    elif isinstance(k, JoinKernel):
        contributing, what = seen - filtered - late, "rows inserted into join tables"
    else:
        contributing, what = seen - filtered - late, "rows aggregated into windows"
    return {"pipeline": run.pipeline.id, "kind": run.pipeline.terminal.kind, "rows_in": run.rows_in,
            "kernel_rows_in": seen, "filtered": filtered, "late": late, "contributing": contributing,
            "contributing_means": what}


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


def check_accounting(runs, metrics: dict) -> dict:
    """The accounts of a finished job's ``QueryRun``s; raises ``AccountingError`` on a violation."""
    queries, errors = [], []
    for qr in runs:
        accounts = [pipeline_account(r) for r in qr.runs]
        for a in accounts:
            errors += [f"sink {qr.sink.spec.name!r}, pipeline {a['pipeline']} ({a['kind']}): {p}" for p in _problems(a)]
        readers = [a for r, a in zip(qr.runs, accounts) if isinstance(r.pipeline.input, SourceInput)]
        by_source: dict[int, list[int]] = {}
        for r, a in zip(qr.runs, accounts):
            if isinstance(r.pipeline.input, SourceInput):
                by_source.setdefault(id(r.pipeline.input.source), []).append(a["rows_in"])
        if any(len(set(rows)) != 1 for rows in by_source.values()):
            errors.append(f"sink {qr.sink.spec.name!r}: pipelines reading one source got different row counts "
                          f"{list(by_source.values())}")
        delivered = sum(rows[0] for rows in by_source.values())
        if delivered != qr.records_in:
            errors.append(f"sink {qr.sink.spec.name!r}: the sources delivered {qr.records_in} rows, the pipelines "
                          f"reading them got {delivered}")
        queries.append({"sink": qr.sink.spec.name,
                        "records_in": sum(a["rows_in"] for a in readers),
                        "filtered": sum(a["filtered"] for a in readers),
                        "late": sum(a["late"] for a in readers),
                        "contributing": sum(a["contributing"] for a in readers),
                        "pipelines": accounts})
    rejected = metrics.get("rejected_records", 0)
    out = {"ok": not errors, "records_read": metrics.get("records_in", 0) + rejected, "rejected": rejected,
           "records_in": metrics.get("records_in", 0), "queries": queries}
    if errors:
        raise AccountingError("record accounting failed (records lost or counted twice; an engine bug): "
                              + "; ".join(errors))
    return out


__all__ = ["AccountingError", "check_accounting", "pipeline_account"]
