"""Checkpoints of the embedded engine: consistent snapshots, exactly-once restart, transactional sinks.

``env.enable_checkpointing(path, interval)`` makes ``execute()`` take a snapshot of the whole job
between rounds of source batches (at most once per ``interval`` of wall time, or every
``interval_batches`` rounds), when no task runs: parallel windows' grouped batches are flushed and
stateless tasks drained first, so every worker's state block is quiet. A snapshot holds

- each source's position (batches delivered: Parquet row groups, CSV blocks, Arrow batches; whether
  it ended; the rows ``on_bad_rows="drop"`` rejected so far);
- per query: each source's watermark clock, each pipeline's watermark and row counts, each kernel's
  state (``state_snapshot.py``: counters, window directories and tables, value vectors, interned
  strings), and the sink's committed output.

One job owns the directory at a time (``ownership.py``: an OS lock; a second job is refused naming
the owner), and each owner's epoch goes into its snapshots and part names: before committing a
part, a snapshot or the final output it checks that the directory is still its own (fencing).

Sinks write transactionally. With checkpointing on, a query's output goes to *part files* (Arrow IPC
streams) under ``path/parts``: the rows written since the last checkpoint go to an in-progress part
that the next checkpoint closes, flushes and renames, and the snapshot lists the committed parts
with their sizes and SHA-256 checksums (hashed on the snapshot writer's thread). When the job ends,
the parts are written to the real sink (the Parquet or CSV file, or the collected table) in order,
each checked against its checksum (``CheckpointCorruptError`` if it changed on disk), the job's file
sinks are moved into place together (``commit.py``), and the checkpoints are deleted (as Flink does
for a finished job), so running the job again starts from scratch.

``execute()`` resumes from the newest intact snapshot: a partial or corrupt one (``snapshot.py``),
or one whose parts are missing or fail their size or checksum, is skipped with a warning, falling
back to the one before (the two newest are kept). Its parts stay;
everything written after it (newer parts, in-progress parts) is removed; the sources skip the
batches the snapshot had consumed. The restarted job thus writes exactly what an uninterrupted run
writes, in the same order. A snapshot of a different job (another plan or sink) is refused with an
error rather than restored; one of the same job at another parallelism is restored, its per-worker
state blocks spread over the workers' blocks and idle ones (``WindowKernel.restore_state``).

Every kernel exports and restores its own state (``PipelineKernel.export_state``, under hash and
sort-based grouping); a kernel whose state cannot be snapshotted (``snapshot_unsupported``: a
layout chosen while the job runs) makes the job refuse to start, naming the pipeline.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa

from ..time import to_millis
from . import snapshot
from .checkpoint_errors import CheckpointCorruptError, CheckpointError
from .job_observers import JobObserver
from .ownership import Owner
from .sinks import Sink, keeps_final_table, open_sink
from .source_loop import SourceLoop

KEPT_SNAPSHOTS = 2
_SNAPSHOT_NAME = re.compile(r"^chk-(\d{8})\.snap$")


@dataclass(frozen=True)
class CheckpointConfig:
    """Where and how often: ``interval_ms`` of wall time between snapshots, or every
    ``interval_batches`` rounds of source batches when that is set (deterministic, for tests)."""

    path: str
    interval_ms: int = 1000
    interval_batches: int | None = None

    @staticmethod
    def of(path, interval, interval_batches) -> CheckpointConfig:
        ms = to_millis(interval, what="enable_checkpointing(interval=...)")
        if ms < 0:
            raise ValueError(f"enable_checkpointing: the interval must not be negative, got {ms} ms")
        if interval_batches is not None and (not isinstance(interval_batches, int) or interval_batches < 1):
            raise ValueError(f"enable_checkpointing: interval_batches must be a positive int, got {interval_batches!r}")
        return CheckpointConfig(os.fspath(path), ms, interval_batches)


def unsupported_reason(kernel) -> str | None:
    """Why ``kernel``'s state cannot be checkpointed (None: it can, or there is none)."""
    return kernel.snapshot_unsupported if kernel is not None else None


def export_kernel(kernel) -> dict:
    """Everything ``kernel`` keeps between batches (``PipelineKernel.export_state``)."""
    return kernel.export_state()


def restore_kernel(kernel, saved: dict) -> None:
    """``export_kernel``'s ``saved`` into the fresh ``kernel`` (``PipelineKernel.restore_state``)."""
    kernel.restore_state(saved)


def job_fingerprint(runs, parallelism: int) -> str:
    """A hash of the job's shape: its sinks, sources' schemas and pipelines (inputs, filters, event
    time, outputs, state layout) and parallelism. Sources are named by position, not by their
    process-local names."""
    return _fingerprint(runs, {"parallelism": parallelism, "queries": []}, lambda kernel: type(kernel).__name__)


def job_shape(runs) -> str:
    """``job_fingerprint`` without the parallelism: a snapshot with the same shape restores at
    another parallelism (``PipelineKernel.restore_state`` spreads the per-worker state blocks):
    kernels are named by the state they keep (``PipelineKernel.state_kind``), which one class keeps
    whatever the parallelism (tumbling windows' kernel class differs by it: ``kernel_table.py``)."""
    return _fingerprint(runs, {"queries": []}, state_kind)


def state_kind(kernel) -> str:
    """What snapshots call a pipeline's kernel (``PipelineKernel.state_kind``; an identity
    projection has none: ``NoneType``)."""
    return kernel.state_kind if kernel is not None else type(kernel).__name__


def _fingerprint(runs, shape: dict, kind) -> str:
    for qr in runs:
        spec = qr.sink.spec
        shape["queries"].append({
            "sink": [spec.kind, spec.name, spec.path],
            "sources": [[str(s.arrow_schema), s.timestamp, s.watermark.out_of_orderness_ms] for s in qr.sources],
            "pipelines": [[type(r.pipeline.terminal).__name__, kind(r.kernel),
                           str(r.pipeline.input_schema), repr(r.pipeline.filters),
                           repr(r.pipeline.event_time), str(r.output_schema), getattr(r.gen, "state_words", None),
                           state_layout(r.gen)] for r in qr.runs]})
    return hashlib.sha256(json.dumps(shape, default=str).encode()).hexdigest()


def state_layout(gen) -> list | None:
    """What a window pipeline's entries hold: key words, entry bytes, (aggregate, function, offset)."""
    g = getattr(gen, "grouping", None)
    if g is None:
        return None
    return [g.key_words, g.entry_size, [[a.name, a.func, a.off] for a in g.aggregates]]


class PartSink(Sink):
    """A query's sink under checkpointing: batches go to part files, committed at checkpoints, and
    to the real sink (``sinks.py``) only when the job finishes."""

    def __init__(self, store: "Checkpointer", query: int, spec, schema: pa.Schema, key=None):
        super().__init__(spec, schema)
        self.store, self.query, self.key = store, query, key  # (key: the real sink's, ``open_sink``)
        self.final_table_only = keeps_final_table(spec, schema, key)  # (what the real sink will keep)
        self.parts: list[str] = []        # committed part files (names under store.parts_dir), in order
        self.sizes: list[int] = []        # their sizes in bytes (a restart checks them)
        self.committed_rows = 0
        self.output: Sink | None = None   # the real sink, once ``finish`` wrote the parts to it
        self._file = self._writer = None
        self._path = None

    def _write(self, batch: pa.RecordBatch) -> None:
        if self._writer is None:  # named by checkpoint and owner: no two owners write one part
            name = f"q{self.query}-{self.store.next_id:08d}-e{self.store.owner.epoch}.arrow.inprogress"
            self._path = os.path.join(self.store.parts_dir, name)
            self._file = open(self._path, "wb")
            self._writer = pa.ipc.new_stream(self._file, self.schema)
        self._writer.write_batch(batch)

    def _close_part(self) -> str | None:
        if self._writer is None:
            return None
        self._writer.close()
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        path, self._writer, self._file, self._path = self._path, None, None, None
        return path

    def commit(self) -> dict:
        """Close the part written since the last checkpoint (it becomes part of checkpoint
        ``store.next_id``); what the snapshot records of this sink."""
        path = self._close_part()
        if path is not None:
            final = path[:-len(".inprogress")]
            os.replace(path, final)
            self.parts.append(os.path.basename(final))
            self.sizes.append(os.path.getsize(final))
        self.committed_rows = self.rows
        return {"rows": self.rows, "parts": list(self.parts), "sizes": list(self.sizes)}

    def restore(self, saved: dict) -> None:
        self.parts, self.sizes = list(saved["parts"]), list(saved["sizes"])
        self.rows = self.committed_rows = saved["rows"]

    def finish(self) -> pa.Table | None:
        """Write every part, in order, to the real sink and finish it; each committed part must
        match the checksum its snapshot recorded."""
        last = self._close_part()
        self.store.wait()  # the last snapshot's checksums
        self.store.owner.check()  # the parts are this owner's still
        self.output = open_sink(self.spec, self.schema, self.key)
        for name in self.parts:
            self._copy(os.path.join(self.store.parts_dir, name), self.store.checksums.get(name))
        if last is not None:
            self._copy(last, None)
        return self.output.finish()

    def _copy(self, path: str, sha256: str | None) -> None:
        with pa.memory_map(path) as source:
            data = source.read_buffer()
            if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
                raise CheckpointCorruptError(
                    f"{path}: this committed output part does not match its checksum (it changed on disk "
                    f"after it was committed); the job stops before its output is published. Run it again: it "
                    f"resumes from the newest snapshot whose parts are intact")
            for batch in pa.ipc.open_stream(data):
                self.output.write(batch)

    def files(self):
        return self.output.files() if self.output is not None else []

    def abort(self) -> None:
        try:
            path = self._close_part()  # not committed: garbage (named by this owner's epoch: no one else's)
            if path is not None:
                os.remove(path)
        except (OSError, pa.ArrowException):
            pass
        if self.output is not None:
            self.output.abort()


class Checkpointer(JobObserver):
    """Takes and restores the checkpoints of one job (``run_job``'s list of ``QueryRun``); the
    job's observer (``job_observers.py``): its queries write part files (``sink_factory``), keep
    one state layout, resume from the latest snapshot (``on_start``), are snapshotted between
    rounds (``on_round_end``), publish only while the directory is theirs (``before_publish``)
    and leave no checkpoint when they finish (``on_finish``)."""

    keeps_layout = True  # a snapshot holds one kernel per pipeline: no switch under way (regrouping.py)

    def __init__(self, config: CheckpointConfig, parallelism: int):
        self.config, self.parallelism = config, parallelism
        self.dir = config.path
        self.owner = Owner.acquire(self.dir)  # CheckpointOwnedError while another job runs on it
        self.parts_dir = os.path.join(self.dir, "parts")
        try:
            os.makedirs(self.parts_dir, exist_ok=True)
        except BaseException:
            self.owner.release()
            raise
        self.checksums: dict[str, str] = {}  # committed part -> SHA-256 (hex) of its bytes
        self.next_id = 1
        self.taken = 0
        self.restored_from: int | None = None
        self.restored_parallelism: int | None = None  # the parallelism that wrote the restored snapshot
        self.skipped: list[str] = []
        self.snapshot_ms: list[float] = []   # the pipeline's pause per snapshot (state copied out)
        self.write_ms: list[float] = []      # encoding, writing and syncing it (in the background)
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="gz-checkpoint")
        self._pending = None
        self.rounds = 0
        self.last_time = time.monotonic()

    def sink_factory(self, query: int):
        return lambda spec, schema, key: PartSink(self, query, spec, schema, key)

    @property
    def commit_dir(self) -> str:
        return self.dir  # (the owner's lock covers the commit record)

    # --- the job's observer ----------------------------------------------------------------------
    def on_start(self, job) -> None:
        iterators, source_rows, live = self.resume(job.runs, [job.reads[id(s)] for s in job.sources])
        job.loop = SourceLoop(live, iterators, source_rows)

    def on_round_end(self, job) -> None:
        self.after_round(job.runs, job.loop.rows)

    def before_publish(self, job) -> None:
        self.owner.check()

    def on_finish(self, job) -> None:
        self.complete()

    def add_metrics(self, metrics: dict) -> None:
        metrics["checkpoints"] = self.metrics()

    # --- before the job runs ---------------------------------------------------------------------
    def check_supported(self, runs) -> None:
        for qr in runs:
            for r in qr.runs:
                reason = unsupported_reason(r.kernel)
                if reason is not None:
                    raise CheckpointError(
                        f"enable_checkpointing: pipeline {r.pipeline.id} of sink {qr.sink.spec.name!r} uses "
                        f"{reason}, whose state cannot be checkpointed yet; run this job without checkpointing "
                        f"(docs/fault_tolerance.md lists what is covered)")

    def resume(self, runs, reads) -> tuple[dict, int, list]:
        """Restore the newest intact snapshot into ``runs`` (fresh) and clean up what was written
        after it; ``reads``: how the job reads each source (``source_reads.py``). Returns (source
        iterators from their restored positions, source rows so far, the sources that have not
        ended)."""
        sources = [r.source for r in reads]
        self.check_supported(runs)
        self.fingerprint = job_fingerprint(runs, self.parallelism)
        self.shape = job_shape(runs)
        self.sources = sources
        self._file_sha256: dict[str, str] = {}  # parts hashed while looking for an intact snapshot
        found = self._latest()
        self.positions = [0] * len(sources)
        self.ended = [False] * len(sources)
        self.source_rows = 0
        rejected = [(0, [])] * len(sources)
        if found is not None:
            self.restored_from, doc = found
            self.restored_parallelism = doc.get("parallelism", self.parallelism)
            self.next_id = self.restored_from + 1
            if len(doc["sources"]) != len(sources):
                raise CheckpointError(f"{self.dir}: the checkpoint has {len(doc['sources'])} sources, the job {len(sources)}")
            for i, s in enumerate(doc["sources"]):
                self.positions[i], self.ended[i] = s["batches"], s["ended"]
                rejected[i] = (s["rejected"], s["rejected_examples"])
                # (a source that ended is not read again: its count stays as restored here)
                sources[i].rejected_records, sources[i].rejected_examples = s["rejected"], list(s["rejected_examples"])
            self.source_rows = doc["source_rows"]
            for qr, saved in zip(runs, doc["queries"]):
                _restore_query(qr, saved)
        self._clean(keep=self.restored_from)
        iterators = {id(s): self._counted(i, reads[i].batches(self.positions[i], rejected[i]))
                     for i, s in enumerate(sources) if not self.ended[i]}
        live = [s for i, s in enumerate(sources) if not self.ended[i]]
        return iterators, self.source_rows, live

    def _counted(self, index: int, batches):
        for batch in batches:
            self.positions[index] += 1
            yield batch
        self.ended[index] = True

    def _snapshot_files(self) -> list[tuple[int, str]]:
        out = []
        for path in glob.glob(os.path.join(self.dir, "chk-*.snap")):
            m = _SNAPSHOT_NAME.match(os.path.basename(path))
            if m:
                out.append((int(m.group(1)), path))
        return sorted(out, reverse=True)

    def _latest(self) -> tuple[int, dict] | None:
        for number, path in self._snapshot_files():
            try:
                doc = snapshot.read(path)
                if doc.get("fingerprint") != self.fingerprint and doc.get("shape") != self.shape:
                    raise CheckpointError(
                        f"{path}: this checkpoint belongs to another job (a different query or sink; or "
                        f"another parallelism, for a snapshot written before restoring at another "
                        f"parallelism was supported); remove {self.dir} or checkpoint this job to another path")
                self.checksums = self._check_parts(doc, path)
                return number, doc
            except snapshot.SnapshotError as e:
                self.skipped.append(str(e))
                warnings.warn(f"skipping checkpoint {e}; falling back to the one before", RuntimeWarning, stacklevel=3)
        return None

    def _check_parts(self, doc: dict, path: str) -> dict[str, str]:
        """Every output part ``doc`` lists is there, of its size and checksum (snapshots written
        before parts had checksums: its size); their checksums."""
        checksums = {}
        for q in doc["queries"]:
            sink = q["sink"]
            sums = sink.get("sha256", [None] * len(sink["parts"]))
            for part, size, sha256 in zip(sink["parts"], sink["sizes"], sums):
                p = os.path.join(self.parts_dir, part)
                if not os.path.exists(p) or os.path.getsize(p) != size:
                    raise snapshot.SnapshotError(f"{os.path.basename(path)}: its output part {part} is missing or "
                                                 f"has another size")
                if sha256 is not None:
                    if self._file_sha256.get(part) is None:
                        self._file_sha256[part] = _sha256_file(p)
                    if self._file_sha256[part] != sha256:
                        raise snapshot.SnapshotError(f"{os.path.basename(path)}: its output part {part} does not "
                                                     f"match its checksum (corrupt)")
                    checksums[part] = sha256
        return checksums

    def _clean(self, keep: int | None) -> None:
        """Remove the snapshots newer than ``keep`` (unusable), temporary files and the parts that
        ``keep`` does not list."""
        listed = set()
        for number, path in self._snapshot_files():
            if keep is None or number > keep:
                os.remove(path)
            elif number == keep:
                doc = snapshot.read(path)
                listed = {p for q in doc["queries"] for p in q["sink"]["parts"]}
        for path in glob.glob(os.path.join(self.dir, "*.tmp")) + glob.glob(os.path.join(self.dir, ".*.tmp")):
            os.remove(path)
        for name in os.listdir(self.parts_dir):
            if name not in listed:
                os.remove(os.path.join(self.parts_dir, name))
        snapshot.fsync_directory(self.parts_dir)
        snapshot.fsync_directory(self.dir)

    # --- while the job runs ----------------------------------------------------------------------
    def after_round(self, runs, source_rows: int) -> None:
        """A round of source batches is done: take a checkpoint if one is due."""
        self.rounds += 1
        if self.config.interval_batches is not None:
            due = self.rounds % self.config.interval_batches == 0
        else:
            due = (time.monotonic() - self.last_time) * 1000 >= self.config.interval_ms
        if due:
            self.take(runs, source_rows)

    def take(self, runs, source_rows: int) -> None:
        """Copy the job's state (the pipeline waits for this part only) and hand the snapshot to the
        writer thread, which encodes, writes and syncs it while the next batches run (one snapshot
        in flight: the next one waits for it)."""
        start = time.perf_counter()
        self.owner.check()  # before the sinks commit their parts
        for qr in runs:  # no task may run: grouped batches go through, stateless tasks finish
            qr.flush()
        doc = {"checkpoint": self.next_id, "fingerprint": self.fingerprint, "shape": self.shape,
               "parallelism": self.parallelism, "epoch": self.owner.epoch, "created_unix": time.time(),
               "source_rows": source_rows,
               "sources": [{"name": s.name, "batches": self.positions[i], "ended": self.ended[i],
                            "rejected": s.rejected_records, "rejected_examples": list(s.rejected_examples)}
                           for i, s in enumerate(self.sources)],
               "queries": [_export_query(qr) for qr in runs]}
        path = os.path.join(self.dir, f"chk-{self.next_id:08d}.snap")
        self.wait()
        self._pending = self._writer.submit(self._write, path, doc)
        self.next_id += 1
        self.taken += 1
        self.last_time = time.monotonic()
        self.snapshot_ms.append((time.perf_counter() - start) * 1000)

    def _write(self, path: str, doc: dict) -> None:
        start = time.perf_counter()
        for q in doc["queries"]:
            q["sink"]["sha256"] = [self._part_checksum(part) for part in q["sink"]["parts"]]
        self.owner.check()
        snapshot.write_atomically(path, snapshot.encode(doc))
        for number, old in self._snapshot_files()[KEPT_SNAPSHOTS:]:
            os.remove(old)
        self.write_ms.append((time.perf_counter() - start) * 1000)

    def _part_checksum(self, part: str) -> str:
        """A committed part's checksum: of its file when first listed (on the writer thread)."""
        if part not in self.checksums:
            self.checksums[part] = _sha256_file(os.path.join(self.parts_dir, part))
        return self.checksums[part]

    def wait(self) -> None:
        """Wait for the snapshot being written; raise its error."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def close(self) -> None:
        """The job ends (finished or failed): let the last snapshot be written, stop the writer,
        give up the directory."""
        try:
            self.wait()
        finally:
            self._writer.shutdown(wait=True)
            self.owner.release()

    # --- after the job ---------------------------------------------------------------------------
    def complete(self) -> None:
        """Every sink finished: the checkpoints are no longer needed (snapshots first, so that a
        crash in between restarts from scratch rather than from a snapshot without its parts)."""
        self.wait()
        self.owner.check()
        for _, path in self._snapshot_files():
            os.remove(path)
        snapshot.fsync_directory(self.dir)
        for name in os.listdir(self.parts_dir):
            os.remove(os.path.join(self.parts_dir, name))

    def metrics(self) -> dict:
        def median(values):
            return round(sorted(values)[len(values) // 2], 3) if values else None
        return {"path": self.dir, "epoch": self.owner.epoch, "taken": self.taken,
                "restored_from": self.restored_from,
                "restored_parallelism": self.restored_parallelism,
                "skipped_snapshots": list(self.skipped),
                "pause_ms_median": median(self.snapshot_ms),
                "pause_ms_max": round(max(self.snapshot_ms), 3) if self.snapshot_ms else None,
                "write_ms_median": median(self.write_ms)}


def _sha256_file(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def export_query_state(qr) -> dict:
    """A ``QueryRun``'s state between rounds, its sink aside: records and batches counted, the
    sources' clocks, each pipeline's watermark, counters and kernel state (``state_snapshot``).
    Batches grouped for a round of tasks go through first, so the state holds every batch fed;
    then the interned strings no window holds are released, so that the snapshot holds only the
    strings of open windows."""
    qr.flush()
    for index in range(len(qr.runs)):
        qr.release_strings(index, force=True)
    return {"records_in": qr.records_in,
            "batch_numbers": [qr.batch_numbers[id(s)] for s in qr.sources],
            "clocks": [{"watermark": c.watermark, "max_event_time": c.max_event_time, "ended": c.ended}
                       for c in (qr.clocks[id(s)] for s in qr.sources)],
            "runs": [{"watermark": r.watermark, "rows_in": r.rows_in, "rows_out": r.rows_out,
                      "kernel": export_kernel(r.kernel) if r.kernel is not None else None} for r in qr.runs]}


def restore_query_state(qr, saved: dict) -> None:
    """The inverse of ``export_query_state``, into a fresh ``QueryRun`` of the same query."""
    qr.records_in = saved["records_in"]
    for s, number, clock in zip(qr.sources, saved["batch_numbers"], saved["clocks"]):
        qr.batch_numbers[id(s)] = number
        c = qr.clocks[id(s)]
        c.watermark, c.max_event_time, c.ended = clock["watermark"], clock["max_event_time"], clock["ended"]
    for r, run in zip(qr.runs, saved["runs"]):
        r.watermark, r.rows_in, r.rows_out = run["watermark"], run["rows_in"], run["rows_out"]
        if r.kernel is not None:
            restore_kernel(r.kernel, run["kernel"])


def _export_query(qr) -> dict:
    return {**export_query_state(qr), "sink": qr.sink.commit()}


def _restore_query(qr, saved: dict) -> None:
    restore_query_state(qr, saved)
    qr.sink.restore(saved["sink"])


__all__ = ["CheckpointConfig", "CheckpointCorruptError", "CheckpointError", "Checkpointer", "PartSink",
           "export_kernel", "export_query_state", "job_fingerprint", "job_shape", "restore_kernel",
           "restore_query_state", "state_kind", "unsupported_reason"]
