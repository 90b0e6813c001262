"""How a window kernel's hash tables hold its state: the ``TableShape`` of a state layout.

A window kernel on hash tables keeps, per state block, a window directory (``runtime/windows.ll``)
whose slots each point to a hash table (``runtime/hashtable.ll``): one per open window or pane,
or (sessions, count windows) one key table in slot 0. Its entries are ``[tag, key words, ...]``,
and what follows the keys depends on the layout:

- tumbling and sliding windows (either window state), tumbling count windows: the aggregate
  states (``abi.EntryLayout``), a holistic aggregate's value vector ``{data, length,
  capacity}`` among them;
- session windows (``codegen/session_window.py``): the head of the key's list of session nodes,
  each node ``{next, start, end, aggregate states}`` (``layout.entry_words`` words);
- sliding count windows (``codegen/count_window.py``): a record counter, the key's ring of pane
  states (``(1 + capacity)`` panes of ``pane_words`` words) and its capacity, then the aggregates.

Each kernel class names its shape (``kernels.py``); its snapshot (``state_snapshot.py``), its
bytes (``state_memory.py``) and the interned ids it holds (``string_release.py``) are read
through it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..codegen.abi import EntryLayout
from ..codegen.module import GeneratedPipeline


@dataclass(frozen=True)
class TableShape:
    """Where a window kernel keeps what (see the module docstring): ``entry_words`` per table
    entry; aggregate states (``layout``) in the entry, or in session nodes that the entry's word
    ``head_word`` points to (a list linked by each node's word 0); a sliding count window's pane
    ring at entry word ``ring_word``, its capacity next."""

    layout: EntryLayout
    entry_words: int
    head_word: int | None = None
    ring_word: int | None = None
    pane_words: int = 0

    @staticmethod
    def of_windows(gen: GeneratedPipeline) -> TableShape:
        """Tables of aggregate states per window or pane (tumbling, sliding; the shared state)."""
        layout = EntryLayout.of(gen)
        return TableShape(layout, layout.entry_words)

    @staticmethod
    def of_sessions(gen: GeneratedPipeline) -> TableShape:
        """A key table of entries ``{tag, keys, head}``, the aggregates in the session nodes."""
        layout = EntryLayout.of(gen)
        return TableShape(layout, layout.key_words + 2, head_word=layout.key_words + 1)

    @staticmethod
    def of_key_table(gen: GeneratedPipeline) -> TableShape:
        """A key table of entries ``{tag, keys, record counter, aggregates}`` (a running
        aggregate's)."""
        layout = EntryLayout.of(gen)
        return TableShape(layout, layout.entry_words)

    @staticmethod
    def of_count_windows(gen: GeneratedPipeline) -> TableShape:
        """A key table; a sliding count window's entries ``{tag, keys, record counter, ring,
        capacity, aggregates}``."""
        layout = EntryLayout.of(gen)
        assigner = gen.pipeline.terminal.assigner
        if assigner.size == assigner.slide:
            return TableShape(layout, layout.entry_words)
        ring = layout.key_words + 2
        return TableShape(layout, layout.entry_words, ring_word=ring, pane_words=layout.entry_words - (ring + 2))

    @property
    def vector_words(self) -> list[int]:
        """Where each holistic aggregate's value vector starts in an aggregate state laid out as
        an entry (an entry's, a session node's)."""
        return [a.word for a in self.layout.aggregates if a.holistic]

    @property
    def string_words(self) -> list[int]:
        """Where an aggregate of strings keeps an interned id in its state words (the first:
        ``first``/``last``; a holistic one keeps them in its vector: ``string_vector_words``)."""
        return [a.word for a in self.layout.aggregates if a.interned and not a.holistic]

    @property
    def string_vector_words(self) -> list[int]:
        """The ``vector_words`` whose vectors hold interned ids."""
        return [a.word for a in self.layout.aggregates if a.interned and a.holistic]

    @property
    def interns_values(self) -> bool:
        """Whether aggregate states hold interned ids."""
        return any(a.interned for a in self.layout.aggregates)

    @property
    def entry_vector_words(self) -> list[int]:
        """``vector_words`` of the table entries (none where the aggregates sit in session nodes)."""
        return [] if self.head_word is not None else self.vector_words

    @property
    def pane_vector_words(self) -> list[int]:
        """Where the holistic aggregates' vectors sit in a pane state of a sliding count window's
        ring (pane states are laid out as the entry's aggregates, which start after the ring's
        two words)."""
        return [w - (self.ring_word + 2) for w in self.vector_words]


__all__ = ["TableShape"]
