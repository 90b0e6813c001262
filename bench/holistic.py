"""The holistic aggregates' cases run interleaved: grizzly-py against numpy, polars and DuckDB.

    python -m bench.holistic [--cases agg-types-median,streambox-median-per-key,...] [--rows N]
                             [--repeat 5] [--peers numpy,polars,duckdb,grizzly] [--threads 2]

The suite's cases of ``agg.median``, ``agg.mode``, ``agg.count_distinct`` and ``agg.top_k``
(``agg-types`` median and mode, StreamBox's median, top-k and unique count per key: data,
queries, peers and cross-checks of ``bench/workloads.py`` and ``bench/peers/suite.py``), each
case's peers set up first and then run round by round (``bench/strings.py``'s runner), so that
the shared host's drifting load reaches every peer alike. Writes ``holistic-<date>-<time>.{md,json}``
to ``--out``; exit status 2 if peers disagree.
"""

from __future__ import annotations

import sys

from . import strings

CASES = {"agg-types-median": ("agg-types", "median"), "agg-types-mode": ("agg-types", "mode"),
         **{f"streambox-{case}": ("streambox", case)
            for case in ("median-per-key", "topk-per-key", "unique-count-per-key")}}


def main(argv: list[str] | None = None) -> int:
    return strings.main(argv, known=CASES, name="holistic", description=__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
