"""YSB data for the benchmark runner.

The generator and the schema live in ``grizzly_py.workloads.ysb`` (shared with the demo and the
tests); this module adds the data set that all peers of a run share (and its Parquet copy), and
a command line: ``python -m bench.ysb_data --rows 1000000 --out ysb.parquet``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from grizzly_py.workloads.ysb import (ADS_PER_CAMPAIGN, EPOCH_MS, EVENT_TYPES, EVENTS_PER_SECOND, VIEW,  # noqa: F401
                                   VIEW_CODE, WINDOW_MS, generate_ysb, write_parquet)


class BenchData:
    """One generated data set, shared by all peers of a run, with its Parquet and CSV copies
    (written on first use, in a temporary directory; the runner writes them before forking the
    peers that need them). ``attrs`` are facts the peers read (``window_ms``, ...).

    A data set is one table, or several named inputs (``{"person": ..., "auction": ...}`` for a
    join): ``tables`` maps each name to its table (one table is named ``"data"``), ``table`` is
    the first, ``n_rows`` counts the rows of all of them, and each has its own files."""

    def __init__(self, table: pa.Table | dict[str, pa.Table], window_ms: int = WINDOW_MS, **attrs) -> None:
        self.tables: dict[str, pa.Table] = dict(table) if isinstance(table, dict) else {"data": table}
        if not self.tables:
            raise ValueError("a data set needs at least one table")
        self.table = next(iter(self.tables.values()))
        self.window_ms = window_ms
        self.__dict__.update(attrs)
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._parquet: dict[str, Path] = {}
        self._csv: dict[str, Path] = {}
        self.parquet_write_s: float | None = None
        self.csv_write_s: float | None = None

    @property
    def n_rows(self) -> int:
        return sum(t.num_rows for t in self.tables.values())

    def _dir(self) -> Path:
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="grizzly-bench-data-")
        return Path(self._tmp.name)

    def _name(self, name: str | None) -> str:
        name = next(iter(self.tables)) if name is None else name
        if name not in self.tables:
            raise KeyError(f"no table {name!r} in this data set (it has {', '.join(self.tables)})")
        return name

    def parquet_path(self, name: str | None = None) -> Path:
        """Table ``name`` (default: the first) as a Parquet file in a temporary directory,
        written on first use."""
        name = self._name(name)
        if name not in self._parquet:
            start = time.perf_counter()
            self._parquet[name] = write_parquet(self.tables[name], self._dir() / f"{name}.parquet")
            self.parquet_write_s = (self.parquet_write_s or 0.0) + time.perf_counter() - start
        return self._parquet[name]

    def csv_path(self, name: str | None = None) -> Path:
        """Table ``name`` (default: the first) as a header-less CSV file (dictionary columns as
        their strings)."""
        import pyarrow.csv as pcsv

        name = self._name(name)
        if name not in self._csv:
            start = time.perf_counter()
            path = self._dir() / f"{name}.csv"
            table = self.tables[name]
            schema = pa.schema([pa.field(f.name, f.type.value_type) if pa.types.is_dictionary(f.type)
                                else f for f in table.schema])
            with pcsv.CSVWriter(path, schema, write_options=pcsv.WriteOptions(include_header=False)) as w:
                for batch in table.to_batches():
                    w.write_batch(batch.cast(schema) if batch.schema != schema else batch)
            self._csv[name] = path
            self.csv_write_s = (self.csv_write_s or 0.0) + time.perf_counter() - start
        return self._csv[name]

    def write_files(self, parquet: bool = False, csv: bool = False) -> None:
        """Write the Parquet and/or CSV copy of every table (the runner does, before forking)."""
        for name in self.tables:
            if parquet:
                self.parquet_path(name)
            if csv:
                self.csv_path(name)

    def cleanup(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp, self._parquet, self._csv = None, {}, {}


class YsbData(BenchData):
    """YSB-shaped data: ``n_campaigns`` keys (0..n-1), ``event_type`` as strings or int codes."""

    def __init__(self, table: pa.Table, n_campaigns: int, int_coded: bool = False,
                 window_ms: int = WINDOW_MS, **attrs) -> None:
        super().__init__(table, window_ms, n_campaigns=n_campaigns, int_coded=int_coded, **attrs)

    @property
    def view_value(self) -> str | int:
        """The ``event_type`` value a peer compares against: "view", or 0 when int-coded."""
        return VIEW_CODE if self.int_coded else VIEW


def _main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--campaigns", type=int, default=10_000)
    parser.add_argument("--int-coded", action="store_true")
    parser.add_argument("--out", required=True, help="Parquet file to write")
    args = parser.parse_args(argv)
    table = generate_ysb(args.rows, args.seed, args.campaigns, int_coded=args.int_coded)
    print(write_parquet(table, args.out))


if __name__ == "__main__":
    _main()
