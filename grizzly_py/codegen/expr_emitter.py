"""Lower expression trees to LLVM IR instructions, one row at a time.

Every expression becomes a pair of SSA values: the value (``i64`` for all integers and
timestamps, ``double``, ``i1``) and its validity (``i1``). The code is branch-free (``select``
instead of control flow), so expressions can be placed anywhere in the fused loop; the only
branches are bounds-check failures, which leave the kernel with an error code.

Column loads are emitted once per row and reused. Per-batch facts (buffer pointers, offsets,
whether a validity bitmap exists) are loaded once in the kernel's entry block (the preamble).
Semantics are those of ``grizzly_py.expressions`` (and of the reference evaluator).
"""

from __future__ import annotations

import pyarrow as pa

from .. import expressions as E
from ..types import DataType, Schema, type_named
from . import abi
from .emit_context import ColumnLayout, EmitContext, Value, ir_double
from .functions import emit_call


# the icmp predicate of each comparison of (signed) integers
INT_PREDICATES = {"==": "eq", "!=": "ne", "<": "slt", "<=": "sle", ">": "sgt", ">=": "sge"}


# ----------------------------------------------------------------------------------------------
class ExprEmitter:
    """Emits IR for expressions over the columns described in an ``EmitContext``."""

    def __init__(self, ctx: EmitContext, schema: Schema):
        self.ctx, self.schema = ctx, schema

    @property
    def row(self) -> str:
        return self.ctx.row

    # --- columns --------------------------------------------------------------------------
    def _prepare(self, name: str) -> ColumnLayout:
        ctx = self.ctx
        lay = ctx.columns[name]
        if name in ctx._prepared:
            return lay
        ctx._prepared.add(name)
        c, b, p = f"%c{lay.slot_base // abi.COLUMN_SLOTS}", lay.slot_base, ctx.preamble

        def slot(i, dst, ty):
            p.append(f"  {dst}.p = getelementptr inbounds i64, ptr %columns, i64 {b + i}")
            p.append(f"  {dst} = load {ty}, ptr {dst}.p")
        slot(abi.SLOT_VALUES, f"{c}.vals", "ptr")
        if not ctx.assume_valid:
            slot(abi.SLOT_VALIDITY, f"{c}.vraw", "ptr")
            p.append(f"  {c}.hasv = icmp ne ptr {c}.vraw, null")
            p.append(f"  {c}.valid = select i1 {c}.hasv, ptr {c}.vraw, ptr @gz_all_valid")
            p.append(f"  {c}.vmask = select i1 {c}.hasv, i64 -1, i64 0")
        slot(abi.SLOT_OFFSET, f"{c}.off", "i64")
        if _is_plain_string(lay.arrow_type):
            slot(abi.SLOT_DATA, f"{c}.data", "ptr")
            slot(abi.SLOT_DATA_LEN, f"{c}.dlen", "i64")
        elif pa.types.is_dictionary(lay.arrow_type):
            slot(abi.SLOT_DATA_LEN, f"{c}.dlen", "i64")  # the dictionary's length
        return lay

    def column_registers(self, name: str) -> str:
        """The prefix of column ``name``'s registers loaded in the kernel's entry block
        (``{prefix}.vals``, ``.off``, and ``.dlen`` for a dictionary), for code that reads the
        column's values itself (the dense pass's vector selection)."""
        lay = self._prepare(name)
        return f"%c{lay.slot_base // abi.COLUMN_SLOTS}"

    def validity(self, name: str) -> str:
        key = ("valid", name)
        if key in self.ctx._loaded:  # (also a value given, not read: a join's held record's)
            return self.ctx._loaded[key]
        if self.ctx.assume_valid:
            self._prepare(name)
            return "true"
        if key not in self.ctx._loaded:
            lay = self._prepare(name)
            c = f"%c{lay.slot_base // abi.COLUMN_SLOTS}"
            ci, vi, v = self.ctx.fresh("ci"), self.ctx.fresh("vi"), self.ctx.fresh("valid")
            self.ctx.emit(f"{ci} = add i64 {self.row}, {c}.off")
            self.ctx.emit(f"{vi} = and i64 {ci}, {c}.vmask")
            self.ctx.emit(f"{v} = call i1 @gz_bit(ptr {c}.valid, i64 {vi})")
            self.ctx._loaded[key] = v
        return self.ctx._loaded[key]

    def column(self, name: str) -> Value:
        key = ("value", name)
        if key in self.ctx._loaded:
            return self.ctx._loaded[key]
        lay = self._prepare(name)
        valid = self.validity(name)
        ctx, t = self.ctx, lay.arrow_type
        c = f"%c{lay.slot_base // abi.COLUMN_SLOTS}"
        ci = ctx.fresh("ci")
        ctx.emit(f"{ci} = add i64 {self.row}, {c}.off")
        if pa.types.is_boolean(t):
            v = ctx.fresh("b")
            ctx.emit(f"{v} = call i1 @gz_bit(ptr {c}.vals, i64 {ci})")
            out = Value("bool", v, valid)
        elif pa.types.is_dictionary(t):
            code = self._load_int(f"{c}.vals", ci, t.index_type)
            outside, bad = ctx.fresh("dx"), ctx.fresh("dbad")  # (a negative index reads as a huge one)
            ctx.emit(f"{outside} = icmp uge i64 {code}, {c}.dlen")
            ctx.emit(f"{bad} = and i1 {valid}, {outside}")  # the index under a null is garbage
            ctx.error_branch(bad, abi.ERROR_DICTIONARY_INDEX)
            out = Value("dict", code, valid, column=name)
        elif _is_plain_string(t):
            out = self._load_string(c, ci, t, valid)
        elif pa.types.is_floating(t):
            ptr, v = ctx.fresh("p"), ctx.fresh("f")
            width = "double" if pa.types.is_float64(t) else "float"
            ctx.emit(f"{ptr} = getelementptr inbounds {width}, ptr {c}.vals, i64 {ci}")
            ctx.emit(f"{v} = load {width}, ptr {ptr}")
            if width == "float":
                w = ctx.fresh("f")
                ctx.emit(f"{w} = fpext float {v} to double")
                v = w
            out = Value("float", v, valid)
        elif pa.types.is_timestamp(t):
            raw = self._load_int(f"{c}.vals", ci, pa.int64())
            out = Value("int", self._to_millis(raw, t.unit), valid)
        elif pa.types.is_integer(t):
            out = Value("int", self._load_int(f"{c}.vals", ci, t), valid)
        else:
            raise NotImplementedError(f"column {name!r}: Arrow type {t} cannot be read by generated code")
        ctx._loaded[key] = out
        return out

    def _load_int(self, vals: str, index: str, t: pa.DataType) -> str:
        ctx = self.ctx
        bits = t.bit_width
        ptr, v = ctx.fresh("p"), ctx.fresh("v")
        ctx.emit(f"{ptr} = getelementptr inbounds i{bits}, ptr {vals}, i64 {index}")
        ctx.emit(f"{v} = load i{bits}, ptr {ptr}")
        if bits == 64:
            return v
        w = ctx.fresh("v")
        ext = "zext" if pa.types.is_unsigned_integer(t) else "sext"
        ctx.emit(f"{w} = {ext} i{bits} {v} to i64")
        return w

    def _to_millis(self, raw: str, unit: str) -> str:
        if unit == "ms":
            return raw
        ctx = self.ctx
        if unit == "s":
            v = ctx.fresh("ms")
            ctx.emit(f"{v} = mul i64 {raw}, 1000")
            return v
        return self.floor_div_const(raw, 1000 if unit == "us" else 1_000_000)

    def floor_div_const(self, x: str, d: int) -> str:
        """floor(x / d) for a positive constant d."""
        ctx = self.ctx
        q, r, neg, adj, out = (ctx.fresh("q") for _ in range(5))
        ctx.emit(f"{q} = sdiv i64 {x}, {d}")
        ctx.emit(f"{r} = srem i64 {x}, {d}")
        ctx.emit(f"{neg} = icmp slt i64 {r}, 0")
        ctx.emit(f"{adj} = zext i1 {neg} to i64")
        ctx.emit(f"{out} = sub i64 {q}, {adj}")
        return out

    def _load_string(self, c: str, ci: str, t: pa.DataType, valid: str) -> Value:
        ctx = self.ctx
        bits = 64 if pa.types.is_large_string(t) else 32
        start = self._load_int(f"{c}.vals", ci, pa.int64() if bits == 64 else pa.int32())
        nxt = ctx.fresh("ci")
        ctx.emit(f"{nxt} = add i64 {ci}, 1")
        end = self._load_int(f"{c}.vals", nxt, pa.int64() if bits == 64 else pa.int32())
        b1, b2, b3, bad1, bad = (ctx.fresh("sb") for _ in range(5))
        ctx.emit(f"{b1} = icmp slt i64 {start}, 0")
        ctx.emit(f"{b2} = icmp sgt i64 {start}, {end}")
        ctx.emit(f"{b3} = icmp sgt i64 {end}, {c}.dlen")
        ctx.emit(f"{bad1} = or i1 {b1}, {b2}")
        ctx.emit(f"{bad} = or i1 {bad1}, {b3}")
        ctx.error_branch(bad, abi.ERROR_CORRUPT_STRING)
        ptr, length = ctx.fresh("s"), ctx.fresh("slen")
        ctx.emit(f"{ptr} = getelementptr inbounds i8, ptr {c}.data, i64 {start}")
        ctx.emit(f"{length} = sub i64 {end}, {start}")
        return Value("str", ptr, valid, length=length)

    # --- expressions ------------------------------------------------------------------------
    def emit(self, e: E.Expr) -> Value:
        method = getattr(self, "_" + type(e).__name__)
        return method(e)

    def emit_typed(self, e: E.Expr, dtype: DataType) -> Value:
        """Emit ``e`` converted to the register kind of ``dtype`` (int/float/bool)."""
        v = self.emit(e)
        return self.convert(v, _kind(dtype))

    def _Alias(self, e):
        return self.emit(e.operand)

    def _Call(self, e):
        return emit_call(self, e)

    def _ProcessingTime(self, e):
        ctx = self.ctx
        p, v = ctx.fresh("nowp"), ctx.fresh("now")
        ctx.emit(f"{p} = getelementptr inbounds i64, ptr %params, i64 {abi.PARAM_PROCESSING_TIME}")
        ctx.emit(f"{v} = load i64, ptr {p}")
        return Value("int", v, "true")

    def _LateRecord(self, e):
        """Whether the window drops a record at ``e.time`` under the watermark in force
        (``late_records.py``): the end of its last window - 1 + lateness <= %wm. Times within
        two window sizes (plus the lateness) of the int64 limits, where the window raises
        ``ERROR_TIME_RANGE``, are clamped into range first."""
        ctx, g = self.ctx, e.geometry
        t = self.emit(e.time)  # (int64 ms, as the window's event time)
        margin = 2 * g.size + e.lateness_ms
        lo, hi, c, rel, rem, neg, adj, mod, last, late = (ctx.fresh(h) for h in (
            "lrlo", "lrhi", "lrt", "lrrel", "lrrem", "lrneg", "lradj", "lrmod", "lrlast", "late"))
        ctx.emit(f"{lo} = call i64 @llvm.smax.i64(i64 {t.val}, i64 {-(2 ** 63) + margin})")
        ctx.emit(f"{c} = call i64 @llvm.smin.i64(i64 {lo}, i64 {2 ** 63 - 1 - margin})")
        ctx.emit(f"{rel} = sub i64 {c}, {g.offset}")
        ctx.emit(f"{rem} = srem i64 {rel}, {g.slide}")
        ctx.emit(f"{neg} = icmp slt i64 {rem}, 0")
        ctx.emit(f"{adj} = add i64 {rem}, {g.slide}")
        ctx.emit(f"{mod} = select i1 {neg}, i64 {adj}, i64 {rem}")
        ctx.emit(f"{hi} = sub i64 {c}, {mod}")  # the last window's start
        ctx.emit(f"{last} = add i64 {hi}, {g.size - 1 + e.lateness_ms}")
        ctx.emit(f"{late} = icmp sle i64 {last}, %wm")
        return Value("bool", late, t.valid)

    def _Column(self, e):
        return self.column(e.name)

    def _Literal(self, e):
        t = e.type_name
        if t == "null":
            return Value("null", "0", "false")
        if t == "bool":
            return Value("bool", "true" if e.value else "false", "true")
        if t == "int64":
            return Value("int", str(int(e.value)), "true")
        if t == "float64":
            return Value("float", ir_double(float(e.value)), "true")
        if t == "string":
            name, n = self.ctx.string_constant(e.value)
            return Value("str", name, "true", length=str(n))
        raise NotImplementedError(t)

    def convert(self, v: Value, kind: str) -> Value:
        """Numeric promotion: bool/int -> int -> float; null literals take any kind."""
        if v.kind == kind:
            return v
        ctx = self.ctx
        if v.kind == "null":
            zero = {"int": "0", "float": ir_double(0.0), "bool": "false"}[kind]
            return Value(kind, zero, "false")
        out = ctx.fresh("cv")
        if v.kind == "int" and kind == "float":
            ctx.emit(f"{out} = sitofp i64 {v.val} to double")
        elif v.kind == "bool" and kind == "int":
            ctx.emit(f"{out} = zext i1 {v.val} to i64")
        elif v.kind == "bool" and kind == "float":
            ctx.emit(f"{out} = uitofp i1 {v.val} to double")
        else:
            raise NotImplementedError(f"no implicit conversion from {v.kind} to {kind}")
        return Value(kind, out, v.valid)

    def _and_valid(self, a: str, b: str) -> str:
        if a == "true":
            return b
        if b == "true":
            return a
        out = self.ctx.fresh("vd")
        self.ctx.emit(f"{out} = and i1 {a}, {b}")
        return out

    def _BinaryOp(self, e):
        op = e.op
        if op in E.LOGICAL:
            return self._logical(op, self.emit(e.left), self.emit(e.right))
        if op in ("==", "!=") and (test := self._divisibility(op, e)) is not None:
            return test
        a, b = self.emit(e.left), self.emit(e.right)
        if op in E.COMPARISON:
            return self._compare(op, a, b)
        kind = "float" if "float" in (a.kind, b.kind) or op == "/" else "int"
        a, b = self.convert(a, kind), self.convert(b, kind)
        valid = self._and_valid(a.valid, b.valid)
        ctx = self.ctx
        out = ctx.fresh("ar")
        if kind == "float":
            if op == "%":
                return Value("float", self._float_mod(a.val, b.val), valid)
            instr = {"+": "fadd", "-": "fsub", "*": "fmul", "/": "fdiv"}[op]
            ctx.emit(f"{out} = {instr} double {a.val}, {b.val}")
            return Value("float", out, valid)
        if op == "%":
            val, nonzero = self._int_mod(a.val, b.val)
            return Value("int", val, self._and_valid(valid, nonzero))
        instr = {"+": "add", "-": "sub", "*": "mul"}[op]
        ctx.emit(f"{out} = {instr} i64 {a.val}, {b.val}")
        return Value("int", out, valid)

    def _divisibility(self, op: str, e) -> Value | None:
        """``x % c == 0`` (or ``!=``) for an integer ``x`` and an integer literal ``c`` other than
        0 and -1, else None. Python's remainder is zero exactly when the truncated one is, so the
        sign adjustment of ``_int_mod`` (four instructions and a select per row, whose result the
        test read) is left out: the remainder's only use is the test against zero."""
        mod, zero = (e.left, e.right) if _is_int_literal(e.right, 0) else (e.right, e.left)
        if not (_is_int_literal(zero, 0) and isinstance(mod, E.BinaryOp) and mod.op == "%"
                and _is_int_literal(mod.right) and mod.right.value not in (0, -1)):
            return None
        x = self.emit(mod.left)
        if x.kind not in ("int", "bool"):
            return None
        x = self.convert(x, "int")
        r, out = self.ctx.fresh("dv"), self.ctx.fresh("cmp")
        self.ctx.emit(f"{r} = srem i64 {x.val}, {int(mod.right.value)}")
        self.ctx.emit(f"{out} = icmp {INT_PREDICATES[op]} i64 {r}, 0")
        return Value("bool", out, x.valid)

    def _int_mod(self, a: str, b: str) -> tuple[str, str]:
        """Python's ``a % b`` (sign of the divisor); b == 0 gives null. No UB for any input."""
        ctx = self.ctx
        nz, is_m1, safe_b, safe2, r, rnz, x, sdiff, adj, radj, out = (ctx.fresh("md") for _ in range(11))
        ctx.emit(f"{nz} = icmp ne i64 {b}, 0")
        ctx.emit(f"{is_m1} = icmp eq i64 {b}, -1")
        ctx.emit(f"{safe_b} = select i1 {nz}, i64 {b}, i64 1")
        ctx.emit(f"{safe2} = select i1 {is_m1}, i64 1, i64 {safe_b}")  # x % -1 == 0, avoids INT_MIN/-1
        ctx.emit(f"{r} = srem i64 {a}, {safe2}")
        ctx.emit(f"{rnz} = icmp ne i64 {r}, 0")
        ctx.emit(f"{x} = xor i64 {r}, {b}")
        ctx.emit(f"{sdiff} = icmp slt i64 {x}, 0")
        ctx.emit(f"{adj} = and i1 {rnz}, {sdiff}")
        ctx.emit(f"{radj} = add i64 {r}, {b}")
        ctx.emit(f"{out} = select i1 {adj}, i64 {radj}, i64 {r}")
        return out, nz

    def _float_mod(self, a: str, b: str) -> str:
        ctx = self.ctx
        r, rnz, rneg, bneg, sdiff, adj, radj, out = (ctx.fresh("fm") for _ in range(8))
        ctx.emit(f"{r} = frem double {a}, {b}")
        ctx.emit(f"{rnz} = fcmp une double {r}, 0.0")
        ctx.emit(f"{rneg} = fcmp olt double {r}, 0.0")
        ctx.emit(f"{bneg} = fcmp olt double {b}, 0.0")
        ctx.emit(f"{sdiff} = xor i1 {rneg}, {bneg}")
        ctx.emit(f"{adj} = and i1 {rnz}, {sdiff}")
        ctx.emit(f"{radj} = fadd double {r}, {b}")
        ctx.emit(f"{out} = select i1 {adj}, double {radj}, double {r}")
        return out

    def _compare(self, op: str, a: Value, b: Value) -> Value:
        ctx = self.ctx
        if a.kind in ("str", "dict") or b.kind in ("str", "dict"):
            eq = self._string_equal(a, b)
            if op == "!=":
                ne = ctx.fresh("ne")
                ctx.emit(f"{ne} = xor i1 {eq.val}, true")
                return Value("bool", ne, eq.valid)
            return eq
        kind = "float" if "float" in (a.kind, b.kind) else "int"
        a, b = self.convert(a, kind), self.convert(b, kind)
        out = ctx.fresh("cmp")
        if kind == "float":
            pred = {"==": "oeq", "!=": "une", "<": "olt", "<=": "ole", ">": "ogt", ">=": "oge"}[op]
            ctx.emit(f"{out} = fcmp {pred} double {a.val}, {b.val}")
        else:
            ctx.emit(f"{out} = icmp {INT_PREDICATES[op]} i64 {a.val}, {b.val}")
        return Value("bool", out, self._and_valid(a.valid, b.valid))

    def _string_equal(self, a: Value, b: Value) -> Value:
        ctx = self.ctx
        if a.kind == "null" or b.kind == "null":
            return Value("bool", "false", "false")
        if b.kind == "dict" and a.kind != "dict":
            a, b = b, a
        out = ctx.fresh("streq")
        if a.kind == "dict":
            if b.kind != "str" or not b.val.startswith("@"):
                raise NotImplementedError("dictionary columns compare with string literals only "
                                          "(the engine decodes them for column comparisons)")
            literal = self._literal_text(b)
            code = ctx.dict_param(a.column, literal)
            ctx.emit(f"{out} = icmp eq i64 {a.val}, {code}")
        else:
            ctx.emit(f"{out} = call i1 @gz_str_eq(ptr {a.val}, i64 {a.length}, ptr {b.val}, i64 {b.length})")
        return Value("bool", out, self._and_valid(a.valid, b.valid))

    def _literal_text(self, v: Value) -> str:
        for s, (name, _) in self.ctx._string_constants.items():
            if name == v.val:
                return s
        raise KeyError(v.val)

    def _logical(self, op: str, a: Value, b: Value) -> Value:
        """SQL three-valued AND/OR."""
        ctx = self.ctx
        a, b = self._as_bool(a), self._as_bool(b)
        # definite: valid and (for AND) false / (for OR) true
        t = [ctx.fresh("lg") for _ in range(8)]
        if op == "&":
            ctx.emit(f"{t[0]} = xor i1 {a.val}, true")
            ctx.emit(f"{t[1]} = and i1 {a.valid}, {t[0]}")          # a is definitely false
            ctx.emit(f"{t[2]} = xor i1 {b.val}, true")
            ctx.emit(f"{t[3]} = and i1 {b.valid}, {t[2]}")          # b is definitely false
            ctx.emit(f"{t[4]} = or i1 {t[1]}, {t[3]}")
            ctx.emit(f"{t[5]} = and i1 {a.valid}, {b.valid}")
            ctx.emit(f"{t[6]} = or i1 {t[4]}, {t[5]}")              # valid
            ctx.emit(f"{t[7]} = xor i1 {t[4]}, true")               # value: not definitely false
            return Value("bool", t[7], t[6])
        ctx.emit(f"{t[0]} = and i1 {a.valid}, {a.val}")             # a definitely true
        ctx.emit(f"{t[1]} = and i1 {b.valid}, {b.val}")             # b definitely true
        ctx.emit(f"{t[2]} = or i1 {t[0]}, {t[1]}")                  # value
        ctx.emit(f"{t[3]} = and i1 {a.valid}, {b.valid}")
        ctx.emit(f"{t[4]} = or i1 {t[2]}, {t[3]}")                  # valid
        return Value("bool", t[2], t[4])

    def _as_bool(self, v: Value) -> Value:
        if v.kind == "null":
            return Value("bool", "false", "false")
        return v

    def _UnaryOp(self, e):
        ctx = self.ctx
        if e.op in ("is_null", "is_not_null"):
            inner = E.strip_alias(e.operand)
            valid = self.validity(inner.name) if isinstance(inner, E.Column) else self.emit(e.operand).valid
            if e.op == "is_not_null":
                return Value("bool", valid, "true")
            out = ctx.fresh("isnull")
            ctx.emit(f"{out} = xor i1 {valid}, true")
            return Value("bool", out, "true")
        v = self.emit(e.operand)
        out = ctx.fresh("un")
        if e.op == "~":
            v = self._as_bool(v)
            ctx.emit(f"{out} = xor i1 {v.val}, true")
            return Value("bool", out, v.valid)
        if v.kind == "null":
            return v
        if v.kind == "bool":
            v = self.convert(v, "int")
        if e.op == "neg":
            if v.kind == "float":
                ctx.emit(f"{out} = fneg double {v.val}")
            else:
                ctx.emit(f"{out} = sub i64 0, {v.val}")
            return Value(v.kind, out, v.valid)
        if e.op == "abs":
            if v.kind == "float":
                ctx.emit(f"{out} = call double @llvm.fabs.f64(double {v.val})")
            else:
                neg, isneg = ctx.fresh("ab"), ctx.fresh("ab")
                ctx.emit(f"{neg} = sub i64 0, {v.val}")
                ctx.emit(f"{isneg} = icmp slt i64 {v.val}, 0")
                ctx.emit(f"{out} = select i1 {isneg}, i64 {neg}, i64 {v.val}")
            return Value(v.kind, out, v.valid)
        raise NotImplementedError(e.op)

    def _IsIn(self, e):
        ctx = self.ctx
        v = self.emit(e.operand)
        values = [x for x in e.values if x is not None]
        has_null = len(values) != len(e.values)
        if v.kind == "float" or any(isinstance(x, float) for x in values):
            # one common type for the operand and every value (Spark's IN): with a float among
            # them every comparison is in float64, not only the pairs that hold a float
            v = self.convert(v, "float")
            values = [float(x) for x in values]
        found = "false"
        for x in values:
            eq = self._compare("==", v, self._Literal(E.lit(x)))
            nxt = ctx.fresh("in")
            ctx.emit(f"{nxt} = or i1 {found}, {eq.val}")
            found = nxt
        valid = v.valid
        if has_null:  # SQL: x IN (..., NULL) is null when x is not found
            nv = ctx.fresh("in")
            ctx.emit(f"{nv} = and i1 {v.valid}, {found}")
            valid = nv
        return Value("bool", found, valid)

    def _Cast(self, e):
        target = e.type_name
        v = self.emit(e.operand)
        ctx = self.ctx
        if v.kind == "null":
            return self.convert(v, _kind(type_named(target)))
        if target == "bool":
            if v.kind == "bool":
                return v
            out = ctx.fresh("tb")
            if v.kind == "float":
                ctx.emit(f"{out} = fcmp une double {v.val}, 0.0")
            else:
                ctx.emit(f"{out} = icmp ne i64 {v.val}, 0")
            return Value("bool", out, v.valid)
        if target == "float64":
            return self.convert(v, "float")
        # integer targets
        bits = 32 if target == "int32" else 64
        if v.kind == "bool":
            return self.convert(v, "int")
        if v.kind == "int":
            if bits == 64:
                return v
            t32, out = ctx.fresh("tr"), ctx.fresh("tr")
            ctx.emit(f"{t32} = trunc i64 {v.val} to i32")
            ctx.emit(f"{out} = sext i32 {t32} to i64")
            return Value("int", out, v.valid)
        lo, hi = (-2.0 ** 31 - 1, 2.0 ** 31) if bits == 32 else (-2.0 ** 63, 2.0 ** 63)
        lo_pred = "ogt" if bits == 32 else "oge"
        in_lo, in_hi, ok, safe, out = (ctx.fresh("fi") for _ in range(5))
        ctx.emit(f"{in_lo} = fcmp {lo_pred} double {v.val}, {ir_double(lo)}")
        ctx.emit(f"{in_hi} = fcmp olt double {v.val}, {ir_double(hi)}")
        ctx.emit(f"{ok} = and i1 {in_lo}, {in_hi}")
        ctx.emit(f"{safe} = select i1 {ok}, double {v.val}, double 0.0")
        ctx.emit(f"{out} = fptosi double {safe} to i64")
        return Value("int", out, self._and_valid(v.valid, ok))

    def _IfElse(self, e):
        ctx = self.ctx
        c = self._as_bool(self.emit(e.cond))
        a, b = self.emit(e.then), self.emit(e.otherwise)
        kinds = {a.kind, b.kind} - {"null"}
        if not kinds:
            return Value("null", "0", "false")
        kind = "float" if "float" in kinds else ("int" if "int" in kinds else kinds.pop())
        take, val, valid = ctx.fresh("ie"), ctx.fresh("ie"), ctx.fresh("ie")
        if kind == "str":  # a pointer and a length (a null branch: an empty string, invalid)
            a, b = (v if v.kind == "str" else Value("str", "null", "false", length="0") for v in (a, b))
            n = ctx.fresh("ie")
            ctx.emit(f"{take} = and i1 {c.valid}, {c.val}")
            ctx.emit(f"{val} = select i1 {take}, ptr {a.val}, ptr {b.val}")
            ctx.emit(f"{n} = select i1 {take}, i64 {a.length}, i64 {b.length}")
            ctx.emit(f"{valid} = select i1 {take}, i1 {a.valid}, i1 {b.valid}")
            return Value("str", val, valid, length=n)
        a, b = self.convert(a, kind), self.convert(b, kind)
        ctx.emit(f"{take} = and i1 {c.valid}, {c.val}")
        ty = {"int": "i64", "float": "double", "bool": "i1"}[kind]
        ctx.emit(f"{val} = select i1 {take}, {ty} {a.val}, {ty} {b.val}")
        ctx.emit(f"{valid} = select i1 {take}, i1 {a.valid}, i1 {b.valid}")
        return Value(kind, val, valid)


def _kind(dtype: DataType) -> str:
    if dtype.is_float:
        return "float"
    if dtype.is_bool:
        return "bool"
    if dtype.is_string:
        return "str"
    return "int"


def _is_plain_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


__all__ = ["ExprEmitter", "EmitContext", "ColumnLayout", "Value", "ir_double"]


def _is_int_literal(e, value: int | None = None) -> bool:
    """Whether ``e`` is a non-null int64 literal (equal to ``value`` when given)."""
    return isinstance(e, E.Literal) and e.type_name == "int64" and e.value is not None \
        and (value is None or e.value == value)
