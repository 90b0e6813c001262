"""``JobResult``: what a finished job hands back, whichever engine ran it.

It sits below the environment and the engines (the embedded one in ``engine/local.py``, Spark in
``spark/planner.py``), so that both build it without importing the user-facing API;
``grizzly_py.JobResult`` is this class. A table of ``execute_and_collect`` carries its job's
metrics in its schema metadata (``with_metrics``, read back by ``job_metrics``), and a job that
dropped late records warns once (``warn_if_late``).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field

import pyarrow as pa


@dataclass
class JobResult:
    """What ``execute`` returns: collected tables by sink name, and the job's metrics."""

    tables: dict[str, pa.Table]
    metrics: dict = field(default_factory=dict)

    def __getitem__(self, name: str) -> pa.Table:
        try:
            return self.tables[name]
        except KeyError:
            raise KeyError(f"no collecting sink named {name!r}; sinks: {', '.join(self.tables) or '(none)'}") from None

    def __contains__(self, name):
        return name in self.tables


# the key of a collected table's schema metadata that holds its job's metrics, as JSON
METRICS_KEY = b"grizzly.metrics"


def with_metrics(table: pa.Table, metrics: dict) -> pa.Table:
    """``table`` carrying ``metrics`` in its schema metadata (what ``execute_and_collect``
    returns); ``job_metrics`` reads them back."""
    metadata = dict(table.schema.metadata or {})
    metadata[METRICS_KEY] = json.dumps(metrics, default=str).encode()
    return table.replace_schema_metadata(metadata)


def job_metrics(table: pa.Table) -> dict:
    """The metrics of the job that made ``table`` (a result of ``execute_and_collect``)."""
    raw = (table.schema.metadata or {}).get(METRICS_KEY)
    if raw is None:
        raise ValueError("this table carries no grizzly-py metrics (execute_and_collect() results do; "
                         "execute() returns them as JobResult.metrics)")
    return json.loads(raw)


class LateRecordsWarning(UserWarning):
    """A job dropped records that arrived behind the watermark (``metrics["late_records"]``)."""


def warn_if_late(metrics: dict, sources, stacklevel: int = 2) -> None:
    """One warning for the job when it dropped late records: how many, and the out-of-orderness
    bound of the event-time ``sources`` (the watermark trails their largest event time by it).
    ``stacklevel`` as ``warnings.warn`` takes it, counted from the caller of this function."""
    late = metrics.get("late_records") or 0
    if not late:
        return
    bounds = ", ".join(f"{s.name}: {s.watermark.out_of_orderness_ms} ms" for s in sources
                       if s.timestamp is not None) or "none"
    warnings.warn(LateRecordsWarning(
        f"{late:,} late record(s) dropped: their event time was behind the watermark, which trails the "
        f"largest event time seen by each source's out-of-orderness bound ({bounds}); allow more with "
        f"watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.seconds(...)) "
        f"(metrics['late_records'] counts them)"), stacklevel=stacklevel + 1)


def print_rows(table: pa.Table) -> None:
    """The rows of a ``print()`` sink on standard output, one line each (``Row(k=1, n=3)``, as
    PyFlink shows a row)."""
    for batch in table.to_batches():
        for row in batch.to_pylist():
            print("Row(" + ", ".join(f"{name}={value!r}" for name, value in row.items()) + ")")
