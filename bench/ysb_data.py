"""YSB data for the benchmark runner.

The generator and the schema live in ``grizzly_py.workloads.ysb`` (shared with the demo and the
tests); this module adds the data set that all peers of a run share (and its Parquet copy), and
a command line: ``python bench/ysb_data.py --rows 1000000 --out ysb.parquet``.
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
    peers that need them). ``attrs`` are facts the peers read (``window_ms``, ...)."""

    def __init__(self, table: pa.Table, window_ms: int = WINDOW_MS, **attrs) -> None:
        self.table = table
        self.window_ms = window_ms
        self.__dict__.update(attrs)
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._parquet: Path | None = None
        self._csv: Path | None = None
        self.parquet_write_s: float | None = None
        self.csv_write_s: float | None = None

    @property
    def n_rows(self) -> int:
        return self.table.num_rows

    def _dir(self) -> Path:
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="grizzly-bench-data-")
        return Path(self._tmp.name)

    def parquet_path(self) -> Path:
        """The table as a Parquet file in a temporary directory, written on first use."""
        if self._parquet is None:
            start = time.perf_counter()
            self._parquet = write_parquet(self.table, self._dir() / "data.parquet")
            self.parquet_write_s = time.perf_counter() - start
        return self._parquet

    def csv_path(self) -> Path:
        """The table as a header-less CSV file (dictionary columns as their strings)."""
        if self._csv is None:
            import pyarrow.csv as pcsv

            start = time.perf_counter()
            path = self._dir() / "data.csv"
            schema = pa.schema([pa.field(f.name, f.type.value_type) if pa.types.is_dictionary(f.type)
                                else f for f in self.table.schema])
            with pcsv.CSVWriter(path, schema, write_options=pcsv.WriteOptions(include_header=False)) as w:
                for batch in self.table.to_batches():
                    w.write_batch(batch.cast(schema) if batch.schema != schema else batch)
            self._csv = path
            self.csv_write_s = time.perf_counter() - start
        return self._csv

    def cleanup(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp, self._parquet, self._csv = None, None, None


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
