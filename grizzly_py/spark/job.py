"""A grizzly-py query on Spark as seen from the driver: how it was planned, and the metrics its
tasks sent back (an accumulator of per-task reports, ``worker.TaskReport``)."""

from __future__ import annotations

from dataclasses import dataclass, field

_INPUT_STAGES = ("stateless", "partial", "whole", "keyed", "sequential")


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
    strategy: str                       # stateless | partial | keyed | whole (and "+stream" when streaming;
                                        # sequential+stream: a streaming query run whole, micro-batch by micro-batch)
    input_kind: str                     # dataframe | pushdown
    streaming: bool
    accumulator: object = field(repr=False, default=None)
    notes: list[str] = field(default_factory=list)
    output_stage: str | None = None     # the stage whose tasks write the output (None: see _output_stage)
    order_by: list[str] | None = None   # the DataFrame is unordered: sort by these to get the engine's order

    def task_reports(self) -> list[dict]:
        return list(self.accumulator.value) if self.accumulator is not None else []

    def metrics(self) -> dict:
        """Records in/out, filtered and late records, per-task reports (with each pipeline's
        variant history) and the workers' plan-cache hits, over every task run so far."""
        tasks = self.task_reports()
        inputs = [t for t in tasks if t["stage"] in _INPUT_STAGES]
        last = [t for t in tasks if t["stage"] == self._output_stage()]
        pipelines = [dict(p, stage=t["stage"], partition=t.get("partition")) for t in tasks for p in t["pipelines"]]
        rejected: dict = {}
        for t in tasks:
            for name, n in t.get("rejected_by_source", {}).items():
                rejected[name] = rejected.get(name, 0) + n
        return {
            "engine": "spark", "strategy": self.strategy, "input": self.input_kind, "streaming": self.streaming,
            "plan_id": self.plan_id[:12],
            "records_in": sum(t["records_in"] for t in inputs),
            "records_out": sum(t["records_out"] for t in last) if self._output_stage() else None,
            "late_records": sum(t["late"] for t in tasks if t["stage"] in _INPUT_STAGES),
            "late_partial_states": sum(t.get("late_partials", 0) for t in tasks),
            "filtered_records": sum(t["filtered"] for t in inputs),
            "rejected_records": sum(rejected.values()),
            "rejected_by_source": rejected,
            "tasks": len(tasks),
            "plan_cache_hits": sum(1 for t in tasks if t.get("plan_cached")),
            "worker_processes": len({t["pid"] for t in tasks}),
            "codegen_ms": round(sum(t["codegen_ms"] for t in tasks if not t.get("plan_cached")), 3),
            "compile_ms": round(sum(t["compile_ms"] for t in tasks), 3),
            "pipelines": pipelines,
            "task_reports": tasks,
            "notes": list(self.notes),
        }

    def _output_stage(self) -> str | None:
        """The stage whose tasks write the output (None: streaming windows, whose rows Spark's
        state function emits; see the streaming query's progress)."""
        if self.output_stage is not None:
            return self.output_stage
        return {"stateless": "stateless", "whole": "whole", "stateless+stream": "stateless",
                "sequential+stream": "sequential"}.get(self.strategy)
