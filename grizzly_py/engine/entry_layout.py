"""Where keys and aggregate states sit in one hash-table entry of a window pipeline.

A window kernel keeps, per open window or pane, a hash table of entries ``[tag, key words...,
aggregate state words...]`` (runtime/hashtable.ll, runtime/windows.ll), laid out by the
pipeline's generated code (``GeneratedPipeline.grouping``). The engine's snapshots
(``state_snapshot.py``, ``shared_snapshot.py``) and Spark's partial states (``spark/partials.py``)
read entries through this one description.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..aggregates import spec_of
from ..codegen.module import GeneratedPipeline


@dataclass(frozen=True)
class AggLayout:
    name: str
    func: str
    word: int      # first state word within the entry
    words: int     # state words (holistic: the vector's {data, length, capacity})
    shipped_values: int | None = None  # holistic: the values a partial state ships (None: all)

    @property
    def holistic(self) -> bool:
        return spec_of(self.func).holistic


@dataclass(frozen=True)
class EntryLayout:
    """Where keys and aggregate states sit in one hash-table entry of a window pipeline."""

    key_words: int
    entry_words: int
    aggregates: tuple[AggLayout, ...]

    @staticmethod
    def of(gen: GeneratedPipeline) -> EntryLayout:
        g = gen.grouping
        if g is None:
            raise RuntimeError(f"pipeline {gen.pipeline.id}: no window grouping layout")
        aggs = []
        offsets = [a.off for a in g.aggregates] + [g.entry_size]
        for a, end in zip(g.aggregates, offsets[1:]):
            aggs.append(AggLayout(a.name, a.func, a.off // 8, (end - a.off) // 8, a.spec.partial_values(a)))
        return EntryLayout(g.key_words, g.entry_size // 8, tuple(aggs))

    def columns(self) -> list[tuple[str, int | None]]:
        """The state columns: (name, word index), or (name, None) for a value vector."""
        out = []
        for i, a in enumerate(self.aggregates):
            if a.holistic:
                out.append((f"__gz_a{i}_values", None))
            else:
                out.extend((f"__gz_a{i}_w{j}", a.word + j) for j in range(a.words))
        return out
