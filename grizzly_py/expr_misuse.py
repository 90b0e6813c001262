"""Messages for a column expression used as a Python value while a query is defined.

``col("x") > 3`` is an expression tree, not a truth value or a number: ``if``, ``and``/``or``/
``not``, ``any()`` over a generator or ``math.log(...)`` ask Python for one, and get a
``TypeError`` from ``Expr.__bool__``/``__float__``/... built here. The message quotes the
construct that asked (the source span of the caller's current instruction, from
``dis``), so that it points at the user's code rather than at a generic rule, and says
what to write instead.
"""

from __future__ import annotations

import dis
import linecache
import sys

_PACKAGE = __name__.rsplit(".", 1)[0]


def _asking_frame():
    """The innermost frame outside grizzly-py (builtins such as ``any`` or ``math.log`` have no
    frame: the caller's frame is the one whose instruction called them)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == _PACKAGE:
        frame = frame.f_back
    return frame


def _instruction(frame) -> tuple[str, str]:
    """(operation, source) of the instruction ``frame`` is executing: its name (``TO_BOOL`` read
    as the ``UNARY_NOT`` that follows it, where one does) and the source text of its span
    ("" where the source is not available)."""
    code, found = frame.f_code, None
    instructions = list(dis.get_instructions(code))
    for i, ins in enumerate(instructions):
        if ins.offset == frame.f_lasti:
            found = ins
            following = instructions[i + 1].opname if i + 1 < len(instructions) else ""
            break
    if found is None:  # pragma: no cover - the frame always executes one of its instructions
        return "", ""
    op = following if found.opname == "TO_BOOL" and following == "UNARY_NOT" else found.opname
    line, end_line, col, end_col = found.positions or (None,) * 4
    if None in (line, end_line, col, end_col):
        return op, ""
    lines = [linecache.getline(code.co_filename, n, frame.f_globals).encode() for n in range(line, end_line + 1)]
    if not all(lines):
        return op, ""
    lines[-1] = lines[-1][:end_col]  # offsets count UTF-8 bytes
    lines[0] = lines[0][col:]
    text = " ".join(part.decode(errors="replace").strip() for part in lines)
    return op, text if len(text) <= 100 else text[:97] + "..."


def _asked(frame) -> tuple[str, str, str]:
    """(where, construct, operation) of the user's code that asked for a Python value."""
    if frame is None:  # pragma: no cover - always called from some Python frame
        return "", "this code", ""
    op, text = _instruction(frame)
    return f"{frame.f_code.co_filename}, line {frame.f_lineno}: ", f"`{text}`" if text else "this code", op


def truth_value_error(expr) -> TypeError:
    """The error of ``bool(expr)``: which construct asked, and what to write instead."""
    where, asked, op = _asked(_asking_frame())
    if op.startswith("CALL") or op == "PRECALL":
        fix = ("a Python function (any, all, bool, max, ...) runs once while the query is defined, not per "
               "record: combine conditions with & and |, and test several values with .isin([...])")
    elif op == "UNARY_NOT":
        fix = "write ~condition instead of not condition"
    elif op == "CONTAINS_OP":
        fix = "test a column against several values with col(...).isin([...]) instead of `in`"
    else:
        fix = ("combine conditions with & | ~ instead of and/or/not, choose values with gz.if_else(cond, a, b) "
               "instead of if/else, and write lo <= x <= y as x.between(lo, y)")
    return TypeError(f"{where}{asked} asks for the truth value of the column expression {expr!r}, which has "
                     f"no truth value while the query is defined (it has one per record, as the query runs): {fix}")


def number_error(expr, kind: str) -> TypeError:
    """The error of ``float(expr)``/``int(expr)`` (e.g. ``math.log(col("x"))``)."""
    where, asked, _ = _asked(_asking_frame())
    return TypeError(f"{where}{asked} needs {kind} but got the column expression {expr!r}, which has a value "
                     f"only per record, while the query runs; Python functions such as math.log cannot take "
                     f"a column: use the expression operators and methods (+ - * / %, comparisons, abs(), "
                     f".cast(), .isin(), .between(), gz.if_else())")
