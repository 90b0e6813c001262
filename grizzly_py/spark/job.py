"""A grizzly-py query on Spark as seen from the driver: how it was planned, and the metrics its
tasks sent back (an accumulator of per-task reports, ``worker.TaskReport``).

Every action on a ``to_spark()`` DataFrame runs its stages again, except those whose shuffle
output Spark reuses, so the reports of several actions pile up in the accumulator. The metrics
of a batch job count each (stage, partition) once: the report of its latest task (by Spark's
task id), also when Spark ran lost partitions again after an executor died. The DataFrame's actions run through ``SparkJob.action`` (``dataframe.py``), which
remembers an action that may stop reading the output early (``show``, ``take``, ...): the output
tasks Spark stops send no report.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from .errors import task_error

_INPUT_STAGES = ("stateless", "partial", "whole", "keyed", "join", "sequential")


def _list_param():
    from pyspark.accumulators import AccumulatorParam

    class ListParam(AccumulatorParam):
        def zero(self, value):
            return []

        def addInPlace(self, a, b):
            a.extend(b)
            return a

    return ListParam()


def new_accumulator(spark):
    return spark.sparkContext.accumulator([], _list_param())


@dataclass
class SparkJob:
    """Returned with every ``to_spark`` DataFrame (``df.grizzly``)."""

    plan_id: str
    strategy: str                       # stateless | partial | keyed | keyed-join | whole (and "+stream" when streaming;
                                        # sequential+stream: a streaming query run whole, micro-batch by micro-batch;
                                        # keyed+stream: the same per key group)
    input_kind: str                     # dataframe | files (a DataFrame read as its Parquet files) | pushdown
    streaming: bool
    accumulator: object = field(repr=False, default=None)
    notes: list[str] = field(default_factory=list)
    output_stage: str | None = None     # the stage whose tasks write the output (None: see _output_stage)
    order_by: list[str] | None = None   # the DataFrame is unordered: sort by these to get the engine's order
    output_mode: str = "append"         # streaming: the output mode its writeStream needs ("update": a changelog)
    last_action: str | None = None      # the DataFrame's last action (dataframe.py)
    read_part: bool = False             # whether it may have stopped reading the output early
    _running: bool = field(default=False, repr=False)

    @contextlib.contextmanager
    def action(self, name: str, whole: bool):
        """Run one action of this job's DataFrame (``whole``: one that reads the whole output);
        a task's grizzly-py error is raised as itself (``errors.task_error``). Actions nested in
        it (``head`` calls ``take``) belong to it."""
        if self._running:
            yield
            return
        self._running = True
        self.last_action, self.read_part = name, not whole
        try:
            yield
        except Exception as e:
            cause = task_error(e)
            if cause is None:
                raise
            raise cause from e
        finally:
            self._running = False

    def task_reports(self) -> list[dict]:
        return list(self.accumulator.value) if self.accumulator is not None else []

    def metrics(self) -> dict:
        """Records in/out, filtered and late records, per-task reports (with each pipeline's
        variant history) and the workers' plan-cache hits: of each stage's latest run (of every
        micro-batch so far, streaming). After an action that read only part of the output
        (``show``, ``take``, ``first``, ...), ``records_out`` is None: the output tasks Spark
        stopped early sent no report."""
        tasks = self.task_reports()
        if not self.streaming:
            tasks = _latest_runs(tasks)
        notes = list(self.notes)
        records_out = sum(t["records_out"] for t in tasks if t["stage"] == self._output_stage()) \
            if self._output_stage() else None
        if self.read_part:
            records_out = None
            notes.append(f"{self.last_action}() may read only part of the output: Spark stops the tasks that "
                         "write it once it has the rows it needs, and a stopped task sends no metrics, so these "
                         "count only the tasks that ran to the end (collect() or count() read all)")
        inputs = [t for t in tasks if t["stage"] in _INPUT_STAGES]
        pipelines = [dict(p, stage=t["stage"], partition=t.get("partition")) for t in tasks for p in t["pipelines"]]
        rejected: dict = {}
        for t in tasks:
            for name, n in t.get("rejected_by_source", {}).items():
                rejected[name] = rejected.get(name, 0) + n
        return {
            "engine": "spark", "strategy": self.strategy, "input": self.input_kind, "streaming": self.streaming,
            "plan_id": self.plan_id[:12],
            "records_in": sum(t["records_in"] for t in inputs),
            "records_out": records_out,
            "action": self.last_action,
            "late_records": sum(t["late"] for t in tasks if t["stage"] in _INPUT_STAGES),
            "late_partial_states": sum(t.get("late_partials", 0) for t in tasks),
            # (the finishing stage filters window results: the embedded engine counts those too)
            "filtered_records": sum(t["filtered"] for t in tasks if t["stage"] in _INPUT_STAGES + ("finish",)),
            "rejected_records": sum(rejected.values()),
            "rejected_by_source": rejected,
            "tasks": len(tasks),
            "plan_cache_hits": sum(1 for t in tasks if t.get("plan_cached")),
            "worker_processes": len({t["pid"] for t in tasks}),
            "codegen_ms": round(sum(t["codegen_ms"] for t in tasks if not t.get("plan_cached")), 3),
            "compile_ms": round(sum(t["compile_ms"] for t in tasks), 3),
            "pipelines": pipelines,
            "task_reports": tasks,
            "notes": notes,
        }

    def _output_stage(self) -> str | None:
        """The stage whose tasks write the output (None: streaming windows, whose rows Spark's
        state function emits; see the streaming query's progress)."""
        if self.output_stage is not None:
            return self.output_stage
        return {"stateless": "stateless", "whole": "whole", "stateless+stream": "stateless",
                "sequential+stream": "sequential"}.get(self.strategy)


def _latest_runs(tasks: list[dict]) -> list[dict]:
    """One report per (stage, partition): the latest launched task's (highest Spark task id), whose
    output is the one Spark reads. An action runs a stage again under a new Spark stage id, or
    reuses the output of its last run (then its reports stand), or runs only the partitions whose
    shuffle output died with an executor (in the stage again, or under a new stage id in a later
    action): in every case each partition counts once. Reports without a partition (tasks run
    outside Spark) all stand."""
    chosen: dict[tuple, dict] = {}
    standing = []
    for t in tasks:
        if t.get("partition") is None:
            standing.append(t)
            continue
        key = (t["stage"], t["partition"])
        held = chosen.get(key)
        if held is None or t.get("task_id", -1) >= held.get("task_id", -1):
            chosen[key] = t
    return standing + list(chosen.values())
