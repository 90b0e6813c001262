"""Generate the LLVM IR module of one physical pipeline.

The pipeline's operators are lowered in produce/consume order into one fused loop: event time,
filters, then the terminal operator (projection sink, or window assign/aggregate with its
trigger functions). Each terminal kind is a lowering rule in ``TERMINAL_RULES`` (keyed by the
terminal kind and, for windows, the assigner kind): adding an operator means adding a rule and
its templates. The output, ``GeneratedPipeline``, is plain data: the IR text plus what the
engine needs to call the kernel (which columns go in which descriptor slots, which dictionary
literals to resolve per batch, the output layout).
"""

from __future__ import annotations

import math
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import pyarrow as pa

from ..expressions import Column, Expr, strip_alias, walk
from .. import expressions as E
from ..physical.pipelines import Pipeline, ProjectTerminal, SourceInput, WindowTerminal
from ..plan import SourceNode
from ..sources import Source
from ..types import INT64
from . import abi
from .expr_emitter import ColumnLayout, EmitContext, ExprEmitter, Value
from .profile import MAX_PREDICATES, PROFILE_PREDICATES, PROFILE_ROWS_SCANNED, PROFILE_WORDS
from .templates import environment, render, runtime_declarations

CODEGEN_VERSION = 15  # bump when generated code changes meaning (cache keys include it)


@dataclass(frozen=True)
class CodegenOptions:
    """Choices that make code variants of the same pipeline.

    ``filter_mode``: "branch" leaves the row at the first failing predicate; "combined" evaluates
    all predicates and branches once; "predicated" never branches: projections write every row
    and advance the output by the keep flag, windows filter a block of rows into a selection
    vector first and aggregate the selected rows in a second loop ("blocked" kernel).

    ``window_state``: "thread_local" (each worker its own state block, merged when a window
    fires) or "shared" (one state that every worker updates with atomic instructions:
    ``shared_window.py``; event-time tumbling and sliding windows of count/sum/avg/min/max).

    ``variant`` (Grizzly section 6.1): "generic" assumes nothing; "instrumented" is generic plus
    profiling code (``profile.py``; all predicates are evaluated, so each one's selectivity is
    counted); "optimized" applies what a profile showed (``specialize.py``): ``filter_order``
    (most selective first) with the ``filter_mode`` that suits the selectivities, and
    ``dense_keys``: the entries of a single integer key in ``[lo, lo + capacity)`` sit at index
    ``key - lo`` (no hashing or probing; runtime/windows_placement.ll), guarded: a key outside
    the range, or a null key, stops the kernel at that row (``abi.KERNEL_STOPPED``) and the
    engine hands the rest of the batch to the generic variant (deoptimization).

    ``grouping``: "hash" (a hash table per window) or "sort" (key/pointer arrays sorted per batch
    and merged when the window fires: ``sort_grouping.py``; tumbling and sliding windows with
    thread-local state, others group by hash).
    """

    filter_mode: str = "predicated"
    variant: str = "generic"
    block_rows: int = 4096
    window_state: str = "thread_local"
    filter_order: tuple[int, ...] | None = None  # optimized: the order in which filters are evaluated
    dense_keys: tuple[int, int] | None = None    # optimized: (lo, capacity) dense placement of one int key
    dense_select: bool = False                   # optimized: the dense pass lists the kept rows first
                                                 # (selective filters: codegen/dense_pass.py)
    simd_select: bool = False                    # optimized: ... eight rows at a time with AVX-512's
                                                 # compress (hosts that have it: dense_pass.py)
    profile_sample: int = 4                      # instrumented: sample the keys of one row in this many
    grouping: str = "hash"

    def __post_init__(self):
        if self.filter_mode not in FILTER_MODES:
            raise ValueError(f"filter_mode must be one of {FILTER_MODES}, got {self.filter_mode!r}")
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {self.variant!r}")
        if self.profile_sample < 1 or self.profile_sample & (self.profile_sample - 1):
            raise ValueError(f"profile_sample must be a power of two, got {self.profile_sample}")
        if self.dense_keys is not None:
            lo, cap = self.dense_keys
            if cap < 1 or cap & (cap - 1) or lo + cap - 1 > abi.INT64_MAX:
                raise ValueError(f"dense_keys: capacity must be a power of two within int64, got {self.dense_keys}")
        if self.window_state not in WINDOW_STATES:
            raise ValueError(f"window_state must be one of {WINDOW_STATES}, got {self.window_state!r}")
        if self.grouping not in ("hash", "sort"):
            raise ValueError(f"grouping must be 'hash' or 'sort', got {self.grouping!r}")


FILTER_MODES = ("branch", "combined", "predicated")
WINDOW_STATES = ("thread_local", "shared")
VARIANTS = ("generic", "instrumented", "optimized")


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
    interned_keys: dict[str, str] = field(default_factory=dict)  # id column -> string key column
    state_words: int = abi.STATE_WORDS
    grouping: object = None  # windows: the key table's entry layout (a _Grouping), read by grizzly_py.spark
    profile_base: int | None = None  # adaptive pipelines: first state word of the profile (profile.py)
    kpa_row_words: int = 0  # sort grouping: words per key/pointer row (sort_grouping.py)
    # the unit whose kernel has the dense pass: the engine calls its claim function after the
    # native calls of that kernel (dense_pass.py), None where no kernel has the pass
    claim_unit: str | None = None

    @property
    def ir(self) -> str:
        """All units, for display."""
        return "\n".join(f"; ==== unit {u.name} (O{u.opt_level})\n{u.ir}" for u in self.units.values())


KERNELS = (("process", False), ("process_nonnull", True))  # (function name, assume no nulls)


def generate_pipeline(pipeline: Pipeline, options: CodegenOptions | None = None) -> GeneratedPipeline:
    """Render the module of ``pipeline``: its kernels (general and no-nulls) and, for windows,
    the state and trigger functions. A join pipeline has a kernel per input (``join.py``).
    The no-nulls kernel (what runs first) and the state unit are rendered now; the general
    kernel when it is first asked for (``CodeUnits``). Either way each unit's IR is the same.

    A pipeline generated before in this process, under the same options, is not rendered again
    (``_GENERATED``): a job that runs again (or a variant a job built before) takes the units
    already made, around its own pipeline."""
    key = _generated_key(pipeline, options)
    if key is None:
        return _render_pipeline(pipeline, options)
    with _GENERATED_LOCK:
        found = _GENERATED.get(key)
        if found is not None:
            _GENERATED.move_to_end(key)
    if found is None:
        # rendered from the pipeline without its source's data: what is kept (a deferred
        # unit's render, too) must not hold a table alive
        found = _render_pipeline(_without_data(pipeline), options)
        with _GENERATED_LOCK:
            _GENERATED[key] = found
            while len(_GENERATED) > GENERATED_LIMIT:
                _GENERATED.popitem(last=False)
    return replace(found, pipeline=pipeline)


# pipelines generated in this process, by what their code depends on (``_generated_key``):
# rendering a YSB variant costs ~1 ms of Python under the GIL, three variants a job
_GENERATED: "OrderedDict[bytes, GeneratedPipeline]" = OrderedDict()  # least recently used first
_GENERATED_LOCK = threading.Lock()
GENERATED_LIMIT = 64


def _generated_key(pipeline: Pipeline, options: CodegenOptions | None) -> bytes | None:
    """Everything a pipeline's code depends on, as bytes: the pipeline pickled without its
    source (only which input it reads: the source's columns are ``input_schema``), the options
    and the code generator's version. None where the pipeline does not pickle (a Python
    callable in an expression): it is rendered every time. Pickling records every field of
    every node, so two pipelines with one key are the same pipeline to the code generator."""
    detached = pipeline
    if isinstance(pipeline.input, SourceInput):
        detached = replace(pipeline, input=("source", pipeline.input.leaf))
    try:
        key = pickle.dumps((CODEGEN_VERSION, detached, options or CodegenOptions()), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # (anything unpicklable: no reuse)
        return None
    return key if len(key) <= GENERATED_KEY_LIMIT else None


GENERATED_KEY_LIMIT = 1 << 16  # bytes: a larger key would hold data, not a plan (no reuse then)


def _without_data(pipeline: Pipeline) -> Pipeline:
    """``pipeline`` reading a bare ``Source`` of its source's name, schema, event time and
    watermark (code generation reads the input's kind and the pipeline's own fields only)."""
    if not isinstance(pipeline.input, SourceInput):
        return pipeline
    src = pipeline.input.node.source
    bare = _BareSource(src.name, src.arrow_schema, src.timestamp, src.watermark)
    return replace(pipeline, input=replace(pipeline.input, node=SourceNode(bare)))


@dataclass(eq=False)
class _BareSource(Source):
    """A source's name, schema, event time and watermark, without data (``_without_data``)."""

    reads_lists = True  # (the source it stands for accepted its schema already: top_k lists too)


def _render_pipeline(pipeline: Pipeline, options: CodegenOptions | None = None) -> GeneratedPipeline:
    if pipeline.terminal.kind == "join":
        from .join import generate_join
        return generate_join(pipeline, options)
    options = options or CodegenOptions()
    if options.variant == "instrumented" and options.filter_mode != "predicated":
        options = replace(options, filter_mode="predicated")  # every predicate evaluated and counted
    prefix = f"p{pipeline.id}_{options.variant}"
    decode = _columns_to_decode(pipeline)
    layouts = column_layouts(pipeline, decode)
    rule = _rule_for(pipeline)
    header = f"; grizzly-py codegen v{CODEGEN_VERSION}, variant {options.variant}" \
        + (", shared window state" if options.window_state == "shared" else "") + "\n"
    units = CodeUnits()

    def render_kernel(name: str, assume_valid: bool) -> tuple[GeneratedPipeline, CodeUnit, str, KernelCode]:
        """One kernel (a fresh GeneratedPipeline takes what the rule records), and the state unit."""
        gen = GeneratedPipeline(pipeline, options, units, prefix, layouts, sorted(decode), [])
        if adaptable(pipeline, options):  # every variant's state block has room for a profile
            gen.profile_base, gen.state_words = gen.state_words, gen.state_words + PROFILE_WORDS
        ctx = EmitContext(f"{prefix}.{name}", {c.name: c for c in layouts}, assume_valid=assume_valid,
                          profile_base=gen.profile_base if options.variant == "instrumented" else None)
        code, state = rule(pipeline, options, ctx, ExprEmitter(ctx, pipeline.input_schema), gen)
        code.name, code.globals = name, "\n".join(ctx.globals)
        code.preamble, code.error_blocks = ctx.preamble, ctx.error_blocks
        kernel = render("pipeline.ll.j2", abi=abi, id=pipeline.id, title=_title(pipeline), p=prefix,
                        kernels=[code], block=options.block_rows)
        gen.dict_params = list(ctx.dict_params)  # the same in every kernel: same expressions, same order
        return gen, CodeUnit(name, header + kernel + "\n" + runtime_declarations(), 3), state, code

    (general, _), (nonnull, _) = KERNELS
    units.defer(general, lambda: render_kernel(general, False)[1])
    gen, unit, state, code = render_kernel(nonnull, True)
    if state:  # the same for every kernel
        units.add(CodeUnit("state", header + state + "\n" + runtime_declarations(), 1))
    units.add(unit)
    gen.claim_unit = nonnull if code.fast is not None else None  # (only that kernel has the pass)
    return gen


def adaptable(pipeline: Pipeline, options: CodegenOptions | None = None) -> bool:
    """Whether ``pipeline`` has code variants beyond the generic one (Grizzly section 6): a
    projection with filters (their order and mode), or an event-time or processing-time
    tumbling/sliding window with thread-local state (also the key placement). Sessions, count
    windows and joins keep the generic variant; so do shared window states (one state that every
    worker updates in place cannot move between placements while tasks run) and sort grouping
    (its key/pointer arrays have no specialized variants)."""
    t = pipeline.terminal
    if isinstance(t, ProjectTerminal):
        return bool(pipeline.filters)
    if not isinstance(t, WindowTerminal) or t.assigner.kind not in TIME_WINDOW_KINDS:
        return False
    return options is None or (options.window_state == "thread_local" and options.grouping == "hash")


TIME_WINDOW_KINDS = ("tumbling", "sliding", "tumbling_processing", "sliding_processing")


def _title(p: Pipeline) -> str:
    """A description that depends only on the pipeline's structure (the IR is cached by hash)."""
    return f"{p.terminal.kind} pipeline over {p.input_schema}"


def column_layouts(pipeline: Pipeline, decode: set[str]) -> list[ColumnLayout]:
    """The column descriptor slots of the kernels of ``pipeline``: its used input columns in
    order, the ``decode`` dictionary columns read as plain strings."""
    layouts = []
    for slot, name in enumerate(pipeline.used_columns()):
        t = pipeline.input_schema.field(name).arrow_type
        if name in decode:
            t = pa.large_string() if pa.types.is_large_string(t.value_type) else pa.string()
        layouts.append(ColumnLayout(name, slot * abi.COLUMN_SLOTS, t))
    return layouts


def _columns_to_decode(pipeline: Pipeline) -> set[str]:
    """Dictionary columns compared with other string columns are decoded to plain strings."""
    out = set()
    exprs = list(pipeline.filters)
    t = pipeline.terminal
    if isinstance(t, ProjectTerminal):
        exprs += [e for _, e in t.outputs]
    else:
        exprs += [e for _, e in t.keys] + [a.arg for a in t.aggregates if a.arg is not None]
    for root in exprs:
        for e in walk(root):
            if isinstance(e, E.BinaryOp) and e.op in ("==", "!="):
                sides = [strip_alias(e.left), strip_alias(e.right)]
                if all(isinstance(s, Column) for s in sides):
                    for s in sides:
                        f = pipeline.input_schema.field(s.name)
                        if f.is_dictionary:
                            out.add(s.name)
    return out


# --- filters -------------------------------------------------------------------------------------
def _emit_filters(pipeline: Pipeline, options: CodegenOptions, ctx: EmitContext, emitter: ExprEmitter,
                  predicated: bool, name: str = "filter") -> str:
    """Emit the pipeline's filters. Predicated: return the keep flag (no branch). Otherwise
    branch to %filtered, per predicate ("branch") or once for all of them ("combined").
    ``name`` prefixes the predicates' registers (a kernel may evaluate them in two loops)."""
    if not pipeline.filters:
        return "true"
    branch_each = options.filter_mode == "branch" and not predicated
    keep = "true"
    order = options.filter_order or range(len(pipeline.filters))
    profile_base = ctx.profile_base  # the instrumented variant counts every predicate's passes
    if profile_base is not None:
        ctx.body.extend(_lines("profile_filters.ll.j2", word=profile_base + PROFILE_ROWS_SCANNED, scanned=True, n=None))
    for n in order:
        f = pipeline.filters[n]
        v = emitter.emit(f)
        ctx.body.extend(_lines("filter.ll.j2", name=f"{name}{n}", text=repr(f), value=v.val, valid=v.valid,
                               mode="branch" if branch_each else "predicated"))
        if profile_base is not None and n < MAX_PREDICATES:
            ctx.body.extend(_lines("profile_filters.ll.j2", word=profile_base + PROFILE_PREDICATES + n, scanned=False, n=n))
        if branch_each:
            continue
        if keep == "true":
            keep = f"%{name}{n}"
        else:
            nk = ctx.fresh("keep")
            ctx.emit(f"{nk} = and i1 {keep}, %{name}{n}")
            keep = nk
    if predicated or branch_each:
        return keep
    ctx.emit(f"br i1 {keep}, label %filters.pass, label %filtered")
    ctx.body.append("filters.pass:")
    return "true"


def _lines(template: str, **context) -> list[str]:
    return render(template, **context).rstrip("\n").split("\n")


def macro_lines(template: str, macro: str, aggregates: list) -> list[str]:
    """The non-blank lines of ``template``'s ``macro`` rendered for each aggregate in turn."""
    fn = getattr(environment().get_template(template).module, macro)
    return [line for a in aggregates for line in str(fn(a)).split("\n") if line.strip()]


# --- projection ----------------------------------------------------------------------------------
_STORE = {"int32": ("i32", "trunc", "i64"), "int64": ("i64", "", "i64"), "timestamp": ("i64", "", "i64"),
          "float64": ("double", "", "double"), "bool": ("i8", "zext", "i1")}


def _lower_project(pipeline: Pipeline, options: CodegenOptions, ctx: EmitContext, emitter: ExprEmitter,
                   gen: GeneratedPipeline) -> tuple[KernelCode, str]:
    t: ProjectTerminal = pipeline.terminal
    predicated = options.filter_mode == "predicated"
    keep = _emit_filters(pipeline, options, ctx, emitter, predicated)
    outputs = []
    for f, e in t.outputs:
        if isinstance(e, Column):
            continue  # pass-through columns are gathered by the engine with the selection vector
        if f.dtype.is_string:
            raise NotImplementedError(f"output column {f.name!r}: computed string columns are not supported")
        v: Value = emitter.emit_typed(e, f.dtype)
        store_type, convert, reg_type = _STORE[f.dtype.name]
        outputs.append(dict(value=v.val, valid=v.valid, store_type=store_type, convert=convert, reg_type=reg_type))
        gen.outputs.append(OutputColumn(f.name, f.arrow_type, store_type))
    ctx.preamble.extend(_lines("project_preamble.ll.j2", outputs=outputs))
    ctx.body.extend(_lines("project.ll.j2", p="prj", outputs=outputs, keep=None if keep == "true" else keep))
    code = KernelCode("", [], ctx.body, counted_filter=predicated and bool(pipeline.filters))
    return code, ""


# --- windows -------------------------------------------------------------------------------------
def _key_word(emitter: ExprEmitter, ctx: EmitContext, expr: Expr, dtype) -> Value:
    """A key as one i64 word: ints as is, bools zero-extended, floats normalized (-0.0 -> 0.0,
    every NaN the same) and bit-cast; a null key's word is 0 (its null-mask bit tells)."""
    v = emitter.emit_typed(expr, dtype)
    word = v.val
    if v.kind == "bool":
        word = ctx.fresh("kw")
        ctx.emit(f"{word} = zext i1 {v.val} to i64")
    elif v.kind == "float":
        z, nz, nan, bits, w = (ctx.fresh("kw") for _ in range(5))
        ctx.emit(f"{z} = fcmp oeq double {v.val}, 0.0")
        ctx.emit(f"{nz} = select i1 {z}, double 0.0, double {v.val}")
        ctx.emit(f"{nan} = fcmp uno double {v.val}, 0.0")
        ctx.emit(f"{bits} = bitcast double {nz} to i64")
        ctx.emit(f"{w} = select i1 {nan}, i64 9221120237041090560, i64 {bits}")
        word = w
    if v.valid != "true":
        w = ctx.fresh("kw")
        ctx.emit(f"{w} = select i1 {v.valid}, i64 {word}, i64 0")
        word = w
    return Value("int", word, v.valid)


def _aggregate_input(emitter: ExprEmitter, arg: Expr, dtype) -> Value:
    """A decomposable aggregate's argument as its update macro reads it (bools as ints)."""
    v = emitter.emit_typed(arg, dtype)
    return emitter.convert(v, "int") if v.kind == "bool" else v


def _holistic_key(ctx: EmitContext, emitter: ExprEmitter, v: Value) -> str:
    if v.kind == "float":
        key = ctx.fresh("hk")
        ctx.emit(f"{key} = call i64 @gz_f64_key(double {v.val})")
        return key
    return emitter.convert(v, "int").val


def _interned_key_column(gen: GeneratedPipeline, ctx: EmitContext, expr: Expr, key: str) -> Column:
    """A virtual int64 input column holding the interned ids of the string key column ``expr``."""
    inner = strip_alias(expr)
    if not isinstance(inner, Column):
        raise NotImplementedError(f"key {key!r}: a string key must be a column, not {expr!r}")
    name = f"__gz_key_id_{inner.name}"
    if name not in ctx.columns:
        layout = next((c for c in gen.columns if c.name == name), None)
        if layout is None:
            layout = ColumnLayout(name, len(gen.columns) * abi.COLUMN_SLOTS, pa.int64())
            gen.columns.append(layout)
        ctx.columns[name] = layout
    gen.interned_keys[name] = inner.name
    return Column(name)


@dataclass
class _Grouping:
    """The lowered key and aggregates of a window pipeline: key words (with the null mask
    carried in the hash), the aggregates' template arguments, and the entry layout."""

    keys: list
    null_mask: str
    key_words: int
    aggregates: list
    entry_size: int
    updates: list


def _lower_grouping(t: WindowTerminal, pipeline: Pipeline, ctx: EmitContext, emitter: ExprEmitter,
                    gen: GeneratedPipeline, extra_words: int = 0, agg_base: int | None = None) -> _Grouping:
    """Keys and aggregate inputs of ``t``; ``extra_words`` state words sit between the key and
    the aggregates (a count window's record counter). ``agg_base`` places the aggregates at that
    byte offset of a block of their own instead (a session node), ``entry_size`` is then the
    size of that block."""
    # key words, null mask and aggregate inputs; the window template then branches to %late_row
    # or finds the (window, key) entry and applies the aggregate updates
    if len(t.keys) > MAX_KEYS:
        raise NotImplementedError(f"at most {MAX_KEYS} key columns are supported, got {len(t.keys)}")
    keys = []
    for f, e in t.keys:
        if f.dtype.is_string:  # grouped by the id the engine interns the string to
            e = _interned_key_column(gen, ctx, e, f.name)
            keys.append(_key_word(emitter, ctx, e, INT64))
            gen.key_types.append(f.arrow_type)
            continue
        if f.arrow_type is not None and pa.types.is_timestamp(f.arrow_type) and f.arrow_type.unit != "ms":
            raise NotImplementedError(f"key column {f.name!r}: timestamp keys must have millisecond unit")
        keys.append(_key_word(emitter, ctx, e, f.dtype))
        gen.key_types.append(f.arrow_type)
    null_mask = "0"
    for n, k in enumerate(keys):
        if k.valid == "true":
            continue
        inv, z, sh, acc = (ctx.fresh("nm") for _ in range(4))
        ctx.emit(f"{inv} = xor i1 {k.valid}, true")
        ctx.emit(f"{z} = zext i1 {inv} to i64")
        ctx.emit(f"{sh} = shl i64 {z}, {n}")
        ctx.emit(f"{acc} = or i64 {null_mask}, {sh}")
        null_mask = acc
    key_words = len(keys)
    off = 8 * (1 + key_words + extra_words) if agg_base is None else agg_base
    aggs = []
    for n, a in enumerate(t.aggregates):
        spec = a.spec
        kind, value, valid, arg_text = None, "0", "true", ""
        if a.arg is not None:
            arg_text = repr(a.arg)
            dtype = a.arg.dtype(pipeline.input_schema)
            if spec.reads == "validity":
                inner = strip_alias(a.arg)
                valid = emitter.validity(inner.name) if isinstance(inner, Column) else emitter.emit(a.arg).valid
            elif spec.reads == "key":  # the value as an order-preserving i64 key
                if dtype.is_string:
                    raise NotImplementedError(f"aggregate {a.field.name}={a.func}(...) of strings is not compiled yet")
                v = emitter.emit_typed(a.arg, dtype)
                kind = "float" if v.kind == "float" else "int"
                value, valid = _holistic_key(ctx, emitter, v), v.valid
            else:
                v = _aggregate_input(emitter, a.arg, dtype)
                kind = "float" if v.kind == "float" else "int"
                value, valid = v.val, v.valid
        aggs.append(_Obj(idx=n, name=a.field.name, func=a.func, spec=spec, kind=kind, value=value, valid=valid,
                         arg_text=arg_text, off=off, out_slot=1 + 2 * len(keys) + 2 * n, k=a.k))
        store = spec.result_store(kind)
        gen.aggregate_types.append((a.field.name, f"list:{store}" if spec.list_result else store))
        off += 8 * spec.state_words(kind)
    entry_size = off
    updates = macro_lines("aggregates.ll.j2", "update", aggs)
    gen.grouping = _Grouping(keys, null_mask, key_words, aggs, entry_size, updates)
    return gen.grouping


def window_geometry(assigner) -> tuple[int, int, int]:
    """(size, slide, pane) in ms: records go to panes of gcd(size, slide) that overlapping
    sliding windows share; a tumbling window is its own pane."""
    size = assigner.size_ms
    slide = getattr(assigner, "slide_ms", size)
    if slide > size:
        raise NotImplementedError(f"{assigner!r}: a slide longer than the window (gaps between windows) "
                                  "is not compiled yet")
    return size, slide, math.gcd(size, slide)


def _lower_time_and_filters(pipeline: Pipeline, options: CodegenOptions, ctx: EmitContext,
                            emitter: ExprEmitter) -> tuple[bool, str, list[str]]:
    """Event time (tracked for the watermark over every row) and filters of a time-window
    pipeline. Predicated filters make a blocked kernel: this pass goes to ``pre_body`` (it
    fills the selection vector) and the body starts again over the selected rows (%r).
    Returns (blocked, keep flag, pre_body)."""
    blocked = options.filter_mode == "predicated" and bool(pipeline.filters)
    ts = emitter.emit(pipeline.event_time)
    ctx.body.extend(_lines("event_time.ll.j2", name="ts.scan" if blocked else "ts", value=ts.val, track=True))
    keep = _emit_filters(pipeline, options, ctx, emitter, predicated=blocked)
    pre_body = []
    if blocked:  # the rest runs in the second loop, over the selected rows (%r)
        pre_body, ctx.body, ctx.row = ctx.body, [], "%r"
        ctx.new_row()
        ts = emitter.emit(pipeline.event_time)
        ctx.body.extend(_lines("event_time.ll.j2", name="ts", value=ts.val, track=False))
    return blocked, keep, pre_body


class TimeWindowParts(NamedTuple):
    """What every lowering of a tumbling or sliding window starts with: its geometry (ms), the
    event-time and filter code (``_lower_time_and_filters``) and the lowered keys and aggregates."""

    size: int
    slide: int
    pane: int
    blocked: bool
    keep: str
    pre_body: list[str]
    grouping: _Grouping


def lower_time_window_parts(pipeline: Pipeline, options: CodegenOptions, ctx: EmitContext, emitter: ExprEmitter,
                            gen: GeneratedPipeline) -> TimeWindowParts:
    size, slide, pane = window_geometry(pipeline.terminal.assigner)
    if pipeline.event_time is None:
        raise NotImplementedError("an event-time window needs a source with a timestamp column "
                                  "(from_arrow(..., timestamp='ts'))")
    blocked, keep, pre_body = _lower_time_and_filters(pipeline, options, ctx, emitter)
    return TimeWindowParts(size, slide, pane, blocked, keep, pre_body,
                           _lower_grouping(pipeline.terminal, pipeline, ctx, emitter, gen))


def _lower_time_window(pipeline: Pipeline, options: CodegenOptions, ctx: EmitContext, emitter: ExprEmitter,
                       gen: GeneratedPipeline) -> tuple[KernelCode, str]:
    """Tumbling and sliding event-time windows (sliding ones through shared panes)."""
    t: WindowTerminal = pipeline.terminal
    size, slide, pane, blocked, keep, pre_body, g = lower_time_window_parts(pipeline, options, ctx, emitter, gen)
    keys, null_mask, key_words, aggs, entry_size = g.keys, g.null_mask, g.key_words, g.aggregates, g.entry_size
    updates = g.updates
    ctx.preamble.extend(_lines("window_preamble.ll.j2", abi=abi, key_words=key_words))
    if ctx.profile_base is not None:
        ctx.body.extend(_profile_keys(ctx, options, g))
    dense = None
    if options.dense_keys is not None:
        if len(keys) != 1:
            raise ValueError(f"pipeline {pipeline.id}: dense key placement needs exactly one key, got {len(keys)}")
        dense = dict(lo=options.dense_keys[0], cap=options.dense_keys[1], valid=keys[0].valid)
    ctx.body.extend(_lines("window_tumbling.ll.j2", size=size, slide=slide, pane=pane,
                           keys=[dict(name=f.name, word=k.val) for (f, _), k in zip(t.keys, keys)],
                           null_mask=null_mask, key_words=key_words, entry_size=entry_size, updates=updates,
                           dense=dense))
    ctx.error_blocks.append(("err_oom", abi.ERROR_OUT_OF_MEMORY, ctx.row))
    ctx.error_blocks.append(("err_time", abi.ERROR_TIME_RANGE, ctx.row))
    fast = None
    if dense is not None and blocked:
        from .dense_pass import dense_pass
        fast = dense_pass(pipeline, options, ctx, emitter, g, dense, pane)
    gen.trigger = "tumbling" if pane == size else "panes"
    state = render("window_state.ll.j2" if pane == size else "window_sliding_state.ll.j2", abi=abi,
                   p=gen.prefix, entry_size=entry_size, window_size=size, slide=slide, keys=keys,
                   key_words=key_words, aggregates=aggs,
                   vectors=[a for a in aggs if a.spec.holistic])
    return KernelCode("", [], ctx.body, pre_body=pre_body, keep=keep, blocked=blocked,
                      stop=dense is not None, fast=fast), state


def _profile_keys(ctx: EmitContext, options: CodegenOptions, g: _Grouping) -> list[str]:
    """The instrumented variant's key sampling (profile_keys.ll.j2) for the row in ``ctx.row``."""
    from . import profile as pf
    base = ctx.profile_base
    words = _Obj(sampled=base + pf.PROFILE_ROWS_SAMPLED, nulls=base + pf.PROFILE_NULL_KEYS,
                 min=base + pf.PROFILE_KEY_MIN, max=base + pf.PROFILE_KEY_MAX, hll=base + pf.PROFILE_HLL,
                 sketch=base + pf.PROFILE_SKETCH)
    keys = [k.val for k in g.keys] or ["0"]
    return _lines("profile_keys.ll.j2", row=ctx.row, sample=options.profile_sample, w=words, keys=keys,
                  null_mask=g.null_mask, hll_bits=pf.HLL_REGISTERS.bit_length() - 1,
                  sketch_bits=pf.SKETCH_SLOTS.bit_length() - 1)


def _lower_count_window(pipeline: Pipeline, options: CodegenOptions, ctx: EmitContext, emitter: ExprEmitter,
                        gen: GeneratedPipeline) -> tuple[KernelCode, str]:
    """Keyed count windows, tumbling and sliding: see ``count_window.py``."""
    from .count_window import lower_count_window  # it builds on the helpers of this module
    return lower_count_window(pipeline, options, ctx, emitter, gen)


MAX_KEYS = 15  # key null flags live in bits 48..62 of the entry tag


class _Obj(dict):
    """Attribute access for template arguments."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


TERMINAL_RULES = {
    ("project", None): _lower_project,
    ("window", "tumbling"): _lower_time_window,
    ("window", "sliding"): _lower_time_window,
    ("window", "tumbling_processing"): _lower_time_window,
    ("window", "sliding_processing"): _lower_time_window,
    ("window", "count"): _lower_count_window,
}


def _rule_for(pipeline: Pipeline):
    t = pipeline.terminal
    key = ("project", None) if isinstance(t, ProjectTerminal) else ("window", t.assigner.kind)
    rule = TERMINAL_RULES.get(key)
    if rule is None:
        what = repr(t.assigner) if isinstance(t, WindowTerminal) else t.kind
        raise NotImplementedError(f"the compiled engine has no lowering for {what} yet")
    return rule


# Rules in modules of their own build on the helpers above, so they register last.
from .session_window import lower_session_window  # noqa: E402
from .shared_window import lower_time_window  # noqa: E402

TERMINAL_RULES[("window", "session")] = lower_session_window
TERMINAL_RULES[("window", "tumbling")] = lower_time_window  # thread-local or shared state
TERMINAL_RULES[("window", "sliding")] = lower_time_window
from .sort_grouping import SORT_WINDOW_KINDS, with_sort_grouping  # noqa: E402

TERMINAL_RULES.update({("window", k): with_sort_grouping(TERMINAL_RULES[("window", k)]) for k in SORT_WINDOW_KINDS})
