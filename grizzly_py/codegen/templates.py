"""Locate and render the Jinja2 templates of LLVM IR and the hand-written runtime IR.

In a source checkout they live at the top level (``codegen_templates/``, ``runtime/``); in an
installed wheel they are packaged inside ``grizzly_py/``.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

import jinja2

from . import ir_text

_PACKAGE = Path(__file__).resolve().parent.parent


def resource_dir(name: str) -> Path:
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"grizzly-py resource folder {name!r} not found next to {_PACKAGE}")


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates are kept under ``$GRIZZLY_CACHE_DIR`` (default ~/.cache/grizzly-py), so a
    new process does not compile the templates again; without a writable folder, no cache."""
    folder = Path(os.environ.get("GRIZZLY_CACHE_DIR") or Path.home() / ".cache" / "grizzly-py") / "jinja"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(str(folder))


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The templates' environment. Globals: ``aggregate_macros(a)``, the macros of aggregate ``a``'s
    function (its ``AggregateSpec.template``, called by ``aggregates.ll.j2``). Filters: ``comment``
    (``ir_text.comment``), which every interpolation on an IR comment line goes through."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(resource_dir("codegen_templates"))),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True, bytecode_cache=_bytecode_cache(), auto_reload=False)
    env.globals["aggregate_macros"] = lambda a: env.get_template(a.spec.template).module
    env.filters["comment"] = ir_text.comment
    return env


def render(template: str, **context) -> str:
    return environment().get_template(template).render(**context)


@lru_cache(maxsize=1)
def runtime_ir() -> str:
    """All hand-written runtime IR, concatenated in a stable order."""
    folder = resource_dir("runtime")
    return "\n".join(p.read_text() for p in sorted(folder.glob("*.ll")))


_DEFINE = re.compile(r"^define\s+(?:linkonce_odr\s+)?(?P<ret>\S+)\s+@(?P<name>[\w.]+)\((?P<args>[^)]*)\)", re.M)
_GLOBAL = re.compile(r"^@(?P<name>[\w.]+)\s*=\s*linkonce_odr\s+constant\s+(?P<type>\[[^\]]*\])", re.M)


@lru_cache(maxsize=1)
def runtime_externals() -> frozenset[str]:
    """The C functions the runtime calls (its ``declare`` lines other than LLVM's intrinsics),
    the shared-state runtime (``runtime/shared/``, appended to the modules that use it) included."""
    text = "\n".join(p.read_text() for p in sorted(resource_dir("runtime").rglob("*.ll")))
    return frozenset(m["name"] for m in _DECLARE.finditer(text) if not m["name"].startswith("llvm."))


_DECLARE = re.compile(r"^declare\s+.*?@(?P<name>[\w.]+)\(", re.M)


@lru_cache(maxsize=1)
def runtime_declarations() -> str:
    """``declare`` lines for every runtime function and global, for generated modules to call."""
    text = runtime_ir()
    lines = ["; runtime (linked in from runtime/*.ll)"]
    for m in _GLOBAL.finditer(text):
        lines.append(f"@{m['name']} = external constant {m['type']}")
    for m in _DEFINE.finditer(text):
        arg_types = ", ".join(a.split()[0] for a in m["args"].split(",") if a.strip())
        lines.append(f"declare {m['ret']} @{m['name']}({arg_types})")
    return "\n".join(lines) + "\n"
