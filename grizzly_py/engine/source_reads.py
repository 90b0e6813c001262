"""One job's read of one source: the checks the job leaves to its kernels, and the bulk intake.

A source (``sources.py``) yields its checked batches and knows nothing of the job that reads
them. What depends on the job is here, for as long as the job runs:

- ``kernels_check_dictionaries``: every reader of the source in this job is a window kernel,
  whose compiled loops check each dictionary index they read (a column they do not read cannot
  change a window's result); batches then skip the Python pass over the indices where their
  dictionary is clean (no duplicates or nulls: the kernels read the indices as they are);
- ``intake``: the bulk intake of the run's batches (``arrow_intake.py``) where the source knows
  them up front, while the batches are read (the tasks of the batches read keep it after).
"""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from ..sources import Source
from .arrow_intake import ArrowIntake


class SourceRead:
    """How one job reads ``source``; ``batches`` reads it (once per run)."""

    def __init__(self, source: Source, kernels_check_dictionaries: bool = False):
        self.source = source
        self.kernels_check_dictionaries = kernels_check_dictionaries
        self.intake: ArrowIntake | None = None

    def batches(self, start: int = 0, rejected: tuple[int, list[str]] = (0, []),
                bulk: bool = False) -> Iterator[pa.RecordBatch]:
        """The source's checked batches from number ``start`` on (``Source.batches``). ``bulk``:
        from the source's bulk intake where it has one (a run from the first batch that fails on
        the first bad row); the batches whose checks pass in bulk skip their own."""
        source, trusted = self.source, self.kernels_check_dictionaries
        checked = None
        if bulk and start == 0 and source.on_bad_rows == "error":
            known = source.known_batches()
            self.intake = ArrowIntake.of(known, source.arrow_schema) if known is not None else None
            if self.intake is not None:
                checked = self.intake.checked_rows(source.timestamp_field,
                                                   lambda dictionary: trusted and source.clean_dictionary(dictionary))
        try:
            yield from source.batches(start, rejected, checked=checked, kernels_check_dictionaries=trusted)
        finally:  # (the batches read keep it while their tasks run; the job does not after)
            self.intake = None
