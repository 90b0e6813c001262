"""Sinks: where a query's output batches go. ``collect`` gathers a table; ``parquet`` and
``csv`` stream batches to a file, written to a temporary name and renamed when the job
finishes, so a failed job never leaves a partial file under the final name."""

from __future__ import annotations

import os

import pyarrow as pa

from ..plan import SinkSpec


class Sink:
    def __init__(self, spec: SinkSpec, schema: pa.Schema):
        self.spec, self.schema, self.rows = spec, schema, 0

    def write(self, batch: pa.RecordBatch) -> None:
        self.rows += batch.num_rows
        self._write(batch)

    def _write(self, batch):
        raise NotImplementedError

    def finish(self) -> pa.Table | None:
        raise NotImplementedError

    def abort(self) -> None:
        """Called when the job ends; a sink that did not finish discards its partial output."""


class CollectSink(Sink):
    def __init__(self, spec, schema):
        super().__init__(spec, schema)
        self.batches: list[pa.RecordBatch] = []

    def _write(self, batch):
        self.batches.append(batch)

    def finish(self):
        return pa.Table.from_batches(self.batches, schema=self.schema)


class FileSink(Sink):
    def __init__(self, spec, schema):
        super().__init__(spec, schema)
        self.tmp = f"{spec.path}.inprogress"
        self.writer = self._open(self.tmp)
        self.finished = False

    def _write(self, batch):
        self.writer.write(batch)

    def finish(self):
        self.writer.close()
        os.replace(self.tmp, self.spec.path)
        self.finished = True
        return None

    def abort(self):
        if not self.finished:
            self.writer.close()
            if os.path.exists(self.tmp):
                os.remove(self.tmp)


class ParquetSink(FileSink):
    def _open(self, path):
        import pyarrow.parquet as pq
        return pq.ParquetWriter(path, self.schema)


class CsvSink(FileSink):
    def _open(self, path):
        import pyarrow.csv as pcsv
        return pcsv.CSVWriter(path, self.schema)


SINKS = {"collect": CollectSink, "parquet": ParquetSink, "csv": CsvSink}


def open_sink(spec: SinkSpec, schema: pa.Schema) -> Sink:
    return SINKS[spec.kind](spec, schema)
