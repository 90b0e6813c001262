"""The allowed import directions of ``grizzly_py`` (docs/architecture.md, "Layers").

The import graph is read from the source with ``ast``: every ``import`` and ``from ... import``,
at module level or inside a function (a deferred import still makes the importer depend on what
it imports), ``if TYPE_CHECKING:`` blocks included. ``from . import x`` is an edge to the
submodule ``x`` where there is one, as Python imports it. The checkout's ``bench/`` counts as
``grizzly_py.bench``, the package it is in the wheel.

- No circle: no two modules import each other, directly or through others. The circles that
  other work is removing are listed in ``KNOWN_CIRCLES``, each exactly: one that grows, a new
  one, or a listed one that is gone (the list must shrink with it) fails.
- The engine (``grizzly_py.engine``) never imports the API (``environment``), the DSL's streams,
  Spark, the command line or the benchmarks, directly or through other modules.
- Code generation never imports the engine.
- The DSL never imports the engine, code generation, the JIT, Spark or the command line.
- No dispatch on a class's name (``type(x).__name__ == "..."``) outside ``KNOWN_NAME_DISPATCH``.
- A window pipeline's state layout (``GeneratedPipeline.trigger``) is read by code generation
  and the engine's kernel table only.
- No module edits ``sys.path``, except the command line's loader of query files
  (``SYS_PATH_EDITORS``), which puts a query file's folder first while the file loads, as
  ``python FILE`` does.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "grizzly_py"

# circles being removed by other work; each must match a circle of the graph exactly
KNOWN_CIRCLES: list[set[str]] = []
# modules that may edit sys.path, and why: cli_common loads a query file as `python FILE` would
SYS_PATH_EDITORS = {"grizzly_py.cli_common"}
# modules that still choose by a class's name (being replaced by isinstance there)
KNOWN_NAME_DISPATCH: set[str] = set()

DSL = ["stream", "sources", "plan", "over", "window_rank", "rewrites", "expressions", "windows", "aggregates", "types", "time",
       "lambdas", "watermark"]
# (importers, modules they must not reach, directly or through others)
FORBIDDEN = [
    (["engine"], ["environment", "stream", "spark", "cli", "cli_common", "bench"]),
    (["codegen"], ["engine"]),
    (DSL, ["engine", "codegen", "jit", "spark", "cli", "cli_common", "environment", "bench"]),
]


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name), bench included."""
    out = {}
    for base, prefix in ((ROOT / PACKAGE, (PACKAGE,)), (ROOT / "bench", (PACKAGE, "bench"))):
        for path in base.rglob("*.py"):
            parts = path.relative_to(base).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(prefix + parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of the package that ``name`` imports anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            submodules = [f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in modules]
            targets = submodules if len(submodules) == len(node.names) else [target, *submodules]
        else:
            continue
        found.update(t for t in targets if t in modules and t != name)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(component)
    return out


def _within(name: str, prefixes: list[str]) -> bool:
    return any(name == f"{PACKAGE}.{p}" or name.startswith(f"{PACKAGE}.{p}.") for p in prefixes)


def _path_to(graph: dict[str, set[str]], start: str, forbidden: list[str]) -> list[str] | None:
    """A chain of imports from ``start`` to a module under ``forbidden``, or None."""
    came_from = {start: None}
    queue = [start]
    for node in queue:
        for child in sorted(graph[node]):
            if child in came_from:
                continue
            came_from[child] = node
            if _within(child, forbidden):
                chain = [child]
                while came_from[chain[-1]] is not None:
                    chain.append(came_from[chain[-1]])
                return chain[::-1]
            queue.append(child)
    return None


def test_the_import_graph_is_read_from_every_module():
    graph = _graph()
    assert {"grizzly_py.engine.local", "grizzly_py.environment", "grizzly_py.bench.suite"} <= set(graph)
    assert "grizzly_py.results" in graph["grizzly_py.engine.local"]  # a module-level import
    assert "grizzly_py.spark.planner" in graph["grizzly_py.environment"]  # one inside a function


def test_no_import_circles_but_the_known_ones():
    found = _circles(_graph())
    new = [sorted(c) for c in found if c not in KNOWN_CIRCLES]
    gone = [sorted(c) for c in KNOWN_CIRCLES if c not in found]
    assert not new, f"import circles (modules that import each other, directly or through others): {new}"
    assert not gone, f"these known circles changed or are gone: update KNOWN_CIRCLES in {__file__}: {gone}"


def test_imports_go_down_the_layers_only():
    graph = _graph()
    wrong = []
    for importers, forbidden in FORBIDDEN:
        for name in sorted(graph):
            if _within(name, importers):
                chain = _path_to(graph, name, forbidden)
                if chain is not None:
                    wrong.append(" -> ".join(chain))
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def _name_dispatch(path: Path) -> bool:
    """Whether the module compares ``type(...).__name__`` with a string."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                if isinstance(side, ast.Attribute) and side.attr == "__name__" and isinstance(side.value, ast.Call) \
                        and isinstance(side.value.func, ast.Name) and side.value.func.id == "type" \
                        and any(isinstance(s, ast.Constant) and isinstance(s.value, str)
                                for s in (node.left, *node.comparators)):
                    return True
    return False


def test_no_dispatch_on_class_names_but_the_known_ones():
    found = {name for name, path in _modules().items() if _name_dispatch(path)}
    assert found == KNOWN_NAME_DISPATCH, (
        f"type(x).__name__ == '...' in {sorted(found - KNOWN_NAME_DISPATCH)} (use isinstance or a method); "
        f"gone from {sorted(KNOWN_NAME_DISPATCH - found)}: update KNOWN_NAME_DISPATCH")


def test_only_the_kernel_table_reads_a_window_state_layout():
    """A window pipeline's state layout (``GeneratedPipeline.trigger``, set by code generation)
    picks its kernel class in one table (``engine/kernel_table.py``); what else differs between
    layouts the kernel class answers (``engine/kernel_protocol.py``), so no other module reads it."""
    readers = set()
    for name, path in _modules().items():
        if _within(name, ["codegen"]):
            continue
        tree = ast.parse(path.read_text(), str(path))
        called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}  # (Spark's .trigger(...))
        if any(isinstance(node, ast.Attribute) and node.attr == "trigger" and id(node) not in called
               for node in ast.walk(tree)):
            readers.add(name)
    assert readers == {"grizzly_py.engine.kernel_table"}, f"modules that read a state layout: {sorted(readers)}"


def test_no_module_edits_sys_path():
    edits = []
    for name, path in _modules().items():
        if name in SYS_PATH_EDITORS:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name) \
                    and node.value.id == "sys":
                edits.append(name)
                break
    assert not edits, f"modules that use sys.path: {edits}"
