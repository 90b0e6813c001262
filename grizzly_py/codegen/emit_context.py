"""The state of emitting one kernel: the registers of a value (``Value``), where each input
column is read from (``ColumnLayout``) and ``EmitContext``: fresh names, the entry block
(preamble), the loop body, module constants, parameters, error exits, and the lines every exit
runs (``epilogue``: freeing what the kernel allocated)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import pyarrow as pa

from . import abi, ir_text


@dataclass
class Value:
    """An expression's value in registers. ``kind`` is ``int``, ``float``, ``bool``, ``str``
    (plain string: ``ptr``/``length``), ``dict`` (dictionary code in ``val``) or ``null``."""

    kind: str
    val: str
    valid: str
    length: str = ""
    column: str = ""  # for dictionary codes: the column, to resolve literals


def ir_double(x: float) -> str:
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", x))[0]


@dataclass
class ColumnLayout:
    """How one input column is read: its descriptor position and physical Arrow type."""

    name: str
    slot_base: int
    arrow_type: pa.DataType


@dataclass
class EmitContext:
    """State of emitting one kernel: fresh names, preamble and body lines, constants, params."""

    prefix: str
    columns: dict[str, ColumnLayout]
    assume_valid: bool = False  # the no-nulls kernel: every column of the batch has no null
    row: str = "%i"             # register holding the current row index
    preamble: list[str] = field(default_factory=list)
    body: list[str] = field(default_factory=list)
    globals: list[str] = field(default_factory=list)
    dict_params: list[tuple[str, str]] = field(default_factory=list)  # (column, literal) -> param index
    error_blocks: list[tuple[str, int, str]] = field(default_factory=list)  # (label, error code, row)
    profile_base: int | None = None  # the instrumented variant: state word of the profile (profile.py)
    _counter: int = 0
    _loaded: dict = field(default_factory=dict)
    # a scalar function's result within the row, for the same call again (functions.emit_call)
    _calls: dict = field(default_factory=dict)
    _prepared: set = field(default_factory=set)
    _string_constants: dict = field(default_factory=dict)
    _dict_codes: dict = field(default_factory=dict)  # (column, literal) or ("param", i) -> its register
    scratch: set = field(default_factory=set)    # what the entry block set up once (the arena, scratch words)
    regexes: dict = field(default_factory=dict)  # pattern -> (prefix, parts defined): functions.regex_functions
    epilogue: list[str] = field(default_factory=list)  # lines every exit of the kernel runs

    def fresh(self, hint: str = "t") -> str:
        # A hint ending in a digit could collide with another hint plus the counter.
        assert not hint[-1:].isdigit(), hint
        self._counter += 1
        return f"%{hint}{self._counter}"

    def label(self, hint: str) -> str:
        self._counter += 1
        return f"{hint}{self._counter}"

    def emit(self, line: str) -> None:
        self.body.append("  " + line)

    def new_row(self) -> None:
        """Forget per-row loads and function results (a new loop body starts)."""
        self._loaded.clear()
        self._calls.clear()

    def string_constant(self, s: str) -> tuple[str, int]:
        if s not in self._string_constants:
            text, n = ir_text.string_constant(s)
            name = f"@{self.prefix}.str{len(self._string_constants)}"
            self.globals.append(f"{name} = private unnamed_addr constant [{n} x i8] {text}")
            self._string_constants[s] = (name, n)
        return self._string_constants[s]

    def param_word(self, index: int, hint: str) -> str:
        """The register of parameter word ``index``, loaded once in the entry block."""
        key = ("param", index)
        if key not in self._dict_codes:
            p, v = self.fresh(f"{hint}p"), self.fresh(hint)
            self.preamble.append(f"  {p} = getelementptr inbounds i64, ptr %params, i64 {index}")
            self.preamble.append(f"  {v} = load i64, ptr {p}")
            self._dict_codes[key] = v
        return self._dict_codes[key]

    def dict_param(self, column: str, literal: str) -> str:
        key = (column, literal)
        if key not in self.dict_params:
            self.dict_params.append(key)
        if key not in self._dict_codes:  # loaded once, in the entry block (not per row)
            idx = abi.PARAM_FIRST_DICT_CODE + self.dict_params.index(key)
            p, v = self.fresh("dictp"), self.fresh("dictcode")
            self.preamble.append(f"  {p} = getelementptr inbounds i64, ptr %params, i64 {idx}")
            self.preamble.append(f"  {v} = load i64, ptr {p}")
            self._dict_codes[key] = v
        return self._dict_codes[key]

    def error_branch(self, bad: str, code: int) -> None:
        """If ``bad`` holds, leave the kernel with ``code`` (the row goes to state)."""
        err, ok = self.label("err"), self.label("ok")
        self.error_blocks.append((err, code, self.row))
        self.emit(f"br i1 {bad}, label %{err}, label %{ok}, !prof !0")
        self.body.append(f"{ok}:")
