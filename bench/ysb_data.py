"""YSB data for the benchmark runner.

The generator and the schema live in ``grizzly_py.workloads.ysb`` (shared with the demo and the
tests); this module adds the data set that all peers of a run share (and its Parquet copy), and
a command line: ``python bench/ysb_data.py --rows 1000000 --out ysb.parquet``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from grizzly_py.workloads.ysb import (ADS_PER_CAMPAIGN, EPOCH_MS, EVENT_TYPES, EVENTS_PER_SECOND, VIEW,  # noqa: F401
                                   VIEW_CODE, WINDOW_MS, generate_ysb, write_parquet)


@dataclass
class YsbData:
    """One generated data set, shared by all peers of a run."""

    table: pa.Table
    n_campaigns: int
    int_coded: bool
    window_ms: int = WINDOW_MS
    _parquet: Path | None = field(default=None, repr=False)
    _tmp: tempfile.TemporaryDirectory | None = field(default=None, repr=False)
    parquet_write_s: float | None = None

    @property
    def n_rows(self) -> int:
        return self.table.num_rows

    @property
    def view_value(self) -> str | int:
        """The ``event_type`` value a peer compares against: "view", or 0 when int-coded."""
        return VIEW_CODE if self.int_coded else VIEW

    def parquet_path(self) -> Path:
        """The table as a Parquet file in a temporary directory, written on first use."""
        if self._parquet is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="grizzly-bench-ysb-")
            start = time.perf_counter()
            self._parquet = write_parquet(self.table, Path(self._tmp.name) / "ysb.parquet")
            self.parquet_write_s = time.perf_counter() - start
        return self._parquet

    def cleanup(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp, self._parquet = None, None


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
