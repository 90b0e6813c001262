"""The binary interface between generated kernels and the engine that calls them.

Both sides import these constants, so every binary layout they share is written down once, here:
column descriptors, call parameters, the state block and the output descriptors; the shared
window state's ring and the join state; and where keys and aggregate states sit in a window
table's entries (``EntryLayout``, which Spark's partial states read too).

Kernel signatures (``P`` is the pipeline's symbol prefix):
- ``i64 P_process(ptr state, ptr columns, i64 rows, ptr params, ptr out)``: runs the fused loop
  over one batch; returns the number of rows written to ``out`` (projections) or 0 (windows), or
  a negative error code (see ``ERROR_*``) with the failing row in ``state[STATE_ERROR_ROW]``.
- ``i64 P_count_ready(ptr state, i64 watermark)``: how many results the complete windows
  (end - 1 <= watermark) hold.
- ``i64 P_emit(ptr state, i64 watermark, ptr out)``: write those results to ``out``, drop the
  windows from the state; returns the count or a negative error code.
- ``void P_close(ptr state)``: free the window state.
The window directory (runtime/windows.ll) and its tables are created by the kernel's inserts.
"""

from __future__ import annotations

from dataclasses import dataclass


# --- column descriptor: COLUMN_SLOTS u64 words per input column -----------------------------
COLUMN_SLOTS = 6
SLOT_VALUES = 0     # values buffer (int/float/bits), string offsets, or dictionary indices
SLOT_VALIDITY = 1   # validity bitmap, or 0 when the column has no nulls
SLOT_OFFSET = 2     # the array's offset (in elements) into its buffers
SLOT_DATA = 3       # string data buffer
SLOT_DATA_LEN = 4   # string data buffer length in bytes (bounds checks)
SLOT_LENGTH = 5     # the array's length (for diagnostics; kernels get the row count)

# --- parameters: i64 words passed per call ---------------------------------------------------
PARAM_WATERMARK = 0      # watermark in force while the batch is processed
PARAM_PROCESSING_TIME = 1  # wall-clock ms at which the batch is processed (processing-time windows)
PARAM_ROW_POSITION = 2   # arrival position of the call's first row: (input batch number << 32) + its
                         # row in that batch; row i of the call arrived at this + i (ordered aggregates)
PARAM_FIRST_DICT_CODE = 3  # then one word per (dictionary column, string literal): its code or -1

# --- state block: i64 words, then the operator's own state -----------------------------------
STATE_ROWS_IN = 0
STATE_FILTERED = 1
STATE_LATE = 2
STATE_MAX_EVENT_TIME = 3
STATE_ERROR_CODE = 4
STATE_ERROR_ROW = 5
STATE_MIN_OPEN_END = 6   # a lower bound on the ends of the windows held but not fired (INT64_MAX when
                         # none); a kernel call lowers it to the end of every pane (tumbling
                         # window, session) it writes into
STATE_ERROR_DETAIL = 7   # e.g. the index of the aggregate that overflowed
STATE_WINDOWS = 8        # %gz.dir header: slots, length, capacity (3 words)
STATE_UNCLAIMED = 11     # window pipelines: the lowest window (pane) start whose entries wait for
                         # their tags, INT64_MAX when none (codegen/dense_pass.py)
STATE_WORDS = 12

# --- a sliding or cumulative window's pane accumulator (window_sliding_state.ll.j2, acc_*;
#     engine/pane_accumulator.py): a table header {entries, capacity, size}, then its live entries
ACC_LIVE = 3
ACC_WORDS = 4
ACC_NOT_HELD = 1  # acc_subtract: a pane entry the accumulator does not hold

# --- window kernels: a positive return value is not an error ---------------------------------
KERNEL_STOPPED = 1  # stopped early (a shared window state must grow): rows before state[STATE_ERROR_ROW]
                    # are done and counted; the engine grows the state and runs the rest again

# --- error codes (negative return values) -----------------------------------------------------
ERROR_OUT_OF_MEMORY = -1
ERROR_CORRUPT_STRING = -2
ERROR_SUM_OVERFLOW = -3
ERROR_TIME_RANGE = -4       # an event time so close to the int64 limits that its window overflows
ERROR_DICTIONARY_INDEX = -5  # a dictionary index outside its dictionary (SLOT_DATA_LEN: the dictionary's length)

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

# --- shared window state (window_state="shared": runtime/shared/concurrent_table.ll) -----------
# a ring of window slots: header words, then slots of RING_SLOT_WORDS words
RING_HEADER_WORDS = 8
RING_SLOTS, RING_OPEN, RING_OPEN_LIMIT, RING_TABLE_CAPACITY = 0, 1, 2, 3
RING_SLOT_WORDS = 8
(RING_SLOT_STATUS, RING_SLOT_START, RING_SLOT_ENTRIES, RING_SLOT_CAPACITY, RING_SLOT_SIZE, RING_SLOT_LIMIT,
 RING_SLOT_USERS, RING_SLOT_CLAIM) = range(8)
RING_SLOT_FREE, RING_SLOT_BUSY, RING_SLOT_OPEN = 0, 1, 2  # a slot's status

# --- join state (codegen/join.py, join_*.ll.j2) ------------------------------------------------
# the state both sides of a join share
J_MIN_OPEN_END = 0   # earliest window end held (interval: earliest expiry); INT64_MAX when none
J_DIR = 1            # window directory {slots, length, capacity} (tumbling, sliding)
J_TABLE = 4          # key table {entries, capacity, size} (session, interval)
J_OUT = 7            # interval: output vector of (left ref, right ref, event time)
J_MIN_REF = 10       # smallest ref still held, left then right (written by emit / expire)
J_LIVE = 12          # interval: records held after the last expire
J_WORDS = 16
# a side's own state block: the header above, then
J_SIDE_SHARED = STATE_WORDS        # address of the shared join state
J_SIDE_BASE = STATE_WORDS + 1      # ref of the batch's first row
J_SIDE_INSERTED = STATE_WORDS + 2  # records the last call inserted into the join state
J_SIDE_PAIRS_FILTERED = STATE_WORDS + 3  # pairs its probes built and the fused filter rejected
J_SIDE_WORDS = STATE_WORDS + 4
# a window directory slot of the join state
J_SLOT_WORDS = 8
J_SLOT_PAIRS = 4
J_SLOT_FIRST = 5
# a session node of a session join
J_NODE_MIN = 3
J_NODE_REFS = 5
J_NODE_WORDS = 11


# --- window table entries (GeneratedPipeline.grouping) -----------------------------------------
@dataclass(frozen=True)
class AggLayout:
    """Where one aggregate's state sits in an entry."""

    name: str
    func: str
    word: int      # first state word within the entry
    words: int     # state words (holistic: the vector's {data, length, capacity})
    holistic: bool = False
    shipped_values: int | None = None  # holistic: the values a partial state ships (None: all)
    interned: bool = False  # its argument is a string: its value word (else its vector) holds interned ids


@dataclass(frozen=True)
class EntryLayout:
    """Where keys and aggregate states sit in one hash-table entry of a window pipeline
    (``[tag, key words..., aggregate state words...]``: runtime/hashtable.ll, runtime/windows.ll);
    the engine's snapshots and Spark's partial states read entries through it."""

    key_words: int
    entry_words: int
    aggregates: tuple[AggLayout, ...]

    @staticmethod
    def of(gen) -> EntryLayout:
        """The layout of window pipeline ``gen``'s entries (a ``GeneratedPipeline``)."""
        g = gen.grouping
        if g is None:
            raise RuntimeError(f"pipeline {gen.pipeline.id}: no window grouping layout")
        aggs = []
        offsets = [a.off for a in g.aggregates] + [g.entry_size]
        for a, end in zip(g.aggregates, offsets[1:]):
            aggs.append(AggLayout(a.name, a.func, a.off // 8, (end - a.off) // 8, a.spec.holistic,
                                  a.spec.partial_values(a), a.kind == "str"))
        return EntryLayout(g.key_words, g.entry_size // 8, tuple(aggs))

    def columns(self) -> list[tuple[str, int | None]]:
        """The state columns of a partial state: (name, word index), or (name, None) for a value
        vector. A holistic aggregate's words after its vector's three (``_extreme_rows``: the
        running extreme and what was seen) ship as words too."""
        out = []
        for i, a in enumerate(self.aggregates):
            if a.holistic:
                out.append((f"__gz_a{i}_values", None))
                out.extend((f"__gz_a{i}_w{j}", a.word + j) for j in range(3, a.words))
            else:
                out.extend((f"__gz_a{i}_w{j}", a.word + j) for j in range(a.words))
        return out
