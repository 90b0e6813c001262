"""A job's sources read round-robin: ``SourceLoop``.

Each round reads one batch of every source that has not ended, in order of first appearance in
the job's queries; a source that ends is in its last round as ``END`` (its queries learn of the
end there) and then drops out. Each source is read once for every query of the job, so one-shot
iterators serve several sinks.
"""

from __future__ import annotations

from typing import Iterator

END = object()  # a source's place in the round in which it ended


class SourceLoop:
    """Rounds of source batches from ``iterators`` (one per source, by ``id``) of the ``live``
    sources (those that have not ended); ``rows`` counts the rows read (from a resumed job's
    count)."""

    def __init__(self, live: list, iterators: dict[int, Iterator], rows: int = 0):
        self.live, self.iterators, self.rows = list(live), iterators, rows

    @classmethod
    def fresh(cls, sources: list, reads: dict) -> SourceLoop:
        """Every source from its first batch, through the job's reads of them (``source_reads.py``:
        in bulk where the source knows its batches up front)."""
        return cls(sources, {id(s): iter(reads[id(s)].batches(bulk=True)) for s in sources})

    def rounds(self) -> Iterator[dict[int, object]]:
        """Each round: source id -> its next batch, or ``END``."""
        while self.live:
            this_round = {}
            for s in self.live:
                batch = next(self.iterators[id(s)], END)
                this_round[id(s)] = batch
                if batch is not END:
                    self.rows += batch.num_rows
            yield this_round
            self.live = [s for s in self.live if this_round[id(s)] is not END]


__all__ = ["END", "SourceLoop"]
