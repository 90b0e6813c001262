"""Sinks: where a query's output batches go. ``collect`` gathers a table; ``parquet`` and
``csv`` stream batches to a file under a temporary name of its own (``temporary_name``: unique per
run, so two jobs writing one path never write into one file), closed and synced when the query
finishes. The job then moves every file sink's file to its final name, all or none
(``commit.py``), so a failed job never leaves a partial file, or one sink's file without the
others', under the final names.

An updating stream's batches carry their row kinds (``changelog.OP_COLUMN``): ``collect`` returns
the table the changelog leaves (``changelog.final_table``), file sinks write the changelog itself,
its kinds in the leading column ``op``. Given the stream's unique key (``upsert.unique_key``),
``collect`` keeps only each key's last row (``FinalTableSink``) instead of the changelog."""

from __future__ import annotations

import glob
import os
import re
import secrets
import socket

import pyarrow as pa

from ..changelog import OP_COLUMN, changelog_schema, changelog_table, final_table
from ..plan import SinkSpec
from .ownership import process_alive
from .upsert import LastRowPerKey

_TEMPORARY = re.compile(r"\.(\d+)@(.+)\.[0-9a-f]+\.inprogress$")


def temporary_name(final: str) -> str:
    """Where a file sink writes before it is committed: next to ``final`` (a rename within one
    directory is atomic), naming the writing process (``remove_orphans``)."""
    return f"{final}.{os.getpid()}@{socket.gethostname()}.{secrets.token_hex(4)}.inprogress"


def remove_orphans(final: str) -> None:
    """Remove the temporary files of ``final`` left by writers of this host that are gone (killed
    jobs); a live writer's, or another host's, stay."""
    host = socket.gethostname()
    for path in glob.glob(f"{glob.escape(final)}.*.inprogress"):
        m = _TEMPORARY.search(path[len(final):])
        if m is None or m.group(2) != host or process_alive(int(m.group(1))):
            continue
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


class Sink:
    # whether the sink keeps only an updating stream's final table, so that no one sees its
    # changelog between batches (running aggregates may then emit per batch: ``mini_batch.py``)
    final_table_only = False

    def __init__(self, spec: SinkSpec, schema: pa.Schema):
        self.spec, self.schema, self.rows = spec, schema, 0

    def write(self, batch: pa.RecordBatch) -> None:
        self.rows += batch.num_rows
        self._write(batch)

    def _write(self, batch):
        raise NotImplementedError

    def finish(self) -> pa.Table | None:
        raise NotImplementedError

    def files(self) -> list["FileSink"]:
        """The finished file sinks whose files the job's commit moves to their final names."""
        return []

    def abort(self) -> None:
        """Called when the job ends; a sink that did not finish discards its partial output."""


class CollectSink(Sink):
    def __init__(self, spec, schema):
        super().__init__(spec, schema)
        self.batches: list[pa.RecordBatch] = []

    def _write(self, batch):
        self.batches.append(batch)

    def finish(self):
        return final_table(pa.Table.from_batches(self.batches, schema=self.schema))


class FinalTableSink(Sink):
    """``collect`` of an updating stream with a unique key: the last row per key, not the
    changelog (``upsert.py``); returns the same table as ``CollectSink``."""

    final_table_only = True

    def __init__(self, spec, schema, key: tuple[str, ...]):
        super().__init__(spec, schema)
        self.final = LastRowPerKey(schema, key)

    def _write(self, batch):
        self.final.add(batch)

    def finish(self):
        return self.final.table()


class FileSink(Sink):
    def __init__(self, spec, schema):
        super().__init__(spec, schema)
        self.updating = OP_COLUMN in schema.names
        self.file_schema = changelog_schema(schema) if self.updating else schema
        self.tmp = temporary_name(spec.path)
        self.writer = self._open(self.tmp)
        self.closed = False
        self.recorded = False   # a commit record lists the file (commit.py): it is the commit's now
        self.published = False  # under its final name

    def _write(self, batch):
        if self.updating:
            batch = changelog_table(pa.Table.from_batches([batch], schema=self.schema))
        self.writer.write(batch)

    def finish(self):
        """Close the file and sync it to disk, under its temporary name (``commit.publish`` renames it)."""
        self._close()
        fd = os.open(self.tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return None

    def files(self):
        return [self]

    def _close(self):
        if not self.closed:
            self.closed = True
            self.writer.close()

    def abort(self):
        if self.published or self.recorded:
            return
        try:
            self._close()
        finally:
            if os.path.exists(self.tmp):
                os.remove(self.tmp)


class ParquetSink(FileSink):
    def _open(self, path):
        import pyarrow.parquet as pq
        return pq.ParquetWriter(path, self.file_schema)


class CsvSink(FileSink):
    def _open(self, path):
        import pyarrow.csv as pcsv
        return pcsv.CSVWriter(path, self.file_schema)


SINKS = {"collect": CollectSink, "parquet": ParquetSink, "csv": CsvSink}


def open_sink(spec: SinkSpec, schema: pa.Schema, key: tuple[str, ...] | None = None) -> Sink:
    """The sink of ``spec`` for batches of ``schema``; ``key``: the unique key of an updating
    stream (``upsert.unique_key``), which a collecting sink keeps its rows by."""
    if keeps_final_table(spec, schema, key):
        return FinalTableSink(spec, schema, key)
    return SINKS[spec.kind](spec, schema)


def keeps_final_table(spec: SinkSpec, schema: pa.Schema, key: tuple[str, ...] | None) -> bool:
    """Whether the sink of ``spec`` keeps only the final table of an updating stream with unique
    key ``key`` (``FinalTableSink``), not its changelog."""
    return spec.kind == "collect" and bool(key) and OP_COLUMN in schema.names and all(k in schema.names for k in key)
