"""The documentation builds and tells the truth.

- The site (``mkdocs.yml``: the hand-written pages and the API reference generated from the
  docstrings) builds with ``mkdocs build --strict``: a broken link, a missing anchor or a
  docstring the reference cannot render fails the test.
- Every public name has a docstring and a place in the reference: ``grizzly_py.__all__``, the
  stream classes' public methods, the expression methods and the ``.str`` and ``.dt`` functions,
  every ``agg`` function, the window assigners, the CLI commands.
- The tutorial's Python blocks run, in order, in one namespace, and print what the ``text`` block
  under each shows; its ``grizzly explain`` output is the command's. The Spark block runs in its
  own (slow) test.
- User docs point at files inside the repository, never at the spec folder beside it.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import grizzly_py
from grizzly_py import agg, expressions, stream, windows

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
TUTORIAL = DOCS / "tutorial.md"
USER_DOCS = ["README.md", "docs/api.md", "docs/tutorial.md", "docs/semantics.md", "docs/spark.md",
             "docs/fault_tolerance.md", "docs/adaptive.md", "docs/counters.md", "docs/security.md"]

STREAM_CLASSES = [grizzly_py.StreamEnvironment, stream.DataStream, stream.KeyedStream, stream.WindowedStream,
                  stream.OverWindowedStream, stream.JoinBuilder, stream.RegularJoinStream, stream.IntervalJoinBuilder]
EXPRESSION_CLASSES = [expressions.Expr, expressions.StringFunctions, expressions.DateTimeFunctions]
ASSIGNERS = [windows.TumblingEventTimeWindows, windows.SlidingEventTimeWindows, windows.EventTimeSessionWindows,
             windows.TumblingProcessingTimeWindows, windows.SlidingProcessingTimeWindows, windows.CountWindows]


def fenced_blocks(path: Path) -> list[tuple[str, str, str]]:
    """The fenced code blocks of a Markdown file: (the ``##`` section, the language, the code)."""
    blocks, section, lang, lines = [], "", None, []
    for line in path.read_text().splitlines():
        if lang is None:
            if line.startswith("## "):
                section = line[3:].strip()
            elif line.startswith("```"):
                lang, lines = line[3:].strip(), []
        elif line.startswith("```"):
            blocks.append((section, lang, "\n".join(lines) + "\n"))
            lang = None
        else:
            lines.append(line)
    assert lang is None, f"{path.name}: an unclosed code block"
    return blocks


def public_members(cls) -> list[str]:
    """The public methods and properties a class defines itself (not inherited ones)."""
    return [name for name, value in vars(cls).items()
            if not name.startswith("_") and (inspect.isfunction(value) or isinstance(value, (staticmethod, classmethod, property)))]


def documented_objects():
    """(qualified name, object) of every public name that needs a docstring and a reference entry."""
    for name in grizzly_py.__all__:
        yield f"grizzly_py.{name}", getattr(grizzly_py, name)
    for cls in STREAM_CLASSES + EXPRESSION_CLASSES + ASSIGNERS:
        qual = "grizzly_py.StreamEnvironment" if cls is grizzly_py.StreamEnvironment else f"{cls.__module__}.{cls.__name__}"
        yield qual, cls
        for member in public_members(cls):
            yield f"{qual}.{member}", inspect.getattr_static(cls, member)
    for name in dir(agg):
        if not name.startswith("_"):
            yield f"grizzly_py.agg.{name}", getattr(agg, name)


def _unwrap(obj):
    """The function behind a static or class method or a property."""
    obj = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
    return obj.fget if isinstance(obj, property) else obj


def _defined_at(obj) -> str | None:
    """``module.qualname`` of a function or class: where the reference may name it instead."""
    obj = _unwrap(obj)
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{module}.{qualname}" if module and qualname else None


def docstring(obj) -> str:
    obj = _unwrap(obj)
    doc = (obj.__doc__ or "").strip()
    if inspect.isclass(obj) and doc.startswith(obj.__name__ + "("):
        return ""  # the signature a dataclass writes where the class has no docstring
    return doc


def test_every_public_name_has_a_docstring():
    missing = [name for name, obj in documented_objects()
               if not docstring(obj) or docstring(obj).startswith("``where=expr``")]  # agg: only the where= note
    assert not missing, f"public names without a docstring: {missing}"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The documentation site, built in strict mode (any warning fails the build)."""
    pytest.importorskip("mkdocs", reason="mkdocs is in the dev extra: pip install -e '.[dev]'")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    log = run.stdout + run.stderr
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{log}"
    assert "WARNING" not in log, log
    return out


def test_site_builds_strictly_and_the_reference_covers_every_public_name(site):
    reference = "".join(p.read_text() for p in (site / "reference").rglob("*.html"))
    anchors = set(re.findall(r'id="(grizzly_py\.[\w.]+)"', reference))
    # a name is documented under the path the reference page names it by, or where it is defined
    absent = [name for name, obj in documented_objects()
              if name not in anchors and _defined_at(obj) not in anchors]
    assert not absent, f"public names missing from the API reference (docs/reference/*.md): {absent}"
    cli = (site / "reference" / "cli" / "index.html").read_text()
    from grizzly_py.cli import main
    for command, cmd in main.commands.items():
        assert f'id="{command}"' in cli, f"grizzly {command} is missing from docs/reference/cli.md"
        for param in cmd.params:
            for opt in param.opts:
                if opt.startswith("--"):
                    assert opt in cli, f"grizzly {command} {opt} is missing from the CLI reference"


def markdown_section(path: Path, heading: str) -> str:
    """The text of the ``##`` section ``heading`` of a Markdown file (up to the next ``##``)."""
    text = path.read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def test_every_function_is_listed_in_the_readme_and_the_api_page():
    """Each registered scalar function (``grizzly_py/functions/``) has its line in README's
    "Functions" and its row in api.md's "String and date functions"."""
    from grizzly_py.functions import function_specs
    readme = markdown_section(ROOT / "README.md", "Functions")
    api = markdown_section(DOCS / "api.md", "String and date functions")
    names = [spec.name for spec in function_specs()]
    assert {"str.contains", "dt.strftime", "concat_str"} <= set(names)
    for name in names:
        call = name if "." not in name else f".{name}"
        assert f"{call}(" in readme, f"README.md, Functions: {name} is missing"
        assert f"{name.rsplit('.', 1)[-1]}(" in api, f"docs/api.md, String and date functions: {name} is missing"


def test_user_docs_point_inside_the_repository():
    for rel in USER_DOCS + ["docs/benchmarks.md", "bench/README.md"]:
        text = (ROOT / rel).read_text()
        assert "shared/spec" not in text and "../shared/" not in text, f"{rel} points outside the repository"


def test_user_docs_carry_no_development_history():
    history = re.compile(r"\b(issues? #?\d+|sessions? \d+|until session|in this session)\b", re.IGNORECASE)
    found = [f"{rel}: {m.group(0)!r}" for rel in USER_DOCS for m in history.finditer((ROOT / rel).read_text())]
    assert not found, f"development history in user docs (it belongs in docs/benchmarks.md or git log): {found}"


def _run_block(code: str, namespace: dict) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<docs/tutorial.md>", "exec"), namespace)
    return out.getvalue()


def _check_tutorial(sections: set[str], tmp_path, monkeypatch) -> int:
    """Run the tutorial's Python blocks of ``sections`` in order; each ``text`` block right after
    one is its expected output. Returns the number of blocks run."""
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__tutorial__"}
    blocks = fenced_blocks(TUTORIAL)
    ran = 0
    for i, (section, lang, code) in enumerate(blocks):
        if lang != "python" or section not in sections:
            continue
        printed = _run_block(code, namespace)
        ran += 1
        expected = blocks[i + 1] if i + 1 < len(blocks) and blocks[i + 1][1] == "text" else None
        if expected is not None and expected[0] == section:
            assert printed.strip() == expected[2].strip(), (
                f"docs/tutorial.md, section {section!r}: block {ran} printed\n{printed}\nbut the page shows\n{expected[2]}")
    return ran


def test_tutorial_runs_and_prints_what_it_shows(tmp_path, monkeypatch):
    sections = {s for s, lang, _ in fenced_blocks(TUTORIAL) if lang == "python"} - {"Spark", "Reading `grizzly explain`"}
    assert _check_tutorial(sections, tmp_path, monkeypatch) >= 5


def test_tutorial_explain_output_is_the_commands(tmp_path):
    blocks = [b for b in fenced_blocks(TUTORIAL) if b[0] == "Reading `grizzly explain`"]
    query = next(code for _, lang, code in blocks if lang == "python")
    command = next(code for _, lang, code in blocks if lang == "bash").split()
    shown = next(code for _, lang, code in blocks if lang == "text")
    (tmp_path / "q.py").write_text(query)
    assert command[:2] == ["grizzly", "explain"]
    run = subprocess.run([sys.executable, "-m", "grizzly_py.cli", *command[1:]], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"})
    assert run.returncode == 0, run.stdout + run.stderr
    actual = {line.strip(" ─") for line in run.stdout.splitlines()}
    for line in shown.splitlines():
        assert line.strip() in actual, f"docs/tutorial.md shows {line.strip()!r}; grizzly explain printed:\n{run.stdout}"


@pytest.mark.slow
def test_tutorial_spark_block_runs(tmp_path, monkeypatch):
    pytest.importorskip("pyspark", reason="the spark extra is not installed")
    sections = {"A first query", "Windows and watermarks", "Spark"}
    try:
        assert _check_tutorial(sections, tmp_path, monkeypatch) >= 1
    finally:
        from pyspark.sql import SparkSession
        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
