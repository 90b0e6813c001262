"""What code generation produces for a pipeline: its separately compiled units (``CodeUnit``,
``CodeUnits``), the kernel a lowering rule describes (``KernelCode``), and ``GeneratedPipeline``:
the IR plus what the engine needs to call it (column descriptor slots, dictionary literals
resolved per batch, the output layout, the state layout's facts)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from ..physical.pipelines import Pipeline
from . import abi
from .expr_emitter import ColumnLayout
from .options import CodegenOptions

CODEGEN_VERSION = 19  # bump when generated code changes meaning (cache keys include it)


@dataclass
class KernelCode:
    """What a lowering rule produces for one kernel (see pipeline.ll.j2)."""

    name: str
    preamble: list[str]
    body: list[str]
    globals: str = ""
    error_blocks: list = field(default_factory=list)
    pre_body: list[str] = field(default_factory=list)
    keep: str = "true"
    blocked: bool = False
    masked: bool = False  # projections: per 64-row chunk a filter mask, the body for its set bits
    dense_body: list[str] = field(default_factory=list)  # masked: the body for every row of a dense chunk
    counted_filter: bool = False
    stop: bool = False  # the body may branch to %stop (see pipeline.ll.j2)
    fast: dict | None = None  # the branch-free dense pass (dense_pass.py), tried first per block
    epilogue: list[str] = field(default_factory=list)  # before the kernel returns (also at %stop)


@dataclass
class OutputColumn:
    """A computed output column of a projection: where the kernel writes it and its type."""

    name: str
    arrow_type: pa.DataType
    store_type: str   # i8 (bool), i32, i64, double


@dataclass(frozen=True)
class CodeUnit:
    """One separately compiled LLVM module of a pipeline."""

    name: str
    ir: str
    opt_level: int


class CodeUnits(Mapping):
    """A pipeline's units by name, in display order. A unit may be deferred: given as a function
    that renders it, called on first access (once, under a lock). A variant's general kernel
    (for batches with nulls) is deferred: rendering it took half of a variant's generation, on
    the critical path of every stage switch, for batches that most streams never have."""

    def __init__(self):
        self._units: dict[str, CodeUnit | None] = {}
        self._render: dict[str, Callable[[], CodeUnit]] = {}
        self._lock = threading.Lock()

    def add(self, unit: CodeUnit) -> None:
        self._units[unit.name] = unit

    def defer(self, name: str, render: Callable[[], CodeUnit]) -> None:
        self._units[name], self._render[name] = None, render

    def rendered(self, name: str) -> bool:
        return self._units.get(name) is not None

    def __getitem__(self, name: str) -> CodeUnit:
        unit = self._units[name]
        if unit is None:
            with self._lock:
                unit = self._units[name]
                if unit is None:  # (a render that raises stays due: the next access raises again)
                    unit = self._units[name] = self._render[name]()
                    del self._render[name]
        return unit

    def __contains__(self, name) -> bool:  # (Mapping's would render a deferred unit)
        return name in self._units

    def __iter__(self) -> Iterator[str]:
        return iter(self._units)

    def __len__(self) -> int:
        return len(self._units)


@dataclass
class GeneratedPipeline:
    """A pipeline's code: separately compiled units (each kernel at O3, compiled when a batch
    first needs it; a window's state and trigger functions at O1, they run once per window)."""

    pipeline: Pipeline
    options: CodegenOptions
    units: Mapping[str, CodeUnit]
    prefix: str
    columns: list[ColumnLayout]
    decode_columns: list[str]            # dictionary columns the engine decodes to plain strings
    dict_params: list[tuple[str, str]]   # (column, literal) resolved to dictionary codes per batch
    outputs: list[OutputColumn] = field(default_factory=list)   # projections: computed columns
    key_types: list[pa.DataType] = field(default_factory=list)  # windows: key output types
    # windows: (name, i64|double), or list:i64|list:double for a list of values (agg.top_k)
    aggregate_types: list[tuple[str, str]] = field(default_factory=list)
    trigger: str = ""  # windows: "tumbling" (emit per window) or "panes" (merge panes per window)
    # windows over panes: how a fired window's merged state carries over to the next (its state
    # unit's acc_* functions, engine/pane_accumulator.py): "invert" (sliding windows: the panes
    # leaving it are subtracted), "extend" (cumulative windows: panes only join), None (every
    # window merges its panes afresh)
    pane_reuse: str | None = None
    interned_columns: dict[str, str] = field(default_factory=dict)  # id column -> string column (a key, an aggregate argument)
    order_columns: dict[str, str] = field(default_factory=dict)  # order key column -> string column (engine/string_order.py)
    # carried id column -> string column: an aggregate argument only carried (engine/carried_strings.py)
    carried_columns: dict[str, str] = field(default_factory=dict)
    state_words: int = abi.STATE_WORDS
    grouping: object = None  # windows: the key table's entry layout (a ``lowering.Grouping``), read by grizzly_py.spark
    profile_base: int | None = None  # adaptive pipelines: first state word of the profile (profile.py)
    # windows with allowed lateness: the first of 3 state words holding the vector of late-key
    # notes (window_late_key.ll.j2), None for the others
    late_base: int | None = None
    kpa_row_words: int = 0  # sort grouping: words per key/pointer row (sort_grouping.py)
    kpa_string_words: tuple[int, ...] = ()  # sort grouping: the row words holding interned ids
    # the unit whose kernel has the dense pass: the engine calls its claim function after the
    # native calls of that kernel (dense_pass.py), None where no kernel has the pass
    claim_unit: str | None = None

    @property
    def ir(self) -> str:
        """All units, for display."""
        return "\n".join(f"; ==== unit {u.name} (O{u.opt_level})\n{u.ir}" for u in self.units.values())


KERNELS = (("process", False), ("process_nonnull", True))  # (function name, assume no nulls)

