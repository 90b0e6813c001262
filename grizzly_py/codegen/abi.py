"""The binary interface between generated kernels and the engine that calls them.

Both sides import these constants, so the layout of column descriptors, the state block and
the output descriptors is written down exactly once.

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
STATE_MIN_OPEN_END = 6   # smallest window end held in the state (INT64_MAX when empty)
STATE_ERROR_DETAIL = 7   # e.g. the index of the aggregate that overflowed
STATE_WINDOWS = 8        # %gz.dir header: slots, length, capacity (3 words)
STATE_UNCLAIMED = 11     # window pipelines: 1 while entries wait for their tags (codegen/dense_pass.py)
STATE_WORDS = 12

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
