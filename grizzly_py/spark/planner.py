"""How a grizzly-py query becomes a Spark DataFrame (``to_spark``) and how a job runs on Spark
(``run_on_spark``, behind ``StreamEnvironment.execute`` of a Spark environment).

The query's first pipeline (the one that reads the source) decides the strategy:

- ``stateless`` (no window): one ``mapInArrow`` stage runs the compiled pipeline (with lookup
  joins: the query on the embedded engine, the static table in the plan); the output keeps the
  input's order within each partition.
- ``partial`` (tumbling or sliding windows, event or processing time): each input task
  pre-aggregates in compiled code and emits partial states (``partials.py``); Spark shuffles
  them by (keys, window); a merge stage combines them with the compiled merge functions and
  finishes the aggregates (holistic ones included); a last single-task stage puts the window
  results in the embedded engine's order (window_end, then keys) and runs the rest of the query
  (windows of window results, filters after an aggregation) on the embedded engine. A union of
  different sources under such a window (event time) pre-aggregates each input in its own tasks
  under the watermarks of the engine's rounds, one shuffle and merge for all (``union_partials.py``).
- ``keyed`` (state per key of source columns): the source's rows partitioned by the key
  columns, each key's rows in stream order (source batch, then row), each task under the source
  batches' watermarks. Keyed sessions and cumulative windows run the compiled window kernel per
  task (``worker.keyed_task``) and the rest of the query in a finishing task; keyed count
  windows, running aggregates, deduplication, unbounded Top-N, windows with allowed lateness or
  a late side output and window Top-N run the whole query per task on the embedded engine
  (``keyed.py``, the ``keyed-join`` tasks with one source).
- ``keyed-join`` (window, interval and regular joins of two sources; unions of different
  sources under a session or count window keyed by columns every input passes through): every source's rows
  partitioned by the key; each task runs the query on its keys (``joins.py``).
- ``whole`` (other unions and queries over several sources, stateful queries without a key
  column in common): the query is not split; one task runs it on the embedded engine (several
  DataFrames reach it as one tagged DataFrame, each still one batch of its stream).

Streaming DataFrames take the ``partial`` strategy with Spark's stateful merge instead of the
merge stage (``streaming.py``), ``stateless``, or keep the query's own state in Spark's state
store per key group (``keyed+stream``) or in one group (``sequential+stream``).
"""

from __future__ import annotations

import itertools

import pyarrow as pa
import pyarrow.compute as pc

from ..codegen import abi
from ..codegen.module import generate_pipeline
from ..engine import commit
from ..engine.kernels import sort_indices_nulls_last
from ..engine.sinks import open_sink
from ..expressions import Column, strip_alias, walk
from ..late_records import LateRecord
from ..rewrites import rewrite
from ..physical.pipelines import (
    ProjectTerminal,
    SourceInput,
    UnionInput,
    build_physical_plan,
)
from ..changelog import changelog_schema, with_kind_column
from ..plan import (
    WINDOW_END,
    ChangelogNode,
    PlanNode,
    ProjectNode,
    Query,
    SourceNode,
    WindowAggregateNode,
    distinct_sources,
)
from ..results import JobResult
from ..sources import TIMESTAMP_UNIT_DIVISOR
from ..types import to_arrow_type
from ..watermark import WatermarkStrategy
from ..window_rank import WindowRankNode
from . import worker
from .dataframe import with_job
from .errors import task_error
from .file_scans import NotAScan, scan_of
from .filters import push_filters as push
from .inputs import (
    batch_maxima,
    needed_columns,
    plan_splits,
    pushdown_source,
    read_columns,
    read_split,
    split_numbers,
    split_target,
)
from .job import SparkJob, new_accumulator
from .join_task import STAGE as JOIN_STAGE
from .join_task import keyed_join_task, lookup_task
from .joins import (
    SourceLayout,
    dataframe_maxima,
    key_column,
    keyed_input,
    keyed_join,
    keyed_union,
    stateless_lookup,
    tagged_rows,
)
from .key_groups import stream_key_columns
from .key_scan import SCAN_TASKS, ScannedSource, scan_parts, scan_task
from .keyed import keyed_query
from .partials import WINDOW_START, partial_schema
from .union_partials import UnionWindow, union_rounds, union_window
from .probe import check_workers
from .schema import conform, hashed_key, pipeline_arrow_schema, spark_column, spark_struct, to_spark_batches
from .schema import spark_arrow_schema as to_spark_schema
from .session import configure, executors_here, require_pyspark
from .shipping import DetachedSource, ShippedPlan, detach, replace_inputs
from .sources import SparkSource
from .streaming import stateful_dataframe, streaming_dataframe
from .tagged import tagged_dataframe, untagged

RESULTS_SOURCE = "window results"
RESULTS_TIME = "__gz_et"


def _session(sources, spark):
    if spark is not None:
        return spark
    for s in sources:
        if isinstance(s, SparkSource):
            return s.df.sparkSession
    from pyspark.sql import SparkSession
    active = SparkSession.getActiveSession()
    if active is None:
        raise RuntimeError("no SparkSession: use StreamEnvironment.for_spark(spark), or start one first")
    return active


def _is_chain(physical) -> bool:
    """Exactly one pipeline reads the source (the first) and each later one reads the one before."""
    ps = physical.pipelines
    return isinstance(ps[0].input, SourceInput) and all(
        not isinstance(p.input, (SourceInput, UnionInput)) and getattr(p.input, "pipeline_id", None) == i
        for i, p in enumerate(ps[1:]))


def _lateness_free(physical, ranked_first: bool = False) -> bool:
    """No window keeps its windows for an allowed lateness, and no pipeline keeps a window's late
    records (``late_data``): both need the watermark in force batch by batch, as the embedded
    engine has it in one task (docs/spark.md). Nor does any window rank its rows (``top_n``,
    ``deduplicate``, the rows at an extreme), which the engine does when the window fires;
    ``ranked_first``: except the first pipeline's window, whose merge stage ranks the merged rows
    (the partial strategy: ``_ranks_partially``)."""
    for i, p in enumerate(physical.pipelines):
        if getattr(p.terminal, "allowed_lateness_ms", 0):
            return False
        if getattr(p.terminal, "rows", None) is not None and not (ranked_first and i == 0):
            return False
        if any(isinstance(e, LateRecord) for f in p.filters for e in walk(f)):
            return False
    return True


def _ranks_partially(physical) -> bool:
    """The first pipeline is a ranked window (window Top-N, deduplication, the rows at an
    extreme: ``window_rank.py``) over tumbling or sliding windows, and no later one ranks or keeps
    windows: its partial states are the hidden aggregates' (each task's rows of a group; a
    deduplication's one row), which the merge stage merges and ranks as the engine ranks a fired
    window. Ranking is decomposable: a group's kept rows (by value, ties by arrival, whose
    numbers are the source's on every task) are among each task's kept rows."""
    first = physical.pipelines[0].terminal
    return getattr(first, "rows", None) is not None and first.assigner.kind.spark == "partials" \
        and _lateness_free(physical, ranked_first=True)


def _first_window(root: PlanNode) -> WindowAggregateNode | WindowRankNode:
    """The window of the first pipeline of a chain: the one closest to the source."""
    node, last = root, None
    while not isinstance(node, SourceNode):
        if isinstance(node, (WindowAggregateNode, WindowRankNode)):
            last = node
        node = node.inputs[0]
    return last


def _after_first_window(root: PlanNode, first: WindowAggregateNode, bound_ms: int) -> PlanNode:
    """``root`` with ``first`` replaced by its results read from a source (event time
    ``window_end - 1`` in a hidden column, as the embedded engine gives window results)."""
    schema = pipeline_arrow_schema_of_node(first)
    src = DetachedSource(RESULTS_SOURCE, schema.append(pa.field(RESULTS_TIME, pa.int64(), nullable=False)),
                         RESULTS_TIME, WatermarkStrategy(bound_ms))
    replacement = ProjectNode(SourceNode(src), tuple((n, Column(n)) for n in schema.names))

    def walk(node):
        if node is first:
            return replacement
        return replace_inputs(node, walk)
    return walk(root)


def pipeline_arrow_schema_of_node(node: PlanNode) -> pa.Schema:
    return pa.schema([pa.field(f.name, f.arrow_type if f.arrow_type is not None else to_arrow_type(f.dtype))
                      for f in node.schema])


def _results_batch(table: pa.Table, schema: pa.Schema, keys: list[str]) -> pa.RecordBatch:
    """Window results in the order the embedded engine fires them, with their event time."""
    table = table.take(sort_indices_nulls_last(table, [WINDOW_END] + keys)) if table.num_rows else table
    end = table.column(WINDOW_END)
    if pa.types.is_timestamp(end.type):
        mul, div = TIMESTAMP_UNIT_DIVISOR[end.type.unit]
        ms = pc.divide(pc.multiply(end.cast(pa.int64()), mul), div) if (mul, div) != (1, 1) else end.cast(pa.int64())
    else:
        ms = end.cast(pa.int64())
    table = table.append_column(RESULTS_TIME, pc.subtract(ms, 1))
    return table.combine_chunks().to_batches()[0] if table.num_rows else \
        pa.RecordBatch.from_pylist([], schema=table.schema)


class _Input:
    """A source as Spark input (``kind``): a DataFrame through ``mapInArrow`` ("dataframe"), a
    DataFrame that is a plain Parquet or ORC scan read by the tasks ("files", ``file_scans.py``), or
    pushdown splits of a file or Arrow source ("pushdown"). ``notes``: why a DataFrame was not
    read as files."""

    def __init__(self, spark, source, columns, tasks: int, df=None, acc=None, read_files: bool = True):
        self.spark, self.source, self.acc, self.notes = spark, source, acc, []
        self.kind = "dataframe" if isinstance(source, SparkSource) else "pushdown"
        local = executors_here(spark.sparkContext.master)
        if self.kind == "dataframe":
            df = source.df if df is None else df
            self.scan = _file_scan(source, df, columns, self.notes) if read_files else None
            if self.scan is not None:
                self.kind = "files"
                self.splits = plan_splits(self.scan.source, split_target(tasks), self.scan.read, executors_here=local)
                self.notes.append(f"{source.name}: a {self.scan.source.dataset.format_name} file scan: its files are "
                                  f"read by {len(self.splits)} tasks with pyarrow (its own filters applied there, "
                                  "the query's in compiled code)")
            self.df = df.select(*[spark_column(c) for c in columns]) if columns is not None else df
        else:
            self.splits = plan_splits(source, split_target(tasks), columns, executors_here=local)

    @property
    def is_dataframe(self) -> bool:
        return self.kind == "dataframe"

    def map(self, body, schema, single: bool = False):
        """``mapInArrow`` over the input: ``body(batches, watermark_before, numbers)`` per task
        (``numbers``: the batches' numbers in the source, None for a DataFrame's partitions)."""
        if self.kind == "dataframe":
            df = self.df.coalesce(1) if single else self.df
            return df.mapInArrow(lambda it: body(it, None, None), schema)
        splits, acc, scan = self.splits, self.acc, self.scan if self.kind == "files" else None

        def by_split(it):
            for ids in it:
                for i in ids.column(0).to_pylist():
                    rejected: dict = {}
                    if scan is not None:  # a DataFrame's rows: one batch of the stream, no watermarks
                        yield from body(scan.batches(read_split(splits[i])), None, None)
                        continue
                    yield from body(read_split(splits[i], rejected), splits[i].watermark_before,
                                    split_numbers(splits[i]))
                    worker.report_rejected(acc, rejected)
        n = len(splits)
        return self.spark.range(0, n, 1, n).mapInArrow(by_split, schema)


def to_spark(root: PlanNode, spark=None, *, fault=None, push_filters: bool = True, adaptive: object = True,
             read_files: bool = True):
    """The Spark DataFrame of the query ending in ``root`` (streaming if its source is); the
    returned DataFrame carries the job (``df.grizzly``: plan, strategy, metrics).
    ``push_filters``: let Spark evaluate the filters it can on a batch DataFrame input
    (``filters.py``). ``read_files``: let the tasks read a DataFrame that is a plain Parquet or ORC
    scan from its files (``file_scans.py``; else ``mapInArrow``). ``adaptive``: the environment's setting; the tasks' kernels run their
    code variants under a controller in each Python worker (``worker.py``)."""
    require_pyspark()
    if root.updating:  # Spark gets an updating stream's changelog (its row kinds in column "op")
        root = ChangelogNode(root)
    root, rewritten = rewrite(root)  # the plan the embedded engine runs (rewrites/): same results, metrics
    sources = distinct_sources(root)
    spark = _session(sources, spark)
    configure(spark)
    check_workers(spark)
    frames, notes = {}, [f"plan rewrite: {n}" for n in rewritten]
    if push_filters and len(sources) == 1 and isinstance(sources[0], SparkSource) and not sources[0].streaming \
            and not (read_files and _read_as_files(root, sources[0])):
        root, conditions = push(root, sources[0])
        if conditions:
            df = sources[0].df
            for c in conditions:
                df = df.filter(c)
            frames[sources[0].name] = df
            notes.append(f"{len(conditions)} filter conjunct(s) evaluated by Spark before the transfer to Python "
                         "(rows they drop are not in filtered_records)")
    query = Query(root)
    physical = build_physical_plan(query)
    for p in physical.pipelines:  # reject what cannot compile before any task starts
        if p.compiles:
            generate_pipeline(p)
    shipped = ShippedPlan.of(Query(detach(root)), adaptive)
    acc = new_accumulator(spark)
    tasks = spark.sparkContext.defaultParallelism
    streaming = any(isinstance(s, SparkSource) and s.streaming for s in sources)
    first = physical.pipelines[0]
    chain = len(sources) == 1 and _is_chain(physical) and (_lateness_free(physical) or (
        not streaming and _ranks_partially(physical)))
    kind = None if isinstance(first.terminal, ProjectTerminal) else first.terminal.assigner.kind
    for s in sources:
        if not isinstance(s, SparkSource) and not pushdown_source(s):
            raise NotImplementedError(f"{s.name}: a {type(s).__name__} cannot run on Spark")
    if streaming:
        static = [s.name for s in sources if not (isinstance(s, SparkSource) and s.streaming)]
        if static:
            raise NotImplementedError(f"a streaming query reads streaming DataFrames only; {', '.join(static)} "
                                      "is not one (a join of a stream with a static table is not supported yet)")
        if not chain:  # several streams, or a union or join of the stream with itself
            by_key = stream_key_columns(root, physical) if _lateness_free(physical) else None
            return stateful_dataframe(spark, shipped, physical, sources, acc, by_key)
        return streaming_dataframe(spark, shipped, physical, sources[0], acc, fault)
    final_schema = pipeline_arrow_schema(physical.pipelines[-1])
    if chain and kind is None:
        inp = _Input(spark, sources[0], needed_columns(first, sources[0]), tasks, frames.get(sources[0].name), acc,
                     read_files)
        df = inp.map(lambda it, _w, _n: worker.stateless_task(shipped, it, acc, fault), spark_struct(final_schema))
        job = SparkJob(shipped.plan_id, "stateless", inp.kind, False, acc, notes=list(inp.notes))
    elif chain and kind is not None and kind.spark == "partials":
        df, job = _partial(spark, shipped, physical, root, sources[0], acc, tasks, fault, frames.get(sources[0].name),
                           read_files)
    elif chain and kind is not None and kind.spark == "keyed" and _key_columns(first) and keyed_input(sources[0]) \
            and not (read_files and _scan_by_key(root, sources[0], physical)):
        df, job = _keyed(spark, shipped, physical, root, sources[0], acc, tasks, frames.get(sources[0].name))
    elif (union := union_window(root)) is not None and _lateness_free(physical) \
            and (plan := _union_partial_plan(union, physical, adaptive)) is not None:
        df, job = _union_partial(spark, shipped, union, plan, acc, tasks, fault, read_files)
    elif (by_key := keyed_query(root)) is not None:
        df, job = _keyed_query(spark, shipped, physical, root, by_key, acc, tasks, frames, read_files)
    elif len(sources) == 1 and stateless_lookup(root):
        inp = _Input(spark, sources[0], None, tasks, frames.get(sources[0].name), acc, read_files)
        name = sources[0].name
        df = inp.map(lambda it, _w, _n: lookup_task(shipped, it, name, final_schema, acc), spark_struct(final_schema))
        job = SparkJob(shipped.plan_id, "stateless", inp.kind, False, acc, notes=list(inp.notes))
    elif (joined := keyed_join(root) or keyed_union(root)) is not None and _lateness_free(physical):
        df, job = _keyed_join(spark, shipped, physical, joined, acc, tasks, read_files)
    else:
        df, job = _whole(spark, shipped, physical, sources, acc, frames)
    job.notes.extend(notes)
    return with_job(df, job)


def _read_as_files(root: PlanNode, source: SparkSource) -> bool:
    """The query's tasks will read ``source``'s files (a plain Parquet or ORC scan read by a
    stateless or partial-window first stage, or by key under keyed sessions or cumulative
    windows): its filters then stay in compiled code, which evaluates them faster than pyarrow
    would (the tasks read the filters' columns either way)."""
    physical = build_physical_plan(Query(root))
    first = physical.pipelines[0]
    if _is_chain(physical) and not isinstance(first.terminal, ProjectTerminal) \
            and first.terminal.assigner.kind.spark == "keyed":
        return _scan_by_key(root, source, physical)
    if not (_is_chain(physical) and (_lateness_free(physical) or _ranks_partially(physical))) or not (
            isinstance(first.terminal, ProjectTerminal) or first.terminal.assigner.kind.spark == "partials"):
        return False
    return _is_scan(source, needed_columns(first, source))


def _scan_by_key(root: PlanNode, source, physical) -> bool:
    """Keyed session or cumulative windows over a DataFrame that is a plain Parquet or ORC scan run
    as a query by key (``keyed.py``): its tasks read the files and keep their keys' rows, where the
    window-per-key form would pass every row through ``mapInArrow`` and a shuffle."""
    return isinstance(source, SparkSource) and not source.streaming and keyed_query(root) is not None \
        and _is_scan(source, read_columns(physical, source))


def _is_scan(source: SparkSource, columns) -> bool:
    """The DataFrame source is a file scan the tasks can read, reading ``columns``."""
    try:
        scan_of(source.df, source.name, source.arrow_schema, columns)
    except NotAScan:
        return False
    return True


def _partial(spark, shipped, physical, root, source, acc, tasks, fault, df=None, read_files=True):
    first = physical.pipelines[0]
    gen = generate_pipeline(first)
    inp = _Input(spark, source, needed_columns(first, source), tasks, df, acc, read_files)
    partials = inp.map(lambda it, w, numbers: worker.partial_task(shipped, it, w, acc, fault=fault, numbers=numbers),
                       spark_struct(partial_schema(gen)))
    keys = [f.name for f, _ in first.terminal.keys]
    results_schema = pipeline_arrow_schema(first)
    merged = partials.repartition(tasks, *[spark_column(k) for k in keys], spark_column(WINDOW_START)) \
        .mapInArrow(lambda it: worker.merge_task(shipped, it, acc), spark_struct(results_schema))
    job = SparkJob(shipped.plan_id, "partial", inp.kind, False, acc, notes=list(inp.notes))
    return _then(merged, job, root, physical, acc, shipped.adaptive), job


def _union_partial_plan(union: UnionWindow, physical, adaptive: object):
    """Per input of ``union``: its query with the union replaced by the input, shipped, its
    physical plan and the schema of its partial states; None where an input's first pipeline is
    not the window over its source (a computed string key materialized first) or its partial
    states or window results would not have the union's Spark types (then the query keeps the
    other strategies)."""
    window = next(p for p in physical.pipelines if isinstance(p.input, UnionInput))
    results = spark_struct(pipeline_arrow_schema(window))
    plans = []
    for root in union.inputs:
        own = build_physical_plan(Query(root))
        first = own.pipelines[0]
        if not _is_chain(own) or isinstance(first.terminal, ProjectTerminal) \
                or first.terminal.assigner.kind.spark != "partials" or spark_struct(pipeline_arrow_schema(first)) != results:
            return None
        plans.append((ShippedPlan.of(Query(detach(root)), adaptive), own, partial_schema(generate_pipeline(first))))
    if any(to_spark_schema(schema) != to_spark_schema(plans[0][2]) for _s, _p, schema in plans):
        return None
    return plans


def _union_partial(spark, shipped, union: UnionWindow, plans, acc, tasks, fault, read_files=True):
    """A union of different sources under a tumbling or sliding event-time window
    (``union_partials.py``): each input's tasks run its own query up to the window over its rows
    under the watermarks the driver replays from the engine's rounds and emit partial states; the
    partial states of every input are shuffled together by (keys, window) into one merge."""
    # the inputs' tasks form one stage: each input takes its share of the cores' splits
    share = max(1, tasks // len(plans))
    inputs = [_Input(spark, source, needed_columns(own.pipelines[0], source), share, None, acc, read_files)
              for source, (_s, own, _schema) in zip(union.sources, plans)]
    maxima = [None if isinstance(s, SparkSource) else batch_maxima(s) for s in union.sources]
    # a DataFrame is one batch, read in the first round, where every batch runs under no watermark
    # yet: its largest event time (a Spark job) matters only where another input has more rounds
    later_rounds = any(m is not None and len(m) > 1 for m in maxima)
    maxima = [m if m is not None else dataframe_maxima(s) if later_rounds else [None]
              for m, s in zip(maxima, union.sources)]
    marks, places = union_rounds(maxima, [s.watermark.out_of_orderness_ms for s in union.sources])
    parts = None
    for inp, (own_plan, _own, schema), source_marks, source_places in zip(inputs, plans, marks, places):
        def body(it, _w, numbers, own_plan=own_plan, source_marks=source_marks, source_places=source_places):
            if numbers is None:  # a DataFrame: one batch of its stream
                mark = source_marks[0] if source_marks else abi.INT64_MIN
                return worker.partial_task(own_plan, it, accumulator=acc, fault=fault, marks=itertools.repeat(mark))
            numbers = list(numbers)
            return worker.partial_task(own_plan, it, accumulator=acc, fault=fault,
                                       marks=[source_marks[n] for n in numbers],
                                       numbers=[source_places[n] for n in numbers])
        df = inp.map(body, spark_struct(schema))
        parts = df if parts is None else parts.union(df)
    merge_plan, own, _schema = plans[0]
    first = own.pipelines[0]
    keys = [f.name for f, _ in first.terminal.keys]
    merged = parts.repartition(tasks, *[spark_column(k) for k in keys], spark_column(WINDOW_START)) \
        .mapInArrow(lambda it: worker.merge_task(merge_plan, it, acc), spark_struct(pipeline_arrow_schema(first)))
    kinds = sorted({inp.kind for inp in inputs})
    notes = [n for inp in inputs for n in inp.notes]
    notes.append(f"a union of {len(inputs)} sources: each input's tasks pre-aggregate into the window's partial "
                 "states under the watermarks of the engine's rounds; one merge")
    job = SparkJob(shipped.plan_id, "partial", "+".join(kinds), False, acc, notes=notes)
    return _then(merged, job, union.inputs[0], own, acc, shipped.adaptive), job


def _then(results, job: SparkJob, root, physical, acc, adaptive: object = True):
    """After the first window's results (a DataFrame, unordered): nothing more (the driver sorts
    them on collect), or the finish stage (the rest of the query, in one task)."""
    first = physical.pipelines[0]
    keys = [f.name for f, _ in first.terminal.keys]
    if len(physical.pipelines) == 1:
        job.output_stage, job.order_by = job.output_stage or "merge", [WINDOW_END] + keys
        return results
    finish = _finish_plan(root, physical, adaptive)
    results_schema = pipeline_arrow_schema(first)
    final_schema = pipeline_arrow_schema(physical.pipelines[-1])

    def finish_fn(it):
        return finish_task(finish, it, keys, results_schema, final_schema, acc)
    job.output_stage = "finish"
    return results.repartition(1).mapInArrow(finish_fn, spark_struct(final_schema))


def _key_columns(first) -> list[str] | None:
    """The input columns a keyed window groups by, if every key is one (else None)."""
    names = []
    for _f, e in first.terminal.keys:
        e = strip_alias(e)
        if not isinstance(e, Column):
            return None
        names.append(e.name)
    return names or None


def _keyed(spark, shipped, physical, root, source, acc, tasks, df=None):
    """Keyed session and cumulative windows: Spark partitions the records by key and sorts each
    partition by (source batch, row); each task runs the window for its keys
    (``worker.keyed_task``) under the source batches' watermarks."""
    from pyspark.sql import functions as F
    first = physical.pipelines[0]
    keys = _key_columns(first)
    columns = needed_columns(first, source)
    out_schema = spark_struct(pipeline_arrow_schema(first))
    if isinstance(source, SparkSource):
        rows = (source.df if df is None else df).select(*[spark_column(c) for c in columns],
                                                         F.lit(0).alias(worker.BATCH),
                                                         F.monotonically_increasing_id().alias(worker.ROW))
        marks, input_kind = None, "dataframe"
    else:
        splits = plan_splits(source, split_target(tasks), columns,
                             executors_here=executors_here(spark.sparkContext.master))
        marks = {p: m for sp in splits for p, m in zip(sp.pieces, sp.marks)} if source.timestamp is not None else None
        raw_schema = spark_struct(pa.schema([source.arrow_schema.field(c) for c in columns]
                                            + [pa.field(worker.BATCH, pa.int64()), pa.field(worker.ROW, pa.int64())]))

        def by_split(it):
            for ids in it:
                for i in ids.column(0).to_pylist():
                    rejected: dict = {}
                    yield from worker.raw_task(splits[i], read_split(splits[i], rejected))
                    worker.report_rejected(acc, rejected)
        rows = spark.range(0, len(splits), 1, len(splits)).mapInArrow(by_split, raw_schema)
        input_kind = "pushdown"
    by = [hashed_key(k, source.schema.field(k).dtype) for k in keys]
    results = rows.repartition(tasks, *by).sortWithinPartitions(spark_column(worker.BATCH), spark_column(worker.ROW)) \
        .mapInArrow(lambda it: worker.keyed_task(shipped, it, marks, acc), out_schema)
    job = SparkJob(shipped.plan_id, "keyed", input_kind, False, acc, output_stage="keyed")
    return _then(results, job, root, physical, acc, shipped.adaptive), job


def _keyed_query(spark, shipped, physical, root, by_key, acc, tasks, frames, read_files=True):
    """A query whose state is per key of source columns (``keyed.py``): the source's rows,
    numbered in stream order, partitioned by those columns; each task runs the whole query on
    its keys' rows under the source's watermarks (``join_task.keyed_join_task``)."""
    df, final_schema, notes, kind = _by_key(spark, shipped, physical, by_key, acc, tasks, frames, "keyed",
                                            read_files)
    # the tasks' rows come out in no order across tasks: the driver sorts them by value, except a
    # changelog, whose rows keep each key's order (the order across keys is unspecified)
    changelog = any(isinstance(n, ChangelogNode) for n in _chain(root))
    order = None if changelog else [f.name for f in final_schema if not pa.types.is_nested(f.type)]
    return df, SparkJob(shipped.plan_id, "keyed", kind, False, acc, notes, output_stage="keyed", order_by=order)


def _by_key(spark, shipped, physical, plan, acc, tasks, frames=None, stage=JOIN_STAGE, read_files=True):
    """The sources' rows (the columns the query reads), tagged and partitioned by ``plan``'s key
    columns, and the query run per key partition: (the DataFrame, its schema, the job's notes,
    its input kind).
    There are as many key partitions as input splits (``split_target``), so a task holds a
    fraction of the input (a Python worker under ``spark.executor.pyspark.memory`` holds its
    task's rows twice while it rebuilds the source batches). Sources the tasks read themselves
    need no shuffle (``key_scan.py``) while the partitions are few."""
    reads = {s.name: read_columns(physical, s) for s in plan.sources}
    final_schema = pipeline_arrow_schema(physical.pipelines[-1])
    parts = split_target(tasks)
    files, notes = _file_scans(plan.sources, reads, frames or {}, read_files)
    if parts <= SCAN_TASKS and all(not isinstance(s, SparkSource) or s.name in files for s in plan.sources):
        df, parts = _scanned_by_key(spark, shipped, plan, acc, tasks, reads, files, final_schema, stage)
        notes.append(f"by key without a shuffle: each of {parts} tasks reads the sources and keeps its keys' rows")
        return df, final_schema, notes, "files" if files else "pushdown"
    rows, layouts = tagged_rows(spark, plan, tasks, acc, reads, frames)
    by = [spark_column(key_column(j)) for j in range(len(plan.keys[0]))]
    df = rows.repartition(split_target(tasks), *by).mapInArrow(
        lambda it: keyed_join_task(shipped, it, layouts, final_schema, acc, stage=stage), spark_struct(final_schema))
    return df, final_schema, notes, "dataframe" if any(isinstance(s, SparkSource) for s in plan.sources) else "pushdown"


def _file_scans(sources, reads: dict, frames: dict, read_files: bool) -> tuple[dict, list[str]]:
    """The batch DataFrame sources that are plain Parquet or ORC scans the tasks can read
    (``file_scans.py``), by name, and notes on the others."""
    scans, notes = {}, []
    for source in sources:
        if read_files and isinstance(source, SparkSource):
            scan = _file_scan(source, frames.get(source.name, source.df), reads.get(source.name), notes)
            if scan is not None:
                scans[source.name] = scan
    return scans, notes


def _file_scan(source: SparkSource, df, columns, notes: list[str]):
    """``df`` (DataFrame source ``source``'s rows) as a file scan the tasks read, reading only
    ``columns``; None for a streaming DataFrame, or one that is not a plain Parquet or ORC scan (then
    ``notes`` say why)."""
    if source.streaming:
        return None
    try:
        return scan_of(df, source.name, source.arrow_schema, columns)
    except NotAScan as e:
        notes.append(f"{source.name}: read through mapInArrow: {e}")
        return None


def _scanned_by_key(spark, shipped, plan, acc, tasks: int, reads: dict, files: dict, final_schema: pa.Schema,
                    stage: str):
    """``_by_key`` for sources the tasks read (pushdown sources, DataFrames that are ``files``
    scans): each key-partition task scans every source and keeps its partition's rows
    (``key_scan.py``), no shuffle. (The DataFrame, the number of partitions: one per core, or
    ``split_target`` where a core's share of the input would be large: ``key_scan.scan_parts``.)"""
    parts = split_target(tasks)
    sources, layouts = [], []
    here = executors_here(spark.sparkContext.master)
    for source, keys in zip(plan.sources, plan.keys):
        columns = reads.get(source.name) or tuple(source.arrow_schema.names)
        scan = files.get(source.name)
        if scan is not None:  # a DataFrame: one batch of the stream
            splits = plan_splits(scan.source, parts, scan.read, executors_here=here)
            maxima = dataframe_maxima(source)
        else:
            splits = plan_splits(source, parts, columns, executors_here=here)
            maxima = batch_maxima(source)
        layouts.append(SourceLayout(source.name, source.arrow_schema, tuple(maxima), columns))
        sources.append(ScannedSource(tuple(splits), tuple(keys), scan))
    parts = scan_parts(sources, tasks, parts, spark.sparkContext.getConf().get("spark.executor.pyspark.memory"))
    return spark.range(0, parts, 1, parts).mapInArrow(
        lambda it: scan_task(shipped, it, parts, sources, layouts, final_schema, acc, stage),
        spark_struct(final_schema)), parts


def _chain(root: PlanNode):
    node = root
    while node.inputs:
        yield node
        node = node.inputs[0]


def _keyed_join(spark, shipped, physical, joined, acc, tasks, read_files=True):
    """A join of two sources, or a union of sources under a keyed window, by its key
    (``joins.py``): every source's rows, tagged, partitioned by the key; each task runs the query
    on its keys' rows (``join_task.keyed_join_task``)."""
    df, final_schema, notes, kind = _by_key(spark, shipped, physical, joined, acc, tasks, read_files=read_files)
    # a key's rows come out in its task's order, the tasks' in no order: the driver sorts by value
    order = [f.name for f in final_schema if not pa.types.is_nested(f.type)]
    job = SparkJob(shipped.plan_id, "keyed-join", kind, False, acc, notes,
                   output_stage=JOIN_STAGE, order_by=order)
    return df, job


def finish_task(finish: ShippedPlan, batches, keys: list[str], results_schema: pa.Schema, final_schema: pa.Schema,
                acc=None):
    """The last stage of the partial strategy, in one task: the merged window results in the
    order the embedded engine fires them (window_end, then keys), through the rest of the query
    (``finish`` is the query with its first window read from ``RESULTS_SOURCE``)."""
    parts = [conform(b, results_schema) for b in batches if b.num_rows]
    table = pa.Table.from_batches(parts, schema=results_schema)
    batch = _results_batch(table, results_schema, keys)
    out = worker.run_embedded(finish, {RESULTS_SOURCE: [batch] if batch.num_rows else []}, "finish", acc)
    yield from to_spark_batches(out, final_schema)


def _finish_plan(root: PlanNode, physical, adaptive: object = True) -> ShippedPlan:
    first = physical.pipelines[0]
    return ShippedPlan.of(Query(detach(_after_first_window(root, _first_window(root), first.out_of_orderness_ms))),
                          adaptive)


def run_in_process(root: PlanNode, tasks: int = 2, adaptive: object = True) -> tuple[pa.Table, list[dict]]:
    """The dataflow of ``to_spark`` for a query over file or Arrow sources, run in this process
    without Spark (tests, and a way to read the stages): the same splits, task functions, shuffle
    by (keys, window) and final stage. Returns the result in Spark's Arrow types and the task
    reports."""
    class _Acc:
        def __init__(self):
            self.value = []

        def add(self, v):
            self.value.extend(v)
    acc = _Acc()
    query = Query(root)
    physical = build_physical_plan(query)
    sources = distinct_sources(root)
    union = union_window(root) if len(sources) > 1 and _lateness_free(physical) else None
    plans = _union_partial_plan(union, physical, adaptive) if union is not None else None
    if plans is not None and all(pushdown_source(s) for s in sources):
        return _union_in_process(union, plans, tasks, acc, adaptive)
    if len(sources) != 1 or not _is_chain(physical) or not (_lateness_free(physical) or _ranks_partially(physical)) \
            or not pushdown_source(sources[0]):
        raise NotImplementedError("run_in_process runs single-source chains and unions as partial states over "
                                  "file or Arrow sources")
    shipped = ShippedPlan.of(Query(detach(root)), adaptive)
    first = physical.pipelines[0]
    splits = plan_splits(sources[0], tasks, needed_columns(first, sources[0]))
    final_schema = pipeline_arrow_schema(physical.pipelines[-1])
    if isinstance(first.terminal, ProjectTerminal):
        out = [b for sp in splits for b in worker.stateless_task(shipped, read_split(sp), acc)]
        return pa.Table.from_batches(out, schema=to_spark_schema(final_schema)), acc.value
    keys = [f.name for f, _ in first.terminal.keys]

    kind = first.terminal.assigner.kind
    if kind.spark == "partials":
        partials = [b for sp in splits for b in worker.partial_task(shipped, read_split(sp), sp.watermark_before, acc,
                                                                    numbers=split_numbers(sp))]
        results = [m for part in _shuffled(partials, keys + [WINDOW_START], tasks)
                   for m in worker.merge_task(shipped, part, acc)]
    elif kind.spark == "keyed" and _key_columns(first) and keyed_input(sources[0]):
        raw = [b for sp in splits for b in worker.raw_task(sp, read_split(sp))]
        marks = {p: m for sp in splits for p, m in zip(sp.pieces, sp.marks)} if sources[0].timestamp else None
        results = []
        for part in _shuffled(raw, _key_columns(first), tasks):
            table = pa.Table.from_batches(part)
            table = table.take(pc.sort_indices(table, [(worker.BATCH, "ascending"), (worker.ROW, "ascending")]))
            results += list(worker.keyed_task(shipped, table.to_batches(), marks, acc))
    else:
        raise NotImplementedError("run_in_process runs the partial and keyed strategies")
    out = list(finish_task(_finish_plan(root, physical, adaptive), results, keys, pipeline_arrow_schema(first), final_schema, acc))
    return pa.Table.from_batches(out, schema=to_spark_schema(final_schema)), acc.value


def _shuffled(batches, by: list[str], tasks: int) -> list[list[pa.RecordBatch]]:
    """``run_in_process``'s shuffle: rows in ``tasks`` buckets by a hash of the columns ``by``."""
    import zlib
    buckets: dict[int, list] = {}
    for b in batches:
        codes = [zlib.crc32(repr(tuple(r.values())).encode()) % tasks
                 for r in pa.Table.from_batches([b]).select(by).to_pylist()]
        for bucket in set(codes):
            buckets.setdefault(bucket, []).append(b.filter(pa.array([c == bucket for c in codes])))
    return [buckets[k] for k in sorted(buckets)]


def _union_in_process(union: UnionWindow, plans, tasks: int, acc, adaptive: object) -> tuple[pa.Table, list[dict]]:
    """``run_in_process`` for a union as partial states (``_union_partial``) over file or Arrow
    sources: every input's splits under the watermarks of the engine's rounds, one merge."""
    marks, places = union_rounds([batch_maxima(s) for s in union.sources],
                                 [s.watermark.out_of_orderness_ms for s in union.sources])
    partials = []
    for source, (own_plan, own, _schema), source_marks, source_places in zip(union.sources, plans, marks, places):
        for sp in plan_splits(source, tasks, needed_columns(own.pipelines[0], source)):
            numbers = split_numbers(sp)
            partials += worker.partial_task(own_plan, read_split(sp), accumulator=acc,
                                            marks=[source_marks[n] for n in numbers],
                                            numbers=[source_places[n] for n in numbers])
    merge_plan, own, _schema = plans[0]
    first = own.pipelines[0]
    keys = [f.name for f, _ in first.terminal.keys]
    results = [m for part in _shuffled(partials, keys + [WINDOW_START], tasks) for m in worker.merge_task(merge_plan, part, acc)]
    final_schema = pipeline_arrow_schema(own.pipelines[-1])
    out = list(finish_task(_finish_plan(union.inputs[0], own, adaptive), results, keys, pipeline_arrow_schema(first),
                           final_schema, acc))
    return pa.Table.from_batches(out, schema=to_spark_schema(final_schema)), acc.value


def _whole(spark, shipped, physical, sources, acc, frames=None):
    """The whole query in one task on the embedded engine. Spark DataFrames reach it through one
    ``mapInArrow`` (several of them, for a join or union, as one tagged DataFrame: ``tagged.py``);
    pushdown sources are read in the task."""
    final_schema = pipeline_arrow_schema(physical.pipelines[-1])
    frames = frames or {}
    dataframes = [s for s in sources if isinstance(s, SparkSource)]
    master = spark.sparkContext.master
    files = {s.name: plan_splits(s, 1, None, executors_here=executors_here(master))
             for s in sources if not isinstance(s, SparkSource)}
    schemas = {s.name: s.arrow_schema for s in dataframes}  # the closure must not hold DataFrames

    def whole_fn(it):
        batches = [b for b in it if b.num_rows]
        feeds = untagged(batches, schemas) if len(schemas) > 1 else \
            {name: _one_batch(batches) for name in schemas}
        rejected: dict = {}
        feeds.update({name: (b for sp in parts for b in read_split(sp, rejected)) for name, parts in files.items()})
        out = worker.run_embedded(shipped, feeds, "whole", acc)
        worker.report_rejected(acc, rejected)
        yield from to_spark_batches(out, final_schema)
    if not dataframes:
        df = spark.range(0, 1, 1, 1).mapInArrow(whole_fn, spark_struct(final_schema))
    elif len(dataframes) == 1:
        df = frames.get(dataframes[0].name, dataframes[0].df).coalesce(1).mapInArrow(whole_fn, spark_struct(final_schema))
    else:
        df = tagged_dataframe(dataframes).coalesce(1).mapInArrow(whole_fn, spark_struct(final_schema))
    return df, SparkJob(shipped.plan_id, "whole", "dataframe" if dataframes else "pushdown", False, acc)


def _one_batch(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    """A batch DataFrame is one batch of the stream."""
    if not batches:
        return []
    return pa.Table.from_batches(batches, schema=batches[0].schema).combine_chunks().to_batches()[:1]


def collect(df, expected: pa.Schema) -> pa.Table:
    """A batch DataFrame of ``to_spark`` as a table in the embedded engine's Arrow types and
    order (window results by window_end, then keys)."""
    try:
        table = df.toArrow()
    except Exception as e:
        cause = task_error(e)
        if cause is None:
            raise
        raise cause from e
    if table.schema.names != expected.names:
        raise RuntimeError(f"Spark returned columns {table.schema.names}, expected {expected.names}")
    table = pa.Table.from_arrays([c.cast(f.type) if c.type != f.type else c for c, f in zip(table.columns, expected)],
                                 schema=expected)
    order = getattr(getattr(df, "grizzly", None), "order_by", None)
    if order and table.num_rows:
        table = table.take(sort_indices_nulls_last(table, order))
    return table


def run_on_spark(queries: list[Query], spark=None, adaptive: object = True) -> JobResult:
    """Run queries (each to the end of its bounded input) on Spark; collected tables and metrics
    as ``StreamEnvironment.execute`` returns them."""
    import time

    start = time.perf_counter()
    tables, per_query, sinks = {}, [], []
    commit_dir = commit.recover([q.sink.path for q in queries if q.sink.kind != "collect"], None)
    try:
        for q in queries:
            if any(isinstance(s, SparkSource) and s.streaming for s in distinct_sources(q.root)):
                raise NotImplementedError("a query over a streaming DataFrame runs as a Spark streaming query: "
                                          "start q.to_spark().writeStream (execute() runs bounded inputs)")
            df = to_spark(q.root, spark, adaptive=adaptive)
            expected = pipeline_arrow_schema(build_physical_plan(q).pipelines[-1])
            if q.root.updating:  # the DataFrame is the changelog; the sink takes the kinds as codes
                table = with_kind_column(collect(df, changelog_schema(expected)))
            else:
                table = collect(df, expected)
            sinks.append(open_sink(q.sink, expected))
            for b in table.to_batches():
                sinks[-1].write(b)
            out = sinks[-1].finish()
            if q.sink.kind == "collect":
                tables[q.sink.name] = out
            per_query.append({"sink": q.sink.name, **df.grizzly.metrics()})
        commit.publish([f for sink in sinks for f in sink.files()], commit_dir)  # every file sink's file, or none
    finally:
        for sink in sinks:
            sink.abort()
    metrics = {
        "engine": "spark",
        "records_in": sum(m["records_in"] for m in per_query),
        "records_out": sum(m["records_out"] for m in per_query),
        "late_records": sum(m["late_records"] for m in per_query),
        "rejected_records": sum(m["rejected_records"] for m in per_query),
        "filtered_records": sum(m["filtered_records"] for m in per_query),
        "seconds": time.perf_counter() - start,
        "queries": per_query,
    }
    return JobResult(tables, metrics)


__all__ = ["collect", "run_in_process", "run_on_spark", "to_spark"]
