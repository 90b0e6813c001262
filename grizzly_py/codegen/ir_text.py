"""The one way text from outside the compiler enters generated LLVM IR.

Generated IR is a program: a column name, aggregate name, string literal, file path or pattern
pasted into it as it is could end a comment or a string constant and be compiled as code. So:

- names inside IR (registers, labels, functions, globals) are generated identifiers built from
  pipeline ids, kernel names and counters, never from user text;
- user text appears in comments only through ``comment`` (printable ASCII, everything else
  escaped, so it can never end the comment's line), and as data only through ``byte_array``
  (a ``c"..."`` constant of its UTF-8 bytes, each byte outside printable ASCII escaped).

Templates reach ``comment`` as the Jinja filter of the same name (``templates.environment``).
``tests/test_ir_injection.py`` checks that every interpolation on a template's comment line goes
through it, and a hypothesis property runs queries over hostile column names and literals.
``jit.check_symbols`` is the second line: a module may call only the runtime, LLVM's intrinsics
and the C functions the runtime uses, and may define none of those.
"""

from __future__ import annotations


def comment(text: object) -> str:
    """``text`` (any object, as ``str``) for an IR ``;`` comment: printable ASCII stays, the rest
    (line breaks, control characters, non-ASCII, backslash) is written as Python escapes, so the
    result is one line whatever the text."""
    return str(text).encode("unicode_escape").decode("ascii")


def byte_array(data: bytes) -> str:
    """``data`` as the body of an IR array constant (``c"..."``, ``[len(data) x i8]``): printable
    ASCII other than ``"`` and ``\\`` as it is, every other byte as ``\\XX``."""
    return 'c"' + "".join(chr(b) if 32 <= b < 127 and b not in (34, 92) else "\\%02X" % b for b in data) + '"'


def string_constant(text: str) -> tuple[str, int]:
    """The UTF-8 bytes of ``text`` as an IR array constant, and their number."""
    data = text.encode("utf-8")
    return byte_array(data), len(data)
