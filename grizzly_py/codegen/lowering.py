"""The public lowering API: what every lowering rule (``rules.py``) builds a pipeline's kernel from.

- reading the input: ``column_layouts`` (descriptor slots), ``columns_to_decode``;
- templates: ``template_lines`` (a template rendered as lines), ``macro_lines`` (an aggregate
  macro for each aggregate);
- filters: ``emit_filters`` (branching, combined or predicated);
- window keys and aggregates: ``key_word``, ``interned_column``, ``aggregate_input``,
  ``holistic_key``, ``lower_grouping`` (a ``Grouping``: key words, null mask, ``AggregateArgs``,
  the entry layout);
- time windows: ``window_geometry``, ``lower_time_and_filters``, ``lower_time_window_parts``,
  ``lower_lateness``.

A rule gets the pipeline, its ``CodegenOptions``, an ``EmitContext`` and ``ExprEmitter`` for the
kernel being emitted and the ``GeneratedPipeline`` it fills in, and returns its ``KernelCode`` and
the IR of its state unit (empty for a projection).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import pyarrow as pa

from ..aggregates import AggregateSpec
from .. import expressions as E
from ..expressions import Column, Expr, strip_alias, walk
from ..physical.pipelines import Pipeline, ProjectTerminal, WindowTerminal
from ..types import INT64
from ..window_geometry import PaneGeometry
from . import abi
from .expr_emitter import ColumnLayout, EmitContext, ExprEmitter, Value
from .generated import GeneratedPipeline
from .options import CodegenOptions
from .profile import MAX_PREDICATES, PROFILE_PREDICATES, PROFILE_ROWS_SCANNED
from .templates import environment, render

MAX_KEYS = 15  # key null flags live in bits 48..62 of the entry tag


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


def columns_to_decode(pipeline: Pipeline) -> set[str]:
    """Dictionary columns whose text generated code reads are decoded to plain strings: compared
    with anything but a string literal, given to a string function, or chosen by ``if_else``
    (a comparison with a literal compares codes instead)."""
    out = set()
    exprs = list(pipeline.filters)
    t = pipeline.terminal
    if isinstance(t, ProjectTerminal):
        exprs += [e for f, e in t.outputs if not isinstance(e, Column)]
    else:
        exprs += [e for _, e in t.keys] + [e for a in t.aggregates for e in (a.arg, a.where) if e is not None]
    for root in exprs:
        for e in walk(root):
            if isinstance(e, E.BinaryOp) and e.op in ("==", "!="):
                sides = [strip_alias(e.left), strip_alias(e.right)]
                if not any(isinstance(s, E.Literal) for s in sides):
                    out.update(s.name for s in sides if isinstance(s, Column))
            elif isinstance(e, E.Call):
                out.update(a.name for a in map(strip_alias, e.args) if isinstance(a, Column))
            elif isinstance(e, E.IfElse):
                out.update(a.name for a in map(strip_alias, (e.then, e.otherwise)) if isinstance(a, Column))
    return {name for name in out if pipeline.input_schema.field(name).is_dictionary}


# --- filters -------------------------------------------------------------------------------------
def emit_filters(pipeline: Pipeline, options: CodegenOptions, ctx: EmitContext, emitter: ExprEmitter,
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
        ctx.body.extend(template_lines("profile_filters.ll.j2", word=profile_base + PROFILE_ROWS_SCANNED, scanned=True, n=None))
    for n in order:
        f = pipeline.filters[n]
        v = emitter.emit(f)
        ctx.body.extend(template_lines("filter.ll.j2", name=f"{name}{n}", text=repr(f), value=v.val, valid=v.valid,
                               mode="branch" if branch_each else "predicated"))
        if profile_base is not None and n < MAX_PREDICATES:
            ctx.body.extend(template_lines("profile_filters.ll.j2", word=profile_base + PROFILE_PREDICATES + n, scanned=False, n=n))
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


def template_lines(template: str, **context) -> list[str]:
    return render(template, **context).rstrip("\n").split("\n")


def macro_lines(template: str, macro: str, aggregates: list) -> list[str]:
    """The non-blank lines of ``template``'s ``macro`` rendered for each aggregate in turn."""
    fn = getattr(environment().get_template(template).module, macro)
    return [line for a in aggregates for line in str(fn(a)).split("\n") if line.strip()]



def key_word(emitter: ExprEmitter, ctx: EmitContext, expr: Expr, dtype) -> Value:
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


def aggregate_input(emitter: ExprEmitter, arg: Expr, dtype) -> Value:
    """A decomposable aggregate's argument as its update macro reads it (bools as ints)."""
    v = emitter.emit_typed(arg, dtype)
    return emitter.convert(v, "int") if v.kind == "bool" else v


def holistic_key(ctx: EmitContext, emitter: ExprEmitter, v: Value) -> str:
    if v.kind == "float":
        key = ctx.fresh("hk")
        ctx.emit(f"{key} = call i64 @gz_f64_key(double {v.val})")
        return key
    return emitter.convert(v, "int").val


def interned_prefix(schema, stem: str = "id") -> str:
    """The prefix of the virtual id columns (``stem`` "id"; "order": order key columns) of a
    pipeline reading ``schema``: the first of ``__gz_key_id_``, ``__gz_key_id1_``, ... that
    begins no input column's name (any text can be a column's name), so that prefix + a column's
    name names one virtual column only."""
    n = 0
    while any(name.startswith(f"__gz_key_{stem}{n or ''}_") for name in schema.names):
        n += 1
    return f"__gz_key_{stem}{n or ''}_"


def interned_column(gen: GeneratedPipeline, ctx: EmitContext, expr: Expr, what: str) -> Column:
    """A virtual int64 input column holding the interned ids of the string column ``expr`` (a
    key or an aggregate's argument: ``what`` names it in errors)."""
    inner = strip_alias(expr)
    if not isinstance(inner, Column):
        raise NotImplementedError(f"{what}: a string key or aggregate argument must be a column, not {expr!r}")
    name = interned_prefix(gen.pipeline.input_schema) + inner.name
    _virtual_int64_column(gen, ctx, name)
    gen.interned_columns[name] = inner.name
    return Column(name)


def carried_column(gen: GeneratedPipeline, ctx: EmitContext, expr: Expr, what: str) -> Column:
    """A virtual int64 input column holding the carried ids of the string column ``expr``, an
    argument of an aggregate that only carries its strings (``AggregateSpec.carries_strings``,
    ``engine/carried_strings.py``)."""
    inner = strip_alias(expr)
    if not isinstance(inner, Column):
        raise NotImplementedError(f"{what}: a string aggregate argument must be a column, not {expr!r}")
    name = interned_prefix(gen.pipeline.input_schema, "carried") + inner.name
    _virtual_int64_column(gen, ctx, name)
    gen.carried_columns[name] = inner.name
    return Column(name)


def order_column(gen: GeneratedPipeline, ctx: EmitContext, column: Column) -> Column:
    """A virtual int64 input column holding the order keys of the string column ``column``
    (``engine/string_order.py``): an aggregate that orders strings by their interned ids."""
    name = interned_prefix(gen.pipeline.input_schema, "order") + column.name
    _virtual_int64_column(gen, ctx, name)
    gen.order_columns[name] = column.name
    return Column(name)


def _virtual_int64_column(gen: GeneratedPipeline, ctx: EmitContext, name: str) -> None:
    """Give the pipeline (once) and ``ctx`` the int64 input column ``name``, which the engine
    fills per batch (interned ids, order keys)."""
    if name not in ctx.columns:
        layout = next((c for c in gen.columns if c.name == name), None)
        if layout is None:
            layout = ColumnLayout(name, len(gen.columns) * abi.COLUMN_SLOTS, pa.int64())
            gen.columns.append(layout)
        ctx.columns[name] = layout


@dataclass(frozen=True)
class AggregateArgs:
    """One aggregate of a window pipeline as its macros read it (``aggregates.ll.j2``): its
    position ``idx`` (register names), output ``name``, function (``func``, ``spec``), the input
    ``kind`` ("int", "float" or None), the input's registers (``value``, ``valid``: whether the
    record counts, its ``where=`` included), its text for comments (``arg_text``), its state's
    byte offset ``off`` in the entry at ``grp``, its output slot, ``k`` (top_k), and
    ``counts_rows``: every record counts (``count()`` without ``where=``: no validity to read);
    for an ordered function (``AggregateSpec.ordered``), the record's event time ``ts`` and
    arrival position ``pos``; over an updating input (``AggregateSpec.retractable``), ``sign``."""

    idx: int | str
    name: str
    func: str
    spec: AggregateSpec
    kind: str | None
    value: str
    valid: str
    arg_text: str
    off: int
    out_slot: int
    k: int | None = None
    grp: str = "%grp"
    counts_rows: bool = False
    ts: str = "0"
    pos: str = "0"
    sign: str | None = None  # over an updating input: 1 for a row it adds, -1 for one it retracts
    prefix: str = "0"        # ``AggregateSpec.string_order``: the string's order key


@dataclass(frozen=True)
class Grouping:
    """The lowered key and aggregates of a window pipeline: key words (with the null mask
    carried in the hash), the aggregates' template arguments, and the entry layout."""

    keys: list[Value]
    null_mask: str
    key_words: int
    aggregates: list[AggregateArgs]
    entry_size: int
    updates: list[str]


def lower_grouping(t: WindowTerminal, pipeline: Pipeline, ctx: EmitContext, emitter: ExprEmitter,
                    gen: GeneratedPipeline, extra_words: int = 0, agg_base: int | None = None,
                    sign: str | None = None) -> Grouping:
    """Keys and aggregate inputs of ``t``; ``extra_words`` state words sit between the key and
    the aggregates (a count window's record counter). ``agg_base`` places the aggregates at that
    byte offset of a block of their own instead (a session node), ``entry_size`` is then the
    size of that block. ``sign``: the register that says whether the record adds (1) or
    retracts (-1) its input (a running aggregate over an updating stream)."""
    # key words, null mask and aggregate inputs; the window template then branches to %late_row
    # or finds the (window, key) entry and applies the aggregate updates
    if len(t.keys) > MAX_KEYS:
        raise NotImplementedError(f"at most {MAX_KEYS} key columns are supported, got {len(t.keys)}")
    keys = []
    for f, e in t.keys:
        if f.dtype.is_string:  # grouped by the id the engine interns the string to
            e = interned_column(gen, ctx, e, f"key {f.name!r}")
            keys.append(key_word(emitter, ctx, e, INT64))
            gen.key_types.append(f.arrow_type)
            continue
        if f.arrow_type is not None and pa.types.is_timestamp(f.arrow_type) and f.arrow_type.unit != "ms":
            raise NotImplementedError(f"key column {f.name!r}: timestamp keys must have millisecond unit")
        keys.append(key_word(emitter, ctx, e, f.dtype))
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
    # ordered aggregates read the record's event time (every window lowering names it %ts before
    # it lowers its grouping) and its arrival position
    ordered = any(a.spec.ordered for a in t.aggregates)
    ts = "%ts" if ordered and pipeline.event_time is not None else "0"
    pos = row_position(ctx) if ordered else "0"
    off = 8 * (1 + key_words + extra_words) if agg_base is None else agg_base
    aggs = []
    for n, a in enumerate(t.aggregates):
        spec = a.spec
        kind, value, valid, arg_text, prefix = None, "0", "true", "", "0"
        if a.arg is not None:
            arg_text = repr(a.arg)
            dtype = a.arg.dtype(pipeline.input_schema)
            if spec.reads == "validity":
                inner = strip_alias(a.arg)
                valid = emitter.validity(inner.name) if isinstance(inner, Column) else emitter.emit(a.arg).valid
            elif dtype.is_string:  # the interned or carried id (aggregates/spec.py: kind "str")
                ids = carried_column if spec.carries_strings else interned_column
                arg = ids(gen, ctx, a.arg, f"aggregate {a.field.name!r}")
                v = emitter.emit_typed(arg, INT64)
                kind, value, valid = "str", v.val, v.valid
                if spec.string_order:
                    order = order_column(gen, ctx, Column(gen.interned_columns[arg.name]))
                    prefix = emitter.emit_typed(order, INT64).val
            elif spec.reads == "key":  # the value as an order-preserving i64 key
                v = emitter.emit_typed(a.arg, dtype)
                kind = "float" if v.kind == "float" else "int"
                value, valid = holistic_key(ctx, emitter, v), v.valid
            else:
                v = aggregate_input(emitter, a.arg, dtype)
                kind = "float" if v.kind == "float" else "int"
                value, valid = v.val, v.valid
        if a.where is not None:  # the record counts where the condition is true (not null)
            arg_text += (", " if arg_text else "") + f"where={a.where!r}"
            valid = _and(ctx, valid, _true(ctx, emitter.emit(a.where)))
        aggs.append(AggregateArgs(idx=n, name=a.field.name, func=a.func, spec=spec, kind=kind, value=value,
                                  valid=valid, arg_text=arg_text, off=off, out_slot=1 + 2 * len(keys) + 2 * n, k=a.k,
                                  counts_rows=a.arg is None and a.where is None, sign=sign, prefix=prefix,
                                  **(dict(ts=ts, pos=pos) if spec.ordered else {})))
        store = spec.result_store(kind)
        gen.aggregate_types.append((a.field.name, f"list:{store}" if spec.list_result and kind != "str" else store))
        off += 8 * spec.state_words(kind)
    entry_size = off
    updates = macro_lines("aggregates.ll.j2", "update", aggs)
    gen.grouping = Grouping(keys, null_mask, key_words, aggs, entry_size, updates)
    return gen.grouping


def row_position(ctx: EmitContext) -> str:
    """The register of the current row's arrival position: the call's first row's
    (``abi.PARAM_ROW_POSITION``, set by the engine) plus the row's index."""
    base = ctx.param_word(abi.PARAM_ROW_POSITION, "rowpos")
    out = ctx.fresh("pos")
    ctx.emit(f"{out} = add i64 {base}, {ctx.row}")
    return out


def _true(ctx: EmitContext, v: Value) -> str:
    """An i1 that holds where the boolean ``v`` is true (false where it is null)."""
    if v.valid == "true":
        return v.val
    out = ctx.fresh("wt")
    ctx.emit(f"{out} = and i1 {v.valid}, {v.val}")
    return out


def _and(ctx: EmitContext, a: str, b: str) -> str:
    if a == "true":
        return b
    out = ctx.fresh("wv")
    ctx.emit(f"{out} = and i1 {a}, {b}")
    return out


def window_geometry(assigner) -> PaneGeometry:
    """Where the assigner's windows lie (``window_geometry.PaneGeometry``): records go to panes
    that overlapping windows share; a tumbling window is its own pane."""
    geometry = assigner.geometry
    if not geometry.cumulative and geometry.slide > geometry.size:
        raise NotImplementedError(f"{assigner!r}: a slide longer than the window (gaps between windows) "
                                  "is not compiled yet")
    return geometry


def lower_time_and_filters(pipeline: Pipeline, options: CodegenOptions, ctx: EmitContext,
                            emitter: ExprEmitter) -> tuple[bool, str, list[str]]:
    """Event time (tracked for the watermark over every row) and filters of a time-window
    pipeline. Predicated filters make a blocked kernel: this pass goes to ``pre_body`` (it
    fills the selection vector) and the body starts again over the selected rows (%r).
    Returns (blocked, keep flag, pre_body)."""
    blocked = options.filter_mode == "predicated" and bool(pipeline.filters)
    ts = emitter.emit(pipeline.event_time)
    ctx.body.extend(template_lines("event_time.ll.j2", name="ts.scan" if blocked else "ts", value=ts.val, track=True))
    keep = emit_filters(pipeline, options, ctx, emitter, predicated=blocked)
    pre_body = []
    if blocked:  # the rest runs in the second loop, over the selected rows (%r)
        pre_body, ctx.body, ctx.row = ctx.body, [], "%r"
        ctx.new_row()
        ts = emitter.emit(pipeline.event_time)
        ctx.body.extend(template_lines("event_time.ll.j2", name="ts", value=ts.val, track=False))
    return blocked, keep, pre_body


def lower_lateness(pipeline: Pipeline, ctx: EmitContext, gen: GeneratedPipeline) -> dict:
    """The template variables of a window's allowed lateness (``lateness``: ms, 0 for none;
    ``late_base``): with some, the state block gets the vector of late-key notes
    (``gen.late_base``, read by the engine) and the kernel the flag of the current pane
    (``window_assign.ll.j2``, ``window_late_key.ll.j2``)."""
    lateness = pipeline.terminal.allowed_lateness_ms
    if not lateness:
        return dict(lateness=0, late_base=None)
    gen.late_base, gen.state_words = gen.state_words, gen.state_words + 3
    ctx.preamble.append("  %wdirty.a = alloca i1, align 1  ; the current pane's first window has fired")
    ctx.preamble.append("  store i1 false, ptr %wdirty.a")
    return dict(lateness=lateness, late_base=gen.late_base)


class TimeWindowParts(NamedTuple):
    """What every lowering of a tumbling, sliding or cumulative window starts with: its geometry,
    the event-time and filter code (``lower_time_and_filters``) and the lowered keys and
    aggregates."""

    geometry: PaneGeometry
    blocked: bool
    keep: str
    pre_body: list[str]
    grouping: Grouping


def lower_time_window_parts(pipeline: Pipeline, options: CodegenOptions, ctx: EmitContext, emitter: ExprEmitter,
                            gen: GeneratedPipeline) -> TimeWindowParts:
    geometry = window_geometry(pipeline.terminal.assigner)
    if pipeline.event_time is None:
        raise NotImplementedError("an event-time window needs a source with a timestamp column "
                                  "(from_arrow(..., timestamp='ts'))")
    blocked, keep, pre_body = lower_time_and_filters(pipeline, options, ctx, emitter)
    return TimeWindowParts(geometry, blocked, keep, pre_body,
                           lower_grouping(pipeline.terminal, pipeline, ctx, emitter, gen))
